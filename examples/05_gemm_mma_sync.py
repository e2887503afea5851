"""An Ampere-style GEMM on warp-level tensor cores: ``C = A · B`` with ``mma.sync``, ``ldmatrix`` and a
multistage ``cp.async`` pipeline through swizzled shared memory (sm_80+, and the CPU interpreter).

* A is M×K row-major; B is N×K row-major (``"nk"``: ``C = A @ B.T``, nn.Linear's weight) or K×N row-major
  (``"kn"``: ``C = A @ B``, read with ``ldmatrix.trans``); C is M×N row-major (bf16, f16 or f32).
  Operands bf16/f16 (m16n8k16) or fp8 e4m3/e5m2 (m16n8k32, sm_89+, ``"nk"`` only); f32 accumulation.
* A block computes a ``BM × BN`` tile of C with ``WM × WN`` warps (each a ``BM/WM × BN/WN`` warp tile of
  16×8 MMA atoms) and walks K in ``BK`` slices through ``STAGES`` shared-memory buffers: while the
  tensor cores work on slice ``k``, ``cp.async`` (16-byte copies, L2 only) fetches slice
  ``k + STAGES - 1``. Inside a slice the warp loads the fragments of the next 16-wide (32 for fp8)
  k-step with ``ldmatrix.x4`` while it multiplies the current one (register double buffering).
* Shared tiles are swizzled (``Swizzle(3, log2(16 B / elem), log2(row length) - ...)``): the 16-byte
  chunks of every 8 consecutive rows land in 8 different bank groups, so the ``cp.async`` stores and
  the ``ldmatrix`` row reads of a warp are conflict-free.
* Edges: M, N and K need not be tile multiples (A and B row-major with rows starting 16-byte aligned:
  ``K`` — and ``N`` for ``"kn"`` — a multiple of 16 bytes, checked on the host): predicated ``cp.async``
  zero-fills the shared tiles past the edges and predicated stores leave the rows and columns of C past M
  and N untouched.
* Epilogue: the f32 accumulators are converted to C's type and staged through a swizzled shared tile (the
  pipeline's buffers, free by then), then written with 16-byte coalesced stores; when C's rows are not
  16-byte aligned the pairs of columns each thread holds are stored straight from the registers, and
  single elements when even pairs would be misaligned (C a window of an array with an odd row length).
* Blocks are rasterized in groups of ``GROUP_M`` tile rows so that neighbouring blocks share A and B in L2.

Run: ``python examples/05_gemm_mma_sync.py`` — on a GPU it checks against torch and prints TFLOP/s next
to cuBLAS; on the CPU it runs small shapes in the interpreter against numpy. ``--sweep`` (GPU) times every
tile configuration at 4096³.
"""

from __future__ import annotations

import time

import numpy as np

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr.typing import Constexpr

# (BM, BN, BK bytes, WM, WN, STAGES): the tile configurations (BK in bytes: 64 elements of bf16, 128 of fp8)
CONFIGS = {
    "128x256": (128, 256, 128, 2, 4, 4),
    "128x256s3": (128, 256, 128, 2, 4, 3),
    "256x128": (256, 128, 128, 4, 2, 4),
    "128x128": (128, 128, 128, 2, 2, 4),
    "128x128s3": (128, 128, 128, 2, 2, 3),  # 96 KB of shared memory: two blocks per SM
    "128x128w8": (128, 128, 128, 2, 4, 4),
    "64x128": (64, 128, 128, 2, 2, 4),
    "32x64": (32, 64, 128, 2, 2, 4),
    "64x64": (64, 64, 64, 2, 2, 2),
}
DEFAULT = "128x256"
GROUP_M = 8


def _swizzle(dtype, row_elems: int) -> fx.Swizzle:
    """XOR the 16-byte chunk index of a row with the row index (bits above the row's length)."""
    vec = 16 // (dtype.width // 8)  # elements per 16-byte chunk
    m = vec.bit_length() - 1
    chunks = row_elems // vec
    bits = min(3, chunks.bit_length() - 1)
    return fx.Swizzle(bits, m, row_elems.bit_length() - 1 - m)


def _smem_layout(dtype, rows: int, cols: int, major: str):
    """A swizzled (rows, cols) tile; ``major`` "k": rows of ``cols`` contiguous elements, "mn": columns."""
    if major == "k":
        return fx.make_composed_layout(_swizzle(dtype, cols), 0, fx.make_layout((rows, cols), (cols, 1)))
    return fx.make_composed_layout(_swizzle(dtype, rows), 0, fx.make_layout((rows, cols), (1, rows)))


def _raster(bid, grid_m, grid_n):
    """Block ``bid`` -> its (tile row, tile column), ``GROUP_M`` tile rows at a time (L2 reuse)."""
    per_group = GROUP_M * grid_n
    group = bid // per_group
    first_m = group * GROUP_M
    rows = fx.min(grid_m - first_m, GROUP_M)
    within = bid % per_group
    return first_m + within % rows, within // rows


def _g2s_copy(atom, rows: int, cols: int, major: str, threads: int):
    """The cp.async tiled copy of a (rows, cols) tile: 16-byte chunks along the contiguous mode."""
    vec = atom.num_vals
    if major == "k":
        tpr = cols // vec  # threads per row
        thr = fx.make_ordered_layout((threads // tpr, tpr), (1, 0))
        return fx.make_tiled_copy_tv(atom, thr, fx.make_layout((1, vec)))
    tpc = rows // vec
    return fx.make_tiled_copy_tv(atom, fx.make_layout((tpc, threads // tpc)), fx.make_layout((vec, 1)))


def _in_bounds(crd, bound):
    """A Boolean per element of the coordinate tensor ``crd``: is the coordinate inside ``bound``?"""
    pred = fx.make_fragment_like(crd, dtype=fx.Boolean)
    for i in fx.range_constexpr(fx.size(pred)):
        pred[i] = fx.elem_less(crd[i], bound)
    return pred


def _predicates(thr, coords, bound):
    """One Boolean per atom call of a tiled copy: is the call's first coordinate inside ``bound``?"""
    return _in_bounds(thr.partition_S(coords)[(0, None), None, None], bound)


@flyc.kernel
def gemm_kernel(
    A: fx.Tensor,
    B: fx.Tensor,
    C: fx.Tensor,
    cfg: Constexpr[tuple],
    b_layout: Constexpr[str],
    ragged: Constexpr[bool],
    c_vec: Constexpr[int],
):
    """``c_vec``: C's elements per store: 16 bytes' worth through a shared tile, else 2 or 1 from registers."""
    BM, BN, BK_BYTES, WM, WN, STAGES = cfg
    dt = A.dtype
    BK = BK_BYTES // (dt.width // 8)
    threads = 32 * WM * WN
    tid = fx.thread_idx.x
    M, K = A.shape.unpack()
    N = C.shape.unpack()[1]
    grid_m, grid_n = (M + BM - 1) // BM, (N + BN - 1) // BN
    bm, bn = _raster(fx.block_idx.x, grid_m, grid_n)
    k_tiles = (K + BK - 1) // BK

    # B as an (N, K) tensor whatever its storage ("kn": strides (1, N))
    Bnk = B if fx.const_expr(b_layout == "nk") else fx.select(B, [1, 0])
    b_major = "k" if fx.const_expr(b_layout == "nk") else "mn"
    gA = fx.flat_divide(A, (BM, BK))[None, None, bm, None]  # (BM, BK, k)
    gB = fx.flat_divide(Bnk, (BN, BK))[None, None, bn, None]  # (BN, BK, k)

    # shared memory: STAGES (BM, BK) tiles of A and (BN, BK) of B, swizzled
    smem = fx.SharedAllocator(128, static=False)
    pa = smem.allocate(fx.Array[dt, BM * BK * STAGES, 128]).peek().ptr
    pb = smem.allocate(fx.Array[dt, BN * BK * STAGES, 128]).peek().ptr
    la, lb = _smem_layout(dt, BM, BK, "k"), _smem_layout(dt, BN, BK, b_major)

    def s_a(stage):
        return fx.make_view(pa + stage * (BM * BK), la)

    def s_b(stage):
        return fx.make_view(pb + stage * (BN * BK), lb)

    # global -> shared: cp.async of 16 bytes per thread and call
    g2s = fx.make_copy_atom(fx.nvvm.CopyG2SOp(fx.nvvm.LoadCacheMode.GLOBAL, 128), dt)
    copy_a = _g2s_copy(g2s, BM, BK, "k", threads).get_slice(tid)
    copy_b = _g2s_copy(g2s, BN, BK, b_major, threads).get_slice(tid)
    if fx.const_expr(ragged):
        cA = fx.flat_divide(fx.make_identity_tensor((M, K)), (BM, BK))[None, None, bm, None]
        cB = fx.flat_divide(fx.make_identity_tensor((N, K)), (BN, BK))[None, None, bn, None]

    def load_tile(k_tile, stage):
        """Start the copies of k-slice ``k_tile`` into ``stage`` (zero-filled past the edges).

        A slice that lies past K is not copied: its stage is never multiplied (at most prefetched into
        registers that go unused). When both ``k_tile`` and K are known at trace time (the prologue, with
        fewer k-slices than pipeline stages) nothing is emitted — the slice does not exist in ``gA`` —,
        otherwise the copy is predicated off (zero fill, no global read)."""
        if fx.const_expr(isinstance(k_tile, int) and isinstance(k_tiles, int) and k_tile >= k_tiles):
            return
        src_a, dst_a = copy_a.partition_S(gA[None, None, k_tile]), copy_a.partition_D(s_a(stage))
        src_b, dst_b = copy_b.partition_S(gB[None, None, k_tile]), copy_b.partition_D(s_b(stage))
        if fx.const_expr(ragged):
            fx.copy(g2s, src_a, dst_a, pred=_predicates(copy_a, cA[None, None, k_tile], (M, K)))
            fx.copy(g2s, src_b, dst_b, pred=_predicates(copy_b, cB[None, None, k_tile], (N, K)))
        else:
            live = k_tile < k_tiles  # slices past the end are zero-filled, never read
            fx.copy(g2s, src_a, dst_a, pred=live)
            fx.copy(g2s, src_b, dst_b, pred=live)

    # the MMA: WM x WN warps; each 16 x 16 step of a warp feeds ldmatrix.x4 (two n8 atoms for B)
    if fx.const_expr(dt.width == 8):
        op = fx.nvvm.MmaFP8Op(dt, fx.Float32, (16, 8, 32))
    else:
        op = fx.nvvm.MmaF16BF16Op(dt, fx.Float32, (16, 8, 16))
    ak = op.shape_mnk[2]
    mma = fx.make_tiled_mma(fx.make_mma_atom(op), fx.make_layout((WM, WN, 1)), (16 * WM, 16 * WN, ak))
    thr = mma.get_slice(tid)
    ld_a = fx.make_copy_atom(fx.nvvm.LdMatrix8x8x16bOp(False, 4), dt)
    ld_b = fx.make_copy_atom(fx.nvvm.LdMatrix8x8x16bOp(b_major == "mn", 4), dt)
    s2r_a = fx.make_tiled_copy_A(ld_a, mma).get_slice(tid)
    s2r_b = fx.make_tiled_copy_B(ld_b, mma).get_slice(tid)
    frag_a = thr.make_fragment_A(s_a(0))  # (V, MMA_M, MMA_K): the whole BK slice
    frag_b = thr.make_fragment_B(s_b(0))
    view_a, view_b = s2r_a.retile(frag_a), s2r_b.retile(frag_b)
    acc = thr.make_fragment_C(fx.make_layout((BM, BN)))
    acc.fill(0.0)
    k_steps = BK // ak

    def load_frags(stage, ks, view_a, view_b):
        """ldmatrix the fragments of k-step ``ks`` of ``stage`` into the registers ``view_a``/``view_b``."""
        fx.copy(ld_a, s2r_a.partition_S(s_a(stage))[None, None, ks], view_a[None, None, ks])
        fx.copy(ld_b, s2r_b.partition_S(s_b(stage))[None, None, ks], view_b[None, None, ks])

    # prologue: STAGES - 1 slices in flight, the first k-step's fragments in registers
    for s in fx.range_constexpr(STAGES - 1):
        load_tile(s, s)
        fx.nvvm.cp_async_commit_group()
    fx.nvvm.cp_async_wait_group(STAGES - 2)
    fx.barrier()
    load_frags(0, 0, view_a, view_b)

    read = fx.Int32(0)
    write = fx.Int32(STAGES - 1)
    for kb in range(k_tiles):
        frag_a, frag_b, acc = fx.Tensor(frag_a), fx.Tensor(frag_b), fx.Tensor(acc)
        view_a, view_b = s2r_a.retile(frag_a), s2r_b.retile(frag_b)
        for ks in fx.range_constexpr(k_steps):
            if fx.const_expr(ks == k_steps - 1):  # the next slice must be resident before reading it
                fx.nvvm.cp_async_wait_group(STAGES - 2)
                fx.barrier()
                read = (read + 1) % STAGES
            load_frags(read, (ks + 1) % k_steps, view_a, view_b)
            if fx.const_expr(ks == 0):  # refill the stage every warp finished reading
                load_tile(kb + STAGES - 1, write)
                fx.nvvm.cp_async_commit_group()
                write = (write + 1) % STAGES
            fx.gemm(mma, acc, frag_a[None, None, ks], frag_b[None, None, ks], acc)
    fx.nvvm.cp_async_wait_all()

    # epilogue: f32 -> C's type; through shared memory (full 16-byte rows) or straight from the registers
    out = fx.make_fragment_like(acc, C.dtype)
    out.store(acc.load().to(C.dtype))
    gC = fx.flat_divide(C, (BM, BN))[None, None, bm, bn]  # (BM, BN), addressed after the main loop
    if fx.const_expr(ragged):
        cC = fx.flat_divide(fx.make_identity_tensor((M, N)), (BM, BN))[None, None, bm, bn]
    pair = fx.make_copy_atom(fx.UniversalCopy(min(c_vec, 2) * C.dtype.width), C.dtype)
    if fx.const_expr(c_vec > 2):  # registers -> swizzled shared tile -> 16-byte coalesced stores
        fx.nvvm.cp_async_wait_all()
        fx.barrier()  # every warp is done with the stages: the C tile reuses them
        sC = fx.make_view(pa.recast(C.dtype), _smem_layout(C.dtype, BM, BN, "k"))
        fx.copy(pair, out, thr.partition_C(sC))
        fx.barrier()
        row = fx.make_copy_atom(fx.UniversalCopy128b(), C.dtype)
        rows = _g2s_copy(row, BM, BN, "k", threads).get_slice(tid)
        regs = fx.make_fragment_like(rows.partition_S(sC))
        fx.copy(row, rows.partition_S(sC), regs)
        if fx.const_expr(ragged):
            fx.copy(row, regs, rows.partition_D(gC), pred=_predicates(rows, cC, (M, N)))
        else:
            fx.copy(row, regs, rows.partition_D(gC))
    else:
        dst = thr.partition_C(gC)
        if fx.const_expr(ragged):  # one predicate per store: its first element inside (M, N)?
            crd = thr.partition_C(cC)
            crd = crd[(0, None), None, None] if fx.const_expr(c_vec == 2) else crd
            fx.copy(pair, out, dst, pred=_in_bounds(crd, (M, N)))
        else:
            fx.copy(pair, out, dst)


@flyc.jit
def gemm_launch(
    A: fx.Tensor,
    B: fx.Tensor,
    C: fx.Tensor,
    cfg: Constexpr[tuple],
    b_layout: Constexpr[str],
    ragged: Constexpr[bool],
    c_vec: Constexpr[int],
):
    BM, BN, _, WM, WN, _ = cfg
    M = A.shape.unpack()[0]
    N = C.shape.unpack()[1]
    grid = ((M + BM - 1) // BM) * ((N + BN - 1) // BN)
    gemm_kernel(A, B, C, cfg, b_layout, ragged, c_vec).launch(grid=(grid, 1, 1), block=(32 * WM * WN, 1, 1))


def default_config(dtype_bits: int, M: int = 4096, N: int = 4096, sms: int = 132) -> str:
    """The tile configuration for an M×N problem with ``dtype_bits`` operands: 128x256 tiles for 16-bit types
    (128x128 for fp8, whose mma.sync sm_90 emulates with conversions, two f16 MMAs and adds: more registers);
    smaller tiles when the big ones would leave most of the ``sms`` multiprocessors idle (skinny M)."""
    big = "128x128w8" if dtype_bits == 8 else DEFAULT
    bm, bn = CONFIGS[big][:2]
    if M <= 32:
        return "32x64"
    if -(-M // bm) * -(-N // bn) < sms // 2:
        return "64x128"
    return big


def gemm_args(A, B, C, b_layout: str = "nk", config: str | None = None) -> tuple:
    """The launcher's arguments for ``C = A @ B.T`` ("nk") or ``A @ B`` ("kn"): checks shapes and types and
    passes the tensors with static layouts (the kernel is specialized to the problem shape: its address
    arithmetic folds to constants)."""
    if b_layout not in ("nk", "kn"):
        raise ValueError(f"b_layout must be 'nk' or 'kn', got {b_layout!r}")
    M, K = A.shape
    N = B.shape[0] if b_layout == "nk" else B.shape[1]
    if (B.shape[1] if b_layout == "nk" else B.shape[0]) != K or tuple(C.shape) != (M, N):
        shapes = f"A {tuple(A.shape)}, B {tuple(B.shape)} ({b_layout}), C {tuple(C.shape)}"
        raise ValueError(f"shapes do not match: {shapes}")
    esize = _elem_bytes(A)
    if (K * esize) % 16 or (b_layout == "kn" and (N * esize) % 16):
        raise ValueError("rows of A and B must start 16-byte aligned: K (and N for 'kn') a multiple of 16 bytes")
    for name, t in (("A", A), ("B", B)):  # every 16-byte cp.async chunk must start 16-byte aligned
        st = _byte_strides(t)
        if st[1] != esize or st[0] % 16 or _address(t) % 16:
            raise ValueError(
                f"{name} must be row-major with rows starting 16-byte aligned (its cp.async copies move 16 bytes): "
                f"got byte strides {st} at address 0x{_address(t):x}; pass a contiguous copy (.contiguous())"
            )
    if esize == 1 and b_layout != "nk":
        raise ValueError("fp8 GEMMs take B as (N, K) (b_layout='nk'): ldmatrix cannot transpose 8-bit elements")
    config = config or default_config(8 * esize, M, N)
    cfg = CONFIGS[config]
    BM, BN, BK_BYTES = cfg[:3]
    ragged = bool(M % BM or N % BN or (K * esize) % BK_BYTES)
    c_vec = _c_vector(C, N, BM * BN * _elem_bytes(C) <= (BM + BN) * BK_BYTES * cfg[5])
    static = [flyc.from_dlpack(t) for t in (A, B, C)]
    return (*static, cfg, b_layout, ragged, c_vec)


def _c_vector(C, N: int, fits_smem: bool) -> int:
    """C's elements per store: 16 bytes' worth through a shared tile, else pairs, else single elements —
    the widest whose every store is aligned: the row length, the row stride and C's address multiples of
    the store's size (a C that is a window of a wider array, e.g. ``big[:M, :N]`` with an odd row length,
    has rows that start 2 bytes off a 4-byte boundary: pairs of bf16 would fault there)."""
    c_bytes = _elem_bytes(C)
    st = _byte_strides(C)

    def aligned(v: int) -> bool:
        n = v * c_bytes
        return st[1] == c_bytes and N % v == 0 and st[0] % n == 0 and _address(C) % n == 0

    if fits_smem and aligned(16 // c_bytes):
        return 16 // c_bytes
    return 2 if aligned(2) else 1


def _elem_bytes(t) -> int:
    return t.element_size() if hasattr(t, "element_size") else t.itemsize


def _byte_strides(t) -> tuple:
    if hasattr(t, "element_size"):
        return tuple(s * t.element_size() for s in t.stride())
    return tuple(t.strides)


def _address(t) -> int:
    return t.data_ptr() if hasattr(t, "data_ptr") else t.ctypes.data


def gemm(A, B, C, b_layout: str = "nk", config: str | None = None) -> None:
    """``C[:] = A @ B.T`` (b_layout "nk") or ``A @ B`` ("kn"); torch tensors or numpy arrays."""
    gemm_launch(*gemm_args(A, B, C, b_layout, config))


# ---------------------------------------------------------------------------------------------------------
# python examples/05_gemm_mma_sync.py
# ---------------------------------------------------------------------------------------------------------

CPU_CASES = [
    ("bf16", 96, 80, 72, "nk"),
    ("bf16", 128, 64, 128, "kn"),
    ("f16", 70, 40, 24, "kn"),
    ("e4m3", 64, 72, 160, "nk"),
]
GPU_CASES = [
    ("bf16", 4096, 4096, 4096, "kn"),
    ("bf16", 4096, 4096, 4096, "nk"),
    ("bf16", 1000, 1000, 1000, "kn"),
    ("f16", 2048, 2048, 2048, "kn"),
    ("e4m3", 4096, 4096, 4096, "nk"),
]


def reference(a, b, b_layout: str):
    """``a @ b.T`` / ``a @ b`` in float64 (numpy) — the CPU check."""
    bb = b.astype(np.float64)
    return a.astype(np.float64) @ (bb.T if b_layout == "nk" else bb)


def check_cpu_case(name, M, N, K, b_layout, config="64x64") -> float:
    """Run one small GEMM on the interpreter; returns the max error relative to max(1, max |C|)."""
    import ml_dtypes

    dt = {
        "bf16": ml_dtypes.bfloat16,
        "f16": np.float16,
        "e4m3": ml_dtypes.float8_e4m3fn,
        "e5m2": ml_dtypes.float8_e5m2,
    }[name]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((N, K) if b_layout == "nk" else (K, N)).astype(dt)
    c = np.full((M, N), np.nan, np.float32)
    gemm(a, b, c, b_layout, config)
    ref = reference(a, b, b_layout)
    return float(np.abs(c - ref).max() / max(1.0, np.abs(ref).max()))


def _check_cpu() -> bool:
    ok = True
    for name, M, N, K, bl in CPU_CASES:
        err = check_cpu_case(name, M, N, K, bl)
        good = err < 1e-5
        ok &= good
        print(
            f"gemm {name} {M}x{N}x{K} B={bl} on the CPU interpreter: max rel err {err:.1e} {'PASS' if good else 'FAIL'}"
        )
    return ok


def time_call(fn, iters: int = 20) -> float:
    """Seconds per call of ``fn`` (CUDA events around ``iters`` back-to-back calls after a warm-up)."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters * 1e-3


def torch_reference(a, b, b_layout: str):
    """cuBLAS through torch: ``torch.matmul`` for 16-bit operands, ``torch._scaled_mm`` (row-wise scales of 1,
    bf16 out) for fp8; returns a thunk."""
    import torch

    M, N = a.shape[0], b.shape[0] if b_layout == "nk" else b.shape[1]
    if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        sa = torch.ones(M, 1, device=a.device, dtype=torch.float32)
        sb = torch.ones(1, N, device=a.device, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    bt = b.t() if b_layout == "nk" else b
    return lambda: a @ bt


def check_gpu_case(name, M, N, K, b_layout, config=None) -> tuple:
    """One GEMM on the GPU against cuBLAS: (max rel error, flydsl TFLOP/s, cuBLAS TFLOP/s)."""
    import torch

    dt = {"bf16": torch.bfloat16, "f16": torch.float16, "e4m3": torch.float8_e4m3fn}[name]
    a = torch.randn(M, K, device="cuda").to(dt)
    b = torch.randn((N, K) if b_layout == "nk" else (K, N), device="cuda").to(dt)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    args = gemm_args(a, b, c, b_layout, config)
    compiled = flyc.compile(gemm_launch, *args)
    compiled(*args)
    ref_fn = torch_reference(a, b, b_layout)
    ref = ref_fn().float()
    err = ((c.float() - ref).abs().max() / ref.abs().max().clamp(min=1)).item()
    flops = 2 * M * N * K
    ours = flops / time_call(lambda: compiled(*args)) / 1e12
    return err, ours, flops / time_call(ref_fn) / 1e12


def _check_gpu() -> bool:
    ok = True
    print(f"{'case':30s} {'max rel err':>11s} {'flydsl TFLOP/s':>15s} {'cuBLAS TFLOP/s':>15s} {'ratio':>6s}")
    for name, M, N, K, bl in GPU_CASES:
        err, ours, ref = check_gpu_case(name, M, N, K, bl)
        good = err < 2e-2
        ok &= good
        case = f"{name} {M}x{N}x{K} B={bl}"
        print(f"{case:30s} {err:11.1e} {ours:15.1f} {ref:15.1f} {ours / ref:6.2f} {'PASS' if good else 'FAIL'}")
    return ok


SWEEP = ["128x256", "128x256s3", "256x128", "128x128w8", "128x128", "128x128s3", "64x128"]


def _sweep() -> bool:
    """bf16 4096³ (both B layouts) with every tile configuration of :data:`SWEEP`, next to cuBLAS. Rows start
    with the dtype, as the other GEMM tables do (benchmarks/gpu_round.sh greps for it)."""
    ok = True
    head = f"{'dtype':5s} {'config':10s} {'B':3s} {'max rel err':>11s}"
    print(f"{head} {'flydsl TFLOP/s':>15s} {'cuBLAS TFLOP/s':>15s} {'ratio':>6s}")
    for config in SWEEP:
        for bl in ("kn", "nk"):
            err, ours, ref = check_gpu_case("bf16", 4096, 4096, 4096, bl, config)
            ok &= err < 2e-2
            print(f"bf16  {config:10s} {bl:3s} {err:11.1e} {ours:15.1f} {ref:15.1f} {ours / ref:6.2f}")
    return ok


def main(argv=None) -> bool:
    import sys

    argv = sys.argv[1:] if argv is None else argv
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    t0 = time.perf_counter()
    if "--sweep" in argv and gpu:
        ok = _sweep()
    else:
        ok = _check_gpu() if gpu else _check_cpu()
    print(f"{'PASS' if ok else 'FAIL'} ({time.perf_counter() - t0:.1f} s)")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)

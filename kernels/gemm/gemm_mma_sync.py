"""The ``mma.sync`` path of the preshuffle GEMM: every operand goes from global memory straight into
registers, for small M (decode), and correct for any M.

Per warp and per 64-byte step of K (two mma k-steps: k32 for 8-bit types, k16 twice... see below):

* **B**: for each of the warp's n8 tiles, lane ``(g, t) = (lane / 4, lane % 4)`` loads 16 bytes — logical
  chunk ``t`` (first half of a 128-byte K atom) or ``4 + t`` (second half) of row ``n0 + g`` — from the
  preshuffled layout (:func:`~kernels.gemm.preshuffle_layout.preshuffle_layout` evaluated on the lane's
  coordinates). The warp's 32 loads fill 16 whole 32-byte sectors of one 1-KB atom.
* **A**: for each m16 tile, the lane loads the same 16 K-bytes (``64·h + 16·t`` of the atom) of rows
  ``g`` and ``g + 8`` from row-major A (rows past M read row M-1: their results are never stored).
* The four 32-bit registers of a chunk feed two ``mma.sync`` (``m16n8k32`` e4m3/s8, ``m16n8k16``
  bf16/f16): words ``2s, 2s+1`` are the B fragment of mma ``s`` and, with the matching words of rows
  ``g``/``g+8``, its A fragment. Inside the 64-byte step this permutes K identically for A and B — a
  dot product does not care about the order of its terms — so every load is one contiguous 16 bytes.

The block's K loop keeps the next iteration's loads in flight (registers, double-buffered) while the
tensor cores work on the current one. ``warps_k`` warps split each iteration's ``tile_k``; their partial
accumulators meet in shared memory before the epilogue (:mod:`kernels.gemm.epilogue`). The epilogue's
operands (the rows' ``scale_a``, the columns' ``scale_b`` and bias) are loaded before the K loop — with
programmatic dependent launch right after ``griddepcontrol.wait`` — so that no L2 round trip follows the
last weight bytes (loaded in the epilogue they were two dependent round trips at the kernel's end: the second
column tile's loads could not pass the first one's stores).

``probe`` (measurement only, :mod:`benchmarks.decode_ladder`) builds the same kernel with stages left out, to
time where a decode GEMM's time goes; a probe kernel computes no GEMM (it writes C only if a checksum of what
it computed equals a value it never has):

* ``"b"``: the weight's loads only (same addresses, same loop), XOR-folded;
* ``"mma"``: + the e4m3 widening and the mma chain, with the B fragments standing in for A (no A loads);
* ``"a"``: + A's loads (the full main loop), no split-K reduction;
* ``"red"``: + the warps' reduction through shared memory, no epilogue;
* ``"late"``: the whole GEMM with the epilogue's operands loaded after the reduction (the layout before
  the early loads).
"""

from __future__ import annotations

import flydsl.compiler as flyc
import flydsl.expr as fx

from .epilogue import Epilogue
from .gemm_config import STEP_BYTES, GemmConfig
from .preshuffle_layout import ATOM_BYTES, CHUNK_BYTES, PANEL_N, preshuffle_layout

__all__ = ["build_mma_sync_gemm", "MMA_TYPES", "check_operand"]

# in_dtype -> (mma shape, operand element type, accumulator element type). fp8 is converted to f16 in
# registers first: Hopper has no fp8 mma.sync (ptxas emulates m16n8k32 e4m3 with the same conversions
# plus an f16 mma into a zero accumulator and four f32 adds per instruction); e4m3 -> f16 is exact, so
# the f16 mma with f32 accumulation computes the same products.
MMA_TYPES = {
    "fp8": ("m16n8k16", fx.Float16, fx.Float32),
    "int8": ("m16n8k32", fx.Int8, fx.Int32),
    "bf16": ("m16n8k16", fx.BFloat16, fx.Float32),
    "fp16": ("m16n8k16", fx.Float16, fx.Float32),
}
WORD = 4  # loads are 4 x i32
PROBES = (None, "b", "mma", "a", "red", "late")
A_AHEAD_REGS = 64  # b_smem: A of all the shared-memory iterations loaded at once up to this many registers
PROBE_MAGIC = 0x5EED1234  # a probe kernel's checksum is never compared equal to this on real data


def check_operand(name: str, t, elem_bytes: int) -> None:
    """Raise unless tensor ``t`` holds ``elem_bytes``-byte elements and starts 16-byte aligned (at trace time)."""
    width = t.dtype.width // 8
    if width != elem_bytes:
        raise TypeError(
            f"{name} holds {t.dtype.__name__} ({width}-byte elements), but the kernel was compiled for "
            f"{elem_bytes}-byte inputs (pass fp8 as float8_e4m3fn or an int8 view of it)"
        )
    if t.alignment < 16:
        raise ValueError(f"{name} must start 16-byte aligned (one 128-bit load per lane), got {t.alignment}")


def build_mma_sync_gemm(cfg: GemmConfig, probe: str | None = None):
    """The ``@flyc.jit`` launcher ``launch_gemm(arg_c, arg_a, arg_b, arg_scale_a, arg_scale_b, arg_bias,
    i32_m, i32_n, stream)`` of the mma.sync path for ``cfg`` (``probe``: a measurement kernel with stages
    left out, see the module docstring)."""
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {PROBES}, got {probe!r}")
    e = cfg.elem_bytes
    kb = cfg.K * e
    shape, ab_type, acc_type = MMA_TYPES[cfg.in_dtype]
    wm, wn, wk = cfg.warps_m, cfg.warps_n, cfg.warps_k
    MT, NT, U = cfg.mt, cfg.nt, cfg.steps_per_warp
    H = 1 if cfg.tile_m == 8 else 2  # tile_m 8: rows g + 8 of the m16 tile are zeros (never loaded or widened)
    warp_rows, warp_cols = cfg.tile_m // wm, cfg.tile_n // wn
    steps_per_iter = cfg.tile_k * e // STEP_BYTES
    iters = cfg.iters
    threads = 32 * cfg.num_warps
    chunk = CHUNK_BYTES // e  # elements per 16-byte chunk
    bl = preshuffle_layout(cfg.N, cfg.K, e)
    kblock_words = PANEL_N * ATOM_BYTES // WORD  # one 128-byte K atom column of a panel
    row_words = kb // WORD
    red_words = (wk - 1) * wm * wn * MT * NT * 32 * 4  # split-K partials in shared memory
    panel_words = PANEL_N * row_words
    # every warp's columns start a panel or stay inside one (tile_n and warp_cols dividing 64, or multiples)
    static_b = warp_cols % PANEL_N == 0 and cfg.tile_n % PANEL_N == 0 or PANEL_N % cfg.tile_n == 0

    S = cfg.b_smem  # leading iterations whose weight bytes come through shared memory
    api = steps_per_iter // 2  # 128-byte K atoms per iteration
    piece = cfg.tile_n * ATOM_BYTES  # one K atom of the block's rows: contiguous in the layout (tile_n | 64)
    s_bytes = S * api * piece

    def _b_tile_offset(j: int) -> int:
        """Words from the warp's first n8 tile to its ``j``-th in the layout (atoms of 1 KB, panels)."""
        return (j // 8) * panel_words + (j % 8) * (ATOM_BYTES * 8 // WORD)

    @flyc.kernel
    def kernel_gemm(
        C: fx.Tensor, A: fx.Tensor, B: fx.Tensor, SA: fx.Tensor, SB: fx.Tensor, BIAS: fx.Tensor, M: fx.Int32
    ):
        check_operand("arg_a", A, e)
        check_operand("arg_b", B, e)
        epi = Epilogue(cfg, C, SA, SB, BIAS, M)
        tid = fx.thread_idx.x
        lane = tid % 32
        warp = tid // 32
        g = lane // 4
        t = lane % 4
        wn_i = warp % wn
        wm_i = (warp // wn) % wm
        wk_i = warp // (wn * wm)
        n_warp = fx.block_idx.x * cfg.tile_n + wn_i * warp_cols
        m_warp = fx.block_idx.y * cfg.tile_m + wm_i * warp_rows
        pa = A.iterator.recast(fx.Int32)
        pb = B.iterator.recast(fx.Int32)

        # B: the lane's chunk t of row n0 + g in K atom 0 (the layout on the lane's coordinates), and the
        # step to chunk 4 + t (+-64 bytes). The warp's n8 tiles sit at static distances from the first when
        # its columns stay inside a 64-row panel or start one: one base pointer, immediate offsets.
        row0 = n_warp + g
        first = bl((row0, t * chunk))
        b_half = (bl((row0, (t + 4) * chunk)) - first) // (WORD // e)
        if fx.const_expr(static_b):
            pb0 = pb + (first // (WORD // e) + wk_i * (U // 2) * kblock_words)
            b_ptrs = [pb0 + _b_tile_offset(j) for j in range(NT)]
        else:
            b_ptrs = [
                pb + (bl((row0 + 8 * j, t * chunk)) // (WORD // e) + wk_i * (U // 2) * kblock_words) for j in range(NT)
            ]
        # A: rows g and g + 8 of each m16 tile, bytes 16t of the step (rows past M read row M-1)
        a_ptrs = []
        for i in fx.range_constexpr(MT):
            pair = []
            for h in fx.range_constexpr(H):
                r = fx.min(m_warp + 16 * i + 8 * h + g, M - 1)
                pair.append(pa + (r * row_words + t * (CHUNK_BYTES // WORD) + wk_i * U * (STEP_BYTES // WORD)))
            a_ptrs.append(pair)

        def load_b(it):
            """Iteration ``it``'s B fragments ``b[u][j]`` (4 x i32 Vectors)."""
            bs = []
            kb_it = it * (steps_per_iter // 2) * kblock_words
            for u in fx.range_constexpr(U):
                koff = kb_it + (u // 2) * kblock_words
                if fx.const_expr(u % 2):
                    koff = koff + b_half
                bs.append([(b_ptrs[j] + koff).load(vec_width=4, align=16, cache=cfg.b_cache or None)
                           for j in range(NT)])  # fmt: skip
            return bs

        def load_a(it):
            """Iteration ``it``'s A fragments ``a[u][i][h]`` (None for the probes without A)."""
            if fx.const_expr(probe in ("b", "mma")):
                return None
            ka_it = it * steps_per_iter * (STEP_BYTES // WORD)
            return [[[(a_ptrs[i][h] + (ka_it + u * (STEP_BYTES // WORD))).load(vec_width=4, align=16)
                      for h in range(H)] for i in range(MT)] for u in range(U)]  # fmt: skip

        def load(it):
            """Iteration ``it``'s fragments: ``(b[u][j], a[u][i][h])`` as 4 x i32 Vectors."""
            return load_b(it), load_a(it)

        def words(v, w):
            """32-bit word ``w`` of a loaded 16-byte chunk as the registers the mma takes: the word itself, or
            for fp8 its four e4m3 values widened to two words of f16 pairs (converted just before use, so
            that only the words in flight are live)."""
            if fx.const_expr(cfg.in_dtype == "fp8"):
                return v[w : w + 1].bitcast(fx.Float8E4M3FN).to(fx.Float16).bitcast(fx.Int32)
            return v[w : w + 1]

        def compute(frags, acc):
            bs, as_ = frags
            if fx.const_expr(probe == "b"):  # the weight's bytes folded, nothing else
                for u in fx.range_constexpr(U):
                    for j in fx.range_constexpr(NT):
                        acc = acc ^ bs[u][j]
                return acc
            if fx.const_expr(probe == "mma"):  # B's fragments stand in for A's
                as_ = [[[bs[u][(i * H + h) % NT] for h in range(H)] for i in range(MT)] for u in range(U)]
            out = [list(row) for row in acc]
            # mma s takes words 2s, 2s+1 of the B chunk (after widening for fp8: the f16 words of loaded
            # word s) and the same words of rows g and g + 8 for A: [row g, row g+8, row g, row g+8]
            per = 2 if cfg.in_dtype == "fp8" else 1  # mma steps per loaded word
            for u in fx.range_constexpr(U):
                for w in fx.range_constexpr(0, 4, 2 // per):
                    if fx.const_expr(per == 2):
                        bw = [words(bs[u][j], w) for j in range(NT)]
                        aw = [[words(as_[u][i][h], w) for h in range(H)] for i in range(MT)]
                    else:
                        bw = [bs[u][j][w : w + 2] for j in range(NT)]
                        aw = [[as_[u][i][h][w : w + 2] for h in range(H)] for i in range(MT)]
                    if fx.const_expr(H == 1):
                        aw = [[row[0], fx.full(2, 0, fx.Int32)] for row in aw]
                    bf = [bw[j].bitcast(ab_type) for j in range(NT)]
                    for i in fx.range_constexpr(MT):
                        lo, hi = aw[i]
                        af = lo.shuffle(hi, [0, 2, 1, 3]).bitcast(ab_type)
                        for j in fx.range_constexpr(NT):
                            out[i][j] = fx.nvvm.mma_sync(af, bf[j], out[i][j], shape=shape)
            return out

        def checksum(acc):
            """A probe's end: C is written only if the XOR of everything it computed is PROBE_MAGIC."""
            vs = [acc] if fx.const_expr(probe == "b") else [v for row in acc for v in row]
            x = None
            for v in vs:
                v = v if fx.const_expr(acc_type is fx.Int32 or probe == "b") else v.bitcast(fx.Int32)
                x = v if x is None else x ^ v
            word = x[0] ^ x[1] ^ x[2] ^ x[3]
            if word == PROBE_MAGIC:
                C.iterator.recast(fx.Int32).store(word)

        early = probe is None  # the epilogue's operands before the K loop (after the grid dependency)
        if fx.const_expr(probe == "b"):
            acc = fx.full(4, 0, fx.Int32)
        else:
            acc = [[fx.full(4, 0, acc_type) for _ in range(NT)] for _ in range(MT)]
        if fx.const_expr(S):
            # the first S iterations' weight bytes: one bulk copy per K atom of the block's rows into shared
            # memory, all issued at once by one thread (completing on one mbarrier per iteration)
            raw = fx.SharedAllocator(static=False).allocate(s_bytes + red_words * 4 + 8 * S + 128).ptr
            sbase = fx.nvvm.align_shared(raw, 128).recast(fx.Int8)
            bars = (sbase + s_bytes + red_words * 4).recast(fx.Int64)
            if tid == 0:
                for s in fx.range_constexpr(S):
                    fx.nvvm.mbarrier_init(bars + s, 1)
                fx.nvvm.fence_mbarrier_init()
            fx.barrier()  # the barriers are initialized before any thread waits on them
            if fx.const_expr(cfg.pdl):
                fx.nvvm.griddep_launch_dependents()
            n0 = fx.block_idx.x * cfg.tile_n
            if tid == 0:
                src = B.iterator.recast(fx.Int8) + ((n0 // PANEL_N) * (PANEL_N * kb) + (n0 % PANEL_N) * ATOM_BYTES)
                for s in fx.range_constexpr(S):
                    fx.nvvm.mbarrier_arrive_expect_tx(bars + s, api * piece)
                    for a in fx.range_constexpr(api):
                        at = s * api + a
                        fx.nvvm.bulk_copy_g2s(sbase + at * piece, src + at * (PANEL_N * ATOM_BYTES), piece, bars + s)
            # the lane's chunk in the block's piece of an atom: the layout's offset from the block's first row
            sb0 = sbase.recast(fx.Int32) + ((first - bl((n0, 0))) // (WORD // e) + wk_i * (U // 2) * (piece // WORD))
            gb = load_b(fx.Int32(S)) if fx.const_expr(S < iters) else None  # the first iteration from global
            if fx.const_expr(cfg.pdl):
                fx.nvvm.griddep_wait()  # A, the scales and C follow the previous kernel
            ops = _operands(epi, m_warp, n_warp, g, t) if fx.const_expr(early) else None
            # A of every shared-memory iteration at once when that takes at most A_AHEAD_REGS registers (over
            # min_blocks: a register cap), else one iteration ahead (the weight bytes land about together: an
            # A load per iteration would put one L2 round trip per iteration after them)
            ahead = S if fx.const_expr(S * U * MT * H * 4 <= A_AHEAD_REGS // max(1, cfg.min_blocks)) else 1
            a_q = [load_a(fx.Int32(i)) for i in range(min(ahead, iters))]
            for s in fx.range_constexpr(S):
                if fx.const_expr(s + ahead < iters):
                    a_q.append(load_a(fx.Int32(s + ahead)))
                a_cur = a_q[s]
                fx.nvvm.mbarrier_wait(bars + s, 0)
                bs = []
                for u in fx.range_constexpr(U):
                    off = (s * api + u // 2) * (piece // WORD)
                    if fx.const_expr(u % 2):
                        off = off + b_half
                    bs.append([(sb0 + (off + j * (ATOM_BYTES * 8 // WORD))).load(vec_width=4, align=16)
                               for j in range(NT)])  # fmt: skip
                acc = compute((bs, a_cur), acc)
            g0 = S
            cur = (gb, a_q[S] if fx.const_expr(S < iters) else None)
        elif fx.const_expr(cfg.pdl == "prefetch"):
            # programmatic dependent launch without a promise about B: before the wait the block's weight bytes
            # only go into L2 (a prefetch reads nothing into the SM: every load below follows the previous
            # kernel, and L2 is where its writes land, so a B it wrote is what they read)
            fx.nvvm.griddep_launch_dependents()
            if tid == 0:
                n0 = fx.block_idx.x * cfg.tile_n
                gsrc = B.iterator.recast(fx.Int8) + ((n0 // PANEL_N) * (PANEL_N * kb) + (n0 % PANEL_N) * ATOM_BYTES)
                if fx.const_expr(cfg.tile_n % PANEL_N == 0):  # whole panels: contiguous
                    fx.nvvm.bulk_prefetch_l2(gsrc, cfg.tile_n * kb)
                else:  # the block's rows of each K atom
                    for a in fx.range_constexpr(kb // ATOM_BYTES):
                        fx.nvvm.bulk_prefetch_l2(gsrc + a * (PANEL_N * ATOM_BYTES), cfg.tile_n * ATOM_BYTES)
            fx.nvvm.griddep_wait()
            ops = _operands(epi, m_warp, n_warp, g, t) if fx.const_expr(early) else None
            cur = load(fx.Int32(0))
            g0 = 0
        elif fx.const_expr(cfg.pdl):
            # programmatic dependent launch: the next kernel may start now, and the first iteration's weight
            # loads (all of them when tile_k = K) fly while the previous kernel finishes (no kernel of the
            # stream writes B: the caller's promise); A, the scales and C wait for it
            fx.nvvm.griddep_launch_dependents()
            b0 = load_b(fx.Int32(0))
            fx.nvvm.griddep_wait()
            cur = (b0, load_a(fx.Int32(0)))
            ops = _operands(epi, m_warp, n_warp, g, t) if fx.const_expr(early) else None
            g0 = 0
        else:
            ops = _operands(epi, m_warp, n_warp, g, t) if fx.const_expr(early) else None
            cur = load(fx.Int32(0))
            g0 = 0
        # the global iterations g0 .. iters-1: the next iteration's loads are issued before this one's mma;
        # unrolled by two so that the two register buffers alternate without copies
        rest = iters - g0
        if fx.const_expr(rest > 0):  # (a loop's body is traced once, even for no iteration)
            for p in range(0, (rest - 1) // 2):
                nxt = load(g0 + 2 * p + 1)
                acc = compute(cur, acc)
                cur = load(g0 + 2 * p + 2)
                acc = compute(nxt, acc)
        if fx.const_expr(rest > 0 and (rest - 1) % 2):
            nxt = load(fx.Int32(iters - 1))
            acc = compute(cur, acc)
            acc = compute(nxt, acc)
        elif fx.const_expr(rest > 0):
            acc = compute(cur, acc)

        if fx.const_expr(probe in ("b", "mma", "a")):
            checksum(acc)
        elif fx.const_expr(wk > 1):
            red = (sbase + s_bytes).recast(acc_type) if fx.const_expr(S) else fx.alloc_shared(acc_type, red_words)
            slot = ((wk_i - 1) * (wm * wn) + (wm_i * wn + wn_i)) * (MT * NT)
            if wk_i > 0:
                for i in fx.range_constexpr(MT):
                    for j in fx.range_constexpr(NT):
                        (red + ((slot + i * NT + j) * 32 + lane) * 4).store(acc[i][j], align=16)
            fx.barrier()
            if wk_i == 0:
                for kk in fx.range_constexpr(1, wk):
                    base = ((kk - 1) * (wm * wn) + (wm_i * wn + wn_i)) * (MT * NT)
                    for i in fx.range_constexpr(MT):
                        for j in fx.range_constexpr(NT):
                            part = (red + ((base + i * NT + j) * 32 + lane) * 4).load(vec_width=4, align=16)
                            acc[i][j] = acc[i][j] + part
                if fx.const_expr(probe == "red"):
                    checksum(acc)
                else:
                    _epilogue(epi, acc, ops, m_warp, n_warp, g, t)
        elif fx.const_expr(probe == "red"):
            checksum(acc)
        else:
            _epilogue(epi, acc, ops, m_warp, n_warp, g, t)

    def _operands(epi, m_warp, n_warp, g, t):
        """The epilogue's loads: ``(rows, cols)``, per m16 tile ``(r0, scale_a[r0], r1, scale_a[r1])`` (rows g
        and g + 8) and per n8 tile ``(col, scale_b[col:col+2], bias[col:col+2])`` (None where unused)."""
        rows = []
        for i in fx.range_constexpr(MT):
            r0 = m_warp + 16 * i + g
            r1 = r0 + 8
            sa0 = epi.row_scale(r0) if epi.scaled else None
            sa1 = epi.row_scale(r1) if epi.scaled and H == 2 else None
            rows.append((r0, sa0, r1, sa1))
        cols = []
        for j in fx.range_constexpr(NT):
            col = n_warp + 8 * j + 2 * t
            cols.append((col, *epi.col_operands(col)))
        return rows, cols

    def _epilogue(epi, acc, ops, m_warp, n_warp, g, t):
        """Scale, bias, activate and store the warp's tiles; ``ops`` the operands loaded early, or None: load
        them here, the columns' between the stores (probe ``"late"``: the layout before the early loads)."""
        if fx.const_expr(ops is None):
            rows = []
            for i in fx.range_constexpr(MT):
                r0 = m_warp + 16 * i + g
                rows.append((r0, epi.row_scale(r0) if epi.scaled else None, r0 + 8, None))
            cols = None
        else:
            rows, cols = ops
        for j in fx.range_constexpr(NT):
            if fx.const_expr(cols is None):
                col = n_warp + 8 * j + 2 * t
                sb, bias = epi.col_operands(col)
            else:
                col, sb, bias = cols[j]
            for i in fx.range_constexpr(MT):
                r0, sa0, r1, sa1 = rows[i]
                if fx.const_expr(cols is None):
                    sa1 = epi.row_scale(r1) if epi.scaled and H == 2 else None
                v = acc[i][j].to(fx.Float32)
                epi.store_pair(v[0:2], r0, col, sa0, sb, bias)
                if fx.const_expr(H == 2):
                    epi.store_pair(v[2:4], r1, col, sa1, sb, bias)

    @flyc.jit
    def launch_gemm(
        arg_c: fx.Tensor,
        arg_a: fx.Tensor,
        arg_b: fx.Tensor,
        arg_scale_a: fx.Tensor,
        arg_scale_b: fx.Tensor,
        arg_bias: fx.Tensor,
        i32_m: fx.Int32,
        i32_n: fx.Int32,
        stream: fx.Stream = fx.Stream(None),
    ):
        grid = (cfg.N // cfg.tile_n, (i32_m + cfg.tile_m - 1) // cfg.tile_m, 1)
        attrs = {"min_blocks_per_sm": cfg.min_blocks} if cfg.min_blocks else None
        kernel_gemm(arg_c, arg_a, arg_b, arg_scale_a, arg_scale_b, arg_bias, i32_m).launch(
            grid=grid, block=(threads, 1, 1), stream=stream, value_attrs=attrs
        )

    launch_gemm.gemm_config = cfg
    return launch_gemm

"""The wgmma path of the preshuffle GEMM (sm_90a), for large M: CUTLASS's warp-specialized persistent
cooperative design, fed by TMA for A and by 1-D bulk copies of the preshuffled B.

* **A** (M×K, row-major) arrives by TMA into the canonical 128-byte-swizzled K-major shared layout
  (``fx.nvvm.make_smem_layout_gmma``); a tile whose rows past M fill two or more 8-row groups copies only the groups
  before M (:data:`A_BOX_ROWS`: the copy engine's zero-fill of rows past M costs about a read), its other rows stale.
* **B** needs no tensor map: a stage of ``tile_n`` rows by ``tile_k`` is ``tile_n/64 × tile_k·e/128`` pieces
  of 8 KB, each one panel's 64 rows of one 128-byte K atom — contiguous in the preshuffled layout and
  exactly the bytes wgmma reads at that place of the shared tile (atoms along N, then K). One
  ``cp.async.bulk`` per piece, completing on the stage's mbarrier with A's TMA bytes.
* **Warp specialization**: warpgroup 0 produces (one elected thread; ``setmaxnreg`` 40), ``tile_m / 64``
  consumer warpgroups each run ``wgmma.mma_async`` m64n{tile_n}k{16,32} on 64 rows of the tile (232
  registers), keeping one batch in flight while releasing the previous stage.
* **Persistent grid**: ``min(132, tiles)`` blocks walk the tiles in steps of the grid, down groups of 8
  tile-rows first so that a wave's B panels stay in L2.
* **Epilogue**: the f32 (int8: i32) accumulators get the per-token/per-channel scales, bias and
  activation in registers (:mod:`kernels.gemm.epilogue`), then leave either through shared memory — two
  128-byte-swizzled 64×64 buffers per consumer, filled in turn while one thread TMA-stores the other
  (``c_store="tma"``: coalesced, and the copy engine drops rows past M) — or straight from registers as
  guarded 4-byte stores (``c_store="direct"``).
"""

from __future__ import annotations

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr import nvvm

from .epilogue import Epilogue
from .gemm_config import NUM_SMS, GemmConfig
from .gemm_mma_sync import check_operand
from .preshuffle_layout import ATOM_BYTES, PANEL_N

__all__ = ["build_wgmma_gemm", "WGMMA_TYPES", "PRODUCER_REGS", "CONSUMER_REGS", "GROUP_M", "A_BOX_ROWS"]

WGMMA_TYPES = {
    "fp8": (fx.Float8E4M3FN, fx.Float32),
    "int8": (fx.Int8, fx.Int32),
    "bf16": (fx.BFloat16, fx.Float32),
    "fp16": (fx.Float16, fx.Float32),
}
PRODUCER_REGS, CONSUMER_REGS = 40, 232
GROUP_M = 8  # tile-rows per scheduler group (L2 reuse of B)
BAR_TURN = 3  # ping-pong: named barriers 3 and 4 hand the tensor cores to warpgroup 1 and 2
PIECE = PANEL_N * ATOM_BYTES  # 8 KB: one panel's rows of one K atom
EPI = 64  # epilogue chunk: 64 x 64 outputs, one 128-byte swizzle row of 16-bit values
# the row groups of the activations' TMA box (fx.nvvm.make_tma_atom's box_rows): a tile holding the last rows of A
# copies only the groups before M — the copy engine fills rows past the tensor one by one (docs/gemm.md, "Rows past M")
A_BOX_ROWS = 8


def tile_coords(tile, tiles_m, tiles_n):
    """The (m, n) tile of linear tile index ``tile``: down GROUP_M tile-rows, then right."""
    group = GROUP_M * tiles_n
    first_m = tile // group * GROUP_M
    rows = fx.min(tiles_m - first_m, GROUP_M)
    local = tile % group
    return first_m + local % rows, local // rows


def build_wgmma_gemm(cfg: GemmConfig):
    """The ``@flyc.jit`` launcher of the wgmma path for ``cfg`` (FlyDSL's ``launch_gemm`` signature)."""
    dt, acc_t = WGMMA_TYPES[cfg.in_dtype]
    e = cfg.elem_bytes
    BM, BN, BK = cfg.tile_m, cfg.tile_n, cfg.tile_k
    kblks = BK * e // ATOM_BYTES  # 128-byte K atoms per stage
    stages = cfg.stages
    pingpong = cfg.schedule == "pingpong"
    consumers = 2 if pingpong else BM // 64  # ping-pong: two warpgroups, each on whole tiles in turn
    halves = BM // 64 if pingpong else 1  # m64 row blocks per warpgroup and tile
    threads = 128 * (1 + consumers)
    k_tiles = cfg.K // BK
    tiles_n = cfg.N // BN
    row_bytes = cfg.K * e  # of A and of B
    b_stage_bytes = BN * BK * e
    a_bytes, b_bytes = BM * BK * e * stages, b_stage_bytes * stages
    c_bytes = EPI * EPI * 2 * 2 * consumers if cfg.c_store == "tma" else 0

    tma_store = cfg.c_store == "tma"

    @flyc.kernel(known_block_size=(threads, 1, 1))
    def kernel_gemm(tma_a: nvvm.TmaAtom, tma_c: nvvm.TmaAtom, C: fx.Tensor, B: fx.Tensor, SA: fx.Tensor,
                    SB: fx.Tensor, BIAS: fx.Tensor, M: fx.Int32):  # fmt: skip
        epi = Epilogue(cfg, C, SA, SB, BIAS, M)
        tid = fx.thread_idx.x
        wg = nvvm.warpgroup_idx()

        # one dynamic allocation, its base rounded up at run time to the 1-KB swizzle period (the dynamic
        # shared base is only 16-byte aligned; TMA and wgmma swizzle absolute addresses): A stages, B stages,
        # the epilogue buffers, then the mbarriers
        la = nvvm.make_smem_layout_gmma(dt, (BM, BK), stages=stages)
        lb = nvvm.make_smem_layout_gmma(dt, (BN, BK), stages=stages)
        raw = fx.SharedAllocator(static=False).allocate(a_bytes + b_bytes + c_bytes + 16 * stages + 1024).ptr
        base = nvvm.align_shared(raw, 1024).recast(fx.Int8)
        sA = fx.make_tensor(base.recast(dt), la)
        sB_bytes = base + a_bytes
        sB = fx.make_tensor(sB_bytes.recast(dt), lb)
        sC = None
        if fx.const_expr(tma_store):
            lc = nvvm.make_smem_layout_gmma(epi.out, (EPI, EPI), stages=2 * consumers)
            sC = fx.make_tensor((base + a_bytes + b_bytes).recast(epi.out), lc)
        full = (base + a_bytes + b_bytes + c_bytes).recast(fx.Int64)
        empty = full + stages
        if tid == 0:
            nvvm.tma_prefetch_descriptor(tma_a)  # the first TMA of the producer (this thread) finds it cached
            for s in fx.range_constexpr(stages):
                nvvm.mbarrier_init(full + s, 1)  # the producer's arrive_expect_tx
                # every thread of the warpgroup(s) reading the stage releases it
                nvvm.mbarrier_init(empty + s, (1 if pingpong else consumers) * 128)
            nvvm.fence_mbarrier_init()
        fx.barrier()

        tiles_m = (M + BM - 1) // BM
        num_tiles = tiles_m * tiles_n
        first, step = fx.block_idx.x, fx.grid_dim.x
        gB = B.iterator.recast(fx.Int8)

        def stage(st, m, panel0, kt, rows):
            """Stage ``st``: A's tile (its first ``rows`` rows' groups; None: all) and B's pieces."""
            nvvm.mbarrier_wait(empty + st.index, st.phase)
            nvvm.mbarrier_arrive_expect_tx(full + st.index, tma_a.load_bytes(rows) + b_stage_bytes)
            nvvm.tma_load(tma_a, sA[None, None, st.index], full + st.index, (m * BM, kt * BK),
                          rows=rows)  # fmt: skip
            dst0 = sB_bytes + st.index * b_stage_bytes
            for p in fx.range_constexpr(BN // PANEL_N):
                for j in fx.range_constexpr(kblks):
                    src = panel0 + (p * PANEL_N * row_bytes + (kt * kblks + j) * PIECE)
                    dst = dst0 + (j * BN * ATOM_BYTES + p * PIECE)
                    nvvm.bulk_copy_g2s(dst, src, PIECE, full + st.index)
            return st.next()

        if wg == 0:
            # ------------------------------------------------------------ producer: TMA (A) + bulk copies (B)
            nvvm.warpgroup_reg_dealloc(PRODUCER_REGS)
            if nvvm.warp_idx_in_warpgroup() == 0:
                if nvvm.elect_one():
                    st = nvvm.PipelineState(stages, phase=1)  # the empty barriers start free
                    for tile in range(first, num_tiles, step):
                        m, n = tile_coords(tile, tiles_m, tiles_n)
                        panel0 = gB + n * (BN * row_bytes)  # panels n*BN/64 ... are consecutive

                        # a tile holding the last rows of A loads only their 8-row groups (A_BOX_ROWS), decided once
                        # per tile: the loop of whole tiles is the plain one
                        rows_a = fx.min(M - m * BM, BM)
                        if tma_a.whole_tile(rows_a):
                            for kt in range(k_tiles):
                                st = stage(st, m, panel0, kt, None)
                        else:
                            for kt in range(k_tiles):
                                st = stage(st, m, panel0, kt, rows_a)
        else:
            # ------------------------------------------------------------ consumers: wgmma, then the epilogue
            nvvm.warpgroup_reg_alloc(CONSUMER_REGS)
            cw = wg - 1  # cooperative: rows 64*cw .. 64*cw + 63 of every tile; ping-pong: every other tile
            t = nvvm.thread_idx_in_warpgroup()
            op = nvvm.WgmmaOp(dt, acc_t, BN)
            kin = op.shape_mnk[2]
            st = nvvm.PipelineState(stages)
            frag_c = None
            if fx.const_expr(tma_store):
                frag_c = fx.make_tiled_mma(fx.make_mma_atom(nvvm.WgmmaOp(dt, acc_t, EPI))).get_slice(t)
            first_mine = first + (cw * step if pingpong else 0)
            for tile in range(first_mine, num_tiles, step * (2 if pingpong else 1)):
                m, n = tile_coords(tile, tiles_m, tiles_n)
                if fx.const_expr(pingpong):
                    # this warpgroup's tiles are every other one of the block's: its stages start k_tiles times
                    # the block's tiles before it into the ring; the other warpgroup's mainloop ends first
                    local = (tile - first) // step
                    pos = local * k_tiles
                    st = nvvm.PipelineState(stages, pos % stages, (pos // stages) % 2)
                    if local > 0:
                        nvvm.barrier_sync(BAR_TURN + cw, 256)
                accs = [fx.full(BN // 2, 0, acc_t) for _ in range(halves)]
                prev = fx.Int32(0)
                for kt in range(k_tiles):
                    nvvm.mbarrier_wait(full + st.index, st.phase)
                    a_k = fx.zipped_divide(sA[None, None, st.index], (64, kin))
                    b_k = fx.zipped_divide(sB[None, None, st.index], (BN, kin))
                    nvvm.wgmma_fence()
                    for h in fx.range_constexpr(halves):
                        rows = h if pingpong else cw
                        for kk in fx.range_constexpr(BK // kin):
                            accs[h] = nvvm.wgmma(accs[h], a_k[None, (rows, kk)], b_k[None, (0, kk)], op=op,
                                                 accumulate=(kt > 0) if kk == 0 else True)  # fmt: skip
                    nvvm.wgmma_commit_group()
                    accs = _wait(1, accs)  # the previous batch is done: release its stage
                    if kt > 0:
                        nvvm.mbarrier_arrive(empty + prev)
                    prev = st.index
                    st = st.next()
                accs = _wait(0, accs)
                nvvm.mbarrier_arrive(empty + prev)
                if fx.const_expr(pingpong):
                    if tile + step < num_tiles:  # the other warpgroup's next tile may start its mainloop
                        nvvm.barrier_arrive(BAR_TURN + 1 - cw, 256)
                for h in fx.range_constexpr(halves):
                    row0, col0 = m * BM + 64 * (h if pingpong else cw), n * BN
                    if fx.const_expr(tma_store):
                        # 64 columns at a time into the consumer's two shared buffers in turn; one thread
                        # TMA-stores each chunk (rows past M are dropped by the copy engine)
                        rows = _rows(epi, row0, t)
                        for c in fx.range_constexpr(BN // EPI):
                            buf = sC[None, None, 2 * cw + (h * (BN // EPI) + c) % 2]
                            if t == 0:
                                nvvm.bulk_wait_group(1, read=True)  # the store that last read this buffer is done
                            nvvm.barrier_sync(1 + cw, 128)
                            dst = frag_c.partition_C(buf)
                            vals = _finished(epi, accs[h], rows, col0, t, c)
                            for i in fx.range_constexpr(EPI // 2):
                                dst[(i, 0, 0)] = vals[i]
                            nvvm.fence_proxy_async()
                            nvvm.barrier_sync(1 + cw, 128)
                            if t == 0:
                                nvvm.tma_store(tma_c, buf, (row0, col0 + EPI * c))
                                nvvm.bulk_commit_group()
                    else:
                        _store_tile(epi, accs[h], row0, col0, t)
            if fx.const_expr(tma_store):
                if t == 0:
                    nvvm.bulk_wait_group(0)

    def _wait(pending, accs):
        """``wgmma_wait_group`` on a list of accumulators, returned as a list."""
        r = nvvm.wgmma_wait_group(pending, *accs)
        return [r] if len(accs) == 1 else list(r)

    def _rows(epi, row0, t):
        """The thread's two rows of the warpgroup's 64 (wgmma's m64nN fragment: value ``4j + 2h + i`` is row
        ``16·warp + lane/4 + 8h``, column ``8j + 2·(lane % 4) + i``) and their scales."""
        r0 = row0 + 16 * (t // 32) + (t % 32) // 4
        r1 = r0 + 8
        return r0, r1, (epi.row_scale(r0) if epi.scaled else None), (epi.row_scale(r1) if epi.scaled else None)

    def _store_tile(epi, acc, row0, col0, t):
        """The consumer thread's accumulators through the epilogue, straight to global memory."""
        r0, r1, sa0, sa1 = _rows(epi, row0, t)
        v = acc.to(fx.Float32)
        for j in fx.range_constexpr(BN // 8):
            col = col0 + 8 * j + 2 * (t % 4)
            sb, bias = epi.col_operands(col)
            epi.store_pair(v[4 * j : 4 * j + 2], r0, col, sa0, sb, bias)
            epi.store_pair(v[4 * j + 2 : 4 * j + 4], r1, col, sa1, sb, bias)

    def _finished(epi, acc, rows, col0, t, chunk):
        """The thread's accumulators of 64-column chunk ``chunk`` after the epilogue, in fragment order
        (output type): computed chunk by chunk, so that only 32 finished values are live at a time."""
        _, _, sa0, sa1 = rows
        v = acc[chunk * (EPI // 2) : (chunk + 1) * (EPI // 2)].to(fx.Float32)
        out = []
        for jj in fx.range_constexpr(EPI // 8):
            j = chunk * (EPI // 8) + jj
            col = col0 + 8 * j + 2 * (t % 4)
            sb, bias = epi.col_operands(col)
            out += list(epi.finish(v[4 * jj : 4 * jj + 2], sa0, sb, bias))
            out += list(epi.finish(v[4 * jj + 2 : 4 * jj + 4], sa1, sb, bias))
        return out

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
        check_operand("arg_a", arg_a, e)
        check_operand("arg_b", arg_b, e)
        # NOTE: A keeps its own element type (fp8 may come as an int8 view): TMA moves bytes, and a pointer
        # cast here would keep the launcher off the straight-line launch plan
        a2 = fx.make_view(arg_a.iterator, fx.make_layout((i32_m, cfg.K), (cfg.K, 1)))
        tma_a = nvvm.make_tma_atom(a2, nvvm.make_smem_layout_gmma(arg_a.dtype, (BM, BK)), box_rows=A_BOX_ROWS)
        tma_c = tma_a  # an unused stand-in when C is stored directly
        if fx.const_expr(tma_store):
            out = arg_c.dtype
            c2 = fx.make_view(arg_c.iterator, fx.make_layout((i32_m, cfg.N), (cfg.N, 1)))
            tma_c = nvvm.make_tma_atom(c2, nvvm.make_smem_layout_gmma(out, (EPI, EPI)), store=True)
        tiles = ((i32_m + BM - 1) // BM) * tiles_n
        grid = fx.max(fx.min(tiles, cfg.max_blocks or NUM_SMS), 1)
        kernel_gemm(tma_a, tma_c, arg_c, arg_b, arg_scale_a, arg_scale_b, arg_bias, i32_m).launch(
            grid=(grid, 1, 1), block=(threads, 1, 1), stream=stream
        )

    launch_gemm.gemm_config = cfg
    return launch_gemm

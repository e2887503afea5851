"""The stream path of the preshuffle GEMM (sm_90a), for small and mid M (decode): every SM streams its share of
B through a deep shared-memory ring from the first cycle, the tokens are the wgmma's N (swap-AB), and K is
split across blocks (stream-K, :mod:`kernels.gemm.streamk`) with a deterministic reduction.

At small M the GEMM is a read of B (``N × K``) at HBM speed: the bytes in flight per SM and the first
cycles decide. Here

* **Cᵀ = B · Aᵀ**: a tile is ``tile_n`` rows of B (one or two 64-row panels: one consumer warpgroup each)
  by ``tile_m`` tokens. wgmma's A operand is a panel's 8-KB piece of one 128-byte K atom — the preshuffled
  layout's own bytes, the canonical K-major 128-byte-swizzled image, moved by one ``cp.async.bulk`` (16
  or 32 rows of it for the narrow tiles that give more tiles than SMs: the m64 tile's other rows are
  computed and dropped) —
  and its B operand the activations' ``tile_m × 128`` bytes, by TMA (rows past M zero-filled). fp8 and
  int8 stay 8-bit (``m64nNk32`` e4m3 / s8: no conversion instructions), N = ``tile_m`` is 8 … 256.
* **Stream-K**: the ``tiles × K-stages`` iterations are cut into equal contiguous ranges, one per block,
  ``≤ max_blocks`` blocks (132: one per SM; ``ceil(M / tile_m) · N / tile_n`` tiles, any M). A producer
  thread issues its block's copies into ``stages`` ring slots at once (up to ~220 KB in flight per SM)
  and keeps the ring full across tile boundaries; the consumers' segment ends run the epilogue (a whole
  tile) or the reduction (a split tile: the last block to arrive sums the partials in block order).
* **Epilogue** from registers: the fragment holds ``Cᵀ``; one ``shfl.xor`` per value pair turns two
  lanes' (row n, tokens m, m+1) into (token m, columns n, n+1), so C leaves as 4-byte pairs through the
  shared epilogue (:mod:`kernels.gemm.epilogue`: scales, bias, activation, rows past M never written).
  Its operands (the columns' ``scale_b`` and bias, the tokens' ``scale_a``) are loaded when the tile's
  main loop starts, not after it: loaded between the stores (which they cannot pass: C might alias them)
  they were one dependent L2 round trip per 8 tokens at the end of the kernel. ``probe="late"``
  (measurement only, :mod:`benchmarks.decode_ladder`) builds the kernel that loads them there.
"""

from __future__ import annotations

import flydsl.compiler as flyc
import flydsl.expr as fx
from flydsl.expr import nvvm

from .epilogue import Epilogue
from .gemm_config import GemmConfig
from .gemm_mma_sync import check_operand
from .gemm_wgmma import CONSUMER_REGS, PRODUCER_REGS, WGMMA_TYPES
from .preshuffle_layout import ATOM_BYTES, PANEL_N
from .streamk import StreamK

__all__ = ["build_stream_gemm", "default_workspace"]

STREAM_PROBES = (None, "late", "b", "mma", "nored")  # build_stream_gemm's measurement kernels
PIECE = PANEL_N * ATOM_BYTES  # 8 KB: one panel's rows of one K atom
BAR_CONSUMERS = 1  # the named barrier of the consumer warpgroups


_WORKSPACES: list = []  # every default workspace made, kept for the process (default_workspace)


def default_workspace(words: int):
    """The workspace a launcher is built with (int32 zeros): a torch CUDA tensor on the current device when
    the runtime would run on the GPU, else a numpy array (the CPU interpreter). A CUDA one is kept alive for the
    process: a CUDA graph captured from the launcher keeps writing to it after the launcher itself is gone, and
    torch would hand freed memory to other tensors (the price: up to ~1 MB per launcher built,
    :func:`.streamk.workspace_words`)."""
    import numpy as np

    from flydsl.utils.env import env

    if env.runtime_kind != "cpu":
        try:
            import torch

            if torch.cuda.is_available():
                ws = torch.zeros(words, dtype=torch.int32, device="cuda")
                _WORKSPACES.append(ws)
                return ws
        except ImportError:
            pass
    return np.zeros(words, np.int32)


def build_stream_gemm(cfg: GemmConfig, workspace=None, probe: str | None = None):
    """The ``@flyc.jit`` launcher of the stream path for ``cfg``: FlyDSL's ``launch_gemm`` signature plus a
    trailing ``arg_workspace`` (default: a buffer made for this launcher by :func:`default_workspace`; pass
    another one — ``launch_gemm.workspace_words`` int32 zeros — for another device or a concurrent stream).
    ``probe`` (measurement only, :data:`STREAM_PROBES`): ``"late"`` the epilogue's operands loaded after the
    main loop; ``"b"`` the consumers only wait for each stage and release it (the ring, the grid and the
    schedule: no wgmma, nothing stored); ``"mma"`` + the wgmmas (nothing stored); ``"nored"`` the whole
    kernel but every segment of a split tile stores its partial through the epilogue as if it were whole
    (C wrong: what the reduction costs)."""
    if probe not in STREAM_PROBES:
        raise ValueError(f"probe must be one of {STREAM_PROBES} on the stream path, got {probe!r}")
    dt, acc_t = WGMMA_TYPES[cfg.in_dtype]
    e = cfg.elem_bytes
    TN, BN, BK = cfg.tile_m, cfg.tile_n, cfg.tile_k
    P = max(1, BN // PANEL_N)  # consumer warpgroups, one per 64-row panel
    ROWS = min(BN, PANEL_N)  # rows of B each consumer holds (16 or 32: the rest of its m64 tile is unused)
    kblks = BK * e // ATOM_BYTES
    stages = cfg.stages
    threads = 128 * (1 + P)
    iters = cfg.K // BK  # K stages per tile
    tiles_n = cfg.N // BN
    row_bytes = cfg.K * e
    w_stage, a_stage = P * PANEL_N * BK * e, TN * BK * e  # shared bytes (whole m64 tiles)
    w_copy = BN * BK * e  # bytes of B copied per stage
    w_bytes, a_bytes = w_stage * stages, a_stage * stages
    VPT = TN // 2  # accumulator values per consumer thread
    sk = StreamK(iters, cfg.max_blocks, cfg.min_iters, P, 128, VPT)
    EARLY = cfg.streamk == "early"
    # "early": a split tile's head, in (fetched for the finisher) and out (published by the head's block)
    HEAD_BYTES = 2 * sk.slot_words * 4 if EARLY else 0
    PREFILL = cfg.prefill and not cfg.pdl  # (with PDL the first pass is issued before griddepcontrol.wait anyway)
    CK = max(1, cfg.cluster_k)  # blocks of a cluster sharing each tile's K (1: stream-K)
    PER = TN // 4 // CK  # value pairs each block of a cluster sums and stores
    if CK > 1:  # the others' shares of this block's value pairs, pushed with st.async
        HEAD_BYTES = (CK - 1) * P * 128 * PER * 2 * 4
    if CK > 1 and (EARLY or probe == "nored" or iters % CK or (TN // 4) % CK):
        raise ValueError(f"cluster_k={CK} needs the tile's K stages ({iters}) and value pairs ({TN // 4}) divisible by "
                         f"it, no streamk='early' and no probe 'nored'")  # fmt: skip
    if EARLY and (probe == "nored" or cfg.min_iters < iters):
        raise ValueError(f"streamk='early' needs min_iters >= the K stages of a tile ({iters}) and no probe 'nored', "
                         f"got min_iters={cfg.min_iters}, probe={probe!r}")  # fmt: skip
    HEADS = EARLY and probe in (None, "late")  # the split tiles' heads handed over (not in the b / mma probes)
    ws_default = default_workspace(sk.words) if workspace is None else workspace

    @flyc.kernel(known_block_size=(threads, 1, 1))
    def kernel_gemm(tma_a: nvvm.TmaAtom, C: fx.Tensor, B: fx.Tensor, SA: fx.Tensor, SB: fx.Tensor,
                    BIAS: fx.Tensor, WS: fx.Tensor, M: fx.Int32):  # fmt: skip
        if fx.const_expr(cfg.pdl):
            nvvm.griddep_launch_dependents()  # the next kernel of the stream may launch (docs/gemm.md, PDL)
        epi = Epilogue(cfg, C, SA, SB, BIAS, M)
        tid = fx.thread_idx.x
        wg = nvvm.warpgroup_idx()

        # one dynamic allocation, its base rounded up to the 1-KB swizzle period: B stages, A stages, the
        # mbarriers, the reduction's flag
        lw = nvvm.make_smem_layout_gmma(dt, (P * PANEL_N, BK), stages=stages)
        la = nvvm.make_smem_layout_gmma(dt, (TN, BK), stages=stages)
        raw = fx.SharedAllocator(static=False).allocate(w_bytes + a_bytes + 16 * stages + 32 + HEAD_BYTES + 1024).ptr
        base = nvvm.align_shared(raw, 1024).recast(fx.Int8)
        sW = fx.make_tensor(base.recast(dt), lw)
        sA_bytes = base + w_bytes
        sA = fx.make_tensor(sA_bytes.recast(dt), la)
        full = (base + w_bytes + a_bytes).recast(fx.Int64)
        empty = full + stages
        flag = (empty + stages).recast(fx.Int32)
        headbar = (empty + stages) + 1  # "early": the split tile's head is in shared memory (head_smem)
        redbar = headbar  # cluster_k: the other blocks' shares have landed in xbuf (head_smem)
        outbar = (empty + stages) + 2  # "early": this block's head is in shared memory (out_smem), to publish
        head_smem = (base + (w_bytes + a_bytes + 16 * stages + 32)).recast(acc_t)
        out_smem = head_smem + sk.slot_words
        xbuf = head_smem
        mtiles = (M + TN - 1) // TN
        tiles = tiles_n * mtiles  # tile t: rows of B (t // mtiles) * BN..., tokens (t % mtiles) * TN...
        blk = fx.block_idx.x
        if fx.const_expr(CK > 1):  # a cluster per tile, its blocks' K stages in rank order
            q = fx.Int32(iters // CK)
            it0 = blk * (iters // CK)
            it1 = it0 + iters // CK
        else:
            q, it0, it1 = sk.block_range(tiles, blk)
        t_first = it0 // iters
        t_last = (it1 - 1) // iters
        t_count = t_last - t_first + 1

        def seq_tile(j):
            """The block's ``j``-th tile in the order it is worked: by tile ("arrive"), or last tile first
            ("early": the head of the split tile the range ends in is done, and published, first)."""
            return t_last - j if fx.const_expr(EARLY) else t_first + j

        gB = B.iterator.recast(fx.Int8)

        def copy_b(src0, kt, stage):
            """The stage's pieces of B: panel p's rows of K atom j, one bulk copy each."""
            src = src0 + kt * (kblks * PIECE)
            dst = base + stage * w_stage
            for p in fx.range_constexpr(P):
                for j in fx.range_constexpr(kblks):
                    nvvm.bulk_copy_g2s(dst + (j * P * PIECE + p * PIECE),
                                       src + (p * PANEL_N * row_bytes + j * PIECE),
                                       ROWS * ATOM_BYTES, full + stage)  # fmt: skip

        def tile_src(tile):
            """``(src0, m0)``: the tile's first byte of B (its panel, and its row in the panel) and first token."""
            tn = tile // mtiles
            r0 = tn * BN
            return gB + ((r0 // PANEL_N) * (PANEL_N * row_bytes) + (r0 % PANEL_N) * ATOM_BYTES), (
                tile - tn * mtiles
            ) * TN

        if tid == 0:
            nvvm.tma_prefetch_descriptor(tma_a)  # the first TMA of the producer (this thread) finds it cached
            for s in fx.range_constexpr(stages):
                nvvm.mbarrier_init(full + s, 1)  # the producer's arrive_expect_tx
                nvvm.mbarrier_init(empty + s, P * 128)  # every consumer thread releases the stage
            if fx.const_expr(EARLY):
                nvvm.mbarrier_init(headbar, 1)  # the fetching thread's expect_tx (the bulk copy's bytes)
                nvvm.mbarrier_init(outbar, P * 128)  # the consumers, once their head is in out_smem
            if fx.const_expr(CK > 1):
                nvvm.mbarrier_init(redbar, 1)
                nvvm.mbarrier_arrive_expect_tx(redbar, HEAD_BYTES)  # the other blocks' st.async bytes
            nvvm.fence_mbarrier_init()
            if fx.const_expr(PREFILL):
                # the ring's first pass (B and A) issued by this thread right after the barriers exist, before the
                # block's barrier, the warpgroups' register reallocation and the producer's setup
                i = fx.Int32(0)
                for j in range(t_count):
                    tile = seq_tile(j)
                    src0, m0 = tile_src(tile)
                    for kt in range(fx.max(it0 - tile * iters, 0), fx.min(it1 - tile * iters, iters)):
                        if i < stages:
                            nvvm.mbarrier_arrive_expect_tx(full + i, tma_a.tile_bytes + w_copy)
                            copy_b(src0, kt, i)
                            nvvm.tma_load(tma_a, sA[None, None, i], full + i, (m0, kt * BK))
                        i = i + 1
        fx.barrier()
        if fx.const_expr(CK > 1):
            nvvm.cluster_arrive(relaxed=True)  # this block runs, its redbar armed (waited before the first push)

        if wg == 0:
            # ------------------------------------------------------------ producer: bulk copies (B) + TMA (A)
            if fx.const_expr(not cfg.min_blocks):  # several blocks per SM: ptxas's bound, no reallocation
                nvvm.warpgroup_reg_dealloc(PRODUCER_REGS)
            if nvvm.warp_idx_in_warpgroup() == 0:
                if nvvm.elect_one():
                    if fx.const_expr(cfg.pdl):
                        # programmatic dependent launch: the first pass of the ring fills with the weight while
                        # the previous kernel finishes (no kernel of the stream writes B: the caller's promise);
                        # A, the previous kernel's output maybe, after griddepcontrol.wait
                        i = fx.Int32(0)
                        for j in range(t_count):
                            tile = seq_tile(j)
                            src0, _ = tile_src(tile)
                            for kt in range(fx.max(it0 - tile * iters, 0), fx.min(it1 - tile * iters, iters)):
                                if i < stages:  # a fresh ring: the empty barriers are free
                                    nvvm.mbarrier_arrive_expect_tx(full + i, tma_a.tile_bytes + w_copy)
                                    copy_b(src0, kt, i)
                                i = i + 1
                        nvvm.griddep_wait()
                    st = nvvm.PipelineState(stages, phase=1)  # the empty barriers start free
                    i = fx.Int32(0)
                    for j in range(t_count):
                        tile = seq_tile(j)
                        tn = tile // mtiles
                        m0 = (tile - tn * mtiles) * TN
                        r0 = tn * BN  # the tile's first row of B: its panel, and the row in the panel
                        src0 = gB + ((r0 // PANEL_N) * (PANEL_N * row_bytes) + (r0 % PANEL_N) * ATOM_BYTES)
                        for kt in range(fx.max(it0 - tile * iters, 0), fx.min(it1 - tile * iters, iters)):
                            if fx.const_expr(PREFILL or cfg.pdl):
                                if i >= stages:  # (the first pass was issued at the start: B, and A when prefilled)
                                    nvvm.mbarrier_wait(empty + st.index, st.phase)
                                    nvvm.mbarrier_arrive_expect_tx(full + st.index, tma_a.tile_bytes + w_copy)
                                    copy_b(src0, kt, st.index)
                                    if fx.const_expr(PREFILL):
                                        nvvm.tma_load(tma_a, sA[None, None, st.index], full + st.index, (m0, kt * BK))
                            else:
                                nvvm.mbarrier_wait(empty + st.index, st.phase)
                                nvvm.mbarrier_arrive_expect_tx(full + st.index, tma_a.tile_bytes + w_copy)
                                copy_b(src0, kt, st.index)
                            if fx.const_expr(not PREFILL):
                                nvvm.tma_load(tma_a, sA[None, None, st.index], full + st.index, (m0, kt * BK))
                            st = st.next()
                            i = i + 1
            if fx.const_expr(HEADS):
                if nvvm.warp_idx_in_warpgroup() == 1:
                    # the finisher's head, fetched in the background: wait for the flag of the split tile this
                    # block's range starts in (raised when the block before has published its head, early in its
                    # run), bulk-copy the partial into shared memory, completing on headbar; the consumers add it after
                    # their last K stage without a round trip at the kernel's end
                    if sk.first_block(q, t_first) < blk:
                        if fx.const_expr(cfg.pdl):
                            nvvm.griddep_wait()
                        fb0 = sk.first_block(q, t_first)
                        if tid % 32 == 0:
                            seen = fx.atomic_or(sk.counter(WS, fb0), 0)
                            while seen == 0:
                                seen = fx.atomic_or(sk.counter(WS, fb0), 0)
                            fx.fence("gpu")  # acquire: the head's partial
                            nvvm.fence_proxy_async("global")  # ... for the bulk copy's reads (the async proxy)
                            # one bulk copy (a loop of loads would be one L2 round trip per chunk: 40 registers)
                            nvvm.mbarrier_arrive_expect_tx(headbar, sk.slot_words * 4)
                            nvvm.bulk_copy_g2s(head_smem.recast(fx.Int8),
                                               sk.slot_base(WS, acc_t, sk.slot(q, fb0, t_first)).recast(fx.Int8),
                                               sk.slot_words * 4, headbar)  # fmt: skip
                if nvvm.warp_idx_in_warpgroup() == 2:
                    # this block's head of the split tile its range ends in (the consumers' first work), published
                    # in the background: out of shared memory into its workspace slot, then the tile's flag
                    if sk.last_block(q, t_last) > blk:
                        if fx.const_expr(cfg.pdl):
                            nvvm.griddep_wait()
                        lane = tid % 32
                        nvvm.mbarrier_wait(outbar, 0)
                        dst = sk.slot_base(WS, acc_t, sk.slot(q, blk, t_last))
                        for k in fx.range_constexpr(sk.slot_words // 4 // 32):
                            (dst + (lane + 32 * k) * 4).store(
                                (out_smem + (lane + 32 * k) * 4).load(vec_width=4, align=16), align=16
                            )
                        fx.fence("gpu")  # release: the partial is visible before the flag
                        nvvm.syncwarp()
                        if lane == 0:
                            fx.atomic_exchange(sk.counter(WS, blk), 1)
            if fx.const_expr(CK > 1):
                nvvm.cluster_wait()  # (every thread waits once for the arrival at the start)
        else:
            # ------------------------------------------------------------ consumers: wgmma, then the epilogue
            if fx.const_expr(not cfg.min_blocks):
                nvvm.warpgroup_reg_alloc(CONSUMER_REGS)
            if fx.const_expr(cfg.pdl):
                nvvm.griddep_wait()  # the scales, C and the workspace follow the previous kernel
            cw = wg - 1  # rows 64*cw .. 64*cw + 63 of the tile's B rows
            t = nvvm.thread_idx_in_warpgroup()
            op = nvvm.WgmmaOp(dt, acc_t, TN)
            kin = op.shape_mnk[2]
            st = nvvm.PipelineState(stages)
            for j in range(t_count):
                tile = seq_tile(j)
                k_lo = fx.max(it0 - tile * iters, 0)
                k_hi = fx.min(it1 - tile * iters, iters)
                tn = tile // mtiles
                n0 = tn * BN + PANEL_N * cw
                m0 = (tile - tn * mtiles) * TN
                ops = None if fx.const_expr(probe in ("late", "b", "mma")) else _tile_operands(epi, n0, m0, t)
                acc = fx.full(VPT, 0, acc_t)
                fb = sk.first_block(q, tile)
                lb = sk.last_block(q, tile)
                if fx.const_expr(probe == "b"):  # the ring alone: each stage released as soon as it lands
                    for _kt in range(k_lo, k_hi):
                        nvvm.mbarrier_wait(full + st.index, st.phase)
                        nvvm.mbarrier_arrive(empty + st.index)
                        st = st.next()
                else:
                    prev = fx.Int32(0)
                    for kt in range(k_lo, k_hi):
                        nvvm.mbarrier_wait(full + st.index, st.phase)
                        w_k = fx.zipped_divide(sW[None, None, st.index], (64, kin))
                        a_k = fx.zipped_divide(sA[None, None, st.index], (TN, kin))
                        nvvm.wgmma_fence()
                        for kk in fx.range_constexpr(BK // kin):
                            acc = nvvm.wgmma(acc, w_k[None, (cw, kk)], a_k[None, (0, kk)], op=op, accumulate=True)
                        nvvm.wgmma_commit_group()
                        acc = nvvm.wgmma_wait_group(1, acc)  # the previous batch is done: release its stage
                        if kt > k_lo:
                            nvvm.mbarrier_arrive(empty + prev)
                        prev = st.index
                        st = st.next()
                    acc = nvvm.wgmma_wait_group(0, acc)
                    nvvm.mbarrier_arrive(empty + prev)
                if fx.const_expr(probe in ("b", "mma")):  # (the wgmmas kept,) nothing stored
                    if fx.const_expr(probe == "mma"):
                        if acc[0] == fx.Float32(1.25e-38).to(acc_t):
                            (WS.iterator.recast(acc_t) + tid).store(acc[0])
                    if fx.const_expr(CK > 1):
                        nvvm.cluster_wait()
                elif fx.const_expr(CK > 1):
                    # the tile's K is split over the cluster's blocks: each block pushes the others' shares of its
                    # partial into their shared memory (st.async, completing on their redbar), then sums its own
                    nvvm.cluster_wait()  # every block of the cluster runs, its redbar armed
                    rank = nvvm.cluster_ctarank()
                    for rr in fx.range_constexpr(CK):
                        if rank == rr:
                            _cluster_push(acc, xbuf, redbar, rr, cw, t)
                            nvvm.mbarrier_wait(redbar, 0)
                            total, units = _cluster_total(acc, xbuf, rr, cw, t)
                            if t < 2 * ROWS:
                                _store_tile(epi, total, n0, m0, t, ops, units)
                elif fx.const_expr(EARLY):
                    if lb == fb:
                        if t < 2 * ROWS:
                            _store_tile(epi, acc, n0, m0, t, ops)
                    elif blk == fb:
                        # the head of a split tile, done first: into shared memory; the producer warpgroup's warp 2
                        # publishes it and raises the tile's flag while the consumers go on
                        sk.publish_at(out_smem, acc, cw, t)
                        nvvm.mbarrier_arrive(outbar)
                    else:
                        # the finisher: the head (fetched by the producer warpgroup's warp 1) plus this tail
                        nvvm.mbarrier_wait(headbar, 0)
                        head = sk.partial_at(head_smem, acc_t, cw, t)
                        if t < 2 * ROWS:
                            _store_tile(epi, head + acc, n0, m0, t, ops)
                        if tid == 128:
                            sk.counter(WS, fb).store(0)  # read (the flag was seen): ready for the next launch
                else:
                    nseg = lb - fb + 1
                    if fx.const_expr(probe == "nored"):
                        nseg = fx.Int32(1)  # every segment stores its partial (C wrong): the reduction's cost
                    if nseg == 1:
                        if t < 2 * ROWS:  # warps holding rows of B (16 per warp)
                            _store_tile(epi, acc, n0, m0, t, ops)
                    else:
                        # a split tile: publish the partial, count the arrival; the last block sums in block order
                        sk.publish(WS, acc, sk.slot(q, blk, tile), cw, t)
                        fx.fence("gpu")  # release: the partial is visible before the arrival
                        nvvm.barrier_sync(BAR_CONSUMERS, P * 128)
                        if tid == 128:
                            flag.store(fx.atomic_add(sk.counter(WS, fb), 1))
                        nvvm.barrier_sync(BAR_CONSUMERS, P * 128)
                        if flag.load() == nseg - 1:
                            fx.fence("gpu")  # acquire: every other segment's partial
                            total = fx.full(VPT, 0, acc_t)
                            for bb in range(fb, fb + nseg):
                                total = total + sk.partial(WS, acc_t, sk.slot(q, bb, tile), cw, t)
                            if tid == 128:
                                sk.counter(WS, fb).store(0)  # every segment has arrived: ready for the next launch
                            if t < 2 * ROWS:
                                _store_tile(epi, total, n0, m0, t, ops)
                        # the flag is read by every consumer before any of them can pass the next tile's barrier

    def _xoff(k, cw, t, i):
        """Offset (values) in a block's xbuf of pair ``i`` of its share from the ``k``-th other block (rank order,
        itself skipped), for consumer ``cw`` thread ``t``: a thread's pairs are contiguous."""
        return (((k * P + cw) * 128 + t) * PER + i) * 2

    def _cluster_push(acc, xbuf, redbar, rr, cw, t):
        """Block ``rr``'s partial, each other block's share of the value pairs (``[p · PER, (p+1) · PER)`` for
        block ``p``) pushed into that block's xbuf, completing on its redbar (``st.async``: no fence, no cluster
        barrier). Two pairs a store when a share has an even number of them."""
        step = 2 if PER % 2 == 0 else 1
        for p in range(CK):
            if p != rr:
                k = rr if rr < p else rr - 1
                for i in range(0, PER, step):
                    u = p * PER + i
                    v = fx.Vector.from_elements([acc[2 * u + x] for x in range(2 * step)], acc_t)
                    dst = nvvm.map_shared(xbuf + _xoff(k, cw, t, i), p)
                    nvvm.st_async(dst, v, nvvm.map_shared(redbar, p))

    def _cluster_total(acc, xbuf, rr, cw, t):
        """Block ``rr``'s share of the tile: its value pairs ``[rr · PER, (rr+1) · PER)`` summed over the cluster's
        blocks in rank order (the same bits whichever block sums): its own from registers, the others' from
        xbuf. Returns ``(values, pairs)``: the accumulators with those pairs summed, and the pairs."""
        units = list(range(rr * PER, (rr + 1) * PER))
        vals = [acc[i] for i in range(VPT)]
        for i, u in enumerate(units):
            parts = []
            for s_ in range(CK):
                if s_ == rr:
                    parts.append((acc[2 * u], acc[2 * u + 1]))
                else:
                    x = (xbuf + _xoff(s_ if s_ < rr else s_ - 1, cw, t, i)).load(vec_width=2, align=8)
                    parts.append((x[0], x[1]))
            for h in range(2):
                tot = parts[0][h]
                for s_ in range(1, CK):
                    tot = tot + parts[s_][h]
                vals[2 * u + h] = tot
        return fx.Vector.from_elements(vals, acc_t), units

    def _tile_operands(epi, n0, m0, t):
        """The epilogue's loads for the consumer thread's part of a tile: ``(colops, sas)``, the two column
        pairs' ``(scale_b, bias)`` and the ``scale_a`` of each of its ``TN / 8`` token rows (row scales are
        clamped into [0, M) by :meth:`~kernels.gemm.epilogue.Epilogue.row_scale`)."""
        lane = t % 32
        g = lane // 4
        w = (t // 32) % (2 * ROWS // 32)  # warps past the tile's rows (they store nothing) load in bounds
        colops = [epi.col_operands(n0 + 16 * w + 8 * h + (g - g % 2)) for h in range(2)]
        rows = [m0 + 8 * j + 2 * (lane % 4) + g % 2 for j in range(TN // 8)]
        return colops, [epi.row_scale(r) if epi.scaled else None for r in rows]

    def _store_tile(epi, acc, n0, m0, t, ops, units=None):
        """The consumer thread's accumulators (``Cᵀ``: value ``4j + 2h + i`` at B row ``16w + g + 8h``, token
        ``8j + 2·(lane % 4) + i``) through the epilogue. Lanes ``g`` and ``g ^ 1`` swap one value of each pair
        (``shfl.xor 4``): the even lane then holds token ``m`` at columns ``n, n+1``, the odd lane token ``m+1``.
        ``ops``: :func:`_tile_operands` loaded earlier, or None: loaded here (probe ``"late"``). ``units``: the
        value pairs ``2j + h`` to store (None: all; a cluster's block stores its share, :func:`_cluster_sum`)."""
        lane = t % 32
        g = lane // 4
        odd = (g % 2) == 1
        v = acc.to(fx.Float32)
        cols = [n0 + 16 * (t // 32) + 8 * h + (g - g % 2) for h in range(2)]
        colops = [epi.col_operands(c) for c in cols] if fx.const_expr(ops is None) else ops[0]
        for j in fx.range_constexpr(TN // 8):
            if fx.const_expr(units is not None and not {2 * j, 2 * j + 1} & set(units)):
                continue  # (a compile-time loop)
            row = m0 + 8 * j + 2 * (lane % 4) + g % 2
            if fx.const_expr(ops is None):
                sa = epi.row_scale(row) if epi.scaled else None
            else:
                sa = ops[1][j]
            for h in fx.range_constexpr(2):
                if fx.const_expr(units is not None and 2 * j + h not in units):
                    continue
                v0, v1 = v[4 * j + 2 * h], v[4 * j + 2 * h + 1]
                recv = fx.shuffle_xor(odd.select(v0, v1), 4)
                pair = fx.Vector.from_elements([odd.select(recv, v0), odd.select(v1, recv)], fx.Float32)
                epi.store_pair(pair, row, cols[h], sa, *colops[h])

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
        arg_workspace: fx.Tensor = ws_default,
    ):
        check_operand("arg_a", arg_a, e)
        check_operand("arg_b", arg_b, e)
        a2 = fx.make_view(arg_a.iterator, fx.make_layout((i32_m, cfg.K), (cfg.K, 1)))
        tma_a = nvvm.make_tma_atom(a2, nvvm.make_smem_layout_gmma(arg_a.dtype, (TN, BK)))
        tiles = tiles_n * ((i32_m + TN - 1) // TN)
        attrs = {"min_blocks_per_sm": cfg.min_blocks} if cfg.min_blocks else None
        grid = tiles * CK if fx.const_expr(CK > 1) else sk.grid(tiles)
        kernel_gemm(tma_a, arg_c, arg_b, arg_scale_a, arg_scale_b, arg_bias, arg_workspace, i32_m).launch(
            grid=(grid, 1, 1), block=(threads, 1, 1), stream=stream, value_attrs=attrs,
            cluster=(CK, 1, 1) if CK > 1 else None,
        )  # fmt: skip

    launch_gemm.gemm_config = cfg
    launch_gemm.workspace_words = sk.words
    launch_gemm.workspace = ws_default
    return launch_gemm

"""``fx.nvvm``: NVIDIA-only operations — FlyDSL's ``fx.rocdl`` counterpart for NVIDIA GPUs.

Warp level (sm_80+, :mod:`.warp`): the ``mma.sync`` MMA ops (``MmaF16BF16Op``, ``MmaFP8Op``, ``MmaI8Op``,
``MMA``), the ``ldmatrix``/``stmatrix`` copy ops (``LdMatrix8x8x16bOp``, ``StMatrix8x8x16bOp``), ``cp.async``
(``CopyG2SOp``, ``cp_async_commit_group``, ``cp_async_wait_group``) and the instruction-level functions
(``mma_sync``, ``ldmatrix``, ``stmatrix``, ``cp_async``). Each is documented with its CuTe DSL counterpart;
docs/mma.md shows how they make a GEMM.

Hopper (sm_90a) operations — wgmma, TMA, mbarrier, fences, ``elect.sync``, ``setmaxnreg`` — live in
``hopper.py`` beside this file and are imported here.
"""

from __future__ import annotations

from .hopper import (  # Hopper (sm_90a): mbarriers, fences, TMA, wgmma — docs/hopper.md
    PipelineState,
    TmaAtom,
    WgmmaOp,
    align_shared,
    barrier_arrive,
    barrier_sync,
    block_idx_in_cluster,
    bulk_commit_group,
    bulk_copy_g2s,
    bulk_copy_s2g,
    bulk_prefetch_l2,
    bulk_wait_group,
    cluster_arrive,
    cluster_arrive_relaxed,
    cluster_ctarank,
    cluster_idx,
    cluster_shape,
    cluster_sync,
    cluster_wait,
    elect_one,
    fence_mbarrier_init,
    fence_proxy_async,
    griddep_launch_dependents,
    griddep_wait,
    has_clusters,
    make_gmma_desc,
    make_smem_layout_gmma,
    make_tma_atom,
    map_shared,
    mapa,
    max_registers,
    mbarrier_arrive,
    mbarrier_arrive_expect_tx,
    mbarrier_expect_tx,
    mbarrier_init,
    mbarrier_try_wait,
    mbarrier_wait,
    setmaxnreg,
    st_async,
    thread_idx_in_warpgroup,
    tma_load,
    tma_prefetch_descriptor,
    tma_store,
    warp_idx,
    warp_idx_in_warpgroup,
    warpgroup_idx,
    warpgroup_reg_alloc,
    warpgroup_reg_dealloc,
    wgmma,
    wgmma_acc_coords,
    wgmma_commit_group,
    wgmma_fence,
    wgmma_wait_group,
)
from .warp import (
    MMA,
    CopyG2SOp,
    LdMatrix8x8x16bOp,
    LoadCacheMode,
    MmaF16BF16Op,
    MmaFP8Op,
    MmaI8Op,
    StMatrix8x8x16bOp,
    cp_async,
    cp_async_commit_group,
    cp_async_wait_all,
    cp_async_wait_group,
    ldmatrix,
    mma_sync,
    stmatrix,
    syncwarp,
)

__all__ = [
    "PipelineState", "TmaAtom", "WgmmaOp", "align_shared", "barrier_arrive", "barrier_sync",
    "block_idx_in_cluster", "bulk_commit_group", "bulk_copy_g2s", "bulk_copy_s2g", "bulk_prefetch_l2",
    "bulk_wait_group",
    "cluster_arrive", "cluster_arrive_relaxed", "cluster_ctarank", "cluster_idx", "cluster_shape", "cluster_sync",
    "cluster_wait", "has_clusters", "map_shared", "mapa", "st_async", "elect_one", "fence_mbarrier_init",
    "max_registers", "griddep_wait", "griddep_launch_dependents", "fence_proxy_async",
    "make_gmma_desc", "make_smem_layout_gmma", "make_tma_atom", "mbarrier_arrive", "mbarrier_arrive_expect_tx",
    "mbarrier_expect_tx", "mbarrier_init", "mbarrier_try_wait", "mbarrier_wait", "setmaxnreg",
    "thread_idx_in_warpgroup", "tma_load", "tma_prefetch_descriptor", "tma_store", "warp_idx",
    "warp_idx_in_warpgroup", "warpgroup_idx", "warpgroup_reg_alloc", "warpgroup_reg_dealloc", "wgmma",
    "wgmma_acc_coords", "wgmma_commit_group", "wgmma_fence", "wgmma_wait_group",
    "MmaF16BF16Op", "MmaFP8Op", "MmaI8Op", "MMA", "LdMatrix8x8x16bOp", "StMatrix8x8x16bOp", "CopyG2SOp",
    "LoadCacheMode", "mma_sync", "ldmatrix", "stmatrix", "cp_async", "cp_async_commit_group",
    "cp_async_wait_group", "cp_async_wait_all", "syncwarp",
]  # fmt: skip

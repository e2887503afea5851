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
)

__all__ = [
    "MmaF16BF16Op", "MmaFP8Op", "MmaI8Op", "MMA", "LdMatrix8x8x16bOp", "StMatrix8x8x16bOp", "CopyG2SOp",
    "LoadCacheMode", "mma_sync", "ldmatrix", "stmatrix", "cp_async", "cp_async_commit_group",
    "cp_async_wait_group", "cp_async_wait_all",
]  # fmt: skip

"""Fitting a preshuffle-GEMM configuration to an SM, once :func:`kernels.gemm.gemm_config.make_config` has made it:
blocks per SM (``min_blocks``: the stream ring's shared memory and its accumulators' registers, the mma path's
``.minnctapersm``), the mma path's B in shared memory (``b_smem``), and the stream path's blocks per SM under
programmatic dependent launch."""

from __future__ import annotations

import flydsl.expr as fx

from .gemm_config import (
    SMEM_LIMIT,
    STREAM_MAX_STAGES,
    GemmConfig,
    _stages,
    cluster_recv_bytes,
    early_head_bytes,
    mma_partials_bytes,
)
from .preshuffle_layout import PANEL_N

__all__ = [
    "SMEM_PER_SM",
    "STREAM_REG_SLACK",
    "stream_threads",
    "stream_reg_cap",
    "stream_blocks_fit",
    "with_min_blocks",
    "mma_smem_bytes",
    "with_b_smem",
    "stream_pdl_min_blocks",
]

SMEM_PER_SM = 228 * 1024  # sm_90: shared memory of one SM, 1 KB of it reserved per resident block


# the stream path's registers per consumer thread beside its tile_m / 2 accumulators (wgmma keeps those in registers:
# ptxas cannot spill them): ptxas 13.0, sm_90a, every tile_m x tile_n of {64..256} x {32, 64, 128} at 1-3 blocks per
# SM assembled where tile_m / 2 + 28 <= 65536 / (blocks x threads) and failed (C7602, "insufficient registers")
# where not (the narrowest: 192x32 at 2 blocks, 124 of 128, assembled; 64x128 at 3 blocks, 60 of 56, failed)
STREAM_REG_SLACK = 28


def stream_threads(cfg: GemmConfig) -> int:
    """The stream path's threads per block: a producer warpgroup and one consumer per 64-row panel of B."""
    return 128 * (1 + max(1, cfg.tile_n // PANEL_N))


def stream_reg_cap(cfg: GemmConfig, min_blocks: int) -> int:
    """Registers per thread of the stream path at ``min_blocks`` blocks per SM (no ``setmaxnreg`` there: ptxas gives
    each thread at most what ``min_blocks`` blocks' warps may take together, :func:`flydsl.expr.nvvm.max_registers`:
    about ``65536 / (min_blocks x threads)``, per warp in units of 256 over four sub-partitions)."""
    return fx.nvvm.max_registers(min_blocks * stream_threads(cfg))


def stream_blocks_fit(cfg: GemmConfig, min_blocks: int) -> bool:
    """Whether ``min_blocks`` blocks of the stream path's tile fit an SM's registers (:func:`stream_reg_cap`,
    :data:`STREAM_REG_SLACK`)."""
    return cfg.tile_m // 2 + STREAM_REG_SLACK <= stream_reg_cap(cfg, min_blocks)


def with_min_blocks(cfg: GemmConfig, min_blocks: int, stages: int | None = None) -> GemmConfig:
    """``cfg`` made to fit ``min_blocks`` blocks per SM: the mma path's registers (``.minnctapersm``); the stream
    path's registers too (no ``setmaxnreg``: ptxas's bound of about ``65536 / (min_blocks × threads)``,
    :func:`stream_reg_cap`) and its ring
    (as many stages as fit in ``228 KB / min_blocks - 1 KB``, or ``stages`` when they fit) — so that the next
    kernel's blocks (programmatic dependent launch) or a second tile can be resident beside one."""
    if cfg.path == "wgmma":
        raise ValueError(f"min_blocks={min_blocks!r} applies to the mma and stream paths; the wgmma path's warpgroups "
                         "set their own registers (setmaxnreg) for one block per SM")  # fmt: skip
    if type(min_blocks) is not int or not 1 <= min_blocks <= 32:
        raise ValueError(f"min_blocks={min_blocks!r}: 1..32 blocks per SM")
    if cfg.path == "stream":
        stage_bytes = (cfg.tile_m + max(cfg.tile_n, PANEL_N)) * cfg.tile_k * cfg.elem_bytes
        budget = SMEM_PER_SM // min_blocks - 1024 - 1024 - 16 - (early_head_bytes(cfg) if cfg.streamk == "early" else 0)
        budget -= cluster_recv_bytes(cfg, cfg.cluster_k) if cfg.cluster_k > 1 else 0
        if budget < 2 * (stage_bytes + 16):
            raise ValueError(f"min_blocks={min_blocks}: two stages of {cfg.describe()} do not fit {min_blocks} "
                             "blocks per SM")  # fmt: skip
        if not stream_blocks_fit(cfg, min_blocks):
            fewer = max((b for b in range(1, min_blocks) if stream_blocks_fit(cfg, b)), default=0)
            cap = stream_reg_cap(cfg, min_blocks)
            tokens = 2 * (cap - STREAM_REG_SLACK) // 8 * 8
            raise ValueError(
                f"min_blocks={min_blocks}: {cfg.describe()} holds {cfg.tile_m // 2} accumulators per consumer thread "
                f"in registers, and {min_blocks} blocks of {stream_threads(cfg)} threads leave each thread "
                f"{cap} (the assembler refuses it): "
                + (f"ask for min_blocks={fewer}" if fewer else "ask for fewer blocks per SM")
                + (f" or take tile_m <= {tokens}" if tokens >= 8 else "")
            )
        fit = min(STREAM_MAX_STAGES, budget // (stage_bytes + 16))
        cfg = cfg._replace(stages=_stages(stages, fit))
    return cfg._replace(min_blocks=min_blocks)


def mma_smem_bytes(cfg: GemmConfig) -> int:
    """Shared memory of an mma-path block: the split-K partials, and with ``b_smem`` the bulk-copied weight
    bytes, their mbarriers and the base's alignment."""
    red = mma_partials_bytes(cfg)
    if not cfg.b_smem:
        return red
    return cfg.b_smem * cfg.tile_k * cfg.elem_bytes * cfg.tile_n + red + 8 * cfg.b_smem + 128


def with_b_smem(cfg: GemmConfig, iterations: int) -> GemmConfig:
    """``cfg`` (mma path) with the weight bytes of its first ``iterations`` K iterations copied into shared memory
    by bulk copies, all issued at the kernel's start (before ``griddepcontrol.wait`` with ``pdl``): a block's
    whole share of B in flight from the first cycle without the registers to hold it. Needs ``tile_n``
    dividing 64 (a block's rows of one K atom are then contiguous in the layout) and the bytes to fit one
    block per SM (``min_blocks`` of them with ``min_blocks``)."""
    if cfg.path != "mma":
        raise ValueError("b_smem applies to the mma path (the stream and wgmma paths stage B in shared memory anyway)")
    if type(iterations) is not int or not 1 <= iterations <= cfg.iters:
        raise ValueError(f"b_smem={iterations!r}: 1 to {cfg.iters} K iterations (K / tile_k) of {cfg.describe()}")
    if PANEL_N % cfg.tile_n:
        raise ValueError(f"b_smem needs tile_n dividing {PANEL_N} (a block's rows of a K atom contiguous), got "
                         f"{cfg.tile_n}")  # fmt: skip
    new = cfg._replace(b_smem=iterations)
    budget = SMEM_PER_SM // max(1, cfg.min_blocks) - 1024
    if mma_smem_bytes(new) > min(budget, SMEM_LIMIT):
        raise ValueError(f"b_smem={iterations}: {mma_smem_bytes(new)} bytes of shared memory per block do not fit "
                         f"{max(1, cfg.min_blocks)} block(s) per SM ({min(budget, SMEM_LIMIT)})")  # fmt: skip
    return new


def stream_pdl_min_blocks(cfg: GemmConfig) -> int:
    """Blocks per SM for the stream path under ``pdl=True`` when none are asked: 2 (the next kernel's block
    resident beside this one, each with half the shared memory) when that ring still holds more than half
    of a tile's K stages, else 1 (round 2: 7168 x 2048 at M <= 16, 6 of 8 stages: 0.2-0.4 us faster; 4096 x
    4096 at M = 32, 4 of 16: 0.85 us slower; 7168 x 2048 at M = 32, 4 of 8: even); 1 too where two blocks' registers
    do not hold the tile's accumulators (:func:`stream_blocks_fit`)."""
    stage_bytes = (cfg.tile_m + max(cfg.tile_n, PANEL_N)) * cfg.tile_k * cfg.elem_bytes
    ring = min(STREAM_MAX_STAGES, (SMEM_PER_SM // 2 - 1024 - 1024 - 16) // (stage_bytes + 16))
    return 2 if 2 * ring > cfg.K // cfg.tile_k and stream_blocks_fit(cfg, 2) else 1

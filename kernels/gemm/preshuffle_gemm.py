"""FlyDSL's preshuffle GEMM for NVIDIA Hopper: ``C[M, N] = act((A·scale_a) @ (B·scale_b)ᵀ + bias)``.

``compile_preshuffle_gemm(N=, K=, tile_m=, tile_n=, tile_k=, in_dtype=, out_dtype=, epilogue=, ...)``
returns the ``@flyc.jit`` launcher with FlyDSL's argument order::

    launch_gemm(arg_c, arg_a, arg_b, arg_scale_a, arg_scale_b, arg_bias, i32_m, i32_n, stream)

* ``arg_a``: A, ``M×K`` row-major (any shape that is contiguous: FlyDSL passes flat views);
  ``arg_b``: B (``N×K``) after :func:`shuffle_weight`; ``arg_c``: C, ``M×N`` row-major, bf16/fp16.
* in_dtype ``fp8`` (e4m3fn; an int8 view of it is accepted, as FlyDSL passes it), ``int8``, ``bf16``,
  ``fp16``. For 8-bit inputs ``arg_scale_a`` (float32 ``[M]``, per token) and ``arg_scale_b`` (float32
  ``[N]``, per channel) are applied in the float32 epilogue (int8 accumulates in int32); 16-bit inputs
  ignore them (FlyDSL passes empty tensors).
* epilogue ``none``, ``bias`` (``arg_bias`` ``[N]``, any float type), ``bias_relu``, ``bias_silu``,
  ``bias_gelu`` (tanh approximation).
* ``i32_m`` is a run-time value: one compiled kernel serves every ``M >= 1``; rows past M are never
  read past the tensor's end nor written. ``i32_n`` must equal the compiled ``N``.

Tiles are honoured where valid for the chosen path and otherwise mapped to the nearest valid value
with a warning said once; with none given, :func:`~kernels.gemm.gemm_config.heuristic_tiles` picks them
(``M=`` is an optional hint of the expected row count). FlyDSL's AMD-only knobs (``waves_per_eu``,
``xcd_swizzle``, ``preload``, ``enable_scheduler``) are accepted and ignored, said once. docs/gemm.md
describes the design.
"""

from __future__ import annotations

from .gemm_config import GemmConfig, _note, check_mma_partials, heuristic_tiles, make_config
from .gemm_fit import stream_pdl_min_blocks, with_b_smem, with_min_blocks
from .gemm_mma_sync import build_mma_sync_gemm
from .gemm_stream import build_stream_gemm
from .gemm_wgmma import build_wgmma_gemm
from .preshuffle_layout import preshuffle_layout, shuffle_weight, unshuffle_weight

__all__ = [
    "compile_preshuffle_gemm",
    "shuffle_weight",
    "unshuffle_weight",
    "preshuffle_layout",
    "heuristic_tiles",
    "GemmConfig",
]

_AMD_ONLY = {"waves_per_eu": None, "xcd_swizzle": 0, "preload": None, "enable_scheduler": True}


def compile_preshuffle_gemm(
    *,
    N: int,
    K: int,
    tile_m: int | None = None,
    tile_n: int | None = None,
    tile_k: int | None = None,
    in_dtype: str = "fp8",
    out_dtype: str = "bf16",
    epilogue: str = "none",
    use_async_copy: bool = False,
    lds_stage: int = 2,
    path: str | None = None,
    warps: tuple[int, int, int] | None = None,
    M: int | None = None,
    c_store: str | None = None,
    maxnreg: int | None = None,
    stages: int | None = None,
    max_blocks: int | None = None,
    schedule: str | None = None,
    min_blocks: int | None = None,
    pdl: bool = False,
    b_smem: int | None = None,
    b_cache: str | None = None,
    streamk: str | None = None,
    cluster_k: int | None = None,
    prefill: bool | None = None,
    **amd_only,
):
    """Build the launcher (see the module docstring). ``path`` (``"mma"``, ``"wgmma"``, ``"stream"``) and
    ``warps`` (``(warps_m, warps_n, warps_k)``, mma path) override the automatic choices; ``M`` is a hint
    for the heuristic only; ``c_store`` (wgmma path): ``"tma"`` (default) or ``"direct"``; ``maxnreg``
    caps the registers per thread (FlyDSL's ``maxnreg`` compile hint, PTX ``.maxnreg``: more blocks per
    SM on the mma path); ``stages`` caps the shared-memory ring (wgmma, stream); ``max_blocks`` caps the
    stream path's stream-K grid; ``schedule`` (wgmma): ``"cooperative"`` or ``"pingpong"``; ``min_blocks``
    (mma and stream paths): the blocks per SM the kernel's registers (PTX ``.minnctapersm``: ptxas then keeps
    more loads in flight than its occupancy-first schedule does) and shared memory must allow
    (:func:`~kernels.gemm.gemm_fit.with_min_blocks`); ``pdl`` (mma and stream paths): launched with
    programmatic dependent launch (docs/gemm.md): the kernel starts while the previous kernel of the stream
    finishes and reads its first share of B at once — **B must not be written by the kernel launched just
    before** (weights are not) — then waits (``griddepcontrol.wait``) before it reads A and the scales or
    writes C; on the stream path with no ``min_blocks`` or ``stages`` given, two blocks per SM when the halved ring
    still holds more than half of a tile's K stages (:func:`~kernels.gemm.gemm_fit.stream_pdl_min_blocks`).
    ``pdl="prefetch"`` (mma path): the same launch, but before the wait the block's weight bytes only go into L2
    (``cp.async.bulk.prefetch.L2``): nothing is read into the SM before the previous kernel has completed, so no
    promise about B is needed. ``b_smem`` (mma path): the weight bytes of the first ``b_smem`` K iterations are
    bulk-copied into shared memory, all at the kernel's start (:func:`~kernels.gemm.gemm_fit.with_b_smem`).
    ``streamk`` (stream path): how split tiles are reduced, ``"arrive"`` (default) or ``"early"``
    (:func:`~kernels.gemm.gemm_config.make_config`); ``cluster_k`` (stream path, 2 or 4): each tile's K split
    over a thread block cluster, reduced in distributed shared memory; ``prefill`` (stream path): the ring's
    first pass issued right after the mbarriers' init. ``b_cache`` (mma path): the cache hint
    of the weight's loads (``"cg"``: L2 only, so that the weight streaming past does not evict the activations
    from L1; ``"cs"``: evict first).

    The stream path's launcher takes a trailing ``arg_workspace`` (int32 zeros, ``launch.workspace_words``
    of them) for its split-K reduction; it defaults to a buffer made with the launcher (on the GPU when the
    runtime is, else in host memory). Launches that share a workspace must not run concurrently.

    ``use_async_copy`` and ``lds_stage`` (FlyDSL: A through the gfx950 LDS DMA, shared-memory stages) are
    accepted: the wgmma path always copies asynchronously (TMA, bulk copies) into as many stages as fit;
    the mma path keeps every operand in registers and uses neither (said once).

    Raises:
        ValueError: unsupported dtypes or epilogue, ``N``/``K`` that the preshuffled layout cannot hold,
            non-positive tiles, an impossible ``warps`` split, unknown keyword arguments.
    """
    unknown = sorted(set(amd_only) - set(_AMD_ONLY))
    if unknown:
        raise ValueError(f"compile_preshuffle_gemm: unknown keyword argument(s) {unknown}")
    for key, value in amd_only.items():
        if value != _AMD_ONLY[key]:
            _note(("amd", key), f"{key}={value!r} is an AMD-only tuning knob; ignored on NVIDIA")
    if lds_stage not in (1, 2, 3, 4):
        raise ValueError(f"lds_stage must be 1..4, got {lds_stage!r}")
    cfg = make_config(
        N=N,
        K=K,
        tile_m=tile_m,
        tile_n=tile_n,
        tile_k=tile_k,
        in_dtype=in_dtype,
        out_dtype=out_dtype,
        epilogue=epilogue,
        path=path,
        warps=warps,
        M=M,
        c_store=c_store,
        stages=stages,
        max_blocks=max_blocks,
        schedule=schedule,
        pdl=pdl,
        streamk=streamk,
        cluster_k=cluster_k,
        prefill=prefill,
        b_smem=b_smem is not None,
    )
    if min_blocks is None and pdl is True and cfg.path == "stream" and stages is None:
        min_blocks = stream_pdl_min_blocks(cfg) if stream_pdl_min_blocks(cfg) > 1 else None
    if min_blocks is not None:
        cfg = with_min_blocks(cfg, min_blocks, stages)
    if b_smem is not None:
        cfg = with_b_smem(cfg, b_smem)
    if b_cache is not None:  # (the heuristic's decode kernel has "cs")
        if cfg.path != "mma":
            raise ValueError(f"b_cache={b_cache!r} applies to the mma path (its weight loads from global memory); the "
                             f"{cfg.path} path stages B in shared memory by bulk copies")  # fmt: skip
        if b_cache not in ("cg", "cs", "ca"):
            raise ValueError(f"b_cache={b_cache!r}: the mma path's weight loads take 'cg', 'cs' or 'ca'")
        cfg = cfg._replace(b_cache=b_cache)
    check_mma_partials(cfg, warps)
    if pdl not in (False, True, "prefetch"):
        raise ValueError(f"pdl must be False, True or 'prefetch', got {pdl!r}")
    if pdl:
        if cfg.path == "wgmma":
            raise ValueError("pdl=True: programmatic dependent launch is built on the mma and stream paths")
        if pdl == "prefetch" and cfg.path != "mma":
            raise ValueError("pdl='prefetch' (B into L2 before griddepcontrol.wait) is built on the mma path")
        if pdl == "prefetch" and cfg.b_smem:
            raise ValueError("pdl='prefetch' reads nothing before griddepcontrol.wait; b_smem copies B before it")
        cfg = cfg._replace(pdl=pdl)
    if cfg.path == "mma" and (use_async_copy or lds_stage != 2):
        _note(
            ("mma-smem", bool(use_async_copy), lds_stage),
            "use_async_copy/lds_stage select shared-memory staging, which the mma path (operands straight "
            "from global memory into registers) does not use; ignored",
        )
    if maxnreg is not None and (type(maxnreg) is not int or not 24 <= maxnreg <= 255):
        raise ValueError(f"maxnreg must be an int in [24, 255], got {maxnreg!r}")
    if cfg.path in ("wgmma", "stream"):
        if lds_stage != 2:
            _note(
                ("wg-stages", lds_stage),
                f"lds_stage={lds_stage}: the wgmma path uses {cfg.stages} stages (as many as fit)",
            )
        if maxnreg is not None:
            _note(("wg-maxnreg",), "maxnreg: the wgmma paths set their registers per warpgroup (setmaxnreg); ignored")
            maxnreg = None
        fn = build_wgmma_gemm(cfg) if cfg.path == "wgmma" else build_stream_gemm(cfg)
    else:
        fn = build_mma_sync_gemm(cfg)
    if maxnreg is not None:
        fn.compile_hints["maxnreg"] = maxnreg
    return fn

"""Run one preshuffle-GEMM problem end to end: FlyDSL's inputs, the launch with FlyDSL's arguments, the check
against the f32 reference (and that no row past M was written), and the timing next to cuBLAS.

Shared by ``tests/kernels/test_preshuffle_gemm.py`` (pytest and its command line), the benchmark case and
``benchmarks/gemm_gpu_check.py``. Runs on the GPU with torch CUDA tensors, else on the CPU interpreter
with numpy arrays (no torch needed).

Timing (CUDA only): CUDA events around each call after a warm-up, the median; or, with ``graph=True``, one
CUDA graph of ``iters`` calls replayed (kernel time without the host's launch path). The inputs rotate
over enough copies that together they exceed the L2 cache, so that B is read from HBM as it would be in
a model (a 16-MB weight read over and over would otherwise be served by the 50-MB L2).
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np

from .preshuffle_gemm import compile_preshuffle_gemm, shuffle_weight
from .reference import cublas_gemm, make_inputs, numpy_dtype, reference_gemm, verify_output

__all__ = ["GemmResult", "run_gemm", "cuda_device", "throughput_line", "time_calls", "SENTINEL", "L2_BYTES"]

SENTINEL = -8192.0  # FlyDSL's guard value for rows past M (exact in bf16 and fp16)
L2_BYTES = 50 * 1024 * 1024  # H100/H200 L2


@dataclasses.dataclass
class GemmResult:
    ok: bool
    guard_ok: bool
    rel_err: float  # max |c - ref| / max |ref|
    config: str
    us: float = float("nan")
    cublas_us: float = float("nan")
    flops: int = 0
    nbytes: int = 0

    @property
    def tflops(self) -> float:
        return self.flops / (self.us * 1e-6) / 1e12

    @property
    def tbps(self) -> float:
        return self.nbytes / (self.us * 1e-6) / 1e12


def cuda_device() -> bool:
    """True when torch sees a CUDA GPU and the runtime is not forced onto the CPU."""
    from flydsl.utils.env import env

    if env.runtime_kind == "cpu":
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def throughput_line(tag: str, us: float, flops: int, nbytes: int) -> str:
    """FlyDSL's line: ``[flyc] Throughput: {us} us, {tflops} TFLOPS, BW: {tb/s} TB/s``."""
    t = us * 1e-6
    return f"[{tag}] Throughput: {us:.1f} us, {flops / t / 1e12:.2f} TFLOPS, BW: {nbytes / t / 1e12:.3f} TB/s"


def _to_torch(x, dtype_name):
    """A numpy array (bf16/fp8 through ml_dtypes) as a torch CUDA tensor of the same dtype."""
    import torch

    if x is None:
        return None
    if dtype_name in ("bf16", "fp8"):
        raw = torch.from_numpy(np.ascontiguousarray(x).view(np.int16 if dtype_name == "bf16" else np.uint8).copy())
        return raw.view({"bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn}[dtype_name]).cuda()
    return torch.from_numpy(np.ascontiguousarray(x).copy()).cuda()


def time_calls(thunks, iters: int, warmup: int, graph: bool) -> float:
    """Median µs per call (events), or graph replay time / calls."""
    import torch

    for i in range(max(1, warmup)):
        thunks[i % len(thunks)]()
    torch.cuda.synchronize()
    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            thunks[0]()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(iters):
                thunks[i % len(thunks)]()
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(5):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e3 / iters)
        return statistics.median(times)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        starts[i].record()
        thunks[i % len(thunks)]()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def run_gemm(
    in_dtype: str,
    M: int,
    N: int,
    K: int,
    tile_m=None,
    tile_n=None,
    tile_k=None,
    *,
    out_dtype: str = "bf16",
    epilogue: str = "none",
    launch_fn=None,
    cuda: bool | None = None,
    bench: bool = False,
    iters: int = 20,
    warmup: int = 3,
    graph: bool = False,
    cublas: bool = False,
    graph_check: bool = False,
    int8_view: bool = True,
    seed: int = 0,
    log=print,
    **compile_kw,
) -> GemmResult:
    """Build (or take ``launch_fn``), run and check one problem; time it (and cuBLAS) when ``bench``.

    ``int8_view``: pass fp8 tensors as int8 views, as FlyDSL's test does. ``graph_check`` (CUDA): also
    capture one launch in a CUDA graph and check what its replay writes (the launch must follow the
    capturing stream). Returns a :class:`GemmResult`; ``ok`` covers FlyDSL's tolerance rule and the
    untouched guard rows (of every run).
    """
    cuda = cuda_device() if cuda is None else cuda
    if launch_fn is None:
        compile_kw.setdefault("M", M)  # the heuristic's hint (for the tiles, paths and grids not given)
        launch_fn = compile_preshuffle_gemm(
            N=N, K=K, tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, in_dtype=in_dtype, out_dtype=out_dtype,
            epilogue=epilogue, **compile_kw,
        )  # fmt: skip
    cfg = launch_fn.gemm_config
    bias_dtype = out_dtype if epilogue != "none" else None
    a, b, sa, sb, bias = make_inputs(
        M, N, K, in_dtype, seed=seed, bias_dtype=bias_dtype, device="cuda" if cuda else None
    )
    ref = reference_gemm(a, b, sa, sb, bias=bias, epilogue=epilogue)
    bs = shuffle_weight(b)
    rows = math.ceil(M / cfg.tile_m) * cfg.tile_m + cfg.tile_m  # guard rows past M, at least one tile
    if cuda:
        import torch

        f32 = torch.zeros((0,), dtype=torch.float32, device="cuda")
        odt = _to_torch(np.zeros(0, numpy_dtype(out_dtype)), out_dtype).dtype
        c_all = torch.full((rows, N), SENTINEL, dtype=odt, device="cuda")
        empty_bias = torch.zeros((0,), dtype=odt, device="cuda")
        if in_dtype == "fp8" and int8_view:
            a, bs = a.view(torch.int8), bs.view(torch.int8)
    else:
        f32 = np.zeros((0,), np.float32)
        c_all = np.full((rows, N), SENTINEL, numpy_dtype(out_dtype))
        empty_bias = np.zeros((0,), numpy_dtype(out_dtype))
    ops = {
        "a": a,
        "b": bs,
        "sa": sa if sa is not None else f32,
        "sb": sb if sb is not None else f32,
        "bias": bias if bias is not None else empty_bias,
    }

    def args(d, c):
        """FlyDSL's arguments; on CUDA the stream current at the call (the capturing one inside a graph)."""
        base = (c[:M].reshape(-1), d["a"].reshape(-1), d["b"].reshape(-1), d["sa"], d["sb"], d["bias"], M, N)
        return (*base, torch.cuda.current_stream()) if cuda else base

    def check(run) -> tuple:
        run()
        if not cuda:
            c = c_all[:M].astype(np.float32)
            scale = float(np.abs(ref).max()) or 1.0
            rel = float(np.nanmax(np.abs(c - ref))) / scale if c.size else 0.0
            return bool((c_all[M:] == SENTINEL).all()), verify_output(c, ref, log=log), rel
        torch.cuda.synchronize()
        c = c_all[:M].float()
        scale = float(ref.abs().max().item()) or 1.0
        rel = float((c - ref).abs().max().item()) / scale if c.numel() else 0.0
        return bool((c_all[M:] == SENTINEL).all().item()), verify_output(c, ref, log=log), rel

    guard_ok, ok, rel = check(lambda: launch_fn(*args(ops, c_all)))
    if cuda and graph_check:
        c_all.fill_(SENTINEL)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(side), torch.cuda.graph(graph, stream=side):
            launch_fn(*args(ops, c_all))
        torch.cuda.current_stream().wait_stream(side)
        c_all.fill_(SENTINEL)
        g_guard, g_ok, g_rel = check(graph.replay)
        if not g_ok:
            log("✗ the CUDA-graph replay computed a wrong result (was the launch captured?)")
        guard_ok, ok, rel = guard_ok and g_guard, ok and g_ok, max(rel, g_rel)
    if rel != rel:
        rel = float("inf")
    if not guard_ok:
        log(f"✗ C store wrote element(s) past row M={M}")
    res = GemmResult(ok and guard_ok, guard_ok, rel, cfg.describe())
    e = 1 if in_dtype in ("fp8", "int8") else 2
    res.flops = 2 * M * N * K
    res.nbytes = M * K * e + N * K * e + M * N * 2 + (M + N) * 4
    if bench and cuda:
        import flydsl.compiler as flyc

        sets = max(1, min(8, math.ceil(2 * L2_BYTES / max(1, res.nbytes))))
        copies = [ops] + [{k: v.clone() for k, v in ops.items()} for _ in range(sets - 1)]
        compiled = flyc.compile(launch_fn, *args(ops, c_all))
        thunks = [(lambda d=d: compiled(*args(d, c_all))) for d in copies]
        res.us = time_calls(thunks, iters, warmup, graph)
        if cublas:
            try:
                lib = []
                for d in copies:
                    ta = d["a"].view(torch.float8_e4m3fn) if in_dtype == "fp8" else d["a"]
                    tb = b if d is ops else b.clone()
                    sa_, sb_, bias_ = d["sa"], d["sb"], d["bias"]
                    lib.append(cublas_gemm(in_dtype, out_dtype, ta, tb, sa_, sb_, bias=bias_, epilogue=epilogue))
                res.cublas_us = time_calls(lib, iters, warmup, graph)
            except Exception as ex:  # an op cuBLAS lacks here (e.g. a shape _int_mm refuses) is reported
                log(f"[cuBLAS] not runnable here: {type(ex).__name__}: {str(ex).splitlines()[0][:160]}")
    return res

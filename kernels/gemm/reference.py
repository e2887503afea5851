"""Host-side companions of the preshuffle GEMM: FlyDSL's per-token quantization, the f32 reference, FlyDSL's
tolerance rule, and the cuBLAS baselines the benchmarks compare against.

Everything takes numpy arrays or torch tensors (CPU or CUDA) and works without torch where the inputs are
numpy arrays: the CPU-interpreter tests need nothing but numpy and ml_dtypes.

* :func:`pertoken_quant` — FlyDSL's ``tests/utils.py::pertoken_quant``: per-row ``amax / dtype_max``
  scales (a zero row gets scale 1), values divided by their row's scale and cast (int8: truncation
  toward zero, as torch's and numpy's casts; fp8 e4m3fn: round to nearest even).
* :func:`reference_gemm` — FlyDSL's ``run_torch``: ``(a·sa) @ (b·sb)ᵀ`` in float32, then the epilogue
  (``+ bias``, relu / silu / gelu with the tanh approximation) in float32.
* :func:`verify_output` — FlyDSL's rule (``tests/test_common.py``): pass when at most 5% of the elements
  fail ``|x - y| <= atol + rtol·|y|``; otherwise pass when the cosine-style
  ``1 - 2·Σxy / Σ(x² + y²)`` is at most ``2e-3``. NaN anywhere fails.
* :func:`cublas_gemm` — the library a user would call instead: ``torch._scaled_mm`` (fp8, row-wise
  scales), ``torch._int_mm`` then the scales (int8), ``torch.matmul`` (bf16/fp16), each followed by the
  same epilogue in torch.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

__all__ = [
    "IN_DTYPES",
    "OUT_DTYPES",
    "EPILOGUES",
    "numpy_dtype",
    "pertoken_quant",
    "make_inputs",
    "reference_gemm",
    "apply_epilogue",
    "check_allclose",
    "verify_output",
    "cublas_gemm",
    "to_numpy",
]

IN_DTYPES = ("fp8", "int8", "bf16", "fp16")
OUT_DTYPES = ("bf16", "fp16")
EPILOGUES = ("none", "bias", "bias_relu", "bias_silu", "bias_gelu")

_NP = {
    "fp8": np.dtype(ml_dtypes.float8_e4m3fn),
    "int8": np.dtype(np.int8),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "fp16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
}
_MAX = {"fp8": 448.0, "int8": 127.0}


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of ``"fp8"``, ``"int8"``, ``"bf16"``, ``"fp16"`` or ``"f32"``."""
    return _NP[name]


def _torch_dtype(name: str):
    import torch

    return {
        "fp8": torch.float8_e4m3fn,
        "int8": torch.int8,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "f32": torch.float32,
    }[name]


def _is_torch(x) -> bool:
    return not isinstance(x, np.ndarray) and type(x).__module__.startswith("torch")


def to_numpy(x) -> np.ndarray:
    """A numpy copy (or the array itself) of a numpy array or torch tensor, keeping bf16/fp8 dtypes."""
    if isinstance(x, np.ndarray):
        return x
    import torch

    t = x.detach().cpu().contiguous()
    for name in ("bf16", "fp8"):
        if t.dtype == _torch_dtype(name):
            raw = t.view(torch.int16 if name == "bf16" else torch.uint8).numpy()
            return raw.view(_NP[name])
    return t.numpy()


def pertoken_quant(x, quant_dtype: str):
    """``(q, scale)``: ``x`` (float, ``[rows, cols]``) quantized per row to ``quant_dtype`` ("fp8"/"int8"),
    and the float32 scales, shape ``[rows, 1]``, such that ``q·scale ≈ x`` (FlyDSL's ``pertoken_quant``)."""
    dmax = _MAX[quant_dtype]
    if _is_torch(x):
        import torch

        h = torch.nan_to_num(x.to(torch.float32), nan=0.0, posinf=dmax, neginf=-dmax)
        amax = torch.maximum(h.amax(-1, keepdim=True), -h.amin(-1, keepdim=True))
        scale = amax / dmax
        scale[scale == 0] = 1
        return (h / scale).to(_torch_dtype(quant_dtype)), scale.to(torch.float32)
    h = np.nan_to_num(np.asarray(x, dtype=np.float32), nan=0.0, posinf=dmax, neginf=-dmax)
    amax = np.maximum(h.max(-1, keepdims=True), -h.min(-1, keepdims=True))
    scale = (amax / np.float32(dmax)).astype(np.float32)
    scale[scale == 0] = 1
    q = h / scale
    if quant_dtype == "int8":
        q = np.trunc(q)  # C-style cast, as torch's .to(int8)
    return q.astype(_NP[quant_dtype]), scale


def make_inputs(M: int, N: int, K: int, in_dtype: str, *, seed: int = 0, bias_dtype: str | None = None, device=None):
    """FlyDSL's test inputs: ``a`` (M×K) and ``b`` (N×K) drawn from N(0, 1) in float32, quantized per row
    for 8-bit types (``sa`` [M], ``sb`` [N] float32) or rounded for 16-bit ones (``sa = sb = None``);
    ``bias`` [N] in ``bias_dtype`` when given. numpy arrays, or torch tensors made on ``device`` (e.g.
    ``"cuda"``: large problems are drawn and quantized on the GPU). Returns ``(a, b, sa, sb, bias)``."""
    if device is not None:
        import torch

        gen = torch.Generator(device=device).manual_seed(seed)
        a32 = torch.randn((M, K), generator=gen, device=device, dtype=torch.float32)
        b32 = torch.randn((N, K), generator=gen, device=device, dtype=torch.float32)
        bias = None
        if bias_dtype:
            bias = torch.randn(N, generator=gen, device=device, dtype=torch.float32).to(_torch_dtype(bias_dtype))
        if in_dtype in ("fp8", "int8"):
            a, sa = pertoken_quant(a32, in_dtype)
            b, sb = pertoken_quant(b32, in_dtype)
            return a, b, sa.reshape(-1), sb.reshape(-1), bias
        return a32.to(_torch_dtype(in_dtype)), b32.to(_torch_dtype(in_dtype)), None, None, bias
    rng = np.random.default_rng(seed)
    a32 = rng.standard_normal((M, K), dtype=np.float32)
    b32 = rng.standard_normal((N, K), dtype=np.float32)
    bias = rng.standard_normal(N, dtype=np.float32).astype(_NP[bias_dtype]) if bias_dtype else None
    if in_dtype in ("fp8", "int8"):
        a, sa = pertoken_quant(a32, in_dtype)
        b, sb = pertoken_quant(b32, in_dtype)
        return a, b, sa.reshape(-1), sb.reshape(-1), bias
    return a32.astype(_NP[in_dtype]), b32.astype(_NP[in_dtype]), None, None, bias


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def apply_epilogue(c, epilogue: str, bias=None):
    """``c`` (float32, numpy or torch) after the fused epilogue ``epilogue`` (``bias`` [N] for ``bias*``)."""
    if epilogue not in EPILOGUES:
        raise ValueError(f"epilogue must be one of {EPILOGUES}, got {epilogue!r}")
    if epilogue == "none":
        return c
    if _is_torch(c):
        import torch.nn.functional as F

        c = c + bias.float()[None, :]
        act = {"bias_relu": F.relu, "bias_silu": F.silu, "bias_gelu": lambda x: F.gelu(x, approximate="tanh")}
        return act[epilogue](c) if epilogue in act else c
    c = c + to_numpy(bias).astype(np.float32)[None, :]
    if epilogue == "bias_relu":
        return np.maximum(c, 0)
    if epilogue == "bias_silu":
        return c / (1 + np.exp(-c))
    if epilogue == "bias_gelu":
        return _gelu_tanh(c)
    return c


def reference_gemm(a, b, sa=None, sb=None, *, bias=None, epilogue: str = "none"):
    """``(a·sa[:, None]) @ (b·sb[:, None])ᵀ`` in float32 (``b`` is N×K, not shuffled), then the epilogue:
    ``[M, N]`` float32, numpy for numpy inputs, torch (same device, TF32 off) for torch inputs."""
    if _is_torch(a):
        import torch

        a32, b32 = a.float(), b.float()
        if sa is not None and sb is not None:
            a32, b32 = a32 * sa.float().reshape(-1, 1), b32 * sb.float().reshape(-1, 1)
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            c = a32 @ b32.T
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        return apply_epilogue(c, epilogue, bias)
    a32 = to_numpy(a).astype(np.float32)
    b32 = to_numpy(b).astype(np.float32)
    if sa is not None and sb is not None:
        a32 = a32 * to_numpy(sa).astype(np.float32).reshape(-1, 1)
        b32 = b32 * to_numpy(sb).astype(np.float32).reshape(-1, 1)
    return apply_epilogue(a32 @ b32.T, epilogue, bias)


def _stats(x, y, rtol, atol):
    """``(fraction not close, 1 - 2Σxy/Σ(x²+y²), max |x-y|, mean |x-y|, NaN count)`` in float64, computed
    where the data live (torch tensors on their device)."""
    if _is_torch(x) or _is_torch(y):
        import torch

        x = x.double() if _is_torch(x) else torch.from_numpy(np.asarray(x, np.float64))
        y = y.double().to(x.device) if _is_torch(y) else torch.from_numpy(np.asarray(y, np.float64)).to(x.device)
        d = (x - y).abs()
        bad = 1.0 - (d <= atol + rtol * y.abs()).double().mean().item() if x.numel() else 0.0
        den = (x * x + y * y).sum().item()
        diff = 0.0 if den == 0 else 1.0 - 2.0 * (x * y).sum().item() / den
        nan = int(torch.isnan(x).sum().item())
        return bad, diff, d.max().item() if x.numel() else 0.0, d.mean().item() if x.numel() else 0.0, nan
    x = to_numpy(x).astype(np.float64)
    y = to_numpy(y).astype(np.float64)
    d = np.abs(x - y)
    bad = float(1.0 - (d <= atol + rtol * np.abs(y)).mean()) if x.size else 0.0
    den = float((x * x + y * y).sum())
    diff = 0.0 if den == 0 else 1.0 - 2.0 * float((x * y).sum()) / den
    return bad, diff, float(d.max()) if x.size else 0.0, float(d.mean()) if x.size else 0.0, int(np.isnan(x).sum())


def check_allclose(x, y, rtol: float = 1e-2, atol: float = 1e-2) -> float:
    """The fraction of elements of ``x`` not within ``atol + rtol·|y|`` of ``y`` (NaN counts as a miss)."""
    return _stats(x, y, rtol, atol)[0]


def verify_output(c, ref, rtol: float = 0.1, atol: float = 0.1, logits_diff_threshold: float = 2e-3, log=print):
    """FlyDSL's ``verify_output``: True when at most 5% of the elements miss the tolerance, or else when
    ``1 - 2·Σxy / Σ(x² + y²) <= logits_diff_threshold``. NaN in ``c`` always fails."""
    bad, diff, dmax, dmean, nan = _stats(c, ref, rtol, atol)
    if nan:
        log(f"✗ Check failed: {nan} NaN element(s) in the output")
        return False
    if bad < 0.05:
        return True
    log(f"Logits Diff: {diff:.6f}, Max Diff: {dmax:.6f}, Mean Diff: {dmean:.6f} ({bad:.1%} not close)")
    if not diff <= logits_diff_threshold:
        log(f"✗ Check failed: logits_diff {diff} > {logits_diff_threshold}")
        return False
    return True


def _padded(a, rows: int):
    """``a`` with zero rows appended up to ``rows`` (cuBLASLt's fp8/int8 GEMMs refuse some small M)."""
    import torch

    p = torch.zeros((rows, a.shape[1]), dtype=a.dtype, device=a.device)
    p[: a.shape[0]] = a
    return p


def cublas_gemm(in_dtype: str, out_dtype: str, a, b, sa=None, sb=None, *, bias=None, epilogue: str = "none"):
    """A thunk computing the same GEMM through cuBLAS (torch CUDA tensors; ``b`` N×K, not shuffled).

    fp8: ``torch._scaled_mm`` with row-wise scales (``sa`` [M, 1], ``sb`` [1, N]); int8: ``torch._int_mm``
    (int32), then the scales and the cast; bf16/fp16: ``torch.matmul``. The epilogue (bias, activation)
    follows in torch. Where cuBLASLt refuses the row count (``_int_mm`` needs more than 16 rows; fp8 may
    need a multiple of 16), A is padded with zero rows — the time then includes them — and the result
    cut back to M rows. The thunk is run once here (eagerly) to pick the form that works. Returns
    ``fn() -> C``.
    """
    import torch
    import torch.nn.functional as F

    odt = _torch_dtype(out_dtype)
    M = a.shape[0]
    act = {
        "none": None,
        "bias": None,
        "bias_relu": F.relu,
        "bias_silu": F.silu,
        "bias_gelu": lambda x: F.gelu(x, approximate="tanh"),
    }[epilogue]

    def finish(c):
        if epilogue != "none":
            c = c + bias
        return act(c) if act is not None else c

    bt = b.t()
    if in_dtype == "bf16" or in_dtype == "fp16":
        return lambda: finish(torch.matmul(a, bt)).to(odt)
    sb2 = sb.reshape(1, -1).float()

    def make(rows: int):
        ap = a if rows == M else _padded(a, rows)
        sa2 = sa.reshape(-1, 1).float()
        sa2 = sa2 if rows == M else _padded(sa2, rows)
        if in_dtype == "fp8":
            return lambda: finish(torch._scaled_mm(ap, bt, scale_a=sa2, scale_b=sb2, out_dtype=odt)[:M])
        return lambda: finish((torch._int_mm(ap, bt)[:M].float() * sa2[:M] * sb2).to(odt))

    padded = max(32, -(-M // 16) * 16)
    try:
        fn = make(M)
        fn()
        return fn
    except RuntimeError:
        if padded == M:
            raise
    fn = make(padded)
    fn()
    return fn

"""Host-side cost of calling a cached ``@flyc.jit`` launcher: ``python -m benchmarks.launch_overhead``.

Each line is µs per call, the best of several repeats of many back-to-back calls (the median of the
repeats beside it): CPU time for the ``[stub]`` lines, wall time for the ``[gpu]`` ones. The softmax and
RMSNorm lines call the kernel library's launchers as the norm benchmark cases do (one row of 8192 bf16
values, next to torch's own functions on the GPU). ``[stub]`` lines
run the real CUDA launch path — the jit's fast path, the launch plan, ``struct`` packing, the ctypes call
of ``cuLaunchKernelEx`` — with the driver replaced at the ctypes boundary by a C function that returns 0
(built with ``cc`` when there is one, else libc's ``fegetround``): everything up to the driver, measurable
on a machine without a GPU. On a CUDA machine the ``[gpu]`` lines time real back-to-back launches of a tiny
vector add next to ``torch.add`` and a Triton kernel on the same tensors.

The torch tensor reader (``flydsl/runtime/torch_args.py``, built in the background on first use) is waited
for before measuring, and its status printed. ``python -m benchmarks.launch_probe`` splits a GPU call
further: the driver's own enqueue cost per entry point, the GPU's back-to-back throughput, torch's launch.

``--profile`` prints where the time of the stub call goes (cProfile, sorted by own time).
The budget (issue 12): <= 10 µs per cached call end to end on the H200, no slower than ``torch.add``.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import tempfile
import time

os.environ.setdefault("FLYDSL_RUNTIME_ENABLE_CACHE", "0")

import flydsl.compiler as flyc  # noqa: E402
import flydsl.expr as fx  # noqa: E402
import flydsl.runtime.device as device_mod  # noqa: E402
from flydsl.expr.typing import Tensor  # noqa: E402
from flydsl.runtime.cuda import CudaKernel  # noqa: E402


@flyc.kernel
def vadd(a: Tensor, b: Tensor, c: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        c[i] = a[i] + b[i]


@flyc.jit
def launch(a, b, c, n: fx.Int32):
    vadd(a, b, c, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


@flyc.jit
def launch_on(a, b, c, n: fx.Int32, stream: fx.Stream = fx.Stream(None)):
    vadd(a, b, c, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


@flyc.kernel
def scale(x: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        x[i] = x[i] * 2.0


@flyc.jit
def launch_one(x, n: fx.Int32):
    scale(x, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1))


@flyc.kernel
def noop(n: fx.Int32):
    if n < 0:
        fx.printf("never")


@flyc.jit
def launch_noop(n: fx.Int32):
    noop(n).launch(grid=(8, 1, 1), block=(128, 1, 1))


def per_call(fn, number=20000, repeat=7, clock=time.perf_counter) -> tuple[float, float]:
    """(best, median) µs per call over ``repeat`` runs of ``number`` calls."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = clock()
        for _ in range(number):
            fn()
        times.append((clock() - t0) / number * 1e6)
    return min(times), statistics.median(times)


# -- the stand-in driver ------------------------------------------------------------------------------


def stub_driver_call():
    """A ctypes function ``int f(void*, void*, void*, void*)`` that returns 0 (``cuLaunchKernelEx``'s shape)."""
    src = "int nop(void *a, void *b, void *c, void *d) { return 0; }\n"
    d = tempfile.mkdtemp(prefix="flydsl_stub_")
    try:
        with open(os.path.join(d, "nop.c"), "w") as f:
            f.write(src)
        so = os.path.join(d, "libnop.so")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so, os.path.join(d, "nop.c")], check=True,
                       capture_output=True)  # fmt: skip
        fn = ctypes.CDLL(so).nop
    except (OSError, subprocess.CalledProcessError):
        fn = ctypes.CDLL(None).fegetround  # returns 0 (round to nearest); ignores its arguments
    fn.restype = ctypes.c_int  # no argtypes, as the real entry (flydsl.runtime.cuda._ctypes_launch)
    return fn


def norm_launchers(device: str):
    """(softmax, rmsnorm) launchers of the kernel library on one row of 8192 bf16 values, their arguments,
    and the torch functions they stand for: the norm cases' call (issue 12: ~35 µs of host time each in
    the first H200 round, back-to-back)."""
    import torch

    from kernels.norm.rmsnorm_kernel import build_rmsnorm_module
    from kernels.norm.softmax_kernel import build_softmax_module

    m, n = 1, 8192
    x = torch.randn(m, n, dtype=torch.bfloat16, device=device)
    y, w = torch.empty_like(x), torch.rand(n, dtype=torch.bfloat16, device=device)
    sm = flyc.compile(build_softmax_module(0, n, "bf16"), x, y, m)
    rms = flyc.compile(build_rmsnorm_module(n, "bf16", 1e-6), x, w, y, m)
    return (
        (lambda: sm(x, y, m)),
        (lambda: rms(x, w, y, m)),
        (lambda: torch.softmax(x, -1)),
        (lambda: torch.nn.functional.rms_norm(x, (n,), w, 1e-6)),
    )


def stub_rows(profile: bool) -> list:
    import torch

    from flydsl.runtime._cuda_launch import make_launch

    call = stub_driver_call()
    saved_kind = os.environ.get("FLYDSL_RUNTIME_KIND")
    os.environ["FLYDSL_RUNTIME_KIND"] = "cuda"
    device_mod._DEVICES["cuda"] = device_mod.StandInCudaDevice(call)
    try:
        n = 1000
        a, b, c = (torch.ones(n) for _ in range(3))
        compiled = flyc.compile(launch, a, b, c, n)
        kinds = ["ptr", "i32", "ptr", "i32", "ptr", "i32", "i32"]
        k = CudaKernel(None, "k", kinds, driver_call=call, func_handle=1)
        raw = k.launcher
        py = make_launch("k", 1, kinds, call, None, [48 * 1024], native=False)
        s = fx.Stream(0)
        softmax, rmsnorm, _, _ = norm_launchers("cpu")
        rows = [
            ("[stub] jit call: 3 torch tensors + int", lambda: launch(a, b, c, n)),
            ("[stub] flyc.compile'd call", lambda: compiled(a, b, c, n)),
            ("[stub] jit call, 1 tensor + int", lambda: launch_one(a, n)),
            ("[stub] jit call, keyword args (signature binding)", lambda: launch(a, b, c, n=n)),
            ("[stub] jit call, explicit fx.Stream(0)", lambda: launch_on(a, b, c, n, s)),
            ("[stub] jit call, stream=None (default stream)", lambda: launch_on(a, b, c, n, None)),
            ("[stub] jit call, stream parameter left to its default", lambda: launch_on(a, b, c, n)),
            ("[stub] softmax 1x8192 bf16 (flyc.compile'd kernel library launcher)", softmax),
            ("[stub] rmsnorm 1x8192 bf16 (flyc.compile'd kernel library launcher)", rmsnorm),
            ("[stub] full path (key by converters) + launch", lambda: _full_path(a, b, c, n)),
            (
                f"[stub] kernel launch function alone (raw args; {'native' if raw.native else 'ctypes'})",
                lambda: raw(8, 1, 1, 128, 1, 1, 0, 0, 1, n, 2, n, 3, n, n),
            ),
            (
                "[stub] kernel launch function alone (raw args; ctypes)",
                lambda: py(8, 1, 1, 128, 1, 1, 0, 0, 1, n, 2, n, 3, n, n),
            ),
            ("[stub] the stand-in driver call alone", lambda: call(None, None, None, None)),
        ]
        # the process's CPU time: robust to other load on the machine (nothing here waits on a device)
        out = [(name, *per_call(fn, number=10000, repeat=5, clock=time.process_time)) for name, fn in rows]
        t1 = out[2][1]
        t3 = out[0][1]
        out.insert(3, ("[stub] per tensor argument (reads, alignment/contiguity/range)", (t3 - t1) / 2, float("nan")))
        if profile:
            _profile(lambda: launch(a, b, c, n))
        return out
    finally:
        device_mod._DEVICES.pop("cuda", None)
        if saved_kind is None:
            os.environ.pop("FLYDSL_RUNTIME_KIND", None)
        else:
            os.environ["FLYDSL_RUNTIME_KIND"] = saved_kind


def _full_path(a, b, c, n):
    entry, vals, _ = launch._prepare((a, b, c, n), {})
    entry.run(vals)


def _profile(fn, calls=20000) -> None:
    import cProfile
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        fn()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(12)


# -- the GPU ------------------------------------------------------------------------------------------


def gpu_rows() -> list:
    import torch

    from flydsl.runtime.streams import current_torch_stream

    n = 1024
    a, b, c = (torch.randn(n, device="cuda") for _ in range(3))
    for jf in (launch, launch_on, launch_one, launch_noop):  # the stub's specializations are not this process's
        jf.clear_cache()
    launch(a, b, c, n)
    compiled = flyc.compile(launch, a, b, c, n)
    torch.cuda.synchronize()
    s = torch.cuda.current_stream()
    kernel = next(iter(launch._last[1].launcher.kernels.values()))
    raw_args = (a.data_ptr(), n, b.data_ptr(), n, c.data_ptr(), n, n)
    launch_noop(n)
    k1 = next(iter(launch_noop._last[1].launcher.kernels.values()))
    side = torch.cuda.Stream()
    softmax, rmsnorm, t_softmax, t_rmsnorm = norm_launchers("cuda")
    ev = torch.cuda.Event(enable_timing=True)
    rows = [
        ("[gpu] jit call (flydsl)", lambda: launch(a, b, c, n)),
        ("[gpu] flyc.compile'd call (flydsl)", lambda: compiled(a, b, c, n)),
        ("[gpu] jit call, stream=torch stream", lambda: launch_on(a, b, c, n, s)),
        ("[gpu] torch.add(a, b, out=c)", lambda: torch.add(a, b, out=c)),
        (
            f"[gpu] kernel launch function alone (raw args; {'native' if kernel.launcher.native else 'ctypes'})",
            lambda: kernel.launcher(8, 1, 1, 128, 1, 1, 0, s.cuda_stream, *raw_args),
        ),
        # where the driver's time goes: the parameter count, the legacy default stream
        ("[gpu] ... the same, a kernel of one parameter", lambda: k1.launcher(8, 1, 1, 128, 1, 1, 0, s.cuda_stream, n)),
        (
            "[gpu] ... the same, 7 parameters on a created stream",
            lambda: kernel.launcher(8, 1, 1, 128, 1, 1, 0, side.cuda_stream, *raw_args),
        ),
        ("[gpu] softmax 1x8192 bf16 (flydsl)", softmax),
        ("[gpu] torch.softmax 1x8192 bf16", t_softmax),
        ("[gpu] rmsnorm 1x8192 bf16 (flydsl)", rmsnorm),
        ("[gpu] F.rms_norm 1x8192 bf16", t_rmsnorm),
        ("[gpu] torch current stream handle (flydsl's)", current_torch_stream),
        ("[gpu] torch.cuda.current_stream().cuda_stream", lambda: torch.cuda.current_stream().cuda_stream),
        ("[gpu] Event.record() (the stream looked up)", lambda: ev.record()),
        ("[gpu] Event.record(stream)", lambda: ev.record(s)),
    ]
    tri = _triton_add()
    if tri is not None:
        rows.insert(4, ("[gpu] triton add kernel", lambda: tri(a, b, c, n)))
    out = []
    for name, fn in rows:
        fn()
        torch.cuda.synchronize()
        best, med = per_call(fn, number=5000, repeat=5)
        torch.cuda.synchronize()
        out.append((name, best, med))
    torch.cuda.synchronize()
    assert torch.allclose(c, a + b)
    return out


def _triton_add():
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    def run(a, b, c, n):
        add_kernel[(triton.cdiv(n, 128),)](a, b, c, n, BLOCK=128)

    return run


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--profile", action="store_true", help="cProfile the stub call")
    args = ap.parse_args(argv)
    from flydsl.runtime.native import status

    print(f"native launch helper: {status()}")
    try:
        import torch  # noqa: F401 - the reader reads torch tensors

        from flydsl.runtime import torch_args

        torch_args.wait(300)  # built in the background on first use: measure with it loaded
        print(f"torch tensor reader: {torch_args.status()}")
    except ImportError:
        pass
    rows = stub_rows(args.profile)
    try:
        import torch

        if torch.cuda.is_available():
            rows += gpu_rows()
    except ImportError:
        pass
    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  {'best us':>8} {'median':>8}")
    for name, best, med in rows:
        print(f"{name:<{width}}  {best:8.2f} {med:8.2f}")


if __name__ == "__main__":
    main()

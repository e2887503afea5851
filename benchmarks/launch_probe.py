"""Where the time of a back-to-back tiny launch goes on a GPU: ``python -m benchmarks.launch_probe`` (CUDA only).

One question, answered with numbers: is a loop of tiny launches bound by the host (the driver call, the
Python around it) or by the GPU (how fast it runs tiny kernels one after another)? A small C library
(built here with ``cc``) times loops of launches with no Python in between, through each way into the
driver — ``cuLaunchKernel`` / ``cuLaunchKernelEx`` on a module's ``CUfunction``, ``cuLaunchKernel`` on a
library's context-less ``CUkernel``, the runtime's ``cudaLaunchKernel`` on a ``cudaKernel_t`` (what
torch's own launches go through) — on an empty kernel, on empty kernels with 8 and 32 pointer
parameters, and on flydsl's vector add. For each it prints

* ``host``: µs of host time per launch while the GPU is held busy by a spin kernel (the pure enqueue
  cost: nothing completes, the queue never fills);
* ``gpu``: µs per kernel between CUDA events around the same launches (the GPU running them back to
  back with no host gaps: its throughput for that kernel);
* ``loop``: µs per launch of a plain back-to-back loop and a final sync (what ``launch_overhead``
  measures): ``max(host, gpu)`` when nothing else interferes.

Python-level rows (one call per launch) follow: flydsl's native helper, the jit call, ``torch.add``,
``torch.cuda._sleep(0)`` (one launch through torch's C++), the helper's driver entry through ctypes with
and without the GIL released, and cuda-bindings' ``cuLaunchKernel``. Last, the depth of the launch
queue (how many launches enqueue before one blocks) and the process's thread count (a thread waiting
for the GIL makes every GIL release a switch).
"""

from __future__ import annotations

import ctypes
import os
import statistics
import subprocess
import tempfile
import time

os.environ.setdefault("FLYDSL_RUNTIME_ENABLE_CACHE", "0")

_C = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

typedef struct { unsigned x, y, z; } dim3;
typedef struct { unsigned grid[3]; unsigned block[3]; unsigned smem; void *stream; void *attrs; unsigned nattrs; } Cfg;
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
typedef int (*launchex_t)(const Cfg *, void *, void **, void **);
typedef int (*rtlaunch_t)(const void *, dim3, dim3, void **, size_t, void *);
typedef int (*modload_t)(void **, const void *);
typedef int (*getfn_t)(void **, void *, const char *);
typedef int (*libload_t)(void **, const void *, void *, void **, unsigned, void *, void **, unsigned);

static void *drv, *rt;
static launch_t cuLaunchKernel_;
static launchex_t cuLaunchKernelEx_;
static rtlaunch_t cudaLaunchKernel_;

static int64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* 0 ok; bit 1: no driver, bit 2: no runtime entry */
int init(const char *runtime_path) {
    drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!drv) return 1;
    cuLaunchKernel_ = (launch_t)dlsym(drv, "cuLaunchKernel");
    cuLaunchKernelEx_ = (launchex_t)dlsym(drv, "cuLaunchKernelEx");
    int r = 0;
    rt = runtime_path && *runtime_path ? dlopen(runtime_path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (rt) cudaLaunchKernel_ = (rtlaunch_t)dlsym(rt, "cudaLaunchKernel");
    if (!cudaLaunchKernel_) r |= 2;
    return r;
}

/* the image's kernel three ways: module CUfunction, library CUkernel, runtime cudaKernel_t; each err */
int load(const void *image, const char *name, void **fn, void **kern, void **rtkern, int *errs) {
    modload_t ml = (modload_t)dlsym(drv, "cuModuleLoadData");
    getfn_t gf = (getfn_t)dlsym(drv, "cuModuleGetFunction");
    libload_t ll = (libload_t)dlsym(drv, "cuLibraryLoadData");
    getfn_t gk = (getfn_t)dlsym(drv, "cuLibraryGetKernel");
    void *mod = 0, *lib = 0, *rlib = 0;
    errs[0] = ml(&mod, image);
    if (!errs[0]) errs[0] = gf(fn, mod, name);
    errs[1] = ll && gk ? ll(&lib, image, 0, 0, 0, 0, 0, 0) : -1;
    if (!errs[1]) errs[1] = gk(kern, lib, name);
    libload_t rl = rt ? (libload_t)dlsym(rt, "cudaLibraryLoadData") : NULL;
    getfn_t rk = rt ? (getfn_t)dlsym(rt, "cudaLibraryGetKernel") : NULL;
    errs[2] = rl && rk ? rl(&rlib, image, 0, 0, 0, 0, 0, 0) : -1;
    if (!errs[2]) errs[2] = rk(rtkern, rlib, name);
    return 0;
}

/* n launches of f through `how` (0 cuLaunchKernel, 1 cuLaunchKernelEx, 2 cudaLaunchKernel); ns in total;
 * stamps[i] (if given): ns after launch i. *err: the first non-zero result. */
int64_t loop(int how, void *f, void *stream, unsigned gx, unsigned bx, void **params, int n, int64_t *stamps,
             int *err) {
    Cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.grid[0] = gx; cfg.grid[1] = cfg.grid[2] = 1;
    cfg.block[0] = bx; cfg.block[1] = cfg.block[2] = 1;
    cfg.stream = stream;
    dim3 g = {gx, 1, 1}, b = {bx, 1, 1};
    *err = 0;
    int64_t t0 = now();
    for (int i = 0; i < n; i++) {
        int e;
        if (how == 0) e = cuLaunchKernel_(f, gx, 1, 1, bx, 1, 1, 0, stream, params, 0);
        else if (how == 1) e = cuLaunchKernelEx_(&cfg, f, params, 0);
        else e = cudaLaunchKernel_(f, g, b, params, 0, stream);
        if (e && !*err) *err = e;
        if (stamps) stamps[i] = now();
    }
    return now() - t0;
}

/* one launch (for the ctypes rows) */
int one(void *f, void *stream, void **params) {
    return cuLaunchKernel_(f, 8, 1, 1, 128, 1, 1, 0, stream, params, 0);
}
"""


def _empty_ptx(nparams: int, arch: str) -> str:
    ps = ", ".join(f".param .u64 p{i}" for i in range(nparams))
    return f".version 8.0\n.target {arch}\n.address_size 64\n.visible .entry empty{nparams}({ps})\n{{\n\tret;\n}}\n"


def _build_lib():
    d = tempfile.mkdtemp(prefix="flydsl_probe_")
    src, so = os.path.join(d, "probe.c"), os.path.join(d, "libprobe.so")
    with open(src, "w") as f:
        f.write(_C)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so, src, "-ldl"], check=True, capture_output=True)
    return so


def _runtime_path() -> str:
    """The path of the CUDA runtime library torch has loaded."""
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if "libcudart" in os.path.basename(p):
                return p
    return ""


def main() -> None:
    import torch

    from benchmarks.launch_overhead import launch
    from flydsl.runtime import native, torch_args
    from flydsl.runtime._cuda_launch import CONFIG_SIZE
    from flydsl.runtime.native import status

    torch.cuda.init()
    torch_args.wait(60)  # the C++ tensor reader (built in the background on first use): loaded before timing
    n = 1024
    a, b, c = (torch.randn(n, device="cuda") for _ in range(3))
    torch.add(a, b, out=c)
    launch(a, b, c, n)
    torch.cuda.synchronize()
    entry = launch._last[1]
    art = entry.artifact
    kern = next(iter(entry.launcher.kernels.values()))
    arch = art.target if str(art.target).startswith("sm_") else "sm_90a"

    print(f"torch {torch.__version__}, cuda {torch.version.cuda}, {torch.cuda.get_device_name()}")
    print("native helper:", status())
    print("torch tensor reader:", torch_args.status(), "| entry reads in C++:", launch._dispatch.readers)
    print("env:", {k: v for k, v in os.environ.items() if k.startswith(("CUDA", "PYTORCH_CUDA", "TORCH_"))})
    rtp = _runtime_path()
    print("runtime library:", rtp or "(none found)")
    lib = ctypes.CDLL(_build_lib())
    lib.loop.restype = ctypes.c_int64
    lib.loop.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint,
                         ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]  # fmt: skip
    print("init:", lib.init(rtp.encode()))

    def load(image: bytes, name: str):
        fn, k, rk = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        errs = (ctypes.c_int * 3)()
        lib.load(image, name.encode(), ctypes.byref(fn), ctypes.byref(k), ctypes.byref(rk), errs)
        return [fn.value if not errs[0] else None, k.value if not errs[1] else None, rk.value if not errs[2] else None]

    # kernels: (label, handles by way, params array, grid)
    keep = []

    def params_of(vals: list, codes: str):
        cells = [(ctypes.c_uint64 if code == "Q" else ctypes.c_uint32)(v) for v, code in zip(vals, codes)]
        arr = (ctypes.c_void_p * max(1, len(cells)))(*[ctypes.addressof(x) for x in cells])
        keep.append((cells, arr))
        return ctypes.addressof(arr)

    kernels = []
    for k in (0, 8, 32):
        img = _empty_ptx(k, arch).encode() + b"\0"
        kernels.append((f"empty kernel, {k} params", load(img, f"empty{k}"), params_of([0] * k, "Q" * k), 1, 32))
    image = art.cubin if art.cubin else art.ptx.encode() + b"\0"
    vals = [a.data_ptr(), n, b.data_ptr(), n, c.data_ptr(), n, n]
    kernels.append(("flydsl vadd (7 params)", load(image, kern.name), params_of(vals, "QIQIQII"), 8, 128))

    stream = torch.cuda.current_stream().cuda_stream
    err = ctypes.c_int()
    ways = ["cuLaunchKernel(CUfunction)", "cuLaunchKernelEx(CUfunction)", "cuLaunchKernel(CUkernel)",
            "cudaLaunchKernel(cudaKernel_t)"]  # fmt: skip
    # (handle index, how)
    routes = [(0, 0), (0, 1), (1, 0), (2, 2)]
    spin = 20_000_000  # ~10 ms of GPU time: longer than any host loop below

    def stalled(run, count: int) -> tuple[float, float]:
        """(host µs per launch while the GPU spins, GPU µs per kernel between events), on torch's current
        stream (the one the launches go to)."""
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        torch.cuda._sleep(spin)
        e0.record()
        t0 = time.perf_counter()
        run(count)
        host = (time.perf_counter() - t0) / count * 1e6
        e1.record()
        torch.cuda.synchronize()
        return host, e0.elapsed_time(e1) * 1e3 / count

    def plain(run, count: int) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        run(count)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / count * 1e6

    def c_loop(h, how, p, gx, bx, on=None):
        def run(count):
            lib.loop(how, h, stream if on is None else on, gx, bx, p, count, None, ctypes.byref(err))
            if err.value:
                raise RuntimeError(f"launch error {err.value}")

        return run

    def best(fn, reps=5):
        rs = [fn() for _ in range(reps)]
        return min(rs), statistics.median(rs)

    def measure(label: str, run) -> tuple:
        """(label, host, gpu, loop) of one way to launch; None where it failed (the error printed)."""
        try:
            run(50)
            st = [stalled(run, 400) for _ in range(5)]
            host, gpu = min(x[0] for x in st), statistics.median(x[1] for x in st)
            return label, host, gpu, best(lambda: plain(run, 4000))[0]
        except Exception as e:  # noqa: BLE001 - one way failing must not hide the others
            print(f"{label}: {type(e).__name__}: {e}")
            torch.cuda.synchronize()
            return label, None, None, None

    rows = []
    for label, handles, p, gx, bx in kernels:
        for (hi, how), way in zip(routes, ways):
            h = handles[hi]
            if h is None or (how == 2 and not rtp):
                rows.append((f"C loop  {label:26s} {way}", None, None, None))
                continue
            rows.append(measure(f"C loop  {label:26s} {way}", c_loop(h, how, p, gx, bx)))

    # the legacy default stream (what torch's current stream is here) against a created non-blocking one
    side = torch.cuda.Stream()
    label, handles, p, gx, bx = kernels[-1]
    with torch.cuda.stream(side):
        lbl = f"C loop  {label:26s} cuLaunchKernel(CUfunction), created stream"
        rows.append(measure(lbl, c_loop(handles[0], 0, p, gx, bx, side.cuda_stream)))

    # Python-level rows: one Python call per launch
    launcher = kern.launcher
    torch_add = lambda: torch.add(a, b, out=c)  # noqa: E731
    fn_vadd = kernels[-1][1][0]
    pd = ctypes.PyDLL(lib._name)  # the same entry without releasing the GIL
    one_gil, one_nogil = lib.one, pd.one
    for f in (one_gil, one_nogil):
        f.argtypes = None
        f.restype = ctypes.c_int
    cf, cs, cp = ctypes.c_void_p(fn_vadd), ctypes.c_void_p(stream), ctypes.c_void_p(kernels[-1][2])
    # the helper's own variants: which driver entry, the GIL released or kept
    libcuda = ctypes.CDLL("libcuda.so.1")
    lay = launcher.layout
    offs, size = tuple(o - CONFIG_SIZE for o in lay.offsets), lay.size - CONFIG_SIZE
    variants = []
    flag_sets = ((0, "cuLaunchKernelEx, GIL released"), (2, "cuLaunchKernelEx, GIL kept"),
                 (1, "cuLaunchKernel, GIL released"), (3, "cuLaunchKernel, GIL kept"))  # fmt: skip
    for flags, what in () if native.launch_type() is None or not fn_vadd else flag_sets:
        entry = libcuda.cuLaunchKernel if flags & 1 else libcuda.cuLaunchKernelEx
        h = native.launch_type()(ctypes.cast(entry, ctypes.c_void_p).value, fn_vadd, "QIQIQII", offs, size, 0, 0, flags)
        variants.append((f"flydsl native helper: {what}", lambda h=h: h(8, 1, 1, 128, 1, 1, 0, stream, *vals)))
    py_rows = [
        ("flydsl native helper, raw args", lambda: launcher(8, 1, 1, 128, 1, 1, 0, stream, *vals)),
        *variants,
        ("flydsl jit call", lambda: launch(a, b, c, n)),
        ("torch.add(a, b, out=c)", torch_add),
        ("torch.cuda._sleep(0) (one torch C++ launch)", lambda: torch.cuda._sleep(0)),
        ("ctypes one cuLaunchKernel, GIL released", lambda: one_gil(cf, cs, cp)),
        ("ctypes one cuLaunchKernel, GIL held", lambda: one_nogil(cf, cs, cp)),
    ]
    try:
        from cuda.bindings import driver as drv

        bf = drv.CUfunction(fn_vadd)
        bs = drv.CUstream(stream)
        addr = kernels[-1][2]
        py_rows.append(("cuda-bindings cuLaunchKernel, prebuilt params",
                        lambda: drv.cuLaunchKernel(bf, 8, 1, 1, 128, 1, 1, 0, bs, addr, 0)))  # fmt: skip
    except Exception as e:  # noqa: BLE001
        print("cuda-bindings row skipped:", e)

    def py_run(fn):
        def run(count):
            for _ in range(count):
                fn()

        return run

    for label, fn in py_rows:
        rows.append(measure(f"Python  {label}", py_run(fn)))

    # the launch queue's depth: launches while the GPU spins ~100 ms, each stamped
    count = 12000
    stamps = (ctypes.c_int64 * count)()
    h0, p0 = kernels[0][1][0], kernels[0][2]
    torch.cuda.synchronize()
    torch.cuda._sleep(spin * 10)
    total = lib.loop(0, h0, stream, 1, 32, p0, count, stamps, ctypes.byref(err))
    torch.cuda.synchronize()
    gaps = [0] + [stamps[i] - stamps[i - 1] for i in range(1, count)]
    depth = next((i for i, g in enumerate(gaps) if g > 50_000), None)
    before = statistics.median(gaps[1 : depth or count])
    print(f"queue: the first launch blocking > 50 us is #{depth}; median enqueue before it {before / 1e3:.2f} us; "
          f"{count} launches {total / 1e6:.1f} ms")  # fmt: skip
    print(f"threads in the process: {len(os.listdir('/proc/self/task'))}")
    assert torch.allclose(c, a + b)

    width = max(len(r[0]) for r in rows)
    print(f"\n{'what (us per launch)':<{width}}  {'host':>6} {'gpu':>6} {'loop':>6}")
    for label, host, gpu, loop in rows:
        cells = ["   n/a" if x is None else f"{x:6.2f}" for x in (host, gpu, loop)]
        print(f"{label:<{width}}  {' '.join(cells)}")


if __name__ == "__main__":
    main()

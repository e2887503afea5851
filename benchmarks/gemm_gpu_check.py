"""One GPU run for the preshuffle GEMM: correctness on the H200, then the benchmark against cuBLAS.

    PYTHONPATH=. python -m benchmarks.gemm_gpu_check [--quick] [--variants auto 16x32x1024 ...]
                                                     [--groups seed,decode,large,sweep] [--skip-check]

1. **check** — every in_dtype on small and medium shapes (M = 1, 16, 33, 2048; FlyDSL's tile arguments and
   the heuristic's), eager and as a CUDA-graph replay, each fused epilogue, fp16 output: FlyDSL's tolerance
   rule plus rows past M pre-filled with a sentinel and checked untouched; and the GPU against the CPU
   interpreter on one small problem per dtype (the same IR, two executors).
2. **compile** — a cold compile of one configuration in a fresh process (disk cache off), and the first
   call of a second process that finds it in the disk cache.
3. **bench** — :mod:`benchmarks.cases.preshuffle_gemm` over the chosen groups and variants
   (:data:`DEFAULT_VARIANTS` per group, or ``--variants`` for all: ``auto``,
   ``TMxTNxTK[:WM,WN,WK][@path][/rNN][/tma|/direct]``): µs, TFLOP/s, cuBLAS, speedup, % of the HBM
   roofline for reading B once. Results go to ``$OUT`` (or benchmarks/results) as JSON/markdown/PNG.

The last lines printed are a compact table of everything (what a device call's output tail shows).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the variants compared by default, per group (see benchmarks/cases/preshuffle_gemm.py for the syntax), each
# beside round 1's default ("r1": the mma path up to M = 64, the cooperative wgmma path above):
# decode: the heuristic (round 2's winners: the mma path for 4096x4096 up to M = 16, the stream path's whole
#   tiles at 7168 and 128-row stream-K tiles at 10240), the stream path's own choice, 64- and 128-row stream
#   tiles everywhere and one K atom a stage;
# seed / large: the heuristic (ping-pong 128x128, or cooperative 128x256 where its waves are fewer),
#   ping-pong 64x256, cooperative 128x128 and 128x256;
# sweep: the heuristic, and the stream and wgmma paths at every M (where they cross)
DEFAULT_VARIANTS = {
    "decode": ["r1", "auto", "_x_x_@stream", "_x64x256@stream", "_x128x256@stream", "_x_x128@stream"],
    "seed": ["r1", "auto", "64x256x_/pp", "128x128x_/coop"],
    "large": ["auto", "128x256x_", "128x128x_", "128x128x_/coop", "64x256x_/pp"],
    "sweep": ["r1", "auto", "_x_x_@stream", "_x_x_@wgmma"],
}

EPILOGUES = ("bias", "bias_relu", "bias_silu", "bias_gelu")
ALL = ("fp8", "int8", "bf16", "fp16")
CHECKS = [  # (in_dtype, M, N, K (8-bit elements), variant (tile_k in 8-bit elements), epilogue, out)
    *[(dt, 1, 256, 512, "auto", "none", "bf16") for dt in ALL],
    *[(dt, 33, 1024, 2048, "32x64x512", "none", "bf16") for dt in ALL],  # FlyDSL's tiles: the mma path
    *[(dt, 16, 5120, 8192, "16x64x512", "none", "bf16") for dt in ALL],
    *[(dt, 2048, 4096, 512, "128x128x256", "none", "bf16") for dt in ("fp8", "int8", "bf16")],  # ping-pong
    *[(dt, 2048, 4096, 512, v, "none", "bf16") for dt in ("fp8", "bf16") for v in ("64x256x_/pp", "auto/coop")],
    *[(dt, 300, 2048, 1024, "auto", ep, "bf16") for dt in ("fp8", "bf16") for ep in EPILOGUES],
    # the stream path: whole tiles (4096: 32 rows, 7168: 64 rows), stream-K splits (10240, M = 200), epilogues
    *[(dt, 32, 4096, 2048, "auto", "none", "bf16") for dt in ALL],
    *[(dt, 7, 7168, 2048, "auto", "none", "bf16") for dt in ALL],
    *[(dt, 16, 10240, 8192, "auto", "none", "bf16") for dt in ALL],
    *[(dt, 200, 4096, 4096, "auto", "none", "bf16") for dt in ("fp8", "bf16")],
    ("fp8", 40, 1024, 1024, "auto", "bias", "fp16"),
    ("bf16", 24, 2048, 1024, "auto", "bias_gelu", "bf16"),
    ("fp8", 700, 4096, 4096, "_x_x_@stream", "bias_relu", "bf16"),  # 3 token tiles of 256
]  # fmt: skip


def check(log) -> list[str]:
    from benchmarks.cases.preshuffle_gemm import parse_variant
    from kernels.gemm.harness import run_gemm

    lines = []
    for dt, M, N, K, variant, ep, out in CHECKS:
        e = 1 if dt in ("fp8", "int8") else 2
        kw = parse_variant(variant)  # M is the heuristic's hint (run_gemm)
        if kw.get("tile_k"):
            kw["tile_k"] //= e
        t0 = time.perf_counter()
        try:
            r = run_gemm(dt, M, N, K // e, cuda=True, graph_check=True, epilogue=ep, out_dtype=out, log=log, **kw)
            status = "PASS" if r.ok else "FAIL"
            detail = f"rel {r.rel_err:.1e} guard {'ok' if r.guard_ok else 'WRITTEN'} | {r.config}"
        except Exception as ex:
            status, detail = "ERROR", f"{type(ex).__name__}: {str(ex).splitlines()[0][:140] if str(ex) else ''}"
        line = f"check {dt:4s} {M}x{N}x{K // e} {ep:9s} {out} {status} ({time.perf_counter() - t0:.1f}s) {detail}"
        log(line, flush=True)
        lines.append(line)
    lines += parity(log)
    lines += determinism(log)
    return lines


def determinism(log) -> list[str]:
    """The split-K reduction on the GPU: one stream-K launcher (every tile split) run 5 times on the same
    inputs gives identical bits, its arrival counters are back at zero after each run, and the result
    matches the f32 reference with rows past M untouched."""
    import torch

    from kernels.gemm.harness import SENTINEL
    from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm, shuffle_weight
    from kernels.gemm.reference import make_inputs, reference_gemm, verify_output
    from kernels.gemm.streamk import COUNTER_WORDS

    lines = []
    for dt, M, N, K in (("fp8", 16, 4096, 4096), ("bf16", 30, 10240, 4096), ("int8", 200, 2048, 8192)):
        fn = compile_preshuffle_gemm(N=N, K=K, in_dtype=dt, M=M, tile_n=64, path="stream", max_blocks=132)
        a, b, sa, sb, _ = make_inputs(M, N, K, dt, seed=21, device="cuda")
        z = torch.zeros(0, device="cuda")
        bs = shuffle_weight(b)
        c = torch.full((M + 8, N), SENTINEL, dtype=torch.bfloat16, device="cuda")
        outs, counters = [], 0
        for _ in range(5):
            fn(c[:M], a, bs, sa if sa is not None else z, sb if sb is not None else z, c[0, :0], M, N)
            torch.cuda.synchronize()
            outs.append(c[:M].clone())
            counters += int(fn.workspace[:COUNTER_WORDS].abs().sum().item())
        same = all(torch.equal(o.view(torch.int16), outs[0].view(torch.int16)) for o in outs)
        ref = reference_gemm(a, b, sa, sb)
        ok = same and counters == 0 and verify_output(outs[0].float(), ref, log=log) and bool((c[M:] == SENTINEL).all())
        line = (f"determinism {dt:4s} {M}x{N}x{K} split-K x5: {'identical' if same else 'DIFFERENT'} bits, "
                f"counters {'reset' if counters == 0 else 'LEFT ' + str(counters)} {'PASS' if ok else 'FAIL'} | "
                f"{fn.gemm_config.describe()}")  # fmt: skip
        log(line, flush=True)
        lines.append(line)
    return lines


def parity(log) -> list[str]:
    """The same small problem on the GPU and on the CPU interpreter."""
    import numpy as np
    import torch

    from kernels.gemm.harness import _to_torch
    from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm, shuffle_weight
    from kernels.gemm.reference import make_inputs, numpy_dtype

    lines = []
    cases = [(dt, "mma") for dt in ("fp8", "int8", "bf16", "fp16")] + [(dt, "stream") for dt in ("fp8", "int8", "bf16")]
    for dt, path in cases:
        M, N, K = 21, 128, 256 if dt in ("fp8", "int8") else 128
        if path == "stream":  # 3 token tiles x 2 panels of 8 one-atom stages over 10 blocks of 5: split tiles
            K *= 4
            kw = {"tile_m": 8, "tile_n": 64, "tile_k": K // 8, "in_dtype": dt, "path": path, "max_blocks": 10}
            os.environ["FLYDSL_RUNTIME_KIND"] = "cpu"  # a host workspace for the interpreter's run
            fn_cpu = compile_preshuffle_gemm(N=N, K=K, **kw)
            os.environ.pop("FLYDSL_RUNTIME_KIND", None)
            fn_gpu = compile_preshuffle_gemm(N=N, K=K, **kw)
        else:
            fn_cpu = fn_gpu = compile_preshuffle_gemm(N=N, K=K, tile_m=16, tile_n=32, tile_k=128 if K == 256 else 64,
                                                      in_dtype=dt)  # fmt: skip
        a, b, sa, sb, _ = make_inputs(M, N, K, dt, seed=11)
        z = np.zeros(0, np.float32)
        host = [a, shuffle_weight(b), sa if sa is not None else z, sb if sb is not None else z]
        outs = []
        for dev in ("cpu", "cuda"):
            fn = fn_cpu if dev == "cpu" else fn_gpu
            os.environ["FLYDSL_RUNTIME_KIND"] = dev
            c = np.zeros((M, N), numpy_dtype("bf16"))
            ops = host
            if dev == "cuda":
                ops = [_to_torch(x, nm) for x, nm in zip(host, [dt, dt, "f32", "f32"])]
                c = _to_torch(c, "bf16")
            fn(c, *ops, c[0, :0], M, N)
            if dev == "cuda":
                torch.cuda.synchronize()
                c = c.view(torch.int16).cpu().numpy().view(numpy_dtype("bf16"))
            outs.append(c.astype(np.float32))
        os.environ.pop("FLYDSL_RUNTIME_KIND", None)
        d = np.abs(outs[0] - outs[1])
        ulps = float((d / np.maximum(np.abs(outs[0]), 1e-3)).max())
        same = float((outs[0] == outs[1]).mean())
        line = f"parity {dt:4s} {path:6s} GPU vs interpreter: {same:.1%} identical, max rel diff {ulps:.1e} " + (
            "PASS" if ulps <= 2**-7 else "FAIL"
        )
        log(line, flush=True)
        lines.append(line)
    return lines


def compile_times(log) -> list[str]:
    """Cold compile (fresh process, disk cache off) and a cached first call (second process)."""
    import tempfile

    code = (
        "import time, torch; t0 = time.perf_counter()\n"
        "from kernels.gemm.harness import run_gemm\n"
        "t1 = time.perf_counter()\n"
        "from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm\n"
        "fn = compile_preshuffle_gemm(N=4096, K=4096, in_dtype='fp8', M=16)\n"
        "a = torch.ones(16 * 4096, dtype=torch.int8, device='cuda')\n"
        "b = torch.ones(4096 * 4096, dtype=torch.int8, device='cuda')\n"
        "s = torch.ones(4096, device='cuda'); c = torch.zeros(16 * 4096, dtype=torch.bfloat16, device='cuda')\n"
        "torch.cuda.synchronize(); t2 = time.perf_counter()\n"
        "fn(c, a, b, s, s, c[:0], 16, 4096); torch.cuda.synchronize(); t3 = time.perf_counter()\n"
        "print('RESULT', round(t3 - t2, 3), round(t1 - t0, 3))\n"
    )  # fmt: skip
    lines = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "FLYDSL_RUNTIME_CACHE_DIR": cache}
        for label, extra in (("cold compile (cache off)", {"FLYDSL_RUNTIME_ENABLE_CACHE": "0"}),
                             ("fill disk cache", {}), ("cached start (2nd process)", {})):  # fmt: skip
            r = subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True)
            got = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT")]
            msg = f"first call {got[0].split()[1]} s" if got else f"failed: {r.stderr.strip().splitlines()[-1:]}"
            line = f"compile fp8 16x4096x4096 {label}: {msg}"
            log(line, flush=True)
            lines.append(line)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", default="seed,decode,large,sweep")
    ap.add_argument("--variants", nargs="*", default=None, help="variants for every group (default: per group)")
    ap.add_argument("--dtypes", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--skip-bench", action="store_true")
    args = ap.parse_args(argv)
    out = Path(os.environ.get("OUT") or ROOT / "benchmarks" / "results")
    t0 = time.perf_counter()
    summary = []
    if not args.skip_check:
        summary += check(print)
        summary += compile_times(print)
    rows = []
    if not args.skip_bench:
        from benchmarks.cases import preshuffle_gemm as bench

        groups = [g for g in args.groups.split(",") if g]
        dtypes = args.dtypes.split(",") if args.dtypes else None
        variants = args.variants or DEFAULT_VARIANTS
        if args.quick and not args.variants:
            variants = {g: v[:2] for g, v in DEFAULT_VARIANTS.items()}
        rows = bench.run(groups, variants, dtypes, args.quick, args.iters, out)
    (out / "gemm_gpu_check.json").parent.mkdir(parents=True, exist_ok=True)
    (out / "gemm_gpu_check.json").write_text(json.dumps({"summary": summary}, indent=1))
    print("\n" + "=" * 100)
    print(f"gemm GPU check, {time.perf_counter() - t0:.0f} s")
    bad = [ln for ln in summary if " FAIL" in ln or " ERROR" in ln or "failed" in ln]
    print(f"checks: {len(summary) - len(bad)} passed, {len(bad)} failed")
    for ln in bad:
        print("  " + ln[:200])
    for ln in summary:
        if ln.startswith(("compile", "parity", "determinism")):
            print(ln)
    if rows:
        from benchmarks.cases.preshuffle_gemm import compact

        print(compact(rows))
    return 1 if bad or any(r.note.startswith("WRONG") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())

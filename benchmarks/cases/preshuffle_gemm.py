"""The preshuffle GEMM (``kernels/gemm/preshuffle_gemm.py``) against cuBLAS on the issue's shapes.

cuBLAS is what a user would call: ``torch._scaled_mm`` (fp8 e4m3, row-wise scales), ``torch._int_mm`` and
the scales after (int8), ``torch.matmul`` (bf16/fp16). Every measurement first checks the result (FlyDSL's
tolerance rule, rows past M untouched), then times CUDA-graph replays of ``iters`` calls over input sets
that together exceed the L2 cache (B is read from HBM, as in a model), ours and cuBLAS's alike.

Groups (``--groups``): ``seed`` 2048x4096x512 (fp8, int8, bf16); ``decode`` M = 1, 8, 16, 32 with N x K in
{4096x4096, 10240x8192, 7168x2048} (fp8; ``--dtypes`` adds others) with the HBM roofline for reading B
once; ``large`` 8192^3 and 5120x5120x8320 (fp8, bf16, int8); ``sweep`` TFLOP/s against M = 1 … 8192 for
N = K = 4096 fp8 (plotted). ``--variants`` compares tile configurations in one run::

    python -m benchmarks.cases.preshuffle_gemm --groups decode --variants auto 16x32x1024 16x16x1024:1,1,4

A variant is ``auto`` (the shape heuristic with the problem's M as hint), ``r1`` (the first H200 round's
default: the mma path up to M = 64, the cooperative wgmma path on round 1's tile table above) or
``TMxTNxTK[:WM,WN,WK][@path]`` (tile_k in elements; ``_`` leaves one to the heuristic, which knows M),
any of them followed by options ``/rNN`` (register cap, mma path), ``/tma`` or ``/direct`` (how the wgmma
path stores C), ``/sNN`` (shared-memory stages, wgmma and stream paths), ``/bNN`` (the stream path's
most blocks), ``/pp`` or ``/coop`` (the wgmma path's ping-pong or cooperative consumers; default: ping-pong
for 128x128 and 64x256 tiles).
Writes ``<out>/<date>-<gpu>-gemm.{json,md,png}``.
``cases(quick)`` serves ``python -m benchmarks.run preshuffle_gemm`` (times per shape, default variant).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import time
from pathlib import Path

SEED = [(2048, 4096, 512)]
DECODE_NK = [(4096, 4096), (10240, 8192), (7168, 2048)]
DECODE_M = [1, 8, 16, 32]
LARGE = [(8192, 8192, 8192), (5120, 5120, 8320)]
SWEEP_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
GROUP_DTYPES = {
    "seed": ("fp8", "int8", "bf16"),
    "decode": ("fp8",),
    "large": ("fp8", "bf16", "int8"),
    "sweep": ("fp8",),
}


@dataclasses.dataclass
class Row:
    group: str
    in_dtype: str
    M: int
    N: int
    K: int
    variant: str
    config: str
    ok: bool
    us: float
    cublas_us: float
    tflops: float
    cublas_tflops: float
    b_roofline_us: float  # B read once at the measured HBM bandwidth
    note: str = ""

    @property
    def speedup(self) -> float:
        return self.cublas_us / self.us if self.us == self.us and self.us > 0 else float("nan")

    @property
    def pct_roofline(self) -> float:
        return 100.0 * self.b_roofline_us / self.us if self.us == self.us and self.us > 0 else float("nan")


def parse_variant(text: str) -> dict:
    """``auto`` → {}; ``128x128x256:2,4,1@mma/r80/direct`` → compile keyword arguments (tiles, ``warps``,
    ``path``, ``maxnreg`` from ``/rNN``, ``c_store`` from ``/tma`` or ``/direct``); ``auto/r80`` keeps
    the heuristic's tiles, and ``_`` for a tile (``_x8x1024``) takes that one from the heuristic."""
    kw = {}
    text, *opts = text.split("/")
    names = {"r": "maxnreg", "s": "stages", "b": "max_blocks", "m": "min_blocks", "k": "b_smem", "c": "cluster_k"}
    for o in opts:
        if o == "pdl":
            kw["pdl"] = True
        elif o == "pdlpf":
            kw["pdl"] = "prefetch"
        elif o in ("bcg", "bcs", "bca"):
            kw["b_cache"] = o[1:]
        elif o in ("tma", "direct"):
            kw["c_store"] = o
        elif o == "early":
            kw["streamk"] = "early"
        elif o in ("pf", "nopf"):
            kw["prefill"] = o == "pf"
        elif o == "pp":
            kw["schedule"] = "pingpong"
        elif o == "coop":
            kw["schedule"] = "cooperative"
        elif o[:1] in names and o[1:].isdigit():
            kw[names[o[:1]]] = int(o[1:])
        else:
            opts = "/rNN /sNN /bNN /mNN /kNN /cN /bcg /bcs /pdl /pdlpf /early /pf /nopf /pp /coop /tma /direct"
            raise ValueError(f"unknown variant option /{o} (use {opts})")
    if text in ("auto", "r1"):
        return kw | ({"r1": True} if text == "r1" else {})
    if "@" in text:
        text, kw["path"] = text.split("@", 1)
    if ":" in text:
        text, w = text.split(":", 1)
        kw["warps"] = tuple(int(x) for x in w.split(","))
    tm, tn, tk = (None if x == "_" else int(x) for x in text.lower().split("x"))
    kw.update(tile_m=tm, tile_n=tn, tile_k=tk)
    return kw


def problems(groups, dtypes=None, quick=False) -> list[tuple]:
    """``(group, in_dtype, M, N, K)`` to measure."""
    out = []
    for g in groups:
        dts = dtypes or GROUP_DTYPES[g]
        if g == "seed":
            out += [(g, dt, M, N, K) for dt in dts for M, N, K in SEED]
        elif g == "decode":
            ms = [1, 16] if quick else DECODE_M
            out += [(g, dt, M, N, K) for dt in dts for N, K in DECODE_NK for M in ms]
        elif g == "large":
            shapes = LARGE[:1] if quick else LARGE
            out += [(g, dt, M, N, K) for dt in dts for M, N, K in shapes]
        elif g == "sweep":
            ms = [1, 16, 256, 4096] if quick else SWEEP_M
            out += [(g, dt, M, 4096, 4096) for dt in dts for M in ms]
        else:
            raise ValueError(f"unknown group {g!r} (seed, decode, large, sweep)")
    return out


def hbm_bandwidth() -> float:
    """Measured read bandwidth (bytes/s): a large device-to-device copy, counting bytes read + written."""
    from ..harness import copy_bandwidth

    return copy_bandwidth() * 1e9


def variant_kwargs(variant: str, M: int, N: int) -> dict:
    """The compile keyword arguments of ``variant`` for a problem of ``M`` rows and ``N`` columns (``r1``:
    round 1's default — the mma path with its heuristic tiles up to M = 64, above it the cooperative wgmma
    path on round 1's tile table)."""
    from kernels.gemm.gemm_config import ROUND1_WGMMA_CANDIDATES, wgmma_choice

    kw = parse_variant(variant)
    if kw.pop("r1", False):
        if M <= 64:
            kw["path"] = "mma"
        else:
            tm, tn, schedule = wgmma_choice(M, N, 1, ROUND1_WGMMA_CANDIDATES)
            kw.update(path="wgmma", tile_m=tm, tile_n=tn, schedule=schedule)
    return kw


def measure(group, in_dtype, M, N, K, variant: str, bw: float, iters: int = 50, log=print, cublas=True) -> Row:
    from kernels.gemm.harness import run_gemm

    kw = variant_kwargs(variant, M, N)
    e = 1 if in_dtype in ("fp8", "int8") else 2
    roof = N * K * e / bw * 1e6
    try:
        r = run_gemm(in_dtype, M, N, K, cuda=True, bench=True, graph=True, cublas=cublas, iters=iters, warmup=3,
                     log=log, **kw)  # fmt: skip
    except Exception as ex:  # a variant that does not build for a shape is reported, not fatal
        nan = float("nan")
        msg = f"{type(ex).__name__}: {str(ex).splitlines()[0][:150] if str(ex) else ''}"
        return Row(group, in_dtype, M, N, K, variant, "", False, nan, nan, nan, nan, roof, msg)
    tf = r.flops / (r.us * 1e-6) / 1e12
    ctf = r.flops / (r.cublas_us * 1e-6) / 1e12 if r.cublas_us == r.cublas_us else float("nan")
    note = "" if r.ok else f"WRONG (rel err {r.rel_err:.2e}, guard {'ok' if r.guard_ok else 'WRITTEN'})"
    return Row(group, in_dtype, M, N, K, variant, r.config, r.ok, r.us, r.cublas_us, tf, ctf, roof, note)


def table(rows: list[Row]) -> str:
    lines = [
        "| group | dtype | M x N x K | variant | ok | µs | TFLOP/s | cuBLAS µs | cuBLAS TFLOP/s | speedup "
        "| % B roofline | config / note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r.group} | {r.in_dtype} | {r.M}x{r.N}x{r.K} | {r.variant} | {'yes' if r.ok else 'NO'} | {r.us:.1f} | "
            f"{r.tflops:.1f} | {r.cublas_us:.1f} | {r.cublas_tflops:.1f} | {r.speedup:.2f}x | {r.pct_roofline:.0f} | "
            f"{r.note or r.config} |"
        )
    return "\n".join(lines) + "\n"


def compact(rows: list[Row]) -> str:
    """A short fixed-width table (what a device call's output tail shows)."""
    out = [f"{'group':6s} {'dt':4s} {'MxNxK':18s} {'variant':26s} {'ok':2s} {'us':>8s} {'TF/s':>7s} "
           f"{'cuBLAS':>8s} {'x':>5s} {'%roof':>5s}"]  # fmt: skip
    for r in rows:
        shape = f"{r.M}x{r.N}x{r.K}"
        out.append(
            f"{r.group:6s} {r.in_dtype:4s} {shape:18s} {r.variant[:26]:26s} {'y' if r.ok else 'N':2s} {r.us:8.2f} "
            f"{r.tflops:7.1f} {r.cublas_us:8.1f} {r.speedup:5.2f} {r.pct_roofline:5.0f}"
            + (f"  {r.note[:60]}" if r.note else "")
        )  # fmt: skip
    return "\n".join(out)


def plot_sweep(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted((r for r in rows if r.group == "sweep"), key=lambda r: r.M)
    if not pts:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant in sorted({r.variant for r in pts}):
        vs = [r for r in pts if r.variant == variant]
        ax.plot([r.M for r in vs], [r.tflops for r in vs], "o-", label=f"flydsl ({variant})")
    ax.plot([r.M for r in pts], [r.cublas_tflops for r in pts], "s--", label="cuBLAS (torch._scaled_mm)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M (tokens)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"fp8 GEMM, N = K = 4096, {pts[0].in_dtype}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def write(rows: list[Row], out: Path, meta: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{time.strftime('%Y-%m-%d')}-{meta.get('gpu', 'gpu')}-gemm"
    data = {"meta": meta, "rows": [dataclasses.asdict(r) | {"speedup": r.speedup} for r in rows]}
    stem.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str))
    head = f"# preshuffle GEMM vs cuBLAS, {meta.get('gpu')} (commit {meta.get('commit')})\n\n"
    head += (
        f"HBM bandwidth (measured copy): {meta.get('hbm_gbps', 0):.0f} GB/s. Times: medians of CUDA-graph replays.\n\n"
    )
    stem.with_suffix(".md").write_text(head + table(rows))
    try:
        plot_sweep(rows, stem.with_suffix(".png"))
    except Exception as ex:  # matplotlib missing: the table and JSON still stand
        print(f"[gemm] no plot: {ex}")
    return stem


def run(groups, variants=("auto",), dtypes=None, quick=False, iters=50, out=None, log=print) -> list[Row]:
    """Measure every problem of ``groups`` with each variant (``variants`` a list, or a dict group -> list)."""
    import torch

    from ..harness import _commit, _gpu_name

    bw = hbm_bandwidth()
    log(f"[gemm] HBM (copy) bandwidth {bw / 1e9:.0f} GB/s")
    rows = []
    for group, dt, M, N, K in problems(groups, dtypes, quick):
        for v in variants.get(group, ["auto"]) if isinstance(variants, dict) else variants:
            r = measure(group, dt, M, N, K, v, bw, iters=iters, log=log)
            rows.append(r)
            log(compact([r]).splitlines()[1], flush=True)
            torch.cuda.empty_cache()
    if out is not None:
        meta = {"gpu": _gpu_name(), "commit": _commit(), "hbm_gbps": bw / 1e9, "variants": variants}
        log(f"[gemm] wrote {write(rows, Path(out), meta)}.*")
    return rows


@functools.cache
def _launcher(N, K, in_dtype, M):
    from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm

    return compile_preshuffle_gemm(N=N, K=K, in_dtype=in_dtype, M=M)


def cases(quick: bool):
    """The generic runner's view: one Case per (dtype, shape) of the seed and decode groups."""
    import torch

    from ..harness import Case

    out = []
    for _group, dt, M, N, K in problems(["seed", "decode"], None, quick):

        def make_inputs(M=M, N=N, K=K, dt=dt):
            from kernels.gemm.preshuffle_gemm import shuffle_weight
            from kernels.gemm.reference import make_inputs as mk

            a, b, sa, sb, _ = mk(M, N, K, dt, device="cuda")
            c = torch.empty((M, N), dtype=torch.bfloat16, device="cuda")
            z = torch.zeros(0, device="cuda")
            return a, b, shuffle_weight(b), sa if sa is not None else z, sb if sb is not None else z, c

        def flydsl(inp, M=M, N=N, K=K, dt=dt):
            import flydsl.compiler as flyc

            a, _, bs, sa, sb, c = inp
            fn = _launcher(N, K, dt, M)
            args = (c.view(-1), a.view(-1), bs.view(-1), sa, sb, c[0, :0], M, N)
            compiled = flyc.compile(fn, *args)
            return lambda: compiled(*args)

        def cublas(inp, dt=dt):
            from kernels.gemm.reference import cublas_gemm

            a, b, _, sa, sb, _ = inp
            return cublas_gemm(dt, "bf16", a, b, sa, sb)

        def check(inp, dt=dt):
            from kernels.gemm.reference import reference_gemm, verify_output

            a, b, _, sa, sb, c = inp
            ref = reference_gemm(a, b, sa if dt in ("fp8", "int8") else None, sb if dt in ("fp8", "int8") else None)
            if not verify_output(c.float(), ref):
                raise AssertionError("flydsl's preshuffle GEMM differs from the f32 reference (FlyDSL's rule)")

        e = 1 if dt in ("fp8", "int8") else 2
        nbytes = (M * K + N * K) * e + M * N * 2 + (M + N) * 4
        out.append(Case("gemm", (M, N, K), dt, nbytes, make_inputs, {"flydsl": flydsl, "cuBLAS": cublas},
                        check, flops=2 * M * N * K))  # fmt: skip
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", default="seed,decode,large,sweep")
    ap.add_argument("--dtypes", default=None, help="comma-separated in_dtypes (default: per group)")
    ap.add_argument("--variants", nargs="*", default=["auto"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results"))
    args = ap.parse_args(argv)
    rows = run(args.groups.split(","), args.variants, args.dtypes.split(",") if args.dtypes else None, args.quick,
               args.iters, args.out)  # fmt: skip
    print(compact(rows))
    return 1 if any(r.note.startswith("WRONG") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())

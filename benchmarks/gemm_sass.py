"""Registers, spills and loads in flight of GEMM configurations, offline (ptxas + cuobjdump, no GPU):

    PYTHONPATH=. python -m benchmarks.gemm_sass "4096x4096;16;auto" "4096x4096;1;auto;b" ...

Each argument is ``NxK;M;variant[;probe]`` (fp8; the variant syntax of :mod:`benchmarks.cases.preshuffle_gemm`,
the probes of :mod:`kernels.gemm.gemm_mma_sync`). Prints what ptxas reports (registers, spill bytes), the
LDG.128 count, how many of them a thread issues before the first instruction that reads a register one of them
loads (its loads in flight at the start), and the count of mma instructions (HMMA/QGMMA). cuobjdump: ``$CUOBJDUMP``,
else the one of the ``nvidia-cuda-*`` wheel next to the interpreter, else on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.update(COMPILE_ONLY="1", FLYDSL_RUNTIME_ENABLE_CACHE="0")
os.environ.setdefault("ARCH", "sm_90a")

INSTR = re.compile(r"\s+/\*[0-9a-f]{4}\*/\s+(.*?)\s*;")


def _cuobjdump() -> str:
    if os.environ.get("CUOBJDUMP"):
        return os.environ["CUOBJDUMP"]
    for p in Path(sys.prefix).glob("lib/python*/site-packages/nvidia/cu*/bin/cuobjdump"):
        return str(p)
    return shutil.which("cuobjdump") or "cuobjdump"


def loads_before_first_use(sass: str) -> int:
    """LDG.128 instructions issued before the first instruction that reads a register one of them writes."""
    pending, count = set(), 0
    for text in INSTR.findall(sass):
        body = re.sub(r"^@!?U?P\w+\s+", "", text)
        op, _, rest = body.partition(" ")
        args = [a.strip() for a in rest.split(",")]
        reads = args if op.startswith(("STG", "STS", "ST.")) else args[1:]
        if pending & {int(x) for a in reads for x in re.findall(r"\bR(\d+)", a)}:
            break
        if op.startswith("LDG") and ".128" in op:
            d = int(re.match(r"R(\d+)", args[0]).group(1))
            pending |= set(range(d, d + 4))
            count += 1
    return count


def ptx_of(N: int, K: int, M: int, variant: str, probe: str | None = None) -> tuple[str, str]:
    """``(ptx, configuration)`` of ``variant`` (fp8) for an ``M x N x K`` problem, traced without a GPU."""
    import numpy as np

    from benchmarks.cases.preshuffle_gemm import variant_kwargs
    from kernels.gemm.gemm_mma_sync import build_mma_sync_gemm
    from kernels.gemm.gemm_stream import build_stream_gemm
    from kernels.gemm.preshuffle_gemm import compile_preshuffle_gemm
    from kernels.gemm.reference import numpy_dtype

    fn = compile_preshuffle_gemm(N=N, K=K, in_dtype="fp8", M=M, **variant_kwargs(variant, M, N))
    cfg = fn.gemm_config
    if probe:
        fn = build_stream_gemm(cfg, probe=probe) if cfg.path == "stream" else build_mma_sync_gemm(cfg, probe)
    c = np.zeros((M, N), numpy_dtype("bf16"))
    z = np.zeros(N, np.float32)
    fn(c, np.zeros((M, K), np.int8), np.zeros((N, K), np.int8), z[:M], z, c[0, :0], M, N)
    return fn._last[1].artifact.ptx, cfg.describe()


def stats(N: int, K: int, M: int, variant: str, probe: str | None = None) -> dict:
    ptx, desc = ptx_of(N, K, M, variant, probe)
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        Path(src).write_text(ptx)
        r = subprocess.run([shutil.which("ptxas") or "ptxas", "-arch=sm_90a", "-v", src, "-o", cubin],
                           capture_output=True, text=True)  # fmt: skip
        sass = subprocess.run([_cuobjdump(), "--dump-sass", cubin], capture_output=True, text=True).stdout
    txt = r.stdout + r.stderr
    ops = [re.sub(r"^@!?U?P\w+\s+", "", t).split(" ")[0] for t in INSTR.findall(sass)]
    return {
        "regs": int(re.search(r"Used (\d+) registers", txt).group(1)),
        "spill": int(re.search(r"(\d+) bytes spill stores", txt).group(1)),
        "ldg128": sum(o.startswith("LDG") and ".128" in o for o in ops),
        "in_flight": loads_before_first_use(sass),
        "mma": sum(o.startswith(("HMMA", "QGMMA", "IMMA", "HGMMA")) for o in ops),
        "config": desc,
    }


def main(argv=None) -> int:
    for spec in argv if argv is not None else sys.argv[1:]:
        nk, m, v, *p = spec.split(";")
        n, k = (int(x) for x in nk.split("x"))
        try:
            s = stats(n, k, int(m), v, p[0] if p else None)
        except Exception as ex:  # reported, the next one still runs
            print(f"{spec}: FAILED {type(ex).__name__}: {str(ex)[:200]}")
            continue
        probe = p[0] if p else "-"
        print(
            f"{nk:10s} M={m:>3s} {v:30s} {probe:5s} regs={s['regs']:3d} spill={s['spill']} "
            f"ldg128={s['ldg128']:3d} in-flight={s['in_flight']:3d} mma={s['mma']:3d}  {s['config'][:70]}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

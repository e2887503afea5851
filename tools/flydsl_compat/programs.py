"""One FlyDSL program run in its own process, and what the compatibility matrix knows about each.

A program is an example script (``examples/*.py``) or a pytest file. :func:`run_program` runs it with
FlyDSL's checkout first on ``PYTHONPATH`` (their ``kernels``/``tests`` packages) and this repository
after it (our ``flydsl``), and reads the outcome from pytest's JUnit XML or the script's exit code.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

SHIM = Path(__file__).resolve().parent / "cpu_shim"

#: FlyDSL kernel tests that use no AMD-only instruction (the issue's portable set).
PORTABLE_KERNEL_TESTS = ("test_softmax.py", "test_rmsnorm.py", "test_layernorm.py", "test_vec_add.py")

#: On the interpreter: FlyDSL's own shape overrides of its norm tests (their smaller documented shapes;
#: the default 32768x8192 is a GPU benchmark size) and event timing instead of torch.profiler.
_SMALL = "64,256,f32;32,128,f16;64,2000,f32;16,512,bf16"
CPU_SETTINGS = {
    "ROCDSL_SOFTMAX_SHAPES": _SMALL,
    "ROCDSL_RMSNORM_SHAPES": _SMALL,
    "ROCDSL_LAYERNORM_SHAPES": _SMALL,
    "FLYDSL_PERFTEST_USE_EVENTS": "1",
}

#: Programs whose subject is an AMD-only instruction or FlyDSL's native tooling, with the reason.
#: They still run; the headline rate leaves them out. Each entry was read, not guessed.
NOT_PORTABLE: dict[str, str] = {
    "examples/03-tiledMma.py": "AMD MFMA matrix-core atoms (rocdl.MFMA)",
    "examples/04-preshuffle_gemm.py": "AMD MFMA preshuffle GEMM (rocdl.MFMA, LDS scheduling hints)",
    "tests/unit/test_cluster_launch_gfx1250.py": "gfx1250 workgroup-cluster launch",
    "tests/unit/test_cluster_mcast_gemm_gfx1250.py": "gfx1250 WMMA + TDM multicast",
    "tests/unit/test_gfx1250_atoms.py": "gfx1250 WMMA/TDM atoms (fly_rocdl)",
    "tests/unit/test_tdm_mcast_add_gfx1250.py": "gfx1250 tensor data mover (tdm_ops)",
    "tests/unit/test_async_object_vs_deps.py": "FlyDSL's native fly-opt tool",
    "tests/unit/test_fly_opt_tooling.py": "FlyDSL's native fly-opt tool",
    "tests/unit/test_expr_optional_rocdl.py": "FlyDSL's native build (build-fly python packages)",
    "tests/unit/test_external_llvm_codegen.py": "FlyDSL's ROCm external-LLVM pipeline (RocmBackend, mlir-opt)",
    "tests/unit/test_extern_runtime_integration.py": "FlyDSL's MLIR ExecutionEngine C-interface packing",
    "tests/unit/test_device_runtime.py": "FlyDSL's ROCm compile/runtime backend registry ('rocm' pairing)",
    "tests/unit/test_compile_backends.py": "FlyDSL's ROCm compile-backend registry (default backend 'rocm')",
}

#: Single tests of otherwise portable programs whose subject is AMD-only (they assert on AMD's
#: code-object metadata or AMD buffer-copy atoms in the IR), with the reason. The runner deselects them
#: (pytest ``--deselect``) and the table says how many; each entry was read, not guessed.
NOT_PORTABLE_TESTS: dict[str, str] = {
    "tests/unit/test_kernel_known_block_size.py::TestKnownBlockSize::test_compiled_ir_has_max_flat_workgroup_size": (
        "reads max_flat_workgroup_size from the AMD HSA code object's msgpack metadata in the compiled binary"
    ),
    "tests/kernels/test_rmsnorm.py::test_rmsnorm_bwd_mixed_weight_keeps_vector_io": (
        "counts CDNA3 buffer-copy atoms (!fly_rocdl.cdna3.buffer_copy<128>) in the traced IR"
    ),
    "tests/unit/test_compile_hints.py::TestCompileHintsPropagation::test_fp_math_reaches_pipeline": (
        "patches the ROCm backend's pipeline_fragments (flydsl.compiler.backends.rocm.RocmBackend) and checks "
        "that fast_fp_math/unsafe_fp_math reach rocdl-attach-target"
    ),
}


def deselected_tests(program: str) -> list[str]:
    """The AMD-only tests of ``program`` (pytest node ids relative to the checkout) that the runner leaves
    out."""
    return [t for t in NOT_PORTABLE_TESTS if t.split("::", 1)[0] == program]


def _pytest_rootdir(src: Path, program: str) -> Path:
    """The directory pytest takes as rootdir for ``program`` (the first one up from it with a pytest
    configuration); node ids, and so ``--deselect``, are relative to it."""
    d = (src / program).parent
    while True:
        if (d / "pytest.ini").is_file():
            return d
        pp = d / "pyproject.toml"
        if pp.is_file() and "[tool.pytest.ini_options]" in pp.read_text(errors="replace"):
            return d
        if d == src or d.parent == d:
            return src
        d = d.parent


@dataclass
class Result:
    """The outcome of one program: status PASS/FAIL/ERROR/SKIP/TIMEOUT and the test counts."""

    program: str
    status: str = "ERROR"
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0
    note: str = ""
    deselected: int = 0


def _env(src: Path, repo: Path, device: str) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(src), str(repo)]
    if device == "cpu":
        paths.insert(0, str(SHIM))
        env["FLYDSL_RUNTIME_KIND"] = "cpu"
        for name, value in CPU_SETTINGS.items():
            env.setdefault(name, value)
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):  # the exception line, not the traceback's last frame
        if "Error" in ln or "error" in ln or "Exception" in ln:
            return ln
    return lines[-1] if lines else ""


def _from_junit(r: Result, xml_path: Path, out: str) -> None:
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        r.status, r.note = "ERROR", _last_line(out)
        return
    first = ""
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        if "failure" in kinds or "error" in kinds:
            el = case.find("failure") if "failure" in kinds else case.find("error")
            if "failure" in kinds:
                r.failed += 1
            else:
                r.errors += 1
            if not first:
                msg = (el.get("message") or "").strip()
                if not msg or msg == "collection failure":  # the traceback's exception line says more
                    msg = _last_line(el.text or "")
                first = f"{case.get('name')}: {msg.splitlines()[0] if msg else ''}"
        elif "skipped" in kinds:
            r.skipped += 1
            if not first:
                el = case.find("skipped")
                first = "skip: " + (el.get("message") or "")
        else:
            r.passed += 1
    if r.failed or r.errors:
        r.status = "FAIL" if r.passed else "ERROR"
    elif r.passed:
        r.status = "PASS"
    else:
        r.status = "SKIP"
    r.note = first


def run_program(program: str, *, src: Path, repo: Path, device: str, timeout: float, python: str) -> Result:
    """Run one program and classify it."""
    r = Result(program)
    env = _env(src, repo, device)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        if program.startswith("examples/"):
            cmd = [python, program]
        else:
            # NOTE: FlyDSL's scripts/run_tests.sh deselects large_shape unless RUN_TESTS_FULL=1; so do we
            marks = [] if os.environ.get("RUN_TESTS_FULL") == "1" else ["-m", "not large_shape"]
            skip = deselected_tests(program)
            r.deselected = len(skip)
            root = os.path.relpath(_pytest_rootdir(src, program), src)
            marks += [
                a
                for t in skip
                for a in ("--deselect", os.path.relpath(t.split("::", 1)[0], root) + "::" + t.split("::", 1)[1])
            ]
            cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *marks, program, f"--junitxml={xml}"]
        try:
            p = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            r.status, r.seconds, r.note = "TIMEOUT", time.time() - t0, f"over {timeout:.0f}s"
            return r
        r.seconds = time.time() - t0
        out = p.stdout + p.stderr
        if program.startswith("examples/"):
            _from_script(r, p, out)
        else:
            _from_junit(r, xml, out)
            if r.status == "SKIP" and not r.skipped and _is_script(src / program):
                # a test file without tests that is a script (FlyDSL's benchmarks): run it as one
                try:
                    p = subprocess.run([python, program], cwd=src, env=env, capture_output=True, text=True,
                                       timeout=max(1.0, timeout - r.seconds))  # fmt: skip
                except subprocess.TimeoutExpired:
                    r.status, r.seconds, r.note = "TIMEOUT", time.time() - t0, f"over {timeout:.0f}s (as a script)"
                    return r
                r.seconds = time.time() - t0
                _from_script(r, p, p.stdout + p.stderr)
                r.note = f"(no tests: ran as a script) {r.note}"
    return r


def _from_script(r: Result, p: subprocess.CompletedProcess, out: str) -> None:
    """A script passes when it exits 0 and prints no line starting with ``FAIL``."""
    failed = p.returncode != 0 or any(ln.strip().startswith("FAIL") for ln in p.stdout.splitlines())
    r.status = "FAIL" if failed else "PASS"
    r.passed, r.failed = (0, 1) if failed else (1, 0)
    r.note = _last_line(out) if failed else ""


def _is_script(path: Path) -> bool:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    return 'if __name__ == "__main__":' in text or "if __name__ == '__main__':" in text

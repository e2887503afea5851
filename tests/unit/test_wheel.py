"""The wheel as users get it: built from the repository, installed into a fresh virtual environment that
cannot see the source tree, it ships ``flydsl`` only (no top-level ``kernels``) and runs a kernel.

The wheel is built once per test session (shared by xdist workers through a lock); the virtual
environment reuses the already-installed dependencies (a ``.pth`` entry to this interpreter's
site-packages) and installs the wheel with ``--no-deps``, so nothing is downloaded.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _setuptools_builds_wheels() -> bool:
    """setuptools >= 70.1 has ``bdist_wheel`` built in (older ones need the ``wheel`` package)."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


pytestmark = pytest.mark.skipif(
    not _setuptools_builds_wheels(),
    reason="building the wheel needs setuptools>=70.1 (in the 'test' extra: pip install -e '.[test]')",
)


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLYDSL_", "PYTHON")) and k != "COMPILE_ONLY"}
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> str:
    """The path of the wheel built from this checkout (built once per session)."""
    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every xdist worker of this run
    out = shared / "flydsl-wheel"
    out.mkdir(exist_ok=True)
    with open(shared / "flydsl-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted(out.glob("*.whl"))
        if not found:
            # from a copy: setuptools writes build/ and *.egg-info next to the sources, and a stale build/
            # of an older layout must not leak into the wheel
            src = shared / "flydsl-src"
            ignore = shutil.ignore_patterns(
                ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
            )
            shutil.copytree(ROOT, src, ignore=ignore, dirs_exist_ok=True)
            cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out)]
            p = subprocess.run([*cmd, str(src)], env=_clean_env(), capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
            found = sorted(out.glob("*.whl"))
    assert len(found) == 1, found
    return str(found[0])


def test_the_wheel_ships_flydsl_only(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"flydsl"}, sorted(tops)
    assert len(dist_info) == 1
    assert not any(n.startswith("kernels/") or "/tests/" in n for n in names)
    assert "flydsl/compiler/jit.py" in names and "flydsl/interp/kernel.py" in names
    meta = zipfile.ZipFile(wheel).read(f"{dist_info.pop()}/METADATA").decode()
    for extra in ("cuda", "torch", "test"):
        assert f"Provides-Extra: {extra}" in meta


KERNEL = """
import json, sys
import numpy as np
import flydsl
import flydsl.compiler as flyc
import flydsl.expr as fx

@flyc.kernel
def axpy(x: fx.Tensor, y: fx.Tensor, a: fx.Float32, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        y[i] = a * x[i] + y[i]

@flyc.jit
def launch(x, y, a: fx.Float32, n: fx.Int32):
    axpy(x, y, a, n).launch(grid=((n + 63) // 64, 1, 1), block=(64, 1, 1))

n = 200
x = np.arange(n, dtype=np.float32)
y = np.ones(n, np.float32)
launch(x, y, 2.0, n)
try:
    import kernels  # noqa: F401
    has_kernels = True
except ImportError:
    has_kernels = False
print(json.dumps({"ok": bool(np.array_equal(y, 2 * x + 1)), "flydsl": flydsl.__file__, "kernels": has_kernels}))
"""


def test_the_installed_wheel_runs_a_kernel_outside_the_repository(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # the dependencies already installed here (numpy, llvmlite, ml_dtypes): a path entry, not a site dir,
    # so this environment's own .pth files (an editable flydsl) stay out
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    with open(os.path.join(site, "_flydsl_test_deps.pth"), "w") as f:
        f.write("\n".join(sorted(deps)) + "\n")
    p = subprocess.run(
        [sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index", "-q", wheel],
        env=_clean_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

    work = tmp_path / "elsewhere"  # a folder outside the repository, as a user's project
    work.mkdir()
    (work / "axpy.py").write_text(textwrap.dedent(KERNEL))
    env = _clean_env(FLYDSL_RUNTIME_KIND="cpu", FLYDSL_RUNTIME_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([py, "-I", "axpy.py"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["ok"]
    assert r["flydsl"].startswith(site) and not r["flydsl"].startswith(ROOT)  # the installed copy
    assert r["kernels"] is False  # no top-level `kernels` next to flydsl

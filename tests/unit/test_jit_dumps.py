"""FLYDSL_DUMP_IR writes one numbered file per stage under FLYDSL_DUMP_DIR/<kernel name>/ and announces
each; the debug print switches print the same IR."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401

pytestmark = pytest.mark.usefixtures("cpu_device")


@flyc.kernel
def axpy(x: Tensor, y: Tensor, alpha: fx.Float32):
    i = fx.thread_idx.x
    y[i] = alpha * x[i] + y[i]


@flyc.jit
def launch_axpy(x, y, alpha: fx.Float32):
    axpy(x, y, alpha).launch(grid=1, block=8)


def test_dump_files_and_messages(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    launch_axpy(x, y, 2.0)
    np.testing.assert_array_equal(y, 2 * np.arange(8, dtype=np.float32) + 1)
    folder = tmp_path / "dump" / "axpy_0"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "00_origin.mlir",
        "01_canonicalize.mlir",
        "02_cse.mlir",
        "03_dce.mlir",
        "04_llvm_ir.ll",
        "05_final_isa.ptx",
    ]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"[flydsl.compile] FLYDSL_DUMP_IR=1 dir={folder}"
    assert out[1:] == [f"[flydsl.compile] dump {n.split('.')[0]} -> {folder / n}" for n in names]
    origin = (folder / "00_origin.mlir").read_text()
    assert f'loc("{__file__}":' in origin and "gpu.func @axpy_0" in origin and "func.func @launch_axpy" in origin
    assert "arith.mulf" in (folder / "03_dce.mlir").read_text()
    assert "define" in (folder / "04_llvm_ir.ll").read_text()
    ptx = (folder / "05_final_isa.ptx").read_text()
    assert ".entry axpy_0" in ptx and ".target sm_90a" in ptx


def test_dump_folder_is_the_jit_name_with_several_kernels(tmp_path, monkeypatch, capsys):
    @flyc.jit
    def two(x, y, alpha: fx.Float32):
        axpy(x, y, alpha).launch(grid=1, block=8)
        axpy(x, y, alpha).launch(grid=1, block=4)

    monkeypatch.setenv("FLYDSL_DUMP_IR", "1")
    two(np.zeros(8, np.float32), np.zeros(8, np.float32), 1.0)
    assert (tmp_path / "dump" / "two" / "00_origin.mlir").exists()


def test_print_origin_and_after_all(monkeypatch, capsys):
    monkeypatch.setenv("FLYDSL_DEBUG_PRINT_ORIGIN_IR", "1")
    monkeypatch.setenv("FLYDSL_DEBUG_PRINT_AFTER_ALL", "1")

    @flyc.jit
    def again(x, y, alpha: fx.Float32):
        axpy(x, y, alpha).launch(grid=1, block=8)

    again(np.zeros(8, np.float32), np.zeros(8, np.float32), 1.0)
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if line.startswith("// -----")]
    assert heads == [
        "// ----- origin IR -----",
        "// ----- IR after canonicalize -----",
        "// ----- IR after cse -----",
        "// ----- IR after dce -----",
    ]

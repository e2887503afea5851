"""FlyDSL's process-wide LLVM option setters (``flydsl._mlir._mlir_libs._mlirDialectsFly.set_llvm_option_*``):
each returns the previous value, checks the option against LLVM, and really reaches the code generator
of later jit compilations (docs/compiler.md, ``llvm_options``)."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl._mlir._mlir_libs import _mlirDialectsFly as fly_ext
from flydsl._mlir.dialects import fly
from flydsl.compiler import llvm_options as lo

pytestmark = pytest.mark.usefixtures("cpu_device")


@pytest.fixture(autouse=True)
def _no_process_options():
    """Every test starts and ends with no process-wide option set."""
    for name in lo.process_options():
        lo.set_llvm_option(name, None, "str")
    yield
    for name in list(lo.process_options()):
        lo.set_llvm_option(name, None, "str")
    assert lo.process_options() == {}


def test_setters_return_the_previous_value_and_restore_to_nothing():
    assert fly.set_llvm_option_bool is fly_ext.set_llvm_option_bool  # the dialect module re-exports them
    assert fly_ext.set_llvm_option_bool("enable-post-misched", False) is True  # LLVM's declared initial value
    assert lo.process_options() == {"enable-post-misched": False}
    assert fly_ext.set_llvm_option_bool("enable-post-misched", True) is False
    assert lo.process_options() == {}  # back to the initial value: nothing is passed to LLVM any more
    assert fly_ext.set_llvm_option_int("unroll-threshold", 50) is None  # untouched, not readable: None
    assert fly_ext.set_llvm_option_int("unroll-threshold", 80) == 50
    assert fly_ext.set_llvm_option_int("unroll-threshold", None) == 80
    assert fly_ext.set_llvm_option_str("debug-pass", "Structure") is None  # a named-value option takes a str
    assert fly_ext.set_llvm_option_str("debug-pass", None) == "Structure"


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: fly_ext.set_llvm_option_bool("no-such-option-xyz", True), RuntimeError, "Unknown LLVM option"),
        (lambda: fly_ext.set_llvm_option_bool("unroll-threshold", True), RuntimeError, "not a bool option"),
        (lambda: fly_ext.set_llvm_option_int("enable-post-misched", 1), RuntimeError, "not a int option"),
        (lambda: fly_ext.set_llvm_option_str("opt-bisect-limit", "3"), RuntimeError, "not a str option"),
        (lambda: fly_ext.set_llvm_option_int("unroll-threshold", -5), RuntimeError, "invalid for uint argument"),
        (lambda: fly_ext.set_llvm_option_str("debug-pass", "Nonsense"), RuntimeError, "Cannot find option"),
        (lambda: fly_ext.set_llvm_option_str("stop-after", "nvptx-isel"), RuntimeError, "refused by flydsl"),
        (lambda: fly_ext.set_llvm_option_bool("nvptx-short-ptr", True), RuntimeError, "pointer width"),
        (lambda: fly_ext.set_llvm_option_bool("enable-post-misched", 0), TypeError, "takes a bool"),
    ],
)
def test_a_bad_option_or_value_is_refused_never_passed_on(call, error, match):
    with pytest.raises(error, match=match):
        call()
    assert lo.process_options() == {}


@flyc.kernel
def scale16(out: Tensor):
    for i in range(16):
        out[i] = out[i] * 3 + i


@flyc.jit
def launch16(out):
    scale16(out).launch(grid=1, block=1)


def _ptx_of_last_compile(monkeypatch) -> str:
    """COMPILE_ONLY: compile ``launch16`` (PTX, no launch) and return the PTX of the code that ran."""
    monkeypatch.setenv("COMPILE_ONLY", "1")
    launch16(np.zeros(16, np.int32))
    options = lo.process_options()
    if not options:
        return launch16._last_compiled[1].ptx
    # the process-wide options are hints below every block: the call went to the copy compiled under them
    jf = next(j for j in launch16._hint_copies.values() if j.compile_hints.get("llvm_options") == options)
    return jf._last_compiled[1].ptx


def test_a_process_wide_option_reaches_later_compilations_and_their_cache_key(monkeypatch):
    plain = _ptx_of_last_compile(monkeypatch)
    assert plain.count("st.global") == 16  # fully unrolled at O3
    fly_ext.set_llvm_option_int("unroll-full-max-count", 0)
    limited = _ptx_of_last_compile(monkeypatch)  # compiled again: the option is part of the key
    assert limited.count("st.global") < 16 and "bra" in limited  # LLVM got the option
    fly_ext.set_llvm_option_int("unroll-full-max-count", None)
    assert _ptx_of_last_compile(monkeypatch) == plain


def test_inside_an_llvm_options_block_the_setters_set_the_block(monkeypatch):
    with lo.llvm_options({"enable-post-misched": False}):
        assert fly_ext.set_llvm_option_bool("enable-post-misched", False) is False  # the block's value
        assert fly_ext.set_llvm_option_bool("lsr-drop-solution", True) is False
        assert lo.current_options() == {"enable-post-misched": False, "lsr-drop-solution": True}
        assert lo.process_options() == {}
    assert lo.current_options() == {}
    fly_ext.set_llvm_option_bool("lsr-drop-solution", True)  # outside: process-wide, seen by new blocks
    with lo.llvm_options({"enable-post-misched": False}):
        assert lo.current_options() == {"lsr-drop-solution": True, "enable-post-misched": False}
    assert lo.current_options() == {"lsr-drop-solution": True}

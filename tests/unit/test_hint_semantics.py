"""Compile hints are honoured or rejected, never silently ignored (docs/compiler.md, docs/reliability.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from compiler_util import Tensor, cpu_device, flyc, fx  # noqa: F401

from flydsl.codegen import CodegenError, Target, compile_module
from flydsl.codegen.llvm_options import normalize
from flydsl.compiler import FlyDSLError
from flydsl.compiler.pipeline import run_passes

pytestmark = pytest.mark.usefixtures("cpu_device")


@flyc.kernel
def scale16(out: Tensor):
    for i in range(16):
        out[i] = out[i] * 3 + i


def make_launcher():
    @flyc.jit
    def launch(out):
        scale16(out).launch(grid=1, block=1)

    return launch


def ptx_of(options) -> str:
    module = make_launcher().trace(np.zeros(16, np.int32))
    run_passes(module, None)
    return compile_module(module, Target(llvm_options=normalize(options) if options else ())).ptx


def test_llvm_options_change_the_code_for_that_compilation_only():
    plain = ptx_of(None)
    assert plain.count("st.global") == 16  # fully unrolled at O3
    limited = ptx_of({"unroll-full-max-count": 0})
    assert limited.count("st.global") < 16 and "bra" in limited  # the option reached LLVM
    assert ptx_of(None) == plain  # and did not stay set for the next compilation


def test_flydsl_style_llvm_options_are_accepted_and_keyed():
    launch = make_launcher()
    out = np.zeros(16, np.int32)
    launch(out)
    launch.compile_hints["llvm_options"] = {"enable-post-misched": False, "lsr-drop-solution": True}
    launch(out)
    assert launch.cache_info().misses == 2  # part of the key
    assert out.tolist() == [4 * i for i in range(16)]  # (3i + i after i)


@pytest.mark.parametrize(
    "options, why",
    [
        ({"no-such-llvm-option": True}, "'no-such-llvm-option' is not an option of this LLVM"),
        ({"unroll-threshold": "many"}, "'unroll-threshold=many': LLVM says: for the --unroll-threshold option"),
        ({"enable-post-misched": 1.5}, "'enable-post-misched' must be a bool, int or str"),
        (["enable-post-misched"], "llvm_options must be a dict"),
    ],
)
def test_bad_llvm_options_are_rejected_on_every_device(options, why):
    launch = make_launcher()
    launch.compile_hints["llvm_options"] = options
    with pytest.raises(FlyDSLError) as ei:
        launch(np.zeros(16, np.int32))  # the CPU interpreter: LLVM is not even used, still checked
    e = ei.value
    assert e.diag_id == "FLY224" and why in e.message and e.loc[0] == __file__


def test_codegen_rejects_bad_options_itself():
    with pytest.raises(CodegenError, match="'no-such-llvm-option' is not an option"):
        ptx_of({"no-such-llvm-option": 1})


def test_unknown_hint_is_rejected_with_a_suggestion():
    launch = make_launcher()
    launch.compile_hints["FAST_FP_MATH"] = True
    with pytest.raises(FlyDSLError) as ei:
        launch(np.zeros(16, np.int32))
    assert ei.value.diag_id == "FLY224" and "did you mean 'fast_fp_math'" in ei.value.message


def test_amd_only_hint_warns_once_where_it_has_no_effect():
    from flydsl.compiler import hints

    hints._WARNED.discard("waves_per_eu")
    launch = make_launcher()
    launch.compile_hints["waves_per_eu"] = 2
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        launch(np.zeros(16, np.int32))
        launch.compile_hints["waves_per_eu"] = 1
        launch(np.zeros(16, np.int32))
    msgs = [str(w.message) for w in seen if "waves_per_eu" in str(w.message)]
    assert len(msgs) == 1 and "no effect" in msgs[0] and seen[0].filename == __file__

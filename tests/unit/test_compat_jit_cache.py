"""FlyDSL's rule for a compile-time value that changes (FLY229, or re-trace when opted in), method launchers
keyed with their class's kernels, and FlyDSL's cache-manager names over the jit's own structures
(docs/compatibility.md, docs/compiler.md "Caches")."""

from __future__ import annotations

import importlib.util
import textwrap
import threading

import numpy as np
import pytest
from compiler_util import cpu_device, flyc, fx  # noqa: F401

from flydsl.compiler import DSLTypeError, GlobalChangedError, jit_function
from flydsl.compiler.cache import DiskCache

pytestmark = pytest.mark.usefixtures("cpu_device")


def _load(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SCALED = """
    import flydsl.compiler as flyc
    import flydsl.expr as fx

    SCALE = 2

    @flyc.kernel
    def k(out: fx.Tensor):
        out[0] = SCALE

    @flyc.jit
    def launch(out: fx.Tensor):
        k(out).launch(grid=1, block=1)
        return out
"""


def test_changed_global_is_fly229_and_equal_rebinding_is_not(tmp_path):
    m = _load(tmp_path, "drift_a", SCALED)
    out = np.zeros(1, np.int32)
    m.launch(out)  # returning its own argument is accepted (FlyDSL drops a launcher's return value)
    assert out[0] == 2
    m.SCALE = int("2")  # another object, the same value: no change
    m.launch(out)
    m.SCALE = 5
    with pytest.raises(GlobalChangedError) as ei:
        m.launch(out)
    e = ei.value
    assert isinstance(e, RuntimeError) and e.diag_id == "FLY229"
    assert "global 'SCALE' of module 'drift_a'" in e.message and "2 -> 5" in e.message
    assert e.loc[0].endswith("drift_a.py") and "out[0] = SCALE" in str(e)
    m.launch.clear_cache()  # the documented fix for a deliberate change: compile with the new value
    m.launch(out)
    assert out[0] == 5


def test_opt_in_retrace_compiles_with_the_new_value(tmp_path, monkeypatch):
    monkeypatch.setenv("FLYDSL_JIT_RETRACE_ON_GLOBAL_CHANGE", "1")
    m = _load(tmp_path, "drift_b", SCALED)
    out = np.zeros(1, np.int32)
    m.launch(out)
    key = m.launch.cache_key(out)
    m.SCALE = 7
    m.launch(out)
    assert out[0] == 7 and m.launch.cache_key(out) != key and m.launch.compiles == 2


def test_changed_closure_variable_is_fly229():
    box = [3]

    @flyc.kernel
    def k(out: fx.Tensor):
        out[0] = box[0]

    @flyc.jit
    def launch(out):
        k(out).launch(grid=1, block=1)

    out = np.zeros(1, np.int32)
    launch(out)
    box[0] = 4
    with pytest.raises(GlobalChangedError, match=r"closure variable 'box' of .*<locals>\.k is read .*: \[3\] -> \[4\]"):
        launch(out)


def test_a_computed_return_value_is_still_fly211():
    @flyc.jit
    def launch(out: fx.Tensor):
        return out.shape[0] * 2

    with pytest.raises(DSLTypeError, match="FLY211"):
        launch(np.zeros(2, np.int32))


METHODS = """
    import flydsl.compiler as flyc
    import flydsl.expr as fx

    class Program:
        @flyc.kernel
        def kernel(self, out: fx.Tensor):
            out[0] = BODY

        @flyc.jit
        def run(self, out: fx.Tensor):
            self.kernel(out).launch(grid=1, block=1)
"""


def test_method_launcher_keys_the_kernel_methods_of_its_class(tmp_path):
    """The kernel a method launcher reaches through ``self`` is part of its key: a kernel method edited in the
    file is never served from the disk entry of the old one (it used to be: only the launcher was walked)."""
    a = _load(tmp_path, "prog_a", METHODS.replace("BODY", "1"))
    b = _load(tmp_path, "prog_b", METHODS.replace("BODY", "2"))
    out = np.zeros(1, np.int32)
    assert a.Program.run.cache_key(a.Program(), out) != b.Program.run.cache_key(b.Program(), out)
    key_a = jit_function._jit_function_cache_key(a.Program.run.func, owner_cls=a.Program)
    assert key_a != jit_function._jit_function_cache_key(b.Program.run.func, owner_cls=b.Program)
    b.Program().run(out)
    assert out[0] == 2
    key, art = b.Program.run._last_compiled
    assert key[0] == ("_self_type_", b.Program) and "gpu.func @kernel_0" in art.source_ir
    assert b.Program.run.manager_key is None or isinstance(b.Program.run.manager_key, str)
    assert key_a == a.Program.run.deps_hex(a.Program)  # the function behind FlyDSL's name is the jit's own


def test_cache_manager_is_the_disk_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYDSL_RUNTIME_CACHE_DIR", str(tmp_path))
    m = _load(tmp_path, "mgr", SCALED)
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    m.launch._ensure_cache_manager()
    assert m.launch.cache_manager is None and m.launch.manager_key == m.launch.deps_hex()
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "1")
    out = np.zeros(1, np.int32)
    m.launch(out)
    mgr = m.launch.cache_manager
    assert isinstance(mgr, DiskCache) and mgr.manager_key == m.launch.manager_key and mgr.size() == 1
    m.launch.manager_key = None  # forgotten, recomputed to the same digest
    assert m.launch.manager_key is None
    m.launch._ensure_cache_manager()
    assert m.launch.manager_key == mgr.manager_key


def test_call_states_are_the_launchers_built_at_the_first_launch(tmp_path):
    m = _load(tmp_path, "states", SCALED)
    out = np.zeros(1, np.int32)
    m.launch(out)
    states = m.launch._call_state_cache
    assert len(states) == 1 and list(states) == list(m.launch._mem_cache)
    states.clear()
    assert len(m.launch._call_state_cache) == 0 and len(m.launch._mem_cache) == 1
    m.launch(out)  # rebuilt, not recompiled
    assert len(m.launch._call_state_cache) == 1 and m.launch.compiles == 1


def test_drift_check_structures_are_the_ones_the_calls_use(tmp_path):
    m = _load(tmp_path, "structs", SCALED)
    m.launch(np.zeros(1, np.int32))
    refs = m.launch._global_refs_cache[None]
    assert [(n, mod) for n, mod, _ in refs] == [("SCALE", "structs")]
    assert m.launch._used_global_vals[None] == jit_function._snapshot_refs(refs)
    assert m.launch._check_globals_drift() is False
    m.SCALE = 9
    with pytest.raises(GlobalChangedError, match="SCALE"):
        m.launch._check_globals_drift()
    assert m.launch._check_globals_drift(retrace=True) is True


def test_key_walks_leave_nothing_in_progress_and_are_per_thread():
    @flyc.jit
    def solo(out):
        _ = solo  # a self-reference: walked once

    solo.deps_hex()
    assert jit_function._keys_in_progress() == set()
    seen = {}
    t = threading.Thread(target=lambda: seen.setdefault("s", jit_function._keys_in_progress()))
    t.start()
    t.join()
    assert seen["s"] is not jit_function._keys_in_progress()


def test_resetting_the_signature_re_resolves_it(tmp_path):
    m = _load(tmp_path, "resig", METHODS.replace("BODY", "3"))
    run = m.Program.run
    out = np.zeros(1, np.int32)
    m.Program().run(out)
    run._sig = None  # FlyDSL's reset: the next call resolves the signature again
    run._has_self_param = False
    m.Program().run(out)
    assert run._has_self_param and run._sig is not None and out[0] == 3


def test_launch_prints_in_mlir_custom_form_and_round_trips(tmp_path):
    """``gpu.launch_func <%stream : i64> @kernels::@kernel_0 blocks in (...) threads in (...) : i32
    dynamic_shared_memory_size %s args(...)``, as MLIR prints it (FlyDSL's tests grep for it)."""
    from flydsl.ir import parse_module, print_op

    m = _load(tmp_path, "printed", METHODS.replace("BODY", "4"))
    m.Program().run(np.zeros(1, np.int32))
    _, art = m.Program.run._last_compiled
    text = art.source_ir
    assert "gpu.launch_func <%arg2 : i64> @kernels::@kernel_0 blocks in (" in text
    assert ": i32 dynamic_shared_memory_size %" in text and "args(%arg0 : !fly.ptr<i32, global>, %arg1 : i32)" in text
    assert print_op(parse_module(text)).rstrip("\n") == text.rstrip("\n")

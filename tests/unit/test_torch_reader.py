"""The C++ torch tensor reader (runtime/_torch_args.cpp) and the entries that use it: it must accept exactly
what the generated Python guards accept for the inlined specialization, return the same values, and a call
it refuses must still launch what the full path launches. Needs torch and a C++ compiler (the reader is
built against torch's headers; skipped where it cannot be)."""

from __future__ import annotations

import pytest
from compiler_util import Tensor, flyc, fx
from test_jit_fastpath import Driver

import flydsl.runtime.device as device_mod
from flydsl.compiler import fastpath
from flydsl.runtime import torch_args
from flydsl.runtime.extent import torch_view_inside

torch = pytest.importorskip("torch")

I32_MAX = 2**31 - 1


@pytest.fixture(scope="module")
def reader():
    t = torch_args.wait(600)
    if t is None:
        pytest.skip(f"the torch tensor reader is unavailable here: {torch_args.status()}")
    return t


def _python_reads(t, rank, dtype, align, is_cuda, strides_class):
    """What the generated Python guards and key compare accept, and the values they pass on (None: refused)."""
    s, r, p = t.shape, t.stride(), t.data_ptr()
    if len(s) != rank or r[-1] != 1 or any(x > I32_MAX for x in [*s, *r[:-1]]):
        return None
    if not (t._base is None or torch_view_inside(t)):
        return None
    if t.dtype is not dtype or p & 15 != align or t.is_cuda is not is_cuda:
        return None
    if rank > 1 and _or(r[:-1]) & 15 != strides_class:
        return None
    return (p, *s, *r[:-1])


def _or(xs) -> int:
    out = 0
    for x in xs:
        out |= x
    return out


def _cases():
    x = torch.arange(64, dtype=torch.float32).reshape(8, 8)
    big = torch.ones(1).expand(2**31)  # a dim past 32 bits (stride 0: no memory behind it)
    t = torch.arange(10, dtype=torch.float32)
    outside = t.as_strided((4,), (1,), 0)
    t.untyped_storage().resize_(8)  # the view now reaches past the storage torch keeps
    return [
        ("contiguous 1-D", torch.ones(100), 1),
        ("contiguous 2-D", x, 2),
        ("a row slice (a view inside)", x[2:5], 2),
        ("a column slice (rows strided)", x[:, 2:6], 2),
        ("transposed", x.t(), 2),
        ("every other element", torch.ones(16)[::2], 1),
        ("offset by one element", torch.ones(16)[1:], 1),
        ("float64", torch.ones(8, dtype=torch.float64), 1),
        ("rank 2 for a rank-1 reader", x, 1),
        ("empty", torch.ones(0), 1),
        ("a dim past 32 bits", big, 1),
        ("a view past its storage", outside, 1),
        ("3-D", torch.ones(2, 3, 4), 3),
        ("a parameter (a tensor subclass)", torch.nn.Parameter(torch.ones(8)), 1),
    ]


@pytest.mark.parametrize("name,t,rank", _cases(), ids=[c[0] for c in _cases()])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("align", [0, 4])
def test_the_reader_accepts_what_the_python_guards_accept(reader, name, t, rank, dtype, align):
    for is_cuda in (False, True):
        for strides_class in (0, 8) if rank > 1 else (-1,):
            r = reader(rank, dtype, align, is_cuda, torch_view_inside, strides_class)
            assert r(t) == _python_reads(t, rank, dtype, align, is_cuda, strides_class), name


def test_the_reader_refuses_what_is_no_tensor_and_bad_construction(reader):
    r = reader(1, torch.float32, 0, False, torch_view_inside)
    assert r(1) is None and r([1.0]) is None and r(None) is None
    with pytest.raises(TypeError, match="one tensor"):
        r()
    with pytest.raises(ValueError, match="rank >= 1"):
        reader(0, torch.float32, 0, False, torch_view_inside)
    with pytest.raises(ValueError, match="torch dtype"):
        reader(1, "float32", 0, False, torch_view_inside)


def test_a_failing_view_check_is_a_refusal(reader):
    def boom(t):
        raise RuntimeError("no storage")

    v = torch.ones(8)[2:]  # a view: the check runs
    assert reader(1, torch.float32, v.data_ptr() & 15, False, boom)(v) is None


# -- the entries --------------------------------------------------------------------------------------


@flyc.kernel
def scale2(x: Tensor, y: Tensor, n: fx.Int32):
    i = fx.block_idx.x * fx.block_dim.x + fx.thread_idx.x
    if i < n:
        y[i] = x[i] * 2.0


@flyc.jit
def run_scale2(x, y, n: fx.Int32):
    scale2(x, y, n).launch(grid=((n + 63) // 64, 1, 1), block=(64, 1, 1))


@pytest.fixture
def driver(monkeypatch):
    run_scale2.clear_cache()
    d = Driver(["ptr", "i32", "i32", "i32"] * 2 + ["i32"])  # x: pointer, 2 dims, the row stride; y alike; n
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    monkeypatch.setenv("FLYDSL_RUNTIME_ENABLE_CACHE", "0")
    monkeypatch.setattr(device_mod, "_DEVICES", {"cuda": device_mod.StandInCudaDevice(d.call)})
    return d


def _expected(x, y, n):
    return [x.data_ptr(), *x.shape, x.stride(0), y.data_ptr(), *y.shape, y.stride(0), n]


def test_the_entry_reads_through_the_reader_and_falls_back_to_python(reader, driver):
    x, y = torch.ones(4, 16), torch.zeros(4, 16)
    run_scale2(x, y, 64)  # the full path: compiles, registers, inlines with readers
    d = run_scale2._dispatch
    assert d.inlined and d.readers and "_f_R0(" in d.source
    hits = run_scale2.hits
    run_scale2(x, y, 64)
    x2, y2 = torch.ones(8, 16), torch.zeros(8, 16)
    run_scale2(x2, y2, 128)
    assert run_scale2.hits == hits + 2
    assert [driver.decoded(i)[4] for i in (-2, -1)] == [_expected(x, y, 64), _expected(x2, y2, 128)]
    assert driver.decoded()[0] == (2, 1, 1)
    # a row slice: a view inside its storage, another pointer -- still the reader's
    run_scale2(x2[4:], y2[4:], 64)
    assert run_scale2.hits == hits + 3 and driver.decoded()[4] == _expected(x2[4:], y2[4:], 64)
    # rows with a stride the reader passes on; a column slice whose alignment class differs: another
    # specialization, through the Python reads and the keyed lookup
    z = torch.ones(4, 20)
    run_scale2(z[:, 1:17], y, 64)
    run_scale2(z[:, 1:17], y, 64)
    assert driver.decoded()[4] == _expected(z[:, 1:17], y, 64)
    run_scale2(x, y, 32)
    assert driver.decoded()[4] == _expected(x, y, 32)


def test_entries_made_before_the_reader_loads_are_made_again(reader, driver, monkeypatch):
    monkeypatch.setattr(fastpath, "_torch_reader_type", lambda: None)  # "still building"
    x, y = torch.ones(2, 8), torch.zeros(2, 8)
    run_scale2(x, y, 16)
    d = run_scale2._dispatch
    assert d.inlined and not d.readers and d.wants_readers
    monkeypatch.undo()
    monkeypatch.setenv("FLYDSL_RUNTIME_KIND", "cuda")
    run_scale2._reinline(d.pattern)  # what the build thread does once the reader is loaded
    assert run_scale2._dispatch.readers and type(run_scale2).__call__ is run_scale2._dispatch.entry
    hits = run_scale2.hits
    run_scale2(x, y, 16)
    assert run_scale2.hits == hits + 1 and driver.decoded()[4] == _expected(x, y, 16)


@pytest.mark.parametrize("var", ["FLYDSL_RUNTIME_TORCH_READER", "FLYDSL_RUNTIME_NATIVE_LAUNCH"])
def test_the_reader_can_be_turned_off(monkeypatch, var):
    monkeypatch.setattr(torch_args, "_STATE", {})
    monkeypatch.setenv(var, "0")
    assert torch_args.reader_type() is None and torch_args.status() == f"off ({var}=0)"


def test_nothing_is_decided_before_torch_is_imported(monkeypatch):
    import sys

    monkeypatch.setattr(torch_args, "_STATE", {})
    monkeypatch.delitem(sys.modules, "torch")
    assert torch_args.reader_type() is None and torch_args.status() == "not started (torch is not imported)"
    assert torch_args._STATE == {}  # asked again once torch is imported

"""Arguments: scalar inference, tensors from numpy/torch/DLPack (dynamic by default, static with
from_torch_tensor/from_dlpack), alignment in the key, fx.Tensor inside kernels, device mismatches."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from compiler_util import Constexpr, Tensor, cpu_device, flyc, fx, traced  # noqa: F401

from flydsl.compiler import DSLValueError, FlyDSLError
from flydsl.compiler.jit import user_error
from flydsl.runtime.args import ArgError, TensorRef, from_dlpack
from flydsl.runtime.cpu import register_tensor

pytestmark = pytest.mark.usefixtures("cpu_device")

try:
    import torch
except ImportError:  # torch is optional: the torch-specific tests skip, numpy covers the rest
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (optional dependency)")


@flyc.kernel
def record(out: Tensor, x):
    out[0] = 1


@flyc.jit
def host_sig(out, x):
    record(out, x).launch(grid=1, block=1)


@pytest.mark.parametrize(
    "value,ir",
    [(3, "i32"), (2**40, "i64"), (1.5, "f32"), (True, "i1"), (fx.Int16(3), "i16"), (np.float64(2.0), "f64")],
)
def test_scalar_arguments_are_inferred_from_the_value(value, ir):
    text = traced(host_sig, np.zeros(1, np.int32), value)
    assert f"func.func @host_sig(%arg0: !fly.ptr<i32, global>, %arg1: i32, %arg2: {ir}, %arg3: i64)" in text


def test_declared_numeric_type_converts_python_values():
    @flyc.jit
    def launch(out, x: fx.Int64):
        record(out, x).launch(grid=1, block=1)

    assert "%arg2: i64" in traced(launch, np.zeros(1, np.int32), 5)


@flyc.kernel
def copy2d(src: Tensor, dst: Tensor):
    i, j = fx.block_idx.x, fx.thread_idx.x
    dst[i, j] = src[i, j]


@flyc.jit
def launch_copy2d(src, dst):
    m, n = src.shape.unpack()
    copy2d(src, dst).launch(grid=m, block=n)


def test_dynamic_layout_by_default_static_on_request():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.zeros_like(a)
    text = traced(launch_copy2d, a, b)
    # pointer, both dims, the non-unit stride
    assert "@launch_copy2d(%arg0: !fly.ptr<f32, global>, %arg1: i32, %arg2: i32, %arg3: i32, %arg4: !fly" in text
    text = traced(launch_copy2d, flyc.from_dlpack(a), flyc.from_dlpack(b))
    assert "@launch_copy2d(%arg0: !fly.ptr<f32, global>, %arg1: !fly.ptr<f32, global>, %arg2: i64)" in text
    text = traced(launch_copy2d, flyc.from_dlpack(a).mark_layout_dynamic(), flyc.from_dlpack(b))
    # an adapted tensor's dynamic stride is 64-bit (FlyDSL's default); use_32bit_stride=True makes it i32
    assert "@launch_copy2d(%arg0: !fly.ptr<f32, global>, %arg1: i32, %arg2: i32, %arg3: i64, %arg4: !fly" in text
    text = traced(launch_copy2d, flyc.from_dlpack(a, use_32bit_stride=True).mark_layout_dynamic(), b)
    assert "@launch_copy2d(%arg0: !fly.ptr<f32, global>, %arg1: i32, %arg2: i32, %arg3: i32, %arg4: !fly" in text
    for src, dst in [(a, b), (flyc.from_dlpack(a), flyc.from_dlpack(b))]:
        b[...] = 0
        launch_copy2d(src, dst)
        np.testing.assert_array_equal(b, a)


@needs_torch
def test_torch_tensors_dynamic_by_default_static_on_request():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.zeros_like(a)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    text = traced(launch_copy2d, flyc.from_torch_tensor(ta), flyc.from_torch_tensor(tb))
    assert "@launch_copy2d(%arg0: !fly.ptr<f32, global>, %arg1: !fly.ptr<f32, global>, %arg2: i64)" in text
    text = traced(launch_copy2d, flyc.from_torch_tensor(ta).mark_layout_dynamic(), flyc.from_torch_tensor(tb))
    assert "@launch_copy2d(%arg0: !fly.ptr<f32, global>, %arg1: i32, %arg2: i32, %arg3: i64, %arg4: !fly" in text
    for src, dst in [(ta, tb), (flyc.from_torch_tensor(ta), flyc.from_dlpack(tb))]:
        b[...] = 0
        launch_copy2d(src, dst)
        np.testing.assert_array_equal(b, a)


def test_tensor_inside_the_kernel():
    seen = {}

    @flyc.kernel
    def k(t: Tensor):
        seen.update(shape=t.shape, stride=t.stride, dtype=t.dtype, align=t.alignment, lead=t.leading_dim)
        seen["static"] = t.shape.is_static
        t[1, 2] = t[0, 1] + 1

    @flyc.jit
    def launch(t):
        k(t).launch(grid=1, block=1)

    a = np.zeros((3, 5), np.int32)
    a[0, 1] = 41
    launch(flyc.from_dlpack(a))
    assert a[1, 2] == 42
    assert seen["shape"] == (3, 5) and seen["stride"] == (5, 1) and seen["dtype"] is fx.Int32
    assert seen["align"] == 16 and seen["lead"] == 1 and seen["static"]


def test_static_out_of_range_index_is_a_trace_error():
    @flyc.kernel
    def k(t: Tensor):
        t[3, 0] = 1

    @flyc.jit
    def launch(t):
        k(t).launch(grid=1, block=1)

    with pytest.raises(IndexError) as ei:
        launch(flyc.from_dlpack(np.zeros((3, 5), np.int32)))
    assert "tensor index 3 is out of range for a mode of size 3" in str(ei.value)

    @flyc.kernel
    def k3(t: Tensor):
        t[0, 0, 0] = 1

    @flyc.jit
    def launch3(t):
        k3(t).launch(grid=1, block=1)

    with pytest.raises(IndexError, match=r"tensor of rank 2 \(shape \(\?,\?\)\) indexed with 3 coordinates") as ei:
        launch3(np.zeros((3, 5), np.int32))
    line = next(i + 1 for i, text in enumerate(open(__file__).read().splitlines()) if "t[0, 0, 0] = 1" in text)
    assert isinstance(ei.value, FlyDSLError) and ei.value.loc == (__file__, line, 9)


def test_alignment_is_part_of_the_specialization():
    seen = []

    @flyc.kernel
    def k(t: Tensor):
        seen.append(t.alignment)
        t[0] = 1

    @flyc.jit
    def launch(t):
        k(t).launch(grid=1, block=1)

    base = np.zeros(64, np.float32)
    launch(base)  # numpy allocations are at least 16-byte aligned
    launch(base[1:])  # 4 bytes further
    launch(base[2:])  # 8
    launch(base[4:])  # 16 again: a hit
    assert seen == [16, 4, 8] and launch.cache_info().misses == 3
    assert base[[0, 1, 2, 4]].tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize(
    "dtype", [np.float16, ml_dtypes.bfloat16, np.int8, np.uint16, np.int64, np.float64, ml_dtypes.float8_e4m3fn]
)
def test_element_types_round_trip(dtype):
    @flyc.kernel
    def k(src: Tensor, dst: Tensor):
        dst[fx.thread_idx.x] = src[fx.thread_idx.x]

    @flyc.jit
    def launch(src, dst):
        k(src, dst).launch(grid=1, block=8)

    src = (np.arange(8) * 3 - 5).astype(np.float32).astype(dtype)
    dst = np.zeros(8, dtype)
    launch(src, dst)
    assert dst.tobytes() == src.tobytes()


@needs_torch
def test_torch_bfloat16_and_noncontiguous_views():
    @flyc.kernel
    def k(src: Tensor, dst: Tensor):
        dst[fx.thread_idx.x] = src[fx.thread_idx.x]

    @flyc.jit
    def launch(src, dst):
        k(src, dst).launch(grid=1, block=5)

    src = torch.arange(10, dtype=torch.float32).to(torch.bfloat16)[::2]  # stride 2
    dst = torch.zeros(5, dtype=torch.bfloat16)
    with pytest.raises(DSLValueError, match=r"error\[FLY205\]: argument 'src': the tensor \(shape \(5,\), strides"):
        launch(src, dst)  # a 1-D view of stride 2 has no unit stride: dynamic layouts need one
    launch(flyc.from_torch_tensor(src), dst)
    assert dst.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_dlpack_objects_are_tensors():
    class Capsule:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None, **kw):
            return self.a.__dlpack__(**kw)  # a versioned capsule (a legacy one is read-only to numpy)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    @flyc.kernel
    def k(dst: Tensor):
        dst[fx.thread_idx.x] = fx.thread_idx.x

    @flyc.jit
    def launch(dst):
        k(dst).launch(grid=1, block=4)

    a = np.zeros(4, np.int32)
    launch(Capsule(a))
    assert a.tolist() == [0, 1, 2, 3]
    b = np.zeros(4, np.int32)
    launch(from_dlpack(b))
    assert b.tolist() == [0, 1, 2, 3]


def test_divisibility_is_checked():
    t = np.zeros((6, 4), np.float32)
    arg = flyc.from_dlpack(t).mark_layout_dynamic(divisibility=4)
    with pytest.raises(DSLValueError, match=r"error\[FLY207\]: argument 't': dynamic dimension 6 is not divisible"):

        @flyc.jit
        def launch(t):
            record(t, 1).launch(grid=1, block=1)

        launch(arg)


def test_per_dimension_divisibility_marks():
    t = np.zeros((8, 16, 32), np.float32)
    arg = flyc.from_dlpack(t).mark_shape_dynamic(0, divisibility=16).mark_stride_dynamic([0, 1], [8, 4])
    assert (arg.shape_dyn_indices, arg.stride_dyn_indices) == ((0,), (0, 1))
    *_, shape, strides = arg.__cache_signature__()
    assert shape == (-16, 16, 32) and strides == (-8, -4, 1)  # dynamic leaves as -divisibility
    assert arg.divisibility == 4  # what every run-time leaf is a multiple of
    again = flyc.from_dlpack(np.zeros((64, 16, 32), np.float32)).mark_shape_dynamic(0, 16)
    assert again.mark_stride_dynamic([0, 1], [8, 4]).__cache_signature__() == arg.__cache_signature__()
    last = flyc.from_dlpack(t).mark_stride_dynamic([0, 0], [8, 16])  # a repeated dim: the last one wins
    assert last.__cache_signature__()[-1][0] == -16 and last.stride_dyn_indices == (0,)
    for call, match in (
        (lambda a: a.mark_shape_dynamic(0, [1, 2]), "divisibility must be an int"),
        (lambda a: a.mark_stride_dynamic([0, 1], [1, 2, 4]), "equal length"),
        (lambda a: a.mark_shape_dynamic(5), "out of range"),
        (lambda a: a.mark_shape_dynamic(0, divisibility=3), "power of two"),
    ):
        with pytest.raises(ValueError, match=match):
            call(flyc.from_dlpack(t))

    @flyc.jit
    def launch(src, dst):
        copy2d(src, dst).launch(grid=4, block=8)

    src = np.arange(32, dtype=np.float32).reshape(4, 8)
    dst = np.zeros_like(src)
    launch(flyc.from_dlpack(src).mark_shape_dynamic(0, 4).mark_stride_dynamic(0, 8), dst)
    assert np.array_equal(src, dst)
    odd = np.zeros((4, 6), np.float32)  # stride 6 is not a multiple of the stride's declared 4
    with pytest.raises(DSLValueError, match=r"error\[FLY207\]: argument 'src': dynamic stride 6 is not divisible by 4"):
        launch(flyc.from_dlpack(odd).mark_stride_dynamic(0, 4), np.zeros_like(odd))


def test_raw_tensors_keep_the_last_unit_stride_mode_static():
    """A raw tensor whose last stride is 1 keeps that mode's stride static even when the mode has size 1:
    the cached call's generated path assumes exactly that (it checks ``stride[-1] == 1`` and passes the
    other strides), so a (4, 1) and a (4, 8) tensor share one specialization with the same arguments."""
    from flydsl.compiler.specialize import _dynamic_tensor
    from flydsl.runtime.args import numpy_ref

    for shape in ((4, 1), (4, 8), (4, 1, 8, 1)):
        key, vals = [], []
        _dynamic_tensor(numpy_ref(np.zeros(shape, np.float32)), key, vals)
        kind, _, rank, u = key[0][:4]
        assert (kind, rank, u) == ("dyn_tensor", len(shape), len(shape) - 1)


def test_cuda_tensor_on_the_cpu_device():
    ref = TensorRef(None, np.dtype(np.float32), 4096, (4,), (1,), True)
    with pytest.raises(ArgError) as ei:
        register_tensor(ref, None)
    err = user_error(ArgError(ei.value.diag, name="x", **ei.value.fields))
    assert str(err) == (
        "error[FLY401]: argument 'x': a CUDA tensor cannot be used by a kernel running on the cpu device\n"
        "fix: pass a CPU tensor (`t.cpu()`), or run on the GPU (unset FLYDSL_RUNTIME_KIND=cpu)"
    )


def test_constexpr_annotation_from_string_annotations():
    ns = {}
    exec(
        "from __future__ import annotations\ndef f(out, N: Constexpr[int]):\n    pass\n",
        {"Constexpr": Constexpr},
        ns,
    )
    from flydsl.compiler.kernel import resolve_signature

    assert resolve_signature(ns["f"]).parameters["N"].annotation is Constexpr[int]


def test_empty_tensors_are_accepted():
    """numpy gives an empty array stride 0; a mode of size 0 (or 1) needs no unit stride (FlyDSL passes empty
    scale tensors to kernels that do not read them)."""

    @flyc.kernel
    def k(unused: Tensor, out: Tensor):
        out[0] = 7.0

    @flyc.jit
    def launch(unused, out):
        k(unused, out).launch(grid=1, block=1)

    empty = np.zeros(0, np.float32)
    assert empty.strides == (0,)
    out = np.zeros(1, np.float32)
    launch(empty, out)
    launch(np.zeros((0, 4), np.float32)[:, ::2], out)  # size-0 leading mode, stride-2 trailing mode
    assert out[0] == 7.0

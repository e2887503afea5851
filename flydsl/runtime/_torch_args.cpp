// flydsl's torch tensor reader: what a cached @flyc.jit call reads from a torch tensor argument, in one C++ call.
//
// A cached call reads six attributes of every torch tensor it is given (shape, stride(), data_ptr(), _base,
// dtype, is_cuda): ~0.5 us per tensor through torch's Python getters (each one builds objects and checks for
// __torch_function__), most of a cached call's host time. The same facts are a few loads in C++:
//
//   TensorReader(rank, dtype, align, is_cuda, view_inside, strides_class=-1)    -- once per tensor parameter
//   reader(t) -> (data_ptr, dim 0 .. dim rank-1, stride 0 .. stride rank-2)  or None
//
// A tuple when t is a torch tensor of `rank` dims whose last stride is 1, every dim and stride in [0, 2^31),
// its dtype the torch.dtype `dtype`, data_ptr() & 15 == align, is_cuda == `is_cuda`, (the OR of the strides but
// the last) & 15 == strides_class unless that is -1 (a rank-1 tensor has no such part), and t is no view or
// view_inside(t) is true; else None (so is any exception: the Python path then reads again and reports).
// That is exactly what the jit's generated Python guards accept for the inlined specialization; the caller
// checks the exact Python type first. Built on first use by flydsl/runtime/native.py against the installed
// torch's headers; without it the Python reads run.
#include <Python.h>

#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

namespace {

struct TensorReader {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *inside;
    Py_ssize_t rank;
    c10::ScalarType dtype;
    uint64_t align;
    bool is_cuda;
    long long strides_class;  // -1: not compared
};

constexpr int64_t kI32Max = 0x7FFFFFFF;

PyObject *read(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    auto *r = reinterpret_cast<TensorReader *>(self_);
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != nullptr && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "a tensor reader takes one tensor");
        return nullptr;
    }
    PyObject *o = args[0];
    if (!THPVariable_Check(o)) Py_RETURN_NONE;
    try {
        const at::Tensor &t = THPVariable_Unpack(o);
        const Py_ssize_t rank = r->rank;
        if (t.dim() != rank || t.scalar_type() != r->dtype || t.is_cuda() != r->is_cuda) Py_RETURN_NONE;
        auto sizes = t.sizes();
        auto strides = t.strides();
        if (strides[rank - 1] != 1) Py_RETURN_NONE;
        int64_t any = 0;
        for (Py_ssize_t i = 0; i < rank; i++) {
            if (sizes[i] < 0 || sizes[i] > kI32Max || strides[i] < 0 || strides[i] > kI32Max) Py_RETURN_NONE;
            if (i < rank - 1) any |= strides[i];
        }
        if (r->strides_class >= 0 && (any & 15) != r->strides_class) Py_RETURN_NONE;
        const uint64_t ptr = reinterpret_cast<uintptr_t>(t.data_ptr());
        if ((ptr & 15) != r->align) Py_RETURN_NONE;
        if (t.is_view()) {
            PyObject *ok = PyObject_CallOneArg(r->inside, o);
            if (ok == nullptr) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            const bool inside = ok == Py_True;
            Py_DECREF(ok);
            if (!inside) Py_RETURN_NONE;
        }
        PyObject *out = PyTuple_New(2 * rank);
        if (out == nullptr) return nullptr;
        PyObject *v = PyLong_FromUnsignedLongLong(ptr);
        if (v == nullptr) {
            Py_DECREF(out);
            return nullptr;
        }
        PyTuple_SET_ITEM(out, 0, v);
        for (Py_ssize_t i = 0; i < 2 * rank - 1; i++) {
            v = PyLong_FromLongLong(i < rank ? sizes[i] : strides[i - rank]);
            if (v == nullptr) {
                Py_DECREF(out);
                return nullptr;
            }
            PyTuple_SET_ITEM(out, i + 1, v);
        }
        return out;
    } catch (...) {  // e.g. data_ptr() of a tensor without storage: the Python path reports it
        PyErr_Clear();
        Py_RETURN_NONE;
    }
}

PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *) {
    Py_ssize_t rank;
    PyObject *dtype, *inside;
    unsigned long long align;
    int is_cuda;
    long long strides_class = -1;
    if (!PyArg_ParseTuple(args, "nOKpO|L", &rank, &dtype, &align, &is_cuda, &inside, &strides_class)) return nullptr;
    if (rank < 1 || align > 15 || !THPDtype_Check(dtype) || !PyCallable_Check(inside)) {
        PyErr_SetString(PyExc_ValueError, "TensorReader(rank >= 1, torch dtype, align < 16, is_cuda, view_inside)");
        return nullptr;
    }
    auto *self = reinterpret_cast<TensorReader *>(type->tp_alloc(type, 0));
    if (self == nullptr) return nullptr;
    self->vectorcall = read;
    Py_INCREF(inside);
    self->inside = inside;
    self->rank = rank;
    self->dtype = reinterpret_cast<THPDtype *>(dtype)->scalar_type;
    self->align = align;
    self->is_cuda = is_cuda != 0;
    self->strides_class = strides_class;
    return reinterpret_cast<PyObject *>(self);
}

void reader_dealloc(PyObject *self_) {
    Py_XDECREF(reinterpret_cast<TensorReader *>(self_)->inside);
    Py_TYPE(self_)->tp_free(self_);
}

PyTypeObject ReaderType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_flydsl_torch_args", "flydsl's torch tensor reader", -1, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__flydsl_torch_args(void) {
    ReaderType.tp_name = "_flydsl_torch_args.TensorReader";
    ReaderType.tp_doc = "TensorReader(rank, dtype, align, is_cuda, view_inside, strides_class=-1): reader(t) -> (ptr, *dims, "
        "*strides[:-1]) or None";
    ReaderType.tp_basicsize = sizeof(TensorReader);
    ReaderType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
    ReaderType.tp_new = reader_new;
    ReaderType.tp_dealloc = reader_dealloc;
    ReaderType.tp_call = PyVectorcall_Call;
    ReaderType.tp_vectorcall_offset = offsetof(TensorReader, vectorcall);
    if (PyType_Ready(&ReaderType) < 0) return nullptr;
    PyObject *m = PyModule_Create(&module);
    if (m == nullptr) return nullptr;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "TensorReader", reinterpret_cast<PyObject *>(&ReaderType)) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}

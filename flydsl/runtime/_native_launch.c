/* flydsl's native kernel launch: one C call packs a launch and calls the driver.
 *
 * The pure-Python launch (flydsl/runtime/_cuda_launch.py) spends about a microsecond per launch in
 * struct.pack_into, the per-kernel lock and the ctypes call. A Launch object does the same work in C:
 *
 *   Launch(driver, function, codes, offsets, size, attrs=0, num_attrs=0, flags=0)   -- once per kernel
 *   err = launch(gx, gy, gz, bx, by, bz, smem, stream, *params)
 *
 * `driver` is the address of a function with cuLaunchKernelEx's signature (flags & 1: cuLaunchKernel's;
 * flags & 2: the GIL is kept across the driver call), `function` the CUfunction,
 * `codes` one struct-module code per parameter ("Q" pointer, "q" 64-bit, "I" 32-bit, "H", "B" integers
 * masked to their width like the Python path, "?" bool, "f" f32, "d" f64, "e" f16, "b" bf16 rounded as the
 * Python path's ml_dtypes does: to f32, then to nearest even; NaN -> 0x7FC0 with its sign), `offsets` their byte
 * offsets in a parameter buffer of `size` bytes. The buffer, the parameter pointer array and the
 * CUlaunchConfig live on the C stack of each call: no shared state, so no lock; the GIL is released
 * around the driver call. Returns the driver's CUresult as an int; raises TypeError/OverflowError for a
 * value its slot cannot hold (nothing is launched then).
 *
 * The module also has same_items(d, keys, values) (see there).
 *
 * Built on first use by flydsl/runtime/native.py (cc + the Python headers); without it the Python path
 * runs. Keep this file free of anything but the C API of CPython >= 3.10.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(const void *config, void *function, void **params, void **extra);
/* cuLaunchKernel's shape (flag LEGACY_ENTRY) */
typedef int (*legacy_fn)(void *function, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                         unsigned int by, unsigned int bz, unsigned int smem, void *stream, void **params,
                         void **extra);

enum { LEGACY_ENTRY = 1, KEEP_GIL = 2 };

/* CUlaunchConfig (cuda.h, CUDA >= 12.0) */
typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int smem;
    void *stream;
    void *attrs;
    unsigned int num_attrs;
} LaunchConfig;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    launch_fn driver;
    void *function;
    Py_ssize_t n;
    Py_ssize_t size;
    char *codes;
    Py_ssize_t *offsets;
    void *attrs; /* CUlaunchAttribute[num_attrs] (kept alive by the caller), or NULL */
    unsigned int num_attrs;
    int flags;
} Launch;

enum { STACK_BYTES = 4096, STACK_PARAMS = 256 };

/* The value as an unsigned 64-bit int: the low 64 bits when `mask`, else range-checked. -1 + error set
 * on failure. Objects with __index__ (numpy ints, bools) are accepted, as struct does. */
static int as_u64(PyObject *o, int mask, unsigned long long *out) {
    PyObject *num = o;
    if (!PyLong_Check(o)) {
        num = PyNumber_Index(o);
        if (num == NULL) return -1;
    }
    unsigned long long v;
    if (mask) {
        v = PyLong_AsUnsignedLongLongMask(num);
    } else {
        v = PyLong_AsUnsignedLongLong(num);
    }
    if (num != o) Py_DECREF(num);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static int as_u32(PyObject *o, unsigned int *out) {
    unsigned long long v;
    if (as_u64(o, 0, &v) < 0) return -1;
    if (v > 0xFFFFFFFFULL) {
        PyErr_SetString(PyExc_OverflowError, "launch dimension or shared memory size out of the 32-bit range");
        return -1;
    }
    *out = (unsigned int)v;
    return 0;
}

static int pack(char code, PyObject *o, char *dst) {
    unsigned long long v;
    double d;
    switch (code) {
    case 'Q':
        if (as_u64(o, 0, &v) < 0) return -1;
        memcpy(dst, &v, 8);
        return 0;
    case 'q':
        if (as_u64(o, 1, &v) < 0) return -1;
        memcpy(dst, &v, 8);
        return 0;
    case 'I': {
        if (as_u64(o, 1, &v) < 0) return -1;
        uint32_t w = (uint32_t)v;
        memcpy(dst, &w, 4);
        return 0;
    }
    case 'H': {
        if (as_u64(o, 1, &v) < 0) return -1;
        uint16_t w = (uint16_t)v;
        memcpy(dst, &w, 2);
        return 0;
    }
    case 'B':
        if (as_u64(o, 1, &v) < 0) return -1;
        *dst = (char)(uint8_t)v;
        return 0;
    case '?': {
        int t = PyObject_IsTrue(o);
        if (t < 0) return -1;
        *dst = (char)t;
        return 0;
    }
    case 'b': {
        d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) return -1;
        float f = (float)d;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t w;
        if (f != f) {
            w = (uint16_t)((u >> 16 & 0x8000) | 0x7FC0);
        } else {
            w = (uint16_t)((u + 0x7FFF + (u >> 16 & 1)) >> 16);
        }
        memcpy(dst, &w, 2);
        return 0;
    }
    case 'f':
    case 'd':
    case 'e':
        d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) return -1;
#if PY_VERSION_HEX >= 0x030B0000
        if (code == 'f') return PyFloat_Pack4(d, dst, 1);
        if (code == 'e') return PyFloat_Pack2(d, dst, 1);
        return PyFloat_Pack8(d, dst, 1);
#else
        if (code == 'f') return _PyFloat_Pack4(d, (unsigned char *)dst, 1);
        if (code == 'e') return _PyFloat_Pack2(d, (unsigned char *)dst, 1);
        return _PyFloat_Pack8(d, (unsigned char *)dst, 1);
#endif
    }
    PyErr_Format(PyExc_ValueError, "unsupported parameter code %c", code);
    return -1;
}

static int call_driver(Launch *self, LaunchConfig *cfg, void **ptrs) {
    if (self->flags & LEGACY_ENTRY) {
        return ((legacy_fn)(void *)self->driver)(self->function, cfg->grid[0], cfg->grid[1], cfg->grid[2],
                                                 cfg->block[0], cfg->block[1], cfg->block[2], cfg->smem,
                                                 cfg->stream, ptrs, NULL);
    }
    return self->driver(cfg, self->function, ptrs, NULL);
}

static PyObject *launch_call(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Launch *self = (Launch *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "launch takes no keyword arguments");
        return NULL;
    }
    if (nargs != 8 + self->n) {
        PyErr_Format(PyExc_TypeError, "launch takes %zd arguments (grid, block, smem, stream and %zd parameters), got %zd",
                     8 + self->n, self->n, nargs);
        return NULL;
    }
    LaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    for (int i = 0; i < 3; i++) {
        if (as_u32(args[i], &cfg.grid[i]) < 0 || as_u32(args[3 + i], &cfg.block[i]) < 0) return NULL;
    }
    unsigned long long stream;
    if (as_u32(args[6], &cfg.smem) < 0 || as_u64(args[7], 0, &stream) < 0) return NULL;
    cfg.stream = (void *)(uintptr_t)stream;
    cfg.attrs = self->attrs;
    cfg.num_attrs = self->num_attrs;

    uint64_t stack_buf[STACK_BYTES / 8];
    void *stack_ptrs[STACK_PARAMS];
    char *buf = (char *)stack_buf;
    void **ptrs = stack_ptrs;
    if (self->size > STACK_BYTES || self->n > STACK_PARAMS) {
        buf = PyMem_Malloc((size_t)self->size + (size_t)self->n * sizeof(void *) + 8);
        if (buf == NULL) return PyErr_NoMemory();
        ptrs = (void **)(buf + ((self->size + 7) & ~(Py_ssize_t)7));
    }
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        char *dst = buf + self->offsets[i];
        ptrs[i] = dst;
        if (pack(self->codes[i], args[8 + i], dst) < 0) goto done;
    }
    int err;
    if (self->flags & KEEP_GIL) {
        err = call_driver(self, &cfg, ptrs);
    } else {
        Py_BEGIN_ALLOW_THREADS
        err = call_driver(self, &cfg, ptrs);
        Py_END_ALLOW_THREADS
    }
    result = PyLong_FromLong(err);
done:
    if (buf != (char *)stack_buf) PyMem_Free(buf);
    return result;
}

static PyObject *launch_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    unsigned long long driver, function;
    const char *codes;
    Py_ssize_t ncodes, size;
    unsigned long long attrs = 0;
    unsigned int num_attrs = 0;
    PyObject *offsets;
    int flags = 0;
    if (!PyArg_ParseTuple(args, "KKs#On|KIi", &driver, &function, &codes, &ncodes, &offsets, &size, &attrs, &num_attrs,
                          &flags))
        return NULL;
    if ((flags & LEGACY_ENTRY) && attrs && num_attrs) {
        PyErr_SetString(PyExc_ValueError, "launch attributes need cuLaunchKernelEx (flags without 1)");
        return NULL;
    }
    if (!PyTuple_Check(offsets) || PyTuple_GET_SIZE(offsets) != ncodes) {
        PyErr_SetString(PyExc_ValueError, "offsets: a tuple of one offset per parameter code");
        return NULL;
    }
    if (driver == 0) {
        PyErr_SetString(PyExc_ValueError, "driver: the address of a launch function");
        return NULL;
    }
    Launch *self = (Launch *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = launch_call;
    self->driver = (launch_fn)(uintptr_t)driver;
    self->function = (void *)(uintptr_t)function;
    self->attrs = (void *)(uintptr_t)attrs;
    self->num_attrs = attrs ? num_attrs : 0;
    self->n = ncodes;
    self->size = size;
    self->flags = flags;
    self->codes = PyMem_Malloc((size_t)ncodes + 1);
    self->offsets = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)ncodes + 1));
    if (self->codes == NULL || self->offsets == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    memcpy(self->codes, codes, (size_t)ncodes);
    for (Py_ssize_t i = 0; i < ncodes; i++) {
        Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, i));
        if (off == -1 && PyErr_Occurred()) {
            Py_DECREF(self);
            return NULL;
        }
        static const char CODES[] = "QqdIfHebB?"; /* 8-byte, 4-byte, 2-byte and 1-byte codes, in that order */
        const char *known = strchr(CODES, codes[i]);
        Py_ssize_t at = known == NULL ? 0 : known - CODES;
        Py_ssize_t width = known == NULL ? 0 : (at < 3 ? 8 : at < 5 ? 4 : at < 8 ? 2 : 1);
        if (known == NULL || codes[i] == 0 || off < 0 || off + width > size) {
            PyErr_Format(PyExc_ValueError, "parameter %zd: bad code or offset", i);
            Py_DECREF(self);
            return NULL;
        }
        self->offsets[i] = off;
    }
    return (PyObject *)self;
}

static void launch_dealloc(PyObject *self_) {
    Launch *self = (Launch *)self_;
    PyMem_Free(self->codes);
    PyMem_Free(self->offsets);
    Py_TYPE(self_)->tp_free(self_);
}

static PyTypeObject LaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_flydsl_launch.Launch",
    .tp_doc = "Launch(driver, function, codes, offsets, size[, attrs, num_attrs, flags]): launch(gx, gy, gz, bx, "
              "by, bz, smem, stream, *params)",
    .tp_basicsize = sizeof(Launch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = launch_new,
    .tp_dealloc = launch_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Launch, vectorcall),
};

/* same_items(d, keys, values): True when d.get(keys[i]) equals values[i] for every i (None: absent) --
 * the cached call's check that the environment variables of its key are unchanged, in one call. */
static PyObject *same_items(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyDict_Check(args[0]) || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]) ||
        PyTuple_GET_SIZE(args[1]) != PyTuple_GET_SIZE(args[2])) {
        PyErr_SetString(PyExc_TypeError, "same_items(dict, keys, values): two tuples of one length");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args[1]); i++) {
        PyObject *v = PyDict_GetItemWithError(args[0], PyTuple_GET_ITEM(args[1], i));
        if (v == NULL) {
            if (PyErr_Occurred()) return NULL;
            v = Py_None;
        }
        PyObject *want = PyTuple_GET_ITEM(args[2], i);
        if (v == want) continue;
        if (v == Py_None || want == Py_None) Py_RETURN_FALSE;
        Py_INCREF(v); /* borrowed from a dict that __eq__ could change */
        int eq = PyObject_RichCompareBool(v, want, Py_EQ);
        Py_DECREF(v);
        if (eq < 0) return NULL;
        if (!eq) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"same_items", (PyCFunction)(void (*)(void))same_items, METH_FASTCALL,
     "same_items(d, keys, values): d.get(k) == v for every key and value (None: absent)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_flydsl_launch", "flydsl's native kernel launch", -1,
                                    methods};

PyMODINIT_FUNC PyInit__flydsl_launch(void) {
    if (PyType_Ready(&LaunchType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&LaunchType);
    if (PyModule_AddObject(m, "Launch", (PyObject *)&LaunchType) < 0) {
        Py_DECREF(&LaunchType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

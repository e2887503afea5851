"""``@flyc.kernel``: a GPU kernel, traced into a ``gpu.func`` of ``gpu.module @kernels`` when a jit
launcher launches it.

``kernel(*args)`` (only inside a ``@flyc.jit`` trace) returns a :class:`KernelLauncher`;
``.launch(grid=, block=, smem=, stream=)`` traces the kernel body for this specialization (once per
distinct argument types, Constexpr values and known block size) and emits ``gpu.launch_func`` in the
host function. Kernel parameters: ``fx.Constexpr[...]`` parameters are Python values baked into the
specialization; every other argument (tensor, number, list/tuple of them) is flattened through the
value protocol into the kernel's IR parameters and rebuilt inside the body.
"""

from __future__ import annotations

import functools
import inspect
import sys

from ..dialects import func as dfunc
from ..dialects import gpu
from ..expr._sem.iterators import MemIter
from ..expr.numeric import Int32, Numeric, as_numeric
from ..expr.smem import DYNAMIC_SMEM_ATTR
from ..expr.typing import Constexpr, Stream, Tensor
from ..ir import I32Array, InsertionPoint, SymbolRef, Value, i64
from . import errors as E
from .errors import error
from .frames import frame_location, user_frame
from .frontend import rewrite_function
from .frontend.carry import flatten, is_dsl_leaf, is_py_scalar, leaf_values, rebuild_leaf, unflatten
from .trace import KernelScope, current

__all__ = ["KernelFunction", "KernelLauncher", "kernel"]


def _caller_loc():
    f = user_frame(sys._getframe(2))
    return frame_location(f) if f is not None else None


def resolve_signature(fn) -> inspect.Signature:
    """The signature with string annotations (``from __future__ import annotations``) evaluated in the
    function's globals and closure.

    Raises:
        DSLNameError (FLY218): an annotation that does not evaluate, naming the parameter — never ignored,
            since an unread ``fx.Constexpr[...]`` would silently turn into a run-time argument.
    """
    code = fn.__code__
    cells = fn.__closure__ or ()
    local = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            local[name] = cell.cell_contents
        except ValueError:  # an unfilled cell
            pass
    try:
        return inspect.signature(fn, eval_str=True, locals=local)
    except Exception:
        sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if isinstance(p.annotation, str):
            try:
                eval(p.annotation, fn.__globals__, local)  # noqa: S307 - the user's own annotation
            except Exception as e:
                loc = _def_line(fn)
                why = f"{type(e).__name__}: {e}"
                raise error(E.BAD_ANNOTATION, loc, name=p.name, fn=fn.__name__, ann=p.annotation, why=why) from None
    return sig


class KernelFunction:
    """A function decorated with ``@flyc.kernel``."""

    def __init__(self, fn, name: str | None = None, known_block_size=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = name
        self.known_block_size = _declared_block_size(fn, known_block_size)
        self._body = None
        self._sig = None

    @property
    def __fly_function__(self):
        return self.fn

    def body(self):
        """The AST-rewritten function (built on first use)."""
        if self._body is None:
            self._body = rewrite_function(self.fn)
        return self._body

    def signature(self) -> inspect.Signature:
        if self._sig is None:
            self._sig = resolve_signature(self.fn)
        return self._sig

    @property
    def _known_block_size(self) -> list[int] | None:
        """FlyDSL's attribute: the declared block size as a list (None when not declared)."""
        return None if self.known_block_size is None else list(self.known_block_size)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __call__(self, *args, unit_attrs=None, value_attrs=None, **kwargs) -> KernelLauncher:
        """Bind the arguments; ``unit_attrs`` (names) / ``value_attrs`` (name -> value) are attributes of
        the kernel's ``gpu.func`` (FlyDSL's spelling; part of the kernel's specialization)."""
        ctx = current()
        if ctx is None:
            raise error(E.KERNEL_OUTSIDE_JIT, _caller_loc(), name=self.fn.__name__)
        if ctx.kernel_stack:
            raise error(E.KERNEL_IN_KERNEL, _caller_loc(), name=self.fn.__name__)
        try:
            bound = self.signature().bind(*args, **kwargs)
        except TypeError as e:
            raise error(E.ARG_BINDING, _caller_loc(), name=self.fn.__name__, detail=str(e)) from None
        bound.apply_defaults()
        return KernelLauncher(self, bound.arguments, _func_attrs(unit_attrs, value_attrs))

    def __repr__(self) -> str:
        return f"<flyc.kernel {self.fn.__qualname__}>"


class _Param:
    """One kernel argument: compile-time (value in the key) or run-time (a tree of DSL leaves)."""

    __slots__ = ("name", "const", "value", "skel", "leaves", "paths", "mask", "values")

    def __init__(self, name, value, const: bool):
        self.name, self.value, self.const = name, value, const
        self.values: list[Value] = []
        self.leaves, self.paths, self.mask = [], [], []
        if const:
            return
        leaves, paths = [], []
        self.skel = flatten(value, name, leaves, paths)
        self.paths = paths
        for x in leaves:
            if is_py_scalar(x) or (isinstance(x, Numeric)):
                x = as_numeric(x)
            if is_dsl_leaf(x):
                vals = leaf_values(x)
                self.values.extend(vals)
                self.mask.append(len(vals))
            else:
                self.mask.append(0)
            self.leaves.append(x)

    def key(self):
        if self.const:
            return ("const", _const_key(self.value))
        parts = []
        for x, n in zip(self.leaves, self.mask):
            if type(x) is MemIter:  # a pointer with its known alignment (see rebuild)
                parts.append((MemIter, x.ir_value().type, x.align, x.exact))
            elif n:
                sig = getattr(x, "__fly_signature__", None)
                part = (type(x), sig() if sig else tuple(v.type for v in leaf_values(x)))
                # a tensor's stride divisibility decides what its accesses claim: one kernel per value
                parts.append(part + (x._div,) if isinstance(x, Tensor) else part)
            else:
                parts.append(("static", _const_key(x)))
        return (self.skel, tuple(parts))

    def rebuild(self, args: list):
        if self.const:
            return self.value
        it = iter(args)
        new = []
        for x, n in zip(self.leaves, self.mask):
            if type(x) is MemIter:
                # NOTE: a tensor's iterator or a pointer argument keeps its alignment inside the kernel (it is
                # in the key), so copies through it claim what the launch proves
                new.append(MemIter._new(next(it), x.dtype, x.align, x.exact))
            else:
                new.append(rebuild_leaf(x, [next(it) for _ in range(n)]) if n else x)
        return unflatten(self.skel, iter(new))

    def arg_names(self) -> list[str]:
        out = []
        for n, path in zip(self.mask, self.paths):
            if n == 1:
                out.append(path)
            elif n:
                out.extend([path] + [f"{path}.<{k}>" for k in range(1, n)])
        return out


def _const_key(v):
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"{type(v).__name__} is not hashable") from None
    return (type(v), v)


class KernelLauncher:
    """``kernel(*args)``: call ``.launch(grid=, block=, smem=, stream=)`` to launch it."""

    def __init__(self, kfn: KernelFunction, arguments: dict, func_attrs: tuple = ()):
        self.kfn = kfn
        self.arguments = arguments
        self.func_attrs = func_attrs

    def launch(
        self,
        *,
        grid=(1, 1, 1),
        block=(1, 1, 1),
        smem=None,
        stream=None,
        cluster=None,
        unit_attrs=None,
        value_attrs=None,
    ):
        """Launch (``unit_attrs``/``value_attrs``: more attributes of the kernel's ``gpu.func``)."""
        self.func_attrs = self.func_attrs + _func_attrs(unit_attrs, value_attrs)
        ctx = current()
        loc = _caller_loc()
        if ctx is None or ctx.kernel_stack:
            raise error(E.KERNEL_OUTSIDE_JIT, loc, name=self.kfn.fn.__name__)
        g, b = _dims3(grid, "grid", loc), _dims3(block, "block", loc)
        kbs = tuple(x for x in b) if all(type(x) is int for x in b) else None
        declared = self.kfn.known_block_size
        if declared is not None:
            if kbs is not None and kbs != declared:
                raise error(E.KNOWN_BLOCK_SIZE, loc, name=self.kfn.fn.__name__, kbs=list(declared), block=list(kbs))
            kbs = declared
        params = self._params(loc)
        cl = _cluster(cluster, g, loc)
        name = self._kernel(ctx, params, kbs, cl)
        # smem=None: what the kernel's dynamic SharedAllocator asked for (0 without one)
        need = ctx.kernel_ops[name].attrs.get(DYNAMIC_SMEM_ATTR, 0)
        if smem is None:
            smem = need
        elif type(smem) is int and smem < need:
            raise error(E.SMEM_TOO_SMALL, loc, name=self.kfn.fn.__name__, need=need, smem=smem)
        if type(smem) is int and smem > ctx.target.smem_dynamic_max:
            raise error(
                E.SMEM_SIZE,
                loc,
                name=self.kfn.fn.__name__,
                need=smem,
                target=ctx.target.arch,
                cap=ctx.target.smem_dynamic_max,
            )
        host_vals = [v for p in params for v in p.values]
        ops = [_i32(x) for x in g] + [_i32(x) for x in b] + [_i32(smem), _stream(stream, ctx)]
        gpu.launch_func(*ops, *host_vals, kernel=SymbolRef(name))
        return None

    def _params(self, loc) -> list[_Param]:
        sig = self.kfn.signature()
        out = []
        for pname, value in self.arguments.items():
            ann = sig.parameters[pname].annotation
            const = Constexpr.is_constexpr_annotation(ann)
            if const and isinstance(value, Numeric) and not value.is_static():
                raise error(E.CONSTEXPR_RUNTIME, loc, name=pname, got=_got(value))
            if const and not ann.accepts(value):
                raise error(E.CONSTEXPR_TYPE, loc, name=pname, want=_tname(ann.value_type), got=_got(value))
            if ann is Tensor and not isinstance(value, Tensor):  # None, a list ...: not silently a constant
                raise error(E.KERNEL_ARG_STATIC, loc, name=pname, got=_got(value))
            try:
                out.append(_Param(pname, value, const))
            except TypeError:
                raise error(E.KERNEL_ARG_STATIC, loc, name=pname, got=_got(value)) from None
        return out

    def _kernel(self, ctx, params: list[_Param], kbs, cluster=None) -> str:
        """The kernel's name for this specialization, tracing its body the first time."""
        parts = []
        for p in params:
            try:
                parts.append(p.key())
            except TypeError:
                raise error(E.KERNEL_ARG_STATIC, _caller_loc(), name=p.name, got=_got(p.value)) from None
        key = (self.kfn, tuple(parts), kbs, self.func_attrs) + ((cluster,) if cluster else ())
        name = ctx.kernels.get(key)
        if name is not None:
            return name
        base = self.kfn.name or self.kfn.fn.__name__
        name = ctx.unique_kernel_name(base, explicit=self.kfn.name is not None)
        ctx.kernels[key] = name
        types = [v.type for p in params for v in p.values]
        attrs = {"kernel": True}
        if kbs is not None:
            attrs["known_block_size"] = I32Array(kbs)
        if cluster:
            attrs["cluster_dims"] = I32Array(cluster)  # thread-block clusters (sm_90): .reqnctapercluster
        attrs.update(self.func_attrs)
        fop = dfunc.build_func(gpu.func, name, types, **attrs)
        fop.loc = _def_loc(self.kfn.fn)
        ctx.gpu_module.regions[0].block.append(fop)
        ctx.kernel_ops[name] = fop
        ctx.kernel_arg_names[name] = [n for p in params for n in p.arg_names()]
        entry = fop.regions[0].blocks[0]
        args, pos = [], 0
        for p in params:
            n = len(p.values)
            args.append(p.rebuild(entry.args[pos : pos + n]))
            pos += n
        ctx.kernel_stack.append(KernelScope(name, kbs, fop))
        saved = ctx.known_block, ctx.smem_used
        ctx.known_block, ctx.smem_used = kbs, 0  # the kernel's own block size and shared-memory count
        try:
            with InsertionPoint(entry):
                ret = self.kfn.body()(*args)
                if ret is not None:
                    raise error(E.KERNEL_RETURNS, _def_loc(self.kfn.fn), name=name, got=_got(ret))
                gpu.return_(loc=_def_loc(self.kfn.fn))
        finally:
            ctx.kernel_stack.pop()
            ctx.known_block, ctx.smem_used = saved
        return name


def _func_attrs(unit_attrs, value_attrs) -> tuple:
    """``(name, value)`` pairs of extra ``gpu.func`` attributes (a unit attribute's value is True)."""
    out = [(str(n), True) for n in (unit_attrs or ())]
    for n, v in (value_attrs or {}).items():
        v = getattr(v, "value", v)  # an ir.IntegerAttr & co. from flydsl._mlir
        if not isinstance(v, (bool, int, float, str)):
            raise TypeError(f"kernel attribute {n!r}: value {v!r} must be a bool, int, float or str")
        out.append((str(n), v))
    return tuple(out)


def _def_line(fn):
    """(file, line, col) of the ``def`` itself (``co_firstlineno`` is the first decorator's line)."""
    code = fn.__code__
    line = code.co_firstlineno
    try:
        src, start = inspect.getsourcelines(fn)
        for i, text in enumerate(src):
            stripped = text.lstrip()
            if stripped.startswith(("def ", "async def ")):
                return (code.co_filename, start + i, len(text) - len(stripped) + 1)
    except (OSError, TypeError):
        pass
    return (code.co_filename, line, 1)


def _def_loc(fn):
    code = fn.__code__
    return (code.co_filename, code.co_firstlineno, 1)


def _tname(t) -> str:
    return t if isinstance(t, str) else getattr(t, "__name__", str(t))


def _got(v) -> str:
    if isinstance(v, Numeric):
        return f"a {'compile-time' if v.is_static() else 'run-time'} {type(v).__name__}"
    if hasattr(type(v), "__fly_describe__"):
        return v.__fly_describe__()
    r = repr(v)
    return f"{type(v).__name__} {r if len(r) < 40 else r[:37] + '...'}"


def _declared_block_size(fn, size) -> tuple | None:
    """``@flyc.kernel(known_block_size=...)`` checked where the kernel is declared: None, or exactly three
    positive ints (compile-time fx integers count as their value).

    Raises:
        DSLTypeError (FLY225): not a sequence, or an element that is not an integer.
        DSLValueError (FLY226): not three elements, or an element below 1.
    """
    if size is None:
        return None
    name = getattr(fn, "__name__", "kernel")
    if isinstance(size, (str, bytes)) or not isinstance(size, (list, tuple)):
        raise error(
            E.KNOWN_BLOCK_SIZE_TYPE,
            _def_line(fn),
            name=name,
            problem=f"known_block_size must be a sequence of 3 positive integers, got {size!r}",
        )
    if len(size) != 3:
        raise error(
            E.KNOWN_BLOCK_SIZE_VALUE,
            _def_line(fn),
            name=name,
            problem=f"known_block_size must have exactly 3 elements, got {len(size)}: {list(size)!r}",
        )
    out = []
    for i, x in enumerate(size):
        if isinstance(x, Numeric) and x.is_static() and type(x).is_integer and type(x).width > 1:
            x = int(x.value)
        if type(x) is not int:
            raise error(
                E.KNOWN_BLOCK_SIZE_TYPE,
                _def_line(fn),
                name=name,
                problem=f"known_block_size[{i}] must be an int, got {x!r}",
            )
        if x <= 0:
            raise error(
                E.KNOWN_BLOCK_SIZE_VALUE,
                _def_line(fn),
                name=name,
                problem=f"known_block_size[{i}] must be positive, got {x}",
            )
        out.append(x)
    return tuple(out)


def _dims3(d, what, loc=None) -> tuple:
    """1-3 launch dimensions → 3 entries (Python ints or Int32 values), missing ones = 1."""
    if isinstance(d, (list, tuple)):
        items = list(d)
    else:
        items = [d]
    if not 1 <= len(items) <= 3:
        raise error(E.LAUNCH_DIMS, loc, what=what, got=d)
    out = []
    for x in items:
        if type(x) is bool or not (isinstance(x, (int, Numeric)) or type(x) is Value):
            raise error(E.LAUNCH_DIMS, loc, what=what, got=d)
        if type(x) is Value and not (x.type.is_integer or x.type.is_index) or getattr(type(x), "is_float", False):
            raise error(E.LAUNCH_DIMS, loc, what=what, got=d)  # a float would be truncated silently
        if isinstance(x, Numeric) and x.is_static():
            x = int(x._v)
        if type(x) is int and x <= 0:
            raise error(E.LAUNCH_DIMS, loc, what=what, got=d)
        out.append(x)
    return tuple(out + [1] * (3 - len(out)))


def _cluster(cluster, grid, loc):
    """``launch(cluster=(x, y, z))``: static cluster dims (None or all ones: no cluster); a static grid must
    be a whole number of clusters."""
    if cluster is None:
        return None
    c = _dims3(cluster, "cluster", loc)
    if any(type(x) is not int for x in c):
        raise error(E.LAUNCH_DIMS, loc, what="cluster", got=cluster)
    if c == (1, 1, 1):
        return None
    for gx, cx in zip(grid, c):
        if type(gx) is int and gx % cx:
            raise error(E.LAUNCH_DIMS, loc, what="grid (a whole number of clusters)", got=grid)
    return c


def _i32(x) -> Value:
    if type(x) is Value:
        x = as_numeric(x)
    if isinstance(x, Numeric):
        return (x if type(x) is Int32 else x.to(Int32)).ir_value()
    return Int32(x).ir_value()


def _stream(s, ctx) -> Value:
    if s is None:
        if ctx.stream is not None:
            return ctx.stream
        s = Stream(None)
    if type(s) is Value and s.type is i64:
        return s
    if not isinstance(s, Stream):
        s = Stream(s)
    return s.__fly_values__()[0]


def kernel(fn=None, *, name: str | None = None, known_block_size=None):
    """``@flyc.kernel`` or ``@flyc.kernel(name=..., known_block_size=(x, y, z))``."""
    if fn is None:
        return lambda f: KernelFunction(f, name=name, known_block_size=known_block_size)
    return KernelFunction(fn, name=name, known_block_size=known_block_size)

"""``flydsl._mlir.ir``: the MLIR Python bindings' ``ir`` module, as FlyDSL code uses it, over our IR.

FlyDSL programs build and inspect IR through the upstream bindings (``ir.Context``, ``ir.Module``,
``ir.InsertionPoint``, ``ir.F32Type.get()``, ``ir.VectorType.get([4], f32)``, ``isinstance(v.type,
ir.FloatType)``, ``str(module)``). Here there is no native MLIR: every object handed out is one of
:mod:`flydsl.ir`'s own (types are our interned types, values our ``Value``, blocks our ``Block``), and
the classes below are *views*: ``isinstance`` checks and the bindings' constructors (``get``,
``parse``, casts such as ``ir.VectorType(t)``) over those objects. So a value built through this
module flows into ``fx`` code unchanged, and the other way round.

Values: ``ir.Value`` also accepts run-time ``fx`` values (``fx.Float32``, ``fx.Vector`` …), which is
what FlyDSL's ``ArithValue`` is (an ``ir.Value`` subclass); builders in :mod:`flydsl._mlir.dialects`
take either and return ``fx`` values where a DSL type exists.
"""

from __future__ import annotations

from .. import ir as _ir
from ..ir import types as _t

__all__ = [
    "Context", "Location", "Module", "InsertionPoint", "Type", "IntegerType", "IndexType", "FloatType",
    "F16Type", "BF16Type", "F32Type", "F64Type", "Float8E4M3FNType", "Float8E5M2Type", "Float8E4M3FNUZType",
    "VectorType", "FunctionType", "MemRefType", "Value", "OpResult", "BlockArgument", "Block", "Region",
    "Operation", "OpView", "Attribute", "IntegerAttr", "FloatAttr", "StringAttr", "BoolAttr", "UnitAttr",
    "ArrayAttr", "DictAttr", "TypeAttr", "DenseElementsAttr", "FlatSymbolRefAttr", "ShapedType",
    "unwrap", "wrap", "as_ir_value", "MLIRError",
]  # fmt: skip


class MLIRError(Exception):
    """An IR verification or parse failure (the bindings' ``MLIRError``)."""


# --------------------------------------------------------------------------------------------------
# Context, Location, InsertionPoint


class _CurrentMeta(type):
    """``Cls.current``: the innermost ``with Cls(...)`` (None outside any)."""

    @property
    def current(cls):
        stack = cls._stack
        if stack:
            return stack[-1]
        return cls._implicit()

    def _implicit(cls):
        return None


class Context(metaclass=_CurrentMeta):
    """A scope for building IR. Our IR needs no context; this one exists so FlyDSL's ``with
    ir.Context():`` blocks (and ``ir.Context.current is not None`` checks) behave as upstream.
    Inside a jit trace ``Context.current`` is the trace's context."""

    _stack: list = []

    def __init__(self):
        self.allow_unregistered_dialects = False
        self._loc = None

    @classmethod
    def _implicit(cls):
        from ..compiler import trace

        return _TRACE_CONTEXT if trace.current() is not None else None

    def __enter__(self):
        Context._stack.append(self)
        return self

    def __exit__(self, *exc):
        Context._stack.pop()
        return False

    def load_all_available_dialects(self) -> None:
        """All our dialects are always loaded."""

    def enable_multithreading(self, enable: bool = True) -> None:
        """Our IR is built by one Python thread; nothing to configure."""

    def append_dialect_registry(self, registry) -> None:
        """Dialects are registered at import; nothing to append."""

    def get_dialect_descriptor(self, name):
        return name


_TRACE_CONTEXT = Context()


class Location(metaclass=_CurrentMeta):
    """A source location; ``with loc:`` stamps the ops built inside with it."""

    _stack: list = []

    def __init__(self, loc: _ir.Location | None = None):
        self._loc = loc
        self._cm = None

    @staticmethod
    def unknown(context=None) -> Location:
        return Location(None)

    @staticmethod
    def file(filename: str, line: int, col: int, context=None) -> Location:
        return Location((str(filename), int(line), int(col)))

    @staticmethod
    def name(name: str, childLoc=None, context=None) -> Location:
        return childLoc if childLoc is not None else Location(None)

    @staticmethod
    def fused(locations, metadata=None, context=None) -> Location:
        locs = [x for x in locations if x is not None and x._loc is not None]
        return locs[0] if locs else Location(None)

    @staticmethod
    def callsite(callee, frames, context=None) -> Location:
        return callee

    def __enter__(self):
        Location._stack.append(self)
        if self._loc is not None:
            self._cm = _ir.location(self._loc)
            self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cm is not None:
            self._cm.__exit__(*exc)
            self._cm = None
        Location._stack.pop()
        return False

    def __str__(self) -> str:
        if self._loc is None:
            return "loc(unknown)"
        f, line, col = self._loc
        return f'loc("{f}":{line}:{col})'


class InsertionPoint(metaclass=_CurrentMeta):
    """``with InsertionPoint(block):`` appends the ops built inside to ``block``."""

    _stack: list = []

    def __init__(self, where):
        if isinstance(where, _ir.Op) or hasattr(where, "operation"):  # an op: insert at its body's end
            op = _op_of(where)
            where = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else op.parent
        if isinstance(where, Module):
            where = where.body
        if not isinstance(where, _ir.Block):
            raise TypeError(f"InsertionPoint takes a block, got {where!r}")
        self.block = where
        self._ip = _ir.InsertionPoint(where)

    @staticmethod
    def at_block_begin(block) -> InsertionPoint:
        # NOTE: our builder appends; a block being built is empty or extended at its end, which is
        # where FlyDSL's code inserts
        return InsertionPoint(block)

    @staticmethod
    def at_block_terminator(block) -> InsertionPoint:
        return InsertionPoint(block)

    def insert(self, op) -> None:
        op = _op_of(op)
        op.parent = self.block
        self.block.ops.append(op)

    def __enter__(self):
        InsertionPoint._stack.append(self)
        self._ip.__enter__()
        return self

    def __exit__(self, *exc):
        self._ip.__exit__(*exc)
        InsertionPoint._stack.pop()
        return False


# --------------------------------------------------------------------------------------------------
# Types: views over flydsl.ir.types


class _View(type):
    """A view class: ``isinstance(x, View)`` tests ``View._test(x)``; ``View(x)`` casts (returns ``x``)."""

    def __instancecheck__(cls, obj) -> bool:
        return cls._test(obj)

    def __call__(cls, obj=None, *args, **kwargs):
        if args or kwargs or obj is None:
            return cls._construct(obj, *args, **kwargs)
        obj = _unwrap_type(obj)
        if not cls._test(obj):
            raise ValueError(f"Cannot cast {obj} to {cls.__name__}")
        return obj


def _unwrap_type(t):
    if isinstance(t, _t.Type):
        return t
    if hasattr(t, "ir_type") and isinstance(t.ir_type, _t.Type):  # an fx numeric class
        return t.ir_type
    return t


class Type(metaclass=_View):
    """Any IR type (``ir.Type.parse("vector<4xf32>")``)."""

    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _t.Type)

    @classmethod
    def _construct(cls, obj, *args, **kwargs):
        raise TypeError("ir.Type(...) casts an existing type; build new ones with Type.parse or XType.get")

    @staticmethod
    def parse(text: str, context=None) -> _t.Type:
        s = text.strip()
        if s.startswith("!llvm.ptr"):
            return _llvm_ptr_type(s)
        try:
            return _t.parse_type(s)
        except (ValueError, KeyError) as e:
            raise MLIRError(f"cannot parse type {text!r}: {e}") from None


def _llvm_ptr_type(s: str) -> _t.Type:
    """``!llvm.ptr`` / ``!llvm.ptr<N>``: an untyped pointer is a byte pointer in address space N;
    address space 8 (AMD's buffer resource) is our ``!fly.buffer_rsrc``."""
    space = 0
    if s.startswith("!llvm.ptr<"):
        space = int(s[len("!llvm.ptr<") : -1])
    if space == 8:
        return _t.BufferRsrcType()
    return _t.PointerType(_t.i8, space)


class ShapedType(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _t.VectorType)


class IntegerType(metaclass=_View):
    """Signless ``iN`` (our integers are signless; signedness lives in the ops and the fx types)."""

    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _t.IntegerType)

    @classmethod
    def _construct(cls, obj, *a, **k):
        raise TypeError("use IntegerType.get_signless(width)")

    @staticmethod
    def get_signless(width: int, context=None) -> _t.IntegerType:
        return _t.IntegerType(int(width))

    get_signed = get_signless
    get_unsigned = get_signless

    @staticmethod
    def isinstance(obj) -> bool:
        return isinstance(obj, _t.IntegerType)


class IndexType(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _t.IndexType)

    @staticmethod
    def get(context=None) -> _t.IndexType:
        return _t.index

    @staticmethod
    def isinstance(obj) -> bool:
        return isinstance(obj, _t.IndexType)


class FloatType(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _t.FloatType)

    @staticmethod
    def isinstance(obj) -> bool:
        return isinstance(obj, _t.FloatType)


def _float_view(name: str, mlir_name: str):
    def _test(obj) -> bool:
        return isinstance(obj, _t.FloatType) and obj.name == name

    def get(context=None):
        return _t.FloatType(name)

    return _View(
        mlir_name,
        (),
        {
            "_test": staticmethod(_test),
            "get": staticmethod(get),
            "isinstance": staticmethod(_test),
            "__doc__": f"the ``{name}`` type",
        },
    )


F16Type = _float_view("f16", "F16Type")
BF16Type = _float_view("bf16", "BF16Type")
F32Type = _float_view("f32", "F32Type")
F64Type = _float_view("f64", "F64Type")
Float8E4M3FNType = _float_view("f8E4M3FN", "Float8E4M3FNType")
Float8E5M2Type = _float_view("f8E5M2", "Float8E5M2Type")
Float8E4M3FNUZType = _float_view("f8E4M3FNUZ", "Float8E4M3FNUZType")


class VectorType(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _t.VectorType)

    @staticmethod
    def get(shape, element_type, scalable=None, scalable_dims=None, context=None) -> _t.VectorType:
        return _t.VectorType(tuple(int(d) for d in shape), _unwrap_type(element_type))

    @staticmethod
    def isinstance(obj) -> bool:
        return isinstance(obj, _t.VectorType)


class FunctionType(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _t.FunctionType)

    @staticmethod
    def get(inputs, results, context=None) -> _t.FunctionType:
        return _t.FunctionType([_unwrap_type(t) for t in inputs], [_unwrap_type(t) for t in results])


class MemRefType(metaclass=_View):
    """Memrefs are fx tensors here (a pointer plus a layout); only the type test exists."""

    @staticmethod
    def _test(obj) -> bool:
        return False


# --------------------------------------------------------------------------------------------------
# Values, blocks, operations


def unwrap(v):
    """The IR value of ``v``: our ``Value`` as is; an fx value's ``ir_value()``; an op's single result."""
    if type(v) is _ir.Value:
        return v
    if hasattr(v, "ir_value") and callable(v.ir_value):
        return v.ir_value()
    if isinstance(v, OpView):
        return v.result
    if isinstance(v, _ir.Op):
        return v.result
    raise TypeError(f"expected an IR value, got {type(v).__name__} {v!r}")


as_ir_value = unwrap


def wrap(v: _ir.Value):
    """An IR value as the fx value of its type (``Float32``, ``Int32``, ``Vector`` …), or itself."""
    if type(v) is not _ir.Value:
        return v
    t = v.type
    try:
        if isinstance(t, _t.VectorType):
            from ..expr.vector import Vector

            if len(t.shape) == 1:
                return Vector(v)
            return v
        if isinstance(t, (_t.IntegerType, _t.IndexType, _t.FloatType)):
            from ..expr.numeric import numeric_type_of

            return numeric_type_of(t)(v)
    except (TypeError, ValueError):
        return v
    return v


class Value(metaclass=_View):
    """An SSA value: our ``Value``, or a run-time fx value (as FlyDSL's ``ArithValue`` subclasses it)."""

    _fly_value_view = True  # ``v.to(ir.Value)`` keeps the fx Vector (flydsl.expr.vector)

    @staticmethod
    def _test(obj) -> bool:
        if type(obj) is _ir.Value:
            return True
        if getattr(obj, "_is_numeric", False) or getattr(obj, "_is_vector", False):
            try:
                return type(obj.ir_value()) is _ir.Value and not (hasattr(obj, "is_static") and obj.is_static())
            except Exception:
                return False
        return False

    @classmethod
    def _construct(cls, obj, *a, **k):
        raise TypeError("ir.Value(x) casts an existing value")


class OpResult(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return type(obj) is _ir.Value and isinstance(obj.owner, _ir.Op)


class BlockArgument(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return type(obj) is _ir.Value and isinstance(obj.owner, _ir.Block)


class Block(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _ir.Block)


class Region(metaclass=_View):
    @staticmethod
    def _test(obj) -> bool:
        return isinstance(obj, _ir.Region)


def _op_of(x) -> _ir.Op:
    if isinstance(x, _ir.Op):
        return x
    op = getattr(x, "_op", None)
    if isinstance(op, _ir.Op):
        return op
    raise TypeError(f"expected an operation, got {x!r}")


class _Attributes:
    """``op.attributes``: a dict-like view of an op's attributes (values are plain Python here)."""

    def __init__(self, op: _ir.Op):
        self._op = op

    def __getitem__(self, name):
        return self._op.attrs[name]

    def __setitem__(self, name, value):
        self._op.attrs[name] = attr_value(value)

    def __delitem__(self, name):
        del self._op.attrs[name]

    def __contains__(self, name) -> bool:
        return name in self._op.attrs

    def __iter__(self):
        return iter(self._op.attrs)

    def __len__(self) -> int:
        return len(self._op.attrs)

    def get(self, name, default=None):
        return self._op.attrs.get(name, default)


class OpView:
    """An operation as the bindings present it: ``.result``, ``.results``, ``.operation``, ``.attributes``."""

    def __init__(self, op: _ir.Op):
        self._op = op

    @property
    def operation(self) -> OpView:
        return self

    @property
    def opview(self) -> OpView:
        return self

    @property
    def name(self) -> str:
        return self._op.name

    @property
    def results(self) -> list:
        return [wrap(r) for r in self._op.results]

    @property
    def result(self):
        if len(self._op.results) != 1:
            raise ValueError(f"{self._op.name} has {len(self._op.results)} results, not one")
        return wrap(self._op.results[0])

    @property
    def operands(self) -> list:
        return list(self._op.operands)

    @property
    def regions(self) -> list:
        return self._op.regions

    @property
    def attributes(self) -> _Attributes:
        return _Attributes(self._op)

    @property
    def parent(self):
        p = self._op.parent_op
        return OpView(p) if p is not None else None

    @property
    def location(self) -> Location:
        return Location(self._op.loc)

    def verify(self) -> bool:
        try:
            _ir.verify(self._op)
        except _ir.VerifyError as e:
            raise MLIRError(str(e)) from None
        return True

    def erase(self) -> None:
        blk = self._op.parent
        if blk is not None:
            blk.ops.remove(self._op)

    def __str__(self) -> str:
        return _ir.print_op(self._op)

    def get_asm(self, print_generic_op_form: bool = False, enable_debug_info: bool = False, **kw) -> str:
        return _ir.print_op(self._op, locs=enable_debug_info, generic=print_generic_op_form)


Operation = OpView


class Module:
    """``ir.Module.create()`` / ``ir.Module.parse(text)``: a ``builtin.module``."""

    def __init__(self, op: _ir.Op):
        self._op = op

    @staticmethod
    def create(loc=None) -> Module:
        return Module(_ir.new_module())

    @staticmethod
    def parse(text: str, context=None) -> Module:
        try:
            return Module(_ir.parse_module(text))
        except _ir.ParseError as e:
            raise MLIRError(str(e)) from None

    @property
    def body(self) -> _ir.Block:
        return self._op.regions[0].blocks[0]

    @property
    def operation(self) -> OpView:
        return OpView(self._op)

    @property
    def context(self):
        return Context.current

    def __str__(self) -> str:
        return _ir.print_op(self._op)


# --------------------------------------------------------------------------------------------------
# Attributes: plain Python values in our IR; these classes build and recognize them


class Attribute:
    """An attribute as the bindings build it; ``attr_value`` turns it into our op attribute value."""

    def __init__(self, value, type=None):
        self.value = value
        self.type = type

    @staticmethod
    def parse(text: str, context=None):
        s = text.strip()
        if s in ("true", "false"):
            return BoolAttr(s == "true")
        if s.startswith('"') and s.endswith('"'):
            return StringAttr(s[1:-1])
        try:
            return IntegerAttr(int(s.split(":")[0].strip()), _t.i64)
        except ValueError:
            pass
        try:
            return FloatAttr(float(s.split(":")[0].strip()), _t.f32)
        except ValueError:
            return StringAttr(s)

    def __str__(self) -> str:
        return str(self.value)

    def __eq__(self, other) -> bool:
        return attr_value(other) == self.value

    def __hash__(self) -> int:
        return hash(self.value)


class IntegerAttr(Attribute):
    @staticmethod
    def get(type, value) -> IntegerAttr:
        return IntegerAttr(int(value), _unwrap_type(type))


class FloatAttr(Attribute):
    @staticmethod
    def get(type, value) -> FloatAttr:
        return FloatAttr(float(value), _unwrap_type(type))

    @staticmethod
    def get_f32(value) -> FloatAttr:
        return FloatAttr(float(value), _t.f32)


class StringAttr(Attribute):
    @staticmethod
    def get(value, context=None) -> StringAttr:
        return StringAttr(str(value))


class BoolAttr(Attribute):
    @staticmethod
    def get(value, context=None) -> BoolAttr:
        return BoolAttr(bool(value), _t.i1)


class UnitAttr(Attribute):
    @staticmethod
    def get(context=None) -> UnitAttr:
        return UnitAttr(True)


class ArrayAttr(Attribute):
    @staticmethod
    def get(values, context=None) -> ArrayAttr:
        return ArrayAttr([attr_value(v) for v in values])


class DictAttr(Attribute):
    @staticmethod
    def get(values=None, context=None) -> DictAttr:
        return DictAttr({k: attr_value(v) for k, v in (values or {}).items()})


class TypeAttr(Attribute):
    @staticmethod
    def get(t, context=None) -> TypeAttr:
        return TypeAttr(_unwrap_type(t))


class FlatSymbolRefAttr(Attribute):
    @staticmethod
    def get(name, context=None) -> FlatSymbolRefAttr:
        return FlatSymbolRefAttr(_ir.SymbolRef(name))


class DenseElementsAttr(Attribute):
    """A splat or list of elements for a vector constant."""

    @staticmethod
    def get_splat(shaped_type, element_attr) -> DenseElementsAttr:
        return DenseElementsAttr(attr_value(element_attr), _unwrap_type(shaped_type))

    @staticmethod
    def get(array, signless=True, type=None, shape=None, context=None) -> DenseElementsAttr:
        import numpy as np

        return DenseElementsAttr(np.asarray(array), _unwrap_type(type) if type is not None else None)


def attr_value(a):
    """Our op attribute value for a bindings attribute (or a plain Python value, returned as is)."""
    if isinstance(a, Attribute):
        return a.value
    return a

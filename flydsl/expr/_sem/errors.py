"""The error raised when a run-time value is forced into a Python protocol, what to write instead, and the
protocol methods of a DSL scalar that raise it."""

from __future__ import annotations

from ...ir import Value

__all__ = ["RuntimeValueError", "runtime_value_error", "RUNTIME_VALUE_HINT", "StaticValueProtocol"]

RUNTIME_VALUE_HINT = (
    "It is a run-time value (known only when the kernel runs), so Python cannot use it here. "
    "Use `fx.const_expr(...)` for a compile-time test, `fx.range_constexpr` for an unrolled loop, "
    "`cond.select(a, b)` to pick a value, or an `if` on it inside the kernel (it becomes scf.if)."
)

# what to write instead, per Python protocol a run-time value was forced into
_PROTOCOL_FIX = {
    "bool": (
        "a Python bool (`if`, `while`, `and`/`or`/`not`, `bool()`)",
        "Use `fx.const_expr(...)` for a test known at compile time, `cond.select(a, b)` to pick a value, "
        "or write the `if`/`while` in a @flyc.kernel body (it becomes scf.if/scf.while). "
        'max()/min()/sorted()/`in` over a Vector compare lanes in Python: use v.reduce("max"), '
        'v.reduce("min"), fx.max/fx.min, or (v == x).reduce("or") instead.',
    ),
    "int": (
        "a Python int (`int()`)",
        "Its value exists only when the kernel runs: keep computing with it as a DSL value, or convert it "
        "with `.to(fx.Int64)`.",
    ),
    "float": (
        "a Python float (`float()`)",
        "Its value exists only when the kernel runs: keep computing with it as a DSL value, or convert it "
        "with `.to(fx.Float32)`.",
    ),
    "hash": (
        "a key of a Python dict or a member of a set (`d[x]`, `x in d`)",
        "Its value exists only when the kernel runs, so no Python dict can look it up: index a Vector or a "
        "tensor with it instead (a table of constants becomes `fx.Vector`/a tensor argument), or pick with "
        "`cond.select(a, b)`.",
    ),
    "format": (
        "a formatted Python string (a format spec such as `{x:04d}` or `format(x, ...)`)",
        'Its value exists only when the kernel runs: print it with `fx.printf("{}", x)`, which formats on the device.',
    ),
    "index": (
        "a Python index (list/tuple index, slice or `range()` bound)",
        "Index a Vector with it instead (`vec[i]` emits vector.extractelement), pick with `cond.select(a, b)`, "
        "or loop with `range(n)` in a @flyc.kernel body (it becomes scf.for); an unrolled "
        "`fx.range_constexpr` loop needs a compile-time bound.",
    ),
}


# protocols whose misuse has a catalogue entry (the name of the Diag in flydsl.compiler.errors)
_PROTOCOL_DIAG = {"hash": "RUNTIME_DICT_KEY", "format": "RUNTIME_FORMAT"}


class RuntimeValueError(TypeError, RuntimeError):
    """A run-time DSL value was used where Python needs a real value (``bool()``, ``int()``, an index…).

    It is both a ``TypeError`` (flydsl's contract) and a ``RuntimeError`` (what FlyDSL raises)."""


def runtime_value_error(type_name: str, protocol: str) -> RuntimeValueError:
    """The error for forcing a run-time ``type_name`` value into a Python ``protocol`` (see _PROTOCOL_FIX)."""
    what, fix = _PROTOCOL_FIX[protocol]
    e = RuntimeValueError(
        f"cannot use a run-time {type_name} as {what}: its value is known only when the kernel runs. {fix}"
    )
    diag = _PROTOCOL_DIAG.get(protocol)
    if diag is not None:  # catalogued (flydsl.compiler.errors): the compiler reports it with its FLY id
        e.diag, e.fields = diag, {"type": type_name}
    return e


class StaticValueProtocol:
    """Python's value protocols on a DSL scalar (a mixin of ``Numeric``; ``self._v`` is a Python value or an
    IR value): only compile-time values become Python values, a run-time one raises
    :class:`RuntimeValueError` naming what to write instead; a scalar is never a sequence."""

    __slots__ = ()

    def _static_or_raise(self, protocol: str):
        if type(self._v) is Value:
            raise runtime_value_error(type(self).__name__, protocol)
        return self._v

    def __bool__(self) -> bool:
        return bool(self._static_or_raise("bool"))

    def __int__(self) -> int:
        return int(self._static_or_raise("int"))

    def __index__(self) -> int:
        v = self._static_or_raise("index")
        if not isinstance(v, (int, bool)):
            raise TypeError(f"a {type(self).__name__} is not an integer index")
        return int(v)

    def __float__(self) -> float:
        return float(self._static_or_raise("float"))

    def __iter__(self):
        raise TypeError(f"a {type(self).__name__} is a scalar and cannot be iterated")

    def __len__(self):
        raise TypeError(f"a {type(self).__name__} is a scalar and has no len()")

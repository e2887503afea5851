"""The cached call's fast path: a dispatcher generated per argument pattern, keyed by cheap attributes.

A ``@flyc.jit`` call whose arguments have the types (and, for torch tensors, the ranks) it had before runs
one generated Python function, :func:`make_dispatcher`'s ``dispatch(args)``:

1. guards: each argument's exact type and each torch tensor's rank (another pattern: its own dispatcher);
   a tensor's unit last stride, 32-bit dims and strides, an int's range (else the full path);
2. the *fast key*: the environment snapshot, the compile hints, and per argument only what can change the
   compiled code among values of that type — a torch tensor's ``dtype``, ``data_ptr() & 15`` (its
   alignment class) and ``is_cuda``; an int's 32/64-bit class; a Constexpr's value;
3. the dependency watch (identity of the compile-time globals and closure cells, see
   :meth:`flydsl.compiler.deps.Deps.watcher`);
4. one dict lookup, then the specialization's ``run(*abi)`` (the runtime's launch plan calling the
   driver) with the raw ABI values read in step 1: pointers as ints, the stream handle as an int.

The fast key is at least as fine as the full key of :mod:`.specialize` (two calls with one fast key have
one full key), so a fast hit is always the specialization the full path would pick. A miss returns the
fast key and the caller takes the full path, which checks everything, compiles if needed, launches,
and then registers the fast key (:meth:`Dispatcher.register`). Arguments the guards do not cover (other
types, non-unit last strides, values past 32 bits, ...) go through the full path on every call; argument
types without a specialized reader use their full converter inside the dispatcher.
"""

from __future__ import annotations

import inspect

from ..expr.typing import Stream, stream_handle
from ..runtime.args import DEFAULT_STREAM, I32_MAX, TensorRef
from ..runtime.extent import torch_view_inside
from .deps import freeze
from .specialize import Param, is_torch_tensor_type, stream_conv, tensor_conv, value_conv

__all__ = ["make_binder", "make_dispatcher", "pattern_of", "NOFAST", "OTHER_PATTERN"]

NOFAST = object()  # the full path, without registering a fast key
OTHER_PATTERN = object()  # the arguments' types or ranks differ from the dispatcher's pattern

_SIMPLE_CONSTS = (int, str, bool, float, type(None))  # hashable by type: their value is the key
_TENSOR_CONVS = (value_conv, tensor_conv)  # a torch tensor reads the same through both


def make_binder(params: list[Param], defaults: list):
    """A function with the launcher's own signature returning the tuple of every argument (defaults
    filled): Python's own argument binding, at the cost of one call (``inspect.Signature.bind`` costs
    several µs). Binding errors are Python's ``TypeError`` messages."""
    parts, ns, seen_kwonly = [], {}, False
    for i, (p, d) in enumerate(zip(params, defaults)):
        if p.kind == inspect.Parameter.KEYWORD_ONLY and not seen_kwonly:
            parts.append("*")
            seen_kwonly = True
        if d is inspect.Parameter.empty:
            parts.append(p.name)
        else:
            ns[f"_d{i}"] = d
            parts.append(f"{p.name}=_d{i}")
        if p.kind == inspect.Parameter.POSITIONAL_ONLY and (
            i + 1 == len(params) or params[i + 1].kind != inspect.Parameter.POSITIONAL_ONLY
        ):
            parts.append("/")
    names = ", ".join(p.name for p in params)
    src = f"def bind({', '.join(parts)}):\n    return ({names}{',' if params else ''})\n"
    exec(compile(src, "<flyc.jit binder>", "exec"), ns)
    return ns["bind"]


def pattern_of(args, params: list[Param]) -> tuple:
    """What a dispatcher is specialized on: each argument's type, and each torch tensor's rank."""
    out = []
    for p, a in zip(params, args):
        t = type(a)
        out.append((t, a.dim() if p.conv in _TENSOR_CONVS and is_torch_tensor_type(t) else -1))
    return tuple(out)


def _stream_value(x, default) -> int:
    v = x.value if type(x) is Stream else x
    return default() if v is None else stream_handle(v)


def _generic(conv, a) -> tuple:
    """(key part, ABI values with tensor pointers as ints) of one argument through its full converter."""
    key, vals = [], []
    conv(a, key, vals)
    return tuple(key), [v.ptr if type(v) is TensorRef else v for v in vals]


def _resolve(vals: list, default) -> list:
    """The default stream's handle in place of :data:`DEFAULT_STREAM`."""
    return [default() if v is DEFAULT_STREAM else v for v in vals]


class _Gen:
    def __init__(self):
        self.ns = {
            "OTHER": OTHER_PATTERN,
            "NOFAST": NOFAST,
            "STREAM": _stream_value,
            "GENERIC": _generic,
            "RESOLVE": _resolve,
            "VIEW_INSIDE": torch_view_inside,
        }
        self.ranks: list[str] = []  # return OTHER_PATTERN unless these hold (the pattern's tensor ranks)
        self.guards: list[str] = []  # return NOFAST unless these hold
        self.body: list[str] = []
        self.key: list[str] = []
        self.vals: list[str] = []
        self.late: list[str] = []  # lines after the lookup (the stream needs the entry's default)

    def const(self, name: str, value) -> str:
        self.ns[name] = value
        return name

    def torch_tensor(self, i: int, rank: int) -> None:
        a, s, r, p = f"a{i}", f"s{i}", f"r{i}", f"p{i}"
        self.body.append(f"    {s} = {a}.shape; {r} = {a}.stride(); {p} = {a}.data_ptr()")
        dims = [f"{s}[{d}]" for d in range(rank)]
        strides = [f"{r}[{d}]" for d in range(rank - 1)]
        self.ranks.append(f"len({s}) == {rank}")
        self.guards.append(f"({a}._base is None or VIEW_INSIDE({a}))")  # a view past its storage: FLY223
        self.guards.append(f"{r}[{rank - 1}] == 1")
        self.guards.extend(f"{x} <= {I32_MAX}" for x in dims + strides)  # torch strides are >= 0
        self.key += [f"{a}.dtype", f"{p} & 15", f"{a}.is_cuda"]
        self.vals += [p, *dims, *strides]

    def generic(self, i: int, conv) -> None:
        c = self.const(f"C{i}", conv)
        self.body.append(f"    kp{i}, v{i} = GENERIC({c}, a{i})")
        self.late.append(f"    v{i} = RESOLVE(v{i}, D)")
        self.key.append(f"kp{i}")
        self.vals.append(f"*v{i}")


def make_dispatcher(jf, params: list[Param], pattern: tuple, implicit_stream: bool, env, fast: dict):
    """``dispatch(args)`` for one argument pattern: None after launching a cached specialization; the
    fast key (a tuple) on a miss; :data:`NOFAST` or :data:`OTHER_PATTERN` when the full path must run.

    ``jf`` is read for its compile hints, its dependency watch and its hit counter; ``env`` is the
    environment snapshot: ``(get, keys)`` whose reads are inlined into the key, or a function; ``fast`` maps
    fast keys to ``(run, default_stream)``.
    """
    g = _Gen()
    g.ns.update(JF=jf, FAST=fast, FREEZE=freeze)
    if callable(env):
        g.ns["ENV"] = env
        env_key = ["ENV()"]
    else:
        g.ns["ENVGET"] = env[0]
        env_key = [f"ENVGET({k!r})" for k in env[1]]
    n = len(params)
    for i, (p, (tp, rank)) in enumerate(zip(params, pattern)):
        g.ns[f"T{i}"] = tp
        conv = p.conv
        num = getattr(conv, "numeric", None)
        cx = getattr(conv, "constexpr", None)
        if conv in _TENSOR_CONVS and rank >= 1:
            g.torch_tensor(i, rank)
        elif num is not None and tp is int and conv.int_range[0] <= conv.int_range[1]:
            lo, hi = conv.int_range
            g.guards.append(f"{lo} <= a{i} <= {hi}")
            g.vals.append(f"a{i}")
        elif num is not None and tp is float and num.is_float and num.width in (32, 64):
            g.vals.append(f"a{i}")  # packed as f32/f64 like the full path's value
        elif conv is value_conv and tp is int:
            g.guards.append(f"{-(1 << 63)} <= a{i} < {1 << 64}")
            g.key.append(f"a{i} <= {I32_MAX} and a{i} >= {-(1 << 31)}")
            g.vals.append(f"a{i}")
        elif conv is value_conv and tp in (float, bool):
            g.vals.append(f"a{i}")
        elif conv is value_conv and tp is type(None):
            pass
        elif (conv is stream_conv or (conv is value_conv and (tp is Stream or hasattr(tp, "cuda_stream")))) and (
            tp is type(None) or tp is int or tp is Stream or hasattr(tp, "cuda_stream")
        ):
            g.late.append(f"    st{i} = STREAM(a{i}, D)")
            g.vals.append(f"st{i}")
        elif cx is not None and tp in _SIMPLE_CONSTS and cx.accepts(_example(tp)):
            g.key.append(f"a{i}")
        else:
            g.generic(i, conv)
    if implicit_stream:
        g.vals.append("D()")
    args = ", ".join(f"a{i}" for i in range(n))
    lines = [
        "def dispatch(args):",
        f"    ({args}{',' if n else ''}) = args" if n else "    pass",
    ]
    if n:
        lines.append("    if " + " or ".join(f"type(a{i}) is not T{i}" for i in range(n)) + ":")
        lines.append("        return OTHER")
    lines += g.body
    if g.ranks:
        lines.append("    if not (" + " and ".join(g.ranks) + "):")
        lines.append("        return OTHER")
    if g.guards:
        lines.append("    if not (" + " and ".join(g.guards) + "):")
        lines.append("        return NOFAST")
    lines.append("    h = JF.compile_hints")
    lines.append(f"    k = ({', '.join(env_key + ['FREEZE(h) if h else None'] + g.key)})")
    lines.append("    if not JF._watch():")
    lines.append("        return NOFAST")
    lines.append("    e = FAST.get(k)")
    lines.append("    if e is None:")
    lines.append("        return k")
    lines.append("    run, D = e")
    lines += g.late
    lines.append("    JF.hits += 1")
    lines.append(f"    run({', '.join(g.vals)})")
    lines.append("    return None")
    src = "\n".join(lines) + "\n"
    exec(compile(src, f"<flyc.jit dispatch {getattr(jf, '__name__', '?')}>", "exec"), g.ns)
    fn = g.ns["dispatch"]
    fn.source = src
    return fn


def _example(tp):
    return {int: 0, str: "", bool: False, float: 0.0, type(None): None}[tp]

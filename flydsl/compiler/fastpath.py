"""The cached call's fast path: a dispatcher generated per argument pattern, keyed by cheap attributes.

A ``@flyc.jit`` call whose arguments have the types (and, for torch tensors, the ranks) it had before runs
one generated Python function — the pattern's *entry*, installed as the ``__call__`` of the jit function's
own class, so no other Python frame runs before it (:func:`make_dispatcher`):

1. guards: each argument's exact type and each torch tensor's rank (another pattern: its own dispatcher);
   a tensor's unit last stride, 32-bit dims and strides, an int's range (else the full path);
2. the *fast key*: the environment snapshot, the compile hints, and per argument only what can change the
   compiled code among values of that type — a torch tensor's ``dtype``, ``data_ptr() & 15`` (its
   alignment class), ``is_cuda`` and its strides' ``| & 15`` (their divisibility class); an int's 32/64-bit
   class; a Constexpr's value;
3. the dependency watch (identity of the compile-time globals and closure cells, see
   :meth:`flydsl.compiler.deps.Deps.watcher`);
4. the first specialization registered for the pattern is *inlined*: its fast key compared part by part
   (no key tuple, no hashing) and its launch plan's lines pasted in (grid arithmetic folded with the
   arguments' known ranges, the kernel's launch: one call of the native helper or ``pack_into`` + ctypes);
   other specializations: one dict lookup, then the specialization's ``run(*abi)``. ABI values are raw:
   pointers and the stream handle as ints.

The fast key is at least as fine as the full key of :mod:`.specialize` (two calls with one fast key have
one full key), so a fast hit is always the specialization the full path would pick. A miss goes to the full
path (``JitFunction._slow``), which checks everything, compiles if needed, launches, and then registers the
fast key (``JitFunction._register``). Arguments the guards do not cover (other types, non-unit last
strides, values past 32 bits, ...) go through the full path on every call; argument types without a
specialized reader use their full converter inside the dispatcher. Keyword arguments bind natively (the
entry has the launcher's parameter names); missing, extra or unknown arguments go to the full path, whose
binder raises FLY212.
"""

from __future__ import annotations

import functools
import inspect

from ..expr.typing import Stream, stream_handle
from ..runtime.args import DEFAULT_STREAM, I32_MAX, TensorRef
from ..runtime.extent import torch_view_inside
from ..runtime.native import same_items as _native_same_items
from ..runtime.torch_args import reader_type as _torch_reader_type
from .deps import freeze
from .diagnostics import FlyDSLError
from .kernel_function import ANY_HINTS as _ANY_HINTS
from .specialize import Param, is_torch_tensor_type, stream_conv, tensor_conv, value_conv
from .trace import ANY_TRACE as _ANY_TRACE

__all__ = ["make_binder", "make_dispatcher", "pattern_of", "NOFAST", "OTHER_PATTERN", "MISSING"]

NOFAST = object()  # the full path, without registering a fast key
OTHER_PATTERN = object()  # the arguments' types or ranks differ from the dispatcher's pattern

_SIMPLE_CONSTS = (int, str, bool, float, type(None))  # hashable by type: their value is the key
_TENSOR_CONVS = (value_conv, tensor_conv)  # a torch tensor reads the same through both


def _signature(params: list[Param], names: list[str], ns: dict) -> str:
    """The parameter list of ``params`` (kinds and defaults) under ``names``; the defaults go into ``ns``."""
    parts, seen_kwonly = [], False
    for i, (p, name) in enumerate(zip(params, names)):
        if p.kind == inspect.Parameter.KEYWORD_ONLY and not seen_kwonly:
            parts.append("*")
            seen_kwonly = True
        if p.default is inspect.Parameter.empty:
            parts.append(name)
        else:
            ns[f"_d{i}"] = p.default
            parts.append(f"{name}=_d{i}")
        if p.kind == inspect.Parameter.POSITIONAL_ONLY and (
            i + 1 == len(params) or params[i + 1].kind != inspect.Parameter.POSITIONAL_ONLY
        ):
            parts.append("/")
    return ", ".join(parts)


def make_binder(params: list[Param]):
    """A function with the launcher's own signature returning the tuple of every argument (defaults
    filled): Python's own argument binding, at the cost of one call (``inspect.Signature.bind`` costs
    several µs). Binding errors are Python's ``TypeError`` messages."""
    ns: dict = {}
    names = [p.name for p in params]
    src = f"def bind({_signature(params, names, ns)}):\n    return ({', '.join(names)}{',' if params else ''})\n"
    exec(compile(src, "<flydsl binder>", "exec"), ns)
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


_P = "_f_"  # the prefix of every name the generated code defines (argument names are the user's)


class _Missing:
    """The type of :data:`MISSING` (no argument pattern has it)."""

    __slots__ = ()


MISSING = _Missing()  # the default of a required parameter in an entry's signature (a missing argument)


class _Gen:
    def __init__(self, names: list[str]):
        self.a = names  # the argument names in the generated code
        self.ns = {
            "_f_OTHER": OTHER_PATTERN,
            "_f_NOFAST": NOFAST,
            "_f_STREAM": _stream_value,
            "_f_GENERIC": _generic,
            "_f_RESOLVE": _resolve,
            "_f_type": type,
            "_f_len": len,
            "_f_VIEW_INSIDE": torch_view_inside,
        }
        self.ranks: list[str] = []  # fail with OTHER_PATTERN unless these hold (the pattern's tensor ranks)
        self.guards: list[str] = []  # fail with NOFAST unless these hold
        self.body: list[str] = []
        self.key: list[str] = []
        self.vals: list[str] = []
        self.ranges: list = []  # per ABI value: (lo, hi) when the guards make it an int in that range
        self.late: list[str] = []  # lines after the lookup (the stream needs the entry's default)
        self.streams: list[tuple[int, object]] = []  # (argument, its default) of each stream argument
        self.generic_args: list[int] = []  # arguments converted by their full converter
        self.env_names: tuple = ()  # the environment's keys in os.environ's own dict (when read from it)
        # torch tensor argument -> (rank, its first key part's index, its first value's index, its guards)
        self.tensors: dict[int, tuple[int, int, int, list[str]]] = {}

    def const(self, name: str, value) -> str:
        self.ns[_P + name] = value
        return _P + name

    def val(self, expr: str, rng=None) -> None:
        self.vals.append(expr)
        self.ranges.append(rng)

    def torch_tensor(self, i: int, rank: int) -> None:
        a, s, r, p = self.a[i], f"_f_s{i}", f"_f_r{i}", f"_f_p{i}"
        self.body.append(f"    {s} = {a}.shape; {r} = {a}.stride(); {p} = {a}.data_ptr()")
        dims = [f"{s}[{d}]" for d in range(rank)]
        strides = [f"{r}[{d}]" for d in range(rank - 1)]
        self.ranks.append(f"_f_len({s}) == {rank}")
        guards = [f"({a}._base is None or _f_VIEW_INSIDE({a}))", f"{r}[{rank - 1}] == 1"]  # FLY223: a view past
        guards += [f"{x} <= {I32_MAX}" for x in dims + strides]  # its storage; torch strides are >= 0
        self.guards += guards
        self.tensors[i] = (rank, len(self.key), len(self.vals), guards)
        self.key += [f"{a}.dtype", f"{p} & 15", f"{a}.is_cuda"]  # what TensorReader compares, in this order
        if rank > 1:  # the run-time strides' divisibility class (specialize's last dyn_tensor part)
            self.key.append(f"({' | '.join(strides)}) & 15")
        self.val(p)
        for x in dims + strides:
            self.val(x, (0, I32_MAX))

    def generic(self, i: int, conv) -> None:
        c = self.const(f"C{i}", conv)
        self.body.append(f"    _f_kp{i}, _f_v{i} = _f_GENERIC({c}, {self.a[i]})")
        self.late.append(f"    _f_v{i} = _f_RESOLVE(_f_v{i}, _f_D)")
        self.key.append(f"_f_kp{i}")
        self.val(f"*_f_v{i}")
        self.generic_args.append(i)


def _expect(g: _Gen, expr: str, value, j: int) -> str:
    """A condition: ``expr`` evaluates to the key part ``value`` (identity where that is what equality
    means and costs less)."""
    if value is None or value is True or value is False:
        return f"({expr}) is {value!r}"
    name = g.const(f"E{j}", value)
    if type(value).__name__ == "dtype" and type(value).__module__ == "torch":
        return f"({expr}) is {name}"  # torch dtypes are singletons
    return f"({expr}) == {name}"


def _readers(g: _Gen, env_key: list[str], fkey: tuple) -> bool:
    """Whether the inlined specialization reads its torch tensors through the C++ reader
    (:mod:`flydsl.runtime.torch_args`): every argument has a fast reader and the reader is loaded. Defines
    ``_f_R<i>``, one ``TensorReader`` per tensor holding the key parts it must see."""
    if not g.tensors or g.generic_args:
        return False
    t = _torch_reader_type()
    if t is None:
        return False
    first = len(env_key) + 1  # the key parts after the environment and the hints
    try:
        for i, (rank, k0, _, _) in g.tensors.items():
            dtype, align, is_cuda = fkey[first + k0 : first + k0 + 3]
            strides_class = fkey[first + k0 + 3] if rank > 1 else -1  # the strides' divisibility part
            g.ns[f"_f_R{i}"] = t(rank, dtype, align, is_cuda, torch_view_inside, strides_class)
    except (TypeError, ValueError):  # key parts the reader cannot hold: the Python reads
        return False
    return True


def _inline_block(g: _Gen, env_key: list[str], fkey: tuple, run, default, readers: bool = False) -> list[str]:
    """The lines launching the entry of fast key ``fkey`` when the arguments' key parts equal it: ``fkey``
    compared part by part (no key tuple, no hashing, no lookup) and, where ``run`` is a launch plan, its
    lines pasted in (no call). Falls through to the keyed lookup otherwise.

    With ``readers`` (:func:`_readers`) the block stands first in the entry, before any Python read: the
    types, then each torch tensor through its ``TensorReader`` (its guards and key parts checked in C++,
    its pointer, dims and strides unpacked from the tuple it returns), then the other arguments' guards
    and key parts. Any miss falls through to the Python reads and the keyed lookup (which finds this
    specialization too when only a reader refused)."""
    exprs = [*env_key, "HINTS", *g.key]
    conds = []
    vals = list(g.vals)
    unpack = []
    if readers:
        n = len(g.a)
        conds.append(" and ".join(f"_f_type({g.a[i]}) is _f_T{i}" for i in range(n)))
        first = len(env_key) + 1
        tguards = set()
        for i, (rank, k0, v0, guards) in g.tensors.items():
            conds.append(f"(_f_t{i} := _f_R{i}({g.a[i]})) is not None")
            nparts = 4 if rank > 1 else 3  # dtype, alignment class, is_cuda (, the strides' class)
            exprs[first + k0 : first + k0 + nparts] = [None] * nparts
            names = [f"_f_x{i}_{m}" for m in range(2 * rank)]  # pointer, dims, strides but the last
            vals[v0 : v0 + 2 * rank] = names
            unpack.append(f"        {', '.join(names)} = _f_t{i}")
            tguards.update(guards)
        conds += [x for x in g.guards if x not in tguards]
    same = _native_same_items()
    envd = getattr(g.ns.get("_f_ENVGET"), "__self__", None)
    if same is not None and type(envd) is dict and g.env_names:  # the environment's part in one C call
        g.ns.update(_f_SAME=same, _f_ENVD=envd)
        names, values = g.const("ENVK", g.env_names), g.const("ENVV", fkey[: len(env_key)])
        conds.append(f"_f_SAME(_f_ENVD, {names}, {values})")
        exprs = [None] * len(env_key) + exprs[len(env_key) :]
    for j, (expr, value) in enumerate(zip(exprs, fkey)):
        if expr is None:
            continue
        if expr == "HINTS":
            # the function's own hints (an attribute read; the ``compile_hints`` property costs a thread-local
            # read and a call) and, unless it is a copy made for ambient hints, no ambient hints anywhere
            hints = "_f_JF._own_hints"
            conds.append(f"not {hints}" if value is None else f"_f_FREEZE({hints}) == {g.const('EH', value)}")
            if not getattr(g.ns["_f_JF"], "_hinted_copy", False):
                conds.append("not _f_AH")
        else:
            conds.append(_expect(g, expr, value, j))
    g.ns["_f_ID"] = default
    idcall = "_f_ID()"
    if type(default) is functools.partial and not default.keywords:  # torch's stream getter bound to a device
        g.ns["_f_IDF"] = default.func
        idcall = f"_f_IDF({', '.join(g.const(f'IDA{k}', v) for k, v in enumerate(default.args))})"
    lines = ["    if " + " and ".join(conds) + " and _f_CS.watch():", "        _f_CS.hits += 1", *unpack]
    for i, dflt in g.streams:  # the stream once, into a local (plan lines may read a value twice)
        a, tp = g.a[i], g.ns[f"_f_T{i}"]
        if tp is not Stream and hasattr(tp, "cuda_stream"):  # a torch stream: its handle never changes, so the
            # last one's is kept with the object itself (a strong reference: its id cannot be reused meanwhile)
            sc = g.const(f"SC{i}", [(None, None)])
            lines += [
                f"        _f_sc{i} = {sc}[0]",
                f"        if {a} is _f_sc{i}[0]:",
                f"            _f_st{i} = _f_sc{i}[1]",
                "        else:",
                f"            _f_st{i} = _f_STREAM({a}, _f_ID)",
                f"            {sc}[0] = ({a}, _f_st{i})",
            ]
        elif type(dflt) is Stream and dflt.value is None:  # the parameter left to its default: no call
            sd = g.const(f"SD{i}", dflt)
            lines.append(f"        _f_st{i} = {idcall} if {a} is {sd} or {a} is None else _f_STREAM({a}, _f_ID)")
        else:
            lines.append(f"        _f_st{i} = _f_STREAM({a}, _f_ID)")
    if "_f_D()" in vals:
        lines.append(f"        _f_st_ = {idcall}")
        vals = ["_f_st_" if v == "_f_D()" else v for v in vals]
    inline = getattr(run, "inline", None)
    if g.generic_args or inline is None:
        g.ns["_f_IRUN"] = run
        lines += [f"        _f_v{i} = _f_RESOLVE(_f_v{i}, _f_ID)" for i in g.generic_args]
        lines.append(f"        _f_IRUN({', '.join(vals)})")
    else:
        exact = {n: r for n, r in enumerate(g.ranges) if r is not None}
        body, ns = inline("_f_Q_" if readers else "_f_P_", vals, exact)
        g.ns.update(ns)
        lines += ["    " + ln for ln in body]
    lines.append("        return None")
    return lines


def _entry_head(g: _Gen, params: list[Param], all_vals: str) -> list[str]:
    """The entry's signature and binding. Positional parameters are positional-only under generated names
    (so a user's name shadows nothing, and ``f(x, a=1)`` with ``a`` given twice reaches the binder's error
    instead of Python's); keywords are taken from ``**kw`` by name; a parameter left out is :data:`MISSING`
    or its default. Anything left over (extra positional or unknown keyword arguments), a call while
    tracing, or a missing argument goes to the full path."""
    P = inspect.Parameter
    g.ns["_f_MISSING"] = MISSING
    pos = [i for i, p in enumerate(params) if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    sig = ", ".join([*(f"{g.a[i]}=_f_MISSING" for i in pos), *(["/"] if pos else []), "*_f_rest", "**_f_kw"])
    lines = [f"def _f_entry(_f_self, {sig}):"]
    by_name = [i for i, p in enumerate(params) if p.kind != P.POSITIONAL_ONLY]
    if by_name:
        lines.append("    if _f_kw:")
        for i in by_name:
            a, name = g.a[i], params[i].name
            if i in pos:
                lines.append(f"        if {a} is _f_MISSING and {name!r} in _f_kw:")
                lines.append(f"            {a} = _f_kw.pop({name!r})")
            else:
                lines.append(f"        {a} = _f_kw.pop({name!r}, _f_MISSING)")
        kwonly = [i for i in by_name if i not in pos]
        if kwonly:
            lines.append("    else:")
            lines.append(f"        {' = '.join(g.a[i] for i in kwonly)} = _f_MISSING")
    for i, p in enumerate(params):
        if p.default is not P.empty:
            lines.append(f"    if {g.a[i]} is _f_MISSING:")
            lines.append(f"        {g.a[i]} = {g.const(f'DEF{i}', p.default)}")
    lines += [
        "    if _f_rest or _f_kw or _f_TS:",
        f"        return _f_SLOW({all_vals}, _f_rest, _f_kw, _f_OTHER)",
        "    try:",
    ]
    return lines


def make_dispatcher(jf, params: list[Param], pattern: tuple, implicit_stream: bool, env, fast: dict, inline=None):
    """``dispatch(*args)`` for one argument pattern: None after launching a cached specialization; the
    fast key (a tuple) on a miss; :data:`NOFAST` or :data:`OTHER_PATTERN` when the full path must run.

    ``dispatch.entry`` is the same code as the jit function's ``__call__`` (installed on the function's own
    class, so a call runs it with no Python frame in between): a positional call with every argument is
    checked and launched as above, anything else (keywords, missing or extra arguments, a call while
    tracing, a miss) goes to ``jf._slow(values, extra positional, keywords, answer)``.

    ``jf`` is read for its compile hints and its call state ``jf._cs`` (the dependency watch and the hit
    counter, slots read and written by the generated code); ``env`` is the
    environment snapshot: ``(get, keys)`` whose reads are inlined into the key, or a function; ``fast`` maps
    fast keys to ``(run, default_stream)``. ``inline``, ``(fast key, run, default_stream)``, is the entry
    checked first, key part by key part, and launched by the launch plan's own lines (the common case of
    one specialization per pattern: no key tuple, no hashing, no call).
    """
    names = [f"_f_a{i}" for i in range(len(params))]  # the generated code's own names: nothing to shadow
    g = _Gen(names)
    g.ns.update(_f_JF=jf, _f_FAST=fast, _f_FREEZE=freeze, _f_SLOW=getattr(jf, "_slow", None), _f_TS=_ANY_TRACE,
                _f_AH=_ANY_HINTS, _f_CS=jf._cs)  # fmt: skip
    if callable(env):
        g.ns["_f_ENV"] = env
        env_key = ["_f_ENV()"]
    else:
        g.ns["_f_ENVGET"] = env[0]
        env_key = [f"_f_ENVGET({k!r})" for k in env[1]]
        g.env_names = tuple(env[1])
    n = len(params)
    for i, (p, (tp, rank)) in enumerate(zip(params, pattern)):
        a = names[i]
        g.ns[f"_f_T{i}"] = tp
        conv = p.conv
        num = getattr(conv, "numeric", None)
        cx = getattr(conv, "constexpr", None)
        if conv in _TENSOR_CONVS and rank >= 1:
            g.torch_tensor(i, rank)
        elif num is not None and tp is int and conv.int_range[0] <= conv.int_range[1]:
            lo, hi = conv.int_range
            g.guards.append(f"{lo} <= {a} <= {hi}")
            g.val(a, (lo, hi))
        elif num is not None and tp is float and num.is_float and num.width in (32, 64):
            g.val(a)  # packed as f32/f64 like the full path's value
        elif conv is value_conv and tp is int:
            g.guards.append(f"{-(1 << 63)} <= {a} < {1 << 64}")
            g.key.append(f"{a} <= {I32_MAX} and {a} >= {-(1 << 31)}")
            g.val(a)
        elif conv is value_conv and tp in (float, bool):
            g.val(a)
        elif conv is value_conv and tp is type(None):
            pass
        elif (conv is stream_conv or (conv is value_conv and (tp is Stream or hasattr(tp, "cuda_stream")))) and (
            tp is type(None) or tp is int or tp is Stream or hasattr(tp, "cuda_stream")
        ):
            g.late.append(f"    _f_st{i} = _f_STREAM({a}, _f_D)")
            g.streams.append((i, p.default))
            g.val(f"_f_st{i}")
        elif cx is not None and tp in _SIMPLE_CONSTS and cx.accepts(_example(tp)):
            g.key.append(a)
        else:
            g.generic(i, conv)
    if implicit_stream:
        g.val("_f_D()")
    body = []
    if n:
        body.append("    if " + " or ".join(f"_f_type({names[i]}) is not _f_T{i}" for i in range(n)) + ":")
        body.append("        @FAIL(_f_OTHER)")
    body += g.body
    if g.ranks:
        body.append("    if not (" + " and ".join(g.ranks) + "):")
        body.append("        @FAIL(_f_OTHER)")
    if g.guards:
        body.append("    if not (" + " and ".join(g.guards) + "):")
        body.append("        @FAIL(_f_NOFAST)")
    readers = inline is not None and _readers(g, env_key, inline[0])
    if readers:  # before any Python read
        body = _inline_block(g, env_key, *inline, readers=True) + body
    elif inline is not None:
        body += _inline_block(g, env_key, *inline)
    body.append("    _f_h = _f_JF.compile_hints")
    body.append(f"    _f_k = ({', '.join(env_key + ['_f_FREEZE(_f_h) if _f_h else None'] + g.key)})")
    body.append("    if not _f_CS.watch():")
    body.append("        @FAIL(_f_NOFAST)")
    body.append("    _f_e = _f_FAST.get(_f_k)")
    body.append("    if _f_e is None:")
    body.append("        @FAIL(_f_k)")
    body.append("    _f_run, _f_D = _f_e")
    body += g.late
    body.append("    _f_CS.hits += 1")
    body.append(f"    _f_run({', '.join(g.vals)})")
    body.append("    return None")
    body = "\n".join(body)

    # the dispatcher: every argument, positionally; answers instead of the full path
    all_vals = f"({', '.join(names)}{',' if n else ''})"
    src = f"def _f_dispatch({', '.join(names)}):\n" + body.replace("@FAIL(", "return (") + "\n"
    src += "\n" + "\n".join(_entry_head(g, params, all_vals)) + "\n"
    # an exception before the launch (an argument the fast path cannot read, a driver error): the full
    # path runs the call again and raises it as a DSL error (the way out's own DSL errors pass through)
    tail = [
        "    except _f_DSLERROR:",
        "        raise",
        "    except Exception:",
        f"        return _f_SLOW({all_vals}, (), None, _f_NOFAST)",
    ]
    g.ns["_f_DSLERROR"] = FlyDSLError
    entry_body = "\n".join("    " + ln for ln in body.split("\n"))
    src += entry_body.replace("@FAIL(", f"return _f_SLOW({all_vals}, (), None, ") + "\n" + "\n".join(tail) + "\n"
    exec(compile(src, f"<flydsl dispatch {getattr(jf, '__name__', '?')}>", "exec"), g.ns)
    fn = g.ns["_f_dispatch"]
    fn.entry = g.ns["_f_entry"]
    fn.source = src
    fn.fast = fast
    fn.pattern = pattern
    fn.inlined = inline is not None
    fn.inline_args = inline
    fn.readers = readers  # the inlined specialization reads its torch tensors in C++
    fn.wants_readers = inline is not None and not readers and bool(g.tensors) and not g.generic_args
    return fn


def _example(tp):
    return {int: 0, str: "", bool: False, float: 0.0, type(None): None}[tp]

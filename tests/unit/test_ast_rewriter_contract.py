"""FlyDSL's ``ASTRewriter`` contract, as our one front end honours it: the rewritten code calls FlyDSL's
helpers (``scf_if_dispatch``, ``scf_for_dispatch``, ...) by their global names, ``transform`` puts exactly
those into the function's globals and rewrites the function in place, and ``_collect_assigned_vars`` is
the analysis that picks the carried variables (issue 13)."""

from __future__ import annotations

import ast
import builtins
import types

import numpy as np
import pytest
from compiler_util import Constexpr, Tensor, count_ops, cpu_device, facade_module, flyc, fx, traced  # noqa: F401

from flydsl.compiler import FlyDSLError
from flydsl.compiler.ast_rewriter import (
    ASTRewriter,
    CanonicalizeWhile,
    InsertEmptyYieldForSCFFor,
    ReplaceIfWithDispatch,
    RewriteBoolOps,
    _collect_assigned_vars,
)

HELPERS = {
    "scf_if_dispatch",
    "scf_ifexp_dispatch",
    "scf_if_collect_results",
    "scf_for_dispatch",
    "scf_for_collect_results",
    "scf_while_dispatch",
    "scf_while_collect_results",
    "dsl_not_",
}


def _loaded_globals(code: types.CodeType) -> set:
    """Every name the code object (and the ones nested in it) can load from globals."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _loaded_globals(c)
    return names


def _fresh(fn):
    """``fn`` with a private copy of its globals (what a test injects stays out of this module)."""
    return types.FunctionType(fn.__code__, dict(fn.__globals__), fn.__name__, fn.__defaults__, fn.__closure__)


def _python_control_flow(flag, n):
    x = 1
    if flag:
        x = 2
    else:
        x = 3
    y = 10 if not flag else 20
    while n > 0:
        n = n - 1
        x = x + 1
    return x, y


def _with_a_loop(n):
    acc = 0
    for i in range(n):
        acc = acc + i
    return acc


# -- transform: in place, the injected helpers are the ones the code calls ------------------------------------


def test_transform_rewrites_in_place_and_injects_what_the_code_calls():
    f = _fresh(_python_control_flow)
    before = f.__code__
    assert ASTRewriter.transform(f) is f and f.__code__ is not before
    g = f.__globals__
    # the helpers by FlyDSL's names, the very objects of the classes' static methods and rewrite_globals()
    assert g["scf_if_dispatch"] is ReplaceIfWithDispatch.scf_if_dispatch
    assert g["scf_ifexp_dispatch"] is ReplaceIfWithDispatch.scf_ifexp_dispatch
    assert g["scf_while_dispatch"] is CanonicalizeWhile.scf_while_dispatch
    assert g["dsl_not_"] is RewriteBoolOps.dsl_not_
    for cls in (RewriteBoolOps, ReplaceIfWithDispatch, InsertEmptyYieldForSCFFor, CanonicalizeWhile):
        assert all(g[k] is v and ASTRewriter.rewrite_globals[k] is v for k, v in cls.rewrite_globals().items())
    # what the rewritten code loads of them is what was injected
    loaded = _loaded_globals(f.__code__)
    assert {"scf_if_dispatch", "scf_if_collect_results", "scf_ifexp_dispatch", "dsl_not_"} <= loaded
    assert {"scf_while_dispatch", "scf_while_collect_results"} <= loaded
    assert loaded & set(ASTRewriter.rewrite_globals) <= set(g)
    # plain Python semantics on Python values
    assert f(True, 2) == (4, 20) and f(False, 0) == (3, 10)
    assert {"scf_for_dispatch", "scf_for_collect_results"} <= _loaded_globals(
        ASTRewriter.transform(_fresh(_with_a_loop)).__code__
    )


def test_a_wrapper_in_the_globals_sees_every_call_with_flydsl_arguments():
    f = ASTRewriter.transform(_fresh(_python_control_flow))
    calls = []
    original = f.__globals__["scf_if_dispatch"]

    def spy(cond, then_fn, else_fn=None, **kw):
        calls.append((cond, kw["result_names"], kw["result_values"]))
        return original(cond, then_fn, else_fn, **kw)

    f.__globals__["scf_if_dispatch"] = spy
    assert f(True, 0) == (2, 20) and f(0, 0) == (3, 10)
    assert calls == [(True, ("x",), (1,)), (0, ("x",), (1,))]  # a static condition still goes through it


def test_kernel_tracing_calls_the_helpers_of_its_globals(monkeypatch):
    out = np.zeros(4, np.int32)
    traced(launch_loop, out, 1)  # the first trace rewrites the kernel and injects the helpers
    seen = []
    original = loop_kernel.fn.__globals__["scf_for_dispatch"]
    assert original is InsertEmptyYieldForSCFFor.scf_for_dispatch

    def spy(start, stop, step, body_fn, **kw):
        seen.append((start, step, kw["result_names"]))
        return original(start, stop, step, body_fn, **kw)

    monkeypatch.setitem(loop_kernel.fn.__globals__, "scf_for_dispatch", spy)
    text = traced(launch_loop, out, 2)  # a new trace: the rewritten body calls the spy
    assert count_ops(text, "scf.for") == 1
    assert seen == [(0, 1, ("i", "acc"))]  # the loop variable (its value after the loop) and the carried sum
    launch_loop(out, 3)
    assert out.tolist() == [3 + 0 + 1 + 2 + 3, 3, 0, 0]


@flyc.kernel
def loop_kernel(out: Tensor, K: Constexpr[int]):
    n = fx.thread_idx.x + 4
    acc = fx.Int32(K)
    i = 0
    for i in range(n):
        acc = acc + i
    out[0] = acc
    out[1] = i


@flyc.jit
def launch_loop(out, K: Constexpr[int]):
    loop_kernel(out, K).launch(grid=1, block=1)


def _closure(n):
    def f(flag):
        x = n
        if flag:
            x = x + 1
        return x

    return f


def _closure_over_range(n):
    range = builtins.range  # noqa: A001 - a closure variable the rewritten loop no longer reads

    def f(x):
        acc = x
        for i in range(n):
            acc = acc + i
        return acc

    return f


def test_transform_of_closures():
    f = _closure(5)
    assert ASTRewriter.transform(f) is f and f(True) == 6 and f(False) == 5  # same free variables: in place
    g = _closure_over_range(3)
    h = ASTRewriter.transform(g)
    # the rewrite reads fewer closure variables than g: a new function with those cells (FlyDSL's rule)
    assert h is not g and h.__wrapped__ is g and h.__code__.co_freevars == ("n",)
    from flydsl._mlir import ir
    from flydsl._mlir.dialects import func

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        i32 = ir.IntegerType.get_signless(32)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("t", ir.FunctionType.get([i32], [i32]))
            with ir.InsertionPoint(fn.add_entry_block()):
                func.ReturnOp([h(fx.Int32(fn.entry_block.arguments[0])).ir_value()])
        assert module.operation.verify()
        assert "scf.for" in str(module)


class _Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, x):
        if x > 0:
            x = x * self.k
        return x


def test_transform_of_a_bound_method_rewrites_its_function():
    s = _Scaler(3)
    m = ASTRewriter.transform(s.scale)
    assert m.__self__ is s and m(2) == 6 and m(-1) == -1
    assert "scf_if_dispatch" in _loaded_globals(_Scaler.scale.__code__)  # in place: every instance runs it


def test_functions_without_source_are_left_alone():
    f = eval("lambda x: x + 1")  # noqa: S307 - a function whose source cannot be read
    with pytest.warns(UserWarning, match="cannot read the source"):
        assert ASTRewriter.transform(f) is f
    assert f(1) == 2


# -- _collect_assigned_vars ------------------------------------------------------------------------------------


def _collect(src: str, active, orelse: str | None = None, test: str | None = None):
    return _collect_assigned_vars(
        ast.parse(src).body,
        [set(active)],
        ast.parse(orelse).body if orelse else None,
        ast.parse(test, mode="eval").body if test else None,
    )


def test_collect_assigned_vars_flydsl_cases():
    assert _collect("a, (b, c) = foo()\nd += 1", "abcd") == ["a", "b", "c", "d"]
    src = (
        "x: int = 1\nfor i in range(4):\n    y = i\nwith ctx() as w:\n    z = w\n"
        "try:\n    pass\nexcept Exception as e:\n    err = e\nif (n := foo()):\n    out = n\n"
    )
    assert _collect(src, ["x", "i", "y", "w", "z", "e", "err", "n", "out"]) == [
        *("x", "i", "y", "w", "z", "err", "n", "out")
    ]


def test_collect_assigned_vars_order_scopes_and_filters():
    # writes in source order (targets before values), stores into items/attributes count as writes,
    # then the names whose methods are only called; `self` is never carried for a call
    src = "lst.append(v)\nb = (a := 1)\nt[0] = 2\nobj.f = 3\nself.g()\nq.pop()\nq = 4"
    assert _collect(src, ["lst", "a", "b", "t", "obj", "self", "q", "v"]) == ["b", "a", "t", "obj", "q", "lst"]
    # only variables of the function (active symbols); nested scopes keep their names, the def is bound
    src = "k = 1\ng = 2\ndef h():\n    inner = 3\nys = [j for j in range(3)]\nfn = lambda m: m"
    assert _collect(src, ["k", "h", "ys", "inner", "j", "m", "fn"]) == ["k", "h", "ys", "fn"]
    # the else branch and a loop test count too
    assert _collect("a = 1", "abc", orelse="b = 2", test="(c := 3) > 0") == ["a", "b", "c"]
    assert _collect_assigned_vars([], [], None, None) == []


def test_an_except_name_in_a_branch_is_not_carried():
    # Python unbinds `e` when its handler ends; carrying it made the branch's return fail (UnboundLocalError)
    def f(flag):
        msg = "none"
        if flag:
            try:
                int("boom")
            except ValueError as e:
                msg = str(e)
        return msg

    f = ASTRewriter.transform(_fresh(f))
    assert "boom" in f(True) and f(False) == "none"


# -- the helpers' calling convention when called directly -----------------------------------------------------


def test_direct_calls_follow_flydsl_signature_rule():
    def build(c):
        x = fx.Int32(1)
        # result_names with branch functions that take only the values (FlyDSL passes names by signature)
        r = ReplaceIfWithDispatch.scf_if_dispatch(
            c, lambda x: {"x": x + 1}, lambda *a: None, result_names=("x",), result_values=(x,)
        )
        assert type(r) is fx.Int32 and not r.is_static()
        # a tuple in names order, or a single name's bare value, is a result too
        a, b = ReplaceIfWithDispatch.scf_if_dispatch(
            c, lambda n, a, b: (b, a), lambda n, a, b: (a, b), result_names=("a", "b"), result_values=(x, x + 2)
        )
        assert type(a) is fx.Int32 and type(b) is fx.Int32
        assert ReplaceIfWithDispatch.scf_if_dispatch(True, lambda v: v * 2, state_names=("v",), state_values=(3,)) == 6
        with pytest.raises(TypeError, match="must return a dict"):
            ReplaceIfWithDispatch.scf_if_dispatch(
                True, lambda n, a: "bad", result_names=("a", "b"), result_values=(1, 2)
            )
        k, s = CanonicalizeWhile.scf_while_dispatch(
            lambda k, s: k < 3, lambda k, s: {"k": k + 1, "s": s + k}, result_names=("k", "s"), result_values=(0, 0)
        )
        assert (k, s) == (3, 3)  # a static condition: a Python loop

    from flydsl._mlir import ir

    facade_module(build, [ir.IntegerType.get_signless(1)])


# -- kernel loops: FlyDSL's (start, stop, step), errors at the user's line ------------------------------------


@flyc.kernel
def starred_range(out: Tensor):
    acc = fx.Int32(0)
    bounds = (2, 11, 3)
    for i in range(*bounds):
        acc = acc + i
    out[0] = acc


@flyc.jit
def launch_starred(out):
    starred_range(out).launch(grid=1, block=1)


@flyc.kernel
def bad_range(out: Tensor):
    acc = fx.Int32(0)
    for i in range(1, 2, 3, 4):
        acc = acc + i
    out[0] = acc


@flyc.jit
def launch_bad_range(out):
    bad_range(out).launch(grid=1, block=1)


@flyc.kernel
def branch_types_differ(out: Tensor):
    x = fx.thread_idx.x
    if x > 0:
        x = fx.Float32(1.0)
    out[0] = x


@flyc.jit
def launch_branch_types(out):
    branch_types_differ(out).launch(grid=1, block=2)


def test_kernel_loops_and_errors_at_the_users_line():
    out = np.zeros(1, np.int32)
    launch_starred(out)
    assert out[0] == 2 + 5 + 8
    with pytest.raises(TypeError, match="1 to 3 arguments") as e:
        launch_bad_range(out)
    line = bad_range.fn.__code__.co_firstlineno + 3  # from the decorator line
    assert isinstance(e.value, FlyDSLError) and f":{line}" in str(e.value)
    with pytest.raises(TypeError, match="FLY101") as e:
        launch_branch_types(np.zeros(1, np.float32))
    assert f":{branch_types_differ.fn.__code__.co_firstlineno + 3}" in str(e.value)  # the `if` line

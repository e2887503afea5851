"""The AST rewrite: control flow (and only control flow) of a kernel/jit function becomes calls into
:mod:`.dispatch`, which decides at trace time between plain Python and ``scf`` ops.

Input: a Python function. Output: a new function object with the same globals, closure cells,
defaults and annotations, compiled from the rewritten AST with the ORIGINAL file name, line and
column numbers (tracebacks and IR locations point at the user's source).

What is rewritten (FlyDSL's rules):

* ``if``/``elif``/``else`` → ``scf_if_dispatch(test, then_fn, else_fn, result_names=, result_values=,
  site=)``; ``if const_expr(...)`` stays Python; an ``if`` whose branch contains ``return``/``break``/
  ``continue`` stays Python behind ``_fly_rt.static_test`` (a run-time test is an error there);
  ``if c: ...; return`` at function level first becomes ``if c: ... else: <rest of the function>``.
* ``for x in range(...)`` → ``scf_for_dispatch(start, stop, step, body_fn, ...)`` (``scf.for``);
  ``range(..., init=[...])`` with a final ``yield`` → ``_fly_rt.for_explicit``; every other ``for``
  (``range_constexpr``, lists …) stays Python.
* ``while test`` → ``scf_while_dispatch(cond_fn, body_fn, ...)``; ``while const_expr(...)`` stays Python.
* ``x if c else y`` → ``scf_ifexp_dispatch``, ``not a`` → ``dsl_not_``; ``a and b``, ``a or b``,
  ``a < b < c`` → ``_fly_rt.and_/or_/cmp_chain`` (the right side a thunk: short-circuit in Python while
  the left side is static).

The helpers are FlyDSL's names with FlyDSL's calling convention (:mod:`.helpers`), looked up in the
function's globals, where the rewrite puts them. Carried variables of a construct:
:func:`~.scope.collect_assigned_vars` (names it assigns + local names whose methods it calls or whose
items/attributes it stores into). Branch/loop bodies become nested functions taking ``(names, *carried
values)`` (a loop body the induction variable first) and returning ``scf_*_collect_results(names,
locals())``; the dispatch's result is assigned back to the names.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import types
import warnings

from .helpers import LOC, RT, inject
from .scope import bindings, collect_assigned_vars, find_jump, find_raise, function_locals, is_call_to, target_names

__all__ = ["rewrite_function", "rewrite_in_place", "transform_source", "RT", "LOC"]

_HAS_QUALNAME = hasattr((lambda: None).__code__, "co_qualname")  # Python >= 3.11

_GEN = "_fly_"  # prefix of generated names (never carried)
_NAMES = _GEN + "names"  # the parameter of a generated body that receives the carried names


def _rt(attr: str, node: ast.AST) -> ast.Attribute:
    return ast.copy_location(ast.Attribute(ast.Name(RT, ast.Load()), attr, ast.Load()), node)


def _call(attr: str, args: list, node: ast.AST, keywords=()) -> ast.Call:
    return ast.copy_location(ast.Call(_rt(attr, node), args, list(keywords)), node)


def _helper(name: str, args: list, node: ast.AST, keywords=()) -> ast.Call:
    """A call of a helper by its global name (FlyDSL's, :mod:`.helpers`)."""
    return ast.copy_location(ast.Call(_name(name, node), args, list(keywords)), node)


def _const(v, node) -> ast.Constant:
    return ast.copy_location(ast.Constant(v), node)


def _name(n: str, node, ctx=None) -> ast.Name:
    return ast.copy_location(ast.Name(n, ctx or ast.Load()), node)


def _lambda(expr: ast.expr) -> ast.Lambda:
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.copy_location(ast.Lambda(args, expr), expr)


def _header(node: ast.stmt, last: ast.AST) -> ast.AST:
    """A location from the start of ``node`` to the end of ``last`` (the statement's header only)."""
    h = ast.Pass()
    h.lineno, h.col_offset = node.lineno, node.col_offset
    h.end_lineno, h.end_col_offset = last.end_lineno, last.end_col_offset
    return h


def _has(node: ast.AST, kinds) -> bool:
    return any(isinstance(n, kinds) for n in ast.walk(node))


class _Scope:
    __slots__ = ("locals", "globals", "nonlocals")

    def __init__(self, locals_: set, globals_: set, nonlocals: set):
        self.locals = locals_
        self.globals = globals_
        self.nonlocals = nonlocals

    @property
    def declared(self) -> set:
        return self.globals | self.nonlocals


class Rewriter(ast.NodeTransformer):
    """Rewrites one function (and the functions nested in it)."""

    def __init__(self, filename: str):
        self.filename = filename
        self.counter = itertools.count()
        self.scopes: list[_Scope] = []

    # -- helpers --------------------------------------------------------------------------------
    def _site(self, node, kind, names=(), lines_a=(), lines_b=(), n_target=0, body=None) -> ast.Constant:
        """The constant describing a construct for :mod:`.dispatch` (see ``dispatch.Site``)."""
        names = names if isinstance(names, str) else tuple(names)
        mutated_only = ()
        if body is not None:  # loops: names only mutated (``t[i] = v``, ``lst.append``), never assigned
            assigned = bindings(body).assigned
            mutated_only = tuple(n not in assigned for n in names)
        site = (self.filename, node.lineno, node.col_offset + 1, kind, names, tuple(lines_a), lines_b, n_target)
        return _const(site + (mutated_only,), node)

    def _carried(self, body: list, orelse: list | None = None) -> list[str]:
        """Carried names of a construct (:func:`collect_assigned_vars` over the function's own variables)."""
        scope = self.scopes[-1]
        active = {n for n in scope.locals if not n.startswith(_GEN) and n != RT and n != LOC}
        return collect_assigned_vars(body, [active], orelse)

    def _lines(self, stmts, names) -> tuple:
        b = bindings(stmts)
        return tuple(b.assigned.get(n, b.mutated.get(n, 0)) for n in names)

    def _func(self, name: str, params: list[str], body: list, returns: ast.expr | None, node) -> ast.FunctionDef:
        """``def name(params): body; return returns`` with global/nonlocal declarations carried over
        (``returns`` None: no return statement)."""
        args = ast.arguments(
            posonlyargs=[],
            args=[ast.arg(p) for p in params],
            vararg=None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[],
        )
        stmts = list(body)
        if not stmts and returns is None:
            stmts = [ast.copy_location(ast.Pass(), node)]
        assigned, scope = set(bindings(stmts).assigned), self.scopes[-1]
        for names, kind in ((scope.globals, ast.Global), (scope.nonlocals, ast.Nonlocal)):
            decl = sorted(assigned & names)
            if decl:
                stmts.insert(0, ast.copy_location(kind(decl), node))
        if returns is not None:
            stmts.append(ast.copy_location(ast.Return(returns), node))
        fn = ast.FunctionDef(name=name, args=args, body=stmts, decorator_list=[], returns=None, type_comment=None)
        if hasattr(fn, "type_params"):
            fn.type_params = []
        return ast.copy_location(fn, node)

    def _tuple(self, names, node, ctx=None) -> ast.Tuple:
        ctx = ctx or ast.Load()
        return ast.copy_location(ast.Tuple([_name(n, node, type(ctx)()) for n in names], ctx), node)

    def _locals(self, node) -> ast.Call:
        return ast.copy_location(ast.Call(_name("locals", node), [], []), node)

    def _collect(self, kind: str, names, node) -> ast.expr | None:
        """What a generated body returns: ``scf_<kind>_collect_results(names, locals())`` (None: no names)."""
        if not names:
            return None
        return _helper(f"scf_{kind}_collect_results", [_name(_NAMES, node), self._locals(node)], node)

    def _state(self, names, node, site: ast.Constant) -> list[ast.keyword]:
        """``result_names=(...), result_values=_fly_rt.pre(locals(), (...)), site=...`` of a dispatch call."""
        kws = []
        if names:
            values = _call("pre", [self._locals(node), _const(tuple(names), node)], node)
            kws = [ast.keyword("result_names", _const(tuple(names), node)), ast.keyword("result_values", values)]
        return kws + [ast.keyword("site", site)]

    def _assign_back(self, names, value: ast.expr, node) -> ast.stmt:
        """``value`` as a statement, assigned to the one name / the tuple of names it returns."""
        if not names:
            return ast.copy_location(ast.Expr(value), node)
        target = _name(names[0], node, ast.Store()) if len(names) == 1 else self._tuple(names, node, ast.Store())
        return ast.copy_location(ast.Assign([target], value), node)

    def _fresh(self, what: str) -> str:
        return f"{_GEN}{what}_{next(self.counter)}"

    # -- functions -------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef):
        self.scopes.append(_Scope(*function_locals(node)))
        try:
            node.body = self._lift_returns(node.body)
            node.body = self._stmts(node.body)
        finally:
            self.scopes.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        return node

    def _stmts(self, stmts: list) -> list:
        out = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            out.extend(r if isinstance(r, list) else [r])
        return out

    def _lift_returns(self, stmts: list) -> list:
        """``if c: A; return`` followed by R becomes ``if c: A else: R`` (functions returning None)."""
        for i, s in enumerate(stmts):
            if not isinstance(s, ast.If) or is_call_to(s.test, "const_expr"):
                continue
            rest = stmts[i + 1 :]
            if _bare_return_last(s.body) and find_jump(s.body[:-1]) is None:
                s.body = s.body[:-1] or [ast.copy_location(ast.Pass(), s)]
                s.orelse = self._lift_returns(s.orelse + rest)
                return stmts[: i + 1]
            if s.orelse and _bare_return_last(s.orelse) and find_jump(s.orelse[:-1]) is None:
                s.orelse = s.orelse[:-1]
                s.body = self._lift_returns(s.body + rest)
                return stmts[: i + 1]
        return stmts

    # -- if ----------------------------------------------------------------------------------------
    def visit_If(self, node: ast.If):
        if is_call_to(node.test, "const_expr"):
            node.test = self.visit(node.test)
            node.body, node.orelse = self._stmts(node.body), self._stmts(node.orelse)
            return node
        # a `raise` this `if` guards is a compile-time check: its test must be static (FLY121 otherwise)
        jump = find_jump(node.body) or find_jump(node.orelse) or find_raise(node.body) or find_raise(node.orelse)
        if jump is not None:
            stmt = type(jump).__name__.lower()
            node.test = _call("static_test", [self.visit(node.test), self._site(jump, "if", stmt)], node.test)
            node.body, node.orelse = self._stmts(node.body), self._stmts(node.orelse)
            return node
        names = self._carried(node.body, node.orelse)
        lines_a, lines_b = self._lines(node.body, names), self._lines(node.orelse, names)
        test = self.visit(node.test)
        body, orelse = node.body, node.orelse
        node = _header(node, node.test)
        params, ret = [_NAMES] + names, self._collect("if", names, node)
        then_name = self._fresh("then")
        out = [self._func(then_name, params, self._stmts(body), ret, node)]
        else_ref: ast.expr = _const(None, node)
        if orelse:
            else_name = self._fresh("else")
            out.append(self._func(else_name, params, self._stmts(orelse), self._collect("if", names, node), node))
            else_ref = _name(else_name, node)
        kws = self._state(names, node, self._site(node, "if", names, lines_a, lines_b))
        call = _helper("scf_if_dispatch", [test, _name(then_name, node), else_ref], node, kws)
        out.append(self._assign_back(names, call, node))
        return out

    # -- for ---------------------------------------------------------------------------------------
    def visit_For(self, node: ast.For):
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            node.iter = self.visit(node.iter)
            node.body, node.orelse = self._stmts(node.body), self._stmts(node.orelse)
            return node
        rng = _call("range_", [it.func] + [self.visit(a) for a in it.args], it, [self.visit(k) for k in it.keywords])
        if any(k.arg == "init" for k in it.keywords):
            return self._explicit_for(node, rng)
        jump = find_jump(node.body)
        if jump is not None or node.orelse:
            what = type(jump).__name__.lower() if jump is not None else "else"
            node.iter = _call("py_iter", [rng, self._site(jump or node, "for", what)], it)
            node.body, node.orelse = self._stmts(node.body), self._stmts(node.orelse)
            return node
        body_stmts, orig = node.body, node
        node = _header(node, node.iter)
        tnames = list(target_names(orig.target, {}))
        names = tnames + [n for n in self._carried(body_stmts) if n not in tnames]
        target_text = "" if isinstance(orig.target, ast.Name) else ast.unparse(orig.target).strip("()")
        site = self._site(node, "for", names, self._lines(body_stmts, names), target_text, len(tnames), body_stmts)
        body_name = self._fresh("for")
        iv = self._fresh("iv")
        bind = ast.copy_location(ast.Assign([orig.target], _name(iv, node)), node)
        stmts = [bind] + self._stmts(body_stmts)
        fn = self._func(body_name, [iv, _NAMES] + names, stmts, self._collect("for", names, node), node)
        # FlyDSL's bounds: range(n) is (0, n, 1), range(a, b) is (a, b, 1)
        args = [self.visit(a) for a in it.args]
        if it.keywords or not 1 <= len(args) <= 3 or _has(it, ast.Starred):
            bounds = _call("range_bounds", args, it, [self.visit(k) for k in it.keywords])
            bounds = [ast.copy_location(ast.Starred(bounds, ast.Load()), it)]
        elif len(args) == 1:
            bounds = [_const(0, it), args[0], _const(1, it)]
        else:
            bounds = args + [_const(1, it)] * (3 - len(args))
        call = _helper("scf_for_dispatch", bounds + [_name(body_name, node)], node, self._state(names, node, site))
        return [fn, self._assign_back(names, call, node)]

    def _explicit_for(self, node: ast.For, rng: ast.Call):
        """``for iv, state in range(..., init=[...]): ...; [results =] yield [...]``."""
        body = node.body
        last = body[-1] if body else None
        result_target = None
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Yield):
            value = last.value.value
        elif isinstance(last, ast.Assign) and isinstance(last.value, ast.Yield) and len(last.targets) == 1:
            value, result_target = last.value.value, last.targets[0]
        else:
            site = self._site(last or node, "for")
            return [
                ast.copy_location(
                    ast.Expr(_call("for_explicit", [_const(None, node), _const(None, node), site], node)), node
                )
            ]
        iv, state = self._fresh("iv"), self._fresh("state")
        tgt = ast.copy_location(ast.Tuple([_name(iv, node), _name(state, node)], ast.Load()), node)
        bind = ast.copy_location(ast.Assign([node.target], tgt), node)
        stmts = [bind] + self._stmts(body[:-1])
        ret = self.visit(value) if value is not None else _const(None, last)
        body_name = self._fresh("for")
        fn = self._func(body_name, [iv, state], stmts, ret, node)
        call = _call("for_explicit", [rng, _name(body_name, node), self._site(node, "for")], node)
        if result_target is None:
            return [fn, ast.copy_location(ast.Expr(call), node)]
        return [fn, ast.copy_location(ast.Assign([result_target], call), node)]

    # -- while -------------------------------------------------------------------------------------
    def visit_While(self, node: ast.While):
        if is_call_to(node.test, "const_expr"):
            node.test = self.visit(node.test)
            node.body, node.orelse = self._stmts(node.body), self._stmts(node.orelse)
            return node
        jump = find_jump(node.body)
        if jump is not None or node.orelse:
            what = type(jump).__name__.lower() if jump is not None else "else"
            node.test = _call("static_test", [self.visit(node.test), self._site(jump or node, "while", what)], node)
            node.body, node.orelse = self._stmts(node.body), self._stmts(node.orelse)
            return node
        names = self._carried(node.body)
        cond_name, body_name = self._fresh("wcond"), self._fresh("wbody")
        test, body_stmts = self.visit(node.test), node.body
        node = _header(node, node.test)
        params = [_NAMES] + names
        cond_fn = self._func(cond_name, params, [], test, node)
        body_fn = self._func(body_name, params, self._stmts(body_stmts), self._collect("while", names, node), node)
        site = self._site(node, "while", names, self._lines(body_stmts, names), body=body_stmts)
        kws = self._state(names, node, site)
        call = _helper("scf_while_dispatch", [_name(cond_name, node), _name(body_name, node)], node, kws)
        return [cond_fn, body_fn, self._assign_back(names, call, node)]

    # -- expressions -------------------------------------------------------------------------------
    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        if _has(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return node
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        return _call(fn, [node.values[0]] + [_lambda(v) for v in node.values[1:]], node)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _helper("dsl_not_", [node.operand], node)
        return node

    def visit_Compare(self, node: ast.Compare):
        self.generic_visit(node)
        if len(node.ops) < 2 or _has(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return node
        ops = _const(tuple(type(o).__name__ for o in node.ops), node)
        return _call("cmp_chain", [node.left, ops] + [_lambda(c) for c in node.comparators], node)

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        if is_call_to(node.test, "const_expr") or _has(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return node
        site = ast.keyword("site", self._site(node, "if"))
        return _helper("scf_ifexp_dispatch", [node.test, _lambda(node.body), _lambda(node.orelse)], node, [site])


def _bare_return_last(stmts: list) -> bool:
    if not stmts or not isinstance(stmts[-1], ast.Return):
        return False
    v = stmts[-1].value
    return v is None or (isinstance(v, ast.Constant) and v.value is None)


# ---------------------------------------------------------------------------------------------------
# source → rewritten function
# ---------------------------------------------------------------------------------------------------


def _parse_function(fn) -> ast.FunctionDef:
    """The FunctionDef of ``fn`` with the original line and column numbers."""
    lines, first = inspect.getsourcelines(fn)
    src = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    if indent:
        tree = ast.parse("if True:\n" + src)
        ast.increment_lineno(tree, first - 2)
        fdef = tree.body[0].body[0]
    else:
        tree = ast.parse(src)
        ast.increment_lineno(tree, first - 1)
        fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or fdef.name != fn.__name__:
        raise OSError(f"could not locate the source of {fn.__qualname__}")
    fdef.decorator_list = []
    return fdef


def transform_source(fdef: ast.FunctionDef, filename: str) -> ast.FunctionDef:
    """Rewrite a parsed function in place (exposed for tests of the rewrite itself)."""
    return Rewriter(filename).visit(fdef)


def _with_statement_locations(fdef: ast.FunctionDef, filename: str) -> None:
    """Wrap each top-level statement of the (rewritten) body in ``with _flydsl_loc(file, line, col):``, so the
    ops it builds without a location of their own get the statement's; statements inside generated branch
    and loop bodies run within their control-flow statement's."""
    body = []
    for i, st in enumerate(fdef.body):
        doc = i == 0 and isinstance(st, ast.Expr) and isinstance(getattr(st.value, "value", None), str)
        keep = doc or isinstance(st, (ast.Global, ast.Nonlocal))
        if keep:
            body.append(st)
            continue
        args = [_const(filename, st), _const(st.lineno, st), _const(st.col_offset + 1, st)]
        call = ast.copy_location(ast.Call(_name(LOC, st), args, []), st)
        body.append(ast.copy_location(ast.With([ast.withitem(call, None)], [st]), st))
    fdef.body = body


def _rewritten_code(fn, statement_loc):
    """The code object of ``fn``'s rewritten body (its free variables: those of ``fn`` it still reads), with
    the helpers it calls put into ``fn.__globals__``; None (with a warning) when the source is unreadable."""
    try:
        fdef = _parse_function(fn)
    except (OSError, TypeError, SyntaxError, IndentationError) as e:
        warnings.warn(
            f"flydsl: cannot read the source of {fn.__qualname__} ({e}); its if/for/while statements run as plain "
            "Python, so a condition on a run-time value will fail. Define kernels in a .py file.",
            stacklevel=3,
        )
        return None
    code0 = fn.__code__
    filename = code0.co_filename
    fdef = transform_source(fdef, filename)
    if statement_loc is not None:
        _with_statement_locations(fdef, filename)
    # NOTE: the rewritten def gets a generated name so that the function's own name inside its body still
    # resolves to the global/closure binding (a recursive helper calls the decorated object, not itself
    # as a closure of the factory); the code object gets the user's name back below (tracebacks).
    fdef.name = _GEN + "fn"
    # a factory whose parameters are fn's free variables makes them free variables of the rewritten def
    factory = ast.FunctionDef(
        name="_fly_factory",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(v) for v in code0.co_freevars],
            vararg=None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[],
        ),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))],
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    if hasattr(factory, "type_params"):
        factory.type_params = []
    ast.copy_location(factory, fdef)
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    code = compile(module, filename, "exec", dont_inherit=True)
    fcode = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == "_fly_factory")
    inner = next(c for c in fcode.co_consts if isinstance(c, types.CodeType) and c.co_name == fdef.name)
    names = {"co_name": fn.__name__, "co_qualname": fn.__qualname__} if _HAS_QUALNAME else {"co_name": fn.__name__}
    inject(fn.__globals__, statement_loc)
    return inner.replace(**names)


def _function(fn, code):
    """A new function running ``code`` with ``fn``'s globals, closure cells, defaults and attributes."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[v] for v in code.co_freevars)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure or None)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}))
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    return new


def rewrite_function(fn, statement_loc=None):
    """A new function object running the rewritten body of ``fn`` (``fn`` itself if it has no source);
    ``fn`` is left as it is, and the helpers the new body calls are put into ``fn.__globals__``.

    ``statement_loc``: a helper ``(file, line, col) -> context manager`` that the rewritten body enters around
    each of its top-level statements (:func:`_with_statement_locations`; global ``_flydsl_loc``), or None."""
    code = _rewritten_code(fn, statement_loc)
    if code is None:
        return fn
    new = _function(fn, code)
    new.__wrapped__ = fn
    return new


def rewrite_in_place(fn, statement_loc=None):
    """FlyDSL's ``ASTRewriter.transform``: ``fn`` itself with its ``__code__`` replaced by the rewritten body
    (so every reference to ``fn`` runs it), or — when the rewritten body no longer reads all of ``fn``'s
    closure variables, which ``__code__`` assignment cannot express — a new function like
    :func:`rewrite_function`'s. ``fn`` unchanged when it has no source. A bound method: its function."""
    if inspect.ismethod(fn):
        func = rewrite_in_place(fn.__func__, statement_loc)
        return fn if func is fn.__func__ else types.MethodType(func, fn.__self__)
    code = _rewritten_code(fn, statement_loc)
    if code is None:
        return fn
    if code.co_freevars != fn.__code__.co_freevars:
        new = _function(fn, code)
        functools.update_wrapper(new, fn)
        return new
    fn.__code__ = code
    return fn

"""Static scope facts the rewrite needs: which names a block of statements binds or mutates, which
jumps (``return``/``break``/``continue``) leave it, and whether a test is ``const_expr(...)``.

Nested scopes (functions, lambdas, classes, comprehensions) are not entered: their bindings are
their own. Every answer maps a name to the line of its first binding, for error messages.
"""

from __future__ import annotations

import ast

__all__ = [
    "Bindings",
    "bindings",
    "collect_assigned_vars",
    "function_locals",
    "find_jump",
    "find_raise",
    "is_call_to",
    "target_names",
]


class Bindings:
    """Names bound (``assigned``) and mutated through methods/subscripts (``mutated``), with lines.

    ``written``: the names bound or stored into (``a[i] = v``, ``a.f = v``) in source order, except an
    ``except ... as e`` name (Python unbinds it when the handler ends); ``called``: the names whose
    methods are called (``lst.append(v)``), in source order."""

    __slots__ = ("assigned", "mutated", "written", "called", "globals", "nonlocals")

    def __init__(self):
        self.assigned: dict[str, int] = {}
        self.mutated: dict[str, int] = {}
        self.written: dict[str, None] = {}
        self.called: dict[str, None] = {}
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()


def target_names(target: ast.AST, out: dict, line: int | None = None) -> dict:
    """Names bound by an assignment target (``a``, ``a, (b, *c)``)."""
    if isinstance(target, ast.Name):
        out.setdefault(target.id, line if line is not None else target.lineno)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            target_names(e, out, line)
    elif isinstance(target, ast.Starred):
        target_names(target.value, out, line)
    return out


class _Binder(ast.NodeVisitor):
    def __init__(self):
        self.b = Bindings()

    def _bind(self, name: str, line: int, written: bool = True):
        self.b.assigned.setdefault(name, line)
        if written:
            self.b.written.setdefault(name)

    def _target(self, t: ast.AST):
        if isinstance(t, (ast.Subscript, ast.Attribute)):
            base = t.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                self.b.mutated.setdefault(base.id, t.lineno)
                self.b.written.setdefault(base.id)
            self.visit(t)
            return
        for n, line in target_names(t, {}).items():
            self._bind(n, line)
        if isinstance(t, (ast.Tuple, ast.List, ast.Starred)):
            for e in getattr(t, "elts", [getattr(t, "value", None)]):
                if isinstance(e, (ast.Subscript, ast.Attribute)):
                    self._target(e)

    # -- new scopes: bind the name only --------------------------------------------------------
    def visit_FunctionDef(self, node):
        self._bind(node.name, node.lineno)
        for d in node.decorator_list:
            self.visit(d)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._bind(node.name, node.lineno)

    def visit_Lambda(self, node):
        pass

    def visit_ListComp(self, node):
        pass

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    # -- bindings ------------------------------------------------------------------------------
    # targets are visited before values: ``written`` lists names in the order the statements name them
    def visit_Assign(self, node):
        for t in node.targets:
            self._target(t)
        self.visit(node.value)

    def visit_AugAssign(self, node):
        self._target(node.target)
        self.visit(node.value)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self._target(node.target)
            self.visit(node.value)

    def visit_For(self, node):
        self._target(node.target)
        self.visit(node.iter)
        for s in node.body + node.orelse:
            self.visit(s)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node):
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self._target(node.optional_vars)

    def visit_NamedExpr(self, node):
        self._bind(node.target.id, node.lineno)
        self.visit(node.value)

    def visit_Import(self, node):
        for a in node.names:
            self._bind(a.asname or a.name.split(".")[0], node.lineno)

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node):
        if node.name:
            self._bind(node.name, node.lineno, written=False)  # unbound again when the handler ends
        self.generic_visit(node)

    def visit_Global(self, node):
        self.b.globals.update(node.names)

    def visit_Nonlocal(self, node):
        self.b.nonlocals.update(node.names)

    def visit_Call(self, node):
        f = node.func
        # only a method of the variable itself (FlyDSL also counts `a.b.c()` for `a`: carrying a namespace
        # of tensors through a loop because a tensor in it is stored into would only add loop values)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            self.b.mutated.setdefault(f.value.id, node.lineno)
            self.b.called.setdefault(f.value.id)
        self.generic_visit(node)


def bindings(stmts: list[ast.stmt]) -> Bindings:
    """What ``stmts`` bind and mutate in the enclosing function's scope."""
    v = _Binder()
    for s in stmts:
        v.visit(s)
    return v.b


def collect_assigned_vars(body_stmts, active_symbols, orelse_stmts=None, test_expr=None) -> list[str]:
    """The variables a control-flow construct carries (FlyDSL's ``_collect_assigned_vars``).

    The names that ``body_stmts`` (then ``orelse_stmts``, then the expression ``test_expr``) write — bind
    with ``=``, ``+=``, ``x: T = v``, a ``for``/``with`` target, ``:=``, ``def``/``class``/``import``, or
    store into (``a[i] = v``, ``a.f = v``) — in source order, followed by the names whose methods they only
    call (``lst.append(v)``; not ``self``); each kept only when it is in one of the sets of
    ``active_symbols`` (the names the caller considers variables of the enclosing function). An
    ``except ... as e`` name is not carried: Python unbinds it when its handler ends. Nested functions,
    lambdas, classes and comprehensions are not entered (their names are their own)."""
    stmts = list(body_stmts) + list(orelse_stmts or ())
    if test_expr is not None:
        stmts.append(ast.Expr(test_expr))
    b = bindings(stmts)
    active = set().union(*active_symbols) if active_symbols else set()
    written = [n for n in b.written if n in active]
    called = [n for n in b.called if n not in b.written and n != "self" and n in active]
    return written + called


def function_locals(fdef: ast.FunctionDef) -> tuple[set[str], set[str], set[str]]:
    """(local names, names declared global, names declared nonlocal) of a function."""
    a = fdef.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if a.vararg:
        params.append(a.vararg.arg)
    if a.kwarg:
        params.append(a.kwarg.arg)
    b = bindings(fdef.body)
    return (set(params) | set(b.assigned)) - b.globals - b.nonlocals, b.globals, b.nonlocals


class _JumpFinder(ast.NodeVisitor):
    def __init__(self, loops_escape: bool):
        self.found: ast.stmt | None = None
        self.depth = 0 if loops_escape else 1  # loop nesting inside the searched statements

    def visit_Return(self, node):
        self.found = self.found or node

    def visit_Break(self, node):
        if self.depth == 0:
            self.found = self.found or node

    visit_Continue = visit_Break

    def visit_For(self, node):
        self.depth += 1
        for s in node.body + node.orelse:
            self.visit(s)
        self.depth -= 1

    visit_While = visit_AsyncFor = visit_For

    def visit_FunctionDef(self, node):
        pass

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef


def find_jump(stmts: list[ast.stmt]) -> ast.stmt | None:
    """The first ``return`` in ``stmts``, or ``break``/``continue`` that leaves them (not in an inner loop)."""
    f = _JumpFinder(loops_escape=True)
    for s in stmts:
        f.visit(s)
    return f.found


_OWN_SCOPE = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def find_raise(stmts: list[ast.stmt]) -> ast.Raise | None:
    """The first ``raise`` that ``stmts`` execute under no other condition of their own: not inside a nested
    ``if``/loop/function (those decide for themselves), but inside ``with``/``try`` blocks."""
    for s in stmts:
        if isinstance(s, ast.Raise):
            return s
        if isinstance(s, _OWN_SCOPE):
            continue
        inner = [*getattr(s, "body", ()), *getattr(s, "orelse", ()), *getattr(s, "finalbody", ())]
        for h in getattr(s, "handlers", ()):
            inner.extend(h.body)
        found = find_raise(inner)
        if found is not None:
            return found
    return None


def is_call_to(node: ast.AST, name: str) -> bool:
    """``name(...)`` or ``something.name(...)``."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name)

"""The package's import graph, read from the source: layers import one way (docs/architecture.md), no module
import cycle except one whose import says why (``# cycle:``), and no import inside a function except of an
optional or slow third-party module, or one breaking a named cycle."""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "flydsl")

# package -> the packages it may import (besides itself); DESIGN.md's table
LAYERS = {
    "utils": set(),
    "ir": set(),
    "layout": set(),
    "dialects": {"ir"},
    "passes": {"ir", "dialects"},
    "expr": {"ir", "dialects", "layout", "utils"},
    "codegen": {"ir", "dialects", "utils"},
    "interp": {"ir", "dialects", "layout", "utils"},
    "runtime": {"ir", "dialects", "codegen", "interp", "utils"},
    "compiler": {"ir", "dialects", "passes", "layout", "expr", "codegen", "interp", "runtime", "utils", "flydsl"},
    # the MLIR-bindings facade FlyDSL code imports (flydsl._mlir.ir, .dialects.arith …): over fx and the compiler
    "_mlir": {
        "ir",
        "dialects",
        "passes",
        "layout",
        "expr",
        "codegen",
        "interp",
        "runtime",
        "compiler",
        "utils",
        "flydsl",
    },
    "opt": {"ir", "dialects", "passes"},
    "testing": {"ir", "dialects", "passes", "expr", "interp"},  # architecture.md: opt, testing -> passes
}
# FlyDSL reaches the facade through fx too (fx.arith.ConstantOp, fx.rocdl's ops, an op view of a gpu.func):
# those names resolve at first use, an import inside the function that says '# cycle:'
FACADE = "_mlir"
# imported inside functions because they are optional, or slow to load and needed only by some calls
LAZY_THIRD_PARTY = {"torch", "cuda", "llvmlite", "ml_dtypes"}


def _modules() -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in filenames:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


MODULES = _modules()


class _Import:
    def __init__(self, module: str, target: str, line: int, text: str, top: bool):
        self.module, self.target, self.line, self.text, self.top = module, target, line, text, top


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = module.split(".")
    if not is_pkg:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _note(lines: list[str], lineno: int) -> str:
    """An import's line and the comment lines just above it."""
    i = lineno - 1
    text = lines[i]
    while i > 0 and lines[i - 1].lstrip().startswith("#"):
        i -= 1
        text = lines[i] + "\n" + text
    return text


def _file_imports(mod: str, path: str) -> list[_Import]:
    src = open(path).read()
    lines = src.splitlines()
    is_pkg = path.endswith("__init__.py")
    out = []

    def visit(node, top: bool):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test):
                continue  # annotations only
            if isinstance(ch, ast.Import):
                out.extend(_Import(mod, a.name, ch.lineno, _note(lines, ch.lineno), top) for a in ch.names)
            elif isinstance(ch, ast.ImportFrom):
                base = _resolve(mod, is_pkg, ch)
                for a in ch.names:
                    full = f"{base}.{a.name}"
                    out.append(_Import(mod, full if full in MODULES else base, ch.lineno, _note(lines, ch.lineno), top))
            elif isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(ch, False)
            else:
                visit(ch, top)

    visit(ast.parse(src), True)
    return out


def _imports() -> list[_Import]:
    return [imp for mod, path in MODULES.items() for imp in _file_imports(mod, path)]


IMPORTS = _imports()


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_layers_import_one_way():
    bad = []
    for imp in IMPORTS:
        if not imp.target.startswith("flydsl"):
            continue
        a, b = _package(imp.module), _package(imp.target)
        if a == b or a not in LAYERS:
            continue
        if b == FACADE and not imp.top and "cycle:" in imp.text:
            continue
        if b not in LAYERS[a]:
            bad.append(f"{imp.module}:{imp.line} imports {imp.target} ({a} may import {sorted(LAYERS[a])})")
    assert not bad, "\n".join(bad)


def test_no_import_cycle_without_a_reason():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    reasons: dict[tuple, bool] = {}
    for imp in IMPORTS:
        if imp.top and imp.target in MODULES:
            graph[imp.module].add(imp.target)
            reasons[(imp.module, imp.target)] = reasons.get((imp.module, imp.target), False) or "cycle:" in imp.text
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            connect(v)
    unexplained = [c for c in cycles if not any(reasons.get((a, b)) for a in c for b in c)]
    assert not unexplained, f"import cycles without a '# cycle:' comment saying why: {unexplained}"
    assert len(cycles) <= 1, cycles  # layout.layout <-> layout.access is the one left


@pytest.mark.parametrize("package", ["expr", "ir", "dialects", "passes", "interp", "codegen", "compiler"])
def test_imports_inside_functions_say_why(package):
    bad = []
    for imp in IMPORTS:
        if imp.top or _package(imp.module) != package:
            continue
        third_party = not imp.target.startswith("flydsl")
        if third_party and imp.target.split(".")[0] in LAZY_THIRD_PARTY:
            continue
        if not third_party and "cycle:" in imp.text:
            continue
        bad.append(f"{imp.module}:{imp.line}: {imp.text.strip()}")
    assert not bad, "imports inside functions (move them to the top, or say '# cycle: why'):\n" + "\n".join(bad)


def test_runtime_does_not_import_the_fx_layer():
    """Arguments become key parts in the compiler (which speaks fx types); the runtime reads them as facts."""
    users = sorted({i.module for i in IMPORTS if _package(i.module) == "runtime" and _package(i.target) == "expr"})
    assert not users, users

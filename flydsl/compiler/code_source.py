"""Where a function's or class's code is, as text for a cache key: its source lines (found from its code objects,
without tokenizing the file), the file it lives in, its nested code objects and the globals it loads, and the line
where it reads a name (:mod:`flydsl.compiler.deps` builds keys and watches from these)."""

from __future__ import annotations

import dis
import hashlib
import inspect
import linecache
import sys
import types

from .frames import column_of

__all__ = ["load_site"]


def _code_lines(code: types.CodeType) -> str | None:
    """The source lines of a function's code object: from its first line (the first decorator's) to the last
    line any of its instructions — or of the code nested in it — spans; None without a source file.

    What ``inspect.getsource`` gives (less trailing comments) without tokenizing the file from the ``def``
    on: ~20x faster, and a cached start walks a dozen functions (issue 11's < 100 ms)."""
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return None
    last = code.co_firstlineno
    for c in _codes(code):
        for _line, end, _col, _end_col in c.co_positions():
            if end is not None and end > last:
                last = end
    return "".join(lines[code.co_firstlineno - 1 : last])


def _class_span(cls) -> tuple[str, int, int] | None:
    """``(file, first line, last line)`` of a class statement found from its methods' code objects: the
    nearest ``class <name>`` line above the first method, down to the last line indented under it (what
    ``inspect`` finds by parsing the whole file with ``ast``); None for a class with no method of its own."""
    codes = []
    for m in vars(cls).values():
        m = m.fget if isinstance(m, property) else getattr(m, "__func__", m)
        code = getattr(m, "__code__", None)
        # defined in the class body (not a function attached from elsewhere, e.g. a property made later)
        if isinstance(code, types.CodeType) and getattr(m, "__qualname__", "").startswith(cls.__qualname__ + "."):
            codes.append(code)
    # the class's own file (not NamedTuple's generated or library methods named after the class)
    path = getattr(sys.modules.get(cls.__module__), "__file__", None)
    own = [c for c in codes if c.co_filename == path]
    if not own:  # a class shown under another module's name: the one file its methods come from
        files = {c.co_filename for c in codes if not c.co_filename.startswith("<")}
        if len(files) != 1:
            return None
        (path,) = files
        own = [c for c in codes if c.co_filename == path]
    codes = own
    linecache.checkcache(path)
    lines = linecache.getlines(path)
    first = min(c.co_firstlineno for c in codes)
    header = f"class {cls.__name__}"
    start = next((i for i in range(first - 1, -1, -1) if lines[i].lstrip().startswith(header)), None)
    if start is None or lines[start].lstrip()[len(header) :][:1] not in ("(", ":"):
        return None
    while start > 0 and lines[start - 1].lstrip().startswith("@"):  # decorators belong to the statement
        start -= 1
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = max(e for c in codes for cc in _codes(c) for _l, e, _c, _ec in cc.co_positions() if e is not None)
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return path, start + 1, end


def _source_of(obj) -> str:
    code = getattr(obj, "__code__", None)
    text = _code_lines(code) if isinstance(code, types.CodeType) else None
    if text:
        return text
    span = _class_span(obj) if isinstance(obj, type) else None
    if span is not None:
        path, first, last = span
        return "".join(linecache.getlines(path)[first - 1 : last])
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        if code is None:
            return f"<no source: {getattr(obj, '__qualname__', type(obj).__name__)}>"
        return "<bytecode> " + hashlib.sha256(code.co_code + repr(code.co_names).encode()).hexdigest()


def _where(obj) -> str:
    """``file:first line`` of a function or class (locations in cached IR must be the current ones)."""
    code = getattr(obj, "__code__", None)
    if code is not None:
        return f"{code.co_filename}:{code.co_firstlineno}"
    span = _class_span(obj) if isinstance(obj, type) else None
    if span is not None:
        return f"{span[0]}:{span[1]}"
    try:
        return f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}"
    except (OSError, TypeError):
        return "?"


def _file_hash(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "<unreadable>"


def _codes(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


_OP_GLOBAL, _OP_NAME, _OP_EXT = dis.opmap["LOAD_GLOBAL"], dis.opmap["LOAD_NAME"], dis.opmap["EXTENDED_ARG"]
_GLOBAL_SHIFT = 1 if sys.version_info >= (3, 11) else 0  # 3.11+: LOAD_GLOBAL's argument is (name index << 1) | flag


def _global_loads(code: types.CodeType) -> list[str]:
    """Names the code object loads as globals, in order of first use (a scan of the raw bytecode: what
    ``dis.get_instructions`` would give for LOAD_GLOBAL/LOAD_NAME, without an object per instruction)."""
    names, raw, out, ext = code.co_names, code.co_code, {}, 0
    for i in range(0, len(raw), 2):
        op, arg = raw[i], raw[i + 1] | ext
        if op == _OP_EXT:
            ext = arg << 8
            continue
        ext = 0
        if op == _OP_GLOBAL:
            out[names[arg >> _GLOBAL_SHIFT]] = None
        elif op == _OP_NAME:
            out[names[arg]] = None
    return list(out)


def load_site(code: types.CodeType, name: str) -> tuple:
    """The (file, line, col) where ``code`` (or code nested in it) first reads ``name``."""
    for c in _codes(code):
        for ins in dis.get_instructions(c):
            if ins.argval == name and ins.opname.startswith("LOAD"):
                line, col = column_of(c, ins.offset)
                return (c.co_filename, line or c.co_firstlineno, col)
    return (code.co_filename, code.co_firstlineno, 1)

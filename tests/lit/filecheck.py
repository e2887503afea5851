"""A small FileCheck: checks text against the ``// CHECK…:`` lines of a test file, with LLVM FileCheck's
syntax and meaning for the subset our golden tests use (docs/testing.md says why it is ours):

* ``CHECK: p`` — ``p`` matches at or after the end of the previous match;
* ``CHECK-NEXT: p`` — on the line right after the previous match's; ``CHECK-SAME: p`` — on its line;
* ``CHECK-LABEL: p`` — as ``CHECK`` (a new section starts; nothing between two labels is skipped over);
* ``CHECK-NOT: p`` — ``p`` does not occur between the previous match and the next positive match;
* ``CHECK-EMPTY:`` — the next line is empty.

In a pattern, ``{{re}}`` is a regular expression, ``[[NAME:re]]`` captures what ``re`` matched and
``[[NAME]]`` must match it again; everything else is literal, and runs of spaces match any horizontal
whitespace.
"""

from __future__ import annotations

import re

__all__ = ["check", "CheckError"]

_DIRECTIVE = re.compile(r"//\s*(CHECK(?:-NEXT|-SAME|-NOT|-LABEL|-EMPTY)?):(.*)$")
_NAME = re.compile(r"[A-Za-z_]\w*")


class CheckError(AssertionError):
    pass


def _pieces(pattern: str):
    """``("lit", text)``, ``("re", regex)``, ``("def", name, regex)`` and ``("use", name)`` pieces; a variable's
    regex ends at the first ``]]`` outside its own brackets (``[[N:[0-9]+]]``)."""
    i, lit = 0, []
    while i < len(pattern):
        if pattern.startswith("{{", i):
            j = pattern.find("}}", i + 2)
            if j < 0:
                raise CheckError(f"unclosed '{{{{' in {pattern!r}")
            yield ("lit", "".join(lit))
            lit = []
            yield ("re", pattern[i + 2 : j])
            i = j + 2
        elif pattern.startswith("[[", i) and _NAME.match(pattern, i + 2):
            m = _NAME.match(pattern, i + 2)
            assert m is not None
            k, depth = m.end(), 0
            if pattern.startswith(":", k):
                k += 1
                start = k
                while k < len(pattern) and not (depth == 0 and pattern.startswith("]]", k)):
                    depth += {"[": 1, "]": -1}.get(pattern[k], 0)
                    k += 1
                piece = ("def", m.group(0), pattern[start:k])
            else:
                piece = ("use", m.group(0))
            if not pattern.startswith("]]", k):
                raise CheckError(f"unclosed '[[' in {pattern!r}")
            yield ("lit", "".join(lit))
            lit = []
            yield piece
            i = k + 2
        else:
            lit.append(pattern[i])
            i += 1
    yield ("lit", "".join(lit))


def _regex(pattern: str, names: dict[str, str]) -> re.Pattern:
    out = []
    for piece in _pieces(pattern):
        kind = piece[0]
        if kind == "lit":
            out.append(_literal(piece[1]))
        elif kind == "re":
            out.append(f"(?:{piece[1]})")
        elif kind == "def":
            out.append(f"(?P<{piece[1]}>{piece[2]})")
        elif piece[1] in names:
            out.append(re.escape(names[piece[1]]))
        else:
            raise CheckError(f"[[{piece[1]}]] is used before it is defined")
    return re.compile("".join(out))


def _literal(text: str) -> str:
    return "[ \t]+".join(re.escape(part) for part in re.split(r"[ \t]+", text))


def _directives(check_text: str) -> list[tuple[int, str, str]]:
    out = []
    for n, line in enumerate(check_text.splitlines(), 1):
        m = _DIRECTIVE.search(line)
        if m:
            out.append((n, m.group(1), m.group(2).strip()))
    return out


def check(output: str, check_text: str, name: str = "<checks>") -> None:
    """Raise :class:`CheckError` unless ``output`` satisfies the CHECK lines of ``check_text``."""
    lines = output.splitlines()
    names: dict[str, str] = {}
    line, col = 0, 0  # where the previous match ended
    pending_not: list[tuple[int, str]] = []

    def fail(n: int, kind: str, pattern: str, why: str) -> CheckError:
        near = "\n".join(f"    {i + 1:4d} | {t}" for i, t in enumerate(lines) if line - 2 <= i <= line + 6)
        return CheckError(f"{name}:{n}: {kind}: {pattern!r} {why}\n  output near line {line + 1}:\n{near}")

    def search(rx: re.Pattern, lo: int, hi: int, start_col: int):
        for i in range(lo, min(hi, len(lines))):
            m = rx.search(lines[i], start_col if i == lo else 0)
            if m:
                return i, m
        return None

    def check_nots(upto_line: int, upto_col: int) -> None:
        for n, pattern in pending_not:
            rx = _regex(pattern, names)
            for i in range(line, min(upto_line + 1, len(lines))):
                text = lines[i][: upto_col if i == upto_line else None]
                if rx.search(text, col if i == line else 0):
                    raise fail(n, "CHECK-NOT", pattern, f"occurs on line {i + 1}")
        pending_not.clear()

    for n, kind, pattern in _directives(check_text):
        if kind == "CHECK-NOT":
            pending_not.append((n, pattern))
            continue
        if kind == "CHECK-EMPTY":
            if line + 1 >= len(lines) or lines[line + 1].strip():
                raise fail(n, kind, "", "the next line is not empty")
            check_nots(line + 1, 0)
            line, col = line + 1, 0
            continue
        rx = _regex(pattern, names)
        if kind in ("CHECK", "CHECK-LABEL"):
            hit = search(rx, line, len(lines), col)
        elif kind == "CHECK-NEXT":
            hit = search(rx, line + 1, line + 2, 0)
        else:  # CHECK-SAME
            hit = search(rx, line, line + 1, col)
        if hit is None:
            raise fail(n, kind, pattern, "not found")
        i, m = hit
        check_nots(i, m.start())
        names.update({k: v for k, v in m.groupdict().items() if v is not None})
        line, col = i, m.end()
    check_nots(len(lines) - 1, len(lines[-1]) if lines else 0)

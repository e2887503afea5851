"""``python -m flydsl.opt FILE.mlir --pass canonicalize,cse``: parse IR text, run passes, print the result.

The IR-level tool of the golden tests (tests/lit/*.mlir), like MLIR's ``mlir-opt``::

    python -m flydsl.opt input.mlir --pass canonicalize,dce      # to stdout
    python -m flydsl.opt - --pass cse < input.mlir               # from stdin
    python -m flydsl.opt input.mlir --split-input-file           # each "// -----" chunk on its own
    python -m flydsl.opt --list-passes

The module is verified after parsing and after every pass (``--no-verify`` skips it). Errors (parse,
verification, an unknown pass) go to stderr with exit status 1. Output is the custom MLIR syntax of
:func:`flydsl.ir.print_op` (``--generic`` for the generic form, ``--locs`` with source locations).
"""

from __future__ import annotations

import argparse
import sys

from . import dialects  # noqa: F401 - every op is declared (the parser looks ops up by name)
from .ir import IRError, ParseError, parse_module, print_op, verify
from .passes import PASSES, get_pass

__all__ = ["main", "run"]

SPLIT = "// -----"


def run(text: str, passes: list[str], *, verify_each: bool = True, generic: bool = False, locs: bool = False) -> str:
    """The printed module of ``text`` after ``passes`` (names of registered passes, in order).

    Raises:
        flydsl.ir.ParseError: the text does not parse. flydsl.ir.IRError: the IR does not verify.
        KeyError: an unknown pass.
    """
    fns = [get_pass(p) for p in passes]
    module = parse_module(text)
    if verify_each:
        verify(module)
    for fn in fns:
        fn(module)
        if verify_each:
            verify(module)
    return print_op(module, generic=generic, locs=locs)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m flydsl.opt", description=__doc__.split("\n\n")[0])
    ap.add_argument("input", nargs="?", help="an MLIR file ('-' for stdin)")
    ap.add_argument("--pass", dest="passes", default="", help="comma-separated pass names, run in order")
    ap.add_argument("-o", "--output", help="write here instead of stdout")
    ap.add_argument("--split-input-file", action="store_true", help=f"process each '{SPLIT}' chunk separately")
    ap.add_argument("--no-verify", action="store_true", help="do not verify after parsing and after each pass")
    ap.add_argument("--generic", action="store_true", help="print the generic op form")
    ap.add_argument("--locs", action="store_true", help="print source locations")
    ap.add_argument("--list-passes", action="store_true", help="print the registered passes and exit")
    return ap


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring); returns the exit status."""
    args = _parser().parse_args(argv)
    if args.list_passes:
        print("\n".join(sorted(PASSES)))
        return 0
    if args.input is None:
        _parser().print_usage(sys.stderr)
        return 1
    text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    chunks = text.split(SPLIT + "\n") if args.split_input_file else [text]
    passes = [p.strip() for p in args.passes.split(",") if p.strip()]
    out = []
    try:
        for chunk in chunks:
            out.append(run(chunk, passes, verify_each=not args.no_verify, generic=args.generic, locs=args.locs))
    except (ParseError, IRError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"flydsl.opt: error: {msg}", file=sys.stderr)
        return 1
    result = f"\n{SPLIT}\n".join(s.rstrip("\n") for s in out) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(result)
    else:
        sys.stdout.write(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

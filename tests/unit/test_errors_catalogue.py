"""The error catalogue is consistent and its documentation (docs/errors.md) and the README's environment
table are generated from the code, not hand-copied."""

from __future__ import annotations

import os
import string

from flydsl.compiler import FlyDSLError
from flydsl.compiler.errors import CATALOGUE, catalogue_markdown, error
from flydsl.utils.env import describe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _between(text: str, begin: str, end: str) -> str:
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def test_docs_errors_md_is_the_catalogue():
    with open(os.path.join(ROOT, "docs", "errors.md")) as f:
        doc = f.read()
    assert _between(doc, "<!-- catalogue:begin -->", "<!-- catalogue:end -->") == catalogue_markdown().strip()


def test_readme_environment_table_is_generated():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    assert _between(readme, "<!-- env-table:begin -->", "<!-- env-table:end -->") == describe().strip()


def test_every_entry_renders_with_its_fields():
    for diag in CATALOGUE.values():
        fields = {f for _, f, _, _ in string.Formatter().parse(diag.message + diag.fix) if f}
        e = error(diag, ("kernel.py", 3, 5), **{f: f"<{f}>" for f in fields})
        assert isinstance(e, FlyDSLError) and isinstance(e, diag.cls)
        assert str(e).startswith(f"kernel.py:3:5: error[{diag.id}]: ")
        assert e.diag_id == diag.id and "{" not in e.message
    assert len({d.id for d in CATALOGUE.values()}) == len(CATALOGUE)

"""``flydsl.expr.utils.print_typst``: layouts, tiled copies and tiled MMAs drawn as Typst documents (cell
sizes fit the text; grids side by side share the height, stacked grids the width)."""

from __future__ import annotations

import io

import pytest

import flydsl.expr as fx
from flydsl import layout as L
from flydsl.expr.utils import print_typst as pt


def _pt(x: str) -> float:
    assert x.endswith("pt")
    return float(x[:-2])


def test_cell_sizes_fit_the_text_and_are_shared_where_grids_line_up():
    one = {(0, 0): ("#ffffff", "3")}
    two_lines = {(0, 0): ("#ffffff", "T100 #linebreak() V12")}
    w1, h1 = pt._typst_grid_cell_size(1, 1, one)
    w2, h2 = pt._typst_grid_cell_size(1, 1, two_lines)
    assert _pt(w2) > _pt(w1) and _pt(h2) > _pt(h1)
    (ws, hs), (wd, hd) = pt._typst_copy_grid_cell_sizes(1, 1, one, two_lines)
    assert hs == hd and _pt(ws) < _pt(wd)
    sizes = pt._typst_mma_grid_cell_sizes(1, 1, 1, two_lines, one, one)
    assert sizes["A"][1] == sizes["C"][1] and sizes["B"][0] == sizes["C"][0]
    block = pt._typst_grid_block(1, 1, one, cell_width="30pt", cell_height="40pt")
    assert "#box(width: 30pt, height: 40pt, inset: 1pt)" in block and 'fill: rgb("#ffffff")' in block


def test_layout_copy_and_mma_documents():
    buf = io.StringIO()
    text = pt.print_typst(L.Layout._make((2, 3), (3, 1)), file=buf)
    assert buf.getvalue().strip() == text.strip()
    for v in range(6):  # every value of the layout is a cell
        assert f"[{v}]]]" in text
    atom = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32)
    copy = fx.make_tiled_copy_tv(atom, fx.make_layout((2, 2), (2, 1)), fx.make_layout((1, 2), (1, 1)))
    text = pt.print_typst(copy, file=io.StringIO())
    assert text.count("grid.cell") == 2 * 8 and "*source*" in text and "T3 #linebreak() V1" in text
    mma = fx.make_tiled_mma(fx.make_mma_atom(fx.UniversalFMA(fx.Float32)), fx.make_layout((4, 4, 1), (1, 4, 0)))
    text = pt.print_typst(mma, file=io.StringIO())
    assert text.count("grid.cell") == 4 + 4 + 16 and "*B*" in text
    with pytest.raises(TypeError, match="draws a Layout, a TiledCopy or a TiledMma"):
        pt.print_typst(3)


def test_documents_compile_with_typst(tmp_path):
    typst = pytest.importorskip("typst")
    mma = fx.make_tiled_mma(fx.make_mma_atom(fx.UniversalFMA(fx.Float32)), fx.make_layout((2, 2, 1), (1, 2, 0)))
    for obj in (L.Layout._make(8, 2), mma):
        path = tmp_path / "doc.typ"
        path.write_text(pt.print_typst(obj, file=io.StringIO()))
        assert typst.compile(str(path))[:4] == b"%PDF"

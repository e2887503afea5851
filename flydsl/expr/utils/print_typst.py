"""``print_typst(obj)``: a layout, a tiled copy or a tiled MMA drawn as a Typst document (CuTe's
``print_latex``, in Typst; FlyDSL's ``flydsl.expr.utils.print_typst``).

* a ``Layout`` of rank 1 or 2: an M x N grid whose cell (m, n) holds ``layout(m, n)``, shaded by value;
* a ``TiledCopy``: the source and destination tiles side by side, cell = ``T<thread> V<value>`` of the
  (thread, value) pair that moves that element, coloured by thread;
* a ``TiledMma``: A (M x K) left of C (M x N), B (K x N) above C, cells as for a copy.

Compile ``typst compile out.typ``. A grid's cells have one size, large enough for its longest text; grids
that sit side by side share the cell height and grids stacked above each other share the cell width, so
rows and columns line up. Cells are ``{(row, col): (fill colour "#rrggbb", content)}``; content lines are
separated by ``#linebreak()``.
"""

from __future__ import annotations

import sys

from ... import layout as L
from ...layout import Layout

__all__ = ["print_typst"]

_CHAR_PT = 6.0  # width of one character at the grid's font size
_LINE_PT = 11.0  # height of one text line
_PAD_PT = 6.0  # room around the text inside a cell
_MIN_PT = 14.0  # the smallest cell side

#: 8 distinct light fills for threads; values of a plain layout are shaded in grey
_THREAD_FILLS = ("#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6", "#ffff99", "#8dd3c7", "#fccde5")


def _color_bw(idx: int) -> str:
    """A grey for value ``idx`` (8 steps, light to mid), so neighbouring values differ."""
    g = 0xFF - (idx % 8) * 0x12
    return f"#{g:02x}{g:02x}{g:02x}"


def _color_tv(tid: int, vid: int) -> str:
    """The fill of a (thread, value) cell: one colour per thread (cycled)."""
    return _THREAD_FILLS[tid % len(_THREAD_FILLS)]


def _typst_content_lines(content: str) -> list[str]:
    """The visible lines of a cell's content."""
    return [part.strip() for part in content.split("#linebreak()")]


def _typst_visible_metrics(content: str) -> tuple[int, int]:
    """``(characters of the longest line, lines)`` of a cell's content."""
    lines = _typst_content_lines(content)
    return max(len(ln) for ln in lines), len(lines)


def _typst_format_pt(value: float) -> str:
    return f"{value:g}pt"


def _typst_grid_cell_size_pt(rows: int, cols: int, cells: dict, row_labels: bool, col_labels: bool):
    """``(width, height)`` in points of one cell of a grid: its longest content and its labels fit."""
    texts = [content for _, content in cells.values()]
    if row_labels:
        texts.append(str(rows - 1))
    if col_labels:
        texts.append(str(cols - 1))
    chars, lines = 1, 1
    for t in texts:
        c, n = _typst_visible_metrics(t)
        chars, lines = max(chars, c), max(lines, n)
    return max(_MIN_PT, chars * _CHAR_PT + _PAD_PT), max(_MIN_PT, lines * _LINE_PT + _PAD_PT)


def _typst_grid_cell_size(rows: int, cols: int, cells: dict, *, row_labels: bool = True, col_labels: bool = True):
    """``(width, height)`` of a grid's cells as Typst lengths (``"24pt"``)."""
    w, h = _typst_grid_cell_size_pt(rows, cols, cells, row_labels, col_labels)
    return _typst_format_pt(w), _typst_format_pt(h)


def _typst_copy_grid_cell_sizes(rows: int, cols: int, cells_src: dict, cells_dst: dict):
    """Cell sizes of a copy's source and destination grids (side by side: one height)."""
    ws, hs = _typst_grid_cell_size_pt(rows, cols, cells_src, True, True)
    wd, hd = _typst_grid_cell_size_pt(rows, cols, cells_dst, True, True)
    h = _typst_format_pt(max(hs, hd))
    return (_typst_format_pt(ws), h), (_typst_format_pt(wd), h)


def _typst_mma_grid_cell_sizes(m: int, n: int, k: int, cells_A: dict, cells_B: dict, cells_C: dict) -> dict:
    """Cell sizes of an MMA's grids: A (M x K) is left of C (M x N), one height; B (K x N) is above C, one
    width."""
    wa, ha = _typst_grid_cell_size_pt(m, k, cells_A, True, True)
    wb, hb = _typst_grid_cell_size_pt(k, n, cells_B, True, True)
    wc, hc = _typst_grid_cell_size_pt(m, n, cells_C, True, True)
    h_ac, w_bc = _typst_format_pt(max(ha, hc)), _typst_format_pt(max(wb, wc))
    return {"A": (_typst_format_pt(wa), h_ac), "B": (w_bc, _typst_format_pt(hb)), "C": (w_bc, h_ac)}


def _typst_boxed_cell(content: str, width: str, height: str, fill: str | None = None) -> str:
    box = f"#box(width: {width}, height: {height}, inset: 1pt)[#align(center + horizon)[{content}]]"
    return f'grid.cell(fill: rgb("{fill}"))[{box}]' if fill else f"[{box}]"


def _typst_grid_block(
    rows: int, cols: int, cells: dict, *, cell_width=None, cell_height=None, row_labels=True, col_labels=True
) -> str:
    """A Typst ``#grid`` of ``rows`` x ``cols`` cells (with row/column index labels); the cell size is
    ``cell_width`` x ``cell_height`` when given, else :func:`_typst_grid_cell_size`."""
    if cell_width is None or cell_height is None:
        w, h = _typst_grid_cell_size(rows, cols, cells, row_labels=row_labels, col_labels=col_labels)
        cell_width, cell_height = cell_width or w, cell_height or h
    ncols = cols + (1 if row_labels else 0)
    items = []
    if col_labels:
        if row_labels:
            items.append(_typst_boxed_cell("", cell_width, cell_height))
        items += [_typst_boxed_cell(f"*{c}*", cell_width, cell_height) for c in range(cols)]
    for r in range(rows):
        if row_labels:
            items.append(_typst_boxed_cell(f"*{r}*", cell_width, cell_height))
        for c in range(cols):
            fill, content = cells.get((r, c), ("#ffffff", ""))
            items.append(_typst_boxed_cell(content, cell_width, cell_height, fill))
    body = ",\n  ".join(items)
    return f"#grid(\n  columns: {ncols},\n  inset: 0pt,\n  stroke: 0.5pt + gray,\n  {body},\n)"


def _shape_2d(layout: Layout) -> tuple[int, int]:
    if not layout.is_static:
        raise ValueError(f"print_typst draws static layouts, got {layout}")
    shape = layout._shape
    if type(shape) is not tuple:
        return 1, shape
    if len(shape) == 1:
        return 1, L.size(layout)
    if len(shape) != 2:
        raise ValueError(f"print_typst draws layouts of rank 1 or 2, got {layout}")
    return L.size(layout, 0), L.size(layout, 1)


def _tv_cells(tv: Layout, rows: int) -> dict:
    """``{(m, n): (fill, "T<t> V<v>")}`` of a (thread, value) -> column-major tile index layout."""
    nthr = L.size(tv, 0) if type(tv._shape) is tuple else tv._shape
    nval = L.size(tv, 1) if type(tv._shape) is tuple else 1
    cells = {}
    for t in range(nthr):
        for v in range(nval):
            idx = L.crd2idx((t, v), tv) if type(tv._shape) is tuple else L.crd2idx(t, tv)
            cells.setdefault((idx % rows, idx // rows), (_color_tv(t, v), f"T{t} #linebreak() V{v}"))
    return cells


def _document(title: str, blocks: list[str]) -> str:
    head = '#set page(width: auto, height: auto, margin: 8pt)\n#set text(font: "DejaVu Sans Mono", size: 8pt)\n'
    return head + f"= {title}\n\n" + "\n\n".join(blocks) + "\n"


def _typst_layout(layout: Layout) -> str:
    m, n = _shape_2d(layout)
    rank2 = type(layout._shape) is tuple and len(layout._shape) == 2
    cells = {}
    for i in range(m):
        for j in range(n):
            v = L.crd2idx((i, j), layout) if rank2 else L.crd2idx(j, layout)
            cells[(i, j)] = (_color_bw(v), str(v))
    return _document(f"Layout {layout}", [_typst_grid_block(m, n, cells)])


def _typst_copy(tiled_copy) -> str:
    tile = tuple(int(x) for x in tiled_copy._tile)
    m, n = (tile[0], tile[1]) if len(tile) > 1 else (1, tile[0])
    src = _tv_cells(tiled_copy.tiled_tv_layout_S, m)
    dst = _tv_cells(tiled_copy.tiled_tv_layout_D, m)
    (ws, hs), (wd, hd) = _typst_copy_grid_cell_sizes(m, n, src, dst)
    grids = [
        "*source*\n" + _typst_grid_block(m, n, src, cell_width=ws, cell_height=hs),
        "*destination*\n" + _typst_grid_block(m, n, dst, cell_width=wd, cell_height=hd),
    ]
    return _document(f"TiledCopy {tiled_copy}", [f"#stack(dir: ltr, spacing: 12pt,\n[{grids[0]}],\n[{grids[1]}])"])


def _transpose(cells: dict) -> dict:
    return {(c, r): v for (r, c), v in cells.items()}


def _typst_mma(tiled_mma) -> str:
    m, n, k = (int(x) for x in tiled_mma._tile)
    a = _tv_cells(tiled_mma.tv_layout_A_tiled, m)  # (m, k)
    b = _transpose(_tv_cells(tiled_mma.tv_layout_B_tiled, n))  # drawn as (k, n), above C
    c = _tv_cells(tiled_mma.tv_layout_C_tiled, m)
    sz = _typst_mma_grid_cell_sizes(m, n, k, a, b, c)
    ga = _typst_grid_block(m, k, a, cell_width=sz["A"][0], cell_height=sz["A"][1])
    gb = _typst_grid_block(k, n, b, cell_width=sz["B"][0], cell_height=sz["B"][1])
    gc = _typst_grid_block(m, n, c, cell_width=sz["C"][0], cell_height=sz["C"][1])
    table = f"#grid(columns: 2, gutter: 12pt,\n[], [*B*\n{gb}],\n[*A*\n{ga}], [*C*\n{gc}])"
    return _document(f"TiledMma {tiled_mma}", [table])


def print_typst(obj, file=None) -> str:
    """Print ``obj`` (a static ``Layout``, ``TiledCopy`` or ``TiledMma``) as a Typst document to ``file``
    (default stdout) and return the text.

    Raises:
        TypeError: another kind of object. ValueError: a dynamic layout, or one of rank above 2.
    """
    if isinstance(obj, Layout):
        text = _typst_layout(obj)
    elif hasattr(obj, "tiled_tv_layout_S"):
        text = _typst_copy(obj)
    elif hasattr(obj, "tv_layout_C_tiled"):
        text = _typst_mma(obj)
    else:
        raise TypeError(f"print_typst draws a Layout, a TiledCopy or a TiledMma, got {type(obj).__name__}")
    print(text, file=file if file is not None else sys.stdout)
    return text

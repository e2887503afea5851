"""Shared-memory layouts for wgmma/TMA ↔ descriptors and boxes: the library derives descriptor fields and TMA
boxes from layouts; the interpreter reads operands through descriptors exactly as the PTX ISA defines them.
Property: for every canonical layout (and any block of it a wgmma reads), the addresses the interpreter
computes from the derived descriptor are the addresses the layout gives — so a wrong derivation (or a wrong
reading of the spec on either side) fails here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flydsl.dialects.nvvm_sm90 import TmaFields
from flydsl.interp.impl_tma import swizzle_bytes
from flydsl.interp.impl_wgmma import decode_desc, operand_addresses
from flydsl.layout import ComposedLayout, Layout, Swizzle
from flydsl.layout.gmma import (
    GmmaLayoutError,
    encode_gmma_desc,
    gmma_desc_fields,
    gmma_smem_layout,
    layout_table,
    split_swizzle,
    tma_box_plan,
)


def layout_addresses(layout, bits, base, origin, extent, rest=()):
    """Byte address of each element of the block, from the layout (its swizzle on offsets from ``base``)."""
    sw, off, outer = split_swizzle(layout)
    tab = np.array(layout_table(outer, off, rest), np.int64)
    r0, k0 = origin
    rows, k = extent
    blk = tab[r0 : r0 + rows, k0 : k0 + k]
    if sw is not None:
        blk = np.vectorize(sw.apply)(blk)
    return base + blk * (bits // 8)


@st.composite
def tiles(draw):
    bits = draw(st.sampled_from([8, 16]))
    major = draw(st.sampled_from(["K", "MN"] if bits == 16 else ["K"]))
    swz = draw(st.sampled_from([0, 32, 64, 128]))
    e = bits // 8
    t, w = 16 // e, max(1, swz // 16)
    kin = 16 if bits == 16 else 32
    if major == "K":
        mn_atom, k_atom = 8, max(w * t, t)
    else:
        mn_atom, k_atom = w * t, 8
    mn = mn_atom * draw(st.integers(1, 4)) * (1 if mn_atom >= 64 else draw(st.sampled_from([1, 2, 4])))
    k = max(k_atom, kin) * draw(st.integers(1, 2))
    stages = draw(st.sampled_from([None, 2, 3]))
    rows = draw(st.sampled_from([r for r in (8, 16, 64, 128, 256) if r <= mn and mn % r == 0]))
    if major == "MN":
        rows = max(rows, t * w) if mn % max(rows, t * w) == 0 else mn
    r0 = rows * draw(st.integers(0, mn // rows - 1))
    k0 = kin * draw(st.integers(0, k // kin - 1))
    stage = draw(st.integers(0, (stages or 1) - 1))
    return bits, major, swz, (mn, k), stages, (r0, k0), (rows, kin), stage


@settings(max_examples=150, deadline=None)
@given(tiles(), st.integers(0, 7))
def test_descriptor_from_layout_reads_what_the_layout_stores(case, base_kb):
    bits, major, swz, shape, stages, origin, extent, stage = case
    lay = gmma_smem_layout(bits, shape, major, swz, stages)
    rest = (stage,) if stages else ()
    f = gmma_desc_fields(lay, bits, major, origin, extent, rest)
    base = base_kb * 1024  # buffers are aligned to the swizzle period
    desc = encode_gmma_desc(base + f.start, f)
    got = operand_addresses(desc, extent[0], extent[1], bits // 8, major == "MN")
    want = layout_addresses(lay, bits, base, origin, extent, rest)
    np.testing.assert_array_equal(got, want)
    assert decode_desc(desc)[4] == swz


@settings(max_examples=60, deadline=None)
@given(tiles())
def test_tma_boxes_write_the_tile_as_the_layout_stores_it(case):
    bits, major, swz, shape, stages, _, _, stage = case
    lay = gmma_smem_layout(bits, shape, major, swz, stages)
    contig = 1 if major == "K" else 0
    rest = (stage,) if stages else ()
    plan = tma_box_plan(lay, bits, contig, rest)
    e = bits // 8
    mn, k = shape
    # simulate the TMA unit: box element (i, j) of box b goes to swizzle(dst + (i * box0 + j) * e)
    placed = {}
    for s_off, cc, co in plan.boxes:
        for i in range(plan.box[1]):
            for j in range(plan.box[0]):
                addr = swizzle_bytes(np.int64((s_off + i * plan.box[0] + j) * e), plan.swizzle)
                crd = (co + i, cc + j) if contig == 1 else (cc + j, co + i)
                placed[crd] = int(addr)
    want = layout_addresses(lay, bits, 0, (0, 0), shape, rest)
    assert len(placed) == mn * k
    for (r, c), a in placed.items():
        assert a == want[r, c]


def test_canonical_tiles_give_the_known_descriptor_fields():
    lay = gmma_smem_layout(16, (128, 64), "K", 128, stages=4)
    f = gmma_desc_fields(lay, 16, "K", (64, 16), (64, 16), (1,))
    assert (f.swizzle, f.sbo, f.start) == (128, 1024, 2 * (8192 + 64 * 64 + 16))
    assert tma_box_plan(lay, 16, 1, (0,)).box == (64, 128)
    lay = gmma_smem_layout(8, (256, 128), "K", 128)
    assert gmma_desc_fields(lay, 8, "K", (0, 32), (256, 32)).sbo == 1024


def test_a_non_canonical_layout_is_rejected_with_the_element_that_breaks_it():
    lay = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((64, 64), (64, 1)))  # rows of 128 B, fine
    gmma_desc_fields(lay, 16, "K", (0, 0), (64, 16))
    bad = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((64, 64), (1, 64)))  # MN-major data read as K-major
    with pytest.raises(GmmaLayoutError, match=r"not a canonical K-major layout .* element \(0, 1\) is at offset 64"):
        gmma_desc_fields(bad, 16, "K", (0, 0), (64, 16))
    with pytest.raises(GmmaLayoutError, match="not a hardware swizzle"):
        gmma_desc_fields(ComposedLayout(Swizzle(3, 4, 3), 0, Layout((64, 64), (64, 1))), 16, "K", (0, 0), (64, 16))
    with pytest.raises(GmmaLayoutError, match="needs MN a multiple of 64"):
        gmma_smem_layout(16, (32, 64), "MN", 128)


def test_tma_plan_rejects_layouts_no_box_writes():
    with pytest.raises(GmmaLayoutError, match="stores only 1 element"):
        tma_box_plan(Layout((64, 64), (1, 64)), 16, 1)  # contiguous mode 1 but stride 64


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda r: st.tuples(
            st.just(r),
            st.lists(st.integers(1, 1 << 20), min_size=r, max_size=r),
            st.lists(st.integers(1, 1 << 20).map(lambda x: x * 16), min_size=r - 1, max_size=r - 1),
            st.lists(st.integers(1, 256), min_size=r, max_size=r),
        )
    ),
    st.sampled_from([0, 7, 9]),
    st.sampled_from([0, 32, 64, 128]),
)
def test_canonical_tma_descriptor_encoding_round_trips(dims, code, swz):
    from flydsl.dialects.nvvm_sm90 import tma_desc_decode, tma_desc_encode

    r, d, s, b = dims
    f = TmaFields(0x7F0000000010, code, d, s, b, swizzle=swz, oob_nan=True, l2_promotion=2)
    g = tma_desc_decode(tma_desc_encode(f))
    assert g.key() == f.key()


def test_tma_fields_check_names_the_violated_rule():
    assert "16-byte aligned" in TmaFields(0x1008, 9, (64, 64), (128,), (64, 64)).check()
    assert "multiples of 16" in TmaFields(0x1000, 9, (64, 64), (120,), (64, 64)).check()
    assert "must not exceed it" in TmaFields(0x1000, 9, (256, 64), (512,), (128, 64), swizzle=128).check()
    assert TmaFields(0x1000, 9, (256, 64), (512,), (64, 64), swizzle=128).check() is None

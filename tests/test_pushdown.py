"""Row-group pruning of column files by typed statistics (reader/pushdown.py, issue 29).

A ``SingleColumnValueFilter`` with ``filter_if_missing`` comparing numbers cuts a scan's
tasks to the rows whose row groups may hold a passing value. Exactness first: every scan
returns what the ``layout="cells"`` twin returns and what the same table returns with
pruning disabled; the planned tasks' ranges show the groups left out.
"""

from __future__ import annotations

import json
import math
import os
import struct
import tempfile
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore import Family
from cellstore.filters import SingleColumnValueFilter, ValueFilter
from cellstore.reader.plan import ScanTask
from cellstore.reader.pushdown import _keep_ranges, pushdown_disabled
from test_column_layout import cell_table

PUT = 4
ROWS = 400
BLOCK = 20  # rows of one drawn value; a column file group holds 20 records here
SPLITS = [b"r0200"]
CODECS = {"d:v": "double", "d:n": "long", "d:b": "bytes"}
PROPS = {"mapping.codecs": json.dumps({"columns": CODECS})}
OPS = ["<", "<=", "==", ">=", ">"]
SORTED_V = [b * 30.0 for b in range(ROWS // BLOCK)]
SORTED_N = list(range(ROWS // BLOCK))
WHOLE = [(b"", b"r0200"), (b"r0200", b"")]


def row(i: int) -> bytes:
    return b"r%04d" % i


def base_cells(
    v_blocks: Sequence[float | None], n_blocks: Sequence[int | None], *, ts: int = 5
) -> pa.Table:
    """``ROWS`` rows: d:v (double), d:n (long), d:b (bytes) by blocks of ``BLOCK`` rows,
    a missing value where the block's is None; every third row has e:x, and rows 60-79
    have only e:x (no d cell at all)."""
    cells = []
    for i in range(ROWS):
        v, n = v_blocks[i // BLOCK], n_blocks[i // BLOCK]
        if not 60 <= i < 80:
            if v is not None:
                cells.append((row(i), "d", b"v", ts, PUT, struct.pack(">d", v)))
            if n is not None:
                cells.append((row(i), "d", b"n", ts, PUT, struct.pack(">q", n)))
            cells.append((row(i), "d", b"b", ts, PUT, struct.pack(">q", i)))
        if i % 3 == 0 or 60 <= i < 80:
            cells.append((row(i), "e", b"x", ts, PUT, b"x%d" % i))
    return cell_table(sorted(cells, key=lambda c: (c[0], c[1], c[2])))


def tables(root: str, cells: pa.Table, *, ttl: int | None = None) -> tuple[Any, Any]:
    """The cells twin and the column table, two regions, 20-record column groups."""
    wh = cellstore.connect(root)
    out = []
    for name, layout in (("cells", "cells"), ("cols", "columns")):
        fams = [Family(name="d", layout=layout, ttl=ttl), Family(name="e", layout=layout)]
        t = wh.create_table(name, families=fams, splits=SPLITS, properties=PROPS)
        t.load_cells(cells, row_group_cells=40, now_ms=10)
        out.append(t)
    return out[0], out[1]


def spans(tasks: Sequence[ScanTask]) -> list[tuple[bytes, bytes]]:
    return [(t.start, t.stop) for t in tasks]


def result(t: Any, flt: Any, opts: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = scanned(t, flt, opts).to_pylist()
    return rows


def scanned(t: Any, flt: Any, opts: dict[str, Any]) -> pa.Table:
    out: pa.Table = t.refresh().scan(filter=flt, now_ms=1000, **opts).to_arrow()
    return out


def _nan_safe(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with NaN replaced by a marker (NaN != NaN would fail equal lists)."""
    return [
        {k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        for r in rows
    ]


def same_everywhere(cells: Any, cols: Any, flt: Any, opts: dict[str, Any]) -> None:
    """The column table's result, pruned and not, is the cells twin's (schema too)."""
    want = scanned(cells, flt, opts)
    got = scanned(cols, flt, opts)
    with pushdown_disabled():
        whole = scanned(cols, flt, opts)
    for out in (got, whole):
        assert out.schema == want.schema, (flt, opts)
        assert _nan_safe(out.to_pylist()) == _nan_safe(want.to_pylist()), (flt, opts)


VALUES = st.one_of(
    st.none(),
    st.just(math.nan),
    st.floats(allow_nan=False, allow_infinity=True, width=64),
    st.sampled_from([-2.5, -1.0, 0.0, -0.0, 1.0, 2.5, 120.0]),
)
#: Longs a double comparison can cast (core/comparators.py raises past 2**53: see the
#: session report).
LONGS = st.one_of(
    st.none(),
    st.integers(-(2**53), 2**53),
    st.sampled_from([-(2**53), -1, 0, 1, 2**53 - 1]),
)


@st.composite
def a_filter(draw: st.DrawFn, stored: Sequence[float | int | None]) -> SingleColumnValueFilter:
    """Mostly a filter statistics can judge, its operand often a stored value."""
    column = draw(st.sampled_from(["d:v", "d:n", "d:v", "d:n", "d:b"]))
    op = draw(st.sampled_from([*OPS, *OPS, "!="]))
    operand: float | int = draw(
        st.one_of(
            st.sampled_from([x for x in stored if x is not None] or [0]),
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-(2**64), 2**64),
            st.sampled_from([0, -1, 1.0, 2.5, 2**53 + 2, 2**63 - 1]),
        )
    )
    missing = draw(st.sampled_from([True, True, True, False]))
    latest = draw(st.sampled_from([True, True, False]))
    if draw(st.booleans()) or column == "d:b":
        comparator = draw(st.sampled_from(["double", "long", "int"]))
        return SingleColumnValueFilter(
            column,
            op,
            operand,
            comparator=comparator,
            filter_if_missing=missing,
            latest_version_only=latest,
        )
    if column == "d:v":
        operand = float(operand)
    elif not isinstance(operand, int) or not -(2**63) <= operand < 2**63:
        operand = 7
    return SingleColumnValueFilter(
        column, op, operand, filter_if_missing=missing, latest_version_only=latest
    )


@settings(
    max_examples=int(os.environ.get("PUSHDOWN_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_pruned_scans_equal_the_cells_twin_and_the_unpruned_scan(data: st.DataObject) -> None:
    """Drawn values (NaN, nulls, negatives, infinities, longs near 2**53), operators and
    operands, on two regions: every scan equals the cells twin and the unpruned scan;
    sometimes a later load (a delta in one region), a TTL family, or a second filter."""
    blocks = ROWS // BLOCK
    v_blocks = data.draw(st.lists(VALUES, min_size=blocks, max_size=blocks))
    n_blocks = data.draw(st.lists(LONGS, min_size=blocks, max_size=blocks))
    if data.draw(st.booleans()):  # sorted values: most groups prunable
        v_blocks = sorted(v_blocks, key=lambda v: (v is None, v is not None and math.isnan(v), v))
        n_blocks = sorted(n_blocks, key=lambda n: (n is None, n))
    ttl = data.draw(st.sampled_from([None, 10**9]))
    flt = data.draw(a_filter([*v_blocks, *n_blocks]))
    extra = data.draw(
        st.sampled_from(
            [
                None,
                SingleColumnValueFilter("d:n", ">=", 0, comparator="long", filter_if_missing=True),
                ValueFilter("==", b"x3"),
            ]
        )
    )
    filters: Any = flt if extra is None else data.draw(st.permutations([flt, extra]))
    with tempfile.TemporaryDirectory() as root:
        cells, cols = tables(root, base_cells(v_blocks, n_blocks), ttl=ttl)
        if data.draw(st.booleans()):  # a later load into the second region only
            late = data.draw(VALUES.filter(lambda v: v is not None))
            update = cell_table([(row(300), "d", b"v", 50, PUT, struct.pack(">d", late))])
            for t in (cells, cols):
                t.load_cells(update, now_ms=60)
        opts = data.draw(
            st.sampled_from(
                [
                    {"shape": "wide"},
                    {"shape": "wide", "columns": ["d:v", "d:n", "e:x"]},
                    {},
                    {"start_row": "r0150", "stop_row": "r0330", "reversed": True},
                ]
            )
        )
        same_everywhere(cells, cols, filters, opts)


def test_groups_that_cannot_pass_are_left_out_of_the_plan(tmp_path: Any) -> None:
    """Sorted doubles (30 x block number): ``v > 540`` keeps only the last group's rows;
    the plan covers only that group. The same for ``==`` and ``>=`` on a long."""
    cells, cols = tables(str(tmp_path), base_cells(SORTED_V, SORTED_N))
    flt = SingleColumnValueFilter("d:v", ">", 540.0, comparator="double", filter_if_missing=True)
    with pushdown_disabled():
        whole = cols.scan(filter=flt, shape="wide").plan()
    pruned = cols.scan(filter=flt, shape="wide").plan()
    assert spans(whole) == WHOLE
    assert spans(pruned) == [(b"r0379\x00", b"")]  # groups r0000-r0379 cannot pass
    got = result(cols, flt, {"shape": "wide"})
    assert [r["row"] for r in got] == [row(i) for i in range(380, 400)]
    assert got == result(cells, flt, {"shape": "wide"})
    # ==: only the group holding 10 (rows 200-219)
    eq = SingleColumnValueFilter("d:n", "==", 10, comparator="long", filter_if_missing=True)
    assert spans(cols.scan(filter=eq).plan()) == [(b"r0200", b"r0220")]
    assert result(cols, eq, {}) == result(cells, eq, {})
    assert len(result(cols, eq, {"shape": "wide"})) == BLOCK
    # >=: groups of rows 0-59 cannot pass; rows 60-79 (no d cell) lie between kept groups
    ge = SingleColumnValueFilter("d:n", ">=", 4, filter_if_missing=True)  # binary, long
    assert spans(cols.scan(filter=ge).plan()) == [(b"r0059\x00", b"r0200"), (b"r0200", b"")]
    assert result(cols, ge, {}) == result(cells, ge, {})
    # Dask partitions follow the cut tasks (divisions start at the first kept row)
    frames = [
        t.scan(filter=ge, shape="wide", columns=["d:n", "e:x"]).to_dask() for t in (cells, cols)
    ]
    assert frames[1].divisions[0] == b"r0059\x00"
    want, got = (f.compute(scheduler="sync") for f in frames)
    assert len(got) == 320 and got.to_dict("records") == want.to_dict("records")


@pytest.mark.parametrize(
    "flt",
    [
        SingleColumnValueFilter("d:v", ">", 570.0, comparator="double"),  # not if missing
        SingleColumnValueFilter("d:v", "!=", 570.0, comparator="double", filter_if_missing=True),
        SingleColumnValueFilter("d:b", ">", 570, comparator="long", filter_if_missing=True),
        SingleColumnValueFilter("d:v", ">", b"\xff", filter_if_missing=True),  # bytes order
        [
            ValueFilter("!=", b""),
            SingleColumnValueFilter("d:v", ">", 570.0, filter_if_missing=True),
        ],
    ],
)
def test_filters_statistics_cannot_judge_keep_the_tasks_whole(tmp_path: Any, flt: Any) -> None:
    """Without filter_if_missing, with !=, on a bytes column, with HBase's byte order, or
    after another kind of filter: the plan is the unpruned one."""
    cells, cols = tables(str(tmp_path), base_cells(SORTED_V, SORTED_N))
    assert spans(cols.scan(filter=flt).plan()) == WHOLE
    same_everywhere(cells, cols, flt, {"shape": "wide"})


def test_a_later_load_or_a_ttl_keeps_the_pruning_off(tmp_path: Any) -> None:
    """A later load into the second region disables pruning there only (its values are
    not in the statistics); a TTL family disables it everywhere, time ranges too."""
    flt = SingleColumnValueFilter("d:v", "<", 15.0, comparator="double", filter_if_missing=True)
    cells, cols = tables(str(tmp_path / "a"), base_cells(SORTED_V, SORTED_N))
    assert spans(cols.scan(filter=flt).plan()) == [(b"", b"r0020")]
    update = cell_table([(row(300), "d", b"v", 50, PUT, struct.pack(">d", -3.0))])
    for t in (cells, cols):
        t.load_cells(update, now_ms=60)
    assert spans(cols.refresh().scan(filter=flt).plan()) == [(b"", b"r0020"), (b"r0200", b"")]
    got = result(cols, flt, {"shape": "wide"})
    assert [r["row"] for r in got] == [*(row(i) for i in range(BLOCK)), row(300)]
    same_everywhere(cells, cols, flt, {"shape": "wide"})
    assert spans(cols.scan(filter=flt, time_range=(0, 100)).plan()) == WHOLE
    cells, cols = tables(str(tmp_path / "b"), base_cells(SORTED_V, SORTED_N), ttl=10**9)
    assert spans(cols.scan(filter=flt).plan()) == WHOLE
    same_everywhere(cells, cols, flt, {"shape": "wide"})


def test_keep_ranges_cut_inclusive_dead_ranges() -> None:
    assert _keep_ranges(b"", b"", [(b"b", b"c")]) == [(b"", b"b"), (b"c\x00", b"")]
    assert _keep_ranges(b"a", b"z", [(b"a", b"c"), (b"b", b"d"), (b"y", b"zz")]) == [
        (b"d\x00", b"y")
    ]
    assert _keep_ranges(b"a", b"b", [(b"c", b"d")]) == [(b"a", b"b")]


def test_keyed_column_files_prune_by_their_footer_row_bounds(tmp_path: Any) -> None:
    """A keyed column file (rows kept as key fields) bounds its groups' rows from its
    footer: ``dep >= 2900`` keeps each carrier's last groups only, exactly."""
    from test_column_keyed import keyed_cells
    from test_column_keyed import tables as keyed_tables

    a, b = keyed_tables(str(tmp_path))
    for t in (a, b):
        t.load_cells(keyed_cells(3000), row_group_cells=400)  # 100-record groups
    flt = SingleColumnValueFilter("f:dep", ">=", 2900, comparator="long", filter_if_missing=True)
    planned = b.refresh().scan(filter=flt).plan()
    with pushdown_disabled():
        assert len(b.scan(filter=flt).plan()) == 1
    assert 1 <= len(planned) <= 3  # one range per carrier at most
    assert planned[0].start > b""  # the first groups are left out
    for opts in ({"shape": "wide", "column_types": "table"}, {}, {"reversed": True}):
        want = a.scan(filter=flt, **opts).to_arrow().to_pylist()
        assert b.scan(filter=flt, **opts).to_arrow().to_pylist() == want
        assert len({r["row"] for r in want}) == 100

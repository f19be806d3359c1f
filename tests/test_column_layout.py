"""The column layout (issue 28, docs/format.md section 14): one cell set in two layouts.

A ``layout="columns"`` family writes, per region and family, a column file (the newest
Put of each row and qualifier, typed where the codec gives the bytes back) and a cell file
with the rest; ``auto`` does so for a fresh region-family and on major compactions. Every
read must return exactly what the same cells give in a ``layout="cells"`` table (the twin):
the cell set is unpivot(columns) plus cells, so every rule of docs/hbase-semantics.md holds
by expansion. This file checks that contract end to end (property test against the twin,
named cases, damaged files, jobs and concurrent/crashed loads).
"""

from __future__ import annotations

import json
import struct
import tempfile
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.core.cells import CellType
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.filters import ColumnPrefixFilter, TimestampsFilter, ValueFilter
from cellstore.jobs.compact import compact

PUT = int(CellType.PUT)
FAMILIES = ("a", "b")
ROWS = [b"r1", b"r2", b"r2\x00", b"\xff"]
QUALIFIERS = [b"", b"l", b"s", b"x"]
MAX_TS = 7
#: Declared codecs (recorded as a mapping would, docs/format.md 6.1): ``a:l`` is a long
#: column, ``a:s`` a string column; the rest are binary columns.
CODECS = {"a:l": "long", "a:s": "string", "a:x": "bytes", "b:": "bytes", "b:l": "long"}
PROPERTIES = {"mapping.codecs": json.dumps({"columns": CODECS})}
#: Values: canonical longs, bytes no codec holds (7 bytes, bad UTF-8), empty, UTF-8 text.
VALUES = [
    struct.pack(">q", 5),
    struct.pack(">q", -(2**63)),
    b"1234567",
    b"\xff\xfe",
    b"",
    b"text",
]
TYPES = [int(t) for t in CellType]


def create(root: str, name: str, families: Sequence[Family], **kw: Any) -> Any:
    return cellstore.connect(root).create_table(name, families=list(families), **kw)


def twins(root: str, families: Sequence[Family], **kw: Any) -> tuple[Any, Any]:
    """A ``layout="cells"`` table and a ``layout="columns"`` one with the same families."""
    cells = create(root, "cells", [f.replace(layout="cells") for f in families], **kw)
    cols = create(root, "cols", [f.replace(layout="columns") for f in families], **kw)
    return cells, cols


def cell_table(cells: Sequence[tuple[bytes, str, bytes, int, int, bytes]]) -> pa.Table:
    return pa.table(
        {
            "row": pa.array([c[0] for c in cells], pa.binary()),
            "family": pa.array([c[1] for c in cells], pa.string()),
            "qualifier": pa.array([c[2] for c in cells], pa.binary()),
            "ts": pa.array([c[3] for c in cells], pa.int64()),
            "type": pa.array([c[4] for c in cells], pa.int8()),
            "value": pa.array([c[5] for c in cells], pa.binary()),
        }
    )


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


def same(a: pa.Table, b: pa.Table) -> None:
    """Equal results: same columns, types and rows."""
    assert a.schema.names == b.schema.names
    assert [f.type for f in a.schema] == [f.type for f in b.schema]
    assert rows_of(a) == rows_of(b)


def layouts_of(t: Any) -> list[str]:
    return sorted(e.layout for e in t.refresh().files)


# ---------------------------------------------------------------------- 1. property test
@st.composite
def cell_keys(draw: st.DrawFn) -> tuple[str, bytes, bytes, int, int]:
    kind = draw(st.sampled_from(TYPES + [PUT] * 6))
    marker = kind in (CellType.DELETE_FAMILY, CellType.DELETE_FAMILY_VERSION)
    qualifier = b"" if marker else draw(st.sampled_from(QUALIFIERS))
    return (
        draw(st.sampled_from(FAMILIES)),
        draw(st.sampled_from(ROWS)),
        qualifier,
        draw(st.integers(0, MAX_TS)),
        kind,
    )


@st.composite
def loads(draw: st.DrawFn) -> list[tuple[list[tuple[bytes, str, bytes, int, int, bytes]], str]]:
    """1-3 loads (unique keys each), each followed by nothing, a minor or a major compaction."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        keys = draw(st.lists(cell_keys(), max_size=14, unique_by=lambda k: k))
        cells = [
            (row, fam, q, ts, kind, draw(st.sampled_from(VALUES)) if kind == PUT else b"")
            for fam, row, q, ts, kind in keys
        ]
        out.append((cells, draw(st.sampled_from(["", "", "minor", "major"]))))
    return out


@st.composite
def family_settings(draw: st.DrawFn, name: str) -> Family:
    max_versions = draw(st.integers(1, 3))
    return Family(
        name=name,
        max_versions=max_versions,
        min_versions=draw(st.integers(0, max_versions)),
        ttl=draw(st.sampled_from([None, None, 1])),
        keep_deleted_cells=draw(st.sampled_from(list(KeepDeletedCells))),
    )


def _range() -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(0, MAX_TS + 1), st.integers(0, MAX_TS + 1)).map(
        lambda b: (min(b), max(b))
    )


@st.composite
def cell_reads(draw: st.DrawFn, now_ms: int) -> dict[str, Any]:
    """Options of a cells-shape read (R7 time ranges, R10 raw, R12 columns/limits)."""
    raw = draw(st.sampled_from([False, False, True]))
    opts: dict[str, Any] = {"now_ms": now_ms, "raw": raw}
    opts["max_versions"] = draw(st.one_of(st.none(), st.integers(1, 4)))
    opts["time_range"] = draw(st.one_of(st.none(), _range()))
    opts["family_time_ranges"] = draw(
        st.dictionaries(st.sampled_from(FAMILIES), _range(), max_size=2)
    )
    which = draw(st.sampled_from(["all", "all", "columns", "family"]))
    if which == "columns" and not raw:  # R10.4: a raw scan names no column
        opts["columns"] = sorted(
            draw(
                st.sets(
                    st.sampled_from([f"a:{q}" for q in ("l", "s", "x")] + ["b:", "b:l"]),
                    min_size=1,
                )
            )
        )
    elif which == "family":
        opts["families"] = [draw(st.sampled_from(FAMILIES))]
    if not raw:
        opts["filter"] = draw(
            st.sampled_from(
                [
                    None,
                    None,
                    ValueFilter("=", b"text"),
                    ColumnPrefixFilter(b"l"),
                    TimestampsFilter([1, 3, 5]),
                ]
            )
        )
        opts["max_results_per_family"] = draw(st.sampled_from([None, None, 1, 2]))
    opts["reversed"] = draw(st.booleans())
    opts["limit"] = draw(st.sampled_from([None, None, 1, 2]))
    return {k: v for k, v in opts.items() if v is not None and v != {}}


@st.composite
def wide_reads(draw: st.DrawFn, now_ms: int) -> dict[str, Any]:
    """Options of a wide-shape read with column types (the column layout's fast path)."""
    opts: dict[str, Any] = {
        "shape": "wide",
        "now_ms": now_ms,
        "column_types": dict(CODECS),
        "decode_errors": "null",
        "time_range": draw(st.one_of(st.none(), st.none(), _range())),
        "reversed": draw(st.booleans()),
    }
    if draw(st.booleans()):
        opts["columns"] = ["a:l", "a:s", "a:x", "b:l", "b:"]
    if draw(st.integers(0, 4)) == 0:
        opts["families"] = ["a"]
        opts["column_types"] = {k: v for k, v in opts["column_types"].items() if k[0] == "a"}
        opts.pop("columns", None)
    return {k: v for k, v in opts.items() if v is not None}


def holds(family: str, qualifier: bytes, value: bytes) -> bool:
    """Whether the column's codec gives ``value`` back byte for byte."""
    codec = CODECS.get(f"{family}:{qualifier.decode()}", "bytes")
    if codec == "long":
        return len(value) == 8
    if codec == "string":
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def any_column_cell(cells: Sequence[tuple[bytes, str, bytes, int, int, bytes]]) -> bool:
    """Whether a load of ``cells`` puts some cell in a column file (a newest Put it holds)."""
    newest: dict[tuple[str, bytes, bytes], tuple[int, bytes]] = {}
    for row, fam, q, ts, kind, value in cells:
        if kind == PUT and ts >= newest.get((fam, row, q), (-1, b""))[0]:
            newest[(fam, row, q)] = (ts, value)
    return any(holds(k[0], k[2], v) for k, (_, v) in newest.items())


def _compact(t: Any, kind: str, now_ms: int) -> None:
    if kind == "major":
        compact(t, major=True, now_ms=now_ms)
    elif kind == "minor":
        compact(t, min_files=2, now_ms=now_ms)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), plan=loads())
def test_columns_table_reads_like_its_cells_twin(data: st.DataObject, plan) -> None:
    """Any cells, loaded (with markers) into a ``columns`` table with compactions between,
    read back exactly as from a ``cells`` table: every scan option (R7 time ranges and
    per-family ranges, R8 TTL/min versions with ``now_ms``, R10 raw, R12 columns, filters,
    reversed, limit), ``get`` (R12.3) and the wide shape with column types."""
    fams = [data.draw(family_settings("a")), data.draw(family_settings("b"))]
    fams[1] = fams[1].replace(ttl=fams[0].ttl)
    now_ms = (fams[0].ttl or 0) * 1000 + data.draw(st.integers(-1, MAX_TS + 1))
    with tempfile.TemporaryDirectory() as root:
        a, b = twins(root, fams, properties=PROPERTIES)
        for i, (cells, then) in enumerate(plan):
            if cells:
                for t in (a, b):
                    t.load_cells(cell_table(cells), load_id=f"load-{i:03d}")
                # the load's newest Puts went to column files (the rest to cell files)
                assert ("columns" in layouts_of(b)) >= any_column_cell(cells)
                assert "columns" not in layouts_of(a)
            for t in (a, b):
                _compact(t, then, now_ms)
        for _ in range(3):
            opts = data.draw(cell_reads(now_ms))
            same(a.scan(**opts).to_arrow(), b.scan(**opts).to_arrow())
            row = data.draw(st.sampled_from(ROWS))
            get_opts = {k: v for k, v in opts.items() if k not in ("reversed", "limit")}
            same(a.get(row, **get_opts), b.get(row, **get_opts))
        wide = data.draw(wide_reads(now_ms))
        same(a.scan(**wide).to_arrow(), b.scan(**wide).to_arrow())

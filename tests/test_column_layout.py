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
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.commit import Commit, FileChange, commit, file_entry
from cellstore.core.cells import CellType
from cellstore.core.columnar import AUTO_MAX_COLUMNS, AUTO_MIN_ROWS, ColumnSpec, records_schema
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.core.metadata import FileEntry
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import CellstoreWarning, CorruptFileError, FormatVersionError
from cellstore.filters import ColumnPrefixFilter, TimestampsFilter, ValueFilter
from cellstore.hbase import read_hfile
from cellstore.jobs import (
    build_index,
    clone,
    export,
    export_hfiles,
    merge,
    open_index,
    purge_ttl,
    restore,
    snapshot,
    split,
    vacuum,
    verify,
)
from cellstore.jobs.compact import compact, plan_compaction
from cellstore.jobs.streaming import chunk_cells
from cellstore.reader import scan as scan_module
from cellstore.storefiles import StoreFileReader
from cellstore.storefiles.columns import ColumnFileWriter
from cellstore.storefiles.footer import FOOTER_KEY, STORE_FILE_FORMAT_VERSION
from cellstore.storefiles.reader import clear_footer_cache
from cellstore.storefiles.writer import WrittenFile

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
#: Row-key specs of the twins (docs/format.md 14.2: keyed column files hold the fields as
#: columns): none (``__row``); one bytes field (every row is keyable); a terminated string
#: and a bytes field (``r1`` has no terminator and ``\xff`` is not UTF-8: those rows'
#: cells stay in the cell file beside a keyed column file).
ROW_KEYS = [
    None,
    RowKeySpec(fields=(KeyField(name="k", type="bytes"),)),
    RowKeySpec(fields=(KeyField(name="s", type="string"), KeyField(name="b", type="bytes"))),
]


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


def keyable(row: bytes, row_key: RowKeySpec | None) -> bool:
    """Whether a keyed column file of ``row_key`` can hold ``row`` (section 14.2), by the
    specs of :data:`ROW_KEYS` (a terminated UTF-8 string, then any bytes)."""
    if row_key is None or len(row_key.fields) == 1:
        return True
    text, zero, _ = row.partition(b"\x00")
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return bool(zero)


def any_column_cell(
    cells: Sequence[tuple[bytes, str, bytes, int, int, bytes]], row_key: RowKeySpec | None = None
) -> bool:
    """Whether a load of ``cells`` puts some cell in a column file (a newest Put it holds)."""
    newest: dict[tuple[str, bytes, bytes], tuple[int, bytes]] = {}
    for row, fam, q, ts, kind, value in cells:
        if kind == PUT and ts >= newest.get((fam, row, q), (-1, b""))[0]:
            newest[(fam, row, q)] = (ts, value)
    return any(holds(k[0], k[2], v) and keyable(k[1], row_key) for k, (_, v) in newest.items())


def _compact(t: Any, kind: str, now_ms: int) -> None:
    if kind == "major":
        compact(t, major=True, now_ms=now_ms)
    elif kind == "minor":
        # The ratio walk weighs loads by bytes, and a column-layout load's bytes (a column
        # file and its companion) are not its cells twin's: with sizes equal, one table
        # may select all files (R13.3: markers dropped) where the other takes a strict
        # subset (R13.2: markers kept), and normal reads then differ as HBase's would.
        # A ratio no load exceeds leaves the choice to file counts, which count a column
        # file and its companion once: the newest two loads, a strict subset after three.
        compact(t, min_files=2, max_files=2, ratio=1e9, now_ms=now_ms)


@settings(
    max_examples=int(os.environ.get("TWIN_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), plan=loads())
def test_columns_table_reads_like_its_cells_twin(data: st.DataObject, plan) -> None:
    """Any cells, loaded (with markers) into a ``columns`` table with compactions between,
    read back exactly as from a ``cells`` table: every scan option (R7 time ranges and
    per-family ranges, R8 TTL/min versions with ``now_ms``, R10 raw, R12 columns, filters,
    reversed, limit), ``get`` (R12.3) and the wide shape with column types; with and
    without a row-key spec (keyed column files, section 14.2)."""
    fams = [data.draw(family_settings("a")), data.draw(family_settings("b"))]
    fams[1] = fams[1].replace(ttl=fams[0].ttl)
    now_ms = (fams[0].ttl or 0) * 1000 + data.draw(st.integers(-1, MAX_TS + 1))
    row_key = data.draw(st.sampled_from(ROW_KEYS))
    with tempfile.TemporaryDirectory() as root:
        a, b = twins(root, fams, properties=PROPERTIES, row_key=row_key)
        for i, (cells, then) in enumerate(plan):
            if cells:
                for t in (a, b):
                    t.load_cells(cell_table(cells), load_id=f"load-{i:03d}")
                # the load's newest Puts went to column files (the rest to cell files)
                assert ("columns" in layouts_of(b)) >= any_column_cell(cells, row_key)
                assert "columns" not in layouts_of(a)
            for t in (a, b):
                _compact(t, then, now_ms)
        # Compactions count, select and drop (when expired) a column file and its
        # companion as the one file their cells twin writes (jobs.selection.writes), so
        # even raw reads, which show what compactions kept, agree.
        for _ in range(3):
            opts = data.draw(cell_reads(now_ms))
            same(a.scan(**opts).to_arrow(), b.scan(**opts).to_arrow())
            row = data.draw(st.sampled_from(ROWS))
            get_opts = {k: v for k, v in opts.items() if k not in ("reversed", "limit")}
            with warnings.catch_warnings():  # rows are raw keys, not whole keys of a spec
                warnings.simplefilter("ignore", CellstoreWarning)
                same(a.get(row, **get_opts), b.get(row, **get_opts))
        wide = data.draw(wide_reads(now_ms))
        same(a.scan(**wide).to_arrow(), b.scan(**wide).to_arrow())


def test_a_marker_of_another_load_shows_an_older_companion_version(tmp_path: Path) -> None:
    """R5.4 / R5.3: a Delete of one version (or a DeleteFamilyVersion) written by an
    earlier load hides a later load's newest Put; the next version, which that load kept
    in its companion cell file, is then the visible one in every shape (the companion
    may not be skipped: Hypothesis found the wide read dropping the row)."""
    put = (5).to_bytes(8, "big")
    fams = [Family(name="a", max_versions=1)]
    first = [
        (b"r1", "a", b"", 2, 8, b""),
        (b"r1", "a", b"", 0, 10, b""),
        (b"r9", "a", b"", 0, 4, put),
    ]
    later = [(b"r1", "a", b"", ts, 4, put) for ts in (0, 1, 2)]
    a, b = twins(str(tmp_path), fams, properties=PROPERTIES)
    for i, cells in enumerate([first, later]):
        for t in (a, b):
            t.load_cells(cell_table(cells), load_id=f"load-{i:03d}")
    a, b = a.refresh(), b.refresh()
    assert "columns" in layouts_of(b)
    for opts in ({"shape": "wide"}, {}):
        same(a.scan(**opts).to_arrow(), b.scan(**opts).to_arrow())
    wide = b.scan(shape="wide").to_arrow().to_pylist()
    assert [r["row"] for r in wide] == [b"r1", b"r9"]
    assert [c["ts"] for c in b.scan(stop_row=b"r2").to_arrow().to_pylist()] == [1]


# ------------------------------------------------------------------------ 2. named cases
def grid(rows: int, quals: int = 2, *, prefix: str = "k", ts: int = 5) -> pa.Table:
    """``rows`` x ``quals`` Puts in family ``f`` (rows ``<prefix>00000``...)."""
    n = rows * quals
    return cell_table(
        [
            (f"{prefix}{i:05d}".encode(), "f", f"q{j}".encode(), ts, PUT, f"v{i}-{j}".encode())
            for i in range(rows)
            for j in range(quals)
        ][:n]
    )


def manifest_names(t: Any) -> list[list[str]]:
    """The column names of every manifest file of the table."""
    manifests = Path(t.path) / "_meta" / "manifests"
    return [pq.read_schema(p).names for p in sorted(manifests.glob("*.parquet"))]


def test_first_column_file_moves_the_table_to_format_3(tmp_path: Path) -> None:
    """docs/format.md 14: version 3 comes with the first column file, not before; a table
    with only cell files stays at 2 and its manifests keep format 2's columns."""
    cells, cols = twins(str(tmp_path), [Family(name="f")])
    assert cells.metadata.format_version == cols.metadata.format_version == 2
    for t in (cells, cols):
        t.load_cells(grid(10))
        t.refresh()
    assert cols.metadata.format_version == 3
    assert cells.metadata.format_version == 2
    assert all("layout" not in names for names in manifest_names(cells))
    assert any("layout" in names for names in manifest_names(cols))
    assert {e.layout for e in cols.files} == {"columns"}
    # an auto table whose loads are small stays at 2 as well
    auto = create(str(tmp_path), "auto", [Family(name="f")])
    auto.load_cells(grid(10))
    assert auto.refresh().metadata.format_version == 2
    assert all("layout" not in names for names in manifest_names(auto))
    same(cells.scan().to_arrow(), cols.scan().to_arrow())


def test_footer_format_version_4_is_refused_naming_the_file(tmp_path: Path) -> None:
    """A store file from a newer release (footer format-version 4) is refused, by name."""
    t = create(str(tmp_path), "t", [Family(name="f", layout="columns")])
    t.load_cells(grid(10))
    (entry,) = t.refresh().files
    path = t.file_path(entry)
    pf = pq.ParquetFile(path)
    meta = dict(pf.metadata.metadata)
    footer = json.loads(meta[FOOTER_KEY])
    assert footer["format-version"] == 2
    footer["format-version"] = STORE_FILE_FORMAT_VERSION + 1
    meta[FOOTER_KEY] = json.dumps(footer).encode()
    newer = str(tmp_path / "newer-c.parquet")
    pq.write_table(pf.read().replace_schema_metadata(meta), newer)
    with pytest.raises(FormatVersionError, match=r"newer-c\.parquet"):
        StoreFileReader(fsspec.filesystem("file"), newer)


def test_auto_layout_rules(tmp_path: Path) -> None:
    """layout="auto": a fresh region-family load of >= 4096 rows is written as columns,
    a smaller one as cells; a later load writes cell deltas; a minor compaction writes
    cells, a major one columns."""
    root = str(tmp_path)
    big = create(root, "big", [Family(name="f", max_versions=1)])
    big.load_cells(grid(AUTO_MIN_ROWS + 1))
    assert layouts_of(big) == ["columns"]
    assert big.metadata.format_version == 3
    big.load_cells(grid(5, ts=9))  # a later load: deltas
    assert layouts_of(big) == ["cells", "columns"]
    big.load_cells(grid(5, ts=10))
    compact(big, min_files=2)  # minor: the deltas become one cell file
    assert layouts_of(big) == ["cells", "columns"]
    compact(big, major=True)
    assert layouts_of(big) == ["columns"]
    got = big.scan(start_row="k00000", stop_row="k00002").to_arrow()
    assert got.column("ts").to_pylist() == [10, 10, 10, 10]

    small = create(root, "small", [Family(name="f")])
    small.load_cells(grid(AUTO_MIN_ROWS - 1))
    assert layouts_of(small) == ["cells"]
    assert small.metadata.format_version == 2
    small.load_cells(grid(AUTO_MIN_ROWS + 1, prefix="m"))  # not fresh: a delta
    assert layouts_of(small) == ["cells", "cells"]
    compact(small, major=True)  # 8,191 rows now: the major compaction writes columns
    assert layouts_of(small) == ["columns"]
    assert small.metadata.format_version == 3
    assert small.scan().to_arrow().num_rows == 2 * (2 * AUTO_MIN_ROWS)


def test_a_major_compaction_cut_into_pieces_writes_every_piece_as_columns(
    tmp_path: Path,
) -> None:
    """layout="auto": AUTO_MIN_ROWS is for a whole store. A major compaction cut into
    pieces by its memory budget writes every piece as a column file, however few rows it
    holds (written as cells, the pieces were deltas that sent every wide read to the
    merge)."""
    t = create(str(tmp_path), "t", [Family(name="f", max_versions=1)])
    t.load_cells(grid(2 * AUTO_MIN_ROWS + 2), row_group_cells=2000)  # 500-record groups
    t.load_cells(grid(3, ts=9))  # a delta
    compact(t, major=True, memory_budget=16 << 10)
    files = t.refresh().files
    assert len(files) > 1 and layouts_of(t) == ["columns"] * len(files)
    wide = t.scan(shape="wide").to_arrow()
    assert wide.num_rows == 2 * AUTO_MIN_ROWS + 2
    assert wide.column("f:q1").to_pylist()[-1] == f"v{2 * AUTO_MIN_ROWS + 1}-1".encode()


def test_a_streamed_major_compaction_decides_auto_on_the_store_rows(tmp_path: Path) -> None:
    """layout="auto": a compaction task streams its cells in chunks (issue 28); a store of
    more than AUTO_MIN_ROWS rows is still written as columns when its first chunk holds
    fewer rows (wide rows: 10 cells each, 32K-cell chunks)."""
    t = create(str(tmp_path), "t", [Family(name="f", max_versions=1)])
    rows = AUTO_MIN_ROWS + 10
    t.load_cells(grid(rows, 10), row_group_cells=4000)
    t.load_cells(grid(3, 10, ts=9))  # a delta
    budget = 4 << 20
    assert chunk_cells(budget) * 1.1 < AUTO_MIN_ROWS * 10  # the first chunk is too few rows
    assert [len(p.tasks) for p in plan_compaction(t, major=True, memory_budget=budget)] == [1]
    compact(t, major=True, memory_budget=budget)
    files = t.refresh().files
    assert layouts_of(t) == ["cells", "columns"] or layouts_of(t) == ["columns"]
    assert any(f.layout == "columns" and f.cells >= rows * 10 - 10 for f in files)
    wide = t.scan(shape="wide").to_arrow()
    assert wide.num_rows == rows
    assert wide.column("f:q9").to_pylist()[-1] == f"v{rows - 1}-9".encode()


def test_a_streamed_compaction_writes_the_files_of_a_whole_one(tmp_path: Path) -> None:
    """A compaction task written chunk by chunk (issue 28) makes, byte for byte, the column
    and companion files of the same task written as one chunk (the whole row range)."""
    import shutil

    from cellstore.jobs.compact import run_compaction_task
    from cellstore.jobs.streaming import MIN_CHUNK_CELLS

    t = create(str(tmp_path / "a"), "t", [Family(name="f", max_versions=1)])
    rows = 20_000  # past the first write's 16K records: later chunks stream
    t.load_cells(grid(rows, 10), row_group_cells=8000)
    t.load_cells(grid(rows // 2, 10, ts=9), row_group_cells=8000)  # overlapping, newer
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    t_b = cellstore.connect(str(tmp_path / "b")).table("t")
    written = []
    for table, cells in ((t, MIN_CHUNK_CELLS), (t_b, 1 << 30)):
        (plan,) = plan_compaction(table, major=True, job_id="major-compact-1")
        (task,) = plan.tasks
        written.append(run_compaction_task(table.fs, replace(task, chunk_cells=cells)))
    streamed, whole = written
    assert [w.relpath for w in streamed] == [w.relpath for w in whole]
    assert [w.relpath.endswith("-c.parquet") for w in whole] == [True]  # a column file
    for a, b in zip(streamed, whole, strict=True):
        assert (Path(t.path) / a.relpath).read_bytes() == (Path(t_b.path) / b.relpath).read_bytes()


def test_auto_layout_threshold_is_inclusive(tmp_path: Path) -> None:
    """A fresh load of exactly 4096 rows (>= AUTO_MIN_ROWS) is written as columns."""
    t = create(str(tmp_path), "t", [Family(name="f")])
    t.load_cells(grid(AUTO_MIN_ROWS))
    assert layouts_of(t) == ["columns"]


def test_auto_layout_stays_cells_with_too_many_qualifiers(tmp_path: Path) -> None:
    """More than 64 qualifiers discovered (none declared): the family stays cells."""

    def sparse(qualifiers: int) -> pa.Table:
        """One cell per row, ``qualifiers`` qualifiers in turn."""
        return cell_table(
            [
                (f"k{i:05d}".encode(), "f", f"q{i % qualifiers:03d}".encode(), 1, PUT, b"v")
                for i in range(AUTO_MIN_ROWS + 1)
            ]
        )

    t = create(str(tmp_path), "t", [Family(name="f")])
    t.load_cells(sparse(AUTO_MAX_COLUMNS + 1))
    assert layouts_of(t) == ["cells"]
    fits = create(str(tmp_path), "fits", [Family(name="f")])
    fits.load_cells(sparse(AUTO_MAX_COLUMNS))
    assert layouts_of(fits) == ["columns"]
    (entry,) = fits.files
    with StoreFileReader(fsspec.filesystem("file"), fits.file_path(entry)) as reader:
        assert len(reader.info.columns) == AUTO_MAX_COLUMNS


def test_cells_layout_and_format_1_tables_never_write_column_files(tmp_path: Path) -> None:
    root = str(tmp_path)
    never = create(root, "never", [Family(name="f", layout="cells")])
    old = create(root, "old", [Family(name="f", layout="columns")], format_version=1)
    for t in (never, old):
        t.load_cells(grid(AUTO_MIN_ROWS))
        t.load_cells(grid(3, ts=9))
        compact(t, major=True)
        assert layouts_of(t) == ["cells"]
    assert never.metadata.format_version == 2
    assert old.metadata.format_version == 1
    same(never.scan().to_arrow(), old.scan().to_arrow())


NAN = struct.pack(">Q", 0x7FF8000000000001)  # a NaN whose payload no codec keeps


@pytest.mark.parametrize(
    ("codec", "good", "bad"),
    [
        ("double", struct.pack(">d", 1.5), NAN),
        ("long", struct.pack(">q", 7), b"1234567"),
        ("string", b"ok", b"\xc3\x28"),
    ],
)
def test_values_the_codec_cannot_hold_stay_cells(
    tmp_path: Path, codec: str, good: bytes, bad: bytes
) -> None:
    """A value the column's codec cannot give back byte for byte stays a cell (in the cell
    file beside the column file) and reads back exactly (R1: values are bytes)."""
    props = {"mapping.codecs": json.dumps({"columns": {"f:v": codec}})}
    cells, cols = twins(str(tmp_path), [Family(name="f")], properties=props)
    data = cell_table([(b"a", "f", b"v", 1, PUT, good), (b"b", "f", b"v", 1, PUT, bad)])
    for t in (cells, cols):
        t.load_cells(data)
    by_layout = {e.layout: e for e in cols.refresh().files}
    assert set(by_layout) == {"cells", "columns"}
    assert (by_layout["columns"].first_row, by_layout["columns"].cells) == (b"a", 1)
    assert (by_layout["cells"].first_row, by_layout["cells"].cells) == (b"b", 1)
    got = cols.scan().to_arrow()
    assert got.column("value").to_pylist() == [good, bad]
    same(cells.scan().to_arrow(), got)
    assert cols.get("b").column("value").to_pylist() == [bad]
    wide = {"shape": "wide", "column_types": {"f:v": "bytes"}}
    assert cols.scan(**wide).to_arrow().column("f:v").to_pylist() == [good, bad]
    same(cells.scan(**wide).to_arrow(), cols.scan(**wide).to_arrow())


def test_wide_fast_path_is_taken_and_agrees_with_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wide read of column files goes through reader/columnar.py (no cells, no merge),
    with and without cell deltas (an ``auto`` family's later load), and returns exactly
    what the general path and the cells twin return."""
    props = {"mapping.codecs": json.dumps({"columns": {"f:q0": "string", "f:q1": "string"}})}
    root, fam, split = str(tmp_path), Family(name="f", ttl=10), ["k05000"]
    cells = create(root, "cells", [fam.replace(layout="cells")], splits=split, properties=props)
    cols = create(root, "auto", [fam], splits=split, properties=props)
    for t in (cells, cols):
        t.load_cells(grid(10_000, ts=5_000))
    assert layouts_of(cols) == ["columns", "columns"]
    calls: list[int] = []
    real = scan_module.read_wide_fast

    def counting(*args: Any, **kwargs: Any) -> pa.Table:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_module, "read_wide_fast", counting)
    reads: list[dict[str, Any]] = [
        {"column_types": {"f:q0": "string", "f:q1": "string"}},
        {"columns": ["f:q1"], "column_types": {"f:q1": "string"}, "reversed": True},
        {"time_range": (0, 5_001), "now_ms": 14_000, "column_types": {"f:q0": "string"}},
        {"now_ms": 15_001, "column_types": {"f:q0": "string"}},  # R8: all expired
        {"start_row": "k04990", "stop_row": "k05080", "limit": 95},
    ]

    def check() -> None:
        for opts in reads:
            opts = {"shape": "wide", "now_ms": 6_000, **opts}
            calls.clear()
            fast = cols.scan(**opts).to_arrow()
            assert calls, opts
            assert fast.num_rows or opts["now_ms"] > 15_000, opts
            same(cells.scan(**opts).to_arrow(), fast)
            with monkeypatch.context() as m:
                m.setattr(scan_module, "fast_wide_families", lambda task: "off")
                same(cols.scan(**opts).to_arrow(), fast)  # the general path
            assert len(calls) <= 2  # one task per region; no call when the path is off

    check()
    for t in (cells, cols):  # deltas: a newer value, a delete, a new row
        t.load_cells(
            cell_table(
                [
                    (b"k00003", "f", b"q0", 6_000, PUT, b"new"),
                    (b"k00004", "f", b"q1", 6_000, int(CellType.DELETE_COLUMN), b""),
                    (b"k05070", "f", b"", 5_000, int(CellType.DELETE_FAMILY), b""),
                    (b"k10000", "f", b"q9", 6_000, PUT, b"late"),
                ]
            )
        )
    assert layouts_of(cols) == ["cells", "cells", "columns", "columns"]
    check()
    got = cols.scan(shape="wide", start_row="k00003", stop_row="k00005", now_ms=7_000).to_arrow()
    assert got.to_pylist() == [
        {"row": b"k00003", "f:q0": b"new", "f:q1": b"v3-1"},
        {"row": b"k00004", "f:q0": b"v4-0", "f:q1": None},
    ]


def test_minor_compaction_counts_a_column_file_and_its_companion_once(tmp_path: Path) -> None:
    """A column-layout load writes a column file and its companion cell file: the ratio
    selection's file counts (``min_files``, ``max_files``) count the pair once, as the one
    file the cells twin has, and normal reads agree after the compaction (R13).

    Size-based choices may still differ between the layouts (their files' bytes differ),
    so raw reads, which show what a compaction dropped, are not compared here.
    """
    from cellstore.jobs.selection import _file_count

    v = struct.pack(">q", 5)
    a, b = twins(str(tmp_path), [Family(name="f", max_versions=1)])
    for t in (a, b):
        t.load_cells(
            cell_table(
                [
                    (b"r1", "f", b"", 0, PUT, v),
                    (b"r1", "f", b"", 1, PUT, v),
                    (b"r1", "f", b"", 0, int(CellType.DELETE), b""),
                ]
            )
        )
        t.load_cells(cell_table([(b"r1", "f", b"", 0, PUT, v)]))
    columns = b.refresh().files
    assert len(columns) == 3 and _file_count(columns) == 2 == len(a.refresh().files)
    for t in (a, b):
        compact(t, min_files=2, now_ms=0)
    same(a.scan(now_ms=0).to_arrow(), b.scan(now_ms=0).to_arrow())


def test_an_expired_column_file_is_dropped_only_with_its_companion(tmp_path: Path) -> None:
    """R8.7: a compaction drops a file whose every cell expired. A column-layout load's
    column file and companion cell file are the one file its cells twin writes: when the
    column file's Puts expired but the companion holds a newer marker, neither is dropped,
    so raw reads (R10.3: TTL ignored) and the markers a major compaction keeps (R9.4:
    a marker newer than the earliest Put stays with KEEP_DELETED_CELLS=TRUE) agree."""
    v = struct.pack(">q", 5)
    fams = [Family(name="a", max_versions=1, ttl=1, keep_deleted_cells=KeepDeletedCells.TRUE)]
    a, b = twins(str(tmp_path), fams)
    cells = [
        (b"r1", "a", b"", 0, PUT, v),
        (b"r2", "a", b"", 0, PUT, v),
        (b"r1", "a", b"", 7, int(CellType.DELETE_FAMILY_VERSION), b""),
    ]
    for t in (a, b):
        t.load_cells(cell_table(cells))
    (column,) = [f for f in b.refresh().files if f.layout == "columns"]
    assert column.max_ts == 0  # expired at now 1,007 (cut-off 7), its companion is not
    raw = {"raw": True, "max_versions": 5}
    for t in (a, b):
        compact(t, min_files=2, now_ms=1_007)  # minor: nothing to select, expiry only
    assert len(b.refresh().files) == 2
    same(a.scan(**raw).to_arrow(), b.scan(**raw).to_arrow())
    for t in (a, b):
        compact(t, major=True, now_ms=1_007)
    got = b.scan(**raw).to_arrow()
    same(a.scan(**raw).to_arrow(), got)
    assert [(r["row"], r["ts"], r["type"]) for r in got.to_pylist()] == [
        (b"r1", 7, int(CellType.DELETE_FAMILY_VERSION))
    ]


def test_columns_load_whose_first_rows_hold_no_put_still_writes_columns(tmp_path: Path) -> None:
    """layout="columns": every load writes its newest Puts as column files."""
    t = create(str(tmp_path), "t", [Family(name="f", layout="columns")])
    t.load_cells(
        cell_table(
            [
                (b"a", "f", b"", 5, int(CellType.DELETE_FAMILY), b""),
                (b"b", "f", b"q", 6, PUT, b"v"),
            ]
        )
    )
    assert layouts_of(t) == ["cells", "columns"]


# ---------------------------------------------------------------------- 3. damaged files
@pytest.fixture
def damaged(tmp_path: Path) -> Any:
    """A ``columns`` table, regions [-, k00500) and [k00500, -), 1,000 rows x 2 columns
    uncompressed, plus a second load of 3 rows (another, smaller column file)."""
    clear_footer_cache()
    t = create(
        str(tmp_path / "wh"),
        "t",
        [Family(name="f", layout="columns", compression="none")],
        splits=["k00500"],
    )
    t.load_cells(grid(1000))
    t.load_cells(grid(3, prefix="z", ts=9))
    assert layouts_of(t) == ["columns"] * 3
    return t


def column_entries(t: Any) -> list[FileEntry]:
    return sorted(t.refresh().files, key=lambda e: e.first_row)


def assert_every_read_fails(t: Any, entry: FileEntry, *, row: str = "k00001") -> None:
    """scan (cells and wide), get and verify refuse the damaged file, naming it."""
    clear_footer_cache()
    reads = [
        lambda: t.scan(raw=True).to_arrow(),
        lambda: t.scan(shape="wide").to_arrow(),
        lambda: t.get(row),
    ]
    for read in reads:
        with pytest.raises(CorruptFileError) as info:
            read()
        assert entry.path in str(info.value)
    report = verify(t)
    assert not report.ok
    assert any(p.path == entry.path for p in report.problems), report.to_dict()


def test_truncated_column_file(damaged: Any) -> None:
    entry = column_entries(damaged)[0]
    path = Path(damaged.file_path(entry))
    path.write_bytes(path.read_bytes()[: entry.size // 2])
    assert_every_read_fails(damaged, entry)


def test_a_wide_read_failing_in_every_region_raises_and_does_not_hang(tmp_path: Path) -> None:
    """Every region's column file of one family truncated: the wide read (regions read
    ahead on the read pool, each region's families at once, a later load's deltas
    patched in) raises the damaged file's error. It used to hang: each failing region
    waited for its other family's call, cancelled but still queued on a pool whose
    threads all waited alike. Run in a child process, so a hang fails the test."""
    clear_footer_cache()
    fams = [Family(name=n, layout="columns", compression="none") for n in ("f", "g")]
    t = create(str(tmp_path / "wh"), "t", fams, splits=["k00200", "k00400", "k00600"])
    both = grid(800)
    both = pa.concat_tables([both, both.set_column(1, "family", pa.array(["g"] * len(both)))])
    t.load_cells(both)
    first = {e.path for e in t.refresh().files}
    t.load_cells(grid(800, ts=9).filter(pa.array([i % 37 == 0 for i in range(1600)])))
    bases = [e for e in t.refresh().files if e.family == "f" and e.path in first]
    assert len(bases) == 4 and len(t.files) > 8  # (a base per region, and deltas)
    for entry in bases:
        path = Path(t.file_path(entry))
        path.write_bytes(path.read_bytes()[: entry.size // 2])
    script = textwrap.dedent(
        f"""
        import pyarrow as pa, cellstore
        from cellstore.errors import CorruptFileError
        pa.set_cpu_count(2)
        t = cellstore.connect({str(tmp_path / "wh")!r}).table("t")
        try:
            t.scan(shape="wide").to_arrow()
        except CorruptFileError as e:
            print("refused:", e)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("refused:")
    assert any(e.path in run.stdout for e in bases)


def test_flipped_byte_in_a_column_files_data_page(damaged: Any) -> None:
    """A value page's byte flipped: the page checksum catches it (same size, same footer)."""
    entry = column_entries(damaged)[0]
    path = Path(damaged.file_path(entry))
    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    chunk = meta.row_group(0).column(names.index("q0"))
    at = chunk.data_page_offset + chunk.total_compressed_size - 8  # inside the values
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    assert_every_read_fails(damaged, entry)


def test_column_file_swapped_for_another_column_file(damaged: Any) -> None:
    first, _, small = column_entries(damaged)
    a, b = Path(damaged.file_path(first)), Path(damaged.file_path(small))
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    assert_every_read_fails(damaged, first)
    with pytest.raises(CorruptFileError, match=small.path):
        damaged.get("z00001")


def padded_to(source: Path, size: int, out: Path) -> None:
    """``source`` rewritten (same cells, same cellstore footer) to exactly ``size`` bytes."""
    pf = pq.ParquetFile(source)
    table, meta = pf.read(), dict(pf.metadata.metadata)
    pad = 0
    for _ in range(20):
        with pq.ParquetWriter(out, table.schema, compression="none", store_schema=False) as w:
            w.write_table(table)
            w.add_key_value_metadata({**meta, b"pad": b"x" * pad})
        missing = size - out.stat().st_size
        if not missing:
            return
        pad += missing
        assert pad >= 0, "the source is larger than the target"
    raise AssertionError("could not pad to the size")


def test_column_file_swapped_for_a_cell_file_of_the_same_size(damaged: Any, tmp_path: Path) -> None:
    """A cell file with the column file's size in its place: the footer digest tells."""
    entry = column_entries(damaged)[0]
    other = create(str(tmp_path / "wh"), "other", [Family(name="f", layout="cells")])
    other.load_cells(grid(50))
    (cell_entry,) = other.files
    target = Path(damaged.file_path(entry))
    padded_to(Path(other.file_path(cell_entry)), entry.size, tmp_path / "same-size.parquet")
    with StoreFileReader(fsspec.filesystem("file"), str(tmp_path / "same-size.parquet")) as r:
        assert (r.info.layout, r.info.cells) == ("cells", 100)  # a sound cell file
    target.write_bytes((tmp_path / "same-size.parquet").read_bytes())
    assert target.stat().st_size == entry.size
    assert_every_read_fails(damaged, entry)


SPEC = ColumnSpec(b"q")


def bad_records(kind: str) -> pa.Table:
    """Records breaking one invariant of docs/format.md 14 (``ok``: none)."""
    rows, row_ts, values, own = [b"a", b"b"], [5, 5], [b"x", b"y"], [None, None]
    if kind == "duplicate rows":
        rows = [b"a", b"a"]
    elif kind == "a record with no value":
        values = [b"x", None]
    elif kind == "a wrong __ts":
        own = [None, 3]  # the record's only cell is at 3, its __ts says 5
    return pa.Table.from_arrays(
        [
            pa.array(rows, pa.binary()),
            pa.array(row_ts, pa.int64()),
            pa.array(values, pa.binary()),
            pa.array(own, pa.int64()),
        ],
        schema=records_schema([SPEC]),
    )


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("ok", None),
        ("duplicate rows", "record rows are not strictly increasing"),
        ("a record with no value", "a record holds no value"),
        ("a wrong __ts", "__ts is not the largest timestamp"),
    ],
)
def test_verify_reports_a_column_file_breaking_its_invariants(
    tmp_path: Path, kind: str, message: str | None
) -> None:
    """A column file written by hand (valid footer and manifest entry) whose records break
    the layout's invariants is reported by verify, naming the file."""
    t = create(str(tmp_path), "t", [Family(name="f", layout="columns")])
    t.load_cells(grid(3))
    fam = t.metadata.family("f")
    relpath = "data/r000001/f/by-hand-c.parquet"
    writer = ColumnFileWriter(
        t.fs, f"{t.path}/{relpath}", family=fam, columns=(SPEC,), seq=1, load_id="by-hand"
    )
    writer.write(bad_records(kind))
    written = WrittenFile("r000001", relpath, writer.close())
    entry = file_entry(written, seq=2, load_id="by-hand")
    commit(t.log, Commit("test", changes=[FileChange(add=[entry])], new_seq=True))
    report = verify(t.refresh())
    if message is None:
        assert report.ok, report.to_dict()
        return
    problems = [p for p in report.problems if p.path == relpath]
    assert any(message in p.message for p in problems), report.to_dict()
    assert all(p.path == relpath for p in report.problems)


# ------------------------------------------------------------------------ 4. round trips
NOW = 60_000  # "now" of every read and job below (ms)
ALL = 2**31 - 1


def delta_cells() -> pa.Table:
    """A second load: newer versions, a DeleteColumn, a DeleteFamily, a new row, TTL cells."""
    return cell_table(
        [
            *[
                (f"k{i:05d}".encode(), "f", b"q0", 2_000, PUT, b"new%d" % i)
                for i in range(0, 200, 7)
            ],
            (b"k00010", "f", b"q1", 3_000, int(CellType.DELETE_COLUMN), b""),
            (b"k00120", "f", b"", 3_000, int(CellType.DELETE_FAMILY), b""),
            (b"k99999", "f", b"q5", 2_000, PUT, b"late"),
            *[(f"k{i:05d}".encode(), "g", b"t", 55_000, PUT, b"fresh") for i in range(0, 200, 5)],
        ]
    )


def base_cells() -> pa.Table:
    f = grid(200, ts=1_000)
    g = cell_table([(f"k{i:05d}".encode(), "g", b"t", 1_000, PUT, b"old") for i in range(200)])
    return pa.concat_tables([f, g])


#: A row-key spec every row of :func:`base_cells` and :func:`delta_cells` gives back
#: (``k`` in a 1-byte field, the digits after it): the twins' column files are keyed.
PAIR_KEY = RowKeySpec(
    fields=(KeyField(name="p", type="string", width=1), KeyField(name="n", type="string"))
)


@pytest.fixture(params=[None, PAIR_KEY], ids=["rows", "keyed"])
def pair(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Any, Any]:
    """Twins (cells, columns) with families f (2 versions) and g (TTL 10 s), two regions,
    a base load and a load of deltas; without a row-key spec and with one (keyed column
    files, docs/format.md 14.2)."""
    a, b = twins(
        str(tmp_path / "wh"),
        [Family(name="f", max_versions=2), Family(name="g", ttl=10)],
        splits=["k00100"],
        row_key=request.param,
    )
    for t in (a, b):
        t.load_cells(base_cells(), load_id="base")
        t.load_cells(delta_cells(), load_id="deltas")
    assert "columns" in layouts_of(b) and "columns" not in layouts_of(a)
    keyed = {
        StoreFileReader(b.fs, b.file_path(e)).info.row_key for e in b.files if e.layout == "columns"
    }
    assert keyed == {request.param}
    return a, b


def assert_twins(a: Any, b: Any) -> None:
    """Every kind of read of the two tables agrees (raw, normal, wide, get)."""
    a, b = a.refresh(), b.refresh()
    for opts in (
        {"raw": True, "max_versions": ALL},
        {"max_versions": ALL},
        {},
        {"shape": "wide"},
        {"shape": "wide", "columns": ["f:q0", "g:t"], "reversed": True},
    ):
        same(a.scan(now_ms=NOW, **opts).to_arrow(), b.scan(now_ms=NOW, **opts).to_arrow())
    for row in ("k00000", "k00010", "k00120", "k99999"):
        same(a.get(row, now_ms=NOW, max_versions=ALL), b.get(row, now_ms=NOW, max_versions=ALL))
    assert verify(b).ok, verify(b).to_dict()


def test_twins_agree_after_loads(pair: tuple[Any, Any]) -> None:
    a, b = pair
    assert_twins(a, b)
    got = b.scan(now_ms=NOW, shape="wide", start_row="k00007", stop_row="k00011").to_arrow()
    assert got.column("f:q0").to_pylist() == [b"new7", b"v8-0", b"v9-0", b"v10-0"]
    assert got.column("f:q1").to_pylist() == [b"v7-1", b"v8-1", b"v9-1", None]


def test_split_and_merge_regions(pair: tuple[Any, Any]) -> None:
    """Region split and merge of a column table (files cut or moved) keep every cell."""
    for t in pair:
        split(t, at=["k00050", "k00150"])
    assert_twins(*pair)
    for t in pair:
        t.refresh()
        merge(t, regions=[r.id for r in t.regions])
        assert len(t.refresh().regions) == 1
    assert_twins(*pair)


def test_snapshot_clone_restore(pair: tuple[Any, Any]) -> None:
    a, b = pair
    want = b.scan(raw=True, max_versions=ALL).to_arrow()
    for t in pair:
        snapshot(t, "s1")
        compact(t, major=True, now_ms=NOW)
        t.load_cells(grid(3, prefix="n", ts=7_000))
    assert "columns" in layouts_of(b)
    assert_twins(a, b)
    clones = [clone(t, "s1", f"{t.name}-copy") for t in pair]
    wh = b.warehouse
    ca, cb = (wh.table(c.table) for c in clones)
    assert_twins(ca, cb)
    same(cb.scan(raw=True, max_versions=ALL).to_arrow(), want)
    for t in pair:
        restore(t, "s1")
    assert_twins(a, b)
    same(b.refresh().scan(raw=True, max_versions=ALL).to_arrow(), want)


def test_export_and_export_hfiles(pair: tuple[Any, Any], tmp_path: Path) -> None:
    """jobs.export (cells and wide) and export_hfiles write the same cells for both."""
    got = []
    for t in pair:
        out = tmp_path / f"export-{t.name}"
        export(t, str(out), raw=True, max_versions=ALL, now_ms=NOW)
        cells = pq.read_table(sorted(out.rglob("*.parquet")))
        got.append(cells.take(pc.sort_indices(cells, [("row", "ascending")])).to_pylist())
        wide = tmp_path / f"wide-{t.name}"
        export(t, str(wide), shape="wide", now_ms=NOW)
        got.append(pq.read_table(sorted(wide.rglob("*.parquet"))).to_pylist())
        hf = tmp_path / f"hfiles-{t.name}"
        report = export_hfiles(t, str(hf), raw=True, max_versions=ALL)
        assert report.cells > 0
        hcells = pa.concat_tables(
            [read_hfile(str(p)) for p in sorted(hf.rglob("*")) if p.is_file() and "_" not in p.name]
        )
        got.append(sorted(tuple(r.values()) for r in hcells.to_pylist()))
    assert got[:3] == got[3:]


def test_index_build_and_lookup(pair: tuple[Any, Any]) -> None:
    found = []
    for t in pair:
        report = build_index(t, name="by_q0", column="f:q0")
        assert report.index_rows > 0
        index = open_index(t, "by_q0")
        found.append([rows_of(index.lookup(v)) for v in (b"new7", b"v8-0", b"v3-0", b"nope")])
    assert found[0] == found[1]
    assert [len(x) for x in found[1]] == [2, 2, 2, 0]  # the row's f:q0 and f:q1 cells


def test_report(pair: tuple[Any, Any]) -> None:
    ra, rb = (t.report(now_ms=NOW, sample_rows=None) for t in pair)
    assert (ra.total_cells, ra.scanned_cells, ra.rows) == (
        rb.total_cells,
        rb.scanned_cells,
        rb.rows,
    )
    assert ra.columns == rb.columns
    assert [r.cells for r in ra.regions] == [r.cells for r in rb.regions]


def test_vacuum_after_compaction(pair: tuple[Any, Any]) -> None:
    for t in pair:
        compact(t, major=True, now_ms=NOW)
        vacuum(t, retention_ms=0, dry_run=False, enforce_retention=False)
        on_disk = {str(p.relative_to(t.path)) for p in (Path(t.path) / "data").rglob("*.parquet")}
        assert on_disk == {e.path for e in t.refresh().files}
    assert "columns" in layouts_of(pair[1])
    assert_twins(*pair)


def test_purge_ttl(pair: tuple[Any, Any]) -> None:
    """R8: purge removes g's expired cells (ts 1,000 at now 60,000, TTL 10 s)."""
    for t in pair:
        report = purge_ttl(t, now_ms=NOW)
        assert report.version is not None and report.stores
    assert_twins(*pair)
    raw = pair[1].scan(raw=True, families=["g"], max_versions=ALL, now_ms=0).to_arrow()
    assert set(raw.column("value").to_pylist()) == {b"fresh"}


def test_to_dask(pair: tuple[Any, Any]) -> None:
    """Partitions (ScanPartitionReader, the wide fast path too) read like the twin."""
    import dask

    with dask.config.set(scheduler="threads"):
        for opts in (
            {"max_versions": ALL},
            {"shape": "wide", "column_types": {"f:q0": "bytes", "f:q1": "bytes", "g:t": "bytes"}},
        ):
            got = [t.scan(now_ms=NOW, **opts).to_dask().compute() for t in pair]
            assert got[0].reset_index(drop=True).equals(got[1].reset_index(drop=True))
            assert len(got[0]) > 0


# ------------------------------------------------------------- 5. crashes and concurrency
CRASH_CHILD = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    import cellstore

    t = cellstore.connect(sys.argv[1]).table("t")
    print("ready", flush=True)
    for i in range(int(sys.argv[2]), 1000):
        rows = [b"b%04d-%05d" % (i, k) for k in range(5000)]
        t.load_cells(pa.table({
            "row": rows * 2, "family": ["f"] * 10000,
            "qualifier": [b"q"] * 5000 + [b"r"] * 5000,
            "ts": [1] * 5000 + [2] * 5000, "value": [b"%d" % i] * 10000,
        }), load_id="batch-%d" % i)
    """
)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_load_of_column_files_killed_midway(tmp_path: Path) -> None:
    """SIGKILL during column-file loads: the table reads a committed state (whole
    batches, in order), verify finds nothing, vacuum removes only unreferenced files."""
    t = create(str(tmp_path), "t", [Family(name="f", layout="columns")], splits=["b0002"])
    script = tmp_path / "child.py"
    script.write_text(CRASH_CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    rng = random.Random(28)
    kills = 0
    for _ in range(3):
        start = len(committed_batches(t.refresh()))
        child = subprocess.Popen(
            [sys.executable, str(script), t.warehouse.root, str(start)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.3, 1.5))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            kills += 1
        child.wait()
        child.stdout.close()
        before = committed_batches(t.refresh())
        assert verify(t).ok
        vacuum(t, retention_ms=0, dry_run=False, enforce_retention=False)
        data = {str(p.relative_to(t.path)) for p in (Path(t.path) / "data").rglob("*.parquet")}
        assert data == {e.path for e in t.refresh().files}
        assert committed_batches(t) == before
    assert kills >= 2
    assert before and set(layouts_of(t)) == {"columns"}


def committed_batches(t: Any) -> list[int]:
    """The batches the table holds, each whole (5,000 rows, both columns) and in order."""
    got = t.scan(shape="wide").to_arrow()
    if not got.num_rows:
        return []
    counts: dict[int, int] = {}
    for row, q, r in zip(*(got.column(c).to_pylist() for c in ("row", "f:q", "f:r")), strict=True):
        batch = int(row[1:5])
        assert int(q) == int(r) == batch
        counts[batch] = counts.get(batch, 0) + 1
    assert all(n == 5000 for n in counts.values()), counts
    batches = sorted(counts)
    assert batches == list(range(len(batches)))
    return batches


def test_concurrent_loads_into_a_column_table_lose_nothing(tmp_path: Path) -> None:
    """Two loads committing at once (retry on conflict, design decision 3): both land."""
    root = str(tmp_path)
    create(root, "t", [Family(name="f", layout="columns")], splits=["m"])
    barrier = threading.Barrier(2)

    def load(prefix: str) -> None:
        t = cellstore.connect(root).table("t")
        barrier.wait()
        for i in range(3):
            t.load_cells(grid(50, prefix=f"{prefix}{i}", ts=i + 1))

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(load, ["a", "n"]))
    t = cellstore.connect(root).table("t")
    assert t.metadata.format_version == 3
    assert set(layouts_of(t)) == {"columns"} and len(t.files) == 6
    got = t.scan().to_arrow()
    assert got.num_rows == 2 * 3 * 50 * 2
    rows = set(got.column("row").to_pylist())
    assert rows == {f"{p}{i}{k:05d}".encode() for p in "an" for i in range(3) for k in range(50)}
    assert verify(t).ok

"""Key-field aliases of keyed column files (docs/format.md 14.2, footer version 4).

A value column whose every value in the file equals a key field of the same type is not
stored: the footer names the field (``aliases``) and readers take the values from the key
column. The cell set stays ``unpivot(column file)`` plus the cell files: a record whose value
differs from its key field (or lacks it) after the writer decided keeps its row's cells in
the companion cell file. These tests check what is written, that every read agrees with
the cells twin, what verify says and what a damaged alias footer gives.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import cellstore
from cellstore.core.cells import CellType
from cellstore.core.codecs import Codec
from cellstore.core.columnar import ColumnSpec, column_set, expand_records
from cellstore.core.family import Family
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import CorruptFileError
from cellstore.jobs import verify
from cellstore.jobs.compact import compact
from cellstore.storefiles import StoreFileReader
from cellstore.storefiles.columns import ColumnPlan, LayoutSink
from cellstore.storefiles.footer import FOOTER_KEY
from test_column_keyed import assert_footer_refused, column_entries
from test_column_keyed import assert_same_reads as assert_keyed_reads

PUT = int(CellType.PUT)
KEY = RowKeySpec(fields=(KeyField(name="carrier"), KeyField(name="n", type="int32")))
CARRIERS = ["AA", "DL", "UA"]
TYPES = {"f:carrier": "string", "f:dep": "double", "f:n": "int", "f:tail": "string"}
PROPERTIES = {"mapping.codecs": json.dumps({"columns": TYPES})}


def _value(q: bytes, v: Any) -> bytes:
    if q == b"dep":
        return struct.pack(">d", v)
    if q == b"n":
        return struct.pack(">i", v)
    return str(v).encode()


def flight_cells(
    n: int, *, ts: int = 5, first: int = 0, carrier_of: Any = None, stamp_of: Any = None
) -> pa.Table:
    """``n`` records under :data:`KEY` rows holding ``carrier`` and ``n`` as values too.

    ``carrier_of(i, carrier)``: the ``carrier`` value of record ``i`` (None: no cell);
    ``stamp_of(i)``: the ``carrier`` cell's timestamp (default ``ts``).
    """
    idx = range(first, first + n)
    fields = pa.table(
        {
            "carrier": [CARRIERS[i % 3] for i in idx],
            "n": pa.array([i // 3 - 50 for i in idx], pa.int32()),
        }
    )
    rows = KEY.encode(fields).to_pylist()
    cells: list[tuple[bytes, bytes, int, bytes]] = []
    for i, row, carrier, k in zip(
        idx, rows, fields.column("carrier").to_pylist(), fields.column("n").to_pylist(), strict=True
    ):
        value = carrier if carrier_of is None else carrier_of(i, carrier)
        if value is not None:
            stamp = ts if stamp_of is None else stamp_of(i)
            cells.append((row, b"carrier", stamp, _value(b"carrier", value)))
        cells.append((row, b"dep", ts, _value(b"dep", float(i))))
        cells.append((row, b"n", ts, _value(b"n", k)))
        cells.append((row, b"tail", ts, _value(b"tail", f"N{i % 7}")))
    cells.sort(key=lambda c: (c[0], c[1]))
    return pa.table(
        {
            "row": pa.array([c[0] for c in cells], pa.binary()),
            "family": ["f"] * len(cells),
            "qualifier": pa.array([c[1] for c in cells], pa.binary()),
            "ts": pa.array([c[2] for c in cells], pa.int64()),
            "type": pa.array([PUT] * len(cells), pa.int8()),
            "value": pa.array([c[3] for c in cells], pa.binary()),
        }
    )


def tables(root: str) -> tuple[Any, Any]:
    wh = cellstore.connect(root)
    fam = Family(name="f", max_versions=3)
    out = []
    for name, layout in (("cells", "cells"), ("cols", "columns")):
        out.append(
            wh.create_table(
                name, families=[fam.replace(layout=layout)], row_key=KEY, properties=PROPERTIES
            )
        )
    return out[0], out[1]


def assert_same_reads(a: Any, b: Any) -> None:
    """Every read shape and option gives the same answer on the twins."""
    assert_keyed_reads(a, b)
    a, b = a.refresh(), b.refresh()
    for opts in (
        {"shape": "wide", "columns": ["f:carrier", "f:dep"]},
        {"shape": "wide", "columns": ["f:carrier"], "reversed": True},
        {"columns": ["f:n"]},
        {"max_versions": 5},
        {"time_range": (0, 7)},
    ):
        assert a.scan(**opts).to_arrow().to_pylist() == b.scan(**opts).to_arrow().to_pylist(), opts
    for row in a.scan(limit=5).to_arrow().column("row").to_pylist():
        assert a.get(row).to_pylist() == b.get(row).to_pylist()
        assert a.get(row, max_versions=5).to_pylist() == b.get(row, max_versions=5).to_pylist()


def test_key_valued_columns_are_aliases(tmp_path: Path) -> None:
    """``carrier`` (string) and ``n`` (int) equal the key's fields in every record: the file
    stores neither value column (their timestamp columns stay), the footer (version 4)
    names the fields, and every read agrees with the cells twin."""
    a, b = tables(str(tmp_path))
    for t in (a, b):
        t.load_cells(flight_cells(300))
    (entry,) = column_entries(b)
    path = b.file_path(entry)
    names = pq.read_schema(path).names
    assert "carrier" not in names and "n" not in names
    assert {"dep", "tail", "__ts:carrier", "__ts:n"} <= set(names)
    footer = json.loads(pq.ParquetFile(path).metadata.metadata[FOOTER_KEY])
    assert footer["format-version"] == 4
    assert footer["aliases"] == {b"carrier".hex(): "carrier", b"n".hex(): "n"}
    info = StoreFileReader(b.fs, path).info
    assert info.aliases == ((b"carrier", "carrier"), (b"n", "n")) and info.cells == 1200
    records = StoreFileReader(b.fs, path).read_records([0])
    assert records.column("carrier").equals(records.column("__key:carrier"))
    assert set(records.column("carrier").to_pylist()) == set(CARRIERS)
    assert records.column("n").type == pa.int32()
    assert_same_reads(a, b)
    assert verify(b).ok


def test_a_column_that_differs_once_is_stored(tmp_path: Path) -> None:
    """One record whose ``carrier`` differs from its key field (and one without the cell):
    ``carrier`` is stored, ``n`` is still an alias."""
    a, b = tables(str(tmp_path))
    cells = flight_cells(90, carrier_of=lambda i, c: "ZZ" if i == 40 else (None if i == 41 else c))
    for t in (a, b):
        t.load_cells(cells)
    (entry,) = column_entries(b)
    info = StoreFileReader(b.fs, b.file_path(entry)).info
    assert info.aliases == ((b"n", "n"),)
    assert "carrier" in pq.read_schema(b.file_path(entry)).names
    assert_same_reads(a, b)


def test_an_aliased_cell_keeps_its_own_timestamp(tmp_path: Path) -> None:
    """An aliased column's cells keep their exact timestamps (the ``__ts:`` rule)."""
    a, b = tables(str(tmp_path))
    cells = flight_cells(60, stamp_of=lambda i: 3 if i % 4 == 0 else 5)
    for t in (a, b):
        t.load_cells(cells)
    (entry,) = column_entries(b)
    assert StoreFileReader(b.fs, b.file_path(entry)).info.aliases
    raw = b.scan(raw=True).to_arrow()
    raw = raw.filter(pc.equal(raw.column("qualifier"), b"carrier"))
    assert sorted(set(raw.column("ts").to_pylist())) == [3, 5]
    assert_same_reads(a, b)


def _sink_files(tmp_path: Path, chunks: list[pa.Table]) -> list[Any]:
    fs = fsspec.filesystem("file")
    specs = column_set(ColumnSpec(q, Codec.parse(TYPES[f"f:{q.decode()}"])) for q in _QUALS)
    plan = ColumnPlan(specs, discover=1024, forced=True, key=KEY)
    sink = LayoutSink(
        fs,
        str(tmp_path),
        region="r0",
        family=Family(name="f"),
        stem="s",
        plan=plan,
        seq=1,
        load_id="t",
    )
    for chunk in chunks:
        sink.write(chunk)
    return sink.close()


_QUALS = (b"carrier", b"dep", b"n", b"tail")


def _file_cells(path: str) -> pa.Table:
    reader = StoreFileReader(fsspec.filesystem("file"), path)
    return reader.read_row_groups(range(reader.info.row_groups)).select(
        ["row", "qualifier", "ts", "type", "value"]
    )


def test_a_later_differing_record_keeps_its_row_in_the_cell_file(tmp_path: Path) -> None:
    """The writer decides on the first chunk; a later record whose aliased value differs,
    or that lacks the cell, keeps its row's cells in the companion cell file, so the
    union of both files is exactly the cells written."""
    first = flight_cells(120)
    later = flight_cells(
        120,
        first=120,
        carrier_of=lambda i, c: "ZZ" if i == 150 else (None if i == 200 else c),
    )
    written = _sink_files(tmp_path, [first, later])
    assert [w.info.layout for w in written] == ["cells", "columns"]
    cells_info, cols_info = (w.info for w in written)
    assert cols_info.aliases == ((b"carrier", "carrier"), (b"n", "n"))
    assert cols_info.rows == 238 and not cols_info.complete
    union = pa.concat_tables([_file_cells(cols_info.path), _file_cells(cells_info.path)])
    want = pa.concat_tables([first, later]).select(union.column_names)
    key = ["row", "qualifier", "ts"]
    assert (
        union.sort_by([(k, "ascending") for k in key]).to_pylist()
        == want.sort_by([(k, "ascending") for k in key]).to_pylist()
    )
    moved = set(_file_cells(cells_info.path).column("row").to_pylist())
    assert len(moved) == 2


def test_expanding_aliased_records_gives_the_key_values(tmp_path: Path) -> None:
    """``read_records`` gives aliased columns typed like stored ones; expanding them
    gives the cells' exact bytes."""
    cells = flight_cells(50)
    (w,) = _sink_files(tmp_path, [cells])
    reader = StoreFileReader(fsspec.filesystem("file"), w.info.path)
    records = reader.read_records([0], columns=["__row", "carrier", "dep"])
    assert records.column_names == ["__row", "__key:carrier", "__key:n", "carrier", "dep"]
    assert records.column("carrier").equals(records.column("__key:carrier"))
    only = reader.read_records([0], columns=["n"])
    assert only.column_names == ["n"] and only.column("n").type == pa.int32()
    every = reader.read_records([0])
    expanded = expand_records(every, w.info.columns, key=KEY)
    assert expanded.num_rows == cells.num_rows
    assert expanded.column("value").to_pylist() == cells.column("value").to_pylist()


def test_major_compaction_and_deltas_keep_aliases_exact(tmp_path: Path) -> None:
    """Deltas over an aliased base (a changed carrier value) and a major compaction."""
    a, b = tables(str(tmp_path))
    for t in (a, b):
        t.load_cells(flight_cells(90))
        t.load_cells(flight_cells(30, ts=9, carrier_of=lambda i, c: c.lower()))
    assert_same_reads(a, b)
    for t in (a, b):
        compact(t, major=True)
    entries = column_entries(b)
    assert entries and all(
        not StoreFileReader(b.fs, b.file_path(e)).info.aliases
        or StoreFileReader(b.fs, b.file_path(e)).info.aliases == ((b"n", "n"),)
        for e in entries
    )
    assert_same_reads(a, b)
    assert verify(b).ok


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f["aliases"].update({b"carrier".hex(): "nope"}), "names key field 'nope'"),
        (lambda f: f["aliases"].update({b"carrier".hex(): "n"}), "is not its type"),
        (lambda f: f["aliases"].update({b"zz".hex(): "n"}), "names no column"),
        (lambda f: f.update({"aliases": {}}), "not a non-empty object"),
        (lambda f: f.update({"aliases": ["carrier"]}), "not a non-empty object"),
        (lambda f: f.pop("aliases"), "has no aliases"),
        (lambda f: f.update({"format-version": 3}), "aliases in a format-version-3 footer"),
        (
            lambda f: f.update({"aliases": {b"n".hex(): "n", b"carrier".hex(): "carrier"}}),
            "increasing",
        ),
    ],
)
def test_damaged_alias_footer_is_refused_naming_the_file(
    tmp_path: Path, change: Any, message: str
) -> None:
    assert_footer_refused(_aliased_file(tmp_path), tmp_path, change, message)


def _aliased_file(tmp_path: Path) -> str:
    """The path of a column file with aliases (``carrier`` and ``n``)."""
    _, b = tables(str(tmp_path))
    b.load_cells(flight_cells(30))
    (entry,) = column_entries(b)
    return str(b.file_path(entry))


def test_stored_aliased_column_is_refused(tmp_path: Path) -> None:
    """A file that stores a column its footer calls an alias has the wrong columns."""
    bad = str(tmp_path / "extra-c.parquet")
    pf = pq.ParquetFile(_aliased_file(tmp_path))
    table = pf.read()
    table = table.append_column("n", table.column("__key:n"))
    pq.write_table(table.replace_schema_metadata(pf.metadata.metadata), bad)
    with pytest.raises(CorruptFileError, match=r"extra-c\.parquet"):
        StoreFileReader(fsspec.filesystem("file"), bad)


@pytest.mark.parametrize("compacted", [False, True])
@pytest.mark.parametrize("ttl", [None, 86_400])
def test_shared_rows_take_aliased_values_from_the_first_family(
    tmp_path: Path, ttl: int | None, compacted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two families of the same rows: the second's aliased columns are not read but taken
    from the first family's key fields (unless a TTL makes their timestamps count); every
    read agrees with the twin. ``compacted``: after a major compaction that kept versions
    (each family a column file and its companion of older versions, which the read
    skips: the rows are still shared)."""
    import time

    from cellstore.reader.columnar import fast as columnar

    now = int(time.time() * 1000)
    wh = cellstore.connect(str(tmp_path))
    kept = 3 if compacted else 1
    fams = [Family(name="f", max_versions=kept), Family(name="g", max_versions=kept, ttl=ttl)]
    props = {
        "mapping.codecs": json.dumps(
            {"columns": {**TYPES, **{k.replace("f:", "g:"): v for k, v in TYPES.items()}}}
        )
    }
    made = [
        wh.create_table(
            layout,
            families=[f.replace(layout=layout) for f in fams],
            row_key=KEY,
            properties=props,
        )
        for layout in ("cells", "columns")
    ]
    f_cells = flight_cells(120, ts=now)
    # g's carrier cells: some a week old (expired under the TTL)
    g_cells = flight_cells(120, ts=now, stamp_of=lambda i: now - 7 * 86_400_000 * (i % 5 == 0))
    g_cells = g_cells.set_column(1, "family", pa.array(["g"] * g_cells.num_rows))
    for t in made:
        t.load_cells(pa.concat_tables([f_cells, g_cells]))
        if compacted:
            newer = flight_cells(30, ts=now + 1)
            both = [newer, newer.set_column(1, "family", pa.array(["g"] * newer.num_rows))]
            t.load_cells(pa.concat_tables(both))
            compact(t, major=True)
    filled: list[int] = []
    real = columnar._aliases_from_keys

    def spy(part: Any, first: Any) -> Any:
        filled.append(len(getattr(part, "aliased", {})))
        return real(part, first)

    monkeypatch.setattr(columnar, "_aliases_from_keys", spy)
    a, b = (t.refresh() for t in made)
    (g_entry,) = [e for e in column_entries(b) if e.family == "g"]
    assert StoreFileReader(b.fs, b.file_path(g_entry)).info.aliases
    assert any(e.layout == "cells" for e in b.files) is compacted  # the companions
    for opts in (
        {"shape": "wide", "column_types": "table"},
        {"shape": "wide", "columns": ["g:carrier", "f:dep"], "column_types": "table"},
        {"shape": "wide", "columns": ["g:n"], "reversed": True},
        {"shape": "wide", "columns": ["g:carrier"], "time_range": (0, now - 1)},
    ):
        assert a.scan(**opts).to_arrow().to_pylist() == b.scan(**opts).to_arrow().to_pylist(), opts
    assert filled
    assert any(filled) is (ttl is None)


def test_export_and_export_hfiles_of_an_aliased_table(tmp_path: Path) -> None:
    """jobs.export (cells and wide) and export_hfiles write the twin's cells."""
    from cellstore.hbase import read_hfile
    from cellstore.jobs import export, export_hfiles

    a, b = tables(str(tmp_path / "wh"))
    for t in (a, b):
        t.load_cells(flight_cells(90))
    (entry,) = column_entries(b)
    assert StoreFileReader(b.fs, b.file_path(entry)).info.aliases
    got = []
    for t in (a.refresh(), b.refresh()):
        out = tmp_path / f"export-{t.name}"
        export(t, str(out), raw=True)
        cells = pq.read_table(sorted(out.rglob("*.parquet")))
        got.append(cells.sort_by([("row", "ascending"), ("qualifier", "ascending")]).to_pylist())
        wide = tmp_path / f"wide-{t.name}"
        export(t, str(wide), shape="wide")
        got.append(pq.read_table(sorted(wide.rglob("*.parquet"))).to_pylist())
        hf = tmp_path / f"hfiles-{t.name}"
        export_hfiles(t, str(hf), raw=True)
        hcells = pa.concat_tables(
            [read_hfile(str(p)) for p in sorted(hf.rglob("*")) if p.is_file() and "_" not in p.name]
        )
        got.append(sorted(tuple(r.values()) for r in hcells.to_pylist()))
    assert got[:3] == got[3:]
    assert len(got[0]) == 360

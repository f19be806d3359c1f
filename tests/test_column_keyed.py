"""Keyed column files (docs/format.md 14.2): a table's row-key fields as typed columns.

A column file of a table with a row-key spec whose every field decodes holds the key's
fields as ``__key:<field>`` columns in place of ``__row`` (footer format-version 3). A
row the spec does not give back byte for byte stays a cell in the companion cell file.
Reads are exact either way (the twins of tests/test_column_layout.py run keyed too); this
file checks the format itself: what is written, what is refused, what verify finds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cellstore
from cellstore.core.cells import CellType
from cellstore.core.family import Family
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.core.rowkey.spec import RowKeySpec as SpecClass
from cellstore.errors import CorruptFileError
from cellstore.jobs import verify
from cellstore.jobs.compact import compact
from cellstore.storefiles import StoreFileReader
from cellstore.storefiles.footer import FOOTER_KEY

PUT = int(CellType.PUT)
KEY = RowKeySpec(fields=(KeyField(name="carrier"), KeyField(name="n", type="int32")))
CARRIERS = ["AA", "DL", "UA"]
TYPES = {"f:dep": "double", "f:tail": "string"}
PROPERTIES = {"mapping.codecs": json.dumps({"columns": TYPES})}


def keyed_cells(n: int, *, ts: int = 5, extra_rows: list[bytes] | None = None) -> pa.Table:
    """``n`` records of two columns under :data:`KEY` rows, plus ``extra_rows`` as is."""
    fields = pa.table(
        {
            "carrier": [CARRIERS[i % 3] for i in range(n)],
            "n": pa.array([i // 3 - 50 for i in range(n)], pa.int32()),
        }
    )
    rows = KEY.encode(fields).to_pylist() + list(extra_rows or [])
    cells = []
    for i, row in enumerate(rows):
        cells.append((row, b"dep", pa.scalar(float(i), pa.float64()).as_py()))
        cells.append((row, b"tail", f"N{i % 97}"))
    import struct

    return pa.table(
        {
            "row": pa.array([c[0] for c in cells], pa.binary()),
            "family": ["f"] * len(cells),
            "qualifier": pa.array([c[1] for c in cells], pa.binary()),
            "ts": pa.array([ts] * len(cells), pa.int64()),
            "type": pa.array([PUT] * len(cells), pa.int8()),
            "value": pa.array(
                [struct.pack(">d", c[2]) if c[1] == b"dep" else c[2].encode() for c in cells],
                pa.binary(),
            ),
        }
    )


def tables(root: str, spec: RowKeySpec | None = KEY, **kw: Any) -> tuple[Any, Any]:
    wh = cellstore.connect(root)
    fam = Family(name="f", max_versions=2)
    cells = wh.create_table(
        "cells",
        families=[fam.replace(layout="cells")],
        row_key=spec,
        properties=PROPERTIES,
        **kw,
    )
    cols = wh.create_table(
        "cols",
        families=[fam.replace(layout="columns")],
        row_key=spec,
        properties=PROPERTIES,
        **kw,
    )
    return cells, cols


def column_entries(t: Any) -> list[Any]:
    return [e for e in t.refresh().files if e.layout == "columns"]


def assert_same_reads(a: Any, b: Any) -> None:
    a, b = a.refresh(), b.refresh()
    for opts in (
        {},
        {"shape": "wide", "column_types": "table"},
        {"shape": "wide", "column_types": "table", "key": {"carrier": "DL"}},
        {"shape": "wide", "column_types": "table", "key": {"carrier": "UA", "n": (-10, 5)}},
        {"shape": "wide", "columns": ["f:tail"], "reversed": True},
        {"max_versions": 5, "raw": True},
    ):
        assert a.scan(**opts).to_arrow().to_pylist() == b.scan(**opts).to_arrow().to_pylist()


def test_keyed_file_holds_the_key_fields_not_rows(tmp_path: Path) -> None:
    """Section 14.2: the key's fields as typed columns, no ``__row``, footer version 3 with
    the spec, per-group bounds and a rows digest; every read agrees with the cells twin."""
    a, b = tables(str(tmp_path))
    for t in (a, b):
        t.load_cells(keyed_cells(300))
    (entry,) = column_entries(b)
    path = b.file_path(entry)
    schema = pq.read_schema(path)
    assert schema.names[:3] == ["__key:carrier", "__key:n", "__ts"]
    assert schema.field("__key:n").type == pa.int32()
    assert "__row" not in schema.names
    footer = json.loads(pq.ParquetFile(path).metadata.metadata[FOOTER_KEY])
    assert footer["format-version"] == 3
    assert RowKeySpec.from_dict(footer["row-key"]) == KEY
    assert footer["row-group-rows"][0][0] == footer["first-row"]
    assert footer["row-group-rows"][-1][1] == footer["last-row"]
    assert len(footer["rows-digest"]) == 32
    info = StoreFileReader(b.fs, path).info
    assert info.row_key == KEY and info.format_version == 3
    assert_same_reads(a, b)
    assert a.get(KEY.key_for({"carrier": "UA", "n": 3})) is not None
    assert verify(b).ok, verify(b).to_dict()


def test_rows_the_key_cannot_give_back_stay_cells(tmp_path: Path) -> None:
    """A row that does not decode (no terminator) or decodes to other bytes (an int32 in
    a short key) stays in the companion cell file; the column file is not complete."""
    a, b = tables(str(tmp_path))
    odd = [b"no-terminator", b"UA\x00\x80\x00"]
    for t in (a, b):
        t.load_cells(keyed_cells(60, extra_rows=odd))
    (entry,) = column_entries(b)
    reader = StoreFileReader(b.fs, b.file_path(entry))
    assert reader.info.rows == 60 and not reader.info.complete
    cells = [e for e in b.files if e.layout == "cells"]
    assert len(cells) == 1
    held = StoreFileReader(b.fs, b.file_path(cells[0])).read().column("row").to_pylist()
    assert sorted(set(held)) == sorted(odd)
    assert_same_reads(a, b)


def test_salted_and_descending_keys_round_trip(tmp_path: Path) -> None:
    """A salted spec with a descending field: rows hold the salt byte, the key columns
    do not; encoding them again gives the stored rows back."""
    spec = RowKeySpec(
        fields=(KeyField(name="carrier"), KeyField(name="n", type="int32", descending=True)),
        salt_buckets=4,
    )
    a, b = tables(str(tmp_path), spec)
    fields = pa.table(
        {"carrier": [CARRIERS[i % 3] for i in range(200)], "n": pa.array(range(200), pa.int32())}
    )
    rows = spec.encode(fields)
    src = keyed_cells(200)
    src = src.set_column(0, "row", pa.array([r for r in rows.to_pylist() for _ in (0, 1)]))
    src = src.take(pa.array(sorted(range(src.num_rows), key=lambda i: src["row"][i].as_py())))
    for t in (a, b):
        t.load_cells(src, keys="physical")
    entries = column_entries(b)  # one per salt bucket's region
    assert len(entries) == 4
    assert {StoreFileReader(b.fs, b.file_path(e)).info.row_key for e in entries} == {spec}
    for opts in ({}, {"shape": "wide", "column_types": "table"}):
        assert a.scan(**opts).to_arrow().to_pylist() == b.scan(**opts).to_arrow().to_pylist()
    assert verify(b).ok, verify(b).to_dict()


def test_wide_read_takes_key_fields_from_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path gives the key fields from the key columns: no row key is decoded."""
    a, b = tables(str(tmp_path))
    for t in (a, b):
        t.load_cells(keyed_cells(300))
    want = a.scan(shape="wide", column_types="table").to_arrow()
    calls: list[int] = []
    decode = SpecClass.decode

    def counting(self: RowKeySpec, rows: Any, **kw: Any) -> pa.Table:
        calls.append(len(rows))
        return decode(self, rows, **kw)

    monkeypatch.setattr(SpecClass, "decode", counting)
    got = b.refresh().scan(shape="wide", column_types="table").to_arrow()
    assert got.to_pylist() == want.to_pylist()
    assert got.schema == want.schema
    assert calls == []


def test_major_compaction_writes_keyed_files(tmp_path: Path) -> None:
    """A major compaction of a keyed table's deltas writes keyed column files again."""
    a, b = tables(str(tmp_path))
    for t in (a, b):
        t.load_cells(keyed_cells(90))
        t.load_cells(keyed_cells(30, ts=9))
        compact(t, major=True)
    (entry,) = column_entries(b)
    assert StoreFileReader(b.fs, b.file_path(entry)).info.row_key == KEY
    assert_same_reads(a, b)


def _rewrite_footer(src: str, dst: str, change: Any) -> None:
    pf = pq.ParquetFile(src)
    meta = dict(pf.metadata.metadata)
    footer = json.loads(meta[FOOTER_KEY])
    change(footer)
    meta[FOOTER_KEY] = json.dumps(footer).encode()
    pq.write_table(pf.read().replace_schema_metadata(meta), dst)


def _pop_digest(f: dict[str, Any]) -> None:
    f.pop("rows-digest")


def _md5_field(f: dict[str, Any]) -> None:
    f["row-key"]["fields"][1]["hash"] = "md5"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.update({"format-version": 2}), "row-key in a format-version-2 footer"),
        (lambda f: f.pop("row-key"), "has no row-key"),
        (lambda f: f.update({"row-group-rows": []}), "row-group-rows is not 1 pairs"),
        (lambda f: f.update({"row-group-rows": [["00", "00", "00"]]}), "two hex row keys"),
        (
            lambda f: f.update({"row-group-rows": [[f["last-row"], f["first-row"]]]}),
            "not ascending",
        ),
        (lambda f: f.update({"row-group-rows": [["01", "ff"]]}), "start at first-row"),
        (_pop_digest, "rows-digest"),
        (_md5_field, "cannot be decoded"),
        (lambda f: f.update({"row-key": {"fields": []}}), "at least one field"),
    ],
)
def test_damaged_keyed_footer_is_refused_naming_the_file(
    tmp_path: Path, change: Any, message: str
) -> None:
    _, b = tables(str(tmp_path))
    b.load_cells(keyed_cells(30))
    (entry,) = column_entries(b)
    assert_footer_refused(b.file_path(entry), tmp_path, change, message)


def assert_footer_refused(src: str, tmp_path: Path, change: Any, message: str) -> None:
    """A copy of ``src`` whose footer JSON ``change`` damaged is refused, naming it."""
    bad = str(tmp_path / "bad-c.parquet")
    _rewrite_footer(src, bad, change)
    with pytest.raises(CorruptFileError, match=r"bad-c\.parquet") as err:
        StoreFileReader(fsspec.filesystem("file"), bad)
    assert message in str(err.value)


def test_verify_finds_key_columns_out_of_order(tmp_path: Path) -> None:
    """Key columns whose rows do not increase (or leave the footer's bounds) are reported
    by the file check, naming the problem."""
    from cellstore.storefiles.check import check

    _, b = tables(str(tmp_path))
    b.load_cells(keyed_cells(30))
    (entry,) = column_entries(b)
    src = b.file_path(entry)
    pf = pq.ParquetFile(src)
    table = pf.read()
    n = table.column("__key:n").to_pylist()
    table = table.set_column(1, pf.schema_arrow.field("__key:n"), pa.array(n[::-1], pa.int32()))
    bad = str(tmp_path / "reordered-c.parquet")
    pq.write_table(table.replace_schema_metadata(pf.metadata.metadata), bad)
    report = check(fsspec.filesystem("file"), bad)
    assert any("row-group-rows" in p or "increasing" in p for p in report.problems), report


@pytest.mark.parametrize("same_rows", [True, False])
def test_two_families_share_or_join_their_rows(
    tmp_path: Path, same_rows: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Families whose keyed files hold the same rows (equal rows digests) are read with the
    rows of the first alone; others are joined on the row. Both agree with the twin."""
    from cellstore.reader.columnar import fast as columnar

    wh = cellstore.connect(str(tmp_path))
    fams = [Family(name="f", max_versions=1), Family(name="g", max_versions=1)]
    made = []
    for layout in ("cells", "columns"):
        made.append(
            wh.create_table(
                layout,
                families=[f.replace(layout=layout) for f in fams],
                row_key=KEY,
                properties=PROPERTIES,
            )
        )
    f_cells = keyed_cells(120)
    g_cells = keyed_cells(120 if same_rows else 90).set_column(
        1, "family", pa.array(["g"] * (240 if same_rows else 180))
    )
    for t in made:
        t.load_cells(pa.concat_tables([f_cells, g_cells]))
    shared: list[bool] = []
    real = columnar._shared_rows

    def spy(*args: Any) -> bool:
        shared.append(real(*args))
        return shared[-1]

    monkeypatch.setattr(columnar, "_shared_rows", spy)
    a, b = (t.refresh() for t in made)
    for opts in (
        {"shape": "wide", "column_types": "table"},
        {"shape": "wide", "columns": ["g:tail", "f:dep"], "reversed": True},
    ):
        assert a.scan(**opts).to_arrow().to_pylist() == b.scan(**opts).to_arrow().to_pylist()
    assert shared and all(s is same_rows for s in shared)


def test_key_ranges_cut_keyed_row_groups_like_the_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key range that cuts row groups of keyed files finds its cut points from the typed
    key fields (encoding rows only where those cannot place a bound): every cut agrees
    with the twin."""
    from cellstore.reader.columnar import base as columnar

    cuts: list[int] = []
    encoded: list[int] = []
    real, real_bisect = columnar._key_cut, columnar._bisect_keyed

    def spy(fields: pa.Table, key: RowKeySpec, target: bytes, within: tuple[int, int]) -> int:
        cuts.append(real(fields, key, target, within))
        return cuts[-1]

    def spy_bisect(fields: pa.Table, key: RowKeySpec, target: bytes) -> int:
        encoded.append(fields.num_rows)
        return real_bisect(fields, key, target)

    monkeypatch.setattr(columnar, "_key_cut", spy)
    monkeypatch.setattr(columnar, "_bisect_keyed", spy_bisect)
    a, b = tables(str(tmp_path))
    for t in (a, b):
        t.load_cells(keyed_cells(3000), row_group_cells=400)  # 200-record groups
    (entry,) = column_entries(b)
    assert StoreFileReader(b.fs, b.file_path(entry)).info.row_groups >= 10
    a, b = a.refresh(), b.refresh()
    for key in (
        {"carrier": "AA"},
        {"carrier": "DL", "n": (-50, 0)},
        {"carrier": "DL", "n": (10, 11)},
        {"carrier": "UA", "n": (900, None)},
        {"carrier": "UA", "n": (None, -49)},
        {"carrier": "ZZ"},
    ):
        opts = {"shape": "wide", "column_types": "table", "key": key}
        assert a.scan(**opts).to_arrow().to_pylist() == b.scan(**opts).to_arrow().to_pylist()
    for start, stop in ((b"AA", b"DM"), (b"DL\x00", b"UA\x00\x80"), (b"", b"AA\x00\x7f\xff")):
        opts = {"shape": "wide", "start_row": start, "stop_row": stop}
        assert a.scan(**opts).to_arrow().to_pylist() == b.scan(**opts).to_arrow().to_pylist()
    assert len(cuts) >= 10 and len(set(cuts)) > 3  # the cuts were found from key fields
    # b"UA\x00\x80" and b"AA\x00\x7f\xff" end inside a number: only the records of that
    # carrier in the one row group the bound falls in were encoded
    assert len(encoded) == 2 and all(n <= 200 for n in encoded)


def _shared_twins(root: Path, *, compression: str = "zstd") -> tuple[Any, Any]:
    """Two tables of the same cells, two families of the same rows: cells and columns."""
    wh = cellstore.connect(str(root))
    fams = [Family(name="f", max_versions=1), Family(name="g", max_versions=1)]
    made = [
        wh.create_table(
            layout,
            families=[f.replace(layout=layout, compression=compression) for f in fams],
            row_key=KEY,
            properties=PROPERTIES,
        )
        for layout in ("cells", "columns")
    ]
    f_cells = keyed_cells(600)
    g_cells = f_cells.set_column(1, "family", pa.array(["g"] * f_cells.num_rows))
    for t in made:
        t.load_cells(pa.concat_tables([f_cells, g_cells]))
    a, b = (t.refresh() for t in made)
    return a, b


def test_key_ranges_of_shared_rows_read_the_families_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Families of shared rows cut by a key range read their records at once: the later
    families wait for the first's span only to cut theirs. Every cut agrees with the twin."""
    from concurrent.futures import Future

    from cellstore.reader.columnar import fast as columnar

    waited: list[Any] = []  # the spans the later families waited for
    real = columnar._read_base

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        span = kwargs.get("span")
        if isinstance(span, Future):
            waited.append(span.result())
        return out

    monkeypatch.setattr(columnar, "_read_base", spy)
    cells, cols = _shared_twins(tmp_path)
    for key in (
        {"carrier": "DL"},
        {"carrier": "UA", "n": (10, 90)},
        {"carrier": "AA", "n": (150, 151)},
        {"carrier": "AA", "n": (5000, 6000)},  # nothing in range
    ):
        opts = {"shape": "wide", "column_types": "table", "key": key}
        want = cells.scan(**opts).to_arrow()
        got = cols.scan(**opts).to_arrow()
        assert got.to_pylist() == want.to_pylist(), key
    assert len(waited) >= 3 and any(w is not None for w in waited)


@pytest.mark.timeout(60)
def test_a_failing_first_family_fails_a_key_range_read_of_shared_rows(tmp_path: Path) -> None:
    """The first family's read failing (a damaged page) fails the read with its error,
    naming the file; the families waiting for its span do not hang."""
    from cellstore.storefiles.reader import clear_footer_cache

    _, cols = _shared_twins(tmp_path, compression="none")
    (entry,) = [e for e in cols.files if e.layout == "columns" and e.family == "f"]
    path = Path(cols.file_path(entry))
    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    chunk = meta.row_group(0).column(names.index("tail"))
    assert chunk.has_dictionary_page
    data = bytearray(path.read_bytes())
    data[chunk.dictionary_page_offset + 20] ^= 0xFF
    path.write_bytes(bytes(data))
    clear_footer_cache()
    for _ in range(3):
        with pytest.raises(CorruptFileError) as info:
            cols.scan(shape="wide", column_types="table", key={"carrier": "DL"}).to_arrow()
        assert entry.path in str(info.value)

"""Store files (docs/format.md): write, read by row range, Bloom probes and check()."""

from __future__ import annotations

import json

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cellstore.core.cells import CELL_SCHEMA, sort_indices
from cellstore.core.family import Family
from cellstore.core.regions import Region
from cellstore.errors import CorruptFileError, FormatVersionError
from cellstore.storefiles import StoreFileReader, check, read_store_file, write_store_file
from cellstore.storefiles.footer import FOOTER_KEY


def make_cells(n_rows: int = 2000, quals: int = 3, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = [b"row%06d" % (2 * i) for i in range(n_rows) for _ in range(quals)]  # even rows only
    qs = [b"q%d" % j for _ in range(n_rows) for j in range(quals)]
    n = len(rows)
    ts = rng.integers(1, 10_000, n)
    types = rng.choice([4, 4, 4, 8, 12], n).astype(np.int8)
    values = [b"v%d" % i if t == 4 else b"" for i, t in enumerate(types)]
    t = pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "qualifier": pa.array(qs, pa.binary()),
            "ts": pa.array(ts, pa.int64()),
            "type": pa.array(types, pa.int8()),
            "value": pa.array(values, pa.binary()),
        }
    )
    return t.take(sort_indices(t))


@pytest.fixture
def fs():
    return fsspec.filesystem("file")


def test_write_read_round_trip_and_footer(tmp_path, fs):
    cells = make_cells()
    path = str(tmp_path / "f.parquet")
    info = write_store_file(
        fs, path, cells, family=Family(name="cf"), seq=7, load_id="L1", row_group_cells=1000
    )
    assert info.cells == cells.num_rows
    assert info.rows == 2000
    assert info.first_row == b"row000000" and info.last_row == b"row003998"
    assert info.seq == 7 and info.load_id == "L1" and info.format_version == 1
    assert info.delete_markers == int(np.sum(cells.column("type").to_numpy() != 4))
    assert info.row_groups == 6
    assert info.size == fs.size(path)
    got = read_store_file(fs, path)
    assert got.equals(cells.cast(CELL_SCHEMA))
    with StoreFileReader(fs, path) as r:
        assert r.info.cells == info.cells
        assert r.info.min_ts == info.min_ts and r.info.max_ts == info.max_ts
        md = r.parquet.metadata
        assert md.row_group(0).column(0).is_stats_set
        # Page checksums and sorting columns are declared in the file.
        assert [c.column_index for c in md.row_group(0).sorting_columns] == [0, 1, 2, 3]
        assert md.row_group(0).sorting_columns[2].descending


def test_read_row_range_prunes_row_groups(tmp_path, fs):
    cells = make_cells()
    path = str(tmp_path / "f.parquet")
    write_store_file(
        fs, path, cells, family=Family(name="cf"), seq=1, load_id="L", row_group_cells=600
    )
    with StoreFileReader(fs, path) as r:
        groups = r.row_groups_for(b"row001000", b"row001010")
        assert len(groups) == 1
        got = r.read(start=b"row001000", stop=b"row001010")
    rows = got.column("row").to_pylist()
    assert sorted(set(rows)) == [b"row%06d" % i for i in range(1000, 1010, 2)]
    # start inclusive, stop exclusive
    got = read_store_file(fs, path, start=b"row000002", stop=b"row000004")
    assert set(got.column("row").to_pylist()) == {b"row000002"}
    assert read_store_file(fs, path, start=b"zzz").num_rows == 0
    assert read_store_file(fs, path, stop=b"row000000").num_rows == 0


def test_bloom_filter_answers_absent_rows(tmp_path, fs):
    cells = make_cells(n_rows=5000, quals=1)
    path = str(tmp_path / "f.parquet")
    write_store_file(fs, path, cells, family=Family(name="cf"), seq=1, load_id="L")
    with StoreFileReader(fs, path) as r:
        present = [b"row%06d" % (2 * i) for i in range(0, 5000, 97)]
        assert all(r.might_contain_row(x) for x in present)
        # Odd rows fall inside the row-group ranges; only the Bloom filter rules them out.
        absent = [b"row%06d" % (2 * i + 1) for i in range(2000)]
        false_pos = sum(r.might_contain_row(x) for x in absent)
        assert false_pos < 100  # fpp 1%, so ~20 expected
    nobloom = str(tmp_path / "g.parquet")
    write_store_file(
        fs, nobloom, cells, family=Family(name="cf", bloom_filter=False), seq=1, load_id="L"
    )
    with StoreFileReader(fs, nobloom) as r:
        assert all(r.might_contain_row(x) for x in absent[:50])
        assert not r.might_contain_row(b"zzz")  # outside the statistics


def test_bloom_filter_is_standard_parquet_duckdb_agrees(tmp_path, fs):
    duckdb = pytest.importorskip("duckdb")
    cells = make_cells(n_rows=500, quals=1)
    path = str(tmp_path / "f.parquet")
    write_store_file(fs, path, cells, family=Family(name="cf"), seq=1, load_id="L")
    con = duckdb.connect()
    rows = con.execute(
        "select bloom_filter_excludes from parquet_bloom_probe(?, 'row', ?::BLOB)",
        [path, b"row000002"],
    ).fetchall()
    assert rows and all(excl is False for (excl,) in rows)


@pytest.mark.parametrize("compression", ["zstd", "snappy", "lz4", "gzip", "none"])
def test_every_compression_round_trips(tmp_path, fs, compression):
    cells = make_cells(n_rows=100)
    path = str(tmp_path / f"{compression}.parquet")
    write_store_file(
        fs, path, cells, family=Family(name="cf", compression=compression), seq=1, load_id="L"
    )
    assert read_store_file(fs, path).equals(cells.cast(CELL_SCHEMA))
    assert check(fs, path).ok


def test_check_passes_good_file_and_region(tmp_path, fs):
    cells = make_cells(n_rows=50)
    path = str(tmp_path / "f.parquet")
    write_store_file(fs, path, cells, family=Family(name="cf"), seq=1, load_id="L")
    assert check(fs, path, region=Region("r1", b"", b"")).ok
    report = check(fs, path, region=Region("r2", b"row000010", b"row000020"))
    assert not report.ok
    assert any("before region r2" in p for p in report.problems)
    assert any("not before region r2 end" in p for p in report.problems)


def _write_raw(path, table, footer):
    table = table.replace_schema_metadata({FOOTER_KEY: json.dumps(footer).encode()})
    pq.write_table(table, path, write_page_checksum=True)


def test_check_reports_unsorted_and_footer_mismatch(tmp_path, fs):
    cells = make_cells(n_rows=20)
    good = str(tmp_path / "good.parquet")
    info = write_store_file(fs, good, cells, family=Family(name="cf"), seq=1, load_id="L")
    footer = info.footer_dict()
    swapped = cells.take(pa.array([1, 0, *range(2, cells.num_rows)]))
    bad = str(tmp_path / "unsorted.parquet")
    _write_raw(bad, swapped, footer | {"bloom-filter": "none"})
    report = check(fs, bad)
    assert not report.ok and any("cell order" in p for p in report.problems)
    lying = str(tmp_path / "lying.parquet")
    _write_raw(lying, cells, footer | {"cells": 999, "max-ts": 1, "bloom-filter": "none"})
    problems = check(fs, lying).problems
    assert any("footer cells" in p for p in problems)
    assert any("footer max_ts" in p for p in problems)
    dup = str(tmp_path / "dup.parquet")
    _write_raw(dup, pa.concat_tables([cells.slice(0, 1), cells]), footer | {"bloom-filter": "none"})
    assert any("cell order" in p for p in check(fs, dup).problems)


def test_check_detects_corrupted_page(tmp_path, fs):
    cells = make_cells(n_rows=3000)
    path = str(tmp_path / "f.parquet")
    write_store_file(
        fs, path, cells, family=Family(name="cf", compression="none"), seq=1, load_id="L"
    )
    data = bytearray((tmp_path / "f.parquet").read_bytes())
    md = pq.ParquetFile(path).metadata
    col = md.row_group(0).column(2)  # ts column, plain-encoded pages
    off = col.data_page_offset + 2000  # inside page data, past the header
    data[off] ^= 0xFF
    (tmp_path / "f.parquet").write_bytes(bytes(data))
    report = check(fs, path)
    assert not report.ok
    assert "checksum" in report.problems[0] or "CRC" in report.problems[0]


def test_check_on_missing_or_foreign_file(tmp_path, fs):
    assert not check(fs, str(tmp_path / "nope.parquet")).ok
    foreign = str(tmp_path / "foreign.parquet")
    pq.write_table(pa.table({"x": [1]}), foreign)
    report = check(fs, foreign)
    assert not report.ok and "no cellstore footer" in report.problems[0]
    with pytest.raises(CorruptFileError):
        StoreFileReader(fs, foreign)


def test_newer_format_version_is_refused(tmp_path, fs):
    cells = make_cells(n_rows=5)
    path = str(tmp_path / "f.parquet")
    info = write_store_file(fs, path, cells, family=Family(name="cf"), seq=1, load_id="L")
    future = str(tmp_path / "future.parquet")
    _write_raw(future, cells, info.footer_dict() | {"format-version": 99})
    with pytest.raises(FormatVersionError, match="format version 99"):
        StoreFileReader(fs, future)

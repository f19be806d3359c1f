"""Parquet encodings of the column layout's files (docs/format.md 9 and 14.2).

A column file's writer tries each key and value column's candidate encodings on its
first records and keeps the smallest: integers may be delta-coded
(``DELTA_BINARY_PACKED``), repeating values take dictionaries. The companion cell file
beside a column file (older versions, markers) keeps its rows plain and its values with
their lengths apart, at the column files' zstd level. Readers decode any encoding, so
every read of such files must equal the same cells written as a cell table (the twin),
and every reader must take them: scans in every shape, gets, dictionary-encoded reads
(merges), compactions, verify and Spark's own Parquet reader (tests/test_spark.py).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cellstore
from cellstore.core.family import Family
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.jobs import verify
from cellstore.jobs.compact import compact
from cellstore.loader import LoadMapping
from cellstore.storefiles import StoreFileReader
from cellstore.storefiles.columnenc import COLUMN_ZSTD_LEVEL, COMPANION_ENCODING
from cellstore.storefiles.writer import CELL_ENCODING, write_store_file

SPEC = RowKeySpec(
    fields=(
        *(
            KeyField(name=name, type=kind)  # type: ignore[arg-type]
            for name, kind in (("carrier", "string"), ("date", "int32"), ("flight", "int32"))
        ),
        KeyField(name="origin"),
    )
)
#: Column -> (family, codec): doubles, ordered and random integers, repeating strings.
COLUMNS = {
    "dep_delay": ("d", "double"),
    "distance": ("d", "double"),
    "dep_time": ("d", "int"),
    "serial": ("d", "long"),
    "tailnum": ("i", "string"),
    "dest": ("i", "string"),
    "month": ("i", "int"),
}
AIRPORTS = np.array(["ATL", "BOS", "DEN", "JFK", "LAX", "ORD", "SFO"])
TS = 1_700_000_000_000


def flights(n: int, seed: int = 0) -> pa.Table:
    """``n`` flight-like records in key order: up to 60 flights a carrier and day."""
    rng = np.random.default_rng(seed)
    block = np.arange(n) // 60  # one (carrier, day) per block: keys are unique
    day = block // 3  # below 336
    month = day % 12 + 1
    where = rng.integers(0, len(AIRPORTS), n)
    return pa.table(
        {
            "carrier": pa.array(np.array(["AA", "DL", "UA"])[block % 3]),
            "date": pa.array((20240000 + month * 100 + day // 12 + 1).astype(np.int32)),
            "flight": pa.array((np.arange(n) % 60 * 13 + rng.integers(1, 13, n)).astype(np.int32)),
            "origin": pa.array(AIRPORTS[where]),
            "dep_delay": pa.array(np.round(rng.normal(10, 30, n), 1), mask=rng.random(n) < 0.03),
            "distance": pa.array(np.round(rng.uniform(100, 3000, n), 0)),
            "dep_time": pa.array(rng.integers(0, 2400, n).astype(np.int32)),
            "serial": pa.array(np.arange(n, dtype=np.int64) * 7 + 1_000_000),
            "tailnum": pa.array([f"N{x}" for x in rng.integers(100, 999, n)]),
            "dest": pa.array(AIRPORTS[(where + 1) % len(AIRPORTS)]),
            "month": pa.array(month.astype(np.int32)),
            "ts": pa.array(np.full(n, TS)),
        }
    ).sort_by([("carrier", "ascending"), ("date", "ascending"), ("flight", "ascending")])


def mapping() -> LoadMapping:
    return LoadMapping.simple(
        row_key=SPEC,
        columns=[f"{fam}:{col}={col}:{codec}" for col, (fam, codec) in COLUMNS.items()],
        timestamp="ts",
    )


def twins(root: str, compression: str = "zstd") -> tuple[Any, Any]:
    """A cells table and an ``auto`` table of the same families (3 versions kept).

    One region: a fresh ``auto`` region-family takes column files from 4,096 rows on.
    """
    wh = cellstore.connect(root)
    out = []
    for layout in ("cells", "auto"):
        out.append(
            wh.create_table(
                f"f_{layout}",
                families=[
                    Family(name=f, max_versions=3, compression=compression, layout=layout)
                    for f in ("d", "i")
                ],
                row_key=SPEC,
            )
        )
    return out[0], out[1]


def load(tables: tuple[Any, ...], data: pa.Table) -> None:
    for t in tables:
        t.load(data, mapping=mapping(), key_advice="off")


def encodings(path: str) -> dict[str, set[str]]:
    """Each column's data encodings in a Parquet file (levels' RLE left out)."""
    md = pq.ParquetFile(path).metadata
    out: dict[str, set[str]] = {}
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(g).column(c)
            out.setdefault(col.path_in_schema, set()).update(col.encodings)
    for found in out.values():
        if found != {"RLE"}:
            found.discard("RLE")
        if "RLE_DICTIONARY" in found:
            found.discard("PLAIN")  # a dictionary page is PLAIN
    return out


def chunk_bytes(path: Any, name: str) -> int:
    md = pq.ParquetFile(path).metadata
    at = md.schema.names.index(name)
    return sum(md.row_group(g).column(at).total_compressed_size for g in range(md.num_row_groups))


def written_alone(col: pa.ChunkedArray, compression: str, **options: Any) -> int:
    """Bytes of ``col`` as a one-column file's chunk, compressed as column files are."""
    sink = io.BytesIO()
    pq.write_table(
        pa.table({"c": col}),
        sink,
        compression=compression,
        compression_level=COLUMN_ZSTD_LEVEL if compression == "zstd" else None,
        write_statistics=True,  # page headers as the file's (statistics, checksums)
        write_page_checksum=True,
        **options,
    )
    return chunk_bytes(pa.BufferReader(sink.getvalue()), "c")


def assert_same_reads(a: Any, b: Any) -> None:
    a, b = a.refresh(), b.refresh()
    for opts in (
        {},
        {"max_versions": 3},
        {"max_versions": 5, "raw": True},
        {"shape": "wide", "column_types": "table"},
        {"shape": "wide", "column_types": "table", "key": {"carrier": "DL"}},
        {"shape": "wide", "columns": ["d:serial", "i:month"], "reversed": True},
    ):
        got, want = b.scan(**opts).to_arrow(), a.scan(**opts).to_arrow()
        assert got.to_pylist() == want.to_pylist(), opts
    row = a.scan(limit=1).to_arrow().column("row")[0].as_py()
    assert a.get(row) == b.get(row)


@pytest.mark.parametrize("compression", ["zstd", "snappy", "none"])
def test_integers_take_the_smallest_encoding_tried(tmp_path: Path, compression: str) -> None:
    """Each integer key and value column of a column file is no larger than plain or a
    dictionary would make it (the trial's choice, on a file of one trial's size); ordered
    integers (a key's trailing field, a serial number) are delta-coded, repeating strings
    take dictionaries; every read equals the cells twin's and verify finds nothing."""
    a, b = twins(str(tmp_path), compression)
    data = flights(9000)
    load((a, b), data)
    files = [e for e in b.refresh().files if e.layout == "columns"]
    assert len(files) == 2  # one per family
    for entry in files:
        path = b.file_path(entry)
        table = pq.read_table(path)
        assert table.num_rows <= 16384  # one row group: one trial's records
        found = encodings(path)
        if compression != "none":
            assert found["__key:flight"] == {"DELTA_BINARY_PACKED"}
        assert found["__key:origin"] == {"RLE_DICTIONARY"}
        if entry.family == "d":
            if compression != "none":
                assert found["serial"] == {"DELTA_BINARY_PACKED"}
        else:
            assert found["dest"] == {"RLE_DICTIONARY"}
        for name in table.schema.names:
            col = table.column(name)
            if name.startswith("__ts") or not pa.types.is_integer(col.type):
                continue
            # (the trial sees the first records the writer holds: a few bytes may differ)
            mine = chunk_bytes(path, name)
            for dictionary in (False, True):
                other = written_alone(col, compression, use_dictionary=dictionary)
                assert mine <= 1.01 * other + 4, (name, dictionary)
    assert_same_reads(a, b)
    wide = b.scan(shape="wide", column_types="table", key_columns=False).to_arrow()
    assert wide.column("d:serial").to_pylist() == data.column("serial").to_pylist()
    assert wide.column("i:month").to_pylist() == data.column("month").to_pylist()
    assert verify(b).ok, verify(b).to_dict()


def updated_and_compacted(root: str) -> tuple[Any, Any]:
    """Twins loaded, a tenth of the records rewritten later, then major compacted."""
    a, b = twins(root)
    data = flights(5000)
    load((a, b), data)
    later = data.filter(pa.array(np.arange(len(data)) % 10 == 0))
    later = later.set_column(
        later.schema.get_field_index("ts"), "ts", pa.array([TS + 5] * len(later))
    )
    later = later.set_column(
        later.schema.get_field_index("dep_time"),
        "dep_time",
        pa.array(np.arange(len(later), dtype=np.int32) % 2400),
    )
    load((a, b), later)
    for t in (a, b):
        compact(t, major=True)
    return a, b


def test_companion_cell_files_are_encoded_smaller_and_read_by_every_reader(
    tmp_path: Path,
) -> None:
    """After a major compaction the rewritten records' older versions are in companion
    cell files: rows plain (no dictionary), values with DELTA_LENGTH_BYTE_ARRAY, smaller
    than the same cells written as any other cell file; scans (versions, raw, wide), gets,
    a dictionary-encoded read of their rows, a later minor compaction and verify agree
    with the cells twin."""
    a, b = updated_and_compacted(str(tmp_path))
    entries = b.refresh().files
    companions = [e for e in entries if e.layout == "cells"]
    assert {e.layout for e in entries} == {"cells", "columns"} and len(companions) == 2
    for entry in companions:
        path = b.file_path(entry)
        found = encodings(path)
        assert found["row"] == {"PLAIN"}
        assert found["qualifier"] == {"RLE_DICTIONARY"}
        assert found["value"] == {"DELTA_LENGTH_BYTE_ARRAY"}
        reader = StoreFileReader(b.fs, path)
        groups = [g.index for g in reader.row_groups()]
        plain = reader.read_row_groups(groups)
        coded = reader.read_row_groups(groups, encoded=True)
        assert pa.types.is_dictionary(coded.schema.field("row").type)
        assert coded.column("row").cast(pa.binary()).equals(plain.column("row"))
        other = tmp_path / "other.parquet"
        family = next(f for f in b.families if f.name == entry.family)
        write_store_file(b.fs, str(other), plain, family=family, seq=1, load_id="t")
        assert CELL_ENCODING != COMPANION_ENCODING
        assert entry.size < other.stat().st_size
        other.unlink()
    assert_same_reads(a, b)
    assert verify(b).ok, verify(b).to_dict()
    # a later load and a minor compaction merge the companions' cells again
    load((a, b), flights(5000).slice(0, 50))
    for t in (a, b):
        compact(t)
    assert_same_reads(a, b)
    assert verify(b).ok, verify(b).to_dict()


def test_a_region_family_left_in_cells_writes_ordinary_cell_files(tmp_path: Path) -> None:
    """An ``auto`` region-family too small for a column file (fewer than 4,096 rows) keeps
    its cells in cell files with the cell encoding (rows and qualifiers as dictionaries,
    values plain), not the companion's: such files are merged like any cell file."""
    _, b = twins(str(tmp_path))
    b.load(flights(500), mapping=mapping(), key_advice="off")
    entries = b.refresh().files
    assert entries and {e.layout for e in entries} == {"cells"}
    for entry in entries:
        found = encodings(b.file_path(entry))
        assert found["row"] == found["qualifier"] == {"RLE_DICTIONARY"}
        assert found["value"] == {"PLAIN"}

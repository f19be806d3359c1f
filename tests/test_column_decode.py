"""Column files' text columns read through their dictionaries (storefiles/decode.py).

The records a reader returns are those of a dense read, value for value and type for
type (nulls, binary, several row groups with their own dictionaries); a column with a
plain-encoded row group is read dense; a damaged dictionary page is a ``CorruptFileError``
naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.core.family import Family
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import CorruptFileError
from cellstore.storefiles import StoreFileReader
from cellstore.storefiles.decode import as_dense, dictionary_columns
from cellstore.storefiles.reader import clear_footer_cache

KEY = RowKeySpec(fields=(KeyField(name="carrier"), KeyField(name="n", type="int32")))


def _parquet(path: Path, **options: Any) -> pa.Table:
    """Three row groups: ``s`` (a dictionary in every group, nulls), ``b`` (binary, a
    dictionary), ``p`` (plain), ``x`` (numbers)."""
    n = 300
    table = pa.table(
        {
            "s": pa.array([None if i % 7 == 0 else f"v{i % 5}" for i in range(n)]),
            "b": pa.array([bytes([i % 3, 0, 255]) for i in range(n)], pa.binary()),
            "p": pa.array([f"p{i}" for i in range(n)]),
            "x": pa.array(range(n), pa.int64()),
        }
    )
    pq.write_table(table, path, row_group_size=100, use_dictionary=["s", "b"], **options)
    return table


def test_dictionary_columns_are_the_text_columns_with_a_dictionary_in_every_group(
    tmp_path: Path,
) -> None:
    _parquet(tmp_path / "a.parquet")
    assert dictionary_columns(pq.ParquetFile(tmp_path / "a.parquet").metadata) == {"s", "b"}
    pq.write_table(
        pq.read_table(tmp_path / "a.parquet"), tmp_path / "p.parquet", use_dictionary=False
    )
    assert dictionary_columns(pq.ParquetFile(tmp_path / "p.parquet").metadata) == set()


@pytest.mark.parametrize(
    "options", [{}, {"dictionary_pagesize_limit": 8}], ids=["dict", "fallback"]
)
def test_as_dense_gives_the_dense_read(tmp_path: Path, options: dict[str, Any]) -> None:
    """Also where the writer fell back to plain pages after a small dictionary page."""
    path = tmp_path / "a.parquet"
    table = _parquet(path, **options)
    dense = pq.read_table(path)
    assert dense.equals(table)
    text = dictionary_columns(pq.ParquetFile(path).metadata)
    read = pq.ParquetFile(path, read_dictionary=sorted(text)).read()
    assert pa.types.is_dictionary(read.schema.field("s").type)
    assert read.column("s").num_chunks == 3  # one dictionary per row group
    got = as_dense(read, text)
    assert got.equals(dense)
    assert got.schema == dense.schema
    assert all(got.column(name).num_chunks == 1 for name in text)
    empty = pq.ParquetFile(path, read_dictionary=["s"]).read_row_groups([], columns=["s"])
    assert as_dense(empty, ["s"]).schema.field("s").type == pa.string()


def _keyed_table(root: Path) -> Any:
    """A keyed column table: string key field, a string and a double column (nulls)."""
    wh = cellstore.connect(str(root))
    t = wh.create_table(
        "t",
        families=[Family(name="f", layout="columns", compression="none")],
        row_key=KEY,
        properties={
            "mapping.codecs": json.dumps({"columns": {"f:tail": "string", "f:dep": "double"}})
        },
    )
    n = 3000
    records = pa.table(
        {
            "carrier": [["AA", "DL", "UA"][i % 3] for i in range(n)],
            "n": pa.array(range(n), pa.int32()),
            "tail": [None if i % 11 == 0 else f"N{i % 97}" for i in range(n)],
            "dep": [float(i) for i in range(n)],
        }
    )
    mapping = {
        "cells": [
            {"family": "f", "qualifier": "tail", "value": "tail", "codec": "string"},
            {"family": "f", "qualifier": "dep", "value": "dep", "codec": "double"},
        ]
    }
    t.load(records, mapping=mapping, key_advice="off")
    return wh.table("t")


def test_read_records_equal_a_dense_read_of_the_file(tmp_path: Path) -> None:
    t = _keyed_table(tmp_path / "wh")
    (entry,) = [e for e in t.files if e.layout == "columns"]
    path = t.file_path(entry)
    text = dictionary_columns(pq.ParquetFile(path).metadata)
    assert {"__key:carrier", "tail"} <= text  # the dictionary path is taken
    columns = ["__key:carrier", "__key:n", "tail", "dep"]
    with StoreFileReader(fsspec.filesystem("file"), path, entry=entry) as reader:
        groups = list(range(reader.info.row_groups))
        got = reader.read_records(groups, columns=columns)
        part = reader.read_records(groups[1:], columns=["tail"])
    want = pq.read_table(path, columns=columns).replace_schema_metadata(None)
    assert got.equals(want)
    assert got.schema == want.schema
    assert (
        part.column("tail").to_pylist() == want.column("tail").to_pylist()[len(want) - len(part) :]
    )
    wide = t.scan(shape="wide", column_types="table").to_arrow()
    assert wide.column("f:tail").to_pylist() == want.column("tail").to_pylist()
    assert wide.schema.field("f:tail").type == pa.string()


def test_records_read_sparse_decode_after_a_cut_as_a_dense_read(tmp_path: Path) -> None:
    """``read_records(dense=False)`` keeps dictionary-read text columns as dictionaries
    (a key-range read decodes only what it keeps), except the key columns ``__row`` is
    encoded from; decoded after a cut they are the dense read's values; a key-range wide
    read gives the cells twin's answer."""
    t = _keyed_table(tmp_path / "wh")
    (entry,) = [e for e in t.files if e.layout == "columns"]
    path = t.file_path(entry)
    with StoreFileReader(fsspec.filesystem("file"), path, entry=entry) as reader:
        groups = list(range(reader.info.row_groups))
        dense = reader.read_records(groups, columns=["__key:carrier", "tail", "dep"])
        sparse = reader.read_records(groups, columns=["__key:carrier", "tail"], dense=False)
        rows = reader.read_records(groups, columns=["__row", "tail"], dense=False)
    assert pa.types.is_dictionary(sparse.schema.field("tail").type)
    assert pa.types.is_dictionary(sparse.schema.field("__key:carrier").type)
    assert not pa.types.is_dictionary(rows.schema.field("__key:carrier").type)
    cut = as_dense(sparse.slice(100, 500), sparse.column_names)
    assert cut.equals(dense.select(["__key:carrier", "tail"]).slice(100, 500))
    got = t.scan(shape="wide", column_types="table", key={"carrier": "DL"}).to_arrow()
    assert got.column("f:tail").to_pylist() == [
        v
        for c, v in zip(
            dense.column("__key:carrier").to_pylist(), dense.column("tail").to_pylist(), strict=True
        )
        if c == "DL"
    ]


def test_a_damaged_dictionary_page_is_a_corrupt_file_naming_it(tmp_path: Path) -> None:
    t = _keyed_table(tmp_path / "wh")
    (entry,) = [e for e in t.files if e.layout == "columns"]
    path = Path(t.file_path(entry))
    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    chunk = meta.row_group(0).column(names.index("tail"))
    assert chunk.has_dictionary_page
    at = chunk.dictionary_page_offset + 20  # inside the dictionary page's values
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    clear_footer_cache()
    with pytest.raises(CorruptFileError) as info:
        t.scan(shape="wide", column_types="table").to_arrow()
    assert entry.path in str(info.value)


@pytest.mark.parametrize("where", ["base", "delta"])
def test_an_undecodable_value_names_its_row_as_the_cells_path_does(
    tmp_path: Path, where: str
) -> None:
    """A value its column's codec cannot decode fails a typed wide read with the same
    error in both layouts: the row (printable) and the column, not a record index."""
    import struct

    from cellstore.core.cells import CellType
    from cellstore.errors import BadCellError
    from strategies import cells_table

    def cells(rows: list[bytes], values: list[bytes], ts: int) -> pa.Table:
        put = int(CellType.PUT)
        return cells_table([(r, "f", b"q", ts, put, v) for r, v in zip(rows, values, strict=True)])

    wh = cellstore.connect(str(tmp_path))
    bad = b"xyz" if where == "base" else struct.pack(">q", 2)
    messages = []
    for layout in ("cells", "columns"):
        t = wh.create_table(
            layout,
            families=[Family(name="f", layout=layout)],
            properties={"mapping.codecs": json.dumps({"columns": {"f:q": "long"}})},
        )
        good = [struct.pack(">q", i) for i in (1, 3)]
        t.load_cells(cells([b"a", b"b\x01", b"c"], [good[0], bad, good[1]], 5))
        if where == "delta":
            t.load_cells(cells([b"b\x01"], [b"abc"], 9))
        with pytest.raises(BadCellError) as info:
            t.refresh().scan(shape="wide", column_types="table").to_arrow()
        messages.append(str(info.value))
        nulled = t.refresh().scan(shape="wide", column_types="table", decode_errors="null")
        assert nulled.to_arrow().column("f:q").to_pylist() == [1, None, 3]
    assert messages[0] == messages[1]
    assert messages[1].startswith("row b\\x01: value of f:q is not a valid long")


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_as_dense_equals_arrow_cast_for_any_dictionary_chunks(data: st.DataObject) -> None:
    """``as_dense`` gives what Arrow's cast of the concatenated chunks gives: dictionaries
    of one entry length (decoded by the compiled copy), of mixed lengths, empty entries,
    nulls among the indices, sliced chunks and dictionaries, binary and string alike.
    (Parquet dictionaries hold no null entry.)"""
    kind = data.draw(st.sampled_from([pa.string(), pa.binary()]))
    width = data.draw(st.integers(0, 4))
    same = data.draw(st.booleans())
    entry = st.text(alphabet="ab\u00e9", min_size=width, max_size=width)
    if not same:
        entry = st.text(alphabet="ab", max_size=4)
    chunks = []
    for _ in range(data.draw(st.integers(1, 3))):
        words = data.draw(st.lists(entry, min_size=1, max_size=5, unique=True))
        cut = data.draw(st.integers(0, 1))
        dictionary = pa.array(["z" * width] * cut + words, pa.string()).cast(kind).slice(cut)
        n = data.draw(st.integers(0, 12))
        picks = data.draw(st.lists(st.integers(0, len(words) - 1), min_size=n, max_size=n))
        mask = [data.draw(st.integers(0, 8)) == 0 for _ in picks]
        indices = pa.array([0, *picks], pa.int32(), mask=[False, *mask]).slice(1)
        chunks.append(pa.DictionaryArray.from_arrays(indices, dictionary))
    field = pa.field("s", pa.dictionary(pa.int32(), kind))
    table = pa.Table.from_batches([pa.record_batch([c], schema=pa.schema([field])) for c in chunks])
    got = as_dense(table, ["s"]).column("s")
    want = pa.concat_arrays([c.cast(kind) for c in chunks])
    assert got.num_chunks == 1
    got.chunk(0).validate(full=True)
    assert got.type == kind and got.chunk(0).equals(want)

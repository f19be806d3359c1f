"""Pure core: type codes (R1.2), sort order (R2.1), names (R15.3, R16.3), families (R15)."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellstore.core.cells import (
    CellType,
    equal_key_runs,
    first_unsorted_index,
    sort_indices,
)
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.core.keys import from_string_binary, to_string_binary
from cellstore.core.names import TableName, validate_family_name
from cellstore.errors import InvalidFamilyError, InvalidNameError


def test_type_codes_are_hbase_codes_r1_2():
    assert [int(t) for t in CellType] == [4, 8, 10, 12, 14]
    assert CellType.PUT.hbase_name == "Put"
    assert CellType.parse("DeleteFamilyVersion") is CellType.DELETE_FAMILY_VERSION
    assert CellType.parse("delete_column") is CellType.DELETE_COLUMN
    assert CellType.parse(14) is CellType.DELETE_FAMILY
    with pytest.raises(ValueError):
        CellType.parse("Increment")


def _table(cells):
    rows, quals, ts, types = zip(*cells, strict=True)
    return pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "qualifier": pa.array(quals, pa.binary()),
            "ts": pa.array(ts, pa.int64()),
            "type": pa.array(types, pa.int8()),
            "value": pa.array([b""] * len(rows), pa.binary()),
        }
    )


def _hbase_key(cell):
    row, q, ts, t = cell
    return (row, q, -ts, -t)


cell_st = st.tuples(
    st.binary(min_size=1, max_size=3),
    st.binary(max_size=2),
    st.integers(0, 5),
    st.sampled_from([4, 8, 10, 12, 14]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(cell_st, min_size=1, max_size=40))
def test_sort_order_matches_hbase_comparator_r2_1(cells):
    # R2.1: row asc (unsigned bytes, prefix first), qualifier asc, ts desc, type desc.
    table = _table(cells)
    got = table.take(sort_indices(table))
    expected = sorted(cells, key=_hbase_key)
    assert (
        list(
            zip(
                got.column("row").to_pylist(),
                got.column("qualifier").to_pylist(),
                got.column("ts").to_pylist(),
                got.column("type").to_pylist(),
                strict=True,
            )
        )
        == expected
    )
    assert first_unsorted_index(got, strict=False) is None


def test_unsigned_bytes_and_prefix_first_r2_1():
    table = _table(
        [(b"\xff", b"", 1, 4), (b"a", b"", 1, 4), (b"ab", b"", 1, 4), (b"a\x00", b"", 1, 4)]
    )
    got = table.take(sort_indices(table)).column("row").to_pylist()
    assert got == [b"a", b"a\x00", b"ab", b"\xff"]


def test_markers_sort_before_put_at_same_ts_r2_2():
    table = _table([(b"r", b"", 5, 4), (b"r", b"", 5, 14), (b"r", b"", 6, 4), (b"r", b"", 5, 10)])
    got = table.take(sort_indices(table))
    assert got.column("ts").to_pylist() == [6, 5, 5, 5]
    assert got.column("type").to_pylist() == [4, 14, 10, 4]


def test_first_unsorted_and_equal_runs():
    table = _table([(b"a", b"q", 5, 4), (b"a", b"q", 5, 4), (b"a", b"q", 6, 4)])
    assert first_unsorted_index(table, strict=True) == 1
    assert first_unsorted_index(table, strict=False) == 2
    assert equal_key_runs(table).tolist() == [False, True, False]


def test_sort_is_stable_for_equal_keys():
    n = 50
    table = _table([(b"r", b"q", 1, 4)] * n).set_column(
        4, "value", pa.array([str(i).encode() for i in range(n)])
    )
    idx = list(range(n))
    random.shuffle(idx)
    shuffled = table.take(pa.array(idx))
    got = shuffled.take(sort_indices(shuffled)).column("value").to_pylist()
    assert got == shuffled.column("value").to_pylist()


# ----------------------------------------------------------------- names R16.3
@pytest.mark.parametrize(
    ("name", "ns", "q"),
    [
        ("t1", "default", "t1"),
        ("ns1:t-1.x_y", "ns1", "t-1.x_y"),
        ("données:таблица", "données", "таблица"),
        ("_:_", "_", "_"),
    ],
)
def test_valid_table_names_r16_3(name, ns, q):
    tn = TableName.parse(name)
    assert (tn.namespace, tn.qualifier) == (ns, q)


@pytest.mark.parametrize(
    "name",
    [
        "",
        ":t",
        "ns:",
        "a:b:c",
        ".t",
        "-t",
        "ns:.t",
        "t/x",
        "..",
        "../etc",
        "t\x00",
        "n-s:t",
        "zookeeper",
        "ns:zookeeper",
        "hbase:meta",
        "t x",
        "t\\x",
        "a" * 256,
    ],
)
def test_invalid_table_names_r16_3(name):
    with pytest.raises(InvalidNameError):
        TableName.parse(name)


def test_table_name_str_drops_default_namespace():
    assert str(TableName.parse("default:t")) == "t"
    assert str(TableName.parse("ns:t")) == "ns:t"
    assert TableName.parse("t").full == "default:t"


@pytest.mark.parametrize("name", ["cf", "a b", "f.1", "数据", "x" * 127])
def test_valid_family_names_r15_3(name):
    assert validate_family_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", ".cf", "a:b", "a/b", "a\\b", "a\x00b", "a\nb", "recovered.edits", "x" * 128, "é" * 64],
)
def test_invalid_family_names_r15_3(name):
    with pytest.raises(InvalidNameError):
        validate_family_name(name)


# ---------------------------------------------------------------- family R15
def test_family_defaults_r15_1():
    f = Family(name="cf")
    assert f.max_versions == 3  # the schema-design guides' default (HBase 2 uses 1)
    assert f.min_versions == 0
    assert f.ttl is None and f.ttl_ms is None
    assert f.keep_deleted_cells is KeepDeletedCells.FALSE
    assert f.compression == "zstd"
    assert f.bloom_filter is True
    assert f.block_size == 65536


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_versions": 0},
        {"max_versions": -1},
        {"min_versions": -1},
        {"max_versions": 2, "min_versions": 3},
        {"ttl": 0},
        {"ttl": -5},
        {"ttl": 1.5},
        {"compression": "lzo"},
        {"keep_deleted_cells": "maybe"},
        {"block_size": 10},
        {"max_versions": "3"},
        {"bloom_filter": "yes"},
    ],
)
def test_family_validation_r15_2(kwargs):
    with pytest.raises(InvalidFamilyError):
        Family(name="cf", **kwargs)


def test_family_forever_ttl_normalised_r8_1():
    assert Family(name="cf", ttl=2**31 - 1).ttl is None
    assert Family(name="cf", ttl=-1).ttl is None
    assert Family(name="cf", ttl=60).ttl_ms == 60_000


def test_family_round_trip_and_replace():
    f = Family(
        name="cf",
        max_versions=5,
        min_versions=1,
        ttl=3600,
        keep_deleted_cells="ttl",
        compression="SNAPPY",
        bloom_filter=False,
        block_size=4096,
    )
    assert Family.from_dict(f.to_dict()) == f
    assert f.compression == "snappy"
    g = f.replace(ttl=7200)
    assert g.ttl == 7200 and g.max_versions == 5
    with pytest.raises(InvalidFamilyError):
        f.replace(min_versions=6)


# -------------------------------------------------------------- printable keys
@given(st.binary(max_size=30))
def test_string_binary_round_trip(data):
    assert from_string_binary(to_string_binary(data)) == data


def test_string_binary_matches_hbase_escaping():
    assert to_string_binary(b"row-1 \x00\xff\\") == "row-1 \\x00\\xFF\\x5C"
    assert from_string_binary("a\\x00b") == b"a\x00b"


def test_numpy_is_not_used_for_binary_comparison():
    # numpy 'S' dtype strips trailing NULs; the sort must not (b"a" < b"a\x00").
    assert np.array([b"a\x00"], dtype="S")[0] == b"a"  # the pitfall exists...
    table = _table([(b"a\x00", b"", 1, 4), (b"a", b"", 1, 4)])
    assert table.take(sort_indices(table)).column("row").to_pylist() == [b"a", b"a\x00"]

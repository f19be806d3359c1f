"""The wide output shape with typed decoding, salted-table fan-out, memory-budget task
splitting and the Dask side of both. Rule numbers refer to docs/hbase-semantics.md."""

from __future__ import annotations

import itertools
import pickle
import struct

import pyarrow as pa
import pytest

from cellstore.errors import BadCellError, InvalidArgumentError
from cellstore.warehouse import connect
from strategies import cells_table

PUT, DELETE = 4, 8


@pytest.fixture
def web(memory_root):
    t = connect(memory_root).create_table(
        "web", families=[{"name": "basic", "max_versions": 3}, "meta"], splits=[b"m"]
    )
    t.load_cells(
        cells_table(
            [
                (b"a.com", "basic", b"views", 1, PUT, struct.pack(">q", 10)),
                (b"a.com", "basic", b"views", 2, PUT, struct.pack(">q", 11)),
                (b"a.com", "basic", b"author", 1, PUT, "Ann é".encode()),
                (b"a.com", "meta", b"ok", 1, PUT, b"\xff"),
                (b"z.org", "basic", b"views", 1, PUT, struct.pack(">q", -5)),
                (b"z.org", "basic", b"score", 1, PUT, struct.pack(">d", 0.5)),
            ]
        )
    )
    return t


def test_wide_shape_latest_values_and_hbase_column_order(web):
    got = web.scan(shape="wide").to_arrow()
    assert got.column_names == ["row", "basic:author", "basic:score", "basic:views", "meta:ok"]
    d = got.to_pydict()
    assert d["row"] == [b"a.com", b"z.org"]
    assert d["basic:views"] == [struct.pack(">q", 11), struct.pack(">q", -5)]
    assert d["basic:author"] == ["Ann é".encode(), None]


def test_wide_shape_typed_decoding(web):
    types = {
        "basic:views": "int64",
        "basic:author": "string",
        "basic:score": "double",
        "meta:ok": "boolean",
    }
    got = web.scan(shape="wide", column_types=types).to_arrow()
    assert got.schema.field("basic:views").type == pa.int64()
    assert got.to_pydict() == {
        "row": [b"a.com", b"z.org"],
        "basic:author": ["Ann é", None],
        "basic:score": [None, 0.5],
        "basic:views": [11, -5],
        "meta:ok": [True, None],
    }


def test_wide_shape_explicit_columns_keep_order_and_missing_columns(web):
    got = web.scan(
        shape="wide", columns=["basic:views", "basic:nothing"], column_types={"basic:views": "long"}
    ).to_arrow()
    assert got.column_names == ["row", "basic:views", "basic:nothing"]
    assert got.to_pydict()["basic:nothing"] == [None, None]


def test_wide_decode_errors(web):
    with pytest.raises(
        BadCellError, match=r"row a\.com: value of basic:author is not a valid long"
    ):
        web.scan(shape="wide", column_types={"basic:author": "long"}).to_arrow()
    got = web.scan(shape="wide", column_types={"basic:author": "long"}, decode_errors="null")
    assert got.to_arrow().to_pydict()["basic:author"] == [None, None]


def test_wide_shape_validation(web):
    with pytest.raises(InvalidArgumentError, match="raw"):
        web.scan(shape="wide", raw=True)
    with pytest.raises(InvalidArgumentError, match="wide shape only"):
        web.scan(column_types={"basic:views": "long"})
    with pytest.raises(InvalidArgumentError, match="unknown shape"):
        web.scan(shape="tall")


def test_wide_to_pandas_and_limit(web):
    df = web.scan(shape="wide", column_types={"basic:views": "long"}, limit=1).to_pandas()
    assert list(df["row"]) == [b"a.com"]
    assert int(df["basic:views"].iloc[0]) == 11


# ---------------------------------------------------------------- salted tables


@pytest.fixture
def salted(memory_root):
    t = connect(memory_root).create_table("s", families=["cf"], salt_buckets=4)
    data = []
    for i in range(40):  # logical keys: load_cells adds each key's salt byte
        key = b"user%02d" % i
        data.append((key, "cf", b"q", 1, PUT, b"v%d" % i))
    t.load_cells(cells_table(data))
    return t


def test_salted_scan_fans_out_per_bucket_and_strips_salt(salted):
    scan = salted.scan(row_prefix="user1")
    tasks = scan.plan()
    assert len(tasks) == 4  # one range per salt bucket
    assert {t.start[:1] for t in tasks} == {bytes([b]) for b in range(4)}
    got = scan.to_arrow().column("row").to_pylist()
    assert sorted(got) == [b"user%02d" % i for i in range(10, 20)]
    assert scan.divisions() is None  # bucket by bucket: not in global key order
    rng = salted.scan(start_row="user05", stop_row="user08").to_arrow().column("row")
    assert sorted(rng.to_pylist()) == [b"user05", b"user06", b"user07"]
    assert salted.scan().count_rows() == 40


# ---------------------------------------------------------------- memory budget


def test_memory_budget_splits_large_regions_at_row_boundaries(tmp_path):
    t = connect(tmp_path).create_table("big", families=["cf"])
    data = [
        (b"row%05d" % i, "cf", b"q%d" % j, 1, PUT, b"x" * 50) for i in range(3000) for j in range(3)
    ]
    t.load_cells(cells_table(data), row_group_cells=1000)
    whole = t.scan().plan()
    assert len(whole) == 1
    scan = t.scan(memory_budget=40_000)
    tasks = scan.plan()
    assert len(tasks) > 3
    assert tasks[0].start == b"" and tasks[-1].stop == b""
    for a, b in itertools.pairwise(tasks):
        assert a.stop == b.start  # contiguous, cut at row keys
    assert pickle.loads(pickle.dumps(tasks)) == tasks
    assert scan.to_arrow().equals(t.scan().to_arrow())
    batches = list(scan.to_batches())
    assert len(batches) == len(tasks)
    assert max(b.num_rows for b in batches) < 9000
    assert t.scan(memory_budget=40_000, reversed=True).count_rows() == 3000


def test_memory_budget_cuts_overlapping_files_where_their_row_groups_end(tmp_path):
    """Two loads of interleaved rows (every row group of one overlaps one of the other):
    pieces are cut only where a row group ends, so none holds a single row and each
    holds about one row group of each file (a cut one row after a group's first row made
    a one-row piece and left the rest of the store whole)."""
    t = connect(tmp_path).create_table("mixed", families=["cf"])
    for parity in (0, 1):
        data = [
            (b"row%05d" % i, "cf", b"q", 1, PUT, b"x" * 50) for i in range(3000) if i % 2 == parity
        ]
        t.load_cells(cells_table(data), row_group_cells=300)
    scan = t.scan(memory_budget=40_000)
    tasks = scan.plan()
    assert len(tasks) > 3
    counts = [b.num_rows for b in scan.to_batches()]
    assert sum(counts) == 3000 and min(counts) >= 300, counts
    assert scan.to_arrow().equals(t.scan().to_arrow())


def test_memory_budget_validation(web):
    with pytest.raises(InvalidArgumentError, match="memory_budget"):
        web.scan(memory_budget=0)


def test_salted_get_computes_the_salt(memory_root):
    from model import salted

    t = connect(memory_root).create_table("g", families=["cf"], salt_buckets=8)
    keys = [b"user%02d" % i for i in range(20)]
    t.load_cells(  # salted with Phoenix's formula, independently of the code under test
        cells_table([(salted(k, 8), "cf", b"q", 1, PUT, k) for k in keys]),
        keys="physical",  # already salted: verified, not salted again
    )
    got = t.get("user07")
    assert got.column("row").to_pylist() == [b"user07"]
    assert got.column("value").to_pylist() == [b"user07"]
    assert t.get("nobody").num_rows == 0


# ---------------------------------------------------------------- row-key spec on reads


@pytest.fixture(params=[None, 4], ids=["unsalted", "salted"])
def events(request, memory_root):
    import pandas as pd

    from cellstore.core.rowkey import KeyField, RowKeySpec
    from cellstore.loader import Mapping

    spec = RowKeySpec(
        fields=(
            KeyField(name="user", type="string"),
            KeyField(name="ts", type="int64", reverse_timestamp=True),
        ),
        salt_buckets=request.param,
    )
    t = connect(memory_root).create_table("ev", families=["d"], row_key=spec)
    df = pd.DataFrame(
        {
            "user": [f"u{i % 5}" for i in range(50)],
            "ts": list(range(50)),
            "n": list(range(50)),
        }
    )
    t.load(df, mapping=Mapping.simple(row_key=None, columns=["d:n=n:long"]))
    return t


def test_key_predicates_become_row_ranges(events):
    got = events.scan(key={"user": "u3"}, key_columns=True).to_arrow()
    assert set(got.column("user").to_pylist()) == {"u3"}
    assert sorted(got.column("key_ts").to_pylist()) == [3, 8, 13, 18, 23, 28, 33, 38, 43, 48]
    ranged = events.scan(key={"user": "u3", "ts": (10, 30)}, key_columns=True).to_arrow()
    salted = events.metadata.salt_buckets is not None
    found = ranged.column("key_ts").to_pylist()
    if salted:  # the salt hashes the whole key, so "user" alone fans out over buckets
        assert sorted(found) == [13, 18, 23, 28]
    else:  # reverse timestamps: newest first within a user
        assert found == [28, 23, 18, 13]
    plan = events.scan(key={"user": "u3"}).plan()
    assert len(plan) == (4 if salted else 1)
    assert all(t.strip_salt == salted for t in plan)
    exact = events.scan(key={"user": "u3", "ts": 13}).plan()
    assert len(exact) == 1  # every field fixed: one range, the salt is known
    assert events.scan(key={"user": "u3", "ts": 13}).to_arrow().num_rows == 1
    with pytest.raises(InvalidArgumentError, match="must come last"):
        events.scan(key={"user": ("a", "b"), "ts": 1})


def test_wide_shape_has_key_columns(events):
    wide = events.scan(shape="wide", column_types={"d:n": "long"}).to_arrow()
    assert wide.column_names == ["row", "user", "ts", "d:n"]
    assert sorted(zip(wide.column("user").to_pylist(), wide.column("ts").to_pylist(), strict=True))[
        :2
    ] == [
        ("u0", 0),
        ("u0", 5),
    ]
    assert all(
        n == ts
        for n, ts in zip(wide.column("d:n").to_pylist(), wide.column("ts").to_pylist(), strict=True)
    )
    ddf = events.scan(shape="wide", column_types={"d:n": "long"}).to_dask()
    assert list(ddf.columns) == ["row", "user", "ts", "d:n"]
    assert len(ddf.compute()) == 50


def test_key_without_spec_is_refused(web):
    with pytest.raises(InvalidArgumentError, match="no row-key spec"):
        web.scan(key={"user": "x"})

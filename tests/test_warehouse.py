"""Warehouse API: create/list/drop/alter, load_cells, as-of versions, bad input."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import cellstore
from cellstore.core.cells import LATEST_TIMESTAMP
from cellstore.core.family import Family
from cellstore.errors import (
    BadCellError,
    CellstoreError,
    InvalidArgumentError,
    InvalidFamilyError,
    InvalidNameError,
    InvalidRowRangeError,
    TableExistsError,
    TableNotFoundError,
)
from cellstore.storefiles import check, read_store_file
from cellstore.warehouse import connect
from strategies import cells_table


def read_all(table):
    """Every stored cell of a table, as (family, row, qualifier, ts, type, value, seq)."""
    out = []
    for f in table.files:
        t = read_store_file(table.fs, table.file_path(f))
        for r, q, ts, ty, v in zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True):
            out.append((f.family, r, q, ts, ty, v, f.seq))
    return sorted(out)


def test_create_list_describe_drop(any_root):
    wh = connect(any_root)
    assert wh.list_tables() == []
    t = wh.create_table(
        "ns:web", families=[Family(name="cf", max_versions=5), "meta"], splits=[b"g", "p"]
    )
    assert t.version == 1
    assert [f.name for f in t.families] == ["cf", "meta"]
    assert [(r.start, r.end) for r in t.regions] == [(b"", b"g"), (b"g", b"p"), (b"p", b"")]
    wh.create_table("plain", families=["f"])
    assert wh.list_tables() == ["ns:web", "plain"]
    assert wh.exists("default:plain")
    d = wh.table("ns:web").describe()
    assert d.version == 1 and d.files == 0 and d.cells == 0
    assert d.last_commit.operation == "create"
    assert d.to_dict()["regions"][1]["start"] == "g"
    with pytest.raises(TableExistsError):
        wh.create_table("ns:web", families=["x"])
    wh.drop_table("ns:web")
    assert wh.list_tables() == ["plain"]
    with pytest.raises(TableNotFoundError):
        wh.table("ns:web")
    with pytest.raises(TableNotFoundError):
        wh.drop_table("ns:web")
    # A re-created table is a new table (new uuid), not the old one's data.
    t2 = wh.create_table("ns:web", families=["cf"])
    assert t2.metadata.table_uuid != t.metadata.table_uuid


def test_create_validation(tmp_path):
    wh = connect(tmp_path)
    with pytest.raises(InvalidNameError):
        wh.create_table("../escape", families=["cf"])
    with pytest.raises(InvalidNameError):
        wh.create_table("t", families=["bad:family"])
    with pytest.raises(InvalidFamilyError):
        wh.create_table("t", families=["cf", "cf"])
    with pytest.raises(InvalidFamilyError):
        wh.create_table("t", families=[])
    with pytest.raises(InvalidFamilyError):
        wh.create_table("t", families=[{"name": "cf", "max_versions": 0}])
    with pytest.raises(InvalidRowRangeError):
        wh.create_table("t", families=["cf"], splits=[b"b", b"a"])
    with pytest.raises(InvalidRowRangeError):
        wh.create_table("t", families=["cf"], splits=[b""])
    with pytest.raises(InvalidRowRangeError):
        wh.create_table("t", families=["cf"], salt_buckets=0)
    with pytest.raises(InvalidArgumentError):
        wh.create_table("t", families=["cf"], salt_buckets=4, splits=[b"x"])
    assert wh.list_tables() == []
    assert isinstance(InvalidNameError("x"), ValueError)
    assert isinstance(TableNotFoundError("x"), FileNotFoundError)


def test_salted_table_regions():
    wh = connect("memory://salted-test")
    t = wh.create_table("s", families=["cf"], salt_buckets=4)
    assert t.metadata.salt_buckets == 4
    assert [r.start for r in t.regions] == [b"", b"\x01", b"\x02", b"\x03"]
    wh.drop_table("s", purge=True)


def test_load_cells_routes_sorts_commits(any_root):
    wh = connect(any_root)
    t = wh.create_table("t", families=["a", "b"], splits=[b"m"])
    cells = cells_table(
        [
            (b"z", "a", b"q", 5, 4, b"z5"),
            (b"c", "a", b"q", 1, 4, b"c1"),
            (b"c", "a", b"q", 2, 4, b"c2"),
            (b"m", "b", b"", 9, 14, b""),
            (b"c", "b", b"x", 3, 4, b"bx"),
        ]
    )
    res = t.load_cells(cells)
    # "m" is the split key, so row m belongs to the second region.
    assert res.version == 2 and res.seq == 1 and res.cells == 5 and res.files == 4
    assert res.files_per_region == {"r000001": 2, "r000002": 2}
    assert t.version == 2
    fresh = wh.table("t")
    assert fresh.version == 2
    by = {(f.region, f.family): f for f in fresh.files}
    assert set(by) == {("r000001", "a"), ("r000001", "b"), ("r000002", "a"), ("r000002", "b")}
    assert read_store_file(t.fs, t.file_path(by[("r000002", "b")])).column("row").to_pylist() == [
        b"m"
    ]
    # Each file holds only its region's rows, in cell order, and passes check().
    for f in fresh.files:
        region = fresh.metadata.region(f.region)
        assert check(fresh.fs, fresh.file_path(f), region=region, entry=f).ok
    a_low = read_store_file(t.fs, t.file_path(by[("r000001", "a")]))
    assert a_low.column("ts").to_pylist() == [2, 1]  # ts descending
    assert read_all(fresh) == sorted(
        [
            ("a", b"z", b"q", 5, 4, b"z5", 1),
            ("a", b"c", b"q", 1, 4, b"c1", 1),
            ("a", b"c", b"q", 2, 4, b"c2", 1),
            ("b", b"m", b"", 9, 14, b"", 1),
            ("b", b"c", b"x", 3, 4, b"bx", 1),
        ]
    )
    res2 = t.load_cells(cells_table([(b"c", "a", b"q", 2, 4, b"newer")]))
    assert res2.seq == 2 and res2.version == 3


def test_load_cells_from_pandas_with_names_and_defaults(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("t", families=["cf"])
    df = pd.DataFrame(
        {
            "row": ["r1", "r1", "r2"],
            "family": ["cf", "cf", "cf"],
            "qualifier": ["a", "", ""],
            "type": ["Put", "DeleteFamily", "delete_family_version"],
            "value": ["x", None, None],
        }
    )
    res = t.load_cells(df, now_ms=1234)
    assert res.cells == 3
    got = read_all(t)
    assert got == sorted(
        [
            ("cf", b"r1", b"a", 1234, 4, b"x", 1),
            ("cf", b"r1", b"", 1234, 14, b"", 1),
            ("cf", b"r2", b"", 1234, 10, b"", 1),
        ]
    )


def test_latest_timestamp_gets_write_time_r1_5(tmp_path):
    t = connect(tmp_path).create_table("t", families=["cf"])
    t.load_cells(cells_table([(b"r", "cf", b"q", LATEST_TIMESTAMP, 4, b"v")]), now_ms=42)
    assert read_all(t)[0][3] == 42


def test_duplicate_keys_in_one_load_keep_last(tmp_path):
    t = connect(tmp_path).create_table("t", families=["cf"])
    res = t.load_cells(
        cells_table(
            [
                (b"r", "cf", b"q", 1, 4, b"first"),
                (b"r", "cf", b"q", 1, 4, b"second"),
                (b"r", "cf", b"q", 1, 8, b""),
            ]
        )
    )
    assert res.cells == 2 and res.duplicates_dropped == 1
    assert [c[5] for c in read_all(t) if c[4] == 4] == [b"second"]


def test_load_id_is_idempotent(tmp_path):
    t = connect(tmp_path).create_table("t", families=["cf"])
    cells = cells_table([(b"r", "cf", b"q", 1, 4, b"v")])
    first = t.load_cells(cells, load_id="job-42")
    again = t.load_cells(cells, load_id="job-42")
    assert first.version == 2 and not first.already_applied
    assert again.already_applied and again.version is None
    # Even a stale handle that does not know about the first load does not apply it twice.
    stale = connect(tmp_path).table("t", version=1)
    assert stale.pinned
    t_old = connect(tmp_path).table("t")
    t_old._metadata = stale.metadata
    res = t_old.load_cells(cells, load_id="job-42")
    assert res.already_applied
    assert connect(tmp_path).table("t").version == 2
    assert len(connect(tmp_path).table("t").files) == 1


def test_as_of_versions_and_history(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("t", families=["cf"])
    t.load_cells(cells_table([(b"a", "cf", b"q", 1, 4, b"1")]))
    t.load_cells(cells_table([(b"b", "cf", b"q", 1, 4, b"2")]))
    wh.alter_table("t", modify_families={"cf": {"ttl": 60}})
    latest = wh.table("t")
    assert latest.version == 4 and latest.metadata.family("cf").ttl == 60
    v2 = wh.table("t", version=2)
    assert len(v2.files) == 1 and v2.metadata.family("cf").ttl is None
    assert [h.operation for h in latest.history()] == ["alter", "load", "load", "create"]
    assert [h.version for h in latest.history(limit=2)] == [4, 3]
    with pytest.raises(TableNotFoundError):
        wh.table("t", version=9)
    with pytest.raises(InvalidArgumentError):
        v2.load_cells(cells_table([(b"c", "cf", b"q", 1, 4, b"3")]))


def test_alter_table(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("t", families=["a", "b"])
    t.load_cells(cells_table([(b"r", "a", b"q", 1, 4, b"1"), (b"r", "b", b"q", 1, 4, b"2")]))
    t2 = wh.alter_table(
        "t",
        add_families=[Family(name="c", max_versions=1)],
        drop_families=["b"],
        modify_families={"a": {"max_versions": 10}},
        properties={"owner": "data-eng"},
    )
    assert [f.name for f in t2.families] == ["a", "c"]
    assert t2.metadata.family("a").max_versions == 10
    assert {f.family for f in t2.files} == {"a"}
    assert t2.metadata.properties == {"owner": "data-eng"}
    with pytest.raises(InvalidFamilyError):
        wh.alter_table("t", modify_families={"a": {"min_versions": 11}})
    with pytest.raises(InvalidFamilyError):
        wh.alter_table("t", drop_families=["a", "c"])
    with pytest.raises(InvalidFamilyError):
        wh.alter_table("t", add_families=["a"])
    with pytest.raises(InvalidFamilyError):
        wh.alter_table("t", modify_families={"zz": {"ttl": 1}})
    assert wh.table("t").version == 3


BAD_CELLS = [
    ("empty row", [(b"", "cf", b"q", 1, 4, b"v")], "row", "empty"),
    ("oversized row", [(b"x" * 32768, "cf", b"q", 1, 4, b"v")], "row", "32767"),
    ("unknown family", [(b"r", "nope", b"q", 1, 4, b"v")], "family", "unknown family 'nope'"),
    ("negative ts", [(b"r", "cf", b"q", -1, 4, b"v")], "ts", "negative"),
    ("bad type code", [(b"r", "cf", b"q", 1, 5, b"v")], "type", "unknown cell type code 5"),
    (
        "family marker with qualifier",
        [(b"r", "cf", b"q", 1, 14, b"")],
        "qualifier",
        "empty qualifier",
    ),
    ("marker with value", [(b"r", "cf", b"q", 1, 12, b"v")], "value", "no value"),
]


@pytest.mark.parametrize(
    ("label", "rows", "field", "text"), BAD_CELLS, ids=[b[0] for b in BAD_CELLS]
)
def test_bad_cells_name_record_and_field_nothing_committed(any_root, label, rows, field, text):
    wh = connect(any_root)
    t = wh.create_table("t", families=["cf"])
    good = [(b"ok%d" % i, "cf", b"q", 1, 4, b"v") for i in range(3)]
    with pytest.raises(BadCellError) as ei:
        t.load_cells(cells_table(good + rows))
    assert ei.value.record == 3 and ei.value.field == field
    assert "record 3" in str(ei.value) and text in str(ei.value)
    assert wh.table("t").version == 1 and wh.table("t").files == ()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (
            pa.table(
                {"row": [b"r"], "family": ["cf"], "qualifier": [b"q"], "ts": [1.5], "value": [b"v"]}
            ),
            "ts",
        ),
        (pa.table({"row": [1], "family": ["cf"], "qualifier": [b"q"], "value": [b"v"]}), "row"),
        (pa.table({"row": [b"r"], "family": ["cf"], "value": [b"v"]}), "qualifier"),
        (
            pa.table(
                {
                    "row": [b"r"],
                    "family": ["cf"],
                    "qualifier": [b"q"],
                    "type": [True],
                    "value": [b"v"],
                }
            ),
            "type",
        ),
        (
            pa.table(
                {
                    "row": [b"r"],
                    "family": ["cf"],
                    "qualifier": [b"q"],
                    "type": ["Increment"],
                    "value": [b"v"],
                }
            ),
            "type",
        ),
        (
            pa.table(
                {"row": [b"r"], "family": ["cf"], "qualifier": [None], "value": [b"v"]},
                schema=pa.schema(
                    [
                        ("row", pa.binary()),
                        ("family", pa.string()),
                        ("qualifier", pa.binary()),
                        ("value", pa.binary()),
                    ]
                ),
            ),
            "qualifier",
        ),
        (
            pa.table(
                {"row": [b"r"], "family": ["cf"], "qualifier": [b"q"], "value": [None]},
                schema=pa.schema(
                    [
                        ("row", pa.binary()),
                        ("family", pa.string()),
                        ("qualifier", pa.binary()),
                        ("value", pa.binary()),
                    ]
                ),
            ),
            "value",
        ),
        (pa.table({"row": [b"r"], "family": ["cf"], "qualifier": [b"q"]}), "value"),
        (
            pa.table(
                {
                    "row": [b"r"],
                    "family": ["cf"],
                    "qualifier": [b"q"],
                    "value": [b"v"],
                    "extra": [1],
                }
            ),
            "extra",
        ),
    ],
    ids=[
        "float-ts",
        "int-row",
        "missing-qualifier",
        "bool-type",
        "unknown-type-name",
        "null-qualifier",
        "null-put-value",
        "missing-value",
        "extra-column",
    ],
)
def test_wrong_column_types(tmp_path, data, field):
    t = connect(tmp_path).create_table("t", families=["cf"])
    with pytest.raises(BadCellError) as ei:
        t.load_cells(data)
    assert ei.value.field == field
    assert field in str(ei.value)
    assert connect(tmp_path).table("t").version == 1


def test_every_error_is_a_cellstore_error(tmp_path):
    wh = connect(tmp_path)
    for call in (lambda: wh.table("missing"), lambda: wh.create_table("a/b", families=["cf"])):
        with pytest.raises(CellstoreError):
            call()


def test_empty_load_commits_nothing(tmp_path):
    t = connect(tmp_path).create_table("t", families=["cf"])
    res = t.load_cells(cells_table([]))
    assert res.version is None and res.cells == 0
    assert connect(tmp_path).table("t").version == 1


def test_default_root_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("CELLSTORE_ROOT", str(tmp_path / "envroot"))
    wh = cellstore.connect()
    wh.create_table("t", families=["cf"])
    assert (tmp_path / "envroot" / "_catalog").is_dir()

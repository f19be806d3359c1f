"""The bulk loader: mappings, inputs, cells, bad records, spill mode, re-routing, idempotency."""

from __future__ import annotations

import gzip
import json
import pickle
import struct

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cellstore.core.cells import CellType
from cellstore.core.regions import Region
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import BadRecordError, InvalidArgumentError, InvalidFamilyError
from cellstore.loader import CellMapping, KeyColumn, LoadSettings, Mapping, plan_load
from cellstore.loader.direct import now_ms
from cellstore.loader.execute import commit_load, execute_plan
from cellstore.loader.inputs import TextOptions, discover_inputs, format_for, read_part
from cellstore.loader.records import route_rows
from cellstore.storefiles import check, read_store_file
from cellstore.warehouse import connect


def stored(table):
    """Every stored cell: (family, row, qualifier, ts, type, value), sorted."""
    out = []
    for f in table.files:
        t = read_store_file(table.fs, table.file_path(f))
        for r, q, ts, ty, v in zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True):
            out.append((f.family, r, q, ts, ty, v))
    return sorted(out)


def check_files(table):
    for f in table.files:
        report = check(
            table.fs, table.file_path(f), region=table.metadata.region(f.region), entry=f
        )
        assert report.ok, report


USERS = pd.DataFrame(
    {
        "id": ["u1", "u2", "u3", "u4", "u5"],
        "name": ["ann", "bob", None, "dan", "eve"],
        "age": [31, 42, 25, None, 19],
        "ts": [1000, 2000, 3000, 4000, 5000],
    }
)
USER_MAPPING = Mapping.simple(
    row_key="id", columns=["info:name=name", "info:age=age:long"], timestamp="ts"
)


def expected_users(df=USERS):
    out = []
    for r in df.itertuples():
        if not pd.isna(r.name):
            out.append(("info", r.id.encode(), b"name", r.ts, 4, r.name.encode()))
        if not pd.isna(r.age):
            out.append(("info", r.id.encode(), b"age", r.ts, 4, struct.pack(">q", int(r.age))))
    return sorted(out)


# --------------------------------------------------------------------------- mapping
def test_mapping_file_round_trip(tmp_path):
    text = """
row_key = {column = "id", codec = "string"}
timestamp = {column = "when", unit = "s"}
operation = "op"

[input]
delimiter = ";"
header = true

[[cells]]
family = "info"
qualifier = "name"
value = "name"

[[cells]]
family = "follows"
qualifier_column = "followed"

[columns]
"info:age" = {column = "age", codec = "int"}
"""
    path = tmp_path / "m.toml"
    path.write_text(text)
    m = Mapping.from_file(str(path))
    assert m.row_key == KeyColumn(column="id")
    assert m.timestamp_column == "when" and m.timestamp_unit == "s"
    assert m.operation_column == "op"
    assert m.families == ("info", "follows")
    assert m.input_columns() == ("id", "name", "followed", "age", "when", "op")
    assert m.cells[2].codec.value == "int"
    again = Mapping.from_dict(json.loads(json.dumps(m.to_dict())))
    assert again == m
    jpath = tmp_path / "m.json"
    jpath.write_text(json.dumps(m.to_dict()))
    assert Mapping.from_file(str(jpath)) == m
    assert pickle.loads(pickle.dumps(m)) == m


def test_mapping_errors(tmp_path):
    with pytest.raises(InvalidArgumentError, match="unknown key"):
        Mapping.from_dict({"cells": [], "bogus": 1})
    with pytest.raises(InvalidArgumentError, match="at least one"):
        Mapping.from_dict({"row_key": "id"})
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        CellMapping(family="f")
    with pytest.raises(InvalidArgumentError, match="codec"):
        Mapping.simple(row_key="id", columns=["f:q=c:nonsense"])
    with pytest.raises(InvalidArgumentError, match="FAMILY:QUALIFIER"):
        Mapping.simple(row_key="id", columns=["nocolon"])
    bad = tmp_path / "bad.toml"
    bad.write_text("row_key = [")
    with pytest.raises(InvalidArgumentError, match=r"bad\.toml"):
        Mapping.from_file(str(bad))
    wh = connect(tmp_path / "wh")
    t = wh.create_table("t", families=["info"])
    with pytest.raises(InvalidFamilyError, match="nope"):
        t.load(USERS, mapping=Mapping.simple(row_key="id", columns=["nope:x=name"]))
    with pytest.raises(InvalidArgumentError, match="no row key"):
        t.load(USERS, mapping=Mapping.simple(row_key=None, columns=["info:x=name"]))
    assert t.refresh().version == 1


def test_parse_inline_column_forms():
    m = Mapping.simple(row_key="u", columns=["f:{other}=v:long", "f:flag="])
    assert m.cells[0].qualifier_column == "other" and m.cells[0].codec.value == "long"
    assert m.cells[1].qualifier == b"flag" and m.cells[1].value is None


# ---------------------------------------------------------------------------- inputs
def test_format_for():
    assert format_for("a/b.csv") == ("csv", None)
    assert format_for("s3://b/x.tsv.gz") == ("tsv", "gzip")
    assert format_for("x.ndjson") == ("jsonl", None)
    assert format_for("x.pq") == ("parquet", None)
    with pytest.raises(InvalidArgumentError, match="format"):
        format_for("x.txt")


def test_parquet_parts_by_row_group_and_picklable(tmp_path):
    df = pd.DataFrame({"id": [f"k{i:04d}" for i in range(1000)], "v": range(1000)})
    pq.write_table(pa.Table.from_pandas(df), tmp_path / "a.parquet", row_group_size=100)
    inputs = discover_inputs(
        str(tmp_path / "*.parquet"), columns=["id", "v"], target_part_bytes=3000
    )
    assert len(inputs.parts) > 1
    parts = [pickle.loads(pickle.dumps(p)) for p in inputs.parts]
    ids = []
    for p in parts:
        for b in read_part(p, batch_rows=64):
            assert b.records.tolist() == list(range(b.records[0], b.records[0] + len(b.records)))
            ids += b.table.column("id").to_pylist()
    assert ids == df["id"].tolist()


def test_csv_line_numbers_skip_malformed(tmp_path):
    path = tmp_path / "x.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("a,b\n1,2\n3\n4,5\n6,7,8\n9,10\n")
    (part,) = discover_inputs(str(path), columns=["a", "b"], target_part_bytes=1 << 20).parts
    batches = list(read_part(part))
    table = pa.concat_tables([b.table for b in batches])
    assert table.column("a").to_pylist() == ["1", "4", "9"]
    lines = [x for b in batches for x in b.lines.tolist()]
    assert lines == [2, 4, 6]
    malformed = [m for b in batches for m in b.malformed]
    assert malformed == [(3, "3"), (5, "6,7,8")]


def test_jsonl_line_numbers_and_missing_fields(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": "1", "b": 2}\n\n{"a": "3"}\nnot json\n{"a": "5", "b": 6}\n')
    (part,) = discover_inputs(str(path), columns=["a", "b"], target_part_bytes=1 << 20).parts
    (batch,) = list(read_part(part))
    assert batch.table.column("a").to_pylist() == ["1", "3", "5"]
    assert batch.table.column("b").to_pylist() == [2, None, 6]
    assert batch.lines.tolist() == [1, 3, 5]
    assert batch.malformed == ((4, "not json"),)


def test_route_rows_matches_bisect():
    import bisect
    import random

    rnd = random.Random(7)
    rows = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 4))) for _ in range(500)]
    for splits in ([], [b"\x80"], sorted({bytes([rnd.randrange(256)]) for _ in range(20)})):
        got = route_rows(pa.array(rows, pa.binary()), splits).tolist()
        assert got == [bisect.bisect_right(splits, r) for r in rows]


# ------------------------------------------------------------------------------ loads
def test_load_pandas_merge_mode(any_root):
    wh = connect(any_root)
    t = wh.create_table("ns:users", families=["info", "other"], splits=[b"u3"])
    report = t.load(USERS, mapping=USER_MAPPING, now_ms=99)
    assert report.version == 2 and report.mode == "merge"
    assert report.rows == 5 and report.cells == 8 and report.records == 5
    assert report.files == 2 and report.files_per_region == {"r000001": 1, "r000002": 1}
    assert stored(t) == expected_users()
    check_files(t)
    scan = t.scan().to_pandas()
    assert len(scan) == 8
    assert report.to_dict()["cells"] == 8
    doc = json.loads(t.fs.cat_file(report.report_path))
    assert doc["load-id"] == report.load_id


def test_load_id_is_idempotent(tmp_path):
    t = connect(tmp_path).create_table("t", families=["info"])
    first = t.load(USERS, mapping=USER_MAPPING, load_id="L1")
    again = t.load(USERS, mapping=USER_MAPPING, load_id="L1")
    assert not first.already_applied and again.already_applied
    assert again.version is None and t.refresh().version == 2
    assert len(stored(t)) == 8


def test_csv_tall_and_wide_designs(tmp_path):
    csv = tmp_path / "follows.csv"
    csv.write_text("follower,followed,since\nann,bob,10\nann,cat,11\nbob,ann,12\nann,bob,13\n")
    wh = connect(tmp_path / "wh")
    # Wide: one row per user, one qualifier per followed user, empty values.
    wide = wh.create_table("wide", families=["follows"])
    r = wide.load(
        str(csv),
        mapping={
            "row_key": "follower",
            "cells": [{"family": "follows", "qualifier_column": "followed"}],
        },
        now_ms=7,
    )
    assert r.cells == 3 and r.duplicates_dropped == 1  # ann->bob given twice, same ts
    assert [(c[1], c[2]) for c in stored(wide)] == [
        (b"ann", b"bob"),
        (b"ann", b"cat"),
        (b"bob", b"ann"),
    ]
    # Tall: one row per pair, composite key from a spec stored with the table.
    spec = RowKeySpec(fields=(KeyField(name="follower"), KeyField(name="followed")))
    tall = wh.create_table("tall", families=["f"], row_key=spec)
    assert wh.table("tall").metadata.row_key == spec
    r = tall.load(
        str(csv),
        mapping={
            "cells": [{"family": "f", "qualifier": "since", "value": "since", "codec": "long"}]
        },
        now_ms=7,
    )
    assert r.rows == 4 and r.cells == 3  # the repeated pair: last given wins
    rows = [c[1] for c in stored(tall)]
    assert rows == sorted(
        spec.encode(
            pa.table({"follower": ["ann", "ann", "bob"], "followed": ["bob", "cat", "ann"]})
        ).to_pylist()
    )
    assert struct.unpack(">q", stored(tall)[0][5])[0] == 13


def test_timestamps_units_and_text(tmp_path):
    t = connect(tmp_path).create_table("t", families=["f"])
    df = pd.DataFrame(
        {
            "k": ["a", "b", "c"],
            "v": ["1", "2", "3"],
            "when": ["1700000000", "2023-11-14T22:13:20", "1700000001"],
        }
    )
    t.load(
        df,
        mapping=Mapping.simple(
            row_key="k", columns=["f:q=v"], timestamp="when", timestamp_unit="s"
        ),
    )
    assert [c[3] for c in stored(t)] == [1_700_000_000_000, 1_700_000_000_000, 1_700_000_001_000]
    t2 = connect(tmp_path).create_table("t2", families=["f"])
    df2 = pd.DataFrame({"k": ["a"], "v": ["1"], "when": pd.to_datetime(["2020-01-01"])})
    t2.load(df2, mapping=Mapping.simple(row_key="k", columns=["f:q=v"], timestamp="when"))
    assert stored(t2)[0][3] == 1_577_836_800_000


def test_operation_column_loads_delete_markers(tmp_path):
    t = connect(tmp_path).create_table("t", families=["f", "g"])
    t.load(
        pd.DataFrame({"k": ["r1", "r2", "r3"], "a": ["x", "y", "z"], "b": ["1", "2", "3"]}),
        mapping=Mapping.simple(row_key="k", columns=["f:a=a", "g:b=b"]),
        now_ms=100,
    )
    ops = pd.DataFrame(
        {
            "k": ["r1", "r2", "r3", "r3"],
            "a": [None, None, None, "new"],
            "b": [None] * 4,
            "op": ["DeleteColumn", "delete_family", "Delete", "put"],
            "ts": [200, 200, 100, 300],
        }
    )
    r = t.load(
        ops,
        mapping=Mapping.simple(
            row_key="k", columns=["f:a=a", "g:b=b"], timestamp="ts", operation="op"
        ),
    )
    assert r.cells == 2 + 2 + 2 + 1
    types = sorted((c[0], c[1], c[2], c[4]) for c in stored(t) if c[4] != 4)
    assert types == [
        ("f", b"r1", b"a", CellType.DELETE_COLUMN),
        ("f", b"r2", b"", CellType.DELETE_FAMILY),
        ("f", b"r3", b"a", CellType.DELETE),
        ("g", b"r1", b"b", CellType.DELETE_COLUMN),
        ("g", b"r2", b"", CellType.DELETE_FAMILY),
        ("g", b"r3", b"b", CellType.DELETE),
    ]
    visible = t.scan().to_pandas()
    assert sorted(zip(visible.row, visible.qualifier, visible.value, strict=True)) == [
        (b"r3", b"a", b"new")
    ]


def test_bad_record_errors_name_file_line_field(tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("id,age\nu1,1\nu2,2\nu3,x\nu4,4\n")
    t = connect(tmp_path / "wh").create_table("t", families=["f"])
    with pytest.raises(BadRecordError) as err:
        t.load(str(csv), mapping=Mapping.simple(row_key="id", columns=["f:age=age:int"]))
    e = err.value
    assert e.line == 4 and e.field == "age" and e.source == str(csv) and e.record == 2
    assert f"{csv}, line 4, field 'age'" in str(e)
    assert t.refresh().version == 1 and not t.files
    # Nothing left behind in the data directory either.
    assert not t.fs.exists(t.path + "/data") or not t.fs.find(t.path + "/data")


@pytest.mark.parametrize(
    ("frame", "field", "reason"),
    [
        (pd.DataFrame({"id": ["a", ""], "v": ["1", "2"]}), "id", "row key is empty"),
        (pd.DataFrame({"id": ["a", None], "v": ["1", "2"]}), "id", "row key is null"),
        (pd.DataFrame({"id": ["a", "b" * 40000], "v": ["1", "2"]}), "id", "longer than 32767"),
        (pd.DataFrame({"id": ["a", "b"], "v": ["1", "99999999999"]}), "v", "out of range"),
    ],
)
def test_always_rejected(tmp_path, frame, field, reason):
    t = connect(tmp_path).create_table("t", families=["f"])
    with pytest.raises(BadRecordError, match=reason) as err:
        t.load(frame, mapping=Mapping.simple(row_key="id", columns=["f:v=v:int"]))
    assert err.value.field == field and err.value.record == 1
    assert "<pandas>, record 1" in str(err.value)


def test_bad_timestamps_rejected(tmp_path):
    t = connect(tmp_path).create_table("t", families=["f"])
    for when, why in (
        ([1, -5], "negative"),
        (["1", "yesterday"], "not a time"),
        ([1.0, None], "null"),
    ):
        df = pd.DataFrame({"id": ["a", "b"], "v": ["1", "2"], "ts": when})
        with pytest.raises(BadRecordError, match=why):
            t.load(df, mapping=Mapping.simple(row_key="id", columns=["f:v=v"], timestamp="ts"))


def test_skip_bad_records_writes_side_file(tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("id,age,op\nu1,1,put\nu2,x,\n,3,\nu4,4,explode\nu5,5,\nu6,6,put,extra\nu7,7,\n")
    t = connect(tmp_path / "wh").create_table("t", families=["f"])
    report = t.load(
        str(csv),
        skip_bad_records=True,
        report_dir=str(tmp_path / "reports"),
        mapping=Mapping.simple(row_key="id", columns=["f:age=age:int"], operation="op"),
    )
    assert report.rows == 3 and report.bad_records == 4 and report.records == 7
    assert report.bad_reasons == {
        "age: not an integer (int)": 1,
        "id: row key is null": 1,
        "op: unknown operation (expected Put, Delete, DeleteColumn, DeleteFamily or "
        "DeleteFamilyVersion)": 1,
        "<line>: malformed record": 1,
    }
    assert report.bad_records_path == str(tmp_path / "reports" / f"{report.load_id}.bad.jsonl")
    lines = [
        json.loads(x)
        for x in (tmp_path / "reports" / f"{report.load_id}.bad.jsonl").read_text().splitlines()
    ]
    by_line = {x["line"]: x for x in lines}
    assert set(by_line) == {3, 4, 5, 7}
    assert by_line[3]["field"] == "age" and by_line[3]["values"] == {
        "id": "u2",
        "age": "x",
        "op": None,
    }
    assert by_line[7]["values"] == {"text": "u6,6,put,extra"}
    assert (tmp_path / "reports" / f"{report.load_id}.report.json").exists()
    assert [c[1] for c in stored(t)] == [b"u1", b"u5", b"u7"]


def test_spill_mode_runs_are_separate_files_and_merge_on_read(tmp_path):
    n = 30_000
    df = pd.DataFrame(
        {
            "k": [f"row{(i * 7919) % n:06d}" for i in range(n)],
            "a": [f"value-{i}" for i in range(n)],
            "b": list(range(n)),
        }
    )
    t = connect(tmp_path).create_table("t", families=["f"], splits=[b"row01", b"row02"])
    m = Mapping.simple(row_key="k", columns=["f:a=a", "f:b=b:long"])
    report = t.load(df, mapping=m, memory_budget=1 << 20, max_file_bytes=64 << 10, now_ms=5)
    assert report.mode == "spill"
    assert report.files > 3  # several runs (and rolled files) per region
    assert report.cells == 2 * n
    check_files(t)
    got = t.scan().to_pandas()
    assert len(got) == 2 * n and got.row.is_monotonic_increasing
    # Files never overlap their region, and each rolled file ends on a row boundary.
    for f in t.files:
        assert t.metadata.region(f.region).contains(f.first_row)


def test_later_record_wins_across_spill_runs(tmp_path):
    n = 20_000
    df = pd.DataFrame({"k": [f"k{i % 100:03d}" for i in range(n)], "v": [str(i) for i in range(n)]})
    t = connect(tmp_path).create_table("t", families=["f"])
    m = Mapping.simple(row_key="k", columns=["f:v=v"])
    t.load(df, mapping=m, memory_budget=1 << 20, now_ms=5)
    got = t.scan().to_pandas()
    assert len(got) == 100
    assert got.value.tolist() == [str(n - 100 + i).encode() for i in range(100)]


def test_salted_table_prefixes_salt_byte(tmp_path):
    from model import salted

    t = connect(tmp_path).create_table("t", families=["f"], salt_buckets=4)
    keys = [f"user{i}" for i in range(40)]
    t.load(
        pd.DataFrame({"k": keys, "v": ["x"] * 40}),
        mapping=Mapping.simple(row_key="k", columns=["f:v=v"]),
    )
    expect = sorted(salted(k.encode(), 4) for k in keys)  # Phoenix's formula, independently
    assert [c[1] for c in stored(t)] == expect
    for f in t.files:  # every file sits in its bucket's region
        assert f.first_row[0] == f.last_row[0] == int(f.region[1:]) - 1
    assert sorted(t.scan().to_pandas().row) == sorted(k.encode() for k in keys)


def test_salted_spec_table(tmp_path):
    spec = RowKeySpec(
        fields=(KeyField(name="user"), KeyField(name="n", type="int64")), salt_buckets=3
    )
    t = connect(tmp_path).create_table("t", families=["f"], row_key={**spec.to_dict()})
    assert t.metadata.salt_buckets == 3 and len(t.regions) == 3
    df = pd.DataFrame({"user": ["a", "b", "c"], "n": [1, 2, 3], "v": ["x", "y", "z"]})
    r = t.load(df, mapping={"cells": [{"family": "f", "qualifier": "v", "value": "v"}]})
    assert r.cells == 3
    assert sorted(c[1] for c in stored(t)) == sorted(spec.encode(pa.table(df)).to_pylist())


def test_regions_changed_before_commit_are_rerouted(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("t", families=["f"], splits=[b"m"])
    keys = [f"{c}{i:03d}" for c in "adhkpsw" for i in range(50)]
    df = pd.DataFrame({"k": keys, "v": keys})
    m = Mapping.simple(row_key="k", columns=["f:v=v"])
    plan, _inputs = plan_load(
        t.metadata,
        table_url=t.path,
        storage_options={},
        source=df,
        mapping=m,
        load_id="L",
        now_ms=now_ms(),
        settings=LoadSettings(),
    )
    assert pickle.loads(pickle.dumps(plan)) == plan
    outputs = execute_plan(plan)
    written = [w for o in outputs for w in o.written]
    assert len(written) == 2

    # A concurrent split: r000001 [,m) -> [,d) [d,h) [h,m); r000002 [m,) -> [m,s) [s,)
    def split(meta):
        regions = (
            Region("r000003", b"", b"d"),
            Region("r000004", b"d", b"h"),
            Region("r000005", b"h", b"m"),
            Region("r000006", b"m", b"s"),
            Region("r000007", b"s", b""),
        )
        return meta.next_version(
            operation="split", timestamp_ms=now_ms(), regions=regions, next_region_id=8
        )

    t.log.commit_table(split)
    _meta, already, _files, rerouted = commit_load(
        t.fs, t.path, t.log, t.metadata, written, load_id="L", summary={}, row_group_cells=65536
    )
    assert not already and rerouted == 2
    t.refresh()
    assert {f.region for f in t.files} == {"r000003", "r000004", "r000005", "r000006", "r000007"}
    check_files(t)
    assert sorted(t.scan().to_pandas().row) == sorted(k.encode() for k in keys)


def test_region_presplit_sampling(tmp_path):
    from cellstore.loader import sample_split_keys

    df = pd.DataFrame({"k": [f"k{i:05d}" for i in range(10_000)], "v": ["x"] * 10_000})
    m = Mapping.simple(row_key="k", columns=["f:v=v"])
    splits = sample_split_keys(df, mapping=m, regions=4)
    assert splits == [b"k02500", b"k05000", b"k07500"]
    t = connect(tmp_path).create_table("t", families=["f"], splits=splits)
    r = t.load(df, mapping=m)
    assert r.files_per_region == {"r000001": 1, "r000002": 1, "r000003": 1, "r000004": 1}


def test_text_options_without_header(tmp_path):
    tsv = tmp_path / "x.tsv"
    tsv.write_text("a\t1\nb\t2\n")
    t = connect(tmp_path / "wh").create_table("t", families=["f"])
    r = t.load(
        str(tsv),
        text=TextOptions(header=False, column_names=("k", "v")),
        mapping=Mapping.simple(row_key="k", columns=["f:v=v:short"]),
    )
    assert r.cells == 2 and stored(t)[1][5] == b"\x00\x02"


def test_dask_dataframe_input(tmp_path):
    import dask.dataframe as dd

    ddf = dd.from_pandas(USERS, npartitions=2)
    t = connect(tmp_path).create_table("t", families=["info"])
    r = t.load(ddf, mapping=USER_MAPPING)
    assert r.inputs == 2 and stored(t) == expected_users()


def test_arrow_input_and_progress(memory_root):
    t = connect(memory_root).create_table("t", families=["info"], splits=[b"u2", b"u4"])
    seen = []
    r = t.load(
        pa.Table.from_pandas(USERS),
        mapping=USER_MAPPING,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert stored(t) == expected_users()
    assert seen[-1][0] == seen[-1][1] == 1 + 3  # one input task, three region tasks
    assert r.files == 3

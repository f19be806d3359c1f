"""The PySpark data source: reads equal the Dask reader's, pushdown narrows the plan,
writes are one-commit bulk loads through the loader's mapping, failed writes leave nothing.

PySpark runs in local mode (``local[2]``) with this interpreter as its Python, one session
for the module. Tables live on local disk (Spark's Python workers are other processes, so
``memory://`` is not shared with them) or on S3 (moto's server on 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
import sys

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cellstore.core.filterparse import parse_filter
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import InvalidArgumentError
from cellstore.loader import Mapping
from cellstore.spark import CellstoreReader, ScanPartition, register
from cellstore.spark.options import ReadOptions, RowBounds, WriteOptions
from cellstore.storefiles import check
from cellstore.warehouse import connect
from strategies import cells_table

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("PySpark needs Java (17); none on this machine", allow_module_level=True)

pytestmark = [
    pytest.mark.slow,
    # PySpark 4.x warns about pandas 3 when it converts pandas frames; not ours.
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]

PUT, DELETE, DELETE_COLUMN = 4, 8, 12
NOW = 1_700_000_000_000


@pytest.fixture(scope="module")
def spark():
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("cellstore-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.default.parallelism", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def cells_of_rows(n: int = 30):
    out = []
    for i in range(n):
        row = f"r{i:03d}".encode()
        for ts in (1, 2, 3, 4):
            out.append((row, "f", b"a", ts, PUT, f"a{i}-{ts}".encode()))
        out.append((row, "f", b"n", 5, PUT, struct.pack(">q", i)))
        if i % 3 == 0:
            out.append((row, "g", b"x", 7, PUT, f"x{i}".encode()))
        if i % 7 == 0:
            out.append((row, "f", b"a", 3, DELETE, b""))
        if i % 11 == 0:
            out.append((row, "g", b"x", 9, DELETE_COLUMN, b""))
    return cells_table(out)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("spark") / "wh")


@pytest.fixture(scope="module")
def web(root):
    """Three regions, two families, versions and delete markers, loaded in two commits."""
    t = connect(root).create_table(
        "ns:web", families=[{"name": "f", "max_versions": 3}, "g"], splits=[b"r010", b"r020"]
    )
    cells = cells_of_rows()
    t.load_cells(cells.slice(0, 100))
    t.load_cells(cells.slice(100))
    return t


@pytest.fixture(scope="module")
def salted(root):
    t = connect(root).create_table("salted", families=["f"], salt_buckets=4)
    df = pd.DataFrame({"k": [f"k{i:03d}" for i in range(40)], "v": [f"v{i}" for i in range(40)]})
    t.load(df, mapping=Mapping.simple(row_key="k", columns=["f:v=v"]), now_ms=1)
    return t


def read(spark, root, table, **options):
    r = spark.read.format("cellstore").option("root", root).option("table", table)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def rows(table: pa.Table):
    return [tuple(r.values()) for r in table.to_pylist()]


def same(df, want: pa.Table) -> None:
    got = df.toArrow()
    assert got.column_names == want.column_names
    assert rows(got) == rows(want)


# ------------------------------------------------------------------- pure option parsing
def test_row_bounds_arithmetic():
    b = RowBounds()
    assert b.at_least(b"b").below(b"d") == RowBounds(b"b", b"d")
    assert b.above(b"b") == RowBounds(b"b\x00", b"")
    assert b.at_most(b"d") == RowBounds(b"", b"d\x00")
    assert b.equal(b"c").at_least(b"a") == RowBounds(b"c", b"c\x00")
    assert b.prefix(b"ab") == RowBounds(b"ab", b"ac")
    assert b.at_least(b"d").below(b"c").empty
    assert b.below(b"").empty
    assert RowBounds(b"a", b"z").intersect(b"b", b"") == RowBounds(b"b", b"z")


def test_read_options_parse_and_refuse_unknown():
    o = ReadOptions.parse(
        {
            "root": "/wh",
            "table": "t",
            "columns": "f:a, g",
            "time_range": "1,5",
            "max_versions": "2",
            "raw": "false",
            "column_types": '{"f:a": "string"}',
            "key": '{"user": "u1", "ts": [1, null]}',
            "Start_Row": "b",
            "storage_options": '{"anon": true}',
        }
    )
    assert o.scan["columns"] == ("f:a", "g") and o.scan["time_range"] == (1, 5)
    assert o.scan["max_versions"] == 2 and o.scan["raw"] is False
    assert o.scan["key"] == {"user": "u1", "ts": (1, None)}
    assert o.bounds == RowBounds(b"b", b"") and o.storage_options == {"anon": True}
    with pytest.raises(InvalidArgumentError, match="unknown cellstore option"):
        ReadOptions.parse({"root": "/wh", "table": "t", "colums": "f"})
    with pytest.raises(InvalidArgumentError, match="'root'"):
        ReadOptions.parse({"table": "t"})
    with pytest.raises(InvalidArgumentError, match="max_versions"):
        ReadOptions.parse({"root": "/wh", "table": "t", "max_versions": "two"})


def test_write_options_mapping_forms(tmp_path):
    inline = WriteOptions.parse(
        {"root": "/wh", "table": "t", "row_key": "k", "columns": "f:a=a,f:n=n:long"}
    )
    assert inline.mapping == Mapping.simple(row_key="k", columns=["f:a=a", "f:n=n:long"])
    as_json = WriteOptions.parse(
        {"root": "/wh", "table": "t", "mapping": json.dumps(inline.mapping.to_dict())}
    )
    assert as_json.mapping == inline.mapping
    path = tmp_path / "m.toml"
    path.write_text('row_key = "k"\n[[cells]]\nfamily = "f"\nqualifier = "a"\nvalue = "a"\n')
    from_file = WriteOptions.parse({"root": "/wh", "table": "t", "mapping": str(path)})
    assert from_file.mapping.cells[0].family == "f"
    with pytest.raises(InvalidArgumentError, match="not both"):
        WriteOptions.parse({"root": "/wh", "table": "t", "mapping": str(path), "row_key": "k"})
    with pytest.raises(InvalidArgumentError, match="needs option 'mapping'"):
        WriteOptions.parse({"root": "/wh", "table": "t"})


# ----------------------------------------------------------------------------- reads
READS = [
    pytest.param({}, {}, id="all"),
    pytest.param(
        {"start_row": "r005", "stop_row": "r022"},
        {"start_row": "r005", "stop_row": "r022"},
        id="range",
    ),
    pytest.param({"row_prefix": "r01"}, {"row_prefix": "r01"}, id="prefix"),
    pytest.param({"columns": "f:a"}, {"columns": ["f:a"]}, id="columns"),
    pytest.param({"families": "g"}, {"families": ["g"]}, id="families"),
    pytest.param({"time_range": "2,5"}, {"time_range": (2, 5)}, id="time-range"),
    pytest.param({"max_versions": "3"}, {"max_versions": 3}, id="versions"),
    pytest.param(
        {"raw": "true", "max_versions": "10"}, {"raw": True, "max_versions": 10}, id="raw"
    ),
    pytest.param(
        {"filter": "ValueFilter(=, 'substring:a1')"},
        {"filter": parse_filter("ValueFilter(=, 'substring:a1')")},
        id="filter",
    ),
    pytest.param({"memory_budget": "2048"}, {"memory_budget": 2048}, id="small-tasks"),
]


@pytest.mark.parametrize(("options", "kwargs"), READS)
def test_cells_equal_the_dask_reader(spark, root, web, options, kwargs):
    df = read(spark, root, "ns:web", now_ms=str(NOW), **options)
    scan = web.scan(now_ms=NOW, **kwargs)
    want = scan.to_arrow()
    assert want.num_rows > 0
    assert df.rdd.getNumPartitions() == max(1, len(scan.plan()))
    same(df, want)
    dask = scan.to_dask().compute()
    assert len(dask) == want.num_rows


def test_schema_is_the_scan_schema(spark, root, web):
    df = read(spark, root, "ns:web")
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema] == [
        ("row", "binary", False),
        ("family", "string", False),
        ("qualifier", "binary", False),
        ("ts", "bigint", False),
        ("type", "tinyint", False),
        ("value", "binary", False),
    ]


def test_wide_shape_typed_columns(spark, root, web):
    types = '{"f:a": "string", "f:n": "long", "g:x": "string"}'
    df = read(spark, root, "ns:web", shape="wide", column_types=types)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema] == [
        ("row", "binary"),
        ("f:a", "string"),
        ("f:n", "bigint"),
        ("g:x", "string"),
    ]
    want = web.scan(shape="wide", column_types=json.loads(types)).to_arrow()
    same(df, want)
    untyped = read(spark, root, "ns:web", shape="wide", columns="f:n,g:x", start_row="r010")
    same(untyped, web.scan(shape="wide", columns=["f:n", "g:x"], start_row="r010").to_arrow())


def test_wide_shape_needs_known_columns(spark, root, web):
    with pytest.raises(Exception, match=r"needs known\s+columns"):
        _ = read(spark, root, "ns:web", shape="wide").schema


def test_as_of_version(spark, root, web):
    old = connect(root).table("ns:web", version=2)
    assert old.version < web.version
    same(read(spark, root, "ns:web", version="2"), old.scan().to_arrow())


def test_salted_table_rows_come_back_salt_free(spark, root, salted):
    df = read(spark, root, "salted")
    assert df.rdd.getNumPartitions() == 4  # one per salt bucket
    same(df, salted.scan().to_arrow())
    ranged = read(spark, root, "salted", start_row="k010", stop_row="k020")
    same(ranged, salted.scan(start_row="k010", stop_row="k020").to_arrow())


@pytest.fixture(scope="module")
def events(root):
    spec = RowKeySpec(
        fields=(KeyField(name="user", type="string"), KeyField(name="ts", type="int64")),
        salt_buckets=3,
    )
    t = connect(root).create_table("events", families=["d"], row_key=spec)
    df = pd.DataFrame({"user": [f"u{i % 4}" for i in range(24)], "ts": range(24), "n": range(24)})
    t.load(df, mapping=Mapping.simple(row_key=None, columns=["d:n=n:long"]))
    return t


def test_row_key_spec_columns_and_key_predicates(spark, root, events):
    df = read(spark, root, "events", shape="wide", column_types='{"d:n": "long"}')
    assert df.columns == ["row", "user", "ts", "d:n"]
    same(df, events.scan(shape="wide", column_types={"d:n": "long"}).to_arrow())
    keyed = read(spark, root, "events", key='{"user": "u1", "ts": [5, 20]}', key_columns="true")
    want = events.scan(key={"user": "u1", "ts": (5, 20)}, key_columns=True).to_arrow()
    same(keyed, want)
    assert sorted(set(keyed.toArrow().column("key_ts").to_pylist())) == [5, 9, 13, 17]


# --------------------------------------------------------------------------- pushdown
def pushed(spark, root, table, condition, **options):
    """A fresh DataFrame per query (Spark reuses a DataFrame's last pushed-down plan)."""
    return read(spark, root, table, pushdown="true", **options).filter(condition)


def test_row_filters_are_pushed_into_the_plan(spark, root, web):
    assert read(spark, root, "ns:web", pushdown="true").rdd.getNumPartitions() == 3
    row = F.col("row")
    narrowed = pushed(spark, root, "ns:web", (row >= F.lit(b"r012")) & (row < F.lit(b"r018")))
    assert narrowed.rdd.getNumPartitions() == 1  # one region left
    plan = narrowed._jdf.queryExecution().executedPlan().toString()
    assert "Filter " not in plan.replace("RuntimeFilters", "")  # exact: no filter again
    same(narrowed, web.scan(start_row="r012", stop_row="r018").to_arrow())
    le = pushed(spark, root, "ns:web", (row > F.lit(b"r008")) & (row <= F.lit(b"r011")))
    assert le.rdd.getNumPartitions() == 2
    same(le, web.scan(start_row="r008\x00", stop_row="r011\x00").to_arrow())
    eq = pushed(spark, root, "ns:web", row == F.lit(b"r025"))
    same(eq, web.scan(start_row="r025", stop_row="r025\x00").to_arrow())
    none = pushed(spark, root, "ns:web", (row > F.lit(b"r020")) & (row < F.lit(b"r010")))
    assert none.count() == 0
    sql = pushed(spark, root, "ns:web", "row >= CAST('r027' AS BINARY)")
    same(sql, web.scan(start_row="r027").to_arrow())
    text = pushed(spark, root, "ns:web", row >= "r027")  # a string literal compares as bytes
    assert text.rdd.getNumPartitions() == 1
    same(text, web.scan(start_row="r027").to_arrow())
    ranged = pushed(spark, root, "ns:web", row < F.lit(b"r015"), start_row="r005")
    same(ranged, web.scan(start_row="r005", stop_row="r015").to_arrow())


def test_in_and_family_filters(spark, root, web):
    row, family = F.col("row"), F.col("family")
    got = pushed(spark, root, "ns:web", row.isin([b"r003", b"r004"]))
    assert got.rdd.getNumPartitions() == 1
    same(got, web.scan(start_row="r003", stop_row="r005").to_arrow())
    fam = pushed(spark, root, "ns:web", family == "g")
    same(fam, web.scan(families=["g"]).to_arrow())
    both = pushed(spark, root, "ns:web", (family == "g") & (row < F.lit(b"r010")))
    same(both, web.scan(families=["g"], stop_row="r010").to_arrow())
    # a filter on ts is evaluated by Spark on the result, never as a time range
    ts = pushed(spark, root, "ns:web", F.col("ts") >= 3)
    assert rows(ts.toArrow()) == [r for r in rows(web.scan().to_arrow()) if r[3] >= 3]


def test_pushed_filters_on_a_salted_table(spark, root, salted):
    eq = pushed(spark, root, "salted", F.col("row") == F.lit(b"k017"))
    assert eq.toArrow().column("value").to_pylist() == [b"v17"]
    assert eq.rdd.getNumPartitions() == 4  # the salt of a bare key range is unknown
    rng = pushed(spark, root, "salted", F.col("row") >= F.lit(b"k030"))
    same(rng, salted.scan(start_row="k030").to_arrow())


def test_without_pushdown_spark_filters_a_reused_dataframe(spark, root, web):
    df = read(spark, root, "ns:web")  # pushdown off: the default
    narrowed = df.filter(F.col("row") >= F.lit(b"r015"))
    assert narrowed.rdd.getNumPartitions() == 3  # Spark filters after reading everything
    same(narrowed, web.scan(start_row="r015").to_arrow())
    assert df.count() == web.scan().to_arrow().num_rows  # the same DataFrame, unfiltered


def test_partitions_are_picklable_and_match_the_plan(root, web):
    options = {"root": root, "table": "ns:web", "now_ms": str(NOW)}
    parts = CellstoreReader(ReadOptions.parse(options), None).partitions()
    assert [p.task for p in parts] == web.scan(now_ms=NOW).plan()
    back = pickle.loads(pickle.dumps(parts[0]))
    assert isinstance(back, ScanPartition) and back.task == parts[0].task


# ----------------------------------------------------------------------------- writes
def users(n: int, *, offset: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [f"u{(i * 7) % n + offset:04d}" for i in range(n)],
            "name": [f"name {i}" if i % 5 else None for i in range(n)],
            "age": [20 + i % 50 for i in range(n)],
            "score": [i / 4 for i in range(n)],
            "seen": pd.to_datetime(
                [1_600_000_000_000 + i * 1000 for i in range(n)], unit="ms", utc=True
            ),
        }
    )


USERS = Mapping.simple(
    row_key="id",
    columns=["p:name=name", "p:age=age:long", "s:score=score:double"],
    timestamp="seen",
)


def write(df, root, table, **options):
    w = df.write.format("cellstore").mode("append").option("root", root).option("table", table)
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


def test_write_equals_the_loader_and_commits_once(spark, root):
    wh = connect(root)
    spark_t = wh.create_table("users_spark", families=["p", "s"], splits=[b"u0100", b"u0200"])
    dask_t = wh.create_table("users_dask", families=["p", "s"], splits=[b"u0100", b"u0200"])
    data = users(300)
    dask_t.load(data, mapping=USERS)
    before = spark_t.version
    sdf = spark.createDataFrame(data).repartition(3)
    write(sdf, root, "users_spark", mapping=json.dumps(USERS.to_dict()), memory_budget=str(1 << 20))
    after = wh.table("users_spark")
    assert after.version == before + 1  # one commit for every task's files
    assert len({f.seq for f in after.files}) == 1
    assert {f.region for f in after.files} == {r.id for r in after.regions}
    for entry in after.files:
        assert check(
            after.fs, after.file_path(entry), region=after.metadata.region(entry.region)
        ).ok
    assert rows(after.scan().to_arrow()) == rows(dask_t.scan().to_arrow())
    report = json.loads(
        spark_t.fs.open(f"{after.path}/_loads/{after.files[0].load_id}.report.json").read()
    )
    assert report["rows"] == 300 and report["mode"] == "spark" and report["inputs"] == 3


def test_write_with_inline_options_and_a_row_key_spec(spark, root, events):
    before = events.refresh().version
    sdf = spark.createDataFrame(
        pd.DataFrame({"user": ["w1", "w2", "w1"], "ts": [100, 100, 101], "n": [1, 2, 3]})
    )
    write(sdf, root, "events", columns="d:n=n:long", now_ms=str(NOW))
    t = connect(root).table("events")
    assert t.version == before + 1
    got = t.scan(key={"user": "w1"}, key_columns=True).to_arrow()
    assert sorted(got.column("key_ts").to_pylist()) == [100, 101]
    assert set(got.column("ts").to_pylist()) == {NOW}  # no timestamp column: the load time


def test_write_reads_back_through_spark(spark, root):
    connect(root).create_table("roundtrip", families=["p", "s"])
    data = users(50, offset=5000)
    write(spark.createDataFrame(data), root, "roundtrip", mapping=json.dumps(USERS.to_dict()))
    back = read(
        spark,
        root,
        "roundtrip",
        shape="wide",
        column_types='{"p:name": "string", "p:age": "long", "s:score": "double"}',
    )
    got = back.toArrow().to_pandas().sort_values("row").reset_index(drop=True)
    want = data.sort_values("id").reset_index(drop=True)
    assert [r.decode() for r in got["row"]] == list(want["id"])
    assert list(got["p:age"]) == list(want["age"])
    assert [None if pd.isna(x) else x for x in got["p:name"]] == [
        None if pd.isna(x) else x for x in want["name"]
    ]


def test_failed_write_leaves_the_table_unchanged(spark, root):
    wh = connect(root)
    t = wh.create_table("failing", families=["p", "s"], splits=[b"u0020"])
    t.load(users(10), mapping=USERS)
    version, before = t.version, t.scan().to_arrow()
    data = users(40).astype({"age": str})
    data.loc[33, "age"] = "not a number"
    sdf = spark.createDataFrame(data).repartition(4)
    with pytest.raises(Exception, match="age") as err:
        write(sdf, root, "failing", mapping=json.dumps(USERS.to_dict()), load_id="failed")
    assert "spark partition" in str(err.value)
    again = wh.table("failing")
    assert again.version == version
    assert rows(again.scan().to_arrow()) == rows(before)
    # Failed tasks and the driver's abort delete what they wrote; a task that finished
    # after the abort may leave a file behind, unreferenced (vacuum removes it).
    live = {again.file_path(f) for f in again.files}
    data = {p for p in t.fs.find(f"{t.path}/data") if p.endswith(".parquet")}
    assert live <= data
    left = {p.rsplit("/", 1)[-1].split("-")[0] for p in data - live}
    assert left <= {"failed"}


def test_skip_bad_records_commits_the_good_ones(spark, root):
    t = connect(root).create_table("skipping", families=["p", "s"])
    data = users(20).astype({"age": str})
    data.loc[[3, 7], "age"] = "x"
    write(
        spark.createDataFrame(data).repartition(2),
        root,
        "skipping",
        mapping=json.dumps(USERS.to_dict()),
        skip_bad_records="true",
        load_id="load-skip",
    )
    t.refresh()
    assert t.scan(shape="wide", columns=["p:age"]).to_arrow().num_rows == 18
    report = json.loads(t.fs.open(f"{t.path}/_loads/load-skip.report.json").read())
    assert report["bad-records"] == 2 and report["rows"] == 18
    bad = t.fs.open(f"{t.path}/_loads/load-skip.bad.jsonl").read().decode().splitlines()
    assert all("<spark partition" in json.loads(b)["source"] for b in bad)


def test_load_id_is_idempotent_and_overwrite_is_refused(spark, root):
    t = connect(root).create_table("idem", families=["p", "s"])
    sdf = spark.createDataFrame(users(10))
    write(sdf, root, "idem", mapping=json.dumps(USERS.to_dict()), load_id="once")
    version = t.refresh().version
    write(sdf, root, "idem", mapping=json.dumps(USERS.to_dict()), load_id="once")
    assert t.refresh().version == version
    with pytest.raises(Exception, match="never overwritten"):
        (
            sdf.write.format("cellstore")
            .mode("overwrite")
            .option("root", root)
            .option("table", "idem")
            .option("mapping", json.dumps(USERS.to_dict()))
            .save()
        )
    with pytest.raises(Exception, match="no column"):
        write(sdf.drop("age"), root, "idem", mapping=json.dumps(USERS.to_dict()))


# -------------------------------------------------------------------------------- S3
@pytest.mark.s3
def test_read_and_write_on_s3(spark, s3_root, s3_options):
    wh = connect(s3_root, storage_options=s3_options)
    t = wh.create_table("ns:s3", families=["p", "s"], splits=[b"u0010"])
    opts = json.dumps(s3_options)
    write(
        spark.createDataFrame(users(20)).repartition(2),
        s3_root,
        "ns:s3",
        storage_options=opts,
        mapping=json.dumps(USERS.to_dict()),
    )
    t.refresh()
    assert t.version == 2
    df = read(spark, s3_root, "ns:s3", storage_options=opts)
    assert df.rdd.getNumPartitions() == 2
    same(df, t.scan().to_arrow())

"""The PySpark data source: reads equal the Dask reader's, pushdown narrows the plan,
writes are one-commit bulk loads through the loader's mapping, failed writes leave nothing.

PySpark runs in local mode (``local[2]``), one session for the module, started without
``PYSPARK_PYTHON`` (``register`` points the format's workers at this interpreter). Tables live on local disk (Spark's Python workers are other processes, so
``memory://`` is not shared with them) or on S3 (moto's server on 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
import sys
import tarfile
import zipfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

if not os.environ.get("CELLSTORE_REQUIRE_DEV"):  # CI installs the dev extra: never skip there
    pytest.importorskip("pyspark", reason='PySpark is in the dev extra: pip install -e ".[dev]"')

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from cellstore.core.filterparse import parse_filter
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import InvalidArgumentError
from cellstore.loader import Mapping
from cellstore.reader import ScanOptions
from cellstore.reader.options import text_forms
from cellstore.spark import (
    CellstoreReader,
    ScanPartition,
    arrow_schema,
    register,
    spark_plans_each_query,
    spark_schema,
    to_pandas,
)
from cellstore.spark.options import READ_OPTIONS, ReadOptions, RowBounds, WriteOptions
from cellstore.spark.source import CellstoreDataSource, pushdown_enabled
from cellstore.storefiles import check
from cellstore.warehouse import connect
from requirements import unavailable
from strategies import cells_table

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    unavailable("java", "PySpark needs Java (17); none on this machine")

pytestmark = [
    pytest.mark.slow,
    # PySpark 4.x warns about pandas 3 when it converts pandas frames; not ours.
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]
if tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 2):
    # PySpark 4.1's driver leaves the sockets it reads results from to the GC; not ours.
    pytestmark += [
        pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
        pytest.mark.filterwarnings(
            "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
        ),
    ]

PUT, DELETE, DELETE_COLUMN = 4, 8, 12
NOW = 1_700_000_000_000


@pytest.fixture(scope="module")
def spark():
    """A local session started without ``PYSPARK_PYTHON``, as a user would start one.

    Spark would run its Python workers as ``python3`` from ``PATH``; ``register`` makes the
    ``cellstore`` format run on this interpreter instead, so every test here shows that
    the source works without the variable.
    """
    saved = {k: os.environ.pop(k, None) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    session = (
        SparkSession.builder.master("local[2]")
        .appName("cellstore-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
    for k, v in saved.items():
        if v is not None:
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


def frame(spark, data: pd.DataFrame):
    """A Spark DataFrame of ``data``, through Arrow (PySpark 4.1.0 turns pandas' None to 'nan')."""
    return spark.createDataFrame(pa.Table.from_pandas(data, preserve_index=False))


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
    pytest.param(  # R7.1: each family's own range replaces the read-wide one
        {"time_range": "2,5", "family_time_ranges": "g:0:3", "max_versions": "3"},
        {"time_range": (2, 5), "family_time_ranges": {"g": (0, 3)}, "max_versions": 3},
        id="family-time-range",
    ),
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


def test_column_types_table_uses_the_recorded_codecs(spark, root, events, salted):
    """Issue 29: ``column_types=table`` (as Python's ``column_types="table"``), any case."""
    assert ReadOptions.parse({"root": "/wh", "table": "t", "column_types": " Table "}).scan == {
        "column_types": "table"
    }
    df = read(spark, root, "events", shape="wide", column_types="table")
    assert df.columns == ["row", "user", "ts", "d:n"]
    assert df.schema["d:n"].dataType.simpleString() == "bigint"
    same(df, events.scan(shape="wide", column_types="table").to_arrow())
    assert sorted(r["d:n"] for r in df.collect()) == list(range(24))
    typed = read(spark, root, "salted", shape="wide", column_types="table").toArrow()
    assert typed.schema.field("f:v").type == pa.string()  # recorded by the mapping load


def test_row_key_spec_columns_and_key_predicates(spark, root, events):
    df = read(spark, root, "events", shape="wide", column_types='{"d:n": "long"}')
    assert df.columns == ["row", "user", "ts", "d:n"]
    same(df, events.scan(shape="wide", column_types={"d:n": "long"}).to_arrow())
    keyed = read(spark, root, "events", key='{"user": "u1", "ts": [5, 20]}', key_columns="true")
    want = events.scan(key={"user": "u1", "ts": (5, 20)}, key_columns=True).to_arrow()
    same(keyed, want)
    assert sorted(set(keyed.toArrow().column("key_ts").to_pylist())) == [5, 9, 13, 17]


def plain(value):
    """A pandas cell as Python: missing values (None, NaN, pd.NA) as None."""
    if value is None or (not isinstance(value, bytes | str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


@pytest.fixture(scope="module")
def unsigned(root):
    """Key fields Spark widens: uint64 to decimal(20,0), uint8 to smallint; float32 kept."""
    spec = RowKeySpec(
        fields=(
            KeyField(name="u", type="uint64"),
            KeyField(name="x", type="uint8"),
            KeyField(name="fl", type="float32"),
        )
    )
    t = connect(root).create_table("unsigned", families=["d"], row_key=spec)
    df = pd.DataFrame(
        {"u": [2**63 + i for i in range(6)], "x": range(6), "fl": [i / 4 for i in range(6)]}
    )
    df["n"] = range(6)
    t.load(df, mapping=Mapping.simple(row_key=None, columns=["d:n=n:long"]), key_advice="off")
    return t


TO_PANDAS = [
    pytest.param("ns:web", {}, {}, id="cells"),
    pytest.param(  # sparse: g:x is null in most rows
        "ns:web",
        {"shape": "wide", "column_types": '{"f:a": "string", "f:n": "long", "g:x": "string"}'},
        {"shape": "wide", "column_types": {"f:a": "string", "f:n": "long", "g:x": "string"}},
        id="wide-nulls",
    ),
    pytest.param(
        "ns:web",
        {"shape": "wide", "columns": "g:x,f:a"},
        {"shape": "wide", "columns": ["g:x", "f:a"]},
        id="wide-bytes",
    ),
    pytest.param("ns:web", {"start_row": "zzz"}, {"start_row": "zzz"}, id="empty"),
    pytest.param(
        "events",
        {"shape": "wide", "column_types": '{"d:n": "long"}'},
        {"shape": "wide", "column_types": {"d:n": "long"}},
        id="key-fields",
    ),
    pytest.param("unsigned", {"key_columns": "true"}, {"key_columns": True}, id="unsigned"),
]


def pandas_frame(spark, df, how: str) -> pd.DataFrame:
    """``df`` as pandas: Spark's ``toPandas`` with Arrow on or off, or ``cellstore.spark.to_pandas``."""
    if how == "helper":
        return to_pandas(df)
    key = "spark.sql.execution.arrow.pyspark.enabled"
    saved = spark.conf.get(key)
    spark.conf.set(key, "true" if how == "arrow" else "false")
    try:
        return df.toPandas()
    finally:
        spark.conf.set(key, saved)


# PySpark <= 4.3's own dtype pass calls Series.astype(copy=False) on every numeric column,
# which pandas 3 deprecates (Pandas4Warning). Ignored only where PySpark raises it.
PYSPARK_COPY_WARNING = "ignore:The copy keyword is deprecated:DeprecationWarning:pyspark"


@pytest.mark.filterwarnings(PYSPARK_COPY_WARNING)
@pytest.mark.parametrize("how", ["arrow", "rows", "helper"])
@pytest.mark.parametrize(("table", "options", "kwargs"), TO_PANDAS)
def test_to_pandas_equals_the_cells(
    spark, root, web, events, unsigned, how, table, options, kwargs
):
    """``df.toPandas()`` works on the pandas the project installs (3.x), with Spark's Arrow
    conversion on and off, and so does ``to_pandas``; the values are the scan's (issue 17)."""
    want = connect(root).table(table).scan(**kwargs).to_arrow()
    got = pandas_frame(spark, read(spark, root, table, **options), how)
    assert list(got.columns) == want.column_names
    assert len(got) == want.num_rows
    if table == "ns:web" and kwargs.get("shape") == "wide":
        assert got["g:x"].isna().any() and got["g:x"].notna().any()
    for name in want.column_names:
        assert [plain(v) for v in got[name].tolist()] == want.column(name).to_pylist(), name


@pytest.mark.filterwarnings("error::DeprecationWarning", "error::FutureWarning")
def test_to_pandas_raises_no_warning(spark, root, web):
    """Under ``filterwarnings = error`` (this project's): the helper converts without
    PySpark's deprecated ``astype(copy=False)``, so it neither warns nor fails."""
    df = read(spark, root, "ns:web", shape="wide", column_types='{"f:n": "long", "g:x": "string"}')
    got = to_pandas(df)
    want = web.scan(shape="wide", column_types={"f:n": "long", "g:x": "string"}).to_arrow()
    assert got["f:n"].dtype == "int64" and got["f:n"].tolist() == want.column("f:n").to_pylist()
    assert got["row"].tolist() == want.column("row").to_pylist()


# --------------------------------------------------------------------------- pushdown
PLANS_EACH_QUERY = spark_plans_each_query()
ROW = ("row",)


def pushed_read(root, table, filters: list[Filter], **options):
    """Plan and run a read the way Spark's Python workers do, with ``filters`` pushed.

    Returns:
        The filters left for Spark, the number of partitions, and the rows read.
    """
    opts = ReadOptions.parse({"root": root, "table": table, **options})
    scan = connect(root).table(table).scan(**opts.scan_kwargs())
    schema = spark_schema(scan.partition_reader().schema())
    reader = CellstoreReader(opts, schema)
    keep = reader.pushFilters(filters)
    parts = reader.partitions()
    batches = [b for p in parts for b in reader.read(p)]
    return keep, len(parts), pa.Table.from_batches(batches, schema=arrow_schema(schema))


def test_row_filters_narrow_the_plan(root, web):
    keep, n, got = pushed_read(root, "ns:web", [])
    assert (keep, n) == ([], 3)
    assert rows(got) == rows(web.scan().to_arrow())
    cases = [
        ([GreaterThanOrEqual(ROW, b"r012"), LessThan(ROW, b"r018")], 1, {"stop_row": "r018"}),
        ([GreaterThan(ROW, b"r008"), LessThanOrEqual(ROW, b"r011")], 2, {}),
        ([EqualTo(ROW, b"r025")], 1, {}),
        ([GreaterThanOrEqual(ROW, "r027")], 1, {}),  # a string compares as its UTF-8 bytes
    ]
    wants = [
        web.scan(start_row="r012", stop_row="r018"),
        web.scan(start_row="r008\x00", stop_row="r011\x00"),
        web.scan(start_row="r025", stop_row="r025\x00"),
        web.scan(start_row="r027"),
    ]
    for (filters, parts, _), want in zip(cases, wants, strict=True):
        keep, n, got = pushed_read(root, "ns:web", filters)
        assert keep == [] and n == parts  # exact: Spark need not filter again
        assert rows(got) == rows(want.to_arrow())
    keep, n, got = pushed_read(root, "ns:web", [GreaterThan(ROW, b"r020"), LessThan(ROW, b"r010")])
    assert (keep, n, got.num_rows) == ([], 0, 0)
    keep, _, got = pushed_read(root, "ns:web", [LessThan(ROW, b"r015")], start_row="r005")
    assert rows(got) == rows(web.scan(start_row="r005", stop_row="r015").to_arrow())


def test_in_family_and_unpushable_filters(root, web):
    isin = In(ROW, (b"r003", b"r004"))
    keep, n, got = pushed_read(root, "ns:web", [isin])
    assert keep == [isin] and n == 1  # the least..greatest range; Spark checks the list
    assert rows(got) == rows(web.scan(start_row="r003", stop_row="r005").to_arrow())
    fam = EqualTo(("family",), "g")
    keep, _, got = pushed_read(root, "ns:web", [fam, LessThan(ROW, b"r010")])
    assert keep == []
    assert rows(got) == rows(web.scan(families=["g"], stop_row="r010").to_arrow())
    ts = GreaterThanOrEqual(("ts",), 3)  # a time range is not "filter the newest version"
    keep, _, got = pushed_read(root, "ns:web", [ts])
    assert keep == [ts] and rows(got) == rows(web.scan().to_arrow())
    keep, _, _ = pushed_read(root, "ns:web", [fam], columns="f:a")
    assert keep == [fam]  # the scan names its columns: families are not narrowed


def test_pushed_filters_on_a_salted_table(root, salted):
    keep, n, got = pushed_read(root, "salted", [EqualTo(ROW, b"k017")])
    assert keep == [] and n == 4  # the salt of a bare key range is unknown
    assert got.column("value").to_pylist() == [b"v17"]
    _, _, got = pushed_read(root, "salted", [GreaterThanOrEqual(ROW, b"k030")])
    assert rows(got) == rows(salted.scan(start_row="k030").to_arrow())


def test_reader_state_is_a_function_of_the_last_push(root, web):
    options = {"root": root, "table": "ns:web", "start_row": "r005", "now_ms": str(NOW)}
    opts = ReadOptions.parse(options)
    schema = spark_schema(web.scan().partition_reader().schema())
    reader = CellstoreReader(opts, schema)
    assert len(reader.partitions()) == 3
    reader.pushFilters([GreaterThanOrEqual(ROW, b"r025"), EqualTo(("family",), "g")])
    assert len(reader.partitions()) == 1
    assert len(reader.partitions()) == 1  # planned again, same answer
    reader.pushFilters([])  # a new query with no filters: back to the options' scan
    assert [p.task for p in reader.partitions()] == web.scan(start_row="r005", now_ms=NOW).plan()
    reader.pushFilters([LessThan(ROW, b"r008")])
    want = web.scan(start_row="r005", stop_row="r008", now_ms=NOW).plan()
    assert [p.task for p in reader.partitions()] == want


def test_pushdown_option_follows_spark():
    def opts(value: str | None) -> ReadOptions:
        extra = {} if value is None else {"pushdown": value}
        return ReadOptions.parse({"root": "memory://x", "table": "t", **extra})

    assert opts(None).pushdown is None and opts("AUTO").pushdown is None
    assert spark_plans_each_query("4.1.0") is False
    assert spark_plans_each_query("4.3.0") is False
    assert spark_plans_each_query("5.0.0.dev0") is True
    assert spark_plans_each_query("5.1.2") is True
    for version in ("4.1.0", "4.3.0"):
        assert pushdown_enabled(opts(None), version=version) is False
        assert pushdown_enabled(opts("false"), version=version) is False
        with pytest.raises(InvalidArgumentError, match="reuses a DataFrame's pushed-down plan"):
            pushdown_enabled(opts("true"), version=version)
    assert pushdown_enabled(opts(None), version="5.0.0") is True
    assert pushdown_enabled(opts("false"), version="5.0.0") is False
    with pytest.raises(InvalidArgumentError, match="auto, true or false"):
        opts("sometimes")


def count(df) -> int:
    return df.count()


def collect(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def test_each_query_on_one_dataframe_is_planned_for_its_own_filters(spark, root, web):
    """Issue 18: count, filtered count, count again on one DataFrame (then more mixes)."""
    df = read(spark, root, "ns:web")  # pushdown: auto
    full = web.scan().to_arrow()
    row = F.col("row")

    def want(**kwargs) -> list[tuple]:
        return sorted(rows(web.scan(**kwargs).to_arrow()))

    assert df.count() == full.num_rows
    assert df.filter(row >= F.lit(b"r012")).count() == len(want(start_row="r012"))
    assert df.count() == full.num_rows  # was the filtered count: a stale plan
    steps = [
        (collect, row < F.lit(b"r005"), want(stop_row="r005")),
        (collect, None, sorted(rows(full))),
        (count, row >= F.lit(b"r020"), len(want(start_row="r020"))),
        (count, row >= F.lit(b"r025"), len(want(start_row="r025"))),  # a different filter
        (collect, F.col("family") == "g", want(families=["g"])),
        (count, F.length(row) > 0, full.num_rows),  # a filter Spark cannot push
        (collect, (row >= F.lit(b"r010")) & (row < F.lit(b"r011")), want(row_prefix="r010")),
        (count, None, full.num_rows),
    ]
    for action, condition, expected in steps:
        target = df if condition is None else df.filter(condition)
        assert action(target) == expected, (action.__name__, condition)


def test_explicit_pushdown_where_spark_reuses_plans_is_refused(spark, root, web):
    if PLANS_EACH_QUERY:
        df = read(spark, root, "ns:web", pushdown="true")
        narrowed = df.filter(F.col("row") >= F.lit(b"r027"))
        assert narrowed.rdd.getNumPartitions() == 1
        same(narrowed, web.scan(start_row="r027").to_arrow())
        assert df.count() == web.scan().to_arrow().num_rows
    else:
        with pytest.raises(Exception, match="reuses a DataFrame's pushed-down plan"):
            read(spark, root, "ns:web", pushdown="true").count()
        df = read(spark, root, "ns:web", pushdown="false")
        assert df.filter(F.col("row") >= F.lit(b"r027")).rdd.getNumPartitions() == 3


class ForcedPushdown(CellstoreDataSource):
    """The source with pushdown forced on, whatever the Spark (to check the version gate)."""

    @classmethod
    def name(cls) -> str:
        return "cellstore_forced_pushdown"

    def reader(self, schema):
        return CellstoreReader(ReadOptions.parse(self.options), schema)


def test_the_version_gate_matches_what_spark_does(spark, root, web):
    """Spark before 5.0 reuses a pushed-down plan for a later unfiltered query; later not."""
    from pyspark import cloudpickle

    module, context = sys.modules[__name__], spark.sparkContext
    cloudpickle.register_pickle_by_value(module)  # workers cannot import this test module
    context.pythonExec = sys.executable  # as ``register`` does for the cellstore format
    try:
        spark.dataSource.register(ForcedPushdown)
    finally:
        cloudpickle.unregister_pickle_by_value(module)
        context.pythonExec = "python3"
    df = (
        spark.read.format("cellstore_forced_pushdown")
        .option("root", root)
        .option("table", "ns:web")
        .load()
    )
    full = web.scan().to_arrow().num_rows
    assert df.count() == full
    ranged = df.filter(F.col("row") >= F.lit(b"r027")).count()
    assert ranged == web.scan(start_row="r027").to_arrow().num_rows
    assert (df.count() == full) is PLANS_EACH_QUERY  # False: Spark's stale plan (ranged rows)


def test_workers_run_without_pyspark_python(spark, root, web):
    assert "PYSPARK_PYTHON" not in os.environ
    assert spark.sparkContext.pythonExec == "python3"  # Spark's default for other code
    assert read(spark, root, "ns:web").count() == web.scan().to_arrow().num_rows


def test_without_pushdown_spark_filters_a_reused_dataframe(spark, root, web):
    df = read(spark, root, "ns:web", pushdown="false")
    narrowed = df.filter(F.col("row") >= F.lit(b"r015"))
    assert narrowed.rdd.getNumPartitions() == 3  # Spark filters after reading everything
    same(narrowed, web.scan(start_row="r015").to_arrow())
    assert df.count() == web.scan().to_arrow().num_rows  # the same DataFrame, unfiltered


def test_arrow_schema_round_trips_the_scan_schemas(web, events):
    """Batches are built in the Arrow schema Spark checks them against (no private API)."""
    scans = [
        web.scan(),
        web.scan(shape="wide", column_types={"f:a": "string", "f:n": "long"}),
        events.scan(shape="wide", column_types={"d:n": "long"}),
        events.scan(key={"user": "u1"}, key_columns=True),
    ]
    for scan in scans:
        schema = scan.partition_reader().schema()
        assert arrow_schema(spark_schema(schema)).equals(schema)
    from pyspark.sql.types import MapType, StringType, StructField, StructType

    odd = StructType([StructField("m", MapType(StringType(), StringType()))])
    with pytest.raises(InvalidArgumentError, match="cannot read into Spark type map"):
        arrow_schema(odd)


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
    sdf = frame(spark, data).repartition(3)
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
    sdf = frame(
        spark, pd.DataFrame({"user": ["w1", "w2", "w1"], "ts": [100, 100, 101], "n": [1, 2, 3]})
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
    write(frame(spark, data), root, "roundtrip", mapping=json.dumps(USERS.to_dict()))
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
    sdf = frame(spark, data).repartition(4)
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
        frame(spark, data).repartition(2),
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
    sdf = frame(spark, users(10))
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
        frame(spark, users(20)).repartition(2),
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


# ------------------------------------------------------------- HBase data read in place
VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
BIGTABLE = VECTORS / "google-bigtable-hbase" / "EndToEndIT-snapshot.zip"
NS_UPGRADE = VECTORS / "apache-hbase" / "TestNamespaceUpgrade.0.98.tgz"
needs_vectors = pytest.mark.needs(
    need="vectors",
    present=BIGTABLE.exists() and NS_UPGRADE.exists(),
    reason="HBase test vectors not present",
)


@pytest.fixture(scope="module")
def hbase_export(tmp_path_factory) -> str:
    """The exported snapshots (10 regions, 100 rows) unpacked in place of an export root."""
    d = tmp_path_factory.mktemp("hbase-export")
    with zipfile.ZipFile(BIGTABLE) as z:
        z.extractall(d)
    return str(d / "data")


@pytest.fixture(scope="module")
def hbase094(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("hbase094")
    with tarfile.open(NS_UPGRADE) as t:
        t.extractall(d, filter="data")
    return str(d / "hbase")


def hbase_read(spark, root, **options):
    r = spark.read.format("cellstore").option("hbase.root", root)
    for k, v in options.items():
        r = r.option(k.replace("_dot_", "."), v)
    return r.load()


HBASE_READS = [
    pytest.param({}, {}, id="all"),
    pytest.param({"start_row": "15", "stop_row": "47"}, {"start_row": "15", "stop_row": "47"}),
    pytest.param({"row_prefix": "6"}, {"row_prefix": "6"}, id="prefix"),
    pytest.param({"columns": "cf:a"}, {"columns": ["cf:a"]}, id="columns"),
    pytest.param({"time_range": "0,1617828991"}, {"time_range": (0, 1617828991)}, id="time"),
    pytest.param({"time_range": "0,1617828990"}, {"time_range": (0, 1617828990)}, id="none"),
    pytest.param(
        {"filter": "ValueFilter(=, 'substring:e4')"},
        {"filter": parse_filter("ValueFilter(=, 'substring:e4')")},
        id="filter",
    ),
    pytest.param({"memory_budget": "1"}, {"memory_budget": 1}, id="small-tasks"),
]


@needs_vectors
@pytest.mark.parametrize(("options", "kwargs"), HBASE_READS)
def test_hbase_snapshot_reads_equal_open_snapshot(spark, hbase_export, options, kwargs):
    from cellstore.hbase import open_snapshot

    df = hbase_read(spark, hbase_export, hbase_dot_snapshot="test-snapshot", **options)
    scan = open_snapshot(hbase_export, "test-snapshot").scan(**kwargs)
    want = scan.to_arrow()
    assert df.rdd.getNumPartitions() == max(1, len(scan.plan()))
    same(df, want)
    if options.get("time_range") == "0,1617828990":
        assert want.num_rows == 0  # the cells are at 1617828990: max is exclusive (R7.1)
    else:
        assert want.num_rows > 0


@needs_vectors
def test_hbase_snapshot_independent_rows_and_wide_shape(spark, hbase_export):
    # Independent of the reader: the snapshot holds rows 00..99, cf:a=value<N> (README).
    df = hbase_read(spark, hbase_export, **{"hbase.snapshot": "test-snappy-snapshot"})
    got = sorted((r["row"], r["value"]) for r in df.collect())
    assert got == [(f"{i:02d}".encode(), f"value{i}".encode()) for i in range(100)]
    wide = hbase_read(
        spark,
        hbase_export,
        **{"hbase.snapshot": "test-snapshot", "shape": "wide", "column_types": "cf:a=string"},
    )
    assert [(f.name, f.dataType.simpleString()) for f in wide.schema] == [
        ("row", "binary"),
        ("cf:a", "string"),
    ]
    assert wide.filter(F.col("row") == F.lit(b"42")).collect()[0]["cf:a"] == "value42"


@needs_vectors
@pytest.mark.parametrize(("raw", "versions"), [("false", None), ("true", "10")])
def test_hbase_table_of_a_094_root(spark, hbase094, raw, versions):
    from cellstore.hbase import open_table

    options = {
        "hbase.table": "data",
        "raw": raw,
        **({"max_versions": versions} if versions else {}),
    }
    df = hbase_read(spark, hbase094, **options)
    want = open_table(hbase094, "data").scan(
        raw=raw == "true", max_versions=int(versions) if versions else None
    )
    same(df, want.to_arrow())
    types = set(df.toArrow().column("type").to_pylist())
    assert (DELETE_COLUMN in types) is (raw == "true")  # markers only in raw scans (R5)


@needs_vectors
def test_hbase_pushed_filters_narrow_the_regions(hbase_export):
    from cellstore.hbase import open_snapshot

    table = open_snapshot(hbase_export, "test-snapshot")
    opts = ReadOptions.parse({"hbase.root": hbase_export, "hbase.snapshot": "test-snapshot"})
    schema = spark_schema(table.scan().partition_reader().schema())
    reader = CellstoreReader(opts, schema)
    assert len(reader.partitions()) == 10  # one task per region
    keep = reader.pushFilters([GreaterThanOrEqual(ROW, b"35"), LessThan(ROW, b"52")])
    parts = reader.partitions()
    assert keep == [] and len(parts) == 3  # regions [30,40), [40,50), [50,60)
    got = pa.Table.from_batches([b for p in parts for b in reader.read(p)])
    assert got.column("row").to_pylist() == [str(i).encode() for i in range(35, 52)]
    fam = EqualTo(("family",), "cf")
    assert reader.pushFilters([fam, EqualTo(ROW, b"07")]) == []
    (part,) = reader.partitions()
    assert pickle.loads(pickle.dumps(part)).task == part.task
    assert [b.num_rows for b in reader.read(part)] == [1]
    reader.pushFilters([EqualTo(("family",), "nope")])
    assert reader.partitions() == []


@needs_vectors
def test_hbase_options_are_checked(spark, hbase_export):
    base = {"hbase.root": hbase_export}
    opts = ReadOptions.parse({**base, "HBase.Table": "ns:t", "storage_options": '{"a": 1}'})
    assert opts.hbase is not None and opts.hbase.table == "ns:t" and opts.hbase.snapshot is None
    assert opts.hbase.use_meta is True
    no_meta = ReadOptions.parse({**base, "hbase.table": "t", "hbase.use_meta": "false"})
    assert no_meta.hbase is not None and no_meta.hbase.use_meta is False
    assert opts.storage_options == {"a": 1} and opts.root == hbase_export
    bad = [
        ({**base, "hbase.snapshot": "s", "hbase.table": "t"}, "exactly one of"),
        ({**base}, "exactly one of"),
        ({"hbase.snapshot": "s"}, "'hbase.root'"),
        ({**base, "hbase.snapshot": "s", "version": "2"}, r"\['version'\] do not apply"),
        ({**base, "hbase.snapshot": "s", "root": "/wh"}, "do not apply"),
        ({**base, "hbase.snapshot": "s", "colums": "x"}, "unknown cellstore option"),
    ]
    for options, message in bad:
        with pytest.raises(InvalidArgumentError, match=message):
            ReadOptions.parse(options)
    with pytest.raises(InvalidArgumentError, match="read in place, never written"):
        WriteOptions.parse({"root": "/wh", "table": "t", "hbase.root": "/h", "columns": "f:a=a"})
    with pytest.raises(Exception, match=r"'nope'.*test-snappy-snapshot"):
        _ = hbase_read(spark, hbase_export, **{"hbase.snapshot": "nope"}).schema
    with pytest.raises(Exception, match=r"InvalidFamilyError.*nope"):
        hbase_read(spark, hbase_export, **{"hbase.snapshot": "test-snapshot", "families": "nope"})


@needs_vectors
@pytest.mark.s3
def test_hbase_snapshot_on_s3(spark, hbase_export, s3_root, s3_options):
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)
    fs.put(hbase_export, s3_root, recursive=True)
    fs.invalidate_cache()
    df = hbase_read(
        spark,
        s3_root,
        **{"hbase.snapshot": "test-snapshot", "storage_options": json.dumps(s3_options)},
    )
    assert df.rdd.getNumPartitions() == 10
    rows_ = sorted(r["row"] for r in df.filter(F.col("row") >= F.lit(b"90")).collect())
    assert rows_ == [str(i).encode() for i in range(90, 100)]


# ---------------------------------------------------------------- options from ScanOptions
def test_spark_read_options_are_the_text_forms():
    """Spark read options are ScanOptions' text forms (a new scan option needs no Spark
    edit); kept here, where PySpark is installed (tests/test_scan_options.py checks the
    rest of the options' consistency)."""
    forms = text_forms()
    assert set(forms) <= READ_OPTIONS
    assert {"reversed", "limit"}.isdisjoint(forms)  # a Spark read has neither
    o = ReadOptions.parse(
        {"root": "/wh", "table": "t", "row_offset_per_family": "2", "decode_errors": "NULL"}
    )
    assert o.scan == {"row_offset_per_family": 2, "decode_errors": "null"}
    assert o.scan_options() == ScanOptions(row_offset_per_family=2, decode_errors="null")
    assert ReadOptions.parse({"root": "/wh", "table": "t", "version": "3"}).version == 3


# ------------------------------------------------------------- read-optimized (issue 28)
def _optimized_like_the_source(spark, root: str, t, columns):
    """``read_optimized`` of ``t`` and the source's wide scan, asserted equal (columns and
    rows, row order aside); returns both."""
    from cellstore.spark.optimized import read_optimized

    got = read_optimized(spark, root=root, table=t.name, columns=columns)
    want = t.scan(shape="wide", columns=columns, column_types="table", key_columns=False)
    want = want.to_arrow()
    assert got.columns == want.column_names
    assert sorted(tuple(r) for r in got.collect()) == sorted(
        tuple(r.values()) for r in want.to_pylist()
    )
    return got, want


def test_read_optimized_equals_the_source(spark, tmp_path: Path) -> None:
    """Column files through Spark's Parquet reader, the rest through the source: the same
    rows and typed values as the ``cellstore`` source's wide shape (docs/format.md 14).

    Region 1 is held by column files only (read by ``spark.read.parquet``); region 2 has a
    later load (overlapping column files) and a delete (a cell file), so it goes through
    the source; a second family adds a join on the row.
    """
    from cellstore import Family
    from cellstore.loader import LoadMapping
    from cellstore.spark.optimized import plan_optimized

    root = str(tmp_path / "wh")
    t = connect(root).create_table(
        "ns:flights",
        families=[
            Family(name="d", max_versions=1, layout="columns"),
            Family(name="i", max_versions=1, layout="columns"),
        ],
        splits=[b"k05000"],
    )
    n = 10_000
    frame = pd.DataFrame(
        {
            "id": [f"k{i:05d}" for i in range(n)],
            "delay": [None if i % 31 == 0 else i / 4 for i in range(n)],
            "dist": list(range(n)),
            "carrier": ["UA" if i % 3 else "DL" for i in range(n)],
        }
    )
    mapping = LoadMapping.simple(
        row_key="id",
        columns=["d:delay=delay:double", "d:dist=dist:long", "i:carrier=carrier:string"],
    )
    t.load(frame, mapping=mapping, key_advice="off")
    later = frame.iloc[6000:6100].assign(delay=-1.0)
    t.load(later, mapping=mapping, key_advice="off")
    t.load_cells(
        cells_table([(b"k07000", "d", b"", 2**62, 14, b"")])  # a DeleteFamily
    )
    t = connect(root).table("ns:flights")
    plan = plan_optimized(t, columns=["d:delay", "i:carrier"])
    assert plan.files and plan.ranges == [(b"k05000", b"")]  # region 1 direct, 2 through
    for columns in (["d:delay", "i:carrier"], ["d:dist"], None):
        _optimized_like_the_source(spark, root, t, columns)


def test_read_optimized_on_keyed_column_files_equals_the_source(spark, tmp_path: Path) -> None:
    """Keyed column files (docs/format.md 14.2) hold key fields, not rows: Spark reads them
    with its Parquet reader, joins the families on the key fields and builds ``row`` in
    Spark SQL; a region with a delta goes through the source; the union equals the
    source's wide shape, for every column choice and for a count. A spec Spark SQL cannot
    encode (a float field) keeps every region on the source."""
    from cellstore import Family
    from cellstore.loader import LoadMapping
    from cellstore.spark.optimized import plan_optimized, read_optimized

    root = str(tmp_path / "wh")
    spec = RowKeySpec(fields=(KeyField(name="carrier"), KeyField(name="n", type="int32")))
    t = connect(root).create_table(
        "keyed",
        families=[Family(name="d", layout="columns"), Family(name="i", layout="columns")],
        row_key=spec,
        splits=[b"DL", b"UA"],
    )
    n = 1200
    frame = pd.DataFrame(
        {
            "carrier": [["AA", "DL", "UA"][i % 3] for i in range(n)],
            "n": [i - 600 for i in range(n)],  # negative ints: the sign bit in the key
            "delay": [None if i % 31 == 0 else i / 4 for i in range(n)],
            "tail": [None if i % 7 == 0 else f"N{i % 50}" for i in range(n)],
        }
    )
    mapping = LoadMapping.from_dict(
        {
            "row_key": spec.to_dict(),
            "cells": [
                {"family": "d", "qualifier": "delay", "value": "delay", "codec": "double"},
                {"family": "i", "qualifier": "tail", "value": "tail", "codec": "string"},
            ],
        }
    )
    t.load(frame, mapping=mapping, key_advice="off")
    t = connect(root).table("keyed")
    plan = plan_optimized(t)
    assert plan.ranges == [] and plan.row_keys == {"d": spec, "i": spec}
    assert all(len(paths) == 3 for paths in plan.files.values())
    # family i misses some rows (no tail): no shared rows, a full join on the key fields
    assert not plan.shared_rows
    later = frame.iloc[2:300:3].assign(delay=-1.0)  # UA rows only: a delta in region 3
    t.load(later, mapping=mapping, key_advice="off")
    t = connect(root).table("keyed")
    assert plan_optimized(t).ranges == [(b"UA", b"")]
    for table, columns in (
        (t, None),
        (t, ["d:delay", "i:tail"]),
        (t, ["i:tail"]),
        (shared := _keyed_pair(root, spec, mapping, frame), None),
        (shared, ["d:delay"]),
    ):
        got, want = _optimized_like_the_source(spark, root, table, columns)
        if columns is None:
            assert got.count() == want.num_rows
    # Spark drops the join of a family whose columns a query does not use
    counted = read_optimized(spark, root=root, table=shared.name).groupBy().count()
    assert "Join" not in counted._jdf.queryExecution().optimizedPlan().toString()
    whole = read_optimized(spark, root=root, table=t.name).groupBy().count()
    assert "Join" in whole._jdf.queryExecution().optimizedPlan().toString()
    floats = connect(root).create_table(
        "floatkey",
        families=[Family(name="d", layout="columns")],
        row_key=RowKeySpec(fields=(KeyField(name="x", type="float64"),)),
    )
    floats.load(
        pd.DataFrame({"x": [0.5, -1.0, 2.0], "delay": [1.0, 2.0, 3.0]}),
        mapping=LoadMapping.from_dict(
            {
                "row_key": {"fields": [{"name": "x", "type": "float64"}]},
                "cells": [
                    {"family": "d", "qualifier": "delay", "value": "delay", "codec": "double"}
                ],
            }
        ),
        key_advice="off",
    )
    float_plan = plan_optimized(connect(root).table("floatkey"))
    assert not float_plan.files and float_plan.ranges == [(b"", b"")]


def test_read_optimized_reads_delta_coded_integer_columns(spark, tmp_path: Path) -> None:
    """Column files write ordered integers (a key's trailing field, a serial number) with
    DELTA_BINARY_PACKED when a trial says it is smaller (docs/format.md 14.2): Spark's own
    Parquet reader takes them, and ``read_optimized`` equals the source."""
    import pyarrow.parquet as pq

    from cellstore import Family
    from cellstore.loader import LoadMapping
    from cellstore.spark.optimized import plan_optimized

    root = str(tmp_path / "wh")
    spec = RowKeySpec(fields=(KeyField(name="carrier"), KeyField(name="n", type="int32")))
    t = connect(root).create_table(
        "deltas", families=[Family(name="d", layout="columns")], row_key=spec
    )
    n = 3000
    frame = pd.DataFrame(
        {
            "carrier": [["AA", "DL", "UA"][i // 1000] for i in range(n)],
            "n": [i * 7 - 5000 for i in range(n)],
            "serial": [10**12 + 3 * i + i % 2 for i in range(n)],
        }
    )
    mapping = LoadMapping.from_dict(
        {
            "row_key": spec.to_dict(),
            "cells": [{"family": "d", "qualifier": "serial", "value": "serial", "codec": "long"}],
        }
    )
    t.load(frame, mapping=mapping, key_advice="off")
    t = connect(root).table("deltas")
    assert plan_optimized(t).files  # read by Spark's Parquet reader
    (entry,) = [e for e in t.files if e.layout == "columns"]
    md = pq.ParquetFile(t.file_path(entry)).metadata
    names = md.schema.names
    for name in ("__key:n", "serial"):
        assert "DELTA_BINARY_PACKED" in md.row_group(0).column(names.index(name)).encodings
    for columns in (None, ["d:serial"]):
        got, want = _optimized_like_the_source(spark, root, t, columns)
        assert got.count() == want.num_rows == n


def test_read_optimized_reads_aliased_columns_from_their_key_fields(spark, tmp_path: Path) -> None:
    """A keyed column file stores no value column equal to a key field (an alias,
    docs/format.md 14.2): Spark's Parquet reader takes the column from the key field's
    column, typed as the column; the result equals the source's, every region is read
    from the files."""
    from cellstore import Family
    from cellstore.loader import LoadMapping
    from cellstore.spark.optimized import plan_optimized

    root = str(tmp_path / "wh")
    spec = RowKeySpec(fields=(KeyField(name="carrier"), KeyField(name="n", type="int32")))
    t = connect(root).create_table(
        "aliased",
        families=[Family(name="d", layout="columns"), Family(name="i", layout="columns")],
        row_key=spec,
        splits=[b"DL"],
    )
    n = 600
    frame = pd.DataFrame(
        {
            "carrier": [["AA", "DL", "UA"][i % 3] for i in range(n)],
            "n": [i - 300 for i in range(n)],
            "delay": [i / 4 for i in range(n)],
        }
    )
    mapping = LoadMapping.from_dict(
        {
            "row_key": spec.to_dict(),
            "cells": [
                {"family": "d", "qualifier": "delay", "value": "delay", "codec": "double"},
                {"family": "i", "qualifier": "carrier", "value": "carrier", "codec": "string"},
                {"family": "i", "qualifier": "n", "value": "n", "codec": "int"},
            ],
        }
    )
    t.load(frame, mapping=mapping, key_advice="off")
    t = connect(root).table("aliased")
    plan = plan_optimized(t)
    assert plan.ranges == [] and dict(plan.aliases["i"]) == {b"carrier": "carrier", b"n": "n"}
    for columns in (None, ["i:carrier", "d:delay"], ["i:n"]):
        _optimized_like_the_source(spark, root, t, columns)


def _keyed_pair(root: str, spec: RowKeySpec, mapping, frame: pd.DataFrame):
    """A two-family keyed table whose families hold the same rows (one load)."""
    from cellstore import Family
    from cellstore.spark.optimized import plan_optimized

    t = connect(root).create_table(
        "shared",
        families=[Family(name="d", layout="columns"), Family(name="i", layout="columns")],
        row_key=spec,
        splits=[b"DL"],
    )
    some = frame.iloc[:600]
    t.load(some.assign(tail="N1", delay=some.delay.fillna(0.5)), mapping=mapping, key_advice="off")
    t = connect(root).table("shared")
    plan = plan_optimized(t)
    assert plan.shared_rows and not plan.ranges
    # values of both families: the source joins them by position, Spark would shuffle
    assert not plan_optimized(t, columns=["d:delay", "i:tail"]).files
    return t


# ------------------------------------------------- row keys in Spark SQL (issue 28, part K)
_KEY_VALUES = {
    "string": ["", "a", "UA", "zz\u00e9\u4e2d", "N123", "x" * 9],
    "bytes": [b"", b"\x01", b"\xff\xfe", b"ab", b"\x7f\x80", b"q" * 9],
    "int8": [-128, -1, 0, 1, 127, 5],
    "int16": [-(2**15), -300, 0, 255, 2**15 - 1, 7],
    "int32": [-(2**31), -1, 0, 20240301, 2**31 - 1, 9000],
    "int64": [-(2**63), -1, 0, 2**40, 2**63 - 1, 1_700_000_000_000],
    "uint8": [0, 1, 127, 128, 255, 9],
    "uint16": [0, 1, 2**15, 2**16 - 1, 300, 9],
    "uint32": [0, 1, 2**31, 2**32 - 1, 70000, 9],
}

_SPECS = [
    # the analytics benchmark's key: terminated strings, ints, an open-ended last string
    (("s", "string", {}), ("d", "int32", {}), ("f", "int32", {}), ("o", "string", {})),
    (("s", "string", {"descending": True}), ("n", "int64", {"descending": True})),
    (("b", "bytes", {"width": 10}), ("u8", "uint8", {}), ("u32", "uint32", {})),
    (("t", "int64", {"reverse_timestamp": True}), ("b", "bytes", {})),
    (("s", "string", {"hash": "md5_prefix", "hash_bytes": 3}), ("i8", "int8", {})),
    (("i", "int32", {"hash": "md5_prefix"}), ("i16", "int16", {"descending": True})),
    (("u16", "uint16", {"hash": "md5_prefix", "hash_bytes": 16}), ("s", "string", {})),
    (("b", "bytes", {"width": 9, "descending": True}), ("n", "int64", {"hash": "md5_prefix"})),
]


def test_row_expression_is_byte_identical_to_the_spec(spark, tmp_path: Path) -> None:
    """Spark's row keys from the key fields, as Spark's Parquet reader gives them from a
    file typed like a keyed column file, equal ``RowKeySpec.encode`` byte for byte for every
    expressible field type and option; inexpressible specs are told apart."""
    import itertools

    import pyarrow.parquet as pq

    from cellstore.spark.rowexpr import (
        expressible,
        key_column,
        key_spark_type,
        row_expression,
    )

    for number, fields in enumerate(_SPECS):
        spec = RowKeySpec(
            fields=tuple(KeyField(name=n, type=t, **kw) for n, t, kw in fields)  # type: ignore[arg-type]
        )
        assert expressible(spec)
        combos = list(itertools.product(*(_KEY_VALUES[t] for _, t, _ in fields)))
        data = pa.table(
            {
                f.name: pa.array([c[i] for c in combos], f.type.arrow_type)
                for i, f in enumerate(spec.fields)
            }
        )
        encoded = spec.encode(data, errors="mask")
        data = data.filter(pa.array(~encoded.bad))
        want = encoded.values.filter(pa.array(~encoded.bad)).to_pylist()
        assert len(want) > len(combos) // 2
        table = pa.table({key_column(f): data.column(f.name) for f in spec.fields})
        table = table.append_column("i", pa.array(range(data.num_rows)))
        # integer key columns as column files may hold them: plain, and delta-coded
        ints = [n for n in table.column_names if pa.types.is_integer(table.schema.field(n).type)]
        for delta in (False, True):
            path = tmp_path / f"keys{number}-{delta}.parquet"
            pq.write_table(
                table,
                path,
                use_dictionary=not delta,
                column_encoding=dict.fromkeys(ints, "DELTA_BINARY_PACKED") if delta else None,
            )
            schema = ", ".join(f"`{key_column(f)}` {key_spark_type(f)}" for f in spec.fields)
            df = (
                spark.read.schema(f"{schema}, i bigint")  # the types read_optimized declares
                .parquet(str(path))
                .select("i", row_expression(spec).alias("row"))
            )
            got = [bytes(r["row"]) for r in sorted(df.collect(), key=lambda r: r["i"])]
            assert got == want, (spec.describe(), delta)
    for fields in (
        (KeyField(name="x", type="float64"),),
        (KeyField(name="x", type="uint64"),),
        (KeyField(name="x", reverse=True),),
        (KeyField(name="x", hash="md5"), KeyField(name="y")),
    ):
        assert not expressible(RowKeySpec(fields=fields))
    assert not expressible(RowKeySpec(fields=(KeyField(name="x"),), salt_buckets=4))
    with pytest.raises(ValueError, match="no Spark SQL encoding"):
        row_expression(RowKeySpec(fields=(KeyField(name="x", type="float32"),)))

"""Spark read: the ``cellstore`` source vs ``spark.read.parquet`` of the same cells (issue 18).

    .venv/bin/python bench/bench_spark.py --rows 1000000          # 10M cells, 2 families
    .venv/bin/python bench/bench_spark.py --rows 100000 --repeats 2

Table as ``bench_dask.py`` (ROWS rows x 5 qualifiers x 2 versions, FAMILIES families,
REGIONS regions); the plain copy is the scan's result (latest versions) as Parquet, one
file per scan task, so both sides hold the same rows. A ``local[2]`` session (this
interpreter's Python workers, Arrow exchange on); per contender:

* ``count``: ``df.count()``;
* ``agg``: a full aggregation that touches every column
  (``groupBy(family).agg(count, sum(length(value)), max(ts), max(row))``);
* ``filtered``: a ``row`` range filter (pushdown ``auto``: Spark filters on 4.x), and the
  same range as the source's ``start_row``/``stop_row`` options (``cellstore range``).

A third contender, ``python-ds``, is a minimal Python data source that reads the plain
copy's files with pyarrow and yields their batches: the floor of Spark's Python Data Source
API (Arrow batches from a Python worker, converted to rows by the JVM, no column pruning),
which any Python source pays before doing any work of its own.

``spark.read.parquet`` answers ``count`` from the footers (no data read); the ``cellstore``
source must run HBase's read semantics over every cell. The first read of each DataFrame
pays the planning (table metadata on the driver); the DataFrame is built once per run, as a
user would. 1 warm-up + REPEATS runs interleaved; min and median wall seconds and the ratio
to the Parquet read. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import pyarrow.parquet as pq
from bench_dask import QUALIFIERS, VERSIONS, make_table, plain_copy


def register_floor(spark) -> None:
    """Register ``python-ds``: a Python data source yielding the plain files' Arrow batches."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from cellstore.spark import spark_schema

    class File(InputPartition):
        def __init__(self, path: str) -> None:
            self.path = path

    class Reader(DataSourceReader):
        def __init__(self, paths: list[str]) -> None:
            self.paths = paths

        def partitions(self):
            return [File(p) for p in self.paths]

        def read(self, partition):
            import pyarrow.parquet as pq

            yield from pq.read_table(partition.path).to_batches(max_chunksize=65_536)

    class Floor(DataSource):
        @classmethod
        def name(cls) -> str:
            return "python-ds"

        def schema(self):
            return spark_schema(pq.read_schema(self.options["paths"].split(",")[0]))

        def reader(self, schema):
            return Reader(self.options["paths"].split(","))

    spark.dataSource.register(Floor)


def session(cores: int):
    """A local Spark session (UI off, loopback, Arrow on) with cellstore registered."""
    from pyspark.sql import SparkSession

    from cellstore.spark import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("cellstore-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "3g")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    register_floor(spark)
    return spark


def interleaved(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Wall seconds of each contender: one warm-up each, then round-robin."""
    for fn in fns.values():
        fn()
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            out[name].append(time.perf_counter() - t0)
    return out


def bench(spark, root: str, *, rows: int, families: int, regions: int, repeats: int) -> None:
    from pyspark.sql import functions as F

    t = make_table(root, f"spark{families}", rows=rows, families=families, regions=regions)
    paths = plain_copy(t, os.path.join(root, f"plain{families}"))
    cells = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    lo, hi = b"user%09d" % (rows // 4), b"user%09d" % (rows // 2)

    def cellstore():
        return spark.read.format("cellstore").option("root", root).option("table", t.name).load()

    def parquet():
        return spark.read.parquet(*paths)

    def floor():
        return spark.read.format("python-ds").option("paths", ",".join(paths)).load()

    def cellstore_range():
        return (
            spark.read.format("cellstore")
            .option("root", root)
            .option("table", t.name)
            .option("start_row", lo.decode())
            .option("stop_row", hi.decode())
            .load()
        )

    def agg(df):
        return (
            df.groupBy("family")
            .agg(
                F.count("*"),
                F.sum(F.length("value")),
                F.max("ts"),
                F.max("row"),
                F.max("qualifier"),
            )
            .collect()
        )

    def ranged(df):
        return df.filter((F.col("row") >= F.lit(lo)) & (F.col("row") < F.lit(hi))).count()

    sources = {"parquet": parquet, "python-ds": floor, "cellstore": cellstore}
    for query, run in (("count", lambda df: df.count()), ("agg", agg), ("filtered", ranged)):
        fns = {
            f"{name} {query}": (lambda mk=mk, run=run: run(mk())) for name, mk in sources.items()
        }
        if query == "filtered":
            fns["cellstore range"] = lambda: cellstore_range().count()
        results = interleaved(fns, repeats)
        floor = min(results[f"parquet {query}"])
        for name, runs in results.items():
            best = min(runs)
            print(
                f"  {name:20s} min {best:6.3f}s  median {statistics.median(runs):6.3f}s  "
                f"{cells / best / 1e6:7.2f} M cells/s  x{best / floor:6.2f} of parquet"
            )
    check = cellstore().count(), parquet().count()
    assert check[0] == check[1] == cells, check
    print(
        f"cells read={cells:,} stored={rows * QUALIFIERS * VERSIONS:,} families={families} "
        f"regions={regions} tasks={len(t.scan().plan())} repeats={repeats} "
        f"load={os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--families", type=int, nargs="+", default=[2])
    ap.add_argument("--regions", type=int, default=4)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    spark = session(args.cores)
    try:
        with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as root:
            for families in args.families:
                bench(
                    spark,
                    root,
                    rows=args.rows,
                    families=families,
                    regions=args.regions,
                    repeats=args.repeats,
                )
    finally:
        spark.stop()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

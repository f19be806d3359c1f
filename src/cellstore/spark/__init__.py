"""Read and bulk-load cellstore tables from PySpark (Spark 4's Python Data Source API).

No JVM code: the data source is Python, runs on Spark's Python workers, and uses the same
scan planner, read path, mapping and loader tasks as the Dask API::

    from cellstore.spark import register

    register(spark)  # or: spark.dataSource.register(CellstoreDataSource)
    df = (spark.read.format("cellstore")
          .option("root", "s3://bucket/warehouse")
          .option("table", "ns:webtable")
          .option("columns", "contents:html,anchor")
          .option("pushdown", "true")                   # opt-in, see the README
          .load())
    df.filter(df.row >= b"com.example").show()          # pushed: a row range

    (users.write.format("cellstore").mode("append")
     .option("root", "s3://bucket/warehouse").option("table", "users")
     .option("mapping", "s3://bucket/mappings/users.toml")
     .save())                                           # one commit for the whole write

Needs ``pip install "cellstore[spark]"`` (pyspark >= 4.1) and Java 17. Options and
semantics are in the README, "Running on a cluster".
"""

from __future__ import annotations

from typing import Any

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'cellstore.spark needs PySpark 4.1 or later: pip install "cellstore[spark]"'
    ) from e

from cellstore.spark.options import ReadOptions, RowBounds, WriteOptions
from cellstore.spark.source import (
    CellstoreCommitMessage,
    CellstoreDataSource,
    CellstoreReader,
    CellstoreWriter,
    ScanPartition,
    spark_schema,
)
from cellstore.spark.write import PartitionResult, SparkLoad

__all__ = [
    "CellstoreCommitMessage",
    "CellstoreDataSource",
    "CellstoreReader",
    "CellstoreWriter",
    "PartitionResult",
    "ReadOptions",
    "RowBounds",
    "ScanPartition",
    "SparkLoad",
    "WriteOptions",
    "register",
    "spark_schema",
]


def register(spark: Any, *, pushdown: bool = True) -> None:
    """Register the ``cellstore`` format with a SparkSession.

    Args:
        spark: The ``pyspark.sql.SparkSession``.
        pushdown: Also set ``spark.sql.python.filterPushdown.enabled``, which reads with
            the option ``pushdown=true`` need (Spark refuses a source that takes filters
            while it is off). Reads without that option are unaffected by the setting.
    """
    if pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(CellstoreDataSource)

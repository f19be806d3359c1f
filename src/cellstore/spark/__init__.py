"""Read and bulk-load cellstore tables from PySpark (Spark 4's Python Data Source API).

No JVM code: the data source is Python, runs on Spark's Python workers, and uses the same
scan planner, read path, mapping and loader tasks as the Dask API::

    from cellstore.spark import register

    register(spark)  # or: spark.dataSource.register(CellstoreDataSource)
    df = (spark.read.format("cellstore")
          .option("root", "s3://bucket/warehouse")
          .option("table", "ns:webtable")
          .option("columns", "contents:html,anchor")
          .option("start_row", "com.example")           # a row range: exact and cheap
          .load())

    (users.write.format("cellstore").mode("append")
     .option("root", "s3://bucket/warehouse").option("table", "users")
     .option("mapping", "s3://bucket/mappings/users.toml")
     .save())                                           # one commit for the whole write

HBase data is read in place the same way: ``.option("hbase.root", ROOT)`` with
``.option("hbase.snapshot", NAME)`` or ``.option("hbase.table", "ns:t")`` instead of
``root``/``table`` (``docs/hbase.md``, "Spark").

Needs ``pip install "cellstore[spark]"`` (pyspark >= 4.1) and Java 17. Options and
semantics are in ``docs/cluster.md``, "Running on a cluster". Spark's filters on ``row`` and
``family`` are pushed into the scan only where Spark plans every query afresh (see
:mod:`cellstore.spark.source`); the ``start_row``/``stop_row``/``row_prefix``/``key``
options narrow the scan on every Spark.
"""

from __future__ import annotations

import os
import sys
from typing import Any

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'cellstore.spark needs PySpark 4.1 or later: pip install "cellstore[spark]"'
    ) from e

from cellstore.spark.optimized import OptimizedPlan, plan_optimized, read_optimized
from cellstore.spark.options import ReadOptions, RowBounds, WriteOptions
from cellstore.spark.source import (
    CellstoreCommitMessage,
    CellstoreDataSource,
    CellstoreReader,
    CellstoreWriter,
    ScanPartition,
    arrow_schema,
    spark_plans_each_query,
    spark_schema,
)
from cellstore.spark.write import PartitionResult, SparkLoad

__all__ = [
    "CellstoreCommitMessage",
    "CellstoreDataSource",
    "CellstoreReader",
    "CellstoreWriter",
    "OptimizedPlan",
    "PartitionResult",
    "ReadOptions",
    "RowBounds",
    "ScanPartition",
    "SparkLoad",
    "WriteOptions",
    "arrow_schema",
    "plan_optimized",
    "read_optimized",
    "register",
    "spark_plans_each_query",
    "spark_schema",
    "to_pandas",
]


def register(spark: Any, *, pushdown: bool = True) -> None:
    """Register the ``cellstore`` format with a SparkSession.

    In local mode (``master("local[...]")``) without ``PYSPARK_PYTHON``, Spark would start
    its Python workers as ``python3`` from ``PATH``, often an interpreter without cellstore;
    the format is then registered to run on this interpreter (``sys.executable``) instead.
    Other Python code of the session is unaffected. On a cluster, executors need cellstore
    installed in the Python that ``PYSPARK_PYTHON`` (or ``spark.pyspark.python``) names.

    Args:
        spark: The ``pyspark.sql.SparkSession``.
        pushdown: Also set ``spark.sql.python.filterPushdown.enabled``, which reads that
            take Spark's filters need (Spark refuses a source that takes filters while it
            is off); see the ``pushdown`` read option. Other reads ignore the setting.
    """
    if pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    context = _local_context(spark)
    if context is None:
        spark.dataSource.register(CellstoreDataSource)
        return
    saved = context.pythonExec
    context.pythonExec = sys.executable
    try:
        spark.dataSource.register(CellstoreDataSource)
    finally:
        context.pythonExec = saved


def to_pandas(df: Any) -> Any:
    """A Spark DataFrame as a pandas DataFrame, converted by pyarrow rather than PySpark.

    ``df.toPandas()`` works on every DataFrame this source reads (cells and wide shapes, key
    fields, unsigned keys as decimals), with Spark's Arrow conversion on or off. On pandas 3,
    PySpark 4.1-4.3 pass ``copy=False`` to ``Series.astype`` for every numeric, boolean and
    timestamp column (its own dtype correction, whatever the source), which pandas 3
    deprecates with a ``Pandas4Warning`` and pandas 4 will reject: a program that turns
    warnings into errors (``-W error``, pytest's ``filterwarnings = error``) fails there.
    This function gives the same frame without that code: ``df.toArrow()`` (public since
    PySpark 4.0), then pyarrow's ``Table.to_pandas`` (binary as ``bytes``, strings as
    pandas' string dtype, nullable integers with nulls as floats, decimals as
    ``decimal.Decimal``), with no warning.

    Args:
        df: A ``pyspark.sql.DataFrame`` (any source, not only ``cellstore``).

    Returns:
        A ``pandas.DataFrame`` with ``df``'s columns in order.
    """
    return df.toArrow().to_pandas()


def _local_context(spark: Any) -> Any:
    """The session's local-mode SparkContext when it would start workers as ``python3``."""
    if os.environ.get("PYSPARK_PYTHON"):
        return None
    try:
        context = spark.sparkContext  # Spark Connect sessions have none: they raise
    except Exception:
        return None
    master = str(getattr(context, "master", "") or "")
    if not master.startswith("local") or getattr(context, "pythonExec", None) != "python3":
        return None
    return context

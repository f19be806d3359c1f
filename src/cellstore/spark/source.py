"""The PySpark data source ``cellstore`` (Spark 4's Python Data Source API).

Reads plan the scan with cellstore's own planner on the driver; every planned
:class:`~cellstore.reader.ScanTask` (a region, or a budget-sized piece of one, times a salt
bucket's key range) becomes one Spark input partition, read on an executor into Arrow
record batches by the same code as ``Scan.to_dask()``'s partitions. Writes are bulk loads
(see :mod:`cellstore.spark.write`): executors write sorted store files, the driver commits
them all at once.

Pushdown and Spark's plan reuse: Spark 4.1-4.3 keep the partitions and read function that a
filter pushdown planned on the DataFrame's data source object, and reuse them for any later
query on that DataFrame that gives Python no filter (``df.count()`` after
``df.filter(df.row >= k).count()`` would count only ``k..``). No Python-side state can tell
the two queries apart (the later one never reaches Python), so pushdown is only safe where
Spark plans every query afresh (the scan keeps its own read info:
:data:`PER_QUERY_PLANNING_SINCE`). The ``pushdown`` option defaults to ``auto``: on there,
off elsewhere; ``true`` on an older Spark is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

import pyarrow as pa
import pyspark
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from cellstore.errors import InvalidArgumentError
from cellstore.reader import ReadableTable, Scan, ScanPartitionReader, ScanTask
from cellstore.spark.options import ReadOptions, WriteOptions
from cellstore.spark.write import (
    PartitionResult,
    SparkLoad,
    abort_partitions,
    commit_partitions,
    prepare_load,
    write_partition,
)
from cellstore.warehouse import connect

__all__ = [
    "BATCH_ROWS",
    "PER_QUERY_PLANNING_SINCE",
    "CellstoreCommitMessage",
    "CellstoreDataSource",
    "CellstoreReader",
    "CellstoreWriter",
    "ScanPartition",
    "arrow_schema",
    "pushdown_enabled",
    "spark_plans_each_query",
    "spark_schema",
]

#: Rows per Arrow record batch handed to Spark.
BATCH_ROWS: Final = 65_536

#: First Spark release whose Python data source scans keep their own pushdown result
#: (apache/spark ``PythonScanBuilder`` carries the read info into its ``PythonScan``, from
#: SPARK-58551, 5.0). Releases 4.1.0-4.3.x store it on the data source object shared by every
#: query of a DataFrame and reuse it for a later query with no pushable filter.
PER_QUERY_PLANNING_SINCE: Final = (5, 0)


def spark_plans_each_query(version: str | None = None) -> bool:
    """Whether this Spark plans each query's read afresh, so filter pushdown is safe.

    Args:
        version: A PySpark version string; default: the installed ``pyspark.__version__``
            (the Python workers that plan reads run the same installation).

    Returns:
        True from :data:`PER_QUERY_PLANNING_SINCE` on (pre-releases included).
    """
    text = pyspark.__version__ if version is None else version
    parts: list[int] = []
    for piece in text.split(".")[:2]:
        digits = "".join(itertools.takewhile(str.isdigit, piece))
        parts.append(int(digits) if digits else 0)
    return tuple(parts) >= PER_QUERY_PLANNING_SINCE


def pushdown_enabled(options: ReadOptions, *, version: str | None = None) -> bool:
    """Whether a read with ``options`` takes Spark's filters (see the module docstring).

    Raises:
        InvalidArgumentError: ``pushdown=true`` on a Spark that reuses a DataFrame's
            pushed-down plan across queries.
    """
    safe = spark_plans_each_query(version)
    if options.pushdown is None:
        return safe
    if options.pushdown and not safe:
        raise InvalidArgumentError(
            f"option 'pushdown': Spark {pyspark.__version__ if version is None else version} "
            "reuses a DataFrame's pushed-down plan for its later queries (they would miss "
            "rows), so cellstore does not take Spark's filters before Spark "
            f"{'.'.join(map(str, PER_QUERY_PLANNING_SINCE))}; give the row range as the "
            "'start_row'/'stop_row'/'row_prefix'/'key' options instead (exact and never "
            "reused wrongly), or leave 'pushdown' at 'auto'"
        )
    return options.pushdown


def _spark_type(t: pa.DataType) -> DataType:
    """The Spark type of an Arrow type (unsigned integers widen; Spark has none)."""
    simple: list[tuple[Any, DataType]] = [
        (pa.types.is_binary, BinaryType()),
        (pa.types.is_large_binary, BinaryType()),
        (pa.types.is_string, StringType()),
        (pa.types.is_large_string, StringType()),
        (pa.types.is_boolean, BooleanType()),
        (pa.types.is_float32, FloatType()),
        (pa.types.is_float64, DoubleType()),
        (pa.types.is_date, DateType()),
    ]
    for test, spark in simple:
        if test(t):
            return spark
    if pa.types.is_integer(t):
        width = t.bit_width + (1 if pa.types.is_unsigned_integer(t) else 0)
        if width > 64:
            return DecimalType(20, 0)
        return {8: ByteType(), 16: ShortType(), 32: IntegerType(), 64: LongType()}[
            min(w for w in (8, 16, 32, 64) if w >= width)
        ]
    if pa.types.is_timestamp(t):
        return TimestampType() if t.tz else TimestampNTZType()
    raise InvalidArgumentError(f"no Spark type for Arrow type {t}")


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of a scan's Arrow schema (same names, order and nullability)."""
    return StructType(
        [StructField(f.name, _spark_type(f.type), nullable=f.nullable) for f in schema]
    )


def _arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type Spark's Arrow exchange uses for ``t`` (timestamps in UTC)."""
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, TimestampType):
        return pa.timestamp("us", tz="UTC")
    simple: list[tuple[type[DataType], pa.DataType]] = [
        (BinaryType, pa.binary()),
        (StringType, pa.string()),
        (BooleanType, pa.bool_()),
        (ByteType, pa.int8()),
        (ShortType, pa.int16()),
        (IntegerType, pa.int32()),
        (LongType, pa.int64()),
        (FloatType, pa.float32()),
        (DoubleType, pa.float64()),
        (DateType, pa.date32()),
        (TimestampNTZType, pa.timestamp("us")),
    ]
    for spark, arrow in simple:
        if isinstance(t, spark):
            return arrow
    raise InvalidArgumentError(f"cellstore cannot read into Spark type {t.simpleString()}")


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of the record batches Spark expects for ``schema``.

    Built from the Spark types :func:`spark_schema` produces (PySpark's own converter is
    private and changed its signature between releases). Spark checks batches against it.

    Raises:
        InvalidArgumentError: a field of a type cellstore never produces.
    """
    return pa.schema(
        [pa.field(f.name, _arrow_type(f.dataType), nullable=f.nullable) for f in schema]
    )


def _open_table(options: ReadOptions) -> ReadableTable:
    """The table the options name: a warehouse table (at ``version``), or HBase's."""
    source = options.hbase
    if source is not None:
        from cellstore.hbase import open_snapshot, open_table

        if source.snapshot is not None:
            return open_snapshot(
                source.root, source.snapshot, storage_options=options.storage_options
            )
        assert source.table is not None
        return open_table(
            source.root,
            source.table,
            storage_options=options.storage_options,
            use_meta=source.use_meta,
        )
    wh = connect(options.root, storage_options=options.storage_options)
    return wh.table(options.table, version=options.version)


@dataclass(frozen=True)
class ScanPartition(InputPartition):
    """One Spark input partition: a planned scan task and the reader that runs it.

    Attributes:
        task: The scan task (a region range within one salt bucket's key range).
        reader: Runs the task into an Arrow table with the scan's schema.
    """

    task: ScanTask
    reader: ScanPartitionReader


class _ScanReader(DataSourceReader):
    """Reads a cellstore scan: partitions from the planner, Arrow batches out."""

    def __init__(self, options: ReadOptions, schema: StructType | None) -> None:
        self.options = options
        self.schema = schema
        #: The Arrow schema batches are cast to (None: the scan's own).
        self.target = arrow_schema(schema) if schema is not None else None
        self.bounds = options.bounds
        #: Families a pushed ``family`` filter narrowed the scan to, or None.
        self.families: frozenset[str] | None = None

    def plan(self) -> tuple[Scan | None, list[ScanTask]]:
        """The scan (None when pushed filters rule out every row) and its tasks."""
        if self.bounds.empty:
            return None, []
        table = _open_table(self.options)
        options = self.options.scan_options(self.bounds)
        if self.families is not None:
            names = tuple(f for f in table.metadata.family_names if f in self.families)
            if not names:
                return None, []
            options = replace(options, families=names)
        scan = table.scan(options)
        return scan, scan.plan()

    def partitions(self) -> list[InputPartition]:
        """One partition per scan task, in scan order."""
        scan, tasks = self.plan()
        if scan is None:
            return []
        reader = scan.partition_reader()
        return [ScanPartition(task, reader) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The partition's rows as Arrow record batches of the scan's schema."""
        if not isinstance(partition, ScanPartition):
            return  # no partitions planned: Spark reads one empty placeholder
        table = partition.reader.read_arrow(partition.task)
        if table.num_rows == 0:
            return
        target = self.target if self.target is not None else table.schema
        columns = [
            table.column(f.name).cast(f.type)
            if table.schema.field(f.name).type != f.type
            else table.column(f.name)
            for f in target
        ]
        out = pa.Table.from_arrays(columns, schema=target)
        yield from out.to_batches(max_chunksize=BATCH_ROWS)


def _row_key(value: Any) -> bytes | None:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    return None


class CellstoreReader(_ScanReader):
    """:class:`_ScanReader` that also takes Spark's filters on ``row`` and ``family``.

    Used where :func:`pushdown_enabled` says so. Its plan is a pure function of the read
    options and the filters of the last :meth:`pushFilters` call (each call starts again
    from the options' row range and families; a reader that gets no call plans the options'
    scan), and :meth:`partitions` plans afresh each time it is called.

    Pushed filters (all exact; Spark does not evaluate them again):

    * on ``row`` (binary or string literals): ``=``, ``<=>``, ``<``, ``<=``, ``>``,
      ``>=`` and ``LIKE 'p%'`` narrow the scan's row range, so fewer regions, salt-bucket
      ranges and row groups are read; ``IN`` narrows it to the range from the least to the
      greatest value and is evaluated again by Spark;
    * on ``family`` (cells shape, no ``filter``/``columns``/``families`` option): ``=`` and
      ``IN`` narrow the families read.

    Nothing else is pushed: filters on ``ts``, ``qualifier`` or values change HBase's
    version semantics (``time_range`` is not "filter the latest version"), so Spark
    evaluates them on the scan's result.
    """

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        """Narrow the scan by the filters this source handles; return the rest for Spark.

        Filters of an earlier call are forgotten: the scan is the options' scan narrowed
        by ``filters`` only.
        """
        self.bounds = self.options.bounds
        self.families = None
        keep: list[Filter] = []
        for f in filters:
            if not self._push(f):
                keep.append(f)
        return keep

    def _push(self, f: Filter) -> bool:
        """Narrow the scan by ``f``; True when Spark need not evaluate ``f`` again."""
        attribute = getattr(f, "attribute", None)
        if attribute == ("row",) and "key" not in self.options.scan:
            return self._push_row(f)
        if attribute == ("family",) and self.options.families_pushable:
            if not isinstance(f, EqualTo | EqualNullSafe | In):
                return False
            values = f.value if isinstance(f, In) else (f.value,)
            if not all(isinstance(v, str) for v in values):
                return False
            wanted = frozenset(values)
            self.families = wanted if self.families is None else self.families & wanted
            return True
        return False

    def _push_row(self, f: Filter) -> bool:
        if isinstance(f, In):
            keys = [_row_key(v) for v in f.value]
            if not keys or any(k is None for k in keys):
                return False
            present = [k for k in keys if k is not None]
            self.bounds = self.bounds.at_least(min(present)).at_most(max(present))
            return len(set(present)) == 1
        key = _row_key(getattr(f, "value", None))
        if key is None:
            return False
        b = self.bounds
        if isinstance(f, EqualTo | EqualNullSafe):
            self.bounds = b.equal(key)
        elif isinstance(f, GreaterThan):
            self.bounds = b.above(key)
        elif isinstance(f, GreaterThanOrEqual):
            self.bounds = b.at_least(key)
        elif isinstance(f, LessThan):
            self.bounds = b.below(key)
        elif isinstance(f, LessThanOrEqual):
            self.bounds = b.at_most(key)
        elif isinstance(f, StringStartsWith):
            self.bounds = b.prefix(key)
        else:
            return False
        return True


@dataclass(frozen=True)
class CellstoreCommitMessage(WriterCommitMessage):
    """A write task's result, sent to the driver's commit."""

    result: PartitionResult


class CellstoreWriter(DataSourceArrowWriter):
    """Bulk-loads a DataFrame: tasks write store files, the driver commits them at once."""

    def __init__(self, load: SparkLoad) -> None:
        self.load = load

    def write(self, iterator: Iterator[pa.RecordBatch]) -> CellstoreCommitMessage:
        """Write one partition's records as sorted store files (on an executor)."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.taskAttemptId() if ctx is not None else 0
        result = write_partition(self.load, iterator, partition=partition, attempt=attempt)
        return CellstoreCommitMessage(result)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Commit every task's files in one manifest commit (on the driver)."""
        results = [m.result for m in messages if isinstance(m, CellstoreCommitMessage)]
        commit_partitions(self.load, results)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Delete what the tasks wrote; the table does not change."""
        results = [m.result if isinstance(m, CellstoreCommitMessage) else None for m in messages]
        abort_partitions(self.load, results)


class CellstoreDataSource(DataSource):
    """``spark.read.format("cellstore")`` / ``df.write.format("cellstore")``.

    Register it with ``spark.dataSource.register(CellstoreDataSource)`` or
    :func:`cellstore.spark.register`. Options are in ``docs/cluster.md`` ("Running on a
    cluster", its Spark part); reads of HBase data in place (``hbase.root`` with
    ``hbase.snapshot`` or ``hbase.table``) in ``docs/hbase.md`` ("Spark").
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``cellstore``."""
        return "cellstore"

    def schema(self) -> StructType:
        """The scan's schema: the cells shape, or the wide shape's typed columns."""
        options = ReadOptions.parse(self.options)
        scan = _open_table(options).scan(options.scan_options())
        return spark_schema(scan.partition_reader().schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader of the scan the options describe (taking filters if pushdown is on).

        Raises:
            InvalidArgumentError: malformed options, ``pushdown=true`` on a Spark that
                reuses pushed-down plans, or a schema cellstore cannot produce.
        """
        options = ReadOptions.parse(self.options)
        if pushdown_enabled(options):
            return CellstoreReader(options, schema)
        return _ScanReader(options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> CellstoreWriter:
        """A bulk load of the DataFrame through the options' mapping (append only).

        Raises:
            InvalidArgumentError: ``mode("overwrite")``, or options that do not fit.
        """
        if overwrite:
            raise InvalidArgumentError(
                "cellstore tables are appended to, never overwritten, from Spark: use "
                'mode("append") (delete rows with delete markers through the mapping\'s '
                "operation column, or drop and recreate the table)"
            )
        options = WriteOptions.parse(self.options)
        return CellstoreWriter(prepare_load(options, input_columns=schema.fieldNames()))

"""The :class:`Scan`: a planned read of a table version, executed to Arrow or pandas.

A scan is planned from its :class:`~cellstore.reader.options.ScanOptions` against a
:class:`~cellstore.reader.source.ReadSource` (a cellstore table version's store files, or
an HBase table's HFiles): the options become per-family read semantics
(:class:`~cellstore.core.semantics.ReadSpec`), a filter plan and row ranges, the source
turns those into frozen :class:`~cellstore.reader.plan.ScanTask` objects, and the tasks
run here (``to_batches``/``to_arrow``/``count_rows``) or in Dask/Spark partitions through
a :class:`ScanPartitionReader` (:mod:`cellstore.reader.execute` does one task's read).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import LATEST_TIMESTAMP, run_starts
from cellstore.core.filters import FilterPlan, apply_filters, filtered_read, normalize_filters
from cellstore.core.keys import RowRange, split_column
from cellstore.core.metadata import TableMetadata
from cellstore.core.rowkey import RowKeySpec
from cellstore.core.rowkey.ranges import bucket_ranges
from cellstore.core.semantics import ReadSpec
from cellstore.errors import InvalidArgumentError, InvalidFamilyError, InvalidRowRangeError
from cellstore.reader.columnar import fast_wide_families, read_wide_fast
from cellstore.reader.execute import RESULT_SCHEMA, read_task, run_ahead
from cellstore.reader.options import (
    FamilyTimeRanges,
    ScanOptions,
    as_names,
    normalize_family_time_ranges,
)
from cellstore.reader.plan import DEFAULT_TASK_MEMORY, ScanTask, parse_columns, row_range
from cellstore.reader.shapes import Shape, WideSpec, column_name, to_wide, with_key_columns
from cellstore.reader.source import ReadSource, StoreFileSource, TaskRequest

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FamilyTimeRanges",
    "Scan",
    "ScanOptions",
    "ScanPartitionReader",
    "as_names",
    "family_time_ranges",
    "normalize_family_time_ranges",
    "run_task",
]


def family_time_ranges(
    metadata: TableMetadata, ranges: tuple[tuple[str, tuple[int, int]], ...] | None
) -> dict[str, tuple[int, int]]:
    """Check per-family time ranges against the table (HBase ``setColumnFamilyTimeRange``).

    Each range is ``[min, max)`` in ms with ``0 <= min <= max`` (R7.1); it replaces the
    read-wide time range (or timestamp) for that family only, before version counting and
    for the delete markers the read applies (R7.2, R7.3), in normal and raw reads alike.
    A family the read does not select is allowed and has no effect, as in HBase.

    Returns:
        Family name to its range.

    Raises:
        InvalidFamilyError: a family the table does not have.
        InvalidArgumentError: a range with ``min < 0`` or ``max < min``, naming the family.
    """
    out: dict[str, tuple[int, int]] = {}
    for fam, (lo, hi) in ranges or ():
        if fam not in metadata.family_names:
            raise InvalidFamilyError(
                f"family_time_ranges: table {metadata.name} has no family {fam!r}"
            )
        if lo < 0 or hi < lo:
            raise InvalidArgumentError(
                f"family_time_ranges: the time range of family {fam!r} must satisfy "
                f"0 <= min <= max (R7.1), got [{lo}, {hi})"
            )
        out[fam] = (lo, hi)
    return out


class Scan:
    """A read of one table version: plan it with :meth:`plan`, run it with ``to_*``.

    Built by ``scan``/``get`` of a :class:`~cellstore.reader.ReadableTable` (or
    :meth:`over` a :class:`~cellstore.reader.source.ReadSource`); all options are
    validated at construction.

    Args:
        fs: The filesystem of the table's files.
        table_path: The table directory.
        metadata: The table version read.
        options: What to read.
        now_ms: "Now" for TTL expiry unless ``options.now_ms`` says.
        source: Where the cells come from (default: ``metadata``'s store files).
        point_row: For a get: the one row read (the stored key, salt included); its
            tasks are never cut, and files whose Bloom filter rules it out are not read.

    Raises:
        InvalidArgumentError: options that contradict each other or the table.
        InvalidFamilyError: a family the table does not have.
        InvalidRowRangeError: a malformed row range.
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        metadata: TableMetadata,
        options: ScanOptions,
        *,
        now_ms: int,
        source: ReadSource[Any] | None = None,
        point_row: bytes | None = None,
    ) -> None:
        self.fs = fs
        self.table_path = table_path
        self.metadata = metadata
        self.options = options
        self.source: ReadSource[Any] = (
            source if source is not None else StoreFileSource(fs, table_path, metadata)
        )
        self.point_row = point_row
        o = options
        if o.version is not None and o.version != metadata.version:
            raise InvalidArgumentError(
                f"the options ask for version {o.version} of table {metadata.name}, "
                f"planned against version {metadata.version}"
            )
        self.spec = _read_spec(o, now_ms)
        #: Family name to its own time range (R7.1), replacing ``time_range`` for it.
        self.family_time_ranges = family_time_ranges(
            metadata, normalize_family_time_ranges(o.family_time_ranges)
        )
        self.wanted = parse_columns(
            metadata, columns=as_names(o.columns), families=as_names(o.families)
        )
        if o.raw and any(q is not None for q in self.wanted.values()):
            raise InvalidArgumentError("Cannot specify any column for a raw scan (R10.4)")
        self._tasks: tuple[ScanTask, ...] | None = None
        self.filters = normalize_filters(o.filter)
        self.specs, self.filter_plan = self._family_specs(self.spec)
        self.source.check(self.specs)
        self.shape = Shape.parse(o.shape)
        self.wide = self._wide_spec()
        self.range = row_range(
            start_row=o.start_row,
            stop_row=o.stop_row,
            row_prefix=o.row_prefix,
            reversed=o.reversed,
        )
        self.key_ranges = self._key_ranges()
        #: The spec that decodes returned (salt-free) rows into key columns, or None.
        self.key_decoder = self._key_decoder()

    @classmethod
    def over(
        cls,
        source: ReadSource[Any],
        options: ScanOptions,
        *,
        now_ms: int,
        point_row: bytes | None = None,
    ) -> Scan:
        """A scan of ``source``'s table (see the class's arguments)."""
        return cls(
            source.fs,
            source.path,
            source.metadata,
            options,
            now_ms=now_ms,
            source=source,
            point_row=point_row,
        )

    def _wide_spec(self) -> WideSpec | None:
        o = self.options
        types = o.column_types
        if isinstance(types, str):
            raise InvalidArgumentError(
                "column_types='table' is resolved by the table's scan(), not by Scan"
            )
        if self.shape is not Shape.WIDE:
            if types:
                raise InvalidArgumentError("column_types applies to the wide shape only")
            return None
        if o.raw:
            raise InvalidArgumentError("the wide shape needs a normal read, not a raw one")
        return WideSpec.build(
            columns=self._explicit_columns(),
            column_types=dict(types or {}),
            decode_errors=o.decode_errors,
            typed_only=o.columns is None and o.families is None,
        )

    def _key_ranges(self) -> list[RowRange] | None:
        o = self.options
        if o.key is None:
            return None
        if self.metadata.row_key is None:
            raise InvalidArgumentError(
                f"table {self.metadata.name} has no row-key spec, so key= cannot be used; "
                "use start_row/stop_row/row_prefix"
            )
        if any(v is not None for v in (o.start_row, o.stop_row, o.row_prefix)):
            raise InvalidRowRangeError("key= cannot be combined with start/stop/prefix")
        typed = _typed_items(o.key)
        if typed is None:
            return _key_ranges(self.metadata.row_key, dict(o.key))
        return list(_cached_key_ranges(self.metadata.row_key, typed))

    def _key_decoder(self) -> RowKeySpec | None:
        o, spec = self.options, self.metadata.row_key
        want_keys = o.key_columns if o.key_columns is not None else self.shape is Shape.WIDE
        if want_keys and spec is None and o.key_columns:
            raise InvalidArgumentError(f"table {self.metadata.name} has no row-key spec to decode")
        if want_keys and spec is not None:
            return replace(spec, salt_buckets=None)
        return None

    def _family_specs(self, base: ReadSpec) -> tuple[dict[str, ReadSpec], FilterPlan | None]:
        """Each family's read, and the filter plan (R12.7, R12.8).

        Without filters the semantics engine applies versions and the per-family window
        itself. With filters, versions are counted up to the family's ``max_versions``, the
        filters judge those cells, and the caps and the window apply afterwards.
        """
        specs: dict[str, ReadSpec] = {}
        ranges = self.family_time_ranges

        def family_base(fam: str, quals: frozenset[bytes] | None) -> ReadSpec:
            if fam in ranges:  # R7.1: the family's range replaces the read-wide one
                return replace(base, qualifiers=quals, time_range=ranges[fam])
            return replace(base, qualifiers=quals)

        if not self.filters:
            for fam, quals in self.wanted.items():
                specs[fam] = family_base(fam, quals)
            return specs, None
        caps: dict[str, int] = {}
        windows: dict[str, tuple[int, int | None]] = {}
        for fam, quals in self.wanted.items():
            spec, caps[fam], window = filtered_read(
                family_base(fam, quals), self.metadata.family(fam)
            )
            specs[fam] = spec
            if window is not None:
                windows[fam] = window
        return specs, FilterPlan(filters=self.filters, version_caps=caps, windows=windows)

    def _explicit_columns(self) -> list[tuple[str, bytes]] | None:
        """The scan's ``family:qualifier`` columns in the order given, if all are explicit."""
        if any(q is None for q in self.wanted.values()):
            return None
        return [split_column(col) for col in as_names(self.options.columns) or ()]

    def plan(self) -> list[ScanTask]:
        """Frozen, picklable tasks in scan order (key order; reversed scans: descending).

        Planned once per scan (the table version is fixed), so running a scan after looking
        at its plan does not read the store files' statistics again.
        """
        if self._tasks is None:
            self._tasks = tuple(self._make_plan())
        return list(self._tasks)

    def _make_plan(self) -> list[ScanTask]:
        if self.range is None:
            return []
        ranges = [self.range]
        buckets = self.metadata.salt_buckets
        if self.key_ranges is not None:
            ranges = self.key_ranges  # already one per salt bucket
        elif buckets is not None and self.point_row is None:
            ranges = bucket_ranges(buckets, *self.range)
        budget = None
        if self.point_row is None:
            budget = self.options.memory_budget or DEFAULT_TASK_MEMORY
        request = TaskRequest(ranges, self.specs, self.filter_plan, budget)
        tasks = self.source.plan(request)
        return tasks[::-1] if self.options.reversed else tasks

    def to_batches(self) -> Iterator[pa.Table]:
        """Results task by task (bounded memory: one region range at a time)."""
        yield from self._batches(wide=self.wide)

    def _batches(self, *, wide: WideSpec | None, ahead: bool = False) -> Iterator[pa.Table]:
        if ahead and wide is not None:
            reads = self._fast_reads(wide)
            if reads is not None:
                # the next tasks' reads run while this one's result is built (to_arrow
                # holds every result anyway; to_batches keeps one task at a time)
                yield from (rows for rows in run_ahead(reads, ahead=2) if rows.num_rows)
                return
        remaining = self.options.limit
        for task in self.plan():
            if remaining == 0:
                return
            if wide is not None and self.point_row is None and fast_wide_families(task) is None:
                # the column layout's fast path: no cells, no merge (reader/columnar.py)
                rows = read_wide_fast(
                    self.fs, task, wide, reverse=self.options.reversed, key=self.key_decoder
                )
                if remaining is not None:
                    rows = rows.slice(0, remaining)
                    remaining -= rows.num_rows
                if rows.num_rows:
                    yield rows
                continue
            part = run_task(
                self.fs,
                task,
                point_row=self.point_row,
                reverse=self.options.reversed,
                max_rows=remaining,
            )
            if remaining is not None and part.num_rows:
                part = _first_rows(part, remaining)
                remaining -= _count_rows(part)
            if not part.num_rows:
                continue
            out = with_key_columns(part if wide is None else to_wide(part, wide), self.key_decoder)
            del part  # hold one task's result at a time: to_batches memory stays bounded
            yield out
            del out

    def _fast_reads(self, wide: WideSpec) -> list[Callable[[], pa.Table]] | None:
        """Every task's wide read, when the column layout's fast path answers them all.

        None when a task takes the general path, or the scan has a limit or a point row.
        """
        tasks = self.plan()
        if self.options.limit is not None or self.point_row is not None or len(tasks) < 2:
            return None
        if any(fast_wide_families(task) is not None for task in tasks):
            return None
        read = functools.partial(
            read_wide_fast, self.fs, wide=wide, reverse=self.options.reversed, key=self.key_decoder
        )
        return [functools.partial(read, task=task) for task in tasks]

    def to_arrow(self) -> pa.Table:
        """All results as one Arrow table: ``row, family, qualifier, ts, type, value``.

        Cells come in HBase result order: rows ascending (descending for reversed scans);
        inside a row, family and qualifier ascending, ts descending.
        """
        parts = list(self._batches(wide=self.wide, ahead=True))
        if self.wide is not None:
            if not parts:
                empty = self.wide.empty() if self.wide.columns is not None else _EMPTY_WIDE
                return with_key_columns(empty, self.key_decoder)
            return _concat_wide(parts, self.wide)
        if not parts:
            return with_key_columns(RESULT_SCHEMA.empty_table(), self.key_decoder)
        return pa.concat_tables(parts)

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame."""
        df: pd.DataFrame = self.to_arrow().to_pandas()
        return df

    def divisions(self, tasks: list[ScanTask] | None = None) -> tuple[bytes, ...] | None:
        """Row-key divisions of :meth:`to_dask`'s partitions, or None when unknown.

        Known only for unsalted, forward scans: task ``i`` starts at ``divisions[i]`` and
        the last division is the largest row the last task's files hold (dask's rule: each
        partition's index lies in ``[divisions[i], divisions[i+1])``, the last one closed).
        """
        tasks = self.plan() if tasks is None else tasks
        if not tasks or self.options.reversed or self.metadata.salt_buckets is not None:
            return None
        if self.options.limit is not None:
            return None
        last = tasks[-1]
        last_row = self.source.last_row(last)
        if last.stop and last_row >= last.stop:
            last_row = last.stop
        starts = [t.start for t in tasks]
        return (*starts, max(last_row, starts[-1]))

    def to_dask(self) -> Any:
        """A lazy ``dask.dataframe`` with one partition per task.

        Columns as :meth:`to_arrow` (``row`` is also the index). ``meta`` always comes from
        the schema, so nothing is read to build the collection; divisions are known for
        unsalted forward scans (see :meth:`divisions`), so ``.loc`` by row key and joins on
        the key can use them. Works on a ``distributed`` cluster: tasks and the reader are
        picklable and open the filesystem on the worker. ``limit`` is not supported here
        (use ``.head()``).
        """
        import dask.dataframe as dd

        from cellstore.frames import from_tasks

        if self.options.limit is not None:
            raise InvalidArgumentError("to_dask() does not take a limit; use .head(n)")
        tasks = self.plan()
        reader = self.partition_reader()
        meta = reader.empty()
        if not tasks:
            return dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
        return from_tasks(
            reader, tasks, meta=meta, divisions=self.divisions(tasks), label="cellstore-scan"
        )

    def partition_reader(self) -> ScanPartitionReader:
        """The picklable reader that runs one planned task (Dask's and Spark's partitions).

        Every partition it reads has the same schema (:meth:`ScanPartitionReader.schema`).

        Raises:
            InvalidArgumentError: the wide shape without known columns (neither
                ``family:qualifier`` columns nor ``column_types``): the schema of a
                partition would depend on its data.
        """
        wide = self.wide
        if wide is not None and wide.columns is None:
            if not self.options.column_types:
                raise InvalidArgumentError(
                    "reading the wide shape in partitions (to_dask(), Spark) needs known "
                    "columns: pass columns= as family:qualifier names or name them in "
                    "column_types="
                )
            wide = replace(wide, columns=tuple(c for c, _ in wide.codecs))
        return ScanPartitionReader(
            self.fs, reverse=self.options.reversed, wide=wide, key_decoder=self.key_decoder
        )

    def count_rows(self) -> int:
        """Number of rows with at least one visible cell (like HBase's RowCounter)."""
        return sum(_count_rows(part) for part in self._batches(wide=None))


class ScanPartitionReader:
    """Callable that turns one :class:`ScanTask` into a pandas partition (for dask).

    Holds only the (picklable) filesystem and flags; the store files are opened on the
    worker that runs the task.
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        *,
        reverse: bool = False,
        wide: WideSpec | None = None,
        key_decoder: RowKeySpec | None = None,
    ) -> None:
        self.fs = fs
        self.reverse = reverse
        self.wide = wide
        self.key_decoder = key_decoder

    def empty_arrow(self) -> pa.Table:
        """The partition schema as an empty Arrow table."""
        if self.wide is not None:
            return with_key_columns(self.wide.empty(), self.key_decoder)
        return with_key_columns(RESULT_SCHEMA.empty_table(), self.key_decoder)

    def schema(self) -> pa.Schema:
        """The Arrow schema of every partition."""
        return self.empty_arrow().schema

    def empty(self) -> pd.DataFrame:
        """The partition schema as an empty DataFrame (dask's ``meta``)."""
        return _to_frame(self.empty_arrow())

    def read_arrow(self, task: ScanTask) -> pa.Table:
        """One task's result as an Arrow table with :meth:`schema`'s columns."""
        if self.wide is not None and fast_wide_families(task) is None:
            out = read_wide_fast(
                self.fs, task, self.wide, reverse=self.reverse, key=self.key_decoder
            )
            if not out.num_rows and self.wide.columns is not None:
                return with_key_columns(self.wide.empty(), self.key_decoder)
            return out
        cells = run_task(self.fs, task, reverse=self.reverse)
        if self.wide is not None:
            out = to_wide(cells, self.wide) if cells.num_rows else self.wide.empty()
        else:
            out = cells
        return with_key_columns(out, self.key_decoder)

    def __call__(self, task: ScanTask, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """One task's result as a pandas partition (:meth:`read_arrow`, ``row`` the index).

        Args:
            task: The task.
            columns: Dask's column projection (``dd.from_map`` passes the columns a
                computation uses; None: every column). Only those columns are read and
                converted: a wide read reads only those ``family:qualifier`` columns. The
                partition's rows and its ``row`` index are the same as without it (the
                read's families and qualifiers decide which rows are there, not the
                columns kept).
        """
        if columns is None:
            return _to_frame(self.read_arrow(task))
        kept = list(columns)
        table = self._projected(kept).read_arrow(task)
        df = _to_frame(table.select(["row", *(c for c in kept if c != "row")]))
        return df[kept]

    def _projected(self, columns: Sequence[str]) -> ScanPartitionReader:
        """This reader with its wide shape cut to the ``family:qualifier`` ``columns``."""
        wide = self.wide
        if wide is None or wide.columns is None:
            return self
        named = set(columns)
        kept = tuple(c for c in wide.columns if column_name(*c) in named)
        if kept == wide.columns:
            return self
        return ScanPartitionReader(
            self.fs,
            reverse=self.reverse,
            wide=replace(wide, columns=kept),
            key_decoder=self.key_decoder,
        )


def _read_spec(o: ScanOptions, now_ms: int) -> ReadSpec:
    """The read-wide semantics of ``o`` (versions, time range, raw, per-family caps)."""
    if o.timestamp is not None and o.time_range is not None:
        raise InvalidArgumentError("give either timestamp or time_range, not both")
    time_range = o.time_range
    if o.timestamp is not None:
        if o.timestamp < 0:
            raise InvalidArgumentError(f"timestamp must be >= 0, got {o.timestamp}")
        time_range = (o.timestamp, min(o.timestamp + 1, LATEST_TIMESTAMP))
    if o.limit is not None and o.limit < 0:
        raise InvalidArgumentError(f"limit must be >= 0, got {o.limit}")
    if o.memory_budget is not None and o.memory_budget <= 0:
        raise InvalidArgumentError(f"memory_budget must be > 0, got {o.memory_budget}")
    return ReadSpec(
        now_ms=o.now_ms if o.now_ms is not None else now_ms,
        max_versions=o.max_versions,
        time_range=time_range,
        raw=o.raw,
        max_results_per_family=o.max_results_per_family,
        row_offset_per_family=o.row_offset_per_family,
    )


#: One ``key=`` predicate as a cache key: ``(field, value type, (type, value))`` items, a
#: range's bounds each typed (so that ``1``, ``1.0`` and ``True``, equal in Python, stay
#: apart).
_TypedKey = tuple[tuple[str, Any, Any], ...]


def _typed_items(key: Any) -> _TypedKey | None:
    """``key``'s items as :data:`_TypedKey`, or None when a value cannot be hashed."""
    out = []
    for name, value in dict(key).items():
        typed = (
            tuple((type(v), v) for v in value) if isinstance(value, tuple) else (type(value), value)
        )
        try:
            hash(typed)
        except TypeError:
            return None
        out.append((name, type(value), typed))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _cached_key_ranges(spec: RowKeySpec, typed: _TypedKey) -> tuple[RowRange, ...]:
    """:func:`_key_ranges`, computed once per spec and predicate (a select's planning)."""
    key = {
        name: tuple(v for _, v in packed) if kind is tuple else packed[1]
        for name, kind, packed in typed
    }
    return tuple(_key_ranges(spec, key))


def _key_ranges(spec: RowKeySpec, key: dict[str, Any]) -> list[RowRange]:
    """Row ranges of ``key``: equalities on leading fields, optionally a trailing range.

    A value that is a 2-tuple ``(lower, upper)`` is a range ``[lower, upper)`` on that
    field (either bound may be None); it must be the last item. Every other value is an
    equality.
    """
    equals: dict[str, Any] = {}
    ranged: tuple[str, Any, Any] | None = None
    for name, value in key.items():
        if ranged is not None:
            raise InvalidArgumentError(f"key: the range on {ranged[0]!r} must come last")
        if isinstance(value, tuple):
            if len(value) != 2:
                raise InvalidArgumentError(f"key: {name!r} range must be (lower, upper)")
            ranged = (name, value[0], value[1])
        else:
            equals[name] = value
    if ranged is None:
        return list(spec.key_ranges(equals=equals))
    name, lower, upper = ranged
    return list(spec.key_ranges(equals=equals, field=name, lower=lower, upper=upper))


def run_task(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    *,
    point_row: bytes | None = None,
    reverse: bool = False,
    max_rows: int | None = None,
) -> pa.Table:
    """One task's result cells: semantics, then filters, then the salt dropped from rows.

    ``max_rows`` (a scan's remaining limit) lets the read stop early, at whole rows, when
    the task has no filters (a filter may drop rows, or stop the scan, after the read);
    the result may hold more rows than that.
    """
    rows = max_rows if task.filters is None else None
    cells = read_task(fs, task, point_row=point_row, reverse=reverse, max_rows=rows)
    if task.filters is not None:
        cells = apply_filters(cells, task.filters)
    if task.strip_salt and cells.num_rows:
        rows = pc.binary_slice(cells.column("row"), 1, 1 << 30)
        cells = cells.set_column(0, RESULT_SCHEMA.field("row"), rows)
    return cells


_EMPTY_WIDE: pa.Table = pa.schema([pa.field("row", pa.binary(), nullable=False)]).empty_table()


def _concat_wide(parts: list[pa.Table], wide: WideSpec) -> pa.Table:
    """Batches of the wide shape as one table; columns found in any batch, HBase order."""
    if wide.columns is not None or len(parts) == 1:
        return pa.concat_tables(parts)
    keys = [n for n in parts[0].column_names if n != "row" and ":" not in n]
    names = {n for p in parts for n in p.column_names if ":" in n}
    order = sorted(names, key=lambda n: n.partition(":")[::2])
    unified = pa.concat_tables(parts, promote_options="default")
    return unified.select(["row", *keys, *order])


def _to_frame(table: pa.Table) -> pd.DataFrame:
    import pandas as pd

    # Binary columns stay Arrow-backed bytes (pd.ArrowDtype), so dask's object-to-string
    # conversion never touches row keys that are not UTF-8.
    df: pd.DataFrame = table.to_pandas(types_mapper=_binary_as_arrow)
    df.index = pd.Index(df["row"].array, name=None)
    return df


def _binary_as_arrow(dtype: pa.DataType) -> Any:
    import pandas as pd

    return pd.ArrowDtype(dtype) if pa.types.is_binary(dtype) else None


def _count_rows(table: pa.Table) -> int:
    return len(run_starts(table.column("row")))


def _first_rows(table: pa.Table, n: int) -> pa.Table:
    starts = run_starts(table.column("row"))
    if len(starts) <= n:
        return table
    return table.slice(0, int(starts[n]))

"""The :class:`Scan`: a planned read of a table version, executed to Arrow or pandas."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import fsspec
import pyarrow as pa

from cellstore.core.cells import LATEST_TIMESTAMP, run_starts
from cellstore.core.metadata import TableMetadata
from cellstore.core.semantics import ReadSpec
from cellstore.errors import InvalidArgumentError
from cellstore.reader.execute import RESULT_SCHEMA, read_task
from cellstore.reader.plan import ScanTask, parse_columns, plan_tasks, row_range

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Scan", "ScanOptions"]


@dataclass(frozen=True, kw_only=True)
class ScanOptions:
    """Everything a scan was asked for (see ``Table.scan`` for the meaning of each)."""

    start_row: bytes | str | None = None
    stop_row: bytes | str | None = None
    row_prefix: bytes | str | None = None
    columns: tuple[bytes | str, ...] | None = None
    families: tuple[str, ...] | None = None
    time_range: tuple[int, int] | None = None
    timestamp: int | None = None
    max_versions: int | None = None
    raw: bool = False
    reversed: bool = False
    limit: int | None = None
    now_ms: int | None = None
    point_row: bytes | None = field(default=None, repr=False)


class Scan:
    """A read of one table version: plan it with :meth:`plan`, run it with ``to_*``.

    Built by ``Table.scan`` / ``Table.get``; all options are validated at construction.
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        metadata: TableMetadata,
        options: ScanOptions,
        *,
        now_ms: int,
    ) -> None:
        self.fs = fs
        self.table_path = table_path
        self.metadata = metadata
        self.options = options
        o = options
        if o.timestamp is not None and o.time_range is not None:
            raise InvalidArgumentError("give either timestamp or time_range, not both")
        time_range = o.time_range
        if o.timestamp is not None:
            if o.timestamp < 0:
                raise InvalidArgumentError(f"timestamp must be >= 0, got {o.timestamp}")
            time_range = (o.timestamp, min(o.timestamp + 1, LATEST_TIMESTAMP))
        if o.limit is not None and o.limit < 0:
            raise InvalidArgumentError(f"limit must be >= 0, got {o.limit}")
        self.spec = ReadSpec(
            now_ms=o.now_ms if o.now_ms is not None else now_ms,
            max_versions=o.max_versions,
            time_range=time_range,
            raw=o.raw,
        )
        self.wanted = parse_columns(metadata, columns=o.columns, families=o.families)
        if o.raw and any(q is not None for q in self.wanted.values()):
            raise InvalidArgumentError("Cannot specify any column for a raw scan (R10.4)")
        self.range = row_range(
            start_row=o.start_row,
            stop_row=o.stop_row,
            row_prefix=o.row_prefix,
            reversed=o.reversed,
        )

    def plan(self) -> list[ScanTask]:
        """Frozen, picklable tasks in scan order (key order; reversed scans: descending)."""
        if self.range is None:
            return []
        tasks = plan_tasks(
            self.metadata,
            table_path=self.table_path,
            ranges=[self.range],
            wanted=self.wanted,
            spec=self.spec,
        )
        return tasks[::-1] if self.options.reversed else tasks

    def to_batches(self) -> Iterator[pa.Table]:
        """Results task by task (bounded memory: one region range at a time)."""
        remaining = self.options.limit
        for task in self.plan():
            if remaining == 0:
                return
            part = read_task(
                self.fs, task, point_row=self.options.point_row, reverse=self.options.reversed
            )
            if remaining is not None and part.num_rows:
                part = _first_rows(part, remaining)
                remaining -= _count_rows(part)
            if part.num_rows:
                yield part

    def to_arrow(self) -> pa.Table:
        """All results as one Arrow table: ``row, family, qualifier, ts, type, value``.

        Cells come in HBase result order: rows ascending (descending for reversed scans);
        inside a row, family and qualifier ascending, ts descending.
        """
        parts = list(self.to_batches())
        if not parts:
            return RESULT_SCHEMA.empty_table()
        return pa.concat_tables(parts)

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame."""
        df: pd.DataFrame = self.to_arrow().to_pandas()
        return df

    def divisions(self, tasks: list[ScanTask] | None = None) -> tuple[bytes, ...] | None:
        """Row-key divisions of :meth:`to_dask`'s partitions, or None when unknown.

        Known only for unsalted, forward scans: task ``i`` starts at ``divisions[i]`` and
        the last division is the largest row any planned file holds (dask's rule: each
        partition's index lies in ``[divisions[i], divisions[i+1])``, the last one closed).
        """
        tasks = self.plan() if tasks is None else tasks
        if not tasks or self.options.reversed or self.metadata.salt_buckets is not None:
            return None
        if self.options.limit is not None:
            return None
        last = tasks[-1]
        paths = {p for fam in last.families for p, _ in fam.files}
        last_row = max(f.last_row for f in self.metadata.files if f.path in paths)
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

        if self.options.limit is not None:
            raise InvalidArgumentError("to_dask() does not take a limit; use .head(n)")
        tasks = self.plan()
        reader = ScanPartitionReader(self.fs, reverse=self.options.reversed)
        meta = reader.empty()
        if not tasks:
            return dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
        return dd.from_map(  # type: ignore[no-untyped-call]
            reader,
            tasks,
            meta=meta,
            divisions=self.divisions(tasks),
            label="cellstore-scan",
            enforce_metadata=False,
        )

    def count_rows(self) -> int:
        """Number of rows with at least one visible cell (like HBase's RowCounter)."""
        return sum(_count_rows(part) for part in self.to_batches())


class ScanPartitionReader:
    """Callable that turns one :class:`ScanTask` into a pandas partition (for dask).

    Holds only the (picklable) filesystem and flags; the store files are opened on the
    worker that runs the task.
    """

    def __init__(self, fs: fsspec.AbstractFileSystem, *, reverse: bool = False) -> None:
        self.fs = fs
        self.reverse = reverse

    def empty(self) -> pd.DataFrame:
        """The partition schema as an empty DataFrame (dask's ``meta``)."""
        return _to_frame(RESULT_SCHEMA.empty_table())

    def __call__(self, task: ScanTask) -> pd.DataFrame:
        return _to_frame(read_task(self.fs, task, reverse=self.reverse))


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


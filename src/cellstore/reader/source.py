"""Where a readable table's cells come from: a :class:`ReadSource`.

The read path is one implementation (:class:`~cellstore.reader.Scan`, behind
:class:`~cellstore.reader.ReadableTable`); what differs between a cellstore table and an
HBase table is only the source it reads:

* which store files a row range of a region holds, and how one is opened
  (:meth:`ReadSource.plan`: the tasks, each family's files and their
  :class:`~cellstore.reader.plan.CellSource` if not Parquet store files);
* the largest row a task's files hold (:meth:`ReadSource.last_row`, Dask's divisions);
* what the source cannot read (:meth:`ReadSource.check`);
* the descriptor (:meth:`ReadSource.describe`).

:class:`StoreFileSource` is a cellstore table version's Parquet store files; the HBase
source (HFiles of a root directory or snapshot) is ``cellstore.hbase.tables.HFileSource``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import fsspec

from cellstore.core.filters import FilterPlan
from cellstore.core.keys import RowRange
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.semantics import ReadSpec
from cellstore.errors import TableNotFoundError
from cellstore.manifest import TableLog
from cellstore.reader.describe import Description, RegionDescription, TableDescription
from cellstore.reader.plan import ScanTask, plan_tasks, split_tasks
from cellstore.reader.pushdown import prune_tasks

__all__ = [
    "ReadSource",
    "StoreFileSource",
    "StoredTable",
    "TableFiles",
    "TaskRequest",
    "store_source",
]

D_co = TypeVar("D_co", bound=Description, covariant=True)


@dataclass(frozen=True)
class TaskRequest:
    """What a scan asks its source to plan.

    Attributes:
        ranges: Row ranges ``[start, stop)`` in key order, one per salt bucket on a
            salted table.
        specs: Family name to that family's read semantics, for the families read.
        filters: The scan's filters, carried by every task.
        budget: Cut tasks to about this many bytes of decoded cells; None for a point
            read (one row: never cut).
    """

    ranges: Sequence[RowRange]
    specs: Mapping[str, ReadSpec]
    filters: FilterPlan | None = None
    budget: int | None = None


class TableFiles(Protocol):
    """Where a table version's files are: filesystem, directory, metadata."""

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The filesystem the store files are on (picklable: tasks open files with it)."""
        ...

    @property
    def path(self) -> str:
        """The table's directory (carried by every task)."""
        ...

    @property
    def metadata(self) -> TableMetadata:
        """The table as the planner sees it: families, regions, salt, row key, properties."""
        ...


class ReadSource(TableFiles, Protocol[D_co]):
    """The part of a read that depends on where the table's cells are stored."""

    def plan(self, request: TaskRequest) -> list[ScanTask]:
        """Tasks reading the request's ranges (in key order) of its families.

        Returns:
            Tasks in key order, each one region's part of a range (or a piece of one,
            cut to the budget); tasks without files left out.
        """
        ...

    def last_row(self, task: ScanTask) -> bytes:
        """The largest row key the files of ``task`` hold (may lie past the task's stop)."""
        ...

    def check(self, families: Collection[str]) -> None:
        """Refuse a read of ``families`` that this source cannot give exactly.

        Raises:
            UnsupportedFormatError: a family stored in a way the reader does not implement.
        """
        ...

    def describe(self) -> D_co:
        """The table's families, regions and store files."""
        ...


@dataclass(frozen=True)
class StoreFileSource:
    """A cellstore table version: its manifest's Parquet store files.

    Attributes:
        fs: The warehouse filesystem.
        path: The table directory.
        metadata: The table version read.
        name: The table's name as the catalog knows it (default: the metadata's).
    """

    fs: fsspec.AbstractFileSystem
    path: str
    metadata: TableMetadata
    name: str | None = None

    def plan(self, request: TaskRequest) -> list[ScanTask]:
        """One task per range and region, cut by pushed-down filters; large ones cut too."""
        tasks = plan_tasks(
            self.metadata,
            table_path=self.path,
            ranges=request.ranges,
            specs=request.specs,
            filters=request.filters,
            strip_salt=self.metadata.salt_buckets is not None,
        )
        if request.filters is not None:
            tasks = prune_tasks(self.fs, tasks)  # reader/pushdown.py
        if request.budget is None:
            return tasks
        return split_tasks(self.fs, tasks, budget=request.budget, metadata=self.metadata)

    def last_row(self, task: ScanTask) -> bytes:
        """The largest ``last_row`` of the task's files' manifest entries."""
        paths = {p for fam in task.families for p, _ in fam.files}
        return max(f.last_row for f in self.metadata.files if f.path in paths)

    def check(self, families: Collection[str]) -> None:
        """Every family of a cellstore table is readable."""

    def describe(self) -> TableDescription:
        """Families, regions with their files and sizes, totals and the last commit."""
        meta = self.metadata
        by_region: dict[str, list[FileEntry]] = {}
        for f in meta.files:
            by_region.setdefault(f.region, []).append(f)
        regions = []
        for r in meta.regions:
            files = by_region.get(r.id, [])
            cells = sum(f.cells for f in files)
            size = sum(f.size for f in files)
            regions.append(RegionDescription(r.id, r.start, r.end, len(files), cells, size))
        totals = meta.file_totals()
        return TableDescription(
            name=self.name if self.name is not None else meta.name,
            table_uuid=meta.table_uuid,
            version=meta.version,
            families=meta.families,
            salt_buckets=meta.salt_buckets,
            regions=tuple(regions),
            files=totals.files,
            cells=totals.cells,
            bytes=totals.bytes,
            next_seq=meta.next_seq,
            last_commit=meta.last_history,
            properties=meta.properties,
            row_key=meta.row_key,
        )


class StoredTable(TableFiles, Protocol):
    """What a read needs of a cellstore table handle (``cellstore.warehouse.Table``).

    Any handle with the same state will do: its files (:class:`TableFiles`, the metadata
    of the version it points at), its name (``str()`` is used) and its log (for as-of
    reads).
    """

    @property
    def name(self) -> object:  # noqa: D102 (see the class docstring)
        ...

    @property
    def log(self) -> TableLog:  # noqa: D102
        ...


def store_source(table: StoredTable, version: int | None = None) -> StoreFileSource:
    """The store files of ``table`` at ``version`` (None: the version it points at).

    Raises:
        TableNotFoundError: no such version (expired or never made).
    """
    meta = table.metadata
    if version is not None and version != meta.version:
        if version < 1:
            raise TableNotFoundError(f"table {table.name} has no version {version}")
        try:
            meta = table.log.read(version)
        except FileNotFoundError:
            raise TableNotFoundError(f"table {table.name} has no version {version}") from None
    return StoreFileSource(table.fs, table.path, meta, name=str(table.name))

"""Reading HBase tables and snapshots in place, with the API of a cellstore table.

:func:`open_table` and :func:`open_snapshot` return an :class:`HBaseTable`: read-only,
with ``describe()``, ``scan(...)`` and ``get(...)`` as ``cellstore.Table`` has them. A scan
is the ordinary :class:`~cellstore.reader.Scan` (every option, shape, filter and output)
whose tasks read HFiles instead of Parquet store files: each task's
:class:`~cellstore.reader.plan.FamilyRead` carries an :class:`HFileStore`, which reads the
region's HFiles of one family and hands them, as sorted runs with their sequence ids, to
the same semantics engine (:func:`~cellstore.core.semantics.merge_resolve`).

Ties between equal keys (R3.2): HBase compares the cells' sequence ids first (the memstore
timestamps stored in the HFile; for a bulk-loaded file every cell takes the file's id,
R14.5), then the files' ranks (R3.1: ``_SeqId_N_`` or ``MAX_SEQ_ID_KEY``, then size,
bulk-load time and name). Runs are handed to the engine with their rank as sequence
number; when the cell sequence ids of the files disagree with the ranks, the losers of
each equal key are dropped first, which is what R3.3 does with them anyway.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import fsspec
import pyarrow as pa

from cellstore.commit import now_ms
from cellstore.core.family import Family
from cellstore.core.filters import Filter, normalize_filters
from cellstore.core.keys import to_string_binary
from cellstore.core.metadata import HistoryEntry, TableMetadata
from cellstore.core.regions import Region
from cellstore.errors import (
    InvalidArgumentError,
    UnsupportedFormatError,
)
from cellstore.fs import resolve_filesystem
from cellstore.hbase.descriptors import FamilyDescriptor
from cellstore.hbase.layout import HBaseLayout, HFileRef, load_snapshot, load_table
from cellstore.hbase.store import MAX_EXPANSION, HFileStore, cut_at_blocks, open_hfile
from cellstore.reader import (
    FamilyTimeRanges,
    Scan,
    ScanOptions,
    as_names,
    normalize_family_time_ranges,
)
from cellstore.reader.plan import DEFAULT_TASK_MEMORY, FamilyRead, ScanTask
from cellstore.storefiles.hfile.index import key_row

__all__ = [
    "HBaseFamilyDescription",
    "HBaseRegionDescription",
    "HBaseScan",
    "HBaseTable",
    "HBaseTableDescription",
    "HFileStore",
    "open_snapshot",
    "open_table",
]


# --------------------------------------------------------------------------- scans
@dataclass(frozen=True)
class _RegionPlan:
    region: Region
    files: Mapping[str, tuple[HFileRef, ...]]


class HBaseScan(Scan):
    """A :class:`~cellstore.reader.Scan` whose tasks read an HBase table's HFiles.

    One task per region overlapping the scan's range; a region whose files are large
    compared with the memory budget is cut at data-block first rows (the HFile block
    index), so every piece stays row-aligned.
    Inside a task, the reader cuts each family's cells into row-aligned chunks read on a
    thread pool (:meth:`HFileStore.chunk_bounds`).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        root: str,
        metadata: TableMetadata,
        options: ScanOptions,
        *,
        now_ms: int,
        regions: Sequence[_RegionPlan],
    ) -> None:
        self._regions = tuple(regions)
        super().__init__(fs, root, metadata, options, now_ms=now_ms)

    def _make_plan(self) -> list[ScanTask]:
        if self.range is None:
            return []
        start, stop = self.range
        tasks: list[ScanTask] = []
        for plan in self._regions:
            region = plan.region
            if not region.overlaps(start, stop):
                continue
            t_start = max(start, region.start)
            clip = region.end and (not stop or stop > region.end)
            t_stop = region.end if clip else stop
            reads = []
            for fname, spec in self.specs.items():
                files = tuple(
                    f for f in plan.files.get(fname, ()) if f.clip(t_start, t_stop) is not None
                )
                reads.append(
                    FamilyRead(
                        self.metadata.family(fname),
                        tuple((f.path, i) for i, f in enumerate(files)),
                        spec,
                        source=HFileStore(fname, files),
                    )
                )
            if not any(r.files for r in reads):
                continue
            task = ScanTask(
                self.table_path,
                region.id,
                t_start,
                t_stop,
                tuple(reads),
                filters=self.filter_plan,
                table=self.metadata.name,
            )
            if self.options.point_row is None:
                tasks.extend(self._split(task))
            else:
                tasks.append(task)
        return tasks[::-1] if self.options.reversed else tasks

    def _split(self, task: ScanTask) -> list[ScanTask]:
        """Cut a task at data-block first rows into pieces of about the memory budget."""
        budget = self.options.memory_budget or DEFAULT_TASK_MEMORY
        refs = [f for fam in task.families if fam.source for f in _store(fam).files]
        if sum(f.size for f in refs) * MAX_EXPANSION <= budget:
            return [task]
        blocks: list[tuple[bytes, float]] = []
        for ref in refs:
            bounds = ref.clip(task.start, task.stop)
            if bounds is None:
                continue
            reader = open_hfile(self.fs, ref)
            for e in reader.data_blocks(start_row=bounds[0] or None, stop_row=bounds[1] or None):
                blocks.append((key_row(e.key), float(e.size * MAX_EXPANSION)))
        pieces = cut_at_blocks(blocks, task.start, task.stop, float(budget))
        if len(pieces) == 1:
            return [task]
        out = []
        for lo, hi in pieces:
            reads = []
            for fam in task.families:
                store = _store(fam)
                files = tuple(f for f in store.files if f.clip(lo, hi) is not None)
                reads.append(
                    replace(
                        fam,
                        files=tuple((f.path, i) for i, f in enumerate(files)),
                        source=HFileStore(store.family, store.files),
                    )
                )
            out.append(replace(task, start=lo, stop=hi, families=tuple(reads)))
        return out

    def divisions(self, tasks: list[ScanTask] | None = None) -> tuple[bytes, ...] | None:
        """Row-key divisions of :meth:`to_dask`'s partitions (forward scans without limit).

        Task ``i`` starts at ``divisions[i]``; the last division is the largest row the
        last task's HFiles hold (their ``hfile.LASTKEY``), capped by the task's stop.
        """
        tasks = self.plan() if tasks is None else tasks
        if not tasks or self.options.reversed or self.options.limit is not None:
            return None
        last = tasks[-1]
        last_row = last.start
        for fam in last.families:
            for ref in _store(fam).files:
                key = open_hfile(self.fs, ref).last_key
                if key is not None:
                    last_row = max(last_row, key_row(key))
        if last.stop and last_row >= last.stop:
            last_row = last.stop
        starts = [t.start for t in tasks]
        return (*starts, max(last_row, starts[-1]))


def _store(fam: FamilyRead) -> HFileStore:
    assert isinstance(fam.source, HFileStore)
    return fam.source


# --------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class HBaseFamilyDescription:
    """A family: the settings reads apply, and the descriptor's attributes as stored."""

    settings: Family
    descriptor: FamilyDescriptor

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**self.settings.to_dict(), "hbase": self.descriptor.to_dict()}


@dataclass(frozen=True)
class HBaseRegionDescription:
    """A region: its encoded name, key range, HBase region id and store files."""

    id: str
    start: bytes
    end: bytes
    region_id: int
    files: int
    bytes: int


@dataclass(frozen=True)
class HBaseTableDescription:
    """What ``HBaseTable.describe`` reports.

    ``regions_from`` says where the regions came from: ``manifest`` (a snapshot),
    ``hbase:meta`` or ``directories`` (a root's region directories).
    """

    name: str
    root: str
    layout: str
    snapshot: str | None
    attributes: Mapping[str, str]
    families: tuple[HBaseFamilyDescription, ...]
    regions: tuple[HBaseRegionDescription, ...]
    regions_from: str = "directories"

    @property
    def files(self) -> int:
        """Store files over all regions."""
        return sum(r.files for r in self.regions)

    @property
    def bytes(self) -> int:
        """Bytes of store files over all regions."""
        return sum(r.bytes for r in self.regions)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (row keys as HBase-style escaped strings)."""
        return {
            "name": self.name,
            "root": self.root,
            "layout": self.layout,
            "snapshot": self.snapshot,
            "regions-from": self.regions_from,
            "attributes": dict(self.attributes),
            "families": [f.to_dict() for f in self.families],
            "regions": [
                {
                    "id": r.id,
                    "start": to_string_binary(r.start),
                    "end": to_string_binary(r.end),
                    "region-id": r.region_id,
                    "files": r.files,
                    "bytes": r.bytes,
                }
                for r in self.regions
            ],
            "files": self.files,
            "bytes": self.bytes,
        }


class HBaseTable:
    """A read-only HBase table or snapshot, read in place from its HFiles.

    Same read API as ``cellstore.Table``: :meth:`scan`, :meth:`get`, :meth:`describe`,
    ``families`` and ``regions``. Region ids are HBase's encoded region names.
    """

    def __init__(self, fs: fsspec.AbstractFileSystem, layout: HBaseLayout) -> None:
        self._fs = fs
        self.layout = layout
        where = f"HBase table {layout.descriptor.name} in {layout.root}"
        self._families = tuple(f.to_family(where=where) for f in layout.descriptor.families)
        self._regions = tuple(
            Region(r.info.encoded, r.info.start, r.info.end) for r in layout.regions
        )
        self._metadata = TableMetadata(
            table_uuid=f"hbase:{layout.root}:{layout.descriptor.name}",
            name=layout.descriptor.name,
            version=0,
            families=self._families,
            regions=self._regions,
            salt_buckets=None,
            files=(),
            next_seq=0,
            next_region_id=0,
            last_history=HistoryEntry(version=0, operation="hbase", timestamp_ms=0),
        )

    def __repr__(self) -> str:
        snap = self.layout.snapshot
        what = f"snapshot {snap.name!r} of " if snap is not None else ""
        return f"HBaseTable({what}{self.name!r} at {self.layout.root!r})"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The filesystem of the root directory."""
        return self._fs

    @property
    def name(self) -> str:
        """The table name (``ns:table``, or ``table`` in the default namespace)."""
        return self.layout.descriptor.name

    @property
    def families(self) -> tuple[Family, ...]:
        """Families in name order, with the descriptor's read settings."""
        return self._families

    @property
    def metadata(self) -> TableMetadata:
        """The table as cellstore's planner sees it: families and regions, no store files."""
        return self._metadata

    @property
    def regions(self) -> tuple[Region, ...]:
        """Regions in key order (ids are encoded region names)."""
        return self._regions

    def describe(self) -> HBaseTableDescription:
        """Families (settings and stored attributes) and regions with their store files."""
        desc = self.layout.descriptor
        regions = []
        for r in self.layout.regions:
            refs = [f for files in r.files.values() for f in files]
            regions.append(
                HBaseRegionDescription(
                    r.info.encoded,
                    r.info.start,
                    r.info.end,
                    r.info.region_id,
                    len(refs),
                    sum(f.size for f in refs),
                )
            )
        snap = self.layout.snapshot
        return HBaseTableDescription(
            name=self.name,
            root=self.layout.root,
            layout=self.layout.version,
            snapshot=None if snap is None else snap.name,
            attributes=dict(desc.attributes),
            families=tuple(
                HBaseFamilyDescription(s, d)
                for s, d in zip(self._families, desc.families, strict=True)
            ),
            regions=tuple(regions),
            regions_from=self.layout.regions_from,
        )

    def _scan(self, options: ScanOptions) -> HBaseScan:
        scan = HBaseScan(
            self._fs,
            self.layout.root,
            self._metadata,
            options,
            now_ms=now_ms(),
            regions=[
                _RegionPlan(reg, r.files)
                for reg, r in zip(self._regions, self.layout.regions, strict=True)
            ],
        )
        for fam_name in scan.specs:
            fam = next(f for f in self.layout.descriptor.families if f.name == fam_name)
            if fam.new_version_behavior:
                raise UnsupportedFormatError(
                    f"HBase table {self.name} in {self.layout.root}: family {fam_name} has "
                    "NEW_VERSION_BEHAVIOR=true, which cellstore does not implement (R17.1)"
                )
        return scan

    def scan(
        self,
        *,
        start_row: bytes | str | None = None,
        stop_row: bytes | str | None = None,
        row_prefix: bytes | str | None = None,
        columns: Iterable[bytes | str] | bytes | str | None = None,
        families: Iterable[str] | str | None = None,
        time_range: tuple[int, int] | None = None,
        family_time_ranges: FamilyTimeRanges | None = None,
        timestamp: int | None = None,
        max_versions: int | None = None,
        raw: bool = False,
        reversed: bool = False,
        limit: int | None = None,
        filter: Filter | Sequence[Filter] | None = None,
        max_results_per_family: int | None = None,
        row_offset_per_family: int = 0,
        shape: str = "cells",
        column_types: Mapping[str, str] | None = None,
        decode_errors: str = "raise",
        memory_budget: int | None = None,
        now_ms: int | None = None,
    ) -> HBaseScan:
        """Plan a scan with HBase's read semantics; options as ``cellstore.Table.scan``.

        The family settings (versions, min versions, TTL, keep-deleted-cells) come from
        the HBase table descriptor; deletes, versions and ties apply across all HFiles of
        a store as HBase applies them. ``memory_budget`` cuts large regions at HFile data
        blocks. There is no row-key spec, so no ``key=``.

        Returns:
            A :class:`~cellstore.reader.Scan`: ``to_arrow()``, ``to_pandas()``,
            ``to_batches()``, ``to_dask()`` (divisions known), ``count_rows()``, ``plan()``.

        Raises:
            InvalidFamilyError: an unknown family (the message names the table).
            UnsupportedFormatError: a family with ``NEW_VERSION_BEHAVIOR=true``.
        """
        options = ScanOptions(
            start_row=start_row,
            stop_row=stop_row,
            row_prefix=row_prefix,
            columns=as_names(columns),
            families=as_names(families),
            time_range=time_range,
            family_time_ranges=normalize_family_time_ranges(family_time_ranges),
            timestamp=timestamp,
            max_versions=max_versions,
            raw=raw,
            reversed=reversed,
            limit=limit,
            filter=normalize_filters(filter),
            max_results_per_family=max_results_per_family,
            row_offset_per_family=row_offset_per_family,
            shape=shape,
            column_types=tuple((column_types or {}).items()) or None,
            decode_errors=decode_errors,
            memory_budget=memory_budget,
            now_ms=now_ms,
        )
        return self._scan(options)

    def get(
        self,
        row: bytes | str,
        *,
        columns: Iterable[bytes | str] | bytes | str | None = None,
        families: Iterable[str] | str | None = None,
        time_range: tuple[int, int] | None = None,
        family_time_ranges: FamilyTimeRanges | None = None,
        timestamp: int | None = None,
        max_versions: int | None = None,
        filter: Filter | Sequence[Filter] | None = None,
        now_ms: int | None = None,
    ) -> pa.Table:
        """Point read of one row (HBase ``Get``, R12.3); options as :meth:`scan`.

        HFiles whose row Bloom filter rules the row out are not read.
        """
        key = row.encode("utf-8") if isinstance(row, str) else bytes(row)
        if not key:
            raise InvalidArgumentError("get needs a non-empty row key (R16.1)")
        options = ScanOptions(
            start_row=key,
            stop_row=key + b"\x00",
            columns=as_names(columns),
            families=as_names(families),
            time_range=time_range,
            family_time_ranges=normalize_family_time_ranges(family_time_ranges),
            timestamp=timestamp,
            max_versions=max_versions,
            filter=normalize_filters(filter),
            now_ms=now_ms,
            point_row=key,
        )
        return self._scan(options).to_arrow()


def open_table(
    root: str,
    table: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    use_meta: bool = True,
    follow_symlinks: bool = False,
) -> HBaseTable:
    """Open a table of an HBase root directory (0.94 or 2.x/3.x, or a copy of one).

    Regions come from ``hbase:meta``'s HFiles when it lists the table (online regions
    only), else from the region directories; store files from each store's
    ``.filelist`` when it has one, else from its directory (``docs/hbase.md``).

    Args:
        root: The root directory (``hbase.rootdir``): a local path or any fsspec URL.
        table: ``ns:table`` (or ``table`` in the default namespace; 0.94 tables by name).
        storage_options: fsspec options for ``root``'s filesystem.
        use_meta: Take a 2.x/3.x root's regions from ``hbase:meta`` when it lists them;
            False lists the region directories instead (e.g. when meta was not flushed
            since the last split).
        follow_symlinks: Follow symlinks that lead outside ``root`` (local disk); by
            default only those that stay inside it are followed (``docs/hbase.md``,
            "Untrusted input").

    Raises:
        InvalidNameError: ``table`` breaks HBase's naming rules.
        TableNotFoundError: no such table (the message lists the tables found).
        MissingFileError: a store file is in none of the places HBase looks, a region
            meta lists has no directory, a FILE-tracked store has no ``.filelist``.
        CorruptFileError: a descriptor, region info or file list that does not parse, a
            name in one that breaks HBase's rules, a symlink leading outside ``root``.
        UnsupportedFormatError: MOB, encrypted data or a catalog table.
    """
    fs, path = resolve_filesystem(root, storage_options=storage_options)
    layout = load_table(fs, path, table, use_meta=use_meta, follow_symlinks=follow_symlinks)
    return HBaseTable(fs, layout)


def open_snapshot(
    root: str,
    name: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    follow_symlinks: bool = False,
) -> HBaseTable:
    """Open a snapshot of an HBase root directory, or an exported snapshot.

    Args:
        root: The root directory holding ``.hbase-snapshot/<name>`` (``.snapshot`` in
            early 0.94), e.g. an ``ExportSnapshot`` target.
        name: The snapshot name.
        storage_options: fsspec options for ``root``'s filesystem.
        follow_symlinks: Follow symlinks that lead outside ``root`` (as :func:`open_table`).

    Raises:
        InvalidNameError: ``name`` breaks HBase's naming rules for snapshots.
        SnapshotNotFoundError: no such snapshot (the message lists the snapshots found).
        CorruptFileError: a manifest that does not parse, a name in it that breaks
            HBase's rules, a symlink leading outside ``root``.
        MissingFileError: a store file is in none of the places HBase looks.
        UnsupportedFormatError: MOB or encrypted data.
    """
    fs, path = resolve_filesystem(root, storage_options=storage_options)
    return HBaseTable(fs, load_snapshot(fs, path, name, follow_symlinks=follow_symlinks))

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

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import fsspec

from cellstore.core.family import Family
from cellstore.core.keys import to_string_binary
from cellstore.core.metadata import HistoryEntry, TableMetadata
from cellstore.core.regions import Region
from cellstore.core.results import JsonForm, Total
from cellstore.core.text import hbase_map, plural
from cellstore.errors import InvalidArgumentError, UnsupportedFormatError
from cellstore.hbasefiles.descriptors import FamilyDescriptor
from cellstore.hbasefiles.layout import HBaseLayout, HFileRef
from cellstore.hbasefiles.roots import open_snapshot_layout, open_table_layout
from cellstore.hbasefiles.store import (
    MAX_EXPANSION,
    HFileStore,
    cut_at_blocks,
    open_hfile,
    scan_read_options,
)
from cellstore.reader import TableReads
from cellstore.reader.describe import DescriptionText, families_block, regions_block
from cellstore.reader.plan import FamilyRead, ScanTask
from cellstore.reader.source import TaskRequest
from cellstore.storefiles.hfile.index import key_row
from cellstore.storefiles.hfile.readoptions import HFileReadOptions

__all__ = [
    "HBaseFamilyDescription",
    "HBaseRegionDescription",
    "HBaseTable",
    "HBaseTableDescription",
    "HFileSource",
    "HFileStore",
    "open_snapshot",
    "open_table",
]


# --------------------------------------------------------------------------- source
@dataclass(frozen=True)
class HFileSource:
    """An HBase table's HFiles as a :class:`~cellstore.reader.ReadSource`.

    Planning: one task per region overlapping a range; a region whose files are large
    compared with the memory budget is cut at data-block first rows (the HFile block
    index), so every piece stays row-aligned. Each family's part of a task reads through
    an :class:`HFileStore`, which cuts its cells into row-aligned chunks read on a thread
    pool (:meth:`HFileStore.chunk_bounds`).

    Attributes:
        fs: The root directory's filesystem.
        layout: The table or snapshot as found under the root.
        metadata: The table as the planner sees it (families, regions, no store files).
        path: The root directory (carried by tasks, for messages).
        read_options: How each store's HFiles are read (``threads``, ``batch_bytes``).
    """

    fs: fsspec.AbstractFileSystem
    layout: HBaseLayout
    metadata: TableMetadata
    path: str
    read_options: HFileReadOptions = field(default_factory=HFileReadOptions)

    def plan(self, request: TaskRequest) -> list[ScanTask]:
        """One task per range and region with files; large ones cut at data blocks."""
        tasks: list[ScanTask] = []
        regions = list(zip(self.metadata.regions, self.layout.regions, strict=True))
        for start, stop in request.ranges:
            for region, found in regions:
                task = self._task(region, found.files, start, stop, request)
                if task is None:
                    continue
                budget = request.budget
                tasks.extend([task] if budget is None else self._split(task, budget))
        return tasks

    def _task(
        self,
        region: Region,
        files: Mapping[str, tuple[HFileRef, ...]],
        start: bytes,
        stop: bytes,
        request: TaskRequest,
    ) -> ScanTask | None:
        """The task of ``[start, stop)`` in ``region``, or None when no file holds it."""
        if not region.overlaps(start, stop):
            return None
        t_start = max(start, region.start)
        clip = region.end and (not stop or stop > region.end)
        t_stop = region.end if clip else stop
        reads = []
        for fname, spec in request.specs.items():
            refs = tuple(f for f in files.get(fname, ()) if f.clip(t_start, t_stop) is not None)
            reads.append(
                FamilyRead(
                    self.metadata.family(fname),
                    tuple((f.path, i) for i, f in enumerate(refs)),
                    spec,
                    source=HFileStore(fname, refs, self.read_options),
                )
            )
        if not any(r.files for r in reads):
            return None
        return ScanTask(
            self.path,
            region.id,
            t_start,
            t_stop,
            tuple(reads),
            filters=request.filters,
            table=self.metadata.name,
        )

    def _split(self, task: ScanTask, budget: int) -> list[ScanTask]:
        """Cut a task at data-block first rows into pieces of about ``budget`` bytes."""
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
                        source=HFileStore(store.family, store.files, store.read_options),
                    )
                )
            out.append(replace(task, start=lo, stop=hi, families=tuple(reads)))
        return out

    def last_row(self, task: ScanTask) -> bytes:
        """The largest row the task's HFiles hold (their ``hfile.LASTKEY``)."""
        last_row = task.start
        for fam in task.families:
            for ref in _store(fam).files:
                key = open_hfile(self.fs, ref).last_key
                if key is not None:
                    last_row = max(last_row, key_row(key))
        return last_row

    def check(self, families: Collection[str]) -> None:
        """Refuse families with ``NEW_VERSION_BEHAVIOR=true`` (R17.1)."""
        for fam in self.layout.descriptor.families:
            if fam.name in families and fam.new_version_behavior:
                raise UnsupportedFormatError(
                    f"{self.layout.where}: family {fam.name} has NEW_VERSION_BEHAVIOR=true, "
                    "which cellstore does not implement (R17.1)"
                )

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
            name=desc.name,
            root=self.layout.root,
            layout=self.layout.version,
            snapshot=None if snap is None else snap.name,
            attributes=dict(desc.attributes),
            families=tuple(
                HBaseFamilyDescription(s, d)
                for s, d in zip(self.metadata.families, desc.families, strict=True)
            ),
            regions=tuple(regions),
            regions_from=self.layout.regions_from,
        )


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
class HBaseRegionDescription(JsonForm):
    """A region: its encoded name, key range, HBase region id and store files."""

    id: str
    start: bytes
    end: bytes
    region_id: int
    files: int
    bytes: int


@dataclass(frozen=True, repr=False)
class HBaseTableDescription(JsonForm, DescriptionText):
    """What ``HBaseTable.describe`` reports.

    ``regions_from`` says where the regions came from: ``manifest`` (a snapshot),
    ``hbase:meta`` or ``directories`` (a root's region directories).
    """

    json_keys = "name root layout snapshot regions_from attributes families regions files bytes"

    name: str
    root: str
    layout: str
    snapshot: str | None
    attributes: Mapping[str, str]
    families: tuple[HBaseFamilyDescription, ...]
    regions: tuple[HBaseRegionDescription, ...]
    regions_from: str = "directories"

    files = Total("regions", "files", "Store files over all regions.")
    bytes = Total("regions", "bytes", "Bytes of store files over all regions.")

    def text_lines(self) -> list[str]:
        """The lines of ``str(self)``, laid out as a cellstore table's ``describe``.

        Where the table is (its layout, root, snapshot, where the regions came from) and
        its stored attributes, each family's descriptor attributes as stored, the regions
        as a grid, then totals.
        """
        attrs = {"REGIONS_FROM": self.regions_from, **dict(sorted(self.attributes.items()))}
        attr_text = ", ".join(f"{k} => '{v}'" for k, v in attrs.items())
        what = f"snapshot {self.snapshot} of " if self.snapshot else ""
        families = (
            hbase_map({"NAME": f.settings.name, **dict(sorted(f.descriptor.attributes.items()))})
            for f in self.families
        )
        region_rows = [
            [
                r.id,
                to_string_binary(r.start),
                to_string_binary(r.end),
                r.region_id,
                r.files,
                r.bytes,
            ]
            for r in self.regions
        ]
        return [
            f"Table {what}{self.name} (HBase {self.layout} layout at {self.root})",
            f"{self.name}, {{TABLE_ATTRIBUTES => {{{attr_text}}}}}",
            *families_block(families),
            *regions_block(
                ["ID", "START KEY", "END KEY", "REGION ID", "FILES", "BYTES"], region_rows
            ),
            f"Total: {plural(len(self.regions), 'region')}, {plural(self.files, 'file')}, "
            f"{plural(self.bytes, 'byte')}",
        ]


class HBaseTable(TableReads[HBaseTableDescription]):
    """A read-only HBase table or snapshot, read in place from its HFiles.

    A :class:`~cellstore.reader.ReadableTable`: ``scan``, ``get`` and ``describe`` are
    ``cellstore.Table``'s (one implementation, over an :class:`HFileSource`), with
    ``families`` and ``regions``. Region ids are HBase's encoded region names. The family
    settings (versions, min versions, TTL, keep-deleted-cells) come from the HBase table
    descriptor; deletes, versions and ties apply across all HFiles of a store as HBase
    applies them; ``memory_budget`` cuts large regions at HFile data blocks. There are no
    versions, row-key spec or recorded codecs, so no ``version=``, ``key=`` or
    ``column_types="table"``; a family with ``NEW_VERSION_BEHAVIOR=true`` is refused
    (UnsupportedFormatError).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        layout: HBaseLayout,
        *,
        read_options: HFileReadOptions | None = None,
    ) -> None:
        self._fs = fs
        self.layout = layout
        self._families = layout.core_families()
        self._regions = layout.core_regions()
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
        self._source = HFileSource(
            fs, layout, self._metadata, layout.root, scan_read_options(read_options)
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

    def _read_source(self, version: int | None) -> HFileSource:
        """The HFiles of the table or snapshot (HBase tables have no versions)."""
        if version is not None:
            raise InvalidArgumentError(
                f"{self.layout.where} has no versions (version={version}); open a snapshot instead"
            )
        return self._source


def open_table(
    root: str,
    table: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    use_meta: bool = True,
    follow_symlinks: bool = False,
    read_options: HFileReadOptions | None = None,
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
        read_options: How scans read the HFiles: only ``threads`` (blocks decompressed
            and decoded at once per file) and ``batch_bytes`` may be set; default
            ``HFileReadOptions()``. Results do not depend on them.

    Raises:
        InvalidNameError: ``table`` breaks HBase's naming rules.
        TableNotFoundError: no such table (the message lists the tables found).
        MissingFileError: a store file is in none of the places HBase looks, a region
            meta lists has no directory, a FILE-tracked store has no ``.filelist``.
        CorruptFileError: a descriptor, region info or file list that does not parse, a
            name in one that breaks HBase's rules, a symlink leading outside ``root``.
        UnsupportedFormatError: MOB, encrypted data or a catalog table.
        InvalidArgumentError: ``read_options`` sets more than ``threads`` and
            ``batch_bytes``.
    """
    fs, layout = open_table_layout(
        root,
        table,
        storage_options=storage_options,
        use_meta=use_meta,
        follow_symlinks=follow_symlinks,
    )
    return HBaseTable(fs, layout, read_options=read_options)


def open_snapshot(
    root: str,
    name: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    follow_symlinks: bool = False,
    read_options: HFileReadOptions | None = None,
) -> HBaseTable:
    """Open a snapshot of an HBase root directory, or an exported snapshot.

    Args:
        root: The root directory holding ``.hbase-snapshot/<name>`` (``.snapshot`` in
            early 0.94), e.g. an ``ExportSnapshot`` target.
        name: The snapshot name.
        storage_options: fsspec options for ``root``'s filesystem.
        follow_symlinks: Follow symlinks that lead outside ``root`` (as :func:`open_table`).
        read_options: How scans read the HFiles (as :func:`open_table`).

    Raises:
        InvalidNameError: ``name`` breaks HBase's naming rules for snapshots.
        SnapshotNotFoundError: no such snapshot (the message lists the snapshots found).
        CorruptFileError: a manifest that does not parse, a name in it that breaks
            HBase's rules, a symlink leading outside ``root``.
        MissingFileError: a store file is in none of the places HBase looks.
        UnsupportedFormatError: MOB or encrypted data.
        InvalidArgumentError: ``read_options`` sets more than ``threads`` and
            ``batch_bytes``.
    """
    fs, layout = open_snapshot_layout(
        root, name, storage_options=storage_options, follow_symlinks=follow_symlinks
    )
    return HBaseTable(fs, layout, read_options=read_options)

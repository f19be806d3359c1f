"""Scan planning: a scan's options become frozen, picklable tasks over regions.

Planning is a deterministic function of the table metadata and the scan arguments: no I/O,
no directory listing. Each :class:`ScanTask` names one region's row range, the store files
of every requested family that can hold matching cells, and the read semantics to apply.
"""

from __future__ import annotations

import hashlib
import itertools
import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Protocol

import fsspec
import pyarrow as pa

from cellstore.core.cells import MAX_ROW_LENGTH
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.core.filters import FilterPlan
from cellstore.core.keys import RowRange, as_bytes
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.semantics import ReadSpec
from cellstore.errors import InvalidRowRangeError
from cellstore.storefiles import StoreFileReader
from cellstore.storefiles.layout import entry_path

__all__ = [
    "DEFAULT_TASK_MEMORY",
    "CellSource",
    "FamilyRead",
    "ScanTask",
    "parse_columns",
    "plan_tasks",
    "prefix_stop_row",
    "row_range",
    "split_tasks",
]

#: Default memory budget of one scan task: the uncompressed bytes of the cells it reads.
DEFAULT_TASK_MEMORY: Final = 256 * 1024 * 1024

#: Compressed store files are assumed to expand at most this much when decoded; regions
#: whose files are smaller than ``budget / _MAX_EXPANSION`` are never opened for planning.
_MAX_EXPANSION: Final = 8


class CellSource(Protocol):
    """Another source of a family's store-file cells than cellstore's Parquet files.

    Implementations are frozen and picklable (they travel inside tasks), e.g. the HFiles
    of an HBase store (:mod:`cellstore.hbase.tables`).
    """

    def read_runs(
        self, fs: fsspec.AbstractFileSystem, start: bytes, stop: bytes, *, point_row: bytes | None
    ) -> tuple[list[pa.Table], list[int]]:
        """The cells of rows ``[start, stop)``: runs in cell order, a sequence number each.

        The runs and numbers are what :func:`~cellstore.core.semantics.merge_runs` takes.
        """
        ...

    def chunk_bounds(
        self, fs: fsspec.AbstractFileSystem, start: bytes, stop: bytes, *, target_cells: int
    ) -> list[tuple[bytes, bytes]]:
        """``[start, stop)`` cut at row keys into ranges of about ``target_cells`` cells.

        The ranges are consecutive (each starts where the previous one stops, the first at
        ``start``, the last stops at ``stop``) and row-aligned, so :meth:`read_runs` of each
        range can be merged and resolved on its own (HBase's semantics are per row) and
        the results concatenated give exactly the cells of the whole range. A source that
        cannot estimate returns ``[(start, stop)]``.
        """
        ...


@dataclass(frozen=True)
class FamilyRead:
    """One family's part of a task: its settings, its files and the read semantics.

    Attributes:
        family: The family's settings.
        files: ``(path relative to the table, sequence number)`` of each file, oldest first.
        spec: The semantics to apply (versions, time range, raw, columns, now).
        entries: The manifest entries of ``files``: a file is checked against its entry
            when opened (size and footer, see :class:`~cellstore.storefiles.StoreFileReader`).
            Every task the planner makes carries them.
        source: When set, the cells come from this source instead of the store files
            (``files`` then only names what it reads, for messages).
    """

    family: Family
    files: tuple[tuple[str, int], ...]
    spec: ReadSpec
    entries: tuple[FileEntry, ...] = ()
    source: CellSource | None = None

    def entry(self, path: str) -> FileEntry | None:
        """The manifest entry of file ``path``, or None if the task carries none."""
        for e in self.entries:
            if e.path == path:
                return e
        return None


@dataclass(frozen=True)
class ScanTask:
    """One unit of scan work: a row range inside one region. Frozen and picklable.

    Attributes:
        table_path: The table directory on the filesystem.
        region: Region id.
        start: First row (inclusive); empty = region start.
        stop: Row after the last (exclusive); empty = unbounded.
        families: What to read for each requested family, in family order.
        filters: The scan's filters and the per-family limits applied after them, or None.
        strip_salt: Drop the first byte (the salt) of every returned row key.
        table: The table's name (for error messages), or None.
        version: The table version planned (for error messages), or None.
    """

    table_path: str
    region: str
    start: bytes
    stop: bytes
    families: tuple[FamilyRead, ...]
    filters: FilterPlan | None = None
    strip_salt: bool = False
    table: str | None = None
    version: int | None = None

    def __dask_tokenize__(self) -> str:
        """Dask's token of the task: a digest of its pickled fields, made once per object.

        Dask's optimizer tokenizes a collection's tasks each time it rewrites the graph
        (a column projection does, once per step); walking the nested entries every time
        cost more than reading a small partition.
        """
        token: str | None = self.__dict__.get("_dask_token")
        if token is None:
            token = hashlib.blake2b(pickle.dumps(self, protocol=5), digest_size=16).hexdigest()
            object.__setattr__(self, "_dask_token", token)  # (not a field: equality as is)
        return token

    def open_file(
        self, fs: fsspec.AbstractFileSystem, fam: FamilyRead, path: str
    ) -> StoreFileReader:
        """Open store file ``path`` of ``fam``, checked against its manifest entry.

        Raises:
            MissingFileError: the file is gone.
            CorruptFileError: the file does not match its entry or cannot be read.
        """
        return StoreFileReader(
            fs,
            entry_path(self.table_path, path, table=self.table, version=self.version),
            entry=fam.entry(path),
            table=self.table,
            version=self.version,
        )


def prefix_stop_row(prefix: bytes) -> bytes:
    """The exclusive stop row of a prefix scan (R12.4); ``b""`` (no stop) when unbounded."""
    return RowRange.of_prefix(prefix).stop


def parse_columns(
    metadata: TableMetadata,
    *,
    columns: Iterable[bytes | str] | None,
    families: Iterable[str] | None,
) -> dict[str, frozenset[bytes] | None]:
    """Requested families and their explicit qualifiers (R11.1).

    ``columns`` are ``family:qualifier`` names (str or bytes; the first ':' separates, so
    ``family:`` names the empty qualifier). A bare ``family`` widens that family to all its
    columns, as ``families`` does and as HBase's ``addFamily`` after ``addColumn`` does.

    Returns:
        Family name to its qualifier set, or None for the whole family. No columns and no
        families means every family, whole.

    Raises:
        InvalidFamilyError: a named family does not exist.
    """
    wanted: dict[str, frozenset[bytes] | None] = {}
    whole: set[str] = set()
    explicit: dict[str, set[bytes]] = {}
    for fam in families or ():
        metadata.family(fam)
        whole.add(fam)
    for col in columns or ():
        raw = as_bytes(col, "a column")
        fam_b, sep, qual = raw.partition(b":")
        fam = fam_b.decode("utf-8")
        metadata.family(fam)
        if not sep:
            whole.add(fam)
        else:
            explicit.setdefault(fam, set()).add(qual)
    if not whole and not explicit:
        return {f.name: None for f in metadata.families}
    for f in metadata.families:
        if f.name in whole:
            wanted[f.name] = None
        elif f.name in explicit:
            wanted[f.name] = frozenset(explicit[f.name])
    return wanted


def _overlaps(entry: FileEntry, start: bytes, stop: bytes) -> bool:
    if start and entry.last_row < start:
        return False
    return not (stop and entry.first_row >= stop)


def _may_matter(entry: FileEntry, family: Family, spec: ReadSpec) -> bool:
    """Whether a store file can hold a cell the family's read returns or applies.

    ``spec`` is the family's own read, so a per-family time range (R7.1) prunes that
    family's files only. A file all of whose cells are older than the range is never
    needed: its puts are out of range and its markers older than ``min`` are ignored
    (R7.2, R7.3). A file all of whose cells are at or past ``max`` is needed only for its
    delete markers, and only by a normal read with KEEP_DELETED_CELLS=FALSE, which applies
    markers newer than the range (R7.3; TRUE/TTL apply only markers inside it, R9.2; raw
    reads return only cells inside it, R10). Out-of-range puts never take a version slot
    or win an equal-key tie (R3.3, R7.2), so leaving such files out changes nothing.
    """
    if spec.all_time:
        return True
    assert spec.time_range is not None
    lo, hi = spec.time_range
    if entry.max_ts < lo:
        return False
    if entry.min_ts < hi:
        return True
    markers_apply = not spec.raw and family.keep_deleted_cells is KeepDeletedCells.FALSE
    return markers_apply and entry.delete_markers > 0


def plan_tasks(
    metadata: TableMetadata,
    *,
    table_path: str,
    ranges: Sequence[RowRange],
    specs: Mapping[str, ReadSpec],
    filters: FilterPlan | None = None,
    strip_salt: bool = False,
) -> list[ScanTask]:
    """One task per (row range x region) overlap, in the order of ``ranges``.

    Files whose row span misses the task's range are left out, and so are files whose
    cells cannot matter to the family's time range (see :func:`_may_matter`; each family
    uses its own range when the read gives it one, R7.1).

    Args:
        metadata: The table version to read.
        table_path: The table directory.
        ranges: Row ranges ``[start, stop)`` in key order (``b""`` stop = unbounded).
        specs: Family name to that family's read semantics, for the requested families.
        filters: The scan's filters, carried by every task.
        strip_salt: Tasks drop the salt byte from returned rows.
    """
    wanted = [r for r in metadata.regions if any(r.overlaps(a, b) for a, b in ranges)]
    by_store: dict[tuple[str, str], list[FileEntry]] = {}
    # Only the entries of the regions the ranges touch: on a format-version-2 table this
    # reads only the manifests (and row groups) that can hold them.
    for f in metadata.files_in(r.id for r in wanted):
        # refuse a path leaving the table's warehouse before reading
        entry_path(table_path, f.path, table=metadata.name, version=metadata.version)
        by_store.setdefault((f.region, f.family), []).append(f)
    for store in by_store.values():
        store.sort(key=lambda f: (f.seq, f.path))
    tasks: list[ScanTask] = []
    for start, stop in ranges:
        for region in wanted:
            if not region.overlaps(start, stop):
                continue
            t_start = max(start, region.start)
            clip = region.end and (not stop or stop > region.end)
            t_stop = region.end if clip else stop
            reads = []
            for fname, spec in specs.items():
                family = metadata.family(fname)
                entries = tuple(
                    f
                    for f in by_store.get((region.id, fname), ())
                    if _overlaps(f, t_start, t_stop) and _may_matter(f, family, spec)
                )
                files = tuple((f.path, f.seq) for f in entries)
                reads.append(FamilyRead(family, files, spec, entries))
            if any(r.files for r in reads):
                tasks.append(
                    ScanTask(
                        table_path,
                        region.id,
                        t_start,
                        t_stop,
                        tuple(reads),
                        filters=filters,
                        strip_salt=strip_salt,
                        table=metadata.name,
                        version=metadata.version,
                    )
                )
    return tasks


def split_tasks(
    fs: fsspec.AbstractFileSystem,
    tasks: Sequence[ScanTask],
    *,
    budget: int,
    metadata: TableMetadata,
) -> list[ScanTask]:
    """Cut tasks whose cells would exceed ``budget`` bytes into row-range pieces.

    The size of a task is the uncompressed size of the Parquet row groups it reads (the
    store files' row-group statistics say which row groups hold which rows). A task is cut
    at row-group starts, which are row keys, so every row stays in one piece; a single row
    group larger than the budget stays whole. Tasks whose files are small compared with the
    budget are kept without opening any file.

    Returns:
        The tasks, in the same order, with large ones replaced by their pieces.
    """
    out: list[ScanTask] = []
    for task in tasks:
        entries = {e.path: e for fam in task.families for e in fam.entries}
        paths = [(fam, p) for fam in task.families for p, _ in fam.files]
        if any(p not in entries for _, p in paths):  # a task built without its entries
            entries.update((e.path, e) for e in metadata.files_in([task.region]))
        sizes = {p: e.size for p, e in entries.items()}
        if sum(sizes.get(p, 0) for _, p in paths) * _MAX_EXPANSION <= budget:
            out.append(task)
            continue
        cuts = _cut_points(fs, task, paths, budget)
        if not cuts:
            out.append(task)
            continue
        bounds = [task.start, *cuts, task.stop]
        for lo, hi in itertools.pairwise(bounds):
            reads = tuple(
                replace(
                    fam,
                    files=tuple((p, seq) for p, seq in fam.files if _overlaps(entries[p], lo, hi)),
                    entries=tuple(e for e in fam.entries if _overlaps(e, lo, hi)),
                )
                for fam in task.families
            )
            if any(r.files for r in reads):
                out.append(replace(task, start=lo, stop=hi, families=reads))
    return out


#: Bytes of a cell besides its row key and value, for a column file's memory estimate
#: (a qualifier of a few bytes, the 8-byte timestamp, the type, offsets).
_CELL_OVERHEAD: Final = 24


def _cut_points(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    paths: Sequence[tuple[FamilyRead, str]],
    budget: int,
) -> list[bytes]:
    """Row keys that cut the task's row groups into pieces of at most ``budget`` bytes.

    A piece holds every row group that overlaps it (a row group is read whole), so a cut
    is made only where it leaves some row group behind: at the first row of a group that
    starts after another group of the piece ended. Files that overlap (a later load's
    rows between an earlier one's) are then cut where their groups end, not one row after
    a group's first row (which made a piece of one row and left the rest whole); the
    groups still open at a cut count toward the next piece too.
    """
    groups: list[tuple[bytes, bytes | None, int]] = []  # (first row, last row, bytes)
    for fam, path in paths:
        with task.open_file(fs, fam, path) as reader:
            meta = reader.parquet.metadata
            for rg in reader.row_groups():
                if not rg.may_overlap(task.start, task.stop):
                    continue
                group = meta.row_group(rg.index)
                size = group.total_byte_size
                if reader.info.columns and group.num_rows:
                    # a column file's records expand to cells that each repeat the row
                    # key (plus qualifier, timestamp and type): count what a read holds
                    row_bytes = group.column(0).total_uncompressed_size / group.num_rows
                    size += int(rg.num_cells * (row_bytes + _CELL_OVERHEAD))
                groups.append((rg.min_row or task.start, rg.max_row, size))
    groups.sort(key=lambda g: g[0])
    cuts: list[bytes] = []
    held: list[tuple[bytes | None, int]] = []  # the current piece's groups: (last row, bytes)
    for first_row, last_row, size in groups:
        acc = sum(b for _, b in held)
        after_last_cut = first_row > (cuts[-1] if cuts else task.start)
        before_stop = not task.stop or first_row < task.stop
        if acc and acc + size > budget and after_last_cut and before_stop:
            # a group whose last row is unknown is taken to end where the next one starts
            ended = [g for g in held if g[0] is None or g[0] < first_row]
            if ended:
                cuts.append(first_row)
                held = [g for g in held if not (g[0] is None or g[0] < first_row)]
        held.append((last_row, size))
    return cuts


def row_range(
    *,
    start_row: bytes | str | None,
    stop_row: bytes | str | None,
    row_prefix: bytes | str | None,
    reversed: bool = False,
) -> RowRange | None:
    """The scan's rows as ``[lo, hi)`` in key order, or None when empty (R12.1, R12.4).

    For a reversed scan (R12.5) ``start_row`` is the HIGHER bound (inclusive) and
    ``stop_row`` the lower bound (exclusive), as in HBase; a prefix selects the same rows
    either way.

    Raises:
        InvalidRowRangeError: a prefix combined with start/stop rows, or a key over
            ``MAX_ROW_LENGTH`` bytes.
    """
    if row_prefix is not None:
        if start_row is not None or stop_row is not None:
            raise InvalidRowRangeError("row_prefix cannot be combined with start_row/stop_row")
        return RowRange.of_prefix(as_bytes(row_prefix, "row_prefix"))
    start = as_bytes(start_row, "start_row") if start_row is not None else b""
    stop = as_bytes(stop_row, "stop_row") if stop_row is not None else b""
    for key, what in ((start, "start_row"), (stop, "stop_row")):
        if len(key) > MAX_ROW_LENGTH:
            raise InvalidRowRangeError(f"{what} is longer than {MAX_ROW_LENGTH} bytes (R16.1)")
    if reversed:
        # Rows r with stop < r <= start, i.e. [stop + 0x00, start + 0x00).
        lo = stop + b"\x00" if stop else b""
        hi = start + b"\x00" if start else b""
        start, stop = lo, hi
    found = RowRange(start, stop)
    return None if found.is_empty else found  # start >= stop yields nothing (R12.1)

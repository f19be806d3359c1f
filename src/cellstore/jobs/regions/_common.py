"""Reports and helpers shared by region split and merge (public through ``jobs.regions``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from cellstore.core.cells import MAX_ROW_LENGTH
from cellstore.core.keys import as_bytes, to_string_binary
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.regions import Region, region_id, region_of
from cellstore.core.results import JsonForm, Total
from cellstore.errors import InvalidArgumentError, InvalidRowRangeError
from cellstore.handle import TableHandle

#: Store files a split rewrites concurrently (pyarrow releases the GIL).
DEFAULT_MAX_WORKERS: Final = 4


# ------------------------------------------------------------------------------- reports
@dataclass(frozen=True)
class RegionSplit(JsonForm):
    """One region's split.

    Attributes:
        parent: Id of the region that was split.
        start: Its first row (inclusive; ``b""`` = the first row of the table).
        end: Its end row (exclusive; ``b""`` = after the last row).
        keys: The split keys, in order.
        children: Ids of the child regions, in key order (one more than ``keys``).
        files_reassigned: Files moved to a child without rewriting.
        files_cut: Files that spanned a split key and were rewritten.
        files_written: Files the cut wrote.
        cells_rewritten: Cells in the files written.
        bytes_written: Bytes of the files written.
    """

    parent: str
    start: bytes
    end: bytes
    keys: tuple[bytes, ...]
    children: tuple[str, ...]
    files_reassigned: int
    files_cut: int
    files_written: int
    cells_rewritten: int
    bytes_written: int


@dataclass(frozen=True)
class SplitReport(JsonForm):
    """What :func:`split` did (or, with ``dry_run``, would do).

    Attributes:
        table: Full table name.
        job_id: Id of this run (prefix of the files it wrote).
        version: Table version the commit created; None when nothing was committed
            (dry run, or every key was already a region boundary).
        splits: The regions split, in key order. With ``dry_run`` the child ids are the
            ones the split would take if nothing else committed first.
        skipped_keys: Requested keys that already are region boundaries (no-op).
        dry_run: Whether this was a dry run.
        seconds: Wall time.
    """

    json_keys = (
        "table job_id version dry_run splits skipped_keys files_reassigned files_cut "
        "bytes_written seconds"
    )

    table: str
    job_id: str
    version: int | None
    splits: tuple[RegionSplit, ...]
    skipped_keys: tuple[bytes, ...]
    dry_run: bool
    seconds: float

    files_reassigned = Total(
        "splits", "files_reassigned", "Files re-assigned without rewriting, over all splits."
    )
    files_cut = Total(
        "splits", "files_cut", "Files rewritten because they spanned a key, over all splits."
    )
    bytes_written = Total("splits", "bytes_written", "Bytes written, over all splits.")


@dataclass(frozen=True)
class RegionMerge(JsonForm):
    """One merge of adjacent regions.

    Attributes:
        merged: Ids of the regions merged, in key order.
        region: Id of the new region.
        start: Its first row (inclusive).
        end: Its end row (exclusive; ``b""`` = after the last row).
        files_reassigned: Files moved to the new region (none is rewritten).
        bytes: Total size of those files.
    """

    merged: tuple[str, ...]
    region: str
    start: bytes
    end: bytes
    files_reassigned: int
    bytes: int


@dataclass(frozen=True)
class MergeReport(JsonForm):
    """What :func:`merge` or :func:`merge_small` did (or would do).

    Attributes:
        table: Full table name.
        job_id: Id of this run.
        version: Table version the commit created; None when nothing was committed
            (dry run, or no regions to merge).
        merges: The merges, in key order. With ``dry_run`` the new ids are the ones the
            merge would take if nothing else committed first.
        dry_run: Whether this was a dry run.
        seconds: Wall time.
    """

    json_keys = "table job_id version dry_run merges seconds"

    table: str
    job_id: str
    version: int | None
    merges: tuple[RegionMerge, ...]
    dry_run: bool
    seconds: float


# ------------------------------------------------------------------------------- helpers
def region_sizes(metadata: TableMetadata) -> dict[str, int]:
    """Bytes of live store files per region id (every region, 0 for an empty one)."""
    sizes = {r.id: 0 for r in metadata.regions}
    for f in metadata.files:
        if f.region in sizes:
            sizes[f.region] += f.size
    return sizes


def _latest(table: TableHandle, what: str) -> TableMetadata:
    if table.pinned:
        raise InvalidArgumentError(
            f"table {table.name} was opened at version {table.version}; cannot {what} it"
        )
    return table.refresh().metadata


def _region(meta: TableMetadata, rid: str) -> Region:
    try:
        return meta.region(rid)
    except KeyError:
        known = ", ".join(r.id for r in meta.regions)
        raise InvalidArgumentError(
            f"table {meta.name}: no region {rid!r} (regions: {known})"
        ) from None


def _bounds(region: Region) -> str:
    """A region's key range in HBase's printable form: ``['a', 'm')``."""
    return f"['{to_string_binary(region.start)}', '{to_string_binary(region.end)}')"


def _child_index(keys: Sequence[bytes], row: bytes) -> int:
    """Which child (0-based) of a region split at sorted ``keys`` holds ``row``."""
    return region_of(keys, row)


def _children(parent: Region, keys: Sequence[bytes], first_id: int) -> tuple[Region, ...]:
    bounds = [parent.start, *keys, parent.end]
    return tuple(
        Region(region_id(first_id + i), bounds[i], bounds[i + 1]) for i in range(len(keys) + 1)
    )


def _split_keys(at: bytes | str | Iterable[bytes | str]) -> list[bytes]:
    values = [at] if isinstance(at, bytes | bytearray | str) else list(at)
    keys = set()
    for i, v in enumerate(values):
        key = as_bytes(v, f"split key #{i}")
        if not key:
            raise InvalidRowRangeError(f"split key #{i} is empty (no region can start there)")
        if len(key) > MAX_ROW_LENGTH:
            raise InvalidRowRangeError(f"split key #{i} is longer than {MAX_ROW_LENGTH} bytes")
        keys.add(key)
    if not keys:
        raise InvalidArgumentError("no split key given")
    return sorted(keys)


def _overlapping(entries: Sequence[FileEntry]) -> bool:
    """Whether any two of ``entries`` share a row range (so they may hold equal keys)."""
    ordered = sorted(entries, key=lambda e: e.first_row)
    last = ordered[0].last_row
    for e in ordered[1:]:
        if e.first_row <= last:
            return True
        last = max(last, e.last_row)
    return False


# ---------------------------------------------------------------------------- split point

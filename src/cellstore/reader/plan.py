"""Scan planning: a scan's options become frozen, picklable tasks over regions.

Planning is a deterministic function of the table metadata and the scan arguments: no I/O,
no directory listing. Each :class:`ScanTask` names one region's row range, the store files
of every requested family that can hold matching cells, and the read semantics to apply.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cellstore.core.family import Family
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.semantics import ReadSpec
from cellstore.errors import InvalidArgumentError, InvalidRowRangeError

__all__ = [
    "FamilyRead",
    "ScanTask",
    "parse_columns",
    "plan_tasks",
    "prefix_stop_row",
    "row_range",
]


@dataclass(frozen=True)
class FamilyRead:
    """One family's part of a task: its settings, its files and the read semantics.

    Attributes:
        family: The family's settings.
        files: ``(path relative to the table, sequence number)`` of each file, oldest first.
        spec: The semantics to apply (versions, time range, raw, columns, now).
    """

    family: Family
    files: tuple[tuple[str, int], ...]
    spec: ReadSpec


@dataclass(frozen=True)
class ScanTask:
    """One unit of scan work: a row range inside one region. Frozen and picklable.

    Attributes:
        table_path: The table directory on the filesystem.
        region: Region id.
        start: First row (inclusive); empty = region start.
        stop: Row after the last (exclusive); empty = unbounded.
        families: What to read for each requested family, in family order.
    """

    table_path: str
    region: str
    start: bytes
    stop: bytes
    families: tuple[FamilyRead, ...]


def prefix_stop_row(prefix: bytes) -> bytes:
    """The exclusive stop row of a prefix scan (R12.4).

    Trailing 0xFF bytes are dropped and the last remaining byte incremented; ``b""`` (no
    stop) when the prefix is all 0xFF.
    """
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return b""
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


def _as_bytes(value: bytes | str, what: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise InvalidArgumentError(f"{what} must be bytes or str, not {value!r}")


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
        raw = _as_bytes(col, "a column")
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


def plan_tasks(
    metadata: TableMetadata,
    *,
    table_path: str,
    ranges: Sequence[tuple[bytes, bytes]],
    wanted: dict[str, frozenset[bytes] | None],
    spec: ReadSpec,
) -> list[ScanTask]:
    """One task per (row range x region) overlap, in key order of ``ranges``.

    Files whose row span misses the task's range are left out, and so are files all of
    whose cells are older than the time range (they can neither be returned nor mask
    anything returned, R3.5, R7.3).
    """
    tasks: list[ScanTask] = []
    lo_ts = spec.time_range[0] if spec.time_range is not None else 0
    for start, stop in ranges:
        for region in metadata.regions:
            if not region.overlaps(start, stop):
                continue
            t_start = max(start, region.start)
            clip = region.end and (not stop or stop > region.end)
            t_stop = region.end if clip else stop
            reads = []
            for fname, quals in wanted.items():
                files = tuple(
                    (f.path, f.seq)
                    for f in metadata.files_of(region.id, fname)
                    if _overlaps(f, t_start, t_stop) and f.max_ts >= lo_ts
                )
                fam_spec = dataclasses.replace(spec, qualifiers=quals)
                reads.append(FamilyRead(metadata.family(fname), files, fam_spec))
            if any(r.files for r in reads):
                tasks.append(ScanTask(table_path, region.id, t_start, t_stop, tuple(reads)))
    return tasks


def row_range(
    *,
    start_row: bytes | str | None,
    stop_row: bytes | str | None,
    row_prefix: bytes | str | None,
    reversed: bool = False,
) -> tuple[bytes, bytes] | None:
    """The scan's rows as ``[lo, hi)`` in key order, or None when empty (R12.1, R12.4).

    For a reversed scan (R12.5) ``start_row`` is the HIGHER bound (inclusive) and
    ``stop_row`` the lower bound (exclusive), as in HBase; a prefix selects the same rows
    either way.

    Raises:
        InvalidRowRangeError: a prefix combined with start/stop rows, or a key over 32767 bytes.
    """
    if row_prefix is not None:
        if start_row is not None or stop_row is not None:
            raise InvalidRowRangeError("row_prefix cannot be combined with start_row/stop_row")
        prefix = _as_bytes(row_prefix, "row_prefix")
        return prefix, prefix_stop_row(prefix)
    start = _as_bytes(start_row, "start_row") if start_row is not None else b""
    stop = _as_bytes(stop_row, "stop_row") if stop_row is not None else b""
    for key, what in ((start, "start_row"), (stop, "stop_row")):
        if len(key) > 32767:
            raise InvalidRowRangeError(f"{what} is longer than 32767 bytes (R16.1)")
    if reversed:
        # Rows r with stop < r <= start, i.e. [stop + 0x00, start + 0x00).
        lo = stop + b"\x00" if stop else b""
        hi = start + b"\x00" if start else b""
        start, stop = lo, hi
    if stop and start >= stop:
        return None  # start == stop (or after it) yields nothing (R12.1)
    return start, stop


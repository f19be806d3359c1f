"""Measure a table for its report: plan one task per region, run each with bounded memory.

:func:`plan_report` turns a table version into frozen, picklable :class:`RegionTask`
objects (the region's key range and, per store file, the row groups to read);
:func:`run_region_task` reads one region's cells (columns ``row``, ``qualifier``, ``ts``,
``type``; never values; row keys and qualifiers dictionary-encoded) and counts them with
numpy over the dictionary codes: store files are sorted (R2.1), so distinct rows and
``(row, qualifier)`` pairs are runs of equal codes, and no cell is hashed. The partial
counts of the regions add up exactly, as regions hold disjoint rows. :func:`build_report` ties
it together with the manifest's totals, the key-design advice of
:func:`cellstore.loader.advise.advise_table` and the table's commit history.

Memory: one region's scanned cells at a time. A table with more than ``sample_rows``
cells is sampled: from every store file, whole row groups spread evenly over the file,
about ``sample_rows`` cells in all; the report says so (``sampled``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import now_ms as clock_ms
from cellstore.core.cells import CellType
from cellstore.core.keycheck import KeyAdvice
from cellstore.errors import InvalidArgumentError
from cellstore.manifest import entry_key
from cellstore.report.model import (
    MARKER_KINDS,
    ColumnVersions,
    CommitRecord,
    FamilyExpiry,
    RegionStats,
    TableReport,
)
from cellstore.storefiles import StoreFileReader
from cellstore.storefiles.layout import entry_path

if TYPE_CHECKING:
    import fsspec

    from cellstore.core.metadata import FileEntry, TableMetadata
    from cellstore.manifest import TableLog

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_SAMPLE_ROWS",
    "HOTSPOT_FACTOR",
    "FileSlice",
    "RegionCounts",
    "RegionTask",
    "build_report",
    "plan_report",
    "run_region_task",
]

#: Cells a report reads at most before it samples (about; whole row groups are read).
DEFAULT_SAMPLE_ROWS: Final = 2_000_000
#: The region with the most cells is the hotspot when it holds more than this many times
#: the even share (the mean cells per region): an even split never has one.
HOTSPOT_FACTOR: Final = 1.5
#: Commits a report lists by default (newest first).
DEFAULT_HISTORY: Final = 50

_COLUMNS: Final = ["row", "qualifier", "ts", "type"]
_PAIR_SCHEMA: Final = pa.schema(
    [("qualifier", pa.binary()), ("row", pa.binary()), ("n", pa.int64())]
)
_COLUMN_SCHEMA: Final = pa.schema(
    [
        ("family", pa.string()),
        ("qualifier", pa.binary()),
        ("puts", pa.int64()),
        ("cells", pa.int64()),
        ("max_versions", pa.int64()),
        ("over_limit", pa.int64()),
    ]
)


@dataclass(frozen=True)
class FileSlice:
    """One store file of a region and the row groups of it to read.

    Attributes:
        entry: The file's manifest entry.
        groups: Row-group numbers to read; None = the whole file.
    """

    entry: FileEntry
    groups: tuple[int, ...] | None = None


@dataclass(frozen=True)
class RegionTask:
    """Everything needed to count one region's cells (picklable, no open handles).

    Attributes:
        table_path: The table directory.
        region: Region id.
        start: First row (inclusive).
        end: Row after the last (exclusive); empty = to the end.
        files: The region's store files, in family order.
        families: ``(name, ttl_ms or None, max_versions)`` of every family.
        now_ms: "Now" for TTL expiry.
        fraction: Share of the region's cells to read (1.0 = all).
    """

    table_path: str
    region: str
    start: bytes
    end: bytes
    files: tuple[FileSlice, ...]
    families: tuple[tuple[str, int | None, int], ...]
    now_ms: int
    fraction: float = 1.0


@dataclass(frozen=True)
class RegionCounts:
    """What :func:`run_region_task` counted in one region.

    Attributes:
        region: Region id.
        scanned_cells: Cells read (inside the region's key range).
        rows: Distinct row keys read.
        key_lengths: ``np.bincount`` of the distinct keys' lengths.
        first_bytes: 256 counts of the distinct keys' first bytes.
        family_cells: Cells read per family.
        family_expired: TTL-expired cells per family (R8.1, R8.2).
        markers: Delete markers per family, by type code.
        columns: Per ``(family, qualifier)``: puts, cells, max versions, over the limit.
    """

    region: str
    scanned_cells: int
    rows: int
    key_lengths: np.ndarray
    first_bytes: np.ndarray
    family_cells: Mapping[str, int] = field(default_factory=dict)
    family_expired: Mapping[str, int] = field(default_factory=dict)
    markers: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    columns: pa.Table = field(default_factory=_COLUMN_SCHEMA.empty_table)


def plan_report(
    table_path: str,
    metadata: TableMetadata,
    *,
    sample_rows: int | None = DEFAULT_SAMPLE_ROWS,
    now_ms: int,
    row_groups: Mapping[str, int] | None = None,
) -> list[RegionTask]:
    """One task per region, in key order.

    Args:
        table_path: The table directory.
        metadata: The table version.
        sample_rows: Read about this many cells at most; None = every cell.
        now_ms: "Now" for TTL expiry.
        row_groups: Row groups per store-file path (needed only when sampling).

    Returns:
        The tasks; with sampling, each file slice names the row groups to read.
    """
    total = metadata.file_totals().cells
    fraction = 1.0
    if sample_rows is not None and total > sample_rows:
        fraction = sample_rows / total
    fams = tuple((f.name, f.ttl_ms, f.max_versions) for f in metadata.families)
    tasks = []
    for region in metadata.regions:
        slices = []
        for fam in metadata.family_names:
            for entry in metadata.files_of(region.id, fam):
                groups: tuple[int, ...] | None = None
                n = (row_groups or {}).get(entry.path)
                if fraction < 1.0 and n:
                    k = max(1, math.ceil(n * fraction))
                    groups = tuple(int(i) for i in np.unique(np.linspace(0, n - 1, k).round()))
                slices.append(FileSlice(entry, groups))
        tasks.append(
            RegionTask(
                table_path=table_path,
                region=region.id,
                start=region.start,
                end=region.end,
                files=tuple(slices),
                families=fams,
                now_ms=now_ms,
                fraction=fraction,
            )
        )
    return tasks


def _in_range(rows: pa.ChunkedArray, start: bytes, end: bytes) -> pa.ChunkedArray:
    mask = pc.greater_equal(rows, pa.scalar(start, pa.binary()))
    if end:
        mask = pc.and_(mask, pc.less(rows, pa.scalar(end, pa.binary())))
    return mask


def _first_bytes(keys: pa.Array) -> np.ndarray:
    """256 counts of the first byte of non-empty binary keys (vectorized over buffers)."""
    keys = keys.cast(pa.binary())
    lengths = pc.binary_length(keys).to_numpy(zero_copy_only=False)
    if len(keys) == 0:
        return np.zeros(256, dtype=np.int64)
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[
        keys.offset : keys.offset + len(keys)
    ]
    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8)
    first = data[offsets[lengths > 0]]
    return np.bincount(first, minlength=256).astype(np.int64)


def _starts(change: pa.Array) -> np.ndarray:
    """Start offsets of the runs, given ``change[i]``: element ``i + 1`` differs from ``i``."""
    flags = change.to_numpy(zero_copy_only=False)
    return np.concatenate([[0], np.flatnonzero(flags) + 1]).astype(np.int64)


def _run_values(values: pa.Array) -> pa.Array:
    """The distinct values of a sorted binary array (the first of each run)."""
    values = values.cast(pa.binary())
    n = len(values)
    if n < 2:
        return values
    starts = _starts(pc.not_equal(values.slice(1), values.slice(0, n - 1)))
    return values.take(pa.array(starts))


@dataclass(frozen=True)
class _FileCounts:
    """One store file's cells of a region, reduced: what :func:`run_region_task` adds up."""

    cells: int
    expired: int
    types: np.ndarray  # bincount of the type codes
    rows: pa.Array  # distinct row keys, sorted
    pairs: pa.Table  # (qualifier, row, n): puts per (row, qualifier), in file order


def _runs(*codes: np.ndarray) -> np.ndarray:
    """Start offsets of the runs of equal tuples in parallel arrays (non-empty)."""
    change = np.zeros(len(codes[0]) - 1, dtype=bool)
    for c in codes:
        change |= c[1:] != c[:-1]
    return np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)


def _merge_pairs(pairs: pa.Table) -> pa.Table:
    """Sum ``n`` over neighbouring equal ``(row, qualifier)`` (a pair cut by a row group)."""
    if pairs.num_rows < 2:
        return pairs
    row = pairs["row"].combine_chunks()
    qual = pairs["qualifier"].combine_chunks()
    k = len(row)
    change = pc.or_(
        pc.not_equal(row.slice(1), row.slice(0, k - 1)),
        pc.not_equal(qual.slice(1), qual.slice(0, k - 1)),
    )
    starts = _starts(change)
    if len(starts) == k:
        return pairs
    n = pairs["n"].to_numpy()
    idx = pa.array(starts)
    return pa.table(
        {"qualifier": qual.take(idx), "row": row.take(idx), "n": np.add.reduceat(n, starts)}
    )


def _count_file(cells: pa.Table, *, expired_before: int | None) -> _FileCounts:
    """Reduce one file's cells, read with ``row``/``qualifier`` dictionary-encoded.

    Each chunk (a row group) has its own dictionaries, holding values in first-appearance
    order, so equal values have equal codes and the file order (R2.1: row asc,
    qualifier asc) makes rows and ``(row, qualifier)`` pairs runs of codes. Runs cut
    by a row-group boundary are merged on the values afterwards.
    """
    types = np.zeros(16, dtype=np.int64)
    expired = 0
    rows: list[pa.Array] = []
    pairs: list[pa.Table] = []
    row_col, qual_col = cells["row"], cells["qualifier"]
    type_col, ts_col = cells["type"], cells["ts"]
    offset = 0
    for rc, qc in zip(row_col.chunks, qual_col.chunks, strict=True):
        k = len(rc)
        if not k:
            continue
        t = type_col.slice(offset, k).to_numpy().astype(np.int64)
        ts = ts_col.slice(offset, k).to_numpy()
        offset += k
        types += np.bincount(t, minlength=16)[:16]
        if expired_before is not None:
            expired += int(np.count_nonzero(ts < expired_before))
        r = rc.indices.to_numpy(zero_copy_only=False)
        rd = rc.dictionary.cast(pa.binary())
        rows.append(rd.take(pa.array(r[_runs(r)])))
        put = t == int(CellType.PUT)
        if put.any():
            rp = r[put]
            qp = qc.indices.to_numpy(zero_copy_only=False)[put]
            starts = _runs(rp, qp)
            pairs.append(
                pa.table(
                    {
                        "qualifier": qc.dictionary.cast(pa.binary()).take(pa.array(qp[starts])),
                        "row": rd.take(pa.array(rp[starts])),
                        "n": np.diff(np.append(starts, len(rp))),
                    }
                )
            )
    distinct = _run_values(pa.concat_arrays(rows)) if rows else pa.array([], pa.binary())
    merged = _merge_pairs(pa.concat_tables(pairs)) if pairs else _PAIR_SCHEMA.empty_table()
    return _FileCounts(cells.num_rows, expired, types, distinct, merged)


def _column_versions(family: str, pairs: list[pa.Table], max_versions: int) -> pa.Table:
    """Per qualifier of one family: puts, cells, most versions, puts over ``max_versions``.

    ``pairs`` are per-file ``(qualifier, row, n)`` runs; a pair found in several files
    (versions loaded at different times) is summed first.
    """
    table = pa.concat_tables(pairs)
    if len(pairs) > 1:
        table = table.group_by(["qualifier", "row"], use_threads=False).aggregate([("n", "sum")])
        table = table.rename_columns(["qualifier", "row", "n"])
    n = table["n"].to_numpy()
    encoded = pc.dictionary_encode(table["qualifier"].combine_chunks())
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    width = len(encoded.dictionary)
    most = np.zeros(width, dtype=np.int64)
    np.maximum.at(most, codes, n)
    return pa.table(
        {
            "family": pa.array([family] * width, pa.string()),
            "qualifier": encoded.dictionary.cast(pa.binary()),
            "puts": pa.array(np.bincount(codes, weights=n, minlength=width).astype(np.int64)),
            "cells": pa.array(np.bincount(codes, minlength=width).astype(np.int64)),
            "max_versions": pa.array(most),
            "over_limit": pa.array(
                np.bincount(codes, weights=np.maximum(n - max_versions, 0), minlength=width).astype(
                    np.int64
                )
            ),
        },
        schema=_COLUMN_SCHEMA,
    )


def run_region_task(fs: fsspec.AbstractFileSystem, task: RegionTask) -> RegionCounts:
    """Read one region's cells (as planned) and count them.

    Cells of a shared file outside the region's key range are left out. Versions are
    counted per ``(row, family, qualifier)`` over the region's files together.

    Raises:
        CorruptFileError: a store file cannot be read or does not match its entry.
    """
    cutoff = {name: None if ttl is None else task.now_ms - ttl for name, ttl, _ in task.families}
    per_family: dict[str, list[_FileCounts]] = {}
    for sl in task.files:
        path = entry_path(task.table_path, sl.entry.path)
        with StoreFileReader(fs, path, entry=sl.entry) as reader:
            if sl.groups is None:
                cells = reader.read(start=task.start, stop=task.end, columns=_COLUMNS, encoded=True)
            else:
                cells = reader.read_row_groups(list(sl.groups), columns=_COLUMNS, encoded=True)
                cells = cells.filter(_in_range(cells["row"], task.start, task.end))
        if task.fraction < 1.0:  # whole row groups may exceed the file's share
            quota = max(1, math.ceil(sl.entry.cells * task.fraction))
            if cells.num_rows > quota:
                cells = cells.slice((cells.num_rows - quota) // 2, quota)
        family = sl.entry.family
        counts = _count_file(cells, expired_before=cutoff.get(family))
        per_family.setdefault(family, []).append(counts)
    fam_cells: dict[str, int] = {}
    fam_expired: dict[str, int] = {}
    markers: dict[str, dict[int, int]] = {}
    columns: list[pa.Table] = []
    row_keys: list[pa.Array] = []
    for name, _, max_versions in task.families:
        files = per_family.get(name)
        if not files:
            continue
        # R8.1: expired iff ts < now - ttl (strict, cell timestamp); R8.2: markers too
        fam_cells[name] = sum(f.cells for f in files)
        fam_expired[name] = sum(f.expired for f in files)
        types = np.sum([f.types for f in files], axis=0)
        markers[name] = {t: int(types[t]) for t in MARKER_KINDS if types[t]}
        row_keys += [f.rows for f in files if len(f.rows)]
        pairs = [f.pairs for f in files if f.pairs.num_rows]
        if pairs:
            columns.append(_column_versions(name, pairs, max_versions))
    if row_keys:
        keys = row_keys[0] if len(row_keys) == 1 else pc.unique(pa.concat_arrays(row_keys))
        lengths = np.bincount(pc.binary_length(keys).to_numpy(zero_copy_only=False))
        first = _first_bytes(keys)
    else:
        keys = pa.array([], pa.binary())
        lengths = np.zeros(0, dtype=np.int64)
        first = np.zeros(256, dtype=np.int64)
    return RegionCounts(
        region=task.region,
        scanned_cells=sum(fam_cells.values()),
        rows=len(keys),
        key_lengths=lengths.astype(np.int64),
        first_bytes=first,
        family_cells=fam_cells,
        family_expired=fam_expired,
        markers=markers,
        columns=pa.concat_tables(columns) if columns else _COLUMN_SCHEMA.empty_table(),
    )


def _row_groups(
    fs: fsspec.AbstractFileSystem, table_path: str, files: Sequence[FileEntry]
) -> dict[str, int]:
    out: dict[str, int] = {}
    for entry in files:
        if entry.path not in out:
            with StoreFileReader(fs, entry_path(table_path, entry.path), entry=entry) as r:
                out[entry.path] = len(r.row_groups())
    return out


def _history(log: TableLog, version: int, limit: int) -> tuple[CommitRecord, ...]:
    """Commits ``version, version-1, ...`` (at most ``limit``), each diffed with its parent."""
    out: list[CommitRecord] = []
    if limit <= 0:
        return ()
    try:
        meta = log.read(version)
    except FileNotFoundError:
        return ()
    v = version
    while v >= 1 and len(out) < limit:
        keys = {entry_key(e) for e in meta.files}
        prev: TableMetadata | None = None
        added: int | None
        removed: int | None
        if v > 1:
            try:
                prev = log.read(v - 1)
            except FileNotFoundError:  # expired (jobs.expire): older history is gone
                prev = None
        if prev is not None:
            before = {entry_key(e) for e in prev.files}
            added, removed = len(keys - before), len(before - keys)
        elif v == 1:
            added, removed = len(keys), 0
        else:
            added = removed = None
        h = meta.last_history
        out.append(
            CommitRecord(
                version=h.version,
                operation=h.operation,
                timestamp_ms=h.timestamp_ms,
                files_added=added,
                files_removed=removed,
                cells=meta.file_totals().cells,
                summary=dict(h.summary),
            )
        )
        if prev is None:
            break
        meta, v = prev, v - 1
    return tuple(out)


def _region_stats(
    metadata: TableMetadata, counts: Sequence[RegionCounts]
) -> tuple[RegionStats, ...]:
    """Per region: cells, bytes and files from the metadata, rows from ``counts``.

    The hotspot (over :data:`HOTSPOT_FACTOR` times the mean cells) is marked.
    """
    by_region: dict[str, list[FileEntry]] = {}
    for f in metadata.files:
        by_region.setdefault(f.region, []).append(f)
    region_cells = [sum(f.cells for f in by_region.get(r.id, [])) for r in metadata.regions]
    hot = -1
    if len(region_cells) > 1 and max(region_cells) > HOTSPOT_FACTOR * np.mean(region_cells):
        hot = int(np.argmax(region_cells))
    return tuple(
        RegionStats(
            region=r.id,
            start=r.start,
            end=r.end,
            cells=region_cells[i],
            bytes=sum(f.size for f in by_region.get(r.id, [])),
            files=len(by_region.get(r.id, [])),
            scanned_cells=c.scanned_cells,
            rows=c.rows,
            hotspot=i == hot,
        )
        for i, (r, c) in enumerate(zip(metadata.regions, counts, strict=True))
    )


def _key_shape(counts: Sequence[RegionCounts]) -> tuple[dict[int, int], tuple[int, ...]]:
    """Row keys per key length (lengths with none left out) and per first byte."""
    width = max((len(c.key_lengths) for c in counts), default=0)
    lengths = np.zeros(width, dtype=np.int64)
    first = np.zeros(256, dtype=np.int64)
    for c in counts:
        lengths[: len(c.key_lengths)] += c.key_lengths
        first += c.first_bytes
    key_lengths = {int(i): int(lengths[i]) for i in np.flatnonzero(lengths)}
    return key_lengths, tuple(int(x) for x in first)


def _family_stats(
    metadata: TableMetadata, counts: Sequence[RegionCounts]
) -> tuple[FamilyExpiry, ...]:
    """Per family: cells, TTL-expired cells and delete markers by kind."""
    families = []
    for fam in metadata.families:
        kinds: dict[int, int] = {}
        for c in counts:
            for t, n in c.markers.get(fam.name, {}).items():
                kinds[t] = kinds.get(t, 0) + n
        families.append(
            FamilyExpiry(
                family=fam.name,
                ttl_seconds=fam.ttl,
                cells=sum(c.family_cells.get(fam.name, 0) for c in counts),
                expired=sum(c.family_expired.get(fam.name, 0) for c in counts),
                delete_markers={MARKER_KINDS[t]: kinds[t] for t in MARKER_KINDS if kinds.get(t)},
            )
        )
    return tuple(families)


def _column_stats(counts: Sequence[RegionCounts]) -> tuple[ColumnVersions, ...]:
    """Put versions per column over all regions, most puts first."""
    cols = pa.concat_tables([c.columns for c in counts])
    if not cols.num_rows:
        return ()
    agg = cols.group_by(["family", "qualifier"], use_threads=False).aggregate(
        [("puts", "sum"), ("cells", "sum"), ("max_versions", "max"), ("over_limit", "sum")]
    )
    order = pc.sort_indices(
        agg,
        sort_keys=[
            ("puts_sum", "descending"),
            ("family", "ascending"),
            ("qualifier", "ascending"),
        ],
    )
    return tuple(
        ColumnVersions(
            family=d["family"],
            qualifier=d["qualifier"],
            puts=d["puts_sum"],
            cells=d["cells_sum"],
            max_versions=d["max_versions_max"],
            over_limit=d["over_limit_sum"],
        )
        for d in agg.take(order).to_pylist()
    )


def build_report(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    metadata: TableMetadata,
    log: TableLog,
    *,
    advice: KeyAdvice,
    sample_rows: int | None = DEFAULT_SAMPLE_ROWS,
    history: int = DEFAULT_HISTORY,
    now_ms: int | None = None,
) -> TableReport:
    """Measure one table version (reads its store files; writes nothing).

    Args:
        fs: The warehouse filesystem.
        table_path: The table directory.
        metadata: The version to report on.
        log: The table's metadata log (for the history).
        advice: The row-key design advice for the table (``Table.advise``'s, computed by
            the caller: the report does not run the loader's checks itself).
        sample_rows: Cells to read at most before sampling (None = read every cell).
        history: Commits to list, newest first.
        now_ms: "Now" for TTL expiry (default: the clock).

    Returns:
        The :class:`~cellstore.report.model.TableReport`.

    Raises:
        InvalidArgumentError: ``sample_rows`` or ``history`` out of range.
        CorruptFileError: a store file cannot be read or does not match its entry.
    """
    if sample_rows is not None and sample_rows < 1:
        raise InvalidArgumentError(f"sample_rows must be positive or None, got {sample_rows}")
    if history < 0:
        raise InvalidArgumentError(f"history must be >= 0, got {history}")
    now = clock_ms() if now_ms is None else now_ms
    totals = metadata.file_totals()
    sampling = sample_rows is not None and totals.cells > sample_rows
    groups = _row_groups(fs, table_path, metadata.files) if sampling else None
    tasks = plan_report(
        table_path, metadata, sample_rows=sample_rows, now_ms=now, row_groups=groups
    )
    counts = [run_region_task(fs, t) for t in tasks]
    key_lengths, first = _key_shape(counts)
    return TableReport(
        table=metadata.name,
        version=metadata.version,
        now_ms=now,
        total_cells=totals.cells,
        total_bytes=totals.bytes,
        total_files=totals.files,
        scanned_cells=sum(c.scanned_cells for c in counts),
        sampled=sampling,
        regions=_region_stats(metadata, counts),
        rows=sum(c.rows for c in counts),
        key_lengths=key_lengths,
        first_bytes=first,
        columns=_column_stats(counts),
        families=_family_stats(metadata, counts),
        advice=advice,
        history=_history(log, metadata.version, history),
        salt_buckets=metadata.salt_buckets,
    )

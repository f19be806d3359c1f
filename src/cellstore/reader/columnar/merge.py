"""Column-layout families with deltas: a family's runs merged (by row where it can)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import fsspec
import numpy as np
import pyarrow as pa

from cellstore.core.codecs import Codec
from cellstore.core.metadata import FileEntry
from cellstore.core.rowkey import RowKeySpec
from cellstore.reader.columnar.base import (
    _Base,
    _concat_column,
    _held_by_qualifier,
    _read_base,
)
from cellstore.reader.columnar.join import _Part
from cellstore.reader.columnar.types import Column
from cellstore.reader.plan import FamilyRead, ScanTask
from cellstore.reader.rowmerge import BaseColumns, decidable, merge_by_row
from cellstore.storefiles.columns import COLUMN_FILE_SUFFIX


def split_bases(entries: Sequence[FileEntry]) -> tuple[list[FileEntry], list[FileEntry]]:
    """A family's files as the base (column files) and the deltas merged into it.

    The base is the oldest column files (by sequence id) whose row ranges do not
    overlap: one write's rolled files, or a major compaction's. A column file that
    overlaps an older one (a later write under ``layout="columns"``) is a column delta:
    it holds only Puts, the newest of its write per (row, qualifier), and is read as
    those cells beside the cell files, so the rules decide between it and the base
    exactly as between any two files (R3.3: by timestamp, then sequence id).

    Returns:
        The base files and the deltas (every cell file, and the column deltas).
    """
    base: list[FileEntry] = []
    deltas: list[FileEntry] = []
    for e in sorted(entries, key=lambda e: (e.layout != "columns", e.seq, e.first_row)):
        if e.layout == "columns" and all(
            e.last_row < b.first_row or b.last_row < e.first_row for b in base
        ):
            base.append(e)
        else:
            deltas.append(e)
    return base, deltas


def _mergeable(runs: Sequence[pa.Table]) -> bool:
    """Whether delta cells hold only what :func:`merge_by_row` decides.

    Puts, DeleteColumns and DeleteFamilies.
    """
    return all(decidable(r.column("type").to_numpy()) for r in runs)


def _merged_family(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    bases: Sequence[FileEntry],
    wanted: set[Column] | None,
    key: RowKeySpec | None,
    runs: list[pa.Table],
    seqs: list[int],
    *,
    newer: Sequence[FileEntry] = (),
    encoded: dict[tuple[str, int], pa.Array] | None = None,
) -> _Part | None:
    """One family's part with deltas merged into the records by row (module rowmerge).

    ``runs`` are cell deltas; ``newer`` are column deltas, read as typed records.

    ``encoded``: rows already encoded in this task, by (rows digest, count) of a keyed
    file read whole; a family whose base is one such file of the same rows (another
    family of the same write) takes them from there, and adds its own.
    """
    read = [_read_base(fs, task, fam, e, wanted, whole=False, key=key, stamped=True) for e in bases]
    files = sorted((f for f in read if f is not None), key=lambda f: f.first_row)
    name = fam.family.name
    ttl = fam.family.ttl_ms
    rows = _base_rows(files, encoded)
    base = _columns_of(name, files, rows)
    records = []
    for e in newer:
        f = _read_base(fs, task, fam, e, None, whole=False, key=key, stamped=True)
        if f is not None:
            records.append(_columns_of(name, [f], _base_rows([f], encoded)))
    merged = merge_by_row(
        base,
        runs,
        seqs,
        qualifiers=fam.spec.qualifiers,
        oldest=None if ttl is None else fam.spec.now_ms - ttl,
        records=records,
        returned=None if wanted is None else frozenset(q for f, q in wanted if f == name),
        # A whole family read: a row's presence is "any visible cell", which row-wide
        # deletes decide alike in every family, so the families' kept rows mostly agree
        # (joinless, :func:`_join`); a column selection keeps every row, presence apart.
        compact=fam.spec.qualifiers is None,
    )
    if merged is None:
        return None
    out = {(name, q): v for q, v in merged.values.items()}
    keyed = [f for f in files if f.keys is not None]
    kept = merged.kept
    if len(merged.rows if kept is None else kept) == len(rows) and len(keyed) == len(files) > 0:
        # no row added: the key fields read still line up with the rows
        tables = [f.keys for f in keyed if f.keys is not None]
        keys = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        digest = files[0].digest if len(files) == 1 else None
        if kept is not None:
            keys = keys.filter(pa.array(kept))
            if digest is not None:  # the same rows as another family's kept alike
                digest = f"{digest}/{hashlib.blake2b(np.packbits(kept).tobytes()).hexdigest()}"
        present = merged.present if kept is None else None  # compacted: every row kept
        return _Part(merged.rows, out, present, keys=keys, key=files[0].key, digest=digest)
    return _Part(merged.rows, out, merged.present)


def _columns_of(name: str, files: Sequence[_Base], rows: pa.Array) -> BaseColumns:
    """Column files' parts (rows ``rows``, in file order) as the merge takes them."""
    sizes = [len(f.present) for f in files]
    values: dict[bytes, tuple[pa.Array, Codec]] = {}
    stamps: dict[bytes, np.ndarray] = {}
    for q, held in _held_by_qualifier(files).items():
        values[q] = _concat_column(sizes, held, (name, q))
        by_file = {j: f_spec for j, _, f_spec in held}
        stamps[q] = np.concatenate(
            [
                f.stamps[by_file[i]] if i in by_file else np.zeros(n, dtype=np.int64)
                for i, (f, n) in enumerate(zip(files, sizes, strict=True))
            ]
        )
    return BaseColumns(
        rows=rows,
        seq=np.concatenate(
            [np.full(n, f.seq, dtype=np.int64) for f, n in zip(files, sizes, strict=True)]
        )
        if files
        else np.zeros(0, dtype=np.int64),
        values=values,
        stamps=stamps,
        present=np.concatenate([f.present for f in files]) if files else np.zeros(0, dtype=bool),
    )


def _base_rows(files: Sequence[_Base], encoded: dict[tuple[str, int], pa.Array] | None) -> pa.Array:
    """Column files' rows, in order; one keyed file's rows encoded once per task.

    Families of one write (a base, or a column delta) hold the same rows: the second
    family's file of the same rows digest takes the first one's encoded rows.
    """
    if not files:
        return pa.array([], pa.binary())
    if len(files) > 1 or files[0].digest is None or encoded is None:
        arrays = [f.row_keys() for f in files]
        return pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0]
    at = (files[0].digest, len(files[0].present))
    if at not in encoded:
        encoded[at] = files[0].row_keys()
    return encoded[at]


def older_companions(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    bases: Sequence[FileEntry],
    deltas: Sequence[FileEntry],
) -> set[str]:
    """Cell files a wide read may skip: companions holding only older versions.

    A column file whose footer says ``complete`` holds the newest Put of every (row,
    qualifier) of its write; its companion cell file (``<stem>.parquet`` beside
    ``<stem>-c.parquet``, same sequence number) then holds older Puts, and delete markers
    if its entry counts any. Without markers and without a time range (which could hide a
    newest value but not an older one), the newest visible value of every column is the
    column file's (an older version expires before it under TTL), so the companion cannot
    change a wide read. Markers in any other delta of the family (a Delete of the newest
    version, R5.4, or a DeleteFamilyVersion, R5.3, written by another load) could hide the
    column file's value and show an older one: then no companion is skipped.
    """
    if fam.spec.time_range is not None or not deltas:
        return set()
    by_path = {d.path: d for d in deltas}
    out: set[str] = set()
    for base in bases:
        stem = base.path.removesuffix(f"{COLUMN_FILE_SUFFIX}.parquet")
        companion = by_path.get(f"{stem}.parquet")
        if companion is None or companion.delete_markers or companion.seq != base.seq:
            continue
        with task.open_file(fs, fam, base.path) as reader:
            if reader.info.complete:
                out.add(companion.path)
    if any(d.delete_markers for d in deltas if d.path not in out):
        return set()
    return out

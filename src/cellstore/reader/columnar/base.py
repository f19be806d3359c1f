"""Reading a family's column files: the base records, cut to the task's key range."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core import pool
from cellstore.core.codecs import Codec, one_array, valid_mask
from cellstore.core.columnar import (
    ROW_COLUMN,
    TS_COLUMN,
    ColumnSpec,
    key_names,
)
from cellstore.core.metadata import FileEntry
from cellstore.core.regions import bisect_rows
from cellstore.core.rowkey import RowKeySpec
from cellstore.reader.columnar.keycut import narrow
from cellstore.reader.columnar.types import Column, Typed
from cellstore.reader.columnar.union import _bytes_of
from cellstore.reader.plan import FamilyRead, ScanTask
from cellstore.storefiles.decode import as_dense
from cellstore.storefiles.reader import RowGroupStats, slice_rows


@dataclass(frozen=True)
class _Base:
    """One column file's part of a family read.

    Its rows are ``rows``, or (a keyed file of the read's spec, read whole) ``keys``: the
    key fields, encoded to rows only when a join or a merge needs them.
    """

    rows: pa.Array | None  # every record's row in range
    present: np.ndarray  # whether the row has a visible cell the read covers
    values: dict[ColumnSpec, pa.Array]  # wanted columns, hidden values nulled, per row
    records: pa.Table  # every record in range (all columns when deltas need them)
    specs: tuple[ColumnSpec, ...]
    seq: int
    first_row: bytes  # the file's first row (files sort by it)
    keys: pa.Table | None = None  # the key fields (named by field), when rows is None
    key: RowKeySpec | None = None
    digest: str | None = None  # the rows digest of a file read whole (or of a span of it)
    span: tuple[int, int] | None = None  # the file's records read, by position (keyed)
    stamps: dict[ColumnSpec, np.ndarray] = field(default_factory=dict)  # values' timestamps
    aliased: dict[ColumnSpec, str] = field(default_factory=dict)  # wanted, not read: key field

    def row_keys(self) -> pa.Array:
        """The rows (encoded from the key fields when only those were read)."""
        if self.rows is not None:
            return self.rows
        assert self.keys is not None and self.key is not None
        return self.key.encode(self.keys)


def _read_base(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    entry: FileEntry,
    wanted: set[Column] | None,
    *,
    whole: bool,
    key: RowKeySpec | None = None,
    stamped: bool = False,
    live: bool = False,
    rowless: bool = False,
    aliases_apart: bool = False,
    span: tuple[int, int] | Future[tuple[int, int] | None] | None = None,
    threads: bool = True,
) -> _Base | None:
    """A column file's visible wanted values in the task's range.

    ``whole``: read every column, so rows touched by deltas can be expanded to cells.
    ``stamped``: read the values of every column the read covers with their timestamps
    (``stamps``), for :func:`~cellstore.reader.rowmerge.merge_by_row`. ``live``: every
    value of the file is visible (no TTL or time range hides its one timestamp): no
    timestamp is read. ``rowless``: read neither rows nor key fields (another family's
    file holds the same rows).
    ``key``: the table's row-key spec; a keyed file of that spec read whole (the task's
    range holds all its rows) gives its key fields, not rows. ``aliases_apart`` (with
    ``rowless``): a wanted column that is an alias of a key field (docs/format.md 14.2) is
    not read when no timestamp decides its visibility; ``aliased`` names its field, and
    the caller takes its values from the rows' key fields. ``threads``: decode the
    columns on pyarrow's threads (False when other files are read at once: one thread
    per file costs less).
    """
    name = fam.family.name
    spec = fam.spec
    ttl = fam.family.ttl_ms
    oldest = None if ttl is None else spec.now_ms - ttl
    window = spec.time_range
    if (task.stop and entry.first_row >= task.stop) or entry.last_row < task.start:
        return None
    with task.open_file(fs, fam, entry.path) as reader:
        every = reader.info.columns
        read_specs = [s for s in every if spec.qualifiers is None or s.qualifier in spec.qualifiers]
        out_specs = [s for s in read_specs if wanted is None or (name, s.qualifier) in wanted]
        stats = [g for g in reader.row_groups() if g.may_overlap(task.start, task.stop)]
        if not stats:
            return None
        timed = stamped or (not live and (oldest is not None or window is not None))
        file_key = reader.info.row_key
        inside = entry.first_row >= task.start and (not task.stop or entry.last_row < task.stop)
        # the file's fields are the read's when the specs differ at most in the salt
        # (the read decodes rows without it; the key columns never hold it)
        by_keys = (
            not whole and file_key is not None and key is not None and _same_fields(file_key, key)
        )
        head = key_names(file_key) if by_keys and file_key is not None else [ROW_COLUMN]
        if rowless and by_keys:
            head = []
        digest = reader.info.rows_digest
        fields = dict(reader.info.aliases)
        apart: dict[ColumnSpec, str] = {}
        if aliases_apart and rowless and by_keys and not timed and not whole:
            apart = {s: fields[s.qualifier] for s in read_specs if s.qualifier in fields}
        # A row is in the result when one of its cells the read covers is visible: with
        # the whole family read and no time range, every record is (it holds a value)
        # unless TTL expired its newest cell (__ts); otherwise decide per cell.
        per_cell = spec.qualifiers is not None or window is not None
        seen = read_specs if per_cell or stamped else out_specs
        aliased_seen = [s for s in seen if s in apart]
        seen = [s for s in seen if s not in apart]
        if whole:  # the read's columns, with timestamps: touched rows expand to cells
            cols = [
                *head,
                TS_COLUMN,
                *(s.value_name for s in read_specs),
                *(s.ts_name for s in read_specs),
            ]
        else:
            cols = [*head, *(s.value_name for s in seen)]
            if timed:
                cols += [TS_COLUMN, *(s.ts_name for s in seen)]
            # (no column: __ts, the smallest, says how many records there are)
            cols = cols or [TS_COLUMN]
        # a read cut to the task's range decodes text columns after the cut (less to decode)
        records = reader.read_records(
            [g.index for g in stats], columns=cols, use_threads=threads, dense=inside
        )
        if not inside:
            records = as_dense(records, head)  # the cut looks at the rows or key fields
        whole_file = inside and len(stats) == reader.info.row_groups
        meta = reader.metadata
        first = sum(meta.row_group(i).num_rows for i in range(stats[0].index))
        counts = [meta.row_group(g.index).num_rows for g in stats]
    cut = None
    if not by_keys:
        records = slice_rows(records, stats, task.start, task.stop, row=ROW_COLUMN)
    elif rowless and not inside:
        # the rows are another family's: its cut, or none (it read no records)
        if isinstance(span, Future):  # (the first family's, read meanwhile: wait for it)
            span = span.result()
        lo, hi = (first, first) if span is None else span
        cut = (max(lo - first, 0), max(min(hi - first, records.num_rows), 0))
    elif not inside and file_key is not None:
        cut = _cut_range(records, file_key, stats, counts, task.start, task.stop)
    if cut is not None and cut != (0, records.num_rows):
        records = records.slice(cut[0], max(cut[1] - cut[0], 0))
    if not inside:
        records = as_dense(records, records.column_names)
    n = records.num_rows
    read_span = (first + (cut[0] if cut else 0), first + (cut[0] if cut else 0) + n)
    row_ts = records.column(TS_COLUMN).to_numpy() if timed else None
    # an aliased column holds a value in every record (visible: nothing timed here)
    present = pool.full(n, not per_cell or bool(aliased_seen), np.bool_)
    if not per_cell and oldest is not None and row_ts is not None:
        present = row_ts >= oldest
    shown: dict[ColumnSpec, pa.Array] = {}
    stamps: dict[ColumnSpec, np.ndarray] = {}
    for s in seen:
        values = one_array(records.column(s.value_name))
        if row_ts is None and not per_cell:  # every value shown: no mask to compute
            shown[s] = values
            continue
        visible = valid_mask(values)
        if row_ts is not None:
            own = one_array(records.column(s.ts_name))
            if own.null_count == len(own):  # (the record's timestamp: a load stamps alike)
                ts = row_ts
            else:
                ts = np.where(valid_mask(own), own.fill_null(0).to_numpy(), row_ts)
            stamps[s] = ts
            if oldest is not None or window is not None:
                hidden = visible.copy()
                if oldest is not None:
                    visible &= ts >= oldest
                if window is not None:
                    visible &= (ts >= window[0]) & (ts < window[1])
                if (hidden != visible).any():  # (else no value is hidden: none to null)
                    values = pc.if_else(pa.array(visible), values, None)
        if per_cell:
            present |= visible
        shown[s] = values
    keys = None
    rows = None
    if by_keys and file_key is not None:
        if head:
            names = [f.name for f in file_key.fields]
            # one chunk each, combined once: the consumers (rows, aliases, cuts) share it
            keys = pa.table([one_array(records.column(n)) for n in head], names=names)
    else:
        rows = one_array(records.column(ROW_COLUMN)).cast(pa.binary())
    return _Base(
        rows=rows,
        present=present,
        values={s: shown[s] for s in (seen if stamped else out_specs) if s in shown},
        records=records,
        specs=tuple(read_specs),
        seq=entry.seq,
        first_row=entry.first_row,
        stamps=stamps if stamped else {},
        keys=keys,
        key=file_key,
        digest=None
        if not by_keys or digest is None
        else _span_digest(digest, whole_file, read_span),
        span=read_span if by_keys else None,
        aliased={s: apart[s] for s in out_specs if s in apart},
    )


def _span_digest(digest: str, whole: bool, span: tuple[int, int]) -> str:
    """What identifies the rows read of a keyed file: its digest, or part of it.

    A read of part of the file adds the records' positions: files of one rows digest hold
    the same rows in the same order, so the same positions hold the same rows.
    """
    return digest if whole else f"{digest}@{span[0]}:{span[1]}"


def _cut_range(
    records: pa.Table,
    key: RowKeySpec,
    stats: Sequence[RowGroupStats],
    counts: Sequence[int],
    start: bytes,
    stop: bytes,
) -> tuple[int, int]:
    """Where a keyed file's records with their row in ``[start, stop)`` are in ``records``.

    ``records`` are the row groups ``stats``, of ``counts`` records each; the answer is
    positions ``[lo, hi)`` of them. The cut points are found on the typed key fields
    (:func:`_key_cut`), not by encoding every record read; a bound is searched for only
    in the row group that may hold it (the groups before it lie wholly below it).
    """
    n = records.num_rows
    if all(g.within(start, stop) for g in stats):
        return 0, n
    fields = pa.table(
        [records.column(name) for name in key_names(key)], names=[f.name for f in key.fields]
    )
    ends = np.cumsum(counts)
    if ends.size and int(ends[-1]) != n:
        ends = np.array([n])  # the groups' counts do not add up: search the whole read
    lo = _key_cut(fields, key, start, _bracket(stats, ends, start)) if start else 0
    hi = _key_cut(fields, key, stop, _bracket(stats, ends, stop)) if stop else n
    return lo, max(hi, lo)


def _bracket(stats: Sequence[RowGroupStats], ends: np.ndarray, target: bytes) -> tuple[int, int]:
    """The records ``[a, b)`` of the one row group whose rows straddle ``target``.

    Every record before ``a`` is below ``target``, every record from ``b`` at or above it
    (by the groups' row bounds); without those bounds, every record.
    """
    if len(ends) != len(stats):
        return 0, int(ends[-1]) if len(ends) else 0
    a = 0
    for g, end in zip(stats, ends, strict=True):
        if g.max_row is None or g.min_row is None:
            return 0, int(ends[-1])
        if g.max_row < target:
            a = int(end)
            continue
        return a, int(end) if g.min_row < target else a
    return a, a


def _key_cut(fields: pa.Table, key: RowKeySpec, target: bytes, within: tuple[int, int]) -> int:
    """The first record whose row (``key``'s encoding of ``fields``) is ``>= target``.

    Searched for in the records ``within`` (the answer lies there): on the typed key
    fields (:func:`~cellstore.reader.columnar.keycut.narrow`), then, where those cannot
    place the target, by encoding only the records they leave.
    """
    a, b = within
    if b <= a:
        return a
    lo, hi, exact = narrow(fields.slice(a, b - a), key, target)
    if exact:
        return a + lo
    return a + lo + _bisect_keyed(fields.slice(a + lo, hi - lo), key, target)


def _bisect_keyed(fields: pa.Table, key: RowKeySpec, target: bytes) -> int:
    """The first record whose row (``key``'s encoding of ``fields``) is ``>= target``.

    Two steps of one encode each: every ``sqrt(n)``-th record, then the records between the
    two samples that bracket ``target`` (rows ascend, so the answer lies there).
    """
    n = fields.num_rows
    step = max(1, int(np.sqrt(n)))
    idx = np.arange(0, n, step, dtype=np.int64)
    j = bisect_rows(key.encode(fields.take(pa.array(idx))), target)
    lo = int(idx[j - 1]) if j > 0 else 0
    hi = int(idx[j]) if j < len(idx) else n
    if hi <= lo:
        return lo
    return lo + bisect_rows(key.encode(fields.slice(lo, hi - lo)), target)


def _concat_files(
    name: str, files: Sequence[_Base], *, keyed: bool = False
) -> tuple[Any, dict[Column, Typed], np.ndarray]:
    """Column files' parts (row ranges disjoint) as one family part, in row order.

    Returns the rows (``keyed``: the key fields, a table), the values, and which rows are
    in the result.
    """
    files = sorted(files, key=lambda f: f.first_row)
    if not files:
        return pa.array([], pa.binary()), {}, np.zeros(0, dtype=bool)
    if keyed:
        tables = [f.keys for f in files if f.keys is not None]
        rows: Any = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    else:
        arrays = [f.row_keys() for f in files]
        rows = pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0]
    present = np.concatenate([f.present for f in files])
    sizes = [len(f.present) for f in files]
    out = {
        (name, q): _concat_column(sizes, held, (name, q))
        for q, held in _held_by_qualifier(files).items()
    }
    return rows, out, present


def _held_by_qualifier(
    files: Sequence[_Base],
) -> dict[bytes, list[tuple[int, pa.Array, ColumnSpec]]]:
    """Per qualifier, which files (by position) hold its values, the values and the spec."""
    out: dict[bytes, list[tuple[int, pa.Array, ColumnSpec]]] = {}
    for i, f in enumerate(files):
        for s, arr in f.values.items():
            out.setdefault(s.qualifier, []).append((i, arr, s))
    return out


def _concat_column(
    sizes: Sequence[int],
    held: Sequence[tuple[int, pa.Array, ColumnSpec]],
    key: Column,
) -> Typed:
    """One qualifier's values over several column files (nulls where a file lacks it).

    Files that typed the column differently (a mapping changed its codec) give bytes.
    """
    first = held[0][2]
    arrs = []
    for i, n in enumerate(sizes):
        own = next((a for j, a, _ in held if j == i), None)
        arrs.append(pa.nulls(n, first.arrow_type) if own is None else own)
    codec = first.codec
    if any(a.type != first.arrow_type for a in arrs):
        arrs = [_bytes_of(a, key) for a in arrs]
        codec = Codec.BYTES
    return (pa.concat_arrays(arrs) if len(arrs) > 1 else arrs[0], codec)


def _same_fields(a: RowKeySpec, b: RowKeySpec) -> bool:
    """Whether two specs have the same fields (they may differ in the salt)."""
    return a.fields == b.fields

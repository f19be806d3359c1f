"""The column layout's fast path: wide reads answered from column files alone.

A wide read (one row per row key, the newest visible value of each column) of a task
whose every family is held by column files only (docs/format.md section 14) needs no
merge and no semantics pass: a column file holds at most one Put per (row, qualifier)
and no delete markers, so the newest visible value of a column is the file's value,
unless the family's TTL or the read's time range hides it (its timestamp decides). The
fast path reads only the requested qualifiers' value columns (and their timestamps only
when TTL or a time range needs them), masks hidden values, and joins the families on the
row. It gives exactly what ``to_wide(read_task(...))`` gives; where a task does not
qualify (:func:`fast_wide_families` says why not), the caller takes the general path.

A task qualifies when:

- the read is a normal one: not raw, no filters, no per-family limits or offsets;
- every family read is of cellstore store files, all of them column files, whose row
  ranges do not overlap (one write's rolled files, or a major compaction's);
- a family with a TTL has no ``min_versions`` (R8.4 would keep expired versions).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CellType
from cellstore.core.codecs import Codec, arrow_type, decode_values, encode_values, valid_mask
from cellstore.core.columnar import (
    ROW_COLUMN,
    TS_COLUMN,
    ColumnSpec,
    expand_records,
    key_names,
)
from cellstore.core.metadata import FileEntry
from cellstore.core.regions import bisect_rows
from cellstore.core.rowkey import RowKeySpec
from cellstore.core.semantics import merge_resolve
from cellstore.reader.plan import FamilyRead, ScanTask
from cellstore.reader.rowmerge import BaseColumns, merge_by_row
from cellstore.reader.shapes import WideSpec, column_name, to_wide, with_key_columns
from cellstore.storefiles.columns import COLUMN_FILE_SUFFIX
from cellstore.storefiles.reader import RowGroupStats, slice_rows

__all__ = ["fast_wide_families", "older_companions", "read_wide_fast"]

#: A wide column: (family, qualifier).
Column = tuple[str, bytes]
#: A column's values and the codec they are typed with (the file's).
Typed = tuple[pa.Array, Codec]

#: Why a task takes the general path (for tests and ``explain``).
NOT_COLUMNS: Final = "a family has cell files"


def fast_wide_families(task: ScanTask) -> str | None:
    """None when :func:`read_wide_fast` can answer ``task``, else why not."""
    if task.filters is not None:
        return "the read has filters"
    for fam in task.families:
        spec = fam.spec
        if fam.source is not None:
            return "the family is read from another source"
        if spec.raw or spec.compaction is not None:
            return "the read is raw"
        if spec.max_results_per_family is not None or spec.row_offset_per_family:
            return "the read has per-family limits"
        if fam.family.ttl is not None and fam.family.min_versions:
            return "the family keeps min versions under a TTL"
        if len(fam.entries) != len(fam.files):
            return "the task does not carry its manifest entries"
        if fam.entries and all(e.layout != "columns" for e in fam.entries):
            return NOT_COLUMNS
        ranges = sorted((e.first_row, e.last_row) for e in fam.entries if e.layout == "columns")
        if any(a[1] >= b[0] for a, b in itertools.pairwise(ranges)):
            return "the family's column files overlap"
    return None


def read_wide_fast(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    wide: WideSpec,
    *,
    reverse: bool = False,
    key: RowKeySpec | None = None,
) -> pa.Table:
    """The wide result of ``task`` from its column files (see the module docstring).

    The task must qualify (:func:`fast_wide_families` returns None).

    Args:
        fs: The filesystem.
        task: The scan task.
        wide: The wide shape's columns and codecs.
        reverse: Rows descending.
        key: The table's row-key spec: its decoded fields follow ``row``
            (:func:`~cellstore.reader.shapes.with_key_columns`), taken from keyed column
            files as they are when their spec is this one.

    Returns:
        ``row`` (then the key fields, with ``key``) then the wanted columns, as
        :func:`~cellstore.reader.shapes.to_wide` of the task's cells returns them (rows
        ascending; descending when ``reverse``).
    """
    codecs = dict(wide.codecs)
    wanted = None if wide.columns is None else set(wide.columns)
    shared = _shared_rows(fs, task, key)
    parts = [
        _read_family(fs, task, fam, wanted, key, rowless=shared and i > 0)
        for i, fam in enumerate(task.families)
    ]
    joined = _join([p for p in parts if p.size])
    found = joined.columns
    rows = joined.row_keys()
    if wide.columns is None:
        order = sorted(c for c, (a, _) in found.items() if a.null_count < len(a))
    else:
        order = list(wide.columns)
    names = ["row"]
    arrays: list[pa.Array] = [rows]
    for col in order:
        codec = codecs.get(col, Codec.BYTES)
        names.append(column_name(*col))
        typed = found.get(col)
        if typed is None:
            arrays.append(pa.nulls(len(rows), arrow_type(codec)))
        else:
            arrays.append(_as_codec(typed, codec, names[-1], wide.decode_errors))
    out = pa.Table.from_arrays(arrays, names=names)
    if task.strip_salt:
        out = out.set_column(0, "row", _strip_first_byte(out.column(0).combine_chunks()))
    if key is not None:
        out = with_key_columns(out, key, fields=joined.keys)
    if reverse and out.num_rows:
        out = out.take(pa.array(np.arange(out.num_rows - 1, -1, -1)))
    return out


def _shared_rows(fs: fsspec.AbstractFileSystem, task: ScanTask, key: RowKeySpec | None) -> bool:
    """Whether every family of ``task`` is one keyed column file of the same rows.

    Each family then holds one file inside the task's range, keyed with the read's spec,
    and all have the same rows digest (docs/format.md 14.2): the rows (key fields) are
    read from the first family only, the others' records line up with them.
    """
    if key is None or len(task.families) < 2:
        return False
    digests = set()
    for fam in task.families:
        if len(fam.entries) != 1 or fam.entries[0].layout != "columns":
            return False
        entry = fam.entries[0]
        if entry.first_row < task.start or (task.stop and entry.last_row >= task.stop):
            return False
        with task.open_file(fs, fam, entry.path) as reader:
            info = reader.info
        if info.row_key is None or not _same_fields(info.row_key, key):
            return False
        digests.add((info.rows_digest, info.rows))
    return len(digests) == 1


def _same_fields(a: RowKeySpec, b: RowKeySpec) -> bool:
    """Whether two specs have the same fields (they may differ in the salt)."""
    return dataclasses.replace(a, salt_buckets=None) == dataclasses.replace(b, salt_buckets=None)


def _read_family(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    wanted: set[Column] | None,
    key: RowKeySpec | None = None,
    *,
    rowless: bool = False,
) -> _Part:
    """One family's rows and their visible wanted values.

    Rows no cell file (delta) touches come from the column files alone; rows a delta
    touches are expanded to cells (only those rows), merged with the deltas and resolved
    with the read's semantics, then pivoted; the two parts are joined in row order.
    """
    bases = [e for e in fam.entries if e.layout == "columns"]
    deltas = [e for e in fam.entries if e.layout != "columns"]
    older = older_companions(fs, task, fam, bases, deltas)
    deltas = [e for e in deltas if e.path not in older]
    delta_runs: list[pa.Table] = []
    delta_seqs: list[int] = []
    for entry in deltas:
        with task.open_file(fs, fam, entry.path) as reader:
            cells = reader.read(start=task.start, stop=task.stop)
        if cells.num_rows:
            delta_runs.append(cells)
            delta_seqs.append(entry.seq)
    if delta_runs and fam.spec.time_range is None and _mergeable(delta_runs):
        part = _merged_family(fs, task, fam, bases, wanted, key, delta_runs, delta_seqs)
        if part is not None:
            return part
    touched = None
    if delta_runs:
        every = pa.concat_arrays([r.column("row").combine_chunks() for r in delta_runs])
        touched = pc.unique(every)
    whole = touched is not None
    read = [
        _read_base(fs, task, fam, e, wanted, whole=whole, key=key, rowless=rowless) for e in bases
    ]
    files = [f for f in read if f is not None]
    if rowless and len(files) == 1:
        # the rows are another family's (:func:`_shared_rows`): values and presence only
        f = files[0]
        named = {(fam.family.name, sp.qualifier): (a, sp.codec) for sp, a in f.values.items()}
        return _Part(None, named, f.present, digest=f.digest, count=len(f.present))
    if not whole and files and all(f.keys is not None for f in files):
        # keyed files of the table's spec: rows stay key columns until they are needed
        keys, columns, present = _concat_files(fam.family.name, files, keyed=True)
        digest = files[0].digest if len(files) == 1 else None
        return _Part(None, columns, present, keys=keys, key=files[0].key, digest=digest)
    rows, columns, present = _concat_files(fam.family.name, files)
    if touched is None:
        return _Part(rows, columns, present)
    if not present.all():
        keep = pa.array(present)
        rows = rows.filter(keep)
        columns = {k: (a.filter(keep), c) for k, (a, c) in columns.items()}
    # rows a delta touches: base cells of those rows + the deltas, resolved (HBase's rules)
    untouched = pc.invert(pc.is_in(rows, value_set=touched))
    runs, seqs = list(delta_runs), list(delta_seqs)
    for f in files:
        hit = pc.is_in(f.row_keys(), value_set=touched)
        if pc.any(hit).as_py():
            runs.append(expand_records(f.records.filter(hit), f.specs))
            seqs.append(f.seq)
    order = sorted(range(len(runs)), key=lambda i: seqs[i])  # oldest first
    cells = merge_resolve(
        [runs[i] for i in order], [seqs[i] for i in order], family=fam.family, spec=fam.spec
    )
    t_rows, t_columns = _pivot(fam.family.name, cells, wanted)
    return _Part(*_union(rows, untouched, columns, (t_rows, t_columns)))


def _mergeable(runs: Sequence[pa.Table]) -> bool:
    """Whether delta cells hold only what :func:`merge_by_row` decides.

    Puts, DeleteColumns and DeleteFamilies.
    """
    kinds = pa.array([int(CellType.PUT), int(CellType.DELETE_COLUMN), int(CellType.DELETE_FAMILY)])
    return all(
        pc.all(
            pc.is_in(r.column("type"), value_set=kinds.cast(r.schema.field("type").type))
        ).as_py()
        for r in runs
    )


def _merged_family(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    bases: Sequence[FileEntry],
    wanted: set[Column] | None,
    key: RowKeySpec | None,
    runs: list[pa.Table],
    seqs: list[int],
) -> _Part | None:
    """One family's part with deltas merged into the records by row (module rowmerge)."""
    read = [_read_base(fs, task, fam, e, wanted, whole=False, key=key, stamped=True) for e in bases]
    files = sorted((f for f in read if f is not None), key=lambda f: f.first_row)
    name = fam.family.name
    ttl = fam.family.ttl_ms
    columns = _held_by_qualifier(files)
    sizes = [len(f.present) for f in files]
    values: dict[bytes, tuple[pa.Array, Codec]] = {}
    stamps: dict[bytes, np.ndarray] = {}
    for q, held in columns.items():
        values[q] = _concat_column(sizes, held, (name, q))
        by_file = {j: f_spec for j, _, f_spec in held}
        stamps[q] = np.concatenate(
            [
                f.stamps[by_file[i]] if i in by_file else np.zeros(n, dtype=np.int64)
                for i, (f, n) in enumerate(zip(files, sizes, strict=True))
            ]
        )
    rows = pa.concat_arrays([f.row_keys() for f in files]) if files else pa.array([], pa.binary())
    base = BaseColumns(
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
    merged = merge_by_row(
        base,
        runs,
        seqs,
        qualifiers=fam.spec.qualifiers,
        oldest=None if ttl is None else fam.spec.now_ms - ttl,
    )
    if merged is None:
        return None
    out = {(name, q): v for q, v in merged.values.items() if wanted is None or (name, q) in wanted}
    keyed = [f for f in files if f.keys is not None]
    if len(merged.rows) == len(rows) and files and len(keyed) == len(files):
        # no row added: the key fields read still line up with the rows
        tables = [f.keys for f in keyed if f.keys is not None]
        keys = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        return _Part(merged.rows, out, merged.present, keys=keys, key=files[0].key)
    return _Part(merged.rows, out, merged.present)


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
    change a wide read.
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
    return out


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
    digest: str | None = None  # the rows digest of a file read whole
    stamps: dict[ColumnSpec, np.ndarray] = field(default_factory=dict)  # values' timestamps

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
    rowless: bool = False,
) -> _Base | None:
    """A column file's visible wanted values in the task's range.

    ``whole``: read every column, so rows touched by deltas can be expanded to cells.
    ``stamped``: read the values of every column the read covers with their timestamps
    (``stamps``), for :func:`~cellstore.reader.rowmerge.merge_by_row`. ``rowless``: read
    neither rows nor key fields (another family's file holds the same rows).
    ``key``: the table's row-key spec; a keyed file of that spec read whole (the task's
    range holds all its rows) gives its key fields, not rows.
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
        timed = oldest is not None or window is not None or stamped
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
        # A row is in the result when one of its cells the read covers is visible: with
        # the whole family read and no time range, every record is (it holds a value)
        # unless TTL expired its newest cell (__ts); otherwise decide per cell.
        per_cell = spec.qualifiers is not None or window is not None
        seen = read_specs if per_cell or stamped else out_specs
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
        records = reader.read_records([g.index for g in stats], columns=cols)
    if not by_keys:
        records = slice_rows(records, stats, task.start, task.stop, row=ROW_COLUMN)
    elif not inside and file_key is not None:
        records = _cut_keyed(records, file_key, stats, task.start, task.stop)
    n = records.num_rows
    row_ts = records.column(TS_COLUMN).to_numpy() if timed else None
    present = np.zeros(n, dtype=bool) if per_cell else np.ones(n, dtype=bool)
    if not per_cell and oldest is not None and row_ts is not None:
        present = row_ts >= oldest
    shown: dict[ColumnSpec, pa.Array] = {}
    stamps: dict[ColumnSpec, np.ndarray] = {}
    for s in seen:
        values = records.column(s.value_name).combine_chunks()
        visible = valid_mask(values)
        if row_ts is not None:
            own = records.column(s.ts_name).combine_chunks()
            ts = np.where(valid_mask(own), own.fill_null(0).to_numpy(), row_ts)
            stamps[s] = ts
            if oldest is not None:
                visible &= ts >= oldest
            if window is not None:
                visible &= (ts >= window[0]) & (ts < window[1])
            values = pc.if_else(pa.array(visible), values, None)
        if per_cell:
            present |= visible
        shown[s] = values
    keys = None
    rows = None
    if by_keys and file_key is not None:
        if head:
            names = [f.name for f in file_key.fields]
            keys = pa.table([records.column(n) for n in head], names=names)
    else:
        rows = records.column(ROW_COLUMN).combine_chunks().cast(pa.binary())
    return _Base(
        rows=rows,
        present=present,
        values={s: shown[s] for s in (seen if stamped else out_specs)},
        records=records,
        specs=tuple(read_specs),
        seq=entry.seq,
        first_row=entry.first_row,
        stamps=stamps if stamped else {},
        keys=keys,
        key=file_key,
        digest=digest if by_keys and inside and len(stats) == reader.info.row_groups else None,
    )


def _cut_keyed(
    records: pa.Table, key: RowKeySpec, stats: Sequence[RowGroupStats], start: bytes, stop: bytes
) -> pa.Table:
    """A keyed file's records (the row groups ``stats``) whose row is in ``[start, stop)``.

    The rows are encoded only where the cut points lie (:func:`_bisect_keyed`), not for
    every record read.
    """
    if all(g.within(start, stop) for g in stats):
        return records
    fields = pa.table(
        [records.column(n) for n in key_names(key)], names=[f.name for f in key.fields]
    )
    lo = _bisect_keyed(fields, key, start) if start else 0
    hi = _bisect_keyed(fields, key, stop) if stop else records.num_rows
    return records.slice(lo, max(hi - lo, 0))


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


def _pivot(
    name: str, cells: pa.Table, wanted: set[Column] | None
) -> tuple[pa.Array, dict[Column, Typed]]:
    """Resolved cells of one family (cell order) as rows and newest values (bytes)."""
    if not cells.num_rows:
        return pa.array([], pa.binary()), {}
    quals = pc.unique(cells.column("qualifier")).to_pylist()
    columns = tuple((name, q) for q in sorted(quals))
    with_family = cells.add_column(1, "family", pa.array([name] * cells.num_rows, pa.string()))
    table = to_wide(with_family, WideSpec(columns=columns))
    rows = table.column(0).combine_chunks()
    out: dict[Column, Typed] = {}
    for i, key in enumerate(columns, start=1):
        if wanted is None or key in wanted:
            out[key] = (table.column(i).combine_chunks(), Codec.BYTES)
    return rows, out


def _union(
    base_rows: pa.Array,
    untouched: pa.Array,
    a: dict[Column, Typed],
    touched: tuple[pa.Array, dict[Column, Typed]],
) -> tuple[pa.Array, dict[Column, Typed]]:
    """Untouched base rows and resolved touched rows, as one family part in row order.

    ``untouched`` masks ``base_rows`` (whose values are ``a``); ``touched`` holds the rows
    the deltas touch, resolved (values as bytes). When every touched row is a base row
    (updates and deletes of loaded rows) the touched values replace the base's in place;
    rows only the deltas hold need a sort.
    """
    t_rows, b = touched
    b = {k: _typed_like(v, a.get(k), k) for k, v in b.items()}
    at = pc.index_in(t_rows, value_set=base_rows)
    if at.null_count:
        return _union_sorted(base_rows, untouched, a, (t_rows, b))
    # one gather per column from [base values, touched values]: an untouched row takes
    # its base value, a touched one its resolved value; rows the deltas deleted drop out
    source = np.full(len(base_rows), -1, dtype=np.int64)
    source[untouched.to_numpy(zero_copy_only=False)] = np.flatnonzero(
        untouched.to_numpy(zero_copy_only=False)
    )
    source[at.to_numpy(zero_copy_only=False)] = len(base_rows) + np.arange(len(t_rows))
    order = pa.array(source[source >= 0])
    out: dict[Column, Typed] = {}
    for key in {**a, **b}:
        base, new = _aligned(a.get(key), b.get(key), key, len(base_rows), len(t_rows))
        both = pa.concat_arrays([base[0], new[0]]) if len(t_rows) else base[0]
        out[key] = (both.take(order), base[1])
    return pa.concat_arrays([base_rows, t_rows]).take(order), out


def _aligned(
    base: Typed | None, new: Typed | None, key: Column, n_base: int, n_new: int
) -> tuple[Typed, Typed]:
    """A column's base and touched values with one type.

    A missing side is nulls; when the two sides' codecs differ, both are bytes.
    """
    if base is not None and new is not None:
        if base[0].type == new[0].type:
            return base, new
        as_bytes = (_bytes_of(base[0], key), Codec.BYTES)
        return as_bytes, (new[0] if new[1] is Codec.BYTES else _bytes_of(new[0], key), Codec.BYTES)
    if base is not None:
        return base, (pa.nulls(n_new, base[0].type), base[1])
    assert new is not None
    return (pa.nulls(n_base, new[0].type), new[1]), new


def _typed_like(new: Typed, base: Typed | None, key: Column) -> Typed:
    """Touched values (bytes) typed like the base's column when every one round-trips."""
    arr, codec = new
    if base is None or base[1] is codec or codec is not Codec.BYTES:
        return new
    name = column_name(*key)
    typed = decode_values(arr, base[1], field=name, errors="null")
    if typed.null_count != arr.null_count:
        return new  # a value the base's codec does not read: keep bytes (read decides)
    back = encode_values(typed, base[1], field=name)
    if not pc.all(pc.fill_null(pc.equal(back, arr.cast(pa.binary())), True)).as_py():
        return new  # not given back byte for byte (a NaN payload): keep bytes
    return typed, base[1]


def _union_sorted(
    base_rows: pa.Array,
    untouched: pa.Array,
    a: dict[Column, Typed],
    touched: tuple[pa.Array, dict[Column, Typed]],
) -> tuple[pa.Array, dict[Column, Typed]]:
    """:func:`_union` when the deltas hold rows the base does not: concatenate, sort."""
    t_rows, b = touched
    rows = pa.concat_arrays([base_rows.filter(untouched), t_rows])
    order = pc.sort_indices(rows)
    n_a, n_b = len(rows) - len(t_rows), len(t_rows)
    out: dict[Column, Typed] = {}
    for key in {**a, **b}:
        codecs = {p[key][1] for p in (a, b) if key in p}
        as_bytes = len(codecs) > 1
        parts = []
        for part, n, filt in ((a, n_a, untouched), (b, n_b, None)):
            typed = part.get(key)
            if typed is None:
                other = (b if part is a else a)[key]
                parts.append(pa.nulls(n, pa.binary() if as_bytes else other[0].type))
                continue
            arr = typed[0] if filt is None else typed[0].filter(filt)
            parts.append(_bytes_of(arr, key) if as_bytes and typed[1] is not Codec.BYTES else arr)
        codec = Codec.BYTES if as_bytes else codecs.pop()
        out[key] = (pa.concat_arrays(parts).take(order), codec)
    return rows.take(order), out


def _bytes_of(arr: pa.Array, key: Column) -> pa.Array:
    """A typed value column back to HBase value bytes (its type names the codec)."""
    for codec in Codec:
        if arrow_type(codec) == arr.type and codec is not Codec.STRING:
            return encode_values(arr, codec, field=column_name(*key)).cast(pa.binary())
    return arr.cast(pa.binary())


@dataclass(frozen=True)
class _Part:
    """One family's part of a task: rows, wanted values, rows in the result.

    The rows are ``rows``, or, when that is None, ``keys``: the key fields of keyed
    files (with ``key`` the spec that encodes them). ``present`` says which rows are in
    the result (None: all of them). ``digest``: the rows digest of one keyed file read
    whole (two parts with the same digest hold the same rows).
    """

    rows: pa.Array | None
    columns: dict[Column, Typed]
    present: np.ndarray | None = None
    keys: pa.Table | None = None
    key: RowKeySpec | None = None
    digest: str | None = None
    count: int = 0  # the rows' count when neither rows nor keys are held (shared rows)

    @property
    def size(self) -> int:
        """How many rows the part holds."""
        if self.rows is not None:
            return len(self.rows)
        return self.keys.num_rows if self.keys is not None else self.count

    def row_keys(self) -> pa.Array:
        """The rows (encoded from the key fields when the part holds those)."""
        if self.rows is not None:
            return self.rows
        assert self.keys is not None and self.key is not None
        return self.key.encode(self.keys)

    def kept(self) -> _Part:
        """The rows in the result and their values."""
        if self.present is None or self.present.all():
            return _Part(self.rows, self.columns, None, self.keys, self.key)
        keep = pa.array(self.present)
        return _Part(
            None if self.rows is None else self.rows.filter(keep),
            {k: (a.filter(keep), c) for k, (a, c) in self.columns.items()},
            None,
            None if self.keys is None else self.keys.filter(keep),
            self.key,
        )

    def as_rows(self) -> tuple[pa.Array, dict[Column, Typed]]:
        """The part's rows (encoded if need be) and values."""
        return self.row_keys(), self.columns


_NO_ROWS: Final = _Part(pa.array([], pa.binary()), {})


def _same_rows(fams: Sequence[_Part]) -> bool:
    """Whether every family's part holds the same rows (records of one write each)."""
    first = fams[0]
    if all(f.size == first.size for f in fams[1:]):
        if first.digest is not None and all(f.digest == first.digest for f in fams[1:]):
            return True
        if first.rows is not None and all(f.rows is not None for f in fams[1:]):
            return all(first.rows.equals(f.rows) for f in fams[1:])
    return False


def _join(fams: Sequence[_Part]) -> _Part:
    """Families' parts joined on the row: the union of their result rows, ascending."""
    if not fams:
        return _NO_ROWS
    if _same_rows(fams):
        # every family holds the same records (one per row, each family's file): a row
        # is in the result when it is in any family's; no join
        present = np.zeros(fams[0].size, dtype=bool)
        same: dict[Column, Typed] = {}
        for f in fams:
            present |= True if f.present is None else f.present
            same.update(f.columns)
        rows = next((f.rows for f in fams if f.rows is not None), None)
        keys = next((f for f in fams if f.keys is not None), None)
        if rows is None and keys is None:
            return _NO_ROWS
        return _Part(
            rows,
            same,
            present,
            None if keys is None else keys.keys,
            None if keys is None else keys.key,
        ).kept()
    kept = [f.kept() for f in fams]
    parts = [p.as_rows() for p in kept if p.size]
    if not parts:
        return _NO_ROWS
    if len(parts) == 1:
        return _Part(*parts[0])
    widest = max(parts, key=lambda p: len(p[0]))[0]
    within = [pc.index_in(rows, value_set=widest) for rows, _ in parts]
    if all(at.null_count == 0 for at in within):
        # every family's rows are among the widest family's (a column null in some
        # records): place each family's values at its rows' positions, no sort
        out_w: dict[Column, Typed] = {}
        for (fam_rows, columns), at in zip(parts, within, strict=True):
            where = np.full(len(widest), -1, dtype=np.int64)
            where[at.to_numpy(zero_copy_only=False)] = np.arange(len(fam_rows))
            index = pa.array(where, mask=where < 0)
            for key, (arr, codec) in columns.items():
                out_w[key] = (arr.take(index), codec)
        return _Part(widest, out_w)
    every = pa.concat_arrays([rows for rows, _ in parts])
    rows = pc.unique(every)
    rows = rows.take(pc.sort_indices(rows))
    out: dict[Column, Typed] = {}
    for fam_rows, columns in parts:
        at = pc.index_in(rows, value_set=fam_rows)
        for key, (arr, codec) in columns.items():
            out[key] = (arr.take(at), codec)
    return _Part(rows, out)


def _as_codec(typed: Typed, codec: Codec, name: str, errors: str) -> pa.Array:
    """A column's values (typed with the file's codec) as the read's codec gives them."""
    arr, have = typed
    if have is codec:
        return arr
    raw = encode_values(arr, have, field=name)
    if codec is Codec.BYTES:
        return raw
    return decode_values(raw, codec, field=name, errors="raise" if errors == "raise" else "null")


def _strip_first_byte(rows: pa.Array) -> pa.Array:
    """Every row key without its first byte (the salt)."""
    return pc.binary_slice(rows, 1, 1 << 30)  # an explicit stop: pyarrow 26 fails without

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
- every family read is of cellstore store files, at least one of them a column file;
  the oldest column files whose row ranges do not overlap are the base, every other
  file (cell files, and column files of later writes: column deltas) is a delta merged
  into it (:func:`~cellstore.reader.columnar.merge.split_bases`);
- a family with a TTL has no ``min_versions`` (R8.4 would keep expired versions).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Final

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core import pool
from cellstore.core.codecs import Codec, arrow_type, one_array
from cellstore.core.columnar import (
    expand_records,
)
from cellstore.core.metadata import FileEntry
from cellstore.core.rowkey import RowKeySpec
from cellstore.core.semantics import merge_resolve
from cellstore.errors import CellstoreError
from cellstore.reader.columnar.base import _concat_files, _read_base, _same_fields
from cellstore.reader.columnar.join import _as_codec, _join, _Part, _strip_first_byte
from cellstore.reader.columnar.merge import (
    _mergeable,
    _merged_family,
    older_companions,
    split_bases,
)
from cellstore.reader.columnar.patch import (
    Cuts,
    Decided,
    Located,
    Pivot,
    Record,
    apply,
    cut_shared,
    decide,
    delta_columns,
    newer_deltas,
    pivot_cells,
)
from cellstore.reader.columnar.types import Column
from cellstore.reader.columnar.union import _pivot, _union
from cellstore.reader.execute import run_together
from cellstore.reader.plan import FamilyRead, ScanTask
from cellstore.reader.shapes import WideSpec, column_name, with_key_columns
from cellstore.storefiles.layout import entry_path
from cellstore.storefiles.reader import known_info

__all__ = ["fast_wide_families", "read_wide_fast"]


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
    skips: _Skips = {}  # companions a family's read may skip, decided once per task
    shared = _shared_rows(fs, task, key, skips)
    encoded: dict[tuple[str, int], pa.Array] = {}  # rows encoded once per task (merge)
    pending: dict[str, Pivot | None] = {}  # deltas patched after the reads (module patch)

    # families of shared rows cut by the range take the first family's cut (its span):
    # they read their records at once with it and wait for the span only to cut them
    span: Future[tuple[int, int] | None] | None = None
    if shared and not _inside(task):
        span = Future()

    def family(i: int) -> _Part:
        fam = task.families[i]
        rowless = shared and i > 0
        try:
            part = _read_family(
                fs,
                task,
                fam,
                wanted,
                key,
                rowless=rowless,
                encoded=encoded,
                span=span if rowless else None,
                pending=pending,
                shared=shared,
                skips=skips,
            )
        except BaseException:
            if i == 0 and span is not None:  # the others raise too (this error is told)
                span.set_exception(CellstoreError("the read this one waited for failed"))
            raise
        if i == 0 and span is not None:
            span.set_result(part.span)
        # the first family's rows are the result's (or joined): encoded here, at once with
        # the other families' reads
        return _with_rows(part) if i == 0 else part

    # the families' files are read at once: one file's decode is too short for pyarrow's
    # column threads to keep two cores busy (docs/performance.md); the first family runs
    # in this thread (:func:`run_together`), so a family waiting for its span never waits
    # on a read that has not started
    parts = run_together([functools.partial(family, i) for i in range(len(task.families))])
    if shared:
        parts = [parts[0], *(_aliases_from_keys(p, parts[0]) for p in parts[1:])]
    if pending:
        parts = _with_deltas(fs, task, parts, pending, wanted, key, shared=shared)
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
            arrays.append(_as_codec(typed, codec, names[-1], wide.decode_errors, rows))
    out = pa.Table.from_arrays(arrays, names=names)
    if task.strip_salt:
        out = out.set_column(0, "row", _strip_first_byte(out.column(0).combine_chunks()))
    if key is not None:
        out = with_key_columns(out, key, fields=joined.keys)
    if reverse and out.num_rows:
        out = out.take(pa.array(np.arange(out.num_rows - 1, -1, -1)))
    return out


def _with_rows(part: _Part) -> _Part:
    """``part`` with its rows encoded from its key fields (kept too).

    Only when every row is in the result: a part with hidden rows is encoded after the
    join drops them.
    """
    if part.rows is not None or part.keys is None:
        return part
    if part.present is not None and not part.present.all():
        return part
    return replace(part, rows=part.row_keys())


@dataclass(frozen=True)
class _Shared(_Part):
    """A part whose rows are the first family's, with the aliased columns not read.

    ``aliased``: per wanted column that is an alias of a key field (docs/format.md 14.2)
    and was not read, the field's name and the column's codec
    (:func:`_aliases_from_keys` takes its values from the first family's key fields).
    """

    aliased: dict[Column, tuple[str, Codec]] = field(default_factory=dict)


def _aliases_from_keys(part: _Part, first: _Part) -> _Part:
    """``part`` with its aliased columns' values: the first family's key fields.

    Both parts hold the same records in the same order (:func:`_shared_rows`), and an
    aliased column holds its key field's value in every record.
    """
    if not isinstance(part, _Shared) or not part.aliased:
        return part
    assert first.keys is not None  # the first family of shared rows holds the key fields
    columns = dict(part.columns)
    for col, (name, codec) in part.aliased.items():
        columns[col] = (one_array(first.keys.column(name)), codec)
    return _Part(None, columns, part.present, digest=part.digest, count=part.count)


def _shared_rows(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    key: RowKeySpec | None,
    skips: _Skips | None = None,
) -> bool:
    """Whether every family of ``task`` is one keyed column file of the same rows.

    Each family then holds one file (and at most its companion cell file, when the read
    may skip it: :func:`older_companions`, as after a major compaction that kept
    versions), keyed with the read's spec, and all have the same rows digest
    (docs/format.md 14.2): the rows (key fields) are read from the first family only,
    and cut to the task's range there; the others' records line up with them (the same
    positions in each file).
    """
    if key is None or len(task.families) < 2:
        return False
    digests = set()
    for fam in task.families:
        bases, deltas = split_bases(fam.entries)
        if len(bases) != 1:
            return False
        if deltas and not _shared_deltas(fs, task, fam, bases, deltas, skips):
            return False
        entry = bases[0]
        path = entry_path(task.table_path, entry.path, table=task.table, version=task.version)
        info = known_info(path, entry)  # (the read opens and checks the file itself)
        if info is None:
            with task.open_file(fs, fam, entry.path) as reader:
                info = reader.info
        if info.row_key is None or not _same_fields(info.row_key, key):
            return False
        digests.add((info.rows_digest, info.rows))
    return len(digests) == 1


#: :func:`older_companions` answers of one task: by family and the files asked about.
_Skips = dict[tuple[str, tuple[str, ...], tuple[str, ...]], set[str]]


def _shared_deltas(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    bases: list[FileEntry],
    deltas: list[FileEntry],
    skips: _Skips | None = None,
) -> bool:
    """Whether a family's deltas keep its rows the base's (for :func:`_shared_rows`).

    They do when the read may skip them (:func:`older_companions`), or when they are
    patched into the base's columns after the read (module patch: cell files newer than
    the base; a patch that cannot be made re-reads the task by the general path,
    :func:`_with_deltas`).
    """
    rest = [d for d in deltas if d.path not in _skipped(fs, task, fam, bases, deltas, skips)]
    return not rest or (fam.spec.time_range is None and newer_deltas(bases, rest))


def _with_deltas(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    parts: list[_Part],
    pending: dict[str, Pivot | None],
    wanted: set[Column] | None,
    key: RowKeySpec | None,
    *,
    shared: bool,
) -> list[_Part]:
    """The families' parts with their pivoted deltas patched in (module patch).

    ``pending``: per family whose deltas were pivoted, the pivot (None: they could not
    be, under shared rows). Families of shared rows take the first family's rows,
    encoded once, and keep the rows any family shows (one gather per column patches and
    drops rows); other families keep their own. Where a patch cannot be made (a delta
    row the base lacks, or deltas not pivoted), every family is read again by the
    general path.
    """
    families = list(zip(task.families, parts, strict=True))
    first = parts[0].row_keys() if shared else None
    # under shared rows every family keeps the same rows: a column cut once serves all
    # (a key field and the columns aliasing it)
    cuts: Cuts | None = {} if first is not None else None
    located = None
    if first is not None:  # the families' rows: each distinct delta row array located once
        located = Located(first)
        for pivot in pending.values():
            for needles in pivot.rows if pivot is not None else []:
                located(needles)

    def decision(fam: FamilyRead, part: _Part) -> Decided | None:
        pivot = pending[fam.family.name]
        if pivot is None:
            return None
        ttl = fam.family.ttl_ms
        oldest = None if ttl is None else fam.spec.now_ms - ttl
        rows = first if first is not None else part.row_keys()
        name = fam.family.name
        codecs = {q: c for (f, q), (_, c) in part.columns.items() if f == name}
        return decide(part.present, rows, pivot, oldest=oldest, codecs=codecs, located=located)

    patched = [(f, p) for f, p in families if f.family.name in pending]
    made = run_together([functools.partial(decision, f, p) for f, p in patched])
    if any(d is None for d in made):
        return run_together(
            [functools.partial(_read_family, fs, task, f, wanted, key) for f in task.families]
        )
    decided = {f.family.name: d for (f, _), d in zip(patched, made, strict=True) if d is not None}
    keep: np.ndarray | None = None
    kept_rows = first
    if first is not None:
        shows = pool.full(len(first), False, np.bool_)
        for fam, part in families:
            got = decided.get(fam.family.name)
            present = part.present if got is None else got.present
            shows |= True if present is None else present
        keep = None if shows.all() else shows
        kept_rows = first if keep is None else first.filter(pa.array(keep))
        keys = parts[0].keys
        if keep is not None and keys is not None and cuts is not None:
            cut_shared([one_array(c) for c in keys.columns], keep, cuts)

    def patch(fam: FamilyRead, part: _Part) -> _Part:
        name = fam.family.name
        got = decided.get(name)
        pivot = pending.get(name)
        rows, cut = kept_rows, keep
        if first is None:
            if got is None or pivot is None:
                return part
            rows = part.row_keys()
            cut = None if got.present.all() else got.present
            rows = rows if cut is None else rows.filter(pa.array(cut))
        assert rows is not None
        made = None if got is None or pivot is None else (pivot, got)
        return apply(part, rows, cut, made, family=name, wanted=wanted, cuts=cuts)

    return run_together([functools.partial(patch, f, p) for f, p in families])


def _skipped(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    bases: list[FileEntry],
    deltas: list[FileEntry],
    skips: _Skips | None,
) -> set[str]:
    """:func:`older_companions`, asked once per task for the same family and files."""
    if skips is None:
        return older_companions(fs, task, fam, bases, deltas)
    at = (fam.family.name, tuple(e.path for e in bases), tuple(e.path for e in deltas))
    if at not in skips:
        skips[at] = older_companions(fs, task, fam, bases, deltas)
    return skips[at]


def _inside(task: ScanTask) -> bool:
    """Whether every column file of ``task`` lies inside its row range (no cut)."""
    return all(
        e.first_row >= task.start and not (task.stop and e.last_row >= task.stop)
        for fam in task.families
        for e in fam.entries
        if e.layout == "columns"
    )


def _cells_of(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    entries: list[FileEntry],
    *,
    encoded: bool = False,
    columns: Callable[[FileEntry], list[str]] | None = None,
    stamps: list[int | None] | None = None,
) -> tuple[list[pa.Table], list[int]]:
    """The cells of ``entries`` in the task's range, and their sequence ids.

    Column files are expanded to their cells; files with none in range are left out.
    ``encoded``: rows and qualifiers dictionary-encoded (``StoreFileReader.read``).
    ``columns``: the cell columns to read of each file (default all). With ``stamps``
    (filled here, one per run returned), a cell file whose cells all have one timestamp
    (its entry's smallest and largest agree: a load stamps its cells alike) is read
    without ``ts``, and ``stamps`` gives that timestamp (None: the run has ``ts``).
    """
    runs: list[pa.Table] = []
    seqs: list[int] = []
    for entry in entries:
        cols = None if columns is None else columns(entry)
        stamp = stamps is not None and cols is not None and "ts" in cols and _one_stamp(entry)
        if stamp and cols is not None:
            cols = [c for c in cols if c != "ts"]
        with task.open_file(fs, fam, entry.path) as reader:
            cells = reader.read(start=task.start, stop=task.stop, encoded=encoded, columns=cols)
        if cells.num_rows:
            runs.append(cells)
            seqs.append(entry.seq)
            if stamps is not None:
                stamps.append(entry.min_ts if stamp else None)
    return runs, seqs


def _one_stamp(entry: FileEntry) -> bool:
    """Whether every cell of a cell file has one timestamp (by its manifest entry).

    The entry's timestamps are the footer's, checked against it when the file is
    opened; the writer computed them from the cells.
    """
    return entry.layout == "cells" and entry.min_ts == entry.max_ts


def _records_of(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    entries: list[FileEntry],
    key: RowKeySpec | None,
) -> list[Record]:
    """Column deltas' records in the task's range, typed, with their values' timestamps.

    Values TTL hides are null: a hidden newer Put hides the base's older one alike. A
    file whose values have one timestamp (its entry's smallest and largest agree: a load
    stamps alike) is read without its timestamps, or not at all when TTL hides that
    timestamp (the values it would hide are older: hidden too, R8.1).
    """
    out = []
    ttl = fam.family.ttl_ms
    oldest = None if ttl is None else fam.spec.now_ms - ttl
    for e in entries:
        one = e.min_ts == e.max_ts
        if one and oldest is not None and e.min_ts < oldest:
            continue
        f = _read_base(fs, task, fam, e, None, whole=False, key=key, stamped=not one, live=one)
        if f is None:
            continue
        stamp = np.array([e.min_ts], dtype=np.int64)  # (every value's, when ``one``)
        out.append(
            Record(
                rows=f.row_keys(),
                values={s.qualifier: (a, s.codec) for s, a in f.values.items()},
                stamps={s.qualifier: stamp if one else f.stamps[s] for s in f.values},
                seq=f.seq,
            )
        )
    return out


def _read_family(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    wanted: set[Column] | None,
    key: RowKeySpec | None = None,
    *,
    rowless: bool = False,
    encoded: dict[tuple[str, int], pa.Array] | None = None,
    span: tuple[int, int] | Future[tuple[int, int] | None] | None = None,
    pending: dict[str, Pivot | None] | None = None,
    shared: bool = False,
    skips: _Skips | None = None,
) -> _Part:
    """One family's rows and their visible wanted values.

    With ``pending``, cell deltas newer than the base are pivoted into it (the caller
    patches them in: :func:`_with_deltas`) and the base is read alone. Under ``shared``
    rows (:func:`_shared_rows`) the base is read alone also when they cannot be pivoted
    (``pending`` then holds None: the caller reads the task again by the general path).

    The base (:func:`~cellstore.reader.columnar.merge.split_bases`) takes its deltas by
    row where the merge decides them (cell deltas of Puts, DeleteColumns and
    DeleteFamilies, column deltas as typed records, no time range). Otherwise rows no
    delta touches come from the base alone; rows a delta touches are expanded to cells
    (only those rows), merged with the deltas (column deltas expanded too) and resolved
    with the read's semantics, then pivoted; the two parts are joined in row order.
    """
    bases, deltas = split_bases(fam.entries)
    older = _skipped(
        fs, task, fam, [e for e in fam.entries if e.layout == "columns"], deltas, skips
    )
    deltas = [e for e in deltas if e.path not in older]
    if pending is not None and fam.spec.time_range is None and newer_deltas(bases, deltas):
        cells = [e for e in deltas if e.layout == "cells"]
        stamps: list[int | None] = []
        runs, seqs = _cells_of(
            fs, task, fam, cells, encoded=True, columns=delta_columns, stamps=stamps
        )
        records = _records_of(fs, task, fam, [e for e in deltas if e not in cells], key)
        pivot = pivot_cells(
            runs, seqs, qualifiers=fam.spec.qualifiers, records=records, stamps=stamps
        )
        if pivot is not None or shared:
            pending[fam.family.name] = pivot
            deltas = []
    newer = [e for e in deltas if e.layout == "columns"]  # column deltas
    delta_runs, delta_seqs = _cells_of(fs, task, fam, [e for e in deltas if e not in newer])
    if (delta_runs or newer) and fam.spec.time_range is None and _mergeable(delta_runs):
        part = _merged_family(
            fs, task, fam, bases, wanted, key, delta_runs, delta_seqs, newer=newer, encoded=encoded
        )
        if part is not None:
            return part
    more_runs, more_seqs = _cells_of(fs, task, fam, newer)
    delta_runs, delta_seqs = delta_runs + more_runs, delta_seqs + more_seqs
    touched = None
    if delta_runs:
        every = pa.concat_arrays([r.column("row").combine_chunks() for r in delta_runs])
        touched = pc.unique(every)
    whole = touched is not None
    read = [
        _read_base(
            fs,
            task,
            fam,
            e,
            wanted,
            whole=whole,
            key=key,
            rowless=rowless,
            aliases_apart=rowless,
            span=span,
            threads=len(task.families) == 1,  # else the families are read at once
        )
        for e in bases
    ]
    files = [f for f in read if f is not None]
    if rowless and len(files) == 1:
        # the rows are another family's (:func:`_shared_rows`): values and presence only
        f = files[0]
        named = {(fam.family.name, sp.qualifier): (a, sp.codec) for sp, a in f.values.items()}
        aliased = {
            (fam.family.name, sp.qualifier): (name, sp.codec) for sp, name in f.aliased.items()
        }
        return _Shared(
            None, named, f.present, digest=f.digest, count=len(f.present), aliased=aliased
        )
    if not whole and files and all(f.keys is not None for f in files):
        # keyed files of the table's spec: rows stay key columns until they are needed
        keys, columns, present = _concat_files(fam.family.name, files, keyed=True)
        one = len(files) == 1
        key_spec = files[0].key
        # (the first family's rows are encoded by the caller, :func:`_with_rows`)
        return _Part(
            None,
            columns,
            present,
            keys=keys,
            key=key_spec,
            digest=files[0].digest if one else None,
            span=files[0].span if one else None,
        )
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

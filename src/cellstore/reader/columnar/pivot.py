"""Delta cells pivoted and decided against the base's rows (the patch's first half).

:func:`pivot_cells` takes a family's delta files (Puts and DeleteFamily markers, read
with their ``row`` and ``qualifier`` columns as Arrow dictionaries) as they come: per
file, each row group's dictionaries and each cell's index in them, its timestamps and
markers, and the Puts' values. :func:`decide` then places each file's distinct rows
among the base's (:class:`Located`, once per task), folds every file's cells into the
newest DeleteFamily per touched row and the newest Put per (column, touched row) in one
compiled pass per file, and says per column which touched rows show the delta's value,
the base's, or nothing (:class:`Decided`; the module :mod:`~cellstore.reader.columnar.patch`
describes the rules and applies the decisions). Python loops run over files, row groups
and columns, never over cells (:mod:`~cellstore.reader.columnar.pivotk`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa

from cellstore.core import pool
from cellstore.core.cells import CellType
from cellstore.core.codecs import Codec, valid_mask
from cellstore.reader.columnar.pivotk import (
    fold_record,
    newest_of_file,
    used_entries,
    visibility,
    winners,
)
from cellstore.reader.rowmerge import locate_in, sorted_parts

__all__ = [
    "Decided",
    "DeltaFile",
    "Located",
    "Picked",
    "Pivot",
    "Record",
    "decide",
    "pivot_cells",
]

_PUT: Final = int(CellType.PUT)
_DELETE_FAMILY: Final = int(CellType.DELETE_FAMILY)
_NONE: Final = int(np.iinfo(np.int64).min)
_EMPTY: Final = np.zeros(0, dtype=np.int64)
_NO_MARKS: Final = np.zeros(0, dtype=np.bool_)
_NO_INDEX: Final = np.zeros(0, dtype=np.int32)


@dataclass(frozen=True)
class Record:
    """A column delta's records in the read's range (one file, docs/format.md 14.4).

    Attributes:
        rows: The records' rows (binary, ascending, unique).
        values: Per qualifier the read covers, its values (typed, null: no visible
            cell) and codec.
        stamps: Per qualifier, each value's timestamp (where the value is not null), or
            one timestamp, every value's (a file stamped alike).
        seq: The file's sequence id.
    """

    rows: pa.Array
    values: dict[bytes, tuple[pa.Array, Codec]]
    stamps: dict[bytes, np.ndarray]
    seq: int


@dataclass(frozen=True)
class DeltaFile:
    """One delta file's cells as read: dictionary indices per row group, no copies.

    A column read as a dictionary comes in chunks (one per row group), each with its own
    dictionary (of a sorted column, its values in the order they first appear: so
    ascending) and each cell's index in it.

    Attributes:
        rows: The file's distinct rows (binary, ascending: the chunks' dictionaries
            one after another, a row on both sides of a chunk boundary once; may hold
            rows no cell uses).
        row_index: Per cell, its index in its chunk's row dictionary (int32).
        row_bounds: The row chunks' first cells, then the cell count.
        row_shift: Per row chunk, what turns its indices into positions in ``rows``.
        qual_index: Per cell, its index in its chunk's qualifier dictionary (empty:
            no qualifier column, a file of markers only).
        qual_bounds: The qualifier chunks' first cells, then the cell count (empty:
            none).
        qual_start: Per qualifier chunk, its first entry in ``qmap``.
        qmap: Per qualifier dictionary entry (every chunk's in turn), its column's
            number in :attr:`Pivot.qualifiers` (-1: not covered, or a marker's).
        ts: Per cell, its timestamp (one only: every cell's).
        marker: Per cell, whether it is a DeleteFamily (None: every cell is a Put).
        seq: The file's sequence id.
        first: Its first cell's value position in :attr:`Pivot.values` (-1: no values,
            a file of markers only).
    """

    rows: pa.Array
    row_index: np.ndarray
    row_bounds: np.ndarray
    row_shift: np.ndarray
    qual_index: np.ndarray
    qual_bounds: np.ndarray
    qual_start: np.ndarray
    qmap: np.ndarray
    ts: np.ndarray
    marker: np.ndarray | None
    seq: int
    first: int


@dataclass(frozen=True)
class Pivot:
    """A family's delta cells (Puts and DeleteFamily markers), file by file.

    The rows are not yet placed among the base's (:func:`decide` does that).

    Attributes:
        files: Each delta file's cells (:class:`DeltaFile`), in the order given.
        qualifiers: The covered qualifiers the deltas' Puts hold, ascending.
        values: The Puts' values (binary; of the files that hold Puts, in cell order).
        records: The column deltas' records (their values are Puts too).
    """

    files: tuple[DeltaFile, ...]
    qualifiers: list[bytes]
    values: pa.Array
    records: tuple[Record, ...] = ()

    @property
    def rows(self) -> list[pa.Array]:
        """Each delta file's distinct rows (what :class:`Located` places)."""
        return [f.rows for f in self.files]


def pivot_cells(
    runs: Sequence[pa.Table],
    seqs: Sequence[int],
    *,
    qualifiers: frozenset[bytes] | None,
    records: Sequence[Record] = (),
    stamps: Sequence[int | None] | None = None,
) -> Pivot | None:
    """Delta cells (one sorted table per file, sequence ids ``seqs``) gathered for a patch.

    Args:
        runs: Each delta file's cells in the read's range, in cell order: the columns
            :func:`~cellstore.reader.columnar.patch.delta_columns` names (without
            ``type``: Puts only; without ``qualifier`` and ``value``: markers only);
            ``row`` and ``qualifier`` best read as dictionaries (others are encoded here).
        seqs: Each run's sequence id (of equal timestamps, the higher wins: R3.3).
        qualifiers: The qualifiers the read covers (None: all); Puts of others are
            left out (a DeleteFamily covers every qualifier).
        records: The column deltas' records.
        stamps: Per run, the one timestamp of all its cells when it has no ``ts``
            column (None, or no ``stamps``: it has one).

    Returns:
        The pivot, or None when a cell is neither a Put nor a DeleteFamily (or a Put
        comes without its qualifier or value).
    """
    pieces = []
    one = [None] * len(runs) if stamps is None else list(stamps)
    for r, seq, stamp in zip(runs, seqs, one, strict=True):
        if not r.num_rows:
            continue
        names = r.column_names
        marker = None
        if "type" in names:
            t = r.column("type").to_numpy()
            marker = t == _DELETE_FAMILY
            if not (marker | (t == _PUT)).all():
                return None
            if not marker.any():
                marker = None
        all_marked = marker is not None and bool(marker.all())
        if not all_marked and ("qualifier" not in names or "value" not in names):
            return None  # (a Put without its qualifier or value: never so by delta_columns)
        quals = _qualifiers_of(r.column("qualifier")) if "qualifier" in names else None
        pieces.append((r, seq, marker, quals, stamp))
    used: set[bytes] = {q for rec in records for q in rec.values}
    for _, _, marker, quals, _ in pieces:
        if quals is None:
            continue
        entries, index, bounds, starts = quals
        hit = np.zeros(len(entries), dtype=np.bool_)
        marks = _NO_MARKS if marker is None else marker
        used_entries(index, bounds, starts, marks, marker is not None, hit)
        used.update(entries.filter(pa.array(hit)).to_pylist())
    names_ = sorted(q for q in used if qualifiers is None or q in qualifiers)
    at = {q: j for j, q in enumerate(names_)}
    files = []
    values: list[pa.Array] = []
    n_values = 0
    for r, seq, marker, quals, stamp in pieces:
        rows, r_index, r_bounds, r_shift = _rows_of(r.column("row"))
        if quals is None:
            q_index, q_bounds, q_start, qmap = _NO_INDEX, _EMPTY, _EMPTY, _EMPTY
        else:
            entries, q_index, q_bounds, q_start = quals
            qmap = np.array([at.get(v, -1) for v in entries.to_pylist()], dtype=np.int64)
        first = -1
        if "value" in r.column_names:
            first = n_values
            values.extend(_binary(c) for c in r.column("value").chunks)
            n_values += r.num_rows
        if stamp is None:
            ts = r.column("ts").to_numpy().astype(np.int64, copy=False)
        else:  # (every cell's: the kernel reads one timestamp)
            ts = np.array([stamp], dtype=np.int64)
        files.append(
            DeltaFile(
                rows,
                r_index,
                r_bounds,
                r_shift,
                q_index,
                q_bounds,
                q_start,
                qmap,
                ts,
                marker,
                seq,
                first,
            )
        )
    return Pivot(
        files=tuple(files),
        qualifiers=names_,
        values=_concat(values),
        records=tuple(records),
    )


def _binary(arr: pa.Array) -> pa.Array:
    return arr if arr.type == pa.binary() else arr.cast(pa.binary())


def _concat(values: list[pa.Array]) -> pa.Array:
    if not values:
        return pa.array([], pa.binary())
    return values[0] if len(values) == 1 else pa.concat_arrays(values)


def _chunks(col: pa.ChunkedArray) -> tuple[list[pa.Array], np.ndarray, np.ndarray]:
    """A column's chunks as dictionaries: each chunk's dictionary, indices, bounds.

    Returns:
        Each chunk's dictionary (binary), each cell's index in its chunk's dictionary
        (int32), and the chunks' first cells (then the cell count). A chunk not read
        as a dictionary is encoded here.
    """
    dicts, indices = [], []
    bounds = [0]
    for c in col.chunks:
        if not len(c):
            continue
        if not pa.types.is_dictionary(c.type):
            c = _binary(c).dictionary_encode()
        dicts.append(_binary(c.dictionary))
        indices.append(c.indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False))
        bounds.append(bounds[-1] + len(c))
    if not dicts:
        return [], _NO_INDEX, _EMPTY
    index = indices[0] if len(indices) == 1 else np.concatenate(indices)
    return dicts, index, np.array(bounds, dtype=np.int64)


def _qualifiers_of(col: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """A qualifier column as :func:`_chunks` gives it, the dictionaries one array.

    Returns:
        Every chunk's dictionary entries in turn, the indices, the bounds, and each
        chunk's first entry among the entries.
    """
    dicts, index, bounds = _chunks(col)
    starts = np.zeros(len(dicts), dtype=np.int64)
    np.cumsum([len(d) for d in dicts[:-1]], out=starts[1:])
    return _concat(dicts), index, bounds, starts


def _rows_of(col: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """A sorted file's row column: its distinct rows, each cell's index, bounds, shifts.

    The chunks' dictionaries follow each other (row groups in row order); a row on both
    sides of a boundary is one, so a chunk's indices shift by the entries before it less
    one. (Rows not in order only make rows absent from the base: the patch then
    declines.)
    """
    dicts, index, bounds = _chunks(col)
    shift = np.zeros(len(dicts), dtype=np.int64)
    if len(dicts) <= 1:
        return _concat(dicts), index, bounds, shift
    kept = []
    last: bytes | None = None
    total = 0
    for k, d in enumerate(dicts):
        same = int(last is not None and d[0].as_py() == last)
        shift[k] = total - same
        kept.append(d.slice(same) if same else d)
        total += len(d) - same
        last = d[len(d) - 1].as_py()
    return pa.concat_arrays(kept), index, bounds, shift


class Located:
    """Where sorted delta rows are among a base's rows, each distinct array located once.

    Calling it with sorted rows gives each one's position among the base's rows (-1:
    absent). The families of a task whose base rows are the same share one: their
    deltas often hold the same rows in the same row groups (a load of whole records),
    and an array equal to one already located is answered from there. Safe to call from
    several threads (two may locate the same array).
    """

    def __init__(self, rows: pa.Array) -> None:
        self._haystack = sorted_parts(rows)
        self._seen: dict[tuple[int, bytes, bytes], list[tuple[pa.Array, np.ndarray]]] = {}

    def __call__(self, needles: pa.Array) -> np.ndarray:
        """Each of ``needles``' (ascending) position among the base's rows (-1: absent)."""
        needles = needles.cast(pa.binary())
        n = len(needles)
        if not n:
            return np.zeros(0, dtype=np.int64)
        at = (n, needles[0].as_py(), needles[n - 1].as_py())
        for array, positions in self._seen.get(at, []):
            if array.equals(needles):
                return positions
        out = locate_in(needles, self._haystack)
        self._seen.setdefault(at, []).append((needles, out))
        return out


class Picked(Mapping[bytes, pa.Array]):
    """Per qualifier, its newest Puts' values: positions among all the deltas' values.

    ``picks[q][i]`` is the position in ``stored`` (every delta Put's value, binary) of
    ``raw[q][i]``. A qualifier's values are taken (copied) only when asked for: a patch
    that reads them where they are
    (:func:`~cellstore.reader.columnar.gather.gather_numbers`, ``same_bytes``) takes
    ``stored`` and maps its positions through ``picks``. Safe to read from several
    threads (two may take the same values).
    """

    def __init__(self, stored: pa.Array, picks: dict[bytes, np.ndarray]) -> None:
        self.stored = stored
        self.picks = picks
        self._taken: dict[bytes, pa.Array] = {}

    def __getitem__(self, q: bytes) -> pa.Array:
        got = self._taken.get(q)
        if got is None:
            at = self.picks[q]
            got = self.stored.take(pa.array(at)) if len(at) else self.stored[:0]
            self._taken[q] = got
        return got

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.picks)

    def __len__(self) -> int:
        return len(self.picks)


@dataclass(frozen=True)
class Decided:
    """How a family's pivoted deltas change its base rows (:func:`decide`).

    Attributes:
        where: The touched rows' positions among the base's rows, ascending.
        present: Per base row, whether the family shows it (a visible value the read
            covers).
        hidden: Per touched row, whether a DeleteFamily hides the base's record.
        shown: Per qualifier of the deltas' Puts, per touched row: whether the column
            shows a value, whether that value is the delta's, and the position of the
            row's newest Put among the qualifier's ``raw`` values (-1: none).
        raw: Per qualifier, the newest Puts' values (binary), touched rows ascending
            (each taken when first asked for: :class:`Picked`).
        extra: Per qualifier, the column deltas' values (typed) and codecs: a row's
            Put position counts on past ``raw`` through these, in order.
    """

    where: np.ndarray
    present: np.ndarray
    hidden: np.ndarray
    shown: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]]
    raw: Picked
    extra: dict[bytes, list[tuple[pa.Array, Codec]]] = dataclasses.field(default_factory=dict)


def decide(
    present: np.ndarray | None,
    rows: pa.Array,
    pivot: Pivot,
    *,
    oldest: int | None,
    codecs: dict[bytes, Codec] | None = None,
    located: Located | None = None,
) -> Decided | None:
    """What the deltas ``pivot`` do to a family's base rows ``rows`` (module patch's rules).

    Args:
        present: Which base rows the family shows (None: all).
        rows: The base's rows, ascending (binary).
        pivot: The deltas, every cell newer than the base's.
        oldest: The oldest live timestamp under the family's TTL (None: no TTL).
        codecs: The base's codec of each column it holds (a column delta's values are
            taken only as typed alike).
        located: Where delta rows are among ``rows`` (shared by the families of one
            task whose base rows are the same; default: made here).

    Returns:
        The decisions, or None when a delta row is not among the base's rows, or a
        column delta types a column unlike the base.
    """
    typed = dict(codecs or {})
    for rec in pivot.records:
        for q, (_, c) in rec.values.items():
            if typed.setdefault(q, c) is not c:
                return None  # (a changed codec: the general merge decides the type)
    where_of = located if located is not None else Located(rows)
    found = [where_of(f.rows) for f in pivot.files]
    placed = [where_of(rec.rows) for rec in pivot.records]
    if any((p < 0).any() for p in placed):
        return None
    where = _touched([*found, *placed])
    n_t, n_q = len(where), len(pivot.qualifiers)
    mark = pool.full(n_t, _NONE, np.int64)
    # per (touched row, column): a row's cells are close together in a file
    best = pool.full((n_t, n_q), -1, np.int64)
    best_ts = pool.empty((n_t, n_q), np.int64)  # (read where ``best`` holds a Put)
    best_seq = pool.empty((n_t, n_q), np.int64)
    out = (mark, best, best_ts, best_seq)
    for f, p in zip(pivot.files, found, strict=True):
        touched = np.where(p >= 0, np.searchsorted(where, p), -1)
        marked = f.marker is not None
        cells = (f.ts, f.marker if f.marker is not None else _NO_MARKS, marked, f.seq, f.first)
        rows_of = (f.row_index, f.row_bounds, f.row_shift, touched)
        quals = (f.qual_index, f.qual_bounds, f.qual_start, f.qmap)
        if not newest_of_file(rows_of, quals, cells, out):
            return None  # (a cell's row is not the base's)
    src = pool.empty((n_q, n_t), np.int64)
    order = pool.empty(n_q * n_t, np.int64)
    bounds = np.empty(n_q + 1, dtype=np.int64)
    winners(best, src, order, bounds)
    # each column's newest Puts, touched rows ascending, one column after another
    extra = _with_records(pivot, where, placed, (src, best_ts, best_seq), bounds)
    shows = pool.empty(len(rows), np.bool_)
    shows[:] = True if present is None else present
    visible = pool.empty((n_q, n_t), np.bool_)
    taking = pool.empty((n_q, n_t), np.bool_)
    live = _NONE if oldest is None else oldest
    visibility(src, best_ts, mark, live, where, shows, visible, taking)
    shown = {}
    picks = {}
    for j, q in enumerate(pivot.qualifiers):
        shown[q] = (visible[j], taking[j], src[j])
        picks[q] = order[int(bounds[j]) : int(bounds[j + 1])]
    return Decided(where, shows, mark > _NONE, shown, Picked(pivot.values, picks), extra)


def _touched(found: list[np.ndarray]) -> np.ndarray:
    """The base positions the delta rows were found at (-1: not found), ascending, once.

    (Also rows of the files' dictionaries no cell uses: touched, they change nothing.)
    """
    every = np.concatenate([p[p >= 0] for p in found] + [_EMPTY])
    every.sort()
    if len(every) < 2:
        return every
    step = np.empty(len(every), dtype=np.bool_)
    step[0] = True
    np.not_equal(every[1:], every[:-1], out=step[1:])
    return every if step.all() else every[step]


def _with_records(
    pivot: Pivot,
    where: np.ndarray,
    placed: list[np.ndarray],
    best: tuple[np.ndarray, np.ndarray, np.ndarray],
    bounds: np.ndarray,
) -> dict[bytes, list[tuple[pa.Array, Codec]]]:
    """The column deltas' Puts folded into the cells' winners (``best``, in place).

    ``best``: per (column, touched row) the winner's position (:func:`winners`); per
    (touched row, column) its timestamp and sequence id. A record's value wins over the
    cells' newest Put by (timestamp, sequence id), R3.3; its position counts on past the
    column's cell Puts through the column deltas' values, in order.

    Returns:
        Per column, the column deltas' values (typed) and codecs (``Decided.extra``).
    """
    extra: dict[bytes, list[tuple[pa.Array, Codec]]] = {}
    if not pivot.records:
        return extra
    src, best_ts, best_seq = best
    none = src.T < 0
    best_ts[none] = _NONE  # (no cell Put: older than any)
    best_seq[none] = _NONE
    at_records = [np.searchsorted(where, p) for p in placed]
    for j, q in enumerate(pivot.qualifiers):
        offset = int(bounds[j + 1] - bounds[j])  # (a column delta's values follow the cells')
        for rec, at_rec in zip(pivot.records, at_records, strict=True):
            if q not in rec.values:
                continue
            values, codec = rec.values[q]
            mask = valid_mask(values)
            fold_record(at_rec, mask, rec.stamps[q], rec.seq, offset, src[j], best_ts, best_seq, j)
            extra.setdefault(q, []).append((values, codec))
            offset += len(values)
    return extra

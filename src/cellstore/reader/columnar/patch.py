"""Deltas newer than the base, patched into its columns (the wide read's fast case).

A family's column files (the base) and its later files (deltas: cell files, and column
deltas, the later writes' column files under ``layout="columns"``) need no general merge
when every delta cell is newer than every base cell (each delta file's smallest
timestamp above the base files' largest, by the manifest's entries) and the cell deltas
hold only Puts and DeleteFamily markers (docs/format.md 14.4); a column delta holds only
Puts, typed (its records, :class:`Record`). Then, for a latest-value wide
read with no time range (HBase's rules, docs/hbase-semantics.md):

- a delta Put of a (row, qualifier) hides the base's value (R3.3: newer timestamp), so
  the newest delta Put is the column's value when it is visible;
- a DeleteFamily hides every Put of its row with a timestamp at most its own, whatever
  the sequence ids (R5.1, R5.8): it is newer than every base cell, so it hides the base's
  whole row, and a delta Put stays visible exactly when its timestamp is above the row's
  newest DeleteFamily;
- a Put older than the family's TTL is expired (R8.1), and so is everything older.

So the deltas are read with only the cell columns they need (:func:`delta_columns`) and
gathered once (:func:`pivot_cells`); the touched rows are found in the base's rows by
binary search (:class:`Located`), each touched (row, qualifier) keeps its newest Put by
(timestamp, sequence id), of a cell file or a column delta, and each touched row its
newest DeleteFamily (:func:`decide`), and each qualifier's newest cell Puts are typed
once with the base column's codec (a column delta typing a column unlike the base
declines). Every column is then one compiled gather over the
kept rows (:func:`apply`): the base's value, the delta's, or null. Anything else (other
markers, a delta row the base does not hold, older deltas) is left to the general merge
(:mod:`cellstore.reader.rowmerge`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CellType
from cellstore.core.codecs import Codec, arrow_type, binary_parts, one_array, valid_mask
from cellstore.core.metadata import FileEntry
from cellstore.reader.columnar.gather import (
    NULL,
    fixed_width,
    gather2,
    gather_numbers,
    same_bytes,
)
from cellstore.reader.columnar.join import _Part
from cellstore.reader.columnar.types import Column
from cellstore.reader.rowmerge import _as_bytes, locate_in, sorted_parts, typed_like

__all__ = [
    "Decided",
    "Pivot",
    "apply",
    "cut_shared",
    "decide",
    "delta_columns",
    "Record",
    "newer_deltas",
    "pivot_cells",
]

_PUT: Final = int(CellType.PUT)
_DELETE_FAMILY: Final = int(CellType.DELETE_FAMILY)
_NONE: Final = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Record:
    """A column delta's records in the read's range (one file, docs/format.md 14.4).

    Attributes:
        rows: The records' rows (binary, ascending, unique).
        values: Per qualifier the read covers, its values (typed, null: no visible
            cell) and codec.
        stamps: Per qualifier, each value's timestamp (where the value is not null).
        seq: The file's sequence id.
    """

    rows: pa.Array
    values: dict[bytes, tuple[pa.Array, Codec]]
    stamps: dict[bytes, np.ndarray]
    seq: int


@dataclass(frozen=True)
class Pivot:
    """A family's delta cells (Puts and DeleteFamily markers), one entry per cell.

    The cells are those of every delta file, file after file; the rows are not yet
    placed among the base's (:func:`decide` does that).

    Attributes:
        rows: Per delta file (in cell order): its distinct rows (binary, ascending; may
            hold rows no cell uses) and each cell's index among them (:func:`_file_rows`).
        marker: Per cell, whether it is a DeleteFamily.
        ts: Per cell, its timestamp.
        seq: Per cell, its file's sequence id.
        qi: Per cell that is a Put of a covered qualifier, the qualifier's index in
            ``qualifiers`` (else -1).
        qualifiers: The covered qualifiers the deltas' Puts hold, ascending.
        values: The Puts' values (binary; of files that hold Puts, in cell order).
        vpos: Per cell, its value's position in ``values`` (-1: a file of markers only).
        records: The column deltas' records (their values are Puts too).
    """

    rows: list[tuple[pa.Array, np.ndarray]]
    marker: np.ndarray
    ts: np.ndarray
    seq: np.ndarray
    qi: np.ndarray
    qualifiers: list[bytes]
    values: pa.Array
    vpos: np.ndarray
    records: tuple[Record, ...] = ()


def newer_deltas(bases: Sequence[FileEntry], deltas: Sequence[FileEntry]) -> bool:
    """Whether every cell of ``deltas`` (cell files, column deltas) is newer than the base's.

    By the manifest's entries: each delta's smallest timestamp is above the largest of
    every base file (so no timestamp tie needs a sequence id, R3.3).
    """
    if not bases or not deltas or any(d.layout not in ("cells", "columns") for d in deltas):
        return False
    return min(d.min_ts for d in deltas) > max(b.max_ts for b in bases)


def delta_columns(entry: FileEntry) -> list[str]:
    """The cell columns :func:`pivot_cells` needs of a delta file, by its entry.

    A file of Puts only (no delete markers, by the manifest) needs no ``type``; a file
    of markers only needs no ``qualifier`` nor ``value`` (:func:`pivot_cells` takes
    only DeleteFamily markers, which cover every qualifier).
    """
    if entry.delete_markers == 0:
        return ["row", "qualifier", "ts", "value"]
    if entry.delete_markers == entry.cells:
        return ["row", "ts", "type"]
    return ["row", "qualifier", "ts", "type", "value"]


def pivot_cells(
    runs: Sequence[pa.Table],
    seqs: Sequence[int],
    *,
    qualifiers: frozenset[bytes] | None,
    records: Sequence[Record] = (),
) -> Pivot | None:
    """Delta cells (one sorted table per file, sequence ids ``seqs``) gathered for a patch.

    Args:
        runs: Each delta file's cells in the read's range, in cell order: the columns
            :func:`delta_columns` names (without ``type``: Puts only; without
            ``qualifier`` and ``value``: markers only).
        seqs: Each run's sequence id (of equal timestamps, the higher wins: R3.3).
        qualifiers: The qualifiers the read covers (None: all); Puts of others are
            left out (a DeleteFamily covers every qualifier).
        records: The column deltas' records.

    Returns:
        The pivot, or None when a cell is neither a Put nor a DeleteFamily.
    """
    kept = [(r, s) for r, s in zip(runs, seqs, strict=True) if r.num_rows]
    markers: list[np.ndarray] = []
    for r, _ in kept:
        if "type" in r.column_names:
            t = r.column("type").to_numpy()
            if ((t != _PUT) & (t != _DELETE_FAMILY)).any():
                return None
            markers.append(t == _DELETE_FAMILY)
        else:
            markers.append(np.zeros(r.num_rows, dtype=bool))
    pairs = zip(kept, markers, strict=True)
    if any("qualifier" not in r.column_names and not m.all() for (r, _), m in pairs):
        return None  # (a Put without its qualifier: never so by delta_columns)
    rows = [_file_rows(_stretches(r.column("row"))) for r, _ in kept]
    quals = [
        _stretches(r.column("qualifier"), dense=True) if "qualifier" in r.column_names else None
        for r, _ in kept
    ]
    used: set[bytes] = set()
    for q, m in zip(quals, markers, strict=True):
        start = 0
        for d, i in q or []:
            puts = i[~m[start : start + len(i)]]
            start += len(i)
            if len(puts):
                hit = np.bincount(puts, minlength=len(d)) > 0
                used.update(d.filter(pa.array(hit)).to_pylist())
    used.update(q for r in records for q in r.values)
    names = sorted(q for q in used if qualifiers is None or q in qualifiers)
    at = {q: j for j, q in enumerate(names)}
    qis, vpos, values = [], [], []
    n_values = 0
    for (r, _), q, m in zip(kept, quals, markers, strict=True):
        if q is None:
            qis.append(np.full(r.num_rows, -1, dtype=np.int64))
        else:
            parts = []
            for d, i in q:
                table = np.array([at.get(v, -1) for v in d.to_pylist()] or [-1], dtype=np.int64)
                parts.append(table[i])
            qi = np.concatenate(parts)
            qi[m] = -1
            qis.append(qi)
        if "value" in r.column_names:
            values.extend(r.column("value").cast(pa.binary()).chunks)
            vpos.append(np.arange(n_values, n_values + r.num_rows, dtype=np.int64))
            n_values += r.num_rows
        else:
            vpos.append(np.full(r.num_rows, -1, dtype=np.int64))
    empty = np.zeros(0, dtype=np.int64)
    return Pivot(
        rows=rows,
        marker=np.concatenate(markers) if markers else np.zeros(0, dtype=bool),
        ts=np.concatenate([r.column("ts").to_numpy().astype(np.int64) for r, _ in kept] or [empty]),
        seq=np.concatenate([np.full(r.num_rows, s, dtype=np.int64) for r, s in kept] or [empty]),
        qi=np.concatenate(qis) if qis else empty,
        qualifiers=names,
        values=pa.chunked_array(values, pa.binary()).combine_chunks()
        if values
        else pa.array([], pa.binary()),
        vpos=np.concatenate(vpos) if vpos else empty,
        records=tuple(records),
    )


def _file_rows(stretches: list[tuple[pa.Array, np.ndarray]]) -> tuple[pa.Array, np.ndarray]:
    """A sorted file's row stretches (:func:`_stretches`) as one: distinct rows, indices.

    The stretches' rows follow each other (row groups in row order); a row on both sides
    of a boundary is one. (Rows not in order only make rows absent from the base: the
    patch then declines.)
    """
    if len(stretches) == 1:
        return stretches[0]
    if not stretches:
        return pa.array([], pa.binary()), np.zeros(0, dtype=np.int64)
    kept, indices = [], []
    total = 0
    last: bytes | None = None
    for d, i in stretches:
        same = int(last is not None and len(d) > 0 and d[0].as_py() == last)
        indices.append(i + (total - same))
        kept.append(d.slice(same))
        total += len(d) - same
        if len(d):
            last = d[len(d) - 1].as_py()
    return pa.concat_arrays(kept), np.concatenate(indices)


def _stretches(col: pa.ChunkedArray, *, dense: bool = False) -> list[tuple[pa.Array, np.ndarray]]:
    """A column's chunks as (distinct values, each cell's index among them), binary.

    A dictionary-encoded chunk (a row group's) gives its dictionary: of a sorted column,
    its values in the order they first appear, so ascending. Another chunk gives its own
    values (each cell its own index) or, with ``dense``, is dictionary-encoded.
    """
    out = []
    for c in col.chunks:
        if not len(c):
            continue
        if not pa.types.is_dictionary(c.type) and dense:
            c = c.cast(pa.binary()).dictionary_encode()
        if pa.types.is_dictionary(c.type):
            index = c.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            out.append((c.dictionary.cast(pa.binary()), index))
        else:
            out.append((c.cast(pa.binary()), np.arange(len(c), dtype=np.int64)))
    return out


@numba.njit(cache=True, nogil=True)
def _newest(cells: tuple[np.ndarray, ...], out: tuple[np.ndarray, ...]) -> None:
    ridx, qi, ts, seq, marker = cells
    mark, best, best_ts, best_seq = out
    # per touched row its newest DeleteFamily; per (qualifier, touched row) the newest Put
    # by (ts, seq), R3.3 (of equal ones the first in cell order: a file's own order)
    for c in range(len(ridx)):
        r = ridx[c]
        t = ts[c]
        if marker[c]:
            if t > mark[r]:
                mark[r] = t
            continue
        j = qi[c]
        if j < 0:
            continue
        if best[j, r] < 0 or t > best_ts[j, r] or (t == best_ts[j, r] and seq[c] > best_seq[j, r]):
            best[j, r] = c
            best_ts[j, r] = t
            best_seq[j, r] = seq[c]


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
        raw: Per qualifier, the newest Puts' values (binary), touched rows ascending.
        extra: Per qualifier, the column deltas' values (typed) and codecs: a row's
            Put position counts on past ``raw`` through these, in order.
    """

    where: np.ndarray
    present: np.ndarray
    hidden: np.ndarray
    shown: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]]
    raw: dict[bytes, pa.Array]
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
    """What the deltas ``pivot`` do to a family's base rows ``rows`` (see the module).

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
    found = [(where_of(d), i) for d, i in pivot.rows]
    placed = [where_of(rec.rows) for rec in pivot.records]
    if any((p[i] < 0).any() for p, i in found) or any((p < 0).any() for p in placed):
        return None
    # the touched rows (and maybe a few rows of the stretches' dictionaries no cell uses)
    every = np.concatenate([p[p >= 0] for p, _ in found] + placed + [np.zeros(0, np.int64)])
    every = np.sort(every)
    step = np.ones(len(every), dtype=bool)
    step[1:] = every[1:] != every[:-1]
    where = every[step]
    empty = np.zeros(0, dtype=np.int64)
    ridx = np.concatenate([np.searchsorted(where, p)[i] for p, i in found] or [empty])
    n_t, n_q = len(where), len(pivot.qualifiers)
    mark = np.full(n_t, _NONE, dtype=np.int64)
    best = np.full((n_q, n_t), -1, dtype=np.int64)
    best_ts = np.full((n_q, n_t), _NONE, dtype=np.int64)
    best_seq = np.full((n_q, n_t), _NONE, dtype=np.int64)
    _newest((ridx, pivot.qi, pivot.ts, pivot.seq, pivot.marker), (mark, best, best_ts, best_seq))
    hidden = mark > _NONE
    held = best >= 0
    # each qualifier's newest Puts, touched rows ascending, one qualifier after another
    raw_all = pivot.values.take(pa.array(pivot.vpos[best[held]]))
    bounds = np.concatenate([[0], np.cumsum(held.sum(axis=1))])
    rank = np.cumsum(held, axis=1) - 1
    at_records = [np.searchsorted(where, p) for p in placed]
    out = np.ones(len(rows), dtype=bool) if present is None else present.copy()
    shows = np.zeros(n_t, dtype=bool)
    shown: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    raw: dict[bytes, pa.Array] = {}
    extra: dict[bytes, list[tuple[pa.Array, Codec]]] = {}
    for j, q in enumerate(pivot.qualifiers):
        lo, hi = int(bounds[j]), int(bounds[j + 1])
        src = np.where(held[j], rank[j], -1)
        put_ts = best_ts[j]
        if pivot.records:
            put_seq = best_seq[j]
            offset = hi - lo  # (a column delta's values follow the cells' in ``new``)
            for rec, at_rec in zip(pivot.records, at_records, strict=True):
                if q not in rec.values:
                    continue
                values, codec = rec.values[q]
                stamp = rec.stamps[q]
                idx = np.flatnonzero(valid_mask(values))
                t_at, r_ts = at_rec[idx], stamp[idx]
                # the newest by (timestamp, sequence id), R3.3
                wins = (r_ts > put_ts[t_at]) | ((r_ts == put_ts[t_at]) & (rec.seq > put_seq[t_at]))
                t_at, idx = t_at[wins], idx[wins]
                src[t_at] = offset + idx
                put_ts[t_at] = r_ts[wins]
                put_seq[t_at] = rec.seq
                extra.setdefault(q, []).append((values, codec))
                offset += len(values)
        has = src >= 0
        taking = has & (put_ts > mark)
        if oldest is not None:
            taking &= put_ts >= oldest
        shows |= taking
        # a newer Put that is not shown hides the base's value too (older still)
        shown[q] = (taking | ~(hidden | has), taking, src)
        raw[q] = raw_all.slice(lo, hi - lo)
    out[where] = shows | (~hidden & out[where])
    return Decided(where, out, hidden, shown, raw, extra)


def apply(
    part: _Part,
    rows: pa.Array,
    keep: np.ndarray | None,
    patch: tuple[Pivot, Decided] | None,
    *,
    family: str,
    wanted: set[Column] | None,
    cuts: Cuts | None = None,
) -> _Part:
    """``part`` (one family's base, rows ``rows``) with its deltas patched in.

    Args:
        part: The family's base part.
        rows: The part's rows (encoded), already cut to ``keep``.
        keep: Which base rows the result keeps (None: all).
        patch: The family's pivoted deltas and what they decide (None: none).
        family: The family's name.
        wanted: The wanted columns (None: all).
        cuts: Columns already cut to ``keep`` in this task (shared by its families:
            a key field and the columns aliasing it hold the same array).

    Returns:
        The part with rows ``rows``: every changed column gathered once (its kept rows,
        the touched values replaced or nulled), the others cut to the kept rows.
    """
    n = len(part.present) if part.present is not None else part.size
    kept = None if keep is None else np.flatnonzero(keep)
    present = np.ones(n, dtype=bool) if part.present is None else part.present
    columns: dict[Column, tuple[pa.Array, Codec]] = {}
    if patch is not None:
        pivot, decided = patch
        present = decided.present
        mine = {q for f, q in part.columns if f == family}
        mine |= {q for q in pivot.qualifiers if wanted is None or (family, q) in wanted}
        where = decided.where
        if kept is None:
            at, index = where, np.arange(n, dtype=np.int64)
        else:
            at = np.searchsorted(kept, where)  # touched rows in the result (-1: dropped)
            dropped = at >= len(kept)
            dropped[~dropped] |= kept[at[~dropped]] != where[~dropped]
            at[dropped] = -1
            index = kept
        for q in sorted(mine):
            column = _patched_column(part.columns.get((family, q)), n, at, index, decided, q)
            if column is not None:
                columns[(family, q)] = column
    for col, (arr, codec) in part.columns.items():
        if col not in columns:
            columns[col] = (arr if kept is None else _kept(arr, kept, keep, cuts), codec)
    keys = part.keys
    digest = part.digest
    if kept is not None and keep is not None:
        present = present[kept]
        if keys is not None:
            keys = pa.table(
                [_kept(one_array(c), kept, keep, cuts) for c in keys.columns],
                names=keys.column_names,
            )
        if digest is not None:  # the same rows as another family's kept alike
            digest = f"{digest}/{hashlib.blake2b(np.packbits(keep).tobytes()).hexdigest()}"
    return dataclasses.replace(
        part, rows=rows, columns=columns, present=present, keys=keys, digest=digest
    )


def _patched_column(
    held: tuple[pa.Array, Codec] | None,
    n: int,
    at: np.ndarray,
    index: np.ndarray,
    decided: Decided,
    q: bytes,
) -> tuple[pa.Array, Codec] | None:
    """Column ``q`` over the kept base rows with the deltas' values (None: unchanged).

    ``at``: each touched row's position in the result (-1: dropped); ``index``: each
    result row's position in the base.
    """
    new = None
    if q in decided.shown:
        visible, taking, src = decided.shown[q]
        extra = decided.extra.get(q, [])
        if held is not None and not extra and _rewrites(held, decided, q, at):
            return None  # (the caller cuts it to the kept rows)
        if held is not None and not extra:
            numbers = _patched_numbers(held, decided, q, at, index)
            if numbers is not None:
                return numbers
        if held is None and extra:
            held = (pa.nulls(n, extra[0][0].type), extra[0][1])
        raw = decided.raw[q]
        fast = None if held is None else _typed_numbers(raw, held[1], held[0].type)
        if fast is not None and held is not None:
            base_arr, codec = held
            new = fast
        elif len(raw) or held is None:
            base_arr, codec, new = typed_like(held, n, raw)
            new = new.cast(base_arr.type)
        else:  # (no cell Put of the column: nothing to type)
            base_arr, codec = held
            new = base_arr[:0]
        if extra:
            more = [a if c is codec else _as_bytes(a, c) for a, c in extra]
            new = pa.concat_arrays([new, *(a.cast(base_arr.type) for a in more)])
        blank = ~visible
    elif held is not None and decided.hidden.any():
        base_arr, codec = held
        taking = src = np.zeros(len(at), dtype=bool)
        blank = decided.hidden
    else:
        return None
    mine = at >= 0
    took = taking & mine
    gone = blank & mine
    if (
        new is not None
        and held is not None
        and base_arr is held[0]
        and not gone.any()
        and _unchanged(base_arr, decided.where[took], new, src[took])
    ):
        return None  # (the caller cuts it to the kept rows)
    index = index.copy()
    index[at[took]] = -2 - src[took]
    index[at[gone]] = NULL
    return gather2(base_arr, new, index), codec


def _patched_numbers(
    held: tuple[pa.Array, Codec],
    decided: Decided,
    q: bytes,
    at: np.ndarray,
    index: np.ndarray,
) -> tuple[pa.Array, Codec] | None:
    """Number column ``q`` patched in one compiled pass (None: not such a column).

    A column of a number codec, of that codec's Arrow type, whose deltas' values all
    have its width and (floats) no NaN: the values' big-endian bytes are the numbers
    :func:`_typed_numbers` would type, so the column is what the typed path gathers
    (:func:`~cellstore.reader.columnar.gather.gather_numbers`), with no typed copy.
    """
    base, codec = held
    kind = _NUMBERS.get(codec)
    if kind is None or base.type != arrow_type(codec) or not fixed_width(base.type):
        return None
    visible, taking, src = decided.shown[q]
    mine = at >= 0
    took = taking & mine
    gone = ~visible & mine
    out = gather_numbers(
        base,
        index,
        at[took],
        src[took],
        at[gone],
        decided.raw[q],
        floats=kind[1] == "f",
    )
    return None if out is None else (out, codec)


#: Numeric codecs typed by :func:`_typed_numbers`: big-endian numpy kind and width.
_NUMBERS: Final = {
    Codec.LONG: ">i8",
    Codec.INT: ">i4",
    Codec.SHORT: ">i2",
    Codec.DOUBLE: ">f8",
    Codec.FLOAT: ">f4",
}


def _typed_numbers(raw: pa.Array, codec: Codec, t: pa.DataType) -> pa.Array | None:
    """Delta values' bytes as a number column of type ``t`` when that is plain.

    Every value present and of the codec's width, and (floats) no NaN, whose payload a
    decoded value would not keep: then each value gives its bytes back, and the values
    are one big-endian buffer. None otherwise (:func:`typed_like` decides).
    """
    kind = _NUMBERS.get(codec)
    if kind is None or raw.null_count or not len(raw):
        return None
    offsets, data = binary_parts(raw)
    width = int(kind[-1])
    if len(data) != width * len(raw) or (np.diff(offsets) != width).any():
        return None
    values = np.frombuffer(data, dtype=kind).astype(kind[1:])
    if kind[1] == "f" and np.isnan(values).any():
        return None
    out = pa.array(values)
    return out if out.type == t else None


def _rewrites(held: tuple[pa.Array, Codec], decided: Decided, q: bytes, at: np.ndarray) -> bool:
    """Whether text column ``q``'s kept touched rows show the base's own values again.

    So when no kept touched row is hidden and every delta value a kept row shows has the
    bytes of the base's value there (valid): the column is then the base's, cut. (A load
    of whole records that changes one column rewrites the others with the same values.)
    Of a text codec only, whose values are their bytes: compared as stored, before any
    typing (:func:`~cellstore.reader.columnar.gather.same_bytes`). A number column
    answers False: its patch costs what its cut does, and the check more than it saves.
    """
    base, codec = held
    t = base.type
    raw = decided.raw[q]
    if (
        codec not in (Codec.STRING, Codec.BYTES)
        or not (pa.types.is_string(t) or pa.types.is_binary(t))
        or raw.type != pa.binary()
        or raw.null_count
    ):
        return False
    visible, taking, src = decided.shown[q]
    mine = at >= 0
    if (mine & ~visible).any():
        return False
    took = taking & mine
    return same_bytes(base, decided.where[took], raw, src[took])


def _unchanged(base: pa.Array, at: np.ndarray, new: pa.Array, src: np.ndarray) -> bool:
    """Whether a text or binary column's values at ``at`` equal ``new``'s at ``src``.

    (A rewrite of the same values is common; a cut of such a column costs several times
    less than the gather that patches it.) Other types answer False: their gather costs
    what their cut does.
    """
    t = base.type
    if not (pa.types.is_binary(t) or pa.types.is_string(t)) or new.type != t:
        return False
    old, got = base.take(pa.array(at)), new.take(pa.array(src))
    nulls = old.null_count or got.null_count
    if nulls and not pc.all(pc.equal(old.is_valid(), got.is_valid())).as_py():
        return False
    return bool(pc.all(pc.equal(old, got)).as_py() in (True, None))


#: Arrays cut to a task's kept rows, by their data (:func:`_kept`).
Cuts = dict[tuple[int, int, int, int, str], pa.Array]


def cut_shared(arrays: Sequence[pa.Array], keep: np.ndarray, cuts: Cuts) -> None:
    """Cut ``arrays`` (a task's key fields) to ``keep`` into ``cuts`` before the patches.

    The families' patches run at once and share ``cuts``: a key field and a column
    aliasing it (another family's, docs/format.md 14.2) hold the same array, and one cut
    made first serves both (two patches missing it at once would each cut it).
    """
    kept = np.flatnonzero(keep)
    for arr in arrays:
        _kept(arr, kept, keep, cuts)


def _kept(
    arr: pa.Array, kept: np.ndarray, keep: np.ndarray | None, cuts: Cuts | None = None
) -> pa.Array:
    """``arr``'s values at ``kept`` (the positions where the mask ``keep`` is true).

    With ``cuts``, an array of the same buffers (validity and data), offset, length and
    type cut before is taken from there (one task's families share one ``keep``).
    """
    if cuts is None:
        return _cut(arr, kept, keep)
    buffers = arr.buffers()
    data = buffers[1] if len(buffers) > 1 else None
    if data is None:
        return _cut(arr, kept, keep)
    validity = 0 if buffers[0] is None else buffers[0].address
    at = (validity, data.address, arr.offset, len(arr), str(arr.type))
    if at not in cuts:
        cuts[at] = _cut(arr, kept, keep)
    return cuts[at]


def _cut(arr: pa.Array, kept: np.ndarray, keep: np.ndarray | None) -> pa.Array:
    if fixed_width(arr.type) or keep is None:
        return gather2(arr, None, kept)  # (Arrow's filter of nullable numbers is slower)
    return arr.filter(pa.array(keep))

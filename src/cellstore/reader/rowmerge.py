"""Merging cell deltas into column-file records by row, for latest-value wide reads.

A wide read wants the newest visible value of each column. Where a region-family holds
column files (one Put per row and qualifier: the newest of its write) and cell files
written later (deltas: updates and deletes), the newest visible value of a column in a
touched row is decided by a few numbers per (row, qualifier), without expanding any base
record into cells (docs/format.md 14.4):

- the candidates are the base's value and each delta's newest Put of the column; the
  newest by (timestamp, sequence id) wins (R3.3: of equal keys the newer file's survives);
- a DeleteFamily hides every Put of the row with a timestamp at most its own, a
  DeleteColumn every Put of its column likewise (R5.1, R5.5), whatever their sequence
  ids (R5.8); so the winner is visible exactly when its timestamp is above the largest
  such marker timestamp (everything else is older still), and not expired by the family's
  TTL (R8.1; expired markers hide only expired Puts, R5.11).

That holds for deltas of Puts, DeleteColumns and DeleteFamilies under a read with no time
range (a time range, a Delete or a DeleteFamilyVersion can uncover an older version the
column file does not hold: R5.3, R5.6, R7.2); :func:`merge_by_row` returns None for any
other delta, and the caller resolves those rows by the general rules. Everything here is
vectorized: loops run over columns, never over cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CELL_SCHEMA, CellType
from cellstore.core.codecs import Codec, decode_values, encode_values, stored_parts, valid_mask

__all__ = ["BaseColumns", "Merged", "decidable", "merge_by_row"]

_PUT: Final = int(CellType.PUT)
_DELETE_COLUMN: Final = int(CellType.DELETE_COLUMN)
_DELETE_FAMILY: Final = int(CellType.DELETE_FAMILY)
_NONE: Final = np.iinfo(np.int64).min
#: Codecs whose every value that decodes gives its bytes back (an integer of the exact
#: width, valid UTF-8); a boolean's non-zero byte other than 0xFF does not, nor a NaN's
#: payload.
_EXACT: Final = frozenset({Codec.LONG, Codec.INT, Codec.SHORT, Codec.STRING})
#: Codecs exact but for NaNs.
_FLOATS: Final = frozenset({Codec.DOUBLE, Codec.FLOAT})
#: Most (touched row, qualifier) pairs held in dense per-pair arrays (more: the caller's
#: general path).
MAX_PAIRS: Final = 32 << 20


@dataclass(frozen=True)
class BaseColumns:
    """A family's column-file records in a task's range, as the merge takes them.

    Attributes:
        rows: Row keys, ascending, unique.
        seq: Each row's sequence id (its file's).
        values: Per qualifier read, its values (TTL-expired ones already null) and codec.
        stamps: Per qualifier, each value's timestamp (meaningless where the value is null).
        present: Whether each row has a visible value among the qualifiers read.
    """

    rows: pa.Array
    seq: np.ndarray
    values: dict[bytes, tuple[pa.Array, Codec]]
    stamps: dict[bytes, np.ndarray]
    present: np.ndarray


@dataclass(frozen=True)
class Merged:
    """The merged family: rows ascending, values per qualifier, rows in the result.

    ``kept``: with ``compact``, which rows (of the base's, with any rows the deltas
    added) the result keeps; the other attributes then hold those rows only.
    """

    rows: pa.Array
    values: dict[bytes, tuple[pa.Array, Codec]]
    present: np.ndarray
    kept: np.ndarray | None = None


def merge_by_row(
    base: BaseColumns,
    runs: Sequence[pa.Table],
    seqs: Sequence[int],
    *,
    qualifiers: frozenset[bytes] | None,
    oldest: int | None,
    records: Sequence[BaseColumns] = (),
    returned: frozenset[bytes] | None = None,
    compact: bool = False,
) -> Merged | None:
    """``base`` with the delta cells ``runs`` (sequence ids ``seqs``) merged in by row.

    ``records`` are column deltas: later column files' records (Puts only, one per
    row and qualifier, typed), each a candidate for its (row, qualifier) beside the
    base's value and the cells' newest Put; the newest by (timestamp, sequence id) wins.

    Args:
        base: The column files' records.
        runs: Delta cells (``row, qualifier, ts, type, value``), one table per file.
        seqs: Each run's sequence id.
        qualifiers: The qualifiers the read covers (None: all).
        oldest: The oldest live timestamp under the family's TTL (None: no TTL).
        records: Column deltas (their ``seq`` the file's sequence id; values TTL-masked
            like the base's).
        returned: The qualifiers whose values are returned (None: all); the others
            decide only which rows are in the result.
        compact: Leave out the rows with no visible value (``kept`` says which base
            rows stay), in the same pass that patches each column.

    Returns:
        The merged family, or None when a delta holds a cell this merge does not decide
        (a Delete or DeleteFamilyVersion marker), too many pairs are touched, or a
        column delta types a column unlike the base.
    """
    cells = pa.concat_tables(
        [r.select(CELL_SCHEMA.names).cast(CELL_SCHEMA) for r in runs] or [CELL_SCHEMA.empty_table()]
    ).combine_chunks()
    seq = np.concatenate(
        [np.full(r.num_rows, s, dtype=np.int64) for r, s in zip(runs, seqs, strict=True)]
        or [np.zeros(0, dtype=np.int64)]
    )
    types = cells.column("type").to_numpy(zero_copy_only=False)
    if not decidable(types):
        return None
    row_col = cells.column("row").combine_chunks().cast(pa.binary())
    touched = pc.unique(pa.concat_arrays([row_col, *(d.rows.cast(pa.binary()) for d in records)]))
    touched = touched.take(pc.sort_indices(touched))
    ridx = np.concatenate(
        [locate_sorted(r.column("row").combine_chunks(), touched) for r in runs]
        or [np.zeros(0, dtype=np.int64)]
    )
    rec_at = [locate_sorted(d.rows, touched) for d in records]
    ts = cells.column("ts").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    n_t = len(touched)
    # the largest DeleteFamily timestamp of each touched row
    family_mark = np.full(n_t, _NONE, dtype=np.int64)
    df = types == _DELETE_FAMILY
    np.maximum.at(family_mark, ridx[df], ts[df])
    # the qualifiers: the base's and the deltas' Puts and DeleteColumns the read covers
    qual_col = cells.column("qualifier").combine_chunks().cast(pa.binary())
    seen = pc.unique(qual_col.filter(pa.array(~df))).to_pylist()
    in_records = [q for d in records for q in d.values]
    quals = sorted(
        {q for q in (*base.values, *seen, *in_records) if qualifiers is None or q in qualifiers}
    )
    for d in records:
        for q, (_, codec) in d.values.items():
            held = base.values.get(q)
            if q in quals and (held[1] if held is not None else Codec.BYTES) is not codec:
                return None
    n_q = len(quals)
    if n_t * max(n_q, 1) > MAX_PAIRS:
        return None
    qidx = pc.index_in(qual_col, value_set=pa.array(quals, pa.binary()))
    qi = qidx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    pair = ridx * n_q + qi
    column_mark = np.full(n_t * n_q, _NONE, dtype=np.int64)
    dc = (types == _DELETE_COLUMN) & (qi >= 0)
    np.maximum.at(column_mark, pair[dc], ts[dc])
    # each delta's newest Put per (row, qualifier): by ts, then sequence id (R3.3)
    puts = np.flatnonzero((types == _PUT) & (qi >= 0))
    order = puts[np.lexsort((-seq[puts], -ts[puts], pair[puts]))]
    first = np.ones(len(order), dtype=bool)
    first[1:] = pair[order[1:]] != pair[order[:-1]]
    newest = order[first]
    put_ts = np.full(n_t * n_q, _NONE, dtype=np.int64)
    put_seq = np.zeros(n_t * n_q, dtype=np.int64)
    put_src = np.full(n_t * n_q, -1, dtype=np.int64)
    put_ts[pair[newest]] = ts[newest]
    put_seq[pair[newest]] = seq[newest]
    put_src[pair[newest]] = newest
    values = cells.column("value").combine_chunks()

    where = locate_sorted(touched, base.rows)  # base position per touched row
    if (where < 0).any():
        base = _with_rows(base, touched.filter(pa.array(where < 0)))
        where = locate_sorted(touched, base.rows)
    n = len(base.rows)
    decided = []  # per qualifier: which touched rows show a value, and whose
    visible_any = np.zeros(n_t, dtype=bool)
    for j, q in enumerate(quals):
        span = slice(j, n_t * n_q, n_q) if n_q else slice(0, 0)
        d_ts, d_seq, d_src = put_ts[span], put_seq[span], put_src[span]
        held = base.values.get(q)
        if held is None:
            b_valid = np.zeros(n_t, dtype=bool)
            b_ts = np.full(n_t, _NONE, dtype=np.int64)
        else:
            b_valid = valid_mask(held[0].take(pa.array(where)))
            b_ts = np.where(b_valid, base.stamps[q][where], _NONE)
        b_seq = base.seq[where]
        from_rec = np.zeros(n_t, dtype=bool)
        extra = None
        if records:
            r_ts, r_seq, extra = _newest_record(records, rec_at, q, n_t)
            from_rec = (r_ts > d_ts) | ((r_ts == d_ts) & (r_seq > d_seq))
            d_ts, d_seq = np.where(from_rec, r_ts, d_ts), np.where(from_rec, r_seq, d_seq)
            from_rec &= r_ts > _NONE
        has_d = (d_src >= 0) | from_rec
        delta_wins = has_d & (~b_valid | (d_ts > b_ts) | ((d_ts == b_ts) & (d_seq > b_seq)))
        win_ts = np.where(delta_wins, d_ts, b_ts)
        mark = np.maximum(family_mark, column_mark[span])
        visible = (delta_wins | b_valid) & (win_ts > mark)
        if oldest is not None:
            visible &= win_ts >= oldest
        visible_any |= visible
        decided.append((q, held, visible, delta_wins, d_src, from_rec, extra))
    present = base.present.copy()
    present[where] = visible_any
    keep = _Kept.of(present) if compact and not present.all() else None
    out = {
        q: _column(held, n, where, visible, wins, values, src, keep=keep, rec=(from_rec, extra))
        for q, held, visible, wins, src, from_rec, extra in decided
        if returned is None or q in returned
    }
    if keep is None:
        return Merged(base.rows, out, present)
    kept = base.rows.take(pa.array(keep.index))
    return Merged(kept, out, np.ones(len(kept), dtype=bool), present)


def decidable(types: np.ndarray) -> bool:
    """Whether delta cells of these types are all ones :func:`merge_by_row` decides.

    Puts, DeleteColumns and DeleteFamilies.
    """
    return bool(((types == _PUT) | (types == _DELETE_COLUMN) | (types == _DELETE_FAMILY)).all())


def locate_sorted(needles: pa.Array, haystack: pa.Array) -> np.ndarray:
    """Each of ``needles``' position in ``haystack`` (-1: absent); both ascending (binary).

    ``haystack`` holds unique keys; ``needles`` may repeat. One merge pass, no hashing.
    """
    return locate_in(needles, sorted_parts(haystack))


def sorted_parts(haystack: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A haystack of :func:`locate_in` (binary keys, ascending, unique), made once."""
    return _stored_parts(haystack)


def locate_in(needles: pa.Array, haystack: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """:func:`locate_sorted` in a haystack made by :func:`sorted_parts`."""
    n_off, n_data = _stored_parts(needles)
    out = np.full(len(n_off) - 1, -1, dtype=np.int64)
    _locate(n_off, n_data, *haystack, out)
    return out


def _stored_parts(keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Binary keys' :func:`~cellstore.core.codecs.stored_parts` (no key may be null)."""
    t = keys.type
    if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        keys = keys.cast(pa.binary())
    return stored_parts(keys)


@numba.njit(cache=True, nogil=True)
def _compare(a: np.ndarray, a0: int, a1: int, b: np.ndarray, b0: int, b1: int) -> int:
    """-1, 0 or 1 as bytes ``a[a0:a1]`` sort before, equal or after ``b[b0:b1]``."""
    n = min(a1 - a0, b1 - b0)
    for k in range(n):
        x, y = a[a0 + k], b[b0 + k]
        if x != y:
            return -1 if x < y else 1
    la, lb = a1 - a0, b1 - b0
    return 0 if la == lb else (-1 if la < lb else 1)


@numba.njit(cache=True, nogil=True)
def _locate(
    n_off: np.ndarray, n_data: np.ndarray, h_off: np.ndarray, h_data: np.ndarray, out: np.ndarray
) -> None:
    # galloping: from the last place, steps doubling until past the needle, then a binary
    # search of the last step (few needles in a long haystack compare few keys)
    j = 0
    m = len(h_off) - 1
    for i in range(len(n_off) - 1):
        a0, a1 = n_off[i], n_off[i + 1]
        step = 1
        lo = j
        while j < m and _compare(h_data, h_off[j], h_off[j + 1], n_data, a0, a1) < 0:
            lo = j + 1
            j = min(j + step, m)
            step *= 2
        hi = j  # the first key at or above the needle is in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if _compare(h_data, h_off[mid], h_off[mid + 1], n_data, a0, a1) < 0:
                lo = mid + 1
            else:
                hi = mid
        j = lo
        if j < m and _compare(h_data, h_off[j], h_off[j + 1], n_data, a0, a1) == 0:
            out[i] = j


def _column(
    held: tuple[pa.Array, Codec] | None,
    n: int,
    where: np.ndarray,
    visible: np.ndarray,
    delta_wins: np.ndarray,
    values: pa.Array,
    src: np.ndarray,
    *,
    keep: _Kept | None = None,
    rec: tuple[np.ndarray, pa.Array | None] | None = None,
) -> tuple[pa.Array, Codec]:
    """One column over the base rows: the base's values, touched rows replaced.

    ``keep``: only these rows (a mask over the base's) are returned. ``rec``: which
    touched rows take their delta value from a column delta (not from ``values``),
    and those values per touched row (typed with the base's codec).

    A touched row takes the delta's value where it wins, keeps the base's where that
    wins, and is null where nothing is visible. The delta's bytes are typed with the
    base's codec when every one of them gives its bytes back; otherwise the column is
    bytes (as the general path gives it).
    """
    taking = visible & delta_wins
    from_rec, extra = rec if rec is not None else (np.zeros(len(where), dtype=bool), None)
    from_cells = taking & ~from_rec
    raw = values.take(pa.array(src[from_cells]))
    typed_codec = Codec.BYTES if held is None else held[1]
    base_arr, codec, new = typed_like(held, n, raw)
    if extra is not None and (taking & from_rec).any():
        more = extra.filter(pa.array(taking & from_rec))
        if typed_codec is not codec:
            more = _as_bytes(more, typed_codec)
        new = _interleave(new, more.cast(new.type), from_rec[taking])
    return _patched(base_arr, where, visible, taking, new.cast(base_arr.type), keep), codec


def typed_like(
    held: tuple[pa.Array, Codec] | None, n: int, raw: pa.Array
) -> tuple[pa.Array, Codec, pa.Array]:
    """Delta values' bytes ``raw`` typed like a base column ``held`` (None: none, ``n`` rows).

    The bytes are typed with the column's codec when every one of them gives its bytes
    back; otherwise the column and the values are bytes (as the general path gives them).

    Returns:
        The base column (as held, or as bytes), its codec, and the typed values.
    """
    base_arr, codec = held if held is not None else (pa.nulls(n, pa.binary()), Codec.BYTES)
    new = raw
    if codec is not Codec.BYTES:
        typed = decode_values(raw, codec, field="value", errors="null")
        exact = codec in _EXACT or (
            codec in _FLOATS and not pc.any(pc.is_nan(typed)).as_py()  # (a NaN's payload)
        )
        back = None
        if typed.null_count == 0 and not exact:
            back = encode_values(typed, codec, field="value")
        if typed.null_count == 0 and (
            exact
            or (back is not None and pc.all(pc.equal(back, raw.cast(pa.binary()))).as_py())
            in (True, None)
        ):
            new = typed
        else:
            base_arr, codec = _as_bytes(base_arr, codec), Codec.BYTES
    if codec is Codec.BYTES:
        base_arr, new = base_arr.cast(pa.binary()), new.cast(pa.binary())
    return base_arr, codec, new


def _patched(
    base: pa.Array,
    where: np.ndarray,
    visible: np.ndarray,
    taking: np.ndarray,
    new: pa.Array,
    keep: _Kept | None,
) -> pa.Array:
    """``base`` with its touched rows ``where`` patched.

    A touched row takes ``new``'s next value where ``taking``, is null where not
    ``visible``, and keeps the base's value elsewhere. Only the changed positions are
    written: a fixed-width column is patched (``replace_with_mask``), a variable-width
    one gathered once (``take``); with ``keep`` (the rows returned), one gather both
    patches and drops rows.
    """
    change = taking | ~visible
    if not change.any():
        return base if keep is None else base.take(pa.array(keep.index))
    n = len(base)
    slot = np.cumsum(taking) - 1  # each taking row's value in ``new``
    if keep is None and pa.types.is_primitive(base.type):
        mask = np.zeros(n, dtype=bool)
        mask[where[change]] = True
        repl = new.take(pa.array(slot[change], mask=~taking[change]))
        return pc.replace_with_mask(base, pa.array(mask), repl)
    if keep is None:
        index = np.arange(n, dtype=np.int64)
        at = where
    else:  # positions among the kept rows (a taking row is visible, so kept)
        index = keep.index.copy()
        at = keep.position[where]
    index[at[taking]] = n + slot[taking]
    gone = at[~visible]
    index[gone[gone >= 0]] = n + len(new)  # the null appended below
    both = pa.concat_arrays([base, new, pa.nulls(1, base.type)])
    return both.take(pa.array(index))


@dataclass(frozen=True)
class _Kept:
    """The rows a compacted merge keeps.

    ``index``: their base positions; ``position``: each base row's place among them
    (-1: dropped).
    """

    index: np.ndarray
    position: np.ndarray

    @classmethod
    def of(cls, keep: np.ndarray) -> _Kept:
        position = np.cumsum(keep) - 1
        position[~keep] = -1
        return cls(np.flatnonzero(keep), position)


def _newest_record(
    records: Sequence[BaseColumns], at: Sequence[np.ndarray], q: bytes, n_t: int
) -> tuple[np.ndarray, np.ndarray, pa.Array | None]:
    """Per touched row, the column deltas' newest value of ``q``.

    Returns its timestamp (``_NONE``: none), sequence id, and the values (null: none).
    """
    best_ts = np.full(n_t, _NONE, dtype=np.int64)
    best_seq = np.zeros(n_t, dtype=np.int64)
    best_src = np.full(n_t, -1, dtype=np.int64)
    arrays: list[pa.Array] = []
    offset = 0
    for d, pos in zip(records, at, strict=True):
        held = d.values.get(q)
        if held is None:
            continue
        arr = held[0]
        valid = valid_mask(arr)
        ts = np.where(valid, d.stamps[q], _NONE)
        seq = d.seq
        newer = valid & ((ts > best_ts[pos]) | ((ts == best_ts[pos]) & (seq > best_seq[pos])))
        best_ts[pos[newer]] = ts[newer]
        best_seq[pos[newer]] = seq[newer]
        best_src[pos[newer]] = offset + np.flatnonzero(newer)
        arrays.append(arr)
        offset += len(arr)
    if not arrays:
        return best_ts, best_seq, None
    every = pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0]
    return best_ts, best_seq, every.take(pa.array(best_src, mask=best_src < 0))


def _interleave(first: pa.Array, second: pa.Array, from_second: np.ndarray) -> pa.Array:
    """``first``'s and ``second``'s values in order: ``from_second`` says whose is next."""
    index = np.empty(len(from_second), dtype=np.int64)
    index[~from_second] = np.arange(len(first))
    index[from_second] = len(first) + np.arange(len(second))
    return pa.concat_arrays([first, second]).take(pa.array(index))


def _as_bytes(arr: pa.Array, codec: Codec) -> pa.Array:
    return encode_values(arr, codec, field="value").cast(pa.binary())


def _with_rows(base: BaseColumns, extra: pa.Array) -> BaseColumns:
    """``base`` with rows it lacks added (no values), in row order."""
    rows = pa.concat_arrays([base.rows, extra.cast(base.rows.type)])
    order = pc.sort_indices(rows)
    index = pa.array(order)
    take = order.to_numpy(zero_copy_only=False)
    values = {
        q: (pa.concat_arrays([a, pa.nulls(len(extra), a.type)]).take(index), c)
        for q, (a, c) in base.values.items()
    }
    stamps = {
        q: np.concatenate([s, np.full(len(extra), _NONE, dtype=np.int64)])[take]
        for q, s in base.stamps.items()
    }
    seq = np.concatenate([base.seq, np.zeros(len(extra), dtype=np.int64)])[take]
    present = np.concatenate([base.present, np.zeros(len(extra), dtype=bool)])[take]
    return BaseColumns(rows.take(index), seq, values, stamps, present)

"""Cell deltas newer than the base, patched into its columns (the wide read's fast case).

A family's column files (the base) and its later cell files (deltas) need no general
merge when every delta cell is newer than every base cell (each delta file's smallest
timestamp above the base files' largest, by the manifest's entries) and the deltas hold
only Puts and DeleteFamily markers (docs/format.md 14.4). Then, for a latest-value wide
read with no time range (HBase's rules, docs/hbase-semantics.md):

- a delta Put of a (row, qualifier) hides the base's value (R3.3: newer timestamp), so
  the newest delta Put is the column's value when it is visible;
- a DeleteFamily hides every Put of its row with a timestamp at most its own, whatever
  the sequence ids (R5.1, R5.8): it is newer than every base cell, so it hides the base's
  whole row, and a delta Put stays visible exactly when its timestamp is above the row's
  newest DeleteFamily;
- a Put older than the family's TTL is expired (R8.1), and so is everything older.

So the deltas are pivoted once to one newest Put per touched (row, qualifier) and one
DeleteFamily timestamp per touched row (:func:`pivot_cells`), the touched rows are found
in the base's rows by binary search, and each column gets its changed positions patched
in one pass (:func:`patch_part`). Anything else (other markers, a delta row the base does
not hold, older deltas) is left to the general merge (:mod:`cellstore.reader.rowmerge`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CellType, run_starts
from cellstore.core.codecs import Codec, valid_mask
from cellstore.core.metadata import FileEntry
from cellstore.reader.columnar.gather import NULL, fixed_width, gather2, words
from cellstore.reader.columnar.join import _Part
from cellstore.reader.columnar.types import Column
from cellstore.reader.rowmerge import locate_sorted, typed_like

__all__ = ["Decided", "Pivot", "apply", "decide", "newer_cells", "pivot_cells"]

_PUT: Final = int(CellType.PUT)
_DELETE_FAMILY: Final = int(CellType.DELETE_FAMILY)
_NONE: Final = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Pivot:
    """A family's delta cells, one entry per touched row and qualifier.

    Attributes:
        rows: The touched rows, ascending, unique (binary).
        mark: Per touched row, its newest DeleteFamily's timestamp (``_NONE``: none).
        qualifiers: The qualifiers of the deltas' Puts the read covers, ascending.
        put_ts: Per qualifier (first axis) and touched row, the newest Put's timestamp
            (``_NONE``: no Put).
        put_src: Likewise, that Put's position in ``values`` (-1: no Put).
        values: The Puts' values (binary).
    """

    rows: pa.Array
    mark: np.ndarray
    qualifiers: list[bytes]
    put_ts: np.ndarray
    put_src: np.ndarray
    values: pa.Array


def newer_cells(bases: Sequence[FileEntry], deltas: Sequence[FileEntry]) -> bool:
    """Whether ``deltas`` are cell files whose every cell is newer than every base cell.

    By the manifest's entries: each delta's smallest timestamp is above the largest of
    every base file (so no timestamp tie needs a sequence id, R3.3).
    """
    if not bases or not deltas or any(d.layout != "cells" for d in deltas):
        return False
    return min(d.min_ts for d in deltas) > max(b.max_ts for b in bases)


def pivot_cells(
    runs: Sequence[pa.Table], seqs: Sequence[int], *, qualifiers: frozenset[bytes] | None
) -> Pivot | None:
    """Delta cells (one sorted table per file, sequence ids ``seqs``) pivoted by row.

    Args:
        runs: Each delta file's cells in the read's range, in cell order.
        seqs: Each run's sequence id (of equal timestamps, the higher wins: R3.3).
        qualifiers: The qualifiers the read covers (None: all); Puts of others are
            left out (a DeleteFamily covers every qualifier).

    Returns:
        The pivot, or None when a cell is neither a Put nor a DeleteFamily.
    """
    kept = [(r, s) for r, s in zip(runs, seqs, strict=True) if r.num_rows]
    runs, seqs = [r for r, _ in kept], [s for _, s in kept]
    types = [r.column("type").to_numpy() for r in runs]
    if any(((t != _PUT) & (t != _DELETE_FAMILY)).any() for t in types):
        return None
    by_row = [_codes(r.column("row"), ordered=True) for r in runs]
    uniques = [u for u, _ in by_row]
    if len(uniques) == 1:
        touched = uniques[0]
    elif uniques:
        every = pc.unique(pa.concat_arrays(uniques))
        touched = every.take(pc.sort_indices(every))
    else:
        touched = pa.array([], pa.binary())
    empty = np.zeros(0, dtype=np.int64)
    ridx = np.concatenate(
        [(locate_sorted(u, touched)[i] if len(uniques) > 1 else i) for u, i in by_row] or [empty]
    )
    kind = np.concatenate(types) if types else np.zeros(0, dtype=np.int8)
    ts = np.concatenate([r.column("ts").to_numpy().astype(np.int64) for r in runs] or [empty])
    seq = np.concatenate([np.full(r.num_rows, s, dtype=np.int64) for r, s in kept] or [empty])
    n_t = len(touched)
    mark = np.full(n_t, _NONE, dtype=np.int64)
    df = kind == _DELETE_FAMILY
    if df.any():
        np.maximum.at(mark, ridx[df], ts[df])
    by_qual = [_codes(r.column("qualifier"), ordered=False) for r in runs]
    found = {q for u, i in by_qual for q in u.to_pylist()}
    found.discard(b"")  # (a DeleteFamily's)
    quals = sorted(q for q in found if qualifiers is None or q in qualifiers)
    n_q = len(quals)
    put_ts = np.full((n_q, n_t), _NONE, dtype=np.int64)
    put_src = np.full((n_q, n_t), -1, dtype=np.int64)
    values = (
        pa.concat_arrays([r.column("value").combine_chunks().cast(pa.binary()) for r in runs])
        if len(runs) > 1
        else runs[0].column("value").combine_chunks().cast(pa.binary())
        if runs
        else pa.array([], pa.binary())
    )
    if n_q:
        wanted = pa.array(quals, pa.binary())
        qi = np.concatenate(
            [
                pc.index_in(u, value_set=wanted).fill_null(-1).to_numpy(zero_copy_only=False)[i]
                for u, i in by_qual
            ]
        ).astype(np.int64)
        pair = qi * n_t + ridx
        chosen = np.flatnonzero(~df & (qi >= 0))
        if sum(1 for t in types if (t == _PUT).any()) > 1:
            # Puts of several files: the newest by (ts, seq) first in each pair
            chosen = chosen[np.lexsort((-seq[chosen], -ts[chosen], pair[chosen]))]
        # (within one file each pair's cells are in order, newest first)
        p = pair[chosen]
        first = np.ones(len(p), dtype=bool)
        first[1:] = p[1:] != p[:-1]
        newest = chosen[first]
        put_ts.reshape(-1)[pair[newest]] = ts[newest]
        put_src.reshape(-1)[pair[newest]] = newest
    return Pivot(touched, mark, quals, put_ts, put_src, values)


def _codes(col: pa.ChunkedArray | pa.Array, *, ordered: bool) -> tuple[pa.Array, np.ndarray]:
    """A column's distinct values (binary) and each value's index among them.

    A dictionary-encoded column gives its dictionaries (one per row group). ``ordered``:
    the column is sorted, and the distinct values come ascending: a dictionary read from
    a sorted row group lists its values in the order they first appear, so sorted, and
    the part of it a sliced column uses is one stretch of it (checked; otherwise the
    values are compared).
    """
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not ordered:
        whole = (
            pa.chunked_array(chunks, col.type).combine_chunks() if len(chunks) != 1 else chunks[0]
        )
        if not pa.types.is_dictionary(whole.type):
            whole = whole.cast(pa.binary()).dictionary_encode()
        index = whole.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        return whole.dictionary.cast(pa.binary()), index
    if chunks and all(pa.types.is_dictionary(c.type) for c in chunks):
        stretches, indices = [], []
        for c in chunks:
            index = c.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            lo, hi = (int(index[0]), int(index[-1]) + 1) if len(index) else (0, 0)
            words = c.dictionary.cast(pa.binary()).slice(lo, hi - lo)
            if (
                len(words) > 1
                and not pc.all(pc.less(words.slice(0, len(words) - 1), words.slice(1))).as_py()
            ):
                break
            stretches.append(words)
            indices.append(index - lo)
        else:
            if len(stretches) == 1:
                return stretches[0], indices[0]
            # row groups in row order: a row on both sides of a boundary is one value
            every = pa.concat_arrays(stretches) if stretches else pa.array([], pa.binary())
            starts = run_starts(every)
            flags = np.zeros(len(every), dtype=np.int64)
            flags[starts] = 1
            at = np.cumsum(flags) - 1
            first = np.cumsum([0, *(len(w) for w in stretches)])
            index = np.concatenate([at[f + i] for f, i in zip(first, indices, strict=False)])
            distinct = every.take(pa.array(starts))
            if (
                len(distinct) < 2
                or pc.all(pc.less(distinct.slice(0, len(distinct) - 1), distinct.slice(1))).as_py()
            ):
                return distinct, index
    flat = pa.chunked_array(chunks, col.type).cast(pa.binary()).combine_chunks()
    starts = run_starts(flat)
    flags = np.zeros(len(flat), dtype=np.int64)
    flags[starts] = 1
    return flat.take(pa.array(starts)), np.cumsum(flags) - 1


@dataclass(frozen=True)
class Decided:
    """How a family's pivoted deltas change its base rows (:func:`decide`).

    Attributes:
        where: Each touched row's position among the base's rows.
        present: Per base row, whether the family shows it (a visible value the read
            covers).
        hidden: Per touched row, whether a DeleteFamily hides the base's record.
        shown: Per qualifier of the deltas' Puts, per touched row: whether the column
            shows a value, and whether that value is the delta's.
    """

    where: np.ndarray
    present: np.ndarray
    hidden: np.ndarray
    shown: dict[bytes, tuple[np.ndarray, np.ndarray]]


def decide(
    present: np.ndarray | None, rows: pa.Array, pivot: Pivot, *, oldest: int | None
) -> Decided | None:
    """What the deltas ``pivot`` do to a family's base rows ``rows`` (see the module).

    Args:
        present: Which base rows the family shows (None: all).
        rows: The base's rows, ascending (binary).
        pivot: The deltas, every cell newer than the base's.
        oldest: The oldest live timestamp under the family's TTL (None: no TTL).

    Returns:
        The decisions, or None when a delta row is not among the base's rows.
    """
    where = locate_sorted(pivot.rows, rows)
    if (where < 0).any():
        return None
    hidden = pivot.mark > _NONE
    out = np.ones(len(rows), dtype=bool) if present is None else present.copy()
    shows = np.zeros(len(where), dtype=bool)
    shown: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
    for j, q in enumerate(pivot.qualifiers):
        has = pivot.put_src[j] >= 0
        taking = has & (pivot.put_ts[j] > pivot.mark)
        if oldest is not None:
            taking &= pivot.put_ts[j] >= oldest
        shows |= taking
        # a newer Put that is not shown hides the base's value too (older still)
        shown[q] = (taking | ~(hidden | has), taking)
    out[where] = shows | (~hidden & out[where])
    return Decided(where, out, hidden, shown)


def apply(
    part: _Part,
    rows: pa.Array,
    keep: np.ndarray | None,
    patch: tuple[Pivot, Decided] | None,
    *,
    family: str,
    wanted: set[Column] | None,
) -> _Part:
    """``part`` (one family's base, rows ``rows``) with its deltas patched in.

    Args:
        part: The family's base part.
        rows: The part's rows (encoded), already cut to ``keep``.
        keep: Which base rows the result keeps (None: all).
        patch: The family's pivoted deltas and what they decide (None: none).
        family: The family's name.
        wanted: The wanted columns (None: all).

    Returns:
        The part with rows ``rows``: every column gathered once, the touched values
        replaced (where the delta's differs from the base's) or nulled.
    """
    n = len(part.present) if part.present is not None else part.size
    kept = None if keep is None else np.flatnonzero(keep)
    present = np.ones(n, dtype=bool) if part.present is None else part.present
    columns: dict[Column, tuple[pa.Array, Codec]] = {}
    mine: set[bytes] = set()
    if patch is not None:
        pivot, decided = patch
        present = decided.present
        mine = {q for f, q in part.columns if f == family}
        mine |= {q for q in pivot.qualifiers if wanted is None or (family, q) in wanted}
        position = None
        if kept is not None:
            position = np.full(n, -1, dtype=np.int64)
            position[kept] = np.arange(len(kept))
        for q in sorted(mine):
            column = _patched_column(
                part.columns.get((family, q)), n, kept, position, pivot, decided, q
            )
            if column is not None:
                columns[(family, q)] = column
    mask = None if keep is None else pa.array(keep)
    for col, (arr, codec) in part.columns.items():
        if col not in columns:
            columns[col] = (arr if kept is None or mask is None else _kept(arr, kept, mask), codec)
    keys = part.keys
    digest = part.digest
    if kept is not None and keep is not None:
        present = present[kept]
        keys = None if keys is None else keys.filter(mask)
        if digest is not None:  # the same rows as another family's kept alike
            digest = f"{digest}/{hashlib.blake2b(np.packbits(keep).tobytes()).hexdigest()}"
    return dataclasses.replace(
        part, rows=rows, columns=columns, present=present, keys=keys, digest=digest
    )


def _patched_column(
    held: tuple[pa.Array, Codec] | None,
    n: int,
    kept: np.ndarray | None,
    position: np.ndarray | None,
    pivot: Pivot,
    decided: Decided,
    q: bytes,
) -> tuple[pa.Array, Codec] | None:
    """Column ``q`` over the kept base rows with the deltas' values (None: unchanged)."""
    where = decided.where
    at = where if position is None else position[where]  # touched rows in the result
    if q in decided.shown:
        visible, taking = decided.shown[q]
        src = pivot.put_src[pivot.qualifiers.index(q)]
        base_arr, codec, new = typed_like(held, n, pivot.values.take(pa.array(src[taking])))
        new = new.cast(base_arr.type)
        old = base_arr.take(pa.array(where[taking]))
        change = _differs(old, new)
        replaced = np.flatnonzero(taking)[change]
        new = new.filter(pa.array(change))
    elif held is not None and decided.hidden.any():
        base_arr, codec = held
        visible = ~decided.hidden
        replaced = np.zeros(0, dtype=np.int64)
        new = None
    else:
        return None
    blank = np.flatnonzero(~visible & (at >= 0))
    if len(blank):
        blank = blank[valid_mask(base_arr.take(pa.array(where[blank])))]
    if not len(replaced) and not len(blank):
        if held is not None and base_arr is held[0]:
            return None  # unchanged (the caller cuts it to the kept rows)
        return (base_arr if kept is None else gather2(base_arr, None, kept)), codec
    index = np.arange(n, dtype=np.int64) if kept is None else kept.copy()
    index[at[replaced]] = -2 - np.arange(len(replaced))
    index[at[blank]] = NULL
    return gather2(base_arr, new, index), codec


def _kept(arr: pa.Array, kept: np.ndarray, keep: pa.Array) -> pa.Array:
    """``arr``'s values at ``kept`` (the positions where the mask ``keep`` is true)."""
    if fixed_width(arr.type) and arr.null_count:
        return gather2(arr, None, kept)  # (Arrow's filter of nullable numbers is slower)
    return arr.filter(keep)


def _differs(old: pa.Array, new: pa.Array) -> np.ndarray:
    """Where two arrays of one type differ: in validity, or bit for bit in value."""
    a, b = valid_mask(old), valid_mask(new)
    out: np.ndarray = a != b
    both: np.ndarray = a & b
    if not both.any():
        return out
    t = old.type
    if fixed_width(t):
        return np.asarray(out | (both & (words(old) != words(new))), dtype=bool)
    if pa.types.is_binary(t) or pa.types.is_string(t):
        same = np.asarray(pc.equal(old, new).fill_null(False).to_numpy(zero_copy_only=False))
        return np.asarray(out | (both & ~same), dtype=bool)
    return np.asarray(out | both, dtype=bool)  # (any other type: replaced, equal or not)

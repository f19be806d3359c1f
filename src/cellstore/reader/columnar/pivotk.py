"""Compiled passes of the delta pivot (:mod:`cellstore.reader.columnar.pivot`).

Each pass runs over a delta file's cells straight from the Arrow dictionaries it was
read as (a row group's row and qualifier dictionaries and each cell's index in them), so
no per-cell array is built in Python. All are ``nogil``: the families of a task are
decided on several threads at once.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["fold_record", "newest_of_file", "used_entries", "visibility", "winners"]

#: No timestamp (below every real one).
_NONE = np.iinfo(np.int64).min


@numba.njit(cache=True, nogil=True)
def used_entries(
    index: np.ndarray,
    bounds: np.ndarray,
    start: np.ndarray,
    marker: np.ndarray,
    marked: bool,
    used: np.ndarray,
) -> None:
    """Flag the dictionary entries a Put uses (``used``, every chunk's entries in turn).

    Args:
        index: Each cell's index in its chunk's dictionary.
        bounds: The chunks' first cells (and the file's cell count last).
        start: Each chunk's first entry in ``used``.
        marker: Per cell, whether it is a delete marker (with ``marked``; else unused).
        marked: Whether ``marker`` holds anything (False: every cell is a Put).
        used: Set True where a Put uses the entry.
    """
    for k in range(len(bounds) - 1):
        s = start[k]
        for c in range(bounds[k], bounds[k + 1]):
            if marked and marker[c]:
                continue
            used[s + index[c]] = True


@numba.njit(cache=True, nogil=True)
def newest_of_file(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    quals: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    cells: tuple[np.ndarray, np.ndarray, bool, int, int],
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> bool:
    """One delta file's cells folded into the newest DeleteFamily and Puts per touched row.

    Args:
        rows: ``(index, bounds, shift, touched)``: each cell's index in its chunk's row
            dictionary, the chunks' first cells (then the cell count), each chunk's
            shift from its dictionary to the file's distinct rows, and each distinct
            row's touched-row number (-1: not among the base's rows).
        quals: ``(index, bounds, start, qmap)`` alike for the qualifier column: each
            chunk's first entry in ``qmap``, which gives each entry's column number
            (-1: not covered). Empty ``bounds``: no qualifier column (markers only).
        cells: ``(ts, marker, marked, seq, first)``: each cell's timestamp (one only:
            every cell's), whether it is a DeleteFamily (when ``marked``; else every
            cell is a Put), the file's sequence id, and its first Put's position among
            the family's values.
        out: ``(mark, best, best_ts, best_seq)``: per touched row its newest
            DeleteFamily's timestamp; per (touched row, column) the newest Put's value
            position (-1: none yet), timestamp and sequence id (read only where there is
            a position), by (timestamp, sequence id) (R3.3: of equal ones the first in
            file order, files in turn).

    Returns:
        False when a cell's row is not among the base's rows (the fold is then partial).
    """
    r_index, r_bounds, r_shift, touched = rows
    q_index, q_bounds, q_start, qmap = quals
    ts, marker, marked, seq, first = cells
    mark, best, best_ts, best_seq = out
    has_q = len(q_bounds) > 0
    n = len(r_index)
    each = len(ts) == n  # (else one timestamp: every cell's)
    rk = 0
    qk = 0
    r_end = r_bounds[1] if len(r_bounds) > 1 else n
    q_end = q_bounds[1] if has_q and len(q_bounds) > 1 else n
    for c in range(n):
        while c >= r_end:
            rk += 1
            r_end = r_bounds[rk + 1]
        r = touched[r_index[c] + r_shift[rk]]
        if r < 0:
            return False
        t = ts[c] if each else ts[0]
        if marked and marker[c]:
            if t > mark[r]:
                mark[r] = t
            continue
        if not has_q:
            continue
        while c >= q_end:
            qk += 1
            q_end = q_bounds[qk + 1]
        j = qmap[q_start[qk] + q_index[c]]
        if j < 0:
            continue
        if best[r, j] < 0 or t > best_ts[r, j] or (t == best_ts[r, j] and seq > best_seq[r, j]):
            best[r, j] = first + c
            best_ts[r, j] = t
            best_seq[r, j] = seq
    return True


@numba.njit(cache=True, nogil=True)
def winners(best: np.ndarray, src: np.ndarray, order: np.ndarray, bounds: np.ndarray) -> None:
    """Each column's winning Puts, touched rows ascending, one column after another.

    ``best[t, j]``: touched row ``t``'s winning Put of column ``j`` (-1: none). Sets
    ``src[j, t]`` to the Put's rank among column ``j``'s winners (-1: none), ``order``
    (from 0) to the winners' value positions and ``bounds[j]`` to column ``j``'s first
    winner in ``order`` (``bounds[-1]``: their count).
    """
    k = 0
    for j in range(best.shape[1]):
        bounds[j] = k
        first = k
        for t in range(best.shape[0]):
            b = best[t, j]
            if b >= 0:
                order[k] = b
                src[j, t] = k - first
                k += 1
            else:
                src[j, t] = -1
    bounds[best.shape[1]] = k


@numba.njit(cache=True, nogil=True)
def visibility(
    src: np.ndarray,
    put_ts: np.ndarray,
    mark: np.ndarray,
    oldest: int,
    where: np.ndarray,
    present: np.ndarray,
    visible: np.ndarray,
    taking: np.ndarray,
) -> None:
    """Which touched values show, and which base rows the family shows after them.

    A column takes its newest Put where there is one above the row's newest DeleteFamily
    (R5.1) and not expired (``put_ts >= oldest``, R8.1); it shows the base's value where
    it has no Put and no DeleteFamily hides the row. A touched row is shown where a
    column takes a Put, else as before unless a DeleteFamily hides it.

    Args:
        src: Per (column, touched row), its Put (-1: none).
        put_ts: Per (touched row, column), that Put's timestamp (read where ``src``
            holds one).
        mark: Per touched row, its newest DeleteFamily's timestamp (none: the minimum).
        oldest: The oldest live timestamp (no TTL: the minimum).
        where: The touched rows' positions in ``present``.
        present: Per base row, whether it is shown (updated in place).
        visible: Set per (column, touched row): whether the column shows a value.
        taking: Set per (column, touched row): whether that value is the Put's.
    """
    for t in range(len(where)):
        m = mark[t]
        hidden = m > _NONE
        shows = False
        for j in range(src.shape[0]):
            has = src[j, t] >= 0
            take = has and put_ts[t, j] > m and put_ts[t, j] >= oldest
            taking[j, t] = take
            visible[j, t] = take or not (hidden or has)
            shows = shows or take
        at = where[t]
        present[at] = shows or (not hidden and present[at])


@numba.njit(cache=True, nogil=True)
def fold_record(
    at: np.ndarray,
    valid: np.ndarray,
    stamp: np.ndarray,
    seq: int,
    offset: int,
    src: np.ndarray,
    put_ts: np.ndarray,
    put_seq: np.ndarray,
    j: int,
) -> None:
    """One column delta's values of column ``j`` folded into the column's newest Puts.

    A record's value wins over the column's newest Put so far by (timestamp, sequence
    id), R3.3; its position is ``offset`` plus its record's.

    Args:
        at: Per record, its touched row.
        valid: Per record, whether it holds a value of the column.
        stamp: Per record, that value's timestamp (one only: every value's).
        seq: The column delta's sequence id.
        offset: The position of the file's first value among the column's.
        src: Per touched row, the column's newest Put (-1: none), updated in place.
        put_ts: Per (touched row, column), the column's newest Put's timestamp (the
            minimum where none), updated in column ``j``.
        put_seq: Per (touched row, column), that Put's sequence id (the minimum where
            none), updated in column ``j``.
        j: The column.
    """
    for i in range(len(at)):
        if not valid[i]:
            continue
        t = at[i]
        ts = stamp[i] if len(stamp) > 1 else stamp[0]
        if ts > put_ts[t, j] or (ts == put_ts[t, j] and seq > put_seq[t, j]):
            src[t] = offset + i
            put_ts[t, j] = ts
            put_seq[t, j] = seq

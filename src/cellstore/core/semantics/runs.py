"""Merging per-family results into HBase result order without sorting them again.

A scan resolves each family on its own (:func:`~cellstore.core.semantics.merge_resolve`),
so it holds one table per family, each already in cell order (row ascending, then
qualifier, timestamp and type). The result order (R2.3) is row ascending, then family name,
then the family's own order: a k-way merge of those sorted runs on the row alone. This
module does that merge in one compiled pass over the row columns' buffers, comparing row
keys only where two families' heads meet and copying each family's block of a row in one
go, then gathers every column once. Descending row order (R2.4) reverses the order of the
row blocks and keeps each block's inner order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.errors import InvalidArgumentError

__all__ = ["merge_family_order", "merge_families"]


@numba.njit(cache=True, inline="always")
def _compare(offsets: np.ndarray, data: np.ndarray, i: int, j: int) -> int:
    """-1, 0 or 1 as value ``i`` sorts before, equal to or after value ``j`` (bytewise)."""
    a, a_end = offsets[i], offsets[i + 1]
    b, b_end = offsets[j], offsets[j + 1]
    n = min(a_end - a, b_end - b)
    for k in range(n):
        x, y = data[a + k], data[b + k]
        if x != y:
            return -1 if x < y else 1
    la, lb = a_end - a, b_end - b
    if la == lb:
        return 0
    return -1 if la < lb else 1


@numba.njit(cache=True, inline="always")
def _equal(offsets: np.ndarray, data: np.ndarray, i: int, j: int) -> bool:
    """Whether values ``i`` and ``j`` are equal.

    Lengths first, then bytes from the end, where neighbouring row keys usually differ.
    """
    a, b = offsets[i], offsets[j]
    n = offsets[i + 1] - a
    if n != offsets[j + 1] - b:
        return False
    for k in range(n - 1, -1, -1):  # noqa: SIM110 - compiled by numba, no generator
        if data[a + k] != data[b + k]:
            return False
    return True


@numba.njit(cache=True)
def _merge_kernel(
    offsets: np.ndarray, data: np.ndarray, bounds: np.ndarray, new_value: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Merge sorted runs ``[bounds[r], bounds[r + 1])`` of one binary column.

    ``new_value[i]`` is True where value ``i`` differs from value ``i - 1`` of its run (and
    at every run's first value), so a run's blocks of equal values are known without
    comparing bytes; bytes are compared only between the runs' current heads.

    Returns ``(order, starts)``: ``order`` lists the values' indices in merged order, the
    lowest run first among equal values, each run's equal values in their own order;
    ``starts[p]`` is True where output position ``p`` holds a value different from the one
    before it (a new row).
    """
    k = len(bounds) - 1
    n = bounds[k] - bounds[0]
    pos = bounds[:k].copy()
    order = np.empty(n, np.int64)
    starts = np.zeros(n, np.bool_)
    o = 0
    last = -1  # index of the value of the block emitted last
    last_run = k
    while o < n:
        best = -1
        # Runs after the last block's run whose head is that same value come next (a
        # later family of the same row); every other head is greater than it.
        for r in range(last_run + 1, k):
            if pos[r] < bounds[r + 1] and _equal(offsets, data, pos[r], last):
                best = r
                break
        new = best < 0
        if new:
            for r in range(k):
                if pos[r] < bounds[r + 1] and (
                    best < 0 or _compare(offsets, data, pos[r], pos[best]) < 0
                ):
                    best = r
        i = pos[best]
        starts[o] = new
        end = bounds[best + 1]
        order[o] = i
        o += 1
        j = i + 1
        while j < end and not new_value[j]:
            order[o] = j
            o += 1
            j += 1
        pos[best] = j
        last = i
        last_run = best
    return order, starts


def _buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a binary array without nulls, as int64 and uint8 arrays."""
    if not pa.types.is_large_binary(values.type):
        values = values.cast(pa.large_binary())
    _, offsets_buf, data_buf = values.buffers()
    assert offsets_buf is not None
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[
        values.offset : values.offset + len(values) + 1
    ]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    return offsets, data


def merge_family_order(
    rows: Sequence[pa.Array | pa.ChunkedArray], *, reverse: bool = False
) -> np.ndarray:
    """The merged result order of several families' row columns (R2.3; R2.4 ``reverse``).

    Args:
        rows: Each family's ``row`` column, in family order, each sorted ascending (cells
            of one row contiguous, as in cell order).
        reverse: Rows in descending order; each row's cells keep their merged order.

    Returns:
        Indices into the concatenation of ``rows``: row ascending (descending when
        ``reverse``), then family (the order of ``rows``), then each family's own order.

    Runtime: one linear pass with at most ``len(rows)`` row-key comparisons per row block,
    never a sort.
    """
    arrays = [r.combine_chunks() if isinstance(r, pa.ChunkedArray) else r for r in rows]
    lengths = np.array([len(a) for a in arrays], np.int64)
    bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(bounds[-1])
    if total == 0:
        return np.zeros(0, np.int64)
    if len(arrays) == 1 and not reverse:
        return np.arange(total, dtype=np.int64)
    column = pa.concat_arrays([a.cast(pa.large_binary()) for a in arrays])
    offsets, data = _buffers(column)
    new_value = np.ones(total, np.bool_)
    if total > 1:
        same = pc.equal(column.slice(1), column.slice(0, total - 1))
        new_value[1:] = ~same.to_numpy(zero_copy_only=False)
        new_value[bounds[:-1][lengths > 0]] = True
    order, starts = _merge_kernel(offsets, data, bounds, new_value)
    if reverse:
        block_starts = np.flatnonzero(starts)
        block_lengths = np.diff(np.append(block_starts, total))
        new_starts = block_starts[::-1]
        new_lengths = block_lengths[::-1]
        first_out = np.cumsum(new_lengths) - new_lengths
        within = np.arange(total, dtype=np.int64) - np.repeat(first_out, new_lengths)
        order = order[np.repeat(new_starts, new_lengths) + within]
    result: np.ndarray = order
    return result


def merge_families(
    tables: Sequence[pa.Table], names: Sequence[str], *, schema: pa.Schema, reverse: bool = False
) -> pa.Table:
    """Merge per-family result tables into one table in HBase result order.

    Args:
        tables: Each family's cells (columns ``row``, ``qualifier``, ``ts``, ``type``,
            ``value``), in cell order, in family order.
        names: The family names, one per table.
        schema: The result schema: the cell columns plus a ``family`` string column, in
            the order wanted.
        reverse: Rows in descending order (R2.4).

    Returns:
        A table with ``schema``: row, then family (in the order given), then each
        family's cell order (R2.3).

    Raises:
        InvalidArgumentError: ``tables`` and ``names`` differ in length.
    """
    if len(tables) != len(names):
        raise InvalidArgumentError(f"got {len(tables)} tables but {len(names)} family names")
    live = [(t, n) for t, n in zip(tables, names, strict=True) if t.num_rows]
    if not live:
        return schema.empty_table()
    order = merge_family_order([t.column("row") for t, _ in live], reverse=reverse)
    family_ids = np.repeat(np.arange(len(live), dtype=np.int32), [t.num_rows for t, _ in live])[
        order
    ]
    family_names = pa.array([n for _, n in live], pa.string())
    take = pa.array(order)
    columns = []
    for field in schema:
        if field.name == "family":
            columns.append(pc.take(family_names, pa.array(family_ids)))
            continue
        parts = [t.column(field.name).combine_chunks().cast(field.type) for t, _ in live]
        whole = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
        columns.append(whole if len(live) == 1 and not reverse else pc.take(whole, take))
    return pa.Table.from_arrays(columns, schema=schema)

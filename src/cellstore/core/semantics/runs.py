"""Merging per-family results into HBase result order without sorting them again.

A scan resolves each family on its own (:func:`~cellstore.core.semantics.merge_resolve`),
so it holds one table per family, each already in cell order (row ascending, then
qualifier, timestamp and type). The result order (R2.3) is row ascending, then family name,
then the family's own order: a k-way merge of those sorted runs on the row alone. This
module does that merge in one compiled pass over the row columns' buffers, comparing row
keys only where two families' heads meet and copying each family's block of a row in one
go, then gathers every column once (the row column from the buffers the merge read).
Descending row order (R2.4)
reverses the order of the row blocks and keeps each block's inner order. A single family
in ascending order is passed through as it is, with only the family column added.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.semantics.arrays import pool_empty
from cellstore.errors import InvalidArgumentError

__all__ = ["merge_families", "merge_family_order"]

#: Largest byte size of a binary column built with 32-bit offsets.
_MAX_BINARY_BYTES = 2**31 - 1


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


@numba.njit(cache=True, nogil=True)
def _merge_kernel(
    offsets: np.ndarray,
    data: np.ndarray,
    bounds: np.ndarray,
    given_starts: np.ndarray,
    use_starts: bool,
    ids: np.ndarray,
    coded: bool,
    reverse: bool,
    order: np.ndarray,
    picks: np.ndarray,
    runs: np.ndarray,
    is_start: np.ndarray,
    block_at: np.ndarray,
) -> None:
    """Merge sorted runs ``[bounds[r], bounds[r + 1])`` of one binary column, row by row.

    With ``coded``, value ``i`` is the one at ``ids[i]`` in ``offsets``/``data`` (the
    column is dictionary-encoded: ``offsets``/``data`` hold the dictionaries), else value
    ``i`` itself.

    First each run is cut into blocks of equal values: a block starts at the run's first
    value and wherever ``given_starts`` is True (``use_starts``: the caller knows where
    each run's values change), or else where a value differs from the one before it
    (compared from the end, where neighbouring row keys differ). Then the runs' head
    blocks are merged: their keys are compared once per output row, and every head equal
    to the smallest (the largest with ``reverse``) is emitted, in run order, each block's
    values in their own order.

    Fills, per output position: ``order`` (the value's index), ``picks`` (its index in
    ``offsets``/``data``: ``ids[order]`` when ``coded``) and ``runs`` (its run);
    ``is_start`` (one per value) and ``block_at`` (one more) are scratch space.
    """
    k = len(bounds) - 1
    n = bounds[k]
    blocks = 0
    for r in range(k):
        lo, hi = bounds[r], bounds[r + 1]
        for i in range(lo, hi):
            if i == lo:
                s = True
            elif use_starts:
                s = given_starts[i]
            elif coded:
                s = ids[i] != ids[i - 1] and not _equal(offsets, data, ids[i], ids[i - 1])
            else:
                s = not _equal(offsets, data, i, i - 1)
            is_start[i] = s
            if s:
                blocks += 1
    # block_at[b]: the first value of block b; a run's blocks are first_block[r] up to
    # first_block[r + 1]; block b ends where block b + 1 starts.
    first_block = np.empty(k + 1, np.int64)
    b = 0
    for r in range(k):
        first_block[r] = b
        for i in range(bounds[r], bounds[r + 1]):
            if is_start[i]:
                block_at[b] = i
                b += 1
    first_block[k] = b
    block_at[blocks] = n
    head = np.empty(k, np.int64)
    for r in range(k):
        head[r] = first_block[r + 1] - 1 if reverse else first_block[r]
    equal = np.zeros(k, np.bool_)
    o = 0
    while o < n:
        best = -1
        for r in range(k):
            equal[r] = False
            h = head[r]
            if h < first_block[r] or h >= first_block[r + 1]:
                continue
            if best < 0:
                best = r
                equal[r] = True
                continue
            x, y = block_at[h], block_at[head[best]]
            c = _compare(offsets, data, ids[x], ids[y]) if coded else _compare(offsets, data, x, y)
            if reverse:
                c = -c
            if c < 0:
                for q in range(r):
                    equal[q] = False
                best = r
                equal[r] = True
            elif c == 0:
                equal[r] = True
        for r in range(best, k):
            if not equal[r]:
                continue
            h = head[r]
            for j in range(block_at[h], block_at[h + 1]):
                order[o] = j
                picks[o] = ids[j] if coded else j
                runs[o] = r
                o += 1
            head[r] = h - 1 if reverse else h + 1


@numba.njit(cache=True, nogil=True)
def _take_ids(ids: np.ndarray, order: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[:] = ids[order]`` (compiled: no index conversion, the GIL released)."""
    for o in range(len(order)):
        out[o] = ids[order[o]]
    return out


def _index_type(n: int) -> type[np.signedinteger]:
    """The narrowest index type (int32 or int64) for positions ``0..n``."""
    return np.int32 if n < 2**31 - 1 else np.int64


def _buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a binary array without nulls, offsets as int64 from 0."""
    offset_type = np.int64 if pa.types.is_large_binary(values.type) else np.int32
    _, offsets_buf, data_buf = values.buffers()
    assert offsets_buf is not None
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[
        values.offset : values.offset + len(values) + 1
    ]
    if data_buf is None or not len(values):
        return np.zeros(len(values) + 1, np.int64), np.zeros(0, np.uint8)
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(data_buf, dtype=np.uint8)[first:last]
    return offsets.astype(np.int64) - first, data


def _concat_buffers(arrays: Sequence[pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of the concatenation of binary arrays (one copy of the bytes)."""
    if len(arrays) == 1:
        return _buffers(arrays[0])
    parts = [_buffers(a) for a in arrays]
    sizes = np.array([len(d) for _, d in parts], np.int64)
    bases = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    offsets = np.concatenate(
        [parts[0][0]] + [o[1:] + base for (o, _), base in zip(parts[1:], bases[1:], strict=True)]
    )
    data = np.concatenate([d for _, d in parts])
    return offsets, data


def _binary_arrays(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """The chunks of a binary (or string) column as binary or dictionary-of-binary arrays."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out = []
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            if not pa.types.is_binary(chunk.type.value_type):
                chunk = chunk.cast(pa.binary())
        elif not (pa.types.is_binary(chunk.type) or pa.types.is_large_binary(chunk.type)):
            chunk = chunk.cast(pa.binary())
        out.append(chunk)
    return out


class _Values:
    """The values of binary chunks, some possibly dictionary-encoded, without decoding.

    ``offsets``/``data`` hold every plain chunk's values and every dictionary chunk's
    dictionary, concatenated; value ``i`` of the chunks' concatenation is entry ``ids[i]``
    there, or entry ``i`` when ``ids`` is None (no chunk is dictionary-encoded). So a
    gather decodes a dictionary once, straight into result order.
    """

    def __init__(self, chunks: Sequence[pa.Array]) -> None:
        if not any(pa.types.is_dictionary(c.type) for c in chunks):
            self.ids: np.ndarray | None = None
            self.offsets, self.data = _concat_buffers(chunks)
            return
        values = [c.dictionary if pa.types.is_dictionary(c.type) else c for c in chunks]
        self.offsets, self.data = _concat_buffers(values)
        ids = pool_empty(sum(len(c) for c in chunks), _index_type(len(self.offsets) - 1))
        at, base = 0, 0
        for chunk, vals in zip(chunks, values, strict=True):
            n = len(chunk)
            if pa.types.is_dictionary(chunk.type):
                np.add(_indices(chunk), base, out=ids[at : at + n])
            else:
                ids[at : at + n] = np.arange(base, base + n, dtype=ids.dtype)
            at += n
            base += len(vals)
        self.ids = ids

    def gather(self, order: np.ndarray, typ: pa.DataType) -> pa.Array:
        """The values at ``order`` (indices into the chunks' concatenation), as ``typ``."""
        if self.ids is None:
            picks = order
        else:
            picks = _take_ids(self.ids, order, pool_empty(len(order), self.ids.dtype))
        return _gather_binary(self.offsets, self.data, picks, typ)


def _indices(chunk: pa.DictionaryArray) -> np.ndarray:
    """A dictionary chunk's indices as a numpy array (no nulls)."""
    indices = chunk.indices
    if indices.null_count:
        raise InvalidArgumentError("row and qualifier columns cannot hold nulls")
    return np.asarray(indices.to_numpy(zero_copy_only=False))


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
    return _merge_order([_binary_arrays(r) for r in rows], reverse=reverse).order


def _merge_order(
    runs: Sequence[Sequence[pa.Array]],
    *,
    reverse: bool,
    row_starts: Sequence[np.ndarray] | None = None,
    run_type: type[np.integer] = np.int8,
) -> _Merged:
    """The merge of the runs' row columns: order, row values and run of every result cell.

    ``row_starts``, one per run, mark where each run's row changes (else the kernel
    compares neighbouring row keys).
    """
    lengths = np.array([sum(len(a) for a in run) for run in runs], np.int64)
    bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(bounds[-1])
    rows = _Values([a for run in runs for a in run])
    if total == 0 or (len(runs) == 1 and not reverse):
        order = np.arange(total, dtype=_index_type(total))
        picks = order if rows.ids is None else rows.ids
        return _Merged(order, picks, np.zeros(total, run_type), rows)
    if row_starts is None:
        given = np.zeros(0, np.bool_)
    else:
        given = np.concatenate(row_starts) if len(row_starts) > 1 else row_starts[0]
        if given.size != total:
            raise InvalidArgumentError(f"row starts for {given.size} cells, not {total}")
        given = given.astype(np.bool_, copy=False)
    coded = rows.ids is not None
    index_type = _index_type(total)
    ids = rows.ids if rows.ids is not None else np.zeros(0, index_type)
    order = pool_empty(total, index_type)
    picks = pool_empty(total, ids.dtype if coded else index_type)
    run_of = pool_empty(total, run_type)
    _merge_kernel(
        rows.offsets,
        rows.data,
        bounds,
        given,
        row_starts is not None,
        ids,
        coded,
        reverse,
        order,
        picks,
        run_of,
        pool_empty(total, np.bool_),
        pool_empty(total + 1, np.int64),
    )
    return _Merged(order, picks, run_of, rows)


@dataclass(frozen=True)
class _Merged:
    """The merge of several runs' row columns (:func:`_merge_order`).

    ``order[p]`` is the index (into the runs' concatenation) of result cell ``p``,
    ``picks[p]`` the index of its row value in ``rows.offsets``/``rows.data``, and
    ``runs[p]`` the run it came from.
    """

    order: np.ndarray
    picks: np.ndarray
    runs: np.ndarray
    rows: _Values

    def row_column(self, typ: pa.DataType) -> pa.Array:
        """The result's row column, as ``typ``."""
        return _gather_binary(self.rows.offsets, self.rows.data, self.picks, typ)


def _wrap_binary(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    """A binary (or large binary) Arrow array over ``offsets``/``data``, without a copy."""
    n = len(offsets) - 1
    if len(data) <= _MAX_BINARY_BYTES:
        return pa.Array.from_buffers(
            pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
        )
    return pa.Array.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _gather_binary(
    offsets: np.ndarray, data: np.ndarray, order: np.ndarray, typ: pa.DataType
) -> pa.Array:
    """The values ``order`` of the binary column given by ``offsets``/``data``, as ``typ``."""
    out = pc.take(_wrap_binary(offsets, data), pa.array(order))
    return out if out.type == typ else out.cast(typ)


@numba.njit(cache=True, nogil=True)
def _fill_fixed_width(
    ids: np.ndarray, table: np.ndarray, data: np.ndarray, offsets: np.ndarray
) -> None:
    """``data``/``offsets`` of the binary array whose value ``i`` is ``table[ids[i]]``."""
    width = table.shape[1]
    for i in range(len(ids)):
        offsets[i] = i * width
        for b in range(width):
            data[i * width + b] = table[ids[i], b]
    offsets[len(ids)] = len(ids) * width


def _family_column(ids: np.ndarray, names: Sequence[str]) -> pa.Array:
    """The family name of each cell (``names[ids[i]]``) as a string array."""
    encoded = [n.encode("utf-8") for n in names]
    width = len(encoded[0])
    n = len(ids)
    if all(len(e) == width for e in encoded) and n * width <= _MAX_BINARY_BYTES:
        table = np.frombuffer(b"".join(encoded), np.uint8).reshape(len(encoded), width)
        data = pool_empty(n * width, np.uint8)
        offsets = pool_empty(n + 1, np.int32)
        _fill_fixed_width(ids, table, data, offsets)
        return pa.Array.from_buffers(
            pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
    return pc.take(pa.array(list(names), pa.string()), pa.array(ids))


def _any_dictionary(columns: Iterable[pa.ChunkedArray]) -> bool:
    return any(pa.types.is_dictionary(c.type) for c in columns)


def merge_families(
    tables: Sequence[pa.Table],
    names: Sequence[str],
    *,
    schema: pa.Schema,
    reverse: bool = False,
    row_starts: Sequence[np.ndarray] | None = None,
) -> pa.Table:
    """Merge per-family result tables into one table in HBase result order.

    Args:
        tables: Each family's cells (columns ``row``, ``qualifier``, ``ts``, ``type``,
            ``value``), in cell order, in family order. ``row`` and ``qualifier`` may be
            dictionary-encoded (binary values, as Parquet reads them): they are then
            decoded once, straight into result order.
        names: The family names, one per table.
        schema: The result schema: the cell columns plus a ``family`` string column, in
            the order wanted.
        reverse: Rows in descending order (R2.4).
        row_starts: Optionally, one per table, per cell whether its row differs from the
            previous cell's (as :func:`~cellstore.core.semantics.merge.merge_resolve_rows`
            returns them): then the row keys are compared only between families.

    Returns:
        A table with ``schema``: row, then family (in the order given), then each
        family's cell order (R2.3).

    Raises:
        InvalidArgumentError: ``tables``, ``names`` (and ``row_starts``) differ in length.
    """
    if len(tables) != len(names):
        raise InvalidArgumentError(f"got {len(tables)} tables but {len(names)} family names")
    if row_starts is not None and len(row_starts) != len(tables):
        raise InvalidArgumentError(f"got {len(tables)} tables but {len(row_starts)} row starts")
    live = [(t, n) for t, n in zip(tables, names, strict=True) if t.num_rows]
    live_starts = None
    if row_starts is not None:
        live_starts = [s for t, s in zip(tables, row_starts, strict=True) if t.num_rows]
    if not live:
        return schema.empty_table()
    if len(live) == 1 and not reverse:
        # One family in its own order: no merge, no copy; only the family column is new.
        table, name = live[0]
        family_ids = np.zeros(table.num_rows, np.int8)
        columns = [
            _family_column(family_ids, [name])
            if field.name == "family"
            else table.column(field.name).cast(field.type)
            for field in schema
        ]
        return pa.Table.from_arrays(columns, schema=schema)
    row_runs = [_binary_arrays(t.column("row")) for t, _ in live]
    id_type = np.int8 if len(live) <= 127 else np.int32
    merged = _merge_order(row_runs, reverse=reverse, row_starts=live_starts, run_type=id_type)
    order = merged.order
    take: pa.Array | None = None
    columns = []
    for field in schema:
        if field.name == "family":
            columns.append(_family_column(merged.runs, [n for _, n in live]))
        elif field.name == "row":
            columns.append(merged.row_column(field.type))
        elif _any_dictionary(t.column(field.name) for t, _ in live):
            # A dictionary-encoded column (``qualifier``) is decoded once, in result order.
            chunks = [c for t, _ in live for c in _binary_arrays(t.column(field.name))]
            columns.append(_Values(chunks).gather(order, field.type))
        else:
            take = pa.array(order) if take is None else take
            parts = [c for t, _ in live for c in t.column(field.name).cast(field.type).chunks]
            whole = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
            columns.append(pc.take(whole, take))
    return pa.Table.from_arrays(columns, schema=schema)

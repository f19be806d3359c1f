"""Merging sorted runs by one stable integer sort of a packed, fixed-width key."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CELL_SCHEMA
from cellstore.core.semantics.arrays import (
    _BoolArray,
    _IntArray,
    _neighbour_equal_plain,
    _starts,
    _to_bool,
    _to_numpy,
)


@dataclass
class _KeyColumn:
    """A binary key column (row or qualifier) of concatenated runs, as integers.

    Attributes:
        codes: Per cell, an unsigned integer below ``2**bits`` that orders and equates
            exactly like the cell's binary value.
        bits: Bits the codes need.
        candidates: Binary values; cell ``i``'s value is ``candidates[index[i]]``.
        index: Per cell, the position of its value in ``candidates``.
        fixed: ``candidates`` as a numpy ``S`` array, when they all have one length.
    """

    codes: _IntArray
    bits: int
    candidates: pa.Array
    index: _IntArray
    fixed: np.ndarray | None = None

    def values_at(self, positions: _IntArray) -> pa.Array:
        """The binary values of the cells at ``positions``.

        When all candidates have one length (``fixed`` holds them as a numpy ``S``
        array), the bytes are gathered by numpy and the offsets are a range.
        """
        index = self.index[positions]
        width = self.fixed.dtype.itemsize if self.fixed is not None else 0
        if self.fixed is None or index.size * width >= 2**31:
            return self.candidates.take(pa.array(index))
        data = self.fixed[index]
        offsets = np.arange(0, (index.size + 1) * width, width, dtype=np.int32)
        return pa.Array.from_buffers(
            pa.binary(), index.size, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    def candidates_in(self, value_set: pa.Array) -> _BoolArray:
        """Per cell: whether its value is in ``value_set``."""
        in_set = _to_bool(pc.is_in(self.candidates, value_set=value_set))
        result: _BoolArray = in_set[self.index]
        return result


@dataclass
class _MergePlan:
    """How to merge runs (see :func:`_plan_merge`).

    Attributes:
        runs: The non-empty runs, in concatenation order.
        seqs: Their sequence numbers.
        order: Positions in the concatenated runs, in cell order; None when the
            concatenation already is in cell order.
        rows: Row codes of the concatenated cells (only when ``order`` is set).
        qualifiers: Qualifier codes of the concatenated cells (only when ``order`` is set).
        ts: Timestamps of the concatenated cells (only when ``order`` is set).
        typ: Type codes of the concatenated cells (only when ``order`` is set).
        key: The packed sort key, when it fit in one word (only when ``order`` is set).
    """

    runs: list[pa.Table]
    seqs: list[int]
    order: _IntArray | None = None
    rows: _KeyColumn | None = None
    qualifiers: _KeyColumn | None = None
    ts: _IntArray | None = None
    typ: _IntArray | None = None
    key: _SortKey | None = None

    def neighbours_equal(self) -> tuple[_BoolArray, _BoolArray]:
        """``(row_eq, col_eq)`` of neighbouring cells in merged order."""
        if self.key is not None:
            return self.key.neighbours_equal()
        assert self.order is not None and self.rows is not None and self.qualifiers is not None
        rows = self.rows.codes[self.order]
        quals = self.qualifiers.codes[self.order]
        row_eq: _BoolArray = rows[1:] == rows[:-1]
        return row_eq, row_eq & (quals[1:] == quals[:-1])

    def gather(self, positions: _IntArray) -> pa.Table:
        """The concatenated cells at ``positions``, as a :data:`CELL_SCHEMA` table.

        Rows and qualifiers come from their codes (a gather from the distinct values), the
        value column is taken from the runs.
        """
        assert self.rows is not None and self.qualifiers is not None
        assert self.ts is not None and self.typ is not None
        index = pa.array(positions, pa.int64())
        rows = self.rows.values_at(positions)
        quals = self.qualifiers.values_at(positions)
        value_parts = [t.column("value") for t in self.runs]
        values = pa.chunked_array([c for part in value_parts for c in part.chunks], pa.binary())
        return pa.Table.from_arrays(
            [
                rows,
                quals,
                pa.array(self.ts[positions], pa.int64()),
                pa.array(self.typ[positions], pa.int8()),
                values.take(index),
            ],
            schema=CELL_SCHEMA,
        )


def _plan_merge(runs: list[pa.Table], seqs: list[int]) -> _MergePlan | None:
    """Plan the merge of sorted runs into cell order; None when there is no cell.

    A single run, or runs whose row ranges do not overlap, are concatenated (in row order).
    Otherwise the runs are concatenated newest first (descending sequence number; the run
    listed later first among equal ones) and sorted by a stable sort on a fixed-width key:
    an integer code of the row, one of the qualifier (both exact: equal codes for equal
    values, ordered like the bytes; see :class:`_KeyColumn`), the timestamp (descending)
    and the type (descending), packed into as few unsigned words as they fit in. Codes are
    computed for the distinct values only (a run's row column changes value once per row;
    dictionary-encoded columns bring their distinct values along) and gathered per cell.
    The stable sort keeps equal keys in concatenation order, which is exactly "newest
    sequence number first, within a run in file order" (R3.2).
    """
    live = [(t, s, i) for i, (t, s) in enumerate(zip(runs, seqs, strict=True)) if t.num_rows]
    if not live:
        return None
    if len(live) == 1:
        return _MergePlan([live[0][0]], [live[0][1]])
    disjoint = _disjoint_in_row_order([(t, s) for t, s, _ in live])
    if disjoint is not None:
        return _MergePlan([t for t, _ in disjoint], [s for _, s in disjoint])
    live.sort(key=lambda e: (-e[1], -e[2]))
    tables = [t for t, _, _ in live]
    rows = _key_column([c for t in tables for c in t.column("row").chunks], hashed=False)
    quals = _key_column([c for t in tables for c in t.column("qualifier").chunks], hashed=True)
    ts = np.concatenate([_to_numpy(t.column("ts"), np.int64) for t in tables])
    typ = np.concatenate([_to_numpy(t.column("type"), np.int8) for t in tables])
    fields = [
        _Field(rows.codes, 0, rows.bits),
        _Field(quals.codes, 0, quals.bits),
        _descending(ts),
        _descending(typ),
    ]
    order, key = _stable_sort(fields, ts.size)
    return _MergePlan(tables, [s for _, s, _ in live], order, rows, quals, ts, typ, key)


def _disjoint_in_row_order(
    runs: list[tuple[pa.Table, int]],
) -> list[tuple[pa.Table, int]] | None:
    """``runs`` ordered by row range if no two share a row, else None."""
    bounds = [(t.column("row")[0].as_py(), t.column("row")[-1].as_py(), t, s) for t, s in runs]
    bounds.sort(key=lambda b: (b[0], b[1]))
    for (_, last, _, _), (first, _, _, _) in pairwise(bounds):
        if not last < first:
            return None
    return [(t, s) for _, _, t, s in bounds]


def _key_column(chunks: list[pa.Array], *, hashed: bool) -> _KeyColumn:
    """The :class:`_KeyColumn` of a binary column given as chunks.

    Each chunk contributes candidate values and, per cell, the index of its value among
    them: a dictionary chunk its dictionary and indices; a plain chunk its values where they
    change (``hashed=False``, right for sorted rows) or its hash-dictionary (``hashed=True``,
    right for qualifiers, which repeat across rows). Only the candidates are turned into
    integer codes (:func:`_candidate_codes`); cells get theirs by one gather.
    """
    candidates: list[pa.Array] = []
    local: list[_IntArray] = []
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        if pa.types.is_dictionary(chunk.type):
            values, index = chunk.dictionary, _to_numpy(chunk.indices, np.int32)
            low, high = int(index.min()), int(index.max())
            if high - low + 1 < len(values):  # a slice of a row group: drop unused values
                values = values.slice(low, high - low + 1)
                index = index - low
        elif hashed:
            encoded = pc.dictionary_encode(chunk)
            values, index = encoded.dictionary, _to_numpy(encoded.indices, np.int32)
        else:
            starts = _starts(_neighbour_equal_plain(chunk))
            values = chunk.filter(pa.array(starts, pa.bool_()))
            index = np.cumsum(starts, dtype=np.int32) - 1
        candidates.append(values if values.type == pa.binary() else values.cast(pa.binary()))
        local.append(index)
    values = pa.concat_arrays(candidates)
    dtype = np.int32 if len(values) < 2**31 else np.int64
    cell_index = np.empty(sum(ix.size for ix in local), dtype=dtype)
    pos = offset = 0
    for cand, index in zip(candidates, local, strict=True):
        np.add(index, offset, out=cell_index[pos : pos + index.size], casting="unsafe")
        pos += index.size
        offset += len(cand)
    codes, bits, exact = _candidate_codes(values)
    return _KeyColumn(codes[cell_index], bits, values, cell_index, exact)


def _candidate_codes(values: pa.Array) -> tuple[_IntArray, int, np.ndarray | None]:
    """Unsigned integer codes that order and equate exactly like binary ``values``.

    The keys are made fixed-width (:func:`_fixed_width_keys`); when, after the bytes all
    keys share at the start, at most 8 bytes remain, those bytes read as a big-endian
    integer are the code (no sort needed; dense ranks of those integers instead when that
    saves a byte of sort key). Otherwise the code is the dense rank of the value
    (:func:`_rank_values`).

    Returns:
        The codes (one per value), the bits they need, and the values as a numpy ``S``
        array when they all have one length (for :meth:`_KeyColumn.values_at`), else None.
    """
    fixed = _fixed_width_keys(values)
    exact = fixed.keys if fixed is not None and fixed.exact else None
    if fixed is not None:
        direct = _integer_keys(fixed, values)
        if direct is not None:
            numbers, bits = direct
            if bits > len(values).bit_length() + 8:  # ranks would save a byte of sort key
                numbers = _dense_rank_integers(numbers)
                bits = int(numbers.max(initial=0)).bit_length()
            return _narrowest(numbers, bits), bits, exact
    rank, _ = _rank_values(values, fixed.keys if fixed is not None else None)
    bits = int(rank.max(initial=0)).bit_length()
    return _narrowest(rank, bits), bits, exact


def _dense_rank_integers(numbers: _IntArray) -> _IntArray:
    """Dense ranks of unsigned integers (equal numbers, equal ranks)."""
    order = np.argsort(numbers, kind="stable")  # timsort: merges presorted runs fast
    ordered = numbers[order]
    dtype = np.int32 if numbers.size < 2**31 else np.int64
    dense = np.zeros(numbers.size, dtype=dtype)
    np.cumsum(ordered[1:] != ordered[:-1], dtype=dtype, out=dense[1:])
    rank = np.empty(numbers.size, dtype=dtype)
    rank[order] = dense
    return rank


def _narrowest(codes: _IntArray, bits: int) -> _IntArray:
    """Non-negative ``codes`` below ``2**bits`` in the narrowest unsigned dtype."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if bits <= np.iinfo(dtype).bits:
            result: _IntArray = codes.astype(dtype, copy=False)
            return result
    return codes.astype(np.uint64, copy=False)


def _integer_keys(fixed: _FixedKeys, values: pa.Array) -> tuple[_IntArray, int] | None:
    """The keys as ``uint64`` integers minus their minimum, if at most 8 bytes vary.

    Keys are read in place as big-endian 64-bit words at byte offsets 0, 8, ... and
    ``size - 8`` (overlapping the last one); OR-ing each word's XOR with the first key's
    tells which bytes vary. When the varying bytes all lie in the last 8, that last word,
    masked to them, is the integer. Keys shorter than 8 bytes are copied right-aligned
    into 8 (leading zeros keep the order).
    """
    keys = fixed.keys
    m, size = keys.size, keys.dtype.itemsize
    if m == 0:
        return np.zeros(0, dtype=np.uint64), 0
    buffer = keys
    if size < 8:
        padded = np.zeros(m, dtype=np.dtype((np.void, 8)))
        view = np.dtype(
            {"names": ["k"], "formats": [f"V{size}"], "offsets": [8 - size], "itemsize": 8}
        )
        padded.view(view)["k"] = keys.view(np.dtype((np.void, size)))
        buffer, size = padded, 8
    first = size
    for offset in sorted({*range(0, size - 8, 8), size - 8}):
        word = _word_view(buffer, offset, size)
        varying = int(np.bitwise_or.reduce(word ^ word[0]))
        if varying:
            first = min(first, offset + (64 - varying.bit_length()) // 8)
    if first == size:
        return np.zeros(m, dtype=np.uint64), 0
    rest = size - first
    if rest > 8:
        return None
    numbers: _IntArray = _word_view(buffer, size - 8, size).astype(np.uint64)
    if rest < 8:
        numbers &= np.uint64((1 << (8 * rest)) - 1)
    numbers -= numbers.min()
    return numbers, int(numbers.max()).bit_length()


def _word_view(keys: np.ndarray, offset: int, size: int) -> _IntArray:
    """Big-endian 64-bit words at byte ``offset`` of each ``size``-byte item (no copy)."""
    word: _IntArray = np.ndarray(
        shape=(keys.size,), dtype=">u8", buffer=keys, offset=offset, strides=(size,)
    )
    return word


#: Largest fixed-width key buffer (bytes) :func:`_fixed_width_keys` builds before callers
#: fall back to Arrow's comparison sort.
_MAX_FIXED_WIDTH_BYTES: Final = 1 << 30


def _rank_values(values: pa.Array, keys: np.ndarray | None) -> tuple[_IntArray, _IntArray]:
    """Dense ranks of binary ``values`` and the position of one value of each rank.

    Binary keys are compared as unsigned bytes, a proper prefix first (HBase's comparator,
    Arrow's binary order). With fixed-width ``keys`` (see :func:`_fixed_width_keys`) the
    sort is numpy's stable sort, which merges presorted stretches (concatenated
    dictionaries of sorted files) cheaply; otherwise Arrow sorts the binary values.

    Returns:
        ``(rank, firsts)``: ``rank[i]`` is the number of distinct values below
        ``values[i]``; ``firsts[r]`` is a position whose value has rank ``r``.
    """
    m = len(values)
    if keys is not None:
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        new = ordered[1:] != ordered[:-1]
    else:
        order = _to_numpy(pc.sort_indices(values), np.int64)
        ordered_arr = values.take(pa.array(order, pa.int64()))
        new = ~_neighbour_equal_plain(ordered_arr)
    dtype = np.int32 if m < 2**31 else np.int64
    dense = np.zeros(m, dtype=dtype)
    np.cumsum(new, dtype=dtype, out=dense[1:])
    rank = np.empty(m, dtype=dtype)
    rank[order] = dense
    first = np.ones(m, dtype=bool)
    first[1:] = new
    firsts: _IntArray = order[first]
    return rank, firsts


@dataclass
class _FixedKeys:
    """Binary values as fixed-width numpy ``S`` keys (see :func:`_fixed_width_keys`).

    Attributes:
        keys: One ``S<width + suffix>`` item per value.
        width: The longest value's length; shorter values are zero-padded to it.
        suffix: Bytes of big-endian length appended after the padding (0, 2 or 4).
        exact: The keys are the values themselves (all of one length, no padding).
    """

    keys: np.ndarray
    width: int
    suffix: int
    exact: bool = False

    def key(self, value: bytes) -> bytes:
        """The key of one value."""
        padded = value + bytes(self.width - len(value))
        return padded + len(value).to_bytes(self.suffix, "big") if self.suffix else padded


def _fixed_width_keys(values: pa.Array) -> _FixedKeys | None:
    """``values`` as fixed-width keys whose order is the binary order, or None.

    Each key is zero-padded to the longest length ``w``: padding keeps the order of keys
    that differ within the shorter one's length, and a shorter key that is a prefix of a
    longer one still sorts first unless the longer one only adds zero bytes. So when some
    key ends in a zero byte, the big-endian length is appended as a tie-breaker. numpy
    compares ``S`` items of equal width as unsigned bytes. When every value has the same
    length and none ends in a zero byte, the keys are the Arrow data buffer itself. None
    when the padded keys would exceed :data:`_MAX_FIXED_WIDTH_BYTES` (one huge key among
    many small ones).
    """
    m = len(values)
    offsets_buf, data_buf = values.buffers()[1], values.buffers()[2]
    if m == 0 or offsets_buf is None or data_buf is None:
        return _FixedKeys(np.zeros(m, dtype="S1"), 0, 0)
    offsets = np.frombuffer(offsets_buf, dtype=np.int32, count=m + 1, offset=4 * values.offset)
    lengths = np.diff(offsets)
    width, shortest = int(lengths.max()), int(lengths.min())
    if width == 0:
        return _FixedKeys(np.zeros(m, dtype="S1"), 0, 0)
    data = np.frombuffer(data_buf, dtype=np.uint8)
    if shortest == width:  # every last byte, by a strided view
        start = int(offsets[0])
        last = data[start + width - 1 : start + m * width : width]
    else:
        last = data[offsets[1:][lengths > 0] - 1]
    zero_ending = bool((last == 0).any())
    if not zero_ending and shortest == width:
        keys = np.frombuffer(data_buf, dtype=f"S{width}", count=m, offset=int(offsets[0]))
        return _FixedKeys(keys, width, 0, exact=True)
    suffix = 0 if not zero_ending else (2 if width < 1 << 16 else 4)
    if (width + suffix) * m > _MAX_FIXED_WIDTH_BYTES:
        return None
    parts = [values, pc.binary_repeat(pa.scalar(b"\x00"), pa.array(width - lengths))]
    if suffix:
        length_bytes = lengths.astype(">u2" if suffix == 2 else ">u4").tobytes()
        fixed = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(suffix), m, [None, pa.py_buffer(length_bytes)]
        )
        parts.append(fixed.cast(pa.binary()))
    joined = pc.binary_join_element_wise(*parts, b"")
    joined_data = joined.buffers()[2]
    assert joined_data is not None
    keys = np.frombuffer(joined_data, dtype=f"S{width + suffix}", count=m)
    return _FixedKeys(keys, width, suffix)


@dataclass
class _Field:
    """One field of the packed sort key: ``base - values`` (descending) or ``values - base``.

    Attributes:
        values: Integer values, one per cell.
        base: For a descending field the maximum, else 0 (``values`` are then >= 0 codes).
        bits: Bits the field needs (0: all values are equal, the field is left out).
        descending: Whether larger values sort first.
    """

    values: _IntArray
    base: int
    bits: int
    descending: bool = False

    def unsigned(self, dtype: type[np.unsignedinteger[Any]]) -> _IntArray:
        """The field's value per cell as ``dtype`` (exact, the field must fit)."""
        if not self.descending:
            return self.values.astype(dtype, copy=False)
        # base - v, computed modulo 2**64 on the two's-complement bits, is exact as the
        # true difference lies in [0, 2**bits); so is its truncation to a narrower dtype.
        wide = self.values.astype(np.int64, copy=False).view(np.uint64)
        if dtype is np.uint64:
            result: _IntArray = np.subtract(np.uint64(self.base % (1 << 64)), wide)
            return result
        narrow = wide.astype(dtype)
        return np.subtract(dtype(self.base % (1 << np.iinfo(dtype).bits)), narrow, out=narrow)


def _descending(values: _IntArray) -> _Field:
    high, low = int(values.max()), int(values.min())
    return _Field(values, high, (high - low).bit_length(), descending=True)


@dataclass
class _SortKey:
    """The sort key of merged cells when it fits in one machine word.

    Attributes:
        ordered: The key of each cell, in merged order.
        row_shift: Right shift that leaves only the row field.
        column_shift: Right shift that leaves only the row and qualifier fields.
    """

    ordered: _IntArray
    row_shift: int
    column_shift: int

    def neighbours_equal(self) -> tuple[_BoolArray, _BoolArray]:
        """``(row_eq, col_eq)`` of neighbouring merged cells."""
        differ = self.ordered[1:] ^ self.ordered[:-1]
        width = self.ordered.dtype.itemsize * 8

        def below(shift: int) -> _BoolArray:
            if shift >= width:  # nothing above the shift: all equal
                return np.ones(differ.size, dtype=bool)
            result: _BoolArray = differ < self.ordered.dtype.type(1 << shift)
            return result

        return below(self.row_shift), below(self.column_shift)


def _stable_sort(fields: list[_Field], n: int) -> tuple[_IntArray, _SortKey | None]:
    """Stable sort order of ``n`` cells by ``fields`` (row, qualifier, ts, type).

    Fields are packed into as few words as they fit in whole (the smallest of uint32 and
    uint64 for one word), then sorted by one stable argsort or, when more than 64 bits are
    needed, a lexsort of the words. numpy's stable sort of 32/64-bit integers is a timsort,
    which finds the runs' presorted stretches and merges them: about n log k work for k
    overlapping runs, not n log n.

    Returns:
        The order, and the packed key in merged order when it fit in one word.
    """
    total = sum(f.bits for f in fields)
    if total == 0:
        return np.arange(n, dtype=np.int64), None
    if total <= 64:
        dtype: type[np.unsignedinteger[Any]] = np.uint32 if total <= 32 else np.uint64
        key = np.zeros(n, dtype=dtype)
        for f in fields:
            if f.bits:
                key <<= dtype(f.bits)
                key |= f.unsigned(dtype)
        order: _IntArray = np.argsort(key, kind="stable")
        below_row = total - fields[0].bits
        below_column = below_row - fields[1].bits
        return order, _SortKey(key[order], below_row, below_column)
    words: list[_IntArray] = []
    word: _IntArray | None = None
    used = 0
    for f in fields:
        if not f.bits:
            continue
        if word is None or used + f.bits > 64:
            if word is not None:
                words.append(word)
            word, used = f.unsigned(np.uint64).copy(), f.bits
        else:
            word <<= np.uint64(f.bits)
            word |= f.unsigned(np.uint64)
            used += f.bits
    assert word is not None
    words.append(word)
    return np.lexsort(words[::-1]), None

"""Decoding a column file's text columns through their dictionaries.

pyarrow's Parquet reader turns a dictionary-encoded text column into dense values one
value at a time. Reading the column as an Arrow dictionary (its pages as they are) and
then taking the values in one vectorized step gives the same column for about half the
CPU: the columns the analytics bench's wide read needs from its 8 column files decode in
43 ms of CPU (one thread) instead of 54 ms (each of its 4 text columns: 8.6 ms -> 4.7 ms),
less than ``pyarrow.parquet.read_table`` takes for the same data as one file (45 ms).

Only columns whose every row group was written with a dictionary qualify: a chunk of
plain-encoded text would be hashed into a dictionary value by value, which costs more.

Codes (carriers, airports, currencies, countries) often have dictionaries of one length
and no nulls: then every value's place in the dense column is known in advance, and one
compiled loop copies each row's bytes from its dictionary entry into it
(:func:`_same_length`; the bench's 16 text columns a wide read decodes: 14 to 9 ms of
CPU).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cellstore.core import pool
from cellstore.core.codecs import stored_parts

__all__ = ["as_dense", "dictionary_columns"]


def dictionary_columns(metadata: pq.FileMetaData) -> frozenset[str]:
    """The file's top-level text columns whose every row group has a dictionary page.

    Text: Parquet ``BYTE_ARRAY`` columns (Arrow string or binary). Only their chunks'
    dictionary offsets are looked at (no statistics are parsed).
    """
    schema = metadata.schema
    text = [
        i
        for i in range(len(schema))
        if schema.column(i).physical_type == "BYTE_ARRAY" and "." not in schema.column(i).path
    ]
    groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
    return frozenset(
        schema.column(i).path
        for i in text
        if groups and all(rg.column(i).has_dictionary_page for rg in groups)
    )


def as_dense(table: pa.Table, names: Iterable[str]) -> pa.Table:
    """``table`` with its dictionary columns among ``names`` decoded to their values' type.

    Each decoded column is one chunk (as a dense read gives it); its field keeps its name,
    nullability and metadata.
    """
    schema = table.schema
    for name in names:
        i = schema.get_field_index(name)
        if i < 0:
            continue
        field = schema.field(i)
        if not pa.types.is_dictionary(field.type):
            continue
        dense = field.type.value_type
        chunks = table.column(i).chunks
        values = _same_length(chunks, dense)
        if values is None:
            # the row groups' dictionaries are unified by the concatenation, then one take
            one = (chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)) if chunks else None
            values = pa.array([], dense) if one is None else one.cast(dense)
        table = table.set_column(i, field.with_type(dense), pa.chunked_array([values], dense))
    return table


#: Dense text types :func:`_same_length` writes (32-bit offsets).
_SMALL_TEXT = (pa.string(), pa.binary())


def _same_length(chunks: Sequence[pa.Array], dense: pa.DataType) -> pa.Array | None:
    """Dictionary chunks decoded as one array, when every entry has one length.

    So when the chunks hold no null (indices or entries), every entry of every chunk's
    dictionary has the same byte length ``w``, and ``dense`` has 32-bit offsets: row
    ``k``'s value is then bytes ``[k * w, (k + 1) * w)`` of the result. None otherwise
    (the caller casts).
    """
    if dense not in _SMALL_TEXT or not chunks:
        return None
    parts = []
    for c in chunks:
        entries = c.dictionary
        if c.null_count or entries.null_count or not len(entries) or entries.type != dense:
            return None
        parts.append((*stored_parts(entries), c.indices.to_numpy(zero_copy_only=False)))
    width = int(parts[0][0][1] - parts[0][0][0])
    n = sum(len(c) for c in chunks)
    if n * width >= 2**31:
        return None
    out = pool.empty(n * width, np.uint8)
    at = 0
    for offsets, data, indices in parts:
        # (checks every entry's length and every index, then copies)
        if not _copy_entries(offsets, data, width, indices, out, at):
            return None
        at += len(indices) * width
    ends = pool.empty(n + 1, np.int32)
    _fixed_ends(width, ends)  # (n * width < 2**31)
    return pa.Array.from_buffers(dense, n, [None, pa.py_buffer(ends), pa.py_buffer(out)])


@numba.njit(cache=True, nogil=True)
def _fixed_ends(width: int, ends: np.ndarray) -> None:
    """The offsets of values of ``width`` bytes each (compiled: no GIL held)."""
    for k in range(len(ends)):
        ends[k] = k * width


@numba.njit(cache=True, nogil=True)
def _copy_entries(
    offsets: np.ndarray,
    data: np.ndarray,
    width: int,
    indices: np.ndarray,
    out: np.ndarray,
    at: int,
) -> bool:
    m = len(offsets) - 1
    for j in range(m):
        if offsets[j + 1] - offsets[j] != width:
            return False
    first = offsets[0]
    for k in range(len(indices)):
        i = indices[k]
        if i < 0 or i >= m:  # (never so from the Parquet reader; the cast says what is wrong)
            return False
        s = first + i * width
        o = at + k * width
        for b in range(width):
            out[o + b] = data[s + b]
    return True

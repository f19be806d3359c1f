"""Row keys from typed key columns in one pass (docs/format.md 11.3).

:func:`encode_one_pass` is the fast path of :meth:`RowKeySpec.encode
<cellstore.core.rowkey.spec.RowKeySpec.encode>` for key columns that are already of their
fields' types and hold no null: one numba kernel reads the columns' Arrow buffers as
they are (text offsets and data, no copy), computes every key's length (each text
field's length plus the fixed widths), then writes every field's bytes straight into
the output buffer. Numbers become order-preserving unsigned words before the kernel (a
vectorized step per field), so the kernel only copies bytes. The bytes are exactly
:func:`~cellstore.core.rowkey.fields.encode_pieces`' (tested against it).

Anything the fast path does not cover gives None and the caller takes the general path,
which also reports the bad records: a field hashed, fixed-width, reversed or a reverse
timestamp; a column of another type or with nulls; a 0x00 byte in a terminated text
field; an empty key or one too long.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import numba
import numpy as np
import pyarrow as pa

from cellstore.core import pool
from cellstore.core.cells import MAX_ROW_LENGTH
from cellstore.core.codecs import float_bits, one_array
from cellstore.core.rowkey.fields import KeyType

if TYPE_CHECKING:
    from cellstore.core.rowkey.fields import KeyField, Parts

__all__ = ["encode_one_pass"]

#: Field kinds of the kernel.
_TEXT: Final = 0
_NUMBER: Final = 1

#: No bytes (a text column whose values are all empty may have no data buffer).
_NO_BYTES: Final = np.zeros(0, dtype=np.uint8)


def _eligible(field: KeyField, column: pa.Array) -> bool:
    """Whether ``field``'s bytes can come from ``column`` without checks or conversions."""
    if field.hash is not None or field.width is not None or field.reverse:
        return False
    if field.reverse_timestamp or column.null_count:
        return False
    typ = field.type
    strings = column.type in (pa.string(), pa.large_string())
    if typ is KeyType.STRING:  # valid UTF-8 by the column's type
        return strings
    if typ is KeyType.BYTES:
        return strings or column.type in (pa.binary(), pa.large_binary())
    return bool(column.type == typ.arrow_type)


def _order_words(field: KeyField, column: pa.Array) -> np.ndarray:
    """Each value as the unsigned word whose big-endian bytes are its key bytes.

    The word's top byte is the key's first (``size`` bytes of it are written); signed
    integers have their sign bit flipped, floats are IEEE bits made order-preserving
    (negatives inverted, positives with the sign bit set; ``-0.0`` is ``0.0``, NaN
    canonical), as :func:`~cellstore.core.rowkey.fields.order_bytes` gives them.
    """
    values = column.to_numpy(zero_copy_only=False)
    size = field.type.size or 0
    bits = 8 * size
    if field.type.is_float:
        x = np.where(values == 0, values.dtype.type(0), values)
        raw = float_bits(x).astype(np.uint64)
        sign = np.uint64(1 << (bits - 1))
        mask = np.uint64((1 << bits) - 1)
        negative = (raw & sign) != 0
        return np.where(negative, ~raw & mask, raw | sign)
    unsigned = pool.empty(len(values), np.uint64)
    unsigned[:] = values.view(np.dtype(f"u{size}"))
    if field.type.signed:
        unsigned ^= np.uint64(1 << (bits - 1))
    return unsigned


def encode_one_pass(
    fields: tuple[KeyField, ...],
    columns: Sequence[pa.Array | pa.ChunkedArray],
    *,
    salted: bool,
) -> Parts | None:
    """The logical keys' ``(offsets, data)``, or None when the general path must encode.

    Args:
        fields: The spec's fields, in key order.
        columns: Each field's column (same length; a column of one chunk is read in
            place, one of several chunks is combined first).
        salted: The key gets a salt byte later (counts toward the longest key).
    """
    columns = [one_array(c) for c in columns]
    n = len(columns[0]) if columns else 0
    if not n or not all(_eligible(f, c) for f, c in zip(fields, columns, strict=True)):
        return None
    last = len(fields) - 1
    k = len(fields)
    kinds = np.zeros(k, dtype=np.int8)
    slots = np.zeros(k, dtype=np.int64)
    sizes = np.zeros(k, dtype=np.int64)
    terminated = np.zeros(k, dtype=np.bool_)
    invert = np.zeros(k, dtype=np.uint8)
    offsets: list[np.ndarray] = []
    data: list[np.ndarray] = []
    words: list[np.ndarray] = []
    for i, (f, col) in enumerate(zip(fields, columns, strict=True)):
        invert[i] = 0xFF if f.descending else 0
        if f.type.is_text:
            kinds[i], slots[i] = _TEXT, len(offsets)
            terminated[i] = f.terminated(last=i == last)
            offs, values = _text_buffers(col)
            offsets.append(offs)
            data.append(values)
        else:
            kinds[i], slots[i] = _NUMBER, len(words)
            sizes[i] = f.type.size or 0
            words.append(_order_words(f, col))
    wide = any(o.dtype == np.int64 for o in offsets)
    offsets = [o.astype(np.int64) for o in offsets] if wide else offsets
    text_offsets = _padded(offsets, np.zeros(1, dtype=np.int64 if wide else np.int32))
    # (the outputs from Arrow's pool: no fresh pages a read, :mod:`cellstore.core.pool`)
    out_offsets = pool.empty(n + 1, np.int64)
    total = _lengths(
        kinds, sizes, terminated, text_offsets, slots, n, MAX_ROW_LENGTH - int(salted), out_offsets
    )
    if total < 0:
        return None  # an empty or too long key
    out = pool.empty(total, np.uint8)
    at = pool.empty(n, np.int64)
    status = _encode(
        kinds, slots, sizes, terminated, invert, text_offsets,
        _padded(data, np.zeros(0, dtype=np.uint8)),
        _padded(words, np.zeros(0, dtype=np.uint64)),
        n, out_offsets, out, at,
    )  # fmt: skip
    if status != _DONE:
        return None  # a 0x00 in a terminated field
    return out_offsets, out


def _text_buffers(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string or binary column's offsets (its own, from its slice) and data buffer.

    Zero-copy views: value ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    """
    bufs = column.buffers()
    large = column.type in (pa.large_string(), pa.large_binary())
    raw = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)
    offsets = raw[column.offset : column.offset + len(column) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else _NO_BYTES
    return offsets, data


def _padded(arrays: list[np.ndarray], filler: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays`` as a tuple of 2, 4, 8... (``filler`` after them): few kernel signatures.

    Every array is a read-only view: numba types read-only arrays (Arrow's buffers) apart
    from writable ones (copies, the filler), and a tuple of both cannot be indexed.
    """
    size = 2
    while size < len(arrays):
        size *= 2
    return tuple(_read_only(a) for a in (*arrays, *([filler] * (size - len(arrays)))))


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``."""
    view = array.view()
    view.flags.writeable = False
    return view


#: What :func:`_encode` says: the keys are written, or why not.
_DONE: Final = 0
_ZERO_BYTE: Final = 1  # a 0x00 byte in a terminated text field


@numba.njit(cache=True, nogil=True)
def _lengths(
    kinds: np.ndarray,
    sizes: np.ndarray,
    terminated: np.ndarray,
    text_offsets: tuple[np.ndarray, ...],
    slots: np.ndarray,
    n: int,
    limit: int,
    out_offsets: np.ndarray,
) -> int:  # pragma: no cover - compiled (tested through encode_one_pass)
    """Every record's key's end in ``out_offsets``; returns their total (-1: a bad length).

    A key's length is the fixed bytes plus its text fields' lengths; an empty key or one
    over ``limit`` gives -1.
    """
    nf = len(kinds)
    fixed = 0
    for f in range(nf):
        fixed += sizes[f] if kinds[f] == _NUMBER else (1 if terminated[f] else 0)
    # each key's length, field by field (tight loops), then the offsets as their sums
    out_offsets[0] = 0
    for i in range(n):
        out_offsets[i + 1] = fixed
    for f in range(nf):
        if kinds[f] == _TEXT:
            offs = text_offsets[slots[f]]
            for i in range(n):
                out_offsets[i + 1] += offs[i + 1] - offs[i]
    total = 0
    for i in range(n):
        length = out_offsets[i + 1]
        if length == 0 or length > limit:
            return -1
        total += length
        out_offsets[i + 1] = total
    return total


@numba.njit(cache=True, nogil=True)
def _encode(
    kinds: np.ndarray,
    slots: np.ndarray,
    sizes: np.ndarray,
    terminated: np.ndarray,
    invert: np.ndarray,
    text_offsets: tuple[np.ndarray, ...],
    text_data: tuple[np.ndarray, ...],
    words: tuple[np.ndarray, ...],
    n: int,
    out_offsets: np.ndarray,
    out: np.ndarray,
    at: np.ndarray,
) -> int:  # pragma: no cover - compiled (tested through encode_one_pass)
    """Every record's key written into ``out`` at ``out_offsets`` (:func:`_lengths`).

    Field by field (each a tight loop over the records), every record's bytes from its
    write position on (``at``: a work array of ``n``); a 0x00 byte in a terminated text
    field stops with ``_ZERO_BYTE``.
    """
    nf = len(kinds)
    for i in range(n):
        at[i] = out_offsets[i]
    for f in range(nf):
        inv = invert[f]
        if kinds[f] == _TEXT:
            offs = text_offsets[slots[f]]
            data = text_data[slots[f]]
            term = terminated[f]
            for i in range(n):
                pos = at[i]
                for j in range(offs[i], offs[i + 1]):
                    b = data[j]
                    if term and b == 0:
                        return _ZERO_BYTE
                    out[pos] = b ^ inv
                    pos += 1
                if term:
                    out[pos] = inv
                    pos += 1
                at[i] = pos
            continue
        row = words[slots[f]]
        size = sizes[f]
        if size == 4:  # the common width, unrolled
            for i in range(n):
                x = np.uint32(row[i])
                pos = at[i]
                out[pos] = np.uint8(x >> np.uint32(24)) ^ inv
                out[pos + 1] = np.uint8((x >> np.uint32(16)) & np.uint32(0xFF)) ^ inv
                out[pos + 2] = np.uint8((x >> np.uint32(8)) & np.uint32(0xFF)) ^ inv
                out[pos + 3] = np.uint8(x & np.uint32(0xFF)) ^ inv
                at[i] = pos + 4
            continue
        for i in range(n):
            w = row[i]
            pos = at[i]
            for b in range(size):
                out[pos + b] = (
                    np.uint8((w >> np.uint64(8 * (size - 1 - b))) & np.uint64(0xFF)) ^ inv
                )
            at[i] = pos + size
    return _DONE

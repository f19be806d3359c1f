"""Row keys from typed key columns in one pass (docs/format.md 11.3).

:func:`encode_one_pass` is the fast path of :meth:`RowKeySpec.encode
<cellstore.core.rowkey.spec.RowKeySpec.encode>` for key columns that are already of their
fields' types and hold no null: the key's length is computed first (each text field's
lengths plus the fixed widths), then one numba kernel writes every field's bytes straight
into the output buffer, record by record. Numbers become order-preserving unsigned words
before the kernel (a vectorized step per field), so the kernel only copies bytes. The
bytes are exactly :func:`~cellstore.core.rowkey.fields.encode_pieces`' (tested against it).

Anything the fast path does not cover gives None and the caller takes the general path,
which also reports the bad records: a field hashed, fixed-width, reversed or a reverse
timestamp; a column of another type or with nulls; a 0x00 byte in a terminated text
field; an empty key or one too long.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import numba
import numpy as np
import pyarrow as pa

from cellstore.core.cells import MAX_ROW_LENGTH
from cellstore.core.codecs import binary_parts, float_bits
from cellstore.core.rowkey.fields import KeyType

if TYPE_CHECKING:
    from cellstore.core.rowkey.fields import KeyField, Parts

__all__ = ["encode_one_pass"]

#: Field kinds of the kernel.
_TEXT: Final = 0
_NUMBER: Final = 1


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
    unsigned: np.ndarray = values.view(np.dtype(f"u{size}")).astype(np.uint64)
    if field.type.signed:
        unsigned ^= np.uint64(1 << (bits - 1))
    return unsigned


def encode_one_pass(
    fields: tuple[KeyField, ...], columns: list[pa.Array], *, salted: bool
) -> Parts | None:
    """The logical keys' ``(offsets, data)``, or None when the general path must encode.

    Args:
        fields: The spec's fields, in key order.
        columns: Each field's column (same length, not chunked).
        salted: The key gets a salt byte later (counts toward the longest key).
    """
    n = len(columns[0]) if columns else 0
    if not n or not all(_eligible(f, c) for f, c in zip(fields, columns, strict=True)):
        return None
    last = len(fields) - 1
    kinds = np.zeros(len(fields), dtype=np.int8)
    index = np.zeros(len(fields), dtype=np.int64)
    sizes = np.zeros(len(fields), dtype=np.int64)
    terminated = np.zeros(len(fields), dtype=np.bool_)
    invert = np.zeros(len(fields), dtype=np.uint8)
    texts = [i for i, f in enumerate(fields) if f.type.is_text]
    offs_all = np.empty((len(texts), n + 1), dtype=np.int64)
    words_all = np.empty((len(fields) - len(texts), n), dtype=np.uint64)
    text_data: list[np.ndarray] = []
    fixed = 0  # bytes every key has: numbers and terminators
    for i, (f, col) in enumerate(zip(fields, columns, strict=True)):
        invert[i] = 0xFF if f.descending else 0
        if f.type.is_text:
            offsets, data = binary_parts(col)  # offsets from 0, data just the values'
            term = f.terminated(last=i == last)
            if term and data.size and not data.all():
                return None  # a 0x00 byte in a terminated field: the general path says so
            kinds[i], index[i], terminated[i] = _TEXT, len(text_data), term
            offs_all[len(text_data)] = offsets
            text_data.append(data)
            fixed += int(term)
        else:
            kinds[i], index[i] = _NUMBER, i - len(text_data)
            sizes[i] = f.type.size or 0
            words_all[index[i]] = _order_words(f, col)
            fixed += int(sizes[i])
    # key i starts after i keys' fixed bytes and every text field's first i values
    out_offsets = np.arange(n + 1, dtype=np.int64) * fixed
    for offsets in offs_all:
        out_offsets += offsets
    lengths = np.diff(out_offsets)
    if not lengths.all() or int(lengths.max()) + int(salted) > MAX_ROW_LENGTH:
        return None
    starts = np.zeros(len(text_data) + 1, dtype=np.int64)
    np.cumsum([d.size for d in text_data], out=starts[1:])
    data_all = np.concatenate(text_data) if text_data else np.zeros(0, dtype=np.uint8)
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    _write_keys(
        kinds, index, sizes, terminated, invert, offs_all, starts, data_all, words_all,
        out_offsets, out,
    )  # fmt: skip
    return out_offsets, out


@numba.njit(cache=True, nogil=True)
def _write_keys(
    kinds: np.ndarray,
    index: np.ndarray,
    sizes: np.ndarray,
    terminated: np.ndarray,
    invert: np.ndarray,
    text_offsets: np.ndarray,
    text_starts: np.ndarray,
    text_data: np.ndarray,
    words: np.ndarray,
    out_offsets: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover - compiled (tested through encode_one_pass)
    """Write every record's key: its fields' bytes in key order, from ``out_offsets[i]``.

    Field by field (each a tight loop over the records), every record's write position
    advancing as its fields are written.
    """
    n = len(out_offsets) - 1
    at = out_offsets[:-1].copy()
    for f in range(len(kinds)):
        inv = np.uint8(invert[f])
        t = index[f]
        if kinds[f] == 0:
            base = text_starts[t]
            offs = text_offsets[t]
            term = terminated[f]
            for i in range(n):
                pos = at[i]
                for j in range(base + offs[i], base + offs[i + 1]):
                    out[pos] = text_data[j] ^ inv
                    pos += 1
                if term:
                    out[pos] = inv
                    pos += 1
                at[i] = pos
        else:
            row = words[t]
            size = sizes[f]
            for i in range(n):
                w = row[i]
                pos = at[i]
                for b in range(size):
                    out[pos + b] = (
                        np.uint8((w >> np.uint64(8 * (size - 1 - b))) & np.uint64(0xFF)) ^ inv
                    )
                at[i] = pos + size

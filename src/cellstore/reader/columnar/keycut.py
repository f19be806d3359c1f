"""Cut points of keyed column files found on the typed key fields, without encoding rows.

A keyed column file (docs/format.md 14.2) holds a row's key fields, typed, in place of
the row; its records are sorted by row. A row is the concatenation of its fields'
encodings (docs/format.md section 11), and each field's encoding is order-preserving and
self-delimiting (a fixed size, a width, or a terminator; an ascending variable-length
last field runs to the end of the key). So rows compare as the tuples of their fields
do, field by field, each in its field's direction: descending fields (and reverse
timestamps) in reverse. A cut point (the first record whose row is ``>= target``) is then
a lexicographic search over the leading fields: :func:`narrow` decodes the target's
leading fields, and narrows the records to those equal to it field by field, with binary
searches on the typed columns.

Where a field's encoding does not order like its value (``md5`` and ``md5_prefix``
hashes, byte-reversed text), where the key is salted (the salt byte sorts first and the
file holds no salt column), or where the target ends inside a field's encoding in a way
no typed comparison answers (part of a number, of a padded or descending text), the
search stops and says where the answer lies: the caller encodes only those records.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Final, TypeAlias, cast

import numpy as np
import pyarrow as pa

from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.core.rowkey.fields import LONG_MAX, order_bytes

__all__ = ["narrow", "searchable"]

#: Values of a field within the records searched: numbers or byte strings.
_Column: TypeAlias = np.ndarray | pa.Array
#: One field's value decoded from a target: a number or a byte string.
_Value: TypeAlias = np.generic | bytes

_TERMINATOR: Final = {False: 0x00, True: 0xFF}


def searchable(key: RowKeySpec) -> bool:
    """Whether :func:`narrow` can search keys of ``key`` on their typed fields at all.

    Not with a salt, an ``md5``/``md5_prefix`` hash, or a byte-reversed text field.
    """
    return key.salt_buckets is None and all(
        f.hash is None and not (f.reverse and f.type.is_text) for f in key.fields
    )


def narrow(fields: pa.Table, key: RowKeySpec, target: bytes) -> tuple[int, int, bool]:
    """Where the first record whose row is ``>= target`` lies, from the typed fields.

    Args:
        fields: Records sorted by row: one column per key field, named by field.
        key: The spec whose encoding gives the rows (:func:`searchable`).
        target: An encoded row, or any byte string.

    Returns:
        ``(lo, hi, exact)``: with ``exact`` the answer is ``lo``; otherwise it lies in
        ``lo .. hi`` (inclusive), where the records ``[lo, hi)`` are those the typed
        fields could not place (they equal the target's decoded leading fields), and the
        caller compares their encoded rows.
    """
    n = fields.num_rows
    if not searchable(key) or n == 0:
        return 0, n, n == 0
    lo, hi = 0, n
    pos = 0
    last = len(key.fields) - 1
    for i, field in enumerate(key.fields):
        if pos == len(target):
            return lo, hi, True  # every record left starts with the target: all >= it
        step = _decode_one(field, target, pos, last=i == last)
        if step is None:
            return lo, hi, False
        value, pos = step
        column = _values(fields.column(field.name), lo, hi)
        a, b = _equal_range(field, column, value)
        lo, hi = lo + a, lo + b
        if lo == hi:
            return lo, hi, True
    # every field matched: the records left are the target, or a proper prefix of it
    return (lo, hi, True) if pos == len(target) else (hi, hi, True)


def _values(column: pa.ChunkedArray, lo: int, hi: int) -> _Column:
    """The field's values of records ``[lo, hi)``: numbers as numpy, text as binary."""
    part = column.slice(lo, hi - lo).combine_chunks()
    if pa.types.is_string(part.type) or pa.types.is_large_string(part.type):
        return cast(pa.Array, part.cast(pa.binary()))
    if pa.types.is_binary(part.type):
        return cast(pa.Array, part)
    return np.asarray(part.to_numpy(zero_copy_only=False))


def _decode_one(
    field: KeyField, target: bytes, pos: int, *, last: bool
) -> tuple[_Value, int] | None:
    """The value of ``field`` encoded at ``target[pos:]`` and where the next field starts.

    None where the target ends inside the field's encoding (or holds no valid encoding of
    it there): a typed search cannot place it.
    """
    typ = field.type
    size = typ.size
    if size is not None:
        raw = target[pos : pos + size]
        if len(raw) < size:
            return None
        number = _number(field, raw)
        if number is None or (number == 0 and np.signbit(number)):
            return None  # -0.0 encodes as 0.0: below every 0.0, above every negative
        if order_bytes(field, np.array([number])).tobytes() != (
            bytes(~np.frombuffer(raw, np.uint8)) if field.descending else raw
        ):
            return None  # not a value's encoding (a NaN other than the canonical one)
        return number, pos + size
    if field.width is not None:
        raw = target[pos : pos + field.width]
        if len(raw) < field.width:
            return None
        body = bytes(~np.frombuffer(raw, np.uint8)) if field.descending else raw
        value = body.rstrip(b"\x00")
        if b"\x00" in value:
            return None  # not a padded value: no record has it
        return value, pos + field.width
    if field.terminated(last=last):
        end = target.find(bytes([_TERMINATOR[field.descending]]), pos)
        if end < 0:
            # the target ends inside the field: a record is >= it exactly when its value
            # is >= the rest bytewise (the rest holds no 0x00, and the record's terminator
            # sorts below its bytes), as if the rest were a value and the target's end
            return None if field.descending else (target[pos:], len(target))
        raw = target[pos:end]
        value = bytes(~np.frombuffer(raw, np.uint8)) if field.descending else raw
        if b"\x00" in value:
            return None
        return value, end + 1
    return target[pos:], len(target)  # an ascending last field: the rest of the key


def _number(field: KeyField, raw: bytes) -> np.generic | None:
    """The number whose order-preserving bytes (``descending`` undone) are ``raw``."""
    matrix = np.frombuffer(raw, np.uint8).copy()
    if field.descending:
        matrix = ~matrix
    typ = field.type
    size = typ.size or 0
    if field.reverse_timestamp:
        stored = int.from_bytes(matrix.tobytes(), "big", signed=True)
        if stored < 0:
            return None
        return cast(np.generic, np.array([LONG_MAX - stored], np.int64)[0])
    if typ.is_float:
        if matrix[0] >= 0x80:
            matrix[0] &= 0x7F
        else:
            matrix = ~matrix
        kind = "f"
    elif typ.signed:
        matrix[0] ^= 0x80
        kind = "i"
    else:
        kind = "u"
    number = np.frombuffer(matrix.tobytes(), f">{kind}{size}").astype(f"{kind}{size}")[0]
    return cast(np.generic, number)


def _reversed_order(field: KeyField) -> bool:
    """Whether records sort by the field's value descending."""
    return field.descending != field.reverse_timestamp


def _equal_range(field: KeyField, column: _Column, value: _Value) -> tuple[int, int]:
    """``[a, b)``: the records whose field encodes as ``value`` does, in sorted ``column``.

    Records before ``a`` encode below it, records from ``b`` above.
    """
    if isinstance(column, np.ndarray):
        assert isinstance(value, np.generic)
        return _number_range(column, value, descending=_reversed_order(field))
    n = len(column)
    seq = _Bytes(column)
    if _reversed_order(field):
        # descending text sorts by value descending (a prefix after its extensions)
        assert isinstance(value, bytes)
        a = n - bisect.bisect_right(_Reversed(seq), value)
        b = n - bisect.bisect_left(_Reversed(seq), value)
        return a, b
    assert isinstance(value, bytes)
    a = bisect.bisect_left(seq, value)
    return a, bisect.bisect_right(seq, value, lo=a)


def _number_range(column: np.ndarray, value: np.generic, *, descending: bool) -> tuple[int, int]:
    """:func:`_equal_range` of a numeric field (NaN sorts last ascending, as encoded)."""
    if column.dtype.kind == "f" and bool(np.isnan(value)):
        nan = np.isnan(column)
        if descending:
            return 0, int(np.argmin(nan)) if not nan.all() else len(column)
        first = int(np.argmax(nan)) if nan.any() else len(column)
        return first, len(column)
    if not descending:
        return (
            int(np.searchsorted(column, value, side="left")),
            int(np.searchsorted(column, value, side="right")),
        )
    flipped = column[::-1]
    n = len(column)
    return (
        n - int(np.searchsorted(flipped, value, side="right")),
        n - int(np.searchsorted(flipped, value, side="left")),
    )


class _Bytes(Sequence[bytes]):
    """A binary array as a sequence of ``bytes`` (for :mod:`bisect`'s few probes)."""

    def __init__(self, array: pa.Array) -> None:
        self._array = array

    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
        value = self._array[i].as_py()
        assert isinstance(value, bytes)
        return value


class _Reversed(Sequence[bytes]):
    """A sequence in reverse order."""

    def __init__(self, seq: Sequence[bytes]) -> None:
        self._seq = seq

    def __len__(self) -> int:
        return len(self._seq)

    def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
        return self._seq[len(self._seq) - 1 - i]

"""Key fields: their settings, and the vectorized encoding of one field of many keys.

A field's bytes in the key are built in this order (docs/format.md, section 11):

1. the field's *value bytes*: UTF-8 for strings, the bytes for bytes, big-endian two's
   complement (``Bytes.toBytes``) for integers, IEEE 754 big-endian for floats;
2. ``hash="md5"``: the 16-byte MD5 of the value bytes replaces the field; stop here;
3. the *order-preserving* form: integers with the sign bit flipped (unsigned ones as is),
   floats with the IEEE transform, ``reverse_timestamp`` as ``Long.MAX_VALUE - v``;
   strings/bytes reversed (``reverse``), then padded to ``width`` with 0x00 or followed by
   a 0x00 terminator (except an ascending variable-length last field);
4. ``descending``: every byte inverted;
5. ``hash="md5_prefix"``: the first ``hash_bytes`` bytes of the MD5 of the value bytes are
   put in front.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import numba
import numpy as np
import pyarrow as pa

from cellstore.core.cells import MAX_ROW_LENGTH
from cellstore.core.codecs import (
    Problems,
    binary_parts,
    float_bits,
    gather,
    text_bytes,
    to_floats,
    to_integers,
    valid_mask,
)
from cellstore.core.rowkey.hashing import md5_parts
from cellstore.core.valuetypes import ValueType, parse_type_name
from cellstore.errors import InvalidArgumentError

__all__ = ["KeyField", "KeyHash", "KeyType", "Parts"]

#: ``Long.MAX_VALUE``, the base of reverse timestamps.
LONG_MAX: Final = 2**63 - 1

#: ``(offsets, data)`` of many byte strings (see :func:`cellstore.core.codecs.binary_parts`).
Parts = tuple[np.ndarray, np.ndarray]


class KeyType(StrEnum):
    """Type of a key field's value: a ``ValueType`` other than ``boolean``.

    Same names as :class:`~cellstore.core.valuetypes.ValueType`, the one vocabulary, which
    holds the aliases, widths and Arrow types.
    """

    STRING = "string"
    BYTES = "bytes"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"

    @classmethod
    def parse(cls, name: str | KeyType) -> KeyType:
        """The type for a name or alias (any case, :data:`cellstore.core.valuetypes.ALIASES`).

        Aliases: ``str``/``utf8``, ``binary``/``raw``, ``byte``, ``short``, ``int``/
        ``integer``, ``long``/``timestamp``, ``float``, ``double``.

        Raises:
            InvalidArgumentError: naming the valid types.
        """
        return parse_type_name(name, cls, what="key field type")

    @property
    def value_type(self) -> ValueType:
        """The same type in the one vocabulary."""
        return ValueType(self.value)

    @property
    def is_text(self) -> bool:
        """Whether values are strings or bytes (variable length)."""
        return self.value_type.is_text

    @property
    def is_float(self) -> bool:
        """Whether values are IEEE floats."""
        return self.value_type.is_float

    @property
    def signed(self) -> bool:
        """Whether an integer type is signed."""
        return self.value_type.signed

    @property
    def size(self) -> int | None:
        """Bytes of a numeric value, None for strings and bytes."""
        return self.value_type.size

    @property
    def arrow_type(self) -> pa.DataType:
        """The Arrow type decoded values have."""
        return self.value_type.arrow_type


_FIELD_KEYS: Final = frozenset(
    {"name", "type", "width", "descending", "reverse", "reverse-timestamp", "hash", "hash-bytes"}
)


class KeyHash(StrEnum):
    """How a field is hashed: replaced by its MD5, or prefixed with part of it."""

    MD5 = "md5"
    MD5_PREFIX = "md5_prefix"

    @classmethod
    def parse(cls, name: str | KeyHash | None) -> KeyHash | None:
        """``None``, ``"md5"`` or ``"md5_prefix"`` (also ``md5-prefix``), any case.

        Raises:
            InvalidArgumentError: for anything else.
        """
        if name is None or isinstance(name, KeyHash):
            return name
        try:
            return cls(str(name).strip().lower().replace("-", "_"))
        except ValueError:
            raise InvalidArgumentError(
                f"unknown key hash {name!r}; valid: md5, md5_prefix (or none)"
            ) from None


@dataclass(frozen=True, kw_only=True)
class KeyField:
    """One field of a composite row key.

    Attributes:
        name: The input column that holds the field's values.
        type: The value type (:class:`KeyType`, or an alias such as ``"long"``).
        width: Fixed width in bytes for ``string``/``bytes`` fields: values are
            right-padded with 0x00; longer values are bad records. None: variable length.
        descending: Invert the field's bytes so that it sorts in descending order.
        reverse: Reverse the bytes of a ``string``/``bytes`` value (phone numbers, order
            ids: the fast-varying end comes first). Order is that of the reversed value.
        reverse_timestamp: ``int64`` only: store ``Long.MAX_VALUE - v`` big-endian (as
            ``Bytes.toBytes(Long.MAX_VALUE - ts)``), so the newest value sorts first;
            ``v`` must be in ``0 .. Long.MAX_VALUE``.
        hash: ``"md5"``: the field is its 16-byte MD5 (fixed length, not decodable);
            ``"md5_prefix"``: the first ``hash_bytes`` bytes of the MD5 go before the field,
            which stays decodable. The MD5 is over the value bytes (UTF-8, raw bytes,
            ``Bytes.toBytes`` of the number).
        hash_bytes: Bytes of MD5 kept: 1..16 for ``md5_prefix`` (default 4), 16 for ``md5``.
    """

    name: str
    type: KeyType = KeyType.STRING
    width: int | None = None
    descending: bool = False
    reverse: bool = False
    reverse_timestamp: bool = False
    hash: KeyHash | None = None
    hash_bytes: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidArgumentError(f"a key field needs a non-empty name, not {self.name!r}")
        where = f"key field {self.name!r}"
        typ = KeyType.parse(self.type)
        object.__setattr__(self, "type", typ)
        kind = KeyHash.parse(self.hash)
        object.__setattr__(self, "hash", kind)
        for attr in ("descending", "reverse", "reverse_timestamp"):
            if not isinstance(getattr(self, attr), bool):
                raise InvalidArgumentError(f"{where}: {attr} must be true or false")
        if self.width is not None:
            if not typ.is_text:
                raise InvalidArgumentError(f"{where}: width applies to string and bytes fields")
            if isinstance(self.width, bool) or not isinstance(self.width, int):
                raise InvalidArgumentError(f"{where}: width must be an integer")
            if not 1 <= self.width <= MAX_ROW_LENGTH:
                raise InvalidArgumentError(
                    f"{where}: width must be between 1 and {MAX_ROW_LENGTH}, got {self.width}"
                )
        if self.reverse and not typ.is_text:
            raise InvalidArgumentError(f"{where}: reverse applies to string and bytes fields")
        if self.reverse_timestamp:
            if typ is not KeyType.INT64:
                raise InvalidArgumentError(f"{where}: reverse_timestamp needs an int64 field")
            if self.descending:
                raise InvalidArgumentError(
                    f"{where}: reverse_timestamp already sorts newest first; drop descending"
                )
        if kind is None:
            if self.hash_bytes is not None:
                raise InvalidArgumentError(f"{where}: hash_bytes needs hash='md5_prefix'")
            return
        if self.descending:
            raise InvalidArgumentError(f"{where}: a hashed field has no order to make descending")
        hb = self.hash_bytes
        if kind is KeyHash.MD5:
            if self.width is not None or self.reverse or self.reverse_timestamp:
                raise InvalidArgumentError(
                    f"{where}: an md5 field is replaced by its hash; width, reverse and "
                    "reverse_timestamp do not apply"
                )
            if hb not in (None, 16):
                raise InvalidArgumentError(f"{where}: an md5 field is 16 bytes (use md5_prefix)")
            object.__setattr__(self, "hash_bytes", 16)
        else:
            hb = 4 if hb is None else hb
            if isinstance(hb, bool) or not isinstance(hb, int) or not 1 <= hb <= 16:
                raise InvalidArgumentError(f"{where}: hash_bytes must be between 1 and 16")
            object.__setattr__(self, "hash_bytes", hb)

    @property
    def decodable(self) -> bool:
        """Whether the value can be read back from the key (not for ``md5`` fields)."""
        return self.hash is not KeyHash.MD5

    @property
    def prefix_bytes(self) -> int:
        """Length of the MD5 prefix before the value (0 without ``md5_prefix``)."""
        if self.hash is KeyHash.MD5_PREFIX and self.hash_bytes is not None:
            return self.hash_bytes
        return 0

    @property
    def fixed_size(self) -> int | None:
        """Bytes the field always takes in the key, or None when it varies."""
        if self.hash is KeyHash.MD5:
            return 16
        size = self.type.size if self.width is None else self.width
        return None if size is None else size + self.prefix_bytes

    @property
    def ordered(self) -> bool:
        """Whether key order follows the value's order (so ranges on it are contiguous)."""
        return self.hash is None and not self.reverse

    @property
    def order_reversed(self) -> bool:
        """Whether the key sorts larger values first (descending or reverse timestamp)."""
        return self.descending or self.reverse_timestamp

    def terminated(self, *, last: bool) -> bool:
        """Whether the value is followed by a terminator byte (0x00, 0xFF if descending).

        Variable-length string/bytes fields are, except an ascending last field, whose
        value runs to the end of the key.
        """
        return self.type.is_text and self.width is None and (self.descending or not last)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (docs/format.md, section 11)."""
        return {
            "name": self.name,
            "type": self.type.value,
            "width": self.width,
            "descending": self.descending,
            "reverse": self.reverse,
            "reverse-timestamp": self.reverse_timestamp,
            "hash": None if self.hash is None else self.hash.value,
            "hash-bytes": self.hash_bytes,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> KeyField:
        """Inverse of :meth:`to_dict`; also accepts ``_`` for ``-`` in keys (TOML style).

        Missing optional keys take their defaults. Unknown keys are refused: an option
        this release does not know could change the encoding.

        Raises:
            InvalidArgumentError: for a missing name, unknown keys or invalid settings.
        """
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a key field must be a mapping, not {d!r}")
        doc = {str(k).replace("_", "-"): v for k, v in d.items()}
        unknown = sorted(set(doc) - _FIELD_KEYS)
        if unknown:
            raise InvalidArgumentError(f"key field: unknown setting(s) {', '.join(unknown)}")
        if "name" not in doc:
            raise InvalidArgumentError(f"key field without a name: {dict(d)!r}")
        return cls(
            name=doc["name"],
            type=KeyType.parse(doc.get("type", "string")),
            width=doc.get("width"),
            descending=doc.get("descending", False),
            reverse=doc.get("reverse", False),
            reverse_timestamp=doc.get("reverse-timestamp", False),
            hash=KeyHash.parse(doc.get("hash")),
            hash_bytes=doc.get("hash-bytes"),
        )

    def describe(self, *, last: bool) -> str:
        """One readable line: type, width and every transform, in key order."""
        parts = [f"{self.name}: {self.type.value}"]
        if self.hash is KeyHash.MD5:
            return f"{self.name}: md5({self.type.value}), 16 bytes, not decodable"
        if self.hash is KeyHash.MD5_PREFIX:
            parts.append(f"md5 prefix {self.hash_bytes} bytes")
        if self.reverse:
            parts.append("reversed")
        if self.reverse_timestamp:
            parts.append("reverse timestamp (Long.MAX_VALUE - v)")
        if self.width is not None:
            parts.append(f"fixed width {self.width} (0x00 padded)")
        elif self.type.size is not None:
            parts.append(f"{self.type.size} bytes")
        elif self.terminated(last=last):
            parts.append("0x00 terminated")
        else:
            parts.append("to end of key")
        if self.descending:
            parts.append("descending")
        return ", ".join(parts)


# --------------------------------------------------------------------------------------
# Vectorized encoding of one field.
# --------------------------------------------------------------------------------------


def _fixed_parts(matrix: np.ndarray) -> Parts:
    n, width = matrix.shape
    return np.arange(n + 1, dtype=np.int64) * width, np.ascontiguousarray(matrix).reshape(-1)


def concat_parts(parts: list[Parts]) -> Parts:
    """Concatenate, value by value, several ``(offsets, data)`` of equal length."""
    if len(parts) == 1:
        return parts[0]
    n = len(parts[0][0]) - 1
    lengths = np.zeros(n, dtype=np.int64)
    for offsets, _ in parts:
        lengths += np.diff(offsets)
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    at = out_offsets[:-1].copy()
    for offsets, data in parts:
        _append_values(np.asarray(offsets, dtype=np.int64), data, at, out)
    return out_offsets, out


@numba.njit(cache=True, nogil=True)
def _append_values(offsets: np.ndarray, data: np.ndarray, at: np.ndarray, out: np.ndarray) -> None:
    """Copy value ``i`` of ``(offsets, data)`` to ``out[at[i]:]``; advance ``at[i]``."""
    for i in range(len(at)):
        pos = at[i]
        for j in range(offsets[i], offsets[i + 1]):
            out[pos] = data[j]
            pos += 1
        at[i] = pos


def numeric_value_bytes(values: np.ndarray) -> np.ndarray:
    """``(n, size)`` big-endian bytes of numbers (two's complement / IEEE, NaN canonical)."""
    if values.dtype.kind == "f":
        values = float_bits(values)
    be = np.ascontiguousarray(values.astype(values.dtype.newbyteorder(">")))
    return be.view(np.uint8).reshape(len(values), values.dtype.itemsize)


def order_bytes(field: KeyField, values: np.ndarray) -> np.ndarray:
    """``(n, size)`` order-preserving bytes of typed numbers (before ``descending``)."""
    typ = field.type
    if field.reverse_timestamp:
        flipped = (np.int64(LONG_MAX) - values.astype(np.int64)).astype(">i8")
        return np.ascontiguousarray(flipped).view(np.uint8).reshape(len(values), 8)
    raw = numeric_value_bytes(values).copy()
    if typ.is_float:
        negative = raw[:, 0] >= 0x80
        raw[negative] = ~raw[negative]
        raw[~negative, 0] |= 0x80
    elif typ.signed:
        raw[:, 0] ^= 0x80
    return raw


def typed_values(field: KeyField, column: pa.Array, problems: Problems) -> np.ndarray:
    """Numbers of a numeric field's column (bad records recorded, -0.0 made 0.0)."""
    typ = field.type
    size = typ.size or 0
    if typ.is_float:
        x = to_floats(column, bits=8 * size, field=field.name, problems=problems)
        return np.where(x == 0, x.dtype.type(0), x)
    return to_integers(
        column, bits=8 * size, signed=typ.signed, field=field.name, problems=problems
    )


def encode_field(field: KeyField, column: pa.Array, *, last: bool, problems: Problems) -> Parts:
    """The field's bytes for every record of ``column`` (bad records recorded in ``problems``).

    Returns:
        ``(offsets, data)``; bad and null records get arbitrary bytes.
    """
    return concat_parts(encode_pieces(field, column, last=last, problems=problems))


def encode_pieces(
    field: KeyField, column: pa.Array, *, last: bool, problems: Problems
) -> list[Parts]:
    """:func:`encode_field` as pieces to concatenate value by value (one copy for a key)."""
    name = field.name
    problems.add(~valid_mask(column), name, "null value in a row key field")
    typ = field.type
    if typ.is_text:
        text = text_bytes(column, utf8=typ is KeyType.STRING, field=name, problems=problems)
        offsets, data = binary_parts(text)
        value_parts: Parts = (offsets, data)
        numbers = None
    else:
        numbers = typed_values(field, column, problems)
        value_parts = _fixed_parts(numeric_value_bytes(numbers))
    if field.hash is KeyHash.MD5:
        return [_fixed_parts(md5_parts(*value_parts))]
    pieces: list[Parts] = []
    if field.hash is KeyHash.MD5_PREFIX:
        pieces.append(_fixed_parts(md5_parts(*value_parts)[:, : field.prefix_bytes]))
    if numbers is not None:
        if field.reverse_timestamp:
            problems.add(numbers < 0, name, "a reverse timestamp must be >= 0")
        body = [_fixed_parts(order_bytes(field, numbers))]
    else:
        body = _text_body(field, value_parts, last=last, problems=problems)
    if field.descending:
        body = [(offsets, ~data) for offsets, data in body]
    return pieces + body


def _text_body(field: KeyField, parts: Parts, *, last: bool, problems: Problems) -> list[Parts]:
    offsets, data = parts
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    terminated = field.terminated(last=last)
    if field.width is not None or terminated:
        zero_at = np.flatnonzero(data == 0)
        if zero_at.size:
            has_zero = np.zeros(n, dtype=bool)
            has_zero[np.searchsorted(offsets, zero_at, side="right") - 1] = True
            problems.add(has_zero, field.name, "contains a 0x00 byte")
    if field.reverse:
        ends = np.repeat(offsets[1:] + offsets[:-1] - 1, lengths)
        data = data[ends - np.arange(data.size, dtype=np.int64)]
    if field.width is not None:
        width = field.width
        problems.add(lengths > width, field.name, f"longer than its width of {width} bytes")
        matrix = np.zeros((n, width), dtype=np.uint8)
        short = np.minimum(lengths, width)
        rows = np.repeat(np.arange(n), short)
        within = np.arange(int(short.sum()), dtype=np.int64) - np.repeat(
            np.cumsum(short) - short, short
        )
        matrix[rows, within] = data[np.repeat(offsets[:-1], short) + within]
        return [_fixed_parts(matrix)]
    if terminated:
        terminator = (np.arange(n + 1, dtype=np.int64), np.zeros(n, dtype=np.uint8))
        return [(offsets, data), terminator]
    return [(offsets, data)]


def strip_padding(matrix: np.ndarray) -> Parts:
    """Values of a fixed-width field's ``(n, width)`` bytes, trailing 0x00 removed."""
    n, width = matrix.shape
    nonpad = matrix != 0
    any_byte = nonpad.any(axis=1)
    lengths = np.where(any_byte, width - np.argmax(nonpad[:, ::-1], axis=1), 0)
    return gather(matrix.reshape(-1), np.arange(n, dtype=np.int64) * width, lengths)

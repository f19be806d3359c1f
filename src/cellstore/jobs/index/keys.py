r"""Index row keys: the order-preserving encoding of indexed values, vectorized.

An index row key is the encoded indexed value -- one *part* after another -- followed by
the data row key (salt-free) as raw trailing bytes (docs/format.md, section 12)::

    part 1 | part 2 | ... | data row key

Each part encodes so that byte order is value order and no encoded value is a prefix of
another, so a prefix scan for the encoding of ``(v1, ..., vk)`` returns exactly the index
rows whose first ``k`` parts equal those values:

* ``string`` / ``bytes``: the bytes (UTF-8 for strings) with every 0x00 written as
  0x00 0xFF, then the terminator 0x00 0x01. ``"ab"`` is ``61 62 00 01`` and ``"ab\x00"`` is
  ``61 62 00 FF 00 01``: after the escape, 0x00 is always followed by 0xFF or 0x01, so the
  first 0x00 0x01 ends the value, and a shorter value sorts before its extensions.
* ``int8`` .. ``int64``: big-endian two's complement with the sign bit flipped;
  ``uint8`` .. ``uint64``: big-endian.
* ``float32`` / ``float64``: IEEE 754 big-endian, sign bit flipped for positive numbers and
  every bit inverted for negative ones; ``-0.0`` is written as ``0.0`` and NaN as Java's
  canonical NaN (it sorts after +infinity).
* ``boolean``: one byte, 0x00 (false) or 0x01 (true).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.codecs import (
    binary_from_parts,
    binary_parts,
    fixed_to_binary,
    gather,
    take_fixed,
    utf8_invalid,
)
from cellstore.core.rowkey import KeyField, KeyType
from cellstore.core.rowkey.fields import order_bytes
from cellstore.core.valuetypes import ValueType
from cellstore.errors import InvalidArgumentError

__all__ = [
    "ESCAPE",
    "TERMINATOR",
    "DecodedKeys",
    "IndexType",
    "decode_keys",
    "encode_parts",
    "encode_values",
    "index_keys",
]

#: Ends a string/bytes part.
TERMINATOR: Final = b"\x00\x01"
#: A 0x00 byte inside a string/bytes part.
ESCAPE: Final = b"\x00\xff"


#: How one part of an indexed value is typed, and so encoded: the one vocabulary of value
#: types (:class:`cellstore.core.valuetypes.ValueType`; this name is kept for
#: compatibility).
IndexType = ValueType


def _key_field(typ: ValueType) -> KeyField:
    """A row-key field that orders ``typ``'s values as this encoding does (booleans as uint8)."""
    key_type = KeyType.UINT8 if typ is ValueType.BOOLEAN else KeyType(typ.value)
    return KeyField(name="value", type=key_type)


# ------------------------------------------------------------------------------ encoding
def _valid(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)


def encode_part(typ: IndexType, values: pa.Array) -> pa.Array:
    """The encoded bytes of one part for every value (null stays null).

    Args:
        typ: The part's type.
        values: Typed values (:attr:`IndexType.arrow_type`, or anything that casts to it).

    Returns:
        A binary array.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if typ.is_text:
        raw = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
        escaped = pc.replace_substring(raw, pattern=b"\x00", replacement=ESCAPE)
        out: pa.Array = pc.binary_join_element_wise(escaped, pa.scalar(TERMINATOR), b"")
        return out
    valid = _valid(values)
    if typ is IndexType.BOOLEAN:
        numbers = np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint8)
    else:
        typed = values.cast(typ.arrow_type)
        numbers = np.asarray(typed.fill_null(0).to_numpy(zero_copy_only=False))
        if numbers.dtype.kind == "f":
            numbers = np.where(numbers == 0, numbers.dtype.type(0), numbers)  # -0.0 is 0.0
    matrix = order_bytes(_key_field(typ), numbers)
    return fixed_to_binary(matrix, valid)


def encode_parts(types: Sequence[IndexType], columns: Sequence[pa.Array]) -> pa.Array:
    """The encoded indexed values (all parts, in order); null where any part is null."""
    if not columns:
        raise InvalidArgumentError("an indexed value needs at least one part")
    encoded = [encode_part(t, c) for t, c in zip(types, columns, strict=True)]
    if len(encoded) == 1:
        return encoded[0]
    joined: pa.Array = pc.binary_join_element_wise(*encoded, b"")
    return joined


def index_keys(prefixes: pa.Array, rows: pa.Array) -> pa.Array:
    """Index row keys: each encoded value followed by its data row key (null stays null)."""
    joined: pa.Array = pc.binary_join_element_wise(prefixes, rows, b"")
    return joined


def _scalar(typ: IndexType, value: Any, what: str) -> pa.Array:
    if value is None:
        raise InvalidArgumentError(f"{what}: an indexed value cannot be None")
    if typ is IndexType.STRING and isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgumentError(f"{what}: {value!r} is not valid UTF-8") from None
    if typ is IndexType.BYTES and isinstance(value, str):
        value = value.encode("utf-8")
    if typ is IndexType.BOOLEAN and not isinstance(value, bool | np.bool_):
        raise InvalidArgumentError(f"{what}: expected true or false, got {value!r}")
    try:
        return pa.array([value], type=typ.arrow_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(
            f"{what}: cannot encode {value!r} as {typ.value} ({e})"
        ) from None


def encode_values(types: Sequence[IndexType], values: Sequence[Any], names: Sequence[str]) -> bytes:
    """The encoding of the leading parts ``values`` (one value per part, at most all parts).

    A prefix scan for the result finds the index rows whose first ``len(values)`` parts
    equal ``values``; the bytes are also the bound of a range over the index.

    Raises:
        InvalidArgumentError: more values than parts, None, or a value the part's type
            cannot hold (naming the part).
    """
    if len(values) > len(types):
        raise InvalidArgumentError(
            f"the index has {len(types)} part(s) ({', '.join(names)}); got {len(values)} values"
        )
    out = b""
    for typ, value, name in zip(types, values, names, strict=False):
        encoded = encode_part(typ, _scalar(typ, value, f"index part {name}"))
        out += encoded[0].as_py()
    return out


# ------------------------------------------------------------------------------ decoding
@dataclass(frozen=True)
class DecodedKeys:
    """Index row keys taken apart.

    Attributes:
        parts: The typed value of every part, one array per part (null where ``ok`` is
            false).
        rows: The data row keys (null where ``ok`` is false).
        ok: Boolean mask of the keys that parse.
    """

    parts: tuple[pa.Array, ...]
    rows: pa.Array
    ok: np.ndarray


def _terminator_hits(data: np.ndarray) -> np.ndarray:
    if data.size < 2:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero((data[:-1] == 0) & (data[1:] == 1)).astype(np.int64)


def _numbers(typ: IndexType, matrix: np.ndarray) -> np.ndarray:
    """Inverse of the order-preserving numeric encoding."""
    n = matrix.shape[0]
    size = typ.size or 0
    raw = matrix.copy()
    if typ is IndexType.BOOLEAN:
        flags: np.ndarray = raw[:, 0] != 0
        return flags
    if typ in (IndexType.FLOAT32, IndexType.FLOAT64):
        positive = raw[:, 0] >= 0x80
        raw[positive, 0] &= 0x7F
        raw[~positive] = ~raw[~positive]
        return raw.view(f">f{size}").reshape(n).astype(f"f{size}")
    if typ.value.startswith("int"):
        raw[:, 0] ^= 0x80
        return raw.view(f">i{size}").reshape(n).astype(f"i{size}")
    return raw.view(f">u{size}").reshape(n).astype(f"u{size}")


def decode_keys(types: Sequence[IndexType], keys: pa.Array | pa.ChunkedArray) -> DecodedKeys:
    """Take index row keys apart into typed part values and data row keys, vectorized.

    Keys that do not parse (cut short, a bad escape, no data row key, invalid UTF-8 in a
    string part) are marked in :attr:`DecodedKeys.ok` and give nulls.
    """
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    n = len(keys)
    offsets, data = binary_parts(keys.fill_null(b"") if keys.null_count else keys)
    pos = offsets[:-1].copy()
    end = offsets[1:]
    ok = _valid(keys)
    hits = np.append(_terminator_hits(data), np.iinfo(np.int64).max)
    raw_parts: list[tuple[IndexType, Any]] = []
    for typ in types:
        if typ.is_text:
            nxt = hits[np.searchsorted(hits, pos, side="left")]
            found = nxt <= end - 2  # (the sentinel must not overflow)
            ok &= found
            lengths = np.where(ok, nxt - pos, 0)
            offs, dat = gather(data, pos, lengths)
            escaped = binary_from_parts(offs, dat)
            zeros = pc.count_substring(escaped, b"\x00").to_numpy(zero_copy_only=False)
            escapes = pc.count_substring(escaped, ESCAPE).to_numpy(zero_copy_only=False)
            ok &= zeros == escapes
            value = pc.replace_substring(escaped, pattern=ESCAPE, replacement=b"\x00")
            if typ is IndexType.STRING:
                ok &= ~utf8_invalid(*binary_parts(value))
            raw_parts.append((typ, value))
            pos = np.where(found, nxt + 2, end)
        else:
            size = typ.size or 0
            ok &= pos + size <= end
            raw_parts.append((typ, take_fixed(data, pos, size, ok)))
            pos = np.minimum(pos + size, end)
    ok &= pos < end  # a data row key follows
    offs, dat = gather(data, pos, np.where(ok, end - pos, 0))
    rows = binary_from_parts(offs, dat, ok)
    parts: list[pa.Array] = []
    for typ, value in raw_parts:
        if typ.is_text:
            v_offs, v_dat = binary_parts(value)
            if not ok.all():
                v_offs, v_dat = gather(v_dat, v_offs[:-1], np.where(ok, np.diff(v_offs), 0))
            parts.append(binary_from_parts(v_offs, v_dat, ok, typ.arrow_type))
        else:
            parts.append(pa.array(_numbers(typ, value), type=typ.arrow_type, mask=~ok))
    if n == 0:
        ok = np.zeros(0, dtype=bool)
    return DecodedKeys(tuple(parts), rows, ok)

"""Turning predicates on key fields into raw row-key ranges ``[start, stop)``.

Every field encoding is *prefix-free* (fixed width, or terminated) except an ascending
variable-length last field, and order-preserving unless hashed or reversed. So the keys
whose leading fields equal given values are exactly the keys starting with those fields'
bytes ``P``, and the keys whose next field lies between two bounds form one contiguous
range after ``P``. A descending field (or a reverse timestamp) sorts larger values first,
so its lower bound gives the range's stop and its upper bound the start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from cellstore.core.codecs import Problems
from cellstore.core.keys import RowRange, prefix_stop
from cellstore.core.rowkey.fields import LONG_MAX, KeyField, KeyType, encode_field
from cellstore.core.rowkey.hashing import salt_parts
from cellstore.errors import InvalidArgumentError

__all__ = ["bucket_ranges", "encode_scalar", "logical_range", "scalar_array", "successor"]

#: A raw row-key range (the one row-range type, :class:`~cellstore.core.keys.RowRange`).
KeyRange = RowRange
#: The smallest key greater than every key starting with a prefix.
successor = prefix_stop


def scalar_array(name: str, value: Any) -> pa.Array:
    """A one-element Arrow array of a Python value (integers beyond int64 as uint64).

    Raises:
        InvalidArgumentError: naming the field, for values Arrow cannot hold.
    """
    typ = None
    if isinstance(value, int | np.integer) and not isinstance(value, bool) and value > LONG_MAX:
        typ = pa.uint64()
    try:
        return pa.array([value], type=typ)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgumentError(f"key field {name!r}: cannot encode {value!r} ({exc})") from None


def encode_scalar(field: KeyField, value: Any, *, last: bool) -> bytes:
    """The bytes ``field`` takes in a key for one value (with its hash prefix, terminator).

    Raises:
        InvalidArgumentError: naming the field, if the value cannot be encoded.
    """
    if value is None:
        raise InvalidArgumentError(f"key field {field.name!r}: a row key field cannot be null")
    column = scalar_array(field.name, value)
    problems = Problems(1)
    offsets, data = encode_field(field, column, last=last, problems=problems)
    if problems.bad[0]:
        _, reason = problems.reason(0)
        raise InvalidArgumentError(f"key field {field.name!r}: {reason} (got {value!r})")
    return bytes(data[offsets[0] : offsets[1]])


def _clamp_int(
    field: KeyField, value: Any, *, inclusive: bool, lower: bool
) -> tuple[int | None, bool]:
    """An integer bound as an inclusive bound inside the field's domain.

    Returns:
        ``(bound, empty)``: None means unbounded; ``empty`` means nothing can match.
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidArgumentError(f"key field {field.name!r}: bound {value!r} is not an integer")
    v = int(value)
    if not inclusive:
        v = v + 1 if lower else v - 1
    size = field.type.size or 0
    if field.reverse_timestamp:
        lo, hi = 0, LONG_MAX
    elif field.type.signed:
        lo, hi = -(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1
    else:
        lo, hi = 0, (1 << (8 * size)) - 1
    if lower:
        return (None, False) if v <= lo else (v, v > hi)
    return (None, False) if v >= hi else (v, v < lo)


def _clamp_float(
    field: KeyField, value: Any, *, inclusive: bool, lower: bool
) -> tuple[float, bool]:
    """A float bound as a bound representable in the field's type, same set of values."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidArgumentError(f"key field {field.name!r}: bound {value!r} is not a number")
    x = float(value)
    if np.isnan(x):
        raise InvalidArgumentError(f"key field {field.name!r}: a NaN bound matches nothing")
    if field.type is KeyType.FLOAT32:
        with np.errstate(over="ignore", invalid="ignore"):
            y = float(np.float32(x))
        if y < x:  # rounded down: ">= x" is "> y", "<= x" is "<= y"
            inclusive = not lower
        elif y > x:  # rounded up: ">= x" is ">= y", "<= x" is "< y"
            inclusive = lower
        x = y
    return x + 0.0, inclusive


def _clamp_text(field: KeyField, raw: bytes, *, last: bool) -> tuple[bytes, bool]:
    """A string/bytes bound cut to what the field can hold (0x00-free, within width).

    When the field's values cannot hold 0x00 or exceed the width, a bound ``b`` and its
    longest representable prefix ``t`` select the same values with ``v >= b <=> v > t``
    and ``v <= b <=> v <= t``.

    Returns:
        ``(t, truncated)``.
    """
    cut = len(raw)
    if field.width is not None or field.terminated(last=last):
        zero = raw.find(b"\x00")
        cut = cut if zero < 0 else zero
    if field.width is not None:
        cut = min(cut, field.width)
    return raw[:cut], cut < len(raw)


def _text_value(field: KeyField, value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray) and field.type is KeyType.BYTES:
        return bytes(value)
    raise InvalidArgumentError(f"key field {field.name!r}: bound {value!r} is not a {field.type}")


def logical_range(
    fields: Sequence[KeyField],
    *,
    equals: Mapping[str, Any],
    field: str | None,
    lower: Any,
    upper: Any,
    lower_inclusive: bool,
    upper_inclusive: bool,
    prefix: str | bytes | None,
) -> tuple[KeyRange | None, bytes | None]:
    """The unsalted key range for the predicates (see ``RowKeySpec.key_ranges``).

    Returns:
        ``(range, exact)``: ``range`` is None when nothing can match; ``exact`` is the
        whole logical key when equality fixes every field (so the salt is known).
    """
    names = [f.name for f in fields]
    unknown = sorted(set(equals) - set(names))
    if unknown:
        raise InvalidArgumentError(f"unknown key field(s) {', '.join(map(repr, unknown))}")
    k = len(equals)
    for f in fields[:k]:
        if f.name not in equals:
            raise InvalidArgumentError(
                "equality predicates must fix leading key fields in order; "
                f"{f.name!r} is not fixed (key fields: {', '.join(names)})"
            )
    last = len(fields) - 1
    head = b"".join(
        encode_scalar(f, equals[f.name], last=i == last) for i, f in enumerate(fields[:k])
    )
    ranged = lower is not None or upper is not None or prefix is not None
    if not ranged:
        if field is not None:
            raise InvalidArgumentError(f"field={field!r} given without lower, upper or prefix")
        if k == len(fields):
            return RowRange(head, head + b"\x00"), head
        return _bounded(head, successor(head)), None
    if k == len(fields):
        raise InvalidArgumentError("every key field is fixed by equality; nothing left to range")
    rf = fields[k]
    if field is not None and field != rf.name:
        raise InvalidArgumentError(
            f"a range must be on the key field after the equality fields ({rf.name!r}), "
            f"not {field!r}"
        )
    if not rf.ordered:
        what = "hashed" if rf.hash is not None else "reversed"
        raise InvalidArgumentError(
            f"key field {rf.name!r} is {what}: its key order is not its value order, so "
            "only equality applies"
        )
    is_last = k == last
    if prefix is not None:
        if lower is not None or upper is not None:
            raise InvalidArgumentError("give either prefix or lower/upper bounds, not both")
        return _prefix_range(rf, head, prefix, last=is_last), None
    return _bounds_range(
        rf, head, lower, upper, lower_inclusive, upper_inclusive, last=is_last
    ), None


def _bounded(start: bytes, stop: bytes | None) -> KeyRange | None:
    if stop is None:  # nothing sorts after an all-0xFF prefix: unbounded stop
        stop = b""
    found = RowRange(start, stop)
    return None if found.is_empty else found


def _prefix_range(
    field: KeyField, head: bytes, prefix: str | bytes, *, last: bool
) -> KeyRange | None:
    if not field.type.is_text:
        raise InvalidArgumentError(f"key field {field.name!r}: prefix needs a string/bytes field")
    raw = _text_value(field, prefix)
    if _clamp_text(field, raw, last=last)[1]:
        return None  # no value of the field can start with it
    body = bytes(np.frombuffer(raw, dtype=np.uint8) ^ 0xFF) if field.descending else raw
    return _bounded(head + body, successor(head + body))


def _bounds_range(
    field: KeyField,
    head: bytes,
    lower: Any,
    upper: Any,
    lower_inclusive: bool,
    upper_inclusive: bool,
    *,
    last: bool,
) -> KeyRange | None:
    open_end = field.type.is_text and field.width is None and not field.terminated(last=last)
    # Text bounds are cut to raw bytes (maybe inside a UTF-8 character): encode them as bytes.
    twin = dataclasses.replace(field, type=KeyType.BYTES) if field.type.is_text else field

    def first(v: Any) -> bytes:  # smallest key whose field is v
        return head + encode_scalar(twin, v, last=last)

    def past(v: Any) -> bytes | None:  # smallest key after every key whose field is v
        k = first(v)
        return k + b"\x00" if open_end else successor(k)

    bounds: list[tuple[Any, bool] | None] = []
    for value, inclusive, is_lower in (
        (lower, lower_inclusive, True),
        (upper, upper_inclusive, False),
    ):
        if field.type.is_float and value is None:
            value, inclusive = (float("-inf") if is_lower else float("inf")), True  # skip NaN
        if value is None:
            bounds.append(None)
            continue
        if field.type.is_float:
            value, inclusive = _clamp_float(field, value, inclusive=inclusive, lower=is_lower)
        elif field.type.is_text:
            value, truncated = _clamp_text(field, _text_value(field, value), last=last)
            if truncated:
                inclusive = not is_lower
        else:
            value, empty = _clamp_int(field, value, inclusive=inclusive, lower=is_lower)
            if empty:
                return None
            inclusive = True
            if value is None:
                bounds.append(None)
                continue
        bounds.append((value, inclusive))
    lo, hi = bounds
    if field.order_reversed:
        start_b, stop_b = hi, lo
    else:
        start_b, stop_b = lo, hi
    if start_b is None:
        start: bytes | None = head
    else:
        start = first(start_b[0]) if start_b[1] else past(start_b[0])
    if start is None:
        return None
    if stop_b is None:
        stop = successor(head)
    elif stop_b[1]:
        stop = past(stop_b[0])
    else:
        stop = first(stop_b[0])
        if not stop:  # below the empty key: nothing (b"" here is not "unbounded")
            return None
    return _bounded(start, stop)


def bucket_ranges(salt_buckets: int | None, start: bytes, stop: bytes) -> list[KeyRange]:
    """Fan a logical (unsalted) range out over every salt bucket.

    Returns:
        One range per bucket, each under its bucket byte (the whole range when unsalted);
        empty when ``start >= stop``.
    """
    if RowRange(start, stop).is_empty:
        return []
    if salt_buckets is None:
        return [RowRange(start, stop)]
    out = []
    for b in range(salt_buckets):
        salt = bytes([b])
        end = salt + stop if stop else (bytes([b + 1]) if b < 255 else b"")
        out.append(RowRange(salt + start, end))
    return out


def salt_of(salt_buckets: int, logical_key: bytes) -> int:
    """The salt bucket of one logical key (the key without its salt byte)."""
    data = np.frombuffer(logical_key, dtype=np.uint8)
    offsets = np.array([0, len(logical_key)], dtype=np.int64)
    return int(salt_parts(offsets, data, salt_buckets)[0])

"""Reading typed field values back out of encoded row keys, vectorized."""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
import pyarrow as pa

from cellstore.core.codecs import (
    Problems,
    binary_from_parts,
    gather,
    take_fixed,
    utf8_invalid,
)
from cellstore.core.rowkey.fields import LONG_MAX, KeyField, KeyType, Parts, strip_padding

__all__ = ["decode_keys"]


class _Cursor:
    """Per-key read positions over the concatenated key bytes."""

    def __init__(self, offsets: np.ndarray, data: np.ndarray, problems: Problems) -> None:
        self.data = data
        self.pos = offsets[:-1].copy()
        self.end = offsets[1:]
        self.problems = problems

    def take(self, width: int, field: str) -> np.ndarray:
        """The next ``width`` bytes of every key as an ``(n, width)`` matrix."""
        short = self.pos + width > self.end
        self.problems.add(short, field, "row key too short for this field")
        ok = ~self.problems.bad
        matrix = take_fixed(self.data, self.pos, width, ok)
        self.pos = np.minimum(self.pos + width, self.end)
        return matrix

    def until(self, terminator: int, field: str) -> Parts:
        """Bytes up to the next ``terminator`` byte, which is consumed."""
        nxt = np.empty(len(self.pos), dtype=np.int64)
        _find_byte(self.data, self.pos, self.end, terminator, nxt)
        found = nxt < self.end
        self.problems.add(~found, field, f"no 0x{terminator:02X} terminator in the row key")
        ok = ~self.problems.bad
        lengths = np.where(ok & found, nxt - self.pos, 0)
        parts = gather(self.data, self.pos, lengths)
        self.pos = np.where(found, nxt + 1, self.end)
        return parts

    def rest(self) -> Parts:
        """All remaining bytes of every key."""
        ok = ~self.problems.bad
        parts = gather(self.data, self.pos, np.where(ok, self.end - self.pos, 0))
        self.pos = self.end.copy()
        return parts


@numba.njit(cache=True, nogil=True)
def _find_byte(
    data: np.ndarray, pos: np.ndarray, end: np.ndarray, byte: int, out: np.ndarray
) -> None:
    """``out[i]``: the first offset in ``[pos[i], end[i])`` holding ``byte`` (``end[i]``: none)."""
    for i in range(len(pos)):
        j = pos[i]
        e = end[i]
        while j < e and data[j] != byte:
            j += 1
        out[i] = j


def _numbers(field: KeyField, matrix: np.ndarray) -> np.ndarray:
    typ = field.type
    size = typ.size or 0
    n = matrix.shape[0]
    if field.reverse_timestamp:
        stored = matrix.view(">i8").reshape(n).astype(np.int64)
        return np.int64(LONG_MAX) - np.maximum(stored, 0)
    raw = matrix.copy()
    if typ.is_float:
        positive = raw[:, 0] >= 0x80
        raw[positive, 0] &= 0x7F
        raw[~positive] = ~raw[~positive]
        return raw.view(f">f{size}").reshape(n).astype(f"f{size}")
    if typ.signed:
        raw[:, 0] ^= 0x80
        return raw.view(f">i{size}").reshape(n).astype(f"i{size}")
    return raw.view(f">u{size}").reshape(n).astype(f"u{size}")


def _reverse(parts: Parts) -> Parts:
    offsets, data = parts
    ends = np.repeat(offsets[1:] + offsets[:-1] - 1, np.diff(offsets))
    return offsets, data[ends - np.arange(data.size, dtype=np.int64)]


def decode_keys(
    fields: Sequence[KeyField],
    salt_buckets: int | None,
    offsets: np.ndarray,
    data: np.ndarray,
    problems: Problems,
) -> dict[str, pa.Array]:
    """Typed values of every decodable field of the keys ``(offsets, data)``.

    Malformed keys are recorded in ``problems``; their values come out as null.
    """
    cursor = _Cursor(offsets, data, problems)
    if salt_buckets is not None:
        salt = cursor.take(1, "row")[:, 0]
        problems.add(salt >= salt_buckets, "row", f"salt byte is not below {salt_buckets}")
    raw: list[tuple[KeyField, np.ndarray | Parts]] = []
    last = len(fields) - 1
    for i, field in enumerate(fields):
        if field.prefix_bytes:
            cursor.take(field.prefix_bytes, field.name)
        if not field.decodable:
            cursor.take(16, field.name)
            continue
        if field.type.size is not None:
            matrix = cursor.take(field.type.size, field.name)
            if field.descending:
                matrix = ~matrix
            if field.reverse_timestamp:
                problems.add(matrix[:, 0] >= 0x80, field.name, "reverse timestamp out of range")
            raw.append((field, _numbers(field, matrix)))
            continue
        if field.width is not None:
            matrix = cursor.take(field.width, field.name)
            if field.descending:
                matrix = ~matrix
            parts = strip_padding(matrix)
        elif field.terminated(last=i == last):
            parts = cursor.until(0xFF if field.descending else 0x00, field.name)
            if field.descending:
                parts = (parts[0], ~parts[1])
        else:
            parts = cursor.rest()
        if field.reverse:
            parts = _reverse(parts)
        if field.type is KeyType.STRING:
            problems.add(utf8_invalid(*parts), field.name, "not valid UTF-8")
        raw.append((field, parts))
    problems.add(cursor.pos != cursor.end, "row", "trailing bytes after the last key field")
    keep = ~problems.bad
    out: dict[str, pa.Array] = {}
    for field, values in raw:
        if isinstance(values, tuple):
            offs, dat = values
            if not keep.all():
                offs, dat = gather(dat, offs[:-1], np.where(keep, np.diff(offs), 0))
            out[field.name] = binary_from_parts(offs, dat, keep, field.type.arrow_type)
        else:
            out[field.name] = pa.array(values, type=field.type.arrow_type, mask=~keep)
    return out

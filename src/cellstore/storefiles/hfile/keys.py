"""KeyValue keys: parsing, HBase's printable form, and the store cell order.

Source: hbase-common ``KeyValue.java`` (key layout, ``keyToString``) and
``CellComparatorImpl`` (order). A key is ``u16 rowLength | row | u8 familyLength | family
| qualifier | i64 timestamp | u8 type``. Order: row, family, qualifier ascending (unsigned
bytes), timestamp and type descending; a key with empty family and qualifier and type
Minimum (0) sorts after every cell of its row (``createLastOnRow``).

Pure: no I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from cellstore.errors import CorruptFileError

__all__ = [
    "LATEST_TIMESTAMP",
    "TYPE_NAMES",
    "KeyValueKey",
    "compare_keys",
    "first_on_row",
    "parse_key",
    "printable_bytes",
]

#: ``HConstants.LATEST_TIMESTAMP``.
LATEST_TIMESTAMP: Final = (1 << 63) - 1
#: ``KeyValue.Type`` code -> name, as HBase prints it.
TYPE_NAMES: Final[dict[int, str]] = {
    0: "Minimum",
    4: "Put",
    8: "Delete",
    10: "DeleteFamilyVersion",
    12: "DeleteColumn",
    14: "DeleteFamily",
    255: "Maximum",
}
_TS_TYPE: Final = struct.Struct(">qB")


@dataclass(frozen=True)
class KeyValueKey:
    """The parts of one KeyValue key."""

    row: bytes
    family: bytes
    qualifier: bytes
    ts: int
    type: int

    def __str__(self) -> str:
        """``row/family:qualifier/ts/Type``, as ``KeyValue.keyToString`` prints it."""
        ts = "LATEST_TIMESTAMP" if self.ts == LATEST_TIMESTAMP else str(self.ts)
        kind = TYPE_NAMES.get(self.type, f"UNKNOWN({self.type})")
        return (
            f"{printable_bytes(self.row)}/{printable_bytes(self.family)}:"
            f"{printable_bytes(self.qualifier)}/{ts}/{kind}"
        )

    def sort_key(self) -> tuple[bytes, bool, bytes, bytes, int, int]:
        """A tuple ordering keys as ``CellComparatorImpl`` does."""
        last_on_row = not self.family and not self.qualifier and self.type == 0
        return (self.row, last_on_row, self.family, self.qualifier, -self.ts, -self.type)


def parse_key(key: bytes | memoryview, *, where: str = "key") -> KeyValueKey:
    """Split a serialized KeyValue key into its parts.

    Raises:
        CorruptFileError: if the lengths inside do not fit the key.
    """
    key = bytes(key)
    n = len(key)
    if n < 12:
        raise CorruptFileError(f"{where}: KeyValue key of {n} bytes is too short")
    rlen = int.from_bytes(key[:2], "big")
    fpos = 2 + rlen
    if fpos + 1 + 9 > n:
        raise CorruptFileError(f"{where}: row length {rlen} overruns a {n}-byte key")
    flen = key[fpos]
    qpos = fpos + 1 + flen
    if qpos + 9 > n:
        raise CorruptFileError(f"{where}: family length {flen} overruns a {n}-byte key")
    ts, kind = _TS_TYPE.unpack_from(key, n - 9)
    return KeyValueKey(key[2:fpos], key[fpos + 1 : qpos], key[qpos : n - 9], ts, kind)


def compare_keys(a: bytes, b: bytes) -> int:
    """-1, 0 or 1 as key ``a`` sorts before, with or after key ``b`` (store order)."""
    ka, kb = parse_key(a).sort_key(), parse_key(b).sort_key()
    return (ka > kb) - (ka < kb)


def first_on_row(row: bytes) -> bytes:
    """``KeyValueUtil.createFirstOnRow``: the smallest key of a row (serialized)."""
    return len(row).to_bytes(2, "big") + row + b"\x00" + _TS_TYPE.pack(LATEST_TIMESTAMP, 255)


_PRINTABLE: Final = frozenset(
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    b"`~!@#$%^&*()-_=+[]{}|;:'\",.<>/? "
)


def printable_bytes(data: bytes) -> str:
    r"""``Bytes.toStringBinary``: printable ASCII as is, everything else as ``\xNN``."""
    if all(c in _PRINTABLE for c in data):
        return data.decode("ascii")
    return "".join(chr(c) if c in _PRINTABLE else f"\\x{c:02X}" for c in data)

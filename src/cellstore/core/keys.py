r"""Printable forms of byte keys, as HBase's ``Bytes.toStringBinary`` / ``toBytesBinary``.

HBase shell users read and type row keys in this form: printable ASCII as is, every other
byte (and the backslash) as ``\\xHH`` with upper-case hex.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from cellstore.errors import InvalidArgumentError

__all__ = [
    "RowRange",
    "as_bytes",
    "from_string_binary",
    "prefix_stop",
    "split_column",
    "to_string_binary",
]

_PRINTABLE: Final = frozenset(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    + b" `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?"
)
_TABLE: Final = [chr(b) if b in _PRINTABLE else f"\\x{b:02X}" for b in range(256)]
_ESCAPE: Final = re.compile(rb"\\x([0-9a-fA-F]{2})")


def to_string_binary(data: bytes) -> str:
    """Printable form of ``data`` (``Bytes.toStringBinary``)."""
    return "".join(_TABLE[b] for b in data)


def from_string_binary(text: str) -> bytes:
    r"""Bytes of a printable form: ``\\xHH`` escapes decoded, other characters UTF-8.

    Inverse of :func:`to_string_binary` (``Bytes.toBytesBinary``).
    """
    raw = text.encode("utf-8")
    return _ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), raw)


def as_bytes(value: bytes | str, what: str) -> bytes:
    """``value`` as bytes: str is UTF-8 encoded (HBase's ``Bytes.toBytes(String)``).

    Raises:
        InvalidArgumentError: naming ``what`` for anything but bytes or str.
    """
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise InvalidArgumentError(f"{what} must be bytes or str, not {value!r}")


def split_column(name: bytes | str) -> tuple[str, bytes]:
    """A ``family:qualifier`` column name as ``(family, qualifier bytes)``.

    The first ``:`` separates, so ``family:`` names the empty qualifier.

    Raises:
        InvalidArgumentError: if there is no ``:`` or no family.
    """
    fam, sep, qual = as_bytes(name, "a column").partition(b":")
    if not sep or not fam:
        raise InvalidArgumentError(f"column must be 'family:qualifier', got {name!r}")
    return fam.decode("utf-8"), qual


def prefix_stop(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (R12.4).

    Trailing 0xFF bytes are dropped and the last remaining byte incremented.

    Returns:
        ``b""`` (unbounded) for an empty prefix; None when no such key exists (the prefix
        is all 0xFF: every key starting with it sorts last).
    """
    if not prefix:
        return b""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class RowRange(NamedTuple):
    """Row keys ``[start, stop)`` in key order: the one row-range type.

    ``start=b""`` is the first row, ``stop=b""`` unbounded (HBase's empty start and stop
    rows). Scans, key-field predicates, salt-bucket fan-out, planning and index lookups
    all speak it; being a tuple, it unpacks as ``start, stop``.
    """

    start: bytes = b""
    stop: bytes = b""

    @classmethod
    def of_prefix(cls, prefix: bytes) -> RowRange:
        """The rows starting with ``prefix`` (R12.4)."""
        return cls(prefix, prefix_stop(prefix) or b"")

    @property
    def is_empty(self) -> bool:
        """Whether no row can be in the range (``start >= stop`` with a bounded stop)."""
        return bool(self.stop) and self.start >= self.stop

    def contains(self, row: bytes) -> bool:
        """Whether ``row`` is in the range."""
        return self.start <= row and (not self.stop or row < self.stop)

    def overlaps(self, first: bytes, last: bytes) -> bool:
        """Whether any row of ``[first, last]`` (both inclusive) is in the range."""
        return last >= self.start and (not self.stop or first < self.stop)

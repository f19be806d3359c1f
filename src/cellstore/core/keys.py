r"""Printable forms of byte keys, as HBase's ``Bytes.toStringBinary`` / ``toBytesBinary``.

HBase shell users read and type row keys in this form: printable ASCII as is, every other
byte (and the backslash) as ``\\xHH`` with upper-case hex.
"""

from __future__ import annotations

import re
from typing import Final

from cellstore.errors import InvalidArgumentError

__all__ = ["as_bytes", "from_string_binary", "split_column", "to_string_binary"]

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

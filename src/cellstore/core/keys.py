r"""Printable forms of byte keys, as HBase's ``Bytes.toStringBinary`` / ``toBytesBinary``.

HBase shell users read and type row keys in this form: printable ASCII as is, every other
byte (and the backslash) as ``\\xHH`` with upper-case hex.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["from_string_binary", "to_string_binary"]

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

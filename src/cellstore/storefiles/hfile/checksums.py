"""HBase block checksums: verification of the per-chunk sums after each block.

Source: HBase ``io/hfile/ChecksumUtil.java`` (``generateChecksums``,
``validateChecksum``) and hbase-common ``util/ChecksumType.java``. A block's checksums
cover its header (final field values) plus the on-disk (compressed) payload, in chunks of
``bytesPerChecksum`` bytes from the block's first byte; each sum is a big-endian u32.
Types: 0 NULL (no sums), 1 CRC32 (``zlib.crc32``), 2 CRC32C (Castagnoli, via the
maintained ``crc32c`` package).

Pure: no I/O.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

import numpy as np

__all__ = [
    "CHECKSUM_NAMES",
    "ChecksumMismatch",
    "checksum_function",
    "find_checksum_mismatch",
]

#: ``ChecksumType`` codes.
CHECKSUM_NAMES: Final[dict[int, str]] = {0: "NULL", 1: "CRC32", 2: "CRC32C"}


@functools.cache
def _crc32c() -> Callable[[bytes | memoryview], int]:
    """The C CRC32C function (imported on first use)."""
    import crc32c

    return cast(Callable[[bytes | memoryview], int], crc32c.crc32c)


def _crc32(data: bytes | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def checksum_function(code: int) -> Callable[[bytes | memoryview], int] | None:
    """The checksum function of a ``ChecksumType`` code (None for NULL).

    Raises:
        KeyError: for an unknown code.
    """
    if code == 0:
        return None
    if code == 1:
        return _crc32
    if code == 2:
        return _crc32c()
    raise KeyError(code)


@dataclass(frozen=True)
class ChecksumMismatch:
    """The first failing checksum chunk of a block.

    Attributes:
        chunk: Zero-based chunk index within the block.
        expected: The sum stored in the file.
        actual: The sum of the bytes read.
    """

    chunk: int
    expected: int
    actual: int


def find_checksum_mismatch(
    data: bytes | memoryview, sums: bytes | memoryview, *, code: int, bytes_per_checksum: int
) -> ChecksumMismatch | None:
    """Check the chunk sums of one block.

    Args:
        data: Header plus on-disk payload (``onDiskDataSizeWithHeader`` bytes).
        sums: The stored big-endian u32 sums that follow.
        code: The header's checksum type.
        bytes_per_checksum: The header's chunk size.

    Returns:
        None when every chunk matches (or the type is NULL), else the first mismatch. A
        wrong number of stored sums is reported as a mismatch of the missing chunk.

    Raises:
        KeyError: for an unknown checksum type.
    """
    fn = checksum_function(code)
    if fn is None:
        return None
    n = len(data)
    step = bytes_per_checksum
    if step <= 0:
        return None
    view = memoryview(data)
    # One C call per chunk, compared all at once (the common, passing case).
    actual = [fn(view[k : k + step]) for k in range(0, n, step)] if n else [fn(b"")]
    stored = np.frombuffer(sums, dtype=">u4").tolist()
    if actual == stored:
        return None
    for k, got in enumerate(actual):
        if k >= len(stored):
            return ChecksumMismatch(chunk=k, expected=-1, actual=got)
        if stored[k] != got:
            return ChecksumMismatch(chunk=k, expected=stored[k], actual=got)
    return None

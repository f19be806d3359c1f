"""Block indexes: the root format and the non-root (leaf/intermediate) format.

Source: HBase ``io/hfile/HFileBlockIndex.java`` (``BlockIndexReader.readRootIndex``,
``readMultiLevelIndexRoot``, ``BlockIndexChunk.writeRoot/writeNonRoot``) and
``NoOpIndexBlockEncoder``.

* Root format (data-index root, meta index, Bloom chunk index): ``n`` entries of
  ``i64 offset | i32 onDiskSize | Hadoop VInt keyLen | key``; a multi-level data root is
  followed by 16 bytes of mid-key metadata (``i64 offset | i32 size | i32 entry``).
* Non-root format (IDXLEAF2, IDXINTE2): ``i32 n | i32 secondary[n + 1] | entries`` where
  each entry is ``i64 offset | i32 onDiskSize | key`` and ``secondary`` holds entry
  offsets relative to the end of the secondary index.

Counts are checked against the payload before they bound a loop; offsets and sizes of the
entries are checked against the file by the reader (``HFileReader``), which knows it.
Pure: no I/O. The write half is in :mod:`cellstore.storefiles.hfile.serialize`.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.limits import MIN_ROOT_ENTRY
from cellstore.storefiles.hfile.varint import read_vlong

__all__ = [
    "IndexEntry",
    "MidKeyMetadata",
    "block_range_for_rows",
    "key_row",
    "parse_non_root_index",
    "parse_root_index",
]

_ENTRY: Final = struct.Struct(">qi")
_MID: Final = struct.Struct(">qii")


@dataclass(frozen=True)
class IndexEntry:
    """One index entry: the block it points at and that block's (possibly shortened) key.

    Attributes:
        offset: File offset of the referenced block.
        size: On-disk size of the block, header and checksums included.
        key: The entry's key: a KeyValue key (data index), a name (meta index) or a Bloom
            key (Bloom chunk index).
    """

    offset: int
    size: int
    key: bytes


@dataclass(frozen=True)
class MidKeyMetadata:
    """The 16 bytes after a multi-level data-index root (``getMidKeyMetadata``)."""

    leaf_offset: int
    leaf_size: int
    entry: int


def parse_root_index(
    payload: bytes, count: int, *, where: str, with_mid_key: bool = False
) -> tuple[list[IndexEntry], MidKeyMetadata | None]:
    """Parse ``count`` root-format entries from the start of ``payload``.

    ``count`` comes from the file (trailer or Bloom meta): it is checked against what the
    payload can hold (:data:`~cellstore.storefiles.hfile.limits.MIN_ROOT_ENTRY` bytes per
    entry) before the loop, and every key length against the bytes left.

    Args:
        payload: The uncompressed payload of an IDXROOT2 block (or the tail of Bloom meta).
        count: Number of entries (from the trailer or the Bloom meta).
        where: File and block, for error messages.
        with_mid_key: Read the mid-key metadata that follows (multi-level data index).

    Returns:
        The entries and the mid-key metadata (None unless asked for and present).

    Raises:
        CorruptFileError: if the count is negative or the entries overrun the payload.
    """
    n = len(payload)
    if count < 0 or count > n // MIN_ROOT_ENTRY:
        raise CorruptFileError(
            f"{where}: root index claims {count} entries, a {n}-byte block holds at most "
            f"{n // MIN_ROOT_ENTRY}"
        )
    entries: list[IndexEntry] = []
    pos = 0
    for k in range(count):
        if pos + 12 > n:
            raise CorruptFileError(f"{where}: root index truncated at entry {k} of {count}")
        offset, size = _ENTRY.unpack_from(payload, pos)
        try:
            klen, pos = read_vlong(payload, pos + 12)
        except CorruptFileError:
            raise CorruptFileError(
                f"{where}: root index truncated at entry {k} of {count}"
            ) from None
        if klen < 0 or pos + klen > n:
            raise CorruptFileError(
                f"{where}: root index entry {k} key length {klen} overruns the block"
            )
        entries.append(IndexEntry(offset, size, payload[pos : pos + klen]))
        pos += klen
    mid = None
    if with_mid_key and pos + _MID.size <= n:
        mid = MidKeyMetadata(*_MID.unpack_from(payload, pos))
    return entries, mid


def parse_non_root_index(payload: bytes, *, where: str) -> list[IndexEntry]:
    """Parse a leaf or intermediate index block payload.

    The entry count is checked against the payload before the secondary index is read,
    and the secondary index (entry offsets) must start at 0, not go back, leave at least
    12 bytes per entry and end inside the payload, all checked at once before any entry
    is read.

    Raises:
        CorruptFileError: if the secondary index is inconsistent with the payload.
    """
    n = len(payload)
    if n < 4:
        raise CorruptFileError(f"{where}: non-root index block too short ({n} bytes)")
    (count,) = struct.unpack_from(">i", payload, 0)
    if count < 0 or 4 + 4 * (count + 1) + 12 * count > n:
        raise CorruptFileError(
            f"{where}: non-root index claims {count} entries, more than its {n} bytes hold"
        )
    base = 4 + 4 * (count + 1)
    secondary = np.frombuffer(payload, dtype=">i4", count=count + 1, offset=4).astype(np.int64)
    gaps = np.diff(secondary)
    if secondary[0] != 0 or bool(np.any(gaps < 12)) or base + int(secondary[-1]) > n:
        raise CorruptFileError(
            f"{where}: non-root index secondary offsets are inconsistent with its "
            f"{count} entries and {n} bytes"
        )
    entries: list[IndexEntry] = []
    for k in range(count):
        start, stop = base + int(secondary[k]), base + int(secondary[k + 1])
        offset, size = _ENTRY.unpack_from(payload, start)
        entries.append(IndexEntry(offset, size, payload[start + 12 : stop]))
    return entries


def key_row(key: bytes) -> bytes:
    """The row of a serialized KeyValue key (the first ``u16`` length-prefixed field)."""
    rlen = int.from_bytes(key[:2], "big")
    return key[2 : 2 + rlen]


def block_range_for_rows(
    rows: Sequence[bytes], *, start_row: bytes | None, stop_row: bytes | None
) -> tuple[int, int]:
    """Which consecutive index entries can hold rows in ``[start_row, stop_row)``.

    ``rows[i]`` is the row of entry ``i``'s key; an index key never sorts after the first
    cell of its block, and is not before the previous block's last cell. A block whose key
    row is below ``start_row`` may still hold ``start_row`` (a row can span blocks), so the
    range starts one entry before the first key row ``>= start_row``.

    Returns:
        ``(first, stop)``: entries ``first .. stop - 1`` (empty when ``first >= stop``).
    """
    first = 0
    if start_row:
        first = max(0, bisect.bisect_left(rows, start_row) - 1)
    stop = len(rows)
    if stop_row:
        stop = bisect.bisect_left(rows, stop_row)
    return first, stop

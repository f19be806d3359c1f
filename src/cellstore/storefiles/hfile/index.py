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

Pure: no I/O. The write half is in :mod:`cellstore.storefiles.hfile.serialize`.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cellstore.errors import CorruptFileError
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

    Args:
        payload: The uncompressed payload of an IDXROOT2 block (or the tail of Bloom meta).
        count: Number of entries (from the trailer or the Bloom meta).
        where: File and block, for error messages.
        with_mid_key: Read the mid-key metadata that follows (multi-level data index).

    Returns:
        The entries and the mid-key metadata (None unless asked for and present).

    Raises:
        CorruptFileError: if the entries overrun the payload.
    """
    entries: list[IndexEntry] = []
    pos = 0
    n = len(payload)
    try:
        for _ in range(count):
            offset, size = _ENTRY.unpack_from(payload, pos)
            klen, pos = read_vlong(payload, pos + 12)
            if klen < 0 or pos + klen > n:
                raise CorruptFileError(f"{where}: root index key overruns the block")
            entries.append(IndexEntry(offset, size, payload[pos : pos + klen]))
            pos += klen
    except struct.error as e:
        raise CorruptFileError(f"{where}: root index truncated ({count} entries)") from e
    mid = None
    if with_mid_key and pos + _MID.size <= n:
        mid = MidKeyMetadata(*_MID.unpack_from(payload, pos))
    return entries, mid


def parse_non_root_index(payload: bytes, *, where: str) -> list[IndexEntry]:
    """Parse a leaf or intermediate index block payload.

    Raises:
        CorruptFileError: if the secondary index is inconsistent with the payload.
    """
    if len(payload) < 4:
        raise CorruptFileError(f"{where}: non-root index block too short")
    (count,) = struct.unpack_from(">i", payload, 0)
    base = 4 + 4 * (count + 1)
    if count < 0 or base > len(payload):
        raise CorruptFileError(f"{where}: non-root index with {count} entries overruns")
    secondary = struct.unpack_from(f">{count + 1}i", payload, 4)
    entries: list[IndexEntry] = []
    for k in range(count):
        start, stop = base + secondary[k], base + secondary[k + 1]
        if stop > len(payload) or stop - start < 12:
            raise CorruptFileError(f"{where}: non-root index entry {k} is malformed")
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

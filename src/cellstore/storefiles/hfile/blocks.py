"""HFile blocks: the header, checksum verification and the decompressed payload.

Source: HBase ``io/hfile/HFileBlock.java`` (class javadoc, ``Header``, ``Writer.putHeader``
and ``finishBlock``) and hbase-common ``io/hfile/BlockType.java``. Header (big-endian):

=====  ====  ===================================================================
off    size  field
=====  ====  ===================================================================
0      8     block magic (:data:`BLOCK_MAGICS`)
8      4     onDiskSizeWithoutHeader: compressed payload plus checksum bytes
12     4     uncompressedSizeWithoutHeader
16     8     prevBlockOffset (same block type), -1 if none
24     1     checksum type (0 NULL, 1 CRC32, 2 CRC32C)      -- minor >= 1 only
25     4     bytesPerChecksum                                -- minor >= 1 only
29     4     onDiskDataSizeWithHeader (header + payload)      -- minor >= 1 only
=====  ====  ===================================================================

Without HBase checksums (v2.0) the header is 24 bytes and the payload fills the rest.
Pure: no I/O; :func:`decode_block` works on bytes already read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.checksums import CHECKSUM_NAMES, find_checksum_mismatch
from cellstore.storefiles.hfile.codecs import decompress

__all__ = [
    "BLOCK_MAGICS",
    "DATA_MAGICS",
    "Block",
    "BlockHeader",
    "check_block",
    "decode_block",
    "parse_header",
]

#: Block magic -> ``BlockType`` name.
BLOCK_MAGICS: Final[dict[bytes, str]] = {
    b"DATABLK*": "DATA",
    b"DATABLKE": "ENCODED_DATA",
    b"IDXLEAF2": "LEAF_INDEX",
    b"BLMFBLK2": "BLOOM_CHUNK",
    b"METABLKc": "META",
    b"IDXINTE2": "INTERMEDIATE_INDEX",
    b"IDXROOT2": "ROOT_INDEX",
    b"FILEINF2": "FILE_INFO",
    b"BLMFMET2": "GENERAL_BLOOM_META",
    b"DFBLMET2": "DELETE_FAMILY_BLOOM_META",
    b"IDXBLK)+": "INDEX_V1",
}
#: Magics of blocks that hold cells.
DATA_MAGICS: Final = frozenset({b"DATABLK*", b"DATABLKE"})
_BASE: Final = struct.Struct(">8siiq")
_CHECKSUM: Final = struct.Struct(">bii")


@dataclass(frozen=True)
class BlockHeader:
    """One block header.

    Attributes:
        offset: The block's offset in the file.
        block_type: ``BlockType`` name (``DATA``, ``LEAF_INDEX``...).
        on_disk_size_without_header: Payload plus checksum bytes on disk.
        uncompressed_size: Payload size after decompression.
        prev_block_offset: Offset of the previous block of the same type (-1: none).
        checksum_type: 0 NULL, 1 CRC32, 2 CRC32C (0 when the file has no checksums).
        bytes_per_checksum: Chunk size of the checksums (0 without checksums).
        on_disk_data_size_with_header: Header plus payload, without checksums.
        header_size: 33 or 24.
    """

    offset: int
    block_type: str
    on_disk_size_without_header: int
    uncompressed_size: int
    prev_block_offset: int
    checksum_type: int
    bytes_per_checksum: int
    on_disk_data_size_with_header: int
    header_size: int

    @property
    def on_disk_size(self) -> int:
        """The whole block on disk: header, payload and checksums (what indexes store)."""
        return self.header_size + self.on_disk_size_without_header

    @property
    def checksum_name(self) -> str:
        """``NULL``, ``CRC32`` or ``CRC32C``."""
        return CHECKSUM_NAMES.get(self.checksum_type, f"unknown({self.checksum_type})")


@dataclass(frozen=True)
class Block:
    """A decoded block: header plus uncompressed payload."""

    header: BlockHeader
    payload: bytes

    @property
    def block_type(self) -> str:
        """The block's ``BlockType`` name."""
        return self.header.block_type


def parse_header(
    buf: bytes | memoryview, pos: int, *, offset: int, header_size: int, where: str
) -> BlockHeader:
    """Parse the block header at ``buf[pos]`` (the block sits at file ``offset``).

    Raises:
        CorruptFileError: on a short buffer, an unknown magic or inconsistent sizes.
    """
    if pos + header_size > len(buf):
        raise CorruptFileError(f"{where}: truncated block header at offset {offset}")
    magic, on_disk, uncompressed, prev = _BASE.unpack_from(buf, pos)
    block_type = BLOCK_MAGICS.get(magic)
    if block_type is None:
        raise CorruptFileError(f"{where}: bad block magic {magic!r} at offset {offset}")
    if header_size == 33:
        ctype, per_chunk, data_size = _CHECKSUM.unpack_from(buf, pos + 24)
        if data_size < header_size or data_size > header_size + on_disk or per_chunk < 0:
            raise CorruptFileError(
                f"{where}: block at offset {offset} has inconsistent sizes "
                f"(onDiskDataSizeWithHeader {data_size}, onDiskSizeWithoutHeader {on_disk})"
            )
    else:
        ctype, per_chunk, data_size = 0, 0, header_size + on_disk
    if on_disk < 0 or uncompressed < 0:
        raise CorruptFileError(f"{where}: block at offset {offset} has negative sizes")
    return BlockHeader(
        offset=offset,
        block_type=block_type,
        on_disk_size_without_header=on_disk,
        uncompressed_size=uncompressed,
        prev_block_offset=prev,
        checksum_type=ctype,
        bytes_per_checksum=per_chunk,
        on_disk_data_size_with_header=data_size,
        header_size=header_size,
    )


def check_block(
    buf: bytes | memoryview,
    pos: int,
    *,
    offset: int,
    header_size: int,
    where: str,
    verify: bool = True,
    expect: str | None = None,
) -> BlockHeader:
    """Parse and verify the block at ``buf[pos]`` without decompressing its payload.

    The on-disk payload is ``buf[pos + header_size : pos + on_disk_data_size_with_header]``
    (the uncompressed payload itself for an uncompressed file). Args and raises as
    :func:`decode_block`.
    """
    header = parse_header(buf, pos, offset=offset, header_size=header_size, where=where)
    if expect is not None and header.block_type != expect:
        raise CorruptFileError(
            f"{where}: expected a {expect} block at offset {offset}, found {header.block_type}"
        )
    end = pos + header.on_disk_size
    if end > len(buf):
        raise CorruptFileError(
            f"{where}: block at offset {offset} is truncated ({len(buf) - pos} of "
            f"{header.on_disk_size} bytes)"
        )
    data_end = pos + header.on_disk_data_size_with_header
    if verify and header.checksum_type != 0:
        view = memoryview(buf)
        try:
            bad = find_checksum_mismatch(
                view[pos:data_end],
                view[data_end:end],
                code=header.checksum_type,
                bytes_per_checksum=header.bytes_per_checksum,
            )
        except KeyError:
            raise CorruptFileError(
                f"{where}: block at offset {offset} has unknown checksum type "
                f"{header.checksum_type}"
            ) from None
        if bad is not None:
            raise CorruptFileError(
                f"{where}: {header.checksum_name} checksum mismatch in the "
                f"{header.block_type} block at offset {offset} (chunk {bad.chunk}): expected "
                f"0x{bad.expected & 0xFFFFFFFF:08x}, actual 0x{bad.actual:08x}"
            )
    return header


def decode_block(
    buf: bytes | memoryview,
    pos: int,
    *,
    offset: int,
    header_size: int,
    codec: str,
    where: str,
    verify: bool = True,
    expect: str | None = None,
) -> Block:
    """Verify and decompress the block at ``buf[pos]`` (file ``offset``).

    Args:
        buf: Bytes holding the whole block from ``pos``.
        pos: Position of the block in ``buf``.
        offset: The block's offset in the file (for messages and the header).
        header_size: 33 (HBase checksums) or 24.
        codec: The trailer's compression codec.
        where: The file's path or URL, for error messages.
        verify: Check the HBase checksums.
        expect: If given, the ``BlockType`` name the block must have.

    Returns:
        The block with its uncompressed payload.

    Raises:
        CorruptFileError: naming the file, offset, and expected vs actual checksum when a
            checksum fails; also for truncated blocks, a wrong type and bad payloads.
    """
    header = check_block(
        buf,
        pos,
        offset=offset,
        header_size=header_size,
        where=where,
        verify=verify,
        expect=expect,
    )
    view = memoryview(buf)
    data_end = pos + header.on_disk_data_size_with_header
    payload = decompress(
        codec,
        view[pos + header_size : data_end],
        size=header.uncompressed_size,
        where=f"{where}: {header.block_type} block at offset {offset}",
    )
    return Block(header=header, payload=payload)

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
Every size in a header is checked before it is used (:func:`parse_header`), and the
payload decompresses to at most the stated size (:mod:`.codecs`).
Pure: no I/O; :func:`decode_block` works on bytes already read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.checksums import (
    CHECKSUM_NAMES,
    checksum_function,
    find_checksum_mismatch,
)
from cellstore.storefiles.hfile.codecs import decompress
from cellstore.storefiles.hfile.limits import MAX_BLOCK_BYTES

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
    buf: bytes | memoryview,
    pos: int,
    *,
    offset: int,
    header_size: int,
    where: str,
    max_block_bytes: int = MAX_BLOCK_BYTES,
) -> BlockHeader:
    """Parse the block header at ``buf[pos]`` (the block sits at file ``offset``).

    Every size is checked before it is used: none negative, the data size between the
    header and the on-disk size, and the on-disk and uncompressed sizes at most
    ``max_block_bytes`` (:data:`~cellstore.storefiles.hfile.limits.MAX_BLOCK_BYTES`).

    Raises:
        CorruptFileError: on a short buffer, an unknown magic or inconsistent sizes.
    """
    if pos < 0 or pos + header_size > len(buf):
        raise CorruptFileError(f"{where}: truncated block header at offset {offset}")
    magic, on_disk, uncompressed, prev = _BASE.unpack_from(buf, pos)
    block_type = BLOCK_MAGICS.get(magic)
    if block_type is None:
        raise CorruptFileError(f"{where}: bad block magic {magic!r} at offset {offset}")
    if on_disk < 0 or uncompressed < 0:
        raise CorruptFileError(
            f"{where}: {block_type} block at offset {offset} has negative sizes "
            f"(onDiskSizeWithoutHeader {on_disk}, uncompressedSizeWithoutHeader {uncompressed})"
        )
    if header_size == 33:
        ctype, per_chunk, data_size = _CHECKSUM.unpack_from(buf, pos + 24)
        if data_size < header_size or data_size > header_size + on_disk or per_chunk < 0:
            raise CorruptFileError(
                f"{where}: {block_type} block at offset {offset} has inconsistent sizes "
                f"(onDiskDataSizeWithHeader {data_size}, onDiskSizeWithoutHeader {on_disk}, "
                f"bytesPerChecksum {per_chunk})"
            )
    else:
        ctype, per_chunk, data_size = 0, 0, header_size + on_disk
    biggest = max(on_disk, uncompressed)
    if biggest > max_block_bytes:
        raise CorruptFileError(
            f"{where}: {block_type} block at offset {offset} claims {biggest} bytes "
            f"(onDiskSizeWithoutHeader {on_disk}, uncompressedSizeWithoutHeader {uncompressed}), "
            f"more than the {max_block_bytes}-byte block limit"
        )
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
    max_block_bytes: int = MAX_BLOCK_BYTES,
) -> BlockHeader:
    """Parse and verify the block at ``buf[pos]`` without decompressing its payload.

    The on-disk payload is ``buf[pos + header_size : pos + on_disk_data_size_with_header]``
    (the uncompressed payload itself for an uncompressed file). With ``verify``, the
    checksum bytes must be exactly one 4-byte sum per ``bytesPerChecksum`` chunk (all zero
    for the NULL type, as ``ChecksumUtil.generateChecksums`` leaves them) and every sum
    must match. Args and raises as :func:`decode_block`.
    """
    header = parse_header(
        buf,
        pos,
        offset=offset,
        header_size=header_size,
        where=where,
        max_block_bytes=max_block_bytes,
    )
    if expect is not None and header.block_type != expect:
        raise CorruptFileError(
            f"{where}: expected a {expect} block at offset {offset}, found {header.block_type}"
        )
    end = pos + header.on_disk_size
    if end > len(buf):
        raise CorruptFileError(
            f"{where}: {header.block_type} block at offset {offset} is truncated "
            f"({len(buf) - pos} of {header.on_disk_size} bytes)"
        )
    data_end = pos + header.on_disk_data_size_with_header
    if verify and header_size == 33:
        _check_sums(memoryview(buf), pos, data_end, end, header, where)
    return header


def _check_sums(
    view: memoryview, pos: int, data_end: int, end: int, header: BlockHeader, where: str
) -> None:
    """Raise unless the checksum bytes of a block are laid out right and match."""
    what = f"{where}: {header.block_type} block at offset {header.offset}"
    ctype, step = header.checksum_type, header.bytes_per_checksum
    stored = end - data_end
    if ctype == 0:
        if stored and any(view[data_end:end]):
            raise CorruptFileError(
                f"{what}: checksum type NULL, but {stored} checksum bytes are not zero"
            )
        return
    if ctype not in CHECKSUM_NAMES:
        raise CorruptFileError(f"{what} has unknown checksum type {ctype}")
    chunks = -(-(data_end - pos) // step) if step > 0 else 0
    if step <= 0 or stored != 4 * chunks:
        raise CorruptFileError(
            f"{what}: {stored} checksum bytes do not fit {header.checksum_name} sums of "
            f"{data_end - pos} bytes in {step}-byte chunks"
        )
    bad = find_checksum_mismatch(
        view[pos:data_end], view[data_end:end], code=ctype, bytes_per_checksum=step
    )
    if bad is not None:
        raise CorruptFileError(
            f"{where}: {header.checksum_name} checksum mismatch in the "
            f"{header.block_type} block at offset {header.offset} (chunk {bad.chunk}): "
            f"expected 0x{bad.expected & 0xFFFFFFFF:08x}, actual 0x{bad.actual:08x}"
        )


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
    max_block_bytes: int = MAX_BLOCK_BYTES,
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
        max_block_bytes: Most bytes the block may take on disk or uncompressed.

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
        max_block_bytes=max_block_bytes,
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


def verified_data_blocks(
    buf: bytes,
    positions: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    *,
    header_size: int,
    magic: bytes = b"DATABLK*",
    compressed: bool = False,
    max_block_bytes: int = MAX_BLOCK_BYTES,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Check many uncompressed DATA blocks of ``buf`` at once; None if any is not clean.

    With ``magic=b"DATABLKE"`` the blocks are ENCODED_DATA blocks; with ``compressed``
    their payloads are compressed (each way at most ``max_block_bytes``), and the caller
    decompresses them.

    The fast path of reading NONE files: the headers are parsed as numpy columns and the
    CRC32C/CRC32 sums of every chunk of every block are computed in one pass and compared
    with the stored sums as arrays. A block that is not a DATA block, has inconsistent
    sizes, an unusual checksum setting or a wrong sum makes the answer None; the caller
    then checks block by block (:func:`check_block`), which names the fault. ``sizes``
    are the blocks' on-disk sizes as the index gives them; a header that disagrees is not
    clean either.

    Returns:
        Each block's cell payload ``[start, end)`` in ``buf``, or None.
    """
    n = len(positions)
    if n == 0 or header_size != 33:
        return None
    data = np.frombuffer(buf, dtype=np.uint8)
    if int(positions.max()) + header_size > len(data):
        return None
    heads = data[positions[:, None] + np.arange(header_size)]
    if not bool(np.all(heads[:, :8] == np.frombuffer(magic, np.uint8))):
        return None

    def be32(col: int) -> npt.NDArray[np.int64]:
        column = np.ascontiguousarray(heads[:, col : col + 4])
        return column.view(">i4").reshape(-1).astype(np.int64)

    on_disk = be32(8)
    uncompressed = be32(12)
    ctype = heads[:, 24].astype(np.int64)
    per_chunk = be32(25)
    data_size = be32(29)
    code = int(ctype[0])
    step = int(per_chunk[0])
    if not (
        code in (1, 2)
        and step > 0
        and bool(np.all(ctype == code))
        and bool(np.all(per_chunk == step))
        and bool(np.all(on_disk >= 0))
        and bool(np.all(uncompressed >= 0))
        and bool(np.all(data_size >= header_size))
        and (compressed or bool(np.all(data_size == header_size + uncompressed)))
        and bool(np.all(data_size <= header_size + on_disk))
        and int(np.maximum(on_disk, uncompressed).max()) <= max_block_bytes
    ):
        return None
    ends = positions + data_size
    if not bool(np.all(header_size + on_disk == sizes)) or int((positions + sizes).max()) > len(
        data
    ):
        return None
    chunks = -(-data_size // step)
    if not bool(np.all(header_size + on_disk - data_size == 4 * chunks)):
        return None
    fn = checksum_function(code)
    assert fn is not None
    view = memoryview(buf)
    pairs = zip(positions.tolist(), ends.tolist(), strict=True)
    starts = np.concatenate([np.arange(p, e, step, dtype=np.int64) for p, e in pairs])
    stops = np.minimum(starts + step, np.repeat(ends, chunks))
    actual = np.fromiter(
        (fn(view[a:b]) for a, b in zip(starts.tolist(), stops.tolist(), strict=True)),
        dtype=np.uint32,
        count=len(starts),
    )
    sum_at = np.repeat(ends, chunks) + 4 * (
        np.arange(len(starts)) - np.repeat(np.cumsum(chunks) - chunks, chunks)
    )
    stored = data[sum_at[:, None] + np.arange(4)].copy().view(">u4").reshape(-1)
    if not bool(np.array_equal(actual, stored)):
        return None
    return positions + header_size, ends

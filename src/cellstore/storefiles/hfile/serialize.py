"""Serializers for the HFile v3 structures a writer emits (the write half of the reader's parsers).

Everything here produces bytes exactly as HBase 2.x writes them; each function names the
HBase class and method it follows (source: apache/hbase ``hbase-server/.../io/hfile`` and
``hbase-common/.../io``; see also ``shared/hbase-hfile-format.md``):

* block framing: header, compression and per-chunk checksums
  (``HFileBlock.Writer.finishBlock`` / ``putHeader``, ``ChecksumUtil.generateChecksums``;
  the checksum functions are the reader's :mod:`.checksums`);
* codecs with HBase's on-disk framing (``Compression.Algorithm``; Hadoop
  ``BlockCompressorStream`` for SNAPPY and LZ4, a gzip member for GZ);
* Hadoop VInt/VLong (``WritableUtils.writeVLong``), vectorized for memstore timestamps;
* root, non-root (leaf/intermediate) index chunks and mid-key metadata
  (``HFileBlockIndex.BlockIndexChunk.writeRoot/writeNonRoot/getMidKeyMetadata``), and the
  short index key of each data block (``HFileWriterImpl.getMidpoint``);
* the FileInfo block (``HFileInfo.write``) and the protobuf fixed trailer
  (``FixedFileTrailer.serializeAsPB``).

The compound Bloom filter lives in :mod:`cellstore.storefiles.hfile.bloomwrite`.
Pure: no I/O.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from cellstore.storefiles.hfile.checksums import checksum_function

__all__ = [
    "CHECKSUM_TYPES",
    "CODEC_ORDINALS",
    "HEADER_SIZE",
    "MAGIC",
    "TRAILER_SIZE",
    "Codec",
    "FramedBlock",
    "IndexEntry",
    "base128_bytes",
    "compress",
    "file_info_payload",
    "frame_block",
    "hadoop_vint",
    "mid_key_metadata",
    "midpoint_key",
    "non_root_index_payload",
    "non_root_size",
    "root_index_payload",
    "root_size",
    "trailer_bytes",
    "vint_size",
    "vlong_bytes",
]

Codec = Literal["none", "gz", "snappy", "lz4", "zstd"]

#: ``Compression.Algorithm`` ordinals as stored in the trailer's ``compression_codec``.
CODEC_ORDINALS: Final[dict[str, int]] = {"gz": 1, "none": 2, "snappy": 3, "lz4": 4, "zstd": 6}

#: ``ChecksumType`` codes (header byte 24).
CHECKSUM_TYPES: Final[dict[str, int]] = {"none": 0, "crc32": 1, "crc32c": 2}

#: Block header size with HBase checksums (every v3 file).
HEADER_SIZE: Final = 33

#: Fixed trailer size of a v3 file (``FixedFileTrailer.computeTrailerSizeByVersion``).
TRAILER_SIZE: Final = 4096

#: Block magics (``BlockType``).
MAGIC: Final[dict[str, bytes]] = {
    "DATA": b"DATABLK*",
    "ENCODED_DATA": b"DATABLKE",
    "LEAF_INDEX": b"IDXLEAF2",
    "BLOOM_CHUNK": b"BLMFBLK2",
    "META": b"METABLKc",
    "INTERMEDIATE_INDEX": b"IDXINTE2",
    "ROOT_INDEX": b"IDXROOT2",
    "FILE_INFO": b"FILEINF2",
    "GENERAL_BLOOM_META": b"BLMFMET2",
    "DELETE_FAMILY_BLOOM_META": b"DFBLMET2",
}

_TRAILER_MAGIC: Final = b'TRABLK"$'
# The timestamp and type of a ``createFirstOnRow`` key: LATEST_TIMESTAMP, Maximum.
_LATEST_MAXIMUM: Final = b"\x7f\xff\xff\xff\xff\xff\xff\xff\xff"
_PB_MAGIC: Final = b"PBUF"
# Hadoop BlockCompressorStream buffer (HBase's default io.compress.*.buffersize, 256 KiB).
_HADOOP_BUFFER: Final = 256 * 1024
# Java's GZIPOutputStream header as HBase's ReusableStreamGzipCodec writes it (OS byte 0).
_GZIP_HEADER: Final = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"


# ---------------------------------------------------------------------------------------
# Codecs


def _hadoop_block_frame(data: bytes, max_input: int, compress_chunk: object) -> bytes:
    """Hadoop ``BlockCompressorStream`` framing: ``u32 rawLen`` then ``(u32 len, chunk)+``."""
    fn = compress_chunk
    assert callable(fn)
    parts = [struct.pack(">I", len(data))]
    if not data:
        return b"".join(parts)
    for start in range(0, len(data), max_input):
        chunk = bytes(fn(data[start : start + max_input]))
        parts.append(struct.pack(">I", len(chunk)))
        parts.append(chunk)
    return b"".join(parts)


def compress(data: bytes, codec: Codec) -> bytes:
    """Compress one block payload exactly as HBase's codec for ``codec`` lays it on disk.

    * ``gz``: one gzip member with Java's header (``ReusableStreamGzipCodec``; deflate level
      6, which is zlib's and Java's default, so the bytes match HBase's);
    * ``snappy`` / ``lz4``: Hadoop ``BlockCompressorStream`` framing around raw Snappy or
      LZ4 *block* data (Hadoop ``SnappyCodec`` / ``Lz4Codec``); inputs larger than the
      256 KiB buffer minus the codec overhead are split as Hadoop does;
    * ``zstd``: one zstd frame, as Hadoop's ``ZStandardCodec`` (HBase's default ZSTD codec
      class) writes through its ``CompressorStream``.

    Args:
        data: The uncompressed payload.
        codec: Codec name.

    Returns:
        The on-disk bytes.

    Raises:
        ValueError: For an unknown codec.
    """
    if codec == "none":
        return data
    if codec == "gz":
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        body = c.compress(data) + c.flush()
        return b"".join(
            (
                _GZIP_HEADER,
                body,
                struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF),
            )
        )
    import cramjam

    if codec == "snappy":
        # SnappyCompressor overhead: bufferSize / 6 + 32.
        max_in = _HADOOP_BUFFER - (_HADOOP_BUFFER // 6 + 32)
        return _hadoop_block_frame(data, max_in, cramjam.snappy.compress_raw)
    if codec == "lz4":
        # Lz4Compressor overhead: bufferSize / 255 + 16.
        max_in = _HADOOP_BUFFER - (_HADOOP_BUFFER // 255 + 16)

        def lz4_block(chunk: bytes) -> bytes:
            return bytes(cramjam.lz4.compress_block(chunk, store_size=False))

        return _hadoop_block_frame(data, max_in, lz4_block)
    if codec == "zstd":
        return bytes(cramjam.zstd.compress(data, level=3))
    raise ValueError(f"unknown HFile codec {codec!r}")


# ---------------------------------------------------------------------------------------
# Checksums and block framing


def _checksums(buf: bytes, checksum: str, bytes_per_checksum: int) -> bytes:
    """``ChecksumUtil.generateChecksums``: one big-endian u32 per ``bytes_per_checksum`` chunk."""
    fn = checksum_function(CHECKSUM_TYPES[checksum])
    if fn is None:
        return b""
    mv = memoryview(buf)
    sums = [fn(mv[i : i + bytes_per_checksum]) for i in range(0, len(buf), bytes_per_checksum)]
    return struct.pack(f">{len(sums)}I", *sums)


@dataclass(frozen=True, slots=True)
class FramedBlock:
    """One block as it goes to disk.

    Attributes:
        data: Header + on-disk payload + checksums.
        uncompressed_size: Payload size before compression (header excluded).
    """

    data: bytes

    uncompressed_size: int

    @property
    def on_disk_size(self) -> int:
        """Size with header and checksums (what index entries record)."""
        return len(self.data)


def frame_block(
    magic: bytes,
    payload: bytes,
    *,
    codec: Codec,
    prev_offset: int,
    checksum: str = "crc32c",
    bytes_per_checksum: int = 16384,
    compressed: bytes | None = None,
) -> FramedBlock:
    """Compress ``payload`` and wrap it in a v3 block header with trailing checksums.

    Follows ``HFileBlock.Writer.finishBlock`` and ``putHeader``: the header records the
    on-disk size without header (compressed payload plus checksum bytes), the uncompressed
    payload size, the previous block of the same type, the checksum type, bytes per
    checksum and the header-plus-compressed-payload size; the checksums cover the final
    header and the compressed payload in ``bytes_per_checksum`` chunks.

    Args:
        magic: The 8-byte block magic.
        payload: Uncompressed payload.
        codec: The file's codec (every block type is compressed).
        prev_offset: Offset of the previous block of this type, or -1.
        checksum: ``crc32c`` (HBase's default), ``crc32`` or ``none``.
        bytes_per_checksum: Checksum chunk size (``hbase.hstore.bytes.per.checksum``).
        compressed: ``compress(payload, codec)`` when already done (on a writer thread).

    Returns:
        The framed block.
    """
    on_disk = compress(payload, codec) if compressed is None else compressed
    data_size = HEADER_SIZE + len(on_disk)
    n_sums = 0 if checksum == "none" else -(-data_size // bytes_per_checksum)
    header = struct.pack(
        ">8siiqBii",
        magic,
        len(on_disk) + 4 * n_sums,
        len(payload),
        prev_offset,
        CHECKSUM_TYPES[checksum],
        bytes_per_checksum,
        data_size,
    )
    body = header + on_disk
    return FramedBlock(body + _checksums(body, checksum, bytes_per_checksum), len(payload))


# ---------------------------------------------------------------------------------------
# Index keys


def _split_key(key: bytes) -> tuple[bytes, bytes, bytes]:
    rlen = (key[0] << 8) | key[1]
    row = key[2 : 2 + rlen]
    flen = key[2 + rlen]
    fam = key[3 + rlen : 3 + rlen + flen]
    return row, fam, key[3 + rlen + flen : -9]


def _first_on(row: bytes, fam: bytes = b"", qual: bytes = b"") -> bytes:
    """Serialized key of ``createFirstOnRow``/``...RowFamily``/``...RowCol`` (LATEST, Maximum)."""
    return struct.pack(">H", len(row)) + row + bytes((len(fam),)) + fam + qual + _LATEST_MAXIMUM


def _min_midpoint(left: bytes, right: bytes) -> bytes:
    """``HFileWriterImpl.getMinimumMidpointArray``."""
    n = min(len(left), len(right))
    i = 0
    while i < n and left[i] == right[i]:
        i += 1
    if i >= n:
        return right[: i + 1]
    if left[i] < 0xFF and left[i] + 1 < right[i]:
        return left[:i] + bytes((left[i] + 1,))
    return right[: i + 1]


def midpoint_key(left: bytes | None, right: bytes) -> bytes:
    """``HFileWriterImpl.getMidpoint``: a short key sorting in ``(left, right]``.

    Args:
        left: Last key of the previous block (None for the first block).
        right: First key of this block.

    Returns:
        The index key for this block.
    """
    if left is None:
        return right
    lrow, lfam, lqual = _split_key(left)
    rrow, rfam, rqual = _split_key(right)
    if lrow != rrow:
        return _first_on(_min_midpoint(lrow, rrow))
    if lfam != rfam:
        return _first_on(rrow, _min_midpoint(lfam, rfam))
    if lqual != rqual:
        return _first_on(rrow, rfam, _min_midpoint(lqual, rqual))
    return right


# ---------------------------------------------------------------------------------------
# Hadoop VInt / VLong


def hadoop_vint(value: int) -> bytes:
    """``WritableUtils.writeVLong``: Hadoop's variable-length signed long."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value = ~value
        length = -120
    tmp = value
    nbytes = 0
    while tmp != 0:
        tmp >>= 8
        nbytes += 1
    return struct.pack(">b", length - nbytes) + value.to_bytes(nbytes, "big")


def vint_size(value: int) -> int:
    """``WritableUtils.getVIntSize``."""
    if -112 <= value <= 127:
        return 1
    if value < 0:
        value = ~value
    return 1 + (value.bit_length() + 7) // 8


def vlong_bytes(values: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], bytes]:
    """Vectorized ``WritableUtils.writeVLong`` over an array.

    Args:
        values: int64 values.

    Returns:
        ``(sizes, data)``: each value's encoded size and all encodings concatenated.
    """
    v = np.asarray(values, dtype=np.int64)
    n = len(v)
    if n == 0:
        return np.zeros(0, np.int64), b""
    small = (v >= -112) & (v <= 127)
    if small.all():
        return np.ones(n, np.int64), v.astype(np.int8).tobytes()
    neg = v < 0
    mag = np.where(neg, ~v, v).astype(np.uint64)
    nbytes = np.zeros(n, np.int64)
    tmp = mag.copy()
    for _ in range(8):
        nz = tmp != 0
        nbytes += nz
        tmp >>= np.uint64(8)
    first = np.where(neg, -120 - nbytes, -112 - nbytes)
    first = np.where(small, v, first).astype(np.int8).view(np.uint8)
    mat = np.empty((n, 9), np.uint8)
    mat[:, 0] = first
    mat[:, 1:] = mag.astype(">u8").view(np.uint8).reshape(n, 8)
    nb = np.where(small, 0, nbytes)
    cols = np.arange(9)
    keep = (cols[None, :] == 0) | (cols[None, :] >= 9 - nb[:, None])
    return (1 + nb).astype(np.int64), mat[keep].tobytes()


# ---------------------------------------------------------------------------------------
# Block index chunks (HFileBlockIndex.BlockIndexChunk)


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One block-index entry: the referenced block's first (or separator) key and place.

    Attributes:
        key: The key bytes (a serialized KeyValue key for the data index, a name for the
            meta index, a Bloom key for the Bloom chunk index).
        offset: File offset of the referenced block.
        size: The referenced block's on-disk size with header and checksums.
    """

    key: bytes
    offset: int
    size: int


def root_index_payload(entries: Iterable[IndexEntry]) -> bytes:
    """``BlockIndexChunk.writeRoot``: ``i64 offset, i32 size, VInt keyLen, key`` per entry."""
    return b"".join(
        struct.pack(">qi", e.offset, e.size) + hadoop_vint(len(e.key)) + e.key for e in entries
    )


def root_size(entries: Iterable[IndexEntry]) -> int:
    """``BlockIndexChunk.getRootSize`` of ``entries``."""
    return sum(12 + vint_size(len(e.key)) + len(e.key) for e in entries)


def non_root_index_payload(entries: Sequence[IndexEntry]) -> bytes:
    """``BlockIndexChunk.writeNonRoot``: count, secondary index, entries without key lengths."""
    marks = [0]
    for e in entries:
        marks.append(marks[-1] + 12 + len(e.key))
    head = struct.pack(f">i{len(marks)}i", len(entries), *marks)
    return head + b"".join(struct.pack(">qi", e.offset, e.size) + e.key for e in entries)


def non_root_size(n_entries: int, total_key_bytes: int) -> int:
    """``BlockIndexChunk.getNonRootSize`` for ``n_entries`` entries with these key bytes."""
    return 4 + 4 * (n_entries + 1) + 12 * n_entries + total_key_bytes


def mid_key_metadata(entries: Sequence[IndexEntry], sub_entries_at: Sequence[int]) -> bytes:
    """``BlockIndexChunk.getMidKeyMetadata`` for a root chunk over leaf blocks.

    Args:
        entries: The root entries (one per leaf-index block).
        sub_entries_at: Cumulative data-block counts through each leaf block.

    Returns:
        16 bytes: the leaf block holding the middle data-block entry (offset, on-disk size)
        and that entry's position within it.
    """
    import bisect

    total = sub_entries_at[-1]
    mid = (total - 1) // 2
    i = bisect.bisect_left(sub_entries_at, mid)
    if i < len(sub_entries_at) and sub_entries_at[i] == mid:
        i += 1
    before = sub_entries_at[i - 1] if i > 0 else 0
    return struct.pack(">qii", entries[i].offset, entries[i].size, mid - before)


# ---------------------------------------------------------------------------------------
# Protobuf helpers, FileInfo and trailer


def base128_bytes(value: int, *, bits: int) -> bytes:
    """``value`` (cut to ``bits`` bits) in 7-bit groups, least significant first.

    A protobuf varint (``bits=64``) and ``ByteBufferUtils.putCompressedInt``
    (``bits=32``) alike.

    >>> base128_bytes(300, bits=64).hex()
    'ac02'
    """
    value &= (1 << bits) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _pb_varint(value: int) -> bytes:
    return base128_bytes(value, bits=64)


def _pb_bytes(field: int, data: bytes) -> bytes:
    return _pb_varint(field << 3 | 2) + _pb_varint(len(data)) + data


def _pb_uint(field: int, value: int) -> bytes:
    return _pb_varint(field << 3) + _pb_varint(value)


def file_info_payload(entries: Mapping[bytes, bytes]) -> bytes:
    """``HFileInfo.write``: ``PBUF`` + delimited ``FileInfoProto`` with entries sorted by key."""
    body = b"".join(
        _pb_bytes(1, _pb_bytes(1, k) + _pb_bytes(2, entries[k])) for k in sorted(entries)
    )
    return _PB_MAGIC + _pb_varint(len(body)) + body


def trailer_bytes(
    *,
    file_info_offset: int,
    load_on_open_offset: int,
    uncompressed_data_index_size: int,
    total_uncompressed_bytes: int,
    data_index_count: int,
    meta_index_count: int,
    entry_count: int,
    num_data_index_levels: int,
    first_data_block_offset: int,
    last_data_block_offset: int,
    comparator: str,
    codec: Codec,
) -> bytes:
    """``FixedFileTrailer.serializeAsPB`` for v3.3: magic, delimited proto, padding, version.

    Offsets of -1 (an empty file) are written as 2^64-1, as Java's ``setFirstDataBlockOffset``
    with ``UNSET`` does.
    """
    pb = b"".join(
        (
            _pb_uint(1, file_info_offset),
            _pb_uint(2, load_on_open_offset),
            _pb_uint(3, uncompressed_data_index_size),
            _pb_uint(4, total_uncompressed_bytes),
            _pb_uint(5, data_index_count),
            _pb_uint(6, meta_index_count),
            _pb_uint(7, entry_count),
            _pb_uint(8, num_data_index_levels),
            _pb_uint(9, first_data_block_offset),
            _pb_uint(10, last_data_block_offset),
            _pb_bytes(11, comparator.encode()),
            _pb_uint(12, CODEC_ORDINALS[codec]),
        )
    )
    head = _TRAILER_MAGIC + _pb_varint(len(pb)) + pb
    if len(head) > TRAILER_SIZE - 4:
        raise ValueError("trailer protobuf does not fit the fixed trailer")
    return head + bytes(TRAILER_SIZE - 4 - len(head)) + struct.pack(">I", 3 << 24 | 3)

"""The fixed file trailer at the end of every HFile, and the format versions.

Source: HBase ``io/hfile/FixedFileTrailer.java`` (``readFromStream``, ``deserializeFromPB``,
``deserializeFromWritable``, ``materializeVersion``) and ``HFile.proto``
(``FileTrailerProto``). The last 4 bytes of a file are ``minor << 24 | major``. Version 3
(always minor 3 in practice) and 2.2+ carry a protobuf trailer in the last 4096 bytes;
2.0/2.1 carry the 212-byte Writable trailer; v1 and encrypted files are refused with
:class:`~cellstore.errors.UnsupportedFormatError`.

Pure: no I/O. Parse with :func:`parse_trailer` from the file's last
:data:`MAX_TRAILER_SIZE` bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from cellstore.errors import CorruptFileError, UnsupportedFormatError
from cellstore.storefiles.hfile.limits import MAX_INDEX_LEVELS
from cellstore.storefiles.hfile.varint import read_pb_varint

__all__ = [
    "CODEC_NAMES",
    "MAX_TRAILER_SIZE",
    "TRAILER_MAGIC",
    "Trailer",
    "iter_pb_fields",
    "parse_trailer",
    "trailer_size",
]

#: Magic opening the trailer (``BlockType.TRAILER``).
TRAILER_MAGIC: Final = b'TRABLK"$'
#: Bytes a reader fetches from the end of a file to find the trailer (v3 trailer size).
MAX_TRAILER_SIZE: Final = 4096
#: ``Compression.Algorithm`` ordinals (hbase-common ``io/compress/Compression.java``).
CODEC_NAMES: Final[dict[int, str]] = {
    0: "LZO",
    1: "GZ",
    2: "NONE",
    3: "SNAPPY",
    4: "LZ4",
    5: "BZIP2",
    6: "ZSTD",
    7: "LZMA",
    8: "BROTLI",
}
#: ``2**64 - 1``: an unset (-1) uint64 offset as protobuf carries it (empty files).
_UNSET_U64: Final = (1 << 64) - 1
_V2_WRITABLE: Final = struct.Struct(">qqiqiqqiiqq")
_COMPARATOR_BYTES: Final = 128


@dataclass(frozen=True)
class Trailer:
    """The fixed file trailer (``FixedFileTrailer``).

    Attributes:
        major_version: 2 or 3.
        minor_version: 0..3 (0: no HBase checksums, 24-byte block headers).
        file_info_offset: Offset of the FILE_INFO block.
        load_on_open_offset: Offset of the data-index root (start of the load-on-open section).
        uncompressed_data_index_size: Sum of the data-index blocks' uncompressed payloads.
        total_uncompressed_bytes: Statistic (see the format notes).
        data_index_count: Entries of the root data index.
        meta_index_count: Number of meta blocks.
        entry_count: Number of cells.
        num_data_index_levels: 1 (root points at data blocks) to 3.
        first_data_block_offset: Offset of the first data block, -1 when the file is empty.
        last_data_block_offset: Offset of the start of the last data block, -1 when empty.
        comparator: Comparator class name as stored.
        codec: Compression name (``NONE``, ``GZ``, ``SNAPPY``...).
        size: Bytes the trailer takes at the end of the file.
    """

    major_version: int
    minor_version: int
    file_info_offset: int
    load_on_open_offset: int
    uncompressed_data_index_size: int
    total_uncompressed_bytes: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    num_data_index_levels: int
    first_data_block_offset: int
    last_data_block_offset: int
    comparator: str
    codec: str
    size: int

    @property
    def version(self) -> str:
        """``"major.minor"``, as ``hbase hfile`` prints it."""
        return f"{self.major_version}.{self.minor_version}"

    @property
    def has_checksums(self) -> bool:
        """Whether blocks carry HBase checksums (33-byte headers): minor >= 1."""
        return self.major_version >= 3 or self.minor_version >= 1

    @property
    def header_size(self) -> int:
        """Size of every block header: 33 with checksums, 24 without."""
        return 33 if self.has_checksums else 24

    @property
    def is_meta_comparator(self) -> bool:
        """Whether the file belongs to hbase:meta/-ROOT- (a different row order)."""
        return "Meta" in self.comparator or "Root" in self.comparator


def trailer_size(major: int, minor: int) -> int:
    """``FixedFileTrailer.computeTrailerSizeByVersion``: 212 for v2.0/2.1, else 4096."""
    return 212 if major == 2 and minor < 2 else MAX_TRAILER_SIZE


def iter_pb_fields(buf: bytes | memoryview, *, what: str) -> Iterator[tuple[int, int | bytes]]:
    """Yield ``(field_number, value)`` of a protobuf message (varint and bytes fields).

    Fixed-width fields are skipped; groups are refused.

    Raises:
        CorruptFileError: on a malformed message (``what`` names it in the message).
    """
    pos = 0
    end = len(buf)
    try:
        while pos < end:
            key, pos = read_pb_varint(buf, pos)
            field, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = read_pb_varint(buf, pos)
                yield field, value
            elif wire == 2:
                n, pos = read_pb_varint(buf, pos)
                if pos + n > end:
                    raise CorruptFileError(f"{what}: truncated protobuf field {field}")
                yield field, bytes(buf[pos : pos + n])
                pos += n
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                raise CorruptFileError(f"{what}: unexpected protobuf wire type {wire}")
    except CorruptFileError as e:
        if str(e).startswith(what):
            raise
        raise CorruptFileError(f"{what}: {e}") from None


def _signed(v: int) -> int:
    return -1 if v == _UNSET_U64 else v


def _codec_name(ordinal: int, where: str) -> str:
    try:
        return CODEC_NAMES[ordinal]
    except KeyError:
        raise CorruptFileError(f"{where}: unknown compression codec ordinal {ordinal}") from None


def parse_trailer(tail: bytes, *, file_size: int, where: str) -> Trailer:
    """Parse the trailer from the last ``min(4096, file_size)`` bytes of a file.

    Args:
        tail: The file's last bytes (at least the trailer).
        file_size: The file's size.
        where: The file's path or URL, for error messages.

    Returns:
        The trailer.

    Raises:
        UnsupportedFormatError: for HFile v1, unknown majors, or an encrypted file.
        CorruptFileError: if the file is too short, the trailer does not parse, or its
            offsets, counts or index levels are impossible for the file.
    """
    if len(tail) < 4 or file_size < 4:
        raise CorruptFileError(f"{where}: not an HFile ({file_size} bytes)")
    (raw,) = struct.unpack(">I", tail[-4:])
    major, minor = raw & 0x00FFFFFF, raw >> 24
    if major == 1:
        raise UnsupportedFormatError(
            f"{where}: HFile version 1 (HBase 0.90-era), which HBase >= 1.3 no longer reads "
            "either; rewrite it with HBase (major compaction) first"
        )
    if major not in (2, 3) or minor > 3:
        raise UnsupportedFormatError(
            f"{where}: not a supported HFile (trailer version {major}.{minor}; "
            "supported: 2.0-2.3 and 3.0-3.3)"
        )
    size = trailer_size(major, minor)
    if file_size < size or len(tail) < size:
        raise CorruptFileError(f"{where}: {file_size} bytes is too short for an HFile v{major}")
    body = memoryview(tail)[len(tail) - size :]
    if bytes(body[:8]) != TRAILER_MAGIC:
        raise CorruptFileError(f"{where}: bad trailer magic {bytes(body[:8])!r}")
    if major == 3 or minor >= 2:
        trailer = _parse_pb(body, major, minor, size, where)
    else:
        trailer = _parse_writable(body, major, minor, size, where)
    _check_trailer(trailer, file_size, where)
    return trailer


def _check_trailer(t: Trailer, file_size: int, where: str) -> None:
    """Raise unless the trailer's counts, levels and offsets are possible for the file.

    Offsets must lie before the trailer, counts must not be negative, and the data index
    has 1 to :data:`~cellstore.storefiles.hfile.limits.MAX_INDEX_LEVELS` levels (HBase's
    writer stops at 16). Entry counts are checked against the blocks that hold them when
    those are parsed.
    """
    blocks_end = file_size - t.size
    problems = []
    if not 0 <= t.load_on_open_offset <= blocks_end:
        problems.append(f"load-on-open offset {t.load_on_open_offset}")
    if not 1 <= t.num_data_index_levels <= MAX_INDEX_LEVELS:
        problems.append(
            f"{t.num_data_index_levels} data index levels (HBase writes 1 to {MAX_INDEX_LEVELS})"
        )
    for name, value in (
        ("data index count", t.data_index_count),
        ("meta index count", t.meta_index_count),
        ("entry count", t.entry_count),
    ):
        if value < 0:
            problems.append(f"{name} {value}")
    for name, value in (
        ("first data block offset", t.first_data_block_offset),
        ("last data block offset", t.last_data_block_offset),
    ):
        if not -1 <= value < blocks_end:
            problems.append(f"{name} {value}")
    if problems:
        raise CorruptFileError(
            f"{where}: the trailer is damaged: {', '.join(problems)} "
            f"(file of {file_size} bytes, trailer at {blocks_end})"
        )


def _parse_pb(body: memoryview, major: int, minor: int, size: int, where: str) -> Trailer:
    n, pos = read_pb_varint(body, 8)
    if pos + n > size - 4:
        raise CorruptFileError(f"{where}: trailer protobuf overruns the trailer ({n} bytes)")
    f: dict[int, int | bytes] = {}
    for field, value in iter_pb_fields(body[pos : pos + n], what=f"{where}: trailer"):
        f[field] = value
    if 13 in f:
        raise UnsupportedFormatError(
            f"{where}: encrypted HFile (the trailer carries an encryption key); "
            "encrypted HFiles are not supported"
        )

    def num(k: int, default: int = 0) -> int:
        v = f.get(k, default)
        if isinstance(v, bytes):
            raise CorruptFileError(f"{where}: trailer field {k} is not a number")
        return v

    comparator = f.get(11, b"")
    if not isinstance(comparator, bytes):
        raise CorruptFileError(f"{where}: trailer comparator is not a string")
    return Trailer(
        major_version=major,
        minor_version=minor,
        file_info_offset=num(1),
        load_on_open_offset=num(2),
        uncompressed_data_index_size=num(3),
        total_uncompressed_bytes=num(4),
        data_index_count=num(5),
        meta_index_count=num(6),
        entry_count=num(7),
        num_data_index_levels=num(8, 1),
        first_data_block_offset=_signed(num(9, _UNSET_U64)),
        last_data_block_offset=_signed(num(10, _UNSET_U64)),
        comparator=comparator.decode("utf-8", "replace"),
        codec=_codec_name(num(12, 2), where),
        size=size,
    )


def _parse_writable(body: memoryview, major: int, minor: int, size: int, where: str) -> Trailer:
    end = 8 + _V2_WRITABLE.size
    (
        file_info,
        load_on_open,
        data_index_count,
        index_size,
        meta_index_count,
        total_bytes,
        entry_count,
        codec,
        levels,
        first_block,
        last_block,
    ) = _V2_WRITABLE.unpack(body[8:end])
    comparator = bytes(body[end : end + _COMPARATOR_BYTES]).split(b"\x00", 1)[0]
    return Trailer(
        major_version=major,
        minor_version=minor,
        file_info_offset=file_info,
        load_on_open_offset=load_on_open,
        uncompressed_data_index_size=index_size,
        total_uncompressed_bytes=total_bytes,
        data_index_count=data_index_count,
        meta_index_count=meta_index_count,
        entry_count=entry_count,
        num_data_index_levels=levels,
        first_data_block_offset=first_block,
        last_data_block_offset=last_block,
        comparator=comparator.decode("utf-8", "replace"),
        codec=_codec_name(codec, where),
        size=size,
    )

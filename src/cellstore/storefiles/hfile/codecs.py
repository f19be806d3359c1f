"""Block decompression with HBase's on-disk framing, through maintained libraries.

Source: hbase-common ``io/compress/Compression.java`` (the codec classes) and Hadoop's
``BlockCompressorStream`` / ``BlockDecompressorStream`` (the framing of SNAPPY, LZ4 and the
HBase-module ZSTD codecs):

* GZ: one gzip member (``ReusableStreamGzipCodec``): :mod:`zlib`.
* SNAPPY, LZ4: ``[u32 BE raw_len] ([u32 BE comp_len][raw codec block])+`` repeated until
  the payload ends; the codec block is raw snappy or an LZ4 *block* (cramjam).
* ZSTD: a payload starting with the zstd frame magic ``28 B5 2F FD`` is one frame (Hadoop
  ``ZStandardCodec``); anything else is block framing around zstd frames (HBase's
  ``ZstdCodec``). Dictionary-compressed files cannot be read (no dictionary).

NONE passes through. LZO, BZIP2, LZMA and BROTLI are refused. Pure: no I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Final

from cellstore.errors import CorruptFileError, UnsupportedFormatError

__all__ = ["SUPPORTED_CODECS", "decompress", "zstd_dictionary_id"]

#: Codecs :func:`decompress` reads.
SUPPORTED_CODECS: Final = ("NONE", "GZ", "SNAPPY", "LZ4", "ZSTD")
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"


def _snappy(chunk: memoryview, room: int) -> bytes:
    import cramjam

    return bytes(cramjam.snappy.decompress_raw(chunk))


def _lz4(chunk: memoryview, room: int) -> bytes:
    import cramjam

    out = bytearray(room)
    n = cramjam.lz4.decompress_block_into(chunk, out)
    return bytes(out[:n])


class _NeedsDictionary(Exception):
    """A zstd frame names a dictionary this reader does not have."""

    def __init__(self, dictionary_id: int) -> None:
        super().__init__(dictionary_id)
        self.dictionary_id = dictionary_id


def zstd_dictionary_id(frame: bytes | memoryview) -> int:
    """The ``Dictionary_ID`` in a zstd frame header (RFC 8878 §3.1.1.1), 0 for none."""
    if len(frame) < 5 or bytes(frame[:4]) != _ZSTD_MAGIC:
        return 0
    fhd = frame[4]
    size = (0, 1, 2, 4)[fhd & 3]
    at = 5 if fhd & 0x20 else 6  # Single_Segment_flag: no Window_Descriptor byte
    if not size or len(frame) < at + size:
        return 0
    return int.from_bytes(bytes(frame[at : at + size]), "little")


def _zstd(chunk: memoryview, room: int) -> bytes:
    import cramjam

    dictionary_id = zstd_dictionary_id(chunk)
    if dictionary_id:
        raise _NeedsDictionary(dictionary_id)
    return bytes(cramjam.zstd.decompress(chunk))


_FRAMED: Final[dict[str, Callable[[memoryview, int], bytes]]] = {
    "SNAPPY": _snappy,
    "LZ4": _lz4,
    "ZSTD": _zstd,
}


def _unframe(data: memoryview, size: int, inner: Callable[[memoryview, int], bytes]) -> bytes:
    """Undo Hadoop ``BlockCompressorStream`` framing."""
    out: list[bytes] = []
    produced = 0
    pos = 0
    end = len(data)
    while pos < end and produced < size:
        if pos + 4 > end:
            raise ValueError("truncated block framing")
        raw_len = int.from_bytes(data[pos : pos + 4], "big")
        pos += 4
        done = 0
        while done < raw_len:
            if pos + 4 > end:
                raise ValueError("truncated block framing")
            comp_len = int.from_bytes(data[pos : pos + 4], "big")
            pos += 4
            if comp_len == 0 or pos + comp_len > end:
                raise ValueError("bad compressed chunk length")
            piece = inner(data[pos : pos + comp_len], raw_len - done)
            pos += comp_len
            done += len(piece)
            out.append(piece)
        produced += done
    return b"".join(out)


def decompress(codec: str, data: bytes | memoryview, *, size: int, where: str) -> bytes:
    """Decompress one block payload.

    Args:
        codec: The trailer's codec name.
        data: The on-disk payload (without header and checksums).
        size: ``uncompressedSizeWithoutHeader`` from the block header.
        where: File and block offset, for error messages.

    Returns:
        Exactly ``size`` bytes.

    Raises:
        UnsupportedFormatError: for a codec without a maintained Python library, or a ZSTD
            frame that needs a dictionary (its header names a ``Dictionary_ID``).
        CorruptFileError: if the payload does not decompress to ``size`` bytes.
    """
    if codec == "NONE":
        out = bytes(data)
    elif codec not in SUPPORTED_CODECS:
        raise UnsupportedFormatError(
            f"{where}: compression {codec} is not supported (supported: "
            f"{', '.join(SUPPORTED_CODECS)})"
        )
    else:
        try:
            if codec == "GZ":
                out = zlib.decompress(data, 47)
            elif codec == "ZSTD" and bytes(data[:4]) == _ZSTD_MAGIC:
                out = _zstd(memoryview(data), size)
            else:
                out = _unframe(memoryview(data), size, _FRAMED[codec])
        except _NeedsDictionary as e:
            raise UnsupportedFormatError(
                f"{where}: ZSTD block compressed with dictionary id {e.dictionary_id} "
                "(hbase.io.compress.zstd.dictionary); ZSTD dictionaries are not supported"
            ) from None
        except (zlib.error, ValueError, OSError) as e:
            raise CorruptFileError(f"{where}: {codec} payload does not decompress: {e}") from e
        except Exception as e:  # cramjam raises its own DecompressionError
            if type(e).__module__.startswith("cramjam") or "Decompression" in type(e).__name__:
                raise CorruptFileError(f"{where}: {codec} payload does not decompress: {e}") from e
            raise
    if len(out) != size:
        raise CorruptFileError(
            f"{where}: {codec} payload decompressed to {len(out)} bytes, header says {size}"
        )
    return out

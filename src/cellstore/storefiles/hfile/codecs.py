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

NONE passes through. LZO, BZIP2, LZMA and BROTLI are refused.

Untrusted input: the block header states the uncompressed size; it must be within what
the codec can expand the payload to (:func:`max_uncompressed`), and decompression never
produces more than it (gzip inflates with an output limit; snappy, LZ4 and zstd decode
into a buffer of the room left, after checking the sizes their own headers state), so a
decompression bomb costs the stated size, not what it would inflate to. Pure: no I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Final

from cellstore.errors import CorruptFileError, UnsupportedFormatError
from cellstore.storefiles.hfile.limits import MAX_EXPANSION

__all__ = [
    "SUPPORTED_CODECS",
    "decompress",
    "max_uncompressed",
    "zstd_content_size",
    "zstd_dictionary_id",
]

#: Codecs :func:`decompress` reads.
SUPPORTED_CODECS: Final = ("NONE", "GZ", "SNAPPY", "LZ4", "ZSTD")
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"


def _snappy(chunk: memoryview, room: int) -> bytes | bytearray | memoryview:
    import cramjam

    # The raw snappy preamble states the output length exactly: check it before cramjam
    # allocates it.
    need = int(cramjam.snappy.decompress_raw_len(chunk))
    if need > room:
        raise ValueError(f"snappy chunk of {need} bytes overruns the {room} bytes left")
    return memoryview(cramjam.snappy.decompress_raw(chunk))


def _lz4(chunk: memoryview, room: int) -> bytes | bytearray | memoryview:
    import cramjam

    out = bytearray(room)
    n = cramjam.lz4.decompress_block_into(chunk, out)
    return out if n == room else memoryview(out)[:n]


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


def zstd_content_size(frame: bytes | memoryview) -> int | None:
    """The ``Frame_Content_Size`` in a zstd frame header (RFC 8878 §3.1.1.1.4), if stated."""
    if len(frame) < 5 or bytes(frame[:4]) != _ZSTD_MAGIC:
        return None
    fhd = frame[4]
    single = bool(fhd & 0x20)
    width = (1 if single else 0, 2, 4, 8)[fhd >> 6]
    at = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
    if not width or len(frame) < at + width:
        return None
    value = int.from_bytes(bytes(frame[at : at + width]), "little")
    return value + 256 if width == 2 else value


def _zstd(chunk: memoryview, room: int) -> bytes | bytearray | memoryview:
    import cramjam

    dictionary_id = zstd_dictionary_id(chunk)
    if dictionary_id:
        raise _NeedsDictionary(dictionary_id)
    stated = zstd_content_size(chunk)
    if stated is not None and stated > room:
        raise ValueError(f"zstd frame of {stated} bytes overruns the {room} bytes left")
    # Decode into a buffer of the room left: a frame that holds more fails instead of
    # growing an output without bound (cramjam's own decompress does, and aborts).
    out = bytearray(room if stated is None else stated)
    n = cramjam.zstd.decompress_into(chunk, out)
    return out if n == len(out) else memoryview(out)[:n]


_Inner = Callable[[memoryview, int], bytes | bytearray | memoryview]
_FRAMED: Final[dict[str, _Inner]] = {
    "SNAPPY": _snappy,
    "LZ4": _lz4,
    "ZSTD": _zstd,
}


def _unframe(data: memoryview, size: int, inner: _Inner) -> bytes:
    """Undo Hadoop ``BlockCompressorStream`` framing, producing at most ``size`` bytes.

    Each frame states its raw length; one that would pass ``size`` is refused before its
    chunks are decompressed, and each chunk decompresses into the room its frame has left.
    """
    out: list[bytes | bytearray | memoryview] = []
    produced = 0
    pos = 0
    end = len(data)
    while pos < end and produced < size:
        if pos + 4 > end:
            raise ValueError("truncated block framing")
        raw_len = int.from_bytes(data[pos : pos + 4], "big")
        pos += 4
        if raw_len > size - produced:
            raise ValueError(
                f"a frame of {raw_len} raw bytes overruns the {size - produced} bytes left"
            )
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


def _gunzip(data: bytes | memoryview, size: int) -> bytes:
    """One gzip (or zlib) member, inflated to at most ``size + 1`` bytes.

    The output buffer grows with what is inflated, so a member that inflates past
    ``size`` costs ``size`` bytes, not what it would inflate to.
    """
    d = zlib.decompressobj(47)
    out = d.decompress(data, size + 1)
    if len(out) <= size and not d.eof:
        # Output stopped at the limit or input ran out: finish the member (its CRC and
        # length trailer), allowing one more byte to tell "too long" from "complete".
        out += d.decompress(d.unconsumed_tail, 1)
        if len(out) <= size and not d.eof:
            raise ValueError("incomplete or truncated gzip stream")
    return out


def max_uncompressed(codec: str, payload: int) -> int:
    """Most bytes a ``payload``-byte block of ``codec`` can decompress to.

    The codec's own ceiling (:data:`~cellstore.storefiles.hfile.limits.MAX_EXPANSION`).
    """
    ratio, extra = MAX_EXPANSION.get(codec, (1, 0))
    return payload * ratio + (extra if payload else 0)


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
        if len(data) != size:
            raise CorruptFileError(
                f"{where}: NONE payload of {len(data)} bytes, header says {size}"
            )
        return bytes(data)
    if codec not in SUPPORTED_CODECS:
        raise UnsupportedFormatError(
            f"{where}: compression {codec} is not supported (supported: "
            f"{', '.join(SUPPORTED_CODECS)})"
        )
    most = max_uncompressed(codec, len(data))
    if size > most:
        raise CorruptFileError(
            f"{where}: header says the {codec} payload of {len(data)} bytes decompresses to "
            f"{size} bytes, more than {codec} can ({most})"
        )
    try:
        if codec == "GZ":
            out = _gunzip(data, size)
        elif codec == "ZSTD" and bytes(data[:4]) == _ZSTD_MAGIC:
            out = bytes(_zstd(memoryview(data), size))
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
            f"{where}: {codec} payload decompressed to "
            f"{'more than ' if len(out) > size else ''}{len(out)} bytes, header says {size}"
        )
    return out

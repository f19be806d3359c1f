"""Patching HFiles for the hostile-input tests, and the reads the bounded worker runs.

A test takes a real HBase-written vector or a file written by our ``write_hfile``, finds a
block (:func:`blocks_of`), changes a field, and recomputes the block's checksums
(:func:`rechecksum`) so the hostile field itself is what the reader meets, not a checksum
mismatch. :func:`zstd_rle_bomb` and :func:`gzip_bomb` build decompression bombs cheaply.

The module-level ``read_*`` functions are the targets of
:class:`fuzzing.BoundedWorker` (``"hfile_patch:read_all"``): each opens a file and reads
it one way, letting any :class:`~cellstore.errors.CellstoreError` through to the worker
and returning a small picklable summary otherwise.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cellstore.storefiles.hfile.trailer import (
    MAX_TRAILER_SIZE,
    TRAILER_MAGIC,
    Trailer,
    iter_pb_fields,
    parse_trailer,
)
from hbase_fixtures import pb_field, varint

#: Field numbers of ``FileTrailerProto`` (``HFile.proto``).
TRAILER_FIELDS = {
    "file_info_offset": 1,
    "load_on_open_offset": 2,
    "uncompressed_data_index_size": 3,
    "total_uncompressed_bytes": 4,
    "data_index_count": 5,
    "meta_index_count": 6,
    "entry_count": 7,
    "num_data_index_levels": 8,
    "first_data_block_offset": 9,
    "last_data_block_offset": 10,
    "comparator": 11,
    "codec": 12,
}


# --------------------------------------------------------------------------- structure
def trailer_of(data: bytes | bytearray) -> Trailer:
    """The file's trailer."""
    return parse_trailer(bytes(data[-MAX_TRAILER_SIZE:]), file_size=len(data), where="test")


@dataclass(frozen=True)
class Header:
    """A block header as the test reads it (independently of the reader under test)."""

    offset: int
    block_type: str
    on_disk_size_without_header: int
    uncompressed_size: int
    checksum_type: int
    bytes_per_checksum: int
    on_disk_data_size_with_header: int
    header_size: int

    @property
    def on_disk_size(self) -> int:
        """Header, payload and checksums."""
        return self.header_size + self.on_disk_size_without_header


_MAGICS = {
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
}


def header_at(data: bytes | bytearray, offset: int, header_size: int = 33) -> Header:
    """The block header at ``offset`` (``HFileBlock`` layout, big-endian)."""
    magic, on_disk, uncompressed, _prev = struct.unpack_from(">8siiq", data, offset)
    if header_size == 33:
        ctype, per_chunk, data_size = struct.unpack_from(">bii", data, offset + 24)
    else:
        ctype, per_chunk, data_size = 0, 0, header_size + on_disk
    return Header(
        offset,
        _MAGICS[bytes(magic)],
        on_disk,
        uncompressed,
        ctype,
        per_chunk,
        data_size,
        header_size,
    )


@dataclass(frozen=True)
class BlockAt:
    """One block of a file: its header and where its parts are."""

    header: Header

    @property
    def offset(self) -> int:
        """The block's file offset."""
        return self.header.offset

    @property
    def kind(self) -> str:
        """The block type (``DATA``, ``LEAF_INDEX``...)."""
        return self.header.block_type

    @property
    def payload(self) -> int:
        """Offset of the on-disk payload (after the header)."""
        return self.offset + self.header.header_size

    @property
    def data_end(self) -> int:
        """End of the on-disk payload (where the checksums start)."""
        return self.offset + self.header.on_disk_data_size_with_header

    @property
    def end(self) -> int:
        """End of the block (checksums included)."""
        return self.offset + self.header.on_disk_size


def blocks_of(data: bytes | bytearray) -> list[BlockAt]:
    """Every block from offset 0 to the trailer, in file order."""
    t = trailer_of(data)
    out: list[BlockAt] = []
    pos = 0
    end = len(data) - t.size
    while pos < end:
        block = BlockAt(header_at(data, pos, t.header_size))
        out.append(block)
        pos = block.end
    return out


def first(data: bytes | bytearray, kind: str) -> BlockAt:
    """The first block of ``kind``."""
    return next(b for b in blocks_of(data) if b.kind == kind)


def last(data: bytes | bytearray, kind: str) -> BlockAt:
    """The last block of ``kind``."""
    return [b for b in blocks_of(data) if b.kind == kind][-1]


def block_at(data: bytes | bytearray, offset: int) -> BlockAt:
    """The block starting at ``offset``."""
    return next(b for b in blocks_of(data) if b.offset == offset)


def block_containing(data: bytes | bytearray, pos: int) -> BlockAt | None:
    """The block whose bytes include ``pos`` (None past the blocks)."""
    for b in blocks_of(data):
        if b.offset <= pos < b.end:
            return b
    return None


# --------------------------------------------------------------------------- patching
def put(buf: bytearray, pos: int, fmt: str, value: int) -> None:
    """Write ``value`` big-endian as struct format ``fmt`` at ``pos``."""
    struct.pack_into(">" + fmt, buf, pos, value)


def rechecksum(buf: bytearray, offset: int, *, layout: Header | None = None) -> None:
    """Recompute the checksums of the (v3) block at ``offset`` after its bytes changed.

    ``ChecksumUtil.generateChecksums``: one big-endian CRC per ``bytesPerChecksum`` chunk of
    header and on-disk payload (CRC32C through the ``crc32c`` package, CRC32 through zlib).
    The checksum type, chunk size and data size come from the block's header as it is
    now, or from ``layout`` (the header before a damage that broke them).
    """
    import crc32c

    head = layout if layout is not None else header_at(buf, offset)
    fn = {1: lambda b: zlib.crc32(b) & 0xFFFFFFFF, 2: crc32c.crc32c}.get(head.checksum_type)
    if fn is None:
        return
    data_end = offset + head.on_disk_data_size_with_header
    step = head.bytes_per_checksum
    sums = [fn(bytes(buf[k : min(k + step, data_end)])) for k in range(offset, data_end, step)]
    struct.pack_into(f">{len(sums)}I", buf, data_end, *sums)


def resum(buf: bytearray, block: BlockAt) -> None:
    """:func:`rechecksum` of a damaged block, as an attacker would: with the header's own
    checksum layout when it is usable, else with the layout it had (``block``)."""
    try:
        head = header_at(buf, block.offset)
    except (KeyError, struct.error):
        head = block.header
    size = head.on_disk_data_size_with_header
    usable = (
        head.checksum_type in (1, 2)
        and head.bytes_per_checksum > 0
        and size >= 33
        and block.offset + size + 4 * -(-size // head.bytes_per_checksum) <= len(buf)
        and size // head.bytes_per_checksum < 1 << 20
    )
    rechecksum(buf, block.offset, layout=head if usable else block.header)


def replace_payload(buf: bytearray, block: BlockAt, payload: bytes) -> None:
    """Put ``payload`` (zero padded) in place of a block's on-disk payload; same sizes."""
    room = block.data_end - block.payload
    assert len(payload) <= room, (len(payload), room)
    buf[block.payload : block.data_end] = payload + bytes(room - len(payload))
    rechecksum(buf, block.offset)


def patch_trailer(data: bytes | bytearray, **fields: int) -> bytes:
    """The file with trailer fields (names of :data:`TRAILER_FIELDS`) set to ``fields``."""
    t = trailer_of(data)
    assert t.size == MAX_TRAILER_SIZE, "protobuf trailers only"
    body = bytes(data[len(data) - t.size :])
    assert body[:8] == TRAILER_MAGIC
    n, pos = _varint_at(body, 8)
    values: dict[int, int | bytes] = dict(iter_pb_fields(body[pos : pos + n], what="t"))
    for name, value in fields.items():
        values[TRAILER_FIELDS[name]] = value & ((1 << 64) - 1)
    msg = b"".join(pb_field(k, v) for k, v in sorted(values.items()))
    inner = TRAILER_MAGIC + varint(len(msg)) + msg
    trailer = inner + bytes(t.size - 4 - len(inner)) + body[-4:]
    return bytes(data[: len(data) - t.size]) + trailer


def _varint_at(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def none_cells(payload: bytes) -> list[int]:
    """Cell offsets in a NONE payload without tags or memstore timestamps."""
    out = []
    pos = 0
    while pos < len(payload):
        out.append(pos)
        klen, vlen = struct.unpack_from(">II", payload, pos)
        pos += 8 + klen + vlen
    return out


# --------------------------------------------------------------------------- bombs
def zstd_rle_bomb(total: int) -> bytes:
    """A zstd frame of ``total`` zero bytes (RLE blocks of 128 KiB), no content size."""
    block = 128 << 10
    assert total % block == 0
    n = total // block
    head = b"\x28\xb5\x2f\xfd" + bytes([0x00, 7 << 3])  # no FCS, window 128 KiB
    rle = ((block << 3) | (1 << 1)).to_bytes(3, "little") + b"\x00"
    last_rle = ((block << 3) | (1 << 1) | 1).to_bytes(3, "little") + b"\x00"
    return head + rle * (n - 1) + last_rle


def gzip_bomb(mib: int) -> bytes:
    """A gzip member of ``mib`` MiB of zero bytes (a repeated, fully flushed deflate
    chunk: about 1 KiB per MiB, built in well under a second)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    z = bytes(1 << 20)
    chunk = c.compress(z) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(z) + c.flush(zlib.Z_FULL_FLUSH)
    assert again == chunk
    deflate = chunk * mib + c.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(z, crc)
    head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return (
        head
        + deflate
        + crc.to_bytes(4, "little")
        + ((mib << 20) & 0xFFFFFFFF).to_bytes(4, "little")
    )


# --------------------------------------------------------------------------- worker targets
def _reader(path: str) -> Any:
    from cellstore.hbase import open_hfile

    return open_hfile(path)


def read_all(path: str) -> int:
    """Open and read every cell (raising on damage); returns the cell count."""
    return int(_reader(path).read(with_seq_id=True, with_tags=True).num_rows)


def read_skip(path: str) -> tuple[int, list[int]]:
    """Read every cell, skipping damaged blocks: (cells, offsets of the skipped blocks)."""
    from cellstore.storefiles.hfile.reader import BlockProblem

    problems: list[BlockProblem] = []
    table = _reader(path).read(on_corrupt="skip", problems=problems)
    return int(table.num_rows), [p.offset for p in problems]


def read_info(path: str) -> int:
    """Open and list the data blocks (what ``hfile info`` does); returns their count."""
    r = _reader(path)
    return len(r.data_blocks()) if not r.is_empty else 0


def read_might_contain(path: str, row: bytes) -> bool:
    """Open and ask the Bloom filter about ``row``."""
    return bool(_reader(path).might_contain(row))


def read_verify(path: str) -> tuple[int, int, list[str]]:
    """``verify_hfile``: (blocks checked, cells readable, problem messages)."""
    from cellstore.hbase import verify_hfile

    report = verify_hfile(path)
    return report.blocks, report.cells, [p.message for p in report.problems]


def read_everything(path: str) -> dict[str, Any]:
    """Every way of reading a file, each ending in a result or a cellstore error.

    A :class:`~cellstore.errors.CellstoreError` of one way is recorded and the next way
    runs; any other exception propagates (the bounded worker reports its type).

    Returns:
        ``{"opened", "cells", "errors", "problems"}``: whether the file opened, the cells
        the strict read returned (None when it raised), the cellstore errors met, and the
        problems ``verify`` and the skipping read found.
    """
    from cellstore.errors import CellstoreError
    from cellstore.hbase import open_hfile, verify_hfile
    from cellstore.storefiles.hfile.reader import BlockProblem

    out: dict[str, Any] = {"opened": False, "cells": None, "errors": [], "problems": []}
    try:
        r = open_hfile(path)
    except CellstoreError as e:
        out["errors"].append(f"open: {e}")
        return out
    out["opened"] = True
    first_row = None
    try:
        table = r.read(with_seq_id=True, with_tags=True)
        out["cells"] = table.num_rows
        if table.num_rows:
            first_row = table.column("row")[0].as_py()
    except CellstoreError as e:
        out["errors"].append(f"read: {e}")
    skipped: list[BlockProblem] = []
    try:
        r.read(on_corrupt="skip", problems=skipped, columns=["row", "ts"])
    except CellstoreError as e:
        out["errors"].append(f"skip read: {e}")
    out["problems"].extend(p.message for p in skipped)
    for probe in (first_row, b"absent-row"):
        if probe is None:
            continue
        try:
            r.might_contain(probe)
            r.might_have_delete_family(probe)
        except CellstoreError as e:
            out["errors"].append(f"bloom: {e}")
    try:
        report = verify_hfile(path)
        out["problems"].extend(p.message for p in report.problems)
    except CellstoreError as e:
        out["errors"].append(f"verify: {e}")
    return out


def decode_payload(payload: bytes, tags: bool, mvcc: bool, one_byte: bool) -> int:
    """Decode one uncompressed data block payload every way the reader does.

    An ENCODED_DATA payload (``i16`` encoding id first) is un-encoded, a NONE payload is
    taken as is; then the cells are walked and gathered as plain and dictionary columns.
    Returns the number of cells.
    """
    import numpy as np

    from cellstore.storefiles.hfile.cells import PAD, CellFlags, cells_to_table, walk_cells
    from cellstore.storefiles.hfile.encodings import decode_encoded_block

    flags = CellFlags(tags=tags, mvcc=mvcc, mvcc_one_byte=one_byte)
    encoded = len(payload) >= 2 and payload[:2] != b"\x00\x00"
    cells = decode_encoded_block(payload, flags=flags, where="payload") if encoded else payload
    buf = np.frombuffer(bytes(cells) + bytes(PAD), dtype=np.uint8)
    layout = walk_cells(
        buf,
        np.array([0], dtype=np.int64),
        np.array([len(cells)], dtype=np.int64),
        flags=flags,
        where="payload",
        block_offsets=np.array([0], dtype=np.int64),
    )
    plain = cells_to_table(buf, layout.starts, flags=flags, with_seq_id=True, with_tags=True)
    keyed = cells_to_table(buf, layout.starts, flags=flags, dictionary=True)
    assert plain.num_rows == keyed.num_rows
    return int(plain.num_rows)


def write_bytes(path: str | Path, data: bytes) -> str:
    """Write ``data`` to ``path``; returns the path as text."""
    Path(path).write_bytes(data)
    return str(path)

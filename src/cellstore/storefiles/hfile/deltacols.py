"""A batch of PREFIX, DIFF or FAST_DIFF blocks decoded straight to a table of cells.

What :class:`~cellstore.storefiles.hfile.batches.DecodeStep` tries first for a file with
one of these encodings: each block is verified and decompressed as usual, then one
compiled pass (:func:`~cellstore.storefiles.hfile.kernels.columns.decode_columns`)
decodes every block and writes the cells' columns directly (no NONE-layout buffer of the
batch, no second walk, no gathers). The table is the one the block-by-block path builds,
column for column.

Anything unusual (a damaged or unexpected block, a fault while decoding, a family that
is not UTF-8) makes :func:`fused_table` return None: the caller then decodes the batch
block by block, which raises the precise error or skips the damaged blocks. So errors,
skipping and every safety bound are those of that path.

Pure: no I/O (the caller reads the bytes).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pyarrow as pa

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.blocks import verified_data_blocks
from cellstore.storefiles.hfile.cells import CellFlags, _table, cells_schema
from cellstore.storefiles.hfile.codecs import decompress
from cellstore.storefiles.hfile.encodings import ENCODING_IDS
from cellstore.storefiles.hfile.index import IndexEntry
from cellstore.storefiles.hfile.kernels import OK
from cellstore.storefiles.hfile.kernels.columns import decode_columns

if TYPE_CHECKING:
    from cellstore.storefiles.hfile.reader import HFileReader

__all__ = ["FUSED_ENCODINGS", "FusedRequest", "fused_table"]

#: Encodings :func:`fused_table` decodes (name -> id).
FUSED_ENCODINGS: Final = {k: ENCODING_IDS[k] for k in ("PREFIX", "DIFF", "FAST_DIFF")}
#: Most NONE bytes a block may decode to, per encoded byte (plus 64 KiB), before the
#: fused path leaves it to the block-by-block decoder (which grows its buffer).
_EXPANSION: Final = 64

_Ints = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True)
class FusedRequest:
    """What a batch's table holds.

    Attributes:
        columns: Columns to build (None: all of the schema).
        with_seq_id: Add ``seq_id``.
        with_tags: Add ``tags``.
        dictionary: ``row`` and ``qualifier`` as dictionary arrays.
    """

    columns: list[str] | None
    with_seq_id: bool
    with_tags: bool
    dictionary: bool


def _binary(offsets: _Ints, data: np.ndarray[Any, Any]) -> pa.Array:
    """A binary array over ``data`` with int64 ``offsets`` (one more than items)."""
    return pa.Array.from_buffers(
        pa.binary(),
        len(offsets) - 1,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
    )


def _payloads(
    reader: HFileReader, raw: bytes, base: int, entries: Sequence[IndexEntry], budget: int
) -> tuple[list[np.ndarray[Any, Any]], list[int]] | None:
    """Each block's encoded cells and ``unencodedDataSize``, until ``budget`` bytes.

    The blocks' headers and checksums are checked all at once
    (:func:`~cellstore.storefiles.hfile.blocks.verified_data_blocks`), then each is
    decompressed. None for anything unusual (a damaged block, another block type or
    encoding, a size out of range, a payload that does not decompress).
    """
    enc = FUSED_ENCODINGS[reader.encoding]
    hs = reader.trailer.header_size
    codec = reader.trailer.codec
    data = np.frombuffer(raw, np.uint8)
    found = verified_data_blocks(
        raw,
        np.array([e.offset - base for e in entries], np.int64),
        np.array([e.size for e in entries], np.int64),
        header_size=hs,
        magic=b"DATABLKE",
        compressed=codec != "NONE",
        max_block_bytes=reader.max_block_bytes,
    )
    if found is None:
        return None
    view = memoryview(raw)
    cells: list[np.ndarray[Any, Any]] = []
    sizes: list[int] = []
    total = 0
    for start, end in zip(found[0].tolist(), found[1].tolist(), strict=True):
        if cells and total >= budget:
            break
        if codec == "NONE":
            payload = data[start:end]
        else:
            unpacked = int.from_bytes(raw[start - hs + 12 : start - hs + 16], "big")
            try:
                out = decompress(codec, view[start:end], size=unpacked, where=reader.where)
            except CorruptFileError:
                return None
            payload = np.frombuffer(out, np.uint8)
        if len(payload) < 6:
            return None
        got, size = struct.unpack_from(">hi", payload.data, 0)
        if got != enc or not 0 <= size <= reader.max_block_bytes:
            return None
        cells.append(payload[6:])
        sizes.append(size)
        total += size
    return cells, sizes


def fused_table(
    reader: HFileReader,
    raw: bytes,
    base: int,
    entries: Sequence[IndexEntry],
    request: FusedRequest,
    *,
    budget: int,
) -> tuple[pa.Table, int] | None:
    """The cells of encoded data blocks (each at ``raw[e.offset - base]``), up to ``budget``.

    Blocks are taken in order until their stated decoded sizes reach ``budget`` bytes
    (at least one block).

    Returns:
        The table (cells in file order) and how many of ``entries`` it holds; or None when
        the batch needs the block-by-block path: a block that is damaged, not ENCODED_DATA
        of the file's encoding, decodes to another size than its header states or faults,
        or a family that is not UTF-8.
    """
    if reader.encoding not in FUSED_ENCODINGS or not entries:
        return None
    found = _payloads(reader, raw, base, entries, budget)
    if found is None:
        return None
    cells, sizes = found
    caps = [min(s, _EXPANSION * len(c) + (1 << 16)) for c, s in zip(cells, sizes, strict=True)]
    if sum(caps) >= 2**31 - 1 or any(c < s for c, s in zip(caps, sizes, strict=True)):
        return None
    lengths = np.array([len(c) for c in cells], np.int64)
    ends = np.cumsum(lengths)
    data = np.concatenate(cells) if len(cells) > 1 else cells[0]
    flags: CellFlags = reader.flags
    err, _bad, _n, _counts, rows, fams, quals, tstype, values, extras = decode_columns(
        FUSED_ENCODINGS[reader.encoding],
        data,
        ends - lengths,
        ends,
        np.array(sizes, np.int64),
        np.array(caps, np.int64),
        flags.tags,
        flags.mvcc,
        request.dictionary,
    )
    if err != OK:
        return None
    table = _build(rows, fams, quals, tstype, values, extras, flags=flags, request=request)
    return None if table is None else (table, len(cells))


def _build(
    rows: tuple[Any, ...],
    fams: tuple[Any, ...],
    quals: tuple[Any, ...],
    tstype: tuple[Any, ...],
    values: tuple[Any, ...],
    extras: tuple[Any, ...],
    *,
    flags: CellFlags,
    request: FusedRequest,
) -> pa.Table | None:
    """The table of the kernel's columns (None: a family is not UTF-8)."""
    schema = cells_schema(
        columns=request.columns, with_seq_id=request.with_seq_id, with_tags=request.with_tags
    )
    want = set(schema.names)
    n = len(tstype[0])
    cols: dict[str, pa.Array] = {}
    if "row" in want:
        distinct = _binary(rows[0], rows[1])
        cols["row"] = (
            pa.DictionaryArray.from_arrays(pa.array(rows[2], pa.int32()), distinct)
            if request.dictionary
            else distinct
        )
    if "family" in want:
        try:
            names = _binary(fams[0], fams[1]).cast(pa.string())
        except pa.ArrowInvalid:
            return None
        cols["family"] = names.take(pa.array(fams[2], pa.int32()))
    if "qualifier" in want:
        qualifier = _binary(quals[0], quals[1])
        cols["qualifier"] = qualifier.dictionary_encode() if request.dictionary else qualifier
    cols["ts"] = pa.array(tstype[0], pa.int64())
    cols["type"] = pa.array(tstype[1], pa.int8())
    if "value" in want:
        cols["value"] = _binary(values[0], values[1])
    if "tags" in want:
        if flags.tags:
            cols["tags"] = _binary(extras[0], extras[1])
        else:
            cols["tags"] = _binary(np.zeros(n + 1, np.int64), np.empty(0, np.uint8))
    if "seq_id" in want:
        seq = extras[2] if flags.mvcc else np.zeros(n, np.int64)
        cols["seq_id"] = pa.array(seq, pa.int64())
    return _table(cols, schema)

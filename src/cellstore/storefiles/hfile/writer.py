"""Write HBase HFile v3.3 files that ``completebulkload`` accepts, with no JVM.

The file is laid out as ``HFileWriterImpl`` + ``StoreFileWriter`` write it for
``HFileOutputFormat2`` (HBase 2.x; ``shared/hbase-hfile-format.md`` §1, §12):

1. data blocks cut at cell boundaries once the unencoded size reaches ``block_size``
   (``HFileWriterImpl.checkBlockBoundary``; never between cells with identical keys), each
   followed by the inline blocks that became ready: a leaf-index block once the current
   leaf chunk's non-root size reaches ``index_block_max_size``
   (``BlockIndexWriter.shouldWriteBlock``), then full Bloom chunks (general, then
   DeleteFamily: ``CompoundBloomFilterWriter.shouldWriteBlock``);
2. at close the last inline blocks, intermediate index levels while the root is larger
   than ``index_block_max_size`` with more than ``index_min_entries`` entries, the root
   data index (+ mid-key metadata when multi-level), the empty meta index, FileInfo and the
   Bloom metas, then the 4096-byte protobuf trailer.

Index keys are HBase's shortened separators (``HFileWriterImpl.getMidpoint``); the first
entry is the real first key. Every block is compressed with the file's codec and carries
CRC32C checksums over 16 KiB chunks.

The NONE path is vectorized (:mod:`cellstore.storefiles.hfile.cellbytes`); only the
per-block assembly is a Python loop. Encoded blocks (PREFIX/DIFF/FAST_DIFF) run a per-cell
encoder (:mod:`cellstore.storefiles.hfile.encoders`).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.errors import InvalidArgumentError
from cellstore.storefiles.hfile import bloomwrite as bw
from cellstore.storefiles.hfile.cellbytes import (
    CellBytes,
    PreparedCells,
    prepare_cells,
    serialize_cells,
)
from cellstore.storefiles.hfile.encoders import (
    ENCODING_IDS,
    ENCODING_NAMES,
    BlockCells,
    Encoding,
    encode_block,
)
from cellstore.storefiles.hfile.serialize import (
    CHECKSUM_TYPES,
    CODEC_ORDINALS,
    HEADER_SIZE,
    MAGIC,
    TRAILER_SIZE,
    Codec,
    IndexEntry,
    file_info_payload,
    frame_block,
    mid_key_metadata,
    non_root_index_payload,
    non_root_size,
    root_index_payload,
    root_size,
    trailer_bytes,
)

__all__ = ["KV_COMPARATOR", "BloomType", "WrittenHFile", "build_hfile", "write_hfile"]

BloomType = Literal["none", "row", "rowcol"]

#: Comparator name HBase 2.x writes for user tables (``FixedFileTrailer.getHBase1CompatibleName``).
KV_COMPARATOR: Final = "org.apache.hadoop.hbase.KeyValue$KVComparator"
#: Comparator recorded in ROWCOL Bloom meta (``CellComparatorImpl.COMPARATOR``).
_ROWCOL_BLOOM_COMPARATOR: Final = "org.apache.hadoop.hbase.CellComparatorImpl"
_LATEST: Final = b"\x7f\xff\xff\xff\xff\xff\xff\xff"
_MAXIMUM: Final = b"\xff"
_LONG_MAX: Final = (1 << 63) - 1
_LONG_MIN: Final = -(1 << 63)


@dataclass(frozen=True, slots=True)
class WrittenHFile:
    """What :func:`write_hfile` wrote.

    Attributes:
        path: The file written.
        file_size: Its size in bytes.
        entry_count: Cells written.
        data_blocks: Data blocks written.
        index_levels: Data-index levels (1 = the root points at data blocks).
        bloom_chunks: General Bloom chunks written.
        first_row: Row of the first cell (None for an empty file).
        last_row: Row of the last cell (None for an empty file).
    """

    path: str
    file_size: int
    entry_count: int
    data_blocks: int
    index_levels: int
    bloom_chunks: int
    first_row: bytes | None
    last_row: bytes | None


# ---------------------------------------------------------------------------------------
# Keys


def _split_key(key: bytes) -> tuple[bytes, bytes, bytes]:
    rlen = (key[0] << 8) | key[1]
    row = key[2 : 2 + rlen]
    flen = key[2 + rlen]
    fam = key[3 + rlen : 3 + rlen + flen]
    return row, fam, key[3 + rlen + flen : -9]


def _first_on(row: bytes, fam: bytes = b"", qual: bytes = b"") -> bytes:
    """Serialized key of ``createFirstOnRow``/``...RowFamily``/``...RowCol`` (LATEST, Maximum)."""
    return struct.pack(">H", len(row)) + row + bytes((len(fam),)) + fam + qual + _LATEST + _MAXIMUM


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
# Block cutting


def block_bounds(
    offsets: npt.NDArray[np.int64], dup: npt.NDArray[np.bool_], block_size: int
) -> list[int]:
    """Cell indexes where blocks start, plus the cell count.

    HBase appends a cell, and before the next (non-duplicate) cell closes the block once the
    unencoded bytes written reach ``block_size``.

    Args:
        offsets: Cell start offsets in NONE layout plus the total.
        dup: Per cell, whether its key equals the previous cell's.
        block_size: Block size.

    Returns:
        ``[0, s1, s2, ..., n]``.
    """
    n = len(offsets) - 1
    bounds = [0]
    non_dup = np.nonzero(~dup)[0]
    s = 0
    while s < n:
        e = int(np.searchsorted(offsets, offsets[s] + block_size, side="left"))
        e = min(max(e, s + 1), n)
        if e < n and dup[e]:
            j = int(np.searchsorted(non_dup, e, side="left"))
            e = int(non_dup[j]) if j < len(non_dup) else n
        bounds.append(e)
        s = e
    return bounds


# ---------------------------------------------------------------------------------------
# Bloom planning


@dataclass(slots=True)
class _BloomPlan:
    """A compound Bloom filter's chunks and the cell count at which each is full."""

    chunks: list[bw.BloomChunk]
    full_at: list[int]  # cumulative key count that fills chunk c; sys.maxsize for the last
    key_count_through: npt.NDArray[np.int64]  # bloom keys among cells 0..i inclusive
    params: bw.BloomParams
    comparator: str | None
    last_key: bytes | None


def _plan_bloom(
    key_cells: npt.NDArray[np.int64],
    n_cells: int,
    hash_keys: pa.Array,
    index_keys: list[bytes] | pa.Array,
    params: bw.BloomParams,
    comparator: str | None,
    last_key: bytes | None,
) -> _BloomPlan | None:
    k = len(key_cells)
    if k == 0:
        return None
    through = np.zeros(n_cells, np.int64)
    np.add.at(through, key_cells, 1)
    through = np.cumsum(through)
    bufs = hash_keys.buffers()
    offs = np.frombuffer(bufs[1], np.int64, count=len(hash_keys) + 1, offset=hash_keys.offset * 8)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts, lens = offs[:-1], np.diff(offs)
    m = params.max_keys
    chunks: list[bw.BloomChunk] = []
    full_at: list[int] = []
    for c0 in range(0, k, m):
        c1 = min(c0 + m, k)
        first = index_keys[c0]
        first_b = first.as_py() if isinstance(first, pa.Scalar) else first
        chunks.append(bw.build_chunk(data, starts[c0:c1], lens[c0:c1], params, first_b))
        full_at.append(c1 if c1 - c0 == m else 1 << 62)
    return _BloomPlan(chunks, full_at, through, params, comparator, last_key)


# ---------------------------------------------------------------------------------------
# File assembly


class _Out:
    """The file being assembled: block parts, offsets and per-type previous offsets."""

    def __init__(self, *, codec: Codec, checksum: str, bytes_per_checksum: int) -> None:
        self.parts: list[bytes] = []
        self.pos = 0
        self.prev: dict[bytes, int] = {}
        self.codec: Codec = codec
        self.checksum = checksum
        self.bpc = bytes_per_checksum
        self.total_uncompressed = 0

    def block(self, magic: bytes, payload: bytes, *, count: bool = True) -> tuple[int, int, int]:
        """Append a block; returns (offset, on-disk size, uncompressed payload size)."""
        framed = frame_block(
            magic,
            payload,
            codec=self.codec,
            prev_offset=self.prev.get(magic, -1),
            checksum=self.checksum,
            bytes_per_checksum=self.bpc,
        )
        offset = self.pos
        self.prev[magic] = offset
        self.parts.append(framed.data)
        self.pos += len(framed.data)
        if count:
            self.total_uncompressed += HEADER_SIZE + framed.uncompressed_size
        return offset, framed.on_disk_size, framed.uncompressed_size


def _file_info(
    cells: PreparedCells,
    cb: CellBytes,
    *,
    include_tags: bool,
    include_mvcc: bool,
    encoding: Encoding,
    bloom: BloomType,
    general: _BloomPlan | None,
    bulkload_timestamp: int,
    create_time: int,
    source_task: str | None,
    major_compaction: bool,
    exclude_from_minor_compaction: bool,
    extra: Mapping[bytes, bytes],
) -> dict[bytes, bytes]:
    """FileInfo of an ``HFileOutputFormat2`` file (§12): writer, store-file and bulk-load keys."""
    n = len(cells)
    info: dict[bytes, bytes] = dict(extra)

    def i32(v: int) -> bytes:
        return struct.pack(">i", v)

    def i64(v: int) -> bytes:
        return struct.pack(">q", v)

    def boolean(v: bool) -> bytes:
        return b"\xff" if v else b"\x00"

    # HFileWriterImpl.finishFileInfo / close
    if n:
        info[b"hfile.LASTKEY"] = cb.key(n - 1)
    info[b"hfile.AVG_KEY_LEN"] = i32(int(cb.key_len.sum()) // n if n else 0)
    info[b"hfile.AVG_VALUE_LEN"] = i32(int(cb.value_len.sum()) // n if n else 0)
    info[b"hfile.CREATE_TIME_TS"] = i64(create_time)
    if include_tags:
        tl = pc.binary_length(cells.tags).to_numpy(zero_copy_only=False)
        info[b"hfile.MAX_TAGS_LEN"] = i32(int(tl.max()) if n else 0)
        info[b"hfile.TAGS_COMPRESSED"] = boolean(False)
    if include_mvcc:
        info[b"MAX_MEMSTORE_TS_KEY"] = i64(max(0, int(cells.seq_id.max())) if n else 0)
        info[b"KEY_VALUE_VERSION"] = i32(1)
    if encoding != "none":
        info[b"DATA_BLOCK_ENCODING"] = ENCODING_NAMES[encoding]
    # StoreFileWriter: Bloom keys, delete-family count, timestamps, HISTORICAL
    if general is not None:
        info[b"BLOOM_FILTER_TYPE"] = b"ROW" if bloom == "row" else b"ROWCOL"
        if general.last_key is not None:
            info[b"LAST_BLOOM_KEY"] = general.last_key
    is_df = (cells.type == 14) | (cells.type == 10)
    info[b"DELETE_FAMILY_COUNT"] = i64(int(is_df.sum()))
    # TimeRangeTracker.includeTimestamp(Cell): DeleteColumn/DeleteFamily also include 0.
    tmin, tmax = _LONG_MAX, _LONG_MIN
    if n:
        tmin, tmax = int(cells.ts.min()), int(cells.ts.max())
        if ((cells.type == 12) | (cells.type == 14)).any():
            tmin, tmax = min(tmin, 0), max(tmax, 0)
    info[b"TIMERANGE"] = i64(tmin) + i64(tmax)
    puts = cells.ts[cells.type == 4]
    info[b"EARLIEST_PUT_TS"] = i64(int(puts.min()) if len(puts) else _LONG_MAX)
    info[b"HISTORICAL"] = boolean(False)
    # HFileOutputFormat2.close
    info[b"BULKLOAD_TIMESTAMP"] = i64(bulkload_timestamp)
    if source_task is not None:
        info[b"BULKLOAD_SOURCE_TASK"] = source_task.encode()
    info[b"MAJOR_COMPACTION_KEY"] = boolean(major_compaction)
    info[b"EXCLUDE_FROM_MINOR_COMPACTION"] = boolean(exclude_from_minor_compaction)
    return info


def _general_bloom(
    cells: PreparedCells, bloom: BloomType, params: bw.BloomParams
) -> _BloomPlan | None:
    n = len(cells)
    if bloom == "none" or n == 0:
        return None
    if bloom == "row":
        sel = np.nonzero(cells.row_changed)[0]
        rows = cells.row.take(pa.array(sel))
        last = rows[len(rows) - 1].as_py()
        return _plan_bloom(sel, n, rows, rows, params, None, last)
    # ROWCOL: a new key whenever row, family or qualifier changes (RowColBloomContext).
    new = np.ones(n, np.bool_)
    if n > 1:
        same = (
            pc.equal(cells.row.slice(1), cells.row.slice(0, n - 1)).to_numpy(zero_copy_only=False)
            & pc.equal(cells.family.slice(1), cells.family.slice(0, n - 1)).to_numpy(
                zero_copy_only=False
            )
            & pc.equal(cells.qualifier.slice(1), cells.qualifier.slice(0, n - 1)).to_numpy(
                zero_copy_only=False
            )
        )
        new[1:] = ~same
    sel = np.nonzero(new)[0]
    idx = pa.array(sel)
    row, fam, qual = cells.row.take(idx), cells.family.take(idx), cells.qualifier.take(idx)
    k = len(sel)
    rl = pc.binary_length(row).to_numpy(zero_copy_only=False).astype(">u2").view(np.uint8)
    rl2 = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        k,
        [None, pa.py_buffer(np.arange(k + 1, dtype=np.int64) * 2), pa.py_buffer(rl.tobytes())],
    )
    tail = pa.scalar(_LATEST + _MAXIMUM, pa.large_binary())
    # RowColBloomHashKey: family omitted, family length 0.
    hash_keys = pc.binary_join_element_wise(
        rl2,
        row,
        pa.scalar(b"\x00", pa.large_binary()),
        qual,
        tail,
        pa.scalar(b"", pa.large_binary()),
    )
    fl = pc.binary_length(fam).to_numpy(zero_copy_only=False).astype(np.uint8)
    fl1 = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        k,
        [None, pa.py_buffer(np.arange(k + 1, dtype=np.int64)), pa.py_buffer(fl.tobytes())],
    )
    index_keys = pc.binary_join_element_wise(
        rl2, row, fl1, fam, qual, tail, pa.scalar(b"", pa.large_binary())
    )
    last = index_keys[k - 1].as_py()
    return _plan_bloom(sel, n, hash_keys, index_keys, params, _ROWCOL_BLOOM_COMPARATOR, last)


def _delete_family_bloom(cells: PreparedCells, params: bw.BloomParams) -> _BloomPlan | None:
    """DeleteFamily Bloom (``StoreFileWriter.appendDeleteFamilyBloomFilter``, ROW keys)."""
    n = len(cells)
    sel_all = np.nonzero((cells.type == 14) | (cells.type == 10))[0]
    if not len(sel_all):
        return None
    rows = cells.row.take(pa.array(sel_all))
    new = np.ones(len(sel_all), np.bool_)
    if len(sel_all) > 1:
        new[1:] = ~pc.equal(rows.slice(1), rows.slice(0, len(rows) - 1)).to_numpy(
            zero_copy_only=False
        )
    sel = sel_all[new]
    keys = rows.filter(pa.array(new))
    return _plan_bloom(sel, n, keys, keys, params, None, None)


def _block_cells(
    cb: CellBytes, cells: PreparedCells, s: int, e: int, include_tags: bool
) -> BlockCells:
    o0, o1 = int(cb.offsets[s]), int(cb.offsets[e])
    raw = cb.data[o0:o1].tobytes()
    rel = cb.offsets[s : e + 1] - o0
    keys = [raw[int(rel[i]) + 8 : int(rel[i]) + 8 + int(cb.key_len[s + i])] for i in range(e - s)]
    values = cells.value.slice(s, e - s).to_pylist()
    tags = cells.tags.slice(s, e - s).to_pylist() if include_tags else None
    mvcc = None
    if cb.mvcc_sizes is not None and cb.mvcc_data is not None:
        moff = np.zeros(len(cb.mvcc_sizes) + 1, np.int64)
        np.cumsum(cb.mvcc_sizes, out=moff[1:])
        md = cb.mvcc_data
        mvcc = [md[int(moff[i]) : int(moff[i + 1])] for i in range(s, e)]
    new_row = cells.row_changed[s:e].copy()
    new_row[0] = True
    return BlockCells(raw, cb.offsets[s : e + 1], keys, values, tags, mvcc, new_row)


def build_hfile(
    cells: Any,
    *,
    family: bytes | None = None,
    compression: Codec = "none",
    encoding: Encoding = "none",
    block_size: int = 65536,
    bloom: BloomType = "row",
    include_mvcc: bool = True,
    include_tags: bool = True,
    checksum: Literal["crc32c", "crc32", "none"] = "crc32c",
    bytes_per_checksum: int = 16384,
    index_block_max_size: int = 128 * 1024,
    index_min_entries: int = 16,
    bloom_block_size: int = 128 * 1024,
    bloom_error_rate: float = 0.01,
    comparator: str = KV_COMPARATOR,
    bulkload_timestamp: int | None = None,
    create_time: int | None = None,
    source_task: str | None = "cellstore",
    major_compaction: bool = True,
    exclude_from_minor_compaction: bool = False,
    file_info: Mapping[bytes, bytes] | None = None,
) -> tuple[bytes, WrittenHFile]:
    """Build an HFile in memory; see :func:`write_hfile` for the arguments.

    Returns:
        The file's bytes and its summary (with an empty ``path``).
    """
    if compression not in CODEC_ORDINALS:
        raise InvalidArgumentError(f"unknown compression {compression!r}")
    if encoding not in ENCODING_IDS:
        raise InvalidArgumentError(f"unknown data block encoding {encoding!r}")
    if bloom not in ("none", "row", "rowcol"):
        raise InvalidArgumentError(f"unknown bloom type {bloom!r}")
    if checksum not in CHECKSUM_TYPES:
        raise InvalidArgumentError(f"unknown checksum type {checksum!r}")
    if block_size <= 0 or index_block_max_size <= 0 or bytes_per_checksum <= 0:
        raise InvalidArgumentError("block sizes must be positive")
    if index_min_entries < 2:
        raise InvalidArgumentError("index_min_entries must be at least 2")
    now = int(time.time() * 1000)
    prepared = prepare_cells(cells, family=family)
    cb = serialize_cells(prepared, include_tags=include_tags, include_mvcc=include_mvcc)
    n = len(prepared)
    bounds = block_bounds(cb.offsets, prepared.dup, block_size)

    gparams = bw.bloom_params(
        rowcol=bloom == "rowcol", chunk_bytes=bloom_block_size, error_rate=bloom_error_rate
    )
    general = _general_bloom(prepared, bloom, gparams)
    dfb = None
    if bloom != "rowcol":
        dparams = bw.bloom_params(
            rowcol=False, chunk_bytes=bloom_block_size, error_rate=bloom_error_rate
        )
        dfb = _delete_family_bloom(prepared, dparams)
    blooms = [(p, MAGIC["BLOOM_CHUNK"]) for p in (general, dfb) if p is not None]
    written_chunks: list[list[IndexEntry]] = [[] for _ in blooms]

    out = _Out(codec=compression, checksum=checksum, bytes_per_checksum=bytes_per_checksum)
    data_magic = MAGIC["DATA"] if encoding == "none" else MAGIC["ENCODED_DATA"]
    leaf: list[IndexEntry] = []
    leaf_key_bytes = 0
    root: list[IndexEntry] = []
    sub_entries_at: list[int] = []
    n_data_entries = 0
    index_uncompressed = 0
    first_data = last_data = -1
    prev_last_key: bytes | None = None

    def write_leaf() -> None:
        nonlocal leaf, leaf_key_bytes, index_uncompressed
        off, size, usize = out.block(MAGIC["LEAF_INDEX"], non_root_index_payload(leaf))
        index_uncompressed += usize
        root.append(IndexEntry(leaf[0].key, off, size))
        sub_entries_at.append(n_data_entries)
        leaf, leaf_key_bytes = [], 0

    def write_blooms(keys_seen: int | None) -> None:
        for b, (plan, magic) in enumerate(blooms):
            done = written_chunks[b]
            while len(done) < len(plan.chunks) and (
                keys_seen is None
                or plan.full_at[len(done)] <= int(plan.key_count_through[keys_seen])
            ):
                chunk = plan.chunks[len(done)]
                off, size, _ = out.block(magic, chunk.bits)
                done.append(IndexEntry(chunk.first_key, off, size))

    for b in range(len(bounds) - 1):
        s, e = bounds[b], bounds[b + 1]
        if encoding == "none":
            payload = cb.data[int(cb.offsets[s]) : int(cb.offsets[e])].tobytes()
        else:
            payload = encode_block(encoding, _block_cells(cb, prepared, s, e, include_tags))
        off, size, _ = out.block(data_magic, payload)
        if first_data < 0:
            first_data = off
        last_data = off
        first_key = cb.key(s)
        key = midpoint_key(prev_last_key, first_key)
        prev_last_key = cb.key(e - 1)
        leaf.append(IndexEntry(key, off, size))
        leaf_key_bytes += len(key)
        n_data_entries += 1
        if e < n:  # writeInlineBlocks(false) after a block closed by cell e
            if non_root_size(len(leaf), leaf_key_bytes) >= index_block_max_size:
                write_leaf()
            write_blooms(e)
    # close(): finishBlock; writeInlineBlocks(true)
    levels = 1
    if leaf:
        if root:
            write_leaf()
        else:
            root, leaf = leaf, []
    if sub_entries_at:
        levels = 2
    write_blooms(None)

    # Data index: intermediate levels, then the root (BlockIndexWriter.writeIndexBlocks).
    midkey = mid_key_metadata(root, sub_entries_at) if levels > 1 else b""
    if levels > 1:
        while (
            root_size(root) > index_block_max_size and len(root) > index_min_entries and levels < 16
        ):
            parent: list[IndexEntry] = []
            chunk: list[IndexEntry] = []
            chunk_root = 0
            for i, ent in enumerate(root):
                chunk.append(ent)
                chunk_root += root_size([ent])
                if i >= index_min_entries and chunk_root >= index_block_max_size:
                    off, size, usize = out.block(
                        MAGIC["INTERMEDIATE_INDEX"], non_root_index_payload(chunk), count=False
                    )
                    index_uncompressed += usize
                    parent.append(IndexEntry(chunk[0].key, off, size))
                    chunk, chunk_root = [], 0
            if chunk:
                off, size, usize = out.block(
                    MAGIC["INTERMEDIATE_INDEX"], non_root_index_payload(chunk), count=False
                )
                index_uncompressed += usize
                parent.append(IndexEntry(chunk[0].key, off, size))
            root = parent
            levels += 1
    root_payload = root_index_payload(root) + midkey
    load_on_open, _, usize = out.block(MAGIC["ROOT_INDEX"], root_payload, count=False)
    index_uncompressed += usize
    out.block(MAGIC["ROOT_INDEX"], b"")  # meta index: no meta blocks
    info = _file_info(
        prepared,
        cb,
        include_tags=include_tags,
        include_mvcc=include_mvcc,
        encoding=encoding,
        bloom=bloom,
        general=general,
        bulkload_timestamp=now if bulkload_timestamp is None else bulkload_timestamp,
        create_time=now if create_time is None else create_time,
        source_task=source_task,
        major_compaction=major_compaction,
        exclude_from_minor_compaction=exclude_from_minor_compaction,
        extra=file_info or {},
    )
    file_info_offset, _, _ = out.block(MAGIC["FILE_INFO"], file_info_payload(info))
    for bidx, (plan, _m) in enumerate(blooms):
        meta_magic = (
            MAGIC["GENERAL_BLOOM_META"] if plan is general else MAGIC["DELETE_FAMILY_BLOOM_META"]
        )
        out.block(
            meta_magic,
            bw.bloom_meta_payload(
                plan.chunks, written_chunks[bidx], plan.params, comparator=plan.comparator
            ),
        )
    trailer = trailer_bytes(
        file_info_offset=file_info_offset,
        load_on_open_offset=load_on_open,
        uncompressed_data_index_size=index_uncompressed,
        total_uncompressed_bytes=out.total_uncompressed + TRAILER_SIZE,
        data_index_count=len(root),
        meta_index_count=0,
        entry_count=n,
        num_data_index_levels=levels,
        first_data_block_offset=first_data,
        last_data_block_offset=last_data,
        comparator=comparator,
        codec=compression,
    )
    out.parts.append(trailer)
    data = b"".join(out.parts)
    summary = WrittenHFile(
        path="",
        file_size=len(data),
        entry_count=n,
        data_blocks=len(bounds) - 1,
        index_levels=levels,
        bloom_chunks=len(general.chunks) if general is not None else 0,
        first_row=prepared.row[0].as_py() if n else None,
        last_row=prepared.row[n - 1].as_py() if n else None,
    )
    return data, summary


def write_hfile(
    path: str,
    cells: Any,
    *,
    fs: Any = None,
    family: bytes | None = None,
    compression: Codec = "none",
    encoding: Encoding = "none",
    block_size: int = 65536,
    bloom: BloomType = "row",
    include_mvcc: bool = True,
    include_tags: bool = True,
    checksum: Literal["crc32c", "crc32", "none"] = "crc32c",
    bytes_per_checksum: int = 16384,
    index_block_max_size: int = 128 * 1024,
    index_min_entries: int = 16,
    bloom_block_size: int = 128 * 1024,
    bloom_error_rate: float = 0.01,
    comparator: str = KV_COMPARATOR,
    bulkload_timestamp: int | None = None,
    create_time: int | None = None,
    source_task: str | None = "cellstore",
    major_compaction: bool = True,
    exclude_from_minor_compaction: bool = False,
    file_info: Mapping[bytes, bytes] | None = None,
) -> WrittenHFile:
    """Write ``cells`` as one HBase HFile v3.3 that HBase's bulk load accepts.

    The result is what HBase 2.x's ``HFileOutputFormat2`` writes for one family: v3.3,
    ``KeyValue$KVComparator``, CRC32C checksums in 16 KiB chunks, a one-, two- or
    more-level data index, HBase's compound Bloom filter (same hash and sizing, so HBase's
    gets use it; plus the DeleteFamily Bloom HBase adds unless the Bloom is ROWCOL), and the
    FileInfo of §12 (``BULKLOAD_TIMESTAMP``, ``BULKLOAD_SOURCE_TASK``,
    ``MAJOR_COMPACTION_KEY``, ``EXCLUDE_FROM_MINOR_COMPACTION``, ``TIMERANGE``,
    ``EARLIEST_PUT_TS``, ``DELETE_FAMILY_COUNT``, ``HISTORICAL``, Bloom keys,
    ``KEY_VALUE_VERSION``/``MAX_MEMSTORE_TS_KEY``, ``hfile.*``; no ``MAX_SEQ_ID_KEY``).

    Cells are put in HBase's order (row, family, qualifier ascending; timestamp, type
    descending) when they are not already; duplicates keep their input order. Empty
    families and qualifiers, empty values and ``Long.MAX_VALUE`` timestamps are written as
    HBase's own writer would. One family per file is what bulk load expects; this is not
    enforced (HBase's writer does not either).

    Args:
        path: Destination path (on ``fs``, or local when ``fs`` is None).
        cells: pyarrow Table/RecordBatch or pandas DataFrame with ``row``, ``qualifier``,
            ``ts``, ``type`` (4 Put, 8 Delete, 10 DeleteFamilyVersion, 12 DeleteColumn, 14
            DeleteFamily), ``value``, and optionally ``family``, ``seq_id`` (memstore
            timestamp) and ``tags`` (serialized tag records).
        fs: An fsspec filesystem; None writes to the local filesystem.
        family: Family for every cell when ``cells`` has no ``family`` column.
        compression: ``none``, ``gz``, ``snappy``, ``lz4`` or ``zstd``.
        encoding: Data block encoding: ``none``, ``prefix``, ``diff``, ``fast_diff`` or
            ``row_index_v1``.
        block_size: Data block size (the family's BLOCKSIZE).
        bloom: ``row``, ``rowcol`` or ``none``.
        include_mvcc: Write a memstore timestamp per cell (HBase's default).
        include_tags: Write tags per cell (HBase's default for v3 bulk-load files).
        checksum: ``crc32c`` (HBase's default), ``crc32`` or ``none``.
        bytes_per_checksum: Checksum chunk size.
        index_block_max_size: ``hfile.index.block.max.size``: leaf/intermediate index
            chunk size that triggers another index level.
        index_min_entries: ``hfile.index.block.min.entries``.
        bloom_block_size: ``io.storefile.bloom.block.size``.
        bloom_error_rate: ``io.storefile.bloom.error.rate``.
        comparator: Trailer comparator class name.
        bulkload_timestamp: ``BULKLOAD_TIMESTAMP`` in ms (default: now).
        create_time: ``hfile.CREATE_TIME_TS`` in ms (default: now).
        source_task: ``BULKLOAD_SOURCE_TASK`` value, or None to omit it.
        major_compaction: ``MAJOR_COMPACTION_KEY``.
        exclude_from_minor_compaction: ``EXCLUDE_FROM_MINOR_COMPACTION``.
        file_info: Extra FileInfo entries (custom keys survive a bulk-load split).

    Returns:
        A :class:`WrittenHFile` summary.

    Raises:
        BadCellError: A cell is invalid (missing column, null, unknown type, oversize).
        InvalidArgumentError: An option is invalid.
    """
    data, summary = build_hfile(
        cells,
        family=family,
        compression=compression,
        encoding=encoding,
        block_size=block_size,
        bloom=bloom,
        include_mvcc=include_mvcc,
        include_tags=include_tags,
        checksum=checksum,
        bytes_per_checksum=bytes_per_checksum,
        index_block_max_size=index_block_max_size,
        index_min_entries=index_min_entries,
        bloom_block_size=bloom_block_size,
        bloom_error_rate=bloom_error_rate,
        comparator=comparator,
        bulkload_timestamp=bulkload_timestamp,
        create_time=create_time,
        source_task=source_task,
        major_compaction=major_compaction,
        exclude_from_minor_compaction=exclude_from_minor_compaction,
        file_info=file_info,
    )
    if fs is None:
        with open(path, "wb") as f:
            f.write(data)
    else:
        with fs.open(path, "wb") as f:
            f.write(data)
    return WrittenHFile(
        path=path,
        file_size=summary.file_size,
        entry_count=summary.entry_count,
        data_blocks=summary.data_blocks,
        index_levels=summary.index_levels,
        bloom_chunks=summary.bloom_chunks,
        first_row=summary.first_row,
        last_row=summary.last_row,
    )

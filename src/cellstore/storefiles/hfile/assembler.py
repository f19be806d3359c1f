"""The HFile v3.3 write state machine: cells in, blocks streamed out (no I/O of its own).

:class:`Assembler` takes cells already in HBase's order in batches and writes the file to a
binary sink as ``HFileWriterImpl`` + ``StoreFileWriter`` write it for
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

Streaming: each batch is serialized whole (vectorized, :mod:`.cellbytes`); complete blocks
go to the sink at once and the last, possibly incomplete block is held back and joined to
the next batch. State between batches is that one block, the open index chunks, the open
Bloom chunk and the FileInfo counters, never the file.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.errors import BadCellError
from cellstore.storefiles.hfile import bloomwrite as bw
from cellstore.storefiles.hfile.cellbytes import (
    CellBytes,
    PreparedCells,
    UnorderedCellsError,
    check_tags,
    concat_cells,
    describe_key,
    serialize_cells,
    tail_cells,
)
from cellstore.storefiles.hfile.encoders import (
    ENCODING_NAMES,
    BlockCells,
    encode_block,
)
from cellstore.storefiles.hfile.options import (
    KV_COMPARATOR,
    BloomType,
    HFileOptions,
)
from cellstore.storefiles.hfile.serialize import (
    HEADER_SIZE,
    MAGIC,
    TRAILER_SIZE,
    Codec,
    IndexEntry,
    compress,
    file_info_payload,
    frame_block,
    mid_key_metadata,
    midpoint_key,
    non_root_index_payload,
    non_root_size,
    root_index_payload,
    root_size,
    trailer_bytes,
)
from cellstore.storefiles.hfile.threads import ordered_map

__all__ = [
    "KV_COMPARATOR",
    "Assembler",
    "BloomType",
    "WriteOptions",
    "WrittenHFile",
    "block_bounds",
    "midpoint_key",
]

#: Comparator recorded in ROWCOL Bloom meta (``CellComparatorImpl.COMPARATOR``).
_ROWCOL_BLOOM_COMPARATOR: Final = "org.apache.hadoop.hbase.CellComparatorImpl"
_LATEST: Final = b"\x7f\xff\xff\xff\xff\xff\xff\xff"
_MAXIMUM: Final = b"\xff"
_LONG_MAX: Final = (1 << 63) - 1
_LONG_MIN: Final = -(1 << 63)
_LB: Final = pa.large_binary()
#: Encodings whose key deltas assume one family per file (``bypassFamilyCheck``).
_ONE_FAMILY_ENCODINGS: Final = ("prefix", "diff", "fast_diff")


@dataclass(frozen=True, slots=True)
class WrittenHFile:
    """What :func:`write_hfile` / :meth:`HFileWriter.close` wrote.

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


#: The writer's options (the earlier name of :class:`HFileOptions`).
WriteOptions = HFileOptions


class BinarySink(Protocol):
    """Where the file's bytes go (an open binary file)."""

    def write(self, data: bytes, /) -> Any: ...


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
# Bloom keys of a batch


def _const_width(values: npt.NDArray[np.uint8], width: int) -> pa.LargeBinaryArray:
    k = len(values) // width if width else 0
    return pa.LargeBinaryArray.from_buffers(
        _LB, k, [None, pa.py_buffer(np.arange(k + 1, dtype=np.int64) * width), pa.py_buffer(values)]
    )


def _rowcol_keys(
    row: pa.Array, fam: pa.Array, qual: pa.Array
) -> tuple[pa.LargeBinaryArray, pa.LargeBinaryArray]:
    """(hash keys, chunk-index keys) of ROWCOL Bloom entries."""
    rl = pc.binary_length(row).to_numpy(zero_copy_only=False).astype(">u2").view(np.uint8)
    rl2 = _const_width(np.ascontiguousarray(rl), 2)
    tail = pa.scalar(_LATEST + _MAXIMUM, _LB)
    empty = pa.scalar(b"", _LB)
    # RowColBloomHashKey: family omitted, family length 0.
    hash_keys = pc.binary_join_element_wise(rl2, row, pa.scalar(b"\x00", _LB), qual, tail, empty)
    fl = pc.binary_length(fam).to_numpy(zero_copy_only=False).astype(np.uint8)
    index_keys = pc.binary_join_element_wise(
        rl2, row, _const_width(np.ascontiguousarray(fl), 1), fam, qual, tail, empty
    )
    return hash_keys, index_keys


def _adjacent_differs(*arrays: pa.Array) -> npt.NDArray[np.bool_]:
    """Per element after the first: whether any of ``arrays`` differs from its predecessor."""
    n = len(arrays[0])
    same = np.ones(max(n - 1, 0), np.bool_)
    for arr in arrays:
        if n > 1:
            same &= pc.equal(arr.slice(1), arr.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    return ~same


# ---------------------------------------------------------------------------------------
# FileInfo


@dataclass(slots=True)
class _Stats:
    """Running FileInfo counters (``HFileWriterImpl`` / ``StoreFileWriter`` trackers)."""

    cells: int = 0
    key_bytes: int = 0
    value_bytes: int = 0
    max_tags_len: int = 0
    max_seq_id: int = 0
    delete_family_count: int = 0
    ts_min: int = _LONG_MAX
    ts_max: int = _LONG_MIN
    earliest_put: int = _LONG_MAX

    def add(self, cells: PreparedCells, tags_len: npt.NDArray[np.int64]) -> None:
        n = len(cells)
        if not n:
            return

        def total(arr: pa.Array) -> int:
            return int(pc.sum(pc.binary_length(arr)).as_py() or 0)

        self.cells += n
        self.key_bytes += 12 * n + total(cells.row) + total(cells.family) + total(cells.qualifier)
        self.value_bytes += total(cells.value)
        self.max_tags_len = max(self.max_tags_len, int(tags_len.max()))
        self.max_seq_id = max(self.max_seq_id, int(cells.seq_id.max()))
        typ = cells.type
        self.delete_family_count += int(((typ == 14) | (typ == 10)).sum())
        # TimeRangeTracker.includeTimestamp(Cell): DeleteColumn/DeleteFamily also include 0.
        lo, hi = int(cells.ts.min()), int(cells.ts.max())
        if ((typ == 12) | (typ == 14)).any():
            lo, hi = min(lo, 0), max(hi, 0)
        self.ts_min, self.ts_max = min(self.ts_min, lo), max(self.ts_max, hi)
        puts = cells.ts[typ == 4]
        if len(puts):
            self.earliest_put = min(self.earliest_put, int(puts.min()))


def _file_info(
    stats: _Stats,
    *,
    last_key: bytes | None,
    options: WriteOptions,
    general: bw.BloomBuilder | None,
    bulkload_timestamp: int,
    create_time: int,
) -> dict[bytes, bytes]:
    """FileInfo of an ``HFileOutputFormat2`` file (§12): writer, store-file and bulk-load keys."""
    o = options
    n = stats.cells
    info: dict[bytes, bytes] = dict(o.file_info)

    def i32(v: int) -> bytes:
        return struct.pack(">i", v)

    def i64(v: int) -> bytes:
        return struct.pack(">q", v)

    def boolean(v: bool) -> bytes:
        return b"\xff" if v else b"\x00"

    # HFileWriterImpl.finishFileInfo / close
    if last_key is not None:
        info[b"hfile.LASTKEY"] = last_key
    info[b"hfile.AVG_KEY_LEN"] = i32(stats.key_bytes // n if n else 0)
    info[b"hfile.AVG_VALUE_LEN"] = i32(stats.value_bytes // n if n else 0)
    info[b"hfile.CREATE_TIME_TS"] = i64(create_time)
    if o.include_tags:
        info[b"hfile.MAX_TAGS_LEN"] = i32(stats.max_tags_len)
        info[b"hfile.TAGS_COMPRESSED"] = boolean(False)
    if o.include_mvcc:
        info[b"MAX_MEMSTORE_TS_KEY"] = i64(stats.max_seq_id)
        info[b"KEY_VALUE_VERSION"] = i32(1)
    if o.encoding != "none":
        info[b"DATA_BLOCK_ENCODING"] = ENCODING_NAMES[o.encoding]
    # StoreFileWriter: Bloom keys, delete-family count, timestamps, HISTORICAL
    if general is not None:
        info[b"BLOOM_FILTER_TYPE"] = b"ROW" if o.bloom == "row" else b"ROWCOL"
        if general.last_key is not None:
            info[b"LAST_BLOOM_KEY"] = general.last_key
    info[b"DELETE_FAMILY_COUNT"] = i64(stats.delete_family_count)
    info[b"TIMERANGE"] = i64(stats.ts_min) + i64(stats.ts_max)
    info[b"EARLIEST_PUT_TS"] = i64(stats.earliest_put)
    info[b"HISTORICAL"] = boolean(False)
    # HFileOutputFormat2.close
    info[b"BULKLOAD_TIMESTAMP"] = i64(bulkload_timestamp)
    if o.source_task is not None:
        info[b"BULKLOAD_SOURCE_TASK"] = o.source_task.encode()
    info[b"MAJOR_COMPACTION_KEY"] = boolean(o.major_compaction)
    info[b"EXCLUDE_FROM_MINOR_COMPACTION"] = boolean(o.exclude_from_minor_compaction)
    return info


# ---------------------------------------------------------------------------------------
# Assembly


class _Sink:
    """The file being written: offsets and per-type previous offsets of its blocks."""

    def __init__(self, out: BinarySink, *, codec: Codec, checksum: str, bpc: int) -> None:
        self.out = out
        self.pos = 0
        self.prev: dict[bytes, int] = {}
        self.codec: Codec = codec
        self.checksum = checksum
        self.bpc = bpc
        self.total_uncompressed = 0

    def block(
        self, magic: bytes, payload: bytes, *, count: bool = True, compressed: bytes | None = None
    ) -> tuple[int, int, int]:
        """Append a block; returns (offset, on-disk size, uncompressed payload size).

        ``compressed`` is the payload already compressed with the file's codec (on a
        writer thread); else it is compressed here.
        """
        framed = frame_block(
            magic,
            payload,
            codec=self.codec,
            prev_offset=self.prev.get(magic, -1),
            checksum=self.checksum,
            bytes_per_checksum=self.bpc,
            compressed=compressed,
        )
        offset = self.pos
        self.prev[magic] = offset
        self.out.write(framed.data)
        self.pos += len(framed.data)
        if count:
            self.total_uncompressed += HEADER_SIZE + framed.uncompressed_size
        return offset, framed.on_disk_size, framed.uncompressed_size


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


_CellKey = tuple[bytes, bytes, bytes, int, int]
#: A data block's payload and its bytes on disk (compressed with the file's codec).
_Payload = tuple[bytes, bytes]
#: Data blocks one writer thread encodes and compresses per task.
_BLOCKS_PER_TASK: Final = 16
#: Fewest cells of a batch whose Bloom keys are hashed while it is laid out.
_OVERLAP_CELLS: Final = 1 << 16


def _cell_key(cells: PreparedCells, i: int) -> _CellKey:
    return (
        cells.row[i].as_py(),
        cells.family[i].as_py(),
        cells.qualifier[i].as_py(),
        int(cells.ts[i]),
        int(cells.type[i]),
    )


def _sorts_before(a: _CellKey, b: _CellKey) -> bool:
    """``a < b`` in HBase's order (timestamp and type descending)."""
    return (a[0], a[1], a[2], -a[3], -a[4]) < (b[0], b[1], b[2], -b[3], -b[4])


class Assembler:
    """Writes one HFile to a sink from batches of cells in HBase's order.

    Args:
        out: The binary sink (an open file); the assembler writes, never closes it.
        options: Validated options.
    """

    def __init__(self, out: BinarySink, options: WriteOptions) -> None:
        o = options
        self.options = o
        now = int(time.time() * 1000)
        self._bulkload_ts = now if o.bulkload_timestamp is None else o.bulkload_timestamp
        self._create_time = now if o.create_time is None else o.create_time
        self._sink = _Sink(out, codec=o.compression, checksum=o.checksum, bpc=o.bytes_per_checksum)
        self._data_magic = MAGIC["DATA"] if o.encoding == "none" else MAGIC["ENCODED_DATA"]
        self._general: bw.BloomBuilder | None = None
        if o.bloom != "none":
            gparams = bw.bloom_params(
                rowcol=o.bloom == "rowcol",
                chunk_bytes=o.bloom_block_size,
                error_rate=o.bloom_error_rate,
            )
            comparator = _ROWCOL_BLOOM_COMPARATOR if o.bloom == "rowcol" else None
            self._general = bw.BloomBuilder(gparams, comparator=comparator)
        self._dfb: bw.BloomBuilder | None = None
        if o.bloom != "rowcol":  # StoreFileWriter: no DeleteFamily Bloom beside ROWCOL
            dparams = bw.bloom_params(
                rowcol=False, chunk_bytes=o.bloom_block_size, error_rate=o.bloom_error_rate
            )
            self._dfb = bw.BloomBuilder(dparams, comparator=None)
        self._blooms = [b for b in (self._general, self._dfb) if b is not None]
        # Held-back cells (the last, possibly incomplete block) and, per Bloom, the filter's
        # key count through each of them.
        self._pending: PreparedCells | None = None
        self._pending_through: list[npt.NDArray[np.int64]] = []
        self._stats = _Stats()
        self._last: _CellKey | None = None
        self._last_df_row: bytes | None = None
        self._first_row: bytes | None = None
        self._cell_bytes = 0
        # Data index state (BlockIndexWriter).
        self._leaf: list[IndexEntry] = []
        self._leaf_key_bytes = 0
        self._root: list[IndexEntry] = []
        self._sub_entries_at: list[int] = []
        self._data_blocks = 0
        self._index_uncompressed = 0
        self._first_data = -1
        self._last_data = -1
        self._prev_last_key: bytes | None = None

    @property
    def cells(self) -> int:
        """Cells accepted so far."""
        return self._stats.cells

    @property
    def uncompressed_bytes(self) -> int:
        """Bytes of the accepted cells in NONE layout (``KeyValue`` + tags + memstore ts)."""
        return self._cell_bytes

    @property
    def file_bytes(self) -> int:
        """Bytes written to the sink so far."""
        return self._sink.pos

    def append(self, cells: PreparedCells) -> None:
        """Add a batch of cells in HBase's order that sorts after every earlier cell.

        Checks come before any state changes: after a refused batch the assembler is as it
        was.

        Args:
            cells: Prepared cells in order (their own ``dup``/``row_changed`` flags; the
                first cell's flags are set here relative to the previous batch).

        Raises:
            UnorderedCellsError: The batch's first cell sorts before the previous cell.
            BadCellError: The cells' tags cannot be written with these options, or a
                PREFIX/DIFF/FAST_DIFF file would get a second family.
        """
        n = len(cells)
        if not n:
            return
        tags_len = check_tags(cells, include_tags=self.options.include_tags)
        first = _cell_key(cells, 0)
        if self.options.encoding in _ONE_FAMILY_ENCODINGS:
            self._check_one_family(cells, first[1] if self._last is None else self._last[1])
        if self._last is not None:
            if _sorts_before(first, self._last):
                raise UnorderedCellsError(
                    f"cells are not in HBase order: {describe_key(*first)} sorts before the "
                    f"previous cell {describe_key(*self._last)}"
                )
            cells.dup[0] = first == self._last
            cells.row_changed[0] = first[0] != self._last[0]
        else:
            self._first_row = first[0]
        pending = self._pending
        held = 0 if pending is None else len(pending)
        batch = cells if pending is None else concat_cells(pending, cells)
        o = self.options
        through, cb = self._keys_and_layout(cells, batch)
        self._stats.add(cells, tags_len)
        self._last = _cell_key(cells, n - 1)
        if held:
            through = [
                np.concatenate([p, t]) for p, t in zip(self._pending_through, through, strict=True)
            ]
        self._cell_bytes += int(cb.offsets[-1] - cb.offsets[held])
        bounds = block_bounds(cb.offsets, batch.dup, o.data_block_size)
        blocks = self._payloads(cb, batch, bounds[:-1])
        try:
            for b in range(len(bounds) - 2):
                s, e = bounds[b], bounds[b + 1]
                self._data_block(cb, s, e, *next(blocks))
                # writeInlineBlocks(false) after a block closed by cell e
                if non_root_size(len(self._leaf), self._leaf_key_bytes) >= o.index_block_max_size:
                    self._write_leaf()
                for bloom, t in zip(self._blooms, through, strict=True):
                    self._write_bloom_chunks(bloom, int(t[e]))
        finally:
            blocks.close()
        last = bounds[-2]
        self._pending = tail_cells(batch, last)
        self._pending_through = [t[last:].copy() for t in through]

    def _keys_and_layout(
        self, cells: PreparedCells, batch: PreparedCells
    ) -> tuple[list[npt.NDArray[np.int64]], CellBytes]:
        """:meth:`_add_bloom_keys` of ``cells`` and :func:`serialize_cells` of ``batch``.

        With threads and a big batch the Bloom keys are hashed on a thread while the
        cells are laid out (both mostly release the GIL).
        """
        o = self.options

        def layout() -> CellBytes:
            return serialize_cells(
                batch, include_tags=o.include_tags, include_mvcc=o.include_mvcc, threads=o.threads
            )

        if o.threads < 2 or len(cells) < _OVERLAP_CELLS or not self._blooms:
            return self._add_bloom_keys(cells), layout()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cellstore-bloom") as pool:
            keys = pool.submit(self._add_bloom_keys, cells)
            cb = layout()
            return keys.result(), cb

    def _check_one_family(self, cells: PreparedCells, family: bytes) -> None:
        """Refuse a second family in a PREFIX/DIFF/FAST_DIFF file.

        HBase's encoders compare keys with ``bypassFamilyCheck=true`` (a store file has one
        family): cells of another family would decode with the wrong one.
        """
        if cells.family_const == family:
            return
        differs = pc.not_equal(cells.family, pa.scalar(family, _LB)).to_numpy(zero_copy_only=False)
        i = int(np.argmax(differs))
        raise BadCellError(
            f"cell {i}: family {cells.family[i].as_py()!r} differs from the file's family "
            f"{family!r}; {self.options.encoding.upper()} encoding needs one family per HFile",
            record=i,
            field="family",
        )

    def _add_bloom_keys(self, cells: PreparedCells) -> list[npt.NDArray[np.int64]]:
        """Add a batch's Bloom keys; per Bloom, its key count through each cell."""
        n = len(cells)
        through: list[npt.NDArray[np.int64]] = []
        last = self._last
        for bloom in self._blooms:
            if bloom is self._general and self.options.bloom == "row":
                flags = cells.row_changed.copy()
                if last is None:
                    flags[0] = True
                sel = pa.array(np.nonzero(flags)[0])
                keys = cells.row.take(sel)
                bloom.add(keys, keys)
            elif bloom is self._general:  # ROWCOL: a new key whenever row/family/qualifier change
                flags = np.ones(n, np.bool_)
                flags[1:] = _adjacent_differs(cells.row, cells.family, cells.qualifier)
                if last is not None:
                    flags[0] = (
                        cells.row[0].as_py(),
                        cells.family[0].as_py(),
                        cells.qualifier[0].as_py(),
                    ) != last[:3]
                sel = pa.array(np.nonzero(flags)[0])
                bloom.add(
                    *_rowcol_keys(
                        cells.row.take(sel), cells.family.take(sel), cells.qualifier.take(sel)
                    )
                )
            else:  # DeleteFamily Bloom (appendDeleteFamilyBloomFilter): rows of DF cells
                is_df = (cells.type == 14) | (cells.type == 10)
                flags = np.zeros(n, np.bool_)
                idx = np.nonzero(is_df)[0]
                if len(idx):
                    rows = cells.row.take(pa.array(idx))
                    new = np.ones(len(idx), np.bool_)
                    new[1:] = _adjacent_differs(rows)
                    new[0] = rows[0].as_py() != self._last_df_row
                    flags[idx[new]] = True
                    self._last_df_row = rows[len(rows) - 1].as_py()
                    keys = rows.filter(pa.array(new))
                    bloom.add(keys, keys)
            through.append(bloom.total_keys - int(flags.sum()) + np.cumsum(flags, dtype=np.int64))
        return through

    def _payload(self, cb: CellBytes, cells: PreparedCells, s: int, e: int) -> _Payload:
        """Cells ``[s, e)`` as a data block's payload, and that payload compressed."""
        o = self.options
        if o.encoding == "none":
            payload = cb.data[int(cb.offsets[s]) : int(cb.offsets[e])].tobytes()
        else:
            payload = encode_block(o.encoding, _block_cells(cb, cells, s, e, o.include_tags))
        return payload, compress(payload, o.compression)

    def _payloads(
        self, cb: CellBytes, cells: PreparedCells, bounds: list[int]
    ) -> Generator[_Payload, None, None]:
        """:meth:`_payload` of the blocks ``[bounds[b], bounds[b + 1])``, in order.

        With ``threads > 1`` and a codec, groups of :data:`_BLOCKS_PER_TASK` blocks are
        encoded and compressed on a thread pool (the codecs release the GIL; a group per
        task keeps the hand-overs between threads few), at most ``2 * threads`` groups
        ahead of the block being written; an error in a worker is raised here, in block
        order.
        """
        threads = self.options.threads if self.options.compression != "none" else 1
        spans = list(pairwise(bounds))
        groups = [spans[k : k + _BLOCKS_PER_TASK] for k in range(0, len(spans), _BLOCKS_PER_TASK)]
        for done in ordered_map(
            lambda group: [self._payload(cb, cells, s, e) for s, e in group],
            groups,
            threads=min(threads, len(groups)),
            ahead=2 * threads,
        ):
            yield from done

    def _data_block(self, cb: CellBytes, s: int, e: int, payload: bytes, on_disk: bytes) -> None:
        off, size, _ = self._sink.block(self._data_magic, payload, compressed=on_disk)
        if self._first_data < 0:
            self._first_data = off
        self._last_data = off
        key = midpoint_key(self._prev_last_key, cb.key(s))
        self._prev_last_key = cb.key(e - 1)
        self._leaf.append(IndexEntry(key, off, size))
        self._leaf_key_bytes += len(key)
        self._data_blocks += 1

    def _write_leaf(self) -> None:
        off, size, usize = self._sink.block(MAGIC["LEAF_INDEX"], non_root_index_payload(self._leaf))
        self._index_uncompressed += usize
        self._root.append(IndexEntry(self._leaf[0].key, off, size))
        self._sub_entries_at.append(self._data_blocks)
        self._leaf, self._leaf_key_bytes = [], 0

    def _write_bloom_chunks(self, bloom: bw.BloomBuilder, keys_seen: int | None) -> None:
        for chunk in bloom.take_ready(keys_seen):
            off, size, _ = self._sink.block(MAGIC["BLOOM_CHUNK"], chunk.bits)
            bloom.written(chunk, off, size)

    def finish(self) -> WrittenHFile:
        """Write the last block, the indexes, FileInfo, Bloom metas and the trailer.

        Returns:
            The summary (with an empty ``path``).
        """
        o = self.options
        sink = self._sink
        last_key: bytes | None = None
        if self._pending is not None and len(self._pending):
            pending = self._pending
            cb = serialize_cells(pending, include_tags=o.include_tags, include_mvcc=o.include_mvcc)
            self._data_block(cb, 0, len(pending), *self._payload(cb, pending, 0, len(pending)))
            last_key = cb.key(len(pending) - 1)
            self._pending = None
        # close(): finishBlock; writeInlineBlocks(true)
        levels = 1
        if self._leaf:
            if self._root:
                self._write_leaf()
            else:
                self._root, self._leaf = self._leaf, []
        if self._sub_entries_at:
            levels = 2
        active = [b for b in self._blooms if b.total_keys]
        for bloom in active:
            self._write_bloom_chunks(bloom, None)
        root = self._root
        # Data index: intermediate levels, then the root (BlockIndexWriter.writeIndexBlocks).
        midkey = mid_key_metadata(root, self._sub_entries_at) if levels > 1 else b""
        if levels > 1:
            while (
                root_size(root) > o.index_block_max_size
                and len(root) > o.index_min_entries
                and levels < 16
            ):
                parent: list[IndexEntry] = []
                chunk: list[IndexEntry] = []
                chunk_root = 0
                for i, ent in enumerate(root):
                    chunk.append(ent)
                    chunk_root += root_size([ent])
                    if i >= o.index_min_entries and chunk_root >= o.index_block_max_size:
                        parent.append(self._intermediate(chunk))
                        chunk, chunk_root = [], 0
                if chunk:
                    parent.append(self._intermediate(chunk))
                root = parent
                levels += 1
        load_on_open, _, usize = sink.block(
            MAGIC["ROOT_INDEX"], root_index_payload(root) + midkey, count=False
        )
        self._index_uncompressed += usize
        sink.block(MAGIC["ROOT_INDEX"], b"")  # meta index: no meta blocks
        general = self._general if self._general is not None and self._general.total_keys else None
        info = _file_info(
            self._stats,
            last_key=last_key,
            options=o,
            general=general,
            bulkload_timestamp=self._bulkload_ts,
            create_time=self._create_time,
        )
        file_info_offset, _, _ = sink.block(MAGIC["FILE_INFO"], file_info_payload(info))
        for bloom in active:
            meta_magic = (
                MAGIC["GENERAL_BLOOM_META"]
                if bloom is self._general
                else MAGIC["DELETE_FAMILY_BLOOM_META"]
            )
            sink.block(meta_magic, bloom.meta_payload())
        sink.out.write(
            trailer_bytes(
                file_info_offset=file_info_offset,
                load_on_open_offset=load_on_open,
                uncompressed_data_index_size=self._index_uncompressed,
                total_uncompressed_bytes=sink.total_uncompressed + TRAILER_SIZE,
                data_index_count=len(root),
                meta_index_count=0,
                entry_count=self._stats.cells,
                num_data_index_levels=levels,
                first_data_block_offset=self._first_data,
                last_data_block_offset=self._last_data,
                comparator=o.comparator,
                codec=o.compression,
            )
        )
        sink.pos += TRAILER_SIZE
        return WrittenHFile(
            path="",
            file_size=sink.pos,
            entry_count=self._stats.cells,
            data_blocks=self._data_blocks,
            index_levels=levels,
            bloom_chunks=self._general.chunk_count if self._general is not None else 0,
            first_row=self._first_row,
            last_row=None if self._last is None else self._last[0],
        )

    def _intermediate(self, chunk: list[IndexEntry]) -> IndexEntry:
        off, size, usize = self._sink.block(
            MAGIC["INTERMEDIATE_INDEX"], non_root_index_payload(chunk), count=False
        )
        self._index_uncompressed += usize
        return IndexEntry(chunk[0].key, off, size)

"""Open an HFile on any fsspec filesystem and read its structure and cells.

The reading algorithm is HBase's (``HFileInfo.initMetaAndIndex``, ``HFileReaderImpl``):

1. read the trailer from the file's last bytes (:mod:`.trailer`);
2. read the load-on-open section in one range request and walk its blocks: data-index
   root, meta-index root, FileInfo, then the optional Bloom metas;
3. descend the data index (root, intermediate, leaf) only along the entries a row range
   needs, giving the list of data blocks to read;
4. read those blocks in batches of contiguous byte ranges, verify checksums, decompress,
   un-encode (:mod:`.encodings`) and decode all cells of a batch at once (:mod:`.cells`).

Memory per batch is bounded by ``batch_bytes`` of on-disk blocks plus their decompressed
payloads and the Arrow output.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Any, Final, Literal

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.errors import CorruptFileError, UnsupportedFormatError
from cellstore.storefiles.hfile.blocks import (
    Block,
    BlockHeader,
    check_block,
    decode_block,
    parse_header,
    verified_data_blocks,
)
from cellstore.storefiles.hfile.bloom import (
    BloomMeta,
    bloom_key,
    chunk_contains,
    chunk_for_key,
    parse_bloom_meta,
)
from cellstore.storefiles.hfile.cells import (
    PAD,
    CellFlags,
    cells_to_table,
    empty_cells,
    walk_cells,
)
from cellstore.storefiles.hfile.encodings import ENCODING_IDS, decode_encoded_block
from cellstore.storefiles.hfile.fileinfo import decode_file_info, parse_file_info
from cellstore.storefiles.hfile.index import (
    IndexEntry,
    MidKeyMetadata,
    block_range_for_rows,
    key_row,
    parse_non_root_index,
    parse_root_index,
)
from cellstore.storefiles.hfile.keys import parse_key
from cellstore.storefiles.hfile.trailer import MAX_TRAILER_SIZE, Trailer, parse_trailer

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_THREADS",
    "BlockProblem",
    "HFileReader",
    "OnCorrupt",
]

#: On-disk bytes of data blocks decoded together (one Arrow batch per group).
DEFAULT_BATCH_BYTES: Final = 16 << 20
#: Batches decoded at once by default (the machine's cores, at most 2: one batch is
#: consumed while the next decodes).
DEFAULT_THREADS: Final = max(1, min(2, os.cpu_count() or 1))
#: What a read does with a corrupt data block: raise, or skip it and go on.
OnCorrupt = Literal["raise", "skip"]
_INDEX_TYPES: Final = ("INTERMEDIATE_INDEX", "LEAF_INDEX")
_VERIFY_CHUNK: Final = 16 << 20


@dataclass(frozen=True)
class BlockProblem:
    """A data block a read skipped or ``verify`` found damaged.

    Attributes:
        offset: The block's file offset.
        message: What is wrong (checksum expected vs actual, decompression error...).
    """

    offset: int
    message: str


@dataclass
class _Batch:
    entries: list[IndexEntry] = field(default_factory=list)
    size: int = 0


class HFileReader:
    """An open HFile: trailer, FileInfo, indexes and Bloom metas loaded; cells on demand.

    Construction does two range reads (tail, load-on-open). The object holds the path
    and filesystem only, so it can be rebuilt cheaply on a worker.

    Attributes:
        path: The file's path on ``fs``.
        where: How messages name the file (its URL as given).
        size: File size in bytes.
        trailer: The fixed file trailer.
        file_info: The raw FileInfo map.
        root_index: Entries of the data-index root.
        mid_key: Mid-key metadata of a multi-level root, else None.
        meta_index: Meta block entries (key = block name).
        general_bloom: The ROW/ROWCOL Bloom meta, if any.
        delete_family_bloom: The DeleteFamily Bloom meta, if any.
        flags: Per-cell extras (tags, memstore timestamps).
        encoding: The data block encoding name (``NONE``, ``FAST_DIFF``...).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        path: str,
        *,
        where: str | None = None,
        verify_checksums: bool = True,
    ) -> None:
        """Open ``path`` on ``fs`` and load its trailer and load-on-open section.

        Raises:
            UnsupportedFormatError: for v1, encrypted files, unknown codecs or encodings.
            CorruptFileError: if the trailer or a load-on-open block is damaged.
            FileNotFoundError: if the file does not exist.
        """
        self.fs = fs
        self.path = path
        self.where = where or path
        self.verify_checksums = verify_checksums
        self.size = int(fs.size(path))
        tail_len = min(MAX_TRAILER_SIZE, self.size)
        tail = self._read(self.size - tail_len, self.size)
        self.trailer: Trailer = parse_trailer(tail, file_size=self.size, where=self.where)
        t = self.trailer
        end = self.size - t.size
        if not 0 <= t.load_on_open_offset <= end:
            raise CorruptFileError(
                f"{self.where}: load-on-open offset {t.load_on_open_offset} is outside the file"
            )
        section = self._read(t.load_on_open_offset, end)
        blocks: list[Block] = []
        pos = 0
        while pos < len(section):
            block = self._decode(section, pos, t.load_on_open_offset + pos)
            blocks.append(block)
            pos += block.header.on_disk_size
        if len(blocks) < 3:
            raise CorruptFileError(
                f"{self.where}: load-on-open section holds {len(blocks)} blocks, expected >= 3"
            )
        root, meta, info = blocks[:3]
        for block, kind in ((root, "ROOT_INDEX"), (meta, "ROOT_INDEX"), (info, "FILE_INFO")):
            if block.block_type != kind:
                raise CorruptFileError(
                    f"{self.where}: expected {kind} at offset {block.header.offset}, found "
                    f"{block.block_type}"
                )
        self.root_index: list[IndexEntry]
        self.mid_key: MidKeyMetadata | None
        self.root_index, self.mid_key = parse_root_index(
            root.payload,
            t.data_index_count,
            where=f"{self.where}: data index root",
            with_mid_key=t.num_data_index_levels > 1,
        )
        self.meta_index, _ = parse_root_index(
            meta.payload, t.meta_index_count, where=f"{self.where}: meta index"
        )
        self.file_info: dict[bytes, bytes] = parse_file_info(info.payload, where=self.where)
        self.general_bloom: BloomMeta | None = None
        self.delete_family_bloom: BloomMeta | None = None
        for block in blocks[3:]:
            if block.block_type == "GENERAL_BLOOM_META":
                self.general_bloom = parse_bloom_meta(block.payload, where=self.where)
            elif block.block_type == "DELETE_FAMILY_BLOOM_META":
                self.delete_family_bloom = parse_bloom_meta(block.payload, where=self.where)
        fi = self.file_info
        self.encoding = fi.get(b"DATA_BLOCK_ENCODING", b"NONE").decode("ascii", "replace")
        if self.encoding not in ENCODING_IDS:
            raise UnsupportedFormatError(
                f"{self.where}: data block encoding {self.encoding} is not supported"
            )
        index_encoding = fi.get(b"INDEX_BLOCK_ENCODING", b"NONE")
        if index_encoding != b"NONE":
            raise UnsupportedFormatError(
                f"{self.where}: index block encoding {index_encoding.decode()} is not supported"
            )
        tags = b"hfile.MAX_TAGS_LEN" in fi
        if (
            tags
            and fi.get(b"hfile.TAGS_COMPRESSED", b"\x00") != b"\x00"
            and self.encoding != "NONE"
        ):
            raise UnsupportedFormatError(
                f"{self.where}: compressed tags in encoded blocks are not supported"
            )
        mvcc = fi.get(b"KEY_VALUE_VERSION", b"") == (1).to_bytes(4, "big")
        self.flags = CellFlags(
            tags=tags,
            mvcc=mvcc,
            mvcc_one_byte=mvcc and fi.get(b"MAX_MEMSTORE_TS_KEY", b"") == bytes(8),
        )

    # ------------------------------------------------------------------ low level

    def _read(self, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        data = self.fs.cat_file(self.path, start=start, end=end)
        if len(data) != end - start:
            raise CorruptFileError(
                f"{self.where}: short read at offset {start} ({len(data)} of {end - start} bytes)"
            )
        return bytes(data)

    def _decode(self, buf: bytes, pos: int, offset: int, expect: str | None = None) -> Block:
        return decode_block(
            buf,
            pos,
            offset=offset,
            header_size=self.trailer.header_size,
            codec=self.trailer.codec,
            where=self.where,
            verify=self.verify_checksums,
            expect=expect,
        )

    def read_block(
        self, offset: int, size: int | None = None, *, expect: str | None = None
    ) -> Block:
        """Read, verify and decompress one block.

        The on-disk size is read from the block's header when not given.

        Raises:
            CorruptFileError: as :func:`~cellstore.storefiles.hfile.blocks.decode_block`.
        """
        if size is None or size <= 0:
            hs = self.trailer.header_size
            head = parse_header(
                self._read(offset, offset + hs), 0, offset=offset, header_size=hs, where=self.where
            )
            size = head.on_disk_size
        return self._decode(self._read(offset, offset + size), 0, offset, expect)

    @property
    def checksum_name(self) -> str:
        """The block checksum type (``CRC32C``, ``CRC32``; ``NULL`` without checksums)."""
        if not self.trailer.has_checksums:
            return "NULL"
        hs = self.trailer.header_size
        offset = self.trailer.load_on_open_offset
        head = parse_header(
            self._read(offset, offset + hs), 0, offset=offset, header_size=hs, where=self.where
        )
        return head.checksum_name

    def verify_blocks(self, problems: list[BlockProblem]) -> int:
        """Verify every block from offset 0 to the trailer, one after another.

        Index and Bloom blocks are checked as well as data blocks. A block header that
        does not parse ends the walk (the next block cannot be found).

        Args:
            problems: Receives one entry per damaged block.

        Returns:
            How many blocks were checked.
        """
        end = self.size - self.trailer.size
        hs = self.trailer.header_size
        pos = 0
        count = 0
        while pos < end:
            chunk = self._read(pos, min(end, pos + _VERIFY_CHUNK))
            k = 0
            while k < len(chunk):
                try:
                    head = parse_header(chunk, k, offset=pos + k, header_size=hs, where=self.where)
                except CorruptFileError as e:
                    problems.append(BlockProblem(pos + k, str(e)))
                    return count
                if k + head.on_disk_size > len(chunk):
                    if k == 0:  # one block larger than the chunk
                        chunk = self._read(pos, min(end, pos + head.on_disk_size))
                        if len(chunk) < head.on_disk_size:
                            problems.append(BlockProblem(pos, f"{self.where}: truncated block"))
                            return count
                        continue
                    break
                try:
                    self._decode(chunk, k, pos + k)
                except CorruptFileError as e:
                    problems.append(BlockProblem(pos + k, str(e)))
                count += 1
                k += head.on_disk_size
            pos += k
        return count

    # ------------------------------------------------------------------ index

    @property
    def is_empty(self) -> bool:
        """Whether the file holds no cells (no data-index entries)."""
        return not self.root_index

    def data_blocks(
        self, *, start_row: bytes | None = None, stop_row: bytes | None = None
    ) -> list[IndexEntry]:
        """Data blocks that can hold rows in ``[start_row, stop_row)``, in file order.

        Descends the multi-level index along the needed entries only, reading just the
        intermediate and leaf index blocks on the way.
        """
        if self.trailer.is_meta_comparator:
            start_row = stop_row = None  # meta rows do not sort as raw bytes
        entries = self.root_index
        rows = self._root_rows
        for _ in range(self.trailer.num_data_index_levels - 1):
            lo, hi = block_range_for_rows(rows, start_row=start_row, stop_row=stop_row)
            children: list[IndexEntry] = []
            for e in entries[lo:hi]:
                block = self.read_block(e.offset, e.size)
                if block.block_type not in _INDEX_TYPES:
                    raise CorruptFileError(
                        f"{self.where}: index entry points at a {block.block_type} block at "
                        f"offset {e.offset}"
                    )
                children.extend(
                    parse_non_root_index(block.payload, where=f"{self.where}@{e.offset}")
                )
            entries = children
            rows = [key_row(e.key) for e in entries]
        lo, hi = block_range_for_rows(rows, start_row=start_row, stop_row=stop_row)
        return entries[lo:hi]

    @cached_property
    def _root_rows(self) -> list[bytes]:
        """The row of each data-index root entry's key (computed once per reader)."""
        return [key_row(e.key) for e in self.root_index]

    @property
    def first_key(self) -> bytes | None:
        """The first cell's key (data-index root entry 0), None for an empty file."""
        return self.root_index[0].key if self.root_index else None

    @property
    def last_key(self) -> bytes | None:
        """The last cell's key (FileInfo ``hfile.LASTKEY``), None for an empty file."""
        return self.file_info.get(b"hfile.LASTKEY")

    def decoded_file_info(self) -> dict[str, object]:
        """The FileInfo with HBase's well-known keys decoded."""
        return decode_file_info(self.file_info)

    def meta_block(self, name: bytes) -> bytes | None:
        """The payload of the meta block called ``name``, or None if there is none."""
        for e in self.meta_index:
            if e.key == name:
                return self.read_block(e.offset, e.size, expect="META").payload
        return None

    # ------------------------------------------------------------------ Bloom

    @property
    def bloom_type(self) -> str:
        """``ROW``, ``ROWCOL``, ``ROWPREFIX_FIXED_LENGTH`` or ``NONE``."""
        if self.general_bloom is None:
            return "NONE"
        return self.file_info.get(b"BLOOM_FILTER_TYPE", b"ROW").decode("ascii", "replace")

    def _bloom_hit(
        self, meta: BloomMeta, key: bytes, cache: dict[int, bytes], *, seek: bytes | None = None
    ) -> bool:
        i = chunk_for_key(meta, key if seek is None else seek)
        if i < 0:
            return False
        if i not in cache:
            chunk = meta.chunks[i]
            cache[i] = self.read_block(chunk.offset, chunk.size, expect="BLOOM_CHUNK").payload
        return chunk_contains(cache[i], key, hash_count=meta.hash_count, hash_type=meta.hash_type)

    def might_contain(
        self, row: bytes, qualifier: bytes | None = None, *, _cache: dict[int, bytes] | None = None
    ) -> bool:
        """Whether the file may hold ``row`` (and ``qualifier`` with a ROWCOL Bloom).

        False means certainly absent; True means present or a Bloom false positive. A
        file without a general Bloom answers True unless the row is outside its key
        range.
        """
        if self.is_empty:
            return False
        meta = self.general_bloom
        kind = self.bloom_type
        if meta is None or (kind == "ROWCOL" and qualifier is None):
            return True
        param = self.file_info.get(b"BLOOM_FILTER_PARAM", bytes(4))
        key = bloom_key(
            kind, row, qualifier or b"", prefix=int.from_bytes(param[:4], "big", signed=True)
        )
        seek = None
        if kind == "ROWCOL":
            # HBase finds the chunk with the cell's real key (family included,
            # CompoundBloomFilter.contains(Cell...)) but hashes the key without the family.
            family = parse_key(self.root_index[0].key, where=self.where).family
            seek = (
                len(row).to_bytes(2, "big")
                + row
                + bytes([len(family)])
                + family
                + (qualifier or b"")
                + key[-9:]
            )
        return self._bloom_hit(meta, key, _cache if _cache is not None else {}, seek=seek)

    def might_have_delete_family(self, row: bytes) -> bool:
        """Whether the file may hold a DeleteFamily marker for ``row`` (DeleteFamily Bloom)."""
        meta = self.delete_family_bloom
        if meta is None:
            return not self.is_empty
        if meta.key_count == 0:
            return False
        return self._bloom_hit(meta, row, {})

    # ------------------------------------------------------------------ cells

    def _batches(self, entries: Sequence[IndexEntry], batch_bytes: int) -> Iterator[_Batch]:
        batch = _Batch()
        for e in entries:
            contiguous = not batch.entries or e.offset >= batch.entries[-1].offset
            if batch.entries and (batch.size + e.size > batch_bytes or not contiguous):
                yield batch
                batch = _Batch()
            batch.entries.append(e)
            batch.size += e.size
        if batch.entries:
            yield batch

    def _payloads(
        self, batch: _Batch, on_corrupt: OnCorrupt, problems: list[BlockProblem]
    ) -> tuple[
        np.ndarray[Any, np.dtype[np.uint8]],
        np.ndarray[Any, np.dtype[np.int64]],
        np.ndarray[Any, np.dtype[np.int64]],
        np.ndarray[Any, np.dtype[np.int64]],
    ]:
        """Verify and decompress a batch's blocks into one buffer.

        Returns:
            The buffer (with :data:`PAD` zero bytes after the last payload), the start
            and end of each good block's cells in it, and those blocks' file offsets.
        """
        first, last = batch.entries[0], batch.entries[-1]
        base = first.offset
        end = last.offset + last.size
        offs = [e.offset for e in batch.entries]
        in_place = (
            self.trailer.codec == "NONE"
            and self.encoding == "NONE"
            and all(a < b for a, b in pairwise(offs))
        )
        if in_place:
            # Uncompressed NONE blocks: the payloads are read in place, no copy. Read a
            # little past the last block (the file goes on with index blocks and the
            # trailer) so short fields near the end can be gathered as fixed windows.
            raw = self._read(base, min(self.size, end + PAD))
            if len(raw) < end - base + PAD:
                raw += bytes(end - base + PAD - len(raw))
            hs = self.trailer.header_size
            if self.verify_checksums:
                fast = verified_data_blocks(
                    raw,
                    np.array(offs, dtype=np.int64) - base,
                    np.array([e.size for e in batch.entries], dtype=np.int64),
                    header_size=hs,
                )
                if fast is not None:
                    return (
                        np.frombuffer(raw, dtype=np.uint8),
                        fast[0],
                        fast[1],
                        np.array(offs, dtype=np.int64),
                    )
            blocks_view = memoryview(raw)[: end - base]
            starts: list[int] = []
            ends: list[int] = []
            good: list[int] = []
            for e in batch.entries:
                pos = e.offset - base
                try:
                    head = check_block(
                        blocks_view,
                        pos,
                        offset=e.offset,
                        header_size=hs,
                        where=self.where,
                        verify=self.verify_checksums,
                    )
                    _check_data_block(head, self.where)
                except CorruptFileError as err:
                    if on_corrupt == "raise":
                        raise
                    problems.append(BlockProblem(e.offset, str(err)))
                    continue
                starts.append(pos + hs)
                ends.append(pos + head.on_disk_data_size_with_header)
                good.append(e.offset)
            return (
                np.frombuffer(raw, dtype=np.uint8),
                np.array(starts, dtype=np.int64),
                np.array(ends, dtype=np.int64),
                np.array(good, dtype=np.int64),
            )
        raw = self._read(base, end)
        payloads: list[bytes] = []
        offsets: list[int] = []
        for e in batch.entries:
            try:
                block = self._decode(raw, e.offset - base, e.offset)
                if block.block_type == "ENCODED_DATA":
                    payload = decode_encoded_block(
                        block.payload, flags=self.flags, where=f"{self.where}@{e.offset}"
                    )
                elif block.block_type == "DATA":
                    payload = block.payload
                else:
                    raise CorruptFileError(
                        f"{self.where}: index points at a {block.block_type} block at offset "
                        f"{e.offset}, not a data block"
                    )
            except CorruptFileError as err:
                if on_corrupt == "raise":
                    raise
                problems.append(BlockProblem(e.offset, str(err)))
                continue
            payloads.append(payload)
            offsets.append(e.offset)
        sizes = np.array([len(p) for p in payloads], dtype=np.int64)
        bstarts = np.zeros(len(payloads), dtype=np.int64)
        if len(sizes) > 1:
            np.cumsum(sizes[:-1], out=bstarts[1:])
        buf = np.frombuffer(b"".join([*payloads, bytes(PAD)]), dtype=np.uint8)
        return buf, bstarts, bstarts + sizes, np.array(offsets, dtype=np.int64)

    def _walk(
        self,
        buf: np.ndarray[Any, np.dtype[np.uint8]],
        starts: np.ndarray[Any, np.dtype[np.int64]],
        ends: np.ndarray[Any, np.dtype[np.int64]],
        offs: np.ndarray[Any, np.dtype[np.int64]],
        on_corrupt: OnCorrupt,
        problems: list[BlockProblem],
    ) -> np.ndarray[Any, np.dtype[np.int64]]:
        sizes = ends - starts
        try:
            layout = walk_cells(
                buf, starts, starts + sizes, flags=self.flags, where=self.where, block_offsets=offs
            )
            return layout.starts
        except CorruptFileError:
            if on_corrupt == "raise":
                raise
        # Find the bad blocks one at a time and keep the good ones.
        keep: list[np.ndarray[Any, np.dtype[np.int64]]] = []
        for k in range(len(starts)):
            one = slice(k, k + 1)
            try:
                keep.append(
                    walk_cells(
                        buf,
                        starts[one],
                        starts[one] + sizes[one],
                        flags=self.flags,
                        where=self.where,
                        block_offsets=offs[one],
                    ).starts
                )
            except CorruptFileError as err:
                problems.append(BlockProblem(int(offs[k]), str(err)))
        return np.concatenate(keep) if keep else np.zeros(0, dtype=np.int64)

    def iter_batches(
        self,
        *,
        start_row: bytes | None = None,
        stop_row: bytes | None = None,
        columns: list[str] | None = None,
        with_seq_id: bool = False,
        with_tags: bool = False,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        on_corrupt: OnCorrupt = "raise",
        problems: list[BlockProblem] | None = None,
        blocks: Sequence[IndexEntry] | None = None,
        threads: int = DEFAULT_THREADS,
        dictionary: bool = False,
    ) -> Iterator[pa.Table]:
        """Yield the cells in file order, one table per group of data blocks.

        Args:
            start_row: First row to return (inclusive).
            stop_row: Row to stop before (exclusive).
            columns: Columns to return (default all; see
                :func:`~cellstore.storefiles.hfile.cells.cells_schema`).
            with_seq_id: Add the ``seq_id`` column (memstore timestamp).
            with_tags: Add the ``tags`` column (raw tag records).
            batch_bytes: On-disk bytes of data blocks decoded together.
            on_corrupt: ``"raise"`` (default) or ``"skip"`` damaged data blocks (their
                cells are left out; each skip is appended to ``problems``).
            problems: Receives the skipped blocks.
            blocks: Read exactly these data blocks (default: those the row range needs).
            threads: Batches decoded concurrently (1: no thread pool). Memory holds up to
                this many batches.
            dictionary: ``row`` and ``qualifier`` as dictionary arrays (each batch its
                own dictionaries; see :func:`~cellstore.storefiles.hfile.cells.dictionary_keys`).

        Yields:
            Non-empty tables of cells.

        Raises:
            CorruptFileError: naming the file, block offset and expected vs actual
                checksum, when a block is damaged and ``on_corrupt == "raise"``.
        """
        if problems is None:
            problems = []
        entries = (
            blocks
            if blocks is not None
            else self.data_blocks(start_row=start_row, stop_row=stop_row)
        )
        need_filter = bool(start_row) or bool(stop_row)
        build = columns
        if need_filter and columns is not None and "row" not in columns:
            build = ["row", *columns]

        def decode(batch: _Batch) -> pa.Table | None:
            buf, bstarts, bends, offs = self._payloads(batch, on_corrupt, problems)
            if not len(bstarts):
                return None
            starts = self._walk(buf, bstarts, bends, offs, on_corrupt, problems)
            if not len(starts):
                return None
            table = cells_to_table(
                buf,
                starts,
                flags=self.flags,
                columns=build,
                with_seq_id=with_seq_id,
                with_tags=with_tags,
                dictionary=dictionary,
            )
            if need_filter:
                table = _filter_rows(table, start_row, stop_row)
                if build is not columns and columns is not None:
                    table = table.select(columns)
            return table if table.num_rows else None

        batches = list(self._batches(entries, batch_bytes))
        workers = max(1, min(threads, len(batches)))
        if workers == 1:
            for batch in batches:
                table = decode(batch)
                if table is not None:
                    yield table
            return
        # Decode the next batches while the caller consumes this one (numpy, zlib and the
        # codecs release the GIL); at most ``workers`` batches are in memory at once.
        with ThreadPoolExecutor(max_workers=workers) as pool:
            pending: deque[Future[pa.Table | None]] = deque()
            todo = iter(batches)
            for batch in todo:
                pending.append(pool.submit(decode, batch))
                if len(pending) >= workers:
                    break
            while pending:
                table = pending.popleft().result()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(pool.submit(decode, nxt))
                if table is not None:
                    yield table

    def read(self, **options: Any) -> pa.Table:
        """All cells (or a row range) as one table; options as :meth:`iter_batches`."""
        parts = list(self.iter_batches(**options))
        if not parts:
            return empty_cells(
                columns=options.get("columns"),
                with_seq_id=options.get("with_seq_id", False),
                with_tags=options.get("with_tags", False),
            )
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def last_key_text(self) -> str | None:
        """``hfile.LASTKEY`` in HBase's printable form."""
        key = self.last_key
        return None if key is None else str(parse_key(key, where=self.where))


def _check_data_block(head: BlockHeader, where: str) -> None:
    """Raise unless ``head`` is an uncompressed DATA block whose sizes agree."""
    if head.block_type != "DATA":
        raise CorruptFileError(
            f"{where}: index points at a {head.block_type} block at offset {head.offset}, "
            "not a data block"
        )
    size = head.on_disk_data_size_with_header - head.header_size
    if size != head.uncompressed_size:
        raise CorruptFileError(
            f"{where}: DATA block at offset {head.offset}: NONE payload decompressed to {size} "
            f"bytes, header says {head.uncompressed_size}"
        )


def _filter_rows(table: pa.Table, start_row: bytes | None, stop_row: bytes | None) -> pa.Table:
    """The cells of ``table`` whose row is in ``[start_row, stop_row)``."""
    rows = table.column("row")
    if not pa.types.is_dictionary(rows.type):
        mask = _row_mask(rows, start_row, stop_row)
        return table if mask is None else table.filter(mask)
    # Dictionary rows: compare the distinct rows only, then spread the verdicts to cells.
    masks = []
    for chunk in rows.chunks:
        inside = _row_mask(chunk.dictionary, start_row, stop_row)
        if inside is None:
            return table
        masks.append(pc.take(inside, chunk.indices))
    return table.filter(pa.chunked_array(masks, pa.bool_()))


def _row_mask(rows: Any, start_row: bytes | None, stop_row: bytes | None) -> Any:
    """Whether each of ``rows`` is in ``[start_row, stop_row)``; None for no bounds."""
    mask = None
    if start_row:
        mask = pc.greater_equal(rows, pa.scalar(start_row, pa.binary()))
    if stop_row:
        below = pc.less(rows, pa.scalar(stop_row, pa.binary()))
        mask = below if mask is None else pc.and_(mask, below)
    return mask

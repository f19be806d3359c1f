"""Open an HFile on any fsspec filesystem and read its structure and cells.

The reading algorithm is HBase's (``HFileInfo.initMetaAndIndex``, ``HFileReaderImpl``):

1. read the trailer from the file's last bytes (:mod:`.trailer`);
2. read the load-on-open section in one range request and walk its blocks: data-index
   root, meta-index root, FileInfo, then the optional Bloom metas;
3. descend the data index (root, intermediate, leaf) only along the entries a row range
   needs, giving the list of data blocks to read;
4. read those blocks in batches of contiguous byte ranges, verify checksums, decompress,
   un-encode (:mod:`.encodings`) and decode all cells of a batch at once (:mod:`.cells`).

Memory per batch is bounded by ``batch_bytes`` of on-disk blocks plus at most
:data:`DECODED_FACTOR` times as many decompressed bytes (a batch whose payloads decompress
to more is decoded in several steps) and the Arrow output.

HBase files are untrusted input (:mod:`.limits`): every offset and size an index gives is
checked against the file before it is read (a block lies inside the file's block section,
entries of a level do not overlap or go back, children lie before the index block that
names them), the descent never goes deeper than the trailer's level count, never reads an
index block twice and expects HBase's block type at each level, and every failure is a
:class:`~cellstore.errors.CorruptFileError` naming the file and the block offset.
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
from cellstore.storefiles.hfile.keys import parse_key, printable_bytes
from cellstore.storefiles.hfile.limits import MAX_BLOCK_BYTES, MAX_ROW_LENGTH
from cellstore.storefiles.hfile.trailer import MAX_TRAILER_SIZE, Trailer, parse_trailer

__all__ = [
    "DECODED_FACTOR",
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
#: A batch decodes at most this many times ``batch_bytes`` of payloads in one step.
DECODED_FACTOR: Final = 8
_VERIFY_CHUNK: Final = 16 << 20
#: Bytes of the load-on-open section read at once (its blocks are read one by one past it).
_SECTION_CHUNK: Final = 1 << 20
_BLOOM_METAS: Final = ("GENERAL_BLOOM_META", "DELETE_FAMILY_BLOOM_META")


@dataclass(frozen=True)
class BlockProblem:
    """A data block a read skipped or ``verify`` found damaged.

    Attributes:
        offset: The block's file offset.
        message: What is wrong (checksum expected vs actual, decompression error...).
    """

    offset: int
    message: str


#: An int64 numpy array.
_Int64s = np.ndarray[Any, np.dtype[np.int64]]
#: :meth:`HFileReader._payloads`: (buffer, cell starts, cell ends, block offsets, rest).
_Payloads = tuple[np.ndarray[Any, np.dtype[np.uint8]], _Int64s, _Int64s, _Int64s, "_Batch | None"]


@dataclass
class _Batch:
    """Data blocks decoded together.

    ``raw`` holds their bytes once read: a batch that decodes in several steps passes
    them on to the next step.
    """

    entries: list[IndexEntry] = field(default_factory=list)
    size: int = 0
    raw: bytes | None = None
    base: int = 0

    def span(self) -> tuple[int, int]:
        """File offsets ``(base, end)`` of the batch's bytes.

        ``base`` is where ``raw`` starts (or the first block does, before it is read);
        ``end`` is where the last block ends.
        """
        base = self.entries[0].offset if self.raw is None else self.base
        return base, max(e.offset + e.size for e in self.entries)


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
        max_block_bytes: int = MAX_BLOCK_BYTES,
        load_on_open: bool = True,
    ) -> None:
        """Open ``path`` on ``fs`` and load its trailer and load-on-open section.

        Args:
            fs: The filesystem.
            path: The file's path on ``fs``.
            where: How messages name the file (default ``path``).
            verify_checksums: Check HBase block checksums on every block read.
            max_block_bytes: Most bytes one block may take on disk, uncompressed or
                unencoded (:data:`~cellstore.storefiles.hfile.limits.MAX_BLOCK_BYTES`);
                raise it for a genuine file with larger cells.
            load_on_open: False reads the trailer only: the reader then has no index,
                FileInfo or Bloom (it reads no cells) but :meth:`verify_blocks` still
                walks every block. ``verify`` uses it on a file whose load-on-open
                section is damaged.

        Raises:
            UnsupportedFormatError: for v1, encrypted files, unknown codecs or encodings.
            CorruptFileError: if the trailer or a load-on-open block is damaged.
            FileNotFoundError: if the file does not exist.
        """
        self.fs = fs
        self.path = path
        self.where = where or path
        self.verify_checksums = verify_checksums
        self.max_block_bytes = max_block_bytes
        self.size = int(fs.size(path))
        tail_len = min(MAX_TRAILER_SIZE, self.size)
        tail = self._read(self.size - tail_len, self.size)
        self.trailer: Trailer = parse_trailer(tail, file_size=self.size, where=self.where)
        t = self.trailer
        #: Where the block section ends: data, index, meta and Bloom blocks lie before it.
        self.blocks_end = t.load_on_open_offset
        #: Problems of optional structures found at open (a damaged Bloom meta is left
        #: out, as HBase does, and reported by :meth:`verify_blocks` and Bloom lookups).
        self.open_problems: list[BlockProblem] = []
        self._bloom_errors: dict[str, CorruptFileError | UnsupportedFormatError] = {}
        self.root_index: list[IndexEntry] = []
        self.mid_key: MidKeyMetadata | None = None
        self.meta_index: list[IndexEntry] = []
        self.file_info: dict[bytes, bytes] = {}
        self.general_bloom: BloomMeta | None = None
        self.delete_family_bloom: BloomMeta | None = None
        self.encoding = "NONE"
        self.flags = CellFlags(tags=False, mvcc=False, mvcc_one_byte=False)
        self._root_offset = t.load_on_open_offset
        if load_on_open:
            self._open_structure()

    def _open_structure(self) -> None:
        """Load the load-on-open section: indexes, FileInfo, Bloom metas, cell flags."""
        t = self.trailer
        blocks = self._load_on_open(t.load_on_open_offset, self.size - t.size)
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
        self._root_offset = root.header.offset
        self.root_index, self.mid_key = parse_root_index(
            root.payload,
            t.data_index_count,
            where=f"{self.where}: data index root at offset {root.header.offset}",
            with_mid_key=t.num_data_index_levels > 1,
        )
        if self.mid_key is not None and not self._mid_key_fits(self.mid_key):
            self.mid_key = None  # never used to read; a damaged one is dropped
        self.meta_index, _ = parse_root_index(
            meta.payload,
            t.meta_index_count,
            where=f"{self.where}: meta index at offset {meta.header.offset}",
        )
        self.file_info = parse_file_info(
            info.payload, where=f"{self.where}: FileInfo at offset {info.header.offset}"
        )
        for block in blocks[3:]:
            kind = block.block_type
            try:
                bloom = parse_bloom_meta(
                    block.payload,
                    where=f"{self.where}: {kind} block at offset {block.header.offset}",
                )
            except (CorruptFileError, UnsupportedFormatError) as e:
                self._bloom_errors[kind] = e
                self.open_problems.append(BlockProblem(block.header.offset, str(e)))
                continue
            if kind == "GENERAL_BLOOM_META":
                self.general_bloom = bloom
            else:
                self.delete_family_bloom = bloom
        fi = self.file_info
        encoding = fi.get(b"DATA_BLOCK_ENCODING", b"NONE")
        self.encoding = encoding.decode("ascii", "replace")
        if self.encoding not in ENCODING_IDS:
            raise UnsupportedFormatError(
                f"{self.where}: data block encoding {printable_bytes(encoding)} is not supported"
            )
        index_encoding = fi.get(b"INDEX_BLOCK_ENCODING", b"NONE")
        if index_encoding != b"NONE":
            raise UnsupportedFormatError(
                f"{self.where}: index block encoding {printable_bytes(index_encoding)} is not "
                "supported"
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
        if not 0 <= start <= self.size or end > self.size:
            raise CorruptFileError(
                f"{self.where}: bytes [{start}, {end}) lie outside the {self.size}-byte file"
            )
        if end <= start:
            return b""
        data = self.fs.cat_file(self.path, start=start, end=end)
        if len(data) != end - start:
            raise CorruptFileError(
                f"{self.where}: short read at offset {start} ({len(data)} of {end - start} bytes)"
            )
        return bytes(data)

    def _load_on_open(self, start: int, end: int) -> list[Block]:
        """The blocks of the load-on-open section ``[start, end)``, walked in order.

        The section is read in one request when small (always, for HBase's files); a
        block that goes past what was read is read on its own, its header checked first,
        so a forged size never reads or holds more than one bounded block.
        """
        blocks: list[Block] = []
        hs = self.trailer.header_size
        buf = b""
        buf_at = start
        pos = start
        while pos < end:
            if pos + hs > buf_at + len(buf):
                buf_at, buf = pos, self._read(pos, min(end, pos + max(hs, _SECTION_CHUNK)))
            head = parse_header(
                buf,
                pos - buf_at,
                offset=pos,
                header_size=hs,
                where=self.where,
                max_block_bytes=self.max_block_bytes,
            )
            if pos + head.on_disk_size > end:
                raise CorruptFileError(
                    f"{self.where}: {head.block_type} block at offset {pos} runs past the "
                    f"load-on-open section ({head.on_disk_size} bytes, section ends at {end})"
                )
            if pos + head.on_disk_size > buf_at + len(buf):
                buf_at = pos
                buf = self._read(pos, min(end, pos + max(head.on_disk_size, _SECTION_CHUNK)))
            kind = head.block_type
            wanted = len(blocks) < 3 or (
                kind in _BLOOM_METAS
                and kind not in self._bloom_errors
                and all(b.block_type != kind for b in blocks[3:])
            )
            if wanted:  # other blocks (none in HBase's files) are not decoded or kept
                try:
                    blocks.append(self._decode(buf, pos - buf_at, pos))
                except CorruptFileError as e:
                    if len(blocks) < 3:  # root index, meta index, FileInfo: needed
                        raise
                    # Bloom metas are optional: HBase reads on without a damaged one.
                    self._bloom_errors[kind] = e
                    self.open_problems.append(BlockProblem(pos, str(e)))
            pos += head.on_disk_size
        return blocks

    def _mid_key_fits(self, mid: MidKeyMetadata) -> bool:
        """Whether mid-key metadata names a block inside the block section."""
        return (
            mid.leaf_offset >= 0
            and mid.leaf_size >= self.trailer.header_size
            and mid.leaf_offset + mid.leaf_size <= self.blocks_end
            and mid.entry >= 0
        )

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
            max_block_bytes=self.max_block_bytes,
        )

    def _block_range(self, offset: int, size: int | None, what: str) -> None:
        """Raise unless a block of ``size`` bytes at ``offset`` can be in the file.

        ``size`` None is unknown (read from the header next). Index entries give both;
        the block must lie in the block section, with a size of a header up to a header
        plus :attr:`max_block_bytes`.
        """
        hs = self.trailer.header_size
        size_ok = size is None or hs <= size <= hs + self.max_block_bytes
        if offset < 0 or offset + (size or hs) > self.blocks_end or not size_ok:
            block = "a block" if size is None else f"a {size}-byte block"
            raise CorruptFileError(
                f"{self.where}: {what} points at {block} at offset {offset}, outside the "
                f"file's blocks [0, {self.blocks_end})"
            )

    def read_block(
        self, offset: int, size: int | None = None, *, expect: str | None = None
    ) -> Block:
        """Read, verify and decompress one block.

        The on-disk size is read from the block's header when not given; when given (by
        an index entry) it must lie inside the file and equal the header's.

        Raises:
            CorruptFileError: as :func:`~cellstore.storefiles.hfile.blocks.decode_block`,
                or for an offset or size outside the file.
        """
        what = f"an index entry for a {expect} block" if expect else "an index entry"
        hs = self.trailer.header_size
        if size is None or size <= 0:
            self._block_range(offset, None, what)
            head = parse_header(
                self._read(offset, offset + hs),
                0,
                offset=offset,
                header_size=hs,
                where=self.where,
                max_block_bytes=self.max_block_bytes,
            )
            size = head.on_disk_size
        self._block_range(offset, size, what)
        block = self._decode(self._read(offset, offset + size), 0, offset, expect)
        if block.header.on_disk_size != size:
            raise CorruptFileError(
                f"{self.where}: {block.block_type} block at offset {offset} takes "
                f"{block.header.on_disk_size} bytes, its index entry says {size}"
            )
        return block

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
        does not parse ends the walk (the next block cannot be found). Problems found when
        the file was opened (a damaged Bloom meta) are reported too.

        Args:
            problems: Receives one entry per damaged block.

        Returns:
            How many blocks were checked.
        """
        problems.extend(self.open_problems)
        end = self.size - self.trailer.size
        hs = self.trailer.header_size
        pos = 0
        count = 0
        while pos < end:
            chunk = self._read(pos, min(end, pos + _VERIFY_CHUNK))
            k = 0
            while k < len(chunk):
                try:
                    head = parse_header(
                        chunk,
                        k,
                        offset=pos + k,
                        header_size=hs,
                        where=self.where,
                        max_block_bytes=self.max_block_bytes,
                    )
                except CorruptFileError as e:
                    problems.append(BlockProblem(pos + k, str(e)))
                    return count
                if k + head.on_disk_size > len(chunk):
                    if k == 0:  # one block larger than the chunk
                        chunk = self._read(pos, min(end, pos + head.on_disk_size))
                        if len(chunk) < head.on_disk_size:
                            problems.append(
                                BlockProblem(
                                    pos,
                                    f"{self.where}: {head.block_type} block at offset {pos} "
                                    f"is truncated ({len(chunk)} of {head.on_disk_size} bytes "
                                    "before the trailer)",
                                )
                            )
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

    def _checked_entries(
        self,
        entries: Sequence[IndexEntry],
        *,
        what: str,
        ordered: bool,
        before: int | None = None,
        on_corrupt: OnCorrupt = "raise",
        problems: list[BlockProblem] | None = None,
    ) -> list[IndexEntry]:
        """The entries whose blocks can be in the file; the others raise or are skipped.

        Vectorized over all entries: each must name a block of at least a header and at
        most :attr:`max_block_bytes` more that ends inside the block section (or before
        ``before``: an index block's children precede it); with ``ordered`` (a data
        index level, in file order) each must start at or after the end of the one
        before. HBase's writers lay blocks out that way; anything else is damage.
        """
        n = len(entries)
        if n == 0:
            return list(entries)
        offs = np.fromiter((e.offset for e in entries), dtype=np.int64, count=n)
        sizes = np.fromiter((e.size for e in entries), dtype=np.int64, count=n)
        hs = self.trailer.header_size
        limit = self.blocks_end if before is None else min(before, self.blocks_end)
        fits = (
            (offs >= 0)
            & (sizes >= hs)
            & (sizes <= hs + self.max_block_bytes)
            & (offs <= limit - sizes)
        )
        good = bool(fits.all())
        if good and ordered and n > 1:
            good = bool(np.all(offs[1:] >= offs[:-1] + sizes[:-1]))
        if good:
            return list(entries)
        kept: list[IndexEntry] = []
        after = 0
        for k, e in enumerate(entries):
            if not fits[k]:
                fault = (
                    f"points at {e.size} bytes at offset {e.offset}, outside the file's "
                    f"blocks [0, {limit})"
                )
            elif ordered and e.offset < after:
                fault = (
                    f"points at offset {e.offset}, before the end ({after}) of the block "
                    "the entry before it names (index entries go forward)"
                )
            else:
                kept.append(e)
                after = e.offset + e.size
                continue
            err = CorruptFileError(f"{self.where}: {what} entry {k} {fault}")
            if on_corrupt == "raise":
                raise err
            if problems is not None:
                problems.append(BlockProblem(e.offset, str(err)))
        return kept

    def data_blocks(
        self,
        *,
        start_row: bytes | None = None,
        stop_row: bytes | None = None,
        on_corrupt: OnCorrupt = "raise",
        problems: list[BlockProblem] | None = None,
    ) -> list[IndexEntry]:
        """Data blocks that can hold rows in ``[start_row, stop_row)``, in file order.

        Descends the multi-level index along the needed entries only, reading just the
        intermediate and leaf index blocks on the way. The descent takes exactly the
        trailer's level count (at most 16, as HBase writes), expects an intermediate
        index block at each inner level and a leaf index block at the last, reads no
        index block twice, and keeps only entries inside the file, in file order, that
        lie before the index block naming them.

        Args:
            start_row: First row needed (inclusive).
            stop_row: Row to stop before (exclusive).
            on_corrupt: ``"raise"`` on a damaged index block or entry, or ``"skip"`` it
                (the data blocks under it are left out; each skip goes to ``problems``).
            problems: Receives the skipped index blocks and entries.

        Raises:
            CorruptFileError: naming the file and block offset, with ``"raise"``.
        """
        if self.trailer.is_meta_comparator:
            start_row = stop_row = None  # meta rows do not sort as raw bytes
        levels = self.trailer.num_data_index_levels
        entries = self._checked_entries(
            self.root_index,
            what=f"data index root (block at offset {self._root_offset})",
            ordered=True,
            on_corrupt=on_corrupt,
            problems=problems,
        )
        rows = self._root_rows if len(entries) == len(self.root_index) else None
        visited: set[int] = set()
        for depth in range(1, levels):
            expect = "LEAF_INDEX" if depth == levels - 1 else "INTERMEDIATE_INDEX"
            if rows is None:
                rows = [key_row(e.key) for e in entries]
            lo, hi = block_range_for_rows(rows, start_row=start_row, stop_row=stop_row)
            children: list[IndexEntry] = []
            for e in entries[lo:hi]:
                try:
                    if e.offset in visited:
                        raise CorruptFileError(
                            f"{self.where}: index block at offset {e.offset} is named twice "
                            "(an index cycle)"
                        )
                    visited.add(e.offset)
                    block = self.read_block(e.offset, e.size, expect=expect)
                    where = f"{self.where}: {expect} block at offset {e.offset}"
                    kids = parse_non_root_index(block.payload, where=where)
                    kids = self._checked_entries(
                        kids,
                        what=f"{expect} block at offset {e.offset}:",
                        ordered=True,
                        before=e.offset,
                    )
                    if (
                        children
                        and kids
                        and kids[0].offset < (children[-1].offset + children[-1].size)
                    ):
                        raise CorruptFileError(
                            f"{where}: its first entry points at offset {kids[0].offset}, "
                            "before the blocks of the index block before it"
                        )
                except CorruptFileError as err:
                    if on_corrupt == "raise":
                        raise
                    if problems is not None:
                        problems.append(BlockProblem(e.offset, str(err)))
                    continue
                children.extend(kids)
            entries = children
            rows = None
        if rows is None:
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
        if self.general_bloom is None and "GENERAL_BLOOM_META" not in self._bloom_errors:
            return "NONE"
        return self.file_info.get(b"BLOOM_FILTER_TYPE", b"ROW").decode("ascii", "replace")

    def _bloom_hit(
        self, meta: BloomMeta, key: bytes, cache: dict[int, bytes], *, seek: bytes | None = None
    ) -> bool:
        try:
            i = chunk_for_key(meta, key if seek is None else seek)
        except CorruptFileError as e:
            raise CorruptFileError(f"{self.where}: Bloom chunk index: {e}") from None
        if i < 0:
            return False
        if i not in cache:
            chunk = meta.chunks[i]
            cache[i] = self.read_block(chunk.offset, chunk.size, expect="BLOOM_CHUNK").payload
        return chunk_contains(cache[i], key, hash_count=meta.hash_count, hash_type=meta.hash_type)

    def _bloom(self, kind: str) -> BloomMeta | None:
        """The Bloom meta of ``kind``; raises the error that made it unreadable, if any."""
        error = self._bloom_errors.get(kind)
        if error is not None:
            raise type(error)(str(error))
        return self.general_bloom if kind == "GENERAL_BLOOM_META" else self.delete_family_bloom

    def might_contain(
        self, row: bytes, qualifier: bytes | None = None, *, _cache: dict[int, bytes] | None = None
    ) -> bool:
        """Whether the file may hold ``row`` (and ``qualifier`` with a ROWCOL Bloom).

        False means certainly absent; True means present or a Bloom false positive. A
        file without a general Bloom answers True unless the row is outside its key
        range.

        Raises:
            CorruptFileError: if the Bloom filter (meta, chunk or prefix length) is damaged.
        """
        if self.is_empty:
            return False
        meta = self._bloom("GENERAL_BLOOM_META")
        kind = self.bloom_type
        if meta is None or (kind == "ROWCOL" and qualifier is None):
            return True
        prefix = 0
        if kind.startswith("ROWPREFIX"):
            param = self.file_info.get(b"BLOOM_FILTER_PARAM", b"")
            prefix = int.from_bytes(param[:4], "big", signed=True) if len(param) >= 4 else 0
            if not 1 <= prefix <= MAX_ROW_LENGTH:
                raise CorruptFileError(
                    f"{self.where}: FileInfo BLOOM_FILTER_PARAM: row prefix length {prefix} is "
                    f"outside 1..{MAX_ROW_LENGTH}"
                )
        key = bloom_key(kind, row, qualifier or b"", prefix=prefix)
        seek = None
        if kind == "ROWCOL":
            # HBase finds the chunk with the cell's real key (family included,
            # CompoundBloomFilter.contains(Cell...)) but hashes the key without the family.
            family = parse_key(self.root_index[0].key, where=f"{self.where}: first key").family
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
        """Whether the file may hold a DeleteFamily marker for ``row`` (DeleteFamily Bloom).

        Raises:
            CorruptFileError: if the DeleteFamily Bloom filter is damaged.
        """
        meta = self._bloom("DELETE_FAMILY_BLOOM_META")
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
        self,
        batch: _Batch,
        on_corrupt: OnCorrupt,
        problems: list[BlockProblem],
        budget: int,
    ) -> _Payloads:
        """Verify and decompress a batch's blocks into one buffer.

        Compressed or encoded blocks are decoded until their payloads reach ``budget``
        bytes; the blocks left over come back as a batch of their own (holding the bytes
        already read), so a batch whose blocks expand a lot is decoded in steps.

        Returns:
            The buffer (with :data:`PAD` zero bytes after the last payload), the start
            and end of each good block's cells in it, those blocks' file offsets, and the
            blocks left for another step (None when done).
        """
        offs = [e.offset for e in batch.entries]
        in_place = (
            self.trailer.codec == "NONE"
            and self.encoding == "NONE"
            and all(a < b for a, b in pairwise(offs))
        )
        if in_place:
            return self._payloads_in_place(batch, on_corrupt, problems)
        return self._payloads_decoded(batch, on_corrupt, problems, budget)

    def _payloads_in_place(
        self, batch: _Batch, on_corrupt: OnCorrupt, problems: list[BlockProblem]
    ) -> _Payloads:
        """:meth:`_payloads` of uncompressed NONE blocks: read in place, no copy.

        Reads a little past the last block (the file goes on with index blocks and the
        trailer) so short fields near the end can be gathered as fixed windows. Checksums
        are verified for all blocks at once when they are all sound, else block by block.
        """
        base, end = batch.span()
        raw = self._read(base, min(self.size, end + PAD))
        if len(raw) < end - base + PAD:
            raw += bytes(end - base + PAD - len(raw))
        buf = np.frombuffer(raw, dtype=np.uint8)
        offs = np.array([e.offset for e in batch.entries], dtype=np.int64)
        if self.verify_checksums:
            fast = verified_data_blocks(
                raw,
                offs - base,
                np.array([e.size for e in batch.entries], dtype=np.int64),
                header_size=self.trailer.header_size,
            )
            if fast is not None:
                return buf, fast[0], fast[1], offs, None
        starts, ends, good = self._checked_in_place(
            memoryview(raw)[: end - base], batch, base, on_corrupt, problems
        )
        return buf, starts, ends, good, None

    def _checked_in_place(
        self,
        blocks_view: memoryview,
        batch: _Batch,
        base: int,
        on_corrupt: OnCorrupt,
        problems: list[BlockProblem],
    ) -> tuple[_Int64s, _Int64s, _Int64s]:
        """Check each block's header (and checksum) in ``blocks_view``, one by one.

        Returns the good blocks' cell starts and ends in ``blocks_view`` and their file
        offsets; damaged blocks raise, or are skipped (and appended to ``problems``).
        """
        hs = self.trailer.header_size
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
                    max_block_bytes=self.max_block_bytes,
                )
                _check_data_block(head, e.size, self.where)
            except CorruptFileError as err:
                if on_corrupt == "raise":
                    raise
                problems.append(BlockProblem(e.offset, str(err)))
                continue
            starts.append(pos + hs)
            ends.append(pos + head.on_disk_data_size_with_header)
            good.append(e.offset)
        return (
            np.array(starts, dtype=np.int64),
            np.array(ends, dtype=np.int64),
            np.array(good, dtype=np.int64),
        )

    def _payloads_decoded(
        self, batch: _Batch, on_corrupt: OnCorrupt, problems: list[BlockProblem], budget: int
    ) -> _Payloads:
        """:meth:`_payloads` of compressed or encoded blocks, up to ``budget`` bytes."""
        base, end = batch.span()
        raw = batch.raw if batch.raw is not None else self._read(base, end)
        payloads: list[bytes] = []
        offsets: list[int] = []
        decoded = 0
        rest: _Batch | None = None
        for k, e in enumerate(batch.entries):
            if decoded >= budget and payloads:
                left = batch.entries[k:]
                rest = _Batch(left, sum(x.size for x in left), raw=raw, base=base)
                break
            try:
                payload = self._data_payload(raw, base, e)
            except CorruptFileError as err:
                if on_corrupt == "raise":
                    raise
                problems.append(BlockProblem(e.offset, str(err)))
                continue
            payloads.append(payload)
            offsets.append(e.offset)
            decoded += len(payload)
        sizes = np.array([len(p) for p in payloads], dtype=np.int64)
        bstarts = np.zeros(len(payloads), dtype=np.int64)
        if len(sizes) > 1:
            np.cumsum(sizes[:-1], out=bstarts[1:])
        buf = np.frombuffer(b"".join([*payloads, bytes(PAD)]), dtype=np.uint8)
        return buf, bstarts, bstarts + sizes, np.array(offsets, dtype=np.int64), rest

    def _data_payload(self, raw: bytes, base: int, e: IndexEntry) -> bytes:
        """The cells of the data block ``e`` (at ``e.offset - base`` in ``raw``), decoded.

        Raises:
            CorruptFileError: the block is damaged, not the size its index entry says, or
                not a data block.
        """
        block = self._decode(raw, e.offset - base, e.offset)
        if block.header.on_disk_size != e.size:
            raise CorruptFileError(
                f"{self.where}: {block.block_type} block at offset {e.offset} takes "
                f"{block.header.on_disk_size} bytes, its index entry says {e.size}"
            )
        if block.block_type == "ENCODED_DATA":
            return decode_encoded_block(
                block.payload,
                flags=self.flags,
                where=f"{self.where}: ENCODED_DATA block at offset {e.offset}",
                max_bytes=self.max_block_bytes,
            )
        if block.block_type == "DATA":
            return block.payload
        raise CorruptFileError(
            f"{self.where}: index points at a {block.block_type} block at offset "
            f"{e.offset}, not a data block"
        )

    def _walk(
        self,
        buf: np.ndarray[Any, np.dtype[np.uint8]],
        starts: np.ndarray[Any, np.dtype[np.int64]],
        ends: np.ndarray[Any, np.dtype[np.int64]],
        offs: np.ndarray[Any, np.dtype[np.int64]],
        on_corrupt: OnCorrupt,
        problems: list[BlockProblem],
    ) -> tuple[
        np.ndarray[Any, np.dtype[np.int64]],
        np.ndarray[Any, np.dtype[np.int64]],
        np.ndarray[Any, np.dtype[np.int64]],
    ]:
        """Cell starts of the blocks, with the cells per block and the blocks' offsets.

        Blocks whose cells are damaged raise, or are left out with ``"skip"``.
        """
        sizes = ends - starts
        try:
            layout = walk_cells(
                buf, starts, starts + sizes, flags=self.flags, where=self.where, block_offsets=offs
            )
            return layout.starts, layout.counts, offs
        except CorruptFileError:
            if on_corrupt == "raise":
                raise
        # Find the bad blocks one at a time and keep the good ones.
        keep: list[np.ndarray[Any, np.dtype[np.int64]]] = []
        counts: list[int] = []
        kept: list[int] = []
        for k in range(len(starts)):
            one = slice(k, k + 1)
            try:
                cell_starts = walk_cells(
                    buf,
                    starts[one],
                    starts[one] + sizes[one],
                    flags=self.flags,
                    where=self.where,
                    block_offsets=offs[one],
                ).starts
            except CorruptFileError as err:
                problems.append(BlockProblem(int(offs[k]), str(err)))
                continue
            keep.append(cell_starts)
            counts.append(len(cell_starts))
            kept.append(int(offs[k]))
        return (
            np.concatenate(keep) if keep else np.zeros(0, dtype=np.int64),
            np.array(counts, dtype=np.int64),
            np.array(kept, dtype=np.int64),
        )

    def _cells(
        self,
        buf: np.ndarray[Any, np.dtype[np.uint8]],
        starts: np.ndarray[Any, np.dtype[np.int64]],
        counts: np.ndarray[Any, np.dtype[np.int64]],
        offs: np.ndarray[Any, np.dtype[np.int64]],
        on_corrupt: OnCorrupt,
        problems: list[BlockProblem],
        **options: Any,
    ) -> pa.Table | None:
        """:func:`cells_to_table` of the walked cells.

        A failure (a family that is not UTF-8) is pinned on its block, which raises or is
        skipped.
        """
        try:
            return cells_to_table(buf, starts, flags=self.flags, **options)
        except CorruptFileError:
            pass
        parts: list[pa.Table] = []
        bounds = np.concatenate([[0], np.cumsum(counts)])
        for k in range(len(counts)):
            if not counts[k]:
                continue
            try:
                parts.append(
                    cells_to_table(
                        buf, starts[bounds[k] : bounds[k + 1]], flags=self.flags, **options
                    )
                )
            except CorruptFileError as e:
                err = CorruptFileError(f"{self.where}: data block at offset {int(offs[k])}: {e}")
                if on_corrupt == "raise":
                    raise err from None
                problems.append(BlockProblem(int(offs[k]), str(err)))
        if not parts:
            return None
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

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
            batch_bytes: On-disk bytes of data blocks decoded together (their payloads
                are decoded at most :data:`DECODED_FACTOR` times this many bytes at once).
            on_corrupt: ``"raise"`` (default) or ``"skip"`` damaged data and index blocks
                (their cells are left out; each skip is appended to ``problems``).
            problems: Receives the skipped blocks.
            blocks: Read exactly these data blocks (default: those the row range needs);
                entries outside the file raise or are skipped.
            threads: Batches decoded concurrently (1: no thread pool). Memory holds up to
                this many batches.
            dictionary: ``row`` and ``qualifier`` as dictionary arrays (each batch its
                own dictionaries; see :func:`~cellstore.storefiles.hfile.cells.dictionary_keys`).

        Yields:
            Non-empty tables of cells.

        Raises:
            CorruptFileError: naming the file, block offset and what is wrong (expected vs
                actual checksum, a size, a cell), when a block is damaged and
                ``on_corrupt == "raise"``.
        """
        if problems is None:
            problems = []
        if blocks is not None:
            entries = self._checked_entries(
                blocks,
                what="data block list",
                ordered=False,
                on_corrupt=on_corrupt,
                problems=problems,
            )
        else:
            entries = self.data_blocks(
                start_row=start_row, stop_row=stop_row, on_corrupt=on_corrupt, problems=problems
            )
        step = _DecodeStep(
            self,
            on_corrupt=on_corrupt,
            problems=problems,
            budget=max(1, batch_bytes) * DECODED_FACTOR,
            start_row=start_row,
            stop_row=stop_row,
            columns=columns,
            options={"with_seq_id": with_seq_id, "with_tags": with_tags, "dictionary": dictionary},
        )
        yield from _decoded_in_order(step, list(self._batches(entries, batch_bytes)), threads)

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


def _check_data_block(head: BlockHeader, size: int, where: str) -> None:
    """Raise unless ``head`` is an uncompressed DATA block whose sizes agree.

    With each other, and with its index entry (``size`` on disk).
    """
    if head.on_disk_size != size:
        raise CorruptFileError(
            f"{where}: {head.block_type} block at offset {head.offset} takes "
            f"{head.on_disk_size} bytes, its index entry says {size}"
        )
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


@dataclass(frozen=True)
class _DecodeStep:
    """Decode one batch of data blocks to a table of cells (:meth:`HFileReader.iter_batches`).

    Called from the decode threads: it only appends to ``problems``.
    """

    reader: HFileReader
    on_corrupt: OnCorrupt
    problems: list[BlockProblem]
    budget: int
    start_row: bytes | None
    stop_row: bytes | None
    columns: list[str] | None
    options: dict[str, Any]

    def __call__(self, batch: _Batch) -> tuple[pa.Table | None, _Batch | None]:
        """The batch's cells in the row range (None when none), and its blocks left over."""
        r, on_corrupt, problems = self.reader, self.on_corrupt, self.problems
        buf, bstarts, bends, offs, rest = r._payloads(batch, on_corrupt, problems, self.budget)
        if not len(bstarts):
            return None, rest
        starts, counts, offs = r._walk(buf, bstarts, bends, offs, on_corrupt, problems)
        if not len(starts):
            return None, rest
        need_filter = bool(self.start_row) or bool(self.stop_row)
        build = self.columns
        if need_filter and build is not None and "row" not in build:
            build = ["row", *build]
        table = r._cells(
            buf, starts, counts, offs, on_corrupt, problems, columns=build, **self.options
        )
        if table is None:
            return None, rest
        if need_filter:
            table = _filter_rows(table, self.start_row, self.stop_row)
            if build is not self.columns and self.columns is not None:
                table = table.select(self.columns)
        return (table if table.num_rows else None), rest


def _decoded_in_order(
    decode: _DecodeStep, batches: list[_Batch], threads: int
) -> Iterator[pa.Table]:
    """The non-empty tables of ``batches``, in order, decoded on up to ``threads`` threads.

    A batch decoded in steps (its blocks expand past the budget) goes first again with
    its remaining blocks.
    """
    workers = max(1, min(threads, len(batches)))
    if workers == 1:
        for first in batches:
            todo: _Batch | None = first
            while todo is not None:
                table, todo = decode(todo)
                if table is not None:
                    yield table
        return
    # Decode the next batches while the caller consumes this one (numpy, zlib and the
    # codecs release the GIL); at most ``workers`` batches are in memory at once.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future[tuple[pa.Table | None, _Batch | None]]] = deque()
        upcoming = iter(batches)
        for batch in upcoming:
            pending.append(pool.submit(decode, batch))
            if len(pending) >= workers:
                break
        while pending:
            table, rest = pending.popleft().result()
            if rest is not None:
                pending.appendleft(pool.submit(decode, rest))
            else:
                nxt = next(upcoming, None)
                if nxt is not None:
                    pending.append(pool.submit(decode, nxt))
            if table is not None:
                yield table


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

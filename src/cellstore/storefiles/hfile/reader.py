"""Open an HFile on any fsspec filesystem and read its structure and cells.

The reading algorithm is HBase's (``HFileInfo.initMetaAndIndex``, ``HFileReaderImpl``):

1. read the trailer from the file's last bytes (:mod:`.trailer`);
2. read the load-on-open section in one range request and walk its blocks: data-index
   root, meta-index root, FileInfo, then the optional Bloom metas;
3. descend the data index (root, intermediate, leaf) only along the entries a row range
   needs, giving the list of data blocks to read (:mod:`.descent`);
4. read those blocks in batches of contiguous byte ranges, verify checksums, decompress,
   un-encode (:mod:`.encodings`) and decode all cells of a batch at once (:mod:`.cells`),
   a few batches at a time on threads (:mod:`.batches`).

A batch groups ``batch_bytes`` over the file's :attr:`HFileReader.expansion` of on-disk
blocks (about ``batch_bytes`` of cells once decoded). Memory per batch is bounded by its
on-disk blocks plus at most :data:`DECODED_FACTOR` times ``batch_bytes`` of decompressed
bytes (a batch whose payloads decompress to more is decoded in several steps) and the
Arrow output; ``threads`` batches are decoded at once.

HBase files are untrusted input (:mod:`.limits`): every offset and size an index gives is
checked against the file before it is read (a block lies inside the file's block section,
entries of a level do not overlap or go back, children lie before the index block that
names them), the descent never goes deeper than the trailer's level count, never reads an
index block twice and expects HBase's block type at each level, and every failure is a
:class:`~cellstore.errors.CorruptFileError` naming the file and the block offset.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any, Final

import fsspec
import pyarrow as pa

from cellstore.errors import CorruptFileError, UnsupportedFormatError
from cellstore.storefiles.hfile.batches import (
    BlockProblem,
    DecodeStep,
    OnCorrupt,
    batches_of,
    decoded_in_order,
)
from cellstore.storefiles.hfile.blocks import (
    Block,
    decode_block,
    parse_header,
)
from cellstore.storefiles.hfile.bloom import (
    BloomMeta,
    bloom_key,
    chunk_contains,
    chunk_for_key,
    parse_bloom_meta,
)
from cellstore.storefiles.hfile.cells import (
    CellFlags,
    empty_cells,
)
from cellstore.storefiles.hfile.descent import checked_entries, data_blocks
from cellstore.storefiles.hfile.encodings import ENCODING_IDS
from cellstore.storefiles.hfile.fileinfo import decode_file_info, parse_file_info
from cellstore.storefiles.hfile.index import (
    IndexEntry,
    MidKeyMetadata,
    key_row,
    parse_root_index,
)
from cellstore.storefiles.hfile.keys import parse_key, printable_bytes
from cellstore.storefiles.hfile.limits import MAX_BLOCK_BYTES, MAX_ROW_LENGTH
from cellstore.storefiles.hfile.readoptions import DEFAULT_BATCH_BYTES, DEFAULT_THREADS
from cellstore.storefiles.hfile.trailer import MAX_TRAILER_SIZE, Trailer, parse_trailer

__all__ = [
    "DECODED_FACTOR",
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_THREADS",
    "MAX_BATCH_EXPANSION",
    "BlockProblem",
    "HFileReader",
    "OnCorrupt",
]

#: Most decoded bytes per on-disk byte assumed when sizing batches (:attr:`expansion`).
MAX_BATCH_EXPANSION: Final = 64.0
#: A batch decodes at most this many times ``batch_bytes`` of payloads in one step.
DECODED_FACTOR: Final = 8
_VERIFY_CHUNK: Final = 16 << 20
#: Bytes of the load-on-open section read at once (its blocks are read one by one past it).
_SECTION_CHUNK: Final = 1 << 20
_BLOOM_METAS: Final = ("GENERAL_BLOOM_META", "DELETE_FAMILY_BLOOM_META")


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
        on_corrupt: OnCorrupt = "raise",
        problems: list[BlockProblem] | None = None,
    ) -> list[IndexEntry]:
        """The entries whose blocks can be in the file (:func:`.descent.checked_entries`)."""
        return checked_entries(
            self, entries, what=what, ordered=ordered, on_corrupt=on_corrupt, problems=problems
        )

    def data_blocks(
        self,
        *,
        start_row: bytes | None = None,
        stop_row: bytes | None = None,
        on_corrupt: OnCorrupt = "raise",
        problems: list[BlockProblem] | None = None,
    ) -> list[IndexEntry]:
        """Data blocks that can hold rows in ``[start_row, stop_row)``, in file order.

        Descends the multi-level index along the needed entries only (see
        :func:`.descent.data_blocks`, whose arguments and errors these are).
        """
        return data_blocks(
            self, start_row=start_row, stop_row=stop_row, on_corrupt=on_corrupt, problems=problems
        )

    @cached_property
    def expansion(self) -> float:
        """Decoded bytes per on-disk byte of the data blocks, estimated (>= 1).

        What the cells take unencoded and uncompressed (the trailer's cell count times
        the FileInfo's average key and value lengths plus each cell's fixed fields) over
        the bytes before the load-on-open section. 1.0 for an uncompressed NONE file and
        when the statistics are missing or make no sense; at most
        :data:`MAX_BATCH_EXPANSION`. Only a hint for sizing batches
        (:meth:`iter_batches`): memory is bounded by the decode budget, not by this.
        """
        t = self.trailer
        if t.codec == "NONE" and self.encoding == "NONE":
            return 1.0
        fi = self.file_info
        try:
            key = int.from_bytes(fi[b"hfile.AVG_KEY_LEN"], "big", signed=True)
            value = int.from_bytes(fi[b"hfile.AVG_VALUE_LEN"], "big", signed=True)
        except KeyError:
            return 1.0
        per_cell = 8 + key + value + (2 if self.flags.tags else 0) + (1 if self.flags.mvcc else 0)
        on_disk = t.load_on_open_offset - max(t.first_data_block_offset, 0)
        if key < 0 or value < 0 or on_disk <= 0 or t.entry_count <= 0:
            return 1.0
        return max(1.0, min(MAX_BATCH_EXPANSION, t.entry_count * per_cell / on_disk))

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
            batch_bytes: Decoded bytes of data blocks decoded together: blocks are
                grouped by on-disk bytes, ``batch_bytes`` over the file's
                :attr:`expansion`; payloads are decoded at most :data:`DECODED_FACTOR`
                times ``batch_bytes`` at once, whatever the estimate.
            on_corrupt: ``"raise"`` (default) or ``"skip"`` damaged data and index blocks
                (their cells are left out; each skip is appended to ``problems``).
            problems: Receives the skipped blocks.
            blocks: Read exactly these data blocks (default: those the row range needs);
                entries outside the file raise or are skipped.
            threads: Batches read, verified, decompressed and decoded concurrently (1: no
                thread pool). Memory holds up to this many batches. An error in a worker
                is raised here, as the same typed error naming the file and block.
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
        step = DecodeStep(
            self,
            on_corrupt=on_corrupt,
            problems=problems,
            budget=max(1, batch_bytes) * DECODED_FACTOR,
            start_row=start_row,
            stop_row=stop_row,
            columns=columns,
            options={"with_seq_id": with_seq_id, "with_tags": with_tags, "dictionary": dictionary},
        )
        on_disk = max(1, int(max(1, batch_bytes) / self.expansion))
        yield from decoded_in_order(step, list(batches_of(entries, on_disk)), threads)

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

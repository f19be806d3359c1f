"""Decoding an HFile's data blocks into tables of cells, batch by batch.

What :meth:`~cellstore.storefiles.hfile.reader.HFileReader.iter_batches` runs: the data
blocks a read needs are grouped into batches of contiguous byte ranges
(:func:`batches_of`); a :class:`DecodeStep` verifies, decompresses and un-encodes one
batch's blocks into one buffer, walks its cells and gathers them into an Arrow table
(damaged blocks raise, or are skipped into ``problems``); :func:`decoded_in_order` runs
the steps on a few threads and yields the tables in file order, recording the skipped
blocks in file order too: whatever the threads, a read gives the same tables, the same
problems and the same errors (a worker's error is re-raised by the consumer, in order).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.blocks import BlockHeader, check_block, verified_data_blocks
from cellstore.storefiles.hfile.cells import PAD, cells_to_table, walk_cells
from cellstore.storefiles.hfile.deltacols import FUSED_ENCODINGS, FusedRequest, fused_table
from cellstore.storefiles.hfile.encodings import decode_encoded_array
from cellstore.storefiles.hfile.index import IndexEntry

if TYPE_CHECKING:
    from cellstore.storefiles.hfile.reader import HFileReader

__all__ = ["BlockProblem", "DecodeStep", "OnCorrupt", "batches_of", "decoded_in_order"]

#: What a read does with a corrupt data block: raise, or skip it and go on.
OnCorrupt = Literal["raise", "skip"]


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
#: A uint8 numpy array (a buffer of payloads).
_Bytes = np.ndarray[Any, np.dtype[np.uint8]]
#: :meth:`DecodeStep._payloads`: (buffer, cell starts, cell ends, block offsets, rest).
_Payloads = tuple[_Bytes, _Int64s, _Int64s, _Int64s, "_Batch | None"]
#: What a :class:`DecodeStep` gives: (cells or None, blocks left, blocks skipped).
_Decoded = tuple[pa.Table | None, "_Batch | None", list[BlockProblem]]


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


def batches_of(entries: Sequence[IndexEntry], batch_bytes: int) -> Iterator[_Batch]:
    """Group data blocks into batches of about ``batch_bytes``, contiguous in the file."""
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
class DecodeStep:
    """Decode one batch of data blocks to a table of cells (:meth:`HFileReader.iter_batches`).

    Called from the decode threads: each call records its batch's skipped blocks in a
    list of its own and returns it (:func:`decoded_in_order` appends them to
    ``problems`` in file order).
    """

    reader: HFileReader
    on_corrupt: OnCorrupt
    problems: list[BlockProblem]
    budget: int
    start_row: bytes | None
    stop_row: bytes | None
    columns: list[str] | None
    options: dict[str, Any]

    def __call__(self, batch: _Batch) -> _Decoded:
        """Decode ``batch``: (its cells in the row range or None, blocks left, blocks skipped)."""
        own = replace(self, problems=[])
        table, rest = own._decode(batch)
        return table, rest, own.problems

    def _decode(self, batch: _Batch) -> tuple[pa.Table | None, _Batch | None]:
        """The batch's cells in the row range (None when none), and its blocks left over."""
        need_filter = bool(self.start_row) or bool(self.stop_row)
        build = self.columns
        if need_filter and build is not None and "row" not in build:
            build = ["row", *build]
        table: pa.Table | None
        if self.reader.encoding in FUSED_ENCODINGS:
            table, rest, batch = self._fused(batch, build)
            if table is None:
                table, rest = self._blockwise(batch, build)
        else:
            table, rest = self._blockwise(batch, build)
        if table is None or not table.num_rows:
            return None, rest
        if need_filter:
            table = _filter_rows(table, self.start_row, self.stop_row)
            if build is not self.columns and self.columns is not None:
                table = table.select(self.columns)
        return (table if table.num_rows else None), rest

    def _fused(
        self, batch: _Batch, build: list[str] | None
    ) -> tuple[pa.Table | None, _Batch | None, _Batch]:
        """:func:`fused_table` of the batch: (cells, blocks left, the batch with its bytes).

        The cells are None when the batch needs the block-by-block path (it then reuses
        the bytes read here).
        """
        base, end = batch.span()
        raw = batch.raw if batch.raw is not None else self.reader._read(base, end)
        batch = _Batch(batch.entries, batch.size, raw=raw, base=base)
        request = FusedRequest(
            columns=build,
            with_seq_id=bool(self.options.get("with_seq_id")),
            with_tags=bool(self.options.get("with_tags")),
            dictionary=bool(self.options.get("dictionary")),
        )
        got = fused_table(self.reader, raw, base, batch.entries, request, budget=self.budget)
        if got is None:
            return None, None, batch
        table, used = got
        left = batch.entries[used:]
        rest = _Batch(left, sum(x.size for x in left), raw=raw, base=base) if left else None
        return table, rest, batch

    def _blockwise(
        self, batch: _Batch, build: list[str] | None
    ) -> tuple[pa.Table | None, _Batch | None]:
        """The batch's cells decoded block by block (NONE layout, walked, gathered)."""
        buf, bstarts, bends, offs, rest = self._payloads(batch)
        if not len(bstarts):
            return None, rest
        starts, counts, offs = self._walk(buf, bstarts, bends, offs)
        if not len(starts):
            return None, rest
        return self._cells(buf, starts, counts, offs, build), rest

    def _payloads(self, batch: _Batch) -> _Payloads:
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
            self.reader.trailer.codec == "NONE"
            and self.reader.encoding == "NONE"
            and all(a < b for a, b in pairwise(offs))
        )
        if in_place:
            return self._in_place(batch)
        return self._decoded(batch)

    def _in_place(self, batch: _Batch) -> _Payloads:
        """:meth:`_payloads` of uncompressed NONE blocks: read in place, no copy.

        Reads a little past the last block (the file goes on with index blocks and the
        trailer) so short fields near the end can be gathered as fixed windows. Checksums
        are verified for all blocks at once when they are all sound, else block by block.
        """
        base, end = batch.span()
        raw = self.reader._read(base, min(self.reader.size, end + PAD))
        if len(raw) < end - base + PAD:
            raw += bytes(end - base + PAD - len(raw))
        buf = np.frombuffer(raw, dtype=np.uint8)
        offs = np.array([e.offset for e in batch.entries], dtype=np.int64)
        if self.reader.verify_checksums:
            fast = verified_data_blocks(
                raw,
                offs - base,
                np.array([e.size for e in batch.entries], dtype=np.int64),
                header_size=self.reader.trailer.header_size,
            )
            if fast is not None:
                return buf, fast[0], fast[1], offs, None
        starts, ends, good = self._checked_in_place(memoryview(raw)[: end - base], batch, base)
        return buf, starts, ends, good, None

    def _checked_in_place(
        self, blocks_view: memoryview, batch: _Batch, base: int
    ) -> tuple[_Int64s, _Int64s, _Int64s]:
        """Check each block's header (and checksum) in ``blocks_view``, one by one.

        Returns the good blocks' cell starts and ends in ``blocks_view`` and their file
        offsets; damaged blocks raise, or are skipped (and appended to ``problems``).
        """
        hs = self.reader.trailer.header_size
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
                    where=self.reader.where,
                    verify=self.reader.verify_checksums,
                    max_block_bytes=self.reader.max_block_bytes,
                )
                _check_data_block(head, e.size, self.reader.where)
            except CorruptFileError as err:
                if self.on_corrupt == "raise":
                    raise
                self.problems.append(BlockProblem(e.offset, str(err)))
                continue
            starts.append(pos + hs)
            ends.append(pos + head.on_disk_data_size_with_header)
            good.append(e.offset)
        return (
            np.array(starts, dtype=np.int64),
            np.array(ends, dtype=np.int64),
            np.array(good, dtype=np.int64),
        )

    def _decoded(self, batch: _Batch) -> _Payloads:
        """:meth:`_payloads` of compressed or encoded blocks, up to ``budget`` bytes."""
        base, end = batch.span()
        raw = batch.raw if batch.raw is not None else self.reader._read(base, end)
        payloads: list[_Bytes] = []
        offsets: list[int] = []
        decoded = 0
        rest: _Batch | None = None
        for k, e in enumerate(batch.entries):
            if decoded >= self.budget and payloads:
                left = batch.entries[k:]
                rest = _Batch(left, sum(x.size for x in left), raw=raw, base=base)
                break
            try:
                payload = self._data_payload(raw, base, e)
            except CorruptFileError as err:
                if self.on_corrupt == "raise":
                    raise
                self.problems.append(BlockProblem(e.offset, str(err)))
                continue
            payloads.append(payload)
            offsets.append(e.offset)
            decoded += len(payload)
        sizes = np.array([len(p) for p in payloads], dtype=np.int64)
        bstarts = np.zeros(len(payloads), dtype=np.int64)
        if len(sizes) > 1:
            np.cumsum(sizes[:-1], out=bstarts[1:])
        buf = np.concatenate([*payloads, np.zeros(PAD, np.uint8)])
        return buf, bstarts, bstarts + sizes, np.array(offsets, dtype=np.int64), rest

    def _data_payload(self, raw: bytes, base: int, e: IndexEntry) -> _Bytes:
        """The cells of the data block ``e`` (at ``e.offset - base`` in ``raw``), decoded.

        Raises:
            CorruptFileError: the block is damaged, not the size its index entry says, or
                not a data block.
        """
        block = self.reader._decode(raw, e.offset - base, e.offset)
        if block.header.on_disk_size != e.size:
            raise CorruptFileError(
                f"{self.reader.where}: {block.block_type} block at offset {e.offset} takes "
                f"{block.header.on_disk_size} bytes, its index entry says {e.size}"
            )
        if block.block_type == "ENCODED_DATA":
            return decode_encoded_array(
                block.payload,
                flags=self.reader.flags,
                where=f"{self.reader.where}: ENCODED_DATA block at offset {e.offset}",
                max_bytes=self.reader.max_block_bytes,
            )
        if block.block_type == "DATA":
            return np.frombuffer(block.payload, np.uint8)
        raise CorruptFileError(
            f"{self.reader.where}: index points at a {block.block_type} block at offset "
            f"{e.offset}, not a data block"
        )

    def _walk(
        self, buf: _Bytes, starts: _Int64s, ends: _Int64s, offs: _Int64s
    ) -> tuple[_Int64s, _Int64s, _Int64s]:
        """Cell starts of the blocks, with the cells per block and the blocks' offsets.

        Blocks whose cells are damaged raise, or are left out with ``"skip"``.
        """
        sizes = ends - starts
        try:
            layout = walk_cells(
                buf,
                starts,
                starts + sizes,
                flags=self.reader.flags,
                where=self.reader.where,
                block_offsets=offs,
            )
            return layout.starts, layout.counts, offs
        except CorruptFileError:
            if self.on_corrupt == "raise":
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
                    flags=self.reader.flags,
                    where=self.reader.where,
                    block_offsets=offs[one],
                ).starts
            except CorruptFileError as err:
                self.problems.append(BlockProblem(int(offs[k]), str(err)))
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
        buf: _Bytes,
        starts: _Int64s,
        counts: _Int64s,
        offs: _Int64s,
        columns: list[str] | None,
    ) -> pa.Table | None:
        """:func:`cells_to_table` of the walked cells.

        A failure (a family that is not UTF-8) is pinned on its block, which raises or is
        skipped.
        """
        try:
            return cells_to_table(
                buf, starts, flags=self.reader.flags, columns=columns, **self.options
            )
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
                        buf,
                        starts[bounds[k] : bounds[k + 1]],
                        flags=self.reader.flags,
                        columns=columns,
                        **self.options,
                    )
                )
            except CorruptFileError as e:
                where = f"{self.reader.where}: data block at offset {int(offs[k])}"
                err = CorruptFileError(f"{where}: {e}")
                if self.on_corrupt == "raise":
                    raise err from None
                self.problems.append(BlockProblem(int(offs[k]), str(err)))
        if not parts:
            return None
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def decoded_in_order(decode: DecodeStep, batches: list[_Batch], threads: int) -> Iterator[pa.Table]:
    """The non-empty tables of ``batches``, in order, decoded on up to ``threads`` threads.

    A batch decoded in steps (its blocks expand past the budget) goes first again with
    its remaining blocks.
    """
    workers = max(1, min(threads, len(batches)))
    if workers == 1:
        for first in batches:
            todo: _Batch | None = first
            while todo is not None:
                table, todo, found = decode(todo)
                decode.problems.extend(found)
                if table is not None:
                    yield table
        return
    # Decode the next batches while the caller consumes this one (numpy, zlib and the
    # codecs release the GIL); at most ``workers`` batches are in memory at once.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future[_Decoded]] = deque()
        upcoming = iter(batches)
        for batch in upcoming:
            pending.append(pool.submit(decode, batch))
            if len(pending) >= workers:
                break
        while pending:
            table, rest, found = pending.popleft().result()
            decode.problems.extend(found)
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

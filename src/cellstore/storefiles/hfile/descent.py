"""Descending an HFile's data index: the data blocks a row range needs, checked first.

What :meth:`~cellstore.storefiles.hfile.reader.HFileReader.data_blocks` runs (HBase's
``HFileBlockIndex.BlockIndexReader`` seek, for a row range rather than one key). HBase
files are untrusted input (:mod:`.limits`): every entry an index level gives is checked
against the file before its block is read (:func:`checked_entries`), the descent takes
the trailer's level count and reads no index block twice, and every failure is a
:class:`~cellstore.errors.CorruptFileError` naming the file and the block offset, raised
or (``on_corrupt="skip"``) recorded as a :class:`~.batches.BlockProblem`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.batches import BlockProblem, OnCorrupt
from cellstore.storefiles.hfile.index import (
    IndexEntry,
    block_range_for_rows,
    key_row,
    parse_non_root_index,
)

if TYPE_CHECKING:
    from cellstore.storefiles.hfile.reader import HFileReader

__all__ = ["checked_entries", "data_blocks"]


def checked_entries(
    reader: HFileReader,
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
    most :attr:`HFileReader.max_block_bytes` more that ends inside the block section (or before
    ``before``: an index block's children precede it); with ``ordered`` (a data
    index level, in file order) each must start at or after the end of the one
    before. HBase's writers lay blocks out that way; anything else is damage.
    """
    n = len(entries)
    if n == 0:
        return list(entries)
    offs = np.fromiter((e.offset for e in entries), dtype=np.int64, count=n)
    sizes = np.fromiter((e.size for e in entries), dtype=np.int64, count=n)
    hs = reader.trailer.header_size
    limit = reader.blocks_end if before is None else min(before, reader.blocks_end)
    fits = (
        (offs >= 0)
        & (sizes >= hs)
        & (sizes <= hs + reader.max_block_bytes)
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
        err = CorruptFileError(f"{reader.where}: {what} entry {k} {fault}")
        if on_corrupt == "raise":
            raise err
        if problems is not None:
            problems.append(BlockProblem(e.offset, str(err)))
    return kept


def data_blocks(
    reader: HFileReader,
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
        reader: The open file (its trailer, root index and block reads).
        start_row: First row needed (inclusive).
        stop_row: Row to stop before (exclusive).
        on_corrupt: ``"raise"`` on a damaged index block or entry, or ``"skip"`` it
            (the data blocks under it are left out; each skip goes to ``problems``).
        problems: Receives the skipped index blocks and entries.

    Raises:
        CorruptFileError: naming the file and block offset, with ``"raise"``.
    """
    if reader.trailer.is_meta_comparator:
        start_row = stop_row = None  # meta rows do not sort as raw bytes
    levels = reader.trailer.num_data_index_levels
    entries = checked_entries(
        reader,
        reader.root_index,
        what=f"data index root (block at offset {reader._root_offset})",
        ordered=True,
        on_corrupt=on_corrupt,
        problems=problems,
    )
    rows = reader._root_rows if len(entries) == len(reader.root_index) else None
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
                        f"{reader.where}: index block at offset {e.offset} is named twice "
                        "(an index cycle)"
                    )
                visited.add(e.offset)
                block = reader.read_block(e.offset, e.size, expect=expect)
                where = f"{reader.where}: {expect} block at offset {e.offset}"
                kids = parse_non_root_index(block.payload, where=where)
                kids = checked_entries(
                    reader,
                    kids,
                    what=f"{expect} block at offset {e.offset}:",
                    ordered=True,
                    before=e.offset,
                )
                if children and kids and kids[0].offset < (children[-1].offset + children[-1].size):
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

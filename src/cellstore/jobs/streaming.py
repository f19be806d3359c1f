"""How much of a compaction task is held at once (issue 28: a compaction keeps its budget).

A compaction task (:func:`cellstore.jobs.compact.run_compaction_task`) is streamed: its
row range is read, merged and resolved in row-aligned chunks
(:func:`~cellstore.reader.execute.read_task_chunks`), and each chunk is written as it
comes (:func:`~cellstore.storefiles.rolling.write_rolled_chunks`) while the next one is
read. This module sizes the chunks from the memory budget (:func:`chunk_cells`), returns
Arrow's freed pages after each one (:func:`released`) and joins the first chunks until
they hold as many rows as ``auto``'s threshold needs (:func:`first_rows`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

import pyarrow as pa

from cellstore.core.cells import CELL_SCHEMA, run_starts
from cellstore.core.metadata import FileEntry
from cellstore.reader.execute import CHUNK_CELLS
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS

__all__ = [
    "CHUNK_CELL_BYTES",
    "GROUP_CELL_BYTES",
    "MAX_CHUNK_CELLS",
    "MIN_CHUNK_CELLS",
    "chunk_cells",
    "first_rows",
    "open_group_bytes",
    "released",
]

#: What one input cell of a compaction chunk costs while the chunk is in flight: its
#: decoded row groups, the merge's and the writer's temporaries, for the chunk being
#: written and the one read meanwhile (measured: 2M records, 128K-cell chunks, 360 B).
#: A task reads chunks of ``memory_budget / CHUNK_CELL_BYTES`` cells
#: (:func:`chunk_cells`), so its memory is about the budget plus a fixed overhead.
CHUNK_CELL_BYTES: Final = 384
#: Fewest and most cells of a compaction chunk (a row group of the default size; the
#: read's chunk).
MIN_CHUNK_CELLS: Final = 1 << 15
MAX_CHUNK_CELLS: Final = CHUNK_CELLS
#: Bytes of a decoded input cell (row and qualifier as dictionaries, ts, type, value).
GROUP_CELL_BYTES: Final = 48


def chunk_cells(memory_budget: int, inputs: Sequence[FileEntry] = ()) -> int:
    """Cells per chunk of a compaction task's read under ``memory_budget`` bytes.

    The budget less what the merge holds whatever the chunk size (:func:`open_group_bytes`
    of the task's ``inputs``), over :data:`CHUNK_CELL_BYTES` (what a chunk in flight costs
    per cell), within ``[MIN_CHUNK_CELLS, MAX_CHUNK_CELLS]``.
    """
    room = memory_budget - open_group_bytes(inputs)
    return max(MIN_CHUNK_CELLS, min(MAX_CHUNK_CELLS, room // CHUNK_CELL_BYTES))


def open_group_bytes(inputs: Sequence[FileEntry]) -> int:
    """What a streamed merge of ``inputs`` holds besides its chunks: their row groups.

    Files that overlap are merged a row group of each at a time, and a row group that
    straddles two chunks stays decoded until the second has taken it: about two decoded
    groups (:data:`GROUP_CELL_BYTES` a cell) of every input file (a store of ten
    overlapping spill runs: 60 MiB).
    """
    return sum(2 * min(e.cells, DEFAULT_ROW_GROUP_CELLS) * GROUP_CELL_BYTES for e in inputs)


def released(chunks: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """The chunks' cells; Arrow's freed pages go back to the system after each one.

    The pool's threads each keep the pages they freed (mimalloc), so without this a task
    holds what every chunk ever took (2M records: 155 -> 115 MiB above base). ``malloc``
    is trimmed once per task only: trimming it per chunk doubles the time.
    """
    pool = pa.default_memory_pool()
    for cells in chunks:
        yield cells.select(CELL_SCHEMA.names)
        del cells
        pool.release_unused()


def first_rows(chunks: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The chunks, the first ones joined until they hold ``rows`` rows (or all of them).

    A column file's first write decides its layout: ``auto`` writes one only when that
    write holds ``AUTO_MIN_ROWS`` rows
    (:meth:`~cellstore.storefiles.columns.ColumnPlan.columns_for`), and each column's
    encoding is tried on its first ``TRIAL_RECORDS`` records
    (:func:`~cellstore.storefiles.columnenc.choose_encodings`). Joined, a streamed task
    decides on as many rows as the task held whole would, however few a chunk holds.
    """
    head: list[pa.Table] = []
    seen = 0
    for cells in chunks:
        if seen >= rows:
            yield cells
            continue
        head.append(cells)
        seen += len(run_starts(cells.column("row"))) if cells.num_rows else 0
        if seen >= rows:
            yield pa.concat_tables(head)
            head = []
    if head:
        yield pa.concat_tables(head)

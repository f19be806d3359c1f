"""Executing scan tasks: read a region's store files, merge, apply HBase's semantics.

A family's part of a task is read in row-aligned chunks of about :data:`CHUNK_CELLS`
cells, on a few threads at once (decoding Parquet, merging and resolving all release the
GIL). Chunks are cut at row-group boundaries, which are row keys taken from the store
files' row-group statistics, so a row never spans two chunks and every chunk is resolved on
its own; the results are concatenated in key order. Another
:class:`~cellstore.reader.plan.CellSource` (an HBase store's HFiles) is chunked the same
way at the row keys its ``chunk_bounds`` gives. A row group that straddles a cut (its
file's rows run past the next chunk's first row) is decoded once, by the first chunk that
needs it, and handed to the next one. Point reads (``get``) and small tasks run inline as
one chunk.

The chunks of every task in a process run on **one shared pool** of
``min(pyarrow.cpu_count(), MAX_THREADS)`` threads, so tasks running at once on several
Dask threads (the threaded scheduler, a worker with many threads) never start more read
threads than that between them: no oversubscription when the reader's threads run inside
Dask's. (Dask's nanny sets ``OMP_NUM_THREADS=1`` in worker processes, which pyarrow
honours, so there each task reads its chunks on its own Dask thread.)

Row and qualifier columns are decoded as Arrow dictionaries (Parquet stores them
dictionary-encoded), which is cheaper than materializing every key, and lets the merge and
the semantics compare integer codes; :func:`~cellstore.core.semantics.merge_resolve`
returns plain binary cells.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final, TypeVar

import fsspec
import numpy as np
import pyarrow as pa

from cellstore.core.cells import RESULT_CELL_SCHEMA, run_starts
from cellstore.core.semantics import merge_resolve
from cellstore.core.semantics.merge import merge_resolve_rows
from cellstore.core.semantics.runs import merge_families
from cellstore.errors import CellstoreError, CorruptFileError
from cellstore.reader.plan import FamilyRead, ScanTask
from cellstore.storefiles import RowGroupStats, StoreFileReader
from cellstore.storefiles.reader import slice_rows

__all__ = [
    "CHUNK_CELLS",
    "RESULT_SCHEMA",
    "read_task",
    "read_task_chunks",
    "run_ahead",
    "run_together",
]

#: Schema of scan results in the "cells" shape (HBase result order): a store file's
#: cells with their family after the row (defined once, in core/cells.py).
RESULT_SCHEMA: Final = RESULT_CELL_SCHEMA

#: Target cells per chunk of a family read (several row groups of the default size).
CHUNK_CELLS: Final = 1 << 19
#: Chunk size for a :class:`~cellstore.reader.plan.CellSource` (HBase HFiles): their cells
#: decode in compiled kernels that release the GIL, so smaller chunks keep every thread busy
#: (a 4-region, 3M-cell snapshot scan: 0.55 s at 512k-cell chunks, 0.36 s at 128k, 0.43 s
#: at 64k, on 2 cores).
SOURCE_CHUNK_CELLS: Final = CHUNK_CELLS // 4
#: Most threads one read uses (also capped by ``pyarrow.cpu_count()``).
MAX_THREADS: Final = 8

_T = TypeVar("_T")


def read_task(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    *,
    point_row: bytes | None = None,
    reverse: bool = False,
    max_rows: int | None = None,
) -> pa.Table:
    """The cells a task contributes, in HBase result order (R2.3; R2.4 when ``reverse``).

    Within a row, families come in name order, then qualifier ascending, ts descending.

    Args:
        fs: The filesystem.
        task: The task.
        point_row: When the task is a single-row read, the row; files whose Bloom filter
            rules the row out are not read.
        reverse: Rows in descending order (cells inside a row keep their order).
        max_rows: A scan's limit: the task may stop reading once its result holds this
            many rows (whole rows, the first ones in result order, so the last ones of the
            range when ``reverse``; it may return more, which the caller drops). Chunks then
            run one after the other (from the end when ``reverse``), so a ``limit`` scan
            decodes about one chunk (:data:`CHUNK_CELLS` cells) per family, not the whole
            task.

    Raises:
        MissingFileError: a store file of the task is gone.
        CorruptFileError: a store file does not match its manifest entry, fails a page
            checksum, or its cells do not decode; the message names the file(s).
    """
    if (
        point_row is None
        and len(task.families) > 1
        and all(fam.source is None for fam in task.families)
    ):
        return _read_families(fs, task, reverse=reverse, max_rows=max_rows)
    # The first n rows of the merged families are among each family's first n rows
    # (a row has fewer than n smaller rows in the union, so fewer in any one family);
    # reversed, the last n rows.
    parts, names = [], []
    for fam in task.families:
        with _decode_errors(task, fam):
            visible = _read_family(fs, task, fam, point_row, max_rows=max_rows, from_end=reverse)
        if visible.num_rows:
            parts.append(visible)
            names.append(fam.family.name)
    # Each family's cells are in cell order: merge them on the row, never re-sort (R2.3,
    # R2.4).
    return merge_families(parts, names, schema=RESULT_SCHEMA, reverse=reverse)


@contextmanager
def _decode_errors(task: ScanTask, fam: FamilyRead) -> Iterator[None]:
    """Turn a decoding error of ``fam``'s files into a :class:`CorruptFileError`."""
    try:
        yield
    except CellstoreError:
        raise
    except (pa.ArrowException, ValueError, IndexError, KeyError, OverflowError) as e:
        # Cells that passed their page checksums but do not decode consistently (a
        # damaged page header or footer): the files are corrupt, say which.
        where = f"table {task.table} version {task.version}: " if task.table else ""
        paths = ", ".join(path for path, _ in fam.files)
        raise CorruptFileError(
            f"{where}store files of region {task.region}, family {fam.family.name} "
            f"({paths}) cannot be decoded ({type(e).__name__}: {e}); run `cellstore "
            "verify`, then restore from a snapshot (`cellstore restore`)"
        ) from e


def _read_families(
    fs: fsspec.AbstractFileSystem, task: ScanTask, *, reverse: bool, max_rows: int | None
) -> pa.Table:
    """All families' visible cells of a range scan over store files, in result order.

    The range is cut into row-aligned chunks at row-group first rows of all families'
    files together, so each chunk holds whole rows of every family: a chunk reads and
    resolves each family's part, then merges the families on the row
    (:func:`~cellstore.core.semantics.runs.merge_families`). Chunks run on the thread
    pool, so decoding, resolving, merging and gathering all run in parallel.
    """
    readers: list[StoreFileReader] = []
    try:
        live: list[tuple[FamilyRead, list[_Source]]] = []
        for fam in task.families:
            with _decode_errors(task, fam):
                sources = _open_sources(fs, task, fam, None, readers)
            if sources:
                live.append((fam, sources))
        if not live:
            return RESULT_SCHEMA.empty_table()
        every = [s for _, sources in live for s in sources]
        chunks = _chunk_bounds(every, task.start, task.stop, CHUNK_CELLS)
        chunks_from_end = reverse and max_rows is not None
        reads = [
            (fam, _ChunkedRead(sources, chunks, fam, from_end=chunks_from_end))
            for fam, sources in live
        ]
        names = [fam.family.name for fam, _ in live]

        def run(i: int) -> pa.Table:
            parts, starts = [], []
            for fam, read in reads:
                with _decode_errors(task, fam):
                    part, part_starts = read.run_rows(i, decode=False)
                parts.append(part)
                starts.append(part_starts)
            return merge_families(
                parts, names, schema=RESULT_SCHEMA, reverse=reverse, row_starts=starts
            )

        if not reverse:
            return _run_chunks(run, len(chunks), max_rows=max_rows)
        if max_rows is not None:  # chunk results are in reversed row order already
            return pa.concat_tables(_chunks_until(run, len(chunks), max_rows, from_end=True))
        # Chunks still run first to last: a shared row group is decoded by the first chunk
        # that reads it, which later chunks wait on (running them last to first on a
        # small pool would deadlock). Only the results are taken last to first.
        return pa.concat_tables(_chunk_results(run, len(chunks))[::-1])
    finally:
        for reader in readers:
            reader.close()


def _open_sources(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    point_row: bytes | None,
    readers: list[StoreFileReader],
) -> list[_Source]:
    """``fam``'s store files that may hold cells of the task.

    Every reader opened is appended to ``readers``, for the caller to close.
    """
    sources = []
    for relpath, seq in fam.files:
        reader = task.open_file(fs, fam, relpath)
        readers.append(reader)
        if point_row is not None and not reader.might_contain_row(point_row):
            continue
        groups = [g for g in reader.row_groups() if g.may_overlap(task.start, task.stop)]
        if groups:
            sources.append(_Source(reader, seq, groups))
    return sources


@dataclass
class _Source:
    """One store file of the family being read, with the row groups the task needs."""

    reader: StoreFileReader
    seq: int
    groups: list[RowGroupStats]


def _read_family(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    fam: FamilyRead,
    point_row: bytes | None,
    *,
    max_rows: int | None = None,
    from_end: bool = False,
) -> pa.Table:
    """One family's visible cells in ``[task.start, task.stop)``, in cell order.

    With ``max_rows``, at least the first ``max_rows`` rows (the last ones with
    ``from_end``), or all, read chunk by chunk.
    """
    if fam.source is not None:
        run, n = _source_chunks(fs, task, fam, point_row)
        return _run_chunks(run, n, max_rows=max_rows, from_end=from_end)
    readers: list[StoreFileReader] = []
    try:
        sources = _open_sources(fs, task, fam, point_row, readers)
        if not sources:
            return pa.table([])
        chunks = [(task.start, task.stop)]
        if point_row is None:
            chunks = _chunk_bounds(sources, task.start, task.stop, CHUNK_CELLS)
        chunks_from_end = from_end and max_rows is not None
        read = _ChunkedRead(sources, chunks, fam, from_end=chunks_from_end)
        return _run_chunks(read.run, len(chunks), max_rows=max_rows, from_end=from_end)
    finally:
        for reader in readers:
            reader.close()


def read_task_chunks(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    *,
    chunk_cells: int = CHUNK_CELLS,
    ahead: int | None = None,
) -> Iterator[pa.Table]:
    """A one-family task's cells as row-aligned chunks, in cell order, one at a time.

    What :func:`read_task` returns for the family, without the ``family`` column and
    never held whole: the range is cut at row-group first rows into chunks of about
    ``chunk_cells`` cells (a row never spans two), each read, merged and resolved on the
    shared pool, at most ``ahead`` (default: threads + 1) chunks ahead of the consumer.
    A consumer that writes each chunk and drops it holds a few chunks, not the task (a
    compaction's memory: :func:`cellstore.jobs.compact.run_compaction_task`).

    Raises:
        ValueError: the task reads more or fewer than one family.
        MissingFileError: a store file of the task is gone.
        CorruptFileError: a store file does not match its entry or does not decode.
    """
    if len(task.families) != 1:
        raise ValueError("read_task_chunks reads a task of one family")
    (fam,) = task.families
    with _decode_errors(task, fam):
        if fam.source is not None:
            run, n = _source_chunks(fs, task, fam, None)
            yield from _iter_chunk_results(run, n, ahead=ahead)
            return
        readers: list[StoreFileReader] = []
        try:
            sources = _open_sources(fs, task, fam, None, readers)
            if not sources:
                return
            chunks = _chunk_bounds(sources, task.start, task.stop, chunk_cells)
            read = _ChunkedRead(sources, chunks, fam)
            yield from _iter_chunk_results(read.run, len(chunks), ahead=ahead)
        finally:
            for reader in readers:
                reader.close()


def _source_chunks(
    fs: fsspec.AbstractFileSystem, task: ScanTask, fam: FamilyRead, point_row: bytes | None
) -> tuple[Callable[[int], pa.Table], int]:
    """The chunks of one family's read from a :class:`~cellstore.reader.plan.CellSource`.

    Like Parquet files, the range is cut into row-aligned chunks of about
    :data:`SOURCE_CHUNK_CELLS` cells (the source's :meth:`chunk_bounds`), each read and
    resolved on its own (:func:`_run_chunks` runs them on the thread pool); point reads
    stay one chunk.

    Returns:
        ``run(i)``, chunk ``i``'s visible cells, and the number of chunks.
    """
    source = fam.source
    assert source is not None
    chunks = [(task.start, task.stop)]
    if point_row is None:
        chunks = source.chunk_bounds(fs, task.start, task.stop, target_cells=SOURCE_CHUNK_CELLS)

    def run(i: int) -> pa.Table:
        lo, hi = chunks[i]
        runs, seqs = source.read_runs(fs, lo, hi, point_row=point_row)
        return merge_resolve(runs, seqs, family=fam.family, spec=fam.spec)

    return run, len(chunks)


def _run_chunks(
    run: Callable[[int], pa.Table],
    n: int,
    *,
    max_rows: int | None = None,
    from_end: bool = False,
) -> pa.Table:
    """``run(0) ... run(n - 1)`` concatenated, on the thread pool when ``n > 1``.

    With ``max_rows``, only the chunks up to the one that brings the rows to ``max_rows``
    (from the last chunk backwards with ``from_end``; :func:`_chunks_until`), concatenated
    in chunk order.
    """
    if n == 1:
        return run(0)
    if max_rows is None:
        return pa.concat_tables(_chunk_results(run, n))
    parts = _chunks_until(run, n, max_rows, from_end=from_end)
    return pa.concat_tables(parts[::-1] if from_end else parts)


def _chunks_until(
    run: Callable[[int], pa.Table], n: int, max_rows: int, *, from_end: bool
) -> list[pa.Table]:
    """Chunk results, one chunk after the other, until they hold ``max_rows`` rows.

    Chunks run from the first (from the last with ``from_end``) in the calling thread;
    the list is in the order they ran. Chunks are row-aligned (no row spans two), so the
    rows counted are whole rows. A :class:`_ChunkedRead` run from the end must be built
    with ``from_end=True`` (its shared row groups are then decoded by their last chunk).
    """
    parts: list[pa.Table] = []
    rows = 0
    for i in range(n - 1, -1, -1) if from_end else range(n):
        parts.append(run(i))
        if parts[-1].num_rows:
            rows += len(run_starts(parts[-1].column("row")))
            if rows >= max_rows:
                break
    return parts


def _chunk_results(run: Callable[[int], pa.Table], n: int) -> list[pa.Table]:
    """``[run(0), ..., run(n - 1)]``, started in that order, on the thread pool."""
    threads = min(pa.cpu_count(), MAX_THREADS)
    if threads == 1 or n == 1:
        return [run(i) for i in range(n)]
    return _in_order(run, n, threads)


def _iter_chunk_results(
    run: Callable[[int], pa.Table], n: int, *, ahead: int | None = None
) -> Iterator[pa.Table]:
    """``run(0), ..., run(n - 1)`` one at a time, on the thread pool (:func:`_iter_in_order`)."""
    threads = min(pa.cpu_count(), MAX_THREADS)
    if threads == 1 or n == 1:
        return (run(i) for i in range(n))
    return _iter_in_order(run, n, threads, ahead=threads + 1 if ahead is None else ahead)


def _chunk_bounds(
    sources: Sequence[_Source], start: bytes, stop: bytes, target: int
) -> list[tuple[bytes, bytes]]:
    """Cut ``[start, stop)`` at row-group first rows into pieces of about ``target`` cells.

    Row groups of all files are taken in order of their first row; a cut is placed before
    the group that would take the running count past ``target``. Without row statistics
    the range stays whole.
    """
    groups = [g for s in sources for g in s.groups]
    if any(g.min_row is None or g.max_row is None for g in groups):
        return [(start, stop)]
    cuts: list[bytes] = []
    cells = 0
    for g in sorted(groups, key=lambda g: (g.min_row, g.index)):
        first = g.min_row
        assert first is not None
        after_last = first > (cuts[-1] if cuts else start)
        if cells >= target and after_last and (not stop or first < stop):
            cuts.append(first)
            cells = 0
        cells += g.num_cells
    bounds = [start, *cuts, stop]
    return list(pairwise(bounds))


class _ChunkedRead:
    """Reads chunks of one family's files; chunk ``i`` with :meth:`run` ``(i)``.

    A row group needed by several chunks is decoded by the first of them (its owner), which
    publishes the decoded table through a future that later chunks wait on; the future is
    dropped once the last of those chunks has taken it. Chunks start in order
    (:func:`_in_order` submits them in order to a FIFO pool), so an owner always runs
    before, or alongside, the chunks waiting for it, and waiting cannot deadlock. With
    ``from_end`` the owner is the last chunk that needs the group, for chunks run from the
    last to the first (:func:`_chunks_until`).
    """

    def __init__(
        self,
        sources: Sequence[_Source],
        chunks: Sequence[tuple[bytes, bytes]],
        fam: FamilyRead,
        *,
        from_end: bool = False,
    ) -> None:
        self.sources = sources
        self.chunks = chunks
        self.fam = fam
        # needs[i][s]: the row groups of source s that chunk i reads.
        self.needs = [
            [[g for g in s.groups if g.may_overlap(lo, hi)] for s in sources] for lo, hi in chunks
        ]
        self.owner: dict[tuple[int, int], int] = {}
        users: dict[tuple[int, int], int] = {}
        order = range(len(chunks) - 1, -1, -1) if from_end else range(len(chunks))
        for i in order:
            for s, groups in enumerate(self.needs[i]):
                for g in groups:
                    self.owner.setdefault((s, g.index), i)
                    users[(s, g.index)] = users.get((s, g.index), 0) + 1
        self._users = {key: count for key, count in users.items() if count > 1}
        self._shared: dict[tuple[int, int], Future[pa.Table]] = {
            key: Future() for key in self._users
        }
        self._lock = threading.Lock()

    def run(self, i: int) -> pa.Table:
        """Chunk ``i``'s visible cells."""
        return self.run_rows(i)[0]

    def run_rows(self, i: int, *, decode: bool = True) -> tuple[pa.Table, np.ndarray]:
        """Chunk ``i``'s visible cells, and per cell whether it starts a row.

        ``decode=False`` may leave ``row``/``qualifier`` dictionary-encoded (for
        :func:`~cellstore.core.semantics.runs.merge_families`, which decodes them once).
        """
        lo, hi = self.chunks[i]
        with self._lock:
            owned = [f for key, f in self._shared.items() if self.owner[key] == i]
        try:
            runs, seqs = [], []
            for s, groups in enumerate(self.needs[i]):
                if not groups:
                    continue
                pieces = self._pieces(i, s, groups)
                run = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
                run = slice_rows(run, groups, lo, hi)
                if run.num_rows:
                    runs.append(run)
                    seqs.append(self.sources[s].seq)
            return merge_resolve_rows(
                runs, seqs, family=self.fam.family, spec=self.fam.spec, decode=decode
            )
        except BaseException as e:
            for future in owned:  # never leave a later chunk waiting
                if not future.done():
                    future.set_exception(e)
            raise

    def _pieces(self, i: int, s: int, groups: list[RowGroupStats]) -> list[pa.Table]:
        """The decoded row groups ``groups`` of source ``s`` for chunk ``i``, in order."""
        owned = [g for g in groups if self.owner[(s, g.index)] == i]
        pieces: dict[int, pa.Table] = {}
        reader = self.sources[s].reader
        if len(self.chunks) == 1 and reader.info.columns:
            # one chunk owns every group: a column file expands only the records in range
            lo, hi = self.chunks[0]
            return [reader.read_row_groups([g.index for g in groups], encoded=True, rows=(lo, hi))]
        if owned:
            table = reader.read_row_groups(
                [g.index for g in owned], encoded=True, use_threads=len(self.chunks) == 1
            )
            offset = 0
            for g in owned:
                pieces[g.index] = table.slice(offset, g.num_cells)
                offset += g.num_cells
        for g in groups:
            key = (s, g.index)
            with self._lock:
                future = self._shared.get(key)
            if future is None:
                continue
            if g.index in pieces:
                future.set_result(pieces[g.index])
            else:
                pieces[g.index] = future.result()
            with self._lock:
                self._users[key] -= 1
                if not self._users[key]:
                    del self._users[key], self._shared[key]
        return [pieces[g.index] for g in groups]


def _in_order(run: Callable[[int], pa.Table], n: int, threads: int) -> list[pa.Table]:
    """``[run(0), ..., run(n - 1)]`` on the shared read pool, at most a few chunks ahead."""
    return list(_iter_in_order(run, n, threads, ahead=threads + 1))


def _iter_in_order(
    run: Callable[[int], pa.Table], n: int, threads: int, *, ahead: int
) -> Iterator[pa.Table]:
    """``run(0), ..., run(n - 1)`` on the shared read pool, at most ``ahead`` chunks ahead.

    The chunks are submitted in order to the process's FIFO pool (:func:`_read_pool`), so a
    chunk waiting for a row group an earlier chunk of its task decodes never waits on one
    that has not started; chunks of other tasks only queue alongside. Results are yielded
    in order; while the consumer holds one, at most ``ahead`` more are running or done.
    On an error, or when the consumer stops early, the chunks not started are cancelled
    and the running ones finish before the generator closes (they still use the task's
    open readers).
    """
    pool = _read_pool(threads)
    pending: deque[Future[pa.Table]] = deque()
    try:
        for i in range(n):
            try:
                future = pool.submit(run, i)
            except RuntimeError:
                # another scan replaced (and shut down) the pool: pyarrow's cpu count
                # changed; the chunks already queued there still run
                pool = _read_pool(threads)
                future = pool.submit(run, i)
            pending.append(future)
            if len(pending) > ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        _stop(pending)


def run_together(calls: Sequence[Callable[[], _T]]) -> list[_T]:
    """``[c() for c in calls]``, the calls running at once on the shared read pool.

    The first call runs in this thread, the others on the pool (:func:`_read_pool`); a
    call the pool has not started by the time this thread wants its result runs here, so
    a caller never waits on a queued call (no deadlock when the pool is busy, also when
    the caller is itself a pool thread). On an error the calls not started are
    cancelled and the running ones finish before it propagates.
    """
    threads = min(pa.cpu_count(), MAX_THREADS)
    if len(calls) < 2 or threads < 2:
        return [c() for c in calls]
    try:
        pool = _read_pool(threads)
        futures = [pool.submit(c) for c in calls[1:]]
    except RuntimeError:  # another scan replaced the pool meanwhile: run them here
        return [c() for c in calls]
    try:
        out = [calls[0]()]
        for future, call in zip(futures, calls[1:], strict=True):
            out.append(call() if future.cancel() else future.result())
    except BaseException:
        _stop(futures)
        raise
    return out


def run_ahead(calls: Sequence[Callable[[], _T]], *, ahead: int = 1) -> Iterator[_T]:
    """``c()`` for each call, in order, the next ``ahead`` calls running meanwhile.

    While the consumer takes a result, the next ``ahead`` calls run on the shared read
    pool (:func:`_read_pool`), so one call's single-threaded steps overlap the others'
    decoding. The consumer works too: a call not started by the time its result is
    wanted runs in its thread (as in :func:`run_together`: no deadlock when the pool is
    busy), and while it waits for a call running on the pool it runs the latest calls
    of the window that have not started. At most ``1 + ahead`` results are held at once.
    When the consumer stops early or a call fails, calls not started are cancelled and
    running ones finish before the generator closes.
    """
    threads = min(pa.cpu_count(), MAX_THREADS)
    if ahead < 1 or threads < 2 or len(calls) < 2:
        yield from (c() for c in calls)
        return
    pool: ThreadPoolExecutor | None = _read_pool(threads)
    started: dict[int, Future[_T]] = {}
    done: dict[int, _T] = {}  # results of calls the consumer ran ahead of their turn
    try:
        for i, call in enumerate(calls):
            for j in range(i + 1, min(i + 1 + ahead, len(calls))):
                if j not in started and j not in done and pool is not None:
                    try:
                        started[j] = pool.submit(calls[j])
                    except RuntimeError:  # another scan replaced the pool: run them here
                        pool = None
            if i in done:
                yield done.pop(i)
                continue
            future = started.pop(i, None)
            if future is None or future.cancel():
                yield call()
                continue
            while not future.done():  # call i runs on the pool: help with the window
                spare = next(
                    (j for j in sorted(started, reverse=True) if started[j].cancel()), None
                )
                if spare is None:
                    break
                del started[spare]
                done[spare] = calls[spare]()
            yield future.result()
    finally:
        _stop(started.values())


def _stop(futures: Iterable[Future[Any]]) -> None:
    """Cancel the calls of ``futures`` not started, and wait for the running ones.

    Only the running ones are waited for: a cancelled call stays in the pool's queue
    until a pool thread takes it off, and when every pool thread is itself waiting here
    (reads failing at once, each from a pool thread) none would, and the wait would
    never end.
    """
    running = [f for f in futures if not f.cancel()]
    wait_futures(running)


_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_threads = 0


def _read_pool(threads: int) -> ThreadPoolExecutor:
    """The process's shared chunk pool, of ``threads`` threads.

    Created on first use; replaced when the wanted size changes, e.g. after
    ``pyarrow.set_cpu_count``: the old one is shut down (it finishes its queued chunks,
    then its threads exit; :func:`_in_order` moves to the new pool if it was submitting).
    """
    global _pool, _pool_threads
    with _pool_lock:
        if _pool is None or _pool_threads != threads:
            if _pool is not None:
                _pool.shutdown(wait=False)  # its threads exit once its queue is done
            _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cellstore-read")
            _pool_threads = threads
        return _pool


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there."""
    global _pool, _pool_lock, _pool_threads
    _pool, _pool_threads = None, 0
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)

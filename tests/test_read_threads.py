"""Read threads: scan tasks running at once share one pool, never more threads than cores.

Issue 16: "a scan or load never starts more threads than cores per worker (no
oversubscription when pyarrow's threads run inside Dask's)". Dask's threaded scheduler runs
several scan tasks at once in one process; each task reads its chunks on threads. Those
threads come from one process-wide pool of ``min(pyarrow.cpu_count(), MAX_THREADS)``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import dask
import numpy as np
import pyarrow as pa
import pytest

from cellstore.errors import CorruptFileError
from cellstore.reader import execute
from cellstore.warehouse import Table, connect


@pytest.fixture
def two_cores() -> Iterator[int]:
    """pyarrow sees two cores for the test (the pool is used from two threads up).

    A pool of another size left by earlier tests is replaced (and shut down) first, and
    its idle threads are given time to exit, so the watch counts only this test's.
    """
    before = pa.cpu_count()
    pa.set_cpu_count(2)
    execute._read_pool(2)
    deadline = time.monotonic() + 10
    while _read_threads() > 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield 2
    finally:
        pa.set_cpu_count(before)


def _read_threads() -> int:
    return sum(t.name.startswith("cellstore-read") for t in threading.enumerate())


def _table(tmp_path: Path, *, regions: int = 6, rows: int = 3000) -> Table:
    splits = [b"r%05d" % (rows * i // regions) for i in range(1, regions)]
    t = connect(str(tmp_path)).create_table("t", families=["a", "b"], splits=splits)
    n = rows * 4
    rng = np.random.default_rng(3)
    t.load_cells(
        pa.table(
            {
                "row": pa.array([b"r%05d" % (i // 4) for i in range(n)], pa.binary()),
                "family": pa.array(["a" if i % 4 < 2 else "b" for i in range(n)]),
                "qualifier": pa.array([b"q%d" % (i % 2) for i in range(n)], pa.binary()),
                "ts": pa.array(rng.integers(1, 1000, n), pa.int64()),
                "type": pa.array([4] * n, pa.int8()),
                "value": pa.array([b"v%d" % i for i in range(n)], pa.binary()),
            }
        ),
        row_group_cells=64,
    )
    return connect(str(tmp_path)).table("t")


class _ReadThreadWatch:
    """Samples, on its own thread, how many ``cellstore-read`` threads run at once."""

    def __init__(self) -> None:
        self.most = 0
        self.names: list[str] = []
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            live = [t for t in threading.enumerate() if t.name.startswith("cellstore-read")]
            if len(live) > self.most:
                self.names = sorted(t.name for t in live)
            self.most = max(self.most, len(live))
            self.seen.update(t.ident for t in live if t.ident is not None)
            time.sleep(0.0005)

    def __enter__(self) -> _ReadThreadWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_concurrent_scan_tasks_share_one_pool_of_cores_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_cores: int
) -> None:
    """Six multi-chunk tasks on 4 Dask threads: at most 2 read threads exist, ever."""
    monkeypatch.setattr(execute, "CHUNK_CELLS", 256)  # every task cuts many chunks
    t = _table(tmp_path)
    expected = t.scan().to_arrow()
    with _ReadThreadWatch() as watch, dask.config.set(scheduler="threads", num_workers=4):
        got = t.scan().to_dask().compute()
    assert watch.seen, "the tasks read their chunks on the pool"
    assert watch.most <= two_cores, watch.names
    assert len(watch.seen) <= two_cores
    assert got["value"].tolist() == expected.column("value").to_pylist()
    assert got["family"].tolist() == expected.column("family").to_pylist()


def test_pool_follows_pyarrow_cpu_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_cores: int
) -> None:
    """``pyarrow.set_cpu_count(1)``: chunks run on the task's own thread, none started."""
    monkeypatch.setattr(execute, "CHUNK_CELLS", 256)
    t = _table(tmp_path, regions=2, rows=1500)
    pa.set_cpu_count(1)
    before = {x.ident for x in threading.enumerate() if x.name.startswith("cellstore-read")}
    with _ReadThreadWatch() as watch:
        out = t.scan().to_arrow()
    assert out.num_rows == 1500 * 4
    assert watch.seen <= before  # no new read thread


def test_a_failing_chunk_cancels_the_rest_and_leaves_the_pool_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_cores: int
) -> None:
    """An error in one chunk propagates; chunks not started are cancelled; later scans
    (of other tasks sharing the pool) still run."""
    monkeypatch.setattr(execute, "CHUNK_CELLS", 256)
    t = _table(tmp_path, regions=1)
    calls: list[int] = []

    def run(i: int) -> pa.Table:
        calls.append(i)
        if i == 2:
            raise CorruptFileError("chunk 2 is damaged")
        time.sleep(0.01)
        return pa.table({"i": [i]})

    with pytest.raises(CorruptFileError, match="chunk 2"):
        execute._in_order(run, 40, 2)
    assert len(calls) < 40  # the tail never started
    assert t.scan().to_arrow().num_rows == 3000 * 4


def test_a_replaced_pool_is_shut_down_and_running_reads_move_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_cores: int
) -> None:
    """When pyarrow's cpu count changes, the next read replaces the pool and shuts the old
    one down (its threads exit); a read that was submitting to it moves to the new one."""
    old = execute._read_pool(2)
    assert old.submit(lambda: 1).result() == 1  # its threads exist
    assert old._threads
    replaced = execute._read_pool(3)
    assert replaced is not old
    deadline = time.monotonic() + 10
    while any(t.name.startswith("cellstore-read") and t.is_alive() for t in old._threads):
        assert time.monotonic() < deadline, "the old pool's threads did not exit"
        time.sleep(0.01)

    def run(i: int) -> pa.Table:
        if i == 1:
            execute._read_pool(2)  # another scan sees another cpu count mid-read
        return pa.table({"i": [i]})

    got = execute._in_order(run, 40, 3)  # chunks after the replacement go to the new pool
    assert [t.column("i")[0].as_py() for t in got] == list(range(40))
    assert execute._read_pool(2) is not replaced


def test_run_together_runs_calls_at_once_in_order(two_cores: int) -> None:
    """The calls of ``run_together`` overlap (a barrier only two running calls pass), come
    back in order, and a call the busy pool has not started runs in the caller."""
    barrier = threading.Barrier(2, timeout=10)

    def meet(i: int) -> int:
        barrier.wait()
        return i

    assert execute.run_together([lambda: meet(0), lambda: meet(1)]) == [0, 1]
    # every pool thread busy until the caller is done: the queued call runs in the caller
    _queued_call_runs_in_the_caller(execute.run_together, two_cores)


def _queued_call_runs_in_the_caller(
    run: Callable[[list[Callable[[], int]]], Iterable[int]], threads: int
) -> None:
    """With every pool thread busy, the call ``run`` queued runs in this thread."""
    release = threading.Event()
    pool = execute._read_pool(threads)
    blockers = [pool.submit(release.wait, 10) for _ in range(threads)]
    try:
        callers: list[str] = []
        calls = [lambda: 0, lambda: callers.append(threading.current_thread().name) or 1]
        assert list(run(calls)) == [0, 1]
        assert callers == [threading.current_thread().name]
    finally:
        release.set()
        for b in blockers:
            b.result()


def test_run_together_raises_the_first_error(two_cores: int) -> None:
    def fail() -> int:
        raise CorruptFileError("bad file")

    with pytest.raises(CorruptFileError, match="bad file"):
        execute.run_together([lambda: 1, fail, lambda: 3])
    assert execute.run_together([lambda: 1, lambda: 2]) == [1, 2]  # the pool still works


def test_run_ahead_overlaps_the_next_call_and_keeps_the_order(two_cores: int) -> None:
    """While the consumer holds result ``i``, call ``i + 1`` runs (a barrier only the two
    pass); results come in order, and a queued call the busy pool never started runs in
    the consumer's thread."""
    barrier = threading.Barrier(2, timeout=10)

    def meet(i: int) -> int:
        barrier.wait()
        return i

    got = execute.run_ahead([lambda: 0, lambda: meet(1), lambda: 2, lambda: 3])
    assert next(got) == 0
    barrier.wait()  # call 1 runs on the pool while the consumer still holds result 0
    assert list(got) == [1, 2, 3]
    _queued_call_runs_in_the_caller(execute.run_ahead, two_cores)


def test_run_ahead_consumer_runs_later_calls_while_it_waits(two_cores: int) -> None:
    """While call 1 runs on the pool (the other pool thread busy), the consumer runs the
    window's calls not started (2 and 3) itself; results still come in order."""
    release = threading.Event()
    started = threading.Event()
    unblock = threading.Event()
    pool = execute._read_pool(two_cores)
    blocker = pool.submit(release.wait, 10)
    where: dict[int, str] = {}

    def call(i: int) -> int:
        where[i] = threading.current_thread().name
        if i == 0:
            assert started.wait(10), "call 1 never started"  # it runs on the pool
        if i == 1:
            started.set()
            assert unblock.wait(10), "call 2 never ran"
        if i == 2:
            unblock.set()  # call 1 waits for it: only the consumer can run it
        return i

    try:
        got = list(execute.run_ahead([lambda i=i: call(i) for i in range(4)], ahead=3))
    finally:
        release.set()
        blocker.result()
    assert got == [0, 1, 2, 3]
    me = threading.current_thread().name
    assert where[0] == where[2] == where[3] == me
    assert where[1] != me


def test_run_ahead_stops_early_and_raises_the_error(two_cores: int) -> None:
    ran: list[int] = []

    def call(i: int) -> int:
        ran.append(i)
        return i

    got = execute.run_ahead([lambda i=i: call(i) for i in range(10)], ahead=1)
    assert next(got) == 0
    got.close()  # the consumer stops: at most the one call ahead ran, none after it
    assert sorted(ran) in ([0], [0, 1])

    def fail() -> int:
        raise CorruptFileError("bad file")

    with pytest.raises(CorruptFileError, match="bad file"):
        list(execute.run_ahead([lambda: 1, fail, lambda: 3]))
    assert list(execute.run_ahead([lambda: 1, lambda: 2])) == [1, 2]  # the pool still works

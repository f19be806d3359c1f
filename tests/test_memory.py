"""Memory bounds of scans and loads (issue 16, "Memory").

Peaks are measured exactly, not sampled: the test routes every Arrow allocation of the
process (the reader's threads included) through a proxy memory pool whose high-water mark
is the peak of live Arrow bytes. Proxy pools are kept alive for the whole session: buffers
allocated from one may be freed after the default pool is restored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cellstore.loader import Mapping
from cellstore.loader.execute import run_task as load_run_task
from cellstore.loader.memory import release_memory
from cellstore.reader.scan import run_task as scan_run_task
from cellstore.warehouse import connect

_POOLS: list[pa.MemoryPool] = []  # never freed (see the module docstring)


@contextmanager
def arrow_peak() -> Iterator[Callable[[], int]]:
    """Route Arrow allocations through a fresh proxy pool; yields its peak getter."""
    old = pa.default_memory_pool()
    proxy = pa.proxy_memory_pool(old)
    _POOLS.append(proxy)
    pa.set_memory_pool(proxy)
    try:
        yield proxy.max_memory
    finally:
        pa.set_memory_pool(old)


REGIONS = 4
ROWS_PER_REGION = 20_000


@pytest.fixture
def even_table(tmp_path):
    """A table of 4 regions holding the same number of equally sized cells each."""
    splits = [b"r%02d" % i for i in range(1, REGIONS)]
    t = connect(str(tmp_path / "wh")).create_table("mem", families=["cf"], splits=splits)
    n = REGIONS * ROWS_PER_REGION
    region = np.arange(n) // ROWS_PER_REGION
    keys = [b"r%02d-%08d" % (r, i) for r, i in zip(region.tolist(), range(n), strict=True)]
    rng = np.random.default_rng(7)
    data = pa.table(
        {
            "id": pa.array(keys, pa.binary()),
            "a": pa.array(rng.integers(0, 1 << 40, n)),
            "b": pa.array(rng.integers(0, 1 << 40, n)),
        }
    )
    t.load(data, mapping=Mapping.simple(row_key="id", columns=["cf:a=a:long", "cf:b=b:long"]))
    return t


@pytest.fixture
def one_thread():
    """pyarrow and the reader on one thread: a task's transient peak is then exact (with
    parallel chunks it varies run to run by more than the half result the test allows)."""
    old = pa.cpu_count()
    pa.set_cpu_count(1)
    yield
    pa.set_cpu_count(old)


def test_to_batches_holds_one_task_result_at_a_time(even_table, one_thread):
    scan = even_table.scan()
    tasks = scan.plan()
    assert len(tasks) == REGIONS
    # One task alone: its transient read and merge buffers plus its result.
    with arrow_peak() as peak:
        one = scan_run_task(scan.fs, tasks[0])
    single_peak, result = peak(), one.nbytes
    del one
    assert result > 1 << 20
    cells = 0
    with arrow_peak() as peak:
        for batch in scan.to_batches():
            cells += batch.num_rows
            del batch  # a consumer that writes each batch out and drops it
        batches_peak = peak()
    assert cells == REGIONS * ROWS_PER_REGION * 2
    # Two results alive at once (the previous one kept while the next is computed, or a
    # prefetched next one) would add a whole result to the single task's peak.
    assert batches_peak <= single_peak + result // 2, (batches_peak, single_peak, result)


def test_to_arrow_holds_every_result(even_table):
    """The contrast that shows the measurement sees held results: to_arrow keeps all."""
    scan = even_table.scan()
    with arrow_peak() as peak:
        table = scan.to_arrow()
        got = peak()
    assert got >= table.nbytes


def test_release_memory_keeps_live_buffers():
    data = pa.array(np.arange(1 << 20))
    before = pa.total_allocated_bytes()
    release_memory()
    assert pa.total_allocated_bytes() == before
    assert data.to_numpy()[-1] == (1 << 20) - 1


@pytest.fixture
def big_parquet(tmp_path):
    """One Parquet file of 8 row groups of 25,000 records."""
    n = 200_000
    rng = np.random.default_rng(3)
    ids = rng.permutation(n)
    table = pa.table(
        {
            "id": pa.array([b"k%09d" % i for i in ids.tolist()], pa.binary()),
            "v": pa.array(rng.integers(0, 1 << 40, n)),
        }
    )
    path = tmp_path / "one.parquet"
    pq.write_table(table, path, row_group_size=25_000)
    return path, table


def test_one_big_parquet_file_loads_as_parallel_tasks(tmp_path, big_parquet):
    """A single input file is split by row groups into several tasks (issue 16)."""
    path, source = big_parquet
    wh = connect(str(tmp_path / "wh"))
    t = wh.create_table("one", families=["cf"], splits=[b"k000100000"])
    mapping = Mapping.simple(row_key="id", columns=["cf:v=v:long"])
    report = t.load(str(path), mapping=mapping, memory_budget=8 << 20, workers=2)
    assert report.mode == "spill"
    assert report.inputs > 1  # tasks: one per part
    got = t.scan().to_arrow()
    assert got.num_rows == source.num_rows
    want = sorted(source.column("id").to_pylist())
    assert got.column("row").to_pylist() == want


def test_spill_task_peak_is_bounded_by_its_share_of_the_budget(tmp_path, big_parquet):
    """A spill-mode load task writing several runs holds one run's records, cells and
    writer at a time, plus its input reader: its live Arrow bytes stay within the budget
    (4 MiB here; the part is 200,000 records, several times that)."""
    from cellstore.loader.plan import LoadSettings, plan_load

    path, _ = big_parquet
    wh = connect(str(tmp_path / "wh"))
    t = wh.create_table("peak", families=["cf"], splits=[b"k000100000"])
    mapping = Mapping.simple(row_key="id", columns=["cf:v=v:long"])
    settings = LoadSettings(memory_budget=4 << 20, workers=1, key_sample=0)
    plan, _ = plan_load(
        t.metadata,
        table_url=t.fs.unstrip_protocol(t.path),
        storage_options=None,
        source=str(path),
        mapping=mapping,
        load_id="peak",
        now_ms=1,
        settings=settings,
    )
    assert plan.mode == "spill"
    peaks = []
    for task in plan.tasks[:2]:
        with arrow_peak() as peak:
            out = load_run_task(plan, task)
            peaks.append(peak())
        assert len(out.written) > 1  # several runs per task: the bound is per run
    assert max(peaks) <= settings.memory_budget, peaks

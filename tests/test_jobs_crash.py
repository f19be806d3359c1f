"""Crash tests: SIGKILL a process at random points of loads, compactions and splits.

A child process runs a sequence of loads (batch ``i`` writes rows ``b{i}-*``, every cell
valued ``i``), major and minor compactions and region splits; the parent kills it with
SIGKILL after a random delay, many times over. Afterwards the table must read exactly a
committed state (every batch is there whole or not at all, and the batches present are
0..k for some k: loads commit in order), ``verify`` must find no problem, and ``vacuum``
with a zero retention must remove every file the crash left behind (and nothing else).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import cellstore
from cellstore.core.family import Family
from cellstore.jobs.vacuum import vacuum
from cellstore.jobs.verify import verify

ROWS_PER_BATCH = 400

CHILD = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    import cellstore
    from cellstore.jobs.compact import compact
    from cellstore.jobs.regions import split

    root, start = sys.argv[1], int(sys.argv[2])
    t = cellstore.connect(root).table("t")
    print("ready", flush=True)
    for i in range(start, start + 1000):
        rows = [b"b%04d-%04d" % (i, k) for k in range({rows})]
        t.load_cells(pa.table({{
            "row": rows, "family": ["f"] * len(rows), "qualifier": [b"q"] * len(rows),
            "ts": [1] * len(rows), "value": [b"%d" % i] * len(rows),
        }}), load_id="batch-%d" % i)
        if i % 3 == 2:
            compact(t, major=(i % 2 == 0), min_files=2)
        if i % 4 == 3:
            split(t)
    """
).format(rows=ROWS_PER_BATCH)


def _committed_batches(table: cellstore.warehouse.Table) -> list[int]:
    got = table.scan().to_arrow()
    counts: dict[int, int] = {}
    for row, value in zip(
        got.column("row").to_pylist(), got.column("value").to_pylist(), strict=True
    ):
        batch = int(row[1:5])
        assert int(value) == batch
        counts[batch] = counts.get(batch, 0) + 1
    assert all(n == ROWS_PER_BATCH for n in counts.values()), counts
    batches = sorted(counts)
    assert batches == list(range(len(batches))), batches  # loads commit in order
    return batches


def _data_files(table: cellstore.warehouse.Table) -> set[str]:
    data = Path(table.path) / "data"
    if not data.exists():
        return set()
    return {str(p.relative_to(table.path)) for p in data.rglob("*.parquet")}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigkill_during_loads_compactions_and_splits(tmp_path: Path) -> None:
    root = str(tmp_path / "wh")
    table = cellstore.connect(root).create_table("t", families=[Family(name="f")])
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    rng = random.Random(20261122)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    kills = 0
    for _round in range(6):
        table.refresh()
        start = len(_committed_batches(table))
        child = subprocess.Popen(
            [sys.executable, str(script), root, str(start)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.05, 1.5))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            kills += 1
        child.wait()
        child.stdout.close()
        table.refresh()
        before = _committed_batches(table)
        report = verify(table)
        assert report.ok, report.to_dict()
        # The next run re-loads from the first missing batch: nothing half-visible stays.
        vac = vacuum(table, retention_ms=0, dry_run=False, enforce_retention=False)
        table.refresh()
        assert _data_files(table) == {e.path for e in table.files}, vac.to_dict()
        assert _committed_batches(table) == before
        assert verify(table).ok
    assert kills >= 4
    # The table still works after all that: one more load and a major compaction.
    n = len(_committed_batches(table))
    assert n > 0

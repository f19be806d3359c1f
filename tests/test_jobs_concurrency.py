"""Concurrency: loads keep committing while compactions and splits commit; nothing is lost.

Two threads with their own table handles: one loads batches (rows ``b{i}-*``), the other
runs minor and major compactions and splits in a loop. A raw ``load_cells`` whose regions
changed underneath it fails with RegionsChangedError and nothing committed; it is retried
with the same load id (idempotent). A job whose inputs were replaced fails with
JobConflictError and is simply run again later. At the end every batch is there, whole.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow as pa

import cellstore
from cellstore.core.family import Family
from cellstore.errors import JobConflictError, RegionsChangedError
from cellstore.jobs.compact import compact
from cellstore.jobs.regions import split
from cellstore.jobs.verify import verify

BATCHES = 24
ROWS = 50


def test_loads_while_compactions_and_splits_commit(tmp_path: Path) -> None:
    root = str(tmp_path / "wh")
    cellstore.connect(root).create_table("t", families=[Family(name="f")])
    done = threading.Event()
    errors: list[BaseException] = []
    stats = {"retries": 0, "conflicts": 0, "jobs": 0}

    def loader() -> None:
        t = cellstore.connect(root).table("t")
        try:
            for i in range(BATCHES):
                rows = [b"b%03d-%03d" % (i, k) for k in range(ROWS)]
                cells = pa.table(
                    {
                        "row": rows,
                        "family": ["f"] * ROWS,
                        "qualifier": [b"q"] * ROWS,
                        "ts": [1] * ROWS,
                        "value": [b"%d" % i] * ROWS,
                    }
                )
                while True:
                    try:
                        t.load_cells(cells, load_id=f"batch-{i}")
                        break
                    except RegionsChangedError:
                        stats["retries"] += 1
                        t.refresh()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            done.set()

    def maintainer() -> None:
        t = cellstore.connect(root).table("t")
        k = 0
        try:
            while not t.refresh().files:  # something to compact and split first
                time.sleep(0.01)
            while not done.is_set() or k < 6:
                k += 1
                try:
                    if k % 3 == 0:
                        split(t)
                    else:
                        compact(t, major=k % 2 == 0, min_files=2)
                    stats["jobs"] += 1
                except JobConflictError:
                    stats["conflicts"] += 1
                t.refresh()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=loader), threading.Thread(target=maintainer)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=240)
    assert not errors, errors
    assert stats["jobs"] > 0
    t = cellstore.connect(root).table("t")
    got = t.scan().to_arrow()
    batches: dict[int, int] = {}
    for row, value in zip(
        got.column("row").to_pylist(), got.column("value").to_pylist(), strict=True
    ):
        assert int(row[1:4]) == int(value)
        batches[int(value)] = batches.get(int(value), 0) + 1
    assert batches == {i: ROWS for i in range(BATCHES)}
    assert verify(t).ok
    assert len(t.regions) > 1

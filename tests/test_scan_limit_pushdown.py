"""A scan's ``limit`` stops the read early: the first rows, exactly, from fewer chunks.

HBase's ``Scan.setLimit`` returns the first ``limit`` rows of the scan and stops; a client
asking for ten rows does not read the region. Here a task cuts its range into row-aligned
chunks, and with a limit the chunks run one after the other until the result holds enough
rows. The expectations come from the full scan (itself checked against the model in
``test_multi_family_merge.py``): the limited scan is the full scan's first ``limit`` rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellstore.core.cells import run_starts
from cellstore.core.family import Family
from cellstore.filters import ValueFilter
from cellstore.reader import execute
from cellstore.warehouse import connect
from strategies import cells_table

NOW = 10_000_000


def _table(tmp_path: Path, families: list[str]) -> Any:
    """400 rows over ``families``, some deleted by a DeleteFamily marker (R5), 3 loads."""
    t = connect(str(tmp_path)).create_table(
        "t", families=[Family(name=f, max_versions=2) for f in families]
    )
    rng = np.random.default_rng(3)
    for load in range(3):
        rows, fams, quals, tss, types, values = [], [], [], [], [], []
        for i in range(400):
            for fam in families:
                if rng.random() < 0.3:
                    continue  # rows missing from some families
                row = b"r%04d" % i
                if load == 2 and i % 9 == 0:
                    rows.append(row)
                    fams.append(fam)
                    quals.append(b"")
                    tss.append(100)
                    types.append(14)  # DeleteFamily: the row's older cells go (R5)
                    values.append(b"")
                    continue
                for q in range(3):
                    rows.append(row)
                    fams.append(fam)
                    quals.append(b"q%d" % q)
                    tss.append(10 + load)
                    types.append(4)
                    values.append(b"%s/%d/%d" % (fam.encode(), i, load))
        t.load_cells(
            pa.table(
                {
                    "row": pa.array(rows, pa.binary()),
                    "family": fams,
                    "qualifier": pa.array(quals, pa.binary()),
                    "ts": pa.array(tss, pa.int64()),
                    "type": pa.array(types, pa.int8()),
                    "value": pa.array(values, pa.binary()),
                }
            ),
            now_ms=NOW,
            row_group_cells=64,
        )
    return connect(str(tmp_path)).table("t")


def _first_rows(full: pa.Table, n: int) -> pa.Table:
    starts = run_starts(full.column("row"))
    return full if len(starts) <= n else full.slice(0, int(starts[n]))


class _ChunkCounter:
    """Counts the chunks a read runs (wraps the real readers; their results are used)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real_run, real_rows = execute._ChunkedRead.run, execute._ChunkedRead.run_rows

        def run(read: Any, i: int) -> pa.Table:
            self.calls += 1
            return real_run(read, i)

        def run_rows(read: Any, i: int, **kw: Any) -> Any:
            self.calls += 1
            return real_rows(read, i, **kw)

        monkeypatch.setattr(execute._ChunkedRead, "run", run)
        monkeypatch.setattr(execute._ChunkedRead, "run_rows", run_rows)


@pytest.mark.parametrize("families", [["a"], ["a", "b", "c"]])
def test_limit_returns_the_first_rows_and_reads_fewer_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, families: list[str]
) -> None:
    monkeypatch.setattr(execute, "CHUNK_CELLS", 128)  # every task cuts many chunks
    t = _table(tmp_path, families)
    counter = _ChunkCounter(monkeypatch)
    full = t.scan(now_ms=NOW, max_versions=2).to_arrow()
    all_chunks = counter.calls
    total_rows = len(run_starts(full.column("row")))
    assert all_chunks > 20 and total_rows > 300
    for n in (1, 5, 37, total_rows - 1, total_rows, total_rows + 5):
        counter.calls = 0
        got = t.scan(now_ms=NOW, max_versions=2, limit=n).to_arrow()
        assert got.equals(_first_rows(full, n)), n
        if n <= 37:
            assert counter.calls < all_chunks // 4, (n, counter.calls, all_chunks)
    # reversed scans (R2.4) stop early from the end of the range
    backwards = t.scan(now_ms=NOW, max_versions=2, reversed=True).to_arrow()
    assert backwards.num_rows == full.num_rows
    for n in (1, 7, 37, total_rows, total_rows + 1):
        counter.calls = 0
        got = t.scan(now_ms=NOW, max_versions=2, reversed=True, limit=n).to_arrow()
        assert got.equals(_first_rows(backwards, n)), n
        if n <= 37:
            assert counter.calls < all_chunks // 4, (n, counter.calls, all_chunks)
    # a scan with a filter reads every chunk (a filter may drop rows after the read)
    only_last = ValueFilter("=", "/2", comparator="substring")  # the third load's cells
    filtered = t.scan(now_ms=NOW, filter=only_last).to_arrow()
    assert 0 < filtered.num_rows < full.num_rows
    counter.calls = 0
    limited = t.scan(now_ms=NOW, filter=only_last, limit=3).to_arrow()
    assert limited.equals(_first_rows(filtered, 3))
    assert counter.calls == all_chunks


def test_limit_over_hbase_store_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An HBase root's region (HFiles read through a cell source) stops early too."""
    from cellstore.hbase import open_table
    from test_hbase_tables import NOW as HBASE_NOW
    from test_hbase_tables import _chunky_root

    monkeypatch.setattr(execute, "SOURCE_CHUNK_CELLS", 300)
    root, _files = _chunky_root(tmp_path)
    t = open_table(str(root), "t")
    full = t.scan(now_ms=HBASE_NOW).to_arrow()
    chunks = 0
    real = execute.merge_resolve

    def counting(*args: Any, **kwargs: Any) -> pa.Table:
        nonlocal chunks
        chunks += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(execute, "merge_resolve", counting)
    t.scan(now_ms=HBASE_NOW).to_arrow()
    all_chunks, chunks = chunks, 0
    assert all_chunks > 5
    assert t.scan(now_ms=HBASE_NOW, limit=4).to_arrow().equals(_first_rows(full, 4))
    assert chunks == 1
    backwards = t.scan(now_ms=HBASE_NOW, reversed=True).to_arrow()
    chunks = 0
    got = t.scan(now_ms=HBASE_NOW, reversed=True, limit=4).to_arrow()
    assert got.equals(_first_rows(backwards, 4)) and chunks == 1


_CELL = st.tuples(
    st.integers(0, 40),  # row
    st.sampled_from(["a", "b"]),  # family
    st.integers(0, 2),  # qualifier
    st.integers(1, 6),  # ts
    st.sampled_from([4, 4, 4, 4, 8, 12, 14]),  # Put, Delete, DeleteColumn, DeleteFamily
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    loads=st.lists(st.lists(_CELL, min_size=1, max_size=60), min_size=1, max_size=3),
    limit=st.integers(1, 45),
    reverse=st.booleans(),
    raw=st.booleans(),
)
def test_limit_equals_the_first_rows_of_the_full_scan(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    loads: list[list[tuple[int, str, int, int, int]]],
    limit: int,
    reverse: bool,
    raw: bool,
) -> None:
    """Random puts and the four delete kinds (R5) over two families, in up to three
    files, read in chunks of a few cells: a limited scan, forward or reversed (R2.4), raw
    or not (R10), is exactly the full scan's first ``limit`` rows."""
    monkeypatch.setattr(execute, "CHUNK_CELLS", 8)
    root = tmp_path_factory.mktemp("limit")
    t = connect(str(root)).create_table(
        "t", families=[Family(name="a", max_versions=2), Family(name="b")]
    )
    for cells in loads:
        unique = {(r, f, q, ts, ty): None for r, f, q, ts, ty in cells}
        t.load_cells(
            cells_table(
                [
                    (
                        b"r%02d" % r,
                        f,
                        b"" if ty == 14 else b"q%d" % q,
                        ts,
                        ty,
                        b"v" if ty == 4 else b"",
                    )
                    for r, f, q, ts, ty in unique
                ]
            ),
            now_ms=NOW,
            row_group_cells=4,
        )
    t = connect(str(root)).table("t")
    options: dict[str, Any] = {"now_ms": NOW, "reversed": reverse, "raw": raw}
    full = t.scan(**options).to_arrow()
    assert t.scan(limit=limit, **options).to_arrow().equals(_first_rows(full, limit))

"""Full-scan throughput: cellstore scan vs raw pyarrow read vs DuckDB window query.

    .venv/bin/python bench/bench_scan.py --rows 1000000             # 10M cells (issue 3)
    .venv/bin/python bench/bench_scan.py --rows 1000000 --files 1 4 # both layouts, one run
    .venv/bin/python bench/bench_scan.py --rows 100000 --files 4

Table: ROWS rows x 5 qualifiers x 2 versions, one region, one family (FILES store files,
each a disjoint slice of the cells, so that a scan must merge). Each measurement: 1 warm-up
+ REPEATS runs, contenders interleaved run by run (so machine load hits all alike); min and
median reported, in cells/s of input, plus the CPU seconds (all threads) of the best run.
The load average is printed before and after: the machine is shared. Never part of the
test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cellstore.core.family import Family
from cellstore.warehouse import Table, connect


def make_cells(rows: int, seed: int = 0) -> pa.Table:
    """ROWS rows x 5 qualifiers x 2 versions (ts 2000, 1000) of 16-byte random values."""
    rng = np.random.default_rng(seed)
    n = rows * 10
    row_ids = np.repeat(np.arange(rows), 10)
    keys = np.char.add(b"user", np.char.zfill(row_ids.astype("S9"), 9))
    row = pa.array(keys.astype(object), pa.binary())
    quals = np.array([b"q0", b"q1", b"q2", b"q3", b"q4"], dtype=object)
    qual = pa.array(np.tile(np.repeat(quals, 2), rows), pa.binary())
    ts = pa.array(np.tile(np.array([2000, 1000], dtype=np.int64), rows * 5))
    values = pa.array(np.frombuffer(rng.bytes(16 * n), dtype="S16").astype(object), pa.binary())
    return pa.table(
        {
            "row": row,
            "family": pa.array(["f"] * n),
            "qualifier": qual,
            "ts": ts,
            "type": pa.array(np.full(n, 4, np.int8)),
            "value": values,
        }
    )


def make_table(root: str, name: str, rows: int, files: int, layout: str = "cells") -> Table:
    """A table holding ``make_cells(rows)`` in ``files`` store files of one region.

    ``layout`` is the family's (issue 28): ``cells`` by default, the layout these figures
    have always measured (``auto`` would write column files for the fresh load).
    """
    t = connect(root).create_table(name, families=[Family(name="f", max_versions=3, layout=layout)])
    cells = make_cells(rows)
    n = cells.num_rows
    for i in range(files):
        t.load_cells(cells.filter(pa.array(np.arange(n) % files == i)), row_group_cells=65536)
    return t


def interleaved(
    fns: dict[str, Callable[[], object]], repeats: int
) -> dict[str, list[tuple[float, float]]]:
    """(wall, cpu) seconds of each contender, one warm-up each, then round-robin."""
    for fn in fns.values():
        fn()
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - t0, time.process_time() - c0))
    return out


def bench(root: str, rows: int, files: int, repeats: int) -> None:
    t = make_table(root, f"bench{files}", rows, files)
    n = rows * 10
    paths = [t.file_path(f) for f in t.files]
    fns: dict[str, Callable[[], object]] = {
        "pyarrow.parquet.read_table": lambda: [pq.read_table(p) for p in paths],
        "cellstore scan().to_arrow() (latest version)": lambda: t.scan().to_arrow(),
    }
    try:
        import duckdb

        con = duckdb.connect()
        sources = ", ".join(f"'{p}'" for p in paths)
        q = (
            f"select row, qualifier, ts, value from (select *, row_number() over "
            f"(partition by row, qualifier order by ts desc) as rn from "
            f"read_parquet([{sources}])) where rn = 1"
        )
        fns["duckdb window query (latest version)"] = lambda: con.sql(q).to_arrow_table()
    except ImportError:
        pass
    results = interleaved(fns, repeats)
    print(
        f"cells={n:,} files={files} rows={rows:,} repeats={repeats} "
        f"threads={pa.cpu_count()} load={os.getloadavg()[0]:.2f}"
    )
    base = min(w for w, _ in results["pyarrow.parquet.read_table"])
    cs = min(w for w, _ in results["cellstore scan().to_arrow() (latest version)"])
    for name, runs in results.items():
        best, cpu = min(runs)
        median = statistics.median(w for w, _ in runs)
        print(
            f"  {name:46s} min {best:6.3f}s  median {median:6.3f}s  cpu {cpu:6.2f}s  "
            f"{n / best / 1e6:6.2f} M cells/s  ratio-to-raw {base / best:5.2f}  "
            f"cellstore-speedup {best / cs:5.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, nargs="+", default=[1])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as root:
        for files in args.files:
            bench(root, args.rows, files, args.repeats)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

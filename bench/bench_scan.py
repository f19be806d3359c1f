"""Full-scan throughput: cellstore scan vs raw pyarrow read vs DuckDB window query.

    .venv/bin/python bench/bench_scan.py --rows 1000000          # 10M cells (issue 3 target)
    .venv/bin/python bench/bench_scan.py --rows 100000 --files 4

Table: ROWS rows x 5 qualifiers x 2 versions, one region, one family (FILES store files).
Each measurement: 1 warm-up + REPEATS runs; min and median reported, in cells/s of input.
Never part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cellstore.core.family import Family
from cellstore.warehouse import connect


def make_cells(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = rows * 10
    row_ids = np.repeat(np.arange(rows), 10)
    keys = np.char.add(b"user", np.char.zfill(row_ids.astype("S9"), 9))
    row = pa.array(keys.astype(object), pa.binary())
    quals = np.array([b"q0", b"q1", b"q2", b"q3", b"q4"], dtype=object)
    qual = pa.array(np.tile(np.repeat(quals, 2), rows), pa.binary())
    ts = pa.array(np.tile(np.array([2000, 1000], dtype=np.int64), rows * 5))
    values = pa.array(np.frombuffer(rng.bytes(16 * n), dtype="S16").astype(object), pa.binary())
    return pa.table({"row": row, "family": pa.array(["f"] * n), "qualifier": qual, "ts": ts,
                     "type": pa.array(np.full(n, 4, np.int8)), "value": values})


def timed(fn, repeats: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="cellstore-bench-")
    wh = connect(root)
    t = wh.create_table("bench", families=[Family(name="f", max_versions=3)])
    cells = make_cells(args.rows)
    n = cells.num_rows
    # FILES loads, each a disjoint slice of the versions (so a scan must merge).
    for i in range(args.files):
        t.load_cells(cells.filter(pa.array(np.arange(n) % args.files == i)), row_group_cells=65536)
    paths = [t.file_path(f) for f in t.files]
    results = {}
    results["pyarrow.parquet.read_table"] = timed(
        lambda: [pq.read_table(p) for p in paths], args.repeats)
    results["cellstore scan().to_arrow() (latest version)"] = timed(
        lambda: t.scan().to_arrow(), args.repeats)
    try:
        import duckdb

        con = duckdb.connect()
        files = ", ".join(f"'{p}'" for p in paths)
        q = (f"select row, qualifier, ts, value from (select *, row_number() over "
             f"(partition by row, qualifier order by ts desc) as rn from read_parquet([{files}])) "
             f"where rn = 1")
        results["duckdb window query (latest version)"] = timed(
            lambda: con.sql(q).to_arrow_table(), args.repeats)
    except ImportError:
        pass
    print(f"cells={n:,} files={args.files} rows={args.rows:,}")
    base = min(results["pyarrow.parquet.read_table"])
    for name, runs in results.items():
        best = min(runs)
        print(f"{name:50s} min {best:7.3f}s  median {statistics.median(runs):7.3f}s  "
              f"{n / best / 1e6:6.2f} M cells/s  ratio-to-raw {base / best:5.2f}")


if __name__ == "__main__":
    main()

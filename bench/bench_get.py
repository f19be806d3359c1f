"""Point-read latency: ``Table.get(row)`` on tables of two sizes (issue 3, target 4).

    .venv/bin/python bench/bench_get.py                      # 1M and 10M cells
    .venv/bin/python bench/bench_get.py --rows 100000 1000000 --files 4

Tables have the shape of bench_scan.py (ROWS rows x 5 qualifiers x 2 versions, one region,
one family, FILES store files). Each table gets GETS point reads of random rows, a quarter
of them absent (keys between and after the stored ones, which the row-group statistics do
not rule out, so the Bloom filter has to), after WARMUP reads. Reads of the two tables are
interleaved so machine load hits both alike. Latency per get in ms: median, p90, p99.
Targets: median under 20 ms, and the larger table's median within 2x of the smaller's.
Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
from bench_scan import make_table

from cellstore.warehouse import Table


def keys_for(rows: int, n: int, seed: int) -> list[bytes]:
    """``n`` random row keys: three quarters present, one quarter absent."""
    rng = np.random.default_rng(seed)
    present = [b"user%09d" % i for i in rng.integers(0, rows, n - n // 4)]
    # Absent: same prefix, inside the stored key range (a 10th digit), so only the
    # Bloom filter (not the row-group min/max) can rule them out.
    absent = [b"user%09d5" % i for i in rng.integers(0, rows, n // 4)]
    keys = present + absent
    rng.shuffle(keys)  # type: ignore[arg-type]
    return keys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--files", type=int, default=1)
    ap.add_argument("--gets", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument(
        "--layout", default="cells", help="the family's layout: cells (default), auto, columns"
    )
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as root:
        tables: dict[int, Table] = {}
        for rows in args.rows:
            tables[rows] = make_table(root, f"get{rows}", rows, args.files, args.layout)
        keys = {rows: keys_for(rows, args.gets, seed=rows) for rows in args.rows}
        for rows, t in tables.items():
            for key in keys_for(rows, args.warmup, seed=1):
                t.get(key)
        latency: dict[int, list[float]] = {rows: [] for rows in args.rows}
        found: dict[int, int] = dict.fromkeys(args.rows, 0)
        for i in range(args.gets):
            for rows, t in tables.items():
                t0 = time.perf_counter()
                result = t.get(keys[rows][i])
                latency[rows].append((time.perf_counter() - t0) * 1e3)
                found[rows] += result.num_rows > 0
    print(f"gets={args.gets} per table, files={args.files}, load={os.getloadavg()[0]:.2f}")
    medians = {}
    for rows, lat in latency.items():
        lat.sort()
        medians[rows] = statistics.median(lat)
        print(
            f"  cells={rows * 10:>11,}  median {medians[rows]:6.2f} ms  "
            f"p90 {lat[int(0.9 * len(lat))]:6.2f} ms  p99 {lat[int(0.99 * len(lat))]:6.2f} ms"
            f"  found {found[rows]}/{args.gets}"
        )
    small, large = min(medians), max(medians)
    print(
        f"  median ratio {large * 10:,} / {small * 10:,} cells: "
        f"{medians[large] / medians[small]:.2f}x (target <= 2x)"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

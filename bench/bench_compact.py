"""Major compaction throughput vs raw pyarrow read + sort + write of the same cells (issue 5).

    .venv/bin/python bench/bench_compact.py --rows 1000000   # 10M cells in 4 store files
    .venv/bin/python bench/bench_compact.py --rows 100000    # 1M cells, quick

Table: one region, one family (VERSIONS 3), ROWS rows x 5 qualifiers x 2 versions in 4
store files, each a disjoint interleaved slice (so the compaction must merge all four and
keeps every cell: the output is the same 10 cells per row the raw baseline writes).
Baseline: ``pq.read_table`` of the 4 files, ``sort_by`` (row, qualifier asc, ts desc), one
``pq.write_table`` (zstd, same row-group size). Contender: ``cellstore.jobs.compact(table,
major=True)`` on a fresh copy of the table each run (the compaction replaces its inputs).
Runs are interleaved; min and median reported in input cells/s, with the load average:
the machine is shared. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from cellstore.jobs.compact import compact
from cellstore.warehouse import connect

try:
    from bench_scan import make_table
except ImportError:  # pragma: no cover - run from the repo root
    from bench.bench_scan import make_table


def raw_compaction(paths: list[str], out: str) -> None:
    """The raw floor: read every file, sort in cell order, write one zstd Parquet file."""
    cells = pa.concat_tables([pq.read_table(p) for p in paths])
    ordered = cells.sort_by(
        [
            ("row", "ascending"),
            ("qualifier", "ascending"),
            ("ts", "descending"),
            ("type", "descending"),
        ]
    )
    pq.write_table(ordered, out, compression="zstd", row_group_size=65536)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.rows * 10
    base = tempfile.mkdtemp(prefix="cellstore-bench-compact-")
    print(f"load average before: {os.getloadavg()}")
    t0 = time.perf_counter()
    template = os.path.join(base, "template")
    table = make_table(template, "c", args.rows, 4)
    paths = [table.file_path(f) for f in table.files]
    print(f"built {n:,} cells in {len(paths)} files in {time.perf_counter() - t0:.1f}s")
    timings: dict[str, list[float]] = {"raw read+sort+write": [], "cellstore major compact": []}
    for i in range(args.repeats):
        out = os.path.join(base, f"raw-{i}.parquet")
        t0 = time.perf_counter()
        raw_compaction(paths, out)
        timings["raw read+sort+write"].append(time.perf_counter() - t0)
        os.remove(out)

        copy = os.path.join(base, f"copy-{i}")
        shutil.copytree(template, copy)
        t = connect(copy).table("c")
        t0 = time.perf_counter()
        report = compact(t, major=True)
        timings["cellstore major compact"].append(time.perf_counter() - t0)
        assert report.output_cells == n, report.to_dict()
        shutil.rmtree(copy)
    print(f"load average after: {os.getloadavg()}")
    best = {}
    for name, secs in timings.items():
        best[name] = min(secs)
        print(
            f"{name:28s} min {min(secs):6.2f}s ({n / min(secs) / 1e6:5.2f} M cells/s)  "
            f"median {statistics.median(secs):6.2f}s"
        )
    ratio = best["raw read+sort+write"] / best["cellstore major compact"]
    print(f"cellstore / raw throughput: {ratio:.2f}x (target >= 0.5x)")
    shutil.rmtree(base)


if __name__ == "__main__":
    main()

"""HBase import benchmark (issue 15): convert vs read in place, side by side in one run.

Usage::

    .venv/bin/python bench/bench_hbase_import.py                  # 4M cells
    .venv/bin/python bench/bench_hbase_import.py --rows 25000     # 1M cells, quick

A synthetic HBase 2.x root directory (written once with ``write_hfile``, compression
NONE): one table, 4 regions, one family (``VERSIONS=4``), 2 HFiles per store (two
flushes: the same rows and columns, the second file 2 versions newer), each cell a
16-byte row, a 2-byte qualifier and an 8-byte value. ``--rows`` rows per file, so the
table holds ``4 * 2 * rows * 10`` cells. Measured, best of ``--runs``:

* the full scan of the HBase table read in place (``open_table(...).scan()``, every
  version the family keeps: all cells);
* the import (``import_table``: read every HFile, write Parquet store files, one commit),
  on local threads;
* the same full scan on the imported cellstore table.

Results go to docs/hbase.md by hand. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REGIONS = 4
FILES_PER_STORE = 2


def best(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def count(scan: Any) -> int:
    return sum(b.num_rows for b in scan.to_batches())


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import hbase_fixtures as hf
    from cellstore import connect
    from cellstore.hbase import import_table, open_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000, help="rows per HFile")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = args.rows
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-import-") as d:
        tmp = Path(d)
        splits = [f"user{i * rows:012d}".encode() for i in range(1, REGIONS)]
        stores = {
            (i, "f"): [
                hf.HFileSpec(
                    f"{k + 1:032x}",
                    hf.bench_cells(rows, offset=i * rows, seed=10 * i + k, ts_base=2000 * k),
                    max_seq_id=k + 1,
                )
                for k in range(FILES_PER_STORE)
            ]
            for i in range(REGIONS)
        }
        t0 = time.perf_counter()
        spec = hf.write_root2(tmp, families={"f": {"VERSIONS": "4"}}, splits=splits, stores=stores)
        hfile_bytes = sum(p.stat().st_size for p in spec.root.rglob("*") if p.is_file())
        print(f"wrote the HBase root in {time.perf_counter() - t0:.1f}s ({hfile_bytes >> 20} MiB)")

        src = open_table(str(spec.root), "t")
        in_place, cells = best(lambda: count(src.scan(max_versions=4)), args.runs)

        def run_import() -> Any:
            wh_dir = tmp / "wh"
            shutil.rmtree(wh_dir, ignore_errors=True)
            return import_table(str(spec.root), "t", connect(wh_dir), "t")

        imported, report = best(run_import, args.runs)
        table = connect(tmp / "wh").table("t")
        parquet_bytes = sum(f.size for f in table.files)
        converted, cells2 = best(lambda: count(table.scan(max_versions=4)), args.runs)
        assert cells == cells2 == report.cells, (cells, cells2, report.cells)

    def rate(s: float) -> str:
        return f"{cells / s / 1e6:.2f} M cells/s"

    print(f"\n{cells:,} cells, {REGIONS} regions x {FILES_PER_STORE} HFiles (NONE)")
    print(
        f"HFiles {hfile_bytes >> 20} MiB -> Parquet (family compression NONE) "
        f"{parquet_bytes >> 20} MiB, {report.files} store files"
    )
    print("| step | seconds | throughput |")
    print("|---|---|---|")
    print(f"| full scan, HBase table read in place | {in_place:.2f} | {rate(in_place)} |")
    print(f"| import (convert to Parquet, commit) | {imported:.2f} | {rate(imported)} |")
    print(f"| full scan, imported cellstore table | {converted:.2f} | {rate(converted)} |")
    print(
        f"\nimport = {in_place / imported:.2f}x an in-place scan; imported table scans "
        f"{in_place / converted:.2f}x as fast as the HBase files in place"
    )


if __name__ == "__main__":
    main()

"""Peak memory of a full scan: ``to_batches()`` iterated vs ``to_arrow()`` (issue 3, 5).

    .venv/bin/python bench/bench_memory.py                        # 1M and 10M cells
    .venv/bin/python bench/bench_memory.py --rows 1000000 --budget 67108864

Tables have the shape of bench_scan.py (ROWS rows x 5 qualifiers x 2 versions, one region,
one family, FILES store files). Every case runs in a fresh subprocess, which reports its
RSS high-water mark (``VmHWM`` in ``/proc/self/status``) and its RSS just before the scan
(after imports and opening the table): "peak - base" is what the scan itself added. The
``to_batches()`` case keeps only a running count of the batches' rows, so its peak is what
one task (one region, or one piece of a region cut by the planner's memory budget) costs;
``to_arrow()`` holds the whole result. With ``--budget`` the scans also pass
``memory_budget`` (the planner's per-task budget; when the installed version has no such
option the case is skipped). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time

from bench_scan import make_table

from cellstore.warehouse import Table, connect


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def child(root: str, name: str, mode: str, budget: int | None) -> None:
    """Run one case and print a JSON line with the RSS figures (MiB)."""
    t = connect(root).table(name)
    kwargs = {"memory_budget": budget} if budget else {}
    scan = t.scan(**kwargs)  # type: ignore[arg-type]
    tasks = len(scan.plan())
    base = _status_kib("VmRSS")
    t0 = time.perf_counter()
    cells = batches = 0
    if mode == "to_batches":
        for batch in scan.to_batches():
            cells += batch.num_rows
            batches += 1
            del batch  # a consumer that writes each batch out and drops it
    else:
        table = scan.to_arrow()
        cells, batches = table.num_rows, 1
    seconds = time.perf_counter() - t0
    peak = _status_kib("VmHWM")
    print(json.dumps({"base": base / 1024, "peak": peak / 1024, "cells": cells,
                      "batches": batches, "tasks": tasks, "seconds": seconds}))


def run_case(root: str, name: str, mode: str, budget: int | None) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", root, name, mode, str(budget or 0)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def supports_budget() -> bool:
    return "memory_budget" in inspect.signature(Table.scan).parameters


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, root, name, mode, budget = sys.argv
        child(root, name, mode, int(budget) or None)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--files", type=int, default=1)
    ap.add_argument("--budget", type=int, nargs="*", default=[64 << 20],
                    help="extra memory_budget values to measure (bytes)")
    args = ap.parse_args()
    budgets: list[int | None] = [None]
    if supports_budget():
        budgets += args.budget
    else:
        print("Table.scan has no memory_budget option: measuring the default only")
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as root:
        for rows in args.rows:
            name = f"mem{rows}"
            t = make_table(root, name, rows, args.files)
            data_mib = sum(f.size for f in t.files) / 2**20
            print(f"cells={rows * 10:,} files={args.files} store files {data_mib:.0f} MiB")
            for budget in budgets:
                label = f"budget={budget / 2**20:g} MiB" if budget else "default budget"
                for mode in ("to_batches", "to_arrow"):
                    r = run_case(root, name, mode, budget)
                    print(f"  {mode:10s} {label:16s} tasks {r['tasks']:3.0f}  "
                          f"batches {r['batches']:3.0f}  base {r['base']:6.0f} MiB  "
                          f"peak {r['peak']:6.0f} MiB  scan added {r['peak'] - r['base']:6.0f}"
                          f" MiB  ({r['seconds']:.2f} s, {r['cells']:,.0f} cells)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

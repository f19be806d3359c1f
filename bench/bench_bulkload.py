"""Bulk-load output benchmark (issue 15): HFiles for HBase vs our own load, and scaling.

Usage::

    .venv/bin/python bench/bench_bulkload.py                  # 10M cells (~3-6 min)
    .venv/bin/python bench/bench_bulkload.py --rows 100000 --runs 1   # quick check

The input is bench_load's: a Parquet file of ROWS rows x 10 long columns (16-byte keys,
shuffled), mapped to one family, routed to 8 regions. In one run, side by side:

* **load vs hfile_output** (local threads): ``Table.load`` into a cellstore table (Parquet
  store files, one commit) against the same ``Table.load(..., hfile_output=DIR)`` (HFiles
  v3.3 NONE, ROW Bloom, ``completebulkload`` layout). Ratio = HFile cells/s / load cells/s
  (target >= 0.8).
* **1 vs 2 workers**: ``hfile_output`` of the same input cut into 8 Parquet files (8 input
  tasks, 8 region tasks) on a ``distributed.LocalCluster`` with 1 and with 2 worker
  processes (one Dask thread each; ``--pinned`` also pins pyarrow to one thread per
  worker), both clusters started up front, runs interleaved after one warm-up round.
  Ratio = best time(1) / best time(2) (target >= 1.6).

Best of ``--runs`` for each; results go to docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import bench_load


def _table(root: Path, rows: int) -> Any:
    from cellstore.warehouse import connect

    if root.exists():
        shutil.rmtree(root)
    wh = connect(str(root))
    return wh.create_table("bench:bulk", families=["cf"], splits=bench_load.split_keys(rows))


def load_once(path: Path, tmp: Path, rows: int, *, hfiles: bool, **kwargs: Any) -> dict:
    t = _table(tmp / "wh", rows)
    out = tmp / "bulk"
    if out.exists():
        shutil.rmtree(out)
    extra = {"hfile_output": str(out)} if hfiles else {}
    start = time.perf_counter()
    source = str(path)
    report = t.load(source, mapping=bench_load.mapping(), key_advice="off", **extra, **kwargs)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "cells": report.cells,
        "files": report.files,
        "bytes": report.bytes,
        "mode": report.mode,
    }


def part_vs_load(path: Path, tmp: Path, rows: int, runs: int) -> dict:
    loads, hfiles = [], []
    for _ in range(runs):  # interleaved, so both see the same machine load
        loads.append(load_once(path, tmp, rows, hfiles=False))
        hfiles.append(load_once(path, tmp, rows, hfiles=True))
    best_l = min(loads, key=lambda r: r["seconds"])
    best_h = min(hfiles, key=lambda r: r["seconds"])
    out = {
        "rows": rows,
        "cells": best_l["cells"],
        "load_seconds": [round(r["seconds"], 3) for r in loads],
        "hfile_seconds": [round(r["seconds"], 3) for r in hfiles],
        "load_cells_per_s": round(best_l["cells"] / best_l["seconds"]),
        "hfile_cells_per_s": round(best_h["cells"] / best_h["seconds"]),
        "ratio": round(best_l["seconds"] / best_h["seconds"], 3),
        "load_files": best_l["files"],
        "hfile_files": best_h["files"],
        "load_bytes": best_l["bytes"],
        "hfile_bytes": best_h["bytes"],
        "mode": best_h["mode"],
    }
    print(json.dumps({"load_vs_hfile_output": out}), flush=True)
    return out


def split_input(path: Path, parts: int) -> str:
    """The input cut into ``parts`` Parquet files (one input task each); returns a glob."""
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    d = path.parent / f"parts-{path.stem}"
    d.mkdir(exist_ok=True)
    step = -(-t.num_rows // parts)
    for i in range(parts):
        pq.write_table(
            t.slice(i * step, step),
            d / f"part-{i:02d}.parquet",
            row_group_size=131_072,
            compression="zstd",
        )
    return str(d / "*.parquet")


def _pin() -> int:
    import pyarrow as pa

    pa.set_cpu_count(1)
    return pa.cpu_count()


def part_workers(path: Path, tmp: Path, rows: int, runs: int, *, pinned: bool) -> dict:
    """1 vs 2 worker processes (both clusters up front, runs interleaved, one warm-up)."""
    from distributed import Client, LocalCluster

    source = split_input(path, 8)
    clusters = {
        n: LocalCluster(
            n_workers=n,
            processes=True,
            threads_per_worker=1,
            scheduler_port=0,
            dashboard_address=":0",
        )
        for n in (1, 2)
    }
    clients = {n: Client(c) for n, c in clusters.items()}
    res: dict[int, list[float]] = {1: [], 2: []}
    try:
        if pinned:
            for c in clients.values():
                c.run(_pin)
        for k in range(runs + 1):
            for n in (1, 2):
                s = load_once(Path(source), tmp, rows, hfiles=True, client=clients[n])["seconds"]
                if k:  # the first round warms the workers up
                    res[n].append(s)
    finally:
        for c in clients.values():
            c.close()
        for cl in clusters.values():
            cl.close()
    out = {
        "rows": rows,
        "input_files": 8,
        "pinned": pinned,
        "one_worker_seconds": [round(s, 3) for s in res[1]],
        "two_workers_seconds": [round(s, 3) for s in res[2]],
        "one_worker_cells_per_s": round(rows * 10 / min(res[1])),
        "two_workers_cells_per_s": round(rows * 10 / min(res[2])),
        "speedup": round(min(res[1]) / min(res[2]), 3),
    }
    print(json.dumps({"workers": out}), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["all", "load", "workers"], default="all")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument(
        "--pinned",
        action="store_true",
        help="pyarrow.set_cpu_count(1) on every worker (parallelism from processes)",
    )
    args = ap.parse_args()
    print(json.dumps({"cpus": os.cpu_count(), "loadavg": os.getloadavg()}), flush=True)
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as d:
        tmp = Path(d)
        path = tmp / f"in-{args.rows}.parquet"
        bench_load.make_input(path, args.rows)
        if args.part in ("all", "load"):
            part_vs_load(path, tmp, args.rows, args.runs)
        if args.part in ("all", "workers"):
            part_workers(path, tmp, args.rows, args.runs, pinned=args.pinned)
    print(json.dumps({"loadavg_end": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()

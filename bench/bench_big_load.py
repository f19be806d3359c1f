"""A 100M-cell load with the default memory budget (issue 16): peak RSS, time, files.

Usage::

    .venv/bin/python bench/bench_big_load.py                  # 10M rows x 10 columns = 100M cells
    .venv/bin/python bench/bench_big_load.py --rows 1000000   # 10M cells, quick

Input: bench_load's shape (16-byte shuffled keys, 10 long columns), written as FILES
Parquet files so that generating it never holds the whole input. The load runs in a fresh
child process with the default ``memory_budget`` (1 GiB) and the local threaded scheduler,
into a table pre-split into REGIONS regions. Reported: wall time, cells/s, the child's
peak RSS (VmHWM) and that of an identical child that only opens the table (the fixed
overhead of Python + pyarrow + cellstore), the load mode (in-memory or spill), and the
store files the load committed (no region may end up with thousands of small files).
Never part of the test suite; results go to docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))

import bench_load

_CHILD = r"""
import json, sys, time
from collections import Counter
from pathlib import Path
sys.path.insert(0, {bench!r})
import bench_load
from cellstore.warehouse import connect
root, source, rows, regions, do_load = Path({root!r}), {source!r}, {rows}, {regions}, {do_load}
wh = connect(str(root))
t = wh.create_table("bench:big", families=["cf"], splits=bench_load.split_keys(rows, regions))
out = {{"mode": None, "files": 0, "cells": 0, "seconds": 0.0, "max_files_per_region": 0}}
if do_load:
    start = time.perf_counter()
    report = t.load(source, mapping=bench_load.mapping(), key_advice="off")
    out["seconds"] = time.perf_counter() - start
    t.refresh()
    per_region = Counter(f.region for f in t.files)
    out.update(mode=report.mode, files=report.files, cells=report.cells,
               max_files_per_region=max(per_region.values()))
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
out["hwm_kib"] = int(hwm)
print(json.dumps(out))
"""


def make_inputs(directory: Path, rows: int, files: int, *, seed: int = 5) -> str:
    """``rows`` shuffled records in ``files`` Parquet files; returns their glob."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows)
    for i, part in enumerate(np.array_split(ids, files)):
        cols = {"id": pa.array(np.char.mod("user%011d", part).astype(object), pa.string())}
        for c in bench_load.COLUMNS:
            cols[c] = pa.array(rng.integers(0, 1 << 40, len(part)), pa.int64())
        pq.write_table(
            pa.table(cols),
            directory / f"part-{i:03d}.parquet",
            row_group_size=131_072,
            compression="zstd",
        )
    return str(directory / "*.parquet")


def child(root: Path, source: str, rows: int, regions: int, *, do_load: bool) -> dict:
    code = _CHILD.format(
        bench=str(Path(__file__).parent),
        root=str(root),
        source=source,
        rows=rows,
        regions=regions,
        do_load=do_load,
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000, help="input rows (x10 cells)")
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--regions", type=int, default=16)
    args = ap.parse_args()
    print(json.dumps({"cpus": os.cpu_count(), "loadavg": os.getloadavg()}), flush=True)
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-big-") as d:
        tmp = Path(d)
        (tmp / "in").mkdir()
        source = make_inputs(tmp / "in", args.rows, args.files)
        base = child(tmp / "wh-base", source, args.rows, args.regions, do_load=False)
        load = child(tmp / "wh", source, args.rows, args.regions, do_load=True)
    cells = load["cells"]
    print(
        json.dumps(
            {
                "big_load": {
                    "rows": args.rows,
                    "cells": cells,
                    "regions": args.regions,
                    "seconds": round(load["seconds"], 1),
                    "cells_per_s": round(cells / load["seconds"]) if load["seconds"] else None,
                    "peak_rss_mib": round(load["hwm_kib"] / 1024, 1),
                    "baseline_rss_mib": round(base["hwm_kib"] / 1024, 1),
                    "above_baseline_mib": round((load["hwm_kib"] - base["hwm_kib"]) / 1024, 1),
                    "mode": load["mode"],
                    "files": load["files"],
                    "max_files_per_region": load["max_files_per_region"],
                }
            }
        ),
        flush=True,
    )
    print(json.dumps({"loadavg_end": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()

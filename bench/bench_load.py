"""Bulk-load benchmark (issue 4): throughput vs raw pyarrow, scaling, and peak memory.

Usage::

    .venv/bin/python bench/bench_load.py                 # all three parts (~3-5 min)
    .venv/bin/python bench/bench_load.py --part throughput --rows 1000000
    .venv/bin/python bench/bench_load.py --part memory

* throughput: a Parquet file of ROWS rows x 10 long columns (16-byte keys, shuffled) is
  loaded into a 1-family, 8-region table; the same cells are sorted by
  (row, qualifier, ts desc, type desc) and written as one zstd Parquet file with raw
  pyarrow, in the same run. Ratio = cellstore cells/s / raw cells/s (target >= 0.6).
* scaling: the same load at ROWS/10 and ROWS rows (target: 10x cells within 12x time).
* memory: a subprocess loads an input 4x larger than its memory budget and reports its
  peak RSS (VmHWM) next to the peak RSS of a subprocess that only imports and opens the
  table (the fixed overhead).

Results go to docs/performance.md by hand, with the date and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

COLUMNS = [f"c{i}" for i in range(10)]


def make_input(path: Path, rows: int, *, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows)
    keys = pa.array(np.char.mod("user%011d", ids).astype(object), pa.string())
    cols = {"id": keys}
    for c in COLUMNS:
        cols[c] = pa.array(rng.integers(0, 1 << 40, rows), pa.int64())
    pq.write_table(pa.table(cols), path, row_group_size=131_072, compression="zstd")


def mapping():
    from cellstore.loader import Mapping

    return Mapping.simple(row_key="id", columns=[f"cf:{c}={c}:long" for c in COLUMNS])


def split_keys(rows: int, regions: int = 8) -> list[bytes]:
    return [b"user%011d" % (rows * i // regions) for i in range(1, regions)]


def raw_baseline(path: Path, out: Path) -> tuple[float, int]:
    """Seconds to sort + write the same cells with raw pyarrow (cell building excluded)."""
    t = pq.read_table(path)
    n = t.num_rows
    ts = 1_700_000_000_000
    rows = pc.take(t.column("id").cast(pa.binary()), pa.array(np.repeat(np.arange(n), 10)))
    quals = pa.array(np.tile(np.array([c.encode() for c in COLUMNS], dtype=object), n), pa.binary())
    values = []
    for c in COLUMNS:
        v = t.column(c).to_numpy().astype(">i8")
        values.append(v)
    vals = np.stack(values, axis=1).reshape(-1).view(np.uint8)
    offsets = pa.array(np.arange(0, 8 * n * 10 + 1, 8, dtype=np.int32))
    value = pa.BinaryArray.from_buffers(
        pa.binary(), n * 10, [None, offsets.buffers()[1], pa.py_buffer(vals)]
    )
    cells = pa.table(
        {
            "row": rows,
            "qualifier": quals,
            "ts": pa.array(np.full(n * 10, ts, np.int64)),
            "type": pa.array(np.full(n * 10, 4, np.int8)),
            "value": value,
        }
    )
    start = time.perf_counter()
    order = pc.sort_indices(
        cells,
        sort_keys=[
            ("row", "ascending"),
            ("qualifier", "ascending"),
            ("ts", "descending"),
            ("type", "descending"),
        ],
    )
    sorted_cells = cells.take(order)
    pq.write_table(sorted_cells, out, compression="zstd")
    return time.perf_counter() - start, cells.num_rows


def load_once(path: Path, root: Path, rows: int, **kwargs) -> dict:
    from cellstore.warehouse import connect

    if root.exists():
        shutil.rmtree(root)
    wh = connect(str(root))
    t = wh.create_table("bench:load", families=["cf"], splits=split_keys(rows))
    start = time.perf_counter()
    report = t.load(str(path), mapping=mapping(), **kwargs)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "cells": report.cells,
        "files": report.files,
        "mode": report.mode,
        "bytes": report.bytes,
    }


def part_throughput(tmp: Path, rows: int, runs: int) -> dict:
    path = tmp / f"in-{rows}.parquet"
    make_input(path, rows)
    raw = [raw_baseline(path, tmp / "raw.parquet") for _ in range(runs)]
    raw_s = min(s for s, _ in raw)
    cells = raw[0][1]
    loads = [load_once(path, tmp / "wh", rows) for _ in range(runs)]
    best = min(loads, key=lambda r: r["seconds"])
    out = {
        "rows": rows,
        "cells": cells,
        "raw_seconds": [round(s, 3) for s, _ in raw],
        "raw_cells_per_s": round(cells / raw_s),
        "load_seconds": [round(r["seconds"], 3) for r in loads],
        "load_cells_per_s": round(best["cells"] / best["seconds"]),
        "ratio": round((best["cells"] / best["seconds"]) / (cells / raw_s), 3),
        "files": best["files"],
        "mode": best["mode"],
        "bytes": best["bytes"],
    }
    print(json.dumps({"throughput": out}), flush=True)
    return out


def part_scaling(tmp: Path, rows: int, runs: int) -> dict:
    res = {}
    for r in (rows // 10, rows):
        path = tmp / f"in-{r}.parquet"
        if not path.exists():
            make_input(path, r)
        res[r] = min(load_once(path, tmp / "wh", r)["seconds"] for _ in range(runs))
    out = {
        "small_rows": rows // 10,
        "small_seconds": round(res[rows // 10], 3),
        "big_rows": rows,
        "big_seconds": round(res[rows], 3),
        "time_ratio": round(res[rows] / res[rows // 10], 2),
    }
    print(json.dumps({"scaling": out}), flush=True)
    return out


_CHILD = r"""
import json, sys, time, resource
from pathlib import Path
sys.path.insert(0, {bench!r})
import bench_load
from cellstore.warehouse import connect
root, path, rows, budget, do_load = Path({root!r}), Path({path!r}), {rows}, {budget}, {do_load}
wh = connect(str(root))
t = wh.create_table("bench:mem", families=["cf"], splits=bench_load.split_keys(rows))
report = None
if do_load:
    report = t.load(str(path), mapping=bench_load.mapping(), memory_budget=budget)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({{"hwm_kib": int(hwm), "mode": report.mode if report else None,
                  "files": report.files if report else 0,
                  "cells": report.cells if report else 0}}))
"""


def _child(tmp: Path, path: Path, rows: int, budget: int, do_load: bool) -> dict:
    root = tmp / ("wh-mem" if do_load else "wh-base")
    if root.exists():
        shutil.rmtree(root)
    code = _CHILD.format(
        bench=str(Path(__file__).parent),
        root=str(root),
        path=str(path),
        rows=rows,
        budget=budget,
        do_load=do_load,
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def part_memory(tmp: Path, rows: int) -> dict:
    path = tmp / f"mem-{rows}.parquet"
    make_input(path, rows, seed=3)
    arrow_bytes = pq.read_table(path).nbytes
    budget = arrow_bytes // 4
    base = _child(tmp, path, rows, budget, False)
    load = _child(tmp, path, rows, budget, True)
    out = {
        "rows": rows,
        "input_arrow_mib": round(arrow_bytes / 2**20, 1),
        "budget_mib": round(budget / 2**20, 1),
        "baseline_peak_mib": round(base["hwm_kib"] / 1024, 1),
        "load_peak_mib": round(load["hwm_kib"] / 1024, 1),
        "above_baseline_mib": round((load["hwm_kib"] - base["hwm_kib"]) / 1024, 1),
        "mode": load["mode"],
        "files": load["files"],
        "cells": load["cells"],
    }
    print(json.dumps({"memory": out}), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=["all", "throughput", "scaling", "memory"], default="all")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--memory-rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    print(json.dumps({"cpus": os.cpu_count(), "loadavg": os.getloadavg()}), flush=True)
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as d:
        tmp = Path(d)
        if args.part in ("all", "throughput"):
            part_throughput(tmp, args.rows, args.runs)
        if args.part in ("all", "scaling"):
            part_scaling(tmp, args.rows, args.runs)
        if args.part in ("all", "memory"):
            part_memory(tmp, args.memory_rows)
    print(json.dumps({"loadavg_end": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()

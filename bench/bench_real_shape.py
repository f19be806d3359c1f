"""Speed on a table shaped like a real one (issue 18): sensor readings, side by side.

    .venv/bin/python bench/bench_real_shape.py                    # 2M rows, ~8M cells
    .venv/bin/python bench/bench_real_shape.py --rows 200000 --repeats 2
    .venv/bin/python bench/bench_real_shape.py --only scan verify

Dataset: ROWS sensor readings (``sensor_id`` string of 1000 sensors, ``ts`` int64 ms) as one
Parquet input file, loaded through the mapping loader into a table whose row key is the
composite ``sensor_id + ts`` (a :class:`RowKeySpec` stored with the table). Six value
columns, about a third of two of them null, so about 4.6 cells per row: ``temp``,
``humidity``, ``pressure`` (doubles), ``battery`` (int), ``status`` (string, mostly null),
``rssi`` (int, mostly null). Tables with 1, 2 and 3 families hold the same cells (the six
columns spread over the families).

Measured, each contender interleaved run by run (min and median of REPEATS after a
warm-up):

* ``load``: the mapping load of the one input file (wall seconds, cells/s);
* ``scan``: ``Table.scan().to_arrow()`` vs ``pyarrow.parquet.read_table`` of the same
  store files (ratio = raw / cellstore: 1.0 means as fast as reading the files);
* ``dask``: ``Table.scan().to_dask().compute()`` vs ``dd.read_parquet`` of a plain Parquet
  copy of the same cells, default and Arrow-backed dtypes (threaded scheduler);
* ``verify``: ``cellstore.jobs.verify`` in MB/s of table bytes;
* ``export``: peak RSS of ``cellstore.jobs.export`` to Parquet, in a fresh process: first
  an export of one row (imports, compiled kernels and caches a process loads once: "first
  use"), then the peak RSS (``VmHWM``, reset) the whole export adds over that (it counts
  the memory-mapped store files' pages too), and the Arrow memory pool's peak, against
  the default memory budget;
* ``get``: ``Table.get(row)`` median / p95 latency over random present rows.

The machine is shared: the load average is printed before and after. Never part of the
test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.reader.plan import DEFAULT_TASK_MEMORY
from cellstore.warehouse import Table, connect

COLUMNS = {  # column -> codec
    "temp": "double",
    "humidity": "double",
    "pressure": "double",
    "battery": "int",
    "status": "string",
    "rssi": "int",
}
LAYOUTS = {  # families -> column -> family
    1: dict.fromkeys(COLUMNS, "d"),
    2: {"temp": "m", "humidity": "m", "pressure": "m", "battery": "s", "status": "s", "rssi": "s"},
    3: {"temp": "m", "humidity": "m", "pressure": "e", "battery": "s", "status": "s", "rssi": "e"},
}
SPEC = RowKeySpec(fields=(KeyField(name="sensor_id"), KeyField(name="ts", type="int64")))


def make_input(path: str, rows: int, seed: int = 0, row_group_rows: int = 131072) -> None:
    """ROWS sensor readings with nulls, as one Parquet file."""
    rng = np.random.default_rng(seed)
    sensor = rng.integers(0, 1000, rows)
    ts = 1_700_000_000_000 + rng.integers(0, 86_400_000 * 30, rows)

    def nullable(values: np.ndarray, null_fraction: float) -> pa.Array:
        return pa.array(values, mask=rng.random(rows) < null_fraction)

    table = pa.table(
        {
            "sensor_id": pa.array(np.char.add("sensor-", np.char.zfill(sensor.astype("U5"), 5))),
            "ts": pa.array(ts, pa.int64()),
            "temp": pa.array(rng.normal(20, 5, rows)),
            "humidity": nullable(rng.uniform(0, 100, rows), 0.05),
            "pressure": nullable(rng.normal(1013, 10, rows), 0.3),
            "battery": pa.array(rng.integers(0, 100, rows).astype(np.int32)),
            "status": pa.array(np.where(rng.random(rows) < 0.1, "low-battery", None)),
            "rssi": nullable(rng.integers(-100, -30, rows).astype(np.int32), 0.5),
        }
    )
    pq.write_table(table, path, row_group_size=row_group_rows)


def mapping(families: int) -> dict[str, object]:
    layout = LAYOUTS[families]
    return {
        "timestamp": {"column": "ts", "unit": "ms"},
        "cells": [
            {"family": layout[c], "qualifier": c, "value": c, "codec": codec}
            for c, codec in COLUMNS.items()
        ],
    }


def interleaved(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Wall seconds of each contender: one warm-up each, then round-robin."""
    for fn in fns.values():
        fn()
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            out[name].append(time.perf_counter() - t0)
    return out


def load(root: str, families: int, input_path: str) -> tuple[Table, float, int]:
    name = f"sensors{families}"
    t = connect(root).create_table(
        name, families=sorted(set(LAYOUTS[families].values())), row_key=SPEC
    )
    t0 = time.perf_counter()
    report = t.load(input_path, mapping=mapping(families), key_advice="off")
    seconds = time.perf_counter() - t0
    t = connect(root).table(name)
    return t, seconds, int(report.cells)


def bench_scan(t: Table, cells: int, repeats: int) -> None:
    paths = [t.file_path(f) for f in t.files]
    runs = interleaved(
        {
            "raw": lambda: [pq.read_table(p) for p in paths],
            "cellstore": lambda: t.scan().to_arrow(),
        },
        repeats,
    )
    raw, cs = min(runs["raw"]), min(runs["cellstore"])
    print(
        f"    scan: read_table {raw:6.3f}s (median {statistics.median(runs['raw']):.3f})  "
        f"cellstore {cs:6.3f}s (median {statistics.median(runs['cellstore']):.3f})  "
        f"{cells / cs / 1e6:5.2f} M cells/s  ratio {raw / cs:4.2f}x"
    )


def bench_dask(root: str, t: Table, cells: int, repeats: int) -> None:
    """``to_dask().compute()`` vs ``dd.read_parquet`` of a plain Parquet copy of the result.

    The copy holds exactly the cells the scan returns, in row groups of 64K cells; pandas'
    default dtypes (binary columns as Python objects) and Arrow-backed dtypes both run.
    Dask's threaded scheduler, as a user's first ``compute()`` gets.
    """
    import dask
    import dask.dataframe as dd

    plain = os.path.join(root, f"plain-{t.name}")
    os.makedirs(plain, exist_ok=True)
    pq.write_table(
        t.scan().to_arrow(), os.path.join(plain, "part0.parquet"), row_group_size=1 << 16
    )
    with dask.config.set(scheduler="threads"):
        runs = interleaved(
            {
                "dd": lambda: dd.read_parquet(plain).compute(),
                "dd-arrow": lambda: dd.read_parquet(plain, dtype_backend="pyarrow").compute(),
                "cellstore": lambda: t.scan().to_dask().compute(),
            },
            repeats,
        )
    best = {k: min(v) for k, v in runs.items()}
    print(
        f"    dask: read_parquet {best['dd']:6.3f}s  (pyarrow dtypes {best['dd-arrow']:6.3f}s)  "
        f"to_dask {best['cellstore']:6.3f}s  = {best['cellstore'] / best['dd-arrow']:4.2f}x "
        f"the pyarrow-dtypes read, {best['cellstore'] / best['dd']:4.2f}x the default "
        f"({cells / best['cellstore'] / 1e6:5.2f} M cells/s)"
    )


def bench_verify(t: Table, repeats: int) -> None:
    from cellstore.jobs import verify

    size = sum(f.size for f in t.files)
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        report = verify(t)
        runs.append(time.perf_counter() - t0)
        assert report.ok, report.problems
    best = min(runs)
    print(
        f"    verify: {best:6.3f}s (median {statistics.median(runs):.3f}) for "
        f"{size / 2**20:.1f} MiB = {size / best / 1e6:6.1f} MB/s"
    )


def export_child(root: str, name: str, out: str) -> None:
    from cellstore.jobs import export

    def status(key: str) -> float:
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith(key + ":")) / 1024

    base = status("VmRSS")
    t = connect(root).table(name)
    # a first export of a few rows: imports, compiled kernels and caches a process
    # loads once (the "first use" part), then the RSS the whole export adds over that
    first = t.scan(limit=1).to_arrow().column("row")[0].as_py()
    export(t, out, format="parquet", overwrite=True, stop_row=first + b"\x00")
    warm = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    t0 = time.perf_counter()
    export(t, out, format="parquet", overwrite=True)
    seconds = time.perf_counter() - t0
    peak = status("VmHWM")
    arrow = pa.default_memory_pool().max_memory() / 2**20
    print(
        json.dumps({"base": base, "warm": warm, "peak": peak, "seconds": seconds, "arrow": arrow})
    )


def bench_export(root: str, t: Table) -> None:
    out = os.path.join(root, f"export-{t.name}")
    cmd = [sys.executable, __file__, "--export-child", root, str(t.name), out]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = json.loads(res.stdout.strip().splitlines()[-1])
    print(
        f"    export: {r['seconds']:6.3f}s  base {r['base']:5.0f} MiB  first use "
        f"+{r['warm'] - r['base']:4.0f} MiB  peak {r['peak']:5.0f} MiB  export added "
        f"{r['peak'] - r['warm']:5.0f} MiB  (Arrow pool peak {r['arrow']:4.0f} MiB; "
        f"budget {DEFAULT_TASK_MEMORY / 2**20:.0f} MiB)"
    )


def bench_get(t: Table, rows: list[bytes], n: int) -> None:
    rng = np.random.default_rng(1)
    picks = [rows[i] for i in rng.integers(0, len(rows), n)]
    t.get(picks[0])
    lat = []
    for row in picks:
        t0 = time.perf_counter()
        t.get(row)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    print(
        f"    get: median {statistics.median(lat) * 1e3:6.2f} ms  "
        f"p95 {lat[int(0.95 * len(lat))] * 1e3:6.2f} ms  ({n} gets)"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--export-child":
        export_child(*sys.argv[2:5])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--families", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gets", type=int, default=300)
    ap.add_argument(
        "--only", nargs="+", default=["load", "scan", "dask", "verify", "export", "get"]
    )
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}  threads={pa.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as root:
        input_path = os.path.join(root, "readings.parquet")
        make_input(input_path, args.rows)
        print(f"input: {args.rows:,} rows, {os.path.getsize(input_path) / 2**20:.1f} MiB Parquet")
        for families in args.families:
            t, seconds, cells = load(root, families, input_path)
            size = sum(f.size for f in t.files)
            print(
                f"  {families} famil{'y' if families == 1 else 'ies'}: {cells:,} cells, "
                f"{len(t.files)} store files, {size / 2**20:.1f} MiB"
            )
            if "load" in args.only:
                print(f"    load: {seconds:6.3f}s  {cells / seconds / 1e6:5.2f} M cells/s")
            if "scan" in args.only:
                bench_scan(t, cells, args.repeats)
            if "dask" in args.only:
                bench_dask(root, t, cells, args.repeats)
            if "verify" in args.only:
                bench_verify(t, args.repeats)
            if "export" in args.only:
                bench_export(root, t)
            if "get" in args.only:
                rows = pq.read_table(t.file_path(t.files[0]), columns=["row"]).column("row")
                bench_get(t, rows.unique().to_pylist(), args.gets)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

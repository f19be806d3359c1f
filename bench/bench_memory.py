"""Peak memory of a full scan: ``to_batches()`` iterated vs ``to_arrow()`` (issue 3, 5).

    .venv/bin/python bench/bench_memory.py                        # 1M and 10M cells
    .venv/bin/python bench/bench_memory.py --rows 1000000 --budget 67108864
    .venv/bin/python bench/bench_memory.py --load 2000000 --repeats 2   # load 4x its budget

``--load ROWS`` measures a bulk load instead (issue 16): the input of bench_load.py (ROWS
records x 10 long columns, one Parquet file, 8 regions), ``memory_budget`` a quarter of
its Arrow size. Each run is a fresh subprocess that reports its RSS after imports and
``create_table`` (the fresh-process base), its ``VmHWM``, the Arrow pool's high-water mark,
and, from a thread sampling every 3 ms, the peak RSS above the base and the peak live Arrow
bytes in each phase of the load (input tasks, run writing, spill merge, other). With
``--before DIR`` (a checkout's ``src``, e.g. from ``git archive``) runs alternate between
that code and this one (A B A B). ``--layouts`` (default ``cells columns``) runs the load
into a family of each layout (issue 28: a load writing column files keeps its budget).
``--compact ROWS`` measures a major compaction the same way: the same input loaded in two
halves of interleaved keys (the second load a delta under ``auto``), then
``compact(major=True, memory_budget=...)`` in a fresh subprocess, the budget a quarter of
the input's Arrow size (issue 28: a compaction writing column files keeps its budget).
``--purge ROWS`` measures ``purge_ttl`` the same way: the input loaded once into one
region with every other record expired (one file, or a column file and no companion),
so the purge rewrites every file; with ``--before`` against the code that read each file
whole.

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
from pathlib import Path
from typing import Any

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
    print(
        json.dumps(
            {
                "base": base / 1024,
                "peak": peak / 1024,
                "cells": cells,
                "batches": batches,
                "tasks": tasks,
                "seconds": seconds,
            }
        )
    )


_LOAD_CHILD = r"""
import json, sys, threading, time
from pathlib import Path
sys.path.insert(0, {bench!r})
import bench_load
import pyarrow as pa
from cellstore.warehouse import connect
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
from cellstore import Family
t = connect({root!r}).create_table("bench:mem", families=[Family(name="cf", layout={layout!r})],
                                   splits=bench_load.split_keys({rows}))
base = status("VmRSS")
phases, stop, main = {{}}, False, threading.get_ident()
def sample():
    me = threading.get_ident()
    while not stop:
        rss, arrow = status("VmRSS") - base, pa.total_allocated_bytes() / 2**20
        names = set()
        for tid, f in sys._current_frames().items():
            while tid not in (me, main) and f is not None:
                names.add(f.f_code.co_name)
                f = f.f_back
        ph = ("merge" if "consolidate_runs" in names or "merge_run_group" in names
              else "write" if "write_region" in names
              else "tasks" if "run_task" in names else "other")
        old = phases.get(ph, (0.0, 0.0))
        phases[ph] = (max(old[0], rss), max(old[1], arrow))
        time.sleep(0.003)
th = threading.Thread(target=sample, daemon=True)
th.start()
t0 = time.perf_counter()
report = t.load({path!r}, mapping=bench_load.mapping(), memory_budget={budget})
seconds = time.perf_counter() - t0
stop = True
th.join()
print(json.dumps({{"base": base, "peak": status("VmHWM"), "seconds": seconds,
                  "arrow_max": pa.default_memory_pool().max_memory() / 2**20,
                  "phases": phases, "mode": report.mode, "files": report.files}}))
"""


_JOB_CHILD = r"""
import json, sys, threading, time
import pyarrow as pa
from cellstore.jobs import compact, purge_ttl
from cellstore.warehouse import connect
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
t = connect({root!r}).table("bench:mem")
base = status("VmRSS")
peak_arrow, stop = 0.0, False
def sample():
    global peak_arrow
    while not stop:
        peak_arrow = max(peak_arrow, pa.total_allocated_bytes() / 2**20)
        time.sleep(0.003)
th = threading.Thread(target=sample, daemon=True)
th.start()
t0 = time.perf_counter()
report = {job}
seconds = time.perf_counter() - t0
stop = True
th.join()
t = t.refresh()
print(json.dumps({{"base": base, "peak": status("VmHWM"), "seconds": seconds,
                  "arrow_max": peak_arrow,
                  "cells": report.output_cells,
                  "layouts": sorted(f.layout for f in t.files)}}))
"""


def compact_case(
    tmp: str, path: str, rows: int, budget: int, src: str | None, layout: str
) -> dict[str, Any]:
    """A table of ``layout`` loaded in two halves, major-compacted in a fresh subprocess."""
    import shutil

    import bench_load
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from cellstore import Family

    root = os.path.join(tmp, "wh")
    shutil.rmtree(root, ignore_errors=True)
    t = connect(root).create_table(
        "bench:mem",
        families=[Family(name="cf", layout=layout)],
        splits=bench_load.split_keys(rows),
    )
    data = pq.read_table(path)
    odd = pc.equal(pc.bit_wise_and(pa_arange(len(data)), 1), 1)
    for half in (pc.invert(odd), odd):  # interleaved keys: the second load overlaps the first
        t.load(data.filter(half), mapping=bench_load.mapping())
    code = _JOB_CHILD.format(root=root, job=f"compact(t, major=True, memory_budget={budget})")
    return _run_child(code, src)


#: The purge case's clock: records of even ids are stamped an hour before it (expired
#: under the family's 10-minute TTL), the others a minute before.
_PURGE_NOW = 1_700_000_000_000


def purge_case(tmp: str, path: str, rows: int, src: str | None, layout: str) -> dict[str, Any]:
    """A table of ``layout`` (one region, TTL 10 minutes) loaded once with half its
    records expired, interleaved, then ``purge_ttl`` in a fresh subprocess: every file
    holds expired cells, so each is rewritten."""
    import shutil

    import bench_load
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from cellstore import Family
    from cellstore.loader import Mapping

    root = os.path.join(tmp, "wh")
    shutil.rmtree(root, ignore_errors=True)
    t = connect(root).create_table(
        "bench:mem", families=[Family(name="cf", layout=layout, ttl=600)]
    )
    data = pq.read_table(path)
    even = pc.equal(pc.bit_wise_and(pa_arange(len(data)), 1), 0)
    stamps = pc.if_else(even, _PURGE_NOW - 3_600_000, _PURGE_NOW - 60_000)
    data = data.append_column("ts", stamps)
    mapping = Mapping.simple(
        row_key="id", columns=[f"cf:{c}={c}:long" for c in bench_load.COLUMNS], timestamp="ts"
    )
    t.load(data, mapping=mapping)
    code = _JOB_CHILD.format(root=root, job=f"purge_ttl(t, now_ms={_PURGE_NOW})")
    return _run_child(code, src)


def main_purge(rows: int, repeats: int, before: str | None, layouts: list[str]) -> None:

    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as tmp:
        path, size = _input(tmp, rows)
        print(f"input {rows:,} records, half expired, Arrow size {size / 2**20:.1f} MiB")
        contenders = _contenders(before)
        for _ in range(repeats):
            for name, src in contenders:
                for layout in layouts:
                    r = purge_case(tmp, path, rows, src, layout)
                    print(
                        f"  {name}/{layout:7s} base {r['base']:.0f} MiB  peak {r['peak']:.0f} "
                        f"MiB  above base {r['peak'] - r['base']:.0f} MiB  Arrow max "
                        f"{r['arrow_max']:.0f} MiB  {r['seconds']:.1f} s  {r['cells']:,} cells "
                        f"-> {' '.join(r['layouts'])}",
                        flush=True,
                    )
    print(f"load average after: {os.getloadavg()}")


def _run_child(code: str, src: str | None) -> dict[str, Any]:
    """Run ``code`` in a fresh Python (``src`` first on its path); its last JSON line."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _input(tmp: str, rows: int) -> tuple[str, int]:
    """bench_load.py's input of ``rows`` records written in ``tmp``: its path, Arrow size."""
    import bench_load
    import pyarrow.parquet as pq

    path = os.path.join(tmp, "in.parquet")
    bench_load.make_input(Path(path), rows, seed=3)
    return path, pq.read_table(path).nbytes


def _contenders(before: str | None) -> list[tuple[str, str | None]]:
    """The code measured: ``before``'s src then this one, or this one alone."""
    return [("before", before), ("after", None)] if before else [("this", None)]


def pa_arange(n: int) -> Any:
    import numpy as np
    import pyarrow as pa

    return pa.array(np.arange(n))


def main_compact(rows: int, repeats: int, before: str | None, layouts: list[str]) -> None:

    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as tmp:
        path, arrow = _input(tmp, rows)
        budget = arrow // 4
        print(f"input {rows:,} records in two loads, budget {budget / 2**20:.1f} MiB")
        contenders = _contenders(before)
        for _ in range(repeats):
            for name, src in contenders:
                for layout in layouts:
                    r = compact_case(tmp, path, rows, budget, src, layout)
                    print(
                        f"  {name}/{layout:7s} base {r['base']:.0f} MiB  peak {r['peak']:.0f} "
                        f"MiB  above base {r['peak'] - r['base']:.0f} MiB (budget "
                        f"{budget / 2**20:.0f}: fixed overhead "
                        f"{r['peak'] - r['base'] - budget / 2**20:.0f})  Arrow max "
                        f"{r['arrow_max']:.0f} MiB  {r['seconds']:.1f} s  {r['cells']:,} cells "
                        f"-> {' '.join(r['layouts'])}",
                        flush=True,
                    )
    print(f"load average after: {os.getloadavg()}")


def load_case(
    tmp: str, path: str, rows: int, budget: int, src: str | None, layout: str = "auto"
) -> dict[str, Any]:
    """One load in a fresh subprocess (``src``: put that code first on the path)."""
    import shutil

    root = os.path.join(tmp, "wh")
    shutil.rmtree(root, ignore_errors=True)
    code = _LOAD_CHILD.format(
        bench=os.path.dirname(os.path.abspath(__file__)),
        root=root,
        rows=rows,
        path=path,
        budget=budget,
        layout=layout,
    )
    return _run_child(code, src)


def main_load(rows: int, repeats: int, before: str | None, layouts: list[str]) -> None:
    import statistics

    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as tmp:
        path, arrow = _input(tmp, rows)
        budget = arrow // 4
        print(
            f"input {rows:,} records = {arrow / 2**20:.0f} MiB Arrow, "
            f"budget {budget / 2**20:.1f} MiB"
        )
        contenders = _contenders(before)
        contenders = [(f"{name}/{lay}", src) for name, src in contenders for lay in layouts]
        above: dict[str, list[float]] = {name: [] for name, _ in contenders}
        for _ in range(repeats):
            for name, src in contenders:
                r = load_case(tmp, path, rows, budget, src, layout=name.rsplit("/", 1)[1])
                above[name].append(r["peak"] - r["base"])
                ph = "  ".join(f"{k} {v[0]:.0f}/{v[1]:.0f}" for k, v in sorted(r["phases"].items()))
                print(
                    f"  {name:6s} base {r['base']:.0f} MiB  peak {r['peak']:.0f} MiB  above base "
                    f"{r['peak'] - r['base']:.0f} MiB  Arrow max {r['arrow_max']:.0f} MiB  "
                    f"{r['seconds']:.1f} s  {r['mode']} {r['files']} files  "
                    f"phases (RSS above base / live Arrow, MiB): {ph}",
                    flush=True,
                )
        for name, vals in above.items():
            print(
                f"{name}: peak above base min {min(vals):.0f} median "
                f"{statistics.median(vals):.0f} MiB; budget {budget / 2**20:.0f} MiB "
                f"-> fixed overhead min {min(vals) - budget / 2**20:.0f} MiB"
            )
    print(f"load average after: {os.getloadavg()}")


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
    ap.add_argument("--load", type=int, default=0, help="measure a load of this many records")
    ap.add_argument("--compact", type=int, default=0, help="measure a major compaction")
    ap.add_argument("--purge", type=int, default=0, help="measure a TTL purge")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--before", default=None, help="src directory of the code to compare")
    ap.add_argument(
        "--layouts",
        nargs="+",
        default=["cells", "columns"],
        help="family layouts of the load case (auto: column files for a fresh load)",
    )
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--files", type=int, default=1)
    ap.add_argument(
        "--budget",
        type=int,
        nargs="*",
        default=[64 << 20],
        help="extra memory_budget values to measure (bytes)",
    )
    args = ap.parse_args()
    if args.compact:
        main_compact(args.compact, args.repeats, args.before, args.layouts)
        return
    if args.purge:
        main_purge(args.purge, args.repeats, args.before, args.layouts)
        return
    if args.load:
        main_load(args.load, args.repeats, args.before, args.layouts)
        return
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
                    print(
                        f"  {mode:10s} {label:16s} tasks {r['tasks']:3.0f}  "
                        f"batches {r['batches']:3.0f}  base {r['base']:6.0f} MiB  "
                        f"peak {r['peak']:6.0f} MiB  scan added {r['peak'] - r['base']:6.0f}"
                        f" MiB  ({r['seconds']:.2f} s, {r['cells']:,.0f} cells)"
                    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

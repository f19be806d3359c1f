"""Cluster scaling: load and scan throughput on a distributed LocalCluster of 1 vs 2 workers.

Usage::

    .venv/bin/python bench/bench_scaling.py                    # 3M cells, ~3-4 min
    .venv/bin/python bench/bench_scaling.py --rows 400000 --repeats 5
    .venv/bin/python bench/bench_scaling.py --workers 1 2 4    # on a larger machine

Input: FILES Parquet files holding ROWS rows x 10 long columns (16-byte keys, shuffled), so
ROWS x 10 cells; a 1-family table pre-split into REGIONS regions at the key quantiles.

* load: ``Table.load(glob, client=client)`` into a fresh table per run (``merge`` mode: one
  task per input file, then one task per region sorts and writes its store files; one
  commit);
* compact: ``compact(t, major=True, client=client)`` of the table the load just wrote
  (one task per store: region x family; every cell read, merged and rewritten);
* scan: ``Table.scan(memory_budget=...).to_dask()`` counted on the cluster
  (``map_partitions(len).sum()``), so the cells are read, merged, resolved and turned into
  pandas partitions on the workers and only counts travel back; ``--scans-per-run`` scans
  (3) per run and cluster, as one takes only about half a second.

Clusters: one ``LocalCluster`` per worker count (worker processes, 1 Dask thread each),
all started up front; runs are interleaved across clusters (run 1 on every cluster, then
run 2, ...), so machine load from other processes hits every configuration alike. Two
thread settings: ``default`` (as Dask starts workers: its nanny sets ``OMP_NUM_THREADS=1``,
which pyarrow's CPU pool follows, so each worker decodes on one core) and ``pinned``
(``pyarrow.set_cpu_count(1)`` on every worker, the same in effect; kept to show it). The
load average is printed before and after: the machine may be shared. Last, a reference:
Dask's own ``dd.read_parquet`` on the same clusters (``--reference-rows``). Results go to
docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

COLUMNS = [f"c{i}" for i in range(10)]


def make_inputs(directory: Path, rows: int, files: int, *, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows)
    for i, part in enumerate(np.array_split(ids, files)):
        cols = {"id": pa.array(np.char.mod("user%011d", part).astype(object), pa.string())}
        for c in COLUMNS:
            cols[c] = pa.array(rng.integers(0, 1 << 40, len(part)), pa.int64())
        pq.write_table(pa.table(cols), directory / f"part-{i:03d}.parquet", compression="zstd")


def mapping():
    from cellstore.loader import Mapping

    return Mapping.simple(row_key="id", columns=[f"cf:{c}={c}:long" for c in COLUMNS])


def split_keys(rows: int, regions: int) -> list[bytes]:
    return [b"user%011d" % (rows * i // regions) for i in range(1, regions)]


def pin_threads() -> int:
    pa.set_cpu_count(1)
    return pa.cpu_count()


def one_load(wh, client, source: str, rows: int, regions: int, name: str) -> float:
    t = wh.create_table(name, families=["cf"], splits=split_keys(rows, regions))
    start = time.perf_counter()
    report = t.load(source, mapping=mapping(), client=client)
    seconds = time.perf_counter() - start
    assert report.rows == rows, report
    return seconds


def one_compaction(wh, client, name: str) -> float:
    from cellstore.jobs import compact

    t = wh.table(name)
    start = time.perf_counter()
    compact(t, major=True, client=client)
    return time.perf_counter() - start


def one_scan(table, client, cells: int, budget: int) -> tuple[float, int]:
    start = time.perf_counter()
    ddf = table.scan(memory_budget=budget).to_dask()
    counted = client.compute(ddf.map_partitions(len).sum()).result()
    seconds = time.perf_counter() - start
    assert int(counted) == cells, (counted, cells)
    return seconds, ddf.npartitions


def reference(directory: Path, rows: int, files: int, repeats: int, clusters) -> None:
    """Dask's own Parquet reader on the same clusters: ``dd.read_parquet`` of plain files,
    counted the same way. Its 1 -> 2 worker ratio shows what Dask's fixed costs per
    computation (graph, scheduler, the client and scheduler sharing the cores) leave."""
    import dask.dataframe as dd

    directory.mkdir()
    make_inputs(directory, rows, files, seed=2)
    times: dict[int, list[float]] = {n: [] for n in clusters}
    for run in range(repeats + 1):
        for n, (_, client) in clusters.items():
            start = time.perf_counter()
            ddf = dd.read_parquet(str(directory / "*.parquet"))
            counted = client.compute(ddf.map_partitions(len).sum()).result()
            if run:
                times[n].append(time.perf_counter() - start)
            assert int(counted) == rows
    cells = rows * (len(COLUMNS) + 1)
    base = min(times[min(times)])
    print(f"reference: dd.read_parquet of {rows} rows x 11 columns = {cells} cells")
    for n, ts in times.items():
        print(f"  {n} worker(s)  read_parquet: {fmt(cells, ts)}   x{base / min(ts):.2f}")


def fmt(cells: int, times: list[float]) -> str:
    best, med = min(times), statistics.median(times)
    return (
        f"best {cells / best / 1e6:5.2f} M cells/s ({best:5.2f} s), median {cells / med / 1e6:5.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=300_000, help="input rows (x10 cells)")
    ap.add_argument("--files", type=int, default=8, help="input Parquet files")
    ap.add_argument("--regions", type=int, default=8)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3, help="timed runs (after 1 warm-up)")
    ap.add_argument(
        "--scan-budget",
        type=int,
        default=32 << 20,
        help="scan memory_budget per task (bytes): cuts regions into tasks",
    )
    ap.add_argument(
        "--scans-per-run",
        type=int,
        default=3,
        help="scans per run and cluster (a scan of 10M cells takes ~0.5 s, so one sample "
        "per run is at the mercy of a GC pause or the scheduler's timing)",
    )
    ap.add_argument(
        "--reference-rows",
        type=int,
        default=None,
        help="rows of the dd.read_parquet reference (default 4x --rows: plain Parquet "
        "reads about 4x faster, so the reference takes about as long as the scan); 0 skips",
    )
    ap.add_argument(
        "--threads", nargs="+", default=["default", "pinned"], choices=["default", "pinned"]
    )
    args = ap.parse_args()

    from distributed import Client, LocalCluster

    from cellstore.warehouse import connect

    cells = args.rows * len(COLUMNS)
    work = Path(tempfile.mkdtemp(prefix="cellstore-scaling-"))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()}")
    print(
        f"input: {args.rows} rows x {len(COLUMNS)} columns = {cells} cells in {args.files} "
        f"files; table: {args.regions} regions; repeats: {args.repeats} (+1 warm-up)"
    )
    try:
        (work / "in").mkdir()
        make_inputs(work / "in", args.rows, args.files)
        source = str(work / "in" / "*.parquet")
        wh = connect(work / "wh")
        clusters = {}
        for n in args.workers:
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                scheduler_port=0,
                dashboard_address=":0",
                host="127.0.0.1",
            )
            clusters[n] = (cluster, Client(cluster, set_as_default=False))
        scan_table = wh.create_table(
            "scan", families=["cf"], splits=split_keys(args.rows, args.regions)
        )
        scan_table.load(source, mapping=mapping())
        for mode in args.threads:
            if mode == "pinned":
                for _, client in clusters.values():
                    client.run(pin_threads)
            loads: dict[int, list[float]] = {n: [] for n in clusters}
            scans: dict[int, list[float]] = {n: [] for n in clusters}
            compactions: dict[int, list[float]] = {n: [] for n in clusters}
            parts = 0
            print(f"\n[{mode} threads] load average before: {os.getloadavg()}")
            for run in range(args.repeats + 1):
                for n, (_, client) in clusters.items():
                    lt = one_load(
                        wh, client, source, args.rows, args.regions, f"load_{mode}_{n}_{run}"
                    )
                    ct = one_compaction(wh, client, f"load_{mode}_{n}_{run}")
                    sts = []
                    for _ in range(args.scans_per_run):
                        st, parts = one_scan(scan_table, client, cells, args.scan_budget)
                        sts.append(st)
                    if run:  # run 0 warms up imports, caches and the OS page cache
                        loads[n].append(lt)
                        compactions[n].append(ct)
                        scans[n].extend(sts)
                    wh.drop_table(f"load_{mode}_{n}_{run}", purge=True)
            print(f"[{mode} threads] load average after: {os.getloadavg()}")
            print(f"scan tasks: {parts}")
            base = args.workers[0]
            for n in clusters:
                load_x = min(loads[base]) / min(loads[n])
                scan_x = min(scans[base]) / min(scans[n])
                compact_x = min(compactions[base]) / min(compactions[n])
                print(f"  {n} worker(s)  load: {fmt(cells, loads[n])}   x{load_x:.2f}")
                print(
                    f"  {n} worker(s)  major compaction: {fmt(cells, compactions[n])}"
                    f"   x{compact_x:.2f}"
                )
                print(f"  {n} worker(s)  scan: {fmt(cells, scans[n])}   x{scan_x:.2f}")
        ref_rows = args.rows * 4 if args.reference_rows is None else args.reference_rows
        if ref_rows:
            reference(
                work / "ref", ref_rows, args.files, args.repeats * args.scans_per_run, clusters
            )
        for cluster, client in clusters.values():
            client.close()
            cluster.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

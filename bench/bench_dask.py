"""Dask read: ``Table.scan().to_dask()`` vs ``dd.read_parquet`` of the same cells (issue 18).

    .venv/bin/python bench/bench_dask.py --rows 1000000               # 10M cells, 2 families
    .venv/bin/python bench/bench_dask.py --rows 100000 --families 1 3 # quick, 1 and 3 families

Table: ROWS rows x 5 qualifiers x 2 versions (10 cells a row), the qualifiers spread over
FAMILIES families, REGIONS regions, loaded in one commit. The plain copy is the scan's result
(the latest version of each cell, ``row, family, qualifier, ts, type, value``) written once
as Parquet files, one per region (row groups of 64K cells), so both contenders return the
same rows. Contenders (Dask's threaded scheduler, ``compute()`` to one pandas frame):

* ``cellstore to_dask()``: one partition per scan task, HBase semantics on the way;
* ``dd.read_parquet`` of the plain copy, pandas' default types (bytes as object columns);
* the same with ``dtype_backend="pyarrow"`` (bytes stay Arrow-backed, as cellstore's are).

Each measurement: 1 warm-up + REPEATS runs, interleaved; min and median wall seconds and the
ratio to the plain read. The load average is printed: the machine is shared. Never part of
the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cellstore.core.family import Family
from cellstore.warehouse import Table, connect

QUALIFIERS = 5
VERSIONS = 2


def make_cells(rows: int, families: int, seed: int = 0) -> pa.Table:
    """ROWS rows x 5 qualifiers x 2 versions (ts 2000, 1000) of 16-byte random values.

    Qualifier ``q<i>`` lives in family ``f<i % families>``; rows are ``user<9 digits>``.
    """
    rng = np.random.default_rng(seed)
    per_row = QUALIFIERS * VERSIONS
    n = rows * per_row
    ids = np.repeat(np.arange(rows), per_row)
    keys = np.char.add(b"user", np.char.zfill(ids.astype("S9"), 9))
    qi = np.tile(np.repeat(np.arange(QUALIFIERS), VERSIONS), rows)
    quals = np.char.add(b"q", qi.astype("S1"))
    fams = np.char.add("f", (qi % families).astype("U1"))
    ts = np.tile(np.array([2000, 1000], dtype=np.int64), rows * QUALIFIERS)
    values = np.frombuffer(rng.bytes(16 * n), dtype="S16")
    return pa.table(
        {
            "row": pa.array(keys.astype(object), pa.binary()),
            "family": pa.array(fams.astype(object), pa.string()),
            "qualifier": pa.array(quals.astype(object), pa.binary()),
            "ts": pa.array(ts),
            "type": pa.array(np.full(n, 4, np.int8)),
            "value": pa.array(values.astype(object), pa.binary()),
        }
    )


def make_table(root: str, name: str, *, rows: int, families: int, regions: int) -> Table:
    """A table of :func:`make_cells` in ``regions`` equal regions, one load."""
    splits = [b"user%09d" % (rows * i // regions) for i in range(1, regions)]
    t = connect(root).create_table(
        name,
        families=[Family(name=f"f{i}", max_versions=3) for i in range(families)],
        splits=splits,
    )
    t.load_cells(make_cells(rows, families), row_group_cells=65536)
    return t


def plain_copy(t: Table, directory: str) -> list[str]:
    """The scan's result as plain Parquet, one file per scan task (same cells, same order)."""
    os.makedirs(directory, exist_ok=True)
    reader = t.scan().partition_reader()
    paths = []
    for i, task in enumerate(t.scan().plan()):
        path = os.path.join(directory, f"part-{i:05d}.parquet")
        pq.write_table(reader.read_arrow(task), path, row_group_size=65536)
        paths.append(path)
    return paths


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


def report(results: dict[str, list[float]], *, base: str, cells: int) -> None:
    """One line per contender: min, median, cells/s, and the ratio to ``base``'s min."""
    floor = min(results[base])
    for name, runs in results.items():
        best = min(runs)
        print(
            f"  {name:48s} min {best:6.3f}s  median {statistics.median(runs):6.3f}s  "
            f"{cells / best / 1e6:6.2f} M cells/s  x{best / floor:5.2f} of {base.split()[0]}"
        )


def bench(root: str, *, rows: int, families: int, regions: int, repeats: int) -> None:
    import dask
    import dask.dataframe as dd

    t = make_table(root, f"dask{families}", rows=rows, families=families, regions=regions)
    paths = plain_copy(t, os.path.join(root, f"plain{families}"))
    cells = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    plain = "dd.read_parquet (plain copy)"
    fns: dict[str, Callable[[], object]] = {
        plain: lambda: dd.read_parquet(paths).compute(),
        "dd.read_parquet (plain copy, pyarrow dtypes)": lambda: dd.read_parquet(
            paths, dtype_backend="pyarrow"
        ).compute(),
        "cellstore scan().to_dask()": lambda: t.scan().to_dask().compute(),
    }
    with dask.config.set(scheduler="threads"):
        results = interleaved(fns, repeats)
    print(
        f"cells read={cells:,} stored={rows * QUALIFIERS * VERSIONS:,} families={families} "
        f"regions={regions} tasks={len(t.scan().plan())} repeats={repeats} "
        f"load={os.getloadavg()[0]:.2f}"
    )
    report(results, base=plain, cells=cells)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--families", type=int, nargs="+", default=[2])
    ap.add_argument("--regions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-") as root:
        for families in args.families:
            bench(
                root,
                rows=args.rows,
                families=families,
                regions=args.regions,
                repeats=args.repeats,
            )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

"""HFile write benchmark (issue 14): write_hfile vs write_store_file on the same cells.

Usage::

    .venv/bin/python bench/bench_hfile_write.py                  # 1M rows x 5 quals x 2 versions
    .venv/bin/python bench/bench_hfile_write.py --rows 100000 --encodings

Cells: ROWS rows (16-byte keys) x 5 qualifiers x 2 versions, 8-byte values, already in
cell order (both writers get sorted input; write_hfile checks the order vectorized).
Measured: cellstore's own store file (``write_store_file``, zstd Parquet), ``write_hfile``
with NONE encoding and no compression / GZ / SNAPPY, and (``--encodings``) the per-cell
encoders on a 200k-cell slice. Each figure is the best of ``--runs`` runs.
Results go to docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa


def make_cells(rows: int) -> pa.Table:
    n = rows * 10
    r = np.repeat(np.arange(rows), 10)
    row = pa.array(np.char.mod("user%012d", r).astype("S16").astype(object), pa.binary())
    q = np.tile(np.repeat(np.arange(5), 2), rows)
    qual = pa.array(np.char.mod("c%d", q).astype("S2").astype(object), pa.binary())
    ts = np.tile(np.array([2000, 1000], np.int64), rows * 5)
    vals = np.arange(n, dtype=">i8").view("S8").astype(object)
    return pa.table({"row": row, "qualifier": qual, "ts": ts,
                     "type": pa.array(np.full(n, 4, np.int8)),
                     "value": pa.array(vals, pa.binary())})


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_write(rows: int, runs: int) -> dict[str, float]:
    from cellstore.core.family import Family
    from cellstore.storefiles import write_store_file
    from cellstore.storefiles.hfile.writer import write_hfile

    cells = make_cells(rows)
    n = cells.num_rows
    fs = fsspec.filesystem("file")
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as d:
        fam = Family(name="cf")

        def store() -> None:
            p = str(Path(d) / "sf.parquet")
            if fs.exists(p):
                fs.rm(p)
            write_store_file(fs, p, cells, family=fam, seq=1, load_id="bench")

        out["store_file (zstd parquet)"] = n / best(store, runs)
        for codec in ("none", "gz", "snappy"):
            def hfile(codec: str = codec) -> None:
                write_hfile(str(Path(d) / f"h-{codec}"), cells, family=b"cf", compression=codec)

            out[f"write_hfile NONE/{codec}"] = n / best(hfile, runs)
    return out


def bench_encodings(cells_n: int, runs: int) -> dict[str, float]:
    from cellstore.storefiles.hfile.writer import build_hfile

    cells = make_cells(cells_n // 10)
    out = {}
    for enc in ("prefix", "diff", "fast_diff", "row_index_v1"):
        out[f"write_hfile {enc}"] = cells.num_rows / best(
            lambda enc=enc: build_hfile(cells, family=b"cf", encoding=enc), runs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--encodings", action="store_true")
    args = ap.parse_args()
    res = bench_write(args.rows, args.runs)
    base = res["store_file (zstd parquet)"]
    for k, v in res.items():
        print(f"{k:32s} {v / 1e6:6.2f} M cells/s  ratio {v / base:4.2f}")
    if args.encodings:
        for k, v in bench_encodings(200_000, 1).items():
            print(f"{k:32s} {v / 1e6:6.3f} M cells/s")


if __name__ == "__main__":
    main()

"""HFile benchmark (issues 14, 29): read and write vs our Parquet store file, in one run.

Usage::

    .venv/bin/python bench/bench_hfile.py                 # 1M rows x 5 quals x 2 versions
    .venv/bin/python bench/bench_hfile.py --rows 100000   # 1M cells, quick

Cells: ROWS rows (16-byte keys) x 5 qualifiers x 2 versions, 8-byte values (1 in 256
shorter: ``S8`` drops trailing zero bytes), already in cell order. Inputs are written
once: one store file of ours (``write_store_file``, zstd Parquet) and HFiles written by
``write_hfile`` (NONE encoding;
no compression, GZ, SNAPPY, ZSTD; 64 KiB blocks, CRC32C; tags and memstore timestamps as
HFileOutputFormat2 writes them). Measured, best of ``--runs`` with the contenders of each
group run round-robin (so a change of the machine's load hits all of them alike):

* writing: ``write_store_file`` (zstd Parquet) vs ``write_hfile`` (no compression, GZ,
  SNAPPY, ZSTD; blocks compressed on ``--threads`` threads);
* ``StoreFileReader.read()`` of the Parquet file (a full scan of one store file);
* ``read_hfile`` of each HFile (``--threads`` threads), plus the share of the GZ read spent
  in zlib (the same blocks decompressed alone);
* peak RSS of a child process that streams ``iter_hfile_batches`` vs one that calls
  ``read_hfile`` (bounded memory);
* PREFIX, DIFF and FAST_DIFF decoding (compiled sequential decoders) vs NONE on the same
  slice of at most 1M cells, and FAST_DIFF + SNAPPY (what production tables use);
* ``HFileWriter`` streaming the cells in 1M-cell batches (same bytes as ``write_hfile``);
* numba compile cost: a small read in a child process with an empty compile cache
  (``NUMBA_CACHE_DIR``), then again with that cache warm.

Results go to docs/performance.md by hand. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
from bench_real_shape import interleaved


def make_cells(rows: int) -> pa.Table:
    n = rows * 10
    r = np.repeat(np.arange(rows), 10)
    row = pa.array(np.char.mod("user%012d", r).astype("S16").astype(object), pa.binary())
    q = np.tile(np.repeat(np.arange(5), 2), rows)
    qual = pa.array(np.char.mod("c%d", q).astype("S2").astype(object), pa.binary())
    ts = np.tile(np.array([2000, 1000], np.int64), rows * 5)
    vals = np.arange(n, dtype=">i8").view("S8").astype(object)
    return pa.table(
        {
            "row": row,
            "qualifier": qual,
            "ts": ts,
            "type": pa.array(np.full(n, 4, np.int8)),
            "value": pa.array(vals, pa.binary()),
        }
    )


def best(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def fastest(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Best seconds of each contender, run round-robin ``runs`` times after one warm-up."""
    return {name: min(times) for name, times in interleaved(fns, runs).items()}


def zlib_seconds(path: str) -> float:
    """Time to decompress every data block of a GZ HFile with zlib alone."""
    from cellstore.hbase import open_hfile

    reader = open_hfile(path)
    data = Path(path).read_bytes()
    hs = reader.trailer.header_size
    blocks = reader.data_blocks()
    t0 = time.perf_counter()
    for e in blocks:
        end = e.offset + int.from_bytes(data[e.offset + 29 : e.offset + 33], "big")
        zlib.decompress(data[e.offset + hs : end], 47)
    return time.perf_counter() - t0


_CHILD = """
import sys
from cellstore import hbase

def status(key):
    # /proc/self/status: VmHWM is this process's own peak (ru_maxrss would include the
    # parent's peak, inherited across exec).
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0

base = status("VmRSS")
mode, path = sys.argv[1], sys.argv[2]
n = 0
if mode == "iter":
    for batch in hbase.iter_hfile_batches(path):
        n += batch.num_rows
else:
    n = hbase.read_hfile(path).num_rows
print(n, status("VmHWM") - base)
"""


_COMPILE = """
import sys, time
from cellstore import hbase
t0 = time.perf_counter()
hbase.read_hfile(sys.argv[1])
print(time.perf_counter() - t0)
"""


def compile_seconds(path: str, cache_dir: str) -> float:
    """First ``read_hfile`` (after the imports) in a child with ``NUMBA_CACHE_DIR=cache_dir``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    out = subprocess.run(
        [sys.executable, "-c", _COMPILE, path], capture_output=True, text=True, check=True, env=env
    )
    return float(out.stdout.split()[-1])


def peak_mib(mode: str, path: str) -> tuple[int, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, path], capture_output=True, text=True, check=True
    )
    cells, mib = out.stdout.split()
    return int(cells), float(mib)


def main() -> None:
    from cellstore.core.family import Family
    from cellstore.hbase import read_hfile
    from cellstore.storefiles import write_store_file
    from cellstore.storefiles.hfile.writer import HFileWriter, build_hfile, write_hfile
    from cellstore.storefiles.reader import StoreFileReader

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="read and write threads")
    args = parser.parse_args()
    cells = make_cells(args.rows)
    n = cells.num_rows
    fs = fsspec.filesystem("file")
    print(f"cells={n:,} threads={args.threads} load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-hfile-") as d:
        sf = str(Path(d) / "sf.parquet")
        codecs = ("none", "gz", "snappy", "zstd")
        paths = {codec: str(Path(d) / f"h-{codec}") for codec in codecs}

        def store() -> None:
            if fs.exists(sf):
                fs.rm(sf)
            write_store_file(fs, sf, cells, family=Family(name="cf"), seq=1, load_id="bench")

        writers: dict[str, Callable[[], object]] = {"write_store_file (zstd parquet)": store}
        for codec, path in paths.items():

            def hwrite(codec: str = codec, path: str = path) -> None:
                write_hfile(path, cells, family=b"cf", compression=codec, threads=args.threads)  # type: ignore[arg-type]

            writers[f"write_hfile NONE/{codec}"] = hwrite
        writes = fastest(writers, args.runs)
        wbase = writes["write_store_file (zstd parquet)"]
        for name, secs in writes.items():
            rate = n / secs / 1e6
            print(f"{name:40s} {rate:6.2f} M cells/s  {secs:6.2f} s  {wbase / secs:4.2f}x")
        sizes = {k: os.path.getsize(v) for k, v in paths.items()}
        print(f"files: parquet {os.path.getsize(sf):,} B, hfiles {sizes}")

        def parquet_scan() -> None:
            with StoreFileReader(fs, sf) as r:
                assert r.read().num_rows == n

        readers: dict[str, Callable[[], object]] = {
            "StoreFileReader.read (zstd parquet)": parquet_scan
        }
        for codec, path in paths.items():

            def hfile(path: str = path) -> None:
                assert read_hfile(path, threads=args.threads).num_rows == n

            readers[f"read_hfile NONE/{codec}"] = hfile
        results = fastest(readers, args.runs)
        base = results["StoreFileReader.read (zstd parquet)"]
        for name, secs in results.items():
            rate = n / secs / 1e6
            print(f"{name:40s} {rate:6.2f} M cells/s  {secs:6.2f} s  {base / secs:4.2f}x")
        gz_zlib = zlib_seconds(paths["gz"])
        share = gz_zlib / results["read_hfile NONE/gz"]
        print(f"GZ: zlib alone {gz_zlib:.2f} s = {share:.0%} of the read")
        mib_file = sizes["none"] / 2**20
        for mode in ("iter", "read"):
            got, mib = peak_mib(mode, paths["none"])
            assert got == n
            print(f"peak RSS growth, {mode:4s} NONE file ({mib_file:.0f} MiB): {mib:7.1f} MiB")
        small = cells.slice(0, min(n, 1_000_000))
        encoded: dict[str, Callable[[], object]] = {}
        settings = [(e, "none") for e in ("none", "prefix", "diff", "fast_diff")]
        for encoding, codec in [*settings, ("fast_diff", "snappy")]:
            data, _ = build_hfile(small, family=b"cf", encoding=encoding, compression=codec)  # type: ignore[arg-type]
            path = str(Path(d) / f"h-{encoding}-{codec}")
            Path(path).write_bytes(data)

            def enc(path: str = path) -> None:
                assert read_hfile(path, threads=args.threads).num_rows == small.num_rows

            encoded[f"read_hfile {encoding.upper()}/{codec}"] = enc
        decoded = fastest(encoded, args.runs)
        ebase = decoded["read_hfile NONE/none"]
        for name, secs in decoded.items():
            rate = small.num_rows / secs / 1e6
            print(
                f"{name:28s} ({small.num_rows:,} cells) {rate:6.2f} M cells/s  "
                f"{ebase / secs:4.2f}x of NONE"
            )
        streamed = str(Path(d) / "h-streamed")

        def stream() -> None:
            with HFileWriter(fs, streamed, family=b"cf", threads=args.threads) as w:
                for batch in cells.to_batches(max_chunksize=1_000_000):
                    w.write(batch)

        secs = best(stream, args.runs)
        print(f"HFileWriter, 1M-cell batches: {n / secs / 1e6:.2f} M cells/s  {secs:.2f} s")
        tiny = str(Path(d) / "h-tiny")
        write_hfile(tiny, cells.slice(0, 1000), family=b"cf")
        cache = str(Path(d) / "numba-cache")
        for label in ("cold", "warm"):
            t = compile_seconds(tiny, cache)
            print(
                f"first read_hfile of 1000 cells in a new process, {label} compile cache: {t:.2f} s"
            )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

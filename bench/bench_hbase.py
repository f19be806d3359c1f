"""HBase snapshot scan (issue 15): an HBase table read in place vs the same cells in cellstore.

Usage::

    .venv/bin/python bench/bench_hbase.py                  # 1M rows x 5 quals x 2 versions
    .venv/bin/python bench/bench_hbase.py --rows 100000    # 1M cells, quick
    .venv/bin/python bench/bench_hbase.py --encoding fast_diff --compression snappy

Cells: ROWS rows x 5 qualifiers x 2 versions (ts 2000, 1000) of 16-byte random values, as
``bench_scan.py`` makes them. Written once, both ways, in 4 regions (split at the row
quartiles) with 2 store files per region (the older versions, then the newer ones, as two
flushes or two loads leave them):

* an HBase 2.x root directory and a v2 snapshot of it (``.snapshotinfo`` + ``data.manifest``,
  written here from the protobuf schema): 8 HFiles v3.3 by ``write_hfile``, 64 KiB blocks,
  ``_SeqId_1_``/``_SeqId_2_`` names, ``--compression`` and ``--encoding`` (default NONE
  and NONE; production tables mostly use ``--encoding fast_diff --compression snappy``);
* a cellstore table (default family settings: zstd Parquet), loaded in two commits.

Measured, contenders interleaved run by run, 1 warm-up + ``--repeats``: the full scan
``scan().to_arrow()`` (latest version per column, HBase semantics) of the snapshot
(``hbase.open_snapshot``) and of the cellstore table; ``read_hfile`` of the 8 files
(no semantics) as the raw baseline. Results go to docs/performance.md by hand. Never part
of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from cellstore.core.family import Family
from cellstore.hbase import open_snapshot, read_hfile, write_hfile
from cellstore.hbasefiles.descriptors import encoded_region_name
from cellstore.warehouse import Table, connect


# ------------------------------------------------------------------ protobuf (proto2) bytes
def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    return varint(num << 3 | 2) + varint(len(value)) + value


def table_name(ns: str, q: str) -> bytes:
    return field(1, ns.encode()) + field(2, q.encode())


def region_info(table: str, rid: int, start: bytes, end: bytes) -> bytes:
    """A ``RegionInfo`` message (not delimited)."""
    return field(1, rid) + field(2, table_name("default", table)) + field(3, start) + field(4, end)


def table_schema(table: str, family: str, versions: int) -> bytes:
    attrs = field(1, b"VERSIONS") + field(2, str(versions).encode())
    fam = field(1, family.encode()) + field(2, attrs)
    return field(1, table_name("default", table)) + field(3, fam)


# ------------------------------------------------------------------------------- data
def make_cells(rows: int, seed: int = 0) -> pa.Table:
    """ROWS rows x 5 qualifiers x 2 versions (ts 2000, 1000) of 16-byte random values."""
    rng = np.random.default_rng(seed)
    n = rows * 10
    row_ids = np.repeat(np.arange(rows), 10)
    keys = np.char.add(b"user", np.char.zfill(row_ids.astype("S9"), 9))
    quals = np.array([b"q0", b"q1", b"q2", b"q3", b"q4"], dtype=object)
    values = np.frombuffer(rng.bytes(16 * n), dtype="S16").astype(object)
    return pa.table(
        {
            "row": pa.array(keys.astype(object), pa.binary()),
            "family": pa.array(["f"] * n),
            "qualifier": pa.array(np.tile(np.repeat(quals, 2), rows), pa.binary()),
            "ts": pa.array(np.tile(np.array([2000, 1000], dtype=np.int64), rows * 5)),
            "type": pa.array(np.full(n, 4, np.int8)),
            "value": pa.array(values, pa.binary()),
        }
    )


def splits_of(rows: int, regions: int) -> list[bytes]:
    return [b"user" + str(rows * i // regions).zfill(9).encode() for i in range(1, regions)]


def write_snapshot(
    root: Path,
    cells: pa.Table,
    splits: list[bytes],
    versions: int,
    *,
    compression: str = "none",
    encoding: str = "none",
) -> list[str]:
    """An HBase 2.x root with table ``bench`` and its snapshot ``snap``; returns the HFiles."""
    table, family = "bench", "f"
    tdir = root / "data" / "default" / table
    (tdir / ".tabledesc").mkdir(parents=True)
    (root / "hbase.version").write_bytes(b"PBUF" + field(1, b"8"))
    schema = table_schema(table, family, versions)
    (tdir / ".tabledesc" / ".tableinfo.0000000001").write_bytes(b"PBUF" + schema)
    bounds = [b"", *splits, b""]
    rows = cells.column("row")
    ts = cells.column("ts").to_numpy()
    region_manifests = []
    paths = []
    for i in range(len(bounds) - 1):
        start, end = bounds[i], bounds[i + 1]
        rid = 1_700_000_000_000
        enc = encoded_region_name(table, start, rid)
        info = region_info(table, rid, start, end)
        rdir = tdir / enc
        (rdir / family).mkdir(parents=True)
        (rdir / ".regioninfo").write_bytes(b"PBUF" + varint(len(info)) + info)
        lo = 0 if not start else int(np.searchsorted(rows.to_numpy(zero_copy_only=False), start))
        hi = (
            cells.num_rows
            if not end
            else int(np.searchsorted(rows.to_numpy(zero_copy_only=False), end))
        )
        part = cells.slice(lo, hi - lo)
        part_ts = ts[lo:hi]
        files = []
        for seq, version_ts in ((1, 1000), (2, 2000)):  # older flush first
            name = f"{seq:032x}_SeqId_{seq}_"
            sub = part.filter(pa.array(part_ts == version_ts)).drop_columns(["family"])
            path = rdir / family / name
            write_hfile(
                str(path),
                sub,
                family=family.encode(),
                compression=compression,  # type: ignore[arg-type]
                encoding=encoding,  # type: ignore[arg-type]
            )
            paths.append(str(path))
            files.append(field(1, name.encode()) + field(3, path.stat().st_size))
        fam_files = field(1, family.encode()) + b"".join(field(2, f) for f in files)
        region_manifests.append(field(2, info) + field(3, fam_files))
    snap = root / ".hbase-snapshot" / "snap"
    snap.mkdir(parents=True)
    desc = field(1, b"snap") + field(2, table.encode()) + field(3, 1) + field(4, 1) + field(5, 2)
    (snap / ".snapshotinfo").write_bytes(desc)
    manifest = field(1, schema) + b"".join(field(2, m) for m in region_manifests)
    (snap / "data.manifest").write_bytes(manifest)
    return paths


def write_table(root: str, cells: pa.Table, splits: list[bytes], versions: int) -> Table:
    t = connect(root).create_table(
        "bench", families=[Family(name="f", max_versions=versions)], splits=splits
    )
    ts = cells.column("ts").to_numpy()
    for version_ts in (1000, 2000):  # older load first
        t.load_cells(cells.filter(pa.array(ts == version_ts)))
    return t


# ----------------------------------------------------------------------------- timing
def interleaved(
    fns: dict[str, Callable[[], object]], repeats: int
) -> dict[str, list[tuple[float, float]]]:
    """(wall, cpu) seconds of each contender, one warm-up each, then round-robin."""
    for fn in fns.values():
        fn()
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - t0, time.process_time() - c0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--regions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compression", default="none", help="HFile codec (none, snappy, zstd...)")
    ap.add_argument("--encoding", default="none", help="HFile data block encoding")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    cells = make_cells(args.rows)
    n = cells.num_rows
    splits = splits_of(args.rows, args.regions)
    with tempfile.TemporaryDirectory(prefix="cellstore-bench-hbase-") as tmp:
        t0 = time.perf_counter()
        hfiles = write_snapshot(
            Path(tmp) / "hbase",
            cells,
            splits,
            versions=3,
            compression=args.compression,
            encoding=args.encoding,
        )
        t1 = time.perf_counter()
        table = write_table(str(Path(tmp) / "wh"), cells, splits, versions=3)
        t2 = time.perf_counter()
        print(f"wrote {len(hfiles)} HFiles in {t1 - t0:.1f}s, the table in {t2 - t1:.1f}s")
        snap = open_snapshot(str(Path(tmp) / "hbase"), "snap")
        d = snap.describe()
        print(f"snapshot: {len(d.regions)} regions, {d.files} files, {d.bytes / 1e6:.0f} MB")
        want = table.scan().to_arrow()
        got = snap.scan().to_arrow()
        assert got.num_rows == want.num_rows == n // 2, (got.num_rows, want.num_rows)
        assert got.column("value").equals(want.column("value"))
        fns: dict[str, Callable[[], object]] = {
            "read_hfile x8 (raw, no semantics)": lambda: [read_hfile(p) for p in hfiles],
            "hbase snapshot scan().to_arrow()": lambda: snap.scan().to_arrow(),
            "cellstore table scan().to_arrow()": lambda: table.scan().to_arrow(),
        }
        results = interleaved(fns, args.repeats)
    print(
        f"cells={n:,} rows={args.rows:,} regions={args.regions} files/store=2 "
        f"hfiles={args.encoding.upper()}+{args.compression.upper()} "
        f"repeats={args.repeats} threads={pa.cpu_count()} load={os.getloadavg()[0]:.2f}"
    )
    cs = min(w for w, _ in results["cellstore table scan().to_arrow()"])
    for name, runs in results.items():
        best, cpu = min(runs)
        median = statistics.median(w for w, _ in runs)
        print(
            f"  {name:36s} min {best:6.3f}s  median {median:6.3f}s  cpu {cpu:6.2f}s  "
            f"{n / best / 1e6:6.2f} M cells/s  vs cellstore {cs / best:5.2f}x"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

"""Metadata cost benchmark (issue 16): commit time, bytes written, open and plan time.

Usage::

    .venv/bin/python bench/bench_metadata.py                       # 1,000 regions, 12 loads
    .venv/bin/python bench/bench_metadata.py --regions 1000 --loads 50 --files-per-load 1000
    .venv/bin/python bench/bench_metadata.py --initial-files 1000000 --loads 20   # 1M live
    .venv/bin/python bench/bench_metadata.py --format-version 1 --loads 12        # baseline
    .venv/bin/python bench/bench_metadata.py --loads 1000 --every 50 --expire --json new.json
    .venv/bin/python bench/bench_metadata.py --loads 1000 --every 50 --expire --writer old \
        --json old.json
    .venv/bin/python bench/bench_metadata.py --svg docs/metadata-v2.svg new=new.json old=old.json

A table of ``--regions`` regions takes ``--loads`` commits of ``--files-per-load`` store
files each (one per region, round robin), committed through ``cellstore.commit.commit``
exactly as a load commits them. The entries are synthetic (no data files are written: only
metadata is measured) but shaped like a real load's (``--synthetic-layout real``, the
default): store-file stems as the loader names them,
``<ms timestamp>-<12 hex load id>-<8 hex nonce>-m<region index>-<part>``, the load id
``<ms timestamp>-<12 hex>``, random hex from a seeded RNG (``--seed``), row ranges,
cells, sizes, min/max timestamps and footer digests that differ per file, and each load's
own sequence number. ``--synthetic-layout old`` writes the earlier, far more compressible
entries (``data/<region>/cf/load000001-000001-000.parquet``, equal rows, sizes and
counts). ``--writer old`` lists every manifest in each root (no ``manifests-ref`` part,
as writers before it did). After each commit it records:

* the commit's wall time and the bytes it wrote under ``_meta/``;
* the total size of ``_meta/``;
* the time to open the table from a fresh warehouse handle and plan a point get (the
  files a get of one row would read), which is what every reader pays first.

``--format-version`` picks the table's metadata format (2, manifests, is the default; 1
is the single-document format for comparison). ``--initial-files N`` starts the table with
one commit of N synthetic entries (not measured) so the loads run against N live files.
At the end the summary compares ``_meta`` with one full file list: the size of a single
manifest of every live entry (format 2) or of the newest version document (format 1), as
this release writes it (so a writer that packs big manifests tighter shrinks it too), and
splits ``_meta`` by kind: roots, parts, manifests by level, manifests no version lists.

Prints one line per commit (or every ``--every`` commits) and a summary; ``--json FILE``
writes every measurement. Results go to docs/performance.md by hand. Never part of the
test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import cellstore
from cellstore.commit import Commit, FileChange, commit
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.manifest import MAX_INLINE_MERGE_ENTRIES, TableLog
from cellstore.reader import Scan, ScanOptions
from cellstore.warehouse.table import Table


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


#: Timestamp of the first synthetic load (ms); loads follow every 5 minutes.
T0_MS = 1_795_839_038_982
LOAD_INTERVAL_MS = 300_000


def _load_id(load: int, rng: random.Random) -> str:
    """A load id as ``cellstore.loader.direct.new_load_id`` makes them."""
    return f"{T0_MS + load * LOAD_INTERVAL_MS:013d}-{rng.getrandbits(48):012x}"


def _real_entries(
    meta: TableMetadata,
    load: int,
    count: int,
    rng: random.Random,
    *,
    load_id: str,
    offset: int = 0,
) -> list[FileEntry]:
    """``count`` entries shaped like one real load's files (see the module docstring).

    Rows lie inside their region for this bench's splits (``%06d`` of the region index
    times 1000).
    """
    regions = meta.regions
    nonce = f"{rng.getrandbits(32):08x}"
    now = T0_MS + load * LOAD_INTERVAL_MS
    out = []
    for i in range(count):
        idx = (offset + load * count + i) % len(regions)
        r = regions[idx]
        lo, hi = rng.randrange(0, 500), rng.randrange(500, 1000)
        first = b"%06d-%08x" % (idx * 1000 + lo, rng.getrandbits(32))
        last = b"%06d-%08x" % (idx * 1000 + hi, rng.getrandbits(32))
        cells = rng.randrange(20_000, 200_000)
        max_ts = now - rng.randrange(0, 60_000)
        out.append(
            FileEntry(
                path=f"data/{r.id}/cf/{load_id}-{nonce}-m{idx:05d}-{i // len(regions):03d}.parquet",
                region=r.id,
                family="cf",
                seq=meta.next_seq,
                cells=cells,
                delete_markers=0,
                size=cells * rng.randrange(28, 48),
                first_row=first,
                last_row=last,
                min_ts=max_ts - rng.randrange(0, 3_600_000),
                max_ts=max_ts,
                load_id=load_id,
                footer_digest=f"{rng.getrandbits(64):016x}",
            )
        )
    return out


def _entries(meta: TableMetadata, load: int, count: int, *, offset: int = 0) -> list[FileEntry]:
    """The earlier synthetic entries (``--synthetic-layout old``): highly compressible."""
    regions = meta.regions
    out = []
    for i in range(count):
        r = regions[(offset + load * count + i) % len(regions)]
        first = r.start + b"\x00" if r.start else b"\x00"
        out.append(
            FileEntry(
                path=f"data/{r.id}/cf/load{load:06d}-{i:06d}-000.parquet",
                region=r.id,
                family="cf",
                seq=1,
                cells=100_000,
                delete_markers=0,
                size=4_000_000,
                first_row=first,
                last_row=first + b"\xff",
                min_ts=1_700_000_000_000 + load,
                max_ts=1_700_000_000_000 + load + 1000,
                load_id=f"load-{load:06d}",
                footer_digest="0123456789abcdef",
            )
        )
    return out


def _breakdown(t: Table) -> dict[str, int]:
    """Bytes of ``_meta`` by kind: roots, parts, manifests by level, manifests no version lists.

    Manifests are attributed to the level of the first root that lists them; call before
    any expire (an expired version's manifests would count as unlisted).
    """
    meta_dir = Path(t.path) / "_meta"
    out = {
        "roots": sum(f.stat().st_size for f in meta_dir.glob("v*.json")),
        "parts": sum(f.stat().st_size for f in (meta_dir / "parts").glob("*")),
    }
    level_of: dict[str, int] = {}
    for v in range(t.log.oldest_version(), t.log.latest_version() + 1):
        for ref in t.log.read(v).manifests:
            level_of.setdefault(ref.path, ref.level)
    for f in (meta_dir / "manifests").glob("*"):
        level = level_of.get(f"_meta/manifests/{f.name}")
        key = "manifests-unlisted" if level is None else f"manifests-level-{level}"
        out[key] = out.get(key, 0) + f.stat().st_size
    return out


def _open_and_plan(root: str, name: str, row: bytes) -> tuple[float, int]:
    start = time.perf_counter()
    t = cellstore.connect(root).table(name)
    # What Table.get plans (without reading the synthetic, absent files).
    options = ScanOptions(start_row=row, stop_row=row + b"\x00", point_row=row)
    tasks = Scan(t.fs, t.path, t.metadata, options, now_ms=int(time.time() * 1000)).plan()
    files = sum(len(f.files) for task in tasks for f in task.families)
    return time.perf_counter() - start, files


def _svg(series: dict[str, list[dict[str, Any]]], path: Path) -> None:
    """Four panels against commits (commit s, bytes written, open + plan s, ``_meta`` bytes
    with history kept), one line per run."""
    panels = [
        ("commit_s", "commit time (s)"),
        ("written_bytes", "bytes written per commit"),
        ("open_plan_get_s", "open + plan a get (s)"),
        ("meta_bytes", "_meta bytes, history kept"),
    ]
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    w, h, pad = 360, 220, 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * len(panels)}" height="{h + 40}" '
        'font-family="sans-serif" font-size="11">'
    ]
    for p, (key, title) in enumerate(panels):
        x0 = p * w
        ys = [r[key] for rows in series.values() for r in rows]
        xs = [r["commit"] for rows in series.values() for r in rows]
        ymax, xmax = max(ys) or 1, max(xs) or 1
        out.append(f'<text x="{x0 + pad}" y="14">{title}, max {ymax:.3g}</text>')
        out.append(
            f'<rect x="{x0 + pad}" y="20" width="{w - pad - 10}" height="{h - 40}" '
            'fill="none" stroke="#999"/>'
        )
        out.append(f'<text x="{x0 + pad}" y="{h - 5}">0</text>')
        out.append(f'<text x="{x0 + w - 60}" y="{h - 5}">{xmax} commits</text>')
        for i, (name, rows) in enumerate(series.items()):
            pts = " ".join(
                f"{x0 + pad + (r['commit'] / xmax) * (w - pad - 10):.1f},"
                f"{20 + (h - 40) * (1 - r[key] / ymax):.1f}"
                for r in rows
            )
            color = colors[i % len(colors)]
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1" points="{pts}"/>')
            if p == 0:
                out.append(
                    f'<text x="{x0 + pad + 8}" y="{34 + 14 * i}" fill="{color}">{name}</text>'
                )
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regions", type=int, default=1000)
    parser.add_argument("--loads", type=int, default=12)
    parser.add_argument("--files-per-load", type=int, default=1000)
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--format-version", type=int, choices=(1, 2), default=2)
    parser.add_argument("--initial-files", type=int, default=0)
    parser.add_argument(
        "--synthetic-layout",
        choices=("real", "old"),
        default="real",
        help="entries shaped like a real load's (default) or the earlier compressible ones",
    )
    parser.add_argument(
        "--writer",
        choices=("new", "old"),
        default="new",
        help="old: every root lists every manifest (no manifests-ref part)",
    )
    parser.add_argument("--seed", type=int, default=16, help="seed of the synthetic entries")
    parser.add_argument(
        "--max-inline-merge-entries",
        type=int,
        default=MAX_INLINE_MERGE_ENTRIES,
        help="a commit merges manifests inline only while the run holds at most this many rows",
    )
    parser.add_argument(
        "--expire",
        action="store_true",
        help="at the end, expire every version but the newest (and 1); report _meta after",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--keep",
        type=Path,
        help="build the warehouse in this (new) directory and keep it (for profiling)",
    )
    parser.add_argument(
        "--svg",
        nargs="+",
        metavar=("OUT", "NAME=JSON"),
        help="only draw OUT.svg from earlier --json outputs (NAME=FILE ...), then exit",
    )
    args = parser.parse_args()
    if args.svg:
        out, *inputs = args.svg
        series = {}
        for spec in inputs:
            name, _, file = spec.partition("=")
            series[name] = json.loads(Path(file).read_text())["rows"]
        _svg(series, Path(out))
        return

    with contextlib.ExitStack() as stack:
        if args.keep is not None:
            args.keep.mkdir(parents=True)
            tmp = str(args.keep)
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-meta-"))
        root = os.path.join(tmp, "wh")
        wh = cellstore.connect(root)
        splits = [b"%06d" % (i * 1000) for i in range(1, args.regions)]
        t = wh.create_table(
            "bench:meta",
            families=[cellstore.Family(name="cf")],
            splits=splits,
            format_version=args.format_version,
        )
        t.log = TableLog(
            t.fs,
            t.path,
            manifest_parts=args.writer == "new",
            max_inline_merge_entries=args.max_inline_merge_entries,
        )
        rng = random.Random(args.seed)
        # a row of the middle region inside every file of that region (both layouts)
        real = args.synthetic_layout == "real"
        mid = len(t.metadata.regions) // 2
        mid_start = t.metadata.regions[mid].start
        get_row = b"%06d-" % (mid * 1000 + 500) if real else mid_start + b"\x00"
        meta_dir = Path(t.path) / "_meta"
        rows = []
        initial = args.initial_files
        if initial:
            start = time.perf_counter()
            if real:
                init_id = _load_id(-1, rng)
                entries = _real_entries(t.metadata, -1, initial, rng, load_id=init_id)
            else:
                entries = [
                    dataclasses.replace(e, path=e.path.replace("load", "init"))
                    for e in _entries(t.metadata, 0, initial)
                ]
            commit(t.log, Commit(operation="load", changes=[FileChange(add=entries)], new_seq=True))
            print(f"initial commit of {initial} entries: {time.perf_counter() - start:.1f} s")
        for load in range(args.loads):
            meta = t.refresh().metadata
            if real:
                load_id = _load_id(load, rng)
                entries = _real_entries(meta, load, args.files_per_load, rng, load_id=load_id)
            else:
                load_id = f"load-{load:06d}"
                entries = _entries(meta, load, args.files_per_load)
            before = _dir_bytes(meta_dir)
            start = time.perf_counter()
            commit(
                t.log,
                Commit(
                    operation="load",
                    changes=[FileChange(add=entries)],
                    load_id=load_id,
                    new_seq=True,
                ),
            )
            took = time.perf_counter() - start
            total = _dir_bytes(meta_dir)
            open_s, files = _open_and_plan(root, "bench:meta", get_row)
            rec = {
                "commit": load + 1,
                "live_files": initial + (load + 1) * args.files_per_load,
                "commit_s": round(took, 4),
                "written_bytes": total - before,
                "meta_bytes": total,
                "open_plan_get_s": round(open_s, 4),
                "get_files": files,
                "manifests": len(t.log.read(t.log.latest_version()).manifests),
            }
            rows.append(rec)
            if (load + 1) % args.every == 0 or load + 1 == args.loads:
                print(json.dumps(rec))
        t.refresh()
        best_open = min(_open_and_plan(root, "bench:meta", get_row)[0] for _ in range(5))
        breakdown = _breakdown(t)
        expired_bytes = None
        expired_breakdown: dict[str, int] = {}
        if args.expire:
            from cellstore.jobs import expire

            expire(t, retention_ms=0, enforce_retention=False, dry_run=False)
            expired_bytes = _dir_bytes(meta_dir)
            expired_breakdown = _breakdown(t)
        latest = t.log.read(t.log.latest_version())
        if latest.format_version >= 2:
            full = t.log.rewrite_manifests(latest, version=latest.version)[0].size
        else:
            full = len(t.log.read_bytes(latest.version))
        commit_s = [r["commit_s"] for r in rows]
        written = [r["written_bytes"] for r in rows]
        opens = [r["open_plan_get_s"] for r in rows]
        stats = {
            "commit_s_median": statistics.median(commit_s),
            "commit_s_max": max(commit_s),
            "written_bytes_mean": round(statistics.mean(written)),
            "written_bytes_max": max(written),
            "open_plan_get_s_median": statistics.median(opens),
            "open_plan_get_s_max": max(opens),
        }
        if args.json:
            summary = {
                "synthetic_layout": args.synthetic_layout,
                "writer": args.writer,
                "full_list_bytes": full,
                "best_open_plan_get_s": best_open,
                "meta_bytes_after_expire": expired_bytes,
                "meta_breakdown": breakdown,
                "meta_breakdown_after_expire": expired_breakdown,
                **stats,
            }
            args.json.write_text(json.dumps({"rows": rows, **summary}, indent=1))
        last = rows[-1]
        print(
            f"after {last['commit']} commits, {last['live_files']} live files: commit "
            f"{last['commit_s']:.3f} s writing {last['written_bytes'] / 1e6:.2f} MB, _meta "
            f"{last['meta_bytes'] / 1e6:.1f} MB, open + plan a get {last['open_plan_get_s']:.3f} s"
        )
        print(
            f"one full file list: {full / 1e6:.1f} MB; _meta is {last['meta_bytes'] / full:.2f}x "
            f"that; {last['manifests']} manifests; open + plan a get, best of 5: "
            f"{best_open:.3f} s"
        )
        print(
            f"over all commits: commit median {stats['commit_s_median']:.3f} s, max "
            f"{stats['commit_s_max']:.3f} s; written mean {stats['written_bytes_mean'] / 1e3:.0f} "
            f"KB, max {stats['written_bytes_max'] / 1e3:.0f} KB; open + plan a get median "
            f"{stats['open_plan_get_s_median']:.3f} s, max {stats['open_plan_get_s_max']:.3f} s"
        )
        print(
            "_meta by kind: "
            + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sorted(breakdown.items()))
        )
        if expired_bytes is not None:
            print(
                f"after expiring all but the newest version: _meta {expired_bytes / 1e6:.1f} "
                f"MB, {expired_bytes / full:.2f}x one full file list; by kind: "
                + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sorted(expired_breakdown.items()))
            )


if __name__ == "__main__":
    main()

"""Regenerate tests/golden/vN (run once per format version; the output is committed).

    python tests/golden/make_golden.py tests/golden/v1
    python tests/golden/make_golden.py tests/golden/v2

The directory name gives the table-metadata format version the table is created with.

Every later release must still read the committed tables and find ``expected.json``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa

from cellstore.core.family import Family
from cellstore.storefiles import read_store_file
from cellstore.warehouse import connect


def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    wh = connect(out / "warehouse")
    t = wh.create_table(
        "golden:webtable",
        families=[
            Family(name="contents", max_versions=3),
            Family(
                name="anchor",
                ttl=86400,
                keep_deleted_cells="true",
                compression="snappy",
                bloom_filter=False,
                min_versions=1,
            ),
        ],
        splits=[b"com.m", b"org\x00"],
        format_version=int(out.name.removeprefix("v")),
    )

    def cells(rows):
        cols = list(zip(*rows, strict=True))
        return pa.table(
            {
                "row": pa.array(cols[0], pa.binary()),
                "family": cols[1],
                "qualifier": pa.array(cols[2], pa.binary()),
                "ts": pa.array(cols[3], pa.int64()),
                "type": pa.array(cols[4], pa.int8()),
                "value": pa.array(cols[5], pa.binary()),
            }
        )

    t.load_cells(
        cells(
            [
                (b"com.cnn.www", "contents", b"html", 3, 4, b"<html>v3"),
                (b"com.cnn.www", "contents", b"html", 5, 4, b"<html>v5"),
                (b"com.cnn.www", "contents", b"html", 6, 4, b"<html>v6"),
                (b"com.cnn.www", "anchor", b"cnnsi.com", 9, 4, b"CNN"),
                (b"com.cnn.www", "anchor", b"my.look.ca", 8, 4, b"CNN.com"),
                (b"com.example.www", "contents", b"html", 5, 4, b"<html>ex"),
                (b"org.apache.hbase", "contents", b"html", 7, 4, b"\x00\xff binary"),
                (b"org\x00", "contents", b"", 1, 4, b"empty qualifier"),
            ]
        ),
        load_id="golden-load-1",
        now_ms=1_700_000_000_000,
    )
    t.load_cells(
        cells(
            [
                (b"com.cnn.www", "contents", b"html", 5, 8, b""),
                (b"com.example.www", "contents", b"", 10, 14, b""),
                (b"com.cnn.www", "anchor", b"", 9, 10, b""),
                (b"com.cnn.www", "anchor", b"my.look.ca", 8, 12, b""),
                (b"org.apache.hbase", "contents", b"html", 7, 4, b"newer load wins"),
            ]
        ),
        load_id="golden-load-2",
        now_ms=1_700_000_000_000,
    )
    t = wh.table("golden:webtable")
    files = []
    for f in sorted(t.files, key=lambda f: (f.seq, f.region, f.family)):
        data = read_store_file(t.fs, t.file_path(f))
        files.append(
            {
                "region": f.region,
                "family": f.family,
                "seq": f.seq,
                "cells": [
                    [r.hex(), q.hex(), ts, ty, v.hex()]
                    for r, q, ts, ty, v in zip(
                        *(data.column(c).to_pylist() for c in data.column_names), strict=True
                    )
                ],
            }
        )
    expected = {
        "table": "golden:webtable",
        "version": t.version,
        "families": [f.to_dict() for f in t.families],
        "regions": [[r.id, r.start.hex(), r.end.hex()] for r in t.regions],
        "files": files,
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    # The demo's probe directory is not part of the golden table.
    shutil.rmtree(out / "warehouse" / "_probe", ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

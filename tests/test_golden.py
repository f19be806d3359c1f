"""The committed golden tables of every format version must stay readable (docs/format.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cellstore.storefiles import check, read_store_file
from cellstore.warehouse import connect

GOLDEN = Path(__file__).parent / "golden"
VERSIONS = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name.startswith("v"))


@pytest.mark.parametrize("version", VERSIONS)
def test_golden_table_reads_back(version):
    base = GOLDEN / version
    expected = json.loads((base / "expected.json").read_text())
    wh = connect(base / "warehouse")
    assert wh.list_tables() == [expected["table"]]
    t = wh.table(expected["table"])
    assert t.version == expected["version"]
    assert [f.to_dict() for f in t.families] == expected["families"]
    assert [[r.id, r.start.hex(), r.end.hex()] for r in t.regions] == expected["regions"]
    got = []
    for f in sorted(t.files, key=lambda f: (f.seq, f.region, f.family)):
        assert check(t.fs, t.file_path(f), region=t.metadata.region(f.region), entry=f).ok
        data = read_store_file(t.fs, t.file_path(f))
        got.append(
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
    assert got == expected["files"]
    # Earlier versions stay readable (as-of reads).
    assert len(wh.table(expected["table"], version=2).files) < len(t.files)


def test_golden_v1_exists():
    assert "v1" in VERSIONS

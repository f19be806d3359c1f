"""Spill-mode loads: runs merged per region and family under a file limit (R14.4)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cellstore import connect
from cellstore.core.family import Family
from cellstore.loader import Mapping
from cellstore.loader.settings import LoadSettings
from cellstore.storefiles import check, write_store_file
from cellstore.storefiles.columns import group_records
from cellstore.storefiles.writer import StoreFileWriter
from clusters import process_client

MAPPING = Mapping.simple(row_key="k", columns=["f:a=a", "f:b=b:long", "g:c=a"])


def frame(n: int, *, seed: int = 1, repeat: int | None = None) -> pd.DataFrame:
    order = random.Random(seed).sample(range(n), n)
    keys = [f"row{(i % repeat) if repeat else i:06d}" for i in order]
    return pd.DataFrame(
        {"k": keys, "a": [f"value-{i}-" + "x" * 40 for i in range(n)], "b": list(range(n))}
    )


def per_store(t) -> Counter[tuple[str, str]]:
    return Counter((f.region, f.family) for f in t.files)


def data_files(t) -> set[str]:
    fs = t.fs
    found = fs.find(f"{t.path}/data")
    return {p[len(t.path.rstrip("/")) + 1 :] for p in found if p.endswith(".parquet")}


def raw_cells(t) -> pd.DataFrame:
    return t.scan(raw=True, max_versions=10).to_pandas().reset_index(drop=True)


def test_runs_over_the_limit_are_merged_before_commit(tmp_path: Path):
    df = frame(12_000)
    wh = connect(str(tmp_path / "wh"))
    spec = dict(families=["f", "g"], splits=[b"row004", b"row008"])
    spilled = wh.create_table("spilled", **spec)
    report = spilled.load(
        df,
        mapping=MAPPING,
        memory_budget=1 << 20,
        workers=2,
        max_files_per_region=3,
        now_ms=7,
        key_advice="off",
    )
    assert report.mode == "spill" and report.merged_runs > 3 * 2 * 3
    counts = per_store(spilled)
    assert len(counts) == 6 and max(counts.values()) <= 3
    assert report.files == len(spilled.files) == sum(counts.values())
    assert report.cells == 3 * 12_000 and report.duplicates_dropped == 0
    # The merged runs are gone: the table directory holds exactly the committed files.
    assert data_files(spilled) == {f.path for f in spilled.files}
    for f in spilled.files:
        region = spilled.metadata.region(f.region)
        assert check(spilled.fs, spilled.file_path(f), region=region, entry=f).ok
    # Same cells as a load of the same input in merge mode (one file per region and family).
    merged = wh.create_table("merged", **spec)
    assert merged.load(df, mapping=MAPPING, now_ms=7, key_advice="off").mode == "merge"
    pd.testing.assert_frame_equal(raw_cells(spilled), raw_cells(merged))


def test_later_record_wins_across_merged_runs(tmp_path: Path):
    n = 20_000
    df = pd.DataFrame({"k": [f"k{i % 100:03d}" for i in range(n)], "v": [str(i) for i in range(n)]})
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f"])
    report = t.load(
        df,
        mapping=Mapping.simple(row_key="k", columns=["f:v=v"]),
        memory_budget=1 << 20,
        max_files_per_region=1,
        now_ms=5,
        key_advice="off",
    )
    assert report.mode == "spill" and report.merged_runs > 1
    assert len(t.files) == 1 and t.files[0].cells == 100
    assert report.cells == 100 and report.duplicates_dropped == n - 100
    got = t.scan(raw=True, max_versions=10).to_pandas()
    assert got.value.tolist() == [str(n - 100 + i).encode() for i in range(100)]


def test_merge_rolls_files_and_stays_bounded(tmp_path: Path):
    """With files capped at 64 KiB the merged region cannot shrink to the limit: the
    merge stops once a pass no longer reduces the count, with files of about that size."""
    df = frame(8_000, seed=3)
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f", "g"])
    report = t.load(
        df,
        mapping=MAPPING,
        memory_budget=1 << 20,
        workers=2,
        max_file_bytes=64 << 10,
        max_files_per_region=2,
        now_ms=1,
        key_advice="off",
    )
    assert report.merged_runs > 0
    fam_f = [f for f in t.files if f.family == "f"]
    runs_before = report.merged_runs  # runs merged across both families
    assert len(t.files) < runs_before
    uncompressed = 8_000 * (len("row000000") * 2 + 2 + 13 + 50 + 8)  # rough cell bytes
    assert len(fam_f) <= 2 * (uncompressed // (64 << 10) + 1)
    assert data_files(t) == {f.path for f in t.files}
    assert len(t.scan(families="f").to_pandas()) == 2 * 8_000


def test_default_limit_is_hbase_32(tmp_path: Path):
    df = frame(40_000, seed=5)  # about 47 runs of 64 KiB
    t = connect(str(tmp_path / "wh")).create_table("t", families=[Family(name="f")])
    report = t.load(
        df,
        mapping=Mapping.simple(row_key="k", columns=["f:a=a"]),
        memory_budget=1 << 20,
        workers=4,
        now_ms=1,
        key_advice="off",
    )
    assert report.mode == "spill" and report.merged_runs > 32  # more runs than HBase takes
    assert 1 <= len(t.files) <= 32
    assert report.to_dict()["merged-runs"] == report.merged_runs
    assert t.scan().count_rows() == 40_000


# ------------------------------------------------------------------ streaming writer
def cells_of(rows: list[bytes], quals: list[bytes], *, ts: int = 5) -> pa.Table:
    n = len(rows)
    return pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "qualifier": pa.array(quals, pa.binary()),
            "ts": pa.array(np.full(n, ts), pa.int64()),
            "type": pa.array(np.full(n, 4), pa.int8()),
            "value": pa.array([b"v"] * n, pa.binary()),
        }
    )


def test_stream_writer_matches_write_store_file(tmp_path: Path):
    fs = fsspec.filesystem("file")
    fam = Family(name="d")
    n = 5000
    cells = cells_of(
        [f"r{i // 3:05d}".encode() for i in range(n)], [f"q{i % 3}".encode() for i in range(n)]
    )
    with StoreFileWriter(
        fs, str(tmp_path / "s.parquet"), family=fam, seq=3, load_id="l", row_group_cells=700
    ) as w:
        for start in range(0, n, 401):  # chunks cut rows in the middle
            w.write(cells.slice(start, 401))
        info = w.close()
    ref = write_store_file(
        fs, str(tmp_path / "w.parquet"), cells, family=fam, seq=3, load_id="l", row_group_cells=700
    )
    assert info.footer_dict() == ref.footer_dict()
    assert info.rows == -(-n // 3) and info.row_groups == ref.row_groups == -(-n // 700)
    report = check(fs, str(tmp_path / "s.parquet"))
    assert report.ok, report.problems


def test_stream_writer_abort_and_empty(tmp_path: Path):
    fs = fsspec.filesystem("file")
    path = str(tmp_path / "x.parquet")
    with (
        pytest.raises(RuntimeError),
        StoreFileWriter(fs, path, family=Family(name="d"), seq=1, load_id="l") as w,
    ):
        w.write(cells_of([b"a"], [b"q"]))
        raise RuntimeError("boom")
    assert not Path(path).exists()
    w = StoreFileWriter(fs, path, family=Family(name="d"), seq=1, load_id="l")
    with pytest.raises(ValueError):
        w.close()
    assert not Path(path).exists()


@pytest.mark.slow
def test_merge_on_a_local_cluster_with_worker_processes(tmp_path: Path):
    """Merge tasks are plain picklable objects: they run on distributed workers too."""
    df = frame(6_000, seed=9)
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f", "g"], splits=[b"row003"])
    with process_client(2) as client:
        report = t.load(
            df,
            mapping=MAPPING,
            client=client,
            memory_budget=1 << 20,
            max_files_per_region=2,
            now_ms=3,
            key_advice="off",
        )
    assert report.mode == "spill" and report.merged_runs > 4
    assert max(per_store(t).values()) <= 2 and len(per_store(t)) == 4
    assert data_files(t) == {f.path for f in t.files}
    assert t.scan().count_rows() == 6_000


def test_spill_merge_sizes_column_row_groups_to_the_budget(tmp_path: Path):
    """A spill merge writing column files under a small memory budget gives them smaller
    row groups (their writer holds a whole group: bench/bench_memory.py), and the cells
    are those of a merge-mode load."""
    from cellstore.storefiles import StoreFileReader

    df = frame(40_000)
    wh = connect(str(tmp_path / "wh"))
    spec = dict(
        families=[Family(name="f", layout="columns"), Family(name="g", layout="cells")],
        splits=[b"row020000"],
    )
    spilled = wh.create_table("spilled", **spec)
    report = spilled.load(
        df, mapping=MAPPING, memory_budget=1 << 20, workers=2, now_ms=7, key_advice="off"
    )
    assert report.mode == "spill" and report.merged_runs > 0
    groups: dict[str, list[int]] = {"columns": [], "cells": []}
    for f in spilled.files:
        with StoreFileReader(spilled.fs, spilled.file_path(f), entry=f) as r:
            meta = r.parquet.metadata
            groups[f.layout] += [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
        assert check(spilled.fs, spilled.file_path(f), entry=f).ok
    # 20,000 records a region: a 16,384-record group and the rest at the default
    # (group_records), smaller groups here
    default = group_records(LoadSettings().row_group_cells, 1)
    assert groups["columns"] and max(groups["columns"]) < default
    assert len(groups["columns"]) > sum(f.layout == "columns" for f in spilled.files)
    merged = wh.create_table("merged", **spec)
    assert merged.load(df, mapping=MAPPING, now_ms=7, key_advice="off").mode == "merge"
    assert all(f.layout == "columns" for f in merged.files if f.family == "f")
    pd.testing.assert_frame_equal(raw_cells(spilled), raw_cells(merged))

"""Importing HBase snapshots and tables into cellstore (``hbase.import_snapshot/import_table``).

Every import is checked cell by cell against the source read in place: the same scans
(normal, raw, versions, time range, reversed, filtered, gets) on the HBase snapshot or root
and on the imported table return the same cells. Expected tie winners (R3.2, R3.3, R14.5)
are also asserted directly from how the test HFiles were written. The round trip
snapshot -> import -> ``export_hfiles(raw=True)`` -> ``read_hfile`` gives back the cells.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore import connect
from cellstore.cli.console import cli
from cellstore.core.filters import ColumnPrefixFilter, ValueFilter
from cellstore.errors import (
    CorruptFileError,
    SnapshotNotFoundError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFormatError,
)
from cellstore.hbase import (
    HBaseTable,
    import_snapshot,
    import_table,
    open_snapshot,
    open_table,
    read_hfile,
)
from cellstore.hbase.importer import PROP_ID, derive_import_id, plan_import
from cellstore.jobs import export_hfiles
from cellstore.storefiles import check
from clusters import process_client

try:
    import hbase_fixtures as hf
except ImportError:  # pragma: no cover
    from tests import hbase_fixtures as hf

pytestmark = pytest.mark.needs(
    need="vectors", present=hf.BIGTABLE.exists(), reason="HBase test vectors not present"
)

NOW = 1_700_000_000_000
ALL = 2**31 - 1


@pytest.fixture(scope="module")
def export_root(tmp_path_factory: pytest.TempPathFactory):
    d = hf.unpack_vector(hf.BIGTABLE, tmp_path_factory.mktemp("bigtable"))
    yield d / "data"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def root094(tmp_path_factory: pytest.TempPathFactory):
    d = hf.unpack_vector(hf.NS_UPGRADE, tmp_path_factory.mktemp("ns094"))
    yield d / "hbase"
    shutil.rmtree(d, ignore_errors=True)


def _cells(t: pa.Table) -> list[dict[str, Any]]:
    return t.to_pylist()


def _scans(src: HBaseTable) -> list[dict[str, Any]]:
    """Scan options covering every kind: raw, versions, time range, reversed, filters."""
    ts = sorted(set(src.scan(raw=True, max_versions=ALL, now_ms=NOW).to_arrow()["ts"].to_pylist()))
    mid = ts[len(ts) // 2] if ts else 1
    return [
        {},
        {"raw": True},
        {"raw": True, "max_versions": ALL},
        {"max_versions": 2},
        {"max_versions": ALL},
        {"time_range": (0, mid)},
        {"time_range": (mid, mid + 1), "max_versions": ALL},
        {"raw": True, "time_range": (0, mid + 1), "max_versions": ALL},
        {"reversed": True, "max_versions": ALL},
        {"reversed": True, "raw": True},
        {"filter": ValueFilter("!=", b"")},
        {"filter": ColumnPrefixFilter(b"a"), "max_versions": ALL},
        {"limit": 3},
    ]


def assert_same_reads(src: HBaseTable, dst: Any) -> int:
    """Every scan of :func:`_scans` and a few gets agree cell by cell; returns raw cells."""
    for opts in _scans(src):
        want = _cells(src.scan(now_ms=NOW, **opts).to_arrow())
        got = _cells(dst.scan(now_ms=NOW, **opts).to_arrow())
        assert got == want, opts
    rows = src.scan(raw=True, now_ms=NOW).to_arrow()["row"].to_pylist()
    for row in sorted(set(rows))[:: max(1, len(set(rows)) // 5)]:
        assert _cells(dst.get(row, now_ms=NOW)) == _cells(src.get(row, now_ms=NOW)), row
    return len(_cells(src.scan(raw=True, max_versions=ALL, now_ms=NOW).to_arrow()))


def assert_nothing_written(wh_dir: Path) -> None:
    assert not list(wh_dir.rglob("*.parquet"))
    assert connect(wh_dir).list_tables() == []


def _check_files(wh: Any, name: str) -> None:
    t = wh.table(name)
    for entry in t.files:
        assert check(t.fs, t.file_path(entry), region=t.metadata.region(entry.region)).ok


# ----------------------------------------------------------------------- real snapshots
@pytest.mark.parametrize("name", ["test-snapshot", "test-snappy-snapshot"])
def test_import_exported_snapshots(export_root: Path, tmp_path: Path, name: str) -> None:
    wh = connect(tmp_path / "wh")
    r = import_snapshot(str(export_root), name, wh, "ns:t")
    src = open_snapshot(str(export_root), name)
    t = wh.table("ns:t")
    assert r.created and not r.applied_before and r.version == 2
    assert r.cells == r.cells_read == 100 and r.hfiles == 10 and r.tasks == 10
    assert r.files == 10 and r.duplicates_dropped == 0
    # Regions: the snapshot's start/end keys; family settings from the descriptor.
    assert [(g.start, g.end) for g in t.regions] == [(g.start, g.end) for g in src.regions]
    (fam,) = t.families
    assert (fam.name, fam.max_versions, fam.min_versions, fam.ttl) == ("cf", 4, 0, None)
    assert fam.compression == ("snappy" if "snappy" in name else "none")
    assert t.metadata.properties[PROP_ID] == r.import_id
    assert t.metadata.properties["hbase.import.snapshot"] == name
    assert t.metadata.last_history.operation == "hbase-import"
    assert assert_same_reads(src, t) == 100
    assert t.scan().count_rows() == 100
    _check_files(wh, "ns:t")


def test_plan_is_deterministic_and_tasks_pickle(export_root: Path, tmp_path: Path) -> None:
    src = open_snapshot(str(export_root), "test-snapshot")
    regions = [f"r{i:06d}" for i in range(1, 11)]
    tasks = plan_import(src, regions=regions, table_path="/t", import_id="i", stem="i-0")
    assert tasks == plan_import(src, regions=regions, table_path="/t", import_id="i", stem="i-0")
    assert [t.region for t in tasks] == regions  # one task per (region, family), key order
    assert all(pickle.loads(pickle.dumps(t)) == t for t in tasks)


def test_retry_is_a_no_op(export_root: Path, tmp_path: Path) -> None:
    wh = connect(tmp_path / "wh")
    first = import_snapshot(str(export_root), "test-snapshot", wh, "t")
    again = import_snapshot(str(export_root), "test-snapshot", wh, "t")
    assert again.applied_before and not again.created and again.import_id == first.import_id
    assert again.version == first.version == wh.table("t").version
    assert again.files == 0
    # The id is derived from the source: another snapshot is another import.
    with pytest.raises(TableExistsError, match="already exists"):
        import_snapshot(str(export_root), "test-snappy-snapshot", wh, "t")
    with pytest.raises(TableExistsError):
        import_snapshot(str(export_root), "test-snapshot", wh, "t", import_id="other")
    assert wh.table("t").version == 2
    assert first.import_id == derive_import_id(
        str(export_root),
        snapshot="test-snapshot",
        table="test-table",
        fs=open_snapshot(str(export_root), "test-snapshot").fs,
        created_ms=open_snapshot(str(export_root), "test-snapshot").layout.snapshot.creation_time,
    )


def test_resumes_the_empty_table_a_crashed_attempt_left(export_root: Path, tmp_path: Path) -> None:
    wh = connect(tmp_path / "wh")
    src = open_snapshot(str(export_root), "test-snapshot")
    # What a run killed between creating the table and its commit leaves behind.
    wh.create_table(
        "t",
        families=list(src.families),
        splits=[g.start for g in src.regions[1:]],
        properties={PROP_ID: "imp-1"},
    )
    r = import_snapshot(str(export_root), "test-snapshot", wh, "t", import_id="imp-1")
    assert not r.created and r.version == 2 and r.cells == 100
    assert_same_reads(src, wh.table("t"))


def test_failure_mid_import_leaves_nothing(export_root: Path, tmp_path: Path) -> None:
    copy = tmp_path / "root"
    shutil.copytree(export_root, copy)
    src = open_snapshot(str(copy), "test-snapshot")
    victim = Path(src.layout.regions[6].files["cf"][0].path)
    good = victim.read_bytes()
    data = bytearray(good)
    data[40:60] = b"\x00" * 20  # inside the first data block: its checksum fails
    victim.write_bytes(bytes(data))
    wh_dir = tmp_path / "wh"
    wh = connect(wh_dir)
    with pytest.raises(CorruptFileError, match=victim.name):
        import_snapshot(str(copy), "test-snapshot", wh, "ns:t", workers=1)
    # Regions 0-5 were written before region 6 failed: all deleted, the table dropped.
    assert_nothing_written(wh_dir)
    victim.write_bytes(good)
    r = import_snapshot(str(copy), "test-snapshot", wh, "ns:t", workers=2)
    assert r.created and r.cells == 100
    assert_same_reads(open_snapshot(str(copy), "test-snapshot"), wh.table("ns:t"))


@pytest.mark.slow
def test_import_on_local_cluster_with_worker_processes(export_root: Path, tmp_path: Path) -> None:
    wh = connect(tmp_path / "wh")
    with process_client(2) as client:
        seen: list[tuple[int, int]] = []
        r = import_snapshot(
            str(export_root),
            "test-snappy-snapshot",
            wh,
            "ns:t",
            client=client,
            progress=lambda done, total: seen.append((done, total)),
        )
    assert r.cells == 100 and r.tasks == 10 and seen[-1] == (10, 10)
    assert_same_reads(open_snapshot(str(export_root), "test-snappy-snapshot"), wh.table("ns:t"))
    _check_files(wh, "ns:t")


@pytest.mark.s3
@pytest.mark.slow
def test_import_from_and_into_s3(
    export_root: Path, s3_root: str, s3_options: dict[str, Any]
) -> None:
    import fsspec

    fs = fsspec.filesystem("s3", **s3_options)
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    snap = export_root / ".hbase-snapshot" / "test-snappy-snapshot"
    for p in [*snap.rglob("*"), *(export_root / "archive").rglob("*")]:
        if p.is_file() and "test-snappy" in str(p):
            fs.put_file(str(p), f"{bucket}/hbase/{p.relative_to(export_root)}")
    src_url = f"s3://{bucket}/hbase"
    wh = connect(s3_root, storage_options=s3_options)
    r = import_snapshot(src_url, "test-snappy-snapshot", wh, "ns:t", storage_options=s3_options)
    assert r.cells == 100 and r.source == src_url
    src = open_snapshot(src_url, "test-snappy-snapshot", storage_options=s3_options)
    want = src.scan(raw=True, max_versions=ALL).to_arrow()
    assert wh.table("ns:t").scan(raw=True, max_versions=ALL).to_arrow().equals(want)


# ------------------------------------------------------------------------- 0.94 roots
@pytest.mark.parametrize("name", ["foo", "ns1.foo", "ns.two.foo", "data", "_acl_"])
def test_import_094_tables(root094: Path, tmp_path: Path, name: str) -> None:
    wh = connect(tmp_path / "wh")
    r = import_table(str(root094), name, wh, "imp:t")
    src = open_table(str(root094), name)
    assert r.snapshot is None and r.hbase_table == src.name
    t = wh.table("imp:t")
    assert [f.to_dict() for f in t.families] == [f.to_dict() for f in src.families]
    assert assert_same_reads(src, t) == r.cells
    _check_files(wh, "imp:t")


def test_import_094_deletes_are_kept(root094: Path, tmp_path: Path) -> None:
    wh = connect(tmp_path / "wh")
    import_table(str(root094), "data", wh, "d")
    t = wh.table("d")
    raw = t.scan(raw=True, max_versions=ALL).to_arrow()
    assert 12 in raw["type"].to_pylist()  # the DeleteColumn marker (R5.5) is imported
    assert t.get("10").num_rows == 0  # and still masks row 10's put
    assert t.metadata.files and sum(f.delete_markers for f in t.files) >= 1


@pytest.mark.parametrize("name", ["foo_snapshot2", "data_snapshot2"])
def test_import_094_snapshots(root094: Path, tmp_path: Path, name: str) -> None:
    wh = connect(tmp_path / "wh")
    r = import_snapshot(str(root094), name, wh, "s")
    assert r.snapshot == name and r.hfiles == 2
    assert assert_same_reads(open_snapshot(str(root094), name), wh.table("s")) == r.cells


# -------------------------------------------------------------------- synthetic 2.x roots
def test_import_root2_links_references_and_bulk_seq(tmp_path: Path) -> None:
    spec = hf.root2_links(tmp_path)
    wh = connect(tmp_path / "wh")
    r = import_table(str(spec.root), "default:t", wh, "t2")
    src = open_table(str(spec.root), "t")
    t = wh.table("t2")
    assert_same_reads(src, t)
    # R14.5/R3.2: the bulk file _SeqId_7_ beats _SeqId_5_ on the equal key a/q/5/Put.
    assert [c["value"] for c in t.get("a").to_pylist()] == [b"new"]
    # Link and Reference to the same parent file: equal keys, only one survives (R3.3).
    assert t.scan(raw=True, max_versions=5, start_row="m").to_arrow().num_rows == 14
    assert r.files >= 3


def _ties_root(tmp: Path) -> hf.Root2:
    """Two families, two regions; ties decided by cell sequence ids against file order."""

    def seq(table: pa.Table, ids: list[int]) -> pa.Table:
        return table.append_column("seq_id", pa.array(ids, pa.int64()))

    now = NOW
    a0 = [
        # Flushed file, MAX_SEQ_ID 10: c1/q/100 twice in the file (seq 9 first, R3.3).
        hf.HFileSpec(
            "1111",
            seq(
                hf.cells(
                    [
                        ("c1", "q", 100, 4, "f1-seq9"),
                        ("c1", "q", 100, 4, "f1-seq5"),
                        ("c2", "q", 50, 4, "c2-old"),
                        ("c5", "q", 90, 4, "c5-90"),
                        ("c5", "q", 80, 4, "c5-80"),
                    ]
                ),
                [9, 5, 8, 6, 6],
            ),
            max_seq_id=10,
            keep_cell_seq_ids=True,
        ),
        # Newer file (MAX_SEQ_ID 20) whose c1 cell has a lower cell seq id: it loses (R3.2).
        hf.HFileSpec(
            "2222",
            seq(
                hf.cells(
                    [
                        ("c1", "q", 100, 4, "f2-seq3"),
                        ("c3", "q", 70, 4, "c3-put"),
                        ("c4", "q", 60, 4, "c4-put"),
                        ("c4", "z", 60, 4, "c4-z"),
                    ]
                ),
                [3, 11, 12, 12],
            ),
            max_seq_id=20,
            keep_cell_seq_ids=True,
        ),
        # A bulk load (_SeqId_30_): every cell takes 30 (R14.5); deletes of every kind.
        hf.HFileSpec(
            "3333_SeqId_30_",
            hf.cells(
                [
                    ("c2", "q", 50, 4, "c2-bulk"),
                    ("c3", "q", 70, 8, ""),
                    ("c4", "", 60, 10, ""),
                    ("c5", "", 85, 14, ""),
                ]
            ),
        ),
    ]
    a1 = [
        # One file, equal keys in file order (a bulk load): the first one is HBase's.
        hf.HFileSpec(
            "4444",
            hf.cells(
                [
                    ("n1", "q", 5, 4, "first"),
                    ("n1", "q", 5, 4, "second"),
                    ("n1", "q", 4, 4, "older"),
                    ("n2", "q", 7, 12, ""),
                    ("n2", "q", 6, 4, "hidden"),
                ]
            ),
        ),
    ]
    b1 = [
        hf.HFileSpec(
            "5555",
            hf.cells(
                [
                    ("n1", "x", now - 1000, 4, "fresh"),
                    ("n1", "x", now - 200_000_000, 4, "expired"),
                    ("p1", "x", now - 5000, 4, "p-fresh"),
                ]
            ),
            compression="gz",
        ),
        hf.HFileSpec("6666", hf.cells([("p1", "x", now - 5000, 4, "p-newer-file")]), 40),
    ]
    return hf.write_root2(
        tmp,
        ns="ns",
        table="ties",
        families={
            "a": {"VERSIONS": "3", "KEEP_DELETED_CELLS": "TRUE"},
            "b": {"VERSIONS": "2", "TTL": "86400", "MIN_VERSIONS": "0", "COMPRESSION": "GZ"},
        },
        splits=[b"m"],
        stores={(0, "a"): a0, (1, "a"): a1, (1, "b"): b1},
    )


def test_import_keeps_hbase_tie_winners(tmp_path: Path) -> None:
    spec = _ties_root(tmp_path)
    wh = connect(tmp_path / "wh")
    r = import_table(str(spec.root), "ns:ties", wh, "ns:ties")
    src = open_table(str(spec.root), "ns:ties")
    t = wh.table("ns:ties")
    assert_same_reads(src, t)
    # R3.2: the older file's cell with the higher cell sequence id wins.
    assert t.get("c1", now_ms=NOW)["value"].to_pylist() == [b"f1-seq9"]
    # R3.3 inside one file: the first of equal keys; the second is not imported.
    assert t.get("n1", families="a", max_versions=ALL, now_ms=NOW)["value"].to_pylist() == [
        b"first",
        b"older",
    ]
    assert r.duplicates_dropped == 1
    # R14.5: the bulk file's id 30 beats the flushed file's cell id 8 on c2.
    assert t.get("c2", now_ms=NOW)["value"].to_pylist() == [b"c2-bulk"]
    # Delete@70 hides c3's put; DeleteFamilyVersion@60 hides c4's cells at 60 (R5.3, R5.6).
    assert t.get("c3", now_ms=NOW).num_rows == 0 and t.get("c4", now_ms=NOW).num_rows == 0
    # The markers of all four kinds are imported as they are (raw reads, R10.1).
    raw = t.scan(raw=True, max_versions=ALL, now_ms=NOW).to_arrow()
    assert {4, 8, 10, 12, 14} <= set(raw["type"].to_pylist())
    # TTL (86400 s) and MIN_VERSIONS=0 on family b: the old cell is gone (R8.1).
    b = t.scan(families="b", max_versions=ALL, now_ms=NOW).to_arrow()["value"].to_pylist()
    assert b"expired" not in b and b"fresh" in b
    # MAX_SEQ_ID 40 makes 6666 the newer file of an equal key (R3.1).
    assert t.get("p1", now_ms=NOW)["value"].to_pylist() == [b"p-newer-file"]
    fams = {f.name: f for f in t.families}
    assert fams["a"].keep_deleted_cells.value == "true" and fams["a"].max_versions == 3
    assert fams["b"].ttl == 86400 and fams["b"].compression == "gzip"
    _check_files(wh, "ns:ties")


def test_big_stores_are_cut_into_row_ranges(tmp_path: Path) -> None:
    stores = {
        (i, "f"): [
            hf.HFileSpec(f"{k + 1:04d}", hf.bench_cells(1500, offset=i * 1500, seed=k), k + 1)
            for k in range(2)
        ]
        for i in range(2)
    }
    spec = hf.write_root2(
        tmp_path, families={"f": {"VERSIONS": "3"}}, splits=[b"user000000001500"], stores=stores
    )
    wh = connect(tmp_path / "wh")
    r = import_table(str(spec.root), "t", wh, "t", memory_budget=4 << 20, max_file_bytes=1 << 19)
    assert r.tasks > 2 and r.files > r.tasks  # cut at HFile blocks, then rolled
    src = open_table(str(spec.root), "t")
    assert r.cells == r.cells_read == 4 * 1500 * 10  # equal keys across files kept (R3.2)
    for opts in ({"max_versions": ALL}, {"raw": True}, {"reversed": True, "limit": 7}):
        want = src.scan(now_ms=NOW, **opts).to_arrow()
        assert wh.table("t").scan(now_ms=NOW, **opts).to_arrow().equals(want)


def test_import_of_a_table_without_hfiles(tmp_path: Path) -> None:
    spec = hf.write_root2(tmp_path, families={"f": {}, "g": {}}, splits=[b"k"], stores={})
    wh = connect(tmp_path / "wh")
    r = import_table(str(spec.root), "t", wh, "t")
    assert r.version == 2 and r.tasks == r.files == r.cells == 0 and r.regions == 2
    assert r.families == ("f", "g") and wh.table("t").scan().count_rows() == 0
    assert import_table(str(spec.root), "t", wh, "t").applied_before


# ---------------------------------------------------------------------------- round trip
@pytest.mark.parametrize("case", ["test-snapshot", "data", "links"])
def test_round_trip_import_export_hfiles(
    export_root: Path, root094: Path, tmp_path: Path, case: str
) -> None:
    wh = connect(tmp_path / "wh")
    if case == "test-snapshot":
        src = open_snapshot(str(export_root), case)
        import_snapshot(str(export_root), case, wh, "rt")
    elif case == "data":
        src = open_table(str(root094), case)
        import_table(str(root094), case, wh, "rt")
    else:
        root = hf.root2_links(tmp_path).root
        src = open_table(str(root), "t")
        import_table(str(root), "t", wh, "rt")
    out = tmp_path / "bulk"
    rep = export_hfiles(wh.table("rt"), str(out), raw=True)
    got = []
    for f in rep.files:
        got += [
            (c["row"], c["family"], c["qualifier"], c["ts"], c["type"], c["value"])
            for c in read_hfile(f.path).to_pylist()
        ]
    want = [
        (c["row"], c["family"], c["qualifier"], c["ts"], c["type"], c["value"])
        for c in src.scan(raw=True, max_versions=ALL).to_arrow().to_pylist()
    ]
    assert sorted(got) == sorted(want) and want


# ----------------------------------------------------------------------------- bad input
def test_unknown_snapshot_or_table_writes_nothing(
    export_root: Path, root094: Path, tmp_path: Path
) -> None:
    wh_dir = tmp_path / "wh"
    wh = connect(wh_dir)
    with pytest.raises(SnapshotNotFoundError, match=r"'nope'.*test-snappy-snapshot"):
        import_snapshot(str(export_root), "nope", wh, "t")
    with pytest.raises(TableNotFoundError, match=r"'nope'.*ns1\.foo"):
        import_table(str(root094), "nope", wh, "t")
    assert_nothing_written(wh_dir)


def test_existing_target_is_refused(export_root: Path, tmp_path: Path) -> None:
    wh = connect(tmp_path / "wh")
    wh.create_table("ns:t", families=["cf"])
    with pytest.raises(TableExistsError, match=r"ns:t already exists"):
        import_snapshot(str(export_root), "test-snapshot", wh, "ns:t")
    assert wh.table("ns:t").version == 1 and not wh.table("ns:t").files
    assert not list((tmp_path / "wh").rglob("*.parquet"))


@pytest.mark.parametrize(
    ("attrs", "match"),
    [
        ({"IS_MOB": "true"}, "MOB"),
        ({"ENCRYPTION": "AES"}, "encrypted"),
        ({"NEW_VERSION_BEHAVIOR": "true"}, "NEW_VERSION_BEHAVIOR"),
    ],
)
def test_mob_encrypted_and_new_version_behavior_are_refused(
    tmp_path: Path, attrs: dict[str, str], match: str
) -> None:
    spec = hf.write_root2(
        tmp_path,
        families={"f": attrs},
        stores={(0, "f"): [hf.HFileSpec("0001", hf.cells([("r", "q", 1, 4, "v")]))]},
    )
    wh_dir = tmp_path / "wh"
    with pytest.raises(UnsupportedFormatError, match=match):
        import_table(str(spec.root), "t", connect(wh_dir), "t")
    assert_nothing_written(wh_dir)


def test_manifest_that_does_not_parse(export_root: Path, tmp_path: Path) -> None:
    copy = tmp_path / "root"
    shutil.copytree(export_root, copy)
    (copy / ".hbase-snapshot" / "test-snapshot" / "data.manifest").write_bytes(b"\x0a\xff\xff")
    wh_dir = tmp_path / "wh"
    with pytest.raises(CorruptFileError, match=r"test-snapshot/data\.manifest"):
        import_snapshot(str(copy), "test-snapshot", connect(wh_dir), "t")
    assert_nothing_written(wh_dir)


# ----------------------------------------------------------------------------------- CLI
def test_cli_import(export_root: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    wh = str(tmp_path / "wh")
    args = ["hbase", "import", str(export_root), "--snapshot", "test-snapshot", wh, "ns:t"]
    res = runner.invoke(cli, ["--output", "json", *args])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["cells"] == 100 and doc["table"] == "ns:t" and not doc["applied-before"]
    res = runner.invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "applied before" in res.output
    res = runner.invoke(cli, ["hbase", "import", str(export_root), "--table", "nope", wh, "x"])
    assert res.exit_code != 0 and "nope" in res.output
    res = runner.invoke(cli, ["hbase", "import", str(export_root), wh, "x"])
    assert res.exit_code == 2
    res = runner.invoke(cli, ["hbase", "import", "--help"])
    assert res.exit_code == 0 and "--snapshot" in res.output


# ------------------------------------------------------------------------------- options
def test_import_options_and_kwargs_agree(export_root: Path, tmp_path: Path) -> None:
    from typing import get_type_hints

    from cellstore.hbase.importer import ImportKwargs, ImportOptions

    fields = {f.name: f.type for f in dataclasses.fields(ImportOptions)}
    assert list(fields) == list(ImportKwargs.__annotations__)
    hints = get_type_hints(ImportKwargs)
    assert hints == get_type_hints(ImportOptions)
    wh = connect(tmp_path / "wh")
    opts = ImportOptions(import_id="imp-opts", workers=1)
    r = import_snapshot(str(export_root), "test-snapshot", wh, "t", opts, workers=2)
    assert r.import_id == "imp-opts" and r.cells == 100

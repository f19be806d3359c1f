"""Snapshots, restore and clone (HBase's snapshot / restore_snapshot / clone_snapshot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

import cellstore
from cellstore.cli import cli
from cellstore.core.family import Family
from cellstore.core.metadata import SnapshotRef, TableMetadata
from cellstore.errors import (
    InvalidArgumentError,
    InvalidNameError,
    SnapshotExistsError,
    SnapshotNotFoundError,
    TableExistsError,
)
from cellstore.fs import join
from cellstore.jobs import (
    clone,
    delete_snapshot,
    list_snapshots,
    restore,
    snapshot,
    verify,
)
from cellstore.jobs.compact import compact
from cellstore.jobs.regions import split
from cellstore.jobs.snapshots import link_path

try:
    from strategies import cells_table
except ImportError:  # pragma: no cover
    from tests.strategies import cells_table

PUT, DELETE_COLUMN = 4, 12


def put(row: str, qual: str, ts: int, value: str, family: str = "f") -> tuple[Any, ...]:
    return (row.encode(), family, qual.encode(), ts, PUT, value.encode())


def raw(table: Any) -> list[tuple[Any, ...]]:
    got = table.scan(raw=True, max_versions=1000).to_arrow()
    return [tuple(r.values()) for r in got.to_pylist()]


def visible(table: Any) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in table.scan(max_versions=10).to_arrow().to_pylist()]


def make(wh: Any, name: str = "ns:src") -> Any:
    t = wh.create_table(name, families=[Family(name="f", max_versions=5), "g"], splits=["m"])
    t.load_cells(cells_table([put("a", "q", 1, "a1"), put("x", "q", 1, "x1")]))
    t.load_cells(cells_table([put("a", "q", 2, "a2"), put("b", "q", 1, "b1", "g")]))
    return t


# --------------------------------------------------------------------------- metadata
def test_snapshots_field_is_written_only_when_present_and_round_trips(tmp_path: Path) -> None:
    t = make(cellstore.connect(str(tmp_path / "wh")))
    assert "snapshots" not in t.metadata.to_dict()
    meta = t.metadata.evolve(snapshots={"s1": SnapshotRef(version=2, created_ms=5)})
    doc = meta.to_dict()
    assert doc["snapshots"] == {"s1": {"version": 2, "created-ms": 5}}
    # format version 2: the root parses without its live set, which the log attaches
    assert TableMetadata.from_json(meta.to_json()).evolve(files=meta.files) == meta


# -------------------------------------------------------------------- create/list/delete
def test_snapshot_list_delete(any_root: str) -> None:
    wh = cellstore.connect(any_root)
    t = make(wh)
    before = visible(t)
    info = snapshot(t, "s1")
    assert (info.name, info.version, info.files, info.cells) == ("s1", 3, 4, 4)
    assert t.version == 4  # the handle follows the snapshot commit
    assert t.history(limit=1)[0].operation == "snapshot"
    t.load_cells(cells_table([put("c", "q", 1, "c1")]))
    older = snapshot(t, "s0", version=2)
    assert older.version == 2
    assert [s.name for s in list_snapshots(t)] == ["s1", "s0"]
    # reading a snapshot is reading the table at its version
    assert visible(wh.table("ns:src", version=info.version)) == before
    with pytest.raises(SnapshotExistsError):
        snapshot(t, "s1")
    for bad in ("", ".x", "a b", "a:b", "x" * 256):
        with pytest.raises(InvalidNameError):
            snapshot(t, bad)
    deleted = delete_snapshot(t, "s1")
    assert deleted.version == 3
    assert [s.name for s in list_snapshots(t)] == ["s0"]
    with pytest.raises(SnapshotNotFoundError, match="has no snapshot 's1'"):
        delete_snapshot(t, "s1")


def test_pinned_handle_snapshots_its_version(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    make(wh)
    info = snapshot(wh.table("ns:src", version=2), "v2")
    assert info.version == 2
    assert wh.table("ns:src").metadata.snapshots["v2"].version == 2


# ---------------------------------------------------------------------------- restore
def test_restore_brings_back_schema_regions_and_files(any_root: str) -> None:
    wh = cellstore.connect(any_root)
    t = make(wh)
    want_raw, want_regions = raw(t), t.regions
    snapshot(t, "s1")
    next_seq = t.metadata.next_seq
    t.load_cells(cells_table([put("a", "q", 9, "late"), put("z", "q", 1, "z1")]))
    split(t, at=["t"])
    t.refresh()
    wh.alter_table("ns:src", add_families=["h"], drop_families=["g"])
    t.refresh()
    snapshot(t, "s2")
    report = restore(t, "s1")
    assert report.version == t.version
    assert raw(t) == want_raw
    assert t.regions == want_regions
    assert t.metadata.family_names == ("f", "g")
    assert set(t.metadata.snapshots) == {"s1", "s2"}  # snapshots are kept
    assert t.metadata.next_seq > next_seq  # counters never go back
    assert t.metadata.next_region_id > max(int(r.id[1:]) for r in t.regions)
    assert t.history(limit=1)[0].operation == "restore"
    assert verify(t).ok
    # a load after the restore wins exact ties over the restored files (R3.2)
    t.load_cells(cells_table([put("a", "q", 2, "again")]))
    assert t.get("a", max_versions=1).column("value").to_pylist() == [b"again"]
    # and restoring the later snapshot brings its state back
    restore(t, "s2")
    assert t.metadata.family_names == ("f", "h")
    with pytest.raises(SnapshotNotFoundError):
        restore(t, "nope")
    with pytest.raises(InvalidArgumentError, match="opened at version"):
        restore(wh.table("ns:src", version=2), "s1")


# ------------------------------------------------------------------------------ clone
def test_link_path() -> None:
    assert link_path("a/b/c", "data/r/f/x.parquet") == "../../../a/b/c/data/r/f/x.parquet"
    with pytest.raises(InvalidArgumentError):
        link_path("a/b", "data/x")


@pytest.mark.parametrize(
    ("parts", "want"),
    [
        (("/wh/ns/c/u1", "../../../ns/s/u0/data/x"), "/wh/ns/s/u0/data/x"),
        (("bucket/wh/ns/c/u1", "../../../ns/s/u0/d"), "bucket/wh/ns/s/u0/d"),
        (("s3://bucket/wh/ns/c/u1", "../../../ns/s/u0/d"), "s3://bucket/wh/ns/s/u0/d"),
        (("//host/a/b", "../c"), "//host/a/c"),
        (("/wh/t", "data/r/f/x"), "/wh/t/data/r/f/x"),
        (("", "data"), "data"),
        (("..", "x/../y"), "../y"),
    ],
)
def test_join_resolves_dot_dot(parts: tuple[str, str], want: str) -> None:
    assert join(*parts) == want


@pytest.mark.parametrize("parts", [("s3://b/a", "../../../c"), ("/a", "../../b")])
def test_join_refuses_to_climb_above_the_root(parts: tuple[str, str]) -> None:
    with pytest.raises(ValueError, match="climbs above"):
        join(*parts)


def test_clone_reads_like_the_snapshot_and_writes_into_its_own_directory(any_root: str) -> None:
    wh = cellstore.connect(any_root)
    src = make(wh)
    snapshot(src, "s1")
    want = raw(src)
    report = clone(src, "s1", "ns:copy")
    assert (report.table, report.files, report.snapshot_version) == ("ns:copy", 4, 3)
    c = wh.table("ns:copy")
    assert c.history()[0].operation == "clone"
    assert c.metadata.snapshots == {}
    assert all(f.path.startswith("../../../ns/src/") for f in c.files)
    assert all(c.file_path(f).startswith(src.path + "/") for f in c.files)
    assert raw(c) == want
    assert c.get("a").column("value").to_pylist() == [b"a2"]
    assert verify(c).ok
    # loads, splits and compactions of the clone write into the clone's directory only
    src_files = set(src.files)
    split(c, at=["b"])
    c.refresh()
    assert verify(c).ok and raw(c) == want
    assert all(f.path.startswith("../") or c.file_path(f).startswith(c.path + "/") for f in c.files)
    c.load_cells(cells_table([put("a", "q", 3, "clone"), put("y", "q", 1, "y1")]))
    compact(c, major=True)
    c.refresh()
    assert c.files and all(c.file_path(f).startswith(c.path + "/") for f in c.files)
    assert c.get("a").column("value").to_pylist() == [b"clone"]
    src.refresh()
    assert raw(src) == want and set(src.files) == src_files
    # a clone of a clone links to the owner's files
    snapshot(c, "c1", version=1)
    clone(c, "c1", "ns:copy2")
    c2 = wh.table("ns:copy2")
    assert all(f.path.startswith("../../../ns/src/") for f in c2.files)
    assert raw(c2) == want
    with pytest.raises(TableExistsError):
        clone(src, "s1", "ns:copy")
    with pytest.raises(SnapshotNotFoundError):
        clone(src, "nope", "ns:other")


def test_clone_on_s3(s3_root: str, s3_options: dict[str, Any]) -> None:
    wh = cellstore.connect(s3_root, storage_options=s3_options)
    src = make(wh)
    snapshot(src, "s1")
    clone(src, "s1", "ns:copy")
    c = wh.table("ns:copy")
    assert raw(c) == raw(src)
    assert verify(c).ok
    c.load_cells(cells_table([put("q", "q", 1, "q1")]))
    assert [f for f in c.files if not f.path.startswith("../")]
    assert c.get("q").column("value").to_pylist() == [b"q1"]


def test_purge_of_a_cloned_table_is_refused(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    src = make(wh)
    snapshot(src, "s1")
    clone(src, "s1", "ns:copy")
    assert wh.clones_of("ns:src") == ["ns:copy"]
    with pytest.raises(InvalidArgumentError, match="ns:copy"):
        wh.drop_table("ns:src", purge=True)
    assert wh.exists("ns:src")
    # without purge the source goes, its files stay, and the clone still reads them
    want = raw(src)
    wh.drop_table("ns:src")
    assert raw(wh.table("ns:copy")) == want
    # once the clone no longer links to them, purging the clone's own files is fine
    wh.drop_table("ns:copy", purge=True)


def test_clones_of_sees_links_held_only_by_a_snapshot(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    src = make(wh)
    snapshot(src, "s1")
    clone(src, "s1", "ns:copy")
    c = wh.table("ns:copy")
    snapshot(c, "keep")
    compact(c, major=True)
    c.refresh()
    assert not any(f.path.startswith("../") for f in c.files)
    assert wh.clones_of("ns:src") == ["ns:copy"]  # the snapshot still links
    delete_snapshot(c, "keep")
    assert wh.clones_of("ns:src") == []
    want = raw(c)
    wh.drop_table("ns:src", purge=True)
    assert raw(wh.table("ns:copy")) == want  # the clone's own files are intact
    assert verify(wh.table("ns:copy")).ok


# -------------------------------------------------------------------------------- CLI
@pytest.fixture
def run(tmp_path: Path) -> Any:
    root = str(tmp_path / "wh")
    runner = CliRunner()

    def invoke(*args: str, output: str = "text") -> Result:
        return runner.invoke(cli, ["--root", root, "--output", output, *args])

    make(cellstore.connect(root))
    return invoke


def test_cli_snapshot_clone_restore(run: Any) -> None:
    r = run("snapshot", "create", "ns:src", "s1")
    assert r.exit_code == 0, r.output
    assert "Snapshot s1 of table ns:src: version 3" in r.output
    r = run("snapshot", "list", output="json")
    doc = json.loads(r.output)
    assert [(s["table"], s["name"], s["version"]) for s in doc["snapshots"]] == [
        ("ns:src", "s1", 3)
    ]
    r = run("snapshot", "list", "ns:src")
    assert r.output.splitlines()[0].split() == [
        "SNAPSHOT",
        "TABLE",
        "VERSION",
        "CREATED",
        "FILES",
        "CELLS",
        "BYTES",
    ]
    assert r.output.rstrip().endswith("1 row(s)")
    r = run("clone", "ns:src", "s1", "ns:copy", output="json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["files"] == 4
    r = run("restore", "ns:src", "s1")
    assert r.exit_code == 2 and "without --yes" in r.output
    r = run("restore", "ns:src", "s1", "--yes")
    assert r.exit_code == 0, r.output
    assert "Restored table ns:src to snapshot s1 (version 3): now version 5" in r.output
    r = run("snapshot", "delete", "ns:src", "s1")
    assert r.exit_code == 0 and "Deleted snapshot s1" in r.output
    r = run("snapshot", "delete", "ns:src", "s1")
    assert r.exit_code == 3
    assert "has no snapshot 's1'" in r.stderr
    r = run("snapshot", "create", "ns:src", "bad name")
    assert r.exit_code == 2
    r = run("drop", "ns:src", "--purge", "--yes")
    assert r.exit_code == 2 and "ns:copy" in r.stderr


@pytest.mark.parametrize("sub", ["create", "list", "delete"])
def test_snapshot_subcommand_help(sub: str) -> None:
    r = CliRunner().invoke(cli, ["snapshot", sub, "--help"])
    assert r.exit_code == 0 and r.output.startswith("Usage: ")


def test_clone_scans_equal_the_source_in_every_shape(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = make(wh)
    snapshot(t, "s")
    clone(t, "s", "ns:c")
    c = wh.table("ns:c")
    for options in ({}, {"shape": "wide"}, {"row_prefix": "a", "max_versions": 3}):
        a: pa.Table = t.scan(**options).to_arrow()
        assert a.equals(c.scan(**options).to_arrow()), options
    assert t.scan().to_dask().compute().equals(c.scan().to_dask().compute())

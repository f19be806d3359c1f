"""Vacuum (retention, references, clones) and verify (corrupt files found, never a crash)."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import fsspec
import pytest
from click.testing import CliRunner, Result

import cellstore
from cellstore.cli import cli
from cellstore.cli.admin import parse_duration
from cellstore.commit import Commit, FileChange, commit, file_entry
from cellstore.core.family import Family
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.regions import Region
from cellstore.errors import CorruptFileError, InvalidArgumentError, VerifyError
from cellstore.jobs import (
    clone,
    delete_snapshot,
    snapshot,
    vacuum,
    verify,
)
from cellstore.jobs.compact import compact
from cellstore.jobs.regions import split
from cellstore.jobs.vacuum import DEFAULT_RETENTION_MS
from cellstore.jobs.verify import manifest_problems
from cellstore.loader.direct import WrittenFile
from cellstore.storefiles import write_store_file
from cellstore.storefiles.reader import clear_footer_cache

try:
    from strategies import cells_table
except ImportError:  # pragma: no cover
    from tests.strategies import cells_table

PUT = 4
DAY = 24 * 3600 * 1000


def put(row: str, ts: int, value: str = "", qual: str = "q") -> tuple[Any, ...]:
    return (row.encode(), "f", qual.encode(), ts, PUT, (value or f"{row}-{ts}").encode())


def raw(table: Any) -> list[tuple[Any, ...]]:
    return [
        tuple(r.values()) for r in table.scan(raw=True, max_versions=100).to_arrow().to_pylist()
    ]


def make(wh: Any, name: str = "ns:t", *, format_version: int = 2, **family: Any) -> Any:
    t = wh.create_table(
        name, families=[Family(name="f", **family)], splits=["m"], format_version=format_version
    )
    for ts in (1, 2, 3):
        t.load_cells(cells_table([put("a", ts), put("x", ts)]))
        time.sleep(0.003)  # distinct commit times
    return t


def future() -> int:
    """'Now' a little over the default retention later: every file written is old."""
    return int(time.time() * 1000) + DEFAULT_RETENTION_MS + DAY


def exists(t: Any, relpath: str) -> bool:
    t.fs.invalidate_cache()
    return bool(t.fs.exists(f"{t.path}/{relpath}"))


# ------------------------------------------------------------------------------- vacuum
def test_vacuum_is_a_dry_run_by_default_and_deletes_replaced_files(any_root: str) -> None:
    t = make(cellstore.connect(any_root))
    old = [f.path for f in t.files]
    compact(t, major=True)
    t.refresh()
    want = raw(t)
    # today every version is within the retention period: as-of reads keep the old files
    r = vacuum(t)
    assert r.dry_run and r.deleted == () and r.kept == {"current": 2, "as-of": 6}
    # a week later only the newest version counts
    r = vacuum(t, now_ms=future())
    assert r.dry_run and sorted(r.deleted) == sorted(old) and r.bytes_deleted > 0
    assert all(exists(t, p) for p in old)  # a dry run deletes nothing
    r = vacuum(t, now_ms=future(), dry_run=False)
    assert sorted(r.deleted) == sorted(old) and r.kept == {"current": 2}
    assert not any(exists(t, p) for p in old)
    assert raw(t) == want and verify(t).ok
    assert vacuum(t, now_ms=future(), dry_run=False).deleted == ()  # idempotent
    # metadata versions are never deleted; an as-of read past the retention has no files
    old_version = t.warehouse.table("ns:t", version=2)
    with pytest.raises((FileNotFoundError, CorruptFileError)):
        old_version.scan().to_arrow()


def test_vacuum_keeps_snapshot_files(tmp_path: Path) -> None:
    t = make(cellstore.connect(str(tmp_path / "wh")))
    snapshot(t, "before")
    want = raw(t)
    compact(t, major=True)
    t.refresh()
    r = vacuum(t, now_ms=future(), dry_run=False)
    assert r.deleted == () and r.kept == {"current": 2, "snapshot": 6}
    assert raw(t.warehouse.table("ns:t", version=t.metadata.snapshots["before"].version)) == want
    delete_snapshot(t, "before")
    r = vacuum(t, now_ms=future(), dry_run=False)
    assert len(r.deleted) == 6 and r.kept == {"current": 2}


def test_vacuum_keeps_the_version_current_at_the_cutoff(tmp_path: Path) -> None:
    t = make(cellstore.connect(str(tmp_path / "wh")))
    t.load_cells(cells_table([put("b", 5)]))
    time.sleep(0.003)
    compact(t, major=True)
    t.refresh()
    latest = t.metadata.last_history.timestamp_ms
    # cutoff == the newest commit: the version before it was current until then
    r = vacuum(t, retention_ms=DAY, now_ms=latest + DAY)
    assert r.versions_retained == 1
    assert r.kept == {"current": 2, "as-of": 7} and r.deleted == ()
    r = vacuum(t, retention_ms=DAY, now_ms=latest + DAY + 1)
    assert r.versions_retained == 0 and len(r.deleted) == 7


def test_vacuum_keeps_files_a_clone_links_to(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    src = make(wh)
    snapshot(src, "s")
    clone(src, "s", "ns:c")
    delete_snapshot(src, "s")
    compact(src, major=True)
    src.refresh()
    c = wh.table("ns:c")
    want = raw(c)
    r = vacuum(src, now_ms=future(), dry_run=False)
    assert r.deleted == () and r.kept == {"current": 2, "clone": 6}
    assert raw(c) == want and verify(c).ok
    # the clone's own vacuum never touches the source's files
    assert vacuum(c, now_ms=future(), dry_run=False).files == 0
    # a snapshot of the clone keeps the links alive after the clone rewrote its data
    snapshot(c, "keep")
    compact(c, major=True)
    r = vacuum(src, now_ms=future(), dry_run=False)
    assert r.deleted == () and r.kept == {"current": 2, "clone": 6}
    # once no version of the clone that may be read links to them, they can go
    delete_snapshot(c, "keep")
    assert len(vacuum(src, now_ms=future(), dry_run=False).deleted) == 6
    c.refresh()
    assert raw(c) == want and verify(c).ok


def test_vacuum_removes_leftovers_only_after_the_retention(tmp_path: Path) -> None:
    t = make(cellstore.connect(str(tmp_path / "wh")))
    # what a load that died before its commit, and a crashed exclusive write, leave behind
    orphan = Path(t.path) / "data" / "r000001" / "f" / "dead-load.parquet"
    orphan.write_bytes(b"half a file")
    (Path(t.path) / "_loads").mkdir()
    (Path(t.path) / "_loads" / "l1.report.json").write_text("{}")
    (Path(t.path) / "_meta" / "v00000000000000000009.json.abc.tmp").write_text("x")
    r = vacuum(t, dry_run=False)
    assert r.deleted == () and r.kept["recent"] == 1 and r.other_deleted == ()
    r = vacuum(t, now_ms=future(), dry_run=False)
    assert r.deleted == ("data/r000001/f/dead-load.parquet",)
    assert sorted(r.other_deleted) == [
        "_loads/l1.report.json",
        "_meta/v00000000000000000009.json.abc.tmp",
    ]
    assert not orphan.exists() and verify(t).ok
    # an old file by its modification time goes with the normal clock too
    orphan.write_bytes(b"x")
    week_ago = time.time() - 8 * 24 * 3600
    os.utime(orphan, (week_ago, week_ago))
    assert vacuum(t).deleted == ("data/r000001/f/dead-load.parquet",)


def test_vacuum_retention_guard() -> None:
    wh = cellstore.connect(f"memory://vacuum-guard-{time.time_ns()}")
    t = make(wh)
    with pytest.raises(InvalidArgumentError, match="shorter than"):
        vacuum(t, retention_ms=0)
    with pytest.raises(InvalidArgumentError, match=">= 0"):
        vacuum(t, retention_ms=-1, enforce_retention=False)
    assert vacuum(t, retention_ms=0, enforce_retention=False).kept == {"current": 6}
    fsspec.filesystem("memory").rm(wh.root, recursive=True)


def test_parse_duration() -> None:
    assert parse_duration("7d") == 7 * DAY
    assert parse_duration("2w") == 14 * DAY
    assert parse_duration("90s") == 90_000
    assert parse_duration("0") == 0
    for bad in ("7", "d", "1y", "-1d"):
        with pytest.raises(InvalidArgumentError):
            parse_duration(bad)


# ------------------------------------------------------------------------------- verify
@pytest.fixture
def table(tmp_path: Path) -> Any:
    clear_footer_cache()
    t = make(cellstore.connect(str(tmp_path / "wh")), compression="none")
    t.load_cells(cells_table([put("b", 9, "PRECIOUS-VALUE-0123456789"), put("c", 9)]))
    return t


def entry_for(t: Any, row: bytes) -> FileEntry:
    found: FileEntry = next(f for f in t.files if f.first_row <= row <= f.last_row)
    return found


def problems_of(t: Any) -> list[str]:
    report = verify(t.warehouse.table(str(t.name)))
    return [str(p) for p in report.problems]


def test_verify_passes_on_a_healthy_table_through_jobs(table: Any) -> None:
    report = verify(table)
    assert report.ok and report.files == 7 and report.cells == 8
    report.raise_for_problems()  # no error
    split(table, at=["c"])
    table.refresh()
    compact(table)
    table.refresh()
    assert verify(table).ok


def test_verify_finds_a_missing_file(table: Any) -> None:
    e = entry_for(table, b"b")
    os.remove(table.file_path(e))
    assert problems_of(table) == [f"file: {e.path} (r000001/f): file is missing"]


def test_verify_finds_a_truncated_file(table: Any) -> None:
    e = entry_for(table, b"b")
    path = table.file_path(e)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    found = problems_of(table)
    assert (
        found[0]
        == f"file: {e.path} (r000001/f): file size {len(data) // 2} != manifest size {e.size}"
    )
    assert any("cannot open" in p for p in found[1:])


def test_verify_finds_flipped_bytes_by_page_checksum(table: Any) -> None:
    e = entry_for(table, b"b")
    path = Path(table.file_path(e))
    data = bytearray(path.read_bytes())
    footer_start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = data.find(b"PRECIOUS-VALUE")
    while 0 <= at < footer_start:  # the page data (and the page header's statistics)
        data[at + 3] ^= 0xFF
        at = data.find(b"PRECIOUS-VALUE", at + 1)
    path.write_bytes(bytes(data))  # same size, same footer: only the page CRC can tell
    found = problems_of(table)
    assert len(found) == 1 and e.path in found[0]
    assert "checksum" in found[0].lower() or "crc" in found[0].lower()


def test_verify_finds_cells_out_of_order(table: Any) -> None:
    fam = table.metadata.family("f")
    cells = cells_table([put("d", 1), put("c", 1)]).drop(["family"])  # rows out of order
    rel = "data/r000001/f/unsorted.parquet"
    info = write_store_file(table.fs, f"{table.path}/{rel}", cells, family=fam, seq=1, load_id="x")
    entry = file_entry(WrittenFile("r000001", rel, info), seq=1, load_id="x")
    commit(table.log, Commit(operation="test", changes=[FileChange(add=[entry])]))
    found = problems_of(table)
    assert any("cell 1 is not after cell 0 in cell order" in p for p in found), found


def test_verify_finds_an_entry_outside_its_region(table: Any) -> None:
    e = entry_for(table, b"x")  # region r000002 = ['m', '')
    moved = dataclasses.replace(e, region="r000001")  # ['', 'm')

    def change(meta: TableMetadata) -> TableMetadata:
        files = tuple(moved if f == e else f for f in meta.files)
        return meta.next_version(operation="test", timestamp_ms=1, files=files)

    table.log.commit_table(change)
    found = problems_of(table)
    assert len(found) == 1 and "is not before region r000001 end b'm'" in found[0], found


@pytest.mark.parametrize("format_version", [1, 2])
def test_verify_finds_manifest_problems(tmp_path: Path, format_version: int) -> None:
    clear_footer_cache()
    wh = cellstore.connect(str(tmp_path / "wh"))
    table = make(wh, compression="none", format_version=format_version)
    table.load_cells(cells_table([put("b", 9, "PRECIOUS-VALUE-0123456789"), put("c", 9)]))
    e = entry_for(table, b"a")
    bad_family = dataclasses.replace(e, family="nope")
    bad_seq = dataclasses.replace(entry_for(table, b"x"), seq=99)
    wrong_cells = dataclasses.replace(entry_for(table, b"c"), cells=1000)

    def change(meta: TableMetadata) -> TableMetadata:
        files = tuple(
            bad_seq if f.path == bad_seq.path else wrong_cells if f.path == wrong_cells.path else f
            for f in meta.files
        )
        return meta.next_version(operation="test", timestamp_ms=1, files=(*files, e, bad_family))

    table.log.commit_table(change)
    found = problems_of(table)
    if format_version == 1:
        assert any(f"manifest: {e.path} (r000001/f): entry listed 2 times" == p for p in found)
    else:  # a key is live once: adding it again replaces the entry
        assert not any("listed 2 times" in p for p in found)
    assert any("family 'nope' does not exist" in p for p in found)
    assert any("seq 99 is not in 1..4" in p for p in found)
    assert any("manifest cells 1000 != footer 2" in p for p in found)
    with pytest.raises(VerifyError, match="problem") as info:
        verify(table.warehouse.table("ns:t")).raise_for_problems()
    assert info.value.exit_code == 9


def test_manifest_problems_of_regions_and_snapshots(table: Any) -> None:
    meta = table.metadata
    gap = meta.evolve(regions=(Region("r000001", b"", b"k"), Region("r000002", b"m", b"")))
    assert any("not contiguous" in str(p) for p in manifest_problems(gap))
    high = meta.evolve(next_region_id=2)
    assert any("not below next-region-id" in str(p) for p in manifest_problems(high))
    link = dataclasses.replace(meta.files[0], path="../x/data.parquet")
    assert any("clone's link" in str(p) for p in manifest_problems(meta.evolve(files=(link,))))
    assert manifest_problems(meta) == []


def test_verify_on_a_distributed_client(table: Any) -> None:
    from distributed import Client, LocalCluster

    os.remove(table.file_path(entry_for(table, b"b")))
    with (
        LocalCluster(
            n_workers=1, processes=False, threads_per_worker=2, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        report = verify(table.warehouse.table("ns:t"), client=client)
    assert [p.message for p in report.problems] == ["file is missing"]


# ---------------------------------------------------------------------------------- CLI
@pytest.fixture
def run(tmp_path: Path) -> Any:
    root = str(tmp_path / "wh")
    runner = CliRunner()

    def invoke(*args: str, output: str = "text") -> Result:
        return runner.invoke(cli, ["--root", root, "--output", output, *args])

    t = make(cellstore.connect(root))
    compact(t, major=True)
    return invoke


def test_cli_vacuum(run: Any) -> None:
    now = str(future())
    r = run("vacuum", "ns:t", "--now-ms", now)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("Would delete 6 of 8 data files (")
    assert lines[0].endswith("of table ns:t, unreferenced and older than 7d")
    assert lines[-2:] == [
        "Kept: 2 current",
        "Dry run: nothing was deleted; run again with --yes to delete",
    ]
    r = run("vacuum", "ns:t", "--now-ms", now, "--yes", "--retention", "2d", output="json")
    doc = json.loads(r.output)
    assert (doc["dry-run"], doc["files-deleted"], doc["retention-ms"]) == (False, 6, 2 * DAY)
    assert doc["kept"] == {"current": 2, "snapshot": 0, "as-of": 0, "clone": 0, "recent": 0}
    r = run("vacuum", "ns:t", "--retention", "soon")
    assert r.exit_code == 2 and "not a duration" in r.output
    r = run("vacuum", "ns:t", "--retention", "0")
    assert r.exit_code == 2 and "shorter than" in r.stderr
    r = run("vacuum", "ns:t", "--retention", "0", "--no-retention-check")
    assert r.exit_code == 0 and "Would delete 0 of 2" in r.output


def test_cli_verify(run: Any, tmp_path: Path) -> None:
    r = run("verify", "ns:t")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("Verified table ns:t version 5: 2 files, 6 cells")
    assert r.output.rstrip().endswith(": OK")
    assert run("verify", "ns:t", "--version", "2").exit_code == 0
    t = cellstore.connect(str(tmp_path / "wh")).table("ns:t")
    os.remove(t.file_path(t.files[0]))
    r = run("verify", "ns:t")
    assert r.exit_code == 9
    assert "1 problem(s)" in r.stdout and "file is missing" in r.stdout
    assert r.stderr.startswith("error: table ns:t version 5: 1 problem(s)")
    r = run("verify", "ns:t", output="json")
    assert r.exit_code == 9
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["problems"][0]["message"] == "file is missing"

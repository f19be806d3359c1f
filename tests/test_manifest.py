"""Manifest commits: exclusive create, retry on conflict, nothing lost across processes."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from cellstore.core.regions import regions_from_splits
from cellstore.errors import CommitConflictError, CorruptFileError, UnsupportedFilesystemError
from cellstore.fs import ensure_exclusive_create, write_exclusive
from cellstore.loader.direct import commit_files, normalize_cells, write_cells
from cellstore.manifest import VersionLog
from cellstore.warehouse import connect
from strategies import cells_table

WRITERS = 4
LOADS_EACH = 5


def _load_worker(root: str, options: dict[str, Any], worker: int, loads: int) -> None:
    table = connect(root, storage_options=options or None).table("t")
    for i in range(loads):
        row = b"w%02d-%03d" % (worker, i)
        table.load_cells(cells_table([(row, "cf", b"q", 1, 4, row)]))


def _create_worker(root: str, options: dict[str, Any], worker: int) -> None:
    wh = connect(root, storage_options=options or None)
    for i in range(3):
        wh.create_table(f"ns:t{worker}_{i}", families=["cf"])


def _run(target: Any, args_list: list[tuple[Any, ...]]) -> None:
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=args) for args in args_list]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
        assert p.exitcode == 0, f"worker failed with exit code {p.exitcode}"


def _check_concurrent_loads(root: str, options: dict[str, Any]) -> None:
    wh = connect(root, storage_options=options or None)
    wh.create_table("t", families=["cf"])
    _run(_load_worker, [(root, options, w, LOADS_EACH) for w in range(WRITERS)])
    t = wh.table("t")
    total = WRITERS * LOADS_EACH
    assert t.version == 1 + total
    assert len(t.files) == total
    assert sorted(f.seq for f in t.files) == list(range(1, total + 1))
    assert len({f.load_id for f in t.files}) == total
    rows = sorted(f.first_row for f in t.files)
    assert rows == sorted(b"w%02d-%03d" % (w, i) for w in range(WRITERS) for i in range(LOADS_EACH))
    # Every version in between is a valid, self-consistent snapshot.
    for v in range(1, t.version + 1):
        assert len(wh.table("t", version=v).files) == v - 1


@pytest.mark.slow
def test_concurrent_loads_from_processes_lose_nothing_local(tmp_path):
    _check_concurrent_loads(str(tmp_path / "wh"), {})


@pytest.mark.slow
@pytest.mark.s3
def test_concurrent_loads_from_processes_lose_nothing_s3(s3_root, s3_options):
    _check_concurrent_loads(s3_root, s3_options)


@pytest.mark.slow
def test_concurrent_table_creation(tmp_path):
    root = str(tmp_path / "wh")
    _run(_create_worker, [(root, {}, w) for w in range(3)])
    assert connect(root).list_tables() == sorted(f"ns:t{w}_{i}" for w in range(3) for i in range(3))


def test_stale_handle_commit_rebases_and_keeps_both(tmp_path):
    wh = connect(tmp_path)
    wh.create_table("t", families=["cf"])
    a, b = wh.table("t"), wh.table("t")
    a.load_cells(cells_table([(b"a", "cf", b"q", 1, 4, b"1")]))
    b.load_cells(cells_table([(b"b", "cf", b"q", 1, 4, b"2")]))  # b's base is stale
    t = wh.table("t")
    assert t.version == 3
    assert sorted(f.first_row for f in t.files) == [b"a", b"b"]
    assert sorted(f.seq for f in t.files) == [1, 2]


def test_load_fails_cleanly_if_regions_changed(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("t", families=["cf"])
    base = t.metadata
    cells = normalize_cells(cells_table([(b"r", "cf", b"q", 1, 4, b"v")]), metadata=base, now=1)
    written, _ = write_cells(t.fs, t.path, base, cells, load_id="L", seq=base.next_seq)
    # Meanwhile the region is split (the jobs issue adds a real split job).
    t.log.commit_table(
        lambda m: m.next_version(
            operation="split",
            timestamp_ms=1,
            regions=regions_from_splits([b"m"], first_id=m.next_region_id),
            next_region_id=m.next_region_id + 2,
        )
    )
    with pytest.raises(CommitConflictError, match="changed"):
        commit_files(t.log, base, written, load_id="L")
    assert wh.table("t").files == ()


def test_version_log_hint_is_only_a_hint(tmp_path):
    fs = fsspec.filesystem("file")
    log = VersionLog(fs, str(tmp_path / "log"))
    assert log.latest_version() == 0
    for v in range(1, 4):
        log.create(v, b"{}")
    assert log.latest_version() == 3
    (tmp_path / "log" / "latest").write_text("1")  # stale hint
    assert log.latest_version() == 3
    (tmp_path / "log" / "latest").write_text("77")  # hint ahead of reality
    assert log.latest_version() == 3
    (tmp_path / "log" / "latest").unlink()
    assert log.latest_version() == 3
    with pytest.raises(FileExistsError):
        log.create(2, b"{}")


def test_local_exclusive_write_leaves_no_partial_file(tmp_path):
    fs = fsspec.filesystem("file")
    target = str(tmp_path / "v1.json")
    write_exclusive(fs, target, b"first")
    with pytest.raises(FileExistsError):
        write_exclusive(fs, target, b"second")
    assert (tmp_path / "v1.json").read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v1.json"]


def test_corrupt_metadata_is_reported(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("t", families=["cf"])
    path = t.log.version_path(1)
    with open(path, "wb") as f:
        f.write(b"{not json")
    with pytest.raises(CorruptFileError, match="not valid JSON"):
        wh.table("t")


class OverwritingFileSystem(MemoryFileSystem):
    """A real, working filesystem that ignores exclusive create (like some object stores)."""

    protocol = "overwritingmem"

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        return super()._open(path, mode.replace("x", "w"), **kwargs)


def test_backend_without_exclusive_create_is_refused():
    fs = OverwritingFileSystem()
    with pytest.raises(UnsupportedFilesystemError, match="exclusive create"):
        ensure_exclusive_create(fs, "/refused-root")
    wh = connect("/refused-wh", filesystem=fs)
    with pytest.raises(UnsupportedFilesystemError):
        wh.create_table("t", families=["cf"])
    assert wh.list_tables() == []


@pytest.mark.s3
def test_s3_warehouse_round_trip(s3_root, s3_options):
    wh = connect(s3_root, storage_options=s3_options)
    t = wh.create_table("ns:t", families=["cf"], splits=[b"m"])
    res = t.load_cells(
        cells_table([(b"a", "cf", b"q", 1, 4, b"1"), (b"x", "cf", b"q", 1, 4, b"2")])
    )
    assert res.files == 2
    again = connect(s3_root, storage_options=s3_options).table("ns:t")
    assert again.version == 2 and len(again.files) == 2
    from cellstore.storefiles import check

    for f in again.files:
        assert check(
            again.fs, again.file_path(f), region=again.metadata.region(f.region), entry=f
        ).ok
    assert wh.list_tables() == ["ns:t"]

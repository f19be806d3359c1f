"""Format-version-2 table metadata: manifest files, the lazy live set, merges, upgrade.

The live set of every version is checked against a pure-Python model (a dict of the live
entries by key, docs/format.md section 13.3), and against the same table read another way
(the full materialization versus the region-filtered read).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.commit import Commit, FileChange, commit
from cellstore.core.metadata import METADATA_FORMAT_VERSION, FileEntry, FileTotals, TableMetadata
from cellstore.errors import CorruptFileError, FormatVersionError, JobConflictError
from cellstore.jobs import verify
from cellstore.jobs.verify import manifest_file_problems
from cellstore.manifest import LiveFiles, TableLog
from cellstore.manifest.files import (
    ROW_GROUP_ENTRIES,
    SMALL_MANIFEST_ENTRIES,
    SMALL_ROW_GROUP_ENTRIES,
    apply_last_wins,
    read_manifest,
    read_manifests,
    rows_of,
    write_manifest,
)
from strategies import cells_table

REGIONS = ["r000001", "r000002", "r000003"]
STARTS = {"r000001": b"", "r000002": b"g", "r000003": b"p"}


def _entry(n: int, region: str, *, seq: int = 1, family: str = "f") -> FileEntry:
    return FileEntry(
        path=f"data/{region}/{family}/x{n:05d}.parquet",
        region=region,
        family=family,
        seq=seq,
        cells=n + 1,
        delete_markers=0,
        size=100 + n,
        first_row=STARTS[region] + b"a",
        last_row=STARTS[region] + b"z",
        min_ts=1,
        max_ts=2,
        load_id=f"load-{n}",
        footer_digest="0123456789abcdef",
    )


def _new_table(root: str, *, fan_in: int) -> tuple[Any, TableLog]:
    wh = cellstore.connect(root)
    t = wh.create_table("ns:t", families=["f", "g"], splits=[b"g", b"p"])
    assert [r.id for r in t.regions] == REGIONS
    return t, TableLog(t.fs, t.path, merge_fan_in=fan_in, upper_merge_fan_in=2)


def _keys(entries: Any) -> dict[tuple[str, str, str], FileEntry]:
    return {(e.path, e.region, e.family): e for e in entries}


# A step: ("add", n, region, family) adds a new entry; ("remove", i) removes the i-th
# live entry (mod the live count); ("merge", i) merges the manifests from i (mod count).
_steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.lists(
                st.tuples(st.sampled_from(REGIONS), st.sampled_from(["f", "g"])),
                min_size=1,
                max_size=4,
            ),
        ),
        st.tuples(st.just("remove"), st.lists(st.integers(0, 10_000), min_size=1, max_size=3)),
        st.tuples(st.just("merge"), st.integers(0, 100)),
    ),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=_steps, fan_in=st.sampled_from([2, 3, 16]))
def test_live_set_equals_model(tmp_path_factory: Any, steps: list[Any], fan_in: int) -> None:
    root = str(tmp_path_factory.mktemp("wh"))
    t, log = _new_table(root, fan_in=fan_in)
    model: dict[tuple[str, str, str], FileEntry] = {}
    history = {t.version: dict(model)}
    n = 0
    for step in steps:
        meta = log.read(log.latest_version())
        if step[0] == "add":
            adds = []
            for region, family in step[1]:
                n += 1
                adds.append(_entry(n, region, seq=meta.next_seq, family=family))
            commit(log, Commit("load", changes=[FileChange(add=adds)], new_seq=True))
            model.update(_keys(adds))
        elif step[0] == "remove":
            if not model:
                continue
            live = sorted(model)
            gone = {live[i % len(live)] for i in step[1]}
            commit(log, Commit("compact", changes=[FileChange(remove=[model[k] for k in gone])]))
            for k in gone:
                del model[k]
        else:  # rewrite part of the manifest list in a commit of its own
            if not meta.manifests:
                continue
            start = step[1] % len(meta.manifests)
            refs = log.merge_manifests(meta.manifests, start, version=meta.version + 1)

            def change(m: TableMetadata, refs: Any = refs, base: int = meta.version) -> Any:
                assert m.version == base
                new = m.next_version(operation="rewrite-manifests", timestamp_ms=1)
                return new.evolve(files=LiveFiles(log.fs, log.table_path, refs), manifests=refs)

            log.commit_table(change)
        latest = log.read(log.latest_version())
        history[latest.version] = dict(model)
        assert _keys(latest.files) == model
        assert latest.totals == FileTotals.of(model.values())
        for region in REGIONS:  # the region-filtered read agrees (fresh, unloaded sets)
            fresh = log.read(latest.version)
            got = fresh.files_in([region])
            assert not fresh.files.loaded
            assert _keys(got) == {k: e for k, e in model.items() if e.region == region}
        levels = [m.level for m in latest.manifests]
        assert sum(1 for lv in levels if lv == 0) < max(fan_in, 2) + 1
    for version, expected in history.items():  # as-of reads see their own live set
        assert _keys(log.read(version).files) == expected


def test_commit_writes_one_manifest_and_reads_only_touched_regions(tmp_path: Path) -> None:
    _t, log = _new_table(str(tmp_path / "wh"), fan_in=16)
    first = [_entry(i, REGIONS[i % 3]) for i in range(30)]
    commit(log, Commit("load", changes=[FileChange(add=first)], new_seq=True))
    v = log.read(log.latest_version())
    assert len(v.manifests) == 1 and v.manifests[0].adds == 30
    # the removed file's region is read, nothing is materialized
    res = commit(log, Commit("compact", changes=[FileChange(remove=[first[0]])]))
    assert not res.metadata.files.loaded
    v = log.read(log.latest_version())
    assert [(m.adds, m.removes) for m in v.manifests] == [(30, 0), (0, 1)]
    assert len(v.files) == 29
    # removing it again is stale
    with pytest.raises(JobConflictError):
        commit(log, Commit("compact", changes=[FileChange(remove=[first[0]])]))
    # root document: small, lists manifests, no files
    doc = json.loads(log.read_bytes(v.version))
    assert doc["format-version"] == 2 and "files" not in doc
    assert doc["totals"] == FileTotals.of(first[1:]).to_dict()


def test_manifest_rows_sorted_with_small_row_groups(tmp_path: Path) -> None:
    t, log = _new_table(str(tmp_path / "wh"), fan_in=16)
    entries = [_entry(i, REGIONS[i % 3], seq=3 - i % 3) for i in range(12_000)]
    commit(log, Commit("load", changes=[FileChange(add=entries)]))
    ref = log.read(log.latest_version()).manifests[0]
    rows = read_manifest(t.fs, t.path, ref)
    starts = rows.column("region-start").to_pylist()
    assert starts == sorted(starts)
    md = pq.ParquetFile(f"{t.path}/{ref.path}").metadata
    # a small manifest: row groups of SMALL_ROW_GROUP_ENTRIES (1,024) rows
    assert md.num_row_groups == 12 and md.row_group(0).column(0).compression == "ZSTD"
    assert md.row_group(0).column(1).statistics.has_min_max
    # one region's read touches only its row groups: rows 8,000.. are r000003's, so
    # groups 7 (7,168-8,191) to 11
    only = read_manifest(t.fs, t.path, ref, region_starts=[b"p"])
    regions = only.column("region").to_pylist()
    assert only.num_rows == 12_000 - 7 * 1024
    assert regions.count("r000003") == 4000 and "r000001" not in regions
    # read concurrently with others, filtered to regions: the same rows
    both = read_manifests(t.fs, t.path, [ref, ref], region_starts=[b"p"], region_ids=["r000003"])
    assert [x.num_rows for x in both] == [4000, 4000]
    assert both[0].equals(only.filter(pc.equal(only.column("region"), "r000003")))


def test_big_manifests_keep_bigger_row_groups(tmp_path: Path) -> None:
    """A manifest of more than SMALL_MANIFEST_ENTRIES rows (a rewritten list) is written
    in row groups of ROW_GROUP_ENTRIES rows: its footer stays small."""
    n = SMALL_MANIFEST_ENTRIES + 1
    small = rows_of([_entry(i, REGIONS[i % 3]) for i in range(3)], [], STARTS)
    rows = small.take(pa.array([i % 3 for i in range(n)]))
    paths = pa.array([f"data/r/f/x{i:06d}.parquet" for i in range(n)])
    rows = rows.set_column(rows.schema.get_field_index("path"), "path", paths)
    fs = fsspec.filesystem("file")
    ref = write_manifest(fs, str(tmp_path), rows, level=1, added_version=2)
    md = pq.ParquetFile(f"{tmp_path}/{ref.path}").metadata
    assert md.num_rows == n and md.num_row_groups == -(-n // ROW_GROUP_ENTRIES)
    assert SMALL_ROW_GROUP_ENTRIES < ROW_GROUP_ENTRIES


def test_merge_cancels_pairs_and_keeps_removes_of_older_adds() -> None:
    a, b, c = _entry(1, "r000001"), _entry(2, "r000002"), _entry(3, "r000003")
    m1 = rows_of([a, b], [], STARTS)
    m2 = rows_of([c], [a], STARTS)
    m3 = rows_of([], [c], STARTS)
    # run m2..m3 after m1: c is added and removed inside the run (cancels), the remove of
    # a (added before the run) is kept
    run = apply_last_wins([m2, m3], keep_removes=True)
    assert [(x["action"], x["path"]) for x in run.to_pylist()] == [("remove", a.path)]
    assert apply_last_wins([m1, run]).column("path").to_pylist() == [b.path]
    # the whole list: only live adds
    assert apply_last_wins([m1, m2, m3]).column("path").to_pylist() == [b.path]


def test_retry_reuses_the_manifest(tmp_path: Path) -> None:
    t, log = _new_table(str(tmp_path / "wh"), fan_in=16)
    base = log.latest_version()
    commit(log, Commit("load", changes=[FileChange(add=[_entry(1, "r000001")])]))

    def change(meta: TableMetadata) -> TableMetadata:
        assert isinstance(meta.files, LiveFiles)
        files = meta.files.with_delta([_entry(2, "r000002")], [])
        return meta.next_version(operation="load", timestamp_ms=1, files=files)

    new, outcome = log.commit_table(change, base_version=base)  # conflicts once, retries
    assert outcome.attempts == 2
    listed = t.fs.ls(f"{t.path}/_meta/manifests")
    assert len(listed) == len(new.manifests) == 2
    assert _keys(new.files).keys() == _keys([_entry(1, "r000001"), _entry(2, "r000002")]).keys()


def _rows(t: Any) -> list[Any]:
    return sorted(t.scan().to_arrow().to_pylist(), key=lambda r: (r["row"], r["qualifier"]))


def test_upgrade_v1_table_keeps_data_and_history(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:old", families=["cf"], splits=[b"m"], format_version=1)
    for i in range(4):
        t.load_cells(
            cells_table(
                [(b"a%d" % i, "cf", b"q", 1, 4, b"v"), (b"x%d" % i, "cf", b"q", 1, 4, b"w")]
            )
        )
    assert t.metadata.format_version == 1 and isinstance(t.files, tuple)
    before, files, v1 = _rows(t), set(t.files), t.version
    assert t.upgrade() is True
    assert t.metadata.format_version == 2 and t.version == v1 + 1
    assert set(t.files) == files and t.metadata.totals == FileTotals.of(files)
    assert _rows(wh.table("ns:old")) == before
    assert _rows(wh.table("ns:old", version=v1)) == before  # the v1 document still reads
    assert t.upgrade() is False  # idempotent
    t.load_cells(cells_table([(b"b", "cf", b"q", 1, 4, b"new")]))
    assert len(wh.table("ns:old").files) == len(files) + 1
    assert verify(wh.table("ns:old")).problems == ()


def test_v1_table_stays_v1(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:old", families=["cf"], format_version=1)
    t.load_cells(cells_table([(b"a", "cf", b"q", 1, 4, b"v")]))
    doc = json.loads(t.log.read_bytes(t.version))
    assert doc["format-version"] == 1 and len(doc["files"]) == 1


def test_reader_refuses_unknown_format_version(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"])
    doc = json.loads(t.log.read_bytes(1))
    doc["format-version"] = METADATA_FORMAT_VERSION + 1
    with pytest.raises(FormatVersionError):
        TableMetadata.from_json(json.dumps(doc).encode())


def test_verify_reports_missing_and_mismatched_manifests(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"])
    t.load_cells(cells_table([(b"a", "cf", b"q", 1, 4, b"v")]))
    t.load_cells(cells_table([(b"b", "cf", b"q", 1, 4, b"v")]))
    assert verify(wh.table("ns:t")).problems == ()
    meta = wh.table("ns:t").metadata
    fs = fsspec.filesystem("file")
    # a summary that lies
    lying = dataclasses.replace(meta.manifests[0], adds=7)

    def change(m: TableMetadata) -> TableMetadata:
        refs = (lying, *m.manifests[1:])
        new = m.next_version(operation="test", timestamp_ms=1)
        return new.evolve(files=LiveFiles(fs, t.path, refs), manifests=refs)

    t.log.commit_table(change)
    found = [p.message for p in verify(wh.table("ns:t")).problems]
    assert any("summary" in p for p in found), found
    # a missing manifest: reported, no crash
    fs.rm(f"{t.path}/{meta.manifests[-1].path}")
    found = [p.message for p in verify(wh.table("ns:t", version=meta.version)).problems]
    assert any("is missing" in p for p in found), found
    with pytest.raises(CorruptFileError, match="missing"):
        list(wh.table("ns:t", version=meta.version).files)


def test_corrupt_manifest_is_a_corrupt_file_error(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"])
    t.load_cells(cells_table([(b"a", "cf", b"q", 1, 4, b"v")]))
    ref = t.metadata.manifests[0]
    Path(f"{t.path}/{ref.path}").write_bytes(b"not parquet")
    with pytest.raises(CorruptFileError):
        list(wh.table("ns:t").files)


def test_point_get_plans_without_reading_every_manifest(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"], splits=[b"g", b"p"])
    t.load_cells(cells_table([(b"a", "cf", b"q", 1, 4, b"1")]))
    t.load_cells(cells_table([(b"h", "cf", b"q", 1, 4, b"2")]))
    t.load_cells(cells_table([(b"q", "cf", b"q", 1, 4, b"3")]))
    fresh = wh.table("ns:t")
    got = fresh.get(b"h")
    assert got.column("value").to_pylist() == [b"2"]
    assert not fresh.metadata.files.loaded  # the live set was never materialized
    assert fresh.describe().files == 3


def test_gets_read_a_regions_manifest_rows_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repeated gets on one table version read each region's manifest rows once (the
    live set keeps them, up to REGION_CACHE_ENTRIES); past the cap the oldest regions are
    read again, and every get still sees its region's files."""
    import cellstore.manifest.live as live

    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"], splits=[b"g", b"p"])
    for row, value in ((b"a", b"1"), (b"h", b"2"), (b"q", b"3"), (b"b", b"4")):
        t.load_cells(cells_table([(row, "cf", b"q", 1, 4, value)]))
    reads: list[int] = []
    real = live.read_manifests

    def counting(*args: Any, **kwargs: Any) -> Any:
        reads.append(len(kwargs.get("region_ids") or ()))
        return real(*args, **kwargs)

    monkeypatch.setattr(live, "read_manifests", counting)
    fresh = wh.table("ns:t")
    want = {b"a": [b"1"], b"b": [b"4"], b"h": [b"2"], b"q": [b"3"], b"z": []}
    for _ in range(3):
        for row, values in want.items():
            assert fresh.get(row).column("value").to_pylist() == values
    assert reads == [1, 1, 1]  # r000001 (a, b), r000002 (h), r000003 (q, z): once each
    assert not fresh.metadata.files.loaded
    # a cap of 3 entries: a region of 2 files and its neighbours evict each other
    monkeypatch.setattr(live, "REGION_CACHE_ENTRIES", 3)
    fresh, reads[:] = wh.table("ns:t"), []
    for row, values in [*want.items(), *want.items()]:
        assert fresh.get(row).column("value").to_pylist() == values
    assert len(reads) > 3
    # a new version sees the new file
    t.load_cells(cells_table([(b"c", "cf", b"q", 1, 4, b"5")]))
    assert wh.table("ns:t").get(b"c").column("value").to_pylist() == [b"5"]


def test_large_regions_and_load_ids_live_in_parts(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    splits = [b"%04d" % i for i in range(1, 100)]  # 100 regions: more than a root lists
    t = wh.create_table("ns:t", families=["cf"], splits=splits)
    log = t.log
    for i in range(70):  # more load ids than a root lists
        commit(log, Commit("load", load_id=f"load-{i:03d}"))
    doc = json.loads(log.read_bytes(log.latest_version()))
    assert "regions" not in doc and doc["regions-ref"].startswith("_meta/parts/")
    assert len(doc["load-ids"]) < 64 and doc["load-ids-ref"]["count"] >= 64
    meta = log.read(log.latest_version())
    assert len(meta.regions) == 100 and meta.load_ids[-1] == "load-069"
    assert meta.load_ids == tuple(f"load-{i:03d}" for i in range(70))
    # a retried load id found in the page is not applied again
    again = commit(log, Commit("load", load_id="load-001"))
    assert again.applied_before and not again.committed
    # the regions part is shared by every version while the regions do not change
    refs = {json.loads(log.read_bytes(v))["regions-ref"] for v in range(1, meta.version + 1)}
    assert len(refs) == 1
    sizes = [len(log.read_bytes(v)) for v in range(2, meta.version + 1)]
    assert max(sizes) < 8_000  # the roots stay small


def test_load_ids_are_trimmed_when_the_page_is_rewritten(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"])
    for i in range(1100):
        commit(t.log, Commit("load", load_id=f"l{i}"))
    meta = t.log.read(t.log.latest_version())
    assert 1000 <= len(meta.load_ids) < 1000 + 64
    assert meta.load_ids[-1] == "l1099" and "l0" not in meta.load_ids


def test_expire_deletes_old_versions_and_their_manifests_only(tmp_path: Path) -> None:
    from cellstore.jobs import expire, snapshot, vacuum

    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"])
    log = TableLog(t.fs, t.path, merge_fan_in=4)
    t.log = log
    for i in range(6):
        t.load_cells(cells_table([(b"r%d" % i, "cf", b"q", 1, 4, b"v%d" % i)]))
    snap_version = t.version
    snapshot(t, "keep")
    for i in range(6, 12):
        t.load_cells(cells_table([(b"r%d" % i, "cf", b"q", 1, 4, b"v%d" % i)]))
    expected = _rows(t)
    far = int(1e13)  # "now" far in the future: every version is older than the retention
    dry = expire(t, retention_ms=3_600_000, now_ms=far)
    assert dry.dry_run and 2 in dry.versions_deleted and log.exists(2)
    report = expire(t, retention_ms=3_600_000, now_ms=far, dry_run=False, rewrite=True)
    assert report.rewritten
    latest = log.latest_version()
    assert set(report.versions_kept) == {1, snap_version, latest}
    for v in range(2, latest):
        assert log.exists(v) == (v == snap_version)
    assert report.files_deleted  # manifests only the expired versions listed
    # what is left reads: newest, the snapshot's version, version 1
    assert _rows(wh.table("ns:t")) == expected
    assert len(wh.table("ns:t", version=snap_version).files) == 6
    assert t.history()[0].operation == "rewrite-manifests"
    assert verify(wh.table("ns:t")).problems == ()
    # the newest version is found even without the hint
    Path(log.hint_path).unlink()
    assert log.latest_version() == latest
    # a later commit and vacuum still work
    t.load_cells(cells_table([(b"z", "cf", b"q", 1, 4, b"z")]))
    assert len(wh.table("ns:t").files) == 13
    assert vacuum(wh.table("ns:t"), dry_run=True).deleted == ()
    with pytest.raises(cellstore.errors.TableNotFoundError):
        wh.table("ns:t", version=2)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("footer-digest", "ABCDEF0123456789", "footer-digest"),
        ("action", "replace", "action"),
        ("size", -1, "negative size"),
    ],
)
def test_a_manifest_with_bad_values_is_corrupt(
    tmp_path: Path, column: str, value: Any, message: str
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"])
    t.load_cells(cells_table([(b"a", "cf", b"q", 1, 4, b"v")]))
    path = f"{t.path}/{t.metadata.manifests[0].path}"
    rows = pq.read_table(path)
    i = rows.schema.get_field_index(column)
    rows = rows.set_column(i, rows.schema.field(i), pa.array([value], rows.schema.field(i).type))
    pq.write_table(rows, path)
    with pytest.raises(CorruptFileError, match=message):
        list(wh.table("ns:t").files)
    found = [p.message for p in verify(wh.table("ns:t")).problems]
    assert any(message in p for p in found), found


def test_vacuum_keeps_files_of_as_of_versions_after_restore_and_compaction(
    tmp_path: Path,
) -> None:
    import time

    from cellstore.jobs import compact, delete_snapshot, restore, snapshot, vacuum

    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["cf"])
    for i in range(3):
        t.load_cells(cells_table([(b"r%d" % i, "cf", b"q", 1, 4, b"v%d" % i)]))
    first = {f.path for f in t.files}
    snapshot(t, "s")
    compact(t, major=True)
    time.sleep(0.3)  # the first files are older than the cutoff below
    restore(t, "s")  # the first files are live again (the snapshot's manifests)
    restored = t.version
    delete_snapshot(t, "s")
    compact(t, major=True)  # and gone again from the newest version
    t = wh.table("ns:t")
    assert not first & {f.path for f in t.files}
    cutoff = t.log.read(restored).last_history.timestamp_ms - 50
    hour = 3_600_000
    report = vacuum(t, dry_run=False, retention_ms=hour, now_ms=cutoff + hour)
    assert report.versions_retained >= 2  # the versions current since the cutoff
    for v in range(restored - 1, t.version + 1):  # every version current since then reads
        assert _rows(wh.table("ns:t", version=v))
        for f in wh.table("ns:t", version=v).files:
            assert Path(f"{t.path}/{f.path}").exists(), (v, f.path)


def test_cascading_merge_writes_only_listed_manifests(tmp_path: Path) -> None:
    """A merging commit writes neither its own level-0 manifest nor an intermediate level
    (docs/format.md 13.4): every manifest file is listed by some version, and the live set
    of every version is the model's."""
    t, log = _new_table(str(tmp_path / "wh"), fan_in=2)  # upper fan-in 2
    model: dict[tuple[str, str, str], FileEntry] = {}
    live_by_version = {}
    for n in range(9):  # 9 commits: merges at 2, 4 (-> level 2), 6, 8 (-> level 3)
        e = _entry(n, REGIONS[n % 3])
        removes = [model.pop(next(iter(model)))] if n % 4 == 3 else []
        model[(e.path, e.region, e.family)] = e
        commit(log, Commit("load", changes=[FileChange(add=[e], remove=removes)]))
        live_by_version[log.latest_version()] = dict(model)
    listed: set[str] = set()
    for v in range(1, log.latest_version() + 1):
        meta = log.read(v)
        listed |= {r.path for r in meta.manifests}
        if v in live_by_version:
            assert _keys(meta.files) == live_by_version[v]
    written = {f"_meta/manifests/{Path(p).name}" for p in t.fs.ls(f"{t.path}/_meta/manifests")}
    assert written == listed
    # 9 level-0 runs: commits 1, 3, 5, 7, 9 write level 0; 2 -> level 1, 4 -> level 2 (one
    # file, not a level 1 first), 6 -> level 1, 8 -> level 3
    assert len(written) == 9
    levels = [r.level for r in log.read(log.latest_version()).manifests]
    assert levels == [3, 0]
    for v in range(1, log.latest_version() + 1):
        assert manifest_file_problems(t.fs, t.path, log.read(v)) == []


def test_manifests_of_the_earlier_writer_layout_still_read(tmp_path: Path) -> None:
    """Format compatibility (13.2): a manifest written as 0.2.0 wrote them (PLAIN, Arrow
    schema stored, default zstd level) reads, merges and verifies like a new one."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from cellstore.manifest.files import _SORT_KEYS, MANIFEST_SCHEMA, ref_of

    t, log = _new_table(str(tmp_path / "wh"), fan_in=16)
    entries = [_entry(n, REGIONS[n % 3]) for n in range(50)]
    commit(log, Commit("load", changes=[FileChange(add=entries)]))
    meta = log.read(log.latest_version())
    (new_ref,) = meta.manifests
    rows = read_manifest(t.fs, t.path, new_ref)
    new_md = pq.ParquetFile(f"{t.path}/{new_ref.path}").metadata
    assert b"ARROW:schema" not in (new_md.metadata or {})
    assert "DELTA_BYTE_ARRAY" in new_md.row_group(0).column(2).encodings  # path
    # rewrite the same rows as the earlier writer did, under the same name
    old = rows_of(entries, [], STARTS)
    old = old.take(pc.sort_indices(old, _SORT_KEYS)).cast(MANIFEST_SCHEMA)
    sink = pa.BufferOutputStream()
    pq.write_table(
        old,
        sink,
        compression="zstd",
        use_dictionary=False,
        row_group_size=4096,
        write_statistics=["region-start"],
    )
    data = sink.getvalue().to_pybytes()
    Path(t.path, new_ref.path).write_bytes(data)
    old_ref = ref_of(
        old, path=new_ref.path, level=0, added_version=new_ref.added_version, size=len(data)
    )
    assert read_manifest(t.fs, t.path, old_ref).equals(rows)
    # row-group selection by region-start statistics works on both layouts
    for ref in (old_ref, new_ref):
        assert read_manifest(t.fs, t.path, ref, region_starts=[b"zz"]).num_rows == 0
        assert read_manifest(t.fs, t.path, ref, region_starts=[b"g"]).num_rows == 50
    # a root listing the old-layout file (as 0.2.0 wrote it) reads and verifies
    root = json.loads(log.read_bytes(meta.version))
    root["manifests"][0]["size"] = len(data)
    Path(log.version_path(meta.version)).write_text(json.dumps(root))
    table = cellstore.connect(str(tmp_path / "wh")).table("ns:t")
    assert _keys(table.files) == _keys(entries)
    assert manifest_file_problems(t.fs, t.path, table.metadata) == []
    # a merge of old-layout and new-layout manifests (fan-in 2) reads both
    log2 = TableLog(t.fs, t.path, merge_fan_in=2)
    extra = _entry(99, "r000003")
    commit(log2, Commit("load", changes=[FileChange(add=[extra])]))
    merged = log2.read(log2.latest_version())
    assert [r.level for r in merged.manifests] == [1]
    assert _keys(merged.files) == _keys([*entries, extra])


def test_read_manifests_names_the_bad_one(tmp_path: Path) -> None:
    """Values are checked once over all manifests read together; a bad one is named."""
    fs = fsspec.filesystem("file")
    good = rows_of([_entry(1, "r000001")], [], STARTS)
    bad = good.set_column(0, "action", pa.array(["bogus"]))
    refs = [
        write_manifest(fs, str(tmp_path), rows, level=0, added_version=2)
        for rows in (good, good, bad, good)
    ]
    assert [t.num_rows for t in read_manifests(fs, str(tmp_path), refs[:2])] == [1, 1]
    with pytest.raises(CorruptFileError, match=f"{refs[2].path}: manifest has an action"):
        read_manifests(fs, str(tmp_path), refs)
    refs.append(dataclasses.replace(refs[0], path="_meta/manifests/" + "0" * 32 + ".parquet"))
    with pytest.raises(CorruptFileError, match="manifest file is missing"):
        read_manifests(fs, str(tmp_path), [refs[0], refs[-1]], region_starts=[b""])

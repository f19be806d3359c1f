"""Format version 2: the leading manifests of a root shared through a part (``manifests-ref``).

docs/format.md 13.1: a root MAY list its oldest N manifests by reference to a
content-addressed part document; the full list is the part's entries followed by the
root's ``manifests``. These tests check that every reader of a manifest list sees the whole
list (as-of reads, snapshots, clones, restore, vacuum, expire, verify, upgrade, retries,
rewrite), that the part is shared while the merged manifests do not change, and that roots
written before the field existed still read.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import cellstore
from cellstore.commit import Commit, FileChange, commit
from cellstore.core.metadata import FileEntry, FileTotals, TableMetadata
from cellstore.errors import CorruptFileError
from cellstore.jobs import clone, expire, restore, snapshot, vacuum, verify
from cellstore.jobs.expire import rewrite_manifests
from cellstore.jobs.verify import manifest_file_problems
from cellstore.manifest import LiveFiles, TableLog
from cellstore.manifest.log import INLINE_MANIFESTS
from strategies import cells_table

REGIONS = ["r000001", "r000002", "r000003"]
STARTS = {"r000001": b"", "r000002": b"g", "r000003": b"p"}
FAR = int(1e13)  # "now" far in the future: every version is older than the retention
HOUR = 3_600_000


def _entry(n: int, region: str, *, seq: int = 1) -> FileEntry:
    return FileEntry(
        path=f"data/{region}/f/x{n:05d}.parquet",
        region=region,
        family="f",
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


def _keys(entries: Any) -> set[tuple[str, str, str]]:
    return {(e.path, e.region, e.family) for e in entries}


def _table(tmp_path: Path, *, fan_in: int = 2, upper: int = 4) -> tuple[Any, Any, TableLog]:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["f"], splits=[b"g", b"p"])
    log = TableLog(t.fs, t.path, merge_fan_in=fan_in, upper_merge_fan_in=upper)
    t.log = log
    return wh, t, log


def _load(log: TableLog, n: int) -> FileEntry:
    meta = log.read(log.latest_version())
    e = _entry(n, REGIONS[n % 3], seq=meta.next_seq)
    commit(log, Commit("load", changes=[FileChange(add=[e])], new_seq=True))
    return e


def _root(log: TableLog, version: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(log.read_bytes(version))
    return doc


def _parts_on_disk(t: Any) -> set[str]:
    d = Path(t.path, "_meta", "parts")
    return {f"_meta/parts/{p.name}" for p in d.iterdir()} if d.exists() else set()


def test_roots_share_the_merged_manifests_through_one_part(tmp_path: Path) -> None:
    _wh, t, log = _table(tmp_path)
    added = [_load(log, n) for n in range(40)]
    latest = log.latest_version()
    refs_by_version: dict[int, str | None] = {}
    for v in range(2, latest + 1):
        doc = _root(log, v)
        meta = log.read(v)
        ref = doc.get("manifests-ref")
        refs_by_version[v] = ref["path"] if ref else None
        if ref is not None:
            # no "manifests": a reader that does not know manifests-ref refuses the root
            assert "manifests" not in doc
            inline = doc["manifests-tail"]
        else:
            assert "manifests-tail" not in doc
            inline = doc["manifests"]
        if ref is not None:
            part = json.loads(Path(t.path, ref["path"]).read_bytes())
            assert len(part) == ref["count"] >= 2
            assert [*part, *inline] == [m.to_dict() for m in meta.manifests]
            assert all(m["level"] >= 1 for m in part)
            assert meta.manifests_ref == ref["path"] and meta.manifests_paged == ref["count"]
        else:
            assert [m.to_dict() for m in meta.manifests] == inline
        # the root lists only the level-0 manifests after the merged ones
        assert all(m["level"] == 0 for m in inline[1:])
        assert _keys(meta.files) == _keys(added[: v - 1])
        assert meta.totals == FileTotals.of(added[: v - 1])
    used = [p for p in refs_by_version.values() if p]
    assert used, "40 commits at fan-in 2 must page their merged manifests"
    # a part is shared by consecutive versions and written only when the prefix changes
    assert len(set(used)) < len(used)
    changes = sum(1 for v in range(3, latest + 1) if refs_by_version[v] != refs_by_version[v - 1])
    assert len(set(used)) <= changes + 1
    assert _parts_on_disk(t) == set(used)  # nothing unlisted was written
    for path in used:  # content-addressed names
        data = Path(t.path, path).read_bytes()
        assert Path(path).stem == hashlib.sha256(data).hexdigest()[:32]
    opened = cellstore.connect(str(tmp_path / "wh")).table("ns:t").metadata
    assert manifest_file_problems(t.fs, t.path, opened) == []  # (synthetic entries: no files)


def test_roots_written_without_manifests_ref_still_read(tmp_path: Path) -> None:
    """Roots of the earlier writer (every manifest inline) read as before, and a commit
    on such a root writes a part."""
    wh, t, log = _table(tmp_path)
    added = [_load(log, n) for n in range(12)]
    latest = log.latest_version()
    full = log.read(latest)
    assert full.manifests_ref is not None
    for v in range(2, latest + 1):  # rewrite every root as the earlier writer did
        meta = log.read(v)
        doc = _root(log, v)
        doc.pop("manifests-ref", None)
        doc.pop("manifests-tail", None)
        doc["manifests"] = [m.to_dict() for m in meta.manifests]
        Path(log.version_path(v)).write_bytes(json.dumps(doc, separators=(",", ":")).encode())
    old = log.read(latest)
    assert old.manifests == full.manifests and old.manifests_ref is None
    assert _keys(old.files) == _keys(added)
    assert _keys(wh.table("ns:t", version=5).files) == _keys(added[:4])
    assert manifest_file_problems(t.fs, t.path, wh.table("ns:t").metadata) == []
    more = _load(log, 12)
    new = log.read(log.latest_version())
    assert new.manifests_ref is not None
    assert _keys(new.files) == _keys([*added, more])


def _parse_as_before_manifests_ref(doc: dict[str, Any]) -> TableMetadata:
    """Parse a root as releases before ``manifests-ref`` did: they resolved only
    ``regions-ref`` and ``load-ids-ref`` (absent here), ignored keys they did not know and
    parsed the rest with ``TableMetadata.from_dict``, whose rules for ``manifests`` are
    unchanged (a format-version-2 root without ``manifests`` is malformed)."""
    assert "regions-ref" not in doc and "load-ids-ref" not in doc
    known = {k: v for k, v in doc.items() if k not in ("manifests-ref", "manifests-tail")}
    return TableMetadata.from_dict(json.loads(json.dumps(known)), source="old reader")


def test_a_reader_without_manifests_ref_refuses_the_root(tmp_path: Path) -> None:
    """A root with manifests-ref has no ``manifests`` key, so a release that does not know
    the reference finds the root malformed instead of seeing too few live files; the
    first layout of the field (newer manifests under ``manifests``) is misread that way
    and still reads here."""
    wh, _t, log = _table(tmp_path)
    added = [_load(log, n) for n in range(12)]
    meta = log.read(log.latest_version())
    assert meta.manifests_ref is not None and meta.manifests_paged >= 2
    doc = _root(log, meta.version)
    assert "manifests" not in doc
    assert len(doc["manifests-tail"]) == len(meta.manifests) - meta.manifests_paged
    with pytest.raises(
        CorruptFileError, match=r"old reader: .* malformed: KeyError\('manifests'\)"
    ):
        _parse_as_before_manifests_ref(doc)
    # the first layout: same part, newer manifests listed under "manifests"
    first = {k: v for k, v in doc.items() if k != "manifests-tail"}
    first["manifests"] = doc["manifests-tail"]
    # Releases before the field misread it as no live files at all (what the safety rule
    # prevents); today's parser also refuses a root that lists no manifest but counts files.
    assert first["manifests"] == []  # every manifest is in the part
    with pytest.raises(CorruptFileError, match="totals count 12 files but no manifest"):
        _parse_as_before_manifests_ref(first)
    Path(log.version_path(meta.version)).write_bytes(json.dumps(first).encode())
    again = log.read(meta.version)
    assert again.manifests == meta.manifests and again.manifests_ref == meta.manifests_ref
    assert _keys(again.files) == _keys(added)
    assert _keys(wh.table("ns:t").files) == _keys(added)
    # a commit on a first-layout root writes the current layout
    more = _load(log, 12)
    doc = _root(log, log.latest_version())
    assert "manifests" not in doc and "manifests-tail" in doc
    assert _keys(log.read(log.latest_version()).files) == _keys([*added, more])
    # both lists, or a tail without a reference: corrupt
    both = {**doc, "manifests": []}
    Path(log.version_path(log.latest_version())).write_bytes(json.dumps(both).encode())
    with pytest.raises(CorruptFileError, match="not both or neither"):
        log.read(log.latest_version())
    lone = {k: v for k, v in doc.items() if k != "manifests-ref"}
    Path(log.version_path(log.latest_version())).write_bytes(json.dumps(lone).encode())
    with pytest.raises(CorruptFileError, match="manifests-tail without manifests-ref"):
        log.read(log.latest_version())


def test_a_missing_or_corrupt_part_is_named(tmp_path: Path) -> None:
    wh, t, log = _table(tmp_path)
    for n in range(6):  # levels 1, 1, 1: paged
        _load(log, n)
    meta = log.read(log.latest_version())
    assert meta.manifests_ref is not None
    part = Path(t.path, meta.manifests_ref)
    data = part.read_bytes()
    # tampered after the version was opened: verify names the part
    opened = wh.table("ns:t")
    part.write_bytes(data.replace(b'"level":', b'"level" :', 1))
    found = [p.message for p in manifest_file_problems(t.fs, t.path, opened.metadata)]
    assert any(meta.manifests_ref in p and "SHA-256" in p for p in found), found
    part.unlink()
    found = [p.message for p in manifest_file_problems(t.fs, t.path, opened.metadata)]
    assert any(f"part file {meta.manifests_ref} is missing" in p for p in found), found
    # a root whose part is missing or corrupt does not open; the error names the part
    with pytest.raises(CorruptFileError, match=f"part {meta.manifests_ref} is missing"):
        wh.table("ns:t")
    part.write_bytes(b"[{]")
    with pytest.raises(CorruptFileError, match=f"part {meta.manifests_ref} is not valid JSON"):
        log.read(meta.version)
    part.write_bytes(json.dumps(json.loads(data)[:-1]).encode())
    with pytest.raises(CorruptFileError, match="manifests part"):
        log.read(meta.version)
    part.write_bytes(data)
    doc = _root(log, meta.version)
    doc["manifests-ref"]["count"] = "2"
    Path(log.version_path(meta.version)).write_text(json.dumps(doc))
    with pytest.raises(CorruptFileError, match="manifests-ref"):
        log.read(meta.version)


def test_expire_keeps_parts_of_kept_versions_and_deletes_the_others(tmp_path: Path) -> None:
    wh, t, log = _table(tmp_path)
    for n in range(10):
        _load(log, n)
    snap_version = log.latest_version()
    snapshot(t, "keep", version=snap_version)
    snap_meta = log.read(snap_version)
    assert snap_meta.manifests_ref is not None
    for n in range(10, 30):
        _load(log, n)
    before = _parts_on_disk(t)
    report = expire(t, retention_ms=HOUR, now_ms=FAR, dry_run=False)
    kept = {v: log.read(v) for v in report.versions_kept}
    referenced = {p for m in kept.values() for p in m.part_paths}
    assert snap_meta.manifests_ref in referenced
    after = _parts_on_disk(t)
    assert referenced <= after  # every kept version still opens
    assert after == referenced  # and no part only expired versions listed is left
    assert before - after, "expire deleted no part"
    assert set(report.files_deleted) >= before - after
    for v in report.versions_kept:
        assert manifest_file_problems(t.fs, t.path, wh.table("ns:t", version=v).metadata) == []
    assert len(wh.table("ns:t", version=snap_version).files) == 10
    # with a rewrite, the newest version lists one manifest and no part
    t = wh.table("ns:t")
    t.log = log
    report = expire(t, retention_ms=HOUR, now_ms=FAR, dry_run=False, rewrite=True)
    newest = log.read(log.latest_version())
    assert report.rewritten and len(newest.manifests) == 1 and newest.manifests_ref is None
    assert len(newest.files) == 30
    assert _parts_on_disk(t) == {p for v in report.versions_kept for p in log.read(v).part_paths}


def test_snapshot_clone_restore_vacuum_see_the_whole_list(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:src", families=["cf"], splits=[b"m"])
    t.log = TableLog(t.fs, t.path, merge_fan_in=2, upper_merge_fan_in=4)
    for i in range(6):  # levels 1, 1, 1: paged
        t.load_cells(cells_table([(b"r%02d" % i, "cf", b"q", 1, 4, b"v%d" % i)]))
    assert t.metadata.manifests_ref is not None
    expected = t.scan().to_arrow().to_pylist()
    snapshot(t, "s")
    for i in range(6, 14):
        t.load_cells(cells_table([(b"r%02d" % i, "cf", b"q", 1, 4, b"v%d" % i)]))
    report = clone(t, "s", "ns:copy")
    assert report.files == 6
    copy = wh.table("ns:copy")
    assert copy.scan().to_arrow().to_pylist() == expected
    assert verify(copy).problems == ()
    restore(t, "s")
    assert wh.table("ns:src").scan().to_arrow().to_pylist() == expected
    assert vacuum(wh.table("ns:src"), dry_run=True).deleted == ()  # every file still read
    for v in range(1, t.version + 1):
        assert verify(wh.table("ns:src", version=v)).problems == ()


def test_a_retried_commit_builds_its_part_on_the_newer_base(tmp_path: Path) -> None:
    _wh, _t, log = _table(tmp_path)
    for n in range(5):  # levels 1, 1, 0
        _load(log, n)
    stale = log.latest_version()
    winner = _load(log, 5)  # completes a merge (levels 1, 1, 1): a part is written
    assert log.read(log.latest_version()).manifests_paged == 3

    def change(meta: TableMetadata) -> TableMetadata:
        assert isinstance(meta.files, LiveFiles)
        files = meta.files.with_delta([_entry(99, "r000002", seq=meta.next_seq)], [])
        return meta.next_version(operation="load", timestamp_ms=1, files=files)

    new, outcome = log.commit_table(change, base_version=stale)
    assert outcome.attempts == 2
    got = log.read(new.version)
    assert got.manifests == new.manifests and got.manifests_ref == new.manifests_ref
    assert (winner.path, winner.region, winner.family) in _keys(got.files)
    assert got.manifests_paged == 3 and len(got.manifests) == 4
    assert len(got.files) == 7


def test_upgrade_then_commits_page_the_merged_manifests(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:old", families=["cf"], format_version=1)
    t.load_cells(cells_table([(b"a", "cf", b"q", 1, 4, b"v")]))
    assert t.upgrade() is True
    assert t.metadata.manifests_ref is None
    t.log = TableLog(t.fs, t.path, merge_fan_in=2, upper_merge_fan_in=4)
    for i in range(6):  # with the upgrade's: levels 1, 1, 1, 0
        t.load_cells(cells_table([(b"b%d" % i, "cf", b"q", 1, 4, b"v")]))
    meta = wh.table("ns:old").metadata
    assert meta.manifests_ref is not None and len(meta.files) == 7
    assert verify(wh.table("ns:old")).problems == ()


def test_unmergeable_runs_keep_the_root_small(tmp_path: Path) -> None:
    """Manifests too big to merge inline stay level 0; the root still lists fewer than
    INLINE_MANIFESTS of them, the rest go into a part."""
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=["f"], splits=[b"g", b"p"])
    log = TableLog(t.fs, t.path, merge_fan_in=2, max_inline_merge_entries=0)
    added = [_load(log, n) for n in range(INLINE_MANIFESTS + 5)]
    meta = log.read(log.latest_version())
    assert {m.level for m in meta.manifests} == {0}
    assert len(meta.manifests) == INLINE_MANIFESTS + 5
    assert len(_root(log, meta.version)["manifests-tail"]) < INLINE_MANIFESTS
    assert meta.manifests_ref is not None
    assert _keys(meta.files) == _keys(added)
    assert rewrite_manifests(wh.table("ns:t"))
    assert len(wh.table("ns:t").files) == len(added)

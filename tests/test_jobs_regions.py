"""Region split and merge (cellstore.jobs.regions): reads unchanged, files cut or re-assigned,
rows inside their regions, concurrent loads kept, refusals, CLI."""

from __future__ import annotations

import dataclasses
import json
import random

import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

import cellstore.jobs.regions.merging as merge_mod
import cellstore.jobs.regions.splitting as split_mod
from cellstore.cli import cli
from cellstore.core.cells import CellType
from cellstore.core.family import Family
from cellstore.errors import (
    InvalidArgumentError,
    InvalidRowRangeError,
    JobConflictError,
)
from cellstore.jobs import merge, merge_small, region_sizes, split, split_point, verify
from cellstore.loader import LoadSettings, Mapping, plan_load
from cellstore.loader.direct import WrittenFile, commit_files, now_ms
from cellstore.loader.execute import commit_load, execute_plan
from cellstore.storefiles import StoreFileReader, check, read_store_file, write_store_file
from cellstore.warehouse import connect

PUT, DEL, DCOL, DFAM, DFV = (
    int(t)
    for t in (
        CellType.PUT,
        CellType.DELETE,
        CellType.DELETE_COLUMN,
        CellType.DELETE_FAMILY,
        CellType.DELETE_FAMILY_VERSION,
    )
)


def cells(rows):
    """(row, family, qualifier, ts, type, value) tuples as a load_cells table."""
    r, f, q, ts, ty, v = zip(*rows, strict=True)
    return pa.table(
        {
            "row": list(r),
            "family": list(f),
            "qualifier": list(q),
            "ts": list(ts),
            "type": pa.array(ty, pa.int8()),
            "value": list(v),
        }
    )


def build(root, *, row_group_cells=4, storage_options=None):
    """Table t (families cf: 5 versions, meta: 1 version; split at 'm') with three loads:

    - load 1: 26 rows a..z, two columns, three versions in cf, one cell in meta;
    - load 2: exact key ties with load 1 (same row/qualifier/ts/type, new value: seq decides),
      and every kind of delete marker on both sides of 'm' and 't';
    - load 3: only rows 'p'..'r' (a file entirely below the later split key 't').
    """
    wh = connect(root, storage_options=storage_options)
    t = wh.create_table(
        "t",
        families=[Family(name="cf", max_versions=5), Family(name="meta", max_versions=1)],
        splits=["m"],
    )
    letters = [chr(c).encode() * 2 for c in range(ord("a"), ord("z") + 1)]
    one = []
    for i, row in enumerate(letters):
        for q in (b"q1", b"q2"):
            for ts in (10, 20, 30):
                one.append((row, "cf", q, ts, PUT, b"v1-%s-%d" % (q, ts)))
        one.append((row, "meta", b"m", 5, PUT, b"meta-%d" % i))
    t.load_cells(cells(one), row_group_cells=row_group_cells)
    two = []
    for row in letters[::3]:
        two.append((row, "cf", b"q1", 30, PUT, b"tie-winner"))  # same key as load 1
    two += [
        (b"bb", "cf", b"q2", 20, DEL, b""),
        (b"hh", "cf", b"q1", 25, DCOL, b""),
        (b"nn", "cf", b"", 15, DFAM, b""),
        (b"ss", "cf", b"", 20, DFV, b""),
        (b"uu", "cf", b"q2", 30, DCOL, b""),
        (b"ww", "meta", b"", 100, DFAM, b""),
    ]
    t.load_cells(cells(two), row_group_cells=row_group_cells)
    three = [(r, "cf", b"q3", 40, PUT, b"three") for r in (b"pp", b"qq", b"rr")]
    t.load_cells(cells(three), row_group_cells=row_group_cells)
    return wh, t


def reads(t):
    """Every read that must not change: latest, all versions, raw (markers and masked cells),
    a row range crossing the split keys, and a reversed scan."""
    return {
        "latest": t.scan().to_arrow().to_pylist(),
        "versions": t.scan(max_versions=10).to_arrow().to_pylist(),
        "raw": t.scan(raw=True, max_versions=100).to_arrow().to_pylist(),
        "range": t.scan(start_row=b"kk", stop_row=b"uv", max_versions=10).to_arrow().to_pylist(),
        "reversed": t.scan(reversed=True).to_arrow().to_pylist(),
        "get": t.get(b"tt", max_versions=10).to_pylist(),
    }


def assert_invariants(t):
    """Every entry's file is sound, agrees with its entry and lies inside its region."""
    seen = set()
    for f in t.files:
        region = t.metadata.region(f.region)
        assert region.contains(f.first_row) and region.contains(f.last_row), f
        report = check(t.fs, t.file_path(f), region=region, entry=f)
        assert report.ok, report
        assert f.path not in seen  # a path belongs to one region
        seen.add(f.path)
    report = verify(t, workers=1)
    assert report.ok, report.problems


def test_split_at_key_keeps_every_read(any_root):
    _, t = build(any_root)
    before = reads(t)
    # Seq tie-breaking is exercised: the later load wins the exact key ties.
    assert {
        "row": b"aa",
        "family": "cf",
        "qualifier": b"q1",
        "ts": 30,
        "type": PUT,
        "value": b"tie-winner",
    } in before["latest"]
    old = {f.path: f for f in t.files}
    r2 = t.metadata.region("r000002")
    report = split(t, at="tt")
    assert report.version == t.version and t.metadata.last_history.operation == "split"
    (s,) = report.splits
    assert (s.parent, s.keys, s.children) == ("r000002", (b"tt",), ("r000003", "r000004"))
    assert [(r.id, r.start, r.end) for r in t.regions] == [
        ("r000001", b"", b"m"),
        ("r000003", b"m", b"tt"),
        ("r000004", b"tt", b""),
    ]
    assert t.metadata.next_region_id == 5
    # Re-assigned: load 3 (rows pp..rr, below 'tt') and load 2's meta file (row ww, above).
    # Cut: loads 1 (cf and meta) and 2 (cf) span 'tt'.
    assert s.files_reassigned == 2 and s.files_cut == 3 and s.files_written == 6
    moved = {f.path: f.region for f in t.files if f.path in old and f.region != "r000001"}
    assert sorted(moved.values()) == ["r000003", "r000004"]
    for f in t.files:
        if f.path in old:  # not rewritten: same file, same seq and load id
            assert f == dataclasses.replace(old[f.path], region=f.region)
        else:
            assert f.path.startswith(f"data/{f.region}/") and report.job_id in f.path
            assert f.load_id == report.job_id
            with StoreFileReader(t.fs, t.file_path(f)) as rd:
                assert rd.info.seq == f.seq
    assert {f.seq for f in t.files if f.path not in old} == {1, 2}
    assert sum(f.cells for f in t.files) == sum(f.cells for f in old.values())
    assert not any(f.region == r2.id for f in t.files)
    assert_invariants(t)
    assert reads(t) == before
    # Re-opened from storage, and as of the version before the split, reads are the same.
    again = connect(any_root).table("t")
    assert reads(again) == before
    assert reads(connect(any_root).table("t", version=t.version - 1)) == before


def test_split_and_merge_on_s3(s3_root, s3_options):
    _, t = build(s3_root, storage_options=s3_options)
    before = reads(t)
    split(t, at=["dd", "tt"])
    assert len(t.regions) == 4
    assert_invariants(t)
    assert reads(t) == before
    merge_small(t, max_bytes=1 << 30)
    assert len(t.regions) == 1
    assert reads(t) == before


def test_split_is_idempotent_and_skips_boundaries(tmp_path):
    _, t = build(tmp_path)
    first = split(t, at=[b"tt", b"m"])
    assert first.skipped_keys == (b"m",) and len(first.splits) == 1
    version = t.version
    again = split(t, at="tt")
    assert again.version is None and again.splits == () and again.skipped_keys == (b"tt",)
    assert t.version == version
    assert again.to_dict()["skipped-keys"] == ["tt"]


def test_split_several_keys_in_several_regions(tmp_path):
    _, t = build(tmp_path)
    before = reads(t)
    report = split(t, at=["dd", "gg", "pq", "xx"])
    assert [(s.parent, s.keys) for s in report.splits] == [
        ("r000001", (b"dd", b"gg")),
        ("r000002", (b"pq", b"xx")),
    ]
    assert [r.id for r in t.regions] == [f"r{i:06d}" for i in range(3, 9)]
    assert [r.start for r in t.regions] == [b"", b"dd", b"gg", b"m", b"pq", b"xx"]
    assert_invariants(t)
    assert reads(t) == before


def test_split_inside_given_region_and_refusals(tmp_path):
    wh, t = build(tmp_path)
    with pytest.raises(InvalidRowRangeError, match="outside region r000001"):
        split(t, region="r000001", at="pp")
    with pytest.raises(InvalidArgumentError, match="no region 'r9'"):
        split(t, region="r9")
    with pytest.raises(InvalidRowRangeError, match="empty"):
        split(t, at=b"")
    with pytest.raises(InvalidArgumentError):
        split(t, at=[])
    with pytest.raises(InvalidArgumentError, match="opened at version"):
        split(wh.table("t", version=1), at="cc")
    with pytest.raises(InvalidArgumentError, match="opened at version"):
        merge(wh.table("t", version=1), regions=["r000001", "r000002"])
    # A key that is the region's own start is already a boundary: a no-op, never a split.
    assert split(t, region="r000002", at="m").splits == ()
    report = split(t, region="r000001", at="cc")
    assert report.splits[0].parent == "r000001"
    assert_invariants(t)


def test_auto_split_refuses_what_cannot_be_split(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("e", families=["f"], splits=["m"])
    with pytest.raises(InvalidArgumentError, match="holds no data"):
        split(t)
    t.load_cells(cells([(b"aa", "f", b"q", 1, PUT, b"x")]))
    with pytest.raises(InvalidArgumentError, match=r"r000002 .* is empty"):
        split(t, region="r000002")
    with pytest.raises(InvalidArgumentError, match="single row"):
        split(t)  # the largest region holds one row
    # An empty region can still be pre-split at an explicit key.
    assert split(t, region="r000002", at="x").version is not None
    assert [r.start for r in t.regions] == [b"", b"m", b"x"]


def brute_force_rows(t, region_id):
    """(row, cells) of a region's files, all families, in row order."""
    counts = {}
    for f in t.files:
        if f.region == region_id:
            for row in read_store_file(t.fs, t.file_path(f)).column("row").to_pylist():
                counts[row] = counts.get(row, 0) + 1
    return sorted(counts.items())


@pytest.mark.parametrize("row_group_cells", [1, 3, 64])
def test_split_point_is_the_middle_cell_row(tmp_path, monkeypatch, row_group_cells):
    wh = connect(tmp_path)
    t = wh.create_table("w", families=["a", "b"])
    # Skewed rows: a few heavy rows, many light ones, in several overlapping files.
    rows = []
    for i in range(40):
        n = 12 if i in (5, 17, 18) else 1
        rows += [(b"row%03d" % i, "a", b"q%02d" % j, 1, PUT, b"x") for j in range(n)]
    t.load_cells(cells(rows[::2]), row_group_cells=row_group_cells)
    t.load_cells(cells(rows[1::2]), row_group_cells=row_group_cells)
    t.load_cells(
        cells([(b"row%03d" % i, "b", b"z", 2, PUT, b"y") for i in range(0, 40, 4)]),
        row_group_cells=row_group_cells,
    )
    calls = []
    real = StoreFileReader.read_row_groups

    def spy(self, which, **kw):
        calls.append(len(which))
        return real(self, which, **kw)

    monkeypatch.setattr(StoreFileReader, "read_row_groups", spy)
    key = split_point(t, region="r000001")
    monkeypatch.undo()
    # Brute force: the row (not the first) whose preceding cells are nearest half.
    counted = brute_force_rows(t, "r000001")
    total = sum(n for _, n in counted)
    before, best = 0, []
    for row, n in counted:
        if before:
            best.append((abs(2 * before - total), row))
        before += n
    assert key == min(best)[1] == b"row018"
    groups = 0
    for f in t.files:
        with StoreFileReader(t.fs, t.file_path(f)) as rd:
            groups += len(rd.row_groups())
    assert sum(calls) <= max(groups // 2, 3)  # statistics spared most row groups


def test_auto_split_picks_largest_region_and_balances(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("w", families=["f"], splits=["b"])
    t.load_cells(cells([(b"a%03d" % i, "f", b"q", 1, PUT, b"x") for i in range(10)]))
    t.load_cells(
        cells([(b"b%03d" % i, "f", b"q", 1, PUT, b"x") for i in range(100)]), row_group_cells=7
    )
    sizes = region_sizes(t.metadata)
    assert sizes["r000002"] > sizes["r000001"]
    dry = split(t, dry_run=True)
    assert dry.version is None and dry.dry_run and t.version == 3
    (s,) = dry.splits
    assert s.parent == "r000002" and s.keys == (b"b050",) and s.files_cut == 1
    report = split(t)
    assert report.splits[0].keys == (b"b050",)
    assert [r.start for r in t.regions] == [b"", b"b", b"b050"]
    assert [f.cells for f in sorted(t.files, key=lambda f: f.first_row)] == [10, 50, 50]


def test_cut_reads_a_piece_at_a_time(tmp_path, monkeypatch):
    """A spanning file is read piece by piece (row-group pruning), never all at once."""
    wh = connect(tmp_path)
    t = wh.create_table("w", families=["f"])
    t.load_cells(
        cells([(b"r%04d" % i, "f", b"q", 1, PUT, b"x" * 10) for i in range(1000)]),
        row_group_cells=50,
    )
    groups = t.metadata.files[0]
    calls = []
    real = StoreFileReader.read_row_groups

    def spy(self, which, **kw):
        calls.append(len(which))
        return real(self, which, **kw)

    monkeypatch.setattr(StoreFileReader, "read_row_groups", spy)
    split(t, at="r0500")
    assert groups.cells == 1000 and calls and max(calls) <= 11  # of 20 row groups
    assert sorted(f.cells for f in t.files) == [500, 500]


def test_equal_seq_overlapping_files_are_cut_as_one(tmp_path):
    """Spill-mode runs of one load share a seq and overlap; exact key ties between them are
    won by the path that sorts last. A split must keep that (R3.2, R3.3)."""
    n = 20_000
    df = pd.DataFrame({"k": [f"k{i % 100:03d}" for i in range(n)], "v": [str(i) for i in range(n)]})
    t = connect(tmp_path).create_table("t", families=["f"])
    t.load(
        df,
        mapping=Mapping.simple(row_key="k", columns=["f:v=v"]),
        memory_budget=1 << 20,
        now_ms=5,
        key_advice="off",
    )
    assert len({f.seq for f in t.files}) == 1 and len(t.files) > 1
    before = reads_simple(t)
    assert before["latest"][0]["value"] == str(n - 100).encode()
    runs = len(t.files)
    report = split(t, at="k050")
    (s,) = report.splits
    assert s.files_cut == runs  # every run spans the key
    # One piece per child: the runs were merged, exact duplicates resolved as reads do.
    assert s.files_written == 2 and len(t.files) == 2
    assert_invariants(t)
    assert reads_simple(t) == before


def test_equal_seq_tie_is_kept_when_one_file_is_cut_and_one_moved(tmp_path):
    """Two files of one load (same seq) hold the same key; the later path wins. Cutting one
    while re-assigning the other would change which path sorts last: the group is cut."""
    t = connect(tmp_path).create_table("t", families=["f"])
    fam = t.metadata.family("f")
    written = []
    for name, rows, value in (("L-a", range(100), b"loses"), ("L-b", range(10), b"wins")):
        rel = f"data/r000001/f/{name}.parquet"
        data = cells([(b"k%03d" % i, "f", b"q", 5, PUT, value) for i in rows]).drop(["family"])
        info = write_store_file(t.fs, f"{t.path}/{rel}", data, family=fam, seq=1, load_id="L")
        written.append(WrittenFile("r000001", rel, info))
    commit_files(t.log, t.metadata, written, load_id="L")
    t.refresh()
    before = reads_simple(t)
    assert before["latest"][5]["value"] == b"wins"
    report = split(t, at="k050")
    assert report.splits[0].files_cut == 2  # L-b lies below the key, but shares rows with L-a
    assert_invariants(t)
    assert reads_simple(t) == before


def reads_simple(t):
    return {
        "latest": t.scan().to_arrow().to_pylist(),
        "raw": t.scan(raw=True, max_versions=100).to_arrow().to_pylist(),
    }


# --------------------------------------------------------------------------------- merge
def test_merge_keeps_reads_and_rewrites_nothing(any_root):
    _, t = build(any_root)
    split(t, at=["dd", "tt"])
    before = reads(t)
    paths = {f.path for f in t.files}
    ids = [r.id for r in t.regions]
    assert ids == ["r000003", "r000004", "r000005", "r000006"]
    report = merge(t, regions=["r000006", "r000005"])  # any order
    (m,) = report.merges
    assert m.merged == ("r000005", "r000006") and m.region == "r000007"
    assert (m.start, m.end) == (b"m", b"")
    assert [r.id for r in t.regions] == ["r000003", "r000004", "r000007"]
    assert {f.path for f in t.files} == paths  # nothing rewritten
    assert m.files_reassigned == sum(f.region == "r000007" for f in t.files)
    assert_invariants(t)
    assert reads(t) == before
    merge(t, regions=["r000003", "r000004", "r000007"])
    assert [(r.id, r.start, r.end) for r in t.regions] == [("r000008", b"", b"")]
    assert_invariants(t)
    assert reads(t) == before


def test_merge_refusals(tmp_path):
    _, t = build(tmp_path)
    split(t, at="tt")
    with pytest.raises(InvalidArgumentError, match="not adjacent"):
        merge(t, regions=["r000001", "r000004"])
    with pytest.raises(InvalidArgumentError, match="at least two"):
        merge(t, regions=["r000001"])
    with pytest.raises(InvalidArgumentError, match="given twice"):
        merge(t, regions=["r000001", "r000001"])
    with pytest.raises(InvalidArgumentError, match="no region 'r000002'"):
        merge(t, regions=["r000001", "r000002"])
    dry = merge(t, regions=["r000001", "r000003"], dry_run=True)
    assert dry.version is None and dry.merges[0].region == "r000005"
    assert [r.id for r in t.regions] == ["r000001", "r000003", "r000004"]


def test_merge_small_merges_runs_under_the_threshold(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("s", families=["f"], splits=["b", "c", "d", "e"])
    rng = random.Random(0)
    for p, n in (("a", 5), ("b", 5), ("c", 400), ("d", 5)):
        t.load_cells(
            cells(
                [
                    (b"%s%04d" % (p.encode(), i), "f", b"q", 1, PUT, rng.randbytes(100))
                    for i in range(n)
                ]
            )
        )
    before = reads_simple(t)
    sizes = region_sizes(t.metadata)
    small = max(sizes["r000001"] + sizes["r000002"], sizes["r000004"] + sizes["r000005"])
    assert small < sizes["r000003"]
    report = merge_small(t, max_bytes=small)
    assert [m.merged for m in report.merges] == [("r000001", "r000002"), ("r000004", "r000005")]
    assert [r.id for r in t.regions] == ["r000006", "r000003", "r000007"]
    assert reads_simple(t) == before
    assert merge_small(t, max_bytes=small).version is None  # nothing small left
    with pytest.raises(InvalidArgumentError):
        merge_small(t, max_bytes=-1)


# ----------------------------------------------------------------------------- concurrency
def test_load_planned_before_a_split_commits_after_it(tmp_path):
    wh = connect(tmp_path)
    t = wh.create_table("t", families=["f"], splits=["m"])
    t.load_cells(
        cells(
            [
                (b"%s%03d" % (c, i), "f", b"old", 1, PUT, b"o")
                for c in (b"a", b"p", b"x")
                for i in range(20)
            ]
        )
    )
    keys = [f"{c}{i:03d}" for c in "adhkpsw" for i in range(50)]
    m = Mapping.simple(row_key="k", columns=["f:v=v"])
    plan, _ = plan_load(
        t.metadata,
        table_url=t.path,
        storage_options={},
        source=pd.DataFrame({"k": keys, "v": keys}),
        mapping=m,
        load_id="L",
        now_ms=now_ms(),
        settings=LoadSettings(),
    )
    written = [w for o in execute_plan(plan) for w in o.written]
    base = t.metadata
    split(wh.table("t"), at=["d", "s"])  # both of the load's files now span a new key
    _meta, already, _files, rerouted = commit_load(
        t.fs, t.path, t.log, base, written, load_id="L", summary={}, row_group_cells=65536
    )
    assert not already and rerouted == 2
    t.refresh()
    assert_invariants(t)
    got = t.scan(columns="f:v").to_arrow().column("row").to_pylist()
    assert got == sorted(k.encode() for k in keys)
    assert t.scan(columns="f:old").count_rows() == 60


def test_table_load_with_a_split_in_between(tmp_path, monkeypatch):
    """Table.load: the split commits between the load's write and its commit."""
    import cellstore.loader.execute as execute

    wh = connect(tmp_path)
    t = wh.create_table("t", families=["f"])
    real = execute.commit_files
    done = []

    def split_first(*args, **kwargs):
        if not done:
            done.append(split(wh.table("t"), at="k050"))
        return real(*args, **kwargs)

    monkeypatch.setattr(execute, "commit_files", split_first)
    keys = [f"k{i:03d}" for i in range(100)]
    report = t.load(
        pd.DataFrame({"k": keys, "v": keys}),
        mapping=Mapping.simple(row_key="k", columns=["f:v=v"]),
        key_advice="off",
    )
    assert done and report.rerouted_files == 1
    t.refresh()
    assert [r.start for r in t.regions] == [b"", b"k050"]
    assert_invariants(t)
    assert t.scan().to_arrow().column("value").to_pylist() == [k.encode() for k in keys]
    # The raw primitive on a handle opened before a split writes on the newest regions.
    stale = wh.table("t")
    split(wh.table("t"), at="k020")
    stale.load_cells(cells([(b"k001", "f", b"v", 1, PUT, b"x")]))
    assert [r.start for r in stale.regions] == [b"", b"k020", b"k050"]
    assert stale.get("k001", timestamp=1).column("value").to_pylist() == [b"x"]
    assert_invariants(stale)


def with_concurrent(monkeypatch, action):
    """Run ``action()`` right before the job's commit (after it planned and wrote)."""
    real = split_mod.commit
    done = []

    def wrapper(log, change):
        if not done:  # once: the action may itself be a region job
            done.append(True)
            action()
        return real(log, change)

    for module in (split_mod, merge_mod):  # the job's own commit, whichever job it is
        monkeypatch.setattr(module, "commit", wrapper)


def test_concurrent_load_into_the_split_region_is_moved(tmp_path, monkeypatch):
    wh, t = build(tmp_path)
    other = wh.table("t")
    with_concurrent(
        monkeypatch,
        lambda: other.load_cells(
            cells([(b"zz", "cf", b"late", 50, PUT, b"late"), (b"zy", "cf", b"late", 50, PUT, b"l")])
        ),
    )
    report = split(t, at="tt")
    late = [f for f in t.files if f.load_id == other.metadata.load_ids[-1]]
    assert len(late) == 1 and late[0].region == report.splits[0].children[1]
    assert_invariants(t)
    assert t.get(b"zz", columns="cf:late").column("value").to_pylist() == [b"late"]


def test_concurrent_load_spanning_the_key_fails_the_split(tmp_path, monkeypatch):
    wh, t = build(tmp_path)
    other = wh.table("t")
    with_concurrent(
        monkeypatch,
        lambda: other.load_cells(
            cells([(b"nn", "cf", b"late", 50, PUT, b"a"), (b"zz", "cf", b"late", 50, PUT, b"b")])
        ),
    )
    version = t.version
    with pytest.raises(JobConflictError, match="across a split key"):
        split(t, at="tt")
    t.refresh()
    assert t.version == version + 1 and t.metadata.last_history.operation == "load"
    assert [r.id for r in t.regions] == ["r000001", "r000002"]
    # The pieces the failed split wrote are gone (nothing references them anyway).
    assert [p for p in t.fs.find(f"{t.path}/data") if "split-" in p] == []
    assert split(t, at="tt").version is not None  # a retry works


def test_concurrent_merge_elsewhere_renumbers_new_regions(tmp_path, monkeypatch):
    wh, t = build(tmp_path)
    split(t, at=["dd", "gg"])  # r000003 [,dd) r000004 [dd,gg) r000005 [gg,m) r000002 [m,)
    before = reads(t)
    with_concurrent(monkeypatch, lambda: merge(wh.table("t"), regions=["r000003", "r000004"]))
    report = split(t, at="tt")
    # The concurrent merge took r000006; the split's children moved on to r000007/8.
    assert report.splits[0].children == ("r000007", "r000008")
    assert [r.id for r in t.regions] == ["r000006", "r000005", "r000007", "r000008"]
    assert t.metadata.next_region_id == 9
    assert_invariants(t)
    assert reads(t) == before


def test_concurrent_split_of_the_same_region_conflicts(tmp_path, monkeypatch):
    wh, t = build(tmp_path)
    with_concurrent(monkeypatch, lambda: split(wh.table("t"), at="pp"))
    with pytest.raises(JobConflictError, match="is no longer live"):  # its files moved
        split(t, at="tt")
    t.refresh()
    assert [r.start for r in t.regions] == [b"", b"m", b"pp"]
    # A region without files: only the region check can notice.
    e = wh.create_table("e", families=["f"], splits=["m"])
    with_concurrent(monkeypatch, lambda: split(wh.table("e"), at="x"))
    with pytest.raises(JobConflictError, match=r"region r000002 .* was split or merged"):
        split(e, at="p")
    assert [r.start for r in e.refresh().regions] == [b"", b"m", b"x"]


# ------------------------------------------------------------------------------------ CLI
@pytest.fixture
def run(tmp_path):
    build(str(tmp_path / "wh"))

    def invoke(*args, output="text"):
        return CliRunner().invoke(
            cli, ["--root", str(tmp_path / "wh"), "--output", output, *args], catch_exceptions=False
        )

    return invoke


def test_cli_split_and_merge(run):
    r = run("split", "t", "--at", "tt", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "Would split region r000002 ['m', '') at 'tt' into r000003, r000004" in r.output
    r = run("split", "t", "--at", "tt")
    assert r.exit_code == 0, r.output
    assert "Split region r000002 ['m', '') at 'tt' into r000003, r000004" in r.output
    assert "version 5" in r.output
    r = run("split", "t", "--at", "tt")
    assert "Already region boundaries (skipped): 'tt'" in r.output
    r = run("split", "t", "--region", "r000001", "--at", "\\x00\\x01", output="json")
    doc = json.loads(r.output)
    assert doc["splits"][0]["keys"] == ["\\x00\\x01"] and doc["version"] == 6
    r = run("merge", "t", "r000003", "r000004", output="json")
    doc = json.loads(r.output)
    assert doc["merges"][0]["merged"] == ["r000003", "r000004"]
    assert doc["merges"][0]["region"] == "r000007"
    r = run("merge", "t", "--max-size", "1G")
    assert r.exit_code == 0 and "Merged regions r000005, r000006, r000007 into r000008" in r.output
    r = run("describe", "t", output="json")
    assert [x["id"] for x in json.loads(r.output)["regions"]] == ["r000008"]


def test_cli_errors(run):
    r = run("merge", "t", "r000001")
    assert r.exit_code == 2 and "at least two" in r.stderr
    r = run("merge", "t")
    assert r.exit_code == 2 and "--max-size" in r.stderr
    r = run("merge", "t", "r000001", "r000002", "--max-size", "1M")
    assert r.exit_code == 2
    r = run("split", "t", "--region", "r000001", "--at", "zz")
    assert r.exit_code == 2 and "outside region r000001" in r.stderr

"""Reading HBase root directories in place: 0.94 roots, a synthetic 2.x root, the CLI.

Expected results come from an independent computation: every HFile read raw with
``read_hfile`` and the cell-by-cell model of HBase's read path (``tests/model.py``).
"""

from __future__ import annotations

import itertools
import json
import shutil
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore import Family, connect
from cellstore.cli.console import cli
from cellstore.errors import (
    CorruptFileError,
    InvalidArgumentError,
    MissingFileError,
    TableNotFoundError,
)
from cellstore.hbase import hfile_info, open_table, read_hfile, write_hfile
from cellstore.hbase.tables import HBaseTable
from cellstore.hbasefiles.meta import read_meta_regions
from cellstore.hbasefiles.store import _drop_superseded, _Run
from requirements import unavailable

try:
    import model
except ImportError:  # pragma: no cover
    from tests import model

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
NS_UPGRADE = VECTORS / "apache-hbase" / "TestNamespaceUpgrade.0.98.tgz"
META_MIGRATION = VECTORS / "apache-hbase" / "TestMetaMigrationConvertToPB.tgz"
NOW = 1_700_000_000_000


def _untar(src: Path, dest: Path) -> None:
    with tarfile.open(src) as t:
        t.extractall(dest, filter="data")


@pytest.fixture(scope="module")
def root094(tmp_path_factory: pytest.TempPathFactory):
    if not NS_UPGRADE.exists():
        unavailable("vectors", "HBase test vectors not present")
    d = tmp_path_factory.mktemp("ns094")
    _untar(NS_UPGRADE, d)
    yield d / "hbase"
    shutil.rmtree(d, ignore_errors=True)


def _expected(t: HBaseTable, *, raw: bool, versions: int | None) -> list[tuple]:
    """Model result: each region's HFiles raw, merged by MAX_SEQ_ID (R3.1/R3.2), read (R4-R10)."""
    fam = t.families[0]
    out: list[tuple] = []
    for region in t.layout.regions:
        runs, seqs = [], []
        for ref in region.files[fam.name]:
            cells = read_hfile(ref.path).to_pylist()
            runs.append(
                [
                    model.Cell(c["row"], c["qualifier"], c["ts"], c["type"], c["value"])
                    for c in cells
                ]
            )
            info = hfile_info(ref.path)
            seqs.append(info.max_seq_id if info.max_seq_id is not None else -1)
        merged = model.merge(runs, seqs)
        out += model.read(
            merged,
            max_versions=fam.max_versions,
            min_versions=fam.min_versions,
            ttl_seconds=fam.ttl,
            keep_deleted_cells=fam.keep_deleted_cells.value,
            now_ms=NOW,
            read_versions=versions,
            raw=raw,
        )
    return out


def _got(table: pa.Table) -> list[tuple]:
    return [(c["row"], c["qualifier"], c["ts"], c["type"], c["value"]) for c in table.to_pylist()]


@pytest.mark.parametrize("name", ["foo", "ns1.foo", "ns.two.foo", "data", "_acl_"])
@pytest.mark.parametrize(("raw", "versions"), [(False, None), (False, 3), (True, 10)])
def test_094_tables_match_the_model(root094: Path, name: str, raw: bool, versions: int | None):
    t = open_table(str(root094), name)
    assert t.describe().layout == "0.94"
    assert t.describe().regions_from == "hbase:meta"  # the root's .META. lists it
    got = _got(t.scan(raw=raw, max_versions=versions, now_ms=NOW).to_arrow())
    assert got == _expected(t, raw=raw, versions=versions)
    assert got


def test_094_deletes_apply(root094: Path) -> None:
    # Table "data" holds a DeleteColumn (type 12) over row 10's column (R5): a raw scan shows
    # the marker and the masked put, a normal scan shows neither.
    t = open_table(str(root094), "data")
    raw = t.scan(raw=True, max_versions=10).to_arrow()
    assert 12 in raw.column("type").to_pylist()
    rows = t.scan().to_arrow().column("row").to_pylist()
    assert b"10" not in rows and b"1" in rows
    assert t.get("10").num_rows == 0


def test_094_unknown_table_lists_the_tables(root094: Path) -> None:
    with pytest.raises(TableNotFoundError, match=r"'nope'.*ns1\.foo"):
        open_table(str(root094), "nope")


def test_split_parents_are_skipped(tmp_path: Path) -> None:
    if not META_MIGRATION.exists():
        unavailable("vectors", "HBase test vectors not present")
    _untar(META_MIGRATION, tmp_path)
    t = open_table(str(tmp_path / "TestMetaMigrationConvertToPB"), "TestTable")
    starts = [r.start for r in t.regions]
    assert starts == [b""] + [f"row{i}".encode() for i in range(1, 9)]
    rows = t.scan().to_arrow().column("row").to_pylist()
    assert len(rows) == len(set(rows)) == 100  # parents' full copies not double-counted
    assert t.scan().count_rows() == 100
    # The regions come from the real .META. (its rows, as HBase 0.92 wrote them): 8 split
    # parents (offline, split, splitA/splitB set) besides the 9 online regions. Listing
    # the directories (newest region of each overlap) agrees.
    assert t.describe().regions_from == "hbase:meta"
    meta = tmp_path / "TestMetaMigrationConvertToPB" / "-META-" / "1028785192" / "info"
    files = [str(p) for p in sorted(meta.iterdir()) if not p.name.startswith(".")]
    found = read_meta_regions(t.fs, files, "TestTable", now_ms=NOW)
    parents = [m for m in found if not m.online]
    assert len(parents) == 8
    assert all(m.info.is_split_parent and m.has_daughters for m in parents)
    listed = open_table(str(tmp_path / "TestMetaMigrationConvertToPB"), "TestTable", use_meta=False)
    assert listed.regions == t.regions and listed.describe().regions_from == "directories"


# ------------------------------------------------------------------- synthetic 2.x root
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _f(num: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return _varint(num << 3) + _varint(value)
    return _varint(num << 3 | 2) + _varint(len(value)) + value


def _pair(k: str, v: str) -> bytes:
    return _f(1, k.encode()) + _f(2, v.encode())


def _table_name(ns: str, q: str) -> bytes:
    return _f(1, ns.encode()) + _f(2, q.encode())


def _region_info(rid: int, start: bytes, end: bytes) -> bytes:
    msg = _f(1, rid) + _f(2, _table_name("default", "t")) + _f(3, start) + _f(4, end)
    return b"PBUF" + _varint(len(msg)) + msg


def _cells(rows: list[tuple[str, int, int, str]]) -> pa.Table:
    return pa.table(
        {
            "row": pa.array([r[0].encode() for r in rows], pa.binary()),
            "qualifier": pa.array([b"q"] * len(rows), pa.binary()),
            "ts": pa.array([r[1] for r in rows], pa.int64()),
            "type": pa.array([r[2] for r in rows], pa.int8()),
            "value": pa.array([r[3].encode() for r in rows], pa.binary()),
        }
    )


def _root2(tmp: Path) -> tuple[Path, str]:
    """A 2.x root: table t, regions ['', 'm') and ['m', ''), with a bulk-loaded pair of
    files, an HFileLink and a Reference (TOP half at 'm') into the archive."""
    from cellstore.hbasefiles.descriptors import encoded_region_name

    root = tmp / "hbase"
    tdir = root / "data" / "default" / "t"
    (tdir / ".tabledesc").mkdir(parents=True)
    (root / "hbase.version").write_bytes(b"PBUF" + _f(1, b"8"))
    fam = _f(1, b"f") + _f(2, _pair("VERSIONS", "2")) + _f(2, _pair("MIN_VERSIONS", "0"))
    schema = _f(1, _table_name("default", "t")) + _f(3, fam)
    (tdir / ".tabledesc" / ".tableinfo.0000000001").write_bytes(b"PBUF" + schema)
    r1 = encoded_region_name("t", b"", 2)
    r2 = encoded_region_name("t", b"m", 2)
    parent = encoded_region_name("t", b"", 1)
    for enc, start, end in [(r1, b"", b"m"), (r2, b"m", b"")]:
        (tdir / enc / "f").mkdir(parents=True)
        (tdir / enc / ".regioninfo").write_bytes(_region_info(2, start, end))
    f1 = tdir / r1 / "f"
    # Same key (a/q/5/Put) in two bulk-loaded files: _SeqId_7_ is newer (R3.1, R14.5).
    write_hfile(
        str(f1 / "aaaa_SeqId_5_"), _cells([("a", 5, 4, "old"), ("b", 3, 4, "b3")]), family=b"f"
    )
    write_hfile(
        str(f1 / "bbbb_SeqId_7_"), _cells([("a", 5, 4, "new"), ("b", 4, 12, "")]), family=b"f"
    )
    arch = root / "archive" / "data" / "default" / "t" / parent / "f"
    arch.mkdir(parents=True)
    letters = [(chr(c), 1, 4, f"v{chr(c)}") for c in range(ord("a"), ord("z") + 1)]
    write_hfile(str(arch / "cccc"), _cells(letters), family=b"f")
    f2 = tdir / r2 / "f"
    (f2 / f"t={parent}-cccc").write_bytes(b"")  # link: the whole parent file
    ref = _f(1, b"\x00\x01m\x00" + b"\x7f" + b"\xff" * 7 + b"\xff") + _f(2, 0)  # TOP at 'm'
    (f2 / f"cccc.{parent}").write_bytes(b"PBUF" + ref)
    (f1 / "dddd").write_bytes(b"")  # an empty plain name is not a store file (isValid)
    return root, parent


def test_root2_links_references_and_bulk_seq(tmp_path: Path) -> None:
    root, _ = _root2(tmp_path)
    t = open_table(str(root), "default:t")
    d = t.describe()
    assert d.layout == "2" and [r.files for r in d.regions] == [2, 2]
    assert t.families[0].max_versions == 2
    got = {(c["row"], c["value"]) for c in t.scan(max_versions=2).to_arrow().to_pylist()}
    # Region 1: the newer bulk file wins the tie; b's put at 3 is under DeleteColumn@4.
    assert (b"a", b"new") in got and (b"a", b"old") not in got
    assert not any(r == b"b" for r, _ in got)
    # Region 2: the link reads the whole file but only rows >= 'm' (region bounds), and
    # the reference's TOP half is rows >= 'm'; both give the same cells (R3.3 dedups).
    region2 = sorted(v for r, v in got if r >= b"m")
    assert region2 == [f"v{chr(c)}".encode() for c in range(ord("m"), ord("z") + 1)]
    raw = t.scan(raw=True, max_versions=5, start_row="m").to_arrow()
    assert raw.num_rows == 14  # duplicates from link and reference collapse (R3.3)
    assert t.scan(memory_budget=1).count_rows() == t.scan().count_rows()


def test_root2_missing_link_target_names_every_location(tmp_path: Path) -> None:
    root, parent = _root2(tmp_path)
    shutil.rmtree(root / "archive")
    with pytest.raises(MissingFileError) as e:
        open_table(str(root), "t")
    msg = str(e.value)
    assert f"store file cccc.{parent} not found" in msg or f"t={parent}-cccc" in msg
    for top in ("data/default/t", "archive/data/default/t", ".tmp/data/default/t"):
        assert f"{root}/{top}/{parent}/f/cccc" in msg


def test_cell_seq_ids_break_ties_before_file_rank() -> None:
    """R3.2: the higher cell sequence id wins an equal key, then the newer file."""

    def run(rank: int, value: str, cseq: int) -> _Run:
        cells = _cells([("r", 1, 4, value)]).select(["row", "qualifier", "ts", "type", "value"])
        return _Run((rank, 0, 0.0, ""), cells, np.array([cseq], np.int64))

    kept = _drop_superseded([run(1, "older-file-newer-cell", 9), run(2, "newer-file", 3)])
    assert [t.num_rows for t in kept] == [1, 0]
    kept = _drop_superseded([run(1, "a", 0), run(2, "b", 0)])
    assert [t.num_rows for t in kept] == [1, 1]  # agreeing ids: left to merge_runs' rank order


def test_describe_prints_like_a_cellstore_tables_describe(root094: Path, tmp_path: Path) -> None:
    # issue 29: HBaseTable.describe() showed a dataclass repr; both descriptions now show
    # the HBase shell's text, laid out by the same blocks.
    d = open_table(str(root094), "foo").describe()
    assert repr(d) == str(d) and not repr(d).startswith("HBaseTableDescription(")
    lines = str(d).splitlines()
    assert lines[0] == f"Table foo (HBase 0.94 layout at {root094})"
    assert lines[1].startswith("foo, {TABLE_ATTRIBUTES => {REGIONS_FROM => 'hbase:meta', ")
    assert lines[2] == "COLUMN FAMILIES DESCRIPTION" and lines[3].startswith("{NAME => 'f', ")
    assert lines[4:6] == ["1 row(s)", "REGIONS"]
    assert lines[6].split() == [
        "ID",
        "START",
        "KEY",
        "END",
        "KEY",
        "REGION",
        "ID",
        "FILES",
        "BYTES",
    ]
    region = d.regions[0]
    assert lines[7].split() == [region.id, str(region.region_id), "1", str(region.bytes)]
    assert lines[8:] == ["1 row(s)", f"Total: 1 region, 1 file, {region.bytes} bytes"]
    mine = connect(str(tmp_path / "wh")).create_table("t", families=[Family(name="f")])
    text = mine.describe()
    assert repr(text) == str(text)
    mine_lines = str(text).splitlines()
    assert mine_lines[2:5] == ["COLUMN FAMILIES DESCRIPTION", mine_lines[3], "1 row(s)"]
    assert "REGIONS" in mine_lines and sum(x.endswith(" row(s)") for x in mine_lines) == 2


def test_hbase_table_get_by_key_fields_is_refused_clearly(root094: Path) -> None:
    # issue 29: get(key=...) is the shared TableReads.get; an HBase table has no row-key spec
    t = open_table(str(root094), "data")
    with pytest.raises(InvalidArgumentError, match="no row-key spec, so key= cannot be used"):
        t.get(key={"row": "r1"})
    row = t.scan(limit=1).to_arrow().column("row")[0].as_py()
    assert t.get(row).column("row").to_pylist()[0] == row  # and a plain get does not warn


# ------------------------------------------------------------------------------------ CLI
def test_cli_describe_scan_count(root094: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["hbase", "describe", str(root094), "--table", "foo"])
    assert res.exit_code == 0, res.output
    # issue 29: laid out as a cellstore table's describe (regions as a grid, totals)
    assert "VERSIONS => '3'" in res.output and "Total: 1 region, 1 file," in res.output
    res = runner.invoke(
        cli, ["--output", "json", "hbase", "describe", str(root094), "--snapshot", "foo_snapshot2"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["snapshot"] == "foo_snapshot2"
    res = runner.invoke(cli, ["hbase", "count", str(root094), "--table", "data"])
    assert res.exit_code == 0 and "10" in res.output, res.output
    res = runner.invoke(cli, ["hbase", "scan", str(root094), "--table", "data", "--start-row", "9"])
    assert res.exit_code == 0 and "value=" in res.output, res.output
    res = runner.invoke(cli, ["hbase", "count", str(root094), "--table", "nope"])
    assert res.exit_code != 0 and "nope" in res.output
    res = runner.invoke(cli, ["hbase", "count", str(root094)])
    assert res.exit_code == 2


# ------------------------------------------------------------- store file tracking (FILE)
def _track_file(names: list[str], timestamp: int) -> bytes:
    """A ``.filelist`` file as ``StoreFileListFile`` writes it: length, message, CRC32."""
    msg = _f(1, timestamp) + b"".join(_f(2, _f(1, n.encode()) + _f(2, 1)) for n in names)
    return len(msg).to_bytes(4, "big") + msg + zlib.crc32(msg).to_bytes(4, "big")


def _use_file_tracker(root: Path) -> tuple[Path, Path]:
    """Switch _root2's table to the FILE tracker; return its two family directories."""
    tdir = root / "data" / "default" / "t"
    fam = _f(1, b"f") + _f(2, _pair("VERSIONS", "2"))
    tracker = _pair("hbase.store.file-tracker.impl", "FILE")
    schema = _f(1, _table_name("default", "t")) + _f(2, tracker) + _f(3, fam)
    (tdir / ".tabledesc" / ".tableinfo.0000000002").write_bytes(b"PBUF" + schema)
    from cellstore.hbasefiles.descriptors import encoded_region_name

    first, second = (encoded_region_name("t", start, 2) for start in (b"", b"m"))
    return tdir / first / "f", tdir / second / "f"


def test_file_tracker_lists_exactly_the_live_files(tmp_path: Path) -> None:
    root, parent = _root2(tmp_path)
    f1, f2 = _use_file_tracker(root)
    # A compacted-away file still in the directory: only the tracker knows it is gone.
    write_hfile(str(f1 / "eeee"), _cells([("c", 9, 4, "stale")]), family=b"f")
    (f1 / ".filelist").mkdir()
    (f1 / ".filelist" / "f1.100").write_bytes(_track_file(["aaaa_SeqId_5_"], 7))
    (f1 / ".filelist" / "f2.100").write_bytes(_track_file(["aaaa_SeqId_5_", "bbbb_SeqId_7_"], 8))
    (f1 / ".filelist" / "f1.50").write_bytes(_track_file(["eeee"], 99))  # older sequence
    (f2 / ".filelist").mkdir()
    refs = [f"t={parent}-cccc", f"cccc.{parent}"]
    (f2 / ".filelist" / "f1.3").write_bytes(_track_file(refs, 1))
    t = open_table(str(root), "t")
    assert [r.files for r in t.describe().regions] == [2, 2]
    values = {c["value"] for c in t.scan().to_arrow().to_pylist()}
    assert b"stale" not in values and b"new" in values
    # The newest list is cut short (a write in progress): HBase takes the other one.
    (f1 / ".filelist" / "f2.100").write_bytes(_track_file(["bbbb_SeqId_7_"], 9)[:-3])
    t = open_table(str(root), "t")
    assert t.describe().regions[0].files == 1
    assert {c["value"] for c in t.scan(start_row="a", stop_row="b").to_arrow().to_pylist()} == {
        b"old"
    }


def test_file_tracker_problems_are_clear_errors(tmp_path: Path) -> None:
    root, parent = _root2(tmp_path)
    f1, f2 = _use_file_tracker(root)
    with pytest.raises(MissingFileError, match=r"has no \.filelist.*file-tracker\.impl=FILE"):
        open_table(str(root), "t")
    (f2 / ".filelist").mkdir()
    (f2 / ".filelist" / "f2.1").write_bytes(_track_file([f"t={parent}-cccc"], 1))
    (f1 / ".filelist").mkdir()
    data = bytearray(_track_file(["aaaa_SeqId_5_"], 7))
    data[-1] ^= 0xFF
    (f1 / ".filelist" / "f1.1").write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match=r"f1\.1: store file list checksum mismatch"):
        open_table(str(root), "t")
    (f1 / ".filelist" / "f1.1").write_bytes(_track_file(["gone"], 7))
    with pytest.raises(CorruptFileError, match="gone"):
        open_table(str(root), "t")  # a listed name that is no store-file name


# ------------------------------------------------------------------- hbase:meta regions
META_COMPARATOR = "org.apache.hadoop.hbase.CellComparatorImpl$MetaCellComparator"


def _meta_info(rid: int, start: bytes, end: bytes, *, split: bool = False) -> bytes:
    """``info:regioninfo``: PBUF + a RegionInfo, not delimited (layout section 2)."""
    msg = _f(1, rid) + _f(2, _table_name("default", "t")) + _f(3, start) + _f(4, end)
    if split:
        msg += _f(5, 1) + _f(6, 1)
    return b"PBUF" + msg


def _meta_cells(cells: list[tuple[bytes, bytes, int, int, bytes]]) -> pa.Table:
    return pa.table(
        {
            "row": pa.array([c[0] for c in cells], pa.binary()),
            "qualifier": pa.array([c[1] for c in cells], pa.binary()),
            "ts": pa.array([c[2] for c in cells], pa.int64()),
            "type": pa.array([c[3] for c in cells], pa.int8()),
            "value": pa.array([c[4] for c in cells], pa.binary()),
        }
    )


def _root_split(tmp: Path, *, split_done: bool) -> Path:
    """A 2.x root whose region P ['', '') split into D1 ['', 'm') and D2 ['m', '').

    Every region has a directory and a file (P: value "p", daughters: "d"). hbase:meta
    (two flushed files) says the split finished (P: SPLIT, offline+split, splitA/B) or
    not (P: OPEN, daughters SPLITTING_NEW); a stale region row is deleted by a newer
    DeleteFamily, and a row of table ``t2`` is ignored.
    """
    from cellstore.hbasefiles.descriptors import encoded_region_name

    root = tmp / "hbase"
    tdir = root / "data" / "default" / "t"
    (tdir / ".tabledesc").mkdir(parents=True)
    (root / "hbase.version").write_bytes(b"PBUF" + _f(1, b"8"))
    schema = _f(1, _table_name("default", "t")) + _f(3, _f(1, b"f"))
    (tdir / ".tabledesc" / ".tableinfo.0000000001").write_bytes(b"PBUF" + schema)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    regions = {
        "P": (1, b"", b"", letters, "p"),
        "D1": (2, b"", b"m", [x for x in letters if x < "m"], "d"),
        "D2": (2, b"m", b"", [x for x in letters if x >= "m"], "d"),
    }
    enc = {k: encoded_region_name("t", v[1], v[0]) for k, v in regions.items()}
    for key, (rid, start, end, rows, value) in regions.items():
        (tdir / enc[key] / "f").mkdir(parents=True)
        (tdir / enc[key] / ".regioninfo").write_bytes(_region_info(rid, start, end))
        write_hfile(
            str(tdir / enc[key] / "f" / {"P": "aa", "D1": "bb", "D2": "cc"}[key]),
            _cells([(x, 1, 4, value) for x in rows]),
            family=b"f",
        )

    def row(key: str) -> bytes:
        rid, start = regions[key][0], regions[key][1]
        return b"t," + start + b"," + str(rid).encode() + b"." + enc[key].encode() + b"."

    stale = b"t,,0." + encoded_region_name("t", b"", 0).encode() + b"."
    old = [
        (stale, b"regioninfo", 100, 4, _meta_info(0, b"", b"")),
        (stale, b"state", 100, 4, b"OPEN"),
        (row("P"), b"regioninfo", 100, 4, _meta_info(1, b"", b"")),
        (row("P"), b"state", 100, 4, b"OPEN"),
        (b"t2,,5.abc.", b"regioninfo", 100, 4, _meta_info(5, b"", b"")),
    ]
    new = [(stale, b"", 200, 14, b"")]  # DeleteFamily: the row is gone (R5)
    if split_done:
        new += [
            (row("P"), b"regioninfo", 200, 4, _meta_info(1, b"", b"", split=True)),
            (row("P"), b"splitA", 200, 4, _meta_info(2, b"", b"m")),
            (row("P"), b"splitB", 200, 4, _meta_info(2, b"m", b"")),
            (row("P"), b"state", 200, 4, b"SPLIT"),
        ]
    for key in ("D1", "D2"):
        rid, start, end = regions[key][:3]
        new += [
            (row(key), b"regioninfo", 200, 4, _meta_info(rid, start, end)),
            (row(key), b"state", 200, 4, b"OPEN" if split_done else b"SPLITTING_NEW"),
        ]
    mdir = root / "data" / "hbase" / "meta" / "1588230740" / "info"
    mdir.mkdir(parents=True)
    for name, cells in (("0001", old), ("0002", sorted(new))):
        write_hfile(
            str(mdir / name), _meta_cells(cells), family=b"info", comparator=META_COMPARATOR
        )
    return root


@pytest.mark.parametrize("split_done", [True, False])
def test_regions_come_from_hbase_meta(tmp_path: Path, split_done: bool) -> None:
    root = _root_split(tmp_path, split_done=split_done)
    t = open_table(str(root), "t")
    values = t.scan().to_arrow().column("value").to_pylist()
    assert len(values) == 26
    if split_done:  # the daughters serve the rows; the parent is a split parent
        assert [r.start for r in t.regions] == [b"", b"m"] and set(values) == {b"d"}
    else:  # the split did not finish: the parent still serves every row
        assert [r.start for r in t.regions] == [b""] and set(values) == {b"p"}
    # Without meta, the directories alone say the daughters (newer ids) replaced P.
    listed = open_table(str(root), "t", use_meta=False)
    assert set(listed.scan().to_arrow().column("value").to_pylist()) == {b"d"}
    assert t.describe().regions_from == "hbase:meta"
    assert listed.describe().to_dict()["regions-from"] == "directories"


def test_meta_region_without_directory_is_a_clear_error(tmp_path: Path) -> None:
    root = _root_split(tmp_path, split_done=True)
    d2 = next(r.id for r in open_table(str(root), "t").regions if r.start == b"m")
    shutil.rmtree(root / "data" / "default" / "t" / d2)
    with pytest.raises(MissingFileError, match=rf"hbase:meta .* lists region {d2}.*flush"):
        open_table(str(root), "t")


# ---------------------------------------------------------------------------- bad input
def _encrypt_trailer(path: Path) -> None:
    """Add an ``encryption_key`` (field 13) to a v3 trailer, as an encrypted file has."""
    data = bytearray(path.read_bytes())
    body = len(data) - 4096
    n, pos, shift = 0, body + 8, 0
    while True:
        b = data[pos]
        n |= (b & 0x7F) << shift
        pos += 1
        shift += 7
        if not b & 0x80:
            break
    msg = bytes(data[pos : pos + n]) + _f(13, b"wrapped-key")
    new = _varint(len(msg)) + msg
    data[body + 8 : body + 8 + len(new)] = new
    path.write_bytes(bytes(data))


def test_wrong_family_mob_and_encrypted_files_are_refused(tmp_path: Path) -> None:
    from cellstore.errors import UnsupportedFormatError

    root, _ = _root2(tmp_path)
    t = open_table(str(root), "t")
    f1 = root / "data" / "default" / "t" / t.regions[0].id / "f"
    stray = f1 / "ffff"
    write_hfile(str(stray), _cells([("c", 1, 4, "x")]), family=b"g")
    with pytest.raises(CorruptFileError, match=r"ffff.*family 'f' holds cells of family 'g'"):
        open_table(str(root), "t").scan().to_arrow()
    write_hfile(str(stray), _cells([("c", 1, 4, "x")]), family=b"f")
    assert open_table(str(root), "t").scan().count_rows() > 0
    _encrypt_trailer(stray)
    with pytest.raises(UnsupportedFormatError, match=r"ffff: encrypted HFile"):
        open_table(str(root), "t").scan().to_arrow()
    stray.unlink()
    mob = f1 / ("ab" * 16 + "_" + "cd" * 16)
    write_hfile(str(mob), _cells([("c", 1, 4, "x")]), family=b"f")
    with pytest.raises(UnsupportedFormatError, match=r"region .*family f: store file .* MOB"):
        open_table(str(root), "t")
    mob.unlink()
    tdir = root / "data" / "default" / "t"
    fam = _f(1, b"f") + _f(2, _pair("IS_MOB", "true"))
    schema = _f(1, _table_name("default", "t")) + _f(3, fam)
    (tdir / ".tabledesc" / ".tableinfo.0000000002").write_bytes(b"PBUF" + schema)
    with pytest.raises(UnsupportedFormatError, match="family f is a MOB family"):
        open_table(str(root), "t")


# ------------------------------------------------------------------------------ planning
def test_big_stores_split_at_index_blocks_with_known_divisions(tmp_path: Path) -> None:
    from cellstore.hbasefiles.descriptors import encoded_region_name

    root = tmp_path / "hbase"
    tdir = root / "data" / "default" / "t"
    (tdir / ".tabledesc").mkdir(parents=True)
    schema = _f(1, _table_name("default", "t")) + _f(3, _f(1, b"f"))
    (tdir / ".tabledesc" / ".tableinfo.0000000001").write_bytes(b"PBUF" + schema)
    rows = [f"r{i:05d}" for i in range(4000)]
    for start, end in [(b"", b"r02000"), (b"r02000", b"")]:
        enc = encoded_region_name("t", start, 2)
        (tdir / enc / "f").mkdir(parents=True)
        (tdir / enc / ".regioninfo").write_bytes(_region_info(2, start, end))
        mine = [r for r in rows if start.decode() <= r and (not end or r < end.decode())]
        for n, part in enumerate((mine[0::2], mine[1::2])):  # two files per store
            write_hfile(
                str(tdir / enc / "f" / f"{n:032x}"),
                _cells([(r, 1, 4, "v" * 20) for r in part]),
                family=b"f",
                block_size=1024,
            )
    t = open_table(str(root), "t")
    whole = t.scan().plan()
    assert [(task.start, task.stop) for task in whole] == [(b"", b"r02000"), (b"r02000", b"")]
    scan = t.scan(memory_budget=64 * 1024)
    tasks = scan.plan()
    assert len(tasks) > 4  # regions cut at data-block first rows
    bounds = [(task.start, task.stop) for task in tasks]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))  # row-aligned, no gaps
    assert b"r02000" in [s for s, _ in bounds]  # never across a region boundary
    ddf = scan.to_dask()
    assert ddf.known_divisions and ddf.npartitions == len(tasks)
    assert ddf.divisions[-1] == b"r03999"
    for i in range(ddf.npartitions):
        part = ddf.get_partition(i).compute()
        assert all(ddf.divisions[i] <= r for r in part.index)
    got = t.scan(memory_budget=64 * 1024).to_arrow().column("row").to_pylist()
    assert got == [r.encode() for r in rows]  # independent: the rows written


def test_meta_behind_a_split_is_a_clear_error(tmp_path: Path) -> None:
    root = _root_split(tmp_path, split_done=True)
    d2 = next(r.id for r in open_table(str(root), "t").regions if r.start == b"m")
    mdir = root / "data" / "hbase" / "meta" / "1588230740" / "info"
    row = b"t,m,2." + d2.encode() + b"."
    write_hfile(
        str(mdir / "0003"),
        _meta_cells([(row, b"", 300, 14, b"")]),  # D2's row deleted: a gap after 'm'
        family=b"info",
        comparator=META_COMPARATOR,
    )
    with pytest.raises(CorruptFileError, match=r"last region ends at b'm'.*use_meta=False"):
        open_table(str(root), "t")
    assert open_table(str(root), "t", use_meta=False).scan().count_rows() == 26


def _chunky_root(
    tmp: Path,
) -> tuple[Path, list[tuple[str, list[tuple[bytes, bytes, int, int, bytes]]]]]:
    """One region, three bulk-loaded files (``_SeqId_1..3_``) of one family with small blocks:
    rows span blocks, the newer files overwrite equal keys (R3.2) and delete columns and rows
    of the older ones (R5)."""
    from cellstore.hbasefiles.descriptors import encoded_region_name

    root = tmp / "hbase"
    tdir = root / "data" / "default" / "t"
    (tdir / ".tabledesc").mkdir(parents=True)
    fam = _f(1, b"f") + _f(2, _pair("VERSIONS", "3"))
    (tdir / ".tabledesc" / ".tableinfo.0000000001").write_bytes(
        b"PBUF" + _f(1, _table_name("default", "t")) + _f(3, fam)
    )
    enc = encoded_region_name("t", b"", 2)
    (tdir / enc / "f").mkdir(parents=True)
    (tdir / enc / ".regioninfo").write_bytes(_region_info(2, b"", b""))
    rng = np.random.default_rng(15)
    files = []
    for n in range(3):
        cells = []
        for i in range(400):
            row = f"r{i:04d}".encode()
            if n == 2 and i % 7 == 0:
                cells.append((row, b"", 15, 14, b""))  # DeleteFamily over older versions
            for q in range(6):
                if rng.random() < 0.3:
                    continue
                qual = f"q{q}".encode()
                if n == 2 and q == 3 and i % 5 == 0:
                    cells.append((row, qual, 12, 12, b""))  # DeleteColumn
                for ts in (10 + n, 5):  # ts 5 repeats in every file: equal keys, R3.2
                    cells.append((row, qual, ts, 4, f"{n}-{rng.integers(1 << 30)}".encode()))
        cells.sort(key=lambda c: (c[0], c[1], -c[2], -c[3]))
        name = f"{n:031x}_SeqId_{n + 1}_"
        table = pa.table(
            {
                k: pa.array([c[j] for c in cells], t)
                for j, (k, t) in enumerate(
                    [
                        ("row", pa.binary()),
                        ("qualifier", pa.binary()),
                        ("ts", pa.int64()),
                        ("type", pa.int8()),
                        ("value", pa.binary()),
                    ]
                )
            }
        )
        write_hfile(str(tdir / enc / "f" / name), table, family=b"f", block_size=512)
        files.append((name, cells))
    return root, files


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"raw": True, "max_versions": 10}, {"max_versions": 2}, {"reversed": True}],
)
def test_multi_chunk_hbase_task_equals_one_chunk(tmp_path: Path, monkeypatch, kwargs) -> None:
    """A region read in many row-aligned chunks on the thread pool returns exactly the
    cells of the one-chunk read and of the model (R3.2 ties by file sequence id, R5 deletes,
    R4 versions), in order."""
    from cellstore.reader import execute

    root, files = _chunky_root(tmp_path)
    t = open_table(str(root), "t")
    (task,) = t.scan().plan()
    (fam,) = task.families
    assert fam.source is not None
    chunks = fam.source.chunk_bounds(t.fs, task.start, task.stop, target_cells=300)
    assert len(chunks) > 5
    assert chunks[0][0] == task.start and chunks[-1][1] == task.stop
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in itertools.pairwise(chunks))
    assert fam.source.chunk_bounds(t.fs, b"", b"", target_cells=1 << 30) == [(b"", b"")]

    one = t.scan(now_ms=NOW, **kwargs).to_arrow()  # 7k cells: one chunk
    monkeypatch.setattr(execute, "CHUNK_CELLS", 300)
    monkeypatch.setattr(execute, "SOURCE_CHUNK_CELLS", 300)
    many = t.scan(now_ms=NOW, **kwargs).to_arrow()
    assert many.equals(one)

    runs = [[model.Cell(*c) for c in cells] for _, cells in files]
    merged = model.merge(runs, [1, 2, 3])  # _SeqId_N_: bulk-loaded cells take N (R14.5)
    want = model.read(
        merged,
        max_versions=3,
        min_versions=0,
        ttl_seconds=None,
        keep_deleted_cells="false",
        now_ms=NOW,
        read_versions=kwargs.get("max_versions"),
        raw=kwargs.get("raw", False),
    )
    if kwargs.get("reversed"):
        by_row: dict[bytes, list[tuple]] = {}
        for c in want:
            by_row.setdefault(c[0], []).append(c)
        want = [c for row in sorted(by_row, reverse=True) for c in by_row[row]]
    assert _got(many) == want
    if not kwargs:  # the deletes and ties are exercised
        rows = {c[0] for c in want}
        assert len(rows) == 400 - 58 and b"r0007" not in rows  # DeleteFamily rows gone
        fives = [c for c in want if c[2] == 5]
        assert len({c[:2] for c in fives}) == len(fives)  # one winner per equal key
    assert t.get("r0042", now_ms=NOW).equals(
        t.scan(start_row="r0042", stop_row="r0043", now_ms=NOW).to_arrow()
    )

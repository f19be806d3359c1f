"""Reading HBase root directories in place: 0.94 roots, a synthetic 2.x root, the CLI.

Expected results come from an independent computation: every HFile read raw with
``read_hfile`` and the cell-by-cell model of HBase's read path (``tests/model.py``).
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore.cli.console import cli
from cellstore.errors import MissingFileError, TableNotFoundError
from cellstore.hbase import hfile_info, open_table, read_hfile, write_hfile
from cellstore.hbase.tables import HBaseTable, _drop_superseded, _Run

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
        pytest.skip("HBase test vectors not present")
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
        pytest.skip("HBase test vectors not present")
    _untar(META_MIGRATION, tmp_path)
    t = open_table(str(tmp_path / "TestMetaMigrationConvertToPB"), "TestTable")
    starts = [r.start for r in t.regions]
    assert starts == [b""] + [f"row{i}".encode() for i in range(1, 9)]
    rows = t.scan().to_arrow().column("row").to_pylist()
    assert len(rows) == len(set(rows)) == 100  # parents' full copies not double-counted
    assert t.scan().count_rows() == 100


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
    from cellstore.hbase.descriptors import encoded_region_name

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


# ------------------------------------------------------------------------------------ CLI
def test_cli_describe_scan_count(root094: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["hbase", "describe", str(root094), "--table", "foo"])
    assert res.exit_code == 0, res.output
    assert "VERSIONS => '3'" in res.output and "1 region(s)" in res.output
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

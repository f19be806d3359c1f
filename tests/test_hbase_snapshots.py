"""Reading HBase snapshots in place: the Bigtable exported snapshots and 0.94 snapshots.

Test vectors are used in place and unpacked into ``tmp_path`` (never copied into the repo).
"""

from __future__ import annotations

import itertools
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from cellstore.errors import (
    CellstoreError,
    CorruptFileError,
    InvalidFamilyError,
    SnapshotNotFoundError,
)
from cellstore.hbase import open_snapshot, read_hfile

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
BIGTABLE = VECTORS / "google-bigtable-hbase" / "EndToEndIT-snapshot.zip"
NS_UPGRADE = VECTORS / "apache-hbase" / "TestNamespaceUpgrade.0.98.tgz"

pytestmark = pytest.mark.needs(
    need="vectors", present=BIGTABLE.exists(), reason="HBase test vectors not present"
)

TS = 1617828990


@pytest.fixture(scope="module")
def export_root(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("bigtable")
    with zipfile.ZipFile(BIGTABLE) as z:
        z.extractall(d)
    yield d / "data"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def root094(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("ns094")
    with tarfile.open(NS_UPGRADE) as t:
        t.extractall(d, filter="data")
    yield d / "hbase"
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("name", ["test-snapshot", "test-snappy-snapshot"])
def test_describe_regions_and_family(export_root: Path, name: str) -> None:
    t = open_snapshot(str(export_root), name)
    d = t.describe()
    assert d.snapshot == name and d.regions_from == "manifest"
    assert d.name == name.replace("snapshot", "table")
    bounds = [(r.start, r.end) for r in d.regions]
    keys = [b""] + [str(i).encode() for i in range(10, 100, 10)] + [b""]
    assert bounds == list(itertools.pairwise(keys))
    assert all(r.files == 1 for r in d.regions)
    (fam,) = d.families
    assert fam.settings.name == "cf"
    assert fam.settings.max_versions == 4  # VERSIONS=4 from the manifest's schema
    assert fam.settings.ttl is None and fam.settings.min_versions == 0
    codec = "SNAPPY" if "snappy" in name else "NONE"
    assert fam.descriptor.attributes["COMPRESSION"] == codec
    assert d.to_dict()["regions"][0]["id"] == next(r.id for r in t.regions)


@pytest.mark.parametrize("name", ["test-snapshot", "test-snappy-snapshot"])
def test_scan_all_rows(export_root: Path, name: str) -> None:
    t = open_snapshot(str(export_root), name)
    cells = t.scan().to_arrow()
    assert cells.column("row").to_pylist() == [f"{i:02d}".encode() for i in range(100)]
    assert cells.column("value").to_pylist() == [f"value{i}".encode() for i in range(100)]
    assert set(cells.column("ts").to_pylist()) == {TS}
    assert set(cells.column("qualifier").to_pylist()) == {b"a"}
    assert set(cells.column("family").to_pylist()) == {"cf"}
    assert t.scan().count_rows() == 100
    batches = list(t.scan(start_row="35", stop_row="52").to_batches())
    assert len(batches) == 3  # one per region in the range: [30,40), [40,50), [50,60)
    assert sum(b.num_rows for b in batches) == 17
    df = t.scan(row_prefix="7").to_pandas()
    assert list(df["value"]) == [f"value{i}".encode() for i in range(70, 80)]
    # Independent check: the HFiles read raw hold exactly these cells.
    raw = sorted(
        (c["row"], c["value"])
        for p in (export_root / "archive").rglob("*")
        if p.is_file()
        and p.parent.name == "cf"
        and p.parent.parent.name in {r.id for r in t.regions}
        for c in read_hfile(str(p)).to_pylist()
    )
    assert raw == list(
        zip(cells.column("row").to_pylist(), cells.column("value").to_pylist(), strict=True)
    )


def test_get_ranges_prefix_wide_and_dask(export_root: Path) -> None:
    t = open_snapshot(str(export_root), "test-snapshot")
    got = t.get("42").to_pylist()
    assert [(c["row"], c["value"]) for c in got] == [(b"42", b"value42")]
    assert t.get("420").num_rows == 0
    assert t.scan(row_prefix="4").count_rows() == 10
    rows = t.scan(start_row="15", stop_row="31").to_arrow().column("row").to_pylist()
    assert rows == [f"{i}".encode() for i in range(15, 31)]
    rev = t.scan(reversed=True, limit=3).to_arrow().column("row").to_pylist()
    assert rev == [b"99", b"98", b"97"]
    wide = t.scan(shape="wide", column_types={"cf:a": "string"}).to_arrow()
    assert wide.column("cf:a").to_pylist()[:2] == ["value0", "value1"]
    with pytest.raises(InvalidFamilyError, match="nope"):
        t.scan(families="nope")
    ddf = t.scan().to_dask()
    assert ddf.npartitions == 10
    assert ddf.known_divisions
    assert ddf.divisions[:3] == (b"", b"10", b"20") and ddf.divisions[-1] == b"99"
    assert len(ddf.compute()) == 100
    assert len(ddf.loc[b"20":b"29"].compute()) == 10


def test_unknown_snapshot_names_it(export_root: Path) -> None:
    with pytest.raises(SnapshotNotFoundError, match=r"'nope'.*test-snappy-snapshot"):
        open_snapshot(str(export_root), "nope")


def test_bad_manifest_is_a_clear_error(export_root: Path, tmp_path: Path) -> None:
    copy = tmp_path / "root"
    shutil.copytree(export_root / ".hbase-snapshot", copy / ".hbase-snapshot")
    (copy / ".hbase-snapshot" / "test-snapshot" / "data.manifest").write_bytes(b"\x0a\xff\xff")
    with pytest.raises(CorruptFileError, match=r"data\.manifest"):
        open_snapshot(str(copy), "test-snapshot")


def test_missing_hfile_names_every_location(export_root: Path, tmp_path: Path) -> None:
    copy = tmp_path / "root"
    shutil.copytree(export_root / ".hbase-snapshot", copy / ".hbase-snapshot")
    with pytest.raises(
        CellstoreError, match=r"not found; tried: .*/data/default/test-table/.*archive/data"
    ):
        open_snapshot(str(copy), "test-snapshot")


def test_094_v1_snapshots_resolve_to_table_or_archive(root094: Path) -> None:
    # foo_snapshot2 names two hfiles that only exist in .archive/foo/...; data_snapshot2 names
    # live files of the table "data" (layout section 11).
    for name, table in [("foo_snapshot2", "foo"), ("data_snapshot2", "data")]:
        t = open_snapshot(str(root094), name)
        assert t.name == table
        d = t.describe()
        assert d.layout == "0.94" and len(d.regions) == 1
        assert d.regions[0].files == 2
        assert t.scan().count_rows() > 0
    paths = [
        f.path
        for r in open_snapshot(str(root094), "foo_snapshot2").layout.regions
        for fs_ in r.files.values()
        for f in fs_
    ]
    assert all("/.archive/foo/" in p for p in paths)

"""Per-family time ranges (HBase's ``Query#setColumnFamilyTimeRange``), R7.1.

A family's own range replaces the read-wide time range (or timestamp) for that family only:
the family's matcher uses it to skip puts before version counting (R7.2) and to pick the
delete markers it applies (R7.3, R9.2), in raw reads too (R10). Expected results are
written by hand from the rules, or computed by the cell-by-cell model (``tests/model.py``).
"""

from __future__ import annotations

import pickle
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore import connect
from cellstore.cli import cli
from cellstore.errors import InvalidArgumentError, InvalidFamilyError
from cellstore.hbase import hfile_info, open_table, read_hfile
from cellstore.warehouse import Table
from requirements import unavailable

try:
    import model
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests import model

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
NS_UPGRADE = VECTORS / "apache-hbase" / "TestNamespaceUpgrade.0.98.tgz"


def cells(*items: tuple[str, bytes, int, str], row: bytes = b"r") -> pa.Table:
    """(family, qualifier, ts, kind) cells of one row; a put's value is ``family:q@ts``."""
    return pa.table(
        {
            "row": [row] * len(items),
            "family": [f for f, _, _, _ in items],
            "qualifier": [q for _, q, _, _ in items],
            "ts": pa.array([ts for _, _, ts, _ in items], pa.int64()),
            "type": [k for _, _, _, k in items],
            "value": [
                f"{f}:{q.decode()}@{ts}".encode() if k == "Put" else b"" for f, q, ts, k in items
            ],
        }
    )


def got(out: pa.Table) -> list[tuple[str, int, int]]:
    """(family, ts, type) of each returned cell."""
    return [(d["family"], d["ts"], d["type"]) for d in out.to_pylist()]


PUT, DELETE_COLUMN = 4, 12


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """Families a (VERSIONS 5) and b (VERSIONS 1), each with puts at ts 10 and 20."""
    t = connect(tmp_path).create_table(
        "t", families=[{"name": "a", "max_versions": 5}, {"name": "b", "max_versions": 1}]
    )
    t.load_cells(
        cells(("a", b"q", 10, "Put"), ("a", b"q", 20, "Put"))
    )  # one load per family: separate store files with their own time ranges
    t.load_cells(cells(("b", b"q", 10, "Put"), ("b", b"q", 20, "Put")))
    return t


def test_r7_1_family_range_replaces_the_read_wide_range(table: Table) -> None:
    """R7.1: b reads [0, 15), a keeps the scan's all-time / [15, 30) range."""
    assert got(table.scan(family_time_ranges={"b": (0, 15)}, max_versions=5).to_arrow()) == [
        ("a", 20, PUT),
        ("a", 10, PUT),
        ("b", 10, PUT),
    ]
    out = table.scan(time_range=(15, 30), family_time_ranges={"b": (0, 15)}, max_versions=5)
    assert got(out.to_arrow()) == [("a", 20, PUT), ("b", 10, PUT)]
    # a timestamp read (R7.4) is replaced the same way
    assert got(table.get("r", timestamp=10, family_time_ranges={"a": (15, 30)})) == [
        ("a", 20, PUT),
        ("b", 10, PUT),
    ]


def test_r7_2_family_range_applies_before_version_counting(table: Table) -> None:
    """R7.2: with VERSIONS 1, b's newer put is skipped, so the older one is returned."""
    assert got(table.get("r", family_time_ranges={"b": (0, 15)})) == [
        ("a", 20, PUT),
        ("b", 10, PUT),
    ]
    assert table.scan(family_time_ranges={"b": (0, 15)}).count_rows() == 1
    assert got(table.get("r", families="b", family_time_ranges={"b": (11, 15)})) == []


@pytest.mark.parametrize(("keep", "expected"), [("false", []), ("true", [("b", 10, PUT)])])
def test_r7_3_markers_newer_than_the_family_range(tmp_path: Path, keep: str, expected) -> None:
    """R7.3 vs R9.2: a DeleteColumn newer than b's range applies only with KEEP_DELETED_CELLS
    FALSE; the read-wide range (which would also hide the marker) does not matter for b."""
    t = connect(tmp_path).create_table(
        "t", families=[{"name": "b", "max_versions": 5, "keep_deleted_cells": keep}]
    )
    t.load_cells(cells(("b", b"q", 10, "Put")))
    t.load_cells(cells(("b", b"q", 30, "DeleteColumn")))
    read = t.scan(time_range=(0, 100), family_time_ranges={"b": (0, 15)}, max_versions=5)
    assert got(read.to_arrow()) == expected


def test_r10_raw_reads_use_the_family_range(tmp_path: Path) -> None:
    """R10 with R7.1: a raw read returns b's cells inside b's range only, markers too."""
    t = connect(tmp_path).create_table(
        "t", families=[{"name": "a", "max_versions": 5}, {"name": "b", "max_versions": 5}]
    )
    t.load_cells(cells(("a", b"q", 10, "Put"), ("b", b"q", 10, "Put"), ("b", b"q", 5, "Put")))
    t.load_cells(cells(("a", b"q", 30, "DeleteColumn"), ("b", b"q", 30, "DeleteColumn")))
    out = t.scan(raw=True, max_versions=5, family_time_ranges={"b": (6, 31)}).to_arrow()
    assert got(out) == [
        ("a", 30, DELETE_COLUMN),
        ("a", 10, PUT),
        ("b", 30, DELETE_COLUMN),
        ("b", 10, PUT),
    ]


def test_r7_1_files_are_pruned_per_family(tmp_path: Path) -> None:
    """A store file is left out of a family's read when no cell of it can matter to that
    family's range (R7.2, R7.3); the other family keeps its files. The plan is picklable."""
    t = connect(tmp_path).create_table(
        "t", families=[{"name": "a", "max_versions": 5}, {"name": "b", "max_versions": 5}]
    )
    t.load_cells(cells(("a", b"q", 10, "Put"), ("b", b"q", 10, "Put")))  # old
    t.load_cells(cells(("a", b"q", 50, "Put"), ("b", b"q", 50, "Put")))  # new, puts only
    t.load_cells(cells(("b", b"x", 60, "DeleteColumn")))  # new, a marker (b only)
    scan = t.scan(time_range=(40, 100), family_time_ranges={"b": (20, 30)}, max_versions=5)
    (task,) = scan.plan()
    by_family = {fam.family.name: fam for fam in task.families}
    # a: [40, 100): the old file cannot matter; b: [20, 30): the old file is older, the new
    # puts-only file newer, and only the marker file can still apply (KEEP_DELETED_CELLS FALSE)
    assert len(by_family["a"].files) == 1 and by_family["a"].spec.time_range == (40, 100)
    assert len(by_family["b"].files) == 1 and by_family["b"].spec.time_range == (20, 30)
    assert by_family["b"].entries[0].delete_markers == 1
    assert pickle.loads(pickle.dumps(task)) == task
    assert got(scan.to_arrow()) == [("a", 50, PUT)]
    # raw: markers outside the range are not returned, so the marker file goes too
    raw = t.scan(raw=True, families="b", family_time_ranges={"b": (20, 30)})
    assert raw.plan() == [] and raw.to_arrow().num_rows == 0


def test_family_ranges_with_filters_and_columns(table: Table) -> None:
    """Filters judge what each family's semantics return (R12.8), per-family range included."""
    from cellstore.filters import ValueFilter

    out = table.scan(
        columns=["a:q", "b:q"],
        family_time_ranges={"b": (0, 15)},
        filter=ValueFilter("=", b"b:q@10"),
    ).to_arrow()
    assert got(out) == [("b", 10, PUT)]


@pytest.mark.parametrize(
    ("ranges", "error", "match"),
    [
        ({"zz": (0, 1)}, InvalidFamilyError, "no family 'zz'"),
        ({"b": (15, 0)}, InvalidArgumentError, r"family 'b'.*0 <= min <= max"),
        ({"b": (-1, 5)}, InvalidArgumentError, r"family 'b'.*0 <= min <= max"),
        ({"b": (0, "x")}, InvalidArgumentError, r"family 'b' must be two integers"),
        ({"b": 5}, InvalidArgumentError, r"expected family -> \(min, max\)"),
        ([("b", (0, 1)), ("b", (0, 2))], InvalidArgumentError, "given twice"),
    ],
)
def test_invalid_family_time_ranges(table: Table, ranges: Any, error: type, match: str) -> None:
    """R7.1: 0 <= min <= max, and the family must exist; the message names the family."""
    with pytest.raises(error, match=match):
        table.scan(family_time_ranges=ranges)
    with pytest.raises(error, match=match):
        table.get("r", family_time_ranges=ranges)


def test_family_not_read_is_allowed(table: Table) -> None:
    """As in HBase, a range for a family the read does not select has no effect."""
    assert got(table.scan(families="a", family_time_ranges={"b": (0, 1)}).to_arrow()) == [
        ("a", 20, PUT)
    ]


def test_cli_family_time_range(table: Table, tmp_path: Path) -> None:
    """``cellstore scan/get/count --family-time-range b:0:15`` (repeatable)."""
    runner = CliRunner()
    root = str(tmp_path)
    base = ["--root", root, "--output", "json"]

    def run(*args: str) -> Any:
        import json

        result = runner.invoke(cli, [*base, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    def columns(out: Any) -> list[tuple[str, int]]:
        return [(c["column"], c["timestamp"]) for c in out["cells"]]

    scanned = run("scan", "t", "--family-time-range", "b:0:15", "--versions", "5")
    assert columns(scanned) == [("a:q", 20), ("a:q", 10), ("b:q", 10)]
    both = run("scan", "t", "--family-time-range", "b:0:15", "--family-time-range", "a:15:21")
    assert columns(both) == [("a:q", 20), ("b:q", 10)]
    gotten = run("get", "t", "r", "--family-time-range", "a:0:15", "--versions", "5")
    assert columns(gotten) == [("a:q", 10), ("b:q", 20)]
    counted = run("count", "t", "--family-time-range", "a:0:1", "--family-time-range", "b:0:1")
    assert counted["rows"] == 0
    bad = runner.invoke(cli, [*base, "scan", "t", "--family-time-range", "b:0"])
    assert bad.exit_code != 0 and "FAMILY:MIN:MAX" in bad.output


def test_spark_option_parses_family_time_ranges() -> None:
    """The Spark source's ``family_time_ranges`` option (``family:min:max,...``)."""
    pytest.importorskip("pyspark", reason='PySpark is in the dev extra: pip install -e ".[dev]"')
    from cellstore.spark.options import ReadOptions

    opts = ReadOptions.parse({"root": "/r", "table": "t", "family_time_ranges": "b:0:15, c:5:9"})
    assert opts.scan_kwargs()["family_time_ranges"] == (("b", (0, 15)), ("c", (5, 9)))
    with pytest.raises(InvalidArgumentError, match="family_time_ranges"):
        ReadOptions.parse({"root": "/r", "table": "t", "family_time_ranges": "b:0"})


@pytest.fixture(scope="module")
def root094(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if not NS_UPGRADE.exists():
        unavailable("vectors", "HBase test vectors not present")
    d = tmp_path_factory.mktemp("ns094")
    with tarfile.open(NS_UPGRADE) as t:
        t.extractall(d, filter="data")
    yield d / "hbase"
    shutil.rmtree(d, ignore_errors=True)


def test_hbase_tables_take_family_time_ranges(root094: Path) -> None:
    """HBase root tables share the reader: the per-family range gives the model's result."""
    t = open_table(str(root094), "data")
    fam = t.families[0]
    stamps = sorted(set(t.scan(raw=True, max_versions=10).to_arrow().column("ts").to_pylist()))
    assert stamps
    rng = (stamps[0], stamps[len(stamps) // 2] + 1)
    out = t.scan(raw=True, max_versions=10, family_time_ranges={fam.name: rng}).to_arrow()
    expected: list[tuple[Any, ...]] = []
    for region in t.layout.regions:
        runs, seqs = [], []
        for ref in region.files[fam.name]:
            runs.append(
                [
                    model.Cell(c["row"], c["qualifier"], c["ts"], c["type"], c["value"])
                    for c in read_hfile(ref.path).to_pylist()
                ]
            )
            info = hfile_info(ref.path)
            seqs.append(info.max_seq_id if info.max_seq_id is not None else -1)
        expected += model.read(
            model.merge(runs, seqs),
            max_versions=fam.max_versions,
            min_versions=fam.min_versions,
            ttl_seconds=fam.ttl,
            keep_deleted_cells=fam.keep_deleted_cells.value,
            now_ms=0,
            read_versions=10,
            raw=True,
            family=fam.name,
            family_time_ranges={fam.name: rng},
        )
    assert expected
    rows = [(c["row"], c["qualifier"], c["ts"], c["type"], c["value"]) for c in out.to_pylist()]
    assert rows == expected
    with pytest.raises(InvalidFamilyError, match="nope"):
        t.scan(family_time_ranges={"nope": (0, 1)})
    # the same through ``cellstore hbase scan/count --family-time-range``
    import json

    spec = f"{fam.name}:{rng[0]}:{rng[1]}"
    base = ["--output", "json", "hbase"]
    args = [str(root094), "--table", "data", "--family-time-range", spec]
    runner = CliRunner()
    res = runner.invoke(cli, [*base, "scan", *args, "--raw", "--versions", "10"])
    assert res.exit_code == 0, res.output
    assert [c["timestamp"] for c in json.loads(res.output)["cells"]] == [e[2] for e in expected]
    res = runner.invoke(cli, [*base, "count", *args])
    assert res.exit_code == 0, res.output
    want_rows = t.scan(family_time_ranges={fam.name: rng}).count_rows()
    assert json.loads(res.output)["rows"] == want_rows

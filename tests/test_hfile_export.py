"""export_hfiles: a table as HFiles for HBase's bulk load (completebulkload's directory)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pytest
from click.testing import CliRunner

import cellstore
from cellstore.cli import cli
from cellstore.core.family import Family
from cellstore.errors import InvalidArgumentError, InvalidFamilyError
from cellstore.hbase import hfile_info, read_hfile, verify_hfile
from cellstore.jobs import HFileExportReport, export_hfiles

try:
    from strategies import cells_table
except ImportError:  # pragma: no cover
    from tests.strategies import cells_table

PUT, DELETE, DELETE_COLUMN, DELETE_FAMILY = 4, 8, 12, 14
ALL = 2**31 - 1
BULKLOAD_KEYS = (
    "BULKLOAD_TIMESTAMP",
    "BULKLOAD_SOURCE_TASK",
    "MAJOR_COMPACTION_KEY",
    "EXCLUDE_FROM_MINOR_COMPACTION",
    "TIMERANGE",
    "EARLIEST_PUT_TS",
    "DELETE_FAMILY_COUNT",
    "BLOOM_FILTER_TYPE",
    "KEY_VALUE_VERSION",
    "MAX_MEMSTORE_TS_KEY",
    "hfile.LASTKEY",
)
SPLITS = [b"m", b"\x80"]


def cell(row: bytes, qual: bytes, ts: int, typ: int = PUT, value: bytes = b"", fam: str = "f"):
    if typ == PUT and not value:
        value = row + b"/" + qual + b"/" + str(ts).encode()
    return (row, fam, qual, ts, typ, value)


def make(root: str, name: str = "ns:t", extra_rows: int = 0) -> Any:
    """Two families, three regions, versions and delete markers in two loads."""
    t = cellstore.connect(root).create_table(
        name, families=[Family(name="f", max_versions=2), "g"], splits=SPLITS
    )
    first = [
        cell(b"a", b"q", 1),
        cell(b"a", b"q", 2),
        cell(b"a", b"q", 3),
        cell(b"a\\b", b"\x00q", 1),
        cell(b"b", b"q", 4, fam="g"),
        cell(b"n", b"q", 5, value=b"first"),
        cell(b"n", b"r", 6),
        cell(b"\x81\xff", b"q", 1, fam="g"),
        cell(b"z", b"", 7, fam="g"),
        cell(b"z", b"q", 7),
    ]
    first += [cell(b"c%04d" % i, b"q", 10 + i % 3) for i in range(extra_rows)]
    t.load_cells(cells_table(first))
    t.load_cells(
        cells_table(
            [
                cell(b"a", b"q", 2, DELETE),
                cell(b"n", b"q", 5, value=b"second"),
                cell(b"n", b"r", 9, DELETE_COLUMN),
                cell(b"z", b"", 8, DELETE_FAMILY, fam="g"),
            ]
        )
    )
    return t


def tuples(cells: pa.Table) -> list[tuple[Any, ...]]:
    cols = ["row", "family", "qualifier", "ts", "type", "value"]
    return [tuple(r.values()) for r in cells.select(cols).to_pylist()]


def region_of(table: Any, row: bytes) -> str:
    (r,) = [r.id for r in table.regions if r.contains(row)]
    return str(r)


def check_export(
    table: Any, report: HFileExportReport, out: str, *, storage_options: Any = None, **scan: Any
) -> dict[tuple[str, str], list[str]]:
    """Every file valid, in one region, sorted, bulk-load FileInfo; cells == the scan's."""
    fs, root = fsspec.core.url_to_fs(out, **(storage_options or {}))
    per_task: dict[tuple[str, str], list[str]] = {}
    for fam in report.families:
        expected = tuples(table.scan(families=[fam], **scan).to_arrow())
        fam_dir = f"{root}/{fam}"
        names = sorted(fs.ls(fam_dir, detail=False)) if fs.exists(fam_dir) else []
        assert all(re.fullmatch(r"[0-9a-f]{32}", p.rsplit("/", 1)[1]) for p in names)
        got: list[tuple[Any, ...]] = []
        parts = []
        for p in names:
            url = p if "://" not in out else f"{out.split('://')[0]}://{p}"
            assert verify_hfile(url, storage_options=storage_options).ok
            cells = read_hfile(url, storage_options=storage_options)
            info = hfile_info(url, storage_options=storage_options)
            assert info.version == "3.3" and info.entry_count == cells.num_rows > 0
            for key in BULKLOAD_KEYS:
                assert key in info.file_info, key
            assert info.bulkload_timestamp is not None and info.max_seq_id is None
            assert info.bloom_type == "ROW"
            assert info.first_row is not None and info.last_row is not None
            region = region_of(table, info.first_row)
            assert region == region_of(table, info.last_row)  # never split by the tool
            assert set(cells.column("family").to_pylist()) == {fam}
            rows = cells.column("row").to_pylist()
            assert rows == sorted(rows)
            per_task.setdefault((region, fam), []).append(p)
            parts.append((rows[0], tuples(cells)))
        for _, part in sorted(parts):
            got += part
        assert got == expected
    assert report.cells == sum(f.cells for f in report.files)
    assert len(report.files) == sum(len(v) for v in per_task.values())
    return per_task


@pytest.fixture
def table(tmp_path: Path) -> Any:
    return make(str(tmp_path / "wh"))


def test_latest_versions(table: Any, tmp_path: Path) -> None:
    out = str(tmp_path / "bulk")
    report = export_hfiles(table, out)
    assert report.families == ("f", "g") and report.regions == 3
    per_task = check_export(table, report, out)
    assert {r for r, _ in per_task} == {"r000001", "r000002", "r000003"}
    # Latest only: "a" has one visible version; the DeleteColumn hid n/r.
    assert report.cells == len(table.scan().to_arrow())
    assert sorted(p.name for p in Path(out).iterdir()) == ["f", "g"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dir left


def test_raw_and_all_versions(table: Any, tmp_path: Path) -> None:
    raw = export_hfiles(table, str(tmp_path / "raw"), raw=True)
    check_export(table, raw, str(tmp_path / "raw"), raw=True, max_versions=ALL)
    types = {t for f in raw.files for t in read_hfile(f.path).column("type").to_pylist()}
    assert {DELETE, DELETE_COLUMN, DELETE_FAMILY} <= types
    versions = export_hfiles(table, str(tmp_path / "v"), max_versions=ALL, families=["f"])
    check_export(table, versions, str(tmp_path / "v"), max_versions=ALL)
    assert versions.families == ("f",) and not (tmp_path / "v" / "g").exists()
    assert raw.cells > versions.cells > 0


def test_time_range_and_options(table: Any, tmp_path: Path) -> None:
    out = str(tmp_path / "tr")
    report = export_hfiles(
        table,
        out,
        time_range=(2, 7),
        raw=True,
        compression="gz",
        encoding="fast_diff",
        bloom="none",
        block_size=64,
    )
    check_export_ = {f.path: hfile_info(f.path) for f in report.files}
    assert all(i.compression == "GZ" and i.bloom_type == "NONE" for i in check_export_.values())
    got = sorted(c for f in report.files for c in tuples(read_hfile(f.path)))
    want = sorted(tuples(table.scan(time_range=(2, 7), raw=True, max_versions=ALL).to_arrow()))
    assert got == want and got


def test_rolls_on_rows_and_caps_files_per_region(tmp_path: Path) -> None:
    t = make(str(tmp_path / "wh"), extra_rows=120)
    out = str(tmp_path / "bulk")
    report = export_hfiles(t, out, max_file_bytes=1, families=["f"])
    per_task = check_export(t, report, out)
    assert len(per_task[("r000001", "f")]) == 32  # 124 rows: capped at HBase's limit
    seen: set[bytes] = set()
    for p in per_task[("r000001", "f")]:
        rows = set(read_hfile(p).column("row").to_pylist())
        assert not rows & seen  # a row is never split across files
        seen |= rows
    # Fewer rows than the cap: one file per row.
    n_rows = len(
        set(
            t.scan(families=["f"], start_row=b"m", stop_row=b"\x80")
            .to_arrow()
            .column("row")
            .to_pylist()
        )
    )
    assert len(per_task[("r000002", "f")]) == n_rows == 2
    small = export_hfiles(t, str(tmp_path / "few"), max_file_bytes=1, max_files_per_region=3)
    counts = check_export(t, small, str(tmp_path / "few"))
    assert max(len(v) for v in counts.values()) == 3


def test_failed_task_leaves_nothing(table: Any, tmp_path: Path) -> None:
    out = tmp_path / "bulk"
    with pytest.raises(InvalidArgumentError, match="compression"):
        export_hfiles(table, str(out), compression="bogus")  # refused before anything is written
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "wh"]  # temporary directory removed
    out.mkdir()  # an empty directory is accepted, and stays empty on failure
    with pytest.raises(InvalidArgumentError, match="encoding"):
        export_hfiles(table, str(out), encoding="nope")
    assert list(out.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bulk", "wh"]
    report = export_hfiles(table, str(out))
    check_export(table, report, str(out))


def test_refuses_non_empty_unless_overwrite(table: Any, tmp_path: Path) -> None:
    out = tmp_path / "bulk"
    out.mkdir()
    (out / "old").write_bytes(b"x")
    with pytest.raises(InvalidArgumentError, match="overwrite"):
        export_hfiles(table, str(out))
    assert (out / "old").read_bytes() == b"x"
    with pytest.raises(InvalidArgumentError, match="compression"):
        export_hfiles(table, str(out), overwrite=True, compression="bogus")
    assert (out / "old").read_bytes() == b"x"  # a failed overwrite keeps the old content
    report = export_hfiles(table, str(out), overwrite=True)
    assert not (out / "old").exists()
    check_export(table, report, str(out))
    with pytest.raises(InvalidFamilyError):
        export_hfiles(table, str(tmp_path / "x"), families=["nope"])
    with pytest.raises(InvalidArgumentError):
        export_hfiles(table, str(tmp_path / "x"), max_file_bytes=0)
    assert not (tmp_path / "x").exists()


def test_memory_filesystem(memory_root: str) -> None:
    t = make(f"{memory_root}/wh")
    out = f"{memory_root}/bulk"
    report = export_hfiles(t, out, raw=True)
    check_export(t, report, out, raw=True, max_versions=ALL)
    fs = fsspec.filesystem("memory")
    parent = out.split("://", 1)[1].rsplit("/", 1)[0]
    assert not [p for p in fs.ls(parent, detail=False) if p.rsplit("/", 1)[1].startswith(".")]
    with pytest.raises(InvalidArgumentError, match="compression"):
        export_hfiles(t, f"{memory_root}/bad", compression="bogus")
    assert not fs.exists(f"{memory_root}/bad")
    assert not [p for p in fs.ls(parent, detail=False) if p.rsplit("/", 1)[1].startswith(".")]


def test_distributed_client(table: Any, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=2, dashboard_address=None) as client:
        out = str(tmp_path / "bulk")
        report = export_hfiles(table, out, client=client, raw=True)
        check_export(table, report, out, raw=True, max_versions=ALL)
        with pytest.raises(InvalidArgumentError):
            export_hfiles(table, str(tmp_path / "bad"), client=client, bloom="nope")
        assert not (tmp_path / "bad").exists()


def test_cli(table: Any, tmp_path: Path) -> None:
    runner = CliRunner()
    root = str(tmp_path / "wh")
    out = str(tmp_path / "bulk")

    def invoke(*args: str, output: str = "json") -> Any:
        return runner.invoke(cli, ["--root", root, "--output", output, "hbase", *args])

    r = invoke("export-hfiles", "ns:t", out, "--raw", "--compression", "gz")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["table"] == "ns:t" and doc["families"] == ["f", "g"]
    assert doc["cells"] == len(table.scan(raw=True, max_versions=ALL).to_arrow())
    assert all(Path(f["path"]).parent.parent == Path(out) for f in doc["files"])
    assert {hfile_info(f["path"]).compression for f in doc["files"]} == {"GZ"}
    r = invoke("export-hfiles", "ns:t", out)
    assert r.exit_code == 2 and "overwrite" in r.output
    r = invoke(
        "export-hfiles",
        "ns:t",
        out,
        "--overwrite",
        "--family",
        "g",
        "--all-versions",
        "--time-range",
        "0",
        "8",
        output="text",
    )
    assert r.exit_code == 0, r.output
    assert "completebulkload" in r.output and sorted(p.name for p in Path(out).iterdir()) == ["g"]
    r = invoke("export-hfiles", "ns:t", out, "--raw", "--all-versions")
    assert r.exit_code == 2

"""Export (scan to Parquet/CSV files on any fsspec URL) and copy-table (raw cells, seq order)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

import cellstore
from cellstore.cli import cli
from cellstore.cli.load_cells import read_cells_file
from cellstore.core.family import Family
from cellstore.core.keys import to_string_binary
from cellstore.errors import InvalidArgumentError, InvalidFamilyError, TableNotFoundError
from cellstore.jobs import clone, copy_table, export, snapshot, verify
from cellstore.jobs.export import printable_array
from cellstore.jobs.regions import split

try:
    from strategies import cells_table
except ImportError:  # pragma: no cover
    from tests.strategies import cells_table

PUT, DELETE, DELETE_COLUMN, DELETE_FAMILY = 4, 8, 12, 14


def cell(row: bytes, qual: bytes, ts: int, typ: int = PUT, value: bytes = b"", fam: str = "f"):
    if typ == PUT and not value:
        value = row + b"/" + qual + b"/" + str(ts).encode()
    return (row, fam, qual, ts, typ, value)


def raw(table: Any) -> list[tuple[Any, ...]]:
    return [
        tuple(r.values()) for r in table.scan(raw=True, max_versions=100).to_arrow().to_pylist()
    ]


def make(wh: Any, name: str = "ns:src") -> Any:
    """Two families, three regions, versions, delete markers, an exact-key tie, odd bytes."""
    t = wh.create_table(
        name, families=[Family(name="f", max_versions=2), "g"], splits=["m", b"\x80"]
    )
    t.load_cells(
        cells_table(
            [
                cell(b"a", b"q", 1),
                cell(b"a", b"q", 2),
                cell(b"a", b"q", 3),
                cell(b"a\\b", b"\x00q", 1),
                cell(b"n", b"q", 5, value=b"first"),
                cell(b"\x81\xff", b"q", 1, fam="g"),
                cell(b"z", b"", 7, fam="g"),
            ]
        )
    )
    t.load_cells(
        cells_table(
            [
                cell(b"a", b"q", 2, DELETE),
                cell(b"n", b"q", 5, value=b"second"),  # ties the first load: this one wins
                cell(b"n", b"r", 9, DELETE_COLUMN),
                cell(b"z", b"", 8, DELETE_FAMILY, fam="g"),
            ]
        )
    )
    return t


# --------------------------------------------------------------------------- printable
def test_printable_array_matches_to_string_binary() -> None:
    rng = random.Random(5)
    values = [bytes(rng.randrange(256) for _ in range(rng.randrange(6))) for _ in range(300)]
    values += [b"plain", b"back\\slash", b"", None]  # type: ignore[list-item]
    arr = pa.array(values, pa.binary())
    want = [None if v is None else to_string_binary(v) for v in values]
    assert printable_array(arr).to_pylist() == want
    assert printable_array(arr.slice(7, 50)).to_pylist() == want[7:57]
    chunked = pa.chunked_array([arr.slice(0, 10), arr.slice(10)])
    assert printable_array(chunked).to_pylist() == want
    assert printable_array(pa.array([b"abc"], pa.large_binary())).to_pylist() == ["abc"]
    assert printable_array(pa.array([], pa.binary())).to_pylist() == []


# ------------------------------------------------------------------------------ export
def test_export_parquet_one_file_per_task(any_root: str, tmp_path: Path) -> None:
    t = make(cellstore.connect(any_root))
    out = str(tmp_path / "out")
    r = export(t, out, raw=True, max_versions=10)
    assert len(r.files) == len(t.scan(raw=True).plan()) == 3
    assert [Path(f).name for f in r.files] == [
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    assert (Path(out) / "_SUCCESS").exists()
    back = pa.concat_tables(pq.read_table(f) for f in r.files)
    want = t.scan(raw=True, max_versions=10).to_arrow()
    assert back.equals(want)
    assert (r.rows, r.cells) == (5, want.num_rows) == (5, 10)
    assert r.bytes == sum(Path(f).stat().st_size for f in r.files)
    assert r.to_dict()["format"] == "parquet"


def test_export_csv_loads_back_into_an_equal_table(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = make(wh)
    out = tmp_path / "csv"
    r = export(t, str(out), format="csv", raw=True, max_versions=100)
    assert r.format == "csv" and len(r.files) == 3
    header = Path(r.files[0]).read_text().splitlines()[0]
    assert header == '"row","family","qualifier","ts","type","value"'
    assert '"a\\x5Cb","f","\\x00q",1,"Put"' in Path(r.files[0]).read_text()
    copy = wh.create_table("ns:back", families=[Family(name="f", max_versions=2), "g"])
    for f in r.files:
        copy.load_cells(read_cells_file(f, fmt="csv"))
    # the tie's loser is not in a raw scan, so the copy holds exactly what was visible raw
    assert raw(copy) == raw(t)


def test_export_wide_and_scan_options(tmp_path: Path) -> None:
    t = make(cellstore.connect(str(tmp_path / "wh")))
    r = export(t, str(tmp_path / "wide"), shape="wide", row_prefix="a")
    got = pq.read_table(r.files[0])
    assert got.column_names == ["row", "f:\x00q", "f:q"]
    assert got.column("row").to_pylist() == [b"a", b"a\\b"]
    assert r.rows == 2 and r.cells == 2
    r = export(
        t,
        str(tmp_path / "wide.csv"),
        shape="wide",
        format="csv",
        columns=["f:q"],
        column_types={"f:q": "string"},
    )
    lines = "".join(Path(f).read_text() for f in r.files).splitlines()
    assert lines[0] == '"row","f:q"' and '"a","a/q/3"' in lines
    with pytest.raises(InvalidArgumentError, match="format"):
        export(t, str(tmp_path / "x"), format="orc")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="shape"):
        export(t, str(tmp_path / "x"), shape="tall")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        export(t, str(tmp_path / "x"), bogus=1)


def test_export_refuses_to_mix_exports_unless_overwrite(tmp_path: Path) -> None:
    t = make(cellstore.connect(str(tmp_path / "wh")))
    out = str(tmp_path / "out")
    assert len(export(t, out).files) == 3
    with pytest.raises(InvalidArgumentError, match="already holds an export"):
        export(t, out)
    r = export(t, out, overwrite=True, row_prefix="a")
    assert len(r.files) == 1
    assert sorted(p.name for p in Path(out).iterdir()) == ["_SUCCESS", "part-00000.parquet"]


def test_export_to_memory_and_s3(s3_root: str, s3_options: dict[str, Any]) -> None:
    t = make(cellstore.connect(s3_root, storage_options=s3_options))
    url = s3_root.rsplit("/", 1)[0] + "/exports/src"
    r = export(t, url, storage_options=s3_options, format="csv")
    fs = fsspec.filesystem("s3", **s3_options)
    assert fs.exists(url + "/_SUCCESS") and len(r.files) == 3
    mem = f"memory://export-{random.randrange(1 << 30)}"
    r2 = export(t, mem)
    mfs = fsspec.filesystem("memory")
    back = pa.concat_tables(pq.read_table(mfs.open(f)) for f in r2.files)
    assert back.equals(t.scan().to_arrow())
    mfs.rm(mfs._strip_protocol(mem), recursive=True)


# -------------------------------------------------------------------------------- copy
def test_copy_table_to_another_root_preserves_raw_cells_and_ties(
    memory_root: str, tmp_path: Path
) -> None:
    src = make(cellstore.connect(memory_root))
    split(src, at=["b"])
    src.refresh()
    dest_wh = cellstore.connect(str(tmp_path / "other"))
    r = copy_table(src, dest_wh, "bk:copy")
    assert r.created and r.version == 2 and r.files_read == len(src.files)
    d = dest_wh.table("bk:copy")
    assert d.metadata.split_keys == src.metadata.split_keys
    assert d.metadata.family("f").max_versions == 2
    assert raw(d) == raw(src)
    assert d.scan(max_versions=5).to_arrow().equals(src.scan(max_versions=5).to_arrow())
    assert d.get("n").column("value").to_pylist() == [b"second"]  # tie order kept
    # every stored cell was copied, masked ones included
    assert sum(f.cells for f in d.files) == sum(f.cells for f in src.files)
    assert [h.operation for h in d.history()] == ["copy", "create"]
    assert verify(d).ok
    # a retried copy with the same job id does nothing
    again = copy_table(src, dest_wh, "bk:copy", job_id=r.job_id)
    assert again.version is None and raw(dest_wh.table("bk:copy")) == raw(src)


def test_copy_into_an_existing_table_wins_ties_like_a_load(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    src = make(wh)
    dest = wh.create_table("ns:dest", families=["f", "g", "h"], splits=["c"])
    dest.load_cells(cells_table([cell(b"n", b"q", 5, value=b"old"), cell(b"y", b"q", 1)]))
    r = copy_table(src, None, "ns:dest", create=False, families=["f"])
    assert not r.created
    dest.refresh()
    assert dest.get("n").column("value").to_pylist() == [b"second"]
    assert dest.get("y").num_rows == 1
    assert {f.family for f in dest.files} == {"f"}
    with pytest.raises(TableNotFoundError):
        copy_table(src, wh, "ns:none", create=False)
    with pytest.raises(InvalidFamilyError):
        copy_table(src, wh, "ns:dest", families=["nope"])
    with pytest.raises(InvalidArgumentError, match="onto itself"):
        copy_table(src, wh, "ns:src")
    no_g = wh.create_table("ns:f-only", families=["f"])
    with pytest.raises(InvalidFamilyError, match="no family 'g'"):
        copy_table(src, wh, str(no_g.name))


def test_copy_of_a_clone_and_of_a_salted_table(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    src = make(wh)
    snapshot(src, "s")
    clone(src, "s", "ns:c")
    copy_table(wh.table("ns:c"), wh, "ns:c2")
    assert raw(wh.table("ns:c2")) == raw(src)
    salted = wh.create_table("ns:salted", families=["f"], salt_buckets=4)
    salted.load_cells(cells_table([cell(f"k{i}".encode(), b"q", i) for i in range(20)]))
    r = copy_table(salted, wh, "ns:salted2")
    s2 = wh.table("ns:salted2")
    assert s2.metadata.salt_buckets == 4 and r.cells == 20
    assert sorted(raw(s2)) == sorted(raw(salted))


# --------------------------------------------------------------------------------- CLI
@pytest.fixture
def run(tmp_path: Path) -> Any:
    root = str(tmp_path / "wh")
    runner = CliRunner()

    def invoke(*args: str, output: str = "text") -> Result:
        return runner.invoke(cli, ["--root", root, "--output", output, *args])

    make(cellstore.connect(root))
    return invoke


def test_cli_export_and_copy(run: Any, tmp_path: Path) -> None:
    out = str(tmp_path / "exp")
    r = run("export", "ns:src", out, "--format", "csv", "--raw", "--versions", "9")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("Exported 5 row(s) (10 cells) of table ns:src version 3 to ")
    r = run("export", "ns:src", out, output="json")
    assert r.exit_code == 2 and "--overwrite" in r.stderr
    r = run("export", "ns:src", out, "--overwrite", "--prefix", "n", output="json")
    doc = json.loads(r.stdout)
    assert (doc["rows"], len(doc["files"]), doc["format"]) == (1, 1, "parquet")
    r = run("export", "ns:src", out, "--column-type", "f:q=long")
    assert r.exit_code == 2 and "needs --shape wide" in r.output
    other = str(tmp_path / "other")
    r = run("copy", "ns:src", "bk:src", "--to-root", other, "--job-id", "c1")
    assert r.exit_code == 0, r.output
    assert "Copied 11 cells of table ns:src version 3 into table bk:src (created)" in r.stdout
    r = run("copy", "ns:src", "bk:src", "--to-root", other, "--job-id", "c1", output="json")
    assert json.loads(r.stdout)["version"] is None
    r = run("copy", "ns:src", "bk:none", "--no-create")
    assert r.exit_code == 3


# ------------------------------------------------------------------------ one-file export
@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_export_file_writes_one_file_on_any_filesystem(memory_root: str, fmt: str) -> None:
    """export_file (what `scan --output-file` runs) writes the scan's cells to one file."""
    from cellstore.jobs.export import export_file

    t = make(cellstore.connect(memory_root))
    scan = t.scan(raw=True, max_versions=100)
    url = f"{memory_root}/out/cells.{fmt}"
    report = export_file(scan, url, format=fmt)
    fs = fsspec.filesystem("memory")
    assert report.cells == len(raw(t)) and report.bytes == fs.size(report.path)
    assert [p.rsplit("/", 1)[-1] for p in fs.ls(f"{memory_root}/out", detail=False)] == [
        f"cells.{fmt}"
    ]  # no partial file left
    with fs.open(report.path, "rb") as f:
        data = f.read()
    if fmt == "parquet":
        back = pq.read_table(pa.BufferReader(data))
        assert back.num_rows == report.cells
    elif fmt == "json":
        lines = [json.loads(x) for x in data.decode().splitlines()]
        assert len(lines) == report.cells
        assert {
            "row": "a\\x5Cb",
            "family": "f",
            "qualifier": "\\x00q",
            "ts": 1,
            "type": "Put",
            "value": "a\\x5Cb/\\x00q/1",
        } in lines
    else:
        assert data.decode().splitlines()[0] == '"row","family","qualifier","ts","type","value"'
        assert len(data.decode().splitlines()) == report.cells + 1


def test_export_file_of_an_empty_scan_and_a_failure(tmp_path: Path) -> None:
    from cellstore.jobs.export import export_file

    t = make(cellstore.connect(str(tmp_path / "wh")))
    out = tmp_path / "empty.csv"
    report = export_file(t.scan(row_prefix=b"nothing"), str(out), format="csv")
    assert report.rows == report.cells == 0
    assert out.read_text().splitlines() == ['"row","family","qualifier","ts","type","value"']
    with pytest.raises(InvalidArgumentError):
        export_file(t.scan(), str(tmp_path / "x.txt"), format="text")  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.csv", "wh"]

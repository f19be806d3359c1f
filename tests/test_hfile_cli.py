"""``cellstore hfile info | cat | verify`` on the real HBase test vectors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cellstore.cli import cli

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
HUDI = VECTORS / "apache-hudi"
GZ_FILE = HUDI / "hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"
V1 = VECTORS / "apache-hbase" / "8e8ab58dcf39412da19833fcd8f687ac.hfile-v1"

pytestmark = pytest.mark.needs(
    need="vectors", present=VECTORS.is_dir(), reason="HBase test vectors not present"
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_help_of_every_hfile_command() -> None:
    for sub in ([], ["info"], ["cat"], ["verify"]):
        code, out, _ = run("hfile", *sub, "--help")
        assert code == 0, sub
        assert "Usage:" in out


def test_info_text_and_json() -> None:
    code, out, _ = run("hfile", "info", str(GZ_FILE))
    assert code == 0
    assert "compressionCodec=GZ" in out
    assert "entryCount=20000" in out
    assert "hfile.LASTKEY = hudi-key-000019999/:/LATEST_TIMESTAMP/Put" in out
    assert "dataBlocks=72" in out
    code, out, _ = run("--output", "json", "hfile", "info", str(GZ_FILE))
    assert code == 0
    doc = json.loads(out)
    assert doc["entry_count"] == 20000
    assert doc["first_row"] == "hudi-key-000000000"
    assert doc["trailer"]["num_data_index_levels"] == 1
    assert doc["file_info"]["hudi_hfile_testing.custom_key"] == "hudi_custom_value"


def test_cat_prints_cells_like_the_shell() -> None:
    code, out, _ = run(
        "hfile", "cat", str(GZ_FILE), "--start-row", "hudi-key-000000100", "--limit", "2"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ROW", "COLUMN+CELL"]
    assert lines[1].split() == [
        "hudi-key-000000100",
        "column=:,",
        "timestamp=9223372036854775807,",
        "value=hudi-value-000000100",
    ]
    assert "hudi-key-000000101" in lines[2]
    assert lines[3] == "2 row(s)"
    code, out, _ = run(
        "--output",
        "json",
        "hfile",
        "cat",
        str(GZ_FILE),
        "--start-row",
        "hudi-key-000019998",
        "--stop-row",
        "hudi-key-000019999",
    )
    assert code == 0
    assert [c["row"] for c in json.loads(out)["cells"]] == ["hudi-key-000019998"]


def test_verify_reports_damage_with_a_nonzero_exit(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt"
    corrupt.write_bytes(
        gzip.decompress(
            (
                VECTORS / "apache-hbase" / "TestCompaction_HFileWithCorruptBlock.branch-2.5.gz"
            ).read_bytes()
        )
    )
    code, out, _ = run("hfile", "verify", str(GZ_FILE), str(corrupt), str(V1))
    assert code == 9
    assert f"{GZ_FILE}: OK (76 blocks, 20000 cells)" in out
    assert f"{corrupt}: DAMAGED" in out
    assert "CRC32C checksum mismatch in the DATA block at offset 0" in out
    assert "expected 0xded9f6a6, actual 0x26c7776a" in out
    assert "HFile version 1" in out
    assert "1 of 3 file(s) OK" in out
    code, out, _ = run("--output", "json", "hfile", "verify", str(corrupt))
    assert code == 9
    doc = json.loads(out)
    assert doc["damaged"] == 1
    assert doc["files"][0]["cells"] == 15461
    assert doc["files"][0]["problems"][0]["offset"] == 0
    assert run("hfile", "verify", str(GZ_FILE))[0] == 0


def test_v1_info_is_a_one_line_error() -> None:
    code, _, err = run("hfile", "info", str(V1))
    assert code == 6
    assert err.startswith("error: ") and "HFile version 1" in err
    assert len(err.strip().splitlines()) == 1


def test_hfile_cli_module_stays_light() -> None:
    code = (
        "import sys, cellstore.cli.hfile\n"
        "print([m for m in ('pyarrow', 'dask', 'pandas', 'numpy') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------------------- write


def _write_cells_csv(path: Path) -> None:
    path.write_text(
        "row,family,qualifier,ts,type,value\n"
        "r1,cf,a,2000,Put,v1\n"
        "r1,cf,a,1000,Put,v0\n"
        "r1,cf,b,1500,DeleteColumn,\n"
        "r2\\x00,cf,a,3000,4,\\xFF\n"
    )


def test_write_from_csv_reads_back(tmp_path: Path) -> None:
    from cellstore.hbase import read_hfile, verify_hfile

    src = tmp_path / "cells.csv"
    _write_cells_csv(src)
    out = tmp_path / "out.hfile"
    code, stdout, err = run(
        "--output", "json", "hfile", "write", str(src), str(out), "--compression", "gz"
    )
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["cells"] == 4
    assert doc["bytes"] == out.stat().st_size
    assert doc["blocks"] == 1
    assert verify_hfile(str(out)).ok
    got = read_hfile(str(out))
    assert got.column("row").to_pylist() == [b"r1", b"r1", b"r1", b"r2\x00"]
    assert got.column("qualifier").to_pylist() == [b"a", b"a", b"b", b"a"]
    assert got.column("ts").to_pylist() == [2000, 1000, 1500, 3000]
    assert got.column("type").to_pylist() == [4, 4, 12, 4]
    assert got.column("value").to_pylist() == [b"v1", b"v0", b"", b"\xff"]
    assert set(got.column("family").to_pylist()) == {"cf"}


def _puts_file(tmp_path: Path, rows: list[bytes], value: bytes) -> Path:
    """A Parquet cells file: one Put ``f:q`` at ts 5 of ``value`` per row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(rows)
    cells = pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "family": pa.array(["f"] * n),
            "qualifier": pa.array([b"q"] * n, pa.binary()),
            "ts": pa.array([5] * n, pa.int64()),
            "type": pa.array([4] * n, pa.int8()),
            "value": pa.array([value] * n, pa.binary()),
        }
    )
    src = tmp_path / "cells.parquet"
    pq.write_table(cells, src)
    return src


def test_write_from_parquet_with_options(tmp_path: Path) -> None:

    from cellstore.hbase import hfile_info, read_hfile

    n = 2000
    rows = [f"row{i:05d}".encode() for i in range(n)]
    src = _puts_file(tmp_path, rows, b"x" * 50)
    out = tmp_path / "o.hfile"
    code, stdout, err = run(
        "--output", "json", "hfile", "write", str(src), str(out),
        "--encoding", "fast_diff", "--block-size", "4096", "--bloom", "rowcol",
        "--compression", "snappy",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(stdout)["blocks"] > 1
    info = hfile_info(str(out))
    assert info.data_block_encoding == "FAST_DIFF"
    assert info.compression == "SNAPPY"
    assert read_hfile(str(out)).column("row").to_pylist() == rows


def test_write_rejects_bad_arguments(tmp_path: Path) -> None:
    src = tmp_path / "cells.csv"
    _write_cells_csv(src)
    code, _, _ = run("hfile", "write", str(tmp_path / "only-out.hfile"))
    assert code == 2
    code, _, _ = run("hfile", "write", str(src), str(tmp_path / "o"), "--family", "cf")
    assert code == 2
    two = tmp_path / "two.csv"
    two.write_text("row,family,qualifier,ts,type,value\nr,a,q,1,Put,v\nr,b,q,1,Put,v\n")
    code, _, err = run("hfile", "write", str(two), str(tmp_path / "o2"))
    assert code == 2
    assert "families" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("row,family,qualifier,ts,type,value\nr,a,q,1,Bogus,v\n")
    code, _, err = run("hfile", "write", str(bad), str(tmp_path / "o3"))
    assert code != 0
    assert "Bogus" in err


def test_write_from_a_table_range(tmp_path: Path) -> None:
    """``hfile write --table``: a table's raw cells (markers, every version) of one family."""
    import cellstore
    from cellstore.core.family import Family
    from cellstore.hbase import read_hfile, verify_hfile

    try:
        from strategies import cells_table
    except ImportError:  # pragma: no cover
        from tests.strategies import cells_table

    root = str(tmp_path / "wh")
    t = cellstore.connect(root).create_table(
        "ns:t", families=[Family(name="f", max_versions=1), "g"], splits=[b"m"]
    )
    t.load_cells(
        cells_table(
            [
                (b"a", "f", b"q", 1, 4, b"a1"),
                (b"a", "f", b"q", 2, 4, b"a2"),  # both versions are written (raw)
                (b"b", "g", b"q", 1, 4, b"g"),  # other family: left out
                (b"n", "f", b"q", 3, 4, b"n3"),  # second region
                (b"z", "f", b"q", 4, 4, b"z4"),  # past --stop-row
            ]
        )
    )
    t.load_cells(cells_table([(b"n", "f", b"", 5, 14, b"")]))  # DeleteFamily marker
    out = tmp_path / "f.hfile"
    code, stdout, err = run(
        "--root", root, "--output", "json", "hfile", "write", str(out),
        "--table", "ns:t", "--family", "f", "--start-row", "a", "--stop-row", "y",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["source"] == "ns:t" and doc["cells"] == 4
    assert verify_hfile(str(out)).ok
    got = read_hfile(str(out))
    # HBase order: row, family, qualifier ascending; ts, type descending
    assert [(c["row"], c["qualifier"], c["ts"], c["type"]) for c in got.to_pylist()] == [
        (b"a", b"q", 2, 4),
        (b"a", b"q", 1, 4),
        (b"n", b"", 5, 14),
        (b"n", b"q", 3, 4),
    ]
    assert set(got.column("family").to_pylist()) == {"f"}
    # Two families without --family cannot go to one HFile; --table with IN is refused.
    code, _, err = run("--root", root, "hfile", "write", str(tmp_path / "x"), "--table", "ns:t")
    assert code == 2 and "families" in err
    code, _, _ = run("--root", root, "hfile", "write", "in.csv", "out", "--table", "ns:t")
    assert code == 2


def test_threads_flag_of_cat_and_write(tmp_path: Path) -> None:
    """``--threads`` (HFileReadOptions/HFileOptions.threads): files written on 1 and 2
    threads hold the same cells (FileInfo's create time differs between any two writes),
    read the same on 1 and 2 threads; below 1 is a usage error."""

    from cellstore.hbase import read_hfile

    n = 3000
    rows = [f"r{i:05d}".encode() for i in range(n)]
    src = _puts_file(tmp_path, rows, b"v" * 40)
    outs = []
    for threads in ("1", "2"):
        out = tmp_path / f"t{threads}.hfile"
        code, _, err = run(
            "hfile", "write", str(src), str(out), "--compression", "snappy",
            "--block-size", "4096", "--threads", threads,
        )  # fmt: skip
        assert code == 0, err
        outs.append(read_hfile(str(out)))
    assert outs[0].equals(outs[1])
    assert outs[0].column("row").to_pylist() == rows
    shown = [
        run("--output", "json", "hfile", "cat", str(tmp_path / "t1.hfile"), "--threads", t)
        for t in ("1", "2")
    ]
    assert shown[0][0] == shown[1][0] == 0
    assert json.loads(shown[0][1])["cells"] == json.loads(shown[1][1])["cells"]
    assert len(json.loads(shown[0][1])["cells"]) == n
    code, _, _ = run("hfile", "cat", str(tmp_path / "t1.hfile"), "--threads", "0")
    assert code == 2

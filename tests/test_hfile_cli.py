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

pytestmark = pytest.mark.skipif(not VECTORS.is_dir(), reason="HBase test vectors not present")


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

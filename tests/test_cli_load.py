"""``cellstore load``: mapping files, inline options, --create, bad records, JSON report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cellstore.cli import cli
from cellstore.cli.load import parse_size
from cellstore.errors import InvalidArgumentError
from cellstore.warehouse import connect

EXAMPLES = Path(__file__).parents[1] / "src" / "cellstore" / "examples"


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def run(root: str):
    runner = CliRunner()

    def invoke(*args: str, output: str = "text") -> Result:
        return runner.invoke(cli, ["--root", root, "--output", output, *args],
                             catch_exceptions=False)

    return invoke


def test_example_dataset_with_mapping_file(run, root):
    args = ("load", "example:users", str(EXAMPLES / "users.csv"), "--mapping",
            str(EXAMPLES / "users.toml"), "--create", "--regions", "4", "--load-id", "ex-1")
    first = run(*args)
    assert first.exit_code == 0, first.output
    assert "Created table example:users with 4 regions" in first.output
    assert "Loaded 300 rows" in first.output
    again = run(*args, output="json")
    assert again.exit_code == 0
    doc = json.loads(again.output)
    assert doc["already-applied"] is True and doc["created"] is False
    t = connect(root).table("example:users")
    assert len(t.regions) == 4 and t.version == 2
    assert [f.name for f in t.families] == ["profile", "stats"]
    scan = run("scan", "example:users", "--prefix", "user0003")
    assert "column=stats:age" in scan.output


def test_inline_options_json_report(run, tmp_path):
    csv = tmp_path / "in.tsv"
    csv.write_text("k\tv\tn\na\tx\t1\nb\ty\t2\n")
    assert run("create", "t", "--family", "f").exit_code == 0
    res = run("load", "t", str(csv), "--row-key", "k", "--column", "f:v=v",
              "--column", "f:n=n:long", output="json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["rows"] == 2 and doc["cells"] == 4 and doc["files-per-region"] == {"r000001": 1}
    assert doc["created"] is False and doc["bad-records"] == 0


def test_bad_record_exit_code_and_skip(run, tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("k,n\na,1\nb,two\nc,3\n")
    args = ("load", "t", str(csv), "--row-key", "k", "--column", "f:n=n:int", "--create")
    res = run(*args)
    assert res.exit_code == 8
    assert f"error: {csv}, line 3, field 'n': not an integer (int)" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert connect(str(tmp_path / "wh")).table("t").version == 1  # created, nothing loaded
    res = run(*args, "--skip-bad-records", output="json")
    assert res.exit_code == 0
    doc = json.loads(res.output)
    assert doc["rows"] == 2 and doc["bad-records"] == 1
    assert doc["bad-reasons"] == {"n: not an integer (int)": 1}
    assert Path(doc["bad-records-path"]).exists()


def test_usage_errors(run, tmp_path):
    csv = tmp_path / "in.csv"
    csv.write_text("k,v\na,1\n")
    assert run("load", "t", str(csv)).exit_code == 2
    assert run("load", "t", str(csv), "--mapping", "m.toml", "--row-key", "k").exit_code == 2
    res = run("load", "missing", str(csv), "--row-key", "k", "--column", "f:v=v")
    assert res.exit_code == 3 and "--create" in res.stderr
    res = run("load", "t", str(tmp_path / "nothing-*.csv"), "--row-key", "k", "--column",
              "f:v=v", "--create")
    assert res.exit_code == 2 and "matches no files" in res.stderr


def test_parse_size():
    assert parse_size("512M") == 512 << 20
    assert parse_size("2GiB") == 2 << 30
    assert parse_size("1024") == 1024
    with pytest.raises(InvalidArgumentError):
        parse_size("lots")

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
        return runner.invoke(
            cli, ["--root", root, "--output", output, *args], catch_exceptions=False
        )

    return invoke


def test_example_dataset_with_mapping_file(run, root):
    args = (
        "load",
        "example:users",
        str(EXAMPLES / "users.csv"),
        "--mapping",
        str(EXAMPLES / "users.toml"),
        "--create",
        "--regions",
        "4",
        "--load-id",
        "ex-1",
    )
    first = run(*args)
    assert first.exit_code == 0, first.output
    assert "Created table example:users with 4 regions" in first.output
    assert "Loaded 300 records as 1377 cells" in first.output
    assert "300 records read from 1 input part in" in first.output
    # The first command a user runs should not warn: the export is in no key order.
    assert "warning:" not in first.output and "warning:" not in first.stderr
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
    res = run(
        "load",
        "t",
        str(csv),
        "--row-key",
        "k",
        "--column",
        "f:v=v",
        "--column",
        "f:n=n:long",
        output="json",
    )
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
    # The failed load commits nothing, and the table it created is dropped again.
    assert not connect(str(tmp_path / "wh")).exists("t")
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
    res = run(
        "load",
        "t",
        str(tmp_path / "nothing-*.csv"),
        "--row-key",
        "k",
        "--column",
        "f:v=v",
        "--create",
    )
    assert res.exit_code == 3 and "matches no files" in res.stderr  # issue 29: 2 before


def test_create_with_missing_inputs_creates_nothing(run, root, tmp_path):
    """Inputs are resolved (globs, existence) before --create creates anything."""
    good = tmp_path / "in.csv"
    good.write_text("k,v\na,1\n")
    res = run(
        "load",
        "t",
        str(good),
        str(tmp_path / "absent.csv"),
        "--row-key",
        "k",
        "--column",
        "f:v=v",
        "--create",
    )
    assert res.exit_code == 3 and "does not exist" in res.stderr  # issue 29: 2 before
    res = run(
        "load",
        "t",
        str(tmp_path / "none-*.csv"),
        "--row-key",
        "k",
        "--column",
        "f:v=v",
        "--create",
        "--regions",
        "2",
    )
    assert res.exit_code == 3 and "matches no files" in res.stderr  # issue 29: 2 before
    wh = connect(root)
    assert not wh.exists("t") and wh.list_tables() == []


def test_create_with_unreadable_input_drops_the_table(run, root, tmp_path):
    """An input that exists but cannot be read fails the load after the create: the
    table is dropped again, so a retry with --create starts clean."""
    broken = tmp_path / "broken.csv.gz"
    broken.write_bytes(b"this is not gzip data")
    args = ("load", "t", str(broken), "--row-key", "k", "--column", "f:v=v", "--create")
    res = run(*args)
    assert res.exit_code != 0
    assert not connect(root).exists("t")
    broken.unlink()
    good = tmp_path / "good.csv"
    good.write_text("k,v\na,1\n")
    res = run("load", "t", str(good), "--row-key", "k", "--column", "f:v=v", "--create")
    assert res.exit_code == 0, res.output
    assert "Created table default:t" in res.output and "Loaded 1 record as" in res.output


def test_failed_load_keeps_an_existing_table(run, root, tmp_path):
    """Only a table the command itself created is dropped on failure."""
    assert run("create", "t", "--family", "f").exit_code == 0
    csv = tmp_path / "in.csv"
    csv.write_text("k,n\na,x\n")
    res = run("load", "t", str(csv), "--row-key", "k", "--column", "f:n=n:int", "--create")
    assert res.exit_code == 8
    assert connect(root).table("t").version == 1


def test_parse_size():
    assert parse_size("512M") == 512 << 20
    assert parse_size("2GiB") == 2 << 30
    assert parse_size("1024") == 1024
    with pytest.raises(InvalidArgumentError):
        parse_size("lots")


def test_describe_shows_the_row_key_spec(run, tmp_path):
    """A table created by 'load --create' from a mapping with a row-key spec keeps the
    spec; describe shows its fields and salt (text and JSON)."""
    mapping = tmp_path / "spec.json"
    mapping.write_text(
        json.dumps(
            {
                "row_key": {
                    "fields": [
                        {"name": "user"},
                        {"name": "ts", "type": "int64", "reverse_timestamp": True},
                    ],
                    "salt_buckets": 4,
                },
                "cells": [{"family": "d", "qualifier": "v", "value": "v"}],
            }
        )
    )
    csv = tmp_path / "ev.csv"
    csv.write_text("user,ts,v\nalice,1,x\nbob,2,y\n")
    assert run("load", "ns:tl", str(csv), "--mapping", str(mapping), "--create").exit_code == 0
    text = run("describe", "ns:tl").output
    assert "SALT_BUCKETS => '4'" in text
    section = text[text.index("ROW KEY\n") : text.index("REGIONS\n")].splitlines()
    assert section == [
        "ROW KEY",
        "row key: salt(4) + user:string + ts:int64[reverse_timestamp]",
        "  salt: 1 byte, Phoenix hash of the rest of the key mod 4",
        "  1. user: string, 0x00 terminated",
        "  2. ts: int64, reverse timestamp (Long.MAX_VALUE - v), 8 bytes",
    ]
    doc = json.loads(run("describe", "ns:tl", output="json").output)
    assert doc["row-key"]["salt-buckets"] == 4
    assert [f["name"] for f in doc["row-key"]["fields"]] == ["user", "ts"]
    assert doc["row-key"]["fields"][1]["reverse-timestamp"] is True
    assert run("create", "plain", "--family", "f").exit_code == 0
    assert "ROW KEY" not in run("describe", "plain").output
    assert json.loads(run("describe", "plain", output="json").output)["row-key"] is None


def test_spill_runs_merged_through_the_cli(run, root, tmp_path):
    import pandas as pd

    n = 12_000
    keys = [f"k{(i * 7919) % n:06d}" for i in range(n)]
    for p in range(4):  # a text file is one part: four files, four sorted runs
        pd.DataFrame({"k": keys[p::4], "v": ["v" * 60] * (n // 4)}).to_csv(
            tmp_path / f"in-{p}.csv", index=False
        )
    res = run(
        "load",
        "t",
        str(tmp_path / "in-*.csv"),
        "--row-key",
        "k",
        "--column",
        "f:v=v",
        "--create",
        "--memory-budget",
        "1M",
        "--max-files-per-region",
        "2",
    )
    assert res.exit_code == 0, res.output
    assert "mode spill" in res.output and "sorted runs merged" in res.output
    t = connect(root).table("t")
    assert len(t.files) <= 2 and t.scan().count_rows() == n
    assert t.history(limit=1)[0].summary["files"] == len(t.files)


def test_summary_counts_and_the_missing_timestamp_hint(run, tmp_path):
    """Issue 18: the summary says records vs cells in English, and a load that drops most
    cells as duplicates (no timestamp column: every cell gets the load time) says why."""
    versions = tmp_path / "versions.csv"
    versions.write_text("id,v\na,1\na,2\na,3\nb,4\n")
    res = run("load", "t", str(versions), "--row-key", "id", "--column", "f:v=v", "--create")
    assert res.exit_code == 0, res.output
    assert "Loaded 4 records as 2 cells into table default:t: 1 file, " in res.output
    assert "4 records read from 1 input part in " in res.output
    assert "2 duplicate cells dropped (same row, column and timestamp" in res.output
    assert "hint: most cells were dropped as duplicates" in res.output
    assert "--timestamp COLUMN[:unit]" in res.output
    # With a timestamp column the versions are kept: no duplicates, no hint.
    timed = tmp_path / "timed.csv"
    timed.write_text("id,v,ts\nc,1,1000\nc,2,2000\n")
    res = run("load", "t", str(timed), "--row-key", "id", "--column", "f:v=v", "--timestamp", "ts")
    assert res.exit_code == 0, res.output
    assert "Loaded 2 records as 2 cells" in res.output
    assert "duplicate" not in res.output and "hint:" not in res.output


def test_missing_columns_message_has_no_double_punctuation(run, tmp_path):
    """Issue 29: ``did you mean 'carrier'?.`` became ``did you mean 'carrier'? Its ...``."""
    csv = tmp_path / "flights.csv"
    csv.write_text("id,carrier,origin\n1,UA,SFO\n")
    assert run("create", "t", "--family", "f").exit_code == 0
    one = run("load", "t", str(csv), "--row-key", "id", "--column", "f:c=carier")
    assert one.exit_code == 2
    assert "did you mean 'carrier'? Its columns: 'id', 'carrier', 'origin'" in one.stderr
    two = run(
        "load", "t", str(csv), "--row-key", "id", "--column", "f:c=carier", "--column", "f:z=zzz"
    )
    message = two.stderr.strip()
    assert "did you mean 'carrier'? No 'zzz'" in message, message
    assert "'zzz' (mapping cells[1] (f:z) value). Its columns:" in message, message
    for doubled in ("?.", "?;", ".."):
        assert doubled not in message


def test_a_bad_value_is_shown_with_its_file_line_and_field(run, tmp_path):
    """Issue 29: the message names the value too, shortened to 40 characters."""
    csv = tmp_path / "flights.csv"
    csv.write_text("id,arr_delay\nf1,12\nf2,517.0\n")
    assert run("create", "t", "--family", "d").exit_code == 0
    args = ("--row-key", "id", "--column", "d:arr_delay=arr_delay:long")
    res = run("load", "t", str(csv), *args)
    assert res.exit_code == 8
    assert res.stderr.startswith(
        f"error: {csv}, line 3, field 'arr_delay': not an integer (long), got '517.0' ("
    )
    long = tmp_path / "long.csv"
    long.write_text("id,arr_delay\nf1," + "9" * 60 + "\n")
    res = run("load", "t", str(long), *args)
    assert res.exit_code == 8
    assert f"field 'arr_delay': out of range for long, got '{'9' * 39}…' (" in res.stderr
    doc = json.loads(run("load", "t", str(csv), *args, output="json").stderr)
    assert doc["error"]["kind"] == "bad-record" and "got '517.0'" in doc["error"]["message"]


def test_every_missing_file_a_user_names_is_one_kind_exit_3(run, root, tmp_path):
    """Issue 29: a missing mapping file exited 1 (storage error), a missing input 2."""
    good = tmp_path / "in.csv"
    good.write_text("k,v\na,1\n")
    mapping = tmp_path / "m.json"
    mapping.write_text(
        json.dumps({"row_key": "k", "cells": [{"family": "f", "qualifier": "v", "value": "v"}]})
    )
    assert run("create", "t", "--family", "f").exit_code == 0
    cases = {
        "mapping file": ("load", "t", str(good), "--mapping", str(tmp_path / "nope.toml")),
        "input": ("load", "t", str(tmp_path / "nope.csv"), "--mapping", str(mapping)),
        "glob": ("load", "t", str(tmp_path / "nope-*.csv"), "--mapping", str(mapping)),
        "cells file": ("load-cells", "t", str(tmp_path / "nope-cells.csv")),
        "HFile (info)": ("hfile", "info", str(tmp_path / "nope.hfile")),
        "HFile (cat)": ("hfile", "cat", str(tmp_path / "nope.hfile")),
        "split-key file": (
            "load",
            str(good),
            "--mapping",
            str(mapping),
            "--hfile-output",
            str(tmp_path / "hf"),
            "--split-keys",
            str(tmp_path / "nope-splits.txt"),
        ),
    }
    for what, args in cases.items():
        res = run(*args)
        assert res.exit_code == 3, (what, res.exit_code, res.output, res.stderr)
        assert "nope" in res.stderr and "Traceback" not in res.stderr, (what, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, (what, res.stderr)
        doc = json.loads(run(*args, output="json").stderr)
        assert doc["error"]["kind"] == "not-found", what

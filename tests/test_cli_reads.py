"""The read commands (scan, get, count, quickstart) through click's CliRunner on tmp roots."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from cellstore import Family, connect
from cellstore.cli import cli
from cellstore.cli import reads as read_commands
from cellstore.cli.load_cells import read_cells_file
from cellstore.reader import RESULT_SCHEMA

TOOK = re.compile(r"^Took \d+\.\d{4} seconds$")
HEADER = "ROW                          COLUMN+CELL"
GET_HEADER = "COLUMN                       CELL"


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def run(root: str):
    """Invoke ``cellstore --root <tmp> [--output json] ARGS``."""
    runner = CliRunner()

    def invoke(*args: str, output: str = "text") -> Result:
        return runner.invoke(
            cli, ["--root", root, "--output", output, *args], catch_exceptions=False
        )

    return invoke


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.output, result.stderr)
    return result


def lines_of(result: Result) -> list[str]:
    """Output lines with the trailing ``Took ... seconds`` line checked and dropped."""
    lines = ok(result).stdout.splitlines()
    assert TOOK.match(lines[-1]), lines[-1]
    return lines[:-1]


def row(key: str, cell: str) -> str:
    return f" {key:<27} {cell}"


# Rows: a (versions), b (a Delete hides the newest put), c\x00\xff (binary row and value),
# n (a DeleteColumn hides cf:q), t1 (expired by TTL under the real clock), z (a
# DeleteFamily hides everything). Visible now: a, b, c\x00\xff, n.
CELLS = [
    (b"a", "cf", b"q", 1, 4, b"a-v1"),
    (b"a", "cf", b"q", 2, 4, b"a-v2"),
    (b"a", "cf", b"q", 3, 4, b"a-v3"),
    (b"a", "cf", b"q", 4, 4, b"a-v4"),
    (b"a", "cf", b"q2", 5, 4, b"a-q2"),
    (b"a", "meta", b"x", 5, 4, b"x"),
    (b"b", "cf", b"q", 10, 4, b"b10"),
    (b"b", "cf", b"q", 11, 4, b"b11"),
    (b"b", "cf", b"q", 11, 8, b""),
    (b"c\x00\xff", "cf", b"q", 7, 4, b"\x00\x01bin"),
    (b"n", "cf", b"other", 20, 4, b"n-other"),
    (b"n", "cf", b"q", 20, 4, b"n-q"),
    (b"n", "cf", b"q", 21, 12, b""),
    (b"t1", "short", b"s", 1_000, 4, b"short-lived"),
    (b"z", "meta", b"y", 30, 4, b"z-y"),
    (b"z", "meta", b"", 40, 14, b""),
]
FAMILIES = [
    Family(name="cf", max_versions=3),
    Family(name="meta"),
    Family(name="short", ttl=1),
]


def _cells_table(cells: list[tuple]) -> pa.Table:
    names = ["row", "family", "qualifier", "ts", "type", "value"]
    return pa.table({n: [c[i] for c in cells] for i, n in enumerate(names)})


@pytest.fixture
def table(root: str) -> str:
    """Table ``ns:t`` (regions split at ``m``), loaded in two commits."""
    t = connect(root).create_table("ns:t", families=FAMILIES, splits=[b"m"])
    t.load_cells(_cells_table(CELLS[:9]))
    t.load_cells(_cells_table(CELLS[9:]))
    return "ns:t"


# ------------------------------------------------------------------------------------ help
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "scan",
            [
                "--start-row",
                "--prefix",
                "--column",
                "--raw",
                "--output-file",
                "--format",
                "--key",
                "--raw-values",
            ],
        ),
        ("get", ["TABLE [ROW]", "--column", "--timestamp", "--versions", "--key", "--raw-values"]),
        ("count", ["--start-row", "--prefix", "--family", "--time-range"]),
        ("quickstart", ["--table", "example:webtable"]),
    ],
)
def test_help_of_every_read_command(command, expected):
    result = ok(CliRunner().invoke(cli, [command, "--help"]))
    assert result.output.startswith(f"Usage: cli {command} ")
    for text in expected:
        assert text in result.output


# ------------------------------------------------------------------------------------ scan
def test_scan_text_looks_like_the_hbase_shell(run, table):
    assert lines_of(run("scan", table)) == [
        HEADER,
        row("a", "column=cf:q, timestamp=4, value=a-v4"),
        row("a", "column=cf:q2, timestamp=5, value=a-q2"),
        row("a", "column=meta:x, timestamp=5, value=x"),
        row("b", "column=cf:q, timestamp=10, value=b10"),
        row("c\\x00\\xFF", "column=cf:q, timestamp=7, value=\\x00\\x01bin"),
        row("n", "column=cf:other, timestamp=20, value=n-other"),
        "4 row(s)",
    ]


def test_scan_json_is_one_document_in_printable_form(run, table):
    doc = json.loads(ok(run("scan", table, "--prefix", "c", output="json")).stdout)
    assert doc == {
        "table": "ns:t",
        "rows": 1,
        "cells": [
            {
                "row": "c\\x00\\xFF",
                "column": "cf:q",
                "timestamp": 7,
                "type": "Put",
                "value": "\\x00\\x01bin",
            }
        ],
    }


def test_scan_json_has_no_took_line_and_counts_rows(run, table):
    out = ok(run("scan", table, output="json")).stdout
    assert "Took" not in out
    doc = json.loads(out)
    assert doc["rows"] == 4
    assert len(doc["cells"]) == 6


def _rows(result: Result) -> list[str]:
    return [line.split()[0] for line in lines_of(result)[1:-1]]


def test_scan_row_range_prefix_and_printable_keys(run, table):
    assert _rows(run("scan", table, "--start-row", "b", "--stop-row", "n")) == [
        "b",
        "c\\x00\\xFF",
    ]
    assert _rows(run("scan", table, "--start-row", "c")) == ["c\\x00\\xFF", "n"]
    assert _rows(run("scan", table, "--prefix", "c\\x00")) == ["c\\x00\\xFF"]
    assert _rows(run("scan", table, "--prefix", "c\\x01")) == []


def test_scan_columns_and_families(run, table):
    out = lines_of(run("scan", table, "--column", "cf:q2", "--column", "meta"))
    assert out == [
        HEADER,
        row("a", "column=cf:q2, timestamp=5, value=a-q2"),
        row("a", "column=meta:x, timestamp=5, value=x"),
        "1 row(s)",
    ]
    assert _rows(run("scan", table, "--family", "meta")) == ["a"]


def test_scan_versions_are_capped_by_the_family(run, table):
    out = lines_of(run("scan", table, "--prefix", "a", "--column", "cf:q", "--versions", "10"))
    assert out[1:] == [
        row("a", "column=cf:q, timestamp=4, value=a-v4"),
        row("a", "column=cf:q, timestamp=3, value=a-v3"),
        row("a", "column=cf:q, timestamp=2, value=a-v2"),
        "1 row(s)",
    ]


def test_scan_time_range_and_timestamp(run, table):
    out = lines_of(run("scan", table, "--column", "cf:q", "--time-range", "2", "4"))
    assert out[1:] == [row("a", "column=cf:q, timestamp=3, value=a-v3"), "1 row(s)"]
    out = lines_of(run("scan", table, "--timestamp", "10"))
    assert out[1:] == [row("b", "column=cf:q, timestamp=10, value=b10"), "1 row(s)"]


def test_raw_scan_shows_delete_markers_like_the_shell(run, table):
    out = lines_of(run("scan", table, "--raw", "--versions", "10", "--start-row", "b"))
    assert row("b", "column=cf:q, timestamp=11, type=Delete") in out
    assert row("b", "column=cf:q, timestamp=11, value=b11") in out
    assert row("n", "column=cf:q, timestamp=21, type=DeleteColumn") in out
    assert row("n", "column=cf:q, timestamp=20, value=n-q") in out
    assert row("z", "column=meta:, timestamp=40, type=DeleteFamily") in out
    # the marker sorts before the put it masks at the same timestamp
    assert out.index(row("b", "column=cf:q, timestamp=11, type=Delete")) < out.index(
        row("b", "column=cf:q, timestamp=11, value=b11")
    )
    doc = json.loads(ok(run("scan", table, "--raw", "--prefix", "z", output="json")).stdout)
    assert {
        "row": "z",
        "column": "meta:",
        "timestamp": 40,
        "type": "DeleteFamily",
        "value": "",
    } in doc["cells"]


def test_scan_reversed_and_limit(run, table):
    assert _rows(run("scan", table, "--reversed")) == ["n", "c\\x00\\xFF", "b", "a", "a", "a"]
    assert _rows(run("scan", table, "--limit", "2")) == ["a", "a", "a", "b"]
    assert _rows(run("scan", table, "--reversed", "--limit", "1")) == ["n"]
    out = lines_of(run("scan", table, "--reversed", "--limit", "2"))
    assert out[-1] == "2 row(s)"


def test_now_ms_makes_ttl_reads_reproducible(run, table):
    assert _rows(run("scan", table, "--family", "short")) == []
    out = lines_of(run("scan", table, "--family", "short", "--now-ms", "1500"))
    assert out[1:] == [row("t1", "column=short:s, timestamp=1000, value=short-lived"), "1 row(s)"]


def test_scan_bad_arguments_exit_2_with_one_line(run, table):
    cases = [
        (["--timestamp", "5", "--time-range", "1", "9"], "give either timestamp or time_range"),
        (["--prefix", "a", "--start-row", "a"], "row_prefix cannot be combined"),
        (["--raw", "--column", "cf:q"], "raw scan"),
        (["--column", "nope:q"], "unknown family 'nope'"),
        (["--time-range", "9", "1"], "time range"),
        (["--versions", "0"], "Invalid value for '--versions'"),
        (["--format", "csv"], "'--format': needs --output-file"),
        (["--output-file", "cells.txt"], "cannot tell the format of 'cells.txt'"),
    ]
    for args, message in cases:
        result = run("scan", table, *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
        assert result.stdout == ""


def test_scan_of_a_missing_table_exits_3(run, table):
    result = run("scan", "ns:nope")
    assert result.exit_code == 3
    assert result.stderr.startswith("error: table ns:nope does not exist")


# ----------------------------------------------------------------------------- output file
def test_scan_to_csv_reads_back_and_loads_back(run, table, root, tmp_path):
    path = tmp_path / "out" / "cells.csv"
    path.parent.mkdir()
    result = lines_of(run("scan", table, "--raw", "--versions", "10", "--output-file", str(path)))
    assert result == [
        f"Wrote 16 cells (6 row(s)) of table ns:t to {path} as csv, {path.stat().st_size} bytes"
    ]
    with path.open(newline="") as f:
        records = list(csv.DictReader(f))
    assert list(records[0]) == ["row", "family", "qualifier", "ts", "type", "value"]
    assert records[0] == {
        "row": "a",
        "family": "cf",
        "qualifier": "q",
        "ts": "4",
        "type": "Put",
        "value": "a-v4",
    }
    assert {
        "row": "c\\x00\\xFF",
        "family": "cf",
        "qualifier": "q",
        "ts": "7",
        "type": "Put",
        "value": "\\x00\\x01bin",
    } in records
    assert {
        "row": "z",
        "family": "meta",
        "qualifier": "",
        "ts": "40",
        "type": "DeleteFamily",
        "value": "",
    } in records
    assert list(path.parent.iterdir()) == [path]  # no partial file left behind

    # The export is a load-cells input: a copy scans the same, markers included.
    wh = connect(root)
    copy = wh.create_table("ns:copy", families=FAMILIES, splits=[b"m"])
    copy.load_cells(read_cells_file(str(path), fmt="csv"))
    original = wh.table(table)
    for kw in ({"raw": True, "max_versions": 10, "now_ms": 1500}, {"max_versions": 3}):
        assert copy.scan(**kw).to_arrow().equals(original.scan(**kw).to_arrow())


def test_scan_to_json_lines(run, table, tmp_path):
    path = tmp_path / "cells.json"
    doc = json.loads(
        ok(run("scan", table, "--prefix", "c", "--output-file", str(path), output="json")).stdout
    )
    assert doc == {
        "table": "ns:t",
        "file": str(path),
        "format": "json",
        "rows": 1,
        "cells": 1,
        "bytes": path.stat().st_size,
    }
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records == [
        {
            "row": "c\\x00\\xFF",
            "family": "cf",
            "qualifier": "q",
            "ts": 7,
            "type": "Put",
            "value": "\\x00\\x01bin",
        }
    ]
    table_back = read_cells_file(str(path), fmt="jsonl")
    assert table_back.column("row").to_pylist() == [b"c\x00\xff"]
    assert table_back.column("value").to_pylist() == [b"\x00\x01bin"]


def test_scan_to_parquet_keeps_the_arrow_schema(run, table, root, tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "cells.data"
    ok(run("scan", table, "--versions", "3", "--output-file", str(path), "--format", "parquet"))
    back = pq.read_table(path)
    assert back.schema.equals(RESULT_SCHEMA)
    assert back.equals(connect(root).table(table).scan(max_versions=3).to_arrow())
    assert back.column("row").to_pylist()[:3] == [b"a", b"a", b"a"]
    assert b"c\x00\xff" in back.column("row").to_pylist()


def test_empty_scan_still_writes_a_file(run, table, tmp_path):
    path = tmp_path / "none.parquet"
    assert lines_of(run("scan", table, "--prefix", "q", "--output-file", str(path)))[0].startswith(
        "Wrote 0 cells (0 row(s))"
    )
    import pyarrow.parquet as pq

    assert pq.read_table(path).num_rows == 0


def test_progress_bar_only_on_a_terminal_and_only_for_text(run, table, tmp_path, monkeypatch):
    path = str(tmp_path / "cells.csv")
    assert ok(run("scan", table, "--output-file", path)).stderr == ""  # not a TTY
    monkeypatch.setattr(read_commands, "_stderr_is_tty", lambda: True)
    stderr = ok(run("scan", table, "--output-file", path)).stderr
    assert "scan ns:t: 100%" in stderr
    assert "2/2 [" in stderr  # one task per region
    assert ok(run("scan", table, "--output-file", path, output="json")).stderr == ""


# ------------------------------------------------------------------------------------- get
def test_get_text_looks_like_the_hbase_shell(run, table):
    assert lines_of(run("get", table, "a")) == [
        GET_HEADER,
        row("cf:q", "timestamp=4, value=a-v4"),
        row("cf:q2", "timestamp=5, value=a-q2"),
        row("meta:x", "timestamp=5, value=x"),
        "3 row(s)",
    ]


def test_get_versions_timestamp_and_columns(run, table):
    out = lines_of(run("get", table, "a", "--column", "cf:q", "--versions", "3"))
    assert out[1:] == [
        row("cf:q", "timestamp=4, value=a-v4"),
        row("cf:q", "timestamp=3, value=a-v3"),
        row("cf:q", "timestamp=2, value=a-v2"),
        "3 row(s)",
    ]
    assert lines_of(run("get", table, "a", "--timestamp", "2"))[1:] == [
        row("cf:q", "timestamp=2, value=a-v2"),
        "1 row(s)",
    ]
    assert lines_of(run("get", table, "a", "--time-range", "1", "3", "--versions", "3"))[1:] == [
        row("cf:q", "timestamp=2, value=a-v2"),
        row("cf:q", "timestamp=1, value=a-v1"),
        "2 row(s)",
    ]
    assert lines_of(run("get", table, "a", "--family", "meta"))[1:] == [
        row("meta:x", "timestamp=5, value=x"),
        "1 row(s)",
    ]


def test_get_deleted_absent_and_binary_rows(run, table):
    assert lines_of(run("get", table, "z")) == [GET_HEADER, "0 row(s)"]
    assert lines_of(run("get", table, "nope")) == [GET_HEADER, "0 row(s)"]
    assert lines_of(run("get", table, "b", "--versions", "3"))[1:] == [
        row("cf:q", "timestamp=10, value=b10"),
        "1 row(s)",
    ]
    doc = json.loads(ok(run("get", table, "c\\x00\\xFF", output="json")).stdout)
    assert doc == {
        "table": "ns:t",
        "row": "c\\x00\\xFF",
        "cells": [
            {
                "row": "c\\x00\\xFF",
                "column": "cf:q",
                "timestamp": 7,
                "type": "Put",
                "value": "\\x00\\x01bin",
            }
        ],
    }
    assert json.loads(ok(run("get", table, "nope", output="json")).stdout)["cells"] == []


# ----------------------------------------------------------------------------------- count
def test_count_text_json_and_options(run, table):
    assert lines_of(run("count", table)) == ["4 row(s)"]
    assert json.loads(ok(run("count", table, output="json")).stdout) == {"table": "ns:t", "rows": 4}
    assert lines_of(run("count", table, "--start-row", "b", "--stop-row", "n")) == ["2 row(s)"]
    assert lines_of(run("count", table, "--prefix", "c")) == ["1 row(s)"]
    assert lines_of(run("count", table, "--family", "meta")) == ["1 row(s)"]
    assert lines_of(run("count", table, "--column", "cf:q")) == ["3 row(s)"]
    assert lines_of(run("count", table, "--time-range", "0", "6")) == ["1 row(s)"]
    assert lines_of(run("count", table, "--now-ms", "1500")) == ["5 row(s)"]


# ------------------------------------------------------------------------------ quickstart
def test_quickstart_loads_once_and_is_idempotent(run, root):
    first = ok(run("quickstart")).stdout
    assert first.startswith("Created table example:webtable in ")
    assert "{NAME => 'contents', VERSIONS => '3'" in first
    assert re.search(r"^Loaded \d+ cells into table example:webtable: ", first, re.M)
    assert "load id quickstart-webtable-v1" in first
    assert "scan 'example:webtable', {LIMIT => 5}\n" + HEADER + "\n com.cnn.www " in first
    assert "\n5 row(s)\n" in first
    assert "Next, try:\n" in first
    assert f"  cellstore --root {root} scan example:webtable --prefix com.cnn\n" in first
    assert f"  cellstore --root {root} get example:webtable com.cnn.www --versions 3\n" in first
    assert f"  cellstore --root {root} describe example:webtable\n" in first

    table = connect(root).table("example:webtable")
    rows = table.scan().count_rows()
    assert rows > 5
    assert f"count 'example:webtable'\n{rows} row(s)\n" in first
    assert [r.start for r in table.regions] == [b"", b"com.m", b"org"]
    assert {f.name: f.max_versions for f in table.families}["contents"] == 3
    version = table.version

    second = ok(run("quickstart")).stdout
    assert second.startswith("Table example:webtable already exists in ")
    assert (
        "Load quickstart-webtable-v1 was already applied to table example:webtable; "
        "nothing written" in second
    )
    assert f"count 'example:webtable'\n{rows} row(s)\n" in second
    again = connect(root).table("example:webtable")
    assert again.version == version
    assert again.scan().count_rows() == rows


def test_quickstart_json_is_one_document(run, root):
    doc = json.loads(ok(run("quickstart", "--table", "demo:web", output="json")).stdout)
    table = connect(root).table("demo:web")
    assert doc["table"] == "demo:web"
    assert doc["root"] == root
    assert doc["created"] is True
    assert doc["version"] == table.version == 2
    assert doc["load"]["load-id"] == "quickstart-webtable-v1"
    assert doc["load"]["already-applied"] is False
    assert doc["load"]["cells"] == sum(f.cells for f in table.files)
    assert doc["rows"] == table.scan().count_rows()
    sample = table.scan(limit=5).to_arrow()
    assert doc["scan"]["limit"] == 5
    assert doc["scan"]["rows"] == 5
    assert [c["row"] for c in doc["scan"]["cells"]] == [
        r.decode() for r in sample["row"].to_pylist()
    ]
    assert doc["scan"]["cells"][0]["row"] == "com.cnn.www"
    assert set(doc["scan"]["cells"][0]) == {"row", "column", "timestamp", "type", "value"}
    assert doc["next"][0].endswith("scan demo:web --prefix com.cnn")

    again = json.loads(ok(run("quickstart", "--table", "demo:web", output="json")).stdout)
    assert (again["created"], again["load"]["already-applied"]) == (False, True)
    assert again["rows"] == doc["rows"]
    assert again["version"] == doc["version"]


def test_installed_quickstart_uses_the_embedded_default_root(tmp_path):
    script = Path(sys.executable).parent / "cellstore"
    assert script.exists(), f"console script not installed next to {sys.executable}"
    env = {k: v for k, v in os.environ.items() if k != "CELLSTORE_ROOT"}
    out = subprocess.run(
        [str(script), "quickstart"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "cellstore-data").is_dir()
    assert "Created table example:webtable in ./cellstore-data" in out.stdout
    assert "  cellstore scan example:webtable --prefix com.cnn\n" in out.stdout


# --------------------------------------------------------------------- filters and shapes
def test_scan_get_count_take_hbase_filter_language(run, table):
    got = lines_of(run("scan", table, "--filter", "ValueFilter(=,'binaryprefix:a-')"))
    assert got == [
        HEADER,
        row("a", "column=cf:q, timestamp=4, value=a-v4"),
        row("a", "column=cf:q2, timestamp=5, value=a-q2"),
        "1 row(s)",
    ]
    scvf = "SingleColumnValueFilter('cf','q',=,'binary:n-q',true,true)"
    # n's cf:q is hidden by a DeleteColumn, so no row has a visible match.
    assert lines_of(run("count", table, "--filter", scvf))[-1] == "0 row(s)"
    got = lines_of(run("get", table, "a", "--filter", "ColumnPrefixFilter('q2')"))
    assert got[1:] == [row("cf:q2", "timestamp=5, value=a-q2"), "1 row(s)"]
    bad = run("scan", table, "--filter", "PrefixFilter('a')")
    assert bad.exit_code == 2
    assert bad.stderr.startswith("error: filter: PrefixFilter is not supported")


def test_scan_wide_shape_to_files(run, table, tmp_path):
    out = tmp_path / "wide.parquet"
    ok(run("scan", table, "--shape", "wide", "--family", "cf", "--output-file", str(out)))
    import pyarrow.parquet as pq

    wide = pq.read_table(out)
    assert wide.column_names == ["row", "cf:other", "cf:q", "cf:q2"]
    assert wide.column("cf:q").to_pylist() == [b"a-v4", b"b10", b"\x00\x01bin", None]
    csv_out = tmp_path / "wide.csv"
    ok(run("scan", table, "--shape", "wide", "--column", "cf:q", "--output-file", str(csv_out)))
    with csv_out.open() as f:
        assert list(csv.reader(f))[:3] == [["row", "cf:q"], ["a", "a-v4"], ["b", "b10"]]
    # Issue 29: without --output-file, a wide scan prints a table (it was refused).
    shown = lines_of(run("scan", table, "--shape", "wide", "--column", "cf:q"))
    assert shown[0].split() == ["row", "cf:q"] and shown[1].split() == ["a", "a-v4"]
    assert shown[-1] == "3 row(s)" and shown[3].split()[1] == "\\x00\\x01bin"
    lines = ok(run("scan", table, "--shape", "wide", "--family", "cf", output="json")).stdout
    records = [json.loads(line) for line in lines.splitlines()]
    assert [r.get("cf:q") for r in records] == ["a-v4", "b10", "\\x00\\x01bin", None]
    assert "cf:q" not in records[-1] and set(records[-1]) > {"row"}  # sparse: nulls left out
    bad = run("scan", table, "--column-type", "cf:q=long", "--output-file", str(csv_out))
    assert bad.exit_code == 2 and "--shape wide" in bad.stderr

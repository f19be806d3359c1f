"""The ``cellstore`` command line, through click's CliRunner against a tmp_path root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from cellstore.cli import cli
from cellstore.cli import tables as table_commands
from cellstore.cli.output import grid, human_ttl
from cellstore.cli.params import STORAGE_OPTION, SpecError, parse_family_spec
from cellstore.core.family import KeepDeletedCells

COMMANDS = sorted(cli.commands)


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def run(root: str):
    """Invoke ``cellstore --root <tmp> ARGS`` and return the click Result."""
    runner = CliRunner()

    def invoke(*args: str, output: str = "text", input: str | None = None) -> Result:
        return runner.invoke(
            cli, ["--root", root, "--output", output, *args], input=input, catch_exceptions=False
        )

    return invoke


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.output, result.stderr)
    return result


@pytest.fixture
def events(run) -> str:
    """A table ns:events with two families and split keys ``m`` and ``\\x80\\x00``."""
    ok(
        run(
            "create",
            "ns:events",
            "--family",
            "d:VERSIONS=5,TTL=86400,BLOOMFILTER=NONE,compression=snappy",
            "--family",
            "m",
            "--split",
            "m",
            "--split",
            "\\x80\\x00",
            "--property",
            "owner=ops",
        )
    )
    return "ns:events"


def _connect(root: str):
    from cellstore.warehouse import connect

    return connect(root)


# ----------------------------------------------------------------------------- help, imports
@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_works_for_every_command(command):
    args = ["--help"] if command is None else [command, "--help"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")
    if command is None:
        for name in COMMANDS:
            assert name in result.output


def test_commands_are_the_documented_set():
    assert set(COMMANDS) >= {
        "create",
        "describe",
        "list",
        "drop",
        "alter",
        "history",
        "load-cells",
    }


def test_importing_the_cli_loads_no_heavy_modules():
    code = (
        "import cellstore.cli, sys; "
        "print([m for m in ('pyarrow', 'dask', 'pandas', 'fsspec', 'cellstore.warehouse') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_in_a_subprocess_loads_no_heavy_modules():
    code = (
        "import sys\n"
        "from cellstore.cli import main\n"
        "try:\n"
        "    main(['describe', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print([m for m in ('pyarrow', 'dask', 'pandas', 'fsspec') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_package_still_exports_its_public_names():
    import cellstore

    assert {"CellType", "CellstoreError", "Family", "KeepDeletedCells", "connect"} <= set(
        dir(cellstore)
    )
    assert int(cellstore.CellType.PUT) == 4
    assert callable(cellstore.connect)
    with pytest.raises(AttributeError):
        _ = cellstore.no_such_name


# --------------------------------------------------------------------------- create/describe
def test_create_prints_the_new_table(run):
    result = ok(run("create", "t", "--family", "cf", "--split", "g", "--split", "p"))
    assert result.output == "Created table t (1 family, 3 regions)\n"


def test_describe_text_looks_like_the_hbase_shell(run, events):
    out = ok(run("describe", events)).output
    lines = out.splitlines()
    assert lines[0] == "Table ns:events is ENABLED"
    assert lines[1].startswith("ns:events, {TABLE_ATTRIBUTES => {VERSION => '1', UUID => '")
    assert "METADATA => {'owner' => 'ops'}" in lines[1]
    assert lines[2] == "COLUMN FAMILIES DESCRIPTION"
    assert lines[3] == (
        "{NAME => 'd', VERSIONS => '5', MIN_VERSIONS => '0', "
        "TTL => '86400 SECONDS (1 DAY)', KEEP_DELETED_CELLS => 'FALSE', "
        "COMPRESSION => 'SNAPPY', BLOOMFILTER => 'NONE', BLOCKSIZE => '65536'}"
    )
    assert lines[4] == (
        "{NAME => 'm', VERSIONS => '3', MIN_VERSIONS => '0', TTL => 'FOREVER', "
        "KEEP_DELETED_CELLS => 'FALSE', COMPRESSION => 'ZSTD', BLOOMFILTER => 'ROW', "
        "BLOCKSIZE => '65536'}"
    )
    assert lines[5] == "2 row(s)"
    assert lines[6] == "REGIONS"
    assert lines[7].split() == ["ID", "START", "KEY", "END", "KEY", "FILES", "CELLS", "BYTES"]
    regions = [line.split() for line in lines[8:11]]
    assert [r[1:] for r in regions] == [
        ["m", "0", "0", "0"],
        ["m", "\\x80\\x00", "0", "0", "0"],
        ["\\x80\\x00", "0", "0", "0"],
    ]
    assert lines[11] == "3 row(s)"
    assert "Total: 0 files, 0 cells, 0 bytes" in out
    assert "Last commit: version 1 create at " in out


def test_describe_json_is_the_table_description(run, events):
    doc = json.loads(ok(run("describe", events, output="json")).output)
    assert doc["name"] == "ns:events"
    assert doc["version"] == 1
    assert [f["name"] for f in doc["families"]] == ["d", "m"]
    assert doc["families"][0]["max-versions"] == 5
    assert doc["families"][0]["ttl"] == 86400
    assert doc["families"][0]["bloom-filter"] == "none"
    assert [(r["start"], r["end"]) for r in doc["regions"]] == [
        ("", "m"),
        ("m", "\\x80\\x00"),
        ("\\x80\\x00", ""),
    ]
    assert doc["properties"] == {"owner": "ops"}


def test_create_json_and_salt_buckets(run):
    doc = json.loads(
        ok(run("create", "s", "--family", "cf", "--salt-buckets", "4", output="json")).output
    )
    assert doc["salt-buckets"] == 4
    assert len(doc["regions"]) == 4
    assert "SALT_BUCKETS => '4'" in ok(run("describe", "s")).output


def test_family_spec_keys_are_case_insensitive_and_accept_hbase_values(run, root):
    ok(
        run(
            "create",
            "t",
            "--family",
            "cf:versions=4,Min_Versions=1,ttl=FOREVER,keep_deleted_cells=ttl,"
            "COMPRESSION=GZ,BlockSize=131072,bloomfilter=row",
        )
    )
    (fam,) = _connect(root).table("t").families
    assert (fam.max_versions, fam.min_versions, fam.ttl) == (4, 1, None)
    assert fam.keep_deleted_cells is KeepDeletedCells.TTL
    assert (fam.compression, fam.block_size, fam.bloom_filter) == ("gzip", 131072, True)


def test_describe_an_older_version(run, events):
    ok(run("alter", events, "--set", "d:VERSIONS=1"))
    assert "VERSIONS => '1'" in ok(run("describe", events)).output
    old = ok(run("describe", events, "--version", "1")).output
    assert "VERSION => '1'" in old
    assert "{NAME => 'd', VERSIONS => '5'" in old


# ------------------------------------------------------------------------------ list, history
def test_list_text_and_json(run, root):
    missing = run("list")  # issue 29: a root without a warehouse is an error (was "0 row(s)")
    assert missing.exit_code == 3 and missing.stdout == ""
    assert missing.stderr.startswith(f"error: no warehouse at {root}: ")
    ok(run("create", "ns:b", "--family", "cf"))
    ok(run("create", "a", "--family", "cf"))
    assert ok(run("list")).output == "TABLE\na\nns:b\n2 row(s)\n"
    assert json.loads(ok(run("list", output="json")).output) == {"tables": ["a", "ns:b"]}
    ok(run("drop", "a", "--yes"))
    ok(run("drop", "ns:b", "--yes"))
    assert ok(run("list")).output == "TABLE\n0 row(s)\n"  # a warehouse with no tables


def test_global_options_also_work_after_the_subcommand(root, events):
    runner = CliRunner()
    before = ok(runner.invoke(cli, ["--root", root, "--output", "json", "describe", events]))
    after = ok(runner.invoke(cli, ["describe", events, "--root", root, "--output", "json"]))
    eq = ok(runner.invoke(cli, ["describe", "--output=json", events, f"--root={root}"]))
    assert json.loads(after.output) == json.loads(before.output) == json.loads(eq.output)
    listed = ok(runner.invoke(cli, ["list", "--root", root, "--output", "json"]))
    assert json.loads(listed.output) == {"tables": ["ns:events"]}
    # After "--" nothing moves: the token is an argument (a table name here).
    res = runner.invoke(cli, ["--root", root, "describe", "--", "--output"])
    assert res.exit_code == 2 and "table name '--output'" in res.stderr


def test_unknown_table_suggests_the_closest_name(run, events):
    res = run("describe", "ns:evnets")
    assert res.exit_code == 3
    assert "table ns:evnets does not exist" in res.stderr
    assert "(did you mean 'ns:events'?)" in res.stderr
    res = run("scan", "zzzz")
    assert res.exit_code == 3 and "did you mean" not in res.stderr


def test_describe_str_is_the_cli_text(run, root, events):
    assert str(_connect(root).table(events).describe()) + "\n" == ok(run("describe", events)).output


def test_root_comes_from_the_environment(root):
    runner = CliRunner()
    ok(runner.invoke(cli, ["create", "t", "--family", "cf"], env={"CELLSTORE_ROOT": root}))
    assert _connect(root).list_tables() == ["t"]


def test_storage_options_reach_the_filesystem(memory_root):
    runner = CliRunner()
    args = ["--root", memory_root, "--storage-option", "skip_instance_cache=true"]
    ok(runner.invoke(cli, [*args, "create", "t", "--family", "cf"]))
    assert ok(runner.invoke(cli, [*args, "list"])).output == "TABLE\nt\n1 row(s)\n"


def test_history_text_json_and_limit(run, events):
    ok(run("alter", events, "--add-family", "x"))
    text = ok(run("history", events)).output.splitlines()
    assert text[0].split() == ["VERSION", "TIMESTAMP", "OPERATION", "SUMMARY"]
    assert [line.split()[0] for line in text[1:3]] == ["2", "1"]
    assert text[1].split()[2] == "alter"
    assert 'added=["x"]' in text[1]
    assert "families=2, regions=3" in text[2]
    assert text[3] == "2 row(s)"
    doc = json.loads(ok(run("history", events, "--limit", "1", output="json")).output)
    assert doc["table"] == "ns:events"
    assert [e["version"] for e in doc["history"]] == [2]
    assert doc["history"][0]["operation"] == "alter"
    assert doc["history"][0]["summary"]["added"] == ["x"]


# ---------------------------------------------------------------------------------- alter
def test_alter_adds_drops_sets_and_changes_properties(run, events, root):
    result = ok(
        run(
            "alter",
            events,
            "--add-family",
            "x:VERSIONS=2",
            "--drop-family",
            "m",
            "--set",
            "d:TTL=FOREVER",
            "--set",
            "d:MIN_VERSIONS=1",
            "--property",
            "tier=gold",
            "--remove-property",
            "owner",
        )
    )
    assert result.output.startswith("Altered table ns:events: version 2 (")
    table = _connect(root).table(events)
    fams = {f.name: f for f in table.families}
    assert sorted(fams) == ["d", "x"]
    assert fams["d"].ttl is None and fams["d"].min_versions == 1 and fams["d"].max_versions == 5
    assert fams["x"].max_versions == 2
    assert dict(table.metadata.properties) == {"tier": "gold"}


def test_alter_json_is_the_new_description(run, events):
    doc = json.loads(ok(run("alter", events, "--set", "m:VERSIONS=7", output="json")).output)
    assert doc["version"] == 2
    assert {f["name"]: f["max-versions"] for f in doc["families"]} == {"d": 5, "m": 7}


def test_alter_without_changes_is_a_usage_error(run, events):
    result = run("alter", events)
    assert result.exit_code == 2
    assert "nothing to alter" in result.stderr


def test_alter_set_needs_settings(run, events):
    result = run("alter", events, "--set", "d")
    assert result.exit_code == 2
    assert "nothing to set" in result.stderr


# ----------------------------------------------------------------------------------- drop
def test_drop_with_yes(run, events, root):
    assert ok(run("drop", events, "--yes")).output == "Dropped table ns:events\n"
    assert _connect(root).list_tables() == []


def test_drop_purge_json(run, events, root):
    location = Path(root) / "ns" / "events"
    assert location.exists()
    doc = json.loads(ok(run("drop", events, "--purge", "-y", output="json")).output)
    assert doc == {"dropped": "ns:events", "purged": True}
    assert not any(location.iterdir())


def test_drop_without_yes_is_refused_when_not_interactive(run, events, root):
    result = run("drop", events)
    assert result.exit_code == 2
    assert "refusing to drop table ns:events without --yes" in result.stderr
    assert _connect(root).list_tables() == ["ns:events"]


def test_drop_asks_when_interactive(run, events, root, monkeypatch):
    monkeypatch.setattr(table_commands, "_stdin_is_interactive", lambda: True)
    declined = run("drop", events, input="n\n")
    assert declined.exit_code == 1
    assert "Drop table ns:events (version 1, 0 files, 0 cells)?" in declined.stderr
    assert _connect(root).list_tables() == ["ns:events"]
    ok(run("drop", events, input="y\n"))
    assert _connect(root).list_tables() == []


# ------------------------------------------------------------------------------- load-cells
CSV = (
    "row,family,qualifier,ts,type,value\n"
    "a\\x00b,d,q\\xFF,1000,Put,v\\x00\\x01\n"
    "n,d,q,2000,4,plain\n"
    "n,m,,3000,DeleteFamily,\n"
    "\\x90\\x00,d,q,5,12,\n"
)


def _cells_by_row(root: str, table_name: str) -> dict[bytes, list[tuple]]:
    from cellstore.storefiles import read_store_file

    table = _connect(root).table(table_name)
    out: dict[bytes, list[tuple]] = {}
    for entry in table.files:
        cells = read_store_file(table.fs, table.file_path(entry)).to_pylist()
        for c in cells:
            out.setdefault(c["row"], []).append(
                (entry.region, entry.family, c["qualifier"], c["ts"], c["type"], c["value"])
            )
    return out


def test_load_cells_csv_decodes_printable_bytes(run, events, root, tmp_path):
    path = tmp_path / "cells.csv"
    path.write_text(CSV)
    result = ok(run("load-cells", events, str(path)))
    lines = result.output.splitlines()
    assert lines[0].startswith("Loaded 4 cells into table ns:events: 4 files, ")
    assert lines[1].startswith("version 2, sequence number 1, load id ")
    assert lines[2].split() == ["REGION", "FILES"]
    assert sum(int(line.split()[1]) for line in lines[3:]) == 4

    cells = _cells_by_row(root, events)
    regions = [r.id for r in _connect(root).table(events).regions]
    assert cells[b"a\x00b"] == [(regions[0], "d", b"q\xff", 1000, 4, b"v\x00\x01")]
    assert sorted(cells[b"n"]) == [
        (regions[1], "d", b"q", 2000, 4, b"plain"),
        (regions[1], "m", b"", 3000, 14, b""),
    ]
    assert cells[b"\x90\x00"] == [(regions[2], "d", b"q", 5, 12, b"")]

    desc = _connect(root).table(events).describe()
    assert (desc.version, desc.files, desc.cells) == (2, 4, 4)
    assert [r.cells for r in desc.regions] == [1, 2, 1]
    assert "4 files, 4 cells" in ok(run("describe", events)).output


def test_load_cells_json_output_and_load_id(run, events, tmp_path):
    path = tmp_path / "cells.csv"
    path.write_text(CSV)
    doc = json.loads(
        ok(run("load-cells", events, str(path), "--load-id", "L1", output="json")).output
    )
    assert doc["table"] == "ns:events"
    assert (doc["version"], doc["seq"], doc["load-id"]) == (2, 1, "L1")
    assert (doc["cells"], doc["files"], doc["already-applied"]) == (4, 4, False)
    assert sum(doc["files-per-region"].values()) == 4
    again = ok(run("load-cells", events, str(path), "--load-id", "L1")).output
    assert again == "Load L1 was already applied to table ns:events; nothing written\n"


def test_load_cells_parquet_and_jsonl(run, events, root, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table(
            {
                "row": pa.array([b"\x00raw"], pa.binary()),
                "family": ["d"],
                "qualifier": pa.array([b"\\x41"], pa.binary()),  # taken as is: no decoding
                "ts": pa.array([7], pa.int64()),
                "value": pa.array([b"p"], pa.binary()),
            }
        ),
        tmp_path / "cells.parquet",
    )
    ok(run("load-cells", events, str(tmp_path / "cells.parquet")))
    (tmp_path / "cells.data").write_text(
        json.dumps({"row": "j\\x01", "family": "m", "qualifier": "c", "ts": 9, "value": "\\x7F"})
        + "\n"
    )
    ok(run("load-cells", events, str(tmp_path / "cells.data"), "--format", "jsonl"))
    cells = _cells_by_row(root, events)
    assert [c[1:] for c in cells[b"\x00raw"]] == [("d", b"\\x41", 7, 4, b"p")]
    assert [c[1:] for c in cells[b"j\x01"]] == [("m", b"c", 9, 4, b"\x7f")]


def test_load_cells_of_an_empty_file_commits_nothing(run, events, tmp_path):
    path = tmp_path / "cells.csv"
    path.write_text("row,family,qualifier,ts,type,value\n")
    assert ok(run("load-cells", events, str(path))).output == (
        "No cells to load into table ns:events; nothing committed\n"
    )
    doc = json.loads(ok(run("load-cells", events, str(path), output="json")).output)
    assert (doc["version"], doc["cells"]) == (None, 0)


def test_load_cells_unknown_extension_needs_format(run, events, tmp_path):
    path = tmp_path / "cells.txt"
    path.write_text(CSV)
    result = run("load-cells", events, str(path))
    assert result.exit_code == 2
    assert "give --format" in result.stderr


def test_load_cells_bad_record_is_one_line(run, events, tmp_path):
    path = tmp_path / "cells.csv"
    path.write_text("row,family,qualifier,ts,type,value\nr,nope,q,1,Put,v\n")
    result = run("load-cells", events, str(path))
    assert result.exit_code == 2
    assert result.stderr == (
        "error: record 0, field 'family': unknown family 'nope' (table ns:events has d, m)\n"
    )


def test_load_cells_unparsable_file_is_one_line(run, events, tmp_path):
    path = tmp_path / "cells.csv"
    path.write_text("row,family,qualifier,ts,type,value\nr,d,q,notanumber,Put,v\n")
    result = run("load-cells", events, str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {path}: cannot read as csv: ")
    assert result.stderr.count("\n") == 1


# --------------------------------------------------------------------------------- errors
def test_bad_table_name_is_exit_2_with_one_line(run):
    result = run("create", "bad name", "--family", "cf")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: table name 'bad name': ")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.output


def test_unknown_table_is_exit_3(run, root):
    ok(run("create", "other", "--family", "f"))  # a warehouse, without table nope
    for args in (["describe", "nope"], ["history", "nope"], ["drop", "nope", "--yes"]):
        result = run(*args)
        assert result.exit_code == 3, args
        assert result.stderr == f"error: table nope does not exist in {root}\n"


def test_unknown_version_is_exit_3(run, events):
    result = run("describe", events, "--version", "9")
    assert result.exit_code == 3
    assert result.stderr == "error: table ns:events has no version 9\n"


def test_filesystem_errors_are_one_line_exit_1(tmp_path):
    (tmp_path / "afile").write_text("")
    root = str(tmp_path / "afile" / "wh")
    result = CliRunner().invoke(cli, ["--root", root, "create", "t", "--family", "cf"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1


def test_existing_table_is_exit_4(run, events):
    result = run("create", events, "--family", "cf")
    assert result.exit_code == 4
    assert result.stderr.startswith("error: table ns:events already exists")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cf:FOO=1", "unknown family setting 'FOO'"),
        ("cf:VERSIONS", "expected KEY=VALUE"),
        ("cf:VERSIONS=many", "VERSIONS must be an integer"),
        ("cf:VERSIONS=0", "max_versions must be > 0"),
        ("cf:BLOOMFILTER=ROWCOL", "BLOOMFILTER must be ROW or NONE"),
        ("cf:COMPRESSION=lzo", "compression must be one of"),
        ("cf:VERSIONS=1,versions=2", "VERSIONS given twice"),
        (":VERSIONS=1", "the family name is empty"),
        ("c/f", "may not contain '/'"),
    ],
)
def test_bad_family_spec_is_a_bad_parameter(run, spec, message):
    result = run("create", "t", "--family", spec)
    assert result.exit_code == 2
    assert "Invalid value for '--family'" in result.stderr
    assert message in result.stderr


def test_bad_setting_value_in_alter_is_one_line_exit_2(run, events):
    result = run("alter", events, "--set", "d:MIN_VERSIONS=9")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: family 'd': max_versions (5) must be >= min_versions")


def test_unknown_family_in_alter_is_exit_2(run, events):
    for args in (["--drop-family", "zz"], ["--set", "zz:VERSIONS=1"]):
        result = run("alter", events, *args)
        assert result.exit_code == 2
        assert result.stderr == "error: table ns:events: unknown family 'zz'\n"


def test_splits_and_salt_buckets_conflict(run):
    result = run("create", "t", "--family", "cf", "--split", "m", "--salt-buckets", "2")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: give either splits or salt_buckets")


# ------------------------------------------------------------------------------ unit parts
def test_parse_family_spec():
    assert parse_family_spec("cf") == ("cf", {})
    assert parse_family_spec("cf:") == ("cf", {})
    assert parse_family_spec(" cf : TTL = 60 , VERSIONS='2' ") == (
        "cf",
        {"ttl": 60, "max_versions": 2},
    )
    with pytest.raises(SpecError, match="unknown family setting 'IN_MEMORY'"):
        parse_family_spec("cf:IN_MEMORY=true")


def test_storage_option_values_are_json_when_they_parse():
    convert = STORAGE_OPTION.convert
    assert convert('client_kwargs={"endpoint_url": "http://127.0.0.1:5000"}', None, None) == (
        "client_kwargs",
        {"endpoint_url": "http://127.0.0.1:5000"},
    )
    assert convert("anon=true", None, None) == ("anon", True)
    assert convert("profile=dev", None, None) == ("profile", "dev")
    assert convert("token=a=b", None, None) == ("token", "a=b")
    with pytest.raises(click.BadParameter):
        convert("novalue", None, None)


def test_bad_storage_option_is_exit_2(run):
    result = run("--storage-option", "oops", "list")
    assert result.exit_code == 2
    assert "Invalid value for '--storage-option': expected KEY=VALUE" in result.stderr


def test_text_helpers():
    assert human_ttl(1) == "1 SECOND"
    assert human_ttl(59) == "59 SECONDS"
    assert human_ttl(86400) == "86400 SECONDS (1 DAY)"
    assert human_ttl(2 * 86400 + 7200) == "180000 SECONDS (2 DAYS 2 HOURS)"
    assert grid(["A", "B"], [["long", 1], ["", 22]]) == ["A     B", "long  1", "      22"]


def test_compaction_with_nothing_to_do_reads_as_a_sentence(run, events):
    """Issue 29: ``Nothing to minor compaction in table`` (and ``1 stores``) are fixed."""
    minor = ok(run("compact", events)).output
    assert minor.splitlines()[0] == f"Nothing to rewrite in table {events} (minor compaction)"
    major = ok(run("compact", events, "--major")).output
    assert major.splitlines()[0] == f"Nothing to rewrite in table {events} (major compaction)"
    purge = ok(run("purge-ttl", events)).output
    assert purge.splitlines()[0] == f"Nothing to rewrite in table {events} (TTL purge)"


# ------------------------------------------------------- errors: one code per kind (issue 29)
def _json_error(result: Result) -> dict:
    assert result.stdout == "", result.stdout  # results only on stdout
    (line,) = result.stderr.splitlines()
    doc = json.loads(line)
    assert set(doc) == {"error"} and set(doc["error"]) == {"kind", "message", "exit_code"}
    assert doc["error"]["exit_code"] == result.exit_code
    return doc["error"]


def test_errors_are_json_objects_on_stderr_with_output_json(run, root, events, tmp_path):
    missing = _json_error(run("scan", "ns:nope", output="json"))
    assert missing["kind"] == "not-found" and missing["exit_code"] == 3
    assert missing["message"].startswith("table ns:nope does not exist in ")
    usage = _json_error(run("scan", events, "--limit", "0", output="json"))
    assert usage["kind"] == "invalid-argument" and usage["exit_code"] == 2
    assert "--limit" in usage["message"]
    refused = _json_error(run("scan", events, "--column-type", "d:x=long", output="json"))
    assert refused["kind"] == "invalid-argument" and "--shape wide" in refused["message"]
    exists = _json_error(run("create", events, "--family", "d", output="json"))
    assert exists["kind"] == "exists" and exists["exit_code"] == 4
    nowhere = str(tmp_path / "no-such-dir")
    result = CliRunner().invoke(cli, ["--root", nowhere, "--output", "json", "list"])
    gone = _json_error(result)
    assert gone["kind"] == "not-found" and nowhere in gone["message"]
    unknown = _json_error(run("scna", events, output="json"))
    assert unknown["kind"] == "invalid-argument" and "No such command 'scna'" in unknown["message"]
    text = run("scan", "ns:nope")  # text output keeps its one line
    assert text.exit_code == 3 and text.stderr.startswith("error: table ns:nope does not exist")


def test_a_root_without_a_warehouse_is_an_error_naming_it(tmp_path):
    runner = CliRunner()
    nowhere = str(tmp_path / "no" / "such" / "dir")
    for args in (["list"], ["scan", "t"], ["describe", "t"], ["count", "t"], ["history", "t"]):
        result = runner.invoke(cli, ["--root", nowhere, *args])
        assert result.exit_code == 3, (args, result.output)
        assert result.stderr.startswith(f"error: no warehouse at {nowhere}: "), result.stderr
        assert result.stdout == ""
    assert not Path(nowhere).exists()  # reading creates nothing
    created = runner.invoke(cli, ["--root", nowhere, "create", "t", "--family", "f"])
    assert created.exit_code == 0, created.output  # creating stays explicit
    assert runner.invoke(cli, ["--root", nowhere, "list"]).stdout == "TABLE\nt\n1 row(s)\n"


def test_the_exit_code_table_is_the_readme_table():
    from cellstore.cli.console import EXIT_CODES

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    rows = [
        [c.strip() for c in line.strip("|").split(" | ")]
        for line in readme.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    ]
    assert {int(c): (k.strip("`"), d) for c, k, d in rows} == dict(EXIT_CODES)


def test_every_error_class_exits_with_a_documented_code():
    import cellstore.errors as errors
    from cellstore.cli.console import EXIT_CODES, EXIT_UNEXPECTED, describe_error
    from cellstore.jobs.index.definition import IndexNotFoundError

    classes = [
        c
        for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.CellstoreError)
    ]
    assert len(classes) > 15
    for c in [*classes, IndexNotFoundError]:
        assert c.exit_code in EXIT_CODES, c
    kinds = {c.__name__: EXIT_CODES[c.exit_code][0] for c in classes}
    assert kinds["TableNotFoundError"] == kinds["InputNotFoundError"] == "not-found"
    assert kinds["WarehouseNotFoundError"] == kinds["SnapshotNotFoundError"] == "not-found"
    assert kinds["BadRecordError"] == "bad-record" and kinds["VerifyError"] == "problems-found"
    assert describe_error(FileExistsError("x"))[1] == 1  # storage
    assert describe_error(ZeroDivisionError("x"))[1] == EXIT_UNEXPECTED == 10

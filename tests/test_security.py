"""Hardening (issue 12, security): names never leave the table directory, manifest paths
never leave the warehouse, storage-option values never show, and every CLI failure is one
line with an exit code."""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

import cellstore
from cellstore.cli import cli
from cellstore.cli.console import describe_error
from cellstore.cli.context import CliContext
from cellstore.cli.output import make_output
from cellstore.core.family import Family
from cellstore.core.metadata import TableMetadata
from cellstore.core.names import (
    validate_index_name,
    validate_load_id,
    validate_snapshot_name,
)
from cellstore.errors import CorruptFileError, InvalidArgumentError, InvalidNameError
from cellstore.fs import join
from cellstore.jobs import clone, compact, copy_table, snapshot, vacuum, verify
from cellstore.jobs.compact import plan_compaction
from cellstore.jobs.index import create_index
from cellstore.loader import Mapping
from cellstore.storefiles.layout import (
    bad_records_file_name,
    entry_path,
    entry_path_problem,
    report_file_name,
    store_dir_relpath,
    store_file_relpath,
    table_dir,
)

try:
    from strategies import cells_table
except ImportError:  # pragma: no cover
    from tests.strategies import cells_table

PUT = 4
ESCAPES = ["../../../X", "../X", "..", ".", "a/b", "/abs", "a\\b", "x\x00y", "x\ny", "s3://b/k"]


def put(row: str, ts: int = 1, value: str = "v") -> tuple[Any, ...]:
    return (row.encode(), "f", b"q", ts, PUT, value.encode())


def files_under(path: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, f), path) for d, _, names in os.walk(path) for f in names
    }


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A directory around the root: ``<sandbox>/deep/wh`` (escapes land in the sandbox)."""
    return tmp_path / "sandbox"


@pytest.fixture
def root(sandbox: Path) -> str:
    return str(sandbox / "deep" / "wh")


@pytest.fixture
def table(root: str) -> Any:
    wh = cellstore.connect(root)
    t = wh.create_table("ns:t", families=[Family(name="f")], splits=["m"])
    t.load_cells(cells_table([put("a"), put("x")]), load_id="first")
    return t


def outside(sandbox: Path, root: str) -> set[str]:
    """Files in the sandbox that are not under the root."""
    inside = os.path.relpath(root, sandbox) + os.sep
    return {p for p in files_under(sandbox) if not p.startswith(inside)}


# ------------------------------------------------------------------------------- load ids
@pytest.mark.parametrize("good", ["L", "users-2024-06-01", "a.b_c-9", "_x", "-x", "x" * 128])
def test_valid_load_ids(good: str) -> None:
    assert validate_load_id(good) == good


@pytest.mark.parametrize("bad", [*ESCAPES, "", ".hidden", "x" * 129, "é", "a b", "a:b", 7])
def test_invalid_load_ids(bad: Any) -> None:
    with pytest.raises(InvalidNameError, match="load id"):
        validate_load_id(bad)


def test_load_cells_refuses_a_load_id_that_leaves_the_table(
    table: Any, sandbox: Path, root: str
) -> None:
    before = files_under(sandbox)
    for bad in ("../../../X", "../../../../../X", "a/b", ".x"):
        with pytest.raises(InvalidNameError, match="load id"):
            table.load_cells(cells_table([put("b")]), load_id=bad)
    assert files_under(sandbox) == before
    assert table.refresh().version == 2


def test_load_refuses_a_load_id_that_leaves_the_table(table: Any, sandbox: Path, root: str) -> None:
    before = files_under(sandbox)
    df = pd.DataFrame({"id": ["a", "b"], "v": ["1", "2"]})
    mapping = Mapping.simple(row_key="id", columns=["f:q=v"])
    with pytest.raises(InvalidNameError, match="load id"):
        table.load(df, mapping=mapping, load_id="../../../X", skip_bad_records=True)
    assert files_under(sandbox) == before
    assert table.refresh().version == 2
    report = table.load(df, mapping=mapping, load_id="ok-1")
    assert report.report_path is not None and report.report_path.endswith(
        "/_loads/ok-1.report.json"
    )


def test_copy_and_compact_refuse_bad_job_ids(table: Any, sandbox: Path) -> None:
    before = files_under(sandbox)
    with pytest.raises(InvalidNameError):
        copy_table(table, None, "ns:copy", job_id="../../../X")
    with pytest.raises(InvalidNameError):
        plan_compaction(table, major=True, job_id="../X")
    assert files_under(sandbox) == before


def test_cli_refuses_bad_load_ids(root: str, sandbox: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["--root", root, "create", "t", "--family", "f"]).exit_code == 0
    csv = tmp_path / "cells.csv"
    csv.write_text("row,family,qualifier,ts,type,value\na,f,q,1,Put,v\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text('row_key = "id"\n[[cells]]\nfamily = "f"\nqualifier = "q"\nvalue = "v"\n')
    data = tmp_path / "in.csv"
    data.write_text("id,v\na,1\n")
    before = files_under(sandbox)
    for args in (
        ["load-cells", "t", str(csv), "--load-id", "../../../X"],
        ["load", "t", str(data), "--mapping", str(mapping), "--load-id", "../../../X"],
        ["copy", "t", "t2", "--job-id", "../../../X"],
    ):
        result = runner.invoke(cli, ["--root", root, *args], catch_exceptions=False)
        assert result.exit_code == 2, (args, result.output)
        assert "load id '../../../X'" in result.stderr
    assert files_under(sandbox) == before


def test_snapshot_and_index_names(table: Any) -> None:
    assert validate_snapshot_name("before-import.1") == "before-import.1"
    assert validate_index_name("by_email") == "by_email"
    for bad in ESCAPES:
        with pytest.raises(InvalidNameError):
            validate_snapshot_name(bad)
        with pytest.raises(InvalidNameError):
            validate_index_name(bad)
        with pytest.raises(InvalidNameError):
            snapshot(table, bad)
        with pytest.raises(InvalidArgumentError):
            create_index(table, name=bad, column="f:q")
    with pytest.raises(InvalidNameError):  # re.match with '$' accepted a trailing newline
        validate_index_name("by_email\n")


# --------------------------------------------------------------------------------- layout
def test_layout_names_files_inside_the_table_directory() -> None:
    assert store_file_relpath("r000001", "c/f", "L-m00000-000") == (
        "data/r000001/c%2Ff/L-m00000-000.parquet"
    )
    assert store_dir_relpath("r000002", "..x") == "data/r000002/..x"
    assert report_file_name("L") == "L.report.json"
    assert bad_records_file_name("L") == "L.bad.jsonl"
    for bad in ESCAPES:
        with pytest.raises(InvalidNameError):
            store_file_relpath("r000001", "f", bad)
        with pytest.raises(InvalidNameError):
            store_file_relpath(bad, "f", "stem")
        with pytest.raises(InvalidNameError):
            report_file_name(bad)
        with pytest.raises(InvalidNameError):
            bad_records_file_name(bad)
    for family in ("..", ".", ""):
        with pytest.raises(InvalidNameError):
            store_dir_relpath("r000001", family)


@pytest.mark.parametrize(
    "path",
    [
        "data/r000001/f/x.parquet",
        "../../../ns/src/u0/data/r000001/f/x.parquet",
        "data/r000001/f/..x.parquet",
    ],
)
def test_allowed_entry_paths(path: str) -> None:
    assert entry_path_problem(path) is None
    assert entry_path("/wh/ns/t/u1", path).startswith("/wh/")


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../../victim.parquet", "clone's link"),
        ("../victim.parquet", "clone's link"),
        ("data/../../../../victim.parquet", "clone's link"),
        ("../../../../victim.parquet", "climbs above the warehouse root"),
        ("../../../../../../etc/passwd", "climbs above the warehouse root"),
        ("../../../ns/src/u0", "links to no file"),
        ("../../../ns/src/u0/../../../../x/y/z/w", "clone's link"),
        ("/etc/passwd", "not relative"),
        ("s3://other-bucket/x.parquet", "not relative"),
        ("data//x.parquet", "empty"),
        ("./data/x.parquet", "'.'"),
        ("data\\x.parquet", "backslash"),
        ("", "empty"),
    ],
)
def test_refused_entry_paths(path: str, why: str) -> None:
    problem = entry_path_problem(path)
    assert problem is not None and why in problem
    with pytest.raises(CorruptFileError, match=r"table ns:t version 7: store file path"):
        entry_path("/wh/ns/t/u1", path, table="ns:t", version=7)


def test_table_locations_are_three_plain_segments() -> None:
    assert table_dir("/wh", "ns/t/u1") == "/wh/ns/t/u1"
    for bad in ("../../x", "ns/t", "ns/t/u/v", "/abs/t/u", "ns/../u", "ns//u"):
        with pytest.raises(CorruptFileError, match="table location"):
            table_dir("/wh", bad)


def test_join_keeps_object_store_paths_in_their_bucket() -> None:
    assert join("bucket/wh/ns/c/u1", "../../../ns/s/u0/d") == "bucket/wh/ns/s/u0/d"
    for parts in (("bucket/a", "../../other/x"), ("s3://b/a", "../../c")):
        with pytest.raises(ValueError, match="climbs"):
            join(*parts)


# ------------------------------------------------------------------- manifest entry paths
def _commit_bad_path(table: Any, sandbox: Path, root: str, path: str) -> int:
    """Replace the entry of row 'a' by a copy of its file at ``path`` (as the manifest says)."""
    entry = next(f for f in table.files if f.first_row == b"a")
    target = os.path.normpath(os.path.join(table.path, path))  # an absolute path stays
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(table.file_path(entry), target)
    bad = dataclasses.replace(entry, path=path)

    def change(meta: TableMetadata) -> TableMetadata:
        files = tuple(bad if f == entry else f for f in meta.files)
        return meta.next_version(operation="test", timestamp_ms=1, files=files)

    meta, _ = table.log.commit_table(change)
    table.refresh()
    return int(meta.version)


@pytest.mark.parametrize("kind", ["above-root", "inside-root-not-a-link", "absolute"])
def test_readers_jobs_and_verify_refuse_a_path_leaving_the_warehouse(
    table: Any, sandbox: Path, root: str, kind: str
) -> None:
    path = {
        "above-root": "../../../../victim.parquet",  # <sandbox>/deep/victim.parquet
        "inside-root-not-a-link": "../../victim.parquet",  # <root>/ns/victim.parquet
        "absolute": str(sandbox / "abs-victim.parquet"),
    }[kind]
    version = _commit_bad_path(table, sandbox, root, path)
    message = rf"table ns:t version {version}: store file path '{path}'"
    with pytest.raises(CorruptFileError, match=message):
        table.scan().to_arrow()
    with pytest.raises(CorruptFileError, match=message):
        table.get("a")
    with pytest.raises(CorruptFileError, match=message):
        table.file_path(next(f for f in table.files if f.path == path))
    with pytest.raises(CorruptFileError):
        compact(table, major=True)
    with pytest.raises(CorruptFileError, match=message):
        vacuum(table)
    snapshot(table, "s1")
    with pytest.raises(CorruptFileError, match=message):
        clone(table, "s1", "ns:c")
    report = verify(table)
    assert not report.ok
    assert any(p.path == path and "path" in p.message for p in report.problems), report
    result = CliRunner().invoke(cli, ["--root", root, "verify", "ns:t"], catch_exceptions=False)
    assert result.exit_code == 9 and path in result.output + result.stderr
    result = CliRunner().invoke(cli, ["--root", root, "scan", "ns:t"], catch_exceptions=False)
    assert result.exit_code == 6
    assert result.stderr.count("\n") == 1 and path in result.stderr


def test_clone_links_stay_allowed(table: Any) -> None:
    snapshot(table, "s1")
    c = clone(table, "s1", "ns:c")
    copy = table.warehouse.table(c.table)
    assert all(f.path.startswith("../../../ns/t/") for f in copy.files)
    assert verify(copy).ok
    assert copy.scan().to_arrow().num_rows == 2


# ---------------------------------------------------------------------- storage options
def test_a_mistyped_storage_option_is_not_echoed(root: str) -> None:
    result = CliRunner().invoke(
        cli, ["--root", root, "--storage-option", "secretVALUE", "list"], catch_exceptions=False
    )
    assert result.exit_code == 2
    assert "expected KEY=VALUE" in result.stderr
    assert "secretVALUE" not in result.output + result.stderr


def test_option_values_are_hidden_in_error_messages_and_tracebacks(
    root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: CliContext) -> Any:
        raise RuntimeError(f"backend said: token {self.storage_options['token']} refused")

    monkeypatch.setattr(CliContext, "warehouse", broken)
    args = ["--root", root, "--storage-option", "token=hunter2-secret", "list"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 10  # "unexpected" (issue 29: 1 before, shared with storage)
    assert result.stderr == (
        "error: unexpected RuntimeError: backend said: token *** refused "
        "(run with --debug for the traceback)\n"
    )
    result = CliRunner().invoke(cli, ["--debug", *args], catch_exceptions=False)
    assert result.exit_code == 10
    assert "Traceback (most recent call last)" in result.stderr
    assert "hunter2-secret" not in result.output + result.stderr
    assert result.stderr.endswith("(run with --debug for the traceback)\n")


def test_the_cli_context_repr_hides_storage_options() -> None:
    ctx = CliContext(
        root="s3://b", storage_options={"secret": "s3cr3t"}, output=make_output("text")
    )
    assert "s3cr3t" not in repr(ctx)


# ------------------------------------------------------------------ unreachable storage
@pytest.fixture
def closed_s3_root() -> list[str]:
    """Global options for an s3:// root on a closed 127.0.0.1 port, failing fast."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return [
        "--root",
        "s3://bucket/wh",
        "--storage-option",
        f'client_kwargs={{"endpoint_url": "http://127.0.0.1:{port}", "region_name": "us-east-1"}}',
        "--storage-option",
        'config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 1}',
        "--storage-option",
        "key=AKIAEXAMPLEKEY",
        "--storage-option",
        "secret=wJalrXUtnFEMIEXAMPLESECRET",
        "--storage-option",
        "skip_instance_cache=true",
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["scan", "t"],
        ["create", "t", "--family", "cf"],
        ["verify", "t"],
        ["history", "t"],
        ["describe", "t"],
    ],
    ids=lambda c: c[0],
)
def test_unreachable_storage_is_one_line_and_exit_1(
    closed_s3_root: list[str], command: list[str]
) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, [*closed_s3_root, *command], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: storage error (EndpointConnectionError): ")
    assert result.stderr.count("\n") == 1, result.stderr
    for secret in ("AKIAEXAMPLEKEY", "wJalrXUtnFEMIEXAMPLESECRET", "127.0.0.1"):
        assert secret not in result.output + result.stderr
    debug = runner.invoke(cli, ["--debug", *closed_s3_root, *command], catch_exceptions=False)
    assert debug.exit_code == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert "botocore" in debug.stderr
    assert debug.stderr.splitlines()[-1] == result.stderr.strip()
    for secret in ("AKIAEXAMPLEKEY", "wJalrXUtnFEMIEXAMPLESECRET"):
        assert secret not in debug.stderr


def test_describe_error_classes() -> None:
    assert describe_error(InvalidNameError("bad")) == ("bad", 2)
    assert describe_error(PermissionError("denied")) == ("denied", 1)
    message, code = describe_error(KeyError("x"))
    assert code == 10 and message.startswith("unexpected KeyError: 'x'")


def test_storage_configuration_errors_are_storage_errors() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["--root", "nosuchproto://x", "list"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: storage error (ValueError): Protocol not known")
    args = ["--root", "s3://b/wh", "--storage-option", "bogus_option=SECRETVALUE1", "list"]
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: storage error (TypeError): ")
    assert "bogus_option" in result.stderr and "SECRETVALUE1" not in result.stderr

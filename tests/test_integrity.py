"""Integrity of reads (issue 12): files checked against the manifest, salted and stale loads.

A store file swapped with another, replaced by a same-size file, or gone must fail every
read with a cellstore error naming the file (never return a silently wrong answer); a load
into a salted table must be readable by ``get`` and ``scan`` by key; a load on a handle
opened before a split must succeed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

import cellstore
from cellstore.cli import cli
from cellstore.core.family import Family
from cellstore.core.metadata import FileEntry
from cellstore.errors import (
    BadCellError,
    CorruptFileError,
    InvalidArgumentError,
    MissingFileError,
)
from cellstore.jobs import verify
from cellstore.jobs.compact import compact
from cellstore.jobs.regions import split
from cellstore.loader.direct import normalize_cells, write_cells
from cellstore.loader.execute import commit_load
from cellstore.storefiles.reader import clear_footer_cache

PUT = 4


def grid(prefix: str, rows: int, quals: int = 4, ts: int = 7) -> pa.Table:
    """``rows`` x ``quals`` Put cells with fixed-width rows, qualifiers and values."""
    n = rows * quals
    r = np.repeat(np.arange(rows), quals)
    q = np.tile(np.arange(quals), rows)
    return pa.table(
        {
            "row": [f"{prefix}{i:05d}".encode() for i in r],
            "family": ["f"] * n,
            "qualifier": [f"q{j}".encode() for j in q],
            "ts": np.full(n, ts, dtype=np.int64),
            "type": np.full(n, PUT, dtype=np.int8),
            "value": [f"v{i:05d}-{j}".encode() for i, j in zip(r, q, strict=True)],
        }
    )


@pytest.fixture
def table(tmp_path: Path) -> Any:
    """ns:t with regions [-, m) and [m, -): 8,000 cells, 1,000 rows each side, one load."""
    clear_footer_cache()
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:t", families=[Family(name="f", compression="none")], splits=["m"])
    t.load_cells(pa.concat_tables([grid("a", 1000), grid("n", 1000)]))
    return t


def entries(t: Any) -> tuple[FileEntry, FileEntry]:
    a, b = sorted(t.files, key=lambda f: f.first_row)
    return a, b


def swap(t: Any, a: FileEntry, b: FileEntry) -> None:
    pa_, pb = Path(t.file_path(a)), Path(t.file_path(b))
    da, db = pa_.read_bytes(), pb.read_bytes()
    pa_.write_bytes(db)
    pb.write_bytes(da)


# --------------------------------------------------------------- swapped and missing files
def test_swapped_files_fail_the_scan_instead_of_losing_cells(table: Any) -> None:
    """The issue's case: 8,000 cells, two files swapped; scan(raw=True) must not drop any."""
    assert table.scan(raw=True).to_arrow().num_rows == 8000
    extra = grid("b", 10, quals=1)  # a third file, smaller than the other two
    table.load_cells(extra)
    small = next(f for f in table.files if f.cells == 10)
    big = next(f for f in table.files if f.first_row == b"n00000")
    assert small.size != big.size
    swap(table, small, big)
    with pytest.raises(CorruptFileError) as info:
        table.scan(raw=True).to_arrow()
    msg = str(info.value)
    assert "does not match its manifest entry" in msg and "size is" in msg
    assert "version 3" in msg and "cellstore verify" in msg
    assert any(f.path in msg for f in (small, big))
    with pytest.raises(CorruptFileError):
        table.get("n00001")
    assert not verify(table).ok  # verify agrees


def test_same_size_swap_is_caught_by_the_footer_even_with_a_warm_cache(table: Any) -> None:
    a, b = entries(table)
    assert a.size == b.size  # precondition: only the footer can tell them apart
    assert table.scan().to_arrow().num_rows == 8000  # warms the footer cache
    swap(table, a, b)
    with pytest.raises(CorruptFileError, match="footer digest mismatch"):
        table.scan(raw=True).to_arrow()  # the entries' footer digests tell them apart
    with pytest.raises(CorruptFileError, match="does not match its manifest entry"):
        table.get("a00001")
    with pytest.raises(CorruptFileError, match="does not match its manifest entry"):
        table.scan(start_row="n", memory_budget=1).to_arrow()  # split planning opens files


def test_jobs_refuse_a_swapped_input(table: Any) -> None:
    table.load_cells(grid("a", 3, quals=1, ts=9))  # a second file in region 1: compactable
    a, b = entries_of_region(table, "r000001")
    swap(table, a, b)
    with pytest.raises(CorruptFileError, match="does not match its manifest entry"):
        compact(table, major=True)


def entries_of_region(t: Any, region: str) -> tuple[FileEntry, FileEntry]:
    files = [f for f in t.files if f.region == region]
    assert len(files) == 2
    return files[0], files[1]


def test_cli_scan_of_a_swapped_table_exits_non_zero_with_one_line(table: Any) -> None:
    a, b = entries(table)
    swap(table, a, b)
    result = CliRunner().invoke(
        cli, ["--root", table.warehouse.root, "scan", "ns:t", "--raw"], catch_exceptions=False
    )
    assert result.exit_code == CorruptFileError.exit_code
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "does not match its manifest entry" in lines[0] and "Traceback" not in result.output


def test_missing_file_names_the_file_the_version_and_the_repair(table: Any) -> None:
    a, _ = entries(table)
    os.remove(table.file_path(a))
    with pytest.raises(MissingFileError) as info:
        table.scan().to_arrow()
    msg = str(info.value)
    assert a.path in msg and "table ns:t version 2" in msg
    assert "cellstore verify" in msg and "cellstore restore" in msg
    assert isinstance(info.value, FileNotFoundError)  # code catching the builtin still works
    with pytest.raises(MissingFileError):
        table.get("a00001")
    result = CliRunner().invoke(cli, ["--root", table.warehouse.root, "scan", "ns:t"])
    assert result.exit_code == MissingFileError.exit_code
    assert "is missing" in result.stderr


def test_untouched_files_still_read(table: Any) -> None:
    """The checks pass on healthy tables, after a split and a compaction too."""
    split(table, at=["g"])
    table.refresh()
    table.load_cells(grid("a", 5, quals=1, ts=9))
    compact(table, major=True)
    table.refresh()
    assert table.scan(raw=True, max_versions=10).to_arrow().num_rows == 8005
    assert verify(table).ok


# ------------------------------------------------------------------------- salted loads
def salted_table(tmp_path: Path) -> Any:
    wh = cellstore.connect(str(tmp_path / "wh"))
    return wh.create_table("ns:s", families=["f"], salt_buckets=4)


def cells_of(rows: list[bytes], ts: int = 5) -> pa.Table:
    n = len(rows)
    return pa.table(
        {
            "row": rows,
            "family": ["f"] * n,
            "qualifier": [b"q"] * n,
            "ts": np.full(n, ts, dtype=np.int64),
            "value": [b"v-" + r for r in rows],
        }
    )


def test_salted_load_cells_takes_logical_keys_found_by_get_and_scan(tmp_path: Path) -> None:
    """Logical keys get their Phoenix salt byte, so reads by key find them (R12.3, R12.4)."""
    t = salted_table(tmp_path)
    keys = [b"user%02d" % i for i in range(40)]
    t.load_cells(cells_of(keys))
    assert t.get("user07").column("value").to_pylist() == [b"v-user07"]
    got = t.scan(row_prefix="user1").to_arrow().column("row").to_pylist()
    assert sorted(got) == [b"user%02d" % i for i in range(10, 20)]
    assert sorted(t.scan().to_arrow().column("row").to_pylist()) == keys
    # Every stored key starts with its salt byte and sits in that bucket's region.
    spans = {f.region: (f.first_row[0], f.last_row[0]) for f in t.files}
    assert len(spans) == 4 and all(lo == hi for lo, hi in spans.values())
    assert verify(t).ok


def test_salted_load_cells_verifies_physical_keys(tmp_path: Path) -> None:
    t = salted_table(tmp_path)
    logical = [b"a1", b"b2", b"c3"]
    t.load_cells(cells_of(logical))
    physical = sorted(f.first_row for f in t.files)[:1]  # a stored (salted) key
    t.load_cells(cells_of(physical, ts=9), keys="physical")
    row = physical[0][1:]
    assert t.get(row).column("ts").to_pylist() == [9]  # the physical load hit the same key
    bad = [physical[0], bytes([(physical[0][0] + 1) % 4]) + row]
    with pytest.raises(BadCellError, match=r"record 1, field 'row': salt byte") as info:
        t.load_cells(cells_of(bad), keys="physical")
    assert info.value.record == 1 and info.value.field == "row"
    with pytest.raises(BadCellError, match="record 0"):
        t.load_cells(cells_of([b"\x01"]), keys="physical")  # a salt byte and nothing else
    version = t.version
    plain = cellstore.connect(str(tmp_path / "wh")).create_table("ns:p", families=["f"])
    with pytest.raises(InvalidArgumentError, match="salted tables"):
        plain.load_cells(cells_of([b"x"]), keys="physical")
    assert t.refresh().version == version  # nothing committed by the refused loads


def test_salted_load_cells_refuses_what_the_spec_encoder_returned(tmp_path: Path) -> None:
    """The trap: RowKeySpec.encode gives keys with their salt byte; load_cells takes logical
    keys by default. Loading the encoder's keys is refused (naming keys='physical') instead
    of salting them twice; with keys='physical' they load and reads by key find them."""
    from cellstore.core.rowkey import KeyField, RowKeySpec
    from model import salted

    spec = RowKeySpec(
        fields=(KeyField(name="user"), KeyField(name="n", type="int64")), salt_buckets=4
    )
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("ns:k", families=["f"], row_key=spec)
    records = pa.table({"user": ["ann", "bob", "cy"], "n": [1, 2, 3]})
    keys = t.metadata.row_key.encode(records).to_pylist()  # the project's own encoder
    logical = [b"ann\x00\x80" + bytes(6) + b"\x01", b"bob\x00\x80" + bytes(6) + b"\x02"]
    assert keys[:2] == [salted(k, 4) for k in logical]  # Phoenix's salt byte in front
    version = t.version
    for subset in (keys, keys[:1]):
        with pytest.raises(BadCellError, match="keys='physical'") as info:
            t.load_cells(cells_of(subset))
        assert (info.value.record, info.value.field) == (0, "row")
    assert t.refresh().version == version and t.scan().count_rows() == 0  # nothing stored
    t.load_cells(cells_of(keys), keys="physical")
    assert t.get(logical[0]).column("value").to_pylist() == [b"v-" + keys[0]]
    got = t.scan(key={"user": "bob"}).to_arrow()
    assert got.column("row").to_pylist() == [logical[1]]
    assert got.column("value").to_pylist() == [b"v-" + keys[1]]
    assert t.scan().count_rows() == 3 and verify(t).ok
    # Logical keys of the same table load by default, including a mix that only partly
    # looks salted, and stay findable.
    t.load_cells(cells_of([keys[0][1:], b"\x00" + keys[1][1:]], ts=9))
    assert t.get(logical[0]).column("ts").to_pylist() == [9]


def test_salted_load_cells_guard_without_a_spec_and_its_override(tmp_path: Path) -> None:
    """Without a row-key spec the guard looks at the salt byte alone; keys='logical' loads
    logical keys that only look salted (here: b'\x02x1' is the salted form of b'x1', and
    also a logical key of its own)."""
    from model import java_salt, salted

    t = salted_table(tmp_path)
    assert salted(b"x1", 4) == b"\x02x1" and java_salt(b"x1", 4) == 2
    with pytest.raises(BadCellError, match="keys='physical'"):
        t.load_cells(cells_of([b"\x02x1"]))
    t.load_cells(cells_of([b"\x02x1"]), keys="logical")  # a logical key, salted once
    assert t.get(b"\x02x1").num_rows == 1 and t.get(b"x1").num_rows == 0
    stored = {f.first_row for f in t.files}
    assert stored == {salted(b"\x02x1", 4)}
    # A key too short to carry a salt byte and a key, or a first byte past the buckets,
    # is logical without asking.
    t.load_cells(cells_of([b"\x02", b"\x01ab"]))
    assert t.get(b"\x02").num_rows == 1 and t.get(b"\x01ab").num_rows == 1


def test_salted_load_cells_guard_uses_the_spec_layout(tmp_path: Path) -> None:
    """With a fixed-size spec a logical key never parses as salt byte + key: a logical id
    whose first byte happens to be its rest's salt loads without asking."""
    import struct

    from cellstore.core.rowkey import KeyField, RowKeySpec
    from model import java_salt

    spec = RowKeySpec(fields=(KeyField(name="id", type="uint32"),), salt_buckets=16)
    t = cellstore.connect(str(tmp_path / "wh")).create_table("ns:u", families=["f"], row_key=spec)
    key = struct.pack(">I", 17)
    assert java_salt(key[1:], 16) == key[0]  # looks salted by the first byte alone
    t.load_cells(cells_of([key]))
    assert t.get(key).num_rows == 1
    assert t.scan(key={"id": 17}).to_arrow().column("row").to_pylist() == [key]


def test_cli_load_cells_keys_option_on_a_salted_table(tmp_path: Path) -> None:
    """``cellstore load-cells --keys``: the guard's refusal names the option; both kinds load."""
    from model import salted

    t = salted_table(tmp_path)
    root = str(tmp_path / "wh")
    path = tmp_path / "cells.csv"
    path.write_text("row,family,qualifier,ts,type,value\n\\x02x1,f,q,5,Put,v\n")
    runner = CliRunner()
    refused = runner.invoke(cli, ["--root", root, "load-cells", "ns:s", str(path)])
    assert refused.exit_code != 0 and "keys='physical'" in refused.output, refused.output
    ok = runner.invoke(cli, ["--root", root, "load-cells", "ns:s", str(path), "--keys", "physical"])
    assert ok.exit_code == 0, ok.output
    assert t.refresh().get(b"x1").column("value").to_pylist() == [b"v"]
    ok = runner.invoke(cli, ["--root", root, "load-cells", "ns:s", str(path), "--keys", "logical"])
    assert ok.exit_code == 0, ok.output
    assert {f.first_row for f in t.refresh().files} == {salted(b"x1", 4), salted(b"\x02x1", 4)}


# ------------------------------------------------------------------ stale handles, splits
def test_load_cells_on_a_handle_opened_before_a_split(table: Any) -> None:
    stale = table.warehouse.table("ns:t")
    split(table, at=["g"])
    result = stale.load_cells(grid("h", 3, quals=1, ts=9))
    assert result.version == stale.version and stale.metadata.regions == table.refresh().regions
    assert stale.get("h00001").column("ts").to_pylist() == [9]
    again = stale.load_cells(grid("b", 2, quals=1, ts=9))  # a retry on the same handle works
    assert again.version == result.version + 1
    assert verify(stale).ok


def test_cells_written_before_a_split_are_rerouted_at_commit(table: Any) -> None:
    """A split between writing and committing: the files are re-routed, not refused."""
    base = table.metadata
    cells = normalize_cells(grid("c", 50, quals=1, ts=9), metadata=base, now=1)
    written, _ = write_cells(table.fs, table.path, base, cells, load_id="L1", seq=base.next_seq)
    split(table.warehouse.table("ns:t"), at=["c00025"])
    meta, already, files, rerouted = commit_load(
        table.fs,
        table.path,
        table.log,
        base,
        written,
        load_id="L1",
        summary={},
        row_group_cells=1000,
    )
    assert not already and rerouted == 1 and len(files) == 2
    t = table.refresh()
    assert t.version == meta.version
    assert t.get("c00030").column("ts").to_pylist() == [9]
    assert t.scan(start_row="c", stop_row="d").to_arrow().num_rows == 50
    assert verify(t).ok

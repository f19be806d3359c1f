"""Loads without a sequence id (HBase's ``assign.sequenceNumbers=false``), R14.5, R14.6, R3.1.

A file bulk-loaded without a sequence id reads with sequence id -1 (R14.5): it ranks below
every file with one (R3.1), so at equal (row, family, qualifier, ts, type) its cells lose
every tie (R3.2, R3.3), whether the other file was written before or after it. A compaction
output takes the highest sequence id of its inputs (R3.1). Expected results are written by
hand from these rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore import connect
from cellstore.cli import cli
from cellstore.core.metadata import UNASSIGNED_SEQ
from cellstore.errors import InvalidArgumentError
from cellstore.jobs import compact, verify
from cellstore.warehouse import Table

try:
    import model
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests import model

Cell = tuple[bytes, int, bytes]  # (qualifier, ts, value) in row b"r", family "f"


def cells(*items: Cell, row: bytes = b"r", kind: str = "Put") -> pa.Table:
    return pa.table(
        {
            "row": [row] * len(items),
            "family": ["f"] * len(items),
            "qualifier": [q for q, _, _ in items],
            "ts": pa.array([ts for _, ts, _ in items], pa.int64()),
            "type": [kind] * len(items),
            "value": [v for _, _, v in items],
        }
    )


def visible(table: Table, **scan: Any) -> list[tuple[bytes, bytes, int, bytes]]:
    out = table.scan(max_versions=5, **scan).to_arrow()
    return [(d["row"], d["qualifier"], d["ts"], d["value"]) for d in out.to_pylist()]


@pytest.fixture(params=[2, 1], ids=["format-v2", "format-v1"])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    return connect(tmp_path).create_table(
        "t", families=[{"name": "f", "max_versions": 5}], format_version=request.param
    )


def test_r14_5_unassigned_load_loses_ties_to_earlier_data(table: Table) -> None:
    """R14.5/R3.1: seq -1 ranks below the earlier load, so the existing cell stays (R14.6)."""
    table.load_cells(cells((b"q", 10, b"old")))
    report = table.load_cells(
        cells((b"q", 10, b"bulk"), (b"q", 11, b"bulk-11"), (b"p", 10, b"bulk-p")),
        assign_seq_id=False,
    )
    assert report.seq is None
    assert visible(table) == [
        (b"r", b"p", 10, b"bulk-p"),  # no tie: loaded cells are read like any others
        (b"r", b"q", 11, b"bulk-11"),
        (b"r", b"q", 10, b"old"),  # the tie at ts 10: the file with a sequence id wins
    ]
    entries = sorted(table.metadata.files, key=lambda f: f.seq)
    assert [f.seq for f in entries] == [UNASSIGNED_SEQ, 1]
    assert not entries[0].seq_assigned and entries[1].seq_assigned
    assert table.metadata.next_seq == 2  # an unassigned load takes no sequence number
    assert table.metadata.last_history.summary["seq-assigned"] is False


def test_r14_5_unassigned_load_loses_ties_to_later_data(table: Table) -> None:
    """R14.5: a later load with a sequence id wins, as it would anyway (R3.2)."""
    table.load_cells(cells((b"q", 10, b"bulk")), assign_seq_id=False)
    assert visible(table) == [(b"r", b"q", 10, b"bulk")]
    table.load_cells(cells((b"q", 10, b"new")))
    assert visible(table) == [(b"r", b"q", 10, b"new")]
    # and an assigned load's tie with an unassigned load made after it: still the assigned
    table.load_cells(cells((b"q", 10, b"bulk-again")), assign_seq_id=False)
    assert visible(table) == [(b"r", b"q", 10, b"new")]
    assert table.get("r", max_versions=5).column("value").to_pylist() == [b"new"]


def test_r3_1_default_load_still_wins_as_the_newest(table: Table) -> None:
    """R3.2 with assigned ids (the default): the later load wins the tie."""
    table.load_cells(cells((b"q", 10, b"old")))
    table.load_cells(cells((b"q", 10, b"new")))
    assert visible(table) == [(b"r", b"q", 10, b"new")]


def test_r14_6_unassigned_delete_markers_apply(table: Table) -> None:
    """R14.6: delete markers in a load without sequence id mask older puts like any marker."""
    table.load_cells(cells((b"q", 10, b"v10"), (b"q", 20, b"v20"), (b"p", 5, b"p5")))
    table.load_cells(cells((b"q", 15, b""), kind="DeleteColumn"), assign_seq_id=False)
    assert visible(table) == [(b"r", b"p", 5, b"p5"), (b"r", b"q", 20, b"v20")]


def test_r14_5_matches_model_merge(table: Table) -> None:
    """The store's file order is the model's: seq -1 first, then by assigned sequence id."""
    table.load_cells(cells((b"q", 10, b"a")))
    table.load_cells(cells((b"q", 10, b"b")), assign_seq_id=False)
    runs = [[model.Cell(b"r", b"q", 10, model.PUT, b"a")], [model.Cell(b"r", b"q", 10, 4, b"b")]]
    seqs = [
        model.bulk_load_seq(next_seq=1, assign=True),
        model.bulk_load_seq(next_seq=2, assign=False),
    ]
    merged = model.merge(runs, seqs)
    assert [c.value for c in merged] == [b"a", b"b"]  # the assigned cell first: it wins R3.3
    assert visible(table) == [(b"r", b"q", 10, b"a")]


def test_r3_1_major_compaction_output_takes_the_highest_input_seq(table: Table) -> None:
    """R3.1: compaction output = max seq of its inputs; the tie was settled before (R3.3)."""
    table.load_cells(cells((b"q", 10, b"old")))
    table.load_cells(cells((b"q", 10, b"bulk"), (b"q", 12, b"bulk-12")), assign_seq_id=False)
    before = visible(table)
    compact(table, major=True)
    table.refresh()
    assert [f.seq for f in table.metadata.files] == [model.compacted_seq([1, UNASSIGNED_SEQ])]
    assert visible(table) == before == [(b"r", b"q", 12, b"bulk-12"), (b"r", b"q", 10, b"old")]
    # the compacted file has a sequence id now: a new unassigned load still loses to it
    table.load_cells(cells((b"q", 12, b"late")), assign_seq_id=False)
    assert visible(table) == before


def test_r3_1_compaction_of_unassigned_files_stays_unassigned(table: Table) -> None:
    """R3.1: all inputs at -1 give an output at -1, which still loses to assigned files."""
    table.load_cells(cells((b"q", 10, b"kept")))  # seq 1
    table.load_cells(cells((b"q", 10, b"u1"), (b"q", 11, b"u1-11")), assign_seq_id=False)
    table.load_cells(cells((b"q", 12, b"u2")), assign_seq_id=False)
    unassigned = [f.path for f in table.metadata.files if not f.seq_assigned]
    assert len(unassigned) == 2
    compact(table, files=unassigned)  # a minor compaction of exactly these two files
    table.refresh()
    seqs = sorted(f.seq for f in table.metadata.files)
    assert seqs == [model.compacted_seq([UNASSIGNED_SEQ, UNASSIGNED_SEQ]), 1]
    assert visible(table) == [
        (b"r", b"q", 12, b"u2"),
        (b"r", b"q", 11, b"u1-11"),
        (b"r", b"q", 10, b"kept"),
    ]
    compact(table, major=True)  # everything: now the output has sequence id 1
    table.refresh()
    assert [f.seq for f in table.metadata.files] == [1]
    assert visible(table)[-1] == (b"r", b"q", 10, b"kept")


def test_unassigned_tables_verify_and_reopen(table: Table, tmp_path: Path) -> None:
    """The -1 entries are a valid manifest state: verify passes; a new handle reads them."""
    table.load_cells(cells((b"q", 10, b"old")))
    table.load_cells(cells((b"q", 10, b"bulk")), assign_seq_id=False)
    assert verify(table).ok
    again = connect(tmp_path).table("t")
    assert visible(again) == [(b"r", b"q", 10, b"old")]
    assert sorted(f.seq for f in again.metadata.files) == [UNASSIGNED_SEQ, 1]


MAPPING = {"row_key": "id", "columns": {"f:q": "v"}, "timestamp": "ts"}


def test_mapping_load_without_seq_id(table: Table) -> None:
    """``Table.load(..., assign_seq_id=False)``: the bulk loader's option (R14.5)."""
    table.load(pd.DataFrame({"id": ["r"], "v": ["old"], "ts": [10]}), mapping=MAPPING)
    report = table.load(
        pd.DataFrame({"id": ["r", "s"], "v": ["bulk", "bulk-s"], "ts": [10, 10]}),
        mapping=MAPPING,
        assign_seq_id=False,
    )
    assert report.seq is None
    assert visible(table) == [(b"r", b"q", 10, b"old"), (b"s", b"q", 10, b"bulk-s")]
    assert sorted(f.seq for f in table.metadata.files) == [UNASSIGNED_SEQ, 1]


def test_hfile_output_refuses_unassigned(table: Table, tmp_path: Path) -> None:
    """HFile output commits nothing here: the option does not apply."""
    with pytest.raises(InvalidArgumentError, match="assign_seq_id"):
        table.load(
            pd.DataFrame({"id": ["r"], "v": ["x"], "ts": [1]}),
            mapping=MAPPING,
            hfile_output=str(tmp_path / "out"),
            assign_seq_id=False,
        )


def test_cli_load_cells_and_load_no_assign_seq_id(tmp_path: Path) -> None:
    """``cellstore load-cells/load --no-assign-seq-id`` (R14.5)."""
    root = str(tmp_path / "wh")
    connect(root).create_table("t", families=[{"name": "f", "max_versions": 5}])
    runner = CliRunner()
    first = tmp_path / "first.csv"
    first.write_text("row,family,qualifier,ts,type,value\nr,f,q,10,Put,old\n")
    bulk = tmp_path / "bulk.csv"
    bulk.write_text("row,family,qualifier,ts,type,value\nr,f,q,10,Put,bulk\nr,f,p,10,Put,p\n")
    for args in (
        ["load-cells", "t", str(first)],
        ["load-cells", "t", str(bulk), "--no-assign-seq-id"],
    ):
        result = runner.invoke(cli, ["--root", root, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    assert "sequence number none" in result.output
    data = tmp_path / "data.csv"
    data.write_text("id,v,ts\nr,csv,10\n")
    result = runner.invoke(
        cli,
        [
            "--root",
            root,
            "--output",
            "json",
            "load",
            "t",
            str(data),
            "--row-key",
            "id",
            "--column",
            "f:q=v",
            "--timestamp",
            "ts",
            "--no-assign-seq-id",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["seq"] is None
    table = connect(root).table("t")
    assert visible(table) == [(b"r", b"p", 10, b"p"), (b"r", b"q", 10, b"old")]
    assert sorted(f.seq for f in table.metadata.files) == [UNASSIGNED_SEQ, UNASSIGNED_SEQ, 1]

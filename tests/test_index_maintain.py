"""Indexes kept current by every load (docs/format.md 12.6).

The oracle for every lookup is a full scan of the data table filtered by value (what an
index-less reader sees), and ``verify_index`` (a full rebuild compared with the index)
must find nothing after any load. Delete semantics follow docs/hbase-semantics.md: a
Delete hides one version (R4.1), a DeleteColumn all versions up to its timestamp (R4.2),
a DeleteFamily a whole family of the row (R4.3); a later load wins ties (R3.2).
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellstore import connect
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.jobs import compact
from cellstore.jobs.index import (
    build_index,
    create_index,
    definition_of,
    open_index,
    verify_index,
)
from cellstore.jobs.index.definition import IndexDefinition
from cellstore.loader import LoadMapping
from clusters import process_client


def cells(rows, family, qualifier, values, ts, kind="Put"):
    n = len(rows)
    return pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "family": [family] * n,
            "qualifier": pa.array([qualifier] * n, pa.binary()),
            "ts": pa.array(ts if isinstance(ts, list) else [ts] * n, pa.int64()),
            "type": [kind] * n,
            "value": pa.array(values, pa.binary()),
        }
    )


def oracle(table, column, value):
    """Rows whose visible ``column`` value is ``value``: a full scan, filtered."""
    found = table.scan(columns=[column]).to_arrow()
    hit = pc.equal(found.column("value"), pa.scalar(value, pa.binary()))
    return sorted(found.filter(hit).column("row").to_pylist())


def looked_up(table, name, value):
    return sorted(set(open_index(table, name).lookup(value).column("row").to_pylist()))


@pytest.fixture
def users(any_root):
    wh = connect(any_root)
    t = wh.create_table("ns:users", families=["info", "stats"], splits=[b"g", b"p"])
    create_index(t, name="by_email", column="info:email", covered=["stats:n"])
    return wh.table("ns:users")


def test_every_kind_of_write_keeps_lookups_exact(users):
    wh = users.warehouse
    rows = [f"{c}{i}".encode() for i, c in enumerate("abcdghpqz")]
    users.load_cells(
        pa.concat_tables(
            [
                cells(
                    rows,
                    "info",
                    b"email",
                    [b"x", b"y", b"x", b"z", b"y", b"x", b"z", b"y", b"x"],
                    10,
                ),
                cells(rows[::2], "stats", b"n", [b"1", b"2", b"3", b"4", b"5"], 10),
            ]
        )
    )
    t = wh.table("ns:users")
    for v in (b"x", b"y", b"z"):
        assert looked_up(t, "by_email", v) == oracle(t, "info:email", v)
    assert verify_index(t, name="by_email").ok
    steps = [
        cells([b"a0"], "info", b"email", [b"y"], 20),  # overwrite (R3.1)
        cells([b"b1"], "info", b"email", [b""], 10, "DeleteColumn"),  # R4.2 at the value ts
        cells([b"c2"], "info", b"", [b""], 30, "DeleteFamily"),  # R4.3
        cells([b"d3"], "stats", b"n", [b"new"], 40),  # covered only
        cells([b"g4"], "info", b"email", [b"old"], 5),  # older: masked (R2.1)
        cells([b"a0"], "info", b"email", [b""], 20, "Delete"),  # R4.1: back to x
        cells([b"new"], "info", b"email", [b"z"], 50),  # a new row
        cells([b"p6"], "info", b"email", [b"x"], 10),  # tie: later wins (R3.2)
    ]
    for step in steps:
        t.load_cells(step)
        t = wh.table("ns:users")
        for v in (b"x", b"y", b"z", b"old"):
            assert looked_up(t, "by_email", v) == oracle(t, "info:email", v), (step, v)
        report = verify_index(t, name="by_email")
        assert report.ok, (step.to_pylist(), report)
    assert looked_up(t, "by_email", b"x") == [b"a0", b"h5", b"p6", b"z8"]
    d3 = open_index(t, "by_email").scan(b"z")
    assert (
        dict(zip(d3.column("row").to_pylist(), d3.column("stats:n").to_pylist(), strict=True))[
            b"d3"
        ]
        == b"new"
    )
    # The index commits come first, one per load that changed it, each naming its load.
    history = wh.table("ns:users_idx_by_email").history()
    maintained = [h for h in history if h.operation == "index-maintain"]
    assert len(maintained) == 1 + len(steps) - 1  # the masked older put changes nothing
    # A compaction (major: markers and masked cells go) leaves lookups exact.
    compact(t, major=True)
    t = wh.table("ns:users")
    for v in (b"x", b"y", b"z"):
        assert looked_up(t, "by_email", v) == oracle(t, "info:email", v)
    assert verify_index(t, name="by_email").ok


def test_bulk_loader_path_and_batch_indexes(users):
    """Table.load (the Dask loader) maintains indexes too; maintain=False ones are left."""
    wh = users.warehouse
    create_index(users, name="by_n", column="stats:n", maintain=False)
    df = pd.DataFrame(
        {
            "id": ["a1", "h2", "q3"],
            "email": ["m@x", "n@x", "m@x"],
            "n": ["1", "2", "3"],
            "ts": [100, 100, 100],
        }
    )
    mapping = LoadMapping.simple(
        row_key="id", columns=["info:email=email", "stats:n=n"], timestamp="ts", timestamp_unit="ms"
    )
    users.load(df, mapping=mapping, key_advice="off")
    t = wh.table("ns:users")
    assert looked_up(t, "by_email", b"m@x") == [b"a1", b"q3"]
    assert verify_index(t, name="by_email").ok
    assert looked_up(t, "by_n", b"2") == []  # a batch index waits for its build
    assert verify_index(t, name="by_n").missing == 3
    build_index(t, name="by_n")
    assert looked_up(t, "by_n", b"2") == [b"h2"]
    assert definition_of(t, "by_n").maintain is False


def test_salted_composite_index_is_maintained(any_root):
    wh = connect(any_root)
    spec = RowKeySpec(
        fields=(KeyField(name="user", type="string"), KeyField(name="seq", type="int64")),
        salt_buckets=4,
    )
    t = wh.create_table("ev", families=["d"], row_key=spec)
    create_index(t, name="kind_user", expression=["string(d:kind)", "key(user)"])
    records = pa.table({"user": ["ann", "bob", "ann"], "seq": [1, 1, 2]})
    keys = spec.encode(records)
    t.load_cells(
        cells(keys.to_pylist(), "d", b"kind", [b"buy", b"buy", b"view"], 5), keys="physical"
    )
    t = wh.table("ev")
    index = open_index(t, "kind_user")
    assert len(index.lookup(("buy", "ann")).column("row").unique()) == 1
    t.load_cells(cells([keys[2].as_py()], "d", b"kind", [b"buy"], 9), keys="physical")
    t = wh.table("ev")
    assert len(open_index(t, "kind_user").lookup(("buy", "ann")).column("row").unique()) == 2
    assert open_index(t, "kind_user").lookup(("view",)).num_rows == 0
    assert verify_index(t, name="kind_user").ok


def test_version_1_definitions_load_as_maintained():
    doc = {
        "format-version": 1,
        "name": "e",
        "table": "ns:t",
        "index-table": "ns:t_idx_e",
        "family": "0",
        "parts": [{"column": "f:e", "codec": "string"}],
        "covered": [],
    }
    old = IndexDefinition.from_json(json.dumps(doc))
    assert old.maintain is True and old.format_version == 2
    assert old == IndexDefinition.build("ns:t", name="e", column="f:e", codec="string")
    assert IndexDefinition.from_json(old.to_json()) == old


OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "put", "delete", "deletecolumn", "deletefamily"]),
        st.sampled_from([b"a", b"f", b"g", b"k", b"p", b"x"]),  # rows over 3 regions
        st.sampled_from([b"v1", b"v2", b"v3"]),
        st.integers(min_value=1, max_value=6),  # few timestamps: ties
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(OPS, min_size=1, max_size=4))
def test_random_writes_agree_with_a_scan(tmp_path_factory, batches):
    """Random loads of puts, deletes and overwrites: lookups equal a brute-force scan."""
    wh = connect(tmp_path_factory.mktemp("wh"))
    t = wh.create_table("t", families=["f"], splits=[b"g", b"p"])
    create_index(t, name="v", column="f:v")
    kinds = {
        "put": "Put",
        "delete": "Delete",
        "deletecolumn": "DeleteColumn",
        "deletefamily": "DeleteFamily",
    }
    for batch in batches:
        parts = []
        for op, row, value, ts in batch:
            qualifier = b"" if op == "deletefamily" else b"v"
            parts.append(
                cells([row], "f", qualifier, [value if op == "put" else b""], ts, kinds[op])
            )
        t.load_cells(pa.concat_tables(parts))
        t = wh.table("t")
        for value in (b"v1", b"v2", b"v3"):
            assert looked_up(t, "v", value) == oracle(t, "f:v", value)
        assert verify_index(t, name="v").ok


def test_cli_create_maintained_and_verify_all(tmp_path):
    from click.testing import CliRunner

    from cellstore.cli.console import cli

    root = str(tmp_path / "wh")
    t = connect(root).create_table("ns:users", families=["info"])
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, ["--root", root, *args])

    made = run("index", "create", "ns:users", "by_email", "--column", "info:email")
    assert made.exit_code == 0 and "kept current by every load" in made.output, made.output
    batch = run("index", "create", "ns:users", "by_e2", "--column", "info:email", "--no-maintain")
    assert batch.exit_code == 0 and "updated by builds only" in batch.output
    t.load_cells(cells([b"r1", b"r2"], "info", b"email", [b"x@a", b"y@b"], 5))
    found = run("index", "lookup", "ns:users", "by_email", "x@a")
    assert found.exit_code == 0 and "1 row(s)" in found.output and "r1" in found.output
    every = run("--output", "json", "index", "verify", "ns:users")
    doc = json.loads(every.output)
    assert every.exit_code == 9 and doc["ok"] is False
    assert {r["index"]: r["missing"] for r in doc["indexes"]} == {"by_e2": 2, "by_email": 0}
    assert run("index", "build", "ns:users", "by_e2").exit_code == 0
    assert run("index", "verify", "ns:users").exit_code == 0


def test_load_without_sequence_id_loses_ties_in_the_index_too(users):
    """R14.5: a file without a sequence id loses every tie, so the index keeps the old value."""
    wh = users.warehouse
    users.load_cells(cells([b"a", b"b"], "info", b"email", [b"x", b"x"], 10))
    users.load_cells(
        cells([b"a", b"b"], "info", b"email", [b"y", b"y"], [10, 11]), assign_seq_id=False
    )
    t = wh.table("ns:users")
    for v in (b"x", b"y"):
        assert looked_up(t, "by_email", v) == oracle(t, "info:email", v)
    assert oracle(t, "info:email", b"x") == [b"a"]
    assert verify_index(t, name="by_email").ok


def test_load_on_a_local_cluster_and_clones_leave_the_source_index(tmp_path):
    """Table.load with a distributed client (processes) maintains the index at its commit;
    a clone carries the definition but its loads do not touch the source's index."""
    from cellstore.jobs import clone, snapshot

    wh = connect(tmp_path / "wh")
    t = wh.create_table("ns:t", families=["f"], splits=[b"k3"])
    create_index(t, name="v", column="f:v")
    df = pd.DataFrame({"id": [f"k{i}" for i in range(6)], "v": ["a", "b"] * 3})
    mapping = LoadMapping.simple(row_key="id", columns=["f:v=v"])
    with process_client(1) as client:
        t.load(df, mapping=mapping, client=client, key_advice="off")
    t = wh.table("ns:t")
    assert looked_up(t, "v", b"a") == [b"k0", b"k2", b"k4"]
    assert verify_index(t, name="v").ok
    snapshot(t, "s1")
    copy = clone(t, "s1", "ns:copy")
    assert copy is not None
    before = wh.table("ns:t_idx_v").version
    wh.table("ns:copy").load_cells(cells([b"zz"], "f", b"v", [b"a"], 99))
    assert wh.table("ns:t_idx_v").version == before
    assert verify_index(t, name="v").ok

"""Local indexes: index rows in the data table's own regions (docs/format.md 12.5).

Lookups are checked against a full scan of the data table filtered by value; verify must
agree after loads, deletes, splits, merges and compactions.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellstore import connect
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import InvalidArgumentError
from cellstore.jobs import compact, merge, split
from cellstore.jobs.index import build_index, create_index, drop_index, open_index, verify_index
from cellstore.jobs.index.definition import LOCAL_FAMILY, IndexDefinition
from cellstore.jobs.index.local import region_prefix


def cells(rows, family, qualifier, values, ts=10, kind="Put"):
    n = len(rows)
    return pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "family": [family] * n,
            "qualifier": pa.array([qualifier] * n, pa.binary()),
            "ts": pa.array([ts] * n, pa.int64()),
            "type": [kind] * n,
            "value": pa.array(values, pa.binary()),
        }
    )


def oracle(table, column, value):
    found = table.scan(columns=[column]).to_arrow()
    hit = pc.equal(found.column("value"), pa.scalar(value, pa.binary()))
    return sorted(found.filter(hit).column("row").to_pylist())


def looked_up(table, name, value):
    return sorted(set(open_index(table, name).lookup(value).column("row").to_pylist()))


def check(table, values=(b"x", b"y", b"z")):
    table = table.warehouse.table(table.name.full)
    for value in values:
        assert looked_up(table, "loc", value) == oracle(table, "f:v", value), value
    report = verify_index(table, name="loc")
    assert report.ok, report
    return table


ROWS = [b"a1", b"c2", b"g3", b"k4", b"m5", b"p6", b"t7", b"x8"]


@pytest.fixture
def data(any_root):
    wh = connect(any_root)
    t = wh.create_table("ns:d", families=["f"], splits=[b"g", b"p"])
    t.load_cells(cells(ROWS, "f", b"v", [b"x", b"y", b"x", b"z", b"y", b"x", b"z", b"x"]))
    return wh.table("ns:d")


def test_local_index_layout_hidden_family_and_lookups(data):
    d = create_index(data, name="loc", column="f:v", local=True, covered=[])
    assert d.local and d.index_table == "ns:d" and d.family == LOCAL_FAMILY
    assert IndexDefinition.from_json(d.to_json()) == d
    build_index(data, name="loc")
    t = data.warehouse.table("ns:d")
    assert LOCAL_FAMILY in t.metadata.family_names
    # Hidden from ordinary reads, there when asked for.
    assert set(t.scan().to_arrow().column("family").to_pylist()) == {"f"}
    assert set(t.get(b"a1").column("family").to_pylist()) == {"f"}
    stored = t.scan(families=[LOCAL_FAMILY]).to_arrow()
    assert stored.num_rows == len(ROWS)
    # Each index row sits in its data row's region, after that region's start key.
    by_region = {r.start: r for r in t.regions}
    for key in stored.column("row").to_pylist():
        region = next(r for r in t.regions if r.start <= key and (not r.end or key < r.end))
        assert key.startswith(region_prefix(region.start, "loc")), key
        assert region.start in by_region
    # A lookup fans out: one range per region, and matches the scan.
    check(t)
    index = open_index(t, "loc")
    assert index.scan("x").column("row").to_pylist() == [b"a1", b"g3", b"p6", b"x8"]
    assert sorted(index.lookup_range("y", None).column("row").unique().to_pylist()) == sorted(
        oracle(t, "f:v", b"y") + oracle(t, "f:v", b"z")
    )
    with pytest.raises(InvalidArgumentError, match="built in full"):
        build_index(t, name="loc", mode="incremental")


def test_local_index_is_maintained_and_survives_split_merge_compact(data):
    create_index(data, name="loc", column="f:v", local=True)
    create_index(data, name="other", column="f:v", local=True)  # shares the family
    build_index(data, name="loc")
    t = check(data)
    t.load_cells(cells([b"a1", b"h9"], "f", b"v", [b"z", b"x"], ts=20))
    t.load_cells(cells([b"g3"], "f", b"", [b""], ts=30, kind="DeleteFamily"))
    t = check(t)
    assert verify_index(t, name="other").ok
    split(t, at=[b"c", b"t"])
    t = check(t)
    regions = [r.id for r in t.regions]
    merge(t, regions=regions[1:4])
    t = check(t)
    t.load_cells(cells([b"k4"], "f", b"v", [b"y"], ts=40))
    compact(t, major=True)
    t = check(t)
    assert verify_index(t, name="other").ok
    # Dropping one local index keeps the other's rows.
    drop_index(t, name="other")
    t = check(t)
    names = {k for k in t.scan(families=[LOCAL_FAMILY]).to_arrow().column("row").to_pylist()}
    assert all(region_prefix(b"", "other") not in k for k in names)


def test_local_indexes_are_refused_on_salted_tables(tmp_path):
    wh = connect(tmp_path / "wh")
    spec = RowKeySpec(fields=(KeyField(name="u", type="string"),), salt_buckets=2)
    t = wh.create_table("s", families=["f"], row_key=spec)
    with pytest.raises(InvalidArgumentError, match="salted"):
        create_index(t, name="loc", column="f:v", local=True)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["put", "put", "delete", "split", "merge"]),
            st.sampled_from(ROWS),
            st.sampled_from([b"x", b"y", b"z"]),
            st.integers(11, 14),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_random_writes_and_region_changes(tmp_path_factory, ops):
    wh = connect(tmp_path_factory.mktemp("wh"))
    t = wh.create_table("ns:d", families=["f"], splits=[b"g", b"p"])
    create_index(t, name="loc", column="f:v", local=True)
    t.load_cells(cells(ROWS, "f", b"v", [b"x", b"y", b"x", b"z", b"y", b"x", b"z", b"x"]))
    for op, row, value, ts in ops:
        t = wh.table("ns:d")
        if op == "put":
            t.load_cells(cells([row], "f", b"v", [value], ts=ts))
        elif op == "delete":
            t.load_cells(cells([row], "f", b"v", [b""], ts=ts, kind="DeleteColumn"))
        elif op == "split":
            split(t, at=[row])
        elif len(t.regions) > 1:
            merge(t, regions=[r.id for r in t.regions[:2]])
        check(t)


def test_cli_local_index(tmp_path):
    from click.testing import CliRunner

    from cellstore.cli.console import cli

    root = str(tmp_path / "wh")
    t = connect(root).create_table("ns:d", families=["f"], splits=[b"g"])
    t.load_cells(cells([b"a", b"h"], "f", b"v", [b"x", b"x"]))
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, ["--root", root, *args])

    built = run("index", "build", "ns:d", "loc", "--column", "f:v", "--local")
    assert built.exit_code == 0, built.output
    listed = run("index", "list", "ns:d")
    assert "local: rows in the table's regions" in listed.output
    found = run("index", "lookup", "ns:d", "loc", "x")
    assert found.exit_code == 0 and "2 row(s)" in found.output
    assert run("index", "verify", "ns:d").exit_code == 0

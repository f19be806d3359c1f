"""Secondary indexes: key encoding, full and incremental builds, lookups, verify, CLI.

The oracle for every lookup is a full scan of the data table filtered by value, so a
lookup must return exactly the rows a scan + filter finds, whatever the index holds.
"""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cellstore import connect
from cellstore.cli.console import cli
from cellstore.core.codecs import encode_values as encode_cell_values
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import InvalidArgumentError, InvalidFamilyError
from cellstore.jobs.index import (
    INDEX_FAMILY,
    IndexDefinition,
    IndexNotFoundError,
    IndexPart,
    IndexType,
    build_index,
    create_index,
    drop_index,
    list_indexes,
    open_index,
    verify_index,
)
from cellstore.jobs.index.keys import decode_keys, encode_parts, encode_values, index_keys
from cellstore.jobs.index.rows import read_rows
from clusters import process_client

# Values whose encodings are easy to get wrong: prefixes of each other, 0x00 and 0xFF
# bytes, the empty value, and a value ending in the terminator's second byte.
TRICKY = [
    b"ab",
    b"abc",
    b"a",
    b"a\x00",
    b"a\x00b",
    b"a\x00\x01",
    b"\xff",
    b"\xff\xff",
    b"",
    b"\x00",
    b"\x01",
    b"ab\x00",
]


def put(rows, family, qualifier, values, ts):
    n = len(rows)
    return pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "family": [family] * n,
            "qualifier": pa.array([qualifier] * n, pa.binary()),
            "ts": pa.array(ts if isinstance(ts, list) else [ts] * n, pa.int64()),
            "type": ["Put"] * n,
            "value": pa.array(values, pa.binary()),
        }
    )


def marker(row, family, qualifier, ts, kind):
    return pa.table(
        {
            "row": pa.array([row], pa.binary()),
            "family": [family],
            "qualifier": pa.array([qualifier], pa.binary()),
            "ts": pa.array([ts], pa.int64()),
            "type": [kind],
            "value": pa.array([b""], pa.binary()),
        }
    )


def rows_with(table, column, value):
    """The oracle: rows whose visible ``column`` value is ``value`` (full scan + filter)."""
    cells = table.scan(columns=[column]).to_arrow()
    return sorted(
        cells.filter(pc.equal(cells.column("value"), pa.scalar(value, pa.binary())))
        .column("row")
        .to_pylist()
    )


def rows_of(result):
    return sorted(set(result.column("row").to_pylist()))


@pytest.fixture
def users(any_root):
    """``ns:users`` over 3 regions: info:email (bytes, tricky values), info:age (long),
    stats:n (covered)."""
    wh = connect(any_root)
    t = wh.create_table("ns:users", families=["info", "stats"], splits=[b"g", b"p"])
    rows = [f"{c}{i}".encode() for i, c in enumerate("abcdefghijklmnopqrstuvwx")]
    emails = [TRICKY[i % len(TRICKY)] for i in range(len(rows))]
    ages = encode_cell_values(
        pa.array([(-1) ** i * i * 7 for i in range(len(rows))]), "long", field="age"
    )
    t.load_cells(
        pa.concat_tables(
            [
                put(rows, "info", b"email", emails, 10),
                put(rows, "info", b"age", ages.to_pylist(), 10),
                put(rows[::3], "stats", b"n", [str(i).encode() for i in range(len(rows[::3]))], 11),
            ]
        )
    )
    return wh.table("ns:users")


# ---------------------------------------------------------------------------- encoding
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.binary(max_size=6), min_size=1, max_size=12),
    st.lists(st.binary(min_size=1, max_size=4), min_size=1, max_size=12),
)
def test_bytes_parts_sort_as_values_are_prefix_free_and_round_trip(values, rows):
    rows = (rows * len(values))[: len(values)]
    encoded = encode_parts([IndexType.BYTES], [pa.array(values, pa.binary())]).to_pylist()
    assert sorted(range(len(values)), key=lambda i: (values[i], i)) == sorted(
        range(len(values)), key=lambda i: (encoded[i], i)
    )
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            if a != b:
                assert not encoded[j].startswith(encoded[i])
    keys = index_keys(pa.array(encoded, pa.binary()), pa.array(rows, pa.binary()))
    decoded = decode_keys([IndexType.BYTES], keys)
    assert decoded.ok.all()
    assert decoded.parts[0].to_pylist() == values
    assert decoded.rows.to_pylist() == rows


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(2**63), 2**63 - 1),
            st.floats(allow_nan=False, width=64),
            st.text(max_size=4),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_composite_parts_sort_as_tuples_and_round_trip(tuples):
    types = [IndexType.INT64, IndexType.FLOAT64, IndexType.STRING]
    columns = [pa.array([t[i] for t in tuples]) for i in range(3)]
    encoded = encode_parts(types, columns).to_pylist()
    norm = [(a, b + 0.0, c.encode()) for a, b, c in tuples]  # -0.0 == 0.0; UTF-8 byte order
    by_value = sorted(range(len(tuples)), key=lambda i: (norm[i], i))
    by_key = sorted(range(len(tuples)), key=lambda i: (encoded[i], norm[i], i))
    assert [norm[i] for i in by_value] == [norm[i] for i in by_key]
    decoded = decode_keys(
        types,
        index_keys(pa.array(encoded, pa.binary()), pa.array([b"r"] * len(tuples), pa.binary())),
    )
    assert decoded.ok.all()
    assert decoded.parts[0].to_pylist() == [t[0] for t in tuples]
    assert decoded.parts[2].to_pylist() == [t[2] for t in tuples]


def test_documented_key_examples():
    """docs/format.md, section 12.2: the examples are normative."""
    strings = encode_parts([IndexType.STRING], [pa.array(["ab", "a\x00b"])])
    keys = index_keys(strings, pa.array([b"r1", b"r2"], pa.binary())).to_pylist()
    assert keys == [bytes.fromhex("6162 0001 7231"), bytes.fromhex("61 00ff 62 0001 7232")]
    assert encode_values([IndexType.INT64], [-2], ["n"]) + b"r" == bytes.fromhex(
        "7f ff ff ff ff ff ff fe 72"
    )


def test_float_and_boolean_encodings():
    floats = [-math.inf, -1.5, -0.0, 0.0, 1e-300, 2.5, math.inf, math.nan]
    enc = encode_parts([IndexType.FLOAT64], [pa.array(floats)]).to_pylist()
    assert enc[2] == enc[3]  # -0.0 is 0.0
    assert enc == sorted(enc)  # NaN (canonical) sorts after +inf
    assert encode_values([IndexType.BOOLEAN], [True], ["b"]) == b"\x01"
    with pytest.raises(InvalidArgumentError, match="part b"):
        encode_values([IndexType.INT8], [300], ["b"])
    with pytest.raises(InvalidArgumentError, match="2 values"):
        encode_values([IndexType.INT8], [1, 2], ["b"])


def test_malformed_keys_do_not_parse():
    keys = pa.array([b"ab\x00\x01", b"a\x00b\x00\x01r", b"\x00\x01r", b"\x80", None], pa.binary())
    text = decode_keys([IndexType.BYTES], keys)
    assert text.ok.tolist() == [False, False, True, False, False]  # no row; bad escape; ok
    assert text.parts[0].to_pylist()[2] == b""
    assert not decode_keys([IndexType.INT32], keys).ok[3]  # cut short


# ------------------------------------------------------------------- definitions
def test_definition_parsing_naming_and_storage(users):
    d = IndexDefinition.build(
        users.name.full, name="by_age", expression=["long(info:age)", "key(user)", "info:email"]
    )
    assert d.parts == (
        IndexPart.column("info:age", codec="long"),
        IndexPart.key("user"),
        IndexPart.column("info:email"),
    )
    assert d.index_table == "ns:users_idx_by_age"
    assert IndexDefinition.from_json(d.to_json()) == d
    with pytest.raises(InvalidArgumentError):
        IndexDefinition.build("ns:users", name="-bad", column="info:email")
    with pytest.raises(InvalidArgumentError):
        IndexDefinition.build("ns:users", name="x", column="info:email", expression=["a:b"])
    with pytest.raises(InvalidArgumentError, match="key"):
        IndexPart.parse("nocolon")

    created = create_index(users, name="by_email", column="info:email", covered=["stats:n"])
    assert create_index(users, name="by_email", column="info:email", covered="stats:n") == created
    wh = users.warehouse
    props = wh.table("ns:users").metadata.properties
    assert IndexDefinition.from_json(props["index.by_email"]) == created
    idx_props = wh.table("ns:users_idx_by_email").metadata.properties
    assert IndexDefinition.from_json(idx_props["index.definition"]) == created
    assert [f.name for f in wh.table("ns:users_idx_by_email").families] == [INDEX_FAMILY]
    assert list_indexes(users) == [created]
    with pytest.raises(InvalidArgumentError, match="defined differently"):
        create_index(users, name="by_email", column="info:email", codec="string")
    with pytest.raises(InvalidFamilyError):
        create_index(users, name="nope", column="other:x")
    with pytest.raises(InvalidArgumentError, match="row key"):
        create_index(users, name="bykey", expression=["key(user)"])
    with pytest.raises(IndexNotFoundError):
        build_index(users, name="unknown")
    drop_index(users, name="by_email")
    assert list_indexes(users) == []
    assert not wh.exists("ns:users_idx_by_email")


# --------------------------------------------------------------------------- lookups
def test_lookup_returns_exactly_the_rows_with_the_value(users):
    report = build_index(users, name="by_email", column="info:email", covered=["stats:n"])
    assert report.rows_read == 24 and report.index_rows == 24 and report.index_version == 2
    index = open_index(users, "by_email")
    for value in [*TRICKY, b"zz", b"a\x00\x00"]:
        got = index.lookup(value)
        assert rows_of(got) == rows_with(users, "info:email", value), value
        # every cell of those rows, exactly as a get returns them
        for row in rows_of(got):
            assert got.filter(pc.equal(got.column("row"), row)).equals(users.get(row))
    assert rows_of(index.lookup(b"ab")) != rows_of(index.lookup(b"abc"))  # no prefix leak
    narrow = index.lookup(b"ab", columns=["info:age"])
    assert set(narrow.column("qualifier").to_pylist()) == {b"age"}
    wide = index.lookup(b"\xff", shape="wide", columns=["info:email", "stats:n"])
    assert wide.column_names == ["row", "info:email", "stats:n"]
    assert wide.column("info:email").to_pylist() == [b"\xff"] * wide.num_rows


def test_covered_scan_reads_only_the_index(users):
    build_index(users, name="by_email", column="info:email", covered=["stats:n", "info:age"])
    index = open_index(users, "by_email")
    entries = index.scan(b"ab", column_types={"info:age": "long"})
    assert entries.column_names == ["info:email", "row", "ts", "stats:n", "info:age"]
    data = users.scan(
        shape="wide", column_types={"info:age": "long", "stats:n": "bytes"}
    ).to_arrow()
    by_row = {r["row"]: r for r in data.to_pylist()}
    assert entries.column("row").to_pylist() == rows_with(users, "info:email", b"ab")
    for e in entries.to_pylist():
        assert e["info:email"] == b"ab"
        assert e["ts"] == (11 if by_row[e["row"]]["stats:n"] is not None else 10)  # newest cell
        assert e["stats:n"] == by_row[e["row"]]["stats:n"]
        assert e["info:age"] == by_row[e["row"]]["info:age"]
    # The index is read as it is: a change in the data shows only after a build.
    users.load_cells(put([entries.column("row")[0].as_py()], "stats", b"n", [b"new"], 50))
    assert index.scan(b"ab").column("stats:n")[0].as_py() != b"new"
    assert len(index.scan()) == 24


def test_numeric_index_ranges_follow_numeric_order(users):
    report = build_index(users, name="by_age", column="info:age", codec="long", batch_cells=10)
    assert report.files == 2 and report.index_rows == 24  # overlapping files, merged on read
    index = open_index(users, "by_age")
    ages = users.scan(
        columns=["info:age"], shape="wide", column_types={"info:age": "long"}
    ).to_arrow()
    pairs = dict(
        zip(ages.column("row").to_pylist(), ages.column("info:age").to_pylist(), strict=True)
    )
    got = index.lookup_range(-50, 50)
    expected = sorted((a, r) for r, a in pairs.items() if -50 <= a < 50)
    order = list(dict.fromkeys(got.column("row").to_pylist()))
    assert order == [r for _, r in expected]  # value order, then row
    assert rows_of(index.lookup(-7)) == [r for r, a in pairs.items() if a == -7]
    assert index.scan(lo=140).column("info:age").to_pylist() == sorted(
        a for a in pairs.values() if a >= 140
    )
    assert index.lookup_range(50, -50).num_rows == 0


def test_expression_over_key_fields_and_columns(any_root):
    wh = connect(any_root)
    spec = RowKeySpec(
        fields=(KeyField(name="user", type="string"), KeyField(name="seq", type="int64")),
        salt_buckets=4,
    )
    t = wh.create_table("ev", families=["d"], row_key=spec)
    records = pa.table(
        {
            "user": ["ann", "bob", "ann", "cy", "bob", "ann"],
            "seq": [1, 1, 2, 1, 2, 3],
            "kind": ["buy", "buy", "view", "view", "buy", "buy"],
        }
    )
    keys = spec.encode(records)
    salt_free = pc.binary_slice(keys, 1, 1 << 20)
    t.load_cells(
        put(
            salt_free.to_pylist(),
            "d",
            b"kind",
            [k.encode() for k in records.column("kind").to_pylist()],
            5,
        ).set_column(0, "row", keys),
        keys="physical",
    )
    t = wh.table("ev")
    with pytest.raises(InvalidArgumentError, match="cannot also be covered"):
        create_index(t, name="x", column="d:kind", covered=["d:kind"])
    build_index(t, name="by_kind_user", expression=["string(d:kind)", "key(user)"], maintain=False)
    index = open_index(t, "by_kind_user")
    scanned = t.scan(shape="wide").to_arrow().to_pylist()
    want = sorted(r["row"] for r in scanned if r["d:kind"] == b"buy" and r["user"] == "ann")
    assert rows_of(index.lookup(("buy", "ann"))) == want and len(want) == 2
    assert len(rows_of(index.lookup("buy"))) == 4
    wide = index.lookup(("view",), shape="wide")
    assert wide.column("user").to_pylist() == ["ann", "cy"]  # key columns, as a wide scan
    entries = index.scan(("buy",))
    assert entries.column("user").to_pylist() == ["ann", "ann", "bob", "bob"]
    # Incremental on a salted table: rows are salt-free in the index and in lookups.
    t.load_cells(put([keys[0].as_py()], "d", b"kind", [b"view"], 9), keys="physical")
    t = wh.table("ev")
    assert build_index(t, name="by_kind_user", mode="incremental").deleted_rows == 1
    assert verify_index(t, name="by_kind_user").ok
    assert len(rows_of(open_index(t, "by_kind_user").lookup(("buy", "ann")))) == 1
    scanned = t.scan(shape="wide").to_arrow().to_pylist()
    # A key-only index covers every row of the table.
    build_index(t, name="by_seq", expression=["key(seq)"])
    assert len(open_index(t, "by_seq").scan()) == 6
    assert rows_of(open_index(t, "by_seq").lookup(1)) == sorted(
        r["row"] for r in scanned if r["seq"] == 1
    )


def test_span_reads_match_point_reads(users, monkeypatch):
    import cellstore.jobs.index.rows as rows_module

    wanted = pa.array([b"b1", b"c2", b"k10", b"w22", b"zz-absent"], pa.binary())
    point = [
        read_rows(users, wanted, columns=["info:email", "stats"]),
        read_rows(users, wanted, families=["info"], raw=True),
    ]
    monkeypatch.setattr(rows_module, "POINT_READS", 1)
    span = [
        read_rows(users, wanted, columns=["info:email", "stats"]),
        read_rows(users, wanted, families=["info"], raw=True),
    ]
    assert point[0].equals(span[0]) and point[1].equals(span[1])
    assert rows_of(point[0]) == [b"b1", b"c2", b"k10", b"w22"]
    build_index(users, name="by_email", column="info:email")  # lookups take the span path
    assert rows_of(open_index(users, "by_email").lookup(b"ab")) == rows_with(
        users, "info:email", b"ab"
    )


# ------------------------------------------------------------ verify and incremental
def test_verify_reports_missing_stale_and_covered(users):
    build_index(users, name="by_email", column="info:email", covered=["stats:n"], maintain=False)
    assert verify_index(users, name="by_email").ok
    users.load_cells(
        pa.concat_tables(
            [
                put([b"zz-new"], "info", b"email", [b"fresh"], 20),  # missing
                put([b"a0"], "info", b"email", [b"changed"], 20),  # stale + missing
                put([b"d3"], "stats", b"n", [b"99"], 20),  # covered differs
            ]
        )
    )
    users = users.warehouse.table("ns:users")
    report = verify_index(users, name="by_email")
    assert not report.ok
    assert (report.missing, report.stale, report.covered, report.unparsable) == (2, 1, 1, 0)
    kinds = {(s.kind, s.row) for s in report.samples}
    assert kinds == {
        ("missing", b"zz-new"),
        ("missing", b"a0"),
        ("stale", b"a0"),
        ("covered", b"d3"),
    }
    stale = next(s for s in report.samples if s.kind == "stale")
    assert stale.value == (b"ab",)
    # Lookups never return a stale entry: a0 no longer has "ab".
    index = open_index(users, "by_email")
    assert rows_of(index.lookup(b"ab")) == rows_with(users, "info:email", b"ab")
    # Deleting an index row directly is reported as missing.
    ix = users.warehouse.table("ns:users_idx_by_email")
    key = index.scan(b"abc").column("row")[0].as_py()
    ix.load_cells(marker(index.encode(b"abc") + key, INDEX_FAMILY, b"", 1000, "DeleteFamily"))
    assert verify_index(users, name="by_email").missing == 3
    full = build_index(users, name="by_email")
    assert verify_index(users, name="by_email").ok
    live = users.warehouse.table("ns:users_idx_by_email").files
    assert {f.load_id for f in live} == {full.job_id}  # the full build replaced every file


def test_incremental_build_follows_updates_and_deletes(users):
    build_index(users, name="by_email", column="info:email", covered=["stats:n"], maintain=False)
    wh = users.warehouse
    users.load_cells(
        pa.concat_tables(
            [
                put([b"a0"], "info", b"email", [b"moved"], 30),  # value change
                put([b"new1"], "info", b"email", [b"ab"], 30),  # new row
                put([b"d3"], "stats", b"n", [b"cov"], 30),  # covered change
                marker(b"b1", "info", b"email", 30, "DeleteColumn"),  # value deleted
                marker(b"g6", "stats", b"", 30, "DeleteFamily"),  # covered deleted
                marker(b"c2", "info", b"", 30, "DeleteFamily"),  # row's family deleted
            ]
        )
    )
    users = wh.table("ns:users")
    inc = build_index(users, name="by_email", mode="incremental")
    assert inc.rows_read == 6 and inc.index_rows == 4 and inc.deleted_rows == 3
    assert inc.since_seq == 2 and inc.index_version is not None
    assert verify_index(users, name="by_email").ok
    index = open_index(users, "by_email")
    for value in [*TRICKY, b"moved"]:
        assert rows_of(index.lookup(value)) == rows_with(users, "info:email", value)
    assert index.scan(b"moved").column("stats:n").to_pylist() == [b"0"]
    g6 = index.scan(TRICKY[6]).filter(pc.equal(index.scan(TRICKY[6]).column("row"), b"g6"))
    assert g6.column("stats:n").to_pylist() == [None]
    # Running it again finds nothing to do and commits nothing.
    again = build_index(users, name="by_email", mode="incremental")
    assert again.index_version is None and again.cells == 0
    # A value changed and then reverted by deleting that version: the old index row was
    # hidden by a DeleteFamily at its timestamp; the rebuilt row must be visible again.
    users.load_cells(put([b"f5"], "info", b"email", [b"tmp"], 40))
    build_index(wh.table("ns:users"), name="by_email", mode="incremental")
    users = wh.table("ns:users")
    users.load_cells(marker(b"f5", "info", b"email", 40, "Delete"))
    users = wh.table("ns:users")
    build_index(users, name="by_email", mode="incremental")
    assert verify_index(users, name="by_email").ok
    index = open_index(users, "by_email")
    assert b"f5" in rows_of(index.lookup(TRICKY[5]))
    f5 = index.scan(TRICKY[5]).filter(pc.equal(index.scan(TRICKY[5]).column("row"), b"f5"))
    assert f5.column("ts").to_pylist() == [11]  # above the DeleteFamily at the data ts 10
    assert rows_of(index.lookup(b"tmp")) == []


def test_incremental_build_by_time_range(users):
    build_index(users, name="by_email", column="info:email", maintain=False)
    users.load_cells(
        pa.concat_tables(
            [
                put([b"a0"], "info", b"email", [b"late"], 500),
                put([b"h7"], "info", b"email", [b"early"], 15),
            ]
        )
    )
    users = users.warehouse.table("ns:users")
    report = build_index(users, name="by_email", mode="incremental", time_range=(100, 1000))
    assert report.rows_read == 1 and report.time_range == (100, 1000)
    result = verify_index(users, name="by_email")
    assert (result.missing, result.stale) == (1, 1)  # h7 is outside the range
    build_index(users, name="by_email", mode="incremental", time_range=(0, 100))
    assert verify_index(users, name="by_email").ok
    with pytest.raises(InvalidArgumentError, match="time_range"):
        build_index(users, name="by_email", time_range=(0, 10))


def test_incremental_needs_a_previous_build(users):
    create_index(users, name="by_email", column="info:email")
    with pytest.raises(InvalidArgumentError, match="full build first"):
        build_index(users, name="by_email", mode="incremental")


def test_full_build_on_a_local_cluster(tmp_path):
    wh = connect(tmp_path / "wh")
    t = wh.create_table("t", families=["f"], splits=[b"k10", b"k20"])
    rows = [f"k{i:02d}".encode() for i in range(30)]
    t.load_cells(put(rows, "f", b"v", [str(i % 4).encode() for i in range(30)], 1))
    with process_client(1) as client:
        report = build_index(t, name="by_v", column="f:v", client=client)
    assert report.index_rows == 30 and report.files == 3  # one file per partition
    assert verify_index(t, name="by_v").ok
    assert rows_of(open_index(t, "by_v").lookup(b"2")) == rows_with(t, "f:v", b"2")


# -------------------------------------------------------------------------------- CLI
def test_cli_build_verify_lookup(tmp_path):
    root = str(tmp_path / "wh")
    users = connect(root).create_table("ns:users", families=["info"])
    users.load_cells(put([b"r1", b"r2", b"r3"], "info", b"email", [b"x@a", b"y@b", b"x@a"], 5))
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, ["--root", root, *args])

    built = run(
        "index",
        "build",
        "ns:users",
        "by_email",
        "--column",
        "info:email",
        "--codec",
        "string",
        "--no-maintain",
    )
    assert built.exit_code == 0, built.output
    assert "Built index by_email of ns:users (full)" in built.output
    ok = run("--output", "json", "index", "verify", "ns:users", "by_email")
    assert ok.exit_code == 0 and json.loads(ok.output)["ok"] is True
    found = run("index", "lookup", "ns:users", "by_email", "x@a")
    assert found.exit_code == 0 and "2 row(s)" in found.output and "r3" in found.output
    covered = run(
        "--output", "json", "index", "lookup", "ns:users", "by_email", "y@b", "--covered-only"
    )
    assert [r["row"] for r in json.loads(covered.output)["rows"]] == ["r2"]
    users.load_cells(put([b"r2"], "info", b"email", [b"z@c"], 9))
    bad = run("index", "verify", "ns:users", "by_email")
    assert bad.exit_code == 9 and "2 problem(s)" in bad.output and "stale" in bad.output
    inc = run("--output", "json", "index", "build", "ns:users", "by_email", "--incremental")
    assert inc.exit_code == 0 and json.loads(inc.output)["deleted-rows"] == 1
    assert run("index", "verify", "ns:users", "by_email").exit_code == 0
    listed = run("--output", "json", "index", "list", "ns:users")
    assert [d["name"] for d in json.loads(listed.output)["indexes"]] == ["by_email"]
    assert run("index", "lookup", "ns:users", "nope", "x").exit_code == 3
    assert run("index", "build", "ns:users", "by_email", "--since", "5").exit_code == 2
    dropped = run("index", "drop", "ns:users", "by_email")
    assert dropped.exit_code == 0 and "Dropped index by_email" in dropped.output
    for sub in ("build", "verify", "lookup", "create", "list", "drop"):
        assert run("index", sub, "--help").exit_code == 0

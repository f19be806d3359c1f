"""Functional indexes: expressions of columns and key fields (Phoenix-style).

Every lookup is checked against an oracle that computes the expression in plain Python
over a full scan of the data table, independently of the pyarrow evaluator.
"""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cellstore import connect
from cellstore.cli.console import cli
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import InvalidArgumentError
from cellstore.jobs.index import (
    IndexDefinition,
    IndexPart,
    IndexType,
    build_index,
    create_index,
    open_index,
    verify_index,
)
from cellstore.jobs.index.expr import evaluate, parse_expression, type_of


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


def long(v):
    return struct.pack(">q", v)


def wide(table):
    """Every row as a dict of its raw column values (the oracle's input)."""
    return table.scan(shape="wide").to_arrow().to_pylist()


def rows_of(result):
    return sorted(set(result.column("row").to_pylist()))


# ---------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("upper(string(info:uname))", "UPPER(string(info:uname))"),
        ("SUBSTR( string(i:e) ,1, 3 )", "SUBSTR(string(i:e), 1, 3)"),
        ("string(a:b) || '-' || lower(key(user))", "(string(a:b) || '-') || LOWER(key(user))"),
        ("long(s:a) * 2 + long(s:b) / -3", "(long(s:a) * 2) + (long(s:b) / -3)"),
        ("-long(s:a)", "0 - long(s:a)"),
        ("'it''s' || bytes(f:q)", "'it''s' || bytes(f:q)"),
        ("(long(s:a) + 1.5) * 2", "(long(s:a) + 1.5) * 2"),
    ],
)
def test_expressions_parse_to_a_canonical_form(text, canonical):
    tree = parse_expression(text)
    assert str(tree) == canonical
    assert parse_expression(canonical) == tree
    part = IndexPart.parse(text)
    assert part.kind == "expression" and str(part) == canonical
    assert IndexPart.from_dict(part.to_dict()) == part


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os').system('x')", "unknown function"),
        ("UPPER(string(a:b)", "unexpected end"),
        ("SUBSTR(string(a:b), long(a:c))", "integer constants"),
        ("SUBSTR(string(a:b), 1, -2)", "cannot be negative"),
        ("string(a:b) ; 1", "unexpected"),
        ("UPPER('x')", "reads no column"),
        ("NOPE(a:b)", "unknown function"),
        ("UPPER(string(a:b), 2)", "takes one argument"),
    ],
)
def test_bad_expressions_are_rejected(text, message):
    with pytest.raises(InvalidArgumentError, match=message):
        IndexPart.parse(text)


def test_expression_types():
    key = {"user": IndexType.STRING, "seq": IndexType.INT32}
    assert type_of(parse_expression("UPPER(string(a:b))"), key) is IndexType.STRING
    assert type_of(parse_expression("long(a:b) + key(seq)"), key) is IndexType.INT64
    assert type_of(parse_expression("long(a:b) / 2"), key) is IndexType.FLOAT64
    assert type_of(parse_expression("double(a:b) * 2"), key) is IndexType.FLOAT64
    assert type_of(parse_expression("bytes(a:b) || key(user)"), key) is IndexType.BYTES
    assert type_of(parse_expression("SUBSTR(bytes(a:b), 2)"), key) is IndexType.BYTES
    for bad in ("UPPER(long(a:b))", "string(a:b) + 1", "SUBSTR(long(a:b), 1)", "boolean(a:b) * 2"):
        with pytest.raises(InvalidArgumentError):
            type_of(parse_expression(bad), key)
    spec = RowKeySpec(fields=(KeyField(name="user", type="string"),))
    d = IndexDefinition.build("t", name="x", expression=["UPPER(key(nope))"])
    with pytest.raises(InvalidArgumentError, match="not in the row key"):
        d.part_types(spec)


def _substr(s, start, length=None):
    """SUBSTR as documented: 1-based, 0 as 1, negative from the end, clipped (the oracle)."""
    begin = start - 1 if start > 0 else (0 if start == 0 else len(s) + start)
    end = len(s) if length is None else begin + length
    return "".join(c for i, c in enumerate(s) if begin <= i < end)


TEXT = st.text(alphabet="abcXYZ é-", max_size=8)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(TEXT, TEXT, st.integers(-(2**40), 2**40)), min_size=1, max_size=8),
    st.integers(-9, 9),
    st.one_of(st.none(), st.integers(0, 9)),
)
def test_evaluation_matches_python(rows, start, length):
    a = pa.array([r[0] for r in rows], pa.string())
    b = pa.array([r[1] for r in rows], pa.string())
    n = pa.array([r[2] for r in rows], pa.int64())
    env = {"string(f:a)": a, "string(f:b)": b, "long(f:n)": n}
    sub = f"SUBSTR(string(f:a), {start}" + (f", {length})" if length is not None else ")")
    cases = {
        "UPPER(string(f:a)) || LOWER(string(f:b))": lambda r: r[0].upper() + r[1].lower(),
        sub: lambda r: _substr(r[0], start, length),
        "string(f:a) || '/' || long(f:n)": lambda r: f"{r[0]}/{r[2]}",
        "long(f:n) * 3 - 7": lambda r: r[2] * 3 - 7,
        "long(f:n) / 4": lambda r: r[2] / 4,
    }
    for text, oracle in cases.items():
        got = evaluate(parse_expression(text), env, {}, len(rows)).to_pylist()
        assert got == [oracle(r) for r in rows], text


# ---------------------------------------------------------------------- indexes on data
@pytest.fixture
def people(any_root):
    wh = connect(any_root)
    spec = RowKeySpec(fields=(KeyField(name="user", type="string"),))
    t = wh.create_table("ns:people", families=["info", "s"], row_key=spec, splits=[b"m"])
    users = ["ann", "Bob", "cyd", "dan", "eve", "nia", "ola", "zed"]
    keys = spec.encode(pa.table({"user": users}))
    names = [b"Ann", b"bob", b"ANN", b"Dan", b"eve", b"aNN", b"Ola", b"zed"]
    t.load_cells(
        pa.concat_tables(
            [
                cells(keys.to_pylist(), "info", b"name", names),
                cells(keys.to_pylist(), "s", b"a", [long(i * 5 - 10) for i in range(8)]),
                cells(keys.to_pylist()[:6], "s", b"b", [long(i) for i in range(6)]),
            ]
        )
    )
    return wh.table("ns:people")


def test_upper_index_lookups_and_maintenance(people):
    create_index(people, name="uname", expression="UPPER(string(info:name))")
    report = build_index(people, name="uname")
    assert report.index_rows == 8
    index = open_index(people, "uname")
    assert index.types == (IndexType.STRING,)

    def oracle(table, value):
        return sorted(r["row"] for r in wide(table) if r["info:name"].decode().upper() == value)

    assert rows_of(index.lookup("ANN")) == oracle(people, "ANN") and len(oracle(people, "ANN")) == 3
    # The same expression applied to the probe's inputs.
    assert index.evaluate({"info:name": "aNn"}) == ("ANN",)
    assert rows_of(index.lookup(inputs={"info:name": "ann"})) == oracle(people, "ANN")
    with pytest.raises(InvalidArgumentError, match="give it in inputs"):
        index.evaluate({"info:other": "x"})
    # Kept current by loads: a rename moves the row to its new value.
    people.load_cells(cells([b"ann"], "info", b"name", [b"Annie"], ts=20))
    people = people.warehouse.table("ns:people")
    index = open_index(people, "uname")
    for value in ("ANN", "ANNIE", "BOB"):
        assert rows_of(index.lookup(value)) == oracle(people, value)
    assert verify_index(people, name="uname").ok


def test_prefix_concat_and_arithmetic_indexes(people):
    wh = people.warehouse
    create_index(people, name="pre", expression="LOWER(SUBSTR(string(info:name), 1, 2))")
    create_index(people, name="tag", expression=["string(info:name) || '@' || key(user)"])
    create_index(people, name="score", expression="long(s:a) * 2 + long(s:b)")
    for name in ("pre", "tag", "score"):
        build_index(people, name=name)
    rows = wide(people)
    pre = open_index(people, "pre")
    assert rows_of(pre.lookup("an")) == sorted(
        r["row"] for r in rows if r["info:name"].decode()[:2].lower() == "an"
    )
    assert rows_of(pre.lookup_range("a", "c")) == sorted(
        r["row"] for r in rows if "a" <= r["info:name"].decode()[:2].lower() < "c"
    )
    tag = open_index(people, "tag")
    assert rows_of(tag.lookup("bob@Bob")) == [b"Bob"]
    assert tag.evaluate({"info:name": "x", "user": "y"}) == ("x@y",)

    def score(r):
        if r.get("s:b") is None:
            return None  # a sparse index: rows lacking a column are not indexed
        a, b = (struct.unpack(">q", r[c])[0] for c in ("s:a", "s:b"))
        return a * 2 + b

    scored = {r["row"]: score(r) for r in rows}
    index = open_index(people, "score")
    got = index.lookup_range(-10, 10)
    assert rows_of(got) == sorted(k for k, v in scored.items() if v is not None and -10 <= v < 10)
    assert index.scan().num_rows == 6
    assert index.scan().column("(long(s:a) * 2) + long(s:b)").to_pylist() == sorted(
        v for v in scored.values() if v is not None
    )
    # A load changing one input of the arithmetic moves the row; the other rows stay.
    people.load_cells(cells([b"ann"], "s", b"b", [long(1000)], ts=30))
    people = wh.table("ns:people")
    assert rows_of(open_index(people, "score").lookup(980)) == [b"ann"]
    for name in ("pre", "tag", "score"):
        assert verify_index(people, name=name).ok, name


def test_definition_document_and_cli(tmp_path):
    root = str(tmp_path / "wh")
    t = connect(root).create_table("ns:u", families=["info"])
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, ["--root", root, *args])

    made = run(
        "--output", "json", "index", "create", "ns:u", "up", "--part", "UPPER(string(info:n))"
    )
    assert made.exit_code == 0, made.output
    doc = json.loads(made.output)
    assert doc["format-version"] == 2 and doc["parts"] == [{"expression": "UPPER(string(info:n))"}]
    assert IndexDefinition.from_dict(doc).parts[0].kind == "expression"
    t.load_cells(cells([b"r1", b"r2", b"r3"], "info", b"n", [b"ann", b"ANN", b"bob"]))
    found = run("--output", "json", "index", "lookup", "ns:u", "up", "ANN")
    assert found.exit_code == 0 and "r1" in found.output and "r2" in found.output
    by_input = run("index", "lookup", "ns:u", "up", "--input", "info:n=aNn")
    assert by_input.exit_code == 0 and "r1" in by_input.output and "r3" not in by_input.output
    assert run("index", "lookup", "ns:u", "up", "--input", "x:y=1").exit_code == 2
    assert run("index", "verify", "ns:u", "up").exit_code == 0

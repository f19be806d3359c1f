"""Fuzzing the loader's inputs: random and mutated CSV, TSV, JSON lines and mapping files.

Whatever the bytes, a load (failing fast or skipping bad records) ends in a cellstore
error (a :class:`~cellstore.errors.CellstoreError`) or a report with the bad records
counted: never another exception type, never a hang. Each test makes one warehouse and
loads tiny inputs on the local threaded scheduler with one worker. CI runs a bounded
number of examples (``tests/fuzzing.py``); ``bench/fuzz_long.sh`` runs many more.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cellstore import connect
from cellstore.errors import CellstoreError
from cellstore.loader import Mapping, TextOptions
from cellstore.warehouse import Table
from fuzzing import FUZZ_SETTINGS

MAPPING = Mapping.simple(row_key="k", columns=["f:v=v", "f:n=n:long"], timestamp="ts")

VALID_CSV = b'k,v,n,ts\nr1,a,1,10\nr2,"b,c",2,20\nr3,"say ""hi""",3,30\n\nr4,,4,\n'
VALID_JSONL = (
    b'{"k": "r1", "v": "a", "n": 1, "ts": 10}\n'
    b'{"k": "r2", "v": "b", "n": "2", "ts": "1970-01-01T00:00:01"}\n'
    b'\n{"k": "r3", "n": null}\n'
)
VALID_TOML = b"""row_key = "k"
timestamp = {column = "ts", unit = "ms"}

[input]
delimiter = ","
multiline = false

[[cells]]
family = "f"
qualifier = "v"
value = "v"
codec = "string"

[[cells]]
family = "f"
qualifier_column = "v"
value = "n"
codec = "long"
"""
VALID_JSON_MAPPING = json.dumps(
    {
        "row_key": {"column": "k", "codec": "string"},
        "timestamp": "ts",
        "input": {"header": True, "null_values": [""]},
        "cells": [
            {"family": "f", "qualifier": "v", "value": "v"},
            {"family": "f", "qualifier": "n", "value": "n", "codec": "int"},
        ],
        "columns": {"f:w": {"column": "v", "codec": "bytes"}},
    }
).encode()

#: Bytes that matter to the parsers, most likely to find edge cases.
SPECIAL = b'",\t\n\r{}[]:\\ 0-9e.\x00\xff'


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` with a few random edits: inserted, deleted, replaced or repeated bytes."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "repeat", "truncate"]))
        pos = draw(st.integers(0, len(data)))
        byte = draw(st.sampled_from(list(SPECIAL)) | st.integers(0, 255))
        if op == "insert":
            data[pos:pos] = bytes([byte])
        elif op == "delete" and data:
            data[pos : pos + draw(st.integers(1, 4))] = b""
        elif op == "replace" and pos < len(data):
            data[pos] = byte
        elif op == "repeat":
            data[pos:pos] = data[pos : pos + draw(st.integers(1, 12))]
        elif op == "truncate":
            del data[pos:]
    return bytes(data)


def text_inputs(seed: bytes) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=120), mutated(seed))


@pytest.fixture(scope="function")
def target(tmp_path: Path) -> Table:
    return connect(str(tmp_path / "wh")).create_table("t", families=["f"])


def outcome(load: Callable[[bool], Any]) -> None:
    """Run a load failing fast and skipping: each ends in a CellstoreError or a report."""
    for skip in (False, True):
        try:
            report = load(skip)
        except CellstoreError:
            continue
        assert report.records >= report.rows + report.bad_records - report.bad_records
        if not skip:
            assert report.bad_records == 0


def load_file(table: Table, tmp_path: Path, name: str, data: bytes, **kw: Any) -> None:
    path = tmp_path / f"{uuid.uuid4().hex[:8]}-{name}"
    path.write_bytes(data)
    try:
        outcome(
            lambda skip: table.load(
                str(path),
                skip_bad_records=skip,
                key_advice="off",
                workers=1,
                report_dir=str(tmp_path / "reports"),
                **kw,
            )
        )
    finally:
        path.unlink()


@FUZZ_SETTINGS
@given(data=text_inputs(VALID_CSV), multiline=st.booleans())
@example(data=b'k,v,n,ts\nr1,a,1,10\nr2,"unterminated\nr3,c,3,30\n', multiline=False)
@example(data=b"k,v,n,ts\nr1,a,1,99999999999999999999999\n", multiline=False)
@example(data=b"k,v,n,ts\nr1,a,1180591620717411303424,1\n", multiline=True)
def test_fuzz_csv(target, tmp_path, data, multiline):
    load_file(
        target,
        tmp_path,
        "in.csv",
        data,
        mapping=MAPPING,
        text=TextOptions(multiline=multiline, block_size=1024),
    )


@FUZZ_SETTINGS
@given(data=text_inputs(VALID_CSV.replace(b",", b"\t")))
def test_fuzz_tsv(target, tmp_path, data):
    load_file(target, tmp_path, "in.tsv", data, mapping=MAPPING)


@FUZZ_SETTINGS
@given(data=text_inputs(VALID_JSONL))
@example(data=b'{"k": "r1", "n": 1180591620717411303424}\n{"k": "r2", "v": {"x": 1}}\n')
@example(data=b'{"k": "r1", "v": 1}\n{"k": "r2", "v": "x"}\n{"k": "r3"} {"k": "r4"}\n')
@example(data=b'{"k": "\\ud800"}\n')
@example(data=b'{"k": "r1", "ts": "\x80"}\n{"k": "r2", "v": "ok", "ts": 5}\n')  # raw non-UTF-8
def test_fuzz_jsonl(target, tmp_path, data):
    load_file(target, tmp_path, "in.jsonl", data, mapping=MAPPING)


json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@FUZZ_SETTINGS
@given(
    rows=st.lists(
        st.dictionaries(st.sampled_from(["k", "v", "n", "ts", "x"]), json_values, max_size=5),
        max_size=5,
    )
)
def test_fuzz_jsonl_values(target, tmp_path, rows):
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    load_file(target, tmp_path, "in.jsonl", data, mapping=MAPPING)


SMALL_CSV = b"k,v,n,ts\nr1,a,1,10\nr2,b,2,20\n"


@FUZZ_SETTINGS
@given(doc=st.one_of(st.binary(max_size=120), mutated(VALID_TOML)), suffix=st.just(".toml"))
def test_fuzz_mapping_toml(target, tmp_path, doc, suffix):
    load_with_mapping(target, tmp_path, doc, suffix)


@FUZZ_SETTINGS
@given(doc=st.one_of(st.binary(max_size=120), mutated(VALID_JSON_MAPPING)), suffix=st.just(".json"))
def test_fuzz_mapping_json(target, tmp_path, doc, suffix):
    load_with_mapping(target, tmp_path, doc, suffix)


mapping_keys = st.sampled_from(
    [
        "row_key",
        "timestamp",
        "operation",
        "input",
        "cells",
        "columns",
        "family",
        "qualifier",
        "qualifier_hex",
        "qualifier_column",
        "qualifier_codec",
        "value",
        "column",
        "codec",
        "fields",
        "salt_buckets",
        "name",
        "type",
        "width",
        "unit",
        "delimiter",
        "header",
        "multiline",
        "null_values",
        "column_names",
        "quote_char",
        "compression",
        "format",
    ]
) | st.text(max_size=6)
mapping_docs = st.recursive(
    json_scalars | st.sampled_from(["k", "v", "n", "ts", "f", "long", "s", "string", "csv"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(mapping_keys, inner, max_size=4),
    max_leaves=12,
)


@FUZZ_SETTINGS
@given(doc=st.dictionaries(mapping_keys, mapping_docs, max_size=5))
def test_fuzz_mapping_documents(target, tmp_path, doc):
    load_with_mapping(target, tmp_path, json.dumps(doc).encode(), ".json")


def load_with_mapping(table: Table, tmp_path: Path, doc: bytes, suffix: str) -> None:
    path = tmp_path / f"{uuid.uuid4().hex[:8]}-mapping{suffix}"
    path.write_bytes(doc)
    try:
        try:
            mapping = Mapping.from_file(str(path))
        except CellstoreError:
            return
        load_file(table, tmp_path, "in.csv", SMALL_CSV, mapping=mapping)
    finally:
        path.unlink()

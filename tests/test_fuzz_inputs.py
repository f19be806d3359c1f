"""Fuzzing the loader's inputs: random and mutated CSV, TSV, JSON lines and mapping files.

Whatever the bytes, a load (failing fast or skipping bad records) ends in a cellstore
error (a :class:`~cellstore.errors.CellstoreError`) or a report whose counts add up
exactly (records = rows + bad records; a fail-fast load that succeeds found no bad record,
one that fails committed nothing): never another exception type, never a hang.

Content: a simple model written from the README's rules (below: ``model_text``,
``model_jsonl``) says, for inputs it understands (canonical CSV/TSV with the mapping's
columns, JSON lines of plain consistently typed values), how many records a load reads,
which are bad, and which newest cells the table then holds; such an example loads into a
fresh table and must match it exactly. Mapping fuzzers load a fixed two-record CSV: every
report reads exactly two records, and the unmutated documents load their known cells.
Hypothesis events show the share of examples inside the model.

Loads run on the local threaded scheduler with one worker. CI runs a bounded number of
examples (``tests/fuzzing.py``); ``bench/fuzz_long.sh`` runs many more.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, example, given
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


class Targets:
    """Where examples load: one shared table, or a fresh one for an example whose content
    is checked (it must hold what that example loaded, and only that)."""

    def __init__(self, root: Path) -> None:
        self.wh = connect(str(root / "wh"))
        self.shared = self.wh.create_table("t", families=["f"])

    def table(self, *, fresh: bool) -> Table:
        if not fresh:
            return self.shared
        return self.wh.create_table(f"t{uuid.uuid4().hex[:12]}", families=["f"])


@pytest.fixture(scope="function")
def target(tmp_path: Path) -> Targets:
    return Targets(tmp_path)


# ----------------------------------------------------------------------------- the model
#: What every fuzz load takes as "now" (a ts of LATEST_TIMESTAMP becomes it).
NOW = 1_000
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
#: A long codec's text: optional spaces and sign around ASCII digits.
LONG_TEXT = re.compile(r" *[+-]?[0-9]+ *")
#: Text the long codec refuses for sure: printable ASCII, no space, not a number.
NOT_LONG = re.compile(r"[\x21-\x7e]+")


@dataclass
class Expected:
    """What a load of one input must give: records read, bad records, and the newest cell
    of every (row, qualifier) as ``{(row, qualifier): (ts, value)}``."""

    records: int = 0
    bad: int = 0
    cells: dict[tuple[bytes, bytes], tuple[int, bytes]] = field(default_factory=dict)

    def record(self, cells: list[tuple[bytes, bytes, int, bytes]] | None) -> None:
        """Count one record: None if it is bad, else the cells it makes."""
        self.records += 1
        if cells is None:
            self.bad += 1
            return
        for row, qualifier, ts, value in cells:
            old = self.cells.get((row, qualifier))
            if old is None or ts >= old[0]:  # equal keys: the later record wins
                self.cells[(row, qualifier)] = (ts, value)


class Outside(Exception):
    """The input is outside what the model knows: only the invariants are checked."""


def model_long(text: str) -> int | None:
    """A long codec value: the number, or raise ValueError for a bad record."""
    if LONG_TEXT.fullmatch(text):
        n = int(text)
        if not LONG_MIN <= n <= LONG_MAX:
            raise ValueError("out of range for long")
        return n
    if NOT_LONG.fullmatch(text):
        raise ValueError("not an integer")
    raise Outside(f"long text {text!r}")


def model_ts(value: int) -> int:
    """A millisecond timestamp: LATEST_TIMESTAMP means now; negative is a bad record."""
    if value < 0 or value > LONG_MAX:
        raise ValueError("timestamp out of range")
    return NOW if value == LONG_MAX else value


def model_cells(k: bytes, v: bytes | None, n: int | None, ts: int) -> list[Any]:
    out = [] if v is None else [(k, b"v", ts, v)]
    return out if n is None else [*out, (k, b"n", ts, struct.pack(">q", n))]


def model_text(data: bytes, delimiter: str) -> Expected:
    """The load of a CSV/TSV input with MAPPING, for canonical one-line-per-record text.

    Raises:
        Outside: anything else (quoting that is not canonical, CR, NUL, a header that is
            not the mapping's columns, timestamps as text...).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Outside("not UTF-8") from None
    if "\r" in text or "\x00" in text:
        raise Outside("CR or NUL")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return Expected()

    def fields(line: str) -> list[str]:
        try:
            (parsed,) = list(csv.reader([line], delimiter=delimiter, strict=True))
        except (csv.Error, ValueError):
            raise Outside("not canonical CSV") from None
        out = io.StringIO()
        csv.writer(out, delimiter=delimiter, lineterminator="").writerow(parsed)
        if out.getvalue() != line:
            raise Outside("not canonical CSV")
        return parsed

    header = fields(lines[0])
    if sorted(header) != ["k", "n", "ts", "v"]:
        raise Outside(f"header {header!r}")
    at = {name: i for i, name in enumerate(header)}
    want = Expected()
    for line in lines[1:]:
        if line == "":
            continue  # blank lines are not records
        if line.strip() == "" and delimiter != " ":
            want.record(None)  # a line of spaces: one field, a malformed record
            continue
        values = fields(line)
        if len(values) != len(header):
            want.record(None)
            continue
        k, v, n, ts = (values[at[c]] for c in ("k", "v", "n", "ts"))
        if not re.fullmatch(r"-?[0-9]+|", ts):
            raise Outside(f"timestamp text {ts!r}")
        try:
            if k == "" or ts == "":
                raise ValueError("null row key or timestamp")
            row = model_cells(
                k.encode(),
                v.encode() if v else None,
                model_long(n) if n else None,
                model_ts(int(ts)),
            )
        except ValueError:
            row = None
        want.record(row)
    return want


def model_jsonl(data: bytes) -> Expected:
    """The load of a JSON-lines input with MAPPING, for objects of plain, consistent types.

    Raises:
        Outside: anything else (other JSON values, duplicate or unknown keys, a key whose
            values mix types, numbers past 64 bits, text timestamps that are not digits...).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Outside("not UTF-8") from None
    if "\r" in text:
        raise Outside("CR")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in items}) != len(items):
            raise Outside("duplicate key")
        return dict(items)

    docs = []
    for line in text.split("\n"):
        if line == "":
            continue
        try:
            doc = json.loads(line, object_pairs_hook=pairs)
        except ValueError:
            raise Outside("not one JSON value") from None
        if not isinstance(doc, dict) or not set(doc) <= {"k", "v", "n", "ts", "x"}:
            raise Outside("not an object of the mapping's keys")
        for value in doc.values():
            if type(value) not in (str, int, type(None)):
                raise Outside("not a plain value")
            if type(value) is int and not LONG_MIN <= value <= LONG_MAX:
                raise Outside("past 64 bits")
            if isinstance(value, str):
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise Outside("lone surrogate") from None
        docs.append(doc)
    allowed = {"k": {str}, "v": {str}, "n": {int, str}, "ts": {int, str}, "x": {int, str}}
    for key, types in allowed.items():
        seen = {type(d[key]) for d in docs if d.get(key) is not None}
        if key == "x" and not any(key in d for d in docs):
            continue  # a column the mapping does not use, absent
        if docs and (len(seen) != 1 or not seen <= types):
            raise Outside(f"{key}: types {seen}")  # absent, all null, or mixed
    want = Expected()
    for doc in docs:
        k, v, n, ts = (doc.get(c) for c in ("k", "v", "n", "ts"))
        if isinstance(ts, str) and not re.fullmatch(r"[0-9]+", ts):
            raise Outside(f"timestamp text {ts!r}")
        if isinstance(n, str) and n == "":
            raise Outside("empty number text")
        try:
            if not k or ts is None:
                raise ValueError("null or empty row key, or null timestamp")
            row = model_cells(
                k.encode(),
                None if v is None else v.encode(),
                None if n is None else model_long(n) if isinstance(n, str) else n,
                model_ts(int(ts)),
            )
        except ValueError:
            row = None
        want.record(row)
    return want


def newest_cells(table: Table) -> dict[tuple[bytes, bytes], tuple[int, bytes]]:
    got = table.scan().to_arrow().to_pylist()
    return {(c["row"], c["qualifier"]): (c["ts"], c["value"]) for c in got}


def outcome(
    targets: Targets,
    load: Callable[[Table, bool], Any],
    want: Expected | None,
    records: int | None = None,
) -> None:
    """Load failing fast, then skipping bad records, into one fresh table.

    Each ends in a CellstoreError or a report whose counts add up exactly; a fail-fast load
    that raises commits nothing, one that succeeds found no bad record. With a model
    (``want``), the counts are the model's and the table holds exactly the model's cells;
    without one, ``records`` (if given) is the exact number of records any report reads.
    """
    table = targets.table(fresh=want is not None)
    event("content checked against the model" if want is not None else "outside the model")
    failed_fast = True
    for skip in (False, True):
        version = table.refresh().version
        try:
            report = load(table, skip)
        except CellstoreError:
            assert table.refresh().version == version  # nothing committed
            if want is not None:
                assert skip is False and want.bad > 0  # only bad records fail a load
            continue
        assert report.records == report.rows + report.bad_records
        if records is not None:
            assert report.records == records
        if not skip:
            failed_fast = False
            assert report.bad_records == 0
        if want is not None:
            assert (report.records, report.bad_records) == (want.records, want.bad)
    if want is not None:
        assert not failed_fast or want.bad > 0
        assert newest_cells(table.refresh()) == want.cells


def load_file(
    targets: Targets,
    tmp_path: Path,
    name: str,
    data: bytes,
    model: Callable[[bytes], Expected] | None = None,
    *,
    records: int | None = None,
    **kw: Any,
) -> None:
    path = tmp_path / f"{uuid.uuid4().hex[:8]}-{name}"
    path.write_bytes(data)
    want = None
    if model is not None:
        with contextlib.suppress(Outside):
            want = model(data)
    try:
        outcome(
            targets,
            lambda table, skip: table.load(
                str(path),
                skip_bad_records=skip,
                key_advice="off",
                workers=1,
                now_ms=NOW,
                report_dir=str(tmp_path / "reports"),
                **kw,
            ),
            want,
            records,
        )
    finally:
        path.unlink()


@FUZZ_SETTINGS
@given(data=text_inputs(VALID_CSV), multiline=st.booleans())
@example(data=b'k,v,n,ts\nr1,a,1,10\nr2,"unterminated\nr3,c,3,30\n', multiline=False)
@example(data=b"k,v,n,ts\nr1,a,1,99999999999999999999999\n", multiline=False)
@example(data=b"k,v,n,ts\nr1,a,1180591620717411303424,1\n", multiline=True)
@example(data=b"k,n,v,ts", multiline=True)  # a header alone, no line break: no records
@example(data=b"k,n,v,ts\r", multiline=True)
def test_fuzz_csv(target, tmp_path, data, multiline):
    load_file(
        target,
        tmp_path,
        "in.csv",
        data,
        lambda d: model_text(d, ","),
        mapping=MAPPING,
        text=TextOptions(multiline=multiline, block_size=1024),
    )


@FUZZ_SETTINGS
@given(data=text_inputs(VALID_CSV.replace(b",", b"\t")))
def test_fuzz_tsv(target, tmp_path, data):
    load_file(target, tmp_path, "in.tsv", data, lambda d: model_text(d, "\t"), mapping=MAPPING)


@FUZZ_SETTINGS
@given(data=text_inputs(VALID_JSONL))
@example(data=b'{"k": "r1", "n": 1180591620717411303424}\n{"k": "r2", "v": {"x": 1}}\n')
@example(data=b'{"k": "r1", "v": 1}\n{"k": "r2", "v": "x"}\n{"k": "r3"} {"k": "r4"}\n')
@example(data=b'{"k": "\\ud800"}\n')
@example(data=b'{"k": "r1", "ts": "\x80"}\n{"k": "r2", "v": "ok", "ts": 5}\n')  # raw non-UTF-8
def test_fuzz_jsonl(target, tmp_path, data):
    load_file(target, tmp_path, "in.jsonl", data, model_jsonl, mapping=MAPPING)


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
    load_file(target, tmp_path, "in.jsonl", data, model_jsonl, mapping=MAPPING)


SMALL_CSV = b"k,v,n,ts\nr1,a,1,10\nr2,b,2,20\n"


@FUZZ_SETTINGS
@given(doc=st.one_of(st.binary(max_size=120), mutated(VALID_TOML)), suffix=st.just(".toml"))
@example(doc=VALID_TOML, suffix=".toml")
def test_fuzz_mapping_toml(target, tmp_path, doc, suffix):
    load_with_mapping(target, tmp_path, doc, suffix)


@FUZZ_SETTINGS
@given(doc=st.one_of(st.binary(max_size=120), mutated(VALID_JSON_MAPPING)), suffix=st.just(".json"))
@example(doc=VALID_JSON_MAPPING, suffix=".json")
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


def _long(n: int) -> bytes:
    return struct.pack(">q", n)


#: What the unmutated mapping documents load from SMALL_CSV (written out by hand).
VALID_MAPPING_CELLS = {
    VALID_TOML: {  # f:v = v; f:{v} = n as a long
        (b"r1", b"v"): (10, b"a"),
        (b"r1", b"a"): (10, _long(1)),
        (b"r2", b"v"): (20, b"b"),
        (b"r2", b"b"): (20, _long(2)),
    },
    VALID_JSON_MAPPING: {  # f:v = v; f:n = n as an int; f:w = v as bytes
        (b"r1", b"v"): (10, b"a"),
        (b"r1", b"n"): (10, struct.pack(">i", 1)),
        (b"r1", b"w"): (10, b"a"),
        (b"r2", b"v"): (20, b"b"),
        (b"r2", b"n"): (20, struct.pack(">i", 2)),
        (b"r2", b"w"): (20, b"b"),
    },
}


def load_with_mapping(targets: Targets, tmp_path: Path, doc: bytes, suffix: str) -> None:
    """Load SMALL_CSV (two records) with the mapping in ``doc``, if it parses: every report
    reads exactly two records; the unmutated documents load exactly their known cells."""
    path = tmp_path / f"{uuid.uuid4().hex[:8]}-mapping{suffix}"
    path.write_bytes(doc)
    try:
        try:
            mapping = Mapping.from_file(str(path))
        except CellstoreError:
            return
        known = VALID_MAPPING_CELLS.get(doc)
        want = None if known is None else Expected(records=2, cells=known)
        load_file(
            targets,
            tmp_path,
            "in.csv",
            SMALL_CSV,
            None if want is None else lambda _: want,
            records=2,
            mapping=mapping,
        )
    finally:
        path.unlink()

"""The one-pass row-key encoder (core/rowkey/onepass.py) against the field-by-field one.

Byte for byte on Hypothesis-drawn specs and values: every field type, descending,
salted specs, text with 0x00 bytes and nulls (the general path then answers and reports
them, so both agree on the bad records too).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cellstore.core.codecs import binary_from_parts
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.core.rowkey.onepass import encode_one_pass

TYPES = [
    "string", "bytes", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "float32", "float64",
]  # fmt: skip


def _values(typ: str) -> st.SearchStrategy[Any]:
    if typ == "string":
        return st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6)
    if typ == "bytes":
        return st.binary(max_size=6).map(lambda b: b.replace(b"\x00", b"\x01"))
    if typ.startswith("float"):
        width = 32 if typ == "float32" else 64
        return st.one_of(st.floats(width=width), st.sampled_from([0.0, -0.0, math.inf, -math.inf]))
    bits = int(typ.removeprefix("u").removeprefix("int"))
    if typ.startswith("u"):
        return st.integers(0, 2**bits - 1)
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


@st.composite
def specs_and_tables(draw: st.DrawFn, *, dirty: bool = False) -> tuple[RowKeySpec, pa.Table]:
    k = draw(st.integers(1, 4))
    types = [draw(st.sampled_from(TYPES)) for _ in range(k)]
    fields = tuple(
        KeyField(name=f"f{i}", type=t, descending=draw(st.booleans())) for i, t in enumerate(types)
    )
    salt = draw(st.one_of(st.none(), st.integers(1, 16)))
    spec = RowKeySpec(fields=fields, salt_buckets=salt)
    n = draw(st.integers(1, 30))
    columns = {}
    for f, t in zip(fields, types, strict=True):
        values = draw(st.lists(_values(t), min_size=n, max_size=n))
        if dirty and draw(st.booleans()):
            at = draw(st.integers(0, n - 1))
            if t == "bytes" and draw(st.booleans()):
                values[at] = b"a\x00b"  # a 0x00 in a (maybe) terminated field
            else:
                values[at] = None
        columns[f.name] = pa.array(values, type=f.type.arrow_type)
    return spec, pa.table(columns)


def _both(spec: RowKeySpec, table: pa.Table) -> tuple[Any, Any]:
    out = []
    for one_pass in (True, False):
        (offsets, data), problems = spec._encode_parts(table, one_pass=one_pass)
        keep = ~problems.bad
        out.append((binary_from_parts(offsets, data, keep).to_pylist(), problems.bad.tolist()))
    return out[0], out[1]


@settings(max_examples=300, deadline=None)
@given(specs_and_tables())
def test_one_pass_is_byte_for_byte_the_field_encoder(case: tuple[RowKeySpec, pa.Table]) -> None:
    spec, table = case
    fast, general = _both(spec, table)
    assert fast == general
    columns = [table.column(f.name).combine_chunks() for f in spec.fields]
    # clean typed columns: the one pass answers (keys may still be empty: general path)
    answered = encode_one_pass(spec.fields, columns, salted=spec.salt_buckets is not None)
    lengths = np.zeros(table.num_rows, dtype=np.int64)
    for f, col in zip(spec.fields, columns, strict=True):
        if f.type.is_text:
            lengths += np.array([len(v) for v in col.cast(pa.binary()).to_pylist()])
            lengths += int(f.terminated(last=f is spec.fields[-1]))
        else:
            lengths += f.type.size or 0
    assert (answered is not None) == bool(lengths.all())
    if spec.salt_buckets is None and answered is not None:
        assert binary_from_parts(*answered).to_pylist() == spec.encode(table).to_pylist()


@settings(max_examples=150, deadline=None)
@given(specs_and_tables(dirty=True))
def test_nulls_and_zero_bytes_agree_on_the_bad_records(
    case: tuple[RowKeySpec, pa.Table],
) -> None:
    spec, table = case
    fast, general = _both(spec, table)
    assert fast == general


def test_a_sliced_chunked_table_encodes_like_its_copy() -> None:
    spec = RowKeySpec(
        fields=(KeyField(name="c"), KeyField(name="n", type="int32", descending=True))
    )
    table = pa.table({"c": ["AA", "B", "CCC", "D"], "n": pa.array([3, -1, 0, 7], pa.int32())})
    chunked = pa.concat_tables([table.slice(0, 2), table.slice(2)]).slice(1, 3)
    assert spec.encode(chunked).to_pylist() == spec.encode(table.slice(1, 3)).to_pylist()
    cols = [table.column(f.name).combine_chunks().slice(1, 3) for f in spec.fields]
    assert encode_one_pass(spec.fields, cols, salted=False) is not None


def test_large_and_empty_text_columns_encode_like_the_field_encoder() -> None:
    # a large_string beside a string (64-bit and 32-bit offsets in one kernel call), and a
    # text field whose values are all empty (an Arrow array may then have no data bytes)
    spec = RowKeySpec(
        fields=(
            KeyField(name="a"),
            KeyField(name="e", type="bytes"),
            KeyField(name="n", type="int64", descending=True),
            KeyField(name="b", type="bytes", descending=True),
        )
    )
    table = pa.table(
        {
            "a": pa.array(["x", "", "yz"], pa.large_string()),
            "e": pa.array([b"", b"", b""], pa.binary()),
            "n": pa.array([5, -(2**63), 2**63 - 1], pa.int64()),
            "b": pa.array([b"\x01\xff", b"q", b""], pa.binary()),
        }
    )
    cols = [table.column(f.name).combine_chunks() for f in spec.fields]
    answered = encode_one_pass(spec.fields, cols, salted=False)
    assert answered is not None
    fast, general = _both(spec, table)
    assert fast == general
    assert binary_from_parts(*answered).to_pylist() == general[0]


def _read_only(column: pa.Array) -> pa.Array:
    """``column`` read back from an Arrow IPC stream: its buffers are read-only."""
    sink = pa.BufferOutputStream()
    table = pa.table({"c": column})
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return pa.ipc.open_stream(sink.getvalue()).read_all().column("c").chunk(0)


def test_read_only_and_writable_buffers_encode_together() -> None:
    """Key columns from an IPC stream (Spark's Arrow batches: read-only buffers) beside
    columns built in the process (writable): one kernel call takes both (a Spark write
    with a one-text-field spec failed to compile, read-only offsets beside the filler)."""
    words = pa.array(["a", "bb", ""])
    nums = pa.array([1, -2, 3], pa.int32())
    one = RowKeySpec(fields=(KeyField(name="c"), KeyField(name="n", type="int32")))
    two = RowKeySpec(
        fields=(KeyField(name="c"), KeyField(name="d"), KeyField(name="n", type="int32"))
    )
    ro = _read_only(words)
    assert not np.frombuffer(ro.buffers()[1], dtype=np.int32).flags.writeable
    for spec, table in (
        (one, pa.table({"c": ro, "n": nums})),
        (two, pa.table({"c": ro, "d": words, "n": nums})),
        (two, pa.table({"c": words, "d": ro, "n": _read_only(nums)})),
    ):
        fast, general = _both(spec, table)
        assert fast == general
        columns = [table.column(f.name) for f in spec.fields]
        assert encode_one_pass(spec.fields, columns, salted=False) is not None

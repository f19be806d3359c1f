"""Cut points of keyed column files from the typed key fields (reader/columnar/keycut.py).

The claim the search rests on: encoded rows order as the tuples of their fields, each in
its field's direction (docs/format.md section 11). Checked here against the encoding
itself: for random specs (every field type, descending, reverse timestamps, widths,
terminated and open last fields, and the cases the typed search declines: salt, hashes,
byte-reversed text) and random targets (encoded keys, their prefixes, cut inside a field,
nudged by a byte, arbitrary bytes), the typed cut finds the same record as a binary
search over every record's encoded row.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.reader.columnar.base import _key_cut
from cellstore.reader.columnar.keycut import narrow, searchable

INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
UINTS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
TYPES = ["string", "bytes", *INTS, *UINTS, "float32", "float64"]


@st.composite
def key_fields(draw: st.DrawFn, name: str) -> KeyField:
    """A key field of any type, with the options that type allows."""
    typ = draw(st.sampled_from(TYPES))
    kw: dict[str, Any] = {"name": name, "type": typ, "descending": draw(st.booleans())}
    if typ in ("string", "bytes"):
        kw["width"] = draw(st.sampled_from([None, None, 3]))
        kw["reverse"] = draw(st.sampled_from([False, False, False, True]))
    if typ == "int64" and draw(st.booleans()):
        kw.update(reverse_timestamp=True, descending=False)
    if draw(st.integers(0, 8)) == 0:  # md5 fields do not decode: never keyed
        kw.update(hash="md5_prefix", descending=False)
    return KeyField(**kw)


@st.composite
def specs(draw: st.DrawFn) -> RowKeySpec:
    n = draw(st.integers(1, 3))
    fields = [draw(key_fields(f"k{i}")) for i in range(n)]
    salt = draw(st.sampled_from([None] * 6 + [4]))
    return RowKeySpec(fields=tuple(fields), salt_buckets=salt)


def values(field: KeyField) -> st.SearchStrategy[Any]:
    """Values the field encodes (no 0x00 in text, within width and range)."""
    typ = field.type.value
    if typ in ("string", "bytes"):
        size = field.width or 4
        if typ == "string":
            text = st.text(st.characters(min_codepoint=1, max_codepoint=0x3FF), max_size=size)
            return text.filter(lambda s: len(s.encode()) <= size)
        return st.binary(max_size=size).filter(lambda b: b"\x00" not in b)
    if typ in INTS:
        bits = INTS[typ]
        low = 0 if field.reverse_timestamp else -(2 ** (bits - 1))
        return st.integers(low, 2 ** (bits - 1) - 1) | st.sampled_from([low, 0, 1, -1 % 2])
    if typ in UINTS:
        return st.integers(0, 2 ** UINTS[typ] - 1)
    width = 32 if typ == "float32" else 64
    return st.floats(width=width) | st.sampled_from([0.0, -0.0, math.inf, -math.inf])


def _column(field: KeyField, vals: list[Any]) -> pa.Array:
    return pa.array(vals, type=field.type.arrow_type)


@st.composite
def cases(draw: st.DrawFn) -> tuple[RowKeySpec, pa.Table, list[bytes], list[bytes]]:
    """A spec, a keyed file's sorted unique key fields and rows, and targets."""
    spec = draw(specs())
    n = draw(st.integers(0, 40))
    # few distinct values per field, so that leading fields repeat
    pools = [draw(st.lists(values(f), min_size=1, max_size=4)) for f in spec.fields]
    records = [[draw(st.sampled_from(pool)) for pool in pools] for _ in range(n)]
    cols = {f.name: _column(f, [r[i] for r in records]) for i, f in enumerate(spec.fields)}
    table = pa.table(cols)
    rows = [r for r in spec.encode(table, errors="mask").values.to_pylist() if r]
    # the file holds each row once, sorted, with the fields the rows decode to
    rows = sorted(set(rows))
    if rows:
        fields = spec.decode(pa.array(rows, pa.binary()))
    else:
        fields = pa.table({f.name: pa.array([], f.type.arrow_type) for f in spec.fields})
    probe = [[draw(st.sampled_from(pool)) for pool in pools] for _ in range(3)]
    extra = spec.encode(
        pa.table({f.name: _column(f, [r[i] for r in probe]) for i, f in enumerate(spec.fields)}),
        errors="mask",
    ).values.to_pylist()
    targets: list[bytes] = []
    for row in [r for r in rows[:3] + extra if r]:
        cut = draw(st.integers(0, len(row)))
        targets += [row, row[:cut], row[:cut] + b"\x00", row + b"\x00"]
        if row:
            targets.append(row[:-1] + bytes([(row[-1] + 1) % 256]))
    targets += draw(st.lists(st.binary(min_size=1, max_size=12), max_size=3))
    return spec, fields, rows, [t for t in targets if t]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_typed_cut_agrees_with_the_encoded_rows(
    case: tuple[RowKeySpec, pa.Table, list[bytes], list[bytes]],
) -> None:
    spec, fields, rows, targets = case
    for target in targets:
        want = bisect.bisect_left(rows, target)
        assert _key_cut(fields, spec, target, (0, len(rows))) == want, (spec, target)
        lo, hi, exact = narrow(fields, spec, target)
        assert lo <= want <= hi and (not exact or lo == want)
        # the typed search narrows to a sub-range whose records all equal the target's
        # decoded leading fields: the encoded rows are needed only there
        if not searchable(spec):
            assert (lo, hi, exact) == (0, len(rows), not rows)


@pytest.mark.parametrize("descending", [False, True])
def test_typed_cut_searches_the_fields_without_encoding(descending: bool) -> None:
    """An encoded key prefix (what ``key=`` ranges give) is placed on the typed fields
    alone: no record is encoded."""
    spec = RowKeySpec(
        fields=(
            KeyField(name="carrier", descending=descending),
            KeyField(name="date", type="int32", descending=descending),
            KeyField(name="n", type="float64"),
        )
    )
    n = 3000
    table = pa.table(
        {
            "carrier": [("AA", "DL", "UA")[i % 3] for i in range(n)],
            "date": pa.array(np.arange(n, dtype=np.int32) // 7),
            "n": pa.array(np.arange(n, dtype=np.float64) - 1500.5),
        }
    )
    rows = sorted(spec.encode(table).to_pylist())
    fields = spec.decode(pa.array(rows, pa.binary()))
    for key in ({"carrier": ["DL"], "date": [100]}, {"carrier": ["UA"]}):
        target = RowKeySpec(fields=spec.fields[: len(key)]).encode(pa.table(key)).to_pylist()[0]
        lo, _, exact = narrow(fields, spec, target)
        assert exact and lo == bisect.bisect_left(rows, target)
    open_text = b"D" if not descending else bytes([0xFF - ord("D")])
    lo, _, exact = narrow(fields, spec, open_text)
    assert exact is (not descending) and (not exact or lo == bisect.bisect_left(rows, open_text))


def test_targets_that_no_value_encodes_are_placed_by_their_bytes() -> None:
    """-0.0's bytes (values encode it as 0.0), a NaN other than the canonical one, and a
    reverse timestamp's out-of-range bytes are no field value: their cut still agrees."""
    spec = RowKeySpec(
        fields=(
            KeyField(name="x", type="float64"),
            KeyField(name="t", type="int64", reverse_timestamp=True),
        )
    )
    xs = [-1.0, 0.0, 0.0, 2.0, math.nan]
    table = pa.table({"x": xs, "t": pa.array([5, 1, 9, 3, 4], pa.int64())})
    rows = sorted(spec.encode(table).to_pylist())
    fields = spec.decode(pa.array(rows, pa.binary()))
    minus_zero = bytes(~np.frombuffer(np.array([-0.0], ">f8").tobytes(), np.uint8))
    odd_nan = bytes([0xFF, 0xF8, 0, 0, 0, 0, 0, 1])
    t4 = (2**63 - 1 - 4).to_bytes(8, "big")  # between the 0.0 records' t=9 and t=1
    for target in (
        minus_zero + t4,
        minus_zero + b"\x80",
        odd_nan,
        odd_nan + t4,
        rows[1][:8] + b"\xff" * 8,
    ):
        want = bisect.bisect_left(rows, target)
        assert _key_cut(fields, spec, target, (0, len(rows))) == want, target

"""Row-key design toolkit: order-preserving encodings, salt, MD5, decoding and key ranges."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from cellstore.core.regions import region_index, salt_split_keys
from cellstore.core.rowkey import (
    KeyField,
    KeyHash,
    KeyType,
    RowKeySpec,
    md5_digests,
    salt_bytes,
    successor,
)
from cellstore.errors import BadCellError, InvalidArgumentError
from model import java_salt

FAST = settings(max_examples=60, deadline=None)
LONG_MAX = 2**63 - 1


# -- references -------------------------------------------------------------------------


def test_java_salt_reference_sanity():
    # "a" -> h = 31 + 97 = 128; bytes >= 0x80 count as negative.
    assert java_salt(b"a", 100) == 28
    assert java_salt(b"\xff", 100) == 30  # 31 - 1
    assert java_salt(b"\x80", 100) == 97  # 31 - 128 = -97 -> abs(-97 % 100) = 97


# -- MD5 ----------------------------------------------------------------------------------


def test_md5_matches_hashlib_at_block_boundaries():
    lengths = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000]
    rng = random.Random(7)
    values = [bytes(rng.randrange(256) for _ in range(n)) for n in lengths]
    digests = md5_digests(pa.array(values, pa.binary()))
    assert digests.shape == (len(values), 16)
    assert [bytes(d) for d in digests] == [hashlib.md5(v).digest() for v in values]


@FAST
@given(st.lists(st.binary(max_size=150), max_size=20))
def test_md5_matches_hashlib(values):
    digests = md5_digests(pa.array(values, pa.binary()))
    assert [bytes(d) for d in digests] == [hashlib.md5(v).digest() for v in values]


def test_md5_of_strings_and_sliced_input():
    arr = pa.array(["x", "hello", "é"]).slice(1)
    assert [bytes(d) for d in md5_digests(arr)] == [
        hashlib.md5(b"hello").digest(),
        hashlib.md5("é".encode()).digest(),
    ]


# -- salt ---------------------------------------------------------------------------------


@FAST
@given(
    st.lists(st.binary(min_size=1, max_size=40), max_size=30),
    st.sampled_from([1, 2, 3, 7, 10, 16, 100, 255, 256]),
)
def test_salt_matches_java_formula(keys, buckets):
    got = salt_bytes(pa.array(keys, pa.binary()), buckets)
    assert got.dtype == np.uint8
    assert got.tolist() == [java_salt(k, buckets) for k in keys]


def test_salt_on_long_keys_and_high_bytes():
    rng = random.Random(3)
    keys = [bytes(rng.randrange(256) for _ in range(n)) for n in (1, 100, 5000, 32766)]
    keys.append(b"\xff" * 3000)
    for buckets in (3, 64, 256):
        assert salt_bytes(pa.array(keys), buckets).tolist() == [java_salt(k, buckets) for k in keys]


def test_salt_rejects_bad_bucket_counts():
    for bad in (0, 257, True, 2.0):
        with pytest.raises(InvalidArgumentError):
            salt_bytes(pa.array([b"a"]), bad)


# -- spec validation and JSON -------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": ""},
        {"name": "x", "type": "decimal"},
        {"name": "x", "type": "int32", "width": 4},
        {"name": "x", "width": 0},
        {"name": "x", "type": "int64", "reverse": True},
        {"name": "x", "type": "int32", "reverse_timestamp": True},
        {"name": "x", "type": "int64", "reverse_timestamp": True, "descending": True},
        {"name": "x", "hash": "sha1"},
        {"name": "x", "hash": "md5", "descending": True},
        {"name": "x", "hash": "md5", "width": 3},
        {"name": "x", "hash": "md5_prefix", "hash_bytes": 17},
        {"name": "x", "hash_bytes": 4},
        {"name": "x", "descending": 1},
    ],
)
def test_key_field_rejects_invalid_settings(kwargs):
    with pytest.raises(InvalidArgumentError):
        KeyField(**kwargs)


def test_spec_rejects_invalid_settings():
    with pytest.raises(InvalidArgumentError, match="duplicate"):
        RowKeySpec(fields=(KeyField(name="a"), KeyField(name="a")))
    with pytest.raises(InvalidArgumentError):
        RowKeySpec(fields=())
    with pytest.raises(InvalidArgumentError):
        RowKeySpec(fields=(KeyField(name="a"),), salt_buckets=257)
    with pytest.raises(InvalidArgumentError, match="exceed"):
        RowKeySpec(fields=(KeyField(name="a", width=32767), KeyField(name="b", type="int8")))


def test_type_aliases_and_defaults():
    f = KeyField(name="ts", type="long")
    assert f.type is KeyType.INT64
    assert KeyField(name="u", hash="md5-prefix").hash_bytes == 4
    assert KeyField(name="u", hash="md5").hash_bytes == 16
    assert KeyType.parse("Double") is KeyType.FLOAT64


FIELD_ST = st.builds(
    lambda name, typ, opts: KeyField(name=name, type=typ, **opts),
    st.just("f"),
    st.sampled_from(list(KeyType)),
    st.just({}),
)


def _random_field(
    draw, name: str, *, allow_hash: bool = True, allow_reverse: bool = True
) -> KeyField:
    typ = draw(st.sampled_from(list(KeyType)))
    opts: dict = {}
    if typ.is_text:
        if draw(st.booleans()):
            opts["width"] = draw(st.integers(1, 4))
        if allow_reverse and draw(st.integers(0, 4)) == 0:
            opts["reverse"] = True
    if typ is KeyType.INT64 and draw(st.integers(0, 3)) == 0:
        opts["reverse_timestamp"] = True
    hashing = allow_hash and draw(st.integers(0, 5)) == 0
    if hashing:
        if (
            draw(st.booleans())
            or opts.get("width")
            or opts.get("reverse")
            or opts.get("reverse_timestamp")
        ):
            opts["hash"] = KeyHash.MD5_PREFIX
            opts["hash_bytes"] = draw(st.integers(1, 16))
        else:
            opts["hash"] = KeyHash.MD5
    elif not opts.get("reverse_timestamp"):
        opts["descending"] = draw(st.booleans())
    return KeyField(name=name, type=typ, **opts)


@st.composite
def specs(draw, *, allow_hash=True, allow_reverse=True, max_fields=3, salt=True):
    n = draw(st.integers(1, max_fields))
    fields = tuple(
        _random_field(draw, f"f{i}", allow_hash=allow_hash, allow_reverse=allow_reverse)
        for i in range(n)
    )
    buckets = draw(st.sampled_from([None, None, 1, 4, 256])) if salt else None
    return RowKeySpec(fields=fields, salt_buckets=buckets)


@FAST
@given(specs())
def test_spec_json_round_trip(spec):
    doc = json.loads(json.dumps(spec.to_dict()))
    assert RowKeySpec.from_dict(doc) == spec
    assert str(spec) in spec.describe()


# -- values per type ------------------------------------------------------------------------

TEXT = st.text(alphabet="ab\u00e9", max_size=4)
BYTES = st.binary(max_size=4).map(lambda b: b.replace(b"\x00", b"\x01"))
INT_RANGES = {
    KeyType.INT8: (-(2**7), 2**7 - 1),
    KeyType.INT16: (-(2**15), 2**15 - 1),
    KeyType.INT32: (-(2**31), 2**31 - 1),
    KeyType.INT64: (-(2**63), 2**63 - 1),
    KeyType.UINT8: (0, 2**8 - 1),
    KeyType.UINT16: (0, 2**16 - 1),
    KeyType.UINT32: (0, 2**32 - 1),
    KeyType.UINT64: (0, 2**64 - 1),
}
FLOATS64 = [-math.inf, -1e300, -2.5, -1.0, -0.0, 0.0, 1e-300, 0.5, 1.0, 3.0, 1e300, math.inf]
FLOATS32 = [
    float(np.float32(x)) for x in [-math.inf, -3e38, -2.5, -0.0, 0.0, 1e-40, 0.5, 3e38, math.inf]
]


def _fit(value, width):
    """Cut a value to at most ``width`` bytes (whole characters for strings)."""
    while len(value.encode() if isinstance(value, str) else value) > width:
        value = value[:-1]
    return value


def values_for(field: KeyField, *, nan: bool = False, last: bool = False):
    t = field.type
    if t.is_text:
        base = TEXT if t is KeyType.STRING else BYTES
        if field.hash is None and not field.terminated(last=last) and field.width is None:
            # An ascending last field runs to the end of the key and may hold 0x00.
            base = (
                st.text(alphabet="a\x00\u00e9", max_size=4)
                if t is KeyType.STRING
                else st.binary(max_size=4)
            )
        if field.width is not None:
            base = base.map(functools.partial(_fit, width=field.width))
        return base
    if t.is_float:
        pool = FLOATS32 if t is KeyType.FLOAT32 else FLOATS64
        width = 32 if t is KeyType.FLOAT32 else 64
        extra = [math.nan] if nan else []
        return st.one_of(st.sampled_from(pool + extra), st.floats(width=width, allow_nan=nan))
    lo, hi = INT_RANGES[t]
    if field.reverse_timestamp:
        lo = 0
    small = st.integers(max(lo, -3), min(hi, 3))
    return st.one_of(small, small, st.sampled_from([lo, hi, lo + 1, hi - 1]), st.integers(lo, hi))


def table_of(spec: RowKeySpec, rows: list[tuple]) -> pa.Table:
    cols = {}
    for i, f in enumerate(spec.fields):
        vals = [r[i] for r in rows]
        cols[f.name] = pa.array(vals, f.type.arrow_type)
    return pa.table(cols)


def encode_rows(spec: RowKeySpec, rows: list[tuple]) -> tuple[list[tuple], list[bytes]]:
    """Keys of the rows, dropping rows whose key would be empty (the only bad ones)."""
    values, bad, reasons = spec.encode(table_of(spec, rows), errors="mask")
    assert set(reasons.drop_null().to_pylist()) <= {"row: empty row key"}
    keep = [i for i in range(len(rows)) if not bad[i]]
    return [rows[i] for i in keep], [values[i].as_py() for i in keep]


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


def typed_cmp(spec: RowKeySpec, x: tuple, y: tuple) -> int:
    """Order the spec promises for two records (for unhashed fields)."""
    for f, a, b in zip(spec.fields, x, y, strict=True):
        if f.reverse:
            a = (a.encode() if isinstance(a, str) else a)[::-1]
            b = (b.encode() if isinstance(b, str) else b)[::-1]
        c = _cmp(a, b)
        if f.descending or f.reverse_timestamp:
            c = -c
        if c:
            return c
    return 0


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_key_order_equals_typed_tuple_order(data):
    spec = data.draw(specs(allow_hash=False, salt=False))
    rows = data.draw(
        st.lists(
            st.tuples(*[values_for(f, last=f is spec.fields[-1]) for f in spec.fields]),
            min_size=1,
            max_size=25,
        )
    )
    rows, keys = encode_rows(spec, rows)
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert _cmp(keys[i], keys[j]) == typed_cmp(spec, rows[i], rows[j]), (
                spec,
                rows[i],
                rows[j],
                keys[i],
                keys[j],
            )


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_decode_round_trips_and_salt_is_phoenix(data):
    spec = data.draw(specs())
    rows = data.draw(
        st.lists(
            st.tuples(*[values_for(f, nan=True, last=f is spec.fields[-1]) for f in spec.fields]),
            max_size=20,
        )
    )
    rows, key_list = encode_rows(spec, rows)
    keys = pa.array(key_list, pa.binary())
    decoded = spec.decode(keys)
    assert decoded.column_names == list(spec.decodable_columns)
    for i, f in enumerate(spec.fields):
        if not f.decodable:
            continue
        col = decoded.column(f.name)
        assert col.type == f.type.arrow_type
        assert all(_same(v, r[i]) for v, r in zip(col.to_pylist(), rows, strict=True))
    if spec.salt_buckets is not None:
        for k in keys.to_pylist():
            assert k[0] == java_salt(k[1:], spec.salt_buckets)


# -- encodings, byte by byte ------------------------------------------------------------------


def enc(spec: RowKeySpec, **cols) -> list[bytes]:
    return spec.encode(pa.table(cols)).to_pylist()


def test_integer_and_float_encodings_are_sign_flipped_big_endian():
    s = RowKeySpec(fields=(KeyField(name="v", type="int32"),))
    assert enc(s, v=pa.array([-1, 0, 5], pa.int32())) == [
        b"\x7f\xff\xff\xff",
        b"\x80\x00\x00\x00",
        b"\x80\x00\x00\x05",
    ]
    u = RowKeySpec(fields=(KeyField(name="v", type="uint16"),))
    assert enc(u, v=[258]) == [b"\x01\x02"]
    f = RowKeySpec(fields=(KeyField(name="v", type="float64"),))
    got = enc(f, v=[1.0, -1.0, -0.0, math.nan])
    assert got[0] == bytes([0xBF, 0xF0]) + b"\x00" * 6  # 3FF0... with the sign bit set
    assert got[1] == bytes([0x40, 0x0F]) + b"\xff" * 6  # BFF0... with every bit flipped
    assert got[2] == b"\x80" + b"\x00" * 7  # -0.0 is stored as 0.0
    assert got[3] == bytes([0xFF, 0xF8]) + b"\x00" * 6  # canonical NaN sorts last


def test_strings_terminated_padded_and_descending():
    s = RowKeySpec(
        fields=(
            KeyField(name="a"),
            KeyField(name="b", width=3),
            KeyField(name="c", descending=True),
            KeyField(name="d"),
        )
    )
    assert enc(s, a=["ab"], b=["x"], c=["q"], d=["tail\x00ok"]) == [
        b"ab\x00" + b"x\x00\x00" + bytes([0xFF - ord("q"), 0xFF]) + b"tail\x00ok"
    ]


def test_integers_from_text_input():
    s = RowKeySpec(fields=(KeyField(name="id", type="int64"),))
    assert enc(s, id=["42", " -1"]) == [
        struct.pack(">Q", 42 ^ (1 << 63)),
        struct.pack(">Q", (2**64 - 1) ^ (1 << 63)),
    ]
    with pytest.raises(BadCellError) as info:
        enc(s, id=["1", "4x2"])
    assert (info.value.record, info.value.field) == (1, "id")


@pytest.mark.parametrize(
    ("fields", "cols", "record", "field"),
    [
        ((KeyField(name="a"), KeyField(name="b")), {"a": ["x", None], "b": ["y", "z"]}, 1, "a"),
        ((KeyField(name="a"), KeyField(name="b")), {"a": ["x", "y\x00"], "b": ["y", "z"]}, 1, "a"),
        ((KeyField(name="a", descending=True),), {"a": ["ok", "b\x00"]}, 1, "a"),
        ((KeyField(name="a", width=2),), {"a": ["ok", "abc"]}, 1, "a"),
        ((KeyField(name="a", width=2),), {"a": ["o\x00"]}, 0, "a"),
        ((KeyField(name="a", type="int8"),), {"a": [1, 200]}, 1, "a"),
        ((KeyField(name="a", type="uint8"),), {"a": [1, -1]}, 1, "a"),
        ((KeyField(name="a", type="int64", reverse_timestamp=True),), {"a": [1, -5]}, 1, "a"),
        ((KeyField(name="a", type="float32"),), {"a": [1.0, 1e39]}, 1, "a"),
        ((KeyField(name="a"),), {"a": ["x", ""]}, 1, "row"),
        ((KeyField(name="a"),), {"a": ["x", "y" * 32768]}, 1, "row"),
        (
            (KeyField(name="a", type="bytes"), KeyField(name="b", type="int8")),
            {"a": [b"ok", b"k"], "b": [1000, 1]},
            0,
            "b",
        ),
        ((KeyField(name="a"),), {"a": pa.array([b"ok", b"\xff"])}, 1, "a"),
    ],
)
def test_bad_records_name_record_and_field(fields, cols, record, field):
    spec = RowKeySpec(fields=fields)
    table = pa.table(cols)
    with pytest.raises(BadCellError) as info:
        spec.encode(table)
    assert (info.value.record, info.value.field) == (record, field)
    assert f"record {record}" in str(info.value)
    values, bad, reasons = spec.encode(table, errors="mask")
    assert np.flatnonzero(bad)[0] == record
    assert values[record].as_py() is None
    assert reasons[record].as_py().startswith(f"{field}: ")
    good = [i for i in range(table.num_rows) if not bad[i]]
    if good:
        assert values.take(good).to_pylist() == spec.encode(table.take(good)).to_pylist()


def test_first_bad_record_wins_across_fields():
    spec = RowKeySpec(fields=(KeyField(name="a", type="int8"), KeyField(name="b")))
    with pytest.raises(BadCellError) as info:
        spec.encode(pa.table({"a": [1, 2, 999], "b": ["x", None, None]}))
    assert (info.value.record, info.value.field) == (1, "b")


def test_missing_column_and_bad_modes():
    spec = RowKeySpec(fields=(KeyField(name="a"), KeyField(name="b")))
    with pytest.raises(InvalidArgumentError, match="'b'"):
        spec.encode(pa.table({"a": ["x"]}))
    with pytest.raises(InvalidArgumentError):
        spec.encode(pa.table({"a": ["x"], "b": ["y"]}), errors="skip")  # type: ignore[call-overload]
    with pytest.raises(InvalidArgumentError, match="bool"):
        RowKeySpec(fields=(KeyField(name="a", type="int32"),)).encode(pa.table({"a": [True]}))


def test_decode_rejects_foreign_keys():
    spec = RowKeySpec(fields=(KeyField(name="a"), KeyField(name="n", type="int32")), salt_buckets=4)
    good = spec.encode(pa.table({"a": ["x"], "n": [7]}))[0].as_py()
    rows = pa.array(
        [good, b"\x09x\x00\x80\x00\x00\x07", good + b"!", b"\x01no-terminator", None, b""]
    )
    with pytest.raises(BadCellError) as info:
        spec.decode(rows)
    assert info.value.record == 1
    table = spec.decode(rows, errors="null")
    assert table.column("a").to_pylist() == ["x", None, None, None, None, None]
    assert table.column("n").to_pylist() == [7, None, None, None, None, None]


def test_key_for_single_record():
    spec = RowKeySpec(fields=(KeyField(name="a"), KeyField(name="n", type="int16")), salt_buckets=8)
    key = spec.key_for({"a": "x", "n": 3})
    assert key == spec.encode(pa.table({"a": ["x"], "n": pa.array([3], pa.int16())}))[0].as_py()
    with pytest.raises(InvalidArgumentError, match="'n'"):
        spec.key_for({"a": "x", "n": 10**6})
    with pytest.raises(InvalidArgumentError):
        spec.key_for({"a": "x"})


# -- key ranges -----------------------------------------------------------------------------


def in_ranges(key: bytes, ranges) -> bool:
    return any(key >= lo and (not hi or key < hi) for lo, hi in ranges)


def test_successor():
    assert successor(b"ab") == b"ac"
    assert successor(b"a\xff\xff") == b"b"
    assert successor(b"\xff") is None
    assert successor(b"") == b""


def _to_bytes(v):
    return v.encode() if isinstance(v, str) else v


def _matches(f: KeyField, v, lower, upper, lo_inc, hi_inc, prefix) -> bool:
    if prefix is not None:
        return _to_bytes(v).startswith(_to_bytes(prefix))
    if isinstance(v, float) and math.isnan(v):
        return False
    if lower is not None and not (v >= lower if lo_inc else v > lower):
        return False
    return upper is None or (v <= upper if hi_inc else v < upper)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_key_ranges_select_exactly_the_matching_rows(data):
    spec = data.draw(specs(max_fields=3))
    rows = data.draw(
        st.lists(
            st.tuples(*[values_for(f, nan=True, last=f is spec.fields[-1]) for f in spec.fields]),
            min_size=1,
            max_size=30,
        )
    )
    rows, keys = encode_rows(spec, rows)
    assume(rows)
    pick = data.draw(st.sampled_from(rows))
    ordered_at = [i for i, f in enumerate(spec.fields) if f.ordered]
    ranged = bool(ordered_at) and data.draw(st.integers(0, 3)) > 0
    k = data.draw(st.sampled_from(ordered_at) if ranged else st.integers(0, len(spec.fields)))
    equals = {f.name: pick[i] for i, f in enumerate(spec.fields[:k])}
    lower = upper = prefix = None
    lo_inc, hi_inc = data.draw(st.booleans()), data.draw(st.booleans())
    if ranged:
        f = spec.fields[k]
        vals = values_for(f, last=k == len(spec.fields) - 1)
        seen = [r[k] for r in rows if not (isinstance(r[k], float) and math.isnan(r[k]))]
        if seen:
            vals = st.one_of(st.sampled_from(seen), st.sampled_from(seen), vals)
        if f.type.is_text:
            wide = (
                st.text(alphabet="ab\x00\u00e9", max_size=6)
                if f.type is KeyType.STRING
                else st.binary(max_size=6)
            )
            vals = st.one_of(vals, wide)
            if data.draw(st.integers(0, 3)) == 0:
                prefix = data.draw(vals)[: data.draw(st.integers(0, 3))]
        elif not f.type.is_float:
            lo, hi = INT_RANGES[f.type]
            vals = st.one_of(vals, st.integers(lo - 5, hi + 5))
        if prefix is None:
            lower = data.draw(st.one_of(st.none(), vals))
            upper = data.draw(st.one_of(st.none(), vals))
            if lower is None and upper is None:
                ranged = False
    ranges = spec.key_ranges(
        equals=equals,
        lower=lower,
        upper=upper,
        lower_inclusive=lo_inc,
        upper_inclusive=hi_inc,
        prefix=prefix,
    )
    for (a, b), (c, _) in itertools.pairwise(ranges):
        assert a < b or not b
        assert b and b <= c
    hits = 0
    for row, key in zip(rows, keys, strict=True):
        want = all(_same(row[i], equals[f.name]) for i, f in enumerate(spec.fields[:k]))
        if want and ranged:
            want = _matches(spec.fields[k], row[k], lower, upper, lo_inc, hi_inc, prefix)
        assert in_ranges(key, ranges) == want, (spec, row, equals, lower, upper, prefix, ranges)
        hits += want
    kind = "none" if not ranged else "prefix" if prefix is not None else spec.fields[k].type.value
    event(f"range on {kind}, {'some' if 0 < hits < len(rows) else 'all/none'} selected")
    if spec.salt_buckets is not None and not ranged:
        assert len(ranges) == (1 if k == len(spec.fields) else spec.salt_buckets)


def test_key_ranges_argument_errors():
    spec = RowKeySpec(
        fields=(
            KeyField(name="user", hash="md5_prefix"),
            KeyField(name="phone", reverse=True),
            KeyField(name="n", type="int32"),
        )
    )
    with pytest.raises(InvalidArgumentError, match="leading"):
        spec.key_ranges(equals={"phone": "1"})
    with pytest.raises(InvalidArgumentError, match="unknown"):
        spec.key_ranges(equals={"nope": 1})
    with pytest.raises(InvalidArgumentError, match="hashed"):
        spec.key_ranges(lower="a")
    with pytest.raises(InvalidArgumentError, match="reversed"):
        spec.key_ranges(equals={"user": "u"}, prefix="12")
    with pytest.raises(InvalidArgumentError, match="'phone'"):
        spec.key_ranges(equals={"user": "u"}, field="n", lower=1)
    with pytest.raises(InvalidArgumentError, match="both"):
        spec.key_ranges(equals={"user": "u", "phone": "1"}, lower=1, prefix="x")
    with pytest.raises(InvalidArgumentError, match="not an integer"):
        spec.key_ranges(equals={"user": "u", "phone": "1"}, lower="x")
    with pytest.raises(InvalidArgumentError, match="nothing left"):
        spec.key_ranges(equals={"user": "u", "phone": "1", "n": 1}, lower=1)
    assert spec.key_ranges(equals={"user": "u", "phone": "1"}, lower=5, upper=5) == []


def test_bucket_ranges():
    plain = RowKeySpec(fields=(KeyField(name="a"),))
    assert plain.bucket_ranges(b"a", b"c") == [(b"a", b"c")]
    assert plain.bucket_ranges(b"c", b"a") == []
    salted = RowKeySpec(fields=(KeyField(name="a"),), salt_buckets=3)
    assert salted.bucket_ranges(b"a", b"c") == [
        (b"\x00a", b"\x00c"),
        (b"\x01a", b"\x01c"),
        (b"\x02a", b"\x02c"),
    ]
    assert salted.bucket_ranges(b"", b"") == [
        (b"\x00", b"\x01"),
        (b"\x01", b"\x02"),
        (b"\x02", b"\x03"),
    ]
    full = RowKeySpec(fields=(KeyField(name="a"),), salt_buckets=256)
    assert full.bucket_ranges(b"k", b"")[-1] == (b"\xffk", b"")


# -- the classic HBase schema designs -------------------------------------------------------


def test_design_salted_sequential_ids_spread_over_regions():
    # Monotonic ids would hotspot one region; the salt byte spreads them, one bucket per
    # region of a table pre-split with salt_split_keys.
    spec = RowKeySpec(fields=(KeyField(name="id", type="int64"),), salt_buckets=8)
    ids = pa.array(np.arange(10_000, dtype=np.int64))
    keys = spec.encode(pa.table({"id": ids}))
    regions = region_index(keys, salt_split_keys(8))
    salts = np.array([k[0] for k in keys.to_pylist()[:50]])
    assert regions[:50].tolist() == salts.tolist()
    assert np.bincount(regions, minlength=8).min() > 1000
    ranges = spec.key_ranges(lower=100, upper=200)
    assert len(ranges) == 8 and [r[0][0] for r in ranges] == list(range(8))
    picked = [i for i, k in enumerate(keys.to_pylist()) if in_ranges(k, ranges)]
    assert picked == list(range(100, 200))
    point = spec.key_ranges(equals={"id": 4242})
    assert len(point) == 1 and point[0][0] == spec.key_for({"id": 4242})


def test_design_hashed_prefix_user_id():
    spec = RowKeySpec(
        fields=(
            KeyField(name="user", hash="md5_prefix", hash_bytes=4),
            KeyField(name="event", type="int64"),
        )
    )
    keys = enc(spec, user=["alice"], event=[1])
    prefix = hashlib.md5(b"alice").digest()[:4]
    assert keys == [prefix + b"alice\x00" + struct.pack(">Q", 1 ^ (1 << 63))]
    assert spec.decode(pa.array(keys)).to_pylist() == [{"user": "alice", "event": 1}]
    ((start, _),) = spec.key_ranges(equals={"user": "alice"})
    assert start == prefix + b"alice\x00"


def test_design_full_md5_field_is_not_decodable():
    spec = RowKeySpec(fields=(KeyField(name="email", hash="md5"), KeyField(name="n", type="int8")))
    keys = enc(spec, email=["a@b.c"], n=pa.array([1], pa.int8()))
    assert keys == [hashlib.md5(b"a@b.c").digest() + b"\x81"]
    assert spec.decode(pa.array(keys)).column_names == ["n"]
    assert "not decodable" in spec.describe()


def test_design_reversed_phone_number():
    spec = RowKeySpec(
        fields=(KeyField(name="phone", reverse=True), KeyField(name="ts", type="int64"))
    )
    keys = enc(spec, phone=["4155551234", "4155559876"], ts=[1, 2])
    assert keys[0].startswith(b"4321555514\x00")
    assert keys[1].startswith(b"6789555514\x00")
    assert spec.decode(pa.array(keys)).column("phone").to_pylist() == ["4155551234", "4155559876"]
    ((start, stop),) = spec.key_ranges(equals={"phone": "4155551234"})
    assert start <= keys[0] < stop and not start <= keys[1] < stop


def test_design_reverse_timestamp_newest_first():
    spec = RowKeySpec(
        fields=(
            KeyField(name="user"),
            KeyField(name="ts", type="int64", reverse_timestamp=True),
        )
    )
    ts = [1_700_000_000_000, 1_700_000_000_500, 1_600_000_000_000]
    keys = enc(spec, user=["u"] * 3, ts=ts)
    assert keys[0] == b"u\x00" + struct.pack(">q", LONG_MAX - ts[0])  # Bytes.toBytes(MAX - ts)
    assert sorted(range(3), key=lambda i: keys[i]) == [1, 0, 2]  # newest first
    ranges = spec.key_ranges(equals={"user": "u"}, lower=1_650_000_000_000)
    assert [k for k in keys if in_ranges(k, ranges)] == keys[:2]


def test_design_composite_tall_key_follower_followed():
    # One row per edge; "who does X follow" is a prefix scan, "does X follow Y" a point get.
    spec = RowKeySpec(fields=(KeyField(name="follower"), KeyField(name="followed")))
    follower = ["ab", "ab", "abc", "b", "a"]
    followed = ["x", "y", "x", "ab", "bx"]
    keys = enc(spec, follower=follower, followed=followed)
    ranges = spec.key_ranges(equals={"follower": "ab"})
    assert [i for i, k in enumerate(keys) if in_ranges(k, ranges)] == [0, 1]  # not "abc"
    point = spec.key_ranges(equals={"follower": "ab", "followed": "y"})
    assert [i for i, k in enumerate(keys) if in_ranges(k, point)] == [1]
    starts = spec.key_ranges(equals={"follower": "a"}, prefix="b")
    assert [i for i, k in enumerate(keys) if in_ranges(k, starts)] == [4]
    assert sorted(range(5), key=lambda i: keys[i]) == sorted(
        range(5), key=lambda i: (follower[i], followed[i])
    )


def test_describe_is_readable():
    spec = RowKeySpec(
        fields=(
            KeyField(name="user", hash="md5_prefix", hash_bytes=2),
            KeyField(name="ts", type="int64", reverse_timestamp=True),
            KeyField(name="code", width=4, descending=True),
        ),
        salt_buckets=16,
    )
    assert str(spec) == (
        "salt(16) + user:string[md5_prefix=2] + ts:int64[reverse_timestamp] "
        "+ code:string[width=4,descending]"
    )
    text = spec.describe()
    assert "Phoenix hash of the rest of the key mod 16" in text
    assert "1. user: string, md5 prefix 2 bytes, 0x00 terminated" in text
    assert "3. code: string, fixed width 4 (0x00 padded), descending" in text


def test_encode_many_rows_is_vectorized_and_consistent():
    rng = np.random.default_rng(0)
    n = 50_000
    users = pa.array([f"user{i % 997}" for i in range(n)])
    ts = pa.array(rng.integers(0, 2**40, n))
    spec = RowKeySpec(
        fields=(KeyField(name="user", hash="md5_prefix"), KeyField(name="ts", type="int64")),
        salt_buckets=32,
    )
    keys = spec.encode(pa.table({"user": users, "ts": ts}))
    assert len(keys) == n
    back = spec.decode(keys)
    assert back.column("user").equals(pa.chunked_array([users]))
    sample = keys.to_pylist()[:: n // 50]
    assert all(k[0] == java_salt(k[1:], 32) for k in sample)


def _select(spec, keys, **kwargs):
    ranges = spec.key_ranges(**kwargs)
    return [i for i, k in enumerate(keys) if in_ranges(k, ranges)]


def test_range_bounds_are_clamped_to_what_the_field_holds():
    small = RowKeySpec(fields=(KeyField(name="n", type="int8"),))
    assert small.key_ranges(upper=1000) == [(b"", b"")]
    assert small.key_ranges(lower=1000) == []
    assert small.key_ranges(upper=-1000) == []
    assert small.key_ranges(lower=-128) == [(b"", b"")]
    fixed = RowKeySpec(fields=(KeyField(name="c", width=2), KeyField(name="n", type="int8")))
    keys = enc(fixed, c=["ab", "ac", "b", "a"], n=pa.array([0, 0, 0, 0], pa.int8()))
    assert _select(fixed, keys, lower="abz") == [1, 2]  # v >= "abz" <=> v > "ab"
    assert _select(fixed, keys, upper="abz") == [0, 3]  # v < "abz" <=> v <= "ab"
    assert _select(fixed, keys, lower="a\x00b", upper="ab", upper_inclusive=True) == [0]
    floats = RowKeySpec(fields=(KeyField(name="x", type="float32", descending=True),))
    keys = enc(floats, x=pa.array([math.nan, math.inf, 1.0, -1.0], pa.float32()))
    assert _select(floats, keys, lower=0) == [1, 2]  # NaN matches no range
    assert _select(floats, keys, upper=0.1) == [3]
    assert _select(floats, keys, lower=1e39) == [1]  # beyond float32: only +inf


def test_open_last_field_ranges_with_zero_bytes():
    spec = RowKeySpec(fields=(KeyField(name="b", type="bytes"),))
    keys = enc(spec, b=[b"a", b"a\x00", b"ab", b"a\x00\x00"])
    assert _select(spec, keys, lower=b"a", lower_inclusive=False) == [1, 2, 3]
    assert _select(spec, keys, upper=b"a\x00", upper_inclusive=True) == [0, 1]
    assert _select(spec, keys, equals={"b": b"a\x00"}) == [1]
    assert _select(spec, keys, prefix=b"a\x00") == [1, 3]
    assert _select(spec, keys, upper=b"") == []  # nothing sorts below the empty value


def test_from_dict_accepts_toml_spelling_and_refuses_unknown_keys():
    doc = {
        "salt_buckets": 4,
        "fields": [
            {"name": "user", "hash": "md5_prefix", "hash_bytes": 2},
            {"name": "ts", "type": "long", "reverse_timestamp": True},
        ],
    }
    spec = RowKeySpec.from_dict(doc)
    assert spec.salt_buckets == 4
    assert spec.fields[0].hash_bytes == 2 and spec.fields[1].reverse_timestamp
    for bad in (
        {"fields": [{"name": "a", "collation": "de"}]},
        {"fields": [{"name": "a"}], "salt": 3},
        {"fields": "a"},
        {"fields": [{"type": "string"}]},
        {"fields": [{"name": "a", "descending": "yes"}]},
        {},
    ):
        with pytest.raises(InvalidArgumentError):
            RowKeySpec.from_dict(bad)

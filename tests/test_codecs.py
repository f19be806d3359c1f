"""Value codecs: byte-exact with HBase's Bytes (what Java's DataOutput / struct.pack give)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellstore.core.codecs import (
    Codec,
    Encoded,
    arrow_type,
    binary_parts,
    decode_values,
    encode_values,
    utf8_invalid,
)
from cellstore.errors import BadCellError, InvalidArgumentError

FAST = settings(max_examples=60, deadline=None)

PACK = {
    Codec.LONG: ">q",
    Codec.INT: ">i",
    Codec.SHORT: ">h",
    Codec.DOUBLE: ">d",
    Codec.FLOAT: ">f",
}
INT_BITS = {Codec.LONG: 64, Codec.INT: 32, Codec.SHORT: 16}


def _ints(codec):
    bits = INT_BITS[codec]
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


@pytest.mark.parametrize(
    ("name", "codec"),
    [
        ("long", Codec.LONG),
        ("INT64", Codec.LONG),
        ("int32", Codec.INT),
        ("int", Codec.INT),
        ("Integer", Codec.INT),
        ("int16", Codec.SHORT),
        ("short", Codec.SHORT),
        ("float64", Codec.DOUBLE),
        ("double", Codec.DOUBLE),
        ("float32", Codec.FLOAT),
        ("float", Codec.FLOAT),
        ("bool", Codec.BOOLEAN),
        ("boolean", Codec.BOOLEAN),
        ("string", Codec.STRING),
        ("str", Codec.STRING),
        ("UTF8", Codec.STRING),
        ("utf-8", Codec.STRING),
        ("bytes", Codec.BYTES),
        ("binary", Codec.BYTES),
        ("raw", Codec.BYTES),
        (" Long ", Codec.LONG),
        (Codec.FLOAT, Codec.FLOAT),
    ],
)
def test_codec_aliases(name, codec):
    assert Codec.parse(name) is codec


def test_unknown_codec_lists_valid_names():
    with pytest.raises(InvalidArgumentError, match=r"valid names: .*int64.*utf8"):
        Codec.parse("decimal")


def test_arrow_types_and_widths():
    assert [arrow_type(c) for c in Codec] == [
        pa.binary(),
        pa.string(),
        pa.int64(),
        pa.int32(),
        pa.int16(),
        pa.float64(),
        pa.float32(),
        pa.bool_(),
    ]
    assert [c.width for c in Codec] == [None, None, 8, 4, 2, 8, 4, 1]


@FAST
@given(st.data())
def test_integers_match_struct_pack_and_round_trip(data):
    codec = data.draw(st.sampled_from(list(INT_BITS)))
    values = data.draw(st.lists(st.one_of(st.none(), _ints(codec)), max_size=30))
    out = encode_values(pa.array(values, pa.int64()), codec, field="v")
    assert out.type == pa.binary()
    assert out.to_pylist() == [None if v is None else struct.pack(PACK[codec], v) for v in values]
    back = decode_values(out, codec, field="v")
    assert back.type == arrow_type(codec)
    assert back.to_pylist() == values


@FAST
@given(st.data())
def test_floats_match_struct_pack_and_round_trip(data):
    codec = data.draw(st.sampled_from([Codec.DOUBLE, Codec.FLOAT]))
    width = 64 if codec is Codec.DOUBLE else 32
    values = data.draw(st.lists(st.one_of(st.none(), st.floats(width=width)), max_size=30))
    out = encode_values(pa.array(values, pa.float64()), codec, field="v")
    nan = b"\x7f\xf8\x00\x00\x00\x00\x00\x00" if width == 64 else b"\x7f\xc0\x00\x00"
    expected = [
        None if v is None else nan if math.isnan(v) else struct.pack(PACK[codec], v) for v in values
    ]
    assert out.to_pylist() == expected
    back = decode_values(out, codec, field="v").to_pylist()
    for got, want in zip(back, values, strict=True):
        assert (
            (got is None and want is None)
            or (math.isnan(want) and math.isnan(got))
            or (got == want and math.copysign(1, got) == math.copysign(1, want))
        )


def test_nan_payloads_are_canonicalised():
    # doubleToLongBits: every NaN becomes 0x7ff8000000000000 (floats: 0x7fc00000).
    odd = np.array([0x7FF0000000000001, 0xFFF8000000000000, 0x7FFFFFFFFFFFFFFF], np.uint64)
    nans = pa.array(odd.view(np.float64))
    assert (
        encode_values(nans, "double", field="v").to_pylist()
        == [bytes.fromhex("7ff8" + "00" * 6)] * 3
    )
    assert encode_values(nans, "float", field="v").to_pylist() == [bytes.fromhex("7fc00000")] * 3
    odd32 = pa.array(np.array([0x7F800001, 0xFFC00000], np.uint32).view(np.float32))
    assert encode_values(odd32, "float", field="v").to_pylist() == [bytes.fromhex("7fc00000")] * 2


@FAST
@given(st.lists(st.one_of(st.none(), st.text(max_size=8)), max_size=20))
def test_strings_are_utf8_and_round_trip(values):
    out = encode_values(pa.array(values, pa.string()), "string", field="s")
    assert out.to_pylist() == [None if v is None else v.encode() for v in values]
    assert decode_values(out, "string", field="s").to_pylist() == values
    raw = encode_values(pa.array(values, pa.string()), "bytes", field="s")
    assert raw.to_pylist() == out.to_pylist()
    assert decode_values(raw, "bytes", field="s").to_pylist() == out.to_pylist()


def test_booleans_are_ff_and_00():
    out = encode_values(pa.array([True, False, None]), "boolean", field="b")
    assert out.to_pylist() == [b"\xff", b"\x00", None]
    # Bytes.toBoolean: any non-zero byte is true.
    assert decode_values(
        pa.array([b"\x01", b"\x00", b"\xff", None]), "bool", field="b"
    ).to_pylist() == [
        True,
        False,
        True,
        None,
    ]
    text = encode_values(pa.array(["TRUE", " false ", "1", "0"]), "bool", field="b")
    assert text.to_pylist() == [b"\xff", b"\x00", b"\xff", b"\x00"]
    assert encode_values(pa.array([1, 0]), "bool", field="b").to_pylist() == [b"\xff", b"\x00"]
    with pytest.raises(BadCellError, match="record 1"):
        encode_values(pa.array(["true", "maybe"]), "bool", field="b")
    with pytest.raises(BadCellError) as info:
        decode_values(pa.array([b"\x01", b"\x01\x00"]), "boolean", field="flag")
    assert (info.value.record, info.value.field) == (1, "flag")


def test_text_numbers_parse_like_java():
    got = encode_values(pa.array(["42", " -7 ", "+5", "007", "-0", None]), "long", field="n")
    assert got.to_pylist() == [struct.pack(">q", v) for v in (42, -7, 5, 7, 0)] + [None]
    edges = ["9223372036854775807", "-9223372036854775808", "00000000000000000000001"]
    assert decode_values(
        encode_values(pa.array(edges), "long", field="n"), "long", field="n"
    ).to_pylist() == [
        2**63 - 1,
        -(2**63),
        1,
    ]
    doubles = encode_values(
        pa.array(["1.5", "-2e3", ".5", "inf", "-Infinity", "NaN"]), "double", field="d"
    )
    assert decode_values(doubles, "double", field="d").to_pylist()[:5] == [
        1.5,
        -2000.0,
        0.5,
        math.inf,
        -math.inf,
    ]


@pytest.mark.parametrize(
    ("values", "codec", "bad"),
    [
        (["1", "4x2"], "long", 1),
        (["abc"], "long", 0),
        (["9223372036854775808"], "long", 0),
        (["-9223372036854775809"], "long", 0),
        (["1.5"], "int", 0),
        ([1, 70000], "short", 1),
        ([-32769], "short", 0),
        ([2**31], "int", 0),
        ([1.0, 1.5], "long", 1),
        ([float("nan")], "long", 0),
        ([2.0**63], "long", 0),
        (np.array([2**63], np.uint64), "long", 0),
        (["1e400"], "double", 0),
        ([1e39], "float", 0),
        (["1,5"], "double", 0),
        ([b"ok", b"\xff\xfe"], "string", 1),
        ([2], "boolean", 0),
    ],
)
def test_values_that_do_not_fit_name_record_and_field(values, codec, bad):
    arr = pa.array(values)
    with pytest.raises(BadCellError) as info:
        encode_values(arr, codec, field="price")
    assert info.value.record == bad
    assert info.value.field == "price"
    assert f"record {bad}" in str(info.value) and "'price'" in str(info.value)
    res = encode_values(arr, codec, field="price", errors="mask")
    assert isinstance(res, Encoded)
    assert list(np.flatnonzero(res.bad)) == [bad]
    assert res.values[bad].as_py() is None
    assert res.reasons[bad].as_py().startswith("price: ")
    assert res.bad_count == 1


def test_mask_mode_unpacks_and_keeps_good_values():
    values, bad, reasons = encode_values(
        pa.array(["1", None, "x", "3"]), "int", field="n", errors="mask"
    )
    assert values.to_pylist() == [b"\x00\x00\x00\x01", None, None, b"\x00\x00\x00\x03"]
    assert bad.tolist() == [False, False, True, False]
    assert reasons.to_pylist() == [None, None, "n: not an integer (int)", None]


def test_decode_wrong_length_names_record_and_can_null():
    arr = pa.array([struct.pack(">q", 1), b"\x00\x01", None, struct.pack(">q", -1)])
    with pytest.raises(BadCellError) as info:
        decode_values(arr, "long", field="qty")
    assert (info.value.record, info.value.field) == (1, "qty")
    assert "8 bytes" in str(info.value)
    assert decode_values(arr, "long", field="qty", errors="null").to_pylist() == [1, None, None, -1]


def test_decode_invalid_utf8():
    arr = pa.array([b"ok", b"\xc3\x28", "é".encode()])
    with pytest.raises(BadCellError, match=r"record 1, field 's': not valid UTF-8"):
        decode_values(arr, "string", field="s")
    assert decode_values(arr, "string", field="s", errors="null").to_pylist() == ["ok", None, "é"]


def test_input_shapes_chunked_dictionary_large_and_empty():
    chunked = pa.chunked_array([pa.array([1, 2]), pa.array([3])])
    assert encode_values(chunked, "short", field="n").to_pylist() == [
        struct.pack(">h", v) for v in (1, 2, 3)
    ]
    dictionary = pa.array(["7", "8", "7"]).dictionary_encode()
    assert encode_values(dictionary, "int", field="n").to_pylist() == [
        struct.pack(">i", v) for v in (7, 8, 7)
    ]
    large = pa.array(["a", None], pa.large_string())
    assert encode_values(large, "string", field="s").to_pylist() == [b"a", None]
    sliced = pa.array([b"xx", struct.pack(">i", 5), struct.pack(">i", 6)]).slice(1)
    assert decode_values(sliced, "int", field="n").to_pylist() == [5, 6]
    assert decode_values(
        pa.array([struct.pack(">i", 5)], pa.binary(4)), "int", field="n"
    ).to_pylist() == [5]
    assert encode_values(pa.array([], pa.int64()), "long", field="n").to_pylist() == []
    assert decode_values(pa.array([], pa.binary()), "double", field="n").to_pylist() == []
    assert encode_values(pa.nulls(2), "long", field="n").to_pylist() == [None, None]
    assert encode_values(pa.array([1, 2]), "string", field="n").to_pylist() == [b"1", b"2"]


def test_unsupported_column_types_and_modes():
    with pytest.raises(InvalidArgumentError, match=r"field 'flag'.*bool"):
        encode_values(pa.array([True]), "long", field="flag")
    with pytest.raises(InvalidArgumentError):
        encode_values(pa.array([1]), "bytes", field="n")
    with pytest.raises(InvalidArgumentError):
        decode_values(pa.array([1]), "long", field="n")
    with pytest.raises(InvalidArgumentError):
        encode_values(pa.array([1]), "long", field="n", errors="ignore")  # type: ignore[call-overload]
    with pytest.raises(InvalidArgumentError):
        decode_values(pa.array([b"x"]), "bytes", field="n", errors="mask")  # type: ignore[arg-type]


UTF8_PIECES = st.sampled_from(
    [
        b"a",
        b"\x00",
        b"\xc3\xa9",
        b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80",
        b"\x80",
        b"\xc3",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xc0\xaf",
        b"\xe0\x80\xaf",
        b"\xf0\x80\x80\xaf",
        b"\xf4\x90\x80\x80",
        b"\xf8\x88\x80\x80\x80",
        b"\xff",
        b"\xef\xbf\xbf",
        b"\xf4\x8f\xbf\xbf",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.binary(max_size=6), st.lists(UTF8_PIECES, max_size=4).map(b"".join)),
        max_size=12,
    )
)
def test_utf8_validation_matches_python(values):
    offsets, data = binary_parts(pa.array(values, pa.binary()))
    got = utf8_invalid(offsets, data).tolist()

    def invalid(v):
        try:
            v.decode("utf-8")
        except UnicodeDecodeError:
            return True
        return False

    assert got == [invalid(v) for v in values]

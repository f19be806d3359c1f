"""Value codecs: HBase's ``Bytes.toBytes`` / ``Bytes.toXxx`` over whole Arrow columns.

HBase stores every value as bytes; the client library decides what they mean. The codecs
here produce exactly the bytes of ``org.apache.hadoop.hbase.util.Bytes``:

========  ============================  ==========================================
codec     bytes                         Java
========  ============================  ==========================================
bytes     the value itself              ``byte[]``
string    UTF-8                         ``Bytes.toBytes(String)``
long      8 bytes, big-endian, signed   ``Bytes.toBytes(long)``
int       4 bytes, big-endian, signed   ``Bytes.toBytes(int)``
short     2 bytes, big-endian, signed   ``Bytes.toBytes(short)``
double    IEEE 754 binary64, big-endian ``Bytes.toBytes(double)``
float     IEEE 754 binary32, big-endian ``Bytes.toBytes(float)``
boolean   one byte, ``FF`` or ``00``    ``Bytes.toBytes(boolean)``
========  ============================  ==========================================

NaN is always written as Java's canonical NaN (``7FF8000000000000`` / ``7FC00000``), as
``Double.doubleToLongBits`` (used by ``Bytes.putDouble``) produces it; ``Bytes.toBytes``
uses the raw bits, which are the same for every NaN a Java program normally makes.

Encoding accepts typed columns and text (CSV input arrives as strings: ``"42"`` encodes as
a long, ``"4x2"`` is a bad record). Every function works on whole arrays through numpy
views of Arrow's buffers and pyarrow.compute: there are no per-value Python loops.

The lower part of this module holds the vectorized helpers over Arrow binary buffers that
:mod:`cellstore.core.rowkey` shares (buffers, UTF-8 validation, numeric coercion, problem
tracking). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final, Literal, NamedTuple, TypeAlias, overload

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core import pool
from cellstore.core.valuetypes import ValueType, lookup, parse_type_name
from cellstore.errors import BadCellError, InvalidArgumentError

__all__ = [
    "ArrayLike",
    "Codec",
    "Encoded",
    "arrow_type",
    "decode_values",
    "encode_values",
]

#: What the encoders and decoders take: one Arrow array, or a chunked one.
ArrayLike: TypeAlias = "pa.Array | pa.ChunkedArray"


class Codec(StrEnum):
    """How a value's bytes are interpreted (HBase ``Bytes`` conversions).

    The members keep HBase's spellings (written into mappings and index expressions);
    each is one :class:`~cellstore.core.valuetypes.ValueType` (:attr:`value_type`), which
    holds the names, aliases, widths and Arrow types.
    """

    BYTES = "bytes"
    STRING = "string"
    LONG = "long"
    INT = "int"
    SHORT = "short"
    DOUBLE = "double"
    FLOAT = "float"
    BOOLEAN = "boolean"

    @classmethod
    def parse(cls, name: str | Codec) -> Codec:
        """The codec for a name or alias, any case.

        Aliases: ``int64``/``long``, ``int32``/``int``/``integer``, ``int16``/``short``,
        ``float64``/``double``, ``float32``/``float``, ``bool``/``boolean``,
        ``string``/``str``/``utf8``/``utf-8``, ``bytes``/``binary``/``raw`` (the names of
        :data:`cellstore.core.valuetypes.ALIASES` whose type has a codec).

        Raises:
            InvalidArgumentError: naming the valid names, for anything else.
        """
        return parse_type_name(name, cls, what="value codec")

    @property
    def value_type(self) -> ValueType:
        """The type values decode to, in the one vocabulary (``long`` is ``int64``)."""
        return _VALUE_TYPES[self]

    @property
    def width(self) -> int | None:
        """Encoded length in bytes, or None for the variable-length codecs."""
        return _VALUE_TYPES[self].size


def _value_type(codec: Codec) -> ValueType:
    typ = lookup(codec.value)
    assert typ is not None, codec
    return typ


_VALUE_TYPES: Final = {c: _value_type(c) for c in Codec}
_WIDTHS: Final = {c: t.size for c, t in _VALUE_TYPES.items() if t.size is not None}
_ARROW_TYPES: Final = {c: t.arrow_type for c, t in _VALUE_TYPES.items()}

#: Java's canonical NaN bit patterns (``Double.doubleToLongBits`` / ``floatToIntBits``).
CANONICAL_NAN64: Final = 0x7FF8000000000000
CANONICAL_NAN32: Final = 0x7FC00000


def arrow_type(codec: Codec | str) -> pa.DataType:
    """The Arrow type :func:`decode_values` returns for ``codec``."""
    return _ARROW_TYPES[Codec.parse(codec)]


class Encoded(NamedTuple):
    """Result of an encoder run with ``errors="mask"``.

    Unpacks as ``values, bad, reasons``.

    Attributes:
        values: The encoded binary array; null where the input was null or bad.
        bad: Boolean numpy mask of the bad records.
        reasons: String array: why each bad record is bad (``"<field>: <reason>"``), null
            for good records.
    """

    values: pa.Array
    bad: np.ndarray
    reasons: pa.Array

    @property
    def bad_count(self) -> int:
        """Number of bad records."""
        return int(self.bad.sum())


Errors = Literal["raise", "mask"]


@overload
def encode_values(
    values: ArrayLike, codec: Codec | str, *, field: str, errors: Literal["raise"] = "raise"
) -> pa.Array: ...


@overload
def encode_values(
    values: ArrayLike, codec: Codec | str, *, field: str, errors: Literal["mask"]
) -> Encoded: ...


def encode_values(
    values: ArrayLike, codec: Codec | str, *, field: str, errors: Errors = "raise"
) -> pa.Array | Encoded:
    """Encode a column to HBase value bytes, vectorized.

    Accepted inputs per codec (nulls always stay null):

    * ``bytes``: binary or string (UTF-8) columns.
    * ``string``: string columns; binary columns holding valid UTF-8; integer, floating
      and boolean columns (their Arrow text form: ``42``, ``1.5``, ``true``).
    * ``long``/``int``/``short``: integer columns; floating columns of whole numbers;
      strings of decimal digits with an optional sign, surrounding whitespace ignored.
    * ``double``/``float``: integer and floating columns; strings in decimal or scientific
      notation, ``inf``, ``infinity`` and ``nan`` (any case, optional sign).
    * ``boolean``: boolean columns; integers 0 and 1; strings ``true``/``false``/``1``/``0``
      (any case).

    Args:
        values: The column.
        codec: A :class:`Codec` or one of its names.
        field: The column's name, used in error messages.
        errors: ``"raise"`` raises on the first bad record; ``"mask"`` returns an
            :class:`Encoded` whose ``bad`` mask marks the bad records (encoded as null).

    Returns:
        A binary array (``errors="raise"``) or an :class:`Encoded`.

    Raises:
        BadCellError: (``errors="raise"``) naming the first bad record and ``field``: a
            value that does not fit the codec (``70000`` as a short, ``1.5`` or ``"abc"``
            as a long, non-UTF-8 bytes as a string).
        InvalidArgumentError: if the column's type cannot be encoded with the codec.
    """
    codec = Codec.parse(codec)
    _check_errors(errors)
    arr = as_array(values)
    n = len(arr)
    valid = valid_mask(arr)
    problems = Problems(n)
    if codec in (Codec.BYTES, Codec.STRING):
        text = text_bytes(arr, utf8=codec is Codec.STRING, field=field, problems=problems)
        if pa.types.is_large_binary(text.type):
            text = text.cast(pa.binary())
        keep = valid & ~problems.bad
        out = text if keep.all() else pc.if_else(pa.array(keep), text, None)
    else:
        if codec in (Codec.LONG, Codec.INT, Codec.SHORT):
            width = _WIDTHS[codec]
            ints = to_integers(
                arr, bits=8 * width, signed=True, field=field, problems=problems, name=codec.value
            )
            raw = ints.astype(f">i{width}")
        elif codec in (Codec.DOUBLE, Codec.FLOAT):
            width = _WIDTHS[codec]
            floats = to_floats(
                arr, bits=8 * width, field=field, problems=problems, name=codec.value
            )
            raw = float_bits(floats).astype(f">u{width}")
        else:
            raw = np.where(to_booleans(arr, field=field, problems=problems), 0xFF, 0)
            raw = raw.astype(np.uint8)
        matrix = np.ascontiguousarray(raw).view(np.uint8).reshape(n, _WIDTHS[codec])
        out = fixed_to_binary(matrix, valid & ~problems.bad)
    if errors == "mask":
        return Encoded(out, problems.bad, problems.reasons())
    problems.raise_first(lambda i, _: repr(arr[i].as_py()))
    return out


def decode_values(
    values: ArrayLike,
    codec: Codec | str,
    *,
    field: str,
    errors: Literal["raise", "null"] = "raise",
) -> pa.Array:
    """Decode HBase value bytes to a typed column (``Bytes.toLong``, ``toString``, ...).

    ``boolean`` decodes as ``Bytes.toBoolean``: any non-zero byte is true.

    Args:
        values: A binary column (binary, large binary or fixed-size binary).
        codec: A :class:`Codec` or one of its names.
        field: The column's name, used in error messages.
        errors: ``"raise"`` raises on the first bad value; ``"null"`` decodes bad values as
            null.

    Returns:
        An array of type :func:`arrow_type` of ``codec``; nulls stay null.

    Raises:
        BadCellError: (``errors="raise"``) naming the first record whose value has the
            wrong length for a fixed-width codec, or is not UTF-8 for ``string``.
        InvalidArgumentError: if ``values`` is not a binary column.
    """
    codec = Codec.parse(codec)
    arr = as_array(values)
    if not (_is_binary(arr.type) or pa.types.is_null(arr.type)):
        raise InvalidArgumentError(
            f"field {field!r}: can only decode binary values, not {arr.type}"
        )
    n = len(arr)
    valid = valid_mask(arr)
    offsets, data = binary_parts(arr.fill_null(b"") if arr.null_count else arr)
    problems = Problems(n)
    lengths = np.diff(offsets)
    if codec is Codec.BYTES:
        out = arr.cast(pa.binary())
    elif codec is Codec.STRING:
        problems.add(valid & utf8_invalid(offsets, data), field, "not valid UTF-8")
        keep = valid & ~problems.bad
        if not problems.bad.any():
            out = binary_from_parts(offsets, data, keep, pa.string())
        else:
            off, dat = gather(data, offsets[:-1], np.where(keep, lengths, 0))
            out = binary_from_parts(off, dat, keep, pa.string())
    else:
        width = _WIDTHS[codec]
        problems.add(valid & (lengths != width), field, f"must be {width} bytes long")
        keep = valid & ~problems.bad
        matrix = take_fixed(data, offsets[:-1], width, keep)
        if codec is Codec.BOOLEAN:
            typed: np.ndarray = matrix[:, 0] != 0
        else:
            kind = "f" if codec in (Codec.DOUBLE, Codec.FLOAT) else "i"
            typed = matrix.view(f">{kind}{width}").reshape(n).astype(f"{kind}{width}")
        out = pa.array(typed, type=_ARROW_TYPES[codec], mask=~keep)
    if errors == "raise":
        problems.raise_first(lambda i, _: f"{lengths[i]} bytes {arr[i].as_py()!r}"[:80])
    elif errors != "null":
        raise InvalidArgumentError(f"errors must be 'raise' or 'null', not {errors!r}")
    return out


def _check_errors(errors: str) -> None:
    if errors not in ("raise", "mask"):
        raise InvalidArgumentError(f"errors must be 'raise' or 'mask', not {errors!r}")


# --------------------------------------------------------------------------------------
# Helpers shared with cellstore.core.rowkey: problems, Arrow buffers, coercion.
# --------------------------------------------------------------------------------------


class Problems:
    """Per-record problems found by a vectorized pass: a bad mask and the first reason.

    Reasons are added whole-array at a time (``add(mask, field, reason)``); a record keeps
    the first reason it gets, so callers add checks in field order.
    """

    def __init__(self, n: int) -> None:
        self.bad = np.zeros(n, dtype=bool)
        self._code = np.zeros(n, dtype=np.int32)
        self._messages: list[tuple[str, str]] = []

    def add(self, mask: np.ndarray, field: str, reason: str) -> None:
        """Mark the records in ``mask`` bad for ``reason`` (unless already bad)."""
        new = mask & ~self.bad
        if new.any():
            self._code[new] = len(self._messages)
            self._messages.append((field, reason))
            self.bad |= new

    @property
    def clean(self) -> bool:
        """Whether no record is bad (``bad`` then holds no True)."""
        return not self._messages

    def first(self) -> int | None:
        """Index of the first bad record, or None."""
        if self.clean:  # (``bad`` untouched: its pages need not be read)
            return None
        hits = np.flatnonzero(self.bad)
        return int(hits[0]) if hits.size else None

    def reasons(self) -> pa.Array:
        """String array of ``"<field>: <reason>"`` per bad record, null for good ones."""
        if not self._messages:
            return pa.nulls(len(self.bad), pa.string())
        texts = pa.array([f"{f}: {r}" for f, r in self._messages], pa.string())
        codes = pa.array(self._code, mask=~self.bad)
        return pa.DictionaryArray.from_arrays(codes, texts).dictionary_decode()

    def reason(self, i: int) -> tuple[str, str]:
        """``(field, reason)`` of bad record ``i``."""
        return self._messages[int(self._code[i])]

    def raise_first(self, describe: Callable[[int, str], str] | None = None) -> None:
        """Raise :class:`BadCellError` for the first bad record, if any.

        Args:
            describe: Formats the offending input of a record (index, field) for the message.
        """
        i = self.first()
        if i is None:
            return
        field, reason = self.reason(i)
        detail = f" (got {describe(i, field)})" if describe is not None else ""
        raise BadCellError(f"record {i}, field {field!r}: {reason}{detail}", record=i, field=field)


def one_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``column`` as one array: as it is, its only chunk (no copy), or its chunks combined."""
    if isinstance(column, pa.Array):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def as_array(values: ArrayLike) -> pa.Array:
    """One contiguous, non-dictionary Arrow array."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if not isinstance(arr, pa.Array):
        arr = pa.array(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def valid_mask(arr: pa.Array) -> np.ndarray:
    """Boolean numpy mask: True where ``arr`` is not null."""
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=bool)
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _is_binary(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
    )


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def stored_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Zero-copy ``(offsets, data)`` of a binary or string array, offsets as stored.

    Unlike :func:`binary_parts`, nothing is rebased or widened: ``offsets`` is the
    array's own slice of its offsets buffer (int32, or int64 for the large types),
    ``len(arr) + 1`` long, and ``data`` the whole data buffer, so value ``i`` is
    ``data[offsets[i]:offsets[i + 1]]``. Where the array has no data (empty values
    only), ``data`` is one zero byte (compiled kernels may index it, never read it).
    """
    t = arr.type
    large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    width = np.int64 if large else np.int32
    bufs = arr.buffers()
    if not len(arr) or bufs[1] is None:
        offsets = np.zeros(len(arr) + 1, dtype=width)
    else:
        offsets = np.frombuffer(bufs[1], dtype=width)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else None
    return offsets, data if data is not None else np.zeros(1, dtype=np.uint8)


def binary_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Zero-copy ``(offsets, data)`` of a binary or string array.

    ``offsets`` is int64, ``len(arr) + 1`` long, starting at 0; value ``i`` is
    ``data[offsets[i]:offsets[i + 1]]``. Null values keep whatever bytes Arrow gave them
    (fill nulls first when that matters).
    """
    n = len(arr)
    t = arr.type
    if pa.types.is_fixed_size_binary(t) or pa.types.is_null(t):
        arr = arr.cast(pa.binary())
        t = arr.type
    if n == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    bufs = arr.buffers()
    raw = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)
    offs = raw[arr.offset : arr.offset + n + 1].astype(np.int64)
    start, stop = int(offs[0]), int(offs[-1])
    data = (
        np.frombuffer(bufs[2], dtype=np.uint8)[start:stop]
        if bufs[2] is not None and stop > start
        else np.zeros(0, dtype=np.uint8)
    )
    return offs - start, data


def binary_from_parts(
    offsets: np.ndarray,
    data: np.ndarray,
    valid: np.ndarray | None = None,
    type: pa.DataType | None = None,
) -> pa.Array:
    """A binary (or ``type``: string) array from ``(offsets, data)`` and a validity mask.

    Uses 64-bit offsets (large binary/string) only when the data exceeds 2 GiB.
    """
    n = len(offsets) - 1
    total = int(offsets[-1]) if n >= 0 else 0
    large = total >= 2**31
    typ = type if type is not None else pa.binary()
    if large:
        typ = pa.large_string() if pa.types.is_string(typ) else pa.large_binary()
    width = np.int64 if large else np.int32
    offs = offsets
    if offsets.dtype != width or not offsets.flags.c_contiguous:
        offs = pool.empty(n + 1, width)  # (pool memory: no fresh pages, core/pool.py)
        offs[:] = offsets
    validity = None
    nulls = 0
    if valid is not None and not valid.all():
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        nulls = int(n - valid.sum())
    buffers = [validity, pa.py_buffer(offs), pa.py_buffer(np.ascontiguousarray(data))]
    return pa.Array.from_buffers(typ, n, buffers, null_count=nulls)


def value_ids(offsets: np.ndarray) -> np.ndarray:
    """For every byte of the data, the index of the value it belongs to."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def gather(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Copy ``data[starts[i]:starts[i] + lengths[i]]`` for every ``i`` into new parts.

    Returns:
        ``(offsets, data)`` of the gathered values.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    src = np.repeat(np.asarray(starts, dtype=np.int64) - offsets[:-1], lengths)
    src += np.arange(int(offsets[-1]), dtype=np.int64)
    return offsets, data[src]


def take_fixed(data: np.ndarray, starts: np.ndarray, width: int, keep: np.ndarray) -> np.ndarray:
    """``(n, width)`` uint8 matrix of ``data[starts[i]:starts[i] + width]``; 0 where not kept."""
    n = len(starts)
    if n and keep.all() and np.array_equal(starts, np.arange(n, dtype=np.int64) * width):
        return data[: n * width].reshape(n, width)
    out = np.zeros((n, width), dtype=np.uint8)
    if n:
        _take_fixed(data, np.asarray(starts, dtype=np.int64), width, keep, out)
    return out


@numba.njit(cache=True, nogil=True)
def _take_fixed(
    data: np.ndarray, starts: np.ndarray, width: int, keep: np.ndarray, out: np.ndarray
) -> None:
    """Compiled body of :func:`take_fixed` (one pass, no index matrix)."""
    for i in range(len(starts)):
        if keep[i]:
            s = starts[i]
            for b in range(width):
                out[i, b] = data[s + b]


def fixed_to_binary(matrix: np.ndarray, keep: np.ndarray) -> pa.Array:
    """A binary array of the rows of an ``(n, w)`` uint8 matrix; null where not kept."""
    n, width = matrix.shape
    lengths = np.where(keep, width, 0)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = matrix.reshape(-1) if keep.all() else matrix[keep].reshape(-1)
    return binary_from_parts(offsets, data, keep)


def utf8_invalid(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Boolean mask of the values that are not well-formed UTF-8 (RFC 3629), vectorized.

    Rejects overlong forms, surrogates (``ED A0..BF``), code points above U+10FFFF and
    sequences cut by the end of the value, as Python's strict UTF-8 decoder does.
    """
    n = len(offsets) - 1
    if data.size == 0 or not (data & 0x80).any():
        return np.zeros(n, dtype=bool)
    try:  # Arrow's validating cast is the fast path when everything is valid
        binary_from_parts(offsets, data).cast(pa.string())
        return np.zeros(n, dtype=bool)
    except pa.ArrowInvalid:
        pass
    b = data
    total = b.size
    vid = value_ids(offsets)
    end = offsets[1:][vid]
    cont = (b & 0xC0) == 0x80
    need = np.zeros(total, dtype=np.int64)
    need[(b >= 0xC2) & (b <= 0xDF)] = 1
    need[(b & 0xF0) == 0xE0] = 2
    need[(b >= 0xF0) & (b <= 0xF4)] = 3
    pos = np.arange(total, dtype=np.int64)
    bad = (b == 0xC0) | (b == 0xC1) | (b >= 0xF5)
    bad |= (need > 0) & (pos + need >= end)
    required = np.zeros(total, dtype=bool)
    for k in (1, 2, 3):
        src = np.flatnonzero(need >= k)
        tgt = src + k
        tgt = tgt[tgt < end[src]]
        required[tgt] = True
    bad |= required != cont
    nxt = np.zeros(total, dtype=np.uint8)
    nxt[:-1] = b[1:]
    bad |= (b == 0xE0) & (nxt < 0xA0)
    bad |= (b == 0xED) & (nxt > 0x9F)
    bad |= (b == 0xF0) & (nxt < 0x90)
    bad |= (b == 0xF4) & (nxt > 0x8F)
    counts = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(bad, out=counts[1:])
    result: np.ndarray = (counts[offsets[1:]] - counts[offsets[:-1]]) > 0
    return result


def text_bytes(arr: pa.Array, *, utf8: bool, field: str, problems: Problems) -> pa.Array:
    """The bytes of a string/bytes value column, nulls as empty values.

    Strings give their UTF-8 bytes; binary values are taken as they are (and must be valid
    UTF-8 when ``utf8``); with ``utf8``, integer, floating and boolean columns give their
    Arrow text form.

    Raises:
        InvalidArgumentError: for a column type that has no bytes of this kind.
    """
    t = arr.type
    if pa.types.is_null(t):
        return _empty_binary(len(arr))
    if _is_text(t):
        out = arr.cast(pa.large_binary() if pa.types.is_large_string(t) else pa.binary())
    elif _is_binary(t):
        out = arr.cast(pa.binary()) if pa.types.is_fixed_size_binary(t) else arr
        if utf8:
            filled = out.fill_null(b"") if out.null_count else out
            offsets, data = binary_parts(filled)
            problems.add(valid_mask(out) & utf8_invalid(offsets, data), field, "not valid UTF-8")
    elif utf8 and (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        out = pc.cast(arr, pa.string()).cast(pa.binary())
    else:
        kind = "a string" if utf8 else "bytes"
        raise InvalidArgumentError(f"field {field!r}: cannot encode a {t} column as {kind}")
    return out.fill_null(b"") if out.null_count else out


def _empty_binary(n: int) -> pa.Array:
    return binary_from_parts(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8))


_INT_TEXT: Final = r"^[+-]?[0-9]+$"
_FLOAT_TEXT: Final = (
    r"(?i)^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)$"
)
_INF_TEXT: Final = r"(?i)^[+-]?(?:inf|infinity)$"


def _numpy(arr: pa.Array, fill: Any) -> np.ndarray:
    filled = arr.fill_null(fill) if arr.null_count else arr
    return np.asarray(filled.to_numpy(zero_copy_only=False))


def _two_complement(neg: np.ndarray, mag: np.ndarray) -> np.ndarray:
    """int64-bit patterns (as uint64) of ``-mag`` where ``neg``, else ``mag``."""
    return np.where(neg, ~mag + np.uint64(1), mag)


def to_integers(
    arr: pa.Array, *, bits: int, signed: bool, field: str, problems: Problems, name: str = ""
) -> np.ndarray:
    """Coerce a column to integers of ``bits`` bits, recording bad records in ``problems``.

    Integer columns are range-checked; floating columns must hold whole numbers; strings
    must be decimal digits with an optional sign (surrounding whitespace ignored). Nulls
    and bad records come out as 0.

    Returns:
        A numpy array of dtype ``int{bits}`` (or ``uint{bits}`` when not ``signed``).

    Raises:
        InvalidArgumentError: for a column type that holds no integers.
    """
    n = len(arr)
    valid = valid_mask(arr)
    t = arr.type
    type_name = name or f"{'' if signed else 'u'}int{bits}"
    neg = np.zeros(n, dtype=bool)
    if pa.types.is_null(t):
        mag = np.zeros(n, dtype=np.uint64)
    elif pa.types.is_integer(t):
        if pa.types.is_signed_integer(t):
            x = _numpy(arr, 0).astype(np.int64)
            neg = x < 0
            mag = np.where(neg, ~x.view(np.uint64) + np.uint64(1), x.view(np.uint64))
        else:
            mag = _numpy(arr, 0).astype(np.uint64)
    elif pa.types.is_floating(t):
        x = _numpy(arr, 0.0).astype(np.float64)
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(x) & (np.floor(x) == x)
            fits = whole & (x >= -(2.0**63)) & (x < 2.0**64)
        problems.add(valid & ~whole, field, f"not a whole number for {type_name}")
        problems.add(valid & ~fits, field, f"out of range for {type_name}")
        neg = fits & (x < 0)
        mag = np.where(fits, np.abs(np.where(fits, x, 0.0)), 0.0).astype(np.uint64)
    elif _is_text(t):
        text = pc.utf8_trim_whitespace(arr.fill_null("0") if arr.null_count else arr)
        ok = _numpy(pc.match_substring_regex(text, _INT_TEXT), False).astype(bool)
        problems.add(valid & ~ok, field, f"not an integer ({type_name})")
        neg = ok & _numpy(pc.starts_with(text, "-"), False).astype(bool)
        digits = pc.utf8_ltrim(pc.utf8_ltrim(text, characters="+-"), characters="0")
        ndig = _numpy(pc.binary_length(digits), 0).astype(np.int64)
        # 20 digits hold every uint64; compare same-length digit strings as text.
        longest = pc.less_equal(digits, "18446744073709551615")
        fits = ok & ((ndig < 20) | ((ndig == 20) & _numpy(longest, False).astype(bool)))
        problems.add(valid & ok & ~fits, field, f"out of range for {type_name}")
        safe = pc.if_else(pa.array(fits & (ndig > 0)), digits, "0")
        mag = _numpy(pc.cast(safe, pa.uint64()), 0).astype(np.uint64)
    else:
        raise InvalidArgumentError(f"field {field!r}: cannot encode a {t} column as {type_name}")
    neg &= mag > 0
    max_pos = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    max_neg = (1 << (bits - 1)) if signed else 0
    over = np.where(neg, mag > np.uint64(max_neg), mag > np.uint64(max_pos))
    problems.add(valid & over, field, f"out of range for {type_name}")
    good = valid & ~problems.bad
    pattern = np.where(good, _two_complement(neg, mag), np.uint64(0))
    if signed:
        return pattern.view(np.int64).astype(f"i{bits // 8}")
    return pattern.astype(f"u{bits // 8}")


def to_floats(
    arr: pa.Array, *, bits: int, field: str, problems: Problems, name: str = ""
) -> np.ndarray:
    """Coerce a column to floats of ``bits`` bits (32 or 64), recording bad records.

    Integer and floating columns convert (rounding to nearest); strings must be decimal or
    scientific notation, ``inf``/``infinity``/``nan`` (any case). A finite value beyond the
    type's range is bad. Nulls and bad records come out as 0.

    Raises:
        InvalidArgumentError: for a column type that holds no numbers.
    """
    valid = valid_mask(arr)
    t = arr.type
    type_name = name or f"float{bits}"
    if pa.types.is_null(t):
        x = np.zeros(len(arr), dtype=np.float64)
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        with np.errstate(invalid="ignore"):  # signalling NaNs
            x = _numpy(arr, 0).astype(np.float64)
    elif _is_text(t):
        text = pc.utf8_trim_whitespace(arr.fill_null("0") if arr.null_count else arr)
        ok = _numpy(pc.match_substring_regex(text, _FLOAT_TEXT), False).astype(bool)
        problems.add(valid & ~ok, field, f"not a number ({type_name})")
        x = _numpy(pc.cast(pc.if_else(pa.array(ok), text, "0"), pa.float64()), 0.0)
        x = x.astype(np.float64)
        spelled_inf = _numpy(pc.match_substring_regex(text, _INF_TEXT), False).astype(bool)
        problems.add(valid & np.isinf(x) & ~spelled_inf, field, f"out of range for {type_name}")
    else:
        raise InvalidArgumentError(f"field {field!r}: cannot encode a {t} column as {type_name}")
    if bits == 32:
        with np.errstate(over="ignore", invalid="ignore"):
            y = x.astype(np.float32)
        problems.add(valid & np.isfinite(x) & np.isinf(y), field, f"out of range for {type_name}")
        return np.where(valid & ~problems.bad, y, np.float32(0))
    return np.where(valid & ~problems.bad, x, 0.0)


def float_bits(x: np.ndarray) -> np.ndarray:
    """IEEE 754 bit patterns (uint32/uint64) of a float32/float64 array, NaN made canonical."""
    b: np.ndarray
    if x.dtype == np.float32:
        b = np.ascontiguousarray(x).view(np.uint32).copy()
        b[np.isnan(x)] = CANONICAL_NAN32
    else:
        b = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64).copy()
        b[np.isnan(x)] = CANONICAL_NAN64
    return b


def to_booleans(arr: pa.Array, *, field: str, problems: Problems) -> np.ndarray:
    """Coerce a column to booleans: bools; integers 0/1; ``true``/``false``/``1``/``0``.

    Raises:
        InvalidArgumentError: for a column type that holds no booleans.
    """
    valid = valid_mask(arr)
    t = arr.type
    if pa.types.is_null(t):
        return np.zeros(len(arr), dtype=bool)
    if pa.types.is_boolean(t):
        return _numpy(arr, False).astype(bool)
    if pa.types.is_integer(t):
        x = _numpy(arr, 0)
        problems.add(valid & (x != 0) & (x != 1), field, "not a boolean (0 or 1)")
        return np.asarray(x == 1)
    if _is_text(t):
        text = pc.utf8_lower(pc.utf8_trim_whitespace(arr.fill_null("") if arr.null_count else arr))
        true = _numpy(pc.is_in(text, pa.array(["true", "1"])), False).astype(bool)
        false = _numpy(pc.is_in(text, pa.array(["false", "0"])), False).astype(bool)
        problems.add(valid & ~true & ~false, field, "not a boolean (true/false/1/0)")
        return true
    raise InvalidArgumentError(f"field {field!r}: cannot encode a {t} column as boolean")

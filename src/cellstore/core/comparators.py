"""How the value filters compare: HBase's comparators, and our typed ones.

:class:`ValueTest` is one comparison of stored values with an operand, shared by
:class:`~cellstore.core.filters.SingleColumnValueFilter` and
:class:`~cellstore.core.filters.ValueFilter`: HBase's ``BinaryComparator`` (unsigned
bytes, or numbers with a ``codec``), ``BinaryPrefixComparator``, ``SubstringComparator``
and ``RegexStringComparator``, and the *typed* comparators, our extension
(:data:`TYPED_COMPARATORS`): numbers compared as numbers, each value decoded with the
codec the table recorded for its column (:meth:`ValueTest.bound`), else with the
comparator's own type.

Vectorized: one pyarrow decode and compare per codec in play, no per-cell Python code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.codecs import Codec, decode_values
from cellstore.core.keys import as_bytes
from cellstore.core.valuetypes import names_of
from cellstore.errors import InvalidArgumentError

__all__ = [
    "HBASE_COMPARATORS",
    "TYPED_COMPARATORS",
    "ColumnCodecs",
    "CompareOp",
    "Comparator",
    "ValueTest",
    "as_mask",
    "starts_with",
]


class CompareOp(StrEnum):
    """HBase's ``CompareOperator``: how a stored value compares with the operand."""

    LESS = "<"
    LESS_OR_EQUAL = "<="
    EQUAL = "=="
    NOT_EQUAL = "!="
    GREATER_OR_EQUAL = ">="
    GREATER = ">"

    @classmethod
    def parse(cls, op: str | CompareOp) -> CompareOp:
        """An operator from its symbol or HBase name (``"<"``, ``"LESS"``, ``"="``...).

        Raises:
            InvalidArgumentError: for an unknown operator.
        """
        if isinstance(op, CompareOp):
            return op
        text = str(op).strip()
        alias = {"=": "==", "<>": "!="}.get(text, text)
        for member in cls:
            if alias in (member.value, member.name, member.name.lower()):
                return member
        valid = ", ".join(m.value for m in cls)
        raise InvalidArgumentError(f"unknown compare operator {op!r} (valid: {valid})")


class Comparator(StrEnum):
    """How values are compared (HBase's comparator classes).

    * ``binary``: unsigned lexicographic bytes (``BinaryComparator``), or numeric when the
      filter gives a ``codec`` (``LongComparator`` and friends);
    * ``prefix``: the value starts with the operand (``BinaryPrefixComparator``);
    * ``substring``: the value, read as UTF-8, contains the operand, ignoring case
      (``SubstringComparator``);
    * ``regex``: the value matches the regular expression (``RegexStringComparator``,
      RE2 syntax; a match anywhere counts, as Java's ``Matcher#find``).

    * ``typed`` (our extension, not HBase's): numeric (or boolean), the values decoded
      with the table's codec for their column, else with the comparator's type (see
      :data:`TYPED_COMPARATORS`; a filter is given one by naming the type:
      ``comparator="double"``).

    ``prefix``, ``substring`` and ``regex`` support only ``==`` and ``!=``.
    """

    BINARY = "binary"
    PREFIX = "prefix"
    SUBSTRING = "substring"
    REGEX = "regex"
    TYPED = "typed"


#: The typed comparators (our extension of HBase's filter language): each name of a
#: numeric or boolean value codec (``long``, ``int64``, ``int``, ``short``, ``double``,
#: ``float``, ``boolean``... every alias of :mod:`cellstore.core.valuetypes`) to the
#: codec. None is one of HBase's comparator types (``binary``, ``binaryprefix``,
#: ``regexstring``, ``substring``), so ``'binary:...'`` keeps comparing bytes.
TYPED_COMPARATORS: Final[Mapping[str, Codec]] = {
    name: Codec.parse(name)
    for name in names_of(c.value_type for c in Codec if not c.value_type.is_text)
}

#: HBase's own comparator types (``ParseConstants``): never a typed comparator's name.
HBASE_COMPARATORS: Final = frozenset({"binary", "binaryprefix", "regexstring", "substring"})
assert not HBASE_COMPARATORS & set(TYPED_COMPARATORS)

#: Recorded value codecs a typed comparator decodes with: ``(family, qualifier, codec)``,
#: qualifier None for a family-wide codec (values whose qualifier came from the data).
ColumnCodecs = tuple[tuple[str, bytes | None, Codec], ...]


_COMPARE_FUNCS: Final = {
    CompareOp.LESS: pc.less,
    CompareOp.LESS_OR_EQUAL: pc.less_equal,
    CompareOp.EQUAL: pc.equal,
    CompareOp.NOT_EQUAL: pc.not_equal,
    CompareOp.GREATER_OR_EQUAL: pc.greater_equal,
    CompareOp.GREATER: pc.greater,
}


@dataclass(frozen=True, kw_only=True)
class ValueTest:
    """A comparison of stored values with an operand (shared by the value filters).

    ``codec`` decodes the values before a numeric comparison. For the ``typed``
    comparator it is the comparator's own type, used for columns without a recorded
    codec; ``column_codecs`` (set by :func:`bind_filters`) are the table's recorded codecs,
    which win.
    """

    op: CompareOp
    value: bytes | str | int | float | bool
    comparator: Comparator
    codec: Codec | None
    column_codecs: ColumnCodecs = ()

    @staticmethod
    def build(
        op: str | CompareOp,
        value: bytes | str | int | float | bool,
        comparator: str | Comparator,
        codec: str | Codec | None,
    ) -> ValueTest:
        """The test a value filter's arguments describe (see ``SingleColumnValueFilter``).

        Raises:
            InvalidArgumentError: an unknown operator or comparator, an operator the
                comparator does not support, or an operand it cannot use.
        """
        cmp_op = CompareOp.parse(op)
        name = str(comparator).strip().lower()
        if name in TYPED_COMPARATORS or name == Comparator.TYPED:
            return ValueTest._typed(cmp_op, value, name, codec)
        try:
            kind = Comparator(name)
        except ValueError:
            valid = ", ".join(c.value for c in Comparator if c is not Comparator.TYPED)
            raise InvalidArgumentError(
                f"unknown comparator {comparator!r} (valid: {valid}, or a value type for a "
                f"numeric comparison: {', '.join(sorted(TYPED_COMPARATORS))})"
            ) from None
        if kind is not Comparator.BINARY and cmp_op not in (CompareOp.EQUAL, CompareOp.NOT_EQUAL):
            raise InvalidArgumentError(f"the {kind} comparator supports only == and !=")
        parsed = Codec.parse(codec) if codec is not None else None
        if parsed is None and not isinstance(value, bytes | bytearray | str):
            # A number or a bool compares against values written with HBase's Bytes codec.
            parsed = _operand_codec(value)
        if parsed is not None and kind is not Comparator.BINARY:
            raise InvalidArgumentError(f"the {kind} comparator compares bytes; drop the codec")
        if kind is Comparator.REGEX and not isinstance(value, str):
            raise InvalidArgumentError("a regex comparator needs a str pattern")
        if kind is Comparator.SUBSTRING:
            try:
                as_bytes(value, "value").decode("utf-8")  # type: ignore[arg-type]
            except UnicodeDecodeError:
                raise InvalidArgumentError("a substring comparator needs UTF-8 text") from None
        if kind is Comparator.REGEX:
            operand: bytes | str | int | float | bool = value
        elif parsed is None or parsed in (Codec.BYTES, Codec.STRING):
            operand = as_bytes(value, "value")  # type: ignore[arg-type]
            if parsed is not None:
                parsed = None  # UTF-8 and raw bytes compare as bytes
        else:
            operand = value
        return ValueTest(op=cmp_op, value=operand, comparator=kind, codec=parsed)

    @staticmethod
    def _typed(
        op: CompareOp, value: bytes | str | int | float | bool, name: str, codec: str | Codec | None
    ) -> ValueTest:
        """A typed comparison: ``name`` is a type (``double``) or ``typed`` (+ ``codec``)."""
        if name != Comparator.TYPED:
            if codec is not None:
                raise InvalidArgumentError(
                    f"the {name} comparator decodes with the table's codecs; drop codec="
                )
            own: Codec | None = TYPED_COMPARATORS[name]
        else:
            own = Codec.parse(codec) if codec is not None else _operand_codec(value)
            if own is None or own.value_type.is_text:
                raise InvalidArgumentError(
                    f"a typed comparator needs a numeric or boolean type, not {codec!r}"
                )
        assert own is not None
        return ValueTest(
            op=op, value=_typed_operand(value, own), comparator=Comparator.TYPED, codec=own
        )

    def bound(self, codecs: ColumnCodecs) -> ValueTest:
        """This test with the table's recorded codecs (only a typed test uses them)."""
        if self.comparator is not Comparator.TYPED:
            return self
        return replace(self, column_codecs=tuple(c for c in codecs if c[2] is not Codec.BYTES))

    def matches(
        self,
        values: pa.Array | pa.ChunkedArray,
        what: str,
        *,
        families: pa.ChunkedArray | pa.Array | None = None,
        qualifiers: pa.ChunkedArray | pa.Array | None = None,
    ) -> np.ndarray:
        """Whether each value passes; values that do not decode never pass.

        ``families``/``qualifiers`` (a value filter's cells) pick each value's recorded
        codec for a typed test; without them every value decodes with :attr:`codec`.
        """
        n = len(values)
        if n == 0:
            return np.zeros(0, dtype=bool)
        if self.comparator is Comparator.TYPED:
            return self._typed_matches(values, what, families, qualifiers)
        if self.comparator is Comparator.REGEX:
            hit = pc.match_substring_regex(values, str(self.value))
        elif self.comparator is Comparator.SUBSTRING:
            # SubstringComparator: case-insensitive, on the value read as UTF-8.
            hit = pc.match_substring(values, self._pattern(), ignore_case=True)
        elif self.comparator is Comparator.PREFIX:
            hit = starts_with(values, bytes(self.value))  # type: ignore[arg-type]
        elif self.codec is None:
            hit = _COMPARE_FUNCS[self.op](values, pa.scalar(self.value, pa.binary()))
        else:
            typed = decode_values(values, self.codec, field=what, errors="null")
            try:
                scalar = pa.scalar(self.value, typed.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                raise InvalidArgumentError(
                    f"{self.value!r} is not a {self.codec} value: {exc}"
                ) from None
            hit = _COMPARE_FUNCS[self.op](typed, scalar)
        if self.comparator is not Comparator.BINARY and self.op is CompareOp.NOT_EQUAL:
            hit = pc.invert(hit)
        return as_mask(hit)

    def _typed_matches(
        self,
        values: pa.Array | pa.ChunkedArray,
        what: str,
        families: pa.ChunkedArray | pa.Array | None,
        qualifiers: pa.ChunkedArray | pa.Array | None,
    ) -> np.ndarray:
        """A typed test, one vectorized decode per codec in play (no per-cell code)."""
        assert self.codec is not None
        if not self.column_codecs or families is None or qualifiers is None:
            return self._compare_decoded(values, self.codec, what)
        order = _codec_order(self.column_codecs)
        ids = _column_codec_ids(self.column_codecs, families, qualifiers)
        out = np.zeros(len(values), dtype=bool)
        for i in np.unique(ids):
            codec = self.codec if i < 0 else order[int(i)]
            mask = ids == i
            picked = values if mask.all() else values.filter(pa.array(mask, pa.bool_()))
            out[mask] = self._compare_decoded(picked, codec, what)
        return out

    def _compare_decoded(
        self, values: pa.Array | pa.ChunkedArray, codec: Codec, what: str
    ) -> np.ndarray:
        """Decode ``values`` with ``codec`` and compare them numerically with the operand.

        Text (``string``) is read as a decimal number (``"120.5"``, ``" 7 "``, ``"1e3"``)
        and compares as a double; text that is no such number never matches. ``bytes``
        values and booleans compared with numbers (or the reverse) never match.
        """
        value = self.value
        if codec is Codec.BYTES or (codec is Codec.BOOLEAN) != isinstance(value, bool):
            return np.zeros(len(values), dtype=bool)
        if codec is Codec.STRING:
            numbers = _text_numbers(decode_values(values, codec, field=what, errors="null"))
            return as_mask(_COMPARE_FUNCS[self.op](numbers, pa.scalar(float(value), pa.float64())))
        typed = decode_values(values, codec, field=what, errors="null")
        if isinstance(value, bool):
            scalar = pa.scalar(value, pa.bool_())
        elif (
            isinstance(value, float)
            or pa.types.is_floating(typed.type)
            or not -(2**63) <= int(value) < 2**63
        ):
            # a long beyond ±2**53 rounds to the nearest double (compared as doubles)
            typed = typed.cast(pa.float64(), safe=False)
            scalar = pa.scalar(float(value), pa.float64())
        else:
            typed, scalar = typed.cast(pa.int64()), pa.scalar(int(value), pa.int64())
        return as_mask(_COMPARE_FUNCS[self.op](typed, scalar))

    def _pattern(self) -> str:
        value = self.value
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return str(value)


def _operand_codec(value: object) -> Codec | None:
    """The codec HBase's ``Bytes`` writes a Python number or bool with (None otherwise)."""
    if isinstance(value, bool):
        return Codec.BOOLEAN
    if isinstance(value, int):
        return Codec.LONG
    if isinstance(value, float):
        return Codec.DOUBLE
    if isinstance(value, bytes | bytearray | str):
        return None
    raise InvalidArgumentError(f"cannot compare with {value!r}")


def _typed_operand(value: object, codec: Codec) -> int | float | bool:
    """A typed comparator's operand as a Python number (or bool); text is parsed."""
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", errors="replace")
    if codec is Codec.BOOLEAN:
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if isinstance(value, bool):
            return value
        raise InvalidArgumentError(f"the boolean comparator needs true or false, not {value!r}")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidArgumentError(f"the {codec} comparator needs a number, not {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text, 10)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            raise InvalidArgumentError(
                f"the {codec} comparator needs a number, not {value!r}"
            ) from None
        return number
    return value


#: A decimal number written as text (what ``_text_numbers`` reads; no NaN, no infinity).
_DECIMAL: Final = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"


def _text_numbers(text: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Decimal numbers written as text, as doubles; null where the text is no number."""
    ok = pc.match_substring_regex(text, _DECIMAL)
    clean = pc.if_else(ok, pc.utf8_trim_whitespace(text), pa.scalar(None, pa.string()))
    return pc.cast(clean, pa.float64())


def _codec_order(codecs: ColumnCodecs) -> list[Codec]:
    """The distinct codecs of ``codecs``, in the order :func:`_column_codec_ids` numbers."""
    return sorted({c for _, _, c in codecs}, key=str)


def _column_codec_ids(
    codecs: ColumnCodecs,
    families: pa.ChunkedArray | pa.Array,
    qualifiers: pa.ChunkedArray | pa.Array,
) -> np.ndarray:
    """Per cell, the index of its recorded codec in :func:`_codec_order`, -1 when none.

    A column's own codec wins over its family's. Two vectorized lookups, no per-cell code.
    """
    order = _codec_order(codecs)
    ids = np.full(len(families), -1, dtype=np.int64)
    fam_entries = [(f, c) for f, q, c in codecs if q is None]
    if fam_entries:
        found = pc.index_in(families, value_set=pa.array([f for f, _ in fam_entries], pa.string()))
        at = pc.fill_null(found, -1).to_numpy(zero_copy_only=False)
        table = np.array([order.index(c) for _, c in fam_entries] + [-1], dtype=np.int64)
        ids = table[at]
    col_entries = [(f.encode("utf-8") + b":" + q, c) for f, q, c in codecs if q is not None]
    if col_entries:
        keys = pc.binary_join_element_wise(
            pc.cast(families, pa.binary()), pc.cast(qualifiers, pa.binary()), b":"
        )
        found = pc.index_in(keys, value_set=pa.array([k for k, _ in col_entries], pa.binary()))
        at = pc.fill_null(found, -1).to_numpy(zero_copy_only=False)
        table = np.array([order.index(c) for _, c in col_entries] + [-1], dtype=np.int64)
        own = table[at]
        ids = np.where(own >= 0, own, ids)
    return ids


def starts_with(values: pa.Array | pa.ChunkedArray, prefix: bytes) -> pa.Array:
    """Whether each binary value starts with ``prefix`` (any bytes, not only UTF-8)."""
    head = pc.binary_slice(values.cast(pa.binary()), 0, len(prefix))
    return pc.equal(head, pa.scalar(prefix, pa.binary()))


def as_mask(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow column as a numpy mask, null as False."""
    if arr.null_count:
        arr = pc.fill_null(arr, False)
    result: np.ndarray = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)
    return result

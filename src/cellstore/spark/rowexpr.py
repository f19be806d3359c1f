"""Row keys built in Spark SQL from key fields: ``RowKeySpec.encode`` as a column expression.

Keyed column files (docs/format.md 14.2) hold a record's row key as its typed fields
(``__key:<field>`` columns), not as bytes. :func:`row_expression` gives the Spark column
that encodes those fields into the row key byte for byte as
:meth:`cellstore.core.rowkey.RowKeySpec.encode` does (section 11.3), so Spark's own
Parquet reader can give the ``row`` column of such a file without a Python worker. Being
an expression, Spark computes it only when a query uses ``row`` (a count or a groupby over
value columns never does).

Spark SQL has no byte-level operators, so fixed-size numbers go through their hexadecimal
digits (``hex`` of a ``bigint`` is its two's complement, 16 digits when negative), and
``descending`` inverts every byte by mapping each hexadecimal digit ``d`` to ``F - d``.
Expressible: ``string`` and ``bytes`` fields (variable length, terminated or fixed width),
signed integers of every width and ``uint8``/``uint16``/``uint32``, ``reverse_timestamp``,
``descending`` and ``md5_prefix``. Not expressible (the function returns None and the
caller reads through the ``cellstore`` source): floating-point fields (Spark SQL cannot
give a float's bits), ``uint64`` (Spark reads it as a decimal), ``reverse`` (Spark reverses
characters, not UTF-8 bytes), ``md5`` fields (not decodable: never in a keyed file) and
salted specs (the salt is a hash Spark does not have).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cellstore.core.rowkey import KeyField, KeyHash, KeyType, RowKeySpec

__all__ = ["expressible", "key_column", "key_spark_type", "row_expression"]

#: Hexadecimal digits, and each one's complement (``F - d``): a byte-wise NOT on hex text.
_HEX = "0123456789ABCDEF"
_NOT_HEX = _HEX[::-1]

_SIGNED_BITS = {KeyType.INT8: 8, KeyType.INT16: 16, KeyType.INT32: 32, KeyType.INT64: 64}
_UNSIGNED_BITS = {KeyType.UINT8: 8, KeyType.UINT16: 16, KeyType.UINT32: 32}


def key_column(field: KeyField) -> str:
    """The name of a field's column in a keyed column file (``__key:<field>``)."""
    return f"__key:{field.name}"


#: The Spark SQL type Spark's Parquet reader gives a key column of each expressible type.
_SPARK_TYPES = {
    KeyType.STRING: "string",
    KeyType.BYTES: "binary",
    KeyType.INT8: "tinyint",
    KeyType.INT16: "smallint",
    KeyType.INT32: "int",
    KeyType.INT64: "bigint",
    KeyType.UINT8: "smallint",
    KeyType.UINT16: "int",
    KeyType.UINT32: "bigint",
}


def key_spark_type(field: KeyField) -> str:
    """The Spark SQL type of a field's key column as Spark reads it (expressible types)."""
    return _SPARK_TYPES[field.type]


def _field_expressible(field: KeyField) -> bool:
    if field.hash is KeyHash.MD5 or field.reverse:
        return False
    return field.type.is_text or field.type in _SIGNED_BITS or field.type in _UNSIGNED_BITS


def expressible(spec: RowKeySpec) -> bool:
    """Whether :func:`row_expression` can encode ``spec`` (see the module docstring)."""
    return spec.salt_buckets is None and all(_field_expressible(f) for f in spec.fields)


def row_expression(spec: RowKeySpec, column: Callable[[KeyField], Any] | None = None) -> Any:
    """The Spark column of the row keys ``spec`` encodes from its key fields.

    Args:
        spec: The row-key spec (:func:`expressible` must hold).
        column: The Spark column holding a field's values (default: the keyed file's
            ``__key:<field>`` column).

    Returns:
        A ``binary`` column, byte-identical to ``spec.encode`` of the same field values.

    Raises:
        ValueError: ``spec`` is not :func:`expressible`.
    """
    from pyspark.sql import functions as F

    if not expressible(spec):
        raise ValueError(f"row key spec {spec.describe()!r} has no Spark SQL encoding")
    pick = column or (lambda f: F.col(f"`{key_column(f)}`"))
    last = len(spec.fields) - 1
    pieces = [
        piece for i, f in enumerate(spec.fields) for piece in _pieces(f, pick(f), last=i == last)
    ]
    return pieces[0] if len(pieces) == 1 else F.concat(*pieces)


def _pieces(field: KeyField, value: Any, *, last: bool) -> list[Any]:
    """The field's binary pieces in the key (section 11.3's steps)."""
    from pyspark.sql import functions as F

    pieces: list[Any] = []
    if field.hash is KeyHash.MD5_PREFIX:
        digest = F.unhex(F.md5(_value_bytes(field, value)))
        pieces.append(F.substring(digest, 1, field.prefix_bytes))
    if field.type.is_text:
        body = value.cast("binary")
        if field.width is not None:
            body = F.rpad(body, field.width, F.lit(bytearray(1)))
        elif field.terminated(last=last):
            body = F.concat(body, F.lit(bytearray(1)))
        if field.descending:
            body = F.unhex(F.translate(F.hex(body), _HEX, _NOT_HEX))
        return [*pieces, body]
    digits = _order_hex(field, value)
    if field.descending:
        digits = F.translate(digits, _HEX, _NOT_HEX)
    return [*pieces, F.unhex(digits)]


def _fixed_hex(number: Any, bits: int) -> Any:
    """``bits / 4`` hex digits of a ``bigint`` in ``0 .. 2**bits - 1``.

    For 64 bits any ``bigint``: its two's complement.
    """
    from pyspark.sql import functions as F

    return F.lpad(F.hex(number), bits // 4, "0")


def _order_hex(field: KeyField, value: Any) -> Any:
    """Hex digits of an integer field's order-preserving bytes (before ``descending``)."""
    from pyspark.sql import functions as F

    big = value.cast("bigint")
    if field.reverse_timestamp:
        return _fixed_hex(F.lit(2**63 - 1) - big, 64)
    if field.type in _UNSIGNED_BITS:
        return _fixed_hex(big, _UNSIGNED_BITS[field.type])
    bits = _SIGNED_BITS[field.type]
    if bits == 64:
        return _fixed_hex(big.bitwiseXOR(F.lit(-(2**63))), 64)  # the sign bit flipped
    return _fixed_hex(big + F.lit(2 ** (bits - 1)), bits)


def _value_bytes(field: KeyField, value: Any) -> Any:
    """The field's value bytes (UTF-8, the bytes, ``Bytes.toBytes`` of an integer)."""
    from pyspark.sql import functions as F

    if field.type.is_text:
        return value.cast("binary")
    big = value.cast("bigint")
    if field.type in _UNSIGNED_BITS:
        return F.unhex(_fixed_hex(big, _UNSIGNED_BITS[field.type]))
    bits = _SIGNED_BITS[field.type]
    if bits < 64:
        big = big.bitwiseAND(F.lit(2**bits - 1))  # two's complement in ``bits``
    return F.unhex(_fixed_hex(big, bits))

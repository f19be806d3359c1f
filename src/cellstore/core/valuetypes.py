"""The one vocabulary of value types: row-key fields, value codecs and index parts.

Three parts of cellstore type a value: a row-key field (:class:`~cellstore.core.rowkey.KeyType`),
a value codec of the loader and reader (:class:`~cellstore.core.codecs.Codec`, HBase's
``Bytes`` conversions) and a part of an index key (``cellstore.jobs.index.IndexType``).
They all speak :class:`ValueType`: its names, aliases, widths, signedness and Arrow types
are defined here and only here.

* ``IndexType`` *is* :class:`ValueType` (an alias: same members).
* ``KeyType`` is the row-key subset (every type but ``boolean``), kept as its own enum
  because row-key specs list exactly those types.
* ``Codec`` keeps HBase's spellings (``long``, ``int``, ``short``, ``double``, ``float``),
  which are written into table metadata (mappings) and index expressions; each codec is
  one :class:`ValueType` (:attr:`~cellstore.core.codecs.Codec.value_type`).

Every name and alias parses the same way everywhere (:meth:`ValueType.parse`); a part that
takes only some types refuses the others by name.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Final, TypeVar

import pyarrow as pa

from cellstore.errors import InvalidArgumentError

if TYPE_CHECKING:
    from cellstore.core.codecs import Codec
    from cellstore.core.rowkey.fields import KeyType

__all__ = ["ALIASES", "ValueType", "parse_type_name"]

_E = TypeVar("_E", bound=StrEnum)


class ValueType(StrEnum):
    """A value's type: how its bytes are encoded and what Arrow type it decodes to."""

    # variable length: UTF-8 text, raw bytes
    STRING = "string"
    BYTES = "bytes"
    # signed integers (big-endian two's complement)
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    # unsigned integers (big-endian)
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    # IEEE 754 (big-endian)
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    # one byte, 0x00 or 0x01 (``Bytes.toBytes(boolean)``; not a row-key type)
    BOOLEAN = "boolean"

    @property
    def is_text(self) -> bool:
        """Whether values are strings or bytes (variable length)."""
        return self in (ValueType.STRING, ValueType.BYTES)

    @property
    def is_float(self) -> bool:
        """Whether values are IEEE floats."""
        return self in (ValueType.FLOAT32, ValueType.FLOAT64)

    @property
    def signed(self) -> bool:
        """Whether an integer type is signed."""
        return self.value.startswith("int")

    @property
    def size(self) -> int | None:
        """Bytes of a fixed-width value, None for strings and bytes."""
        return _SIZES.get(self)

    @property
    def arrow_type(self) -> pa.DataType:
        """The Arrow type decoded values have."""
        return _ARROW[self]

    @classmethod
    def parse(cls, name: str | ValueType) -> ValueType:
        """The type for a name or alias, any case (see :data:`ALIASES`).

        Raises:
            InvalidArgumentError: naming the valid names.
        """
        return parse_type_name(name, cls, what="value type")

    @classmethod
    def of_codec(cls, codec: Codec | str) -> ValueType:
        """The type a value codec decodes to (``long`` -> ``int64``)."""
        from cellstore.core.codecs import Codec

        return Codec.parse(codec).value_type

    @classmethod
    def of_key_type(cls, typ: KeyType) -> ValueType:
        """The type of a row-key field of type ``typ`` (same names)."""
        return cls(typ.value)


#: Every other name of a type, any case (canonical names parse as themselves).
ALIASES: Final[dict[str, ValueType]] = {
    "str": ValueType.STRING,
    "utf8": ValueType.STRING,
    "utf-8": ValueType.STRING,
    "binary": ValueType.BYTES,
    "raw": ValueType.BYTES,
    "byte": ValueType.INT8,
    "short": ValueType.INT16,
    "int": ValueType.INT32,
    "integer": ValueType.INT32,
    "long": ValueType.INT64,
    "timestamp": ValueType.INT64,
    "float": ValueType.FLOAT32,
    "double": ValueType.FLOAT64,
    "bool": ValueType.BOOLEAN,
}

_SIZES: Final = {
    ValueType.INT8: 1,
    ValueType.INT16: 2,
    ValueType.INT32: 4,
    ValueType.INT64: 8,
    ValueType.UINT8: 1,
    ValueType.UINT16: 2,
    ValueType.UINT32: 4,
    ValueType.UINT64: 8,
    ValueType.FLOAT32: 4,
    ValueType.FLOAT64: 8,
    ValueType.BOOLEAN: 1,
}

_ARROW: Final = {
    ValueType.STRING: pa.string(),
    ValueType.BYTES: pa.binary(),
    ValueType.INT8: pa.int8(),
    ValueType.INT16: pa.int16(),
    ValueType.INT32: pa.int32(),
    ValueType.INT64: pa.int64(),
    ValueType.UINT8: pa.uint8(),
    ValueType.UINT16: pa.uint16(),
    ValueType.UINT32: pa.uint32(),
    ValueType.UINT64: pa.uint64(),
    ValueType.FLOAT32: pa.float32(),
    ValueType.FLOAT64: pa.float64(),
    ValueType.BOOLEAN: pa.bool_(),
}


def names_of(members: Iterable[StrEnum]) -> list[str]:
    """Every name (canonical or alias) that parses to one of ``members``' types, sorted."""
    wanted = {m.value for m in members}
    names: set[str] = {t.value for t in ValueType if t.value in wanted}
    names |= {alias for alias, t in ALIASES.items() if t.value in wanted}
    return sorted(names)


def lookup(name: object) -> ValueType | None:
    """The type a name or alias stands for (any case, surrounding blanks ignored), or None."""
    if not isinstance(name, str):
        return None
    key = name.strip().lower()
    found = ALIASES.get(key)
    if found is None and key in ValueType.__members__.values():
        found = ValueType(key)
    return found


def parse_type_name(name: object, enum: type[_E], *, what: str) -> _E:
    """``name`` (a member of ``enum``, a type name or an alias) as a member of ``enum``.

    ``enum``'s members are named by their :class:`ValueType` (``Codec.LONG`` is
    ``int64``): pass an enum with a ``value_type`` property, or one whose values are type
    names.

    Raises:
        InvalidArgumentError: ``unknown <what> <name>; valid names: ...``, with a close
            match when there is one.
    """
    if isinstance(name, enum):
        return name
    typ = lookup(name)
    for member in enum:
        if typ is not None and _type_of(member) is typ:
            return member
    from cellstore.core.text import did_you_mean

    valid = names_of(_type_of(m) for m in enum)
    hint = did_you_mean(str(name).strip().lower(), valid)
    raise InvalidArgumentError(f"unknown {what} {name!r}{hint}; valid names: {', '.join(valid)}")


def _type_of(member: StrEnum) -> ValueType:
    typ = getattr(member, "value_type", None)
    return typ if isinstance(typ, ValueType) else ValueType(member.value)

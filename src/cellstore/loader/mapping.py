"""The declarative mapping from input records to cells.

A :class:`Mapping` says, for every input record:

* which input columns build the **row key**: one column (:class:`KeyColumn`, encoded with a
  value codec), or the table's row-key spec (:class:`~cellstore.core.rowkey.RowKeySpec`,
  composite fields, salt, hashing, reversal);
* which input columns become **cells** (:class:`CellMapping`): a family, a qualifier that
  is either a literal or taken from an input column (tall and wide designs), the value
  column and its codec (HBase ``Bytes`` encodings, see :mod:`cellstore.core.codecs`);
* where the **timestamp** comes from: an input column with a unit, or the load time;
* an optional **operation** column: per record ``Put`` (default), ``Delete``,
  ``DeleteColumn``, ``DeleteFamily`` or ``DeleteFamilyVersion``, to load delete markers.

Nulls are no cells: tables are sparse. A record whose value column is null gets no cell
for that column; a record whose qualifier column is null gets no cell for that mapping.

Mappings are frozen and picklable. :meth:`Mapping.from_file` reads the TOML or JSON form
the CLI's ``--mapping`` takes (see the README, "Loading data")::

    row_key = "url"                       # or {column = "id", codec = "long"}
    timestamp = {column = "fetched", unit = "s"}
    operation = "op"                      # optional

    [[cells]]
    family = "contents"
    qualifier = "html"
    value = "html"
    codec = "string"

    [[cells]]                             # wide design: one qualifier per followed user
    family = "follows"
    qualifier_column = "followed"
    # no value: an empty value (a presence cell)
"""

from __future__ import annotations

import json
from collections.abc import Mapping as MappingABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from cellstore.core.codecs import Codec
from cellstore.core.names import validate_family_name
from cellstore.errors import InvalidArgumentError, InvalidFamilyError

if TYPE_CHECKING:
    from cellstore.core.metadata import TableMetadata
    from cellstore.core.rowkey import RowKeySpec

__all__ = [
    "TIME_UNITS",
    "CellMapping",
    "KeyColumn",
    "Mapping",
    "TimeUnit",
    "parse_cell_option",
]

TimeUnit = Literal["s", "ms", "us", "ns"]
#: Units of an integer timestamp column.
TIME_UNITS: Final[tuple[TimeUnit, ...]] = get_args(TimeUnit)

_INPUT_KEYS: Final = frozenset(
    {"format", "delimiter", "header", "column_names", "quote_char", "null_values", "compression"}
)


def _as_bytes(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


@dataclass(frozen=True, kw_only=True)
class KeyColumn:
    """A row key taken from one input column.

    Attributes:
        column: The input column.
        codec: How the column becomes key bytes (``string``: UTF-8, ``bytes``: as is,
            ``long``/``int``/... HBase ``Bytes`` big-endian). Note that HBase's signed
            integer bytes do not sort numerically for negative numbers; use a row-key
            spec for order-preserving numeric keys.
    """

    column: str
    codec: Codec = Codec.STRING

    def __post_init__(self) -> None:
        object.__setattr__(self, "codec", Codec.parse(self.codec))
        if not self.column:
            raise InvalidArgumentError("row key column name is empty")

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"column": ..., "codec": ...}``."""
        return {"column": self.column, "codec": self.codec.value}


@dataclass(frozen=True, kw_only=True)
class CellMapping:
    """One input column (or a constant) becoming one cell per record.

    Exactly one of ``qualifier`` and ``qualifier_column`` is given.

    Attributes:
        family: Column family (must exist in the table).
        qualifier: Literal qualifier (str is UTF-8 encoded).
        qualifier_column: Input column holding the qualifier (tall-to-wide designs); a null
            there means no cell.
        qualifier_codec: Codec turning ``qualifier_column`` into qualifier bytes.
        value: Input column holding the value; None gives every cell an empty value.
        codec: Codec turning ``value`` into value bytes.
    """

    family: str
    qualifier: bytes | None = None
    qualifier_column: str | None = None
    qualifier_codec: Codec = Codec.STRING
    value: str | None = None
    codec: Codec = Codec.STRING

    def __post_init__(self) -> None:
        validate_family_name(self.family)
        if (self.qualifier is None) == (self.qualifier_column is None):
            raise InvalidArgumentError(
                f"cell mapping for family {self.family!r}: give exactly one of qualifier "
                "and qualifier_column"
            )
        if self.qualifier is not None:
            object.__setattr__(self, "qualifier", _as_bytes(self.qualifier))
        object.__setattr__(self, "codec", Codec.parse(self.codec))
        object.__setattr__(self, "qualifier_codec", Codec.parse(self.qualifier_codec))

    @property
    def name(self) -> str:
        """``family:qualifier`` (``family:{column}`` for a qualifier taken from a column)."""
        if self.qualifier is not None:
            return f"{self.family}:{self.qualifier.decode('utf-8', 'backslashreplace')}"
        return f"{self.family}:{{{self.qualifier_column}}}"

    @property
    def input_columns(self) -> tuple[str, ...]:
        """Input columns this mapping reads."""
        cols = [c for c in (self.qualifier_column, self.value) if c is not None]
        return tuple(dict.fromkeys(cols))

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the ``[[cells]]`` entries of a mapping file)."""
        out: dict[str, Any] = {"family": self.family}
        if self.qualifier is not None:
            try:
                out["qualifier"] = self.qualifier.decode("utf-8")
            except UnicodeDecodeError:
                out["qualifier_hex"] = self.qualifier.hex()
        else:
            out["qualifier_column"] = self.qualifier_column
            out["qualifier_codec"] = self.qualifier_codec.value
        if self.value is not None:
            out["value"] = self.value
            out["codec"] = self.codec.value
        return out

    @classmethod
    def from_dict(cls, d: MappingABC[str, Any]) -> CellMapping:
        """Parse one ``[[cells]]`` entry.

        Keys: ``family``, ``qualifier`` (or ``qualifier_hex``, or ``qualifier_column`` with
        optional ``qualifier_codec``), ``value`` (alias ``column``), ``codec``. A
        ``column = "family:qualifier"`` shorthand is accepted when ``family`` is absent.

        Raises:
            InvalidArgumentError: on unknown keys or missing parts.
        """
        known = {
            "family", "qualifier", "qualifier_hex", "qualifier_column", "qualifier_codec",
            "value", "column", "codec",
        }  # fmt: skip
        unknown = sorted(set(d) - known)
        if unknown:
            raise InvalidArgumentError(f"cell mapping: unknown key(s) {unknown} in {dict(d)}")
        if "family" not in d:
            raise InvalidArgumentError(f"cell mapping needs a family: {dict(d)}")
        qualifier: bytes | None = None
        if "qualifier_hex" in d:
            qualifier = bytes.fromhex(str(d["qualifier_hex"]))
        elif "qualifier" in d:
            qualifier = _as_bytes(d["qualifier"])
        value = d.get("value", d.get("column"))
        return cls(
            family=str(d["family"]),
            qualifier=qualifier,
            qualifier_column=d.get("qualifier_column"),
            qualifier_codec=Codec.parse(d.get("qualifier_codec", "string")),
            value=None if value is None else str(value),
            codec=Codec.parse(d.get("codec", "string")),
        )


def parse_cell_option(text: str) -> CellMapping:
    """Parse the CLI's inline ``--column FAMILY:QUALIFIER=COLUMN[:CODEC]``.

    ``FAMILY:{COLUMN}`` as the qualifier takes the qualifier from an input column; an empty
    ``=COLUMN`` part (``f:q=``) gives empty values.

    Raises:
        InvalidArgumentError: if the text is not of that form.
    """
    spec, sep, source = text.partition("=")
    family, colon, qualifier = spec.partition(":")
    if not sep or not colon or not family:
        raise InvalidArgumentError(
            f"--column {text!r}: expected FAMILY:QUALIFIER=COLUMN[:CODEC] "
            "(e.g. contents:html=html_col:string)"
        )
    column, _, codec = source.partition(":")
    qualifier_column = None
    literal: bytes | None = qualifier.encode("utf-8")
    if qualifier.startswith("{") and qualifier.endswith("}") and len(qualifier) > 2:
        qualifier_column, literal = qualifier[1:-1], None
    return CellMapping(
        family=family,
        qualifier=literal,
        qualifier_column=qualifier_column,
        value=column or None,
        codec=Codec.parse(codec or "string"),
    )


@dataclass(frozen=True, kw_only=True)
class Mapping:
    """How input records become cells (see the module docstring).

    Attributes:
        cells: The cell mappings, in order (a later mapping wins an exact key tie with an
            earlier one, like a later Put of the same cell).
        row_key: A :class:`KeyColumn`, a :class:`~cellstore.core.rowkey.RowKeySpec`, or
            None to use the row-key spec stored with the table.
        timestamp_column: Input column with each record's timestamp; None = the load time.
            Integer columns are read in ``timestamp_unit``; Arrow timestamp columns and
            ISO-8601 strings are converted to milliseconds.
        timestamp_unit: Unit of an integer timestamp column.
        operation_column: Input column with each record's operation (``Put``, ``Delete``,
            ``DeleteColumn``, ``DeleteFamily``, ``DeleteFamilyVersion``, their type codes,
            any case; null or empty = Put). ``Delete`` and ``DeleteColumn`` records give a
            marker for every cell mapping whose qualifier is known (the value is ignored);
            ``DeleteFamily`` and ``DeleteFamilyVersion`` records give one marker per mapped
            family.
        input_options: Defaults for reading text inputs (``format``, ``delimiter``,
            ``header``, ``column_names``, ``quote_char``, ``null_values``, ``compression``),
            from a mapping file's ``[input]`` table.
    """

    cells: tuple[CellMapping, ...]
    row_key: KeyColumn | RowKeySpec | None = None
    timestamp_column: str | None = None
    timestamp_unit: TimeUnit = "ms"
    operation_column: str | None = None
    input_options: MappingABC[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cells", tuple(self.cells))
        if not self.cells:
            raise InvalidArgumentError("a mapping needs at least one cell mapping")
        if isinstance(self.row_key, str):
            object.__setattr__(self, "row_key", KeyColumn(column=self.row_key))
        if self.timestamp_unit not in TIME_UNITS:
            raise InvalidArgumentError(
                f"timestamp unit must be one of {', '.join(TIME_UNITS)}, "
                f"not {self.timestamp_unit!r}"
            )
        unknown = sorted(set(self.input_options) - _INPUT_KEYS)
        if unknown:
            raise InvalidArgumentError(
                f"mapping [input]: unknown option(s) {unknown}; known: {sorted(_INPUT_KEYS)}"
            )

    # ------------------------------------------------------------------ queries
    @property
    def families(self) -> tuple[str, ...]:
        """Families the mapping writes, in first-use order."""
        return tuple(dict.fromkeys(c.family for c in self.cells))

    def key_columns(self, spec: RowKeySpec | None = None) -> tuple[str, ...]:
        """Input columns the row key reads (``spec`` is the table's, when the mapping has none)."""
        key = self.row_key if self.row_key is not None else spec
        if key is None:
            return ()
        if isinstance(key, KeyColumn):
            return (key.column,)
        return tuple(f.name for f in key.fields)

    def input_columns(self, spec: RowKeySpec | None = None) -> tuple[str, ...]:
        """Every input column the mapping reads, in first-use order."""
        cols: list[str] = list(self.key_columns(spec))
        for c in self.cells:
            cols.extend(c.input_columns)
        for extra in (self.timestamp_column, self.operation_column):
            if extra is not None:
                cols.append(extra)
        return tuple(dict.fromkeys(cols))

    def validate(self, metadata: TableMetadata) -> None:
        """Check the mapping against a table: families exist, a row key is defined.

        Raises:
            InvalidFamilyError: a mapped family is not in the table.
            InvalidArgumentError: no row key (neither in the mapping nor stored with the
                table), or a row-key spec that differs from the table's.
        """
        known = set(metadata.family_names)
        for c in self.cells:
            if c.family not in known:
                raise InvalidFamilyError(
                    f"mapping {c.name}: unknown family {c.family!r} "
                    f"(table {metadata.name} has {', '.join(metadata.family_names)})"
                )
        table_spec = getattr(metadata, "row_key", None)
        if self.row_key is None and table_spec is None:
            raise InvalidArgumentError(
                f"the mapping has no row key and table {metadata.name} has no row-key spec; "
                "give row_key (a column) in the mapping"
            )
        if table_spec is not None and self.row_key is not None:
            if isinstance(self.row_key, KeyColumn):
                raise InvalidArgumentError(
                    f"table {metadata.name} stores a row-key spec; its keys must be built "
                    "with it: leave row_key out of the mapping"
                )
            if self.row_key.to_dict() != table_spec.to_dict():
                raise InvalidArgumentError(
                    f"the mapping's row-key spec differs from the one stored with table "
                    f"{metadata.name}"
                )

    # --------------------------------------------------------------- (de)serialization
    def to_dict(self) -> dict[str, Any]:
        """JSON/TOML form (what :meth:`from_dict` reads)."""
        out: dict[str, Any] = {}
        if self.row_key is not None:
            out["row_key"] = self.row_key.to_dict()
        if self.timestamp_column is not None:
            out["timestamp"] = {"column": self.timestamp_column, "unit": self.timestamp_unit}
        if self.operation_column is not None:
            out["operation"] = self.operation_column
        if self.input_options:
            out["input"] = dict(self.input_options)
        out["cells"] = [c.to_dict() for c in self.cells]
        return out

    @classmethod
    def from_dict(cls, d: MappingABC[str, Any]) -> Mapping:
        """Parse the mapping-file form (see the module docstring).

        ``row_key`` is a column name, ``{column, codec}``, or a row-key spec
        (``{fields = [...], salt_buckets = N, ...}`` as ``RowKeySpec.to_dict`` writes).
        ``timestamp`` is a column name or ``{column, unit}``. ``cells`` is a list of cell
        mappings; a ``columns`` table ``{"family:qualifier" = "input column"}`` (or
        ``= {column, codec}``) is accepted as a shorthand.

        Raises:
            InvalidArgumentError: on unknown keys or malformed entries.
        """
        keys = {"row_key", "timestamp", "operation", "input", "cells", "columns"}
        unknown = sorted(set(d) - keys)
        if unknown:
            raise InvalidArgumentError(f"mapping: unknown key(s) {unknown}")
        row_key: KeyColumn | RowKeySpec | None = None
        rk = d.get("row_key")
        if isinstance(rk, str):
            row_key = KeyColumn(column=rk)
        elif isinstance(rk, MappingABC):
            if "fields" in rk:
                from cellstore.core.rowkey import RowKeySpec

                doc = dict(rk)
                if "salt_buckets" in doc:
                    doc["salt-buckets"] = doc.pop("salt_buckets")
                row_key = RowKeySpec.from_dict(doc)
            else:
                extra = sorted(set(rk) - {"column", "codec"})
                if extra or "column" not in rk:
                    raise InvalidArgumentError(
                        f"mapping row_key: expected a column name, {{column, codec}} or a "
                        f"row-key spec with fields, got {dict(rk)}"
                    )
                row_key = KeyColumn(column=str(rk["column"]), codec=rk.get("codec", "string"))
        elif rk is not None:
            raise InvalidArgumentError(f"mapping row_key: unexpected value {rk!r}")
        ts = d.get("timestamp")
        ts_column: str | None = None
        unit: Any = "ms"
        if isinstance(ts, str):
            ts_column = ts
        elif isinstance(ts, MappingABC):
            extra = sorted(set(ts) - {"column", "unit"})
            if extra or "column" not in ts:
                raise InvalidArgumentError(f"mapping timestamp: expected {{column, unit}}: {ts}")
            ts_column, unit = str(ts["column"]), str(ts.get("unit", "ms"))
        elif ts is not None:
            raise InvalidArgumentError(f"mapping timestamp: unexpected value {ts!r}")
        cells = [CellMapping.from_dict(c) for c in d.get("cells", ())]
        for name, source in dict(d.get("columns", {})).items():
            family, colon, qualifier = str(name).partition(":")
            if not colon:
                raise InvalidArgumentError(f"mapping columns: {name!r} is not family:qualifier")
            entry = dict(source) if isinstance(source, MappingABC) else {"value": source}
            cells.append(CellMapping.from_dict({"family": family, "qualifier": qualifier, **entry}))
        op = d.get("operation")
        return cls(
            cells=tuple(cells),
            row_key=row_key,
            timestamp_column=ts_column,
            timestamp_unit=unit,
            operation_column=None if op is None else str(op),
            input_options=dict(d.get("input", {})),
        )

    @classmethod
    def from_file(
        cls, path: str, *, storage_options: MappingABC[str, Any] | None = None
    ) -> Mapping:
        """Read a mapping file: TOML (``.toml``) or JSON (anything else), any fsspec URL.

        Raises:
            InvalidArgumentError: if the file does not parse or is not a valid mapping.
        """
        import fsspec

        with fsspec.open(path, "rb", **dict(storage_options or {})) as f:
            data = f.read()
        try:
            if PurePath(path).suffix.lower() == ".toml":
                import tomllib

                doc: Any = tomllib.loads(data.decode("utf-8"))
            else:
                doc = json.loads(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise InvalidArgumentError(f"mapping file {path}: {e}") from e
        if not isinstance(doc, dict):
            raise InvalidArgumentError(f"mapping file {path}: not a table/object")
        try:
            return cls.from_dict(doc)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"mapping file {path}: {e}") from e

    @classmethod
    def simple(
        cls,
        *,
        row_key: str | KeyColumn | RowKeySpec | None,
        columns: Sequence[str | CellMapping],
        timestamp: str | None = None,
        timestamp_unit: TimeUnit = "ms",
        operation: str | None = None,
    ) -> Mapping:
        """A mapping from inline options (what the CLI's ``--row-key/--column`` build).

        Args:
            row_key: Row-key column name (UTF-8), a :class:`KeyColumn`, a spec, or None.
            columns: ``FAMILY:QUALIFIER=COLUMN[:CODEC]`` strings or :class:`CellMapping`.
            timestamp: Timestamp column, or None for the load time.
            timestamp_unit: Its unit.
            operation: Operation column, or None (all Puts).
        """
        key: KeyColumn | RowKeySpec | None = (
            KeyColumn(column=row_key) if isinstance(row_key, str) else row_key
        )
        cells = tuple(c if isinstance(c, CellMapping) else parse_cell_option(c) for c in columns)
        return cls(
            cells=cells,
            row_key=key,
            timestamp_column=timestamp,
            timestamp_unit=timestamp_unit,
            operation_column=operation,
        )

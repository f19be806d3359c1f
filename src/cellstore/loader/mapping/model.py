"""The declarative mapping from input records to cells.

A :class:`LoadMapping` says, for every input record:

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

Mappings are frozen and picklable. :meth:`LoadMapping.from_file` reads the TOML or JSON form
the CLI's ``--mapping`` takes (see ``docs/loading.md``, "Mapping file")::

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

What mapping-based loads record with the table (value codecs, row keys) is
:mod:`cellstore.loader.mapping.tablecodecs`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from cellstore.core.codecs import Codec
from cellstore.core.names import validate_family_name
from cellstore.errors import InputNotFoundError, InvalidArgumentError, InvalidFamilyError
from cellstore.loader.inputs import INPUT_FORMATS, TextOptions

if TYPE_CHECKING:
    from cellstore.core.metadata import TableMetadata
    from cellstore.core.rowkey import RowKeySpec

__all__ = [
    "TIME_UNITS",
    "CellMapping",
    "KeyColumn",
    "LoadMapping",
    "TimeUnit",
    "parse_cell_option",
]

TimeUnit = Literal["s", "ms", "us", "ns"]
#: Units of an integer timestamp column.
TIME_UNITS: Final[tuple[TimeUnit, ...]] = get_args(TimeUnit)

_INPUT_KEYS: Final = frozenset(
    {
        "format", "delimiter", "header", "column_names", "quote_char", "null_values",
        "compression", "multiline",
    }
)  # fmt: skip
_TOP_KEYS: Final = frozenset({"row_key", "timestamp", "operation", "input", "cells", "columns"})
_CELL_KEYS: Final = frozenset(
    {
        "family", "qualifier", "qualifier_hex", "qualifier_column", "qualifier_codec",
        "value", "column", "codec",
    }
)  # fmt: skip


def _as_bytes(value: bytes | str) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidArgumentError(f"qualifier {value!r} is not valid Unicode") from e
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise InvalidArgumentError(f"qualifier must be text or bytes, not {type(value).__name__}")


def unknown_keys_message(where: str, unknown: Sequence[Any], known: Sequence[str]) -> str:
    """``"<where>: unknown key 'x' (did you mean 'y'?); known keys: ..."`` (``difflib``)."""
    import difflib

    parts = []
    for key in unknown:
        text = repr(key)
        close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
        if close:
            text += f" (did you mean {close[0]!r}?)"
        parts.append(text)
    noun = "key" if len(parts) == 1 else "keys"
    return f"{where}: unknown {noun} {', '.join(parts)}; known keys: {', '.join(sorted(known))}"


def _check_keys(where: str, d: Mapping[Any, Any], known: frozenset[str]) -> None:
    unknown = sorted((k for k in d if k not in known), key=str)
    if unknown:
        raise InvalidArgumentError(unknown_keys_message(where, unknown, sorted(known)))


def _text(value: Any, where: str) -> str:
    """``value`` if it is a non-empty string, else an :class:`InvalidArgumentError`."""
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{where} must be a non-empty string, not {value!r}")
    return value


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{where} must be a table/object, not {value!r}")
    return value


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
        if not isinstance(self.column, str) or not self.column:
            raise InvalidArgumentError("row key column name must be a non-empty string")

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
        if not isinstance(self.family, str):
            raise InvalidArgumentError(f"cell mapping: family must be a string: {self.family!r}")
        validate_family_name(self.family)
        for name in ("qualifier_column", "value"):
            column = getattr(self, name)
            if column is not None and (not isinstance(column, str) or not column):
                raise InvalidArgumentError(
                    f"cell mapping for family {self.family!r}: {name} must be a non-empty "
                    f"column name, not {column!r}"
                )
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
    def from_dict(cls, d: Mapping[str, Any]) -> CellMapping:
        """Parse one ``[[cells]]`` entry.

        Keys: ``family``, ``qualifier`` (or ``qualifier_hex``, or ``qualifier_column`` with
        optional ``qualifier_codec``), ``value`` (alias ``column``), ``codec``. A
        ``column = "family:qualifier"`` shorthand is accepted when ``family`` is absent.

        Raises:
            InvalidArgumentError: on unknown keys or missing parts.
        """
        d = _table(d, "a [[cells]] entry")
        _check_keys("cell mapping", d, _CELL_KEYS)
        if "family" not in d:
            raise InvalidArgumentError(f"cell mapping needs a family: {dict(d)}")
        family = _text(d["family"], "cell mapping family")
        qualifier: bytes | None = None
        if "qualifier_hex" in d:
            try:
                qualifier = bytes.fromhex(_text(d["qualifier_hex"], "qualifier_hex"))
            except ValueError as e:
                raise InvalidArgumentError(
                    f"cell mapping for family {family!r}: qualifier_hex is not hex"
                ) from e
        elif "qualifier" in d:
            if not isinstance(d["qualifier"], str):
                raise InvalidArgumentError(
                    f"cell mapping for family {family!r}: qualifier must be a string"
                )
            qualifier = _as_bytes(d["qualifier"])
        value = d.get("value", d.get("column"))
        qcol = d.get("qualifier_column")
        return cls(
            family=family,
            qualifier=qualifier,
            qualifier_column=None if qcol is None else _text(qcol, "qualifier_column"),
            qualifier_codec=Codec.parse(d.get("qualifier_codec", "string")),
            value=None if value is None else _text(value, "cell mapping value column"),
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
class LoadMapping:
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
            ``header``, ``column_names``, ``quote_char``, ``null_values``, ``compression``,
            ``multiline``), from a mapping file's ``[input]`` table.
    """

    cells: tuple[CellMapping, ...]
    row_key: KeyColumn | RowKeySpec | None = None
    timestamp_column: str | None = None
    timestamp_unit: TimeUnit = "ms"
    operation_column: str | None = None
    input_options: Mapping[str, Any] = field(default_factory=dict)

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
        for name in ("timestamp_column", "operation_column"):
            column = getattr(self, name)
            if column is not None and (not isinstance(column, str) or not column):
                raise InvalidArgumentError(f"mapping {name} must be a non-empty column name")
        options = _table(self.input_options, "mapping [input]")
        _check_keys("mapping [input]", options, _INPUT_KEYS)
        fmt = options.get("format")
        if fmt is not None and fmt not in INPUT_FORMATS:
            raise InvalidArgumentError(
                f"mapping [input] format must be one of {', '.join(INPUT_FORMATS)}, not {fmt!r}"
            )
        # Options of the wrong type or value fail here; a missing column_names (no header)
        # may still come from the command line, so header is checked for its type only.
        checked = dict(options)
        if not isinstance(checked.pop("header", True), bool):
            raise InvalidArgumentError("mapping [input] header must be true or false")
        TextOptions.from_options(checked)

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

    def column_uses(self, spec: RowKeySpec | None = None) -> dict[str, str]:
        """Which mapping entry reads each input column (first use), for error messages.

        For example ``{"id": "row_key", "v": "cells[0] (f:v) value",
        "ts": "timestamp"}``.
        """
        uses: dict[str, str] = {}
        key = self.row_key if self.row_key is not None else spec
        if isinstance(key, KeyColumn):
            uses.setdefault(key.column, "row_key")
        elif key is not None:
            for i, f in enumerate(key.fields):
                uses.setdefault(f.name, f"row_key.fields[{i}]")
        for j, c in enumerate(self.cells):
            if c.qualifier_column is not None:
                uses.setdefault(c.qualifier_column, f"cells[{j}] ({c.name}) qualifier_column")
            if c.value is not None:
                uses.setdefault(c.value, f"cells[{j}] ({c.name}) value")
        if self.timestamp_column is not None:
            uses.setdefault(self.timestamp_column, "timestamp")
        if self.operation_column is not None:
            uses.setdefault(self.operation_column, "operation")
        return uses

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
    def from_dict(cls, d: Mapping[str, Any]) -> LoadMapping:
        """Parse the mapping-file form (see the module docstring).

        ``row_key`` is a column name, ``{column, codec}``, or a row-key spec
        (``{fields = [...], salt_buckets = N, ...}`` as ``RowKeySpec.to_dict`` writes).
        ``timestamp`` is a column name or ``{column, unit}``. ``cells`` is a list of cell
        mappings; a ``columns`` table ``{"family:qualifier" = "input column"}`` (or
        ``= {column, codec}``) is accepted as a shorthand.

        Raises:
            InvalidArgumentError: on unknown keys or malformed entries.
        """
        d = _table(d, "a mapping")
        _check_keys("mapping", d, _TOP_KEYS)
        row_key: KeyColumn | RowKeySpec | None = None
        rk = d.get("row_key")
        if isinstance(rk, str):
            row_key = KeyColumn(column=rk)
        elif isinstance(rk, Mapping):
            if "fields" in rk:
                from cellstore.core.rowkey import RowKeySpec

                doc = dict(rk)
                if "salt_buckets" in doc:
                    doc["salt-buckets"] = doc.pop("salt_buckets")
                try:
                    row_key = RowKeySpec.from_dict(doc)
                except InvalidArgumentError as e:
                    raise InvalidArgumentError(f"mapping row_key: {e}") from e
                except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as e:
                    raise InvalidArgumentError(
                        f"mapping row_key: not a valid row-key spec ({type(e).__name__}: {e})"
                    ) from e
            else:
                _check_keys("mapping row_key", rk, frozenset({"column", "codec"}))
                if "column" not in rk:
                    raise InvalidArgumentError(
                        f"mapping row_key: expected a column name, {{column, codec}} or a "
                        f"row-key spec with fields, got {dict(rk)}"
                    )
                row_key = KeyColumn(
                    column=_text(rk["column"], "mapping row_key column"),
                    codec=Codec.parse(rk.get("codec", "string")),
                )
        elif rk is not None:
            raise InvalidArgumentError(f"mapping row_key: unexpected value {rk!r}")
        ts = d.get("timestamp")
        ts_column: str | None = None
        unit: Any = "ms"
        if isinstance(ts, str):
            ts_column = ts
        elif isinstance(ts, Mapping):
            _check_keys("mapping timestamp", ts, frozenset({"column", "unit"}))
            if "column" not in ts:
                raise InvalidArgumentError(f"mapping timestamp: expected {{column, unit}}: {ts}")
            ts_column = _text(ts["column"], "mapping timestamp column")
            unit = ts.get("unit", "ms")
        elif ts is not None:
            raise InvalidArgumentError(f"mapping timestamp: unexpected value {ts!r}")
        raw_cells = d.get("cells", ())
        if not isinstance(raw_cells, list | tuple):
            raise InvalidArgumentError("mapping cells must be a list of [[cells]] entries")
        cells = [CellMapping.from_dict(c) for c in raw_cells]
        for name, source in _table(d.get("columns", {}), "mapping columns").items():
            family, colon, qualifier = str(name).partition(":")
            if not colon:
                raise InvalidArgumentError(f"mapping columns: {name!r} is not family:qualifier")
            entry = dict(source) if isinstance(source, Mapping) else {"value": source}
            cells.append(CellMapping.from_dict({"family": family, "qualifier": qualifier, **entry}))
        op = d.get("operation")
        return cls(
            cells=tuple(cells),
            row_key=row_key,
            timestamp_column=ts_column,
            timestamp_unit=unit,
            operation_column=None if op is None else _text(op, "mapping operation"),
            input_options=dict(_table(d.get("input", {}), "mapping [input]")),
        )

    @classmethod
    def from_file(
        cls, path: str, *, storage_options: Mapping[str, Any] | None = None
    ) -> LoadMapping:
        """Read a mapping file: TOML (``.toml``) or JSON (anything else), any fsspec URL.

        Raises:
            InputNotFoundError: no such file.
            InvalidArgumentError: if the file does not parse or is not a valid mapping.
        """
        import fsspec

        try:
            with fsspec.open(path, "rb", **dict(storage_options or {})) as f:
                data = f.read()
        except FileNotFoundError:
            raise InputNotFoundError(f"mapping file {path} does not exist") from None
        try:
            if PurePath(path).suffix.lower() == ".toml":
                import tomllib

                doc: Any = tomllib.loads(data.decode("utf-8"))
            else:
                doc = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
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
    ) -> LoadMapping:
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

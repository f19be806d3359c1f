"""What a table's mapping-based loads recorded: value codecs and row keys, as table properties.

:class:`TableCodecs` is kept in the table properties :data:`CODECS_PROPERTY` and
:data:`ROW_KEY_PROPERTY` (docs/format.md section 6.1): every mapping-based load merges its
own (:func:`properties_after_load`), and reads decode with them (``column_types="table"``:
:func:`resolve_column_types`; the CLI's ``scan`` and ``get``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from cellstore.core.codecs import Codec
from cellstore.core.names import TableName
from cellstore.errors import InvalidArgumentError
from cellstore.loader.mapping.model import KeyColumn

if TYPE_CHECKING:
    from cellstore.core.comparators import ColumnCodecs
    from cellstore.core.metadata import TableMetadata
    from cellstore.core.rowkey import RowKeySpec
    from cellstore.loader.mapping.model import LoadMapping

__all__ = [
    "CODECS_PROPERTY",
    "ROW_KEY_PROPERTY",
    "TableCodecs",
    "properties_after_load",
    "recorded_column_types",
    "resolve_column_types",
    "warn_unrecorded",
]

#: Table property recording the value codecs of mapping-based loads (JSON, docs/format.md
#: section 6.1): ``{"columns": {"family:qualifier": codec}, "families": {family: codec}}``.
CODECS_PROPERTY: Final = "mapping.codecs"
#: Table property recording the row key of the latest mapping-based load that brought its own
#: (JSON: ``{"column": ..., "codec": ...}`` or a row-key spec document).
ROW_KEY_PROPERTY: Final = "mapping.row-key"


def _codec_map(doc: Any, where: str) -> dict[str, Codec]:
    if not isinstance(doc, Mapping):
        raise InvalidArgumentError(f"{where} must be a JSON object")
    return {str(k): Codec.parse(v) for k, v in doc.items()}


@dataclass(frozen=True, kw_only=True)
class TableCodecs:
    """What the mapping-based loads of a table said its values and row keys are.

    Recorded in the table properties :data:`CODECS_PROPERTY` and :data:`ROW_KEY_PROPERTY`
    by every mapping-based load (the latest load's codec wins for a column), and read back
    by the CLI's ``scan`` and ``get`` to print values and composite keys decoded, and by
    ``Table.scan(column_types="table")``.

    Attributes:
        columns: ``family:qualifier`` (qualifier in HBase's printable form) to the codec of
            its values, for mappings with a literal qualifier.
        families: Family to the codec of values whose qualifier came from an input column
            (tall-to-wide designs); a ``columns`` entry wins over it.
        row_key: The row key of the latest mapping-based load that brought its own: a
            :class:`KeyColumn` or a :class:`~cellstore.core.rowkey.RowKeySpec`. A spec
            stored with the table (its ``row-key`` field) is not repeated here.
    """

    columns: Mapping[str, Codec] = field(default_factory=dict)
    families: Mapping[str, Codec] = field(default_factory=dict)
    row_key: KeyColumn | RowKeySpec | None = None

    def __post_init__(self) -> None:
        for name in ("columns", "families"):
            codecs = getattr(self, name)
            if not isinstance(codecs, Mapping):
                raise InvalidArgumentError(f"{name} must map names to codecs")
            object.__setattr__(self, name, {str(k): Codec.parse(v) for k, v in codecs.items()})

    @property
    def empty(self) -> bool:
        """Whether nothing is recorded."""
        return not self.columns and not self.families and self.row_key is None

    @classmethod
    def of_mapping(cls, mapping: LoadMapping, *, stored_spec: RowKeySpec | None) -> TableCodecs:
        """The codecs a load through ``mapping`` records (cells without a value: none).

        Args:
            mapping: The load's mapping.
            stored_spec: The row-key spec stored with the table, if any (then the mapping's
                row key, which must equal it, is not recorded again).
        """
        from cellstore.core.keys import to_string_binary

        columns: dict[str, Codec] = {}
        families: dict[str, Codec] = {}
        for c in mapping.cells:
            if c.value is None:
                continue
            if c.qualifier is not None:
                columns[f"{c.family}:{to_string_binary(c.qualifier)}"] = c.codec
            else:
                families[c.family] = c.codec
        key = mapping.row_key if stored_spec is None else None
        return cls(columns=columns, families=families, row_key=key)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> TableCodecs:
        """Read the recorded codecs back from table properties (absent: nothing recorded).

        The two properties' texts are parsed once per process (a small cache keyed on
        them); each call gets its own mappings.

        Raises:
            InvalidArgumentError: a property that is not the documented JSON.
        """
        parsed = _parsed(properties.get(CODECS_PROPERTY), properties.get(ROW_KEY_PROPERTY))
        return replace(parsed, columns=dict(parsed.columns), families=dict(parsed.families))

    @classmethod
    def _parse(cls, codecs: str | None, row_key: str | None) -> TableCodecs:
        """:meth:`from_properties` of the two properties' texts (None: absent)."""
        properties = {
            k: v
            for k, v in ((CODECS_PROPERTY, codecs), (ROW_KEY_PROPERTY, row_key))
            if v is not None
        }
        columns: dict[str, Codec] = {}
        families: dict[str, Codec] = {}
        key: KeyColumn | RowKeySpec | None = None
        try:
            if CODECS_PROPERTY in properties:
                doc = json.loads(properties[CODECS_PROPERTY])
                if not isinstance(doc, Mapping):
                    raise InvalidArgumentError("not a JSON object")
                columns = _codec_map(doc.get("columns", {}), "columns")
                families = _codec_map(doc.get("families", {}), "families")
            if ROW_KEY_PROPERTY in properties:
                doc = json.loads(properties[ROW_KEY_PROPERTY])
                if not isinstance(doc, Mapping):
                    raise InvalidArgumentError("not a JSON object")
                if "fields" in doc:
                    from cellstore.core.rowkey import RowKeySpec

                    key = RowKeySpec.from_dict(doc)
                else:
                    key = KeyColumn(column=str(doc["column"]), codec=doc.get("codec", "string"))
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise InvalidArgumentError(
                f"table properties {CODECS_PROPERTY}/{ROW_KEY_PROPERTY} are not valid: {e}"
            ) from e
        return cls(columns=columns, families=families, row_key=key)

    def to_properties(self) -> dict[str, str]:
        """The table properties recording these codecs (keys with nothing to record left out)."""
        out: dict[str, str] = {}
        if self.columns or self.families:
            doc = {
                "columns": {k: v.value for k, v in sorted(self.columns.items())},
                "families": {k: v.value for k, v in sorted(self.families.items())},
            }
            out[CODECS_PROPERTY] = json.dumps(doc, sort_keys=True)
        if self.row_key is not None:
            out[ROW_KEY_PROPERTY] = json.dumps(self.row_key.to_dict(), sort_keys=True)
        return out

    def merged(self, newer: TableCodecs) -> tuple[TableCodecs, tuple[str, ...]]:
        """These codecs updated by a later load's: the later codec wins a column.

        Returns:
            The merged codecs, and one message per column (or row key) whose codec the
            later load changed.
        """
        changes: list[str] = []
        for what, old, new in (
            ("column", self.columns, newer.columns),
            ("family", self.families, newer.families),
        ):
            for name, codec in sorted(new.items()):
                before = old.get(name)
                if before is not None and before is not codec:
                    changes.append(
                        f"{what} {name} was loaded as {before.value} before and as "
                        f"{codec.value} now; keeping {codec.value} for decoding"
                    )
        key = self.row_key
        if newer.row_key is not None:
            if key is not None and _key_decoding(key) != _key_decoding(newer.row_key):
                changes.append(
                    f"the row key was {_key_text(key)} before and is {_key_text(newer.row_key)} "
                    f"now; keeping the new one for decoding"
                )
            key = newer.row_key
        out = TableCodecs(
            columns={**self.columns, **newer.columns},
            families={**self.families, **newer.families},
            row_key=key,
        )
        return out, tuple(changes)

    def codec_of(self, family: str, qualifier: bytes) -> Codec | None:
        """The codec recorded for the values of one column, or None."""
        from cellstore.core.keys import to_string_binary

        codec = self.columns.get(f"{family}:{to_string_binary(qualifier)}")
        return codec if codec is not None else self.families.get(family)

    def column_types(self) -> dict[str, str]:
        """``{"family:qualifier": codec}`` of the literal columns (``Table.scan``'s form)."""
        return {k: v.value for k, v in self.columns.items() if v is not Codec.BYTES}


@functools.lru_cache(maxsize=64)
def _parsed(codecs: str | None, row_key: str | None) -> TableCodecs:
    """The codecs recorded in these property texts, parsed once (immutable inputs)."""
    return TableCodecs._parse(codecs, row_key)


def recorded_column_types(metadata: TableMetadata) -> Mapping[str, str]:
    """The ``family:qualifier -> codec`` the table's mapping-based loads recorded."""
    return TableCodecs.from_properties(metadata.properties).column_types()


def recorded_value_codecs(metadata: TableMetadata) -> ColumnCodecs:
    """Every codec the table's loads recorded, as typed filter comparators take them.

    ``(family, qualifier bytes, codec)`` per literal column, ``(family, None, codec)`` per
    family whose qualifiers came from the data (see
    :func:`cellstore.core.filters.bind_filters`).
    """
    from cellstore.core.keys import from_string_binary

    codecs = TableCodecs.from_properties(metadata.properties)
    out: list[tuple[str, bytes | None, Codec]] = []
    for name, codec in codecs.columns.items():
        family, _, qualifier = name.partition(":")
        out.append((family, from_string_binary(qualifier), codec))
    out += [(family, None, codec) for family, codec in codecs.families.items()]
    return tuple(out)


def warn_unrecorded(
    metadata: TableMetadata, column_types: Mapping[str, str], *, stacklevel: int = 3
) -> None:
    """Warn about each column of ``column_types`` that no mapping-based load recorded.

    Only on a table with recorded codecs; each warning is a
    :class:`~cellstore.errors.CellstoreWarning` naming the closest recorded column.
    ``stacklevel`` is ``warnings.warn``'s, counted from this function.
    """
    import difflib
    import warnings

    from cellstore.errors import CellstoreWarning

    codecs = TableCodecs.from_properties(metadata.properties)
    if not column_types or (not codecs.columns and not codecs.families):
        return
    known = list(codecs.columns)
    for name in column_types:
        family = str(name).partition(":")[0]
        if name in codecs.columns or family in codecs.families:
            continue
        close = difflib.get_close_matches(str(name), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        warnings.warn(
            f"table {TableName.parse(metadata.name)}: column_types names {name!r}, a column "
            f"no mapping-based load recorded{hint}",
            CellstoreWarning,
            stacklevel=stacklevel,
        )


def resolve_column_types(
    metadata: TableMetadata,
    column_types: Mapping[str, str] | str | None,
    *,
    stacklevel: int = 3,
) -> Mapping[str, str] | None:
    """A scan's ``column_types`` as a mapping: ``"table"`` is what the loads recorded.

    Naming a column that no mapping-based load recorded, on a table with recorded codecs,
    warns (:func:`warn_unrecorded`; ``stacklevel`` as ``warnings.warn``'s, counted from
    this function: 3 names the caller's caller).

    Raises:
        InvalidArgumentError: a string other than ``"table"``, or ``"table"`` on a table
            with no recorded codecs.
    """
    if isinstance(column_types, str):
        if column_types != "table":
            raise InvalidArgumentError(
                f"column_types must be a mapping or 'table', not {column_types!r}"
            )
        types = recorded_column_types(metadata)
        if not types:
            raise InvalidArgumentError(
                f"table {TableName.parse(metadata.name)} has no recorded column codecs (no "
                "mapping-based load recorded any); pass column_types as "
                "{'family:qualifier': codec}"
            )
        return types
    if column_types:
        warn_unrecorded(metadata, column_types, stacklevel=stacklevel + 1)
    return column_types


def _key_decoding(key: KeyColumn | RowKeySpec) -> Any:
    """What decoding a row key depends on (a key column's name does not matter)."""
    return key.codec if isinstance(key, KeyColumn) else key.to_dict()


def _key_text(key: KeyColumn | RowKeySpec) -> str:
    if isinstance(key, KeyColumn):
        return f"column {key.column} ({key.codec.value})"
    return str(key)


def properties_after_load(
    properties: Mapping[str, str], mapping: LoadMapping, *, stored_spec: RowKeySpec | None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The table properties after a load through ``mapping`` records its codecs.

    Args:
        properties: The table's properties before the load.
        mapping: The load's mapping.
        stored_spec: The row-key spec stored with the table, if any.

    Returns:
        The new properties (codecs merged, :meth:`TableCodecs.merged`: the load's codec
        wins a column), and one message per column or row key whose codec the load changes.
        Unreadable recorded codecs are replaced.
    """
    try:
        old = TableCodecs.from_properties(properties)
    except InvalidArgumentError:
        old = TableCodecs()
    codecs, changes = old.merged(TableCodecs.of_mapping(mapping, stored_spec=stored_spec))
    return {**properties, **codecs.to_properties()}, changes

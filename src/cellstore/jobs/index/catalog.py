"""Index definitions of a table: create, list, look up and drop (table properties).

Definitions live in the data table's properties (docs/format.md 12); an index table is
created next to its data table, a local index gets the hidden family in the data table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, Unpack

from cellstore.core.codecs import Codec
from cellstore.core.family import Family
from cellstore.core.keys import split_column
from cellstore.core.metadata import TableMetadata
from cellstore.errors import (
    InvalidArgumentError,
    InvalidFamilyError,
    TableExistsError,
    TableNotFoundError,
)
from cellstore.jobs.common import with_overrides
from cellstore.jobs.index.definition import (
    LOCAL_FAMILY,
    PROPERTY_DEFINITION,
    PROPERTY_HIDDEN,
    IndexDefinition,
    IndexNotFoundError,
    IndexPart,
    definitions_of,
)

if TYPE_CHECKING:
    from cellstore.handle import Catalog, TableHandle


__all__ = [
    "IndexKwargs",
    "IndexOptions",
    "create_index",
    "definition_of",
    "drop_index",
    "list_indexes",
    "open_index_table",
]


def _latest(table: TableHandle) -> TableHandle:
    return table.latest()


def list_indexes(table: TableHandle) -> list[IndexDefinition]:
    """The indexes defined on ``table`` (its newest version), by name."""
    return [d for _, d in sorted(definitions_of(_latest(table).metadata).items())]


def definition_of(table: TableHandle, name: str) -> IndexDefinition:
    """The definition of index ``name`` on ``table``.

    Raises:
        IndexNotFoundError: no such index.
    """
    found = definitions_of(_latest(table).metadata)
    if name not in found:
        have = ", ".join(sorted(found)) or "none"
        raise IndexNotFoundError(f"table {table.name} has no index {name!r} (indexes: {have})")
    return found[name]


def _check_columns(definition: IndexDefinition, meta: TableMetadata) -> None:
    families = set(meta.family_names)
    for column in definition.watched_columns:
        fam, _ = split_column(column)
        if fam not in families:
            raise InvalidFamilyError(
                f"index {definition.name}: column {column!r} names no family of "
                f"{definition.table} ({', '.join(meta.family_names)})"
            )
    definition.part_types(meta.row_key)


def open_index_table(catalog: Catalog[TableHandle], definition: IndexDefinition) -> TableHandle:
    """The index table, created when absent; an existing table must hold this index.

    A local index's "index table" is its data table (rows in its hidden family).
    """
    if definition.local:
        return catalog.table(definition.table)
    try:
        table = catalog.table(definition.index_table)
    except TableNotFoundError:
        try:
            return catalog.create_table(
                definition.index_table,
                families=[Family(name=definition.family, max_versions=1)],
                properties={PROPERTY_DEFINITION: definition.to_json()},
            )
        except TableExistsError:  # created concurrently: check it below
            table = catalog.table(definition.index_table)
    stored = table.metadata.properties.get(PROPERTY_DEFINITION)
    if stored is None or IndexDefinition.from_json(stored) != definition:
        raise TableExistsError(
            f"table {definition.index_table} exists and is not index {definition.name} of "
            f"{definition.table} as defined; drop it or choose another index_table"
        )
    return table


@dataclass(frozen=True, kw_only=True)
class IndexOptions:
    """An index definition's keyword form (:func:`create_index` documents each field).

    ``build_index(table, name="x", column="f:q")`` and
    ``build_index(table, IndexOptions(column="f:q"), name="x")`` are the same call.
    """

    column: str | None = None
    codec: Codec | str | None = None
    expression: Sequence[str | IndexPart] | None = None
    covered: Iterable[str] | str = ()
    index_table: str | None = None
    maintain: bool = True
    local: bool = False

    @property
    def defines(self) -> bool:
        """Whether these options define an index (a column or an expression is given)."""
        return self.column is not None or self.expression is not None


class IndexKwargs(TypedDict, total=False):
    """:class:`IndexOptions` fields as keyword overrides (same names and types)."""

    column: str | None
    codec: Codec | str | None
    expression: Sequence[str | IndexPart] | None
    covered: Iterable[str] | str
    index_table: str | None
    maintain: bool
    local: bool


def create_index(
    table: TableHandle,
    options: IndexOptions | None = None,
    /,
    *,
    name: str,
    **overrides: Unpack[IndexKwargs],
) -> IndexDefinition:
    """Define an index on ``table`` and create its (empty) index table.

    The definition is stored in the data table's properties (``index.<name>``) and in
    the index table's (``index.definition``). Defining the same index again does nothing.

    Args:
        table: The data table.
        options: An :class:`IndexOptions`; keyword overrides replace its fields.
        name: The index name.
        column: The indexed ``family:qualifier`` (its values decode with ``codec``).
        codec: Value codec of ``column``: ``bytes`` (default), ``string``, ``long``,
            ``int``, ``short``, ``double``, ``float``, ``boolean``.
        expression: Instead of ``column``: the parts of a composite value, in order:
            ``key(FIELD)`` (a field of the table's row-key spec), ``CODEC(family:qualifier)``
            or a bare ``family:qualifier`` (bytes).
        covered: Columns copied into the index rows (read without the data table).
        index_table: The index table's name (default ``<namespace>:<table>_idx_<name>``).
        maintain: Keep the index current on every load into ``table`` (default): each
            load writes and commits the index rows of its cells before its data commit
            (docs/format.md 12.4). False: only :func:`build_index` updates it. Rows the
            table already holds are indexed by a build (``build_index``).
        local: A local index (docs/format.md 12.5): index rows in ``table``'s own regions,
            in the hidden family ``_idx`` (added to the table, left out of ordinary scans),
            so they split and merge with the data; lookups fan out per region. Not on
            salted tables.

    Returns:
        The definition.

    Raises:
        InvalidArgumentError: a bad name, part or column; an index of that name with a
            different definition exists (drop it first).
        InvalidFamilyError: a column of a family the table lacks.
        TableExistsError: ``index_table`` exists and is not this index's table.
    """
    o = with_overrides(IndexOptions, options, overrides)
    definition = IndexDefinition.build(
        table.name.full,
        name=name,
        column=o.column,
        codec=o.codec,
        expression=o.expression,
        covered=o.covered,
        index_table=o.index_table,
        maintain=o.maintain,
        local=o.local,
    )
    latest = _latest(table)
    _check_columns(definition, latest.metadata)
    existing = definitions_of(latest.metadata).get(name)
    if existing is not None:
        if existing != definition:
            raise InvalidArgumentError(
                f"table {table.name} already has an index {name!r} defined differently "
                f"({_describe(existing)}); drop it first"
            )
        return existing
    if definition.local:
        _add_local_family(table, latest.metadata)
    open_index_table(table.catalog, definition)
    table.catalog.alter_table(
        table.name.full, properties={definition.property_key: definition.to_json()}
    )
    return definition


def _add_local_family(table: TableHandle, meta: TableMetadata) -> None:
    """Give ``table`` the hidden local index family (one version, hidden from scans)."""
    if meta.salt_buckets:
        raise InvalidArgumentError(
            f"table {table.name} is salted: local indexes are not supported on salted tables "
            "(use a global index)"
        )
    hidden = [h for h in meta.properties.get(PROPERTY_HIDDEN, "").split(",") if h]
    if LOCAL_FAMILY not in meta.family_names:
        table.catalog.alter_table(
            table.name.full, add_families=[Family(name=LOCAL_FAMILY, max_versions=1)]
        )
    if LOCAL_FAMILY not in hidden:
        table.catalog.alter_table(
            table.name.full,
            properties={PROPERTY_HIDDEN: ",".join([*hidden, LOCAL_FAMILY])},
        )


def _describe(definition: IndexDefinition) -> str:
    text = " + ".join(str(p) for p in definition.parts)
    if definition.covered:
        text += f" covering {', '.join(definition.covered)}"
    return text


def drop_index(table: TableHandle, *, name: str, purge: bool = False) -> IndexDefinition:
    """Remove index ``name``: its definition from the data table, and its index table.

    Args:
        table: The data table.
        name: The index.
        purge: Delete the index table's files now (else a vacuum does).

    Returns:
        The definition that was dropped.

    Raises:
        IndexNotFoundError: no such index.
    """
    definition = definition_of(table, name)
    table.catalog.alter_table(table.name.full, properties={definition.property_key: None})
    if definition.local:
        from cellstore.jobs.index.local import rebuild_local

        rebuild_local(table)  # the family keeps the other local indexes' rows only
        return definition
    if table.catalog.exists(definition.index_table):
        table.catalog.drop_table(definition.index_table, purge=purge)
    return definition

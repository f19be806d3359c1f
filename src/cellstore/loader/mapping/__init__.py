"""The declarative mapping from input records to cells, and what loads record with the table.

:mod:`~cellstore.loader.mapping.model` holds the mapping itself (:class:`LoadMapping`,
:class:`KeyColumn`, :class:`CellMapping`, and its TOML/JSON form);
:mod:`~cellstore.loader.mapping.tablecodecs` the value codecs and row keys that
mapping-based loads record in the table properties (:class:`TableCodecs`). Import either
from here.
"""

from cellstore.loader.mapping.model import (
    TIME_UNITS,
    CellMapping,
    KeyColumn,
    LoadMapping,
    TimeUnit,
    parse_cell_option,
)
from cellstore.loader.mapping.tablecodecs import (
    CODECS_PROPERTY,
    ROW_KEY_PROPERTY,
    TableCodecs,
    properties_after_load,
    recorded_column_types,
    recorded_value_codecs,
    resolve_column_types,
    warn_unrecorded,
)

__all__ = [
    "CODECS_PROPERTY",
    "ROW_KEY_PROPERTY",
    "TIME_UNITS",
    "CellMapping",
    "KeyColumn",
    "LoadMapping",
    "TableCodecs",
    "TimeUnit",
    "parse_cell_option",
    "properties_after_load",
    "recorded_column_types",
    "recorded_value_codecs",
    "resolve_column_types",
    "warn_unrecorded",
]

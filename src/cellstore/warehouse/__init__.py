"""The Python API: :func:`connect` to a warehouse root, then create, open, alter, drop tables.

A warehouse is a root URL on any fsspec filesystem holding a catalog (table name to table
directory, itself a numbered version log) and one directory per table with its own metadata
log and store files::

    <root>/_catalog/v00000000000000000001.json   table names -> locations
    <root>/<namespace>/<table>/<uuid>/_meta/...   the table's metadata versions
    <root>/<namespace>/<table>/<uuid>/data/<region>/<family>/<load-id>.parquet

Nothing is derived from listing directories: the catalog and the metadata logs are the
only truth, and every change is one exclusive-create commit.
"""

from cellstore.defaults import DEFAULT_ROOT
from cellstore.warehouse.catalog import CATALOG_FORMAT_VERSION, LOAD_HOOKS, Warehouse, connect
from cellstore.warehouse.describe import RegionDescription, TableDescription
from cellstore.warehouse.table import Table

__all__ = [
    "CATALOG_FORMAT_VERSION",
    "DEFAULT_ROOT",
    "LOAD_HOOKS",
    "RegionDescription",
    "Table",
    "TableDescription",
    "Warehouse",
    "connect",
]

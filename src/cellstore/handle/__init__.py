"""Table handles and the catalog (layer 1, beside :mod:`cellstore.commit`).

* :class:`TableHandle`: one table at one version (name, location, directory, filesystem,
  log, metadata, families, regions, files, pinned); what loader, reader, jobs and report
  take. The facade's :class:`~cellstore.warehouse.Table` is a subclass.
* :class:`Catalog`: table names to directories; creates, opens, alters and drops tables
  and hands out handles of the class it was given. The facade's
  :class:`~cellstore.warehouse.Warehouse` is a ``Catalog`` of ``Table``.
* :class:`PendingLoad` and :data:`LoadHook`: what runs before a load's data commit (the
  facade registers the index upkeep there).
"""

from cellstore.commit import now_ms
from cellstore.handle.catalog import CATALOG_FORMAT_VERSION, Catalog
from cellstore.handle.hooks import LoadHook, PendingLoad
from cellstore.handle.table import TableHandle

__all__ = [
    "CATALOG_FORMAT_VERSION",
    "Catalog",
    "LoadHook",
    "PendingLoad",
    "TableHandle",
    "now_ms",
]

"""Load hooks: what runs between writing a load's store files and committing them.

The loader commits every load through :func:`cellstore.loader.commit_load`; just before
the data commit it calls each hook it was given with a :class:`PendingLoad`. The facade
(:mod:`cellstore.warehouse`) gives every table's loads the hooks of its catalog
(``TableHandle.load_hooks``): today one, the secondary-index upkeep of
:func:`cellstore.jobs.index.maintain.maintain_indexes`. So the loader never imports the
jobs that keep derived data current, and a load through any path (``Table.load``,
``Table.load_cells``, the CLI, Spark, an HBase import) runs the same hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import fsspec

from cellstore.core.metadata import TableMetadata
from cellstore.manifest import TableLog
from cellstore.storefiles.writer import WrittenFile

__all__ = ["LoadHook", "PendingLoad"]


@dataclass(frozen=True)
class PendingLoad:
    """A load whose store files are written and about to be committed.

    Attributes:
        fs: The table's filesystem.
        table_path: The table directory.
        log: The table's metadata log.
        base: The version the files were written against.
        written: The new store files (not committed yet).
        load_id: The load's id.
        assign_seq_id: Whether the commit gives the files a sequence number (R14.5).
        storage_options: fsspec options of the table's catalog (for handles a hook opens).
    """

    fs: fsspec.AbstractFileSystem
    table_path: str
    log: TableLog
    base: TableMetadata
    written: tuple[WrittenFile, ...]
    load_id: str
    assign_seq_id: bool = True
    storage_options: dict[str, Any] | None = None


#: A hook: called with the pending load before its data commit; it may commit to other
#: tables (an index) but not to the loaded one. An exception aborts the load's commit.
LoadHook: TypeAlias = Callable[[PendingLoad], object]

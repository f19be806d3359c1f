"""The warehouse: :func:`connect` to a root; a :class:`Warehouse` is the catalog of ``Table``.

The catalog mechanics (create, open, alter, drop, clones) are
:class:`cellstore.handle.Catalog`'s; the facade adds the :class:`~cellstore.warehouse.Table`
handles and wires the load hooks in (the index upkeep of
:func:`cellstore.jobs.index.maintain.maintain_indexes`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import fsspec

from cellstore.defaults import DEFAULT_ROOT, ROOT_ENV_VAR
from cellstore.fs import resolve_filesystem
from cellstore.handle import CATALOG_FORMAT_VERSION, Catalog, LoadHook
from cellstore.jobs.index.maintain import maintain_indexes
from cellstore.warehouse.table import Table

__all__ = ["CATALOG_FORMAT_VERSION", "LOAD_HOOKS", "Warehouse", "connect"]

#: What runs before every load commit into a warehouse table (``commit_load``'s ``hooks``):
#: the secondary-index upkeep. Loads outside a :class:`Table` (Spark) pass these too.
LOAD_HOOKS: Final[tuple[LoadHook, ...]] = (maintain_indexes,)


def connect(
    root: str | os.PathLike[str] | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
    filesystem: fsspec.AbstractFileSystem | None = None,
) -> Warehouse:
    """Open (or start) a warehouse at ``root``.

    Args:
        root: Local path or fsspec URL (``s3://bucket/prefix``, ``memory://wh``). Defaults to
            the ``CELLSTORE_ROOT`` environment variable, else ``./cellstore-data``.
        storage_options: fsspec options for the filesystem (credentials, endpoint, ...).
        filesystem: A ready fsspec filesystem instead of ``storage_options``.

    Returns:
        The :class:`Warehouse`. Nothing is written until the first table is created.
    """
    if root is None:
        root = os.environ.get(ROOT_ENV_VAR, DEFAULT_ROOT)
    fs, path = resolve_filesystem(root, storage_options=storage_options, filesystem=filesystem)
    return Warehouse(fs, path, url=os.fspath(root), storage_options=dict(storage_options or {}))


class Warehouse(Catalog[Table]):
    """A warehouse root: the catalog of tables, handing out :class:`Table` handles.

    Its tables' loads run :data:`LOAD_HOOKS` (they keep indexes current). Build one with
    :func:`connect`. Every method is :class:`~cellstore.handle.Catalog`'s
    (``create_table``, ``table``, ``alter_table``, ``drop_table``, ``list_tables``...).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        root: str,
        *,
        url: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            fs,
            root,
            handle_type=Table,
            url=url,
            storage_options=storage_options,
            load_hooks=LOAD_HOOKS,
        )

    def at(
        self, root: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
    ) -> Warehouse:
        """The warehouse at another root (:func:`connect`)."""
        return connect(root, storage_options=storage_options)

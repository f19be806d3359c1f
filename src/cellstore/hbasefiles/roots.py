"""An HBase table or snapshot opened from a root given as a path or URL.

The one place a root directory (``hbase.rootdir``, a copy of one, or an ``ExportSnapshot``
target) becomes a filesystem and an :class:`~cellstore.hbasefiles.layout.HBaseLayout`:
:func:`cellstore.hbase.open_table`/:func:`~cellstore.hbase.open_snapshot` build an
``HBaseTable`` on it, and HFile output (``HFileOutput(hbase_root=...)``) reads the target
table's regions and family settings from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fsspec

from cellstore.fs import resolve_filesystem
from cellstore.hbasefiles.layout import HBaseLayout, load_snapshot, load_table

__all__ = ["open_snapshot_layout", "open_table_layout"]


def open_table_layout(
    root: str,
    table: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    use_meta: bool = True,
    follow_symlinks: bool = False,
) -> tuple[fsspec.AbstractFileSystem, HBaseLayout]:
    """The filesystem of ``root`` and the layout of its table ``table`` (:func:`load_table`).

    Args and errors are :func:`cellstore.hbase.open_table`'s.
    """
    fs, path = resolve_filesystem(root, storage_options=storage_options)
    return fs, load_table(fs, path, table, use_meta=use_meta, follow_symlinks=follow_symlinks)


def open_snapshot_layout(
    root: str,
    name: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    follow_symlinks: bool = False,
) -> tuple[fsspec.AbstractFileSystem, HBaseLayout]:
    """The filesystem of ``root`` and the layout of its snapshot ``name`` (:func:`load_snapshot`).

    Args and errors are :func:`cellstore.hbase.open_snapshot`'s.
    """
    fs, path = resolve_filesystem(root, storage_options=storage_options)
    return fs, load_snapshot(fs, path, name, follow_symlinks=follow_symlinks)

"""Writing HBase HFiles for bulk load (``completebulkload``) with no JVM.

Public entry points :func:`write_hfile` (any cells, sorted when needed) and
:class:`HFileWriter` (cells in order, streamed batch by batch), both taking one
:class:`HFileOptions` (or its fields as keyword overrides); the format work lives in
:mod:`cellstore.storefiles.hfile.writer`.
"""

from __future__ import annotations

from cellstore.storefiles.hfile.options import HFileKwargs, HFileOptions
from cellstore.storefiles.hfile.writer import KV_COMPARATOR, HFileWriter, WrittenHFile, write_hfile

__all__ = [
    "KV_COMPARATOR",
    "HFileKwargs",
    "HFileOptions",
    "HFileWriter",
    "WrittenHFile",
    "write_hfile",
]

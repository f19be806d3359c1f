"""Writing HBase HFiles for bulk load (``completebulkload``) with no JVM.

Public entry points :func:`write_hfile` (any cells, sorted when needed) and
:class:`HFileWriter` (cells in order, streamed batch by batch); the format work lives in
:mod:`cellstore.storefiles.hfile.writer`.
"""

from __future__ import annotations

from cellstore.storefiles.hfile.writer import KV_COMPARATOR, HFileWriter, WrittenHFile, write_hfile

__all__ = ["KV_COMPARATOR", "HFileWriter", "WrittenHFile", "write_hfile"]

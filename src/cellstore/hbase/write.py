"""Writing HBase HFiles for bulk load (``completebulkload``) with no JVM.

Public entry point :func:`write_hfile`; the format work lives in
:mod:`cellstore.storefiles.hfile.writer`.
"""

from __future__ import annotations

from cellstore.storefiles.hfile.writer import KV_COMPARATOR, WrittenHFile, write_hfile

__all__ = ["KV_COMPARATOR", "WrittenHFile", "write_hfile"]

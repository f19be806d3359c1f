"""HBase's own files, read without a JVM (layer 1, beside :mod:`cellstore.storefiles`).

File parsing that needs no reader and no commit, so that the loader (HFile output's
``hbase_root=``) and :mod:`cellstore.hbase` (``HBaseTable``, the importer) both build on it:

* :mod:`~cellstore.hbasefiles.paths`: names that become paths under a root, checked by
  HBase's rules (:func:`~cellstore.hbasefiles.paths.check_name`, ``RootFiles``);
* :mod:`~cellstore.hbasefiles.descriptors`: snapshot infos, manifests, table descriptors,
  region infos, References (pure decoders of bytes);
* :mod:`~cellstore.hbasefiles.meta`: a table's regions as ``hbase:meta`` lists them;
* :mod:`~cellstore.hbasefiles.layout`: a root's or snapshot's table as an
  :class:`HBaseLayout` (descriptor, regions in key order, resolved store files);
  :mod:`~cellstore.hbasefiles.roots` opens one from a path or URL;
* :mod:`~cellstore.hbasefiles.store`: one store's HFiles as sorted runs for the semantics
  engine (:class:`HFileStore`);
* :mod:`~cellstore.hbasefiles.hfiles`, :mod:`~cellstore.hbasefiles.partitions`: single
  HFiles as Arrow tables, summaries and reports; many as one Dask DataFrame.

Users import these through :mod:`cellstore.hbase`, the public facade.
"""

from __future__ import annotations

from cellstore.hbasefiles.hfiles import (
    HFileInfo,
    HFileVerifyReport,
    hfile_info,
    hfile_might_contain,
    iter_hfile_batches,
    open_hfile,
    read_hfile,
    verify_hfile,
)
from cellstore.hbasefiles.layout import HBaseLayout, HFileRef, load_snapshot, load_table
from cellstore.hbasefiles.partitions import read_hfiles
from cellstore.hbasefiles.roots import open_snapshot_layout, open_table_layout
from cellstore.hbasefiles.store import HFileStore

__all__ = [
    "HBaseLayout",
    "HFileInfo",
    "HFileRef",
    "HFileStore",
    "HFileVerifyReport",
    "hfile_info",
    "hfile_might_contain",
    "iter_hfile_batches",
    "load_snapshot",
    "load_table",
    "open_hfile",
    "open_snapshot_layout",
    "open_table_layout",
    "read_hfile",
    "read_hfiles",
    "verify_hfile",
]

"""HBase interoperability: read HBase's own files without a JVM.

* :func:`read_hfile`, :func:`iter_hfile_batches`: an HFile's cells as Arrow tables, with
  the read options in one :class:`HFileReadOptions` (or as keyword overrides);
* :func:`hfile_info`: trailer, FileInfo, index and Bloom summary (:class:`HFileInfo`);
* :func:`hfile_might_contain`: a Bloom-filter lookup;
* :func:`verify_hfile`: every checksum and the key order;
* :func:`read_hfiles`: many HFiles as one Dask DataFrame.
* :func:`write_hfile`: write cells as a bulk-loadable HFile v3.3 (:class:`WrittenHFile`);
  :class:`HFileWriter` streams cells already in order into one, batch by batch.
* :func:`open_table`, :func:`open_snapshot`: an HBase root directory's table, or a
  snapshot (exported or not), read in place as a read-only :class:`HBaseTable`
  (``docs/hbase.md``).
* :func:`import_snapshot`, :func:`import_table`: convert a snapshot or table into a new
  cellstore table in one commit (:class:`ImportReport`).

Cells use the scan results' ``cells`` columns: ``row``, ``family``, ``qualifier``,
``ts``, ``type`` (HBase's codes), ``value``, plus ``seq_id`` and ``tags`` on request.
The format itself lives in :mod:`cellstore.storefiles.hfile`; ``docs/hfile.md`` lists
what is covered.

This package is the public facade (layer 3: it reads through :mod:`cellstore.reader` and
imports through :mod:`cellstore.commit`): :class:`HBaseTable` (``tables``), the importer
(``importer``, ``import_tasks``) and the writer's names (``write``). The reading of HBase's
own files (root and snapshot layouts, descriptors, ``hbase:meta``, store files, single
HFiles) is :mod:`cellstore.hbasefiles` (layer 1), re-exported here.
"""

from __future__ import annotations

from cellstore.hbase.importer import ImportOptions, ImportReport, import_snapshot, import_table
from cellstore.hbase.tables import HBaseTable, HBaseTableDescription, open_snapshot, open_table
from cellstore.hbase.write import HFileOptions, HFileWriter, WrittenHFile, write_hfile
from cellstore.hbasefiles.hfiles import (
    HFileInfo,
    HFileReadKwargs,
    HFileReadOptions,
    HFileVerifyReport,
    hfile_info,
    hfile_might_contain,
    iter_hfile_batches,
    open_hfile,
    read_hfile,
    verify_hfile,
)
from cellstore.hbasefiles.partitions import read_hfiles
from cellstore.storefiles.hfile.reader import BlockProblem, HFileReader

__all__ = [
    "BlockProblem",
    "HBaseTable",
    "HBaseTableDescription",
    "HFileInfo",
    "HFileOptions",
    "HFileReadKwargs",
    "HFileReadOptions",
    "HFileReader",
    "HFileVerifyReport",
    "HFileWriter",
    "ImportOptions",
    "ImportReport",
    "WrittenHFile",
    "hfile_info",
    "hfile_might_contain",
    "import_snapshot",
    "import_table",
    "iter_hfile_batches",
    "open_hfile",
    "open_snapshot",
    "open_table",
    "read_hfile",
    "read_hfiles",
    "verify_hfile",
    "write_hfile",
]

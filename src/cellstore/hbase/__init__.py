"""HBase interoperability: read HBase's own files without a JVM.

* :func:`read_hfile`, :func:`iter_hfile_batches`: an HFile's cells as Arrow tables;
* :func:`hfile_info`: trailer, FileInfo, index and Bloom summary (:class:`HFileInfo`);
* :func:`hfile_might_contain`: a Bloom-filter lookup;
* :func:`verify_hfile`: every checksum and the key order;
* :func:`read_hfiles`: many HFiles as one Dask DataFrame.
* :func:`write_hfile`: write cells as a bulk-loadable HFile v3.3 (:class:`WrittenHFile`).

Cells use the scan results' ``cells`` columns: ``row``, ``family``, ``qualifier``,
``ts``, ``type`` (HBase's codes), ``value``, plus ``seq_id`` and ``tags`` on request.
The format itself lives in :mod:`cellstore.storefiles.hfile`; ``docs/hfile.md`` lists
what is covered.
"""

from __future__ import annotations

from cellstore.hbase.hfiles import (
    HFileInfo,
    HFileVerifyReport,
    hfile_info,
    hfile_might_contain,
    iter_hfile_batches,
    open_hfile,
    read_hfile,
    verify_hfile,
)
from cellstore.hbase.partitions import read_hfiles
from cellstore.hbase.write import WrittenHFile, write_hfile
from cellstore.storefiles.hfile.reader import BlockProblem, HFileReader

__all__ = [
    "BlockProblem",
    "HFileInfo",
    "HFileReader",
    "HFileVerifyReport",
    "WrittenHFile",
    "hfile_info",
    "hfile_might_contain",
    "iter_hfile_batches",
    "open_hfile",
    "read_hfile",
    "read_hfiles",
    "verify_hfile",
    "write_hfile",
]

"""The read path: scan options, planning over regions and HBase-exact reads of store files.

:class:`ScanOptions` describes a read (every option, once). A :class:`ReadableTable`
(``cellstore.Table``, ``cellstore.hbase.HBaseTable``) turns it into a :class:`Scan` over
its :class:`ReadSource` (one implementation, :class:`TableReads`). The scan plans frozen
:class:`ScanTask` objects (one per region range) and runs them: each task merges its
region's store files per family and applies HBase's read semantics
(``cellstore.core.semantics``).
"""

from cellstore.reader.describe import Description, RegionDescription, TableDescription
from cellstore.reader.execute import RESULT_SCHEMA, read_task
from cellstore.reader.options import (
    SCAN_OPTION_NAMES,
    FamilyTimeRanges,
    ScanKwargs,
    ScanOptions,
    as_names,
    normalize_family_time_ranges,
    scan_options,
)
from cellstore.reader.plan import FamilyRead, ScanTask, prefix_stop_row
from cellstore.reader.readable import HandleReads, ReadableTable, TableReads
from cellstore.reader.scan import Scan, ScanPartitionReader
from cellstore.reader.source import (
    ReadSource,
    StoredTable,
    StoreFileSource,
    TaskRequest,
    store_source,
)

__all__ = [
    "RESULT_SCHEMA",
    "SCAN_OPTION_NAMES",
    "Description",
    "FamilyRead",
    "FamilyTimeRanges",
    "HandleReads",
    "ReadSource",
    "ReadableTable",
    "RegionDescription",
    "Scan",
    "ScanKwargs",
    "ScanOptions",
    "ScanPartitionReader",
    "ScanTask",
    "StoreFileSource",
    "StoredTable",
    "TableDescription",
    "TableReads",
    "TaskRequest",
    "as_names",
    "normalize_family_time_ranges",
    "prefix_stop_row",
    "read_task",
    "scan_options",
    "store_source",
]

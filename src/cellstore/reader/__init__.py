"""The read path: scan planning over regions and HBase-exact reads of store files.

:class:`Scan` plans a read into frozen :class:`ScanTask` objects (one per region range) and
runs them: each task merges its region's store files per family and applies HBase's read
semantics (``cellstore.core.semantics``).
"""

from cellstore.reader.execute import RESULT_SCHEMA, read_task
from cellstore.reader.plan import FamilyRead, ScanTask, prefix_stop_row
from cellstore.reader.scan import Scan, ScanOptions, as_names

__all__ = [
    "RESULT_SCHEMA",
    "FamilyRead",
    "Scan",
    "ScanOptions",
    "ScanTask",
    "as_names",
    "prefix_stop_row",
    "read_task",
]

"""The read path: scan planning over regions and HBase-exact reads of store files.

:class:`Scan` plans a read into frozen :class:`ScanTask` objects (one per region range) and
runs them: each task merges its region's store files per family and applies HBase's read
semantics (``cellstore.core.semantics``).
"""

from cellstore.reader.execute import RESULT_SCHEMA, read_task
from cellstore.reader.plan import FamilyRead, ScanTask, prefix_stop_row
from cellstore.reader.scan import (
    FamilyTimeRanges,
    Scan,
    ScanOptions,
    as_names,
    normalize_family_time_ranges,
)

__all__ = [
    "RESULT_SCHEMA",
    "FamilyRead",
    "FamilyTimeRanges",
    "Scan",
    "ScanOptions",
    "ScanTask",
    "as_names",
    "normalize_family_time_ranges",
    "prefix_stop_row",
    "read_task",
]

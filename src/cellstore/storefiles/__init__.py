"""Store files: one family's sorted cells as a Parquet file (docs/format.md).

The single write path (:func:`write_store_file`) is used by loads and jobs alike; readers
open files with :class:`StoreFileReader`; :func:`check` verifies a file's invariants.
"""

from cellstore.storefiles.check import CheckReport, check
from cellstore.storefiles.footer import STORE_FILE_FORMAT_VERSION, StoreFileInfo
from cellstore.storefiles.reader import RowGroupStats, StoreFileReader, read_store_file
from cellstore.storefiles.writer import DEFAULT_ROW_GROUP_CELLS, cell_stats, write_store_file

__all__ = [
    "DEFAULT_ROW_GROUP_CELLS",
    "STORE_FILE_FORMAT_VERSION",
    "CheckReport",
    "RowGroupStats",
    "StoreFileInfo",
    "StoreFileReader",
    "cell_stats",
    "check",
    "read_store_file",
    "write_store_file",
]

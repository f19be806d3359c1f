"""Store files: one family's sorted cells as a Parquet file (docs/format.md).

One write path for loads and jobs alike: :class:`StoreFileWriter` (streaming) with its
wrappers :func:`write_store_file` (one file) and :func:`write_rolled` /
:class:`RollingWriter` (a store's files, rolled on row boundaries); every store-file path is
built by :mod:`cellstore.storefiles.layout`. Readers open files with
:class:`StoreFileReader`; :func:`check` verifies a file's invariants.
"""

from cellstore.storefiles.check import CheckReport, check
from cellstore.storefiles.footer import STORE_FILE_FORMAT_VERSION, StoreFileInfo
from cellstore.storefiles.reader import RowGroupStats, StoreFileReader, read_store_file
from cellstore.storefiles.rolling import RollingWriter, write_rolled
from cellstore.storefiles.writer import (
    DEFAULT_ROW_GROUP_CELLS,
    NO_ROLL,
    StoreFileWriter,
    WrittenFile,
    cell_stats,
    roll_points,
    write_store_file,
)

__all__ = [
    "DEFAULT_ROW_GROUP_CELLS",
    "NO_ROLL",
    "STORE_FILE_FORMAT_VERSION",
    "CheckReport",
    "RollingWriter",
    "RowGroupStats",
    "StoreFileInfo",
    "StoreFileReader",
    "StoreFileWriter",
    "WrittenFile",
    "cell_stats",
    "check",
    "read_store_file",
    "roll_points",
    "write_rolled",
    "write_store_file",
]

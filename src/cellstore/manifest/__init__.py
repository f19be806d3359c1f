"""Table and catalog metadata logs, and the manifest files of format-version-2 tables.

:mod:`cellstore.manifest.log` holds the numbered version logs and the commit protocol;
:mod:`cellstore.manifest.files` the manifest Parquet files; :mod:`cellstore.manifest.live`
the lazily read live file set of a version-2 table.
"""

from cellstore.manifest.live import LiveFiles, entry_key
from cellstore.manifest.log import (
    MAX_COMMIT_ATTEMPTS,
    MAX_INLINE_MERGE_ENTRIES,
    MERGE_FAN_IN,
    UPPER_MERGE_FAN_IN,
    CommitOutcome,
    TableLog,
    VersionLog,
    version_file_name,
)

__all__ = [
    "MAX_COMMIT_ATTEMPTS",
    "MAX_INLINE_MERGE_ENTRIES",
    "MERGE_FAN_IN",
    "UPPER_MERGE_FAN_IN",
    "CommitOutcome",
    "LiveFiles",
    "TableLog",
    "VersionLog",
    "entry_key",
    "version_file_name",
]

"""Global secondary indexes (Phoenix-style), built as batch jobs.

An index on a data table is a second table whose row key is the indexed value (a column
decoded with a value codec, row-key fields, or several of them in order) followed by the
data row key, with chosen columns copied in ("covered"). :func:`build_index` builds it
(full, or incremental since the previous build or over a time range),
:func:`verify_index` reports index rows missing or stale, and :func:`open_index` gives an
:class:`Index` whose ``lookup(value)`` returns the data rows with that value.

Example:
    >>> from cellstore.jobs.index import IndexDefinition
    >>> d = IndexDefinition.build("demo:users", name="by_email",
    ...                           column="info:email", codec="string")
    >>> d.index_table
    'demo:users_idx_by_email'

The layout is normative: docs/format.md, section 12.
"""

from __future__ import annotations

from cellstore.jobs.index.build import DEFAULT_BATCH_CELLS, IndexBuildReport, build_index
from cellstore.jobs.index.catalog import (
    IndexOptions,
    create_index,
    definition_of,
    drop_index,
    list_indexes,
)
from cellstore.jobs.index.definition import (
    INDEX_FAMILY,
    MARKER_QUALIFIER,
    IndexDefinition,
    IndexNotFoundError,
    IndexPart,
)
from cellstore.jobs.index.keys import IndexType
from cellstore.jobs.index.lookup import Index, open_index
from cellstore.jobs.index.verify import IndexProblem, IndexVerifyReport, verify_index

__all__ = [
    "DEFAULT_BATCH_CELLS",
    "INDEX_FAMILY",
    "MARKER_QUALIFIER",
    "Index",
    "IndexBuildReport",
    "IndexDefinition",
    "IndexNotFoundError",
    "IndexOptions",
    "IndexPart",
    "IndexProblem",
    "IndexType",
    "IndexVerifyReport",
    "build_index",
    "create_index",
    "definition_of",
    "drop_index",
    "list_indexes",
    "open_index",
    "verify_index",
]

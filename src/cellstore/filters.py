"""Scan filters (the public home of :mod:`cellstore.core.filters`).

Example:
    >>> from cellstore.filters import SingleColumnValueFilter
    >>> f = SingleColumnValueFilter("basic:views", ">=", 100, filter_if_missing=True)
"""

from cellstore.core.filters import (
    ColumnPrefixFilter,
    Comparator,
    CompareOp,
    Filter,
    KeyOnlyFilter,
    SingleColumnValueFilter,
    TimestampsFilter,
    ValueFilter,
)

__all__ = [
    "ColumnPrefixFilter",
    "CompareOp",
    "Comparator",
    "Filter",
    "KeyOnlyFilter",
    "SingleColumnValueFilter",
    "TimestampsFilter",
    "ValueFilter",
]

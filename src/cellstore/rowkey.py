"""Row-key specs (the public home of :mod:`cellstore.core.rowkey`).

A table's composite row key: fields in key order, order-preserving encodings, optional
hashing, reversal, reverse timestamps and a salt byte (docs/format.md, section 11).

Example:
    >>> from cellstore.rowkey import KeyField, RowKeySpec
    >>> spec = RowKeySpec(
    ...     fields=(KeyField(name="user", type="string"), KeyField(name="ts", type="int64")),
    ...     salt_buckets=16,
    ... )
    >>> str(spec)
    'salt(16) + user:string + ts:int64'

``RowKeySpec`` and ``KeyField`` are also ``cellstore.RowKeySpec`` and
``cellstore.KeyField``.
"""

from cellstore.core.rowkey import (
    KeyField,
    KeyHash,
    KeyRange,
    KeyType,
    RowKeySpec,
    md5_digests,
    salt_bytes,
    successor,
)

__all__ = [
    "KeyField",
    "KeyHash",
    "KeyRange",
    "KeyType",
    "RowKeySpec",
    "md5_digests",
    "salt_bytes",
    "successor",
]

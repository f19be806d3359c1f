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
``cellstore.KeyField``; ``KeyType`` and ``KeyHash`` are the names a field's ``type`` and
``hash`` take. The helpers over whole columns (``salt_bytes``, ``md5_digests``) stay in
:mod:`cellstore.core.rowkey`.
"""

from cellstore.core.rowkey import KeyField, KeyHash, KeyType, RowKeySpec

__all__ = ["KeyField", "KeyHash", "KeyType", "RowKeySpec"]

"""The row-key design toolkit: composite, order-preserving, salted and hashed row keys.

* :class:`RowKeySpec` / :class:`KeyField`: the spec stored with a table, with
  :meth:`~RowKeySpec.encode` (input columns to row keys, vectorized),
  :meth:`~RowKeySpec.decode` (row keys back to typed columns) and
  :meth:`~RowKeySpec.key_ranges` (field predicates to raw row-key ranges, per salt bucket).
* :func:`md5_digests` and :func:`salt_bytes`: MD5 and Phoenix's salt byte over whole
  columns.

The encodings are normative: docs/format.md, section 11. Pure: no I/O.
"""

from __future__ import annotations

from cellstore.core.rowkey.fields import KeyField, KeyHash, KeyType
from cellstore.core.rowkey.hashing import md5_digests, salt_bytes
from cellstore.core.rowkey.ranges import KeyRange, successor
from cellstore.core.rowkey.spec import RowKeySpec

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

"""Regions: contiguous row-key ranges ``[start, end)`` that cut a table (R2.3).

A table's regions are sorted, contiguous and cover every possible row key: the first starts
at ``b""`` (minus infinity) and the last ends at ``b""`` (plus infinity). Region ids are
stable strings that survive other regions' splits and merges.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import MAX_ROW_LENGTH
from cellstore.errors import InvalidRowRangeError

__all__ = [
    "MAX_SALT_BUCKETS",
    "Region",
    "bisect_rows",
    "check_regions",
    "region_index",
    "region_of",
    "regions_from_splits",
    "salt_split_keys",
    "sorted_region_bounds",
]

#: Phoenix's limit on SALT_BUCKETS; the salt is one byte.
MAX_SALT_BUCKETS: Final = 256


@dataclass(frozen=True)
class Region:
    """One region: rows in ``[start, end)``; an empty ``end`` means "to the last row".

    Attributes:
        id: Stable region id, unique within the table (e.g. ``r000003``).
        start: First row key of the region, inclusive (``b""`` for the first region).
        end: Row key after the region, exclusive (``b""`` for the last region).
    """

    id: str
    start: bytes
    end: bytes

    def contains(self, row: bytes) -> bool:
        """Whether ``row`` belongs to this region."""
        return row >= self.start and (not self.end or row < self.end)

    def overlaps(self, start: bytes, stop: bytes) -> bool:
        """Whether the row range ``[start, stop)`` (empty ``stop`` = unbounded) meets it."""
        if self.end and start and start >= self.end:
            return False
        return not (stop and stop <= self.start)


def region_id(number: int) -> str:
    """The region id for a table's ``number``-th region (``r000001``...)."""
    return f"r{number:06d}"


def _check_split_keys(splits: Sequence[bytes]) -> list[bytes]:
    out: list[bytes] = []
    for i, key in enumerate(splits):
        if isinstance(key, str):
            key = key.encode("utf-8")
        if not isinstance(key, bytes | bytearray):
            raise InvalidRowRangeError(f"split key #{i} must be bytes or str, not {key!r}")
        key = bytes(key)
        if not key:
            raise InvalidRowRangeError(f"split key #{i} is empty")
        if len(key) > MAX_ROW_LENGTH:
            raise InvalidRowRangeError(f"split key #{i} is longer than {MAX_ROW_LENGTH} bytes")
        if out and key <= out[-1]:
            kind = "duplicate" if key == out[-1] else "out of order"
            raise InvalidRowRangeError(f"split key #{i} ({key!r}) is {kind}")
        out.append(key)
    return out


def regions_from_splits(splits: Sequence[bytes | str], *, first_id: int = 1) -> tuple[Region, ...]:
    """Regions cut at ``splits`` (which must be non-empty, strictly increasing keys).

    Args:
        splits: Split keys; N keys make N + 1 regions. ``str`` keys are UTF-8 encoded.
        first_id: Number of the first region's id.

    Raises:
        InvalidRowRangeError: if a key is empty, too long, duplicated or out of order.
    """
    keys = _check_split_keys(list(splits))  # type: ignore[arg-type]
    bounds = [b"", *keys, b""]
    return tuple(
        Region(region_id(first_id + i), bounds[i], bounds[i + 1]) for i in range(len(keys) + 1)
    )


def salt_split_keys(buckets: int) -> list[bytes]:
    """Split keys that give one region per salt bucket (Phoenix ``SALT_BUCKETS``).

    The salt is the first byte of the row key, ``0 .. buckets - 1``.

    Raises:
        InvalidRowRangeError: if ``buckets`` is not in ``1 .. 256``.
    """
    if isinstance(buckets, bool) or not isinstance(buckets, int):
        raise InvalidRowRangeError(f"salt_buckets must be an integer, not {buckets!r}")
    if not 1 <= buckets <= MAX_SALT_BUCKETS:
        raise InvalidRowRangeError(f"salt_buckets must be between 1 and 256, got {buckets}")
    return [bytes([i]) for i in range(1, buckets)]


def check_regions(regions: Sequence[Region]) -> None:
    """Check that regions are sorted, contiguous, cover all keys and have unique ids.

    Raises:
        InvalidRowRangeError: naming the first region that breaks the rule.
    """
    if not regions:
        raise InvalidRowRangeError("a table needs at least one region")
    if regions[0].start != b"":
        raise InvalidRowRangeError(f"first region {regions[0].id} must start at the first row")
    if regions[-1].end != b"":
        raise InvalidRowRangeError(f"last region {regions[-1].id} must end after the last row")
    seen: set[str] = set()
    for prev, cur in itertools.pairwise(regions):
        if prev.end != cur.start or not cur.start:
            raise InvalidRowRangeError(
                f"regions {prev.id} and {cur.id} are not contiguous ({prev.end!r} != {cur.start!r})"
            )
        if cur.end and cur.end <= cur.start:
            raise InvalidRowRangeError(f"region {cur.id} is empty or inverted")
    for r in regions:
        if r.id in seen:
            raise InvalidRowRangeError(f"duplicate region id {r.id}")
        seen.add(r.id)


def region_of(split_keys: Sequence[bytes], row: bytes) -> int:
    """Index of the region holding ``row`` among regions cut at sorted ``split_keys``.

    The scalar twin of :func:`region_index` (a region's start key belongs to it).

    >>> region_of([b"m"], b"a"), region_of([b"m"], b"m"), region_of([b"m"], b"z")
    (0, 1, 1)
    """
    return bisect.bisect_right(split_keys, row)


def region_index(rows: pa.Array | pa.ChunkedArray, split_keys: Sequence[bytes]) -> np.ndarray:
    """Region number (0-based) of every row key, for unsorted rows; vectorized.

    A row equal to a split key belongs to the region that starts at that key.

    Args:
        rows: Binary row keys, in any order.
        split_keys: The table's sorted split keys (region starts except the first).

    Returns:
        An int32 numpy array with ``len(rows)`` entries in ``0 .. len(split_keys)``.
    """
    n = len(rows)
    k = len(split_keys)
    if k == 0 or n == 0:
        return np.zeros(n, dtype=np.int32)
    splits = pa.array(split_keys, type=pa.binary())
    rows_arr = rows.combine_chunks() if isinstance(rows, pa.ChunkedArray) else rows
    combined = pa.concat_arrays([splits, rows_arr.cast(pa.binary())])
    # Stable sort: a split key sorts before an equal row, so the row counts it.
    order = pc.sort_indices(combined).to_numpy()
    is_split = order < k
    seen = np.cumsum(is_split, dtype=np.int32)
    out = np.empty(n, dtype=np.int32)
    out[order[~is_split] - k] = seen[~is_split]
    return out


def sorted_region_bounds(
    rows: pa.Array | pa.ChunkedArray, split_keys: Sequence[bytes]
) -> list[int]:
    """Cut points of sorted rows at the split keys: ``rows[b[i]:b[i+1]]`` is region ``i``.

    Costs ``O(len(split_keys) * log(len(rows)))`` scalar comparisons.

    Returns:
        ``len(split_keys) + 2`` offsets starting at 0 and ending at ``len(rows)``.
    """
    arr = rows.combine_chunks() if isinstance(rows, pa.ChunkedArray) else rows
    bounds = [0]
    for key in split_keys:
        bounds.append(bisect_rows(arr, key, lo=bounds[-1]))
    bounds.append(len(arr))
    return bounds


def bisect_rows(rows: pa.Array | pa.ChunkedArray, key: bytes, *, lo: int = 0) -> int:
    """First position at or after ``lo`` whose row is ``>= key``, in a sorted row column.

    A binary search: ``O(log(len(rows)))`` scalar comparisons.
    """
    hi = len(rows)
    while lo < hi:
        mid = (lo + hi) // 2
        if rows[mid].as_py() < key:
            lo = mid + 1
        else:
            hi = mid
    return lo

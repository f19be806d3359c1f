"""Work arrays from Arrow's memory pool, not from the C allocator.

numpy takes each large array from the C allocator, which maps fresh pages for it and
gives them back to the system when it is freed. Every page of the next such array then
costs the kernel a fault and a zeroing on first touch, and the faults of two threads
wait on each other (on the process's memory map). A wide read that patches deltas into
a base allocates its whole output this way on every read: on the analytics bench's
updated table, about 7,700 faults a read, and the read took 10% longer on two threads
(docs/performance.md, session 19). Arrow's pool (mimalloc or jemalloc) keeps freed pages
for the next allocation, as Arrow's Parquet reader does for the arrays it decodes.

Use :func:`empty` for arrays of the read's size (a column's values, offsets, masks)
that a compiled pass fills; small and short-lived arrays gain nothing.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["empty", "flatnonzero", "full"]


def empty(shape: int | tuple[int, int], dtype: npt.DTypeLike) -> np.ndarray:
    """An uninitialized, writable C-contiguous array from Arrow's default memory pool.

    The array holds its pool buffer (``base``): ``pyarrow.py_buffer`` of the array wraps
    that memory without a copy, so an Arrow array built on it keeps it alive.

    Args:
        shape: The length, or (rows, columns).
        dtype: The values' type.
    """
    dt = np.dtype(dtype)
    if isinstance(shape, int):
        return np.frombuffer(pa.allocate_buffer(shape * dt.itemsize), dtype=dt, count=shape)
    rows, cols = shape
    n = rows * cols
    return np.frombuffer(pa.allocate_buffer(n * dt.itemsize), dtype=dt, count=n).reshape(shape)


def full(shape: int | tuple[int, int], value: object, dtype: npt.DTypeLike) -> np.ndarray:
    """:func:`empty`, every value ``value``."""
    out = empty(shape, dtype)
    out.fill(value)
    return out


def flatnonzero(mask: np.ndarray) -> np.ndarray:
    """``numpy.flatnonzero`` of a 1-D boolean ``mask`` (int64 positions), into pool memory."""
    out = empty(int(np.count_nonzero(mask)), np.int64)
    _positions_of(mask, out)
    return out


@numba.njit(cache=True, nogil=True)
def _positions_of(mask: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    k = 0
    for i in range(len(mask)):
        if mask[i]:
            out[k] = i
            k += 1

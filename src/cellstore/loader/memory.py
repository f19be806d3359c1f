"""Giving a load's freed memory back to the operating system between its steps.

A load's memory is freed Arrow buffers and numpy temporaries. Both allocators keep freed
pages for reuse: Arrow's (mimalloc or jemalloc) per thread, glibc's ``malloc`` (numpy) per
arena, one arena per thread that allocated. A loader task that has written a sorted run
has nothing to reuse them for until its next batch, yet its process's resident memory
stays at the high-water mark of the task's biggest step on every thread. Calling
:func:`release_memory` after each such step returns those pages, so a load's peak RSS is
what its tasks hold at once, not the sum of what every thread ever held.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from typing import Any

import pyarrow as pa

__all__ = ["release_memory"]


@functools.cache
def _malloc_trim() -> Any:
    """The C library's ``malloc_trim`` (glibc), or None (another C library or platform)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_memory() -> None:
    """Return freed memory of Arrow's pool and of ``malloc`` to the operating system."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

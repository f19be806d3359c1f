"""What every kernel shares: the compile decorators, error codes, integer readers.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(fn: _F) -> _F:
    """``numba.njit(cache=True, nogil=True)``, keeping the function's signature for mypy."""
    return cast(_F, numba.njit(cache=True, nogil=True)(fn))


def _inline(fn: _F) -> _F:
    """:func:`_jit`, inlined into its callers by numba (``inline="always"``).

    For the small helpers called once or more per cell: a call passing arrays costs
    reference counting a loop cannot prune, inlined they cost nothing (the decoders run
    about 1.4x faster).
    """
    return cast(_F, numba.njit(cache=True, nogil=True, inline="always")(fn))


#: Error codes of the decoders (0: success).
OK: Final = 0
OVERRUN: Final = 1  # a read past the end of the input
BAD_COMMON: Final = 2  # a common-prefix length longer than the previous key
BAD_KEY: Final = 3  # a key length that does not fit its parts
BAD_TAGS: Final = 4  # a tags length over 65535
BAD_SIZE: Final = 5  # output larger than the block's unencodedDataSize
BAD_VALUE: Final = 6  # FAST_DIFF "same value" with a different value length
#: What each error code means, for the callers' messages.
ERROR_MESSAGES: Final = {
    OVERRUN: "an encoded cell overruns the block",
    BAD_COMMON: "a common-prefix length exceeds the previous key",
    BAD_KEY: "a key length does not fit the key's parts",
    BAD_TAGS: "a tags length does not fit a cell",
    BAD_SIZE: "the cells decode to more bytes than the header says",
    BAD_VALUE: "a same-value flag with a new value length",
}


@_inline
def vlong_size(b: np.uint8) -> np.int64:
    """``WritableUtils.decodeVIntSize`` of a VLong's first byte."""
    v = np.int64(b)
    if v >= 128:
        v -= 256
    if v >= -112:
        return np.int64(1)
    if v < -120:
        return np.int64(-119 - v)
    return np.int64(-111 - v)


@_inline
def _cint(data: npt.NDArray[np.uint8], pos: np.int64, end: np.int64) -> tuple[np.int64, np.int64]:
    """``ByteBufferUtils.readCompressedInt``: (value, next position), -1 past the end."""
    value = np.int64(0)
    shift = 0
    while True:
        if pos >= end or shift > 28:
            return np.int64(-1), pos
        b = np.int64(data[pos])
        pos += 1
        value |= (b & 0x7F) << shift
        if b & 0x80 == 0:
            return value, pos
        shift += 7


@_inline
def _put_u32(out: npt.NDArray[np.uint8], at: np.int64, v: np.int64) -> None:
    out[at] = (v >> 24) & 0xFF
    out[at + 1] = (v >> 16) & 0xFF
    out[at + 2] = (v >> 8) & 0xFF
    out[at + 3] = v & 0xFF


@_inline
def _copy(
    dst: npt.NDArray[np.uint8],
    at: np.int64,
    src: npt.NDArray[np.uint8],
    start: np.int64,
    length: np.int64,
) -> None:
    """``dst[at : at + length] = src[start : start + length]``, byte by byte.

    Faster than a slice assignment for the short copies of a cell (no array views, no
    overlap check: ``dst`` and ``src`` may be the same array, copied forward). Indexes
    are unsigned, so numba adds no negative-index wraparound per byte and LLVM can copy
    in wide words (2-3x faster for a 16-byte row); nothing is copied for ``length <= 0``.
    """
    if length <= 0:
        return
    a = np.uint64(at)
    s = np.uint64(start)
    for j in range(np.uint64(length)):
        dst[a + j] = src[s + j]


@_inline
def _ts_type(buf: npt.NDArray[np.uint8], kend: np.int64) -> tuple[np.int64, np.int8]:
    """A key's timestamp (big-endian i64) and type byte, the key ending at ``kend``."""
    t = np.int64(0)
    for j in range(8):
        t = (t << 8) | np.int64(buf[kend - 9 + j])
    b = np.int64(buf[kend - 1])
    return t, np.int8(b - 256 if b >= 128 else b)

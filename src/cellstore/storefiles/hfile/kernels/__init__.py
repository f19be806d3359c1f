"""Compiled (numba) kernels for the inherently sequential parts of the HFile format.

Each kernel is a loop where every step depends on the previous one, which numpy cannot
express without speculation: a NONE cell's offset follows from the previous cell's
lengths; a PREFIX/DIFF/FAST_DIFF key is a delta on the previous key; HBase's Murmur2 hash
runs over the bytes of one key. The kernels are small, typed by their callers (uint8
buffers, int64 offsets) and know nothing of files or errors: they return an error code
and the place, and the Python callers raise ``CorruptFileError`` with the file and block.

Compiled with ``@numba.njit(cache=True, nogil=True)`` (:mod:`.base`): the machine code is
cached beside the modules in ``__pycache__`` (first import in a fresh environment compiles, later
processes load it), and the GIL is released so the reader's decode threads run in
parallel.

Two modules of kernels over :mod:`.base` (decorators, error codes, integer readers):
:mod:`.none` (NONE-layout cells: walk, dictionary decoding, layout, order checks, Bloom
key hashes) and :mod:`.delta` (PREFIX, DIFF, FAST_DIFF decoders). A new data block
encoding adds its decoder to :mod:`.delta` (or a module of its own) and a branch in
:func:`decode_cells`.

Pure: no I/O.
"""

from cellstore.storefiles.hfile.kernels.base import BAD_KEY, ERROR_MESSAGES, OK, vlong_size
from cellstore.storefiles.hfile.kernels.delta import decode_cells
from cellstore.storefiles.hfile.kernels.none import (
    decode_cells_dictionary,
    murmur2_keys,
    order_flags,
    scatter_cells,
    walk_none,
)

__all__ = [
    "BAD_KEY",
    "ERROR_MESSAGES",
    "OK",
    "decode_cells",
    "decode_cells_dictionary",
    "murmur2_keys",
    "order_flags",
    "scatter_cells",
    "vlong_size",
    "walk_none",
]

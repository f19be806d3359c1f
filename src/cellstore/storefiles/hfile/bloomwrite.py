"""HBase's compound Bloom filter, built vectorized (the write half of the Bloom reader).

Follows ``CompoundBloomFilterWriter`` + ``BloomFilterChunk`` + ``BloomFilterUtil`` with the
defaults of ``BloomFilterFactory.createGeneralBloomAtWrite`` (HBase 2.x):

* chunk size hint ``io.storefile.bloom.block.size`` = 128 KiB, made foldable by
  ``io.storefile.bloom.max.fold`` = 7 (``computeFoldableByteSize``);
* error rate ``io.storefile.bloom.error.rate`` = 0.01 as a Java *float*; for ROWCOL the
  per-lookup rate is ``(float)(1 - sqrt(1 - err))``;
* ``maxKeys``/``hashCount`` from ``BloomFilterUtil.createBySize`` (``idealMaxKeys``,
  ``optimalFunctionCount``, ``computeMaxKeys``); a chunk takes ``maxKeys`` keys and the
  next key opens a new chunk; on close each chunk is folded (``compactBloom``) while it is
  even-sized and its max keys exceed twice its key count;
* hash ``MurmurHash`` (hash type 1, Murmur2-32, ``hbase.hash.type=murmur``): ``h1 =
  hash(key, 0)``, ``h2 = hash(key, h1)``, bit ``|(h1 + i*h2) mod bits|`` in Java int
  arithmetic for ``i < hashCount``;
* keys: ROW = the row; ROWCOL = ``RowColBloomHashKey`` (``u16 rowLen, row, 0x00,
  qualifier, Long.MAX_VALUE, 0xFF``), and chunk-index keys / ``LAST_BLOOM_KEY`` are the
  serialized ``createFirstOnRowCol`` keys.

Pure: no I/O.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from cellstore.storefiles.hfile.cellbytes import binary_parts
from cellstore.storefiles.hfile.kernels import murmur2_keys
from cellstore.storefiles.hfile.serialize import IndexEntry, hadoop_vint, root_index_payload

__all__ = [
    "BloomBuilder",
    "BloomChunk",
    "BloomParams",
    "WrittenChunk",
    "bloom_meta_payload",
    "bloom_params",
]

_LOG2_SQUARED: Final = math.log(2) * math.log(2)
DEFAULT_CHUNK_BYTES: Final = 128 * 1024
DEFAULT_MAX_FOLD: Final = 7
DEFAULT_ERROR_RATE: Final = 0.01
MURMUR_HASH_TYPE: Final = 1


@dataclass(frozen=True, slots=True)
class BloomParams:
    """Per-chunk parameters of a compound Bloom filter (before folding).

    Attributes:
        byte_size: Chunk size in bytes.
        max_keys: Keys per chunk.
        hash_count: Hash functions.
    """

    byte_size: int
    max_keys: int
    hash_count: int


def _java_float(x: float) -> float:
    return float(np.float32(x))


def bloom_params(
    *,
    rowcol: bool,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    error_rate: float = DEFAULT_ERROR_RATE,
    max_fold: int = DEFAULT_MAX_FOLD,
) -> BloomParams:
    """``BloomFilterUtil.createBySize`` with the factory's error-rate handling.

    Args:
        rowcol: ROWCOL bloom (adjusts the error rate as HBase does).
        chunk_bytes: Chunk byte-size hint.
        error_rate: Target false-positive rate (a Java float in HBase).
        max_fold: Maximum fold factor.

    Returns:
        The chunk parameters.
    """
    err = _java_float(error_rate)
    if rowcol:
        err = _java_float(1 - math.sqrt(1 - err))
    byte_size = _foldable_byte_size(_foldable_byte_size(chunk_bytes * 8, max_fold) * 8, max_fold)
    bit_size = byte_size * 8
    max_keys = int(bit_size * (_LOG2_SQUARED / -math.log(err)))
    hash_count = math.ceil(math.log(2) * (bit_size // max_keys))
    max_keys = int(
        -bit_size * 1.0 / hash_count * math.log(1 - math.exp(math.log(err) / hash_count))
    )
    return BloomParams(byte_size, max_keys, hash_count)


def _foldable_byte_size(bit_size: int, fold: int) -> int:
    size = (bit_size + 7) // 8
    mask = (1 << fold) - 1
    if size & mask:
        size = ((size >> fold) + 1) << fold
    return size


@dataclass(frozen=True, slots=True)
class BloomChunk:
    """One finished (folded) Bloom chunk.

    Attributes:
        bits: The bit array as written in the BLOOM_CHUNK block.
        key_count: Keys added.
        max_keys: Max keys after folding.
        first_key: The chunk-index key of its first Bloom key.
        full_at: The filter's total key count when this chunk was complete (HBase writes a
            chunk at the first data-block boundary after that many keys were added).
    """

    bits: bytes
    key_count: int
    max_keys: int
    first_key: bytes
    full_at: int


@dataclass(frozen=True, slots=True)
class WrittenChunk:
    """A chunk already in the file: what the Bloom meta block records of it.

    Attributes:
        byte_size: Bytes of its bit array.
        key_count: Keys added.
        max_keys: Max keys after folding.
    """

    byte_size: int
    key_count: int
    max_keys: int


class BloomBuilder:
    """A compound Bloom filter filled incrementally (``CompoundBloomFilterWriter``).

    Keys are added in batches; a chunk takes ``max_keys`` keys, the next key opens a new
    chunk. Complete chunks wait in a queue until the writer asks for the ones due at a
    data-block boundary (:meth:`take_ready`); the writer then records where it wrote them
    (:meth:`written`). Only the open chunk's bit array and the queue are held.
    """

    def __init__(self, params: BloomParams, *, comparator: str | None) -> None:
        self.params = params
        self.comparator = comparator
        self.total_keys = 0
        self.last_key: bytes | None = None
        self._bits: npt.NDArray[np.bool_] | None = None
        self._count = 0
        self._first_key = b""
        self._ready: list[BloomChunk] = []
        self._written: list[WrittenChunk] = []
        self._entries: list[IndexEntry] = []

    @property
    def chunk_count(self) -> int:
        """Chunks written so far."""
        return len(self._written)

    def add(
        self,
        hash_keys: pa.Array,
        index_keys: pa.Array,
    ) -> None:
        """Add keys (``BloomFilterChunk.add``), opening and completing chunks as needed.

        Args:
            hash_keys: The keys hashed into the filter (large binary).
            index_keys: Per key, its chunk-index key (large binary; equal to
                ``hash_keys`` for ROW filters).
        """
        k = len(hash_keys)
        if not k:
            return
        data, starts, lens = binary_parts(hash_keys)
        m = self.params.max_keys
        i = 0
        while i < k:
            if self._bits is None:
                self._bits = np.zeros(self.params.byte_size * 8, np.bool_)
                self._first_key = index_keys[i].as_py()
            take = min(m - self._count, k - i)
            self._set_bits(data, starts[i : i + take], lens[i : i + take])
            self._count += take
            self.total_keys += take
            i += take
            if self._count >= m:
                self._finish()
        self.last_key = index_keys[k - 1].as_py()

    def _set_bits(
        self,
        data: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.int64],
        lens: npt.NDArray[np.int64],
    ) -> None:
        assert self._bits is not None
        n = len(starts)
        h1 = murmur2_keys(data, starts, lens, np.zeros(n, np.uint32))
        h2 = murmur2_keys(data, starts, lens, h1)
        bit_size = self.params.byte_size * 8
        h1s = h1.view(np.int32).astype(np.int64)
        h2s = h2.view(np.int32).astype(np.int64)
        for i in range(self.params.hash_count):
            composite = ((h1s + i * h2s + 2**31) % 2**32) - 2**31  # Java int wrap-around
            self._bits[np.abs(np.fmod(composite, bit_size))] = True

    def _finish(self) -> None:
        """Fold the open chunk (``compactBloom``) and queue it."""
        if self._bits is None:
            return
        n = self._count
        arr = np.packbits(self._bits, bitorder="little")
        byte_size, max_keys = self.params.byte_size, self.params.max_keys
        pieces = 1
        while byte_size & 1 == 0 and max_keys > (n << 1):
            pieces <<= 1
            byte_size >>= 1
            max_keys >>= 1
        if pieces > 1:
            arr = np.bitwise_or.reduce(arr.reshape(pieces, byte_size), axis=0)
        self._ready.append(BloomChunk(arr.tobytes(), n, max_keys, self._first_key, self.total_keys))
        self._bits, self._count = None, 0

    def take_ready(self, keys_seen: int | None) -> list[BloomChunk]:
        """Chunks due for writing (``shouldWriteBlock``), removed from the queue.

        Args:
            keys_seen: Keys added through the cell that opens the next data block; None at
                close, which also completes the open chunk.

        Returns:
            The chunks to write now, in order.
        """
        if keys_seen is None:
            self._finish()
            due, self._ready = self._ready, []
            return due
        j = 0
        while j < len(self._ready) and self._ready[j].full_at <= keys_seen:
            j += 1
        due, self._ready = self._ready[:j], self._ready[j:]
        return due

    def written(self, chunk: BloomChunk, offset: int, on_disk_size: int) -> None:
        """Record that ``chunk`` was written at ``offset``."""
        self._written.append(WrittenChunk(len(chunk.bits), chunk.key_count, chunk.max_keys))
        self._entries.append(IndexEntry(chunk.first_key, offset, on_disk_size))

    def meta_payload(self) -> bytes:
        """The BLMFMET2/DFBLMET2 payload for the written chunks."""
        return bloom_meta_payload(
            self._written, self._entries, self.params, comparator=self.comparator
        )


def bloom_meta_payload(
    chunks: list[WrittenChunk],
    entries: list[IndexEntry],
    params: BloomParams,
    *,
    comparator: str | None,
) -> bytes:
    """``CompoundBloomFilterWriter.MetaWriter.write``: the BLMFMET2/DFBLMET2 payload.

    Args:
        chunks: The chunks in file order.
        entries: Their index entries (offset, on-disk size, first key).
        params: The chunk parameters (hash count).
        comparator: Comparator class name (ROWCOL) or None (ROW, DeleteFamily).

    Returns:
        version 3, total byte size, hash count, hash type, key count, max keys, chunk
        count, comparator name, and the single-level chunk index.
    """
    name = comparator.encode() if comparator else b""
    head = struct.pack(
        ">iqiiqqi",
        3,
        sum(c.byte_size for c in chunks),
        params.hash_count,
        MURMUR_HASH_TYPE,
        sum(c.key_count for c in chunks),
        sum(c.max_keys for c in chunks),
        len(chunks),
    )
    return head + hadoop_vint(len(name)) + name + root_index_payload(entries)

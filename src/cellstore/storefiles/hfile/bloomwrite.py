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

from cellstore.storefiles.hfile.serialize import IndexEntry, hadoop_vint, root_index_payload

__all__ = [
    "BloomChunk",
    "BloomParams",
    "bloom_meta_payload",
    "bloom_params",
    "build_chunk",
    "murmur2",
]

_LOG2_SQUARED: Final = math.log(2) * math.log(2)
DEFAULT_CHUNK_BYTES: Final = 128 * 1024
DEFAULT_MAX_FOLD: Final = 7
DEFAULT_ERROR_RATE: Final = 0.01
MURMUR_HASH_TYPE: Final = 1
_M: Final = np.uint32(0x5BD1E995)


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


def murmur2(
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    seeds: npt.NDArray[np.uint32],
) -> npt.NDArray[np.uint32]:
    """HBase ``MurmurHash.hash`` of many keys at once.

    Args:
        data: Bytes holding the keys.
        starts: Start of each key in ``data``.
        lengths: Length of each key.
        seeds: Seed per key.

    Returns:
        The 32-bit hashes (as uint32; Java's int is the same bits).
    """
    n = len(starts)
    h = (seeds.astype(np.uint32) ^ lengths.astype(np.uint32)).astype(np.uint32)
    nwords = lengths >> 2
    max_words = int(nwords.max()) if n else 0
    d32 = data.astype(np.uint32) if len(data) else np.zeros(1, np.uint32)
    with np.errstate(over="ignore"):
        for w in range(max_words):
            act = np.nonzero(nwords > w)[0]
            p = starts[act] + 4 * w
            k = d32[p] | (d32[p + 1] << 8) | (d32[p + 2] << 16) | (d32[p + 3] << 24)
            k = k * _M
            k ^= k >> np.uint32(24)
            k = k * _M
            ha = h[act] * _M
            h[act] = ha ^ k
        left = lengths & 3
        tail = starts + (nwords << 2)
        sdata = data.view(np.int8).astype(np.int32) if len(data) else np.zeros(1, np.int32)
        for nleft, shifts in ((3, (16, 8, 0)), (2, (8, 0)), (1, (0,))):
            act = np.nonzero(left == nleft)[0]
            if not len(act):
                continue
            x = h[act]
            for j, sh in enumerate(reversed(shifts)):
                x = x ^ (sdata[tail[act] + j] << sh).astype(np.uint32)
            h[act] = x * _M
        h ^= h >> np.uint32(13)
        h = h * _M
        h ^= h >> np.uint32(15)
    return h


@dataclass(frozen=True, slots=True)
class BloomChunk:
    """One finished (folded) Bloom chunk.

    Attributes:
        bits: The bit array as written in the BLOOM_CHUNK block.
        key_count: Keys added.
        max_keys: Max keys after folding.
        first_key: The chunk-index key of its first Bloom key.
    """

    bits: bytes
    key_count: int
    max_keys: int
    first_key: bytes


def build_chunk(
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    params: BloomParams,
    first_key: bytes,
) -> BloomChunk:
    """Add keys to a fresh chunk (``BloomFilterChunk.add``) and fold it (``compactBloom``).

    Args:
        data: Bytes holding the hash keys.
        starts: Start of each key.
        lengths: Length of each key.
        params: Chunk parameters.
        first_key: The chunk-index key for this chunk.

    Returns:
        The finished chunk.
    """
    n = len(starts)
    h1 = murmur2(data, starts, lengths, np.zeros(n, np.uint32))
    h2 = murmur2(data, starts, lengths, h1)
    bit_size = params.byte_size * 8
    h1s = h1.view(np.int32).astype(np.int64)
    h2s = h2.view(np.int32).astype(np.int64)
    bits = np.zeros(bit_size, np.bool_)
    for i in range(params.hash_count):
        composite = ((h1s + i * h2s + 2**31) % 2**32) - 2**31  # Java int wrap-around
        pos = np.abs(np.fmod(composite, bit_size))
        bits[pos] = True
    arr = np.packbits(bits, bitorder="little")
    byte_size, max_keys = params.byte_size, params.max_keys
    pieces = 1
    if n > 0:
        while byte_size & 1 == 0 and max_keys > (n << 1):
            pieces <<= 1
            byte_size >>= 1
            max_keys >>= 1
    if pieces > 1:
        arr = np.bitwise_or.reduce(arr.reshape(pieces, byte_size), axis=0)
    return BloomChunk(arr.tobytes(), n, max_keys, first_key)


def bloom_meta_payload(
    chunks: list[BloomChunk],
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
        sum(len(c.bits) for c in chunks),
        params.hash_count,
        MURMUR_HASH_TYPE,
        sum(c.key_count for c in chunks),
        sum(c.max_keys for c in chunks),
        len(chunks),
    )
    return head + hadoop_vint(len(name)) + name + root_index_payload(entries)

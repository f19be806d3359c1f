"""Compound Bloom filters of HFiles (ROW, ROWCOL, ROWPREFIX and DeleteFamily): lookups.

Sources: HBase ``io/hfile/CompoundBloomFilter.java`` (``contains``),
``CompoundBloomFilterWriter.MetaWriter.write`` (meta layout), ``util/BloomFilterUtil.java``
(``contains``, ``checkBit``), hbase-common ``util/MurmurHash.java``, ``MurmurHash3.java``,
``JenkinsHash.java``, ``RowBloomHashKey`` and ``RowColBloomHashKey``.

Meta payload (BLMFMET2 / DFBLMET2): ``i32 version(3) | i64 totalByteSize | i32 hashCount |
i32 hashType | i64 keyCount | i64 maxKeys | i32 numChunks | VInt-len comparator name``,
then the chunk index in root format. Chunks (BLMFBLK2) are raw bit arrays. A key is looked
up in the chunk whose first key is the greatest not after it; bit ``i`` of the
``hashCount`` probes is ``|(h1 + i * h2) mod bitSize|`` (Java 32-bit arithmetic) with
``h1 = hash(key, 0)`` and ``h2 = hash(key, h1)``.

Pure: no I/O. The write half is :mod:`cellstore.storefiles.hfile.bloomwrite`.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from cellstore.errors import CorruptFileError, UnsupportedFormatError
from cellstore.storefiles.hfile.index import IndexEntry, parse_root_index
from cellstore.storefiles.hfile.keys import LATEST_TIMESTAMP, compare_keys
from cellstore.storefiles.hfile.limits import MAX_BLOOM_HASH_COUNT
from cellstore.storefiles.hfile.varint import read_vlong

__all__ = [
    "HASH_TYPES",
    "BloomMeta",
    "bloom_key",
    "chunk_for_key",
    "chunk_contains",
    "jenkins_hash",
    "murmur2_hash",
    "murmur3_hash",
    "parse_bloom_meta",
]

#: ``Hash`` type codes (``hbase.hash.type``).
HASH_TYPES: Final[dict[int, str]] = {0: "JENKINS", 1: "MURMUR", 2: "MURMUR3"}
_META: Final = struct.Struct(">iqiiqqi")
_MASK: Final = 0xFFFFFFFF


def _i32(x: int) -> int:
    x &= _MASK
    return x - (1 << 32) if x & 0x80000000 else x


def _sbyte(b: int) -> int:
    return b - 256 if b > 127 else b


def murmur2_hash(data: bytes, seed: int) -> int:
    """``MurmurHash.hash``: Murmur2 32-bit, tail bytes sign-extended; returns a Java int."""
    m, h = 0x5BD1E995, (seed ^ len(data)) & _MASK
    n4 = len(data) >> 2
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & _MASK
        k ^= k >> 24
        k = (k * m) & _MASK
        h = ((h * m) & _MASK) ^ k
    left = len(data) - 4 * n4
    if left:
        base = 4 * n4
        if left >= 3:
            h ^= (_sbyte(data[base + 2]) << 16) & _MASK
        if left >= 2:
            h ^= (_sbyte(data[base + 1]) << 8) & _MASK
        h ^= _sbyte(data[base]) & _MASK
        h = (h * m) & _MASK
    h ^= h >> 13
    h = (h * m) & _MASK
    h ^= h >> 15
    return _i32(h)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def murmur3_hash(data: bytes, seed: int) -> int:
    """``MurmurHash3.hash``: MurmurHash3 x86 32-bit; returns a Java int."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & _MASK
    n4 = len(data) >> 2
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = _rotl((k * c1) & _MASK, 15)
        h ^= (k * c2) & _MASK
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & _MASK
    tail = data[4 * n4 :]
    if tail:
        k = int.from_bytes(tail, "little")
        k = _rotl((k * c1) & _MASK, 15)
        h ^= (k * c2) & _MASK
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return _i32(h)


def _jenkins_mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - c) & _MASK
    a ^= _rotl(c, 4)
    c = (c + b) & _MASK
    b = (b - a) & _MASK
    b ^= _rotl(a, 6)
    a = (a + c) & _MASK
    c = (c - b) & _MASK
    c ^= _rotl(b, 8)
    b = (b + a) & _MASK
    a = (a - c) & _MASK
    a ^= _rotl(c, 16)
    c = (c + b) & _MASK
    b = (b - a) & _MASK
    b ^= _rotl(a, 19)
    a = (a + c) & _MASK
    c = (c - b) & _MASK
    c ^= _rotl(b, 4)
    b = (b + a) & _MASK
    return a, b, c


def _jenkins_final(a: int, b: int, c: int) -> int:
    c ^= b
    c = (c - _rotl(b, 14)) & _MASK
    a ^= c
    a = (a - _rotl(c, 11)) & _MASK
    b ^= a
    b = (b - _rotl(a, 25)) & _MASK
    c ^= b
    c = (c - _rotl(b, 16)) & _MASK
    a ^= c
    a = (a - _rotl(c, 4)) & _MASK
    b ^= a
    b = (b - _rotl(a, 14)) & _MASK
    c ^= b
    c = (c - _rotl(b, 24)) & _MASK
    return c


def jenkins_hash(data: bytes, seed: int) -> int:
    """``JenkinsHash.hash``: Bob Jenkins' lookup3 ``hashlittle``; returns a Java int."""
    n = len(data)
    a = b = c = (0xDEADBEEF + n + seed) & _MASK
    pos = 0
    while n - pos > 12:
        a = (a + int.from_bytes(data[pos : pos + 4], "little")) & _MASK
        b = (b + int.from_bytes(data[pos + 4 : pos + 8], "little")) & _MASK
        c = (c + int.from_bytes(data[pos + 8 : pos + 12], "little")) & _MASK
        a, b, c = _jenkins_mix(a, b, c)
        pos += 12
    rest = data[pos:]
    if not rest:
        return _i32(c)
    rest = rest + b"\x00" * (12 - len(rest))
    a = (a + int.from_bytes(rest[0:4], "little")) & _MASK
    b = (b + int.from_bytes(rest[4:8], "little")) & _MASK
    c = (c + int.from_bytes(rest[8:12], "little")) & _MASK
    return _i32(_jenkins_final(a, b, c))


_HASHES: Final[dict[int, Callable[[bytes, int], int]]] = {
    0: jenkins_hash,
    1: murmur2_hash,
    2: murmur3_hash,
}


@dataclass(frozen=True)
class BloomMeta:
    """A compound Bloom filter's meta block.

    Attributes:
        version: Always 3.
        total_byte_size: Bytes of all chunks.
        hash_count: Probes per key.
        hash_type: 0 Jenkins, 1 Murmur, 2 Murmur3.
        key_count: Keys added.
        max_keys: Capacity.
        comparator: Comparator class name of the chunk keys ("" for raw bytes).
        chunks: The chunk index (offset, on-disk size, first key of the chunk).
    """

    version: int
    total_byte_size: int
    hash_count: int
    hash_type: int
    key_count: int
    max_keys: int
    comparator: str
    chunks: tuple[IndexEntry, ...]

    @property
    def hash_name(self) -> str:
        """``JENKINS``, ``MURMUR`` or ``MURMUR3``."""
        return HASH_TYPES.get(self.hash_type, f"unknown({self.hash_type})")


def parse_bloom_meta(payload: bytes, *, where: str) -> BloomMeta:
    """Parse a BLMFMET2/DFBLMET2 payload.

    The parameters are checked against what HBase writes before they are used: a hash
    count of 1 to :data:`~cellstore.storefiles.hfile.limits.MAX_BLOOM_HASH_COUNT` (it
    bounds the probes of every lookup), no negative sizes or counts, and a chunk count the
    payload can hold.

    Raises:
        UnsupportedFormatError: for a Bloom version other than 3 or an unknown hash type.
        CorruptFileError: if the payload does not parse or a parameter is impossible.
    """
    try:
        version, total, hash_count, hash_type, keys, max_keys, n = _META.unpack_from(payload, 0)
    except struct.error as e:
        raise CorruptFileError(f"{where}: Bloom meta truncated") from e
    if version != 3:
        raise UnsupportedFormatError(f"{where}: Bloom filter version {version} (expected 3)")
    if hash_type not in _HASHES:
        raise UnsupportedFormatError(f"{where}: unknown Bloom hash type {hash_type}")
    if not 1 <= hash_count <= MAX_BLOOM_HASH_COUNT:
        raise CorruptFileError(
            f"{where}: Bloom hash count {hash_count} is outside 1..{MAX_BLOOM_HASH_COUNT} "
            "(HBase derives it from the error rate)"
        )
    for name, value in (
        ("total byte size", total),
        ("key count", keys),
        ("max keys", max_keys),
        ("chunk count", n),
    ):
        if value < 0:
            raise CorruptFileError(f"{where}: Bloom {name} {value} is negative")
    try:
        clen, pos = read_vlong(payload, _META.size)
    except CorruptFileError:
        raise CorruptFileError(f"{where}: Bloom meta truncated") from None
    if clen < 0 or pos + clen > len(payload):
        raise CorruptFileError(f"{where}: Bloom comparator name of {clen} bytes overruns")
    comparator = payload[pos : pos + clen].decode("utf-8", "replace")
    chunks, _ = parse_root_index(payload[pos + clen :], n, where=f"{where}: Bloom index")
    return BloomMeta(
        version, total, hash_count, hash_type, keys, max_keys, comparator, tuple(chunks)
    )


def bloom_key(bloom_type: str, row: bytes, qualifier: bytes = b"", *, prefix: int = 0) -> bytes:
    """The bytes a Bloom filter of ``bloom_type`` hashes for a row (and qualifier).

    ROW and DeleteFamily: the row; ROWPREFIX_FIXED_LENGTH: its first ``prefix`` bytes;
    ROWCOL: ``RowColBloomHashKey`` (``u16 rowLen | row | 0x00 | qualifier |
    LATEST_TIMESTAMP | Maximum``).
    """
    if bloom_type == "ROWCOL":
        return (
            len(row).to_bytes(2, "big")
            + row
            + b"\x00"
            + qualifier
            + LATEST_TIMESTAMP.to_bytes(8, "big")
            + b"\xff"
        )
    if bloom_type.startswith("ROWPREFIX"):
        return row[:prefix]
    return row


def chunk_for_key(meta: BloomMeta, key: bytes) -> int:
    """Index of the chunk that would hold ``key`` (``rootBlockContainingKey``), -1 if none."""
    if not meta.chunks:
        return -1
    if meta.comparator:
        first = -1
        for i, entry in enumerate(meta.chunks):
            if compare_keys(entry.key, key) <= 0:
                first = i
            else:
                break
        return first
    return bisect.bisect_right([c.key for c in meta.chunks], key) - 1


def chunk_contains(chunk: bytes, key: bytes, *, hash_count: int, hash_type: int) -> bool:
    """``BloomFilterUtil.contains``: whether every probed bit of ``key`` is set in ``chunk``."""
    bits = len(chunk) * 8
    if bits == 0:
        return False
    fn = _HASHES[hash_type]
    h1 = fn(key, 0)
    h2 = fn(key, h1)
    for i in range(hash_count):
        composite = _i32(h1 + i * h2)
        # Java's % keeps the dividend's sign; abs() then folds it back.
        rem = abs(composite) % bits
        if not chunk[rem >> 3] & (1 << (rem & 7)):
            return False
    return True

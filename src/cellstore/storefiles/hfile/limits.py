"""The limits every reader of HFile bytes checks before it allocates, loops or seeks.

HBase files are untrusted input: each length, count, offset and level read from a file is
checked against the file's size and against what HBase itself writes or accepts before
anything is allocated, looped over or read. The limits and where they come from:

* sizes and counts are Java ``int`` fields (:data:`MAX_INT`): block header sizes
  (``HFileBlock``), index entry sizes, entry counts; ``HFileBlock.FSReaderImpl``
  refuses on-disk sizes below the header size or of ``Integer.MAX_VALUE`` and more, and
  offsets below 0;
* a block (on disk, or its uncompressed or unencoded payload) is at most
  :data:`MAX_BLOCK_BYTES`: HBase cuts data blocks at the family's BLOCKSIZE, which
  ``TableDescriptorChecker`` keeps within 1 KiB..16 MiB, and a block overshoots it by one
  cell at most, which ``hbase.server.keyvalue.maxsize`` (10 MiB by default) bounds; the
  RPC request limit ``hbase.ipc.max.request.size`` is 256 MiB. A reader may raise the cap
  (``HFileReader(max_block_bytes=...)``) for a genuine file with larger cells;
* a compressed payload expands at most :data:`MAX_EXPANSION` times (the formats' own
  ceilings: deflate 1032:1, a snappy copy of 64 bytes in 3, an LZ4 match length byte of
  255, a zstd RLE block of 128 KiB in 4 bytes);
* a data index has at most :data:`MAX_INDEX_LEVELS` levels
  (``HFileBlockIndex.BlockIndexWriter.writeIndexBlocks`` stops adding levels at 16,
  HBASE-16288), and the reader never descends more levels than the trailer states
  (``loadDataBlockWithScanInfo``: "Search Tree Level overflow");
* a Bloom filter probes at most :data:`MAX_BLOOM_HASH_COUNT` bits per key: HBase derives
  the hash count from the error rate (``BloomFilterUtil.createBySize``:
  ``optimalFunctionCount(idealMaxKeys(bits, rate), bits)``), which stays below
  ``2 * log2(1 / rate)``, so 2148 for the smallest positive double; a ROWPREFIX Bloom's
  prefix length is 1..:data:`MAX_ROW_LENGTH` (``BloomFilterUtil.getBloomFilterParam``).

Pure constants and small checks: no I/O.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "MAX_BLOCK_BYTES",
    "MAX_BLOOM_HASH_COUNT",
    "MAX_EXPANSION",
    "MAX_INDEX_LEVELS",
    "MAX_INT",
    "MAX_ROW_LENGTH",
    "MIN_ROOT_ENTRY",
]

#: ``Integer.MAX_VALUE``: sizes and counts in HFiles are Java ints.
MAX_INT: Final = (1 << 31) - 1
#: Default cap on a block's on-disk, uncompressed and unencoded sizes (see the module doc).
MAX_BLOCK_BYTES: Final = 256 << 20
#: Most levels of a data block index HBase writes (HBASE-16288).
MAX_INDEX_LEVELS: Final = 16
#: Most Bloom hash functions HBase derives from any error rate (see the module doc).
MAX_BLOOM_HASH_COUNT: Final = 2148
#: ``HConstants.MAX_ROW_LENGTH`` (``Short.MAX_VALUE``).
MAX_ROW_LENGTH: Final = 32767
#: Smallest root-format index entry: ``i64 offset | i32 size | VInt keyLength (1 byte)``.
MIN_ROOT_ENTRY: Final = 13
#: Codec -> (most output bytes per payload byte, plus a constant for headers and framing).
MAX_EXPANSION: Final[dict[str, tuple[int, int]]] = {
    "NONE": (1, 0),
    "GZ": (1032, 1024),
    "SNAPPY": (22, 1024),
    "LZ4": (264, 1024),
    "ZSTD": (32768, 1 << 17),
}

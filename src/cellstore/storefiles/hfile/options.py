"""Every option of the HFile writer, once: :class:`HFileOptions`.

One frozen object describes how an HFile is written (an HBase family's settings plus the
writer's and bulk load's knobs). :func:`~cellstore.hbase.write_hfile`,
:func:`~cellstore.storefiles.hfile.writer.build_hfile` and
:class:`~cellstore.hbase.HFileWriter` take it (or its fields as keyword overrides,
:class:`HFileKwargs`); loads that write bulk-load HFiles
(:class:`~cellstore.loader.HFileOutput`) and the HFile export
(:func:`~cellstore.jobs.export_hfiles`) take it per family.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, TypedDict, get_args

from cellstore.errors import InvalidArgumentError
from cellstore.storefiles.hfile.encoders import ENCODING_IDS, Encoding
from cellstore.storefiles.hfile.serialize import CHECKSUM_TYPES, CODEC_ORDINALS, Codec

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_WRITE_THREADS",
    "KV_COMPARATOR",
    "BloomType",
    "ChecksumType",
    "HFileKwargs",
    "HFileOptions",
]

BloomType = Literal["none", "row", "rowcol"]
ChecksumType = Literal["crc32c", "crc32", "none"]

#: Comparator name HBase 2.x writes for user tables (``FixedFileTrailer.getHBase1CompatibleName``).
KV_COMPARATOR: Final = "org.apache.hadoop.hbase.KeyValue$KVComparator"
#: HBase's default family ``BLOCKSIZE`` (what ``block_size=None`` writes, outside a table).
DEFAULT_BLOCK_SIZE: Final = 65536
#: Threads compressing data blocks by default: the machine's cores, at most 2.
DEFAULT_WRITE_THREADS: Final = max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True, kw_only=True)
class HFileOptions:
    """How an HBase HFile v3.3 is written (validated on construction).

    The first four fields are an HBase family's settings (``COMPRESSION``,
    ``DATA_BLOCK_ENCODING``, ``BLOCKSIZE``, ``BLOOMFILTER``); the rest are the writer's
    and bulk load's knobs, with HBase 2.x's defaults.

    Attributes:
        compression: ``none``, ``gz``, ``snappy``, ``lz4`` or ``zstd``.
        encoding: Data block encoding: ``none``, ``prefix``, ``diff``, ``fast_diff`` or
            ``row_index_v1``.
        block_size: Data block size; None: the family's ``block_size`` in a load or export,
            else 64 KiB.
        bloom: ``row``, ``rowcol`` or ``none``.
        include_mvcc: Write a memstore timestamp per cell (HBase's default).
        include_tags: Write tags per cell (HBase's default for v3 bulk-load files).
        checksum: ``crc32c`` (HBase's default), ``crc32`` or ``none``.
        bytes_per_checksum: Checksum chunk size.
        index_block_max_size: ``hfile.index.block.max.size``: leaf/intermediate index
            chunk size that triggers another index level.
        index_min_entries: ``hfile.index.block.min.entries``.
        bloom_block_size: ``io.storefile.bloom.block.size``.
        bloom_error_rate: ``io.storefile.bloom.error.rate``.
        comparator: Trailer comparator class name.
        bulkload_timestamp: ``BULKLOAD_TIMESTAMP`` in ms (default: now).
        create_time: ``hfile.CREATE_TIME_TS`` in ms (default: now).
        source_task: ``BULKLOAD_SOURCE_TASK`` value, or None to omit it.
        major_compaction: ``MAJOR_COMPACTION_KEY``.
        exclude_from_minor_compaction: ``EXCLUDE_FROM_MINOR_COMPACTION``.
        file_info: Extra FileInfo entries (custom keys survive a bulk-load split).
        threads: Threads encoding and compressing data blocks (default
            :data:`DEFAULT_WRITE_THREADS`: the machine's cores, at most 2; 1 works in the
            calling thread). The codecs release the GIL, so a compressed file is written
            faster; the file's bytes do not depend on it, and at most ``2 * threads``
            groups of 16 compressed blocks wait to be written. Big batches of cells are
            also laid out in ranges on these threads.

    Raises:
        InvalidArgumentError: a value outside its choices, a size that is not positive,
            or ``threads`` below 1.
    """

    compression: Codec = "none"
    encoding: Encoding = "none"
    block_size: int | None = None
    bloom: BloomType = "row"
    include_mvcc: bool = True
    include_tags: bool = True
    checksum: ChecksumType = "crc32c"
    bytes_per_checksum: int = 16384
    index_block_max_size: int = 128 * 1024
    index_min_entries: int = 16
    bloom_block_size: int = 128 * 1024
    bloom_error_rate: float = 0.01
    comparator: str = KV_COMPARATOR
    bulkload_timestamp: int | None = None
    create_time: int | None = None
    source_task: str | None = "cellstore"
    major_compaction: bool = True
    exclude_from_minor_compaction: bool = False
    file_info: Mapping[bytes, bytes] = field(default_factory=dict)
    threads: int = DEFAULT_WRITE_THREADS

    def __post_init__(self) -> None:
        choices = {
            "compression": (get_args(Codec), CODEC_ORDINALS),
            "encoding": (get_args(Encoding), ENCODING_IDS),
            "bloom": (get_args(BloomType), get_args(BloomType)),
        }
        for name, (shown, allowed) in choices.items():
            value = getattr(self, name)
            if value not in allowed:
                raise InvalidArgumentError(
                    f"HFile {name} {value!r} is not one of {', '.join(shown)}"
                )
        if self.checksum not in CHECKSUM_TYPES:
            raise InvalidArgumentError(f"unknown checksum type {self.checksum!r}")
        if self.block_size is not None and self.block_size <= 0:
            raise InvalidArgumentError(f"HFile block_size must be positive, not {self.block_size}")
        if self.index_block_max_size <= 0 or self.bytes_per_checksum <= 0:
            raise InvalidArgumentError("block sizes must be positive")
        if self.index_min_entries < 2:
            raise InvalidArgumentError("index_min_entries must be at least 2")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise InvalidArgumentError(f"HFile threads must be an int >= 1, not {self.threads!r}")

    @property
    def data_block_size(self) -> int:
        """The block size written: ``block_size``, else :data:`DEFAULT_BLOCK_SIZE`."""
        return self.block_size if self.block_size is not None else DEFAULT_BLOCK_SIZE


class HFileKwargs(TypedDict, total=False):
    """:class:`HFileOptions`' fields as keyword overrides (same names and types)."""

    compression: Codec
    encoding: Encoding
    block_size: int | None
    bloom: BloomType
    include_mvcc: bool
    include_tags: bool
    checksum: ChecksumType
    bytes_per_checksum: int
    index_block_max_size: int
    index_min_entries: int
    bloom_block_size: int
    bloom_error_rate: float
    comparator: str
    bulkload_timestamp: int | None
    create_time: int | None
    source_task: str | None
    major_compaction: bool
    exclude_from_minor_compaction: bool
    file_info: Mapping[bytes, bytes]
    threads: int

"""Reading HBase HFiles (v2 and v3) from any fsspec filesystem, without a JVM.

The functions here open a file with :class:`~cellstore.storefiles.hfile.reader.HFileReader`
and return Arrow tables, typed summaries and reports. Cells come in the scan results'
``cells`` shape: ``row`` (binary), ``family`` (string), ``qualifier`` (binary), ``ts``
(int64, ms), ``type`` (int8, HBase's codes), ``value`` (binary), plus ``seq_id`` (the
memstore timestamp) and ``tags`` (raw tag records) on request.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Unpack

import pyarrow as pa

from cellstore.core.cells import first_unsorted_index
from cellstore.core.results import Checked
from cellstore.errors import CorruptFileError
from cellstore.fs import resolve_filesystem
from cellstore.storefiles.hfile.keys import parse_key, printable_bytes
from cellstore.storefiles.hfile.reader import BlockProblem, HFileReader
from cellstore.storefiles.hfile.readoptions import (
    HFileReadKwargs,
    HFileReadOptions,
    Row,
    read_options,
    row_bytes,
)
from cellstore.storefiles.hfile.trailer import Trailer

__all__ = [
    "HFileInfo",
    "HFileReadKwargs",
    "HFileReadOptions",
    "HFileVerifyReport",
    "Row",
    "hfile_info",
    "hfile_might_contain",
    "iter_hfile_batches",
    "open_hfile",
    "read_hfile",
    "verify_hfile",
]


def open_hfile(
    path_or_url: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    verify_checksums: bool = True,
) -> HFileReader:
    """Open an HFile: its trailer, indexes, FileInfo and Bloom metas (two range reads).

    Args:
        path_or_url: A local path or any fsspec URL.
        storage_options: fsspec options for the URL's filesystem.
        verify_checksums: Check HBase block checksums on every block read.

    Returns:
        The open reader (lower-level than the functions below).

    Raises:
        UnsupportedFormatError: for HFile v1, encrypted files, unsupported codecs.
        CorruptFileError: if the trailer or load-on-open section is damaged.
        FileNotFoundError: if there is no such file.
    """
    fs, path = resolve_filesystem(path_or_url, storage_options=storage_options)
    return HFileReader(fs, path, where=os.fspath(path_or_url), verify_checksums=verify_checksums)


def iter_hfile_batches(
    path_or_url: str | os.PathLike[str],
    options: HFileReadOptions | None = None,
    /,
    *,
    storage_options: Mapping[str, Any] | None = None,
    **overrides: Unpack[HFileReadKwargs],
) -> Iterator[pa.Table]:
    """Yield an HFile's cells in file order, in batches of bounded memory.

    Args:
        path_or_url: A local path or any fsspec URL.
        options: Which cells and how: columns, row range, ``seq_id``/``tags`` columns,
            batch size, damaged blocks (see :class:`HFileReadOptions`; default
            ``HFileReadOptions()``).
        storage_options: fsspec options for the URL's filesystem.
        **overrides: :class:`HFileReadOptions` fields replacing those of ``options``
            (``iter_hfile_batches(path, start_row=b"r1", with_tags=True)``).

    Yields:
        Non-empty Arrow tables.

    Raises:
        CorruptFileError: naming the file, block offset and expected vs actual checksum.
        UnsupportedFormatError: for files this reader cannot read (v1, encrypted...).
        TypeError: an override that is not an :class:`HFileReadOptions` field.
    """
    opts = read_options(options, overrides, caller="iter_hfile_batches")
    reader = open_hfile(path_or_url, storage_options=storage_options)
    yield from reader.iter_batches(**opts.batch_kwargs())


def read_hfile(
    path_or_url: str | os.PathLike[str],
    options: HFileReadOptions | None = None,
    /,
    *,
    storage_options: Mapping[str, Any] | None = None,
    **overrides: Unpack[HFileReadKwargs],
) -> pa.Table:
    """Read an HFile's cells (all, or a row range) into one Arrow table, in file order.

    Args and Raises: as :func:`iter_hfile_batches`
    (``read_hfile(path, HFileReadOptions(columns=["row", "value"]))`` or
    ``read_hfile(path, columns=["row", "value"])``).

    Returns:
        The cells; an empty table of the same schema for an empty file or range.
    """
    opts = read_options(options, overrides)
    reader = open_hfile(path_or_url, storage_options=storage_options)
    return reader.read(**opts.batch_kwargs())


@dataclass(frozen=True)
class HFileInfo:
    """What ``hbase hfile -m`` shows: trailer, FileInfo and index summary of one HFile.

    Attributes:
        path: The file as given.
        size: File size in bytes.
        version: ``"major.minor"`` (``3.3``, ``2.0``).
        compression: Codec name (``NONE``, ``GZ``, ``SNAPPY``, ``LZ4``, ``ZSTD``).
        data_block_encoding: ``NONE``, ``PREFIX``, ``DIFF``, ``FAST_DIFF``, ``ROW_INDEX_V1``.
        comparator: Comparator class name from the trailer.
        entry_count: Cells in the file.
        first_key: First cell key, printable (``row/family:qualifier/ts/Type``), or None.
        last_key: Last cell key (``hfile.LASTKEY``), printable, or None.
        first_row: Row of the first key, or None when empty.
        last_row: Row of the last key, or None when empty.
        data_block_count: Number of data blocks.
        index_levels: Levels of the data index (1 to 3).
        root_index_entries: Entries of the data-index root.
        meta_blocks: Names of the meta blocks.
        bloom_type: ``ROW``, ``ROWCOL``, ``ROWPREFIX_FIXED_LENGTH`` or ``NONE``.
        bloom_hash: ``MURMUR``, ``MURMUR3`` or ``JENKINS`` (None without a Bloom).
        bloom_keys: Keys added to the general Bloom (0 without one).
        delete_family_bloom: Whether a DeleteFamily Bloom is present.
        has_tags: Cells carry tags.
        has_seq_ids: Cells carry memstore timestamps.
        checksum: Block checksum type (``CRC32C``, ``CRC32``, ``NULL``).
        time_range: ``(min_ts, max_ts)`` from ``TIMERANGE``, if present.
        max_seq_id: ``MAX_SEQ_ID_KEY``, if present.
        bulkload_timestamp: ``BULKLOAD_TIMESTAMP``, if present (a bulk-load output).
        file_info: The whole FileInfo map with HBase's keys decoded.
        trailer: The raw trailer.
        problems: What was found damaged and left out at open (a Bloom meta block that
            does not parse: its filter is then unusable, as in HBase); empty when sound.
    """

    path: str
    size: int
    version: str
    compression: str
    data_block_encoding: str
    comparator: str
    entry_count: int
    first_key: str | None
    last_key: str | None
    first_row: bytes | None
    last_row: bytes | None
    data_block_count: int
    index_levels: int
    root_index_entries: int
    meta_blocks: tuple[str, ...]
    bloom_type: str
    bloom_hash: str | None
    bloom_keys: int
    delete_family_bloom: bool
    has_tags: bool
    has_seq_ids: bool
    checksum: str
    time_range: tuple[int, int] | None
    max_seq_id: int | None
    bulkload_timestamp: int | None
    file_info: dict[str, object]
    trailer: Trailer
    problems: tuple[BlockProblem, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (bytes rows as printable text)."""
        from dataclasses import asdict

        out = asdict(self)
        for name in ("first_row", "last_row"):
            value = getattr(self, name)
            out[name] = None if value is None else printable_bytes(value)
        out["time_range"] = list(self.time_range) if self.time_range else None
        out["meta_blocks"] = list(self.meta_blocks)
        return out


def hfile_info(
    path_or_url: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
) -> HFileInfo:
    """Summarize an HFile: version, codec, encoding, keys, index, Bloom, FileInfo.

    Reads the trailer, the load-on-open section and, for multi-level indexes, the
    intermediate and leaf index blocks (to count data blocks); no data block.

    Raises:
        UnsupportedFormatError: for HFile v1, encrypted files.
        CorruptFileError: if a structure read is damaged.
    """
    r = open_hfile(path_or_url, storage_options=storage_options)
    fi = r.decoded_file_info()
    first = r.first_key
    last = r.last_key
    first_kv = parse_key(first, where=r.where) if first else None
    last_kv = parse_key(last, where=r.where) if last else None
    tr = fi.get("TIMERANGE")
    bloom = r.general_bloom

    def opt_int(key: str) -> int | None:
        v = fi.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    return HFileInfo(
        path=os.fspath(path_or_url),
        size=r.size,
        version=r.trailer.version,
        compression=r.trailer.codec,
        data_block_encoding=r.encoding,
        comparator=r.trailer.comparator,
        entry_count=r.trailer.entry_count,
        first_key=str(first_kv) if first_kv else None,
        last_key=str(last_kv) if last_kv else None,
        first_row=first_kv.row if first_kv else None,
        last_row=last_kv.row if last_kv else None,
        data_block_count=len(r.data_blocks()) if not r.is_empty else 0,
        index_levels=r.trailer.num_data_index_levels,
        root_index_entries=len(r.root_index),
        meta_blocks=tuple(e.key.decode("utf-8", "replace") for e in r.meta_index),
        bloom_type=r.bloom_type,
        bloom_hash=bloom.hash_name if bloom else None,
        bloom_keys=bloom.key_count if bloom else 0,
        delete_family_bloom=r.delete_family_bloom is not None,
        has_tags=r.flags.tags,
        has_seq_ids=r.flags.mvcc,
        checksum=r.checksum_name,
        time_range=(int(tr[0]), int(tr[1])) if isinstance(tr, list) else None,
        max_seq_id=opt_int("MAX_SEQ_ID_KEY"),
        bulkload_timestamp=opt_int("BULKLOAD_TIMESTAMP"),
        file_info=fi,
        trailer=r.trailer,
        problems=tuple(r.open_problems),
    )


def hfile_might_contain(
    path_or_url: str | os.PathLike[str],
    row: Row,
    *,
    qualifier: bytes | str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> bool:
    """Whether an HFile may hold ``row`` (and ``qualifier``), by its Bloom filter.

    False means the row is certainly absent. True means present, or a Bloom false
    positive, or no Bloom to ask. The hash (Murmur, Murmur3 or Jenkins) is the one the
    Bloom meta names; a ROWCOL Bloom needs the qualifier to answer.
    """
    r = open_hfile(path_or_url, storage_options=storage_options)
    q = row_bytes(qualifier)
    key = row_bytes(row)
    assert key is not None
    return r.might_contain(key, q)


@dataclass(frozen=True)
class HFileVerifyReport(Checked):
    """What :func:`verify_hfile` checked and found.

    Attributes:
        path: The file as given.
        blocks: Blocks whose checksums were checked.
        cells: Cells decoded.
        problems: Damaged blocks and broken invariants (empty when the file is sound).
    """

    path: str
    blocks: int
    cells: int
    problems: tuple[BlockProblem, ...]


def verify_hfile(
    path_or_url: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
) -> HFileVerifyReport:
    """Check every block checksum, the key order, the cell count and the last key.

    Blocks are walked one after another from offset 0 to the trailer, so index and Bloom
    blocks are checked as well as data blocks. Cells of damaged data blocks are skipped
    and the rest are checked for order (not for hbase:meta files, whose rows sort
    differently).

    When the load-on-open section (data index root, meta index, FileInfo) is damaged, no
    cell can be found, but the blocks are still walked and checked: the report then counts
    no cells and holds a problem (offset -1) saying why the index cannot be read.

    Returns:
        The report; ``report.ok`` is False when anything is damaged.

    Raises:
        UnsupportedFormatError: for files this reader cannot read.
        CorruptFileError: if the trailer is unreadable (no block can be found).
    """
    fs, path = resolve_filesystem(path_or_url, storage_options=storage_options)
    where = os.fspath(path_or_url)
    problems: list[BlockProblem] = []
    try:
        r = HFileReader(fs, path, where=where)
    except CorruptFileError as e:
        # The index or FileInfo is damaged: no cell can be found, but every block can
        # still be walked and checked from the trailer alone.
        r = HFileReader(fs, path, where=where, load_on_open=False)
        blocks = r.verify_blocks(problems)
        problems.append(BlockProblem(-1, f"the file's index cannot be read, no cell was: {e}"))
        return HFileVerifyReport(path=where, blocks=blocks, cells=0, problems=tuple(problems))
    blocks = r.verify_blocks(problems)
    skipped: list[BlockProblem] = []
    cells = 0
    prev: pa.Table | None = None
    last: pa.Table | None = None
    order_cols = ["row", "qualifier", "ts", "type"]
    for batch in r.iter_batches(columns=order_cols, on_corrupt="skip", problems=skipped):
        cells += batch.num_rows
        if not r.trailer.is_meta_comparator:
            probe = batch if prev is None else pa.concat_tables([prev, batch])
            bad = first_unsorted_index(probe, strict=False)
            if bad is not None:
                at = cells - batch.num_rows + bad - (0 if prev is None else 1)
                problems.append(BlockProblem(-1, f"{r.where}: cells out of order at cell {at}"))
        prev = batch.slice(batch.num_rows - 1)
        last = prev
    seen = {p.offset for p in problems}
    problems.extend(p for p in skipped if p.offset not in seen)
    if not skipped and cells != r.trailer.entry_count:
        problems.append(
            BlockProblem(
                -1, f"{r.where}: {cells} cells decoded, trailer says {r.trailer.entry_count}"
            )
        )
    if not skipped and last is not None and r.last_key is not None:
        want = parse_key(r.last_key, where=r.where)
        got = last.to_pylist()[0]
        if (got["row"], got["qualifier"], got["ts"], got["type"]) != (
            want.row,
            want.qualifier,
            want.ts,
            want.type,
        ):
            problems.append(BlockProblem(-1, f"{r.where}: last cell differs from hfile.LASTKEY"))
    return HFileVerifyReport(
        path=os.fspath(path_or_url), blocks=blocks, cells=cells, problems=tuple(problems)
    )

"""An HBase store (one region's HFiles of one family) as a cellstore cell source.

:class:`HFileStore` reads the HFiles of a store as sorted runs with their sequence ids for
the semantics engine (:func:`~cellstore.core.semantics.merge_resolve`), cut into
row-aligned chunks at the HFile block index; open readers are cached per process
(:func:`open_hfile`, keyed by the file's identity so a rewritten file is re-read). Ties between
equal keys follow R3.1-R3.3, as the :mod:`cellstore.hbase.tables` docstring explains.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import equal_key_runs, sort_indices
from cellstore.errors import (
    CorruptFileError,
    InvalidArgumentError,
    MissingFileError,
    UnsupportedFormatError,
)
from cellstore.hbasefiles.layout import HFileRef
from cellstore.storefiles.hfile.index import key_row
from cellstore.storefiles.hfile.keys import parse_key
from cellstore.storefiles.hfile.reader import HFileReader
from cellstore.storefiles.hfile.readoptions import HFileReadOptions

__all__ = [
    "MAX_EXPANSION",
    "HFileStore",
    "cut_at_blocks",
    "open_hfile",
    "plain_keys",
    "scan_read_options",
]

_COLUMNS: Final = ["row", "qualifier", "ts", "type", "value", "seq_id"]
_BULK_SEQ: Final = re.compile(r"_SeqId_([0-9]+)_$")
#: Among equal keys (R3.2, R3.3): highest cell sequence id, then highest file rank, then
#: first in file order.
_TIE_BREAK: Final = (("cseq", "descending"), ("rank", "descending"), ("pos", "ascending"))
#: Decoded HFile bytes per on-disk byte assumed when sizing tasks (as for Parquet files).
MAX_EXPANSION: Final = 8


@dataclass(frozen=True)
class _Run:
    rank_key: tuple[int, int, float, str]
    cells: pa.Table
    cell_seq: np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True)
class HFileStore:
    """The HFiles of one region and family: a :class:`~cellstore.reader.plan.CellSource`.

    Attributes:
        family: Family name.
        files: The store's files (References carry their half).
        read_options: How the files are read: their ``threads`` and ``batch_bytes``
            (the scan decides which cells; see :func:`scan_read_options`).
    """

    family: str
    files: tuple[HFileRef, ...]
    read_options: HFileReadOptions = field(default_factory=HFileReadOptions)

    def read_runs(
        self, fs: fsspec.AbstractFileSystem, start: bytes, stop: bytes, *, point_row: bytes | None
    ) -> tuple[list[pa.Table], list[int]]:
        """The cells of rows ``[start, stop)``, one run per file, with the files' ranks.

        Files whose Bloom filter rules out ``point_row`` are not read (R3.5).

        Raises:
            MissingFileError, CorruptFileError: a file is gone or damaged, or holds cells
                of another family than its store's.
            UnsupportedFormatError: an hbase:meta file, HFile v1 or an encrypted file
                (the trailer carries an encryption key).
        """
        found = [
            self._read_file(fs, ref, start, stop, point_row)
            for ref in self.files
            if ref.clip(start, stop) is not None
        ]
        runs = [r for r in found if r is not None]
        runs.sort(key=lambda r: r.rank_key)  # R3.1: oldest first
        tables = _drop_superseded(runs)
        return tables, list(range(len(tables)))

    def chunk_bounds(
        self, fs: fsspec.AbstractFileSystem, start: bytes, stop: bytes, *, target_cells: int
    ) -> list[tuple[bytes, bytes]]:
        """``[start, stop)`` cut at data-block first rows into ranges of ~``target_cells``.

        The cells of a block are estimated from its on-disk size and its file's cells per
        data byte (trailer). Data blocks of all files are taken in row order; a cut goes
        before the block that would take the running count past ``target_cells``. Cuts
        are rows, so each range holds whole rows (a row spanning blocks is read whole by
        the range it starts in; a block across a cut is decoded by both ranges, each
        keeping its rows).
        """
        blocks: list[tuple[bytes, float]] = []
        for ref in self.files:
            bounds = ref.clip(start, stop)
            if bounds is None:
                continue
            reader = open_hfile(fs, ref)
            t = reader.trailer
            data_bytes = t.load_on_open_offset - max(t.first_data_block_offset, 0)
            per_byte = t.entry_count / data_bytes if data_bytes > 0 else 0.0
            for e in reader.data_blocks(start_row=bounds[0] or None, stop_row=bounds[1] or None):
                blocks.append((key_row(e.key), e.size * per_byte))
        return cut_at_blocks(blocks, start, stop, float(target_cells))

    def _read_file(
        self,
        fs: fsspec.AbstractFileSystem,
        ref: HFileRef,
        start: bytes,
        stop: bytes,
        point_row: bytes | None,
    ) -> _Run | None:
        """One file's cells in ``[start, stop)`` as a run, or None when it has none."""
        bounds = ref.clip(start, stop)
        assert bounds is not None
        reader = open_hfile(fs, ref)
        if reader.trailer.is_meta_comparator:
            raise UnsupportedFormatError(f"{ref.path}: hbase:meta files cannot be scanned")
        self._check_family(reader, ref)
        if point_row is not None and not reader.might_contain(point_row):
            return None
        info = reader.decoded_file_info()
        seq, bulk_time = _file_seq(ref, info)
        bulk_seq = bulk_time is not None and not info.get("SKIP_RESET_SEQ_ID")  # R14.5
        # Cell sequence ids are only read when they can differ within the file.
        same_seq = bulk_seq or not reader.flags.mvcc or reader.flags.mvcc_one_byte
        lo, hi = _needed_bounds(reader, *bounds)
        cells = reader.read(
            blocks=reader.data_blocks(start_row=lo or None, stop_row=hi or None),
            columns=_COLUMNS if not same_seq else _COLUMNS[:-1],
            with_seq_id=not same_seq,
            dictionary=True,
            threads=self.read_options.threads,
            batch_bytes=self.read_options.batch_bytes,
        )
        cells = _trim_rows(cells, lo, hi)
        if bulk_seq:
            cell_seq = np.full(cells.num_rows, seq, np.int64)
        elif same_seq:
            cell_seq = np.zeros(cells.num_rows, np.int64)
        else:
            cell_seq = cells.column("seq_id").to_numpy().astype(np.int64)
            cells = cells.drop_columns(["seq_id"])
        rank_key = (seq, -ref.size, float("inf") if bulk_time is None else bulk_time, ref.name)
        return _Run(rank_key, cells, cell_seq) if cells.num_rows else None

    def _check_family(self, reader: HFileReader, ref: HFileRef) -> None:
        """Refuse a file whose first or last cell is of another family than its store."""
        want = self.family.encode("utf-8")
        for key in (reader.first_key, reader.last_key):
            if key is None:
                continue
            got = parse_key(key, where=ref.path).family
            if got and got != want:
                raise CorruptFileError(
                    f"{ref.path} ({ref.name}): a store file of family {self.family!r} holds "
                    f"cells of family {got.decode('utf-8', 'replace')!r}"
                )


#: The :class:`HFileReadOptions` fields a scan of an HBase table takes from its caller (the
#: scan itself decides the rows, columns and extras, and a damaged block always raises).
_SCAN_READ_FIELDS: Final = ("threads", "batch_bytes")


def scan_read_options(options: HFileReadOptions | None) -> HFileReadOptions:
    """``options`` checked for a scan of HBase stores (default ``HFileReadOptions()``).

    Raises:
        InvalidArgumentError: ``options`` sets a field other than ``threads`` or
            ``batch_bytes`` (rows, columns, extras and ``on_corrupt`` are the scan's).
    """
    if options is None:
        return HFileReadOptions()
    if not isinstance(options, HFileReadOptions):
        raise InvalidArgumentError(
            f"read_options must be an HFileReadOptions, not {type(options).__name__}"
        )
    default = HFileReadOptions(threads=options.threads, batch_bytes=options.batch_bytes)
    if options != default:
        raise InvalidArgumentError(
            "an HBase table's read_options may set only threads and batch_bytes "
            "(the scan decides rows, columns and extras; damaged blocks raise)"
        )
    return options


#: Opened HFiles kept per process (trailer, indexes, FileInfo and Bloom meta parsed once).
_READER_CACHE_SIZE: Final = 256
_readers: OrderedDict[tuple[object, str, str], HFileReader] = OrderedDict()
_readers_lock = threading.Lock()


def open_hfile(fs: fsspec.AbstractFileSystem, ref: HFileRef) -> HFileReader:
    """Open a store file; a missing one is a :class:`MissingFileError` naming it.

    An HFile never changes once written, so a reader (its parsed trailer, indexes, FileInfo
    and Bloom meta; it holds no open handle) is reused by every chunk, task and scan of the
    process while the file's identity (``fs.ukey``: size and modification time, or the
    object store's ETag) is unchanged. A file rewritten in place gets a new key, hence a
    fresh reader. At most :data:`_READER_CACHE_SIZE` readers are kept (least recently used
    dropped first).
    """
    try:
        key = (getattr(fs, "_fs_token", None) or id(fs), ref.path, str(fs.ukey(ref.path)))
        with _readers_lock:
            reader = _readers.get(key)
            if reader is not None:
                _readers.move_to_end(key)
                return reader
        reader = HFileReader(fs, ref.path, where=ref.path)
    except FileNotFoundError as e:
        raise MissingFileError(f"HFile {ref.path} ({ref.name}) is gone: {e}") from e
    with _readers_lock:
        _readers[key] = reader
        while len(_readers) > _READER_CACHE_SIZE:
            _readers.popitem(last=False)
    return reader


def cut_at_blocks(
    blocks: list[tuple[bytes, float]], start: bytes, stop: bytes, target: float
) -> list[tuple[bytes, bytes]]:
    """``[start, stop)`` cut at block first rows into ranges of about ``target`` weight.

    ``blocks`` are (first row, weight) of every file's blocks; a cut goes before the block
    that would take the running weight past ``target``, never at or before the previous
    cut nor at or past ``stop``.
    """
    cuts: list[bytes] = []
    acc = 0.0
    for row, weight in sorted(blocks):
        after = row > (cuts[-1] if cuts else start)
        if acc and acc + weight > target and after and (not stop or row < stop):
            cuts.append(row)
            acc = 0.0
        acc += weight
    return list(itertools.pairwise([start, *cuts, stop]))


def _trim_rows(cells: pa.Table, lo: bytes, hi: bytes) -> pa.Table:
    """The cells of rows ``[lo, hi)`` (empty: unbounded) of a file's cells, a zero-copy slice.

    A file's cells are sorted by row, so the rows below ``lo`` are a prefix and those
    from ``hi`` on a suffix; counting them is cheaper than filtering (which copies).
    """
    if not cells.num_rows or not (lo or hi):
        return cells
    first = _cells_below(cells.column("row"), lo) if lo else 0
    end = _cells_below(cells.column("row"), hi) if hi else cells.num_rows
    return cells.slice(first, max(end - first, 0))


def plain_keys(cells: pa.Table) -> pa.Table:
    """``cells`` with dictionary ``row``/``qualifier`` columns decoded to plain binary."""
    for name in ("row", "qualifier"):
        if name in cells.column_names and pa.types.is_dictionary(cells.schema.field(name).type):
            i = cells.schema.get_field_index(name)
            field = cells.schema.field(i)
            cells = cells.set_column(
                i, field.with_type(pa.binary()), cells.column(i).cast(pa.binary())
            )
    return cells


def _cells_below(rows: pa.ChunkedArray, bound: bytes) -> int:
    """How many of a file's sorted ``rows`` (plain or dictionary chunks) are below ``bound``."""
    scalar = pa.scalar(bound, pa.binary())
    count = 0
    for chunk in rows.chunks:
        if pa.types.is_dictionary(chunk.type):
            # The dictionary is the chunk's distinct rows in order: count those below,
            # then the cells whose index points at one of them.
            distinct = pc.sum(pc.less(chunk.dictionary, scalar)).as_py() or 0
            indices = chunk.indices.to_numpy(zero_copy_only=False)
            count += int(np.searchsorted(indices, distinct, side="left"))
        else:
            count += pc.sum(pc.less(chunk, scalar)).as_py() or 0
    return count


def _needed_bounds(reader: HFileReader, lo: bytes, hi: bytes) -> tuple[bytes, bytes]:
    """``[lo, hi)``, or no bounds where the file's rows all lie inside them (no filtering)."""
    first, last = reader.first_key, reader.last_key
    if first is not None and lo and key_row(first) >= lo:
        lo = b""
    if last is not None and hi and key_row(last) < hi:
        hi = b""
    return lo, hi


def _file_seq(ref: HFileRef, info: Mapping[str, object]) -> tuple[int, int | None]:
    """A file's sequence id (R3.1, R14.5) and its bulk-load time (None if not bulk-loaded).

    ``_SeqId_N_`` in the name wins, then ``MAX_SEQ_ID_KEY``, else -1; the top half of a
    Reference counts one more (``HStoreFile#open``).
    """
    bulk = info.get("BULKLOAD_TIMESTAMP")
    bulk_time = bulk if isinstance(bulk, int) else None
    target = ref.name.rsplit(".", 1)[0] if ref.top is not None else ref.name
    m = _BULK_SEQ.search(target)
    max_seq = info.get("MAX_SEQ_ID_KEY")
    if m:
        seq = int(m.group(1))
    elif isinstance(max_seq, int):
        seq = max_seq
    else:
        seq = -1
    if ref.top:
        seq += 1
    return seq, bulk_time


def _drop_superseded(runs: Sequence[_Run]) -> list[pa.Table]:
    """The runs (oldest first) with every equal-key loser of R3.2 removed.

    Without disagreement (each file's cell sequence ids at most the next file's), the
    rank order already decides ties and nothing is dropped: ``merge_runs`` orders equal
    keys by rank. Otherwise each equal key keeps its cell of the highest cell sequence id,
    then highest rank, then first in file order (R3.2, R3.3).
    """
    tables = [r.cells for r in runs]
    ranges = [(int(r.cell_seq.min()), int(r.cell_seq.max())) for r in runs]
    if all(a[1] <= b[0] for a, b in itertools.pairwise(ranges)):
        return tables
    tables = [plain_keys(t) for t in tables]
    keys = pa.concat_tables([t.select(["row", "qualifier", "ts", "type"]) for t in tables])
    keys = keys.append_column("cseq", pa.array(np.concatenate([r.cell_seq for r in runs])))
    rank = np.repeat(np.arange(len(runs), dtype=np.int64), [t.num_rows for t in tables])
    keys = keys.append_column("rank", pa.array(rank))
    keys = keys.append_column("pos", pa.array(np.arange(keys.num_rows, dtype=np.int64)))
    order = sort_indices(keys, ties=_TIE_BREAK)
    first = ~equal_key_runs(keys.take(order))
    keep = np.zeros(keys.num_rows, dtype=bool)
    keep[order.to_numpy()[first]] = True
    out, offset = [], 0
    for t in tables:
        mask = keep[offset : offset + t.num_rows]
        offset += t.num_rows
        out.append(t if mask.all() else t.filter(pa.array(mask)))
    return out

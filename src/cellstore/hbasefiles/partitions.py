"""Many HFiles as one lazy Dask DataFrame: a partition per file or per range of its index.

Planning opens each file (trailer, load-on-open, index) on the client, cuts big files
at data-index keys into row ranges of about ``partition_bytes`` on disk, and hands
picklable :class:`HFilePartition` tasks to ``dd.from_map`` with ``meta`` built from the
schema. Divisions (row keys) are known when the files' row ranges do not overlap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Unpack

import pyarrow as pa

from cellstore.hbasefiles.hfiles import open_hfile
from cellstore.storefiles.hfile.cells import cells_schema
from cellstore.storefiles.hfile.index import key_row
from cellstore.storefiles.hfile.keys import parse_key
from cellstore.storefiles.hfile.readoptions import (
    HFileReadKwargs,
    HFileReadOptions,
    Row,
    read_options,
    row_bytes,
)

__all__ = ["DEFAULT_PARTITION_BYTES", "HFilePartition", "HFilePartitionReader", "read_hfiles"]

#: On-disk bytes of data blocks per partition before a file is cut into several.
DEFAULT_PARTITION_BYTES: Final = 128 << 20


@dataclass(frozen=True)
class HFilePartition:
    """One partition: a file and the row range of it to read.

    Attributes:
        path: The file's path or URL.
        start_row: First row (inclusive), None for the file's start.
        stop_row: Row to stop before, None for the file's end.
    """

    path: str
    start_row: bytes | None
    stop_row: bytes | None


@dataclass(frozen=True)
class HFilePartitionReader:
    """The picklable callable ``dd.from_map`` runs per :class:`HFilePartition`.

    Attributes:
        storage_options: fsspec options for the files' filesystem.
        options: The read options (each partition's row range replaces their own).
    """

    storage_options: Mapping[str, Any] = field(default_factory=dict)
    options: HFileReadOptions = field(default_factory=HFileReadOptions)

    @property
    def columns(self) -> tuple[str, ...] | None:
        """The requested columns (None: all)."""
        columns = self.options.columns
        return tuple(columns) if columns is not None else None

    def schema(self) -> pa.Schema:
        """The Arrow schema of every partition."""
        return cells_schema(
            columns=list(self.columns) if self.columns is not None else None,
            with_seq_id=self.options.with_seq_id,
            with_tags=self.options.with_tags,
        )

    def empty(self) -> Any:
        """An empty pandas frame of the partitions' shape (Dask's ``meta``)."""
        keep = self.columns is None or "row" in self.columns
        table = cells_schema(
            columns=self._build_columns(),
            with_seq_id=self.options.with_seq_id,
            with_tags=self.options.with_tags,
        ).empty_table()
        return _to_frame(table, keep_row=keep)

    def __call__(self, part: HFilePartition) -> Any:
        """Read one partition as a pandas DataFrame indexed by row."""
        reader = open_hfile(part.path, storage_options=self.storage_options)
        kwargs = self.options.batch_kwargs()
        kwargs.update(
            start_row=part.start_row, stop_row=part.stop_row, columns=self._build_columns()
        )
        table = reader.read(**kwargs)
        return _to_frame(table, keep_row=self.columns is None or "row" in self.columns)

    def _build_columns(self) -> list[str] | None:
        if self.columns is None:
            return None
        return self.columns_with_row()

    def columns_with_row(self) -> list[str]:
        """The columns read: the requested ones plus ``row`` (the index)."""
        cols = list(self.columns or ())
        return cols if "row" in cols else ["row", *cols]


def _to_frame(table: pa.Table, *, keep_row: bool = True) -> Any:
    import pandas as pd

    df = table.to_pandas(types_mapper=lambda t: pd.ArrowDtype(t) if pa.types.is_binary(t) else None)
    df.index = pd.Index(df["row"].array, name=None) if "row" in df else df.index
    if not keep_row and "row" in df:
        df = df.drop(columns=["row"])
    return df


def plan_hfile_partitions(
    paths: Sequence[str | os.PathLike[str]],
    *,
    storage_options: Mapping[str, Any] | None = None,
    start_row: Row | None = None,
    stop_row: Row | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
) -> tuple[list[HFilePartition], tuple[bytes, ...] | None]:
    """Cut files into partitions and compute divisions (None when unknown).

    Returns:
        The partitions in row order when divisions are known (else in the given order),
        and the divisions.
    """
    lo, hi = row_bytes(start_row), row_bytes(stop_row)
    per_file: list[tuple[bytes, bytes, list[HFilePartition]]] = []
    for p in paths:
        r = open_hfile(p, storage_options=storage_options)
        if r.is_empty or r.first_key is None or r.last_key is None:
            continue
        first = parse_key(r.first_key, where=r.where).row
        last = parse_key(r.last_key, where=r.where).row
        if (hi and first >= hi) or (lo and last < lo):
            continue
        blocks = r.data_blocks(start_row=lo, stop_row=hi)
        cuts: list[bytes] = []
        size = 0
        for e in blocks:
            row = key_row(e.key)
            if size >= partition_bytes and (not cuts or row > cuts[-1]) and (not lo or row > lo):
                cuts.append(row)
                size = 0
            size += e.size
        bounds: list[bytes | None] = [lo, *cuts, hi]
        parts = [
            HFilePartition(os.fspath(p), bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)
        ]
        low = max(first, lo) if lo else first
        high = min(last, hi) if hi else last
        per_file.append((low, high, parts))
    per_file.sort(key=lambda f: f[0])
    disjoint = all(per_file[i][1] < per_file[i + 1][0] for i in range(len(per_file) - 1))
    partitions = [part for _, _, parts in per_file for part in parts]
    if not disjoint or not partitions:
        return partitions, None
    divisions: list[bytes] = []
    for low, _high, parts in per_file:
        divisions.append(low)
        divisions.extend(part.start_row for part in parts[1:] if part.start_row is not None)
    divisions.append(per_file[-1][1])
    return partitions, tuple(divisions)


def read_hfiles(
    paths: Sequence[str | os.PathLike[str]],
    options: HFileReadOptions | None = None,
    /,
    *,
    storage_options: Mapping[str, Any] | None = None,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    **overrides: Unpack[HFileReadKwargs],
) -> Any:
    """Many HFiles as one lazy ``dask.dataframe``, indexed by row.

    Each file is one partition, or several when it holds more than ``partition_bytes``
    of data blocks (cut at data-index keys, so a row never spans partitions). Divisions
    are known when the files' row ranges do not overlap (e.g. one region's worth each, or
    a single file). Binary columns are Arrow-backed bytes (``pd.ArrowDtype``).

    Args:
        paths: HFile paths or URLs.
        options: Which cells and how, as for :func:`~cellstore.hbase.read_hfile` (see
            :class:`~cellstore.hbase.HFileReadOptions`; default ``HFileReadOptions()``):
            the row range applies to the whole frame, the rest to every partition.
        storage_options: fsspec options for the URLs' filesystem.
        partition_bytes: Target on-disk bytes per partition.
        **overrides: :class:`~cellstore.hbase.HFileReadOptions` fields replacing those of
            ``options`` (``read_hfiles(paths, columns=["value"], start_row=b"r1")``).

    Returns:
        A ``dask.dataframe.DataFrame``.

    Raises:
        UnsupportedFormatError: for files this reader cannot read.
        CorruptFileError: if a file's structure is damaged (data blocks are read lazily).
        TypeError: an override that is not an :class:`~cellstore.hbase.HFileReadOptions`
            field.
    """
    import dask.dataframe as dd

    from cellstore.frames import from_tasks

    opts = read_options(options, overrides, caller="read_hfiles")
    reader = HFilePartitionReader(storage_options=dict(storage_options or {}), options=opts)
    parts, divisions = plan_hfile_partitions(
        paths,
        storage_options=storage_options,
        start_row=opts.start,
        stop_row=opts.stop,
        partition_bytes=partition_bytes,
    )
    meta = reader.empty()
    if not parts:
        return dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
    return from_tasks(reader, parts, meta=meta, divisions=divisions, label="cellstore-hfile")

"""A table's regions as the catalog lists them (``hbase:meta``; ``.META.`` in 0.94).

The catalog has a row ``<table>,<startKey>,<regionId>.<encoded>.`` per region, whose
``info`` family holds ``regioninfo`` (``PBUF`` + a ``RegionInfo``; a Writable
``HRegionInfo`` in 0.94), ``state`` (the region's ``RegionState.State`` name, 2.x+) and,
on a split parent, ``splitA``/``splitB``. Its HFiles are
read with HBase's semantics (latest version of each column, deletes applied) by the same
engine as every scan; only what was flushed to them is seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import sort_indices
from cellstore.core.family import Family
from cellstore.core.keys import to_string_binary
from cellstore.core.semantics import ReadSpec, merge_resolve
from cellstore.errors import CorruptFileError, MissingFileError
from cellstore.hbasefiles.descriptors import HBaseRegionInfo, parse_meta_region_info
from cellstore.storefiles.hfile.reader import HFileReader

__all__ = ["GONE_STATES", "MetaRegion", "read_meta_regions"]

#: Region states whose region no longer (or not yet) serves its rows: split and merged
#: parents, and daughters of a split or merge still in progress (``RegionState.State``).
GONE_STATES: Final = frozenset({"SPLIT", "MERGED", "SPLITTING_NEW", "MERGING_NEW"})
_QUALIFIERS: Final = (b"regioninfo", b"state", b"splitA", b"splitB")
_COLUMNS: Final = ["row", "qualifier", "ts", "type", "value"]
_PUT: Final = 4


@dataclass(frozen=True)
class MetaRegion:
    """One region row of ``hbase:meta``.

    Attributes:
        info: The region (``info:regioninfo``).
        state: ``info:state`` (``OPEN``, ``CLOSED``, ``SPLIT``...), or None if absent.
        has_daughters: ``info:splitA`` or ``info:splitB`` is set (a split parent).
    """

    info: HBaseRegionInfo
    state: str | None
    has_daughters: bool

    @property
    def online(self) -> bool:
        """Whether the region holds its rows: no split parent, no gone state, no replica."""
        return (
            not self.info.is_split_parent
            and not (self.info.split and self.has_daughters)
            and (self.state or "").upper() not in GONE_STATES
            and self.info.replica_id == 0
        )


def read_meta_regions(
    fs: fsspec.AbstractFileSystem, files: Sequence[str], table: str, *, now_ms: int
) -> list[MetaRegion]:
    """The regions of ``table`` in the ``info`` family's HFiles of ``hbase:meta``.

    Args:
        fs: The filesystem.
        files: Paths of the HFiles of ``hbase:meta``'s ``info`` stores.
        table: ``ns:table`` (``table`` for the default namespace), as meta rows start.
        now_ms: "Now" for the read.

    Returns:
        Every region row of the table (online or not), in row order.

    Raises:
        MissingFileError: a file is gone.
        CorruptFileError: a file or a ``regioninfo`` cell does not parse (the message
            names the file and the meta row).
    """
    prefix = table.encode("utf-8") + b","
    runs: list[pa.Table] = []
    seqs: list[int] = []
    run_paths: list[str] = []
    for path in files:
        try:
            reader = HFileReader(fs, path, where=path)
        except FileNotFoundError as e:
            raise MissingFileError(f"hbase:meta file {path} is gone: {e}") from e
        cells = reader.read(columns=_COLUMNS).select(_COLUMNS)
        rows = cells.column("row")
        head = pc.binary_slice(rows, 0, len(prefix))
        wanted = pc.and_(
            pc.equal(head, pa.scalar(prefix, pa.binary())),
            pc.or_(  # the columns read, and every delete marker (a DeleteFamily has none)
                pc.is_in(cells.column("qualifier"), pa.array(_QUALIFIERS, pa.binary())),
                pc.not_equal(cells.column("type"), pa.scalar(_PUT, pa.int8())),
            ),
        )
        cells = cells.filter(wanted)
        if not cells.num_rows:
            continue
        # Meta rows sort by table, start key and id (MetaCellComparator), not as raw
        # bytes: put each file into the byte order the engine merges in.
        runs.append(cells.take(sort_indices(cells)))
        run_paths.append(path)
        max_seq = reader.decoded_file_info().get("MAX_SEQ_ID_KEY")
        seqs.append(max_seq if isinstance(max_seq, int) else -1)
    if not runs:
        return []
    by_rank = np.argsort(np.array(seqs, dtype=np.int64), kind="stable")
    latest = merge_resolve(
        [runs[i] for i in by_rank],
        list(range(len(runs))),
        family=Family(name="info", max_versions=1),
        spec=ReadSpec(now_ms=now_ms),
    )
    out: list[MetaRegion] = []
    rows = latest.column("row").to_pylist()
    quals = latest.column("qualifier").to_pylist()
    values = latest.column("value").to_pylist()
    current: dict[bytes, bytes] = {}
    for i, row in enumerate(rows):  # one pass over a few cells per region
        current[quals[i]] = values[i]
        if i + 1 == len(rows) or rows[i + 1] != row:
            info = current.get(b"regioninfo")
            if info is not None:
                state = current.get(b"state")
                out.append(
                    MetaRegion(
                        _region_info(info, row, runs, run_paths),
                        None if state is None else state.decode("utf-8", "replace"),
                        b"splitA" in current or b"splitB" in current,
                    )
                )
            current = {}
    return out


def _region_info(
    value: bytes, row: bytes, runs: Sequence[pa.Table], paths: Sequence[str]
) -> HBaseRegionInfo:
    """Decode one ``info:regioninfo``; a failure names the meta row and its file(s)."""
    where = f"hbase:meta row {to_string_binary(row)!r}"
    try:
        return parse_meta_region_info(value, where=where)
    except CorruptFileError as e:
        # Only on failure: which of the catalog's files holds this cell.
        holders = [
            path
            for run, path in zip(runs, paths, strict=True)
            if pc.any(
                pc.and_(
                    pc.and_(
                        pc.equal(run.column("row"), pa.scalar(row, pa.binary())),
                        pc.equal(run.column("qualifier"), pa.scalar(b"regioninfo", pa.binary())),
                    ),
                    pc.equal(run.column("value"), pa.scalar(value, pa.binary())),
                )
            ).as_py()
        ]
        raise CorruptFileError(
            f"{', '.join(holders) or 'hbase:meta'}: {where}: info:regioninfo does not parse "
            f"({str(e).removeprefix(where + ': ')})"
        ) from e

"""Local indexes: index rows kept in the data table's own regions (Phoenix's local index).

A local index's rows live in the data table, in the hidden family
:data:`~cellstore.jobs.index.definition.LOCAL_FAMILY`, under the row key (docs/format.md,
section 12.5)::

    enc(region start key) | enc(index name) | enc(part 1) | ... | data row key

where ``enc`` is the index part encoding of section 12.2 (``bytes`` for the start key,
``string`` for the name), so an index row sorts right after its region's start key and
lands in the region of its data row. A lookup fans out: one prefix scan per region
(``enc(start) | enc(name) | enc(value)``). Splits and merges change region start keys, so
:func:`rebuild_local` rewrites the local index rows of the regions they create (the
region jobs call it), as Phoenix rewrites local index stores on split. Every local index
of a table shares the family, so rebuilding rebuilds them all, region by region.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import Commit, FileChange, commit
from cellstore.core.keys import RowRange
from cellstore.core.metadata import TableMetadata
from cellstore.core.regions import region_index
from cellstore.fs import ensure_exclusive_create
from cellstore.jobs.common import new_job_id
from cellstore.jobs.index.definition import (
    LOCAL_FAMILY,
    IndexDefinition,
    definitions_of,
)
from cellstore.jobs.index.keys import IndexType, decode_keys, encode_part
from cellstore.jobs.index.rows import RowStats, cells_of, in_watched_columns, index_rows
from cellstore.loader.direct import WrittenFile, normalize_cells, now_ms, write_cells
from cellstore.reader import RESULT_SCHEMA, Scan
from cellstore.reader.tables import scan_table

if TYPE_CHECKING:
    from cellstore.handle import TableHandle

__all__ = [
    "LocalRebuildReport",
    "after_regions_change",
    "local_indexes",
    "localize",
    "rebuild_local",
    "region_prefix",
    "local_name_mask",
    "local_ranges",
    "local_types",
]

#: The types of a local key's leading parts: region start key, index name.
LOCAL_HEAD: Final = (IndexType.BYTES, IndexType.STRING)


@dataclass(frozen=True)
class LocalRebuildReport:
    """What :func:`rebuild_local` did.

    Attributes:
        table: The data table.
        indexes: The local indexes rebuilt.
        regions: The region ids rebuilt.
        version: The data table version committed (None when nothing was).
        index_rows: Index rows written.
        files: Store files written.
        removed_files: Local index store files replaced.
        seconds: Wall-clock time.
    """

    table: str
    indexes: tuple[str, ...]
    regions: tuple[str, ...]
    version: int | None
    index_rows: int
    files: int
    removed_files: int
    seconds: float


def local_indexes(meta: TableMetadata) -> list[IndexDefinition]:
    """The local indexes defined on a table version (its own, not a clone's source's)."""
    return [d for _, d in sorted(definitions_of(meta).items()) if d.local and d.table == meta.name]


def region_prefix(start: bytes, name: str) -> bytes:
    """``enc(start) | enc(name)``: the key prefix of one local index in one region."""
    head = encode_part(IndexType.BYTES, pa.array([start], pa.binary()))[0].as_py()
    return bytes(head) + bytes(encode_part(IndexType.STRING, pa.array([name]))[0].as_py())


def localize(rows: pa.Table, definition: IndexDefinition, meta: TableMetadata) -> pa.Table:
    """Index rows (global layout) with each key prefixed by its data row's region prefix."""
    if rows.num_rows == 0:
        return rows
    which = region_index(rows.column("row"), meta.split_keys)
    prefixes = pa.array(
        [region_prefix(r.start, definition.name) for r in meta.regions], pa.binary()
    )
    heads = prefixes.take(pa.array(which.astype(np.int64)))
    keys = pc.binary_join_element_wise(heads, rows.column("key").combine_chunks(), b"")
    return rows.set_column(0, "key", keys)


def local_name_mask(keys: pa.Array | pa.ChunkedArray, definition: IndexDefinition) -> pa.Array:
    """The keys of the local index family that belong to ``definition`` (by name)."""
    decoded = decode_keys(LOCAL_HEAD, keys)
    mask: pa.Array = pc.and_(
        pc.fill_null(pc.equal(decoded.parts[1], definition.name), False), pa.array(decoded.ok)
    )
    return mask


def local_types(types: Sequence[IndexType]) -> tuple[IndexType, ...]:
    """The part types a local key decodes with: region start, name, then the index's."""
    return (*LOCAL_HEAD, *types)


def local_ranges(
    meta: TableMetadata, definition: IndexDefinition, where: RowRange
) -> list[RowRange]:
    """``where`` (a range of global-layout index keys) in every region of ``meta``."""
    out = []
    for region in meta.regions:
        prefix = region_prefix(region.start, definition.name)
        whole = RowRange.of_prefix(prefix)
        start = prefix + where.start
        stop = prefix + where.stop if where.stop else whole.stop
        out.append(RowRange(start, stop))
    return out


def _data_scan(
    table: TableHandle, definitions: Sequence[IndexDefinition], start: bytes, stop: bytes | None
) -> Scan:
    families = [f for f in table.metadata.family_names if f != LOCAL_FAMILY]
    if any(d.whole_row for d in definitions):
        return scan_table(table, start_row=start, stop_row=stop, families=families)
    columns = list(dict.fromkeys(c for d in definitions for c in d.watched_columns))
    return scan_table(table, start_row=start, stop_row=stop, columns=columns)


def _own(cells: pa.Table, definition: IndexDefinition) -> pa.Table:
    """The cells of ``definition``'s watched columns (every cell for a key-only index)."""
    if definition.whole_row:
        return cells
    return cells.filter(in_watched_columns(cells, definition))


def after_regions_change(table: TableHandle, regions: Sequence[str]) -> LocalRebuildReport | None:
    """Rebuild the local index rows of the regions a split or merge created.

    Their start keys -- the rows' prefixes -- changed. Nothing happens on a table without
    local indexes.
    """
    latest = table.latest()
    if not regions or not local_indexes(latest.metadata):
        return None
    return rebuild_local(latest, regions=regions)


def rebuild_local(
    table: TableHandle, *, regions: Iterable[str] | None = None
) -> LocalRebuildReport:
    """Rebuild every local index of ``table`` in some regions (default: all), one commit.

    The local index store files of those regions are replaced by files holding the index
    rows of their data, keyed by the regions' current start keys. Run after a split or
    merge (the region jobs do) and by a full :func:`build_index` of a local index.

    Raises:
        JobConflictError: the local index files changed meanwhile; nothing was committed.
    """
    started = time.perf_counter()
    table = table.latest()
    meta = table.metadata
    definitions = local_indexes(meta)
    wanted = {r.id for r in meta.regions} if regions is None else set(regions)
    chosen = [r for r in meta.regions if r.id in wanted]
    name = meta.name
    if not definitions or LOCAL_FAMILY not in meta.family_names or not chosen:
        return LocalRebuildReport(name, (), tuple(r.id for r in chosen), None, 0, 0, 0, 0.0)
    spec = meta.row_key
    job_id = new_job_id("index-local")
    pieces: list[pa.Table] = []
    stats = RowStats()
    for region in chosen:
        scan = _data_scan(table, definitions, region.start, region.end or None)
        for batch in scan.to_batches():
            for d in definitions:
                rows, s = index_rows(_own(batch, d), d, d.part_types(spec), spec)
                stats += s
                pieces.append(cells_of(localize(rows, d, meta), d))
    cells = pa.concat_tables(pieces) if pieces else RESULT_SCHEMA.empty_table()
    written: list[WrittenFile] = []
    if cells.num_rows:
        normalized = normalize_cells(
            cells.select(["row", "family", "qualifier", "ts", "type", "value"]),
            metadata=meta,
            now=now_ms(),
        )
        written, _ = write_cells(
            table.fs, table.path, meta, normalized, load_id=job_id, seq=meta.next_seq
        )
    remove = [f for f in meta.files_in(wanted) if f.family == LOCAL_FAMILY]
    if not written and not remove:
        return LocalRebuildReport(
            name,
            tuple(d.name for d in definitions),
            tuple(r.id for r in chosen),
            None,
            0,
            0,
            0,
            time.perf_counter() - started,
        )
    ensure_exclusive_create(table.fs, table.root)
    result = commit(
        table.log,
        Commit(
            operation="index-local-rebuild",
            changes=[FileChange(remove=remove, add=written)],
            load_id=job_id,
            new_seq=True,
            base=meta,
            summary={"index-rows": stats.indexed, "regions": len(chosen)},
        ),
    )
    return LocalRebuildReport(
        table=name,
        indexes=tuple(d.name for d in definitions),
        regions=tuple(r.id for r in chosen),
        version=result.metadata.version,
        index_rows=stats.indexed,
        files=len(written),
        removed_files=len(remove),
        seconds=time.perf_counter() - started,
    )

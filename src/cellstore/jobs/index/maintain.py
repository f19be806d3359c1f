"""Index maintenance on every load: the index rows for a set of new store files.

Every load commits through :func:`cellstore.loader.commit_load`; just before the data
commit it runs the load hooks it was given (:mod:`cellstore.handle.hooks`). The facade
registers :func:`maintain_indexes` there for every warehouse table
(``cellstore.warehouse.LOAD_HOOKS``); it calls :func:`maintain_for_load`, which, for every
maintained index of the table (docs/format.md, section 12.4):

1. stages the data table as it will be after the load: the newest version plus the new
   files, at the sequence number the commit will give them;
2. finds the touched rows: rows with a watched cell (or a delete marker that can hide one)
   in the new files;
3. computes the index rows of the touched rows before the load (the committed version)
   and after it (the staged one), and reads what the index holds under both sets of keys;
4. writes, in one commit of the index table: a ``DeleteFamily`` on every index row whose
   key the rows no longer have, at that row's newest timestamp (so it hides exactly the
   cells written for the old value, Phoenix's delete at the data timestamp), and the cells
   of every index row that is new or whose covered values changed, at the data
   timestamp (bumped above any cell the index row key already has, so no older delete
   marker hides it), with ``DeleteColumn`` markers for covered columns the row lost.

The index commit comes first and the data commit second. A reader in between sees index
rows for data not yet visible; :meth:`Index.lookup` checks every candidate row against the
data table (Phoenix's verified read), so it drops them. A reader after both sees an
index that agrees with the data, so lookups are exact. If the data commit then fails, the
index keeps rows no data calls for: lookups still drop them, ``verify`` reports them as
stale and a full build removes them.

Loads that run concurrently with this one into the same rows can leave the index behind
the data for those rows (each load staged the version it saw); ``verify`` reports it and
an incremental or full build repairs it. Lookups stay correct (never a wrong row), but can
miss such a row until then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import Commit, FileChange, commit, file_entry
from cellstore.core.metadata import UNASSIGNED_SEQ, TableMetadata
from cellstore.core.names import TableName
from cellstore.fs import ensure_exclusive_create
from cellstore.handle import Catalog, PendingLoad, TableHandle
from cellstore.jobs.common import new_job_id
from cellstore.jobs.index.build import _changed_cells, _hide_gone, _touched_rows, _Writer
from cellstore.jobs.index.catalog import open_index_table
from cellstore.jobs.index.definition import IndexDefinition, definitions_of
from cellstore.jobs.index.local import local_types, localize
from cellstore.jobs.index.lookup import _column_mask
from cellstore.jobs.index.rows import index_rows, read_rows, stored_rows
from cellstore.storefiles.layout import TABLE_DEPTH
from cellstore.storefiles.writer import WrittenFile

if TYPE_CHECKING:
    import fsspec

    from cellstore.manifest import TableLog

__all__ = ["IndexMaintenance", "maintain_for_load", "maintain_indexes", "maintained_indexes"]


@dataclass(frozen=True)
class IndexMaintenance:
    """What maintenance wrote into one index for one load.

    Attributes:
        index: The index name.
        index_table: The index table.
        touched_rows: Data rows with a watched cell in the load.
        index_rows: Index rows written (new, or with changed covered values).
        deleted_rows: Index rows deleted (their data row no longer has that value).
        index_version: The index table version committed, None when nothing changed.
    """

    index: str
    index_table: str
    touched_rows: int
    index_rows: int
    deleted_rows: int
    index_version: int | None


def maintained_indexes(meta: TableMetadata) -> list[IndexDefinition]:
    """The indexes of a table version that loads keep current (``maintain`` set), by name.

    Definitions naming another data table (a clone or copy carries its source's properties)
    are not this table's indexes and are left alone.
    """
    name = TableName.parse(meta.name).full
    return [d for _, d in sorted(definitions_of(meta).items()) if d.maintain and d.table == name]


def _mine(cells: pa.Table, definition: IndexDefinition, touched: pa.Array) -> pa.Array:
    """The cells of ``definition``'s touched rows and watched columns (all for key-only)."""
    mask = pc.is_in(cells.column("row"), value_set=touched)
    if definition.whole_row:
        return mask
    out: pa.Array = pc.and_(mask, _column_mask(cells, definition.watched_columns))
    return out


def _split_path(table_path: str) -> tuple[str, str]:
    """``(warehouse root, catalog location)`` of a table directory (``root/ns/q/uuid``)."""
    parts = table_path.rstrip("/").rsplit("/", TABLE_DEPTH)
    return parts[0], "/".join(parts[1:])


def _handle(catalog: Catalog[TableHandle], location: str, meta: TableMetadata) -> TableHandle:
    return TableHandle(catalog, TableName.parse(meta.name), location, meta, pinned=True)


def maintain_indexes(pending: PendingLoad) -> list[IndexMaintenance]:
    """The load hook of the facade: :func:`maintain_for_load` for a pending load.

    A table with index definitions (``index.<name>`` properties, docs/format.md 12.4) has
    the index rows of the new files written and committed first, so a lookup after the
    load is exact; a table without indexes costs nothing (no read).
    """
    names = [k for k in pending.base.properties if k.startswith("index.")]
    if not [k for k in names if k not in ("index.definition", "index.build")]:
        return []
    return maintain_for_load(
        pending.fs,
        pending.table_path,
        pending.log,
        pending.base,
        pending.written,
        load_id=pending.load_id,
        assign_seq_id=pending.assign_seq_id,
        storage_options=pending.storage_options,
    )


def _staged(
    before: TableMetadata, written: Sequence[WrittenFile], load_id: str, *, assign_seq_id: bool
) -> tuple[TableMetadata, TableMetadata]:
    """The table after the load, and a version holding only the load's files.

    The files take the sequence number the load commit gives them (none with
    ``assign_seq_id=False``, R14.5).
    """
    seq = before.next_seq if assign_seq_id else UNASSIGNED_SEQ
    added = tuple(file_entry(w, seq=seq, load_id=load_id) for w in written)
    after = before.evolve(
        files=(*before.files, *added), next_seq=before.next_seq + int(assign_seq_id), totals=None
    )
    return after, before.evolve(files=added, totals=None)


def maintain_for_load(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    log: TableLog,
    base: TableMetadata,
    written: Sequence[WrittenFile],
    *,
    load_id: str,
    assign_seq_id: bool = True,
    storage_options: dict[str, Any] | None = None,
) -> list[IndexMaintenance]:
    """Write and commit the index rows a load's new files call for (before the data commit).

    Args:
        fs: The warehouse filesystem.
        table_path: The data table's directory.
        log: The data table's log.
        base: The version the files were written against.
        written: The load's store files (not yet committed).
        load_id: The load's id (recorded in the index commits' summaries).
        assign_seq_id: Whether the load commit gives the files a sequence number.
        storage_options: Filesystem options of the warehouse (for the handles opened).

    Returns:
        One entry per maintained index (empty when the table has none).
    """
    latest = log.read(log.latest_version())
    definitions = maintained_indexes(latest)
    if not definitions or not written:
        return []
    regions = {r.id for r in latest.regions}
    before = latest if all(w.region in regions for w in written) else base
    root, location = _split_path(table_path)
    catalog = Catalog(fs, root, handle_type=TableHandle, storage_options=storage_options)
    after, added = _staged(before, written, load_id, assign_seq_id=assign_seq_id)
    old = _handle(catalog, location, before)
    new = _handle(catalog, location, after)
    loaded = _handle(catalog, location, added)
    # The data is read once for all indexes: the touched rows of any, their watched columns.
    touched = {
        d.name: _touched_rows(loaded, d, since_seq=None, time_range=None) for d in definitions
    }
    rows = pc.unique(pa.concat_arrays([pa.array([], pa.binary()), *touched.values()]))
    rows = rows.take(pc.sort_indices(rows))
    columns: list[str] | None = None
    if not any(d.whole_row for d in definitions):
        columns = list(dict.fromkeys(c for d in definitions for c in d.watched_columns))
    states = (read_rows(old, rows, columns=columns), read_rows(new, rows, columns=columns))
    return [_maintain(new, d, touched[d.name], states, load_id=load_id) for d in definitions]


def _maintain(
    new: TableHandle,
    definition: IndexDefinition,
    touched: pa.Array,
    states: tuple[pa.Table, pa.Table],
    *,
    load_id: str,
) -> IndexMaintenance:
    """Index one load into one index, given the touched rows' cells before and after it."""
    meta = new.metadata
    types = definition.part_types(meta.row_key)
    index = open_index_table(new.catalog, definition)
    nothing = IndexMaintenance(definition.name, definition.index_table, len(touched), 0, 0, None)
    if len(touched) == 0:
        return nothing
    spec = meta.row_key
    mine = [
        cells.filter(_mine(cells, definition, touched)) if cells.num_rows else cells
        for cells in states
    ]
    was, _ = index_rows(mine[0], definition, types, spec)
    now, _ = index_rows(mine[1], definition, types, spec)
    stored_types = types
    if definition.local:  # keys carry the region prefix (docs/format.md 12.5)
        was, now = localize(was, definition, meta), localize(now, definition, meta)
        stored_types = local_types(types)
    keys = pc.unique(
        pa.concat_arrays([was.column("key").combine_chunks(), now.column("key").combine_chunks()])
    )
    keys = keys.take(pc.sort_indices(keys))
    family = [definition.family]
    held, newest, marked = stored_rows(
        read_rows(index, keys, families=family), definition, stored_types
    )
    held = held.append_column("newest", newest).append_column("marked", pa.array(marked))
    visible = held.filter(held.column("marked"))
    # Index rows whose key the touched rows no longer have: hide them whole.
    deletes, gone = _hide_gone(visible, now, definition)
    writes, changed = _changed_cells(
        index, now, visible.drop_columns(["row", "newest", "marked"]), definition
    )
    out = pa.concat_tables([c.cast(deletes.schema) for c in [deletes, *writes]])
    if out.num_rows == 0:
        return nothing
    writer = _Writer(index.fs, index.path, index.metadata, definition, types, spec)
    job_id = new_job_id("index-maintain")
    written = writer.write(out, job_id)
    ensure_exclusive_create(index.fs, index.root)
    result = commit(
        index.log,
        Commit(
            operation="index-maintain",
            changes=[FileChange(add=written)],
            load_id=job_id,
            new_seq=True,
            base=index.metadata,
            summary={
                "data-load-id": load_id,
                "index-rows": changed,
                "deleted-rows": gone,
                "files": len(written),
            },
        ),
    )
    return IndexMaintenance(
        definition.name,
        definition.index_table,
        len(touched),
        changed,
        gone,
        None if result.applied_before else result.metadata.version,
    )

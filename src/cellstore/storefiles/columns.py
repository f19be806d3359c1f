"""Writing column-layout store files (docs/format.md section 14).

:class:`ColumnFileWriter` writes records (:mod:`cellstore.core.columnar`) as one Parquet
file, group by group, in bounded memory, with the same footer, page checksums, Bloom
filter and footer digest as a cell file. :class:`LayoutSink` is what the roll loop
(:mod:`~cellstore.storefiles.rolling`) opens for a (region, family) that a
:class:`ColumnPlan` puts in the column layout: it takes the region's sorted cells chunk by
chunk, cuts them into records and the other cells (:func:`~cellstore.core.columnar.split_cells`,
holding back each chunk's last row, which may continue in the next chunk), and writes a
column file and a cell file beside it (either may be absent), so every cell written is in
exactly one of them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from cellstore.core.cells import CellType, run_starts
from cellstore.core.codecs import Codec, binary_parts, valid_mask
from cellstore.core.columnar import (
    AUTO_MAX_COLUMNS,
    AUTO_MIN_ROWS,
    MAX_COLUMNS,
    ROW_COLUMN,
    TS_COLUMN,
    Aliases,
    ColumnSpec,
    alias_mismatch,
    choose_aliases,
    column_set,
    key_names,
    keyable_rows,
    keyed,
    records_schema,
    split_rows,
)
from cellstore.core.family import Family
from cellstore.core.keys import from_string_binary
from cellstore.core.rowkey import RowKeySpec
from cellstore.errors import CellstoreError
from cellstore.fs import join
from cellstore.storefiles.columnenc import (
    COLUMN_ZSTD_LEVEL,
    COMPANION_ENCODING,
    choose_encodings,
    column_level,
)
from cellstore.storefiles.footer import (
    ALIASED_FILE_FORMAT_VERSION,
    COLUMN_FILE_FORMAT_VERSION,
    KEYED_FILE_FORMAT_VERSION,
    StoreFileInfo,
)
from cellstore.storefiles.layout import store_file_relpath
from cellstore.storefiles.writer import (
    CELL_ENCODING,
    DEFAULT_ROW_GROUP_CELLS,
    ParquetFileSink,
    StoreFileWriter,
    WrittenFile,
)

__all__ = [
    "COLUMN_FILE_SUFFIX",
    "COLUMN_ZSTD_LEVEL",
    "COMPANION_ENCODING",
    "ColumnFileWriter",
    "ColumnPlan",
    "LayoutSink",
    "Layouts",
    "NO_LAYOUTS",
    "group_records",
    "plan_layouts",
    "recorded_codecs",
    "RowsDigest",
]

#: Stem suffix of a column file (``<stem>-<k>-c.parquet``); its delta cells are in the
#: cell file ``<stem>-<k>.parquet`` beside it.
COLUMN_FILE_SUFFIX: Final = "-c"
#: Smallest data page of a column file (Parquet's default page size).
COLUMN_PAGE_BYTES: Final = 1 << 20


#: Most cells cut into records at once by a :class:`LayoutSink` (its temporaries).
_SPLIT_CELLS: Final = 16384


def _is_ts(name: str) -> bool:
    """Whether ``name`` is a cell timestamp column (``__ts:<qualifier>``)."""
    return name.startswith(TS_COLUMN + ":")


def group_records(row_group_cells: int, columns: int) -> int:
    """Records per row group of a column file: a quarter of ``row_group_cells``.

    16,384 records at the default, the balance measured on bench/bench_analytics.py's
    table (docs/performance.md, session 14, one run side by side): against 32K-record
    groups, a key-range read (one carrier's month, whose records lie in one group per
    family) decodes half as much and took 0.69x the time, the files are 5% larger
    (7.23 MB against 6.87 MB) and a whole-table wide read took 1.07x the time. 8K-record
    groups: the select 0.52x, the files 16% larger, the whole-table read 1.3x. A record
    holds up to ``columns`` cells, so a group expands to more cells than a cell file's.
    """
    del columns
    return max(1, row_group_cells // 4)


@dataclass(frozen=True)
class ColumnPlan:
    """How one family's files of a load or job are laid out in columns.

    Attributes:
        declared: Columns known before any cell is seen (the codecs a mapping records), in
            qualifier order.
        discover: Most columns in all (declared plus the Put qualifiers seen in the first
            chunk of a region's cells, binary unless declared). More than that: with
            ``forced`` False (``layout="auto"``) the region's cells stay cells when
            nothing is declared, and only the declared columns are used otherwise; with
            ``forced`` the first ``discover`` qualifiers in qualifier order are columns.
        forced: ``layout="columns"``.
        min_rows: Fewest rows in the first chunk for a column file (fewer: cells).
        key: The table's row-key spec when its files hold key columns in place of
            ``__row`` (:func:`~cellstore.core.columnar.keyed`; None: ``__row``).
    """

    declared: tuple[ColumnSpec, ...] = ()
    discover: int = AUTO_MAX_COLUMNS
    forced: bool = False
    min_rows: int = 1
    key: RowKeySpec | None = None

    @classmethod
    def for_layout(cls, layout: str, declared: dict[bytes, str] | None = None) -> ColumnPlan | None:
        """The plan of a family's ``layout`` (None: cells), with declared codecs."""
        if layout == "cells":
            return None
        specs = column_set(ColumnSpec(q, Codec.parse(c)) for q, c in (declared or {}).items())
        if layout == "columns":
            return cls(specs, discover=MAX_COLUMNS, forced=True)
        return cls(specs, discover=AUTO_MAX_COLUMNS, min_rows=AUTO_MIN_ROWS)

    def columns_for(self, cells: pa.Table) -> tuple[ColumnSpec, ...]:
        """The column set of a region whose first cells (whole rows) are ``cells``."""
        if self.min_rows > 1 and len(run_starts(cells.column("row"))) < self.min_rows:
            return ()
        puts = pc.equal(cells.column("type"), int(CellType.PUT))
        seen = pc.unique(pc.filter(cells.column("qualifier"), puts)).to_pylist()
        known = {s.qualifier for s in self.declared}
        found = sorted(q for q in seen if q not in known)
        if len(known) + len(found) <= self.discover:
            return column_set([*self.declared, *(ColumnSpec(q) for q in found)])
        if self.forced:
            every = column_set([*self.declared, *(ColumnSpec(q) for q in found)])
            return every[: self.discover]
        return self.declared


def _record_stats(
    records: pa.Table, specs: tuple[ColumnSpec, ...], aliases: Aliases = ()
) -> dict[str, Any]:
    """Footer statistics of records, over the cells they hold (vectorized)."""
    n = records.num_rows
    cells = _group_cells(records, specs, aliases)
    low = None
    for s in specs:
        own = records.column(s.ts_name)
        if own.null_count < len(own):
            m = pc.min(own).as_py()
            low = m if low is None else min(low, m)
    row_ts = records.column(TS_COLUMN)
    mm = pc.min_max(row_ts)
    # every record holds a cell at its own ts (the largest of its cells)
    min_ts = mm["min"].as_py() if low is None else min(mm["min"].as_py(), low)
    rows = records.column(ROW_COLUMN)
    return {
        "cells": cells,
        "delete_markers": 0,
        "rows": n,
        "first_row": rows[0].as_py(),
        "last_row": rows[n - 1].as_py(),
        "min_ts": min_ts,
        "max_ts": mm["max"].as_py(),
        "earliest_put_ts": min_ts,
    }


class RowsDigest:
    """A digest of a sequence of row keys, the same however the sequence is chunked.

    XXH3-64 of the keys' lengths (4-byte little-endian) and XXH3-64 of their bytes, as 32
    hex digits (docs/format.md 14.2).
    """

    def __init__(self) -> None:
        self._lengths = xxhash.xxh3_64()
        self._bytes = xxhash.xxh3_64()

    def update(self, rows: pa.Array) -> None:
        """Add the next row keys."""
        offsets, data = binary_parts(rows)
        self._lengths.update(np.diff(offsets).astype("<u4").tobytes())
        self._bytes.update(data.tobytes())

    def hexdigest(self) -> str:
        """The digest of every key added so far."""
        return self._lengths.hexdigest() + self._bytes.hexdigest()


def _group_cells(records: pa.Table, specs: tuple[ColumnSpec, ...], aliases: Aliases = ()) -> int:
    """Cells of records (an aliased column holds a value in every record)."""
    held = {q for q, _ in aliases}
    return len(held) * len(records) + sum(
        len(records) - int(records.column(s.value_name).null_count)
        for s in specs
        if s.qualifier not in held
    )


class ColumnFileWriter(ParquetFileSink):
    """Write one column file, records chunk by chunk (at least one record in all).

    Contract: the chunks, concatenated, are records (:func:`records_schema` of
    ``columns``) with strictly increasing rows, each holding at least one value.

    Args:
        fs: Filesystem to write to.
        path: Destination path (must not exist).
        family: The family (compression, block size, Bloom filter).
        columns: The column set, in qualifier order.
        seq: Sequence number for the footer.
        load_id: Id of the load or job writing the file.
        row_group_cells: About this many values per row group (:func:`group_records`).
        key: Write the rows as the key columns of this spec (a keyed file, format
            version 3): every record's row must be one the spec gives back
            (:func:`~cellstore.core.columnar.keyable_rows`). None: ``__row``.
        aliases: Of a keyed file, the columns not stored because every record's value
            is its key field's (:func:`~cellstore.core.columnar.choose_aliases`; format
            version 4): every record written must hold exactly that value
            (:func:`~cellstore.core.columnar.alias_mismatch` false).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        path: str,
        *,
        family: Family,
        columns: tuple[ColumnSpec, ...],
        seq: int,
        load_id: str,
        row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
        key: RowKeySpec | None = None,
        aliases: Aliases = (),
    ) -> None:
        self.fs = fs
        self.path = path
        self.family = family
        self.columns = columns
        self.key = keyed(key)
        self.aliases = aliases if self.key is not None else ()
        self.schema = records_schema(columns, self.key, self.aliases)
        self._digest = RowsDigest() if self.key is not None else None
        self._group_rows_seen: list[tuple[bytes, bytes]] = []
        self.seq = seq
        self.load_id = load_id
        self.group_records = group_records(row_group_cells, len(columns))
        #: Whether the records hold the newest Put of every (row, qualifier) their write
        #: has (the footer's ``complete``; set by the caller that knows, before close).
        self.complete = False
        self._group_cells: list[int] = []
        self._start(self.group_records)

    def write(self, records: pa.Table, *, fields: pa.Table | None = None) -> None:
        """Append records (the next rows of the file).

        ``fields``: of a keyed file, the records' key fields when the caller decoded
        them already (named by field; decoded here otherwise).
        """
        if self._closed:
            raise ValueError(f"{self.path}: writer is closed")
        if records.num_rows == 0:
            return
        if self.key is None:
            table = records.select(self.schema.names).cast(self.schema)
        else:
            # keep __row beside the key columns until the group is written (its bounds)
            rows = records.column(ROW_COLUMN).combine_chunks().cast(pa.binary())
            assert self._digest is not None
            self._digest.update(rows)
            if fields is None:
                fields = self.key.decode(rows)
            keys = [fields.column(f.name) for f in self.key.fields]
            names = key_names(self.key)
            table = pa.Table.from_arrays(
                [rows, *keys, *(records.column(n) for n in self.schema.names[len(names) :])],
                names=[ROW_COLUMN, *self.schema.names],
            ).cast(pa.schema([pa.field(ROW_COLUMN, pa.binary()), *self.schema]))
        stats = _record_stats(records, self.columns, self.aliases)
        if self._stats is None:
            self._stats = stats
        else:
            acc = self._stats
            acc["cells"] += stats["cells"]
            acc["rows"] += stats["rows"]
            acc["last_row"] = stats["last_row"]
            acc["min_ts"] = min(acc["min_ts"], stats["min_ts"])
            acc["max_ts"] = max(acc["max_ts"], stats["max_ts"])
            acc["earliest_put_ts"] = acc["min_ts"]
        self.bytes += table.nbytes
        self._queue(table)

    def _encodings(self) -> tuple[list[str], dict[str, str]]:
        """The columns with dictionaries, and the others' encodings (a trial).

        :func:`~cellstore.storefiles.columnenc.choose_encodings` on the first records.
        """
        first = self._pending[0] if self._pending else self.schema.empty_table()
        names = key_names(self.key) if self.key is not None else []
        stored = set(self.schema.names)
        values = [s.value_name for s in self.columns if s.value_name in stored]
        return choose_encodings(
            first, [*names, *values], compression=self.family.compression, rows=self.key is None
        )

    def _open(self) -> pq.ParquetWriter:
        dictionary, encodings = self._encodings()
        # No Bloom filter: a point read finds its one row group by the statistics of the
        # sorted, unique __row, and a filter would add about a fifth to the file's bytes
        # (9.6 bits a record at 1% false positives, against ~3 bytes a record of __row).
        return self._open_parquet(
            self.schema,
            compression=self.family.compression,
            compression_level=column_level(self.family.compression),
            # analytics reads decode whole row groups: pages as large as Parquet's
            # default (a point read decodes the row group either way)
            data_page_size=max(self.family.block_size, COLUMN_PAGE_BYTES),
            # statistics where readers prune by them: rows, row ts, values
            write_statistics=[f.name for f in self.schema if not _is_ts(f.name)],
            # (a keyed file is sorted by the encoded key, not by its fields' values)
            sorting_columns=[pq.SortingColumn(0)] if self.key is None else None,
            # sorted unique keys share prefixes; values that repeat take dictionaries,
            # close integers deltas (decided on the first records); the cells' own
            # timestamps are mostly null
            use_dictionary=dictionary,
            column_encoding=encodings or None,
        )

    def _write_groups(self, table: pa.Table, full: int) -> None:
        size = self.group_records
        writer = self._writer if self._writer is not None else self._open()
        for start in range(0, full, size):  # one iteration per row group
            group = table.slice(start, min(size, full - start))
            if self.key is not None:
                rows = group.column(ROW_COLUMN)
                self._group_rows_seen.append((rows[0].as_py(), rows[len(rows) - 1].as_py()))
                group = group.drop_columns([ROW_COLUMN])
            writer.write_table(group, row_group_size=size)
            self._group_cells.append(_group_cells(group, self.columns, self.aliases))
            self._row_groups += 1

    def close(self) -> StoreFileInfo:
        """Write the last row group and the footer; returns the file's info.

        Raises:
            ValueError: if no record was written (nothing is left on the filesystem).
        """
        return self._close("a column file needs at least one record")

    def _footer_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "bloom_filter": False,
            "format_version": COLUMN_FILE_FORMAT_VERSION,
            "layout": "columns",
            "columns": self.columns,
            "group_cells": tuple(self._group_cells),
            "complete": self.complete,
        }
        if self.key is not None:
            assert self._digest is not None
            fields["format_version"] = KEYED_FILE_FORMAT_VERSION
            fields["row_key"] = self.key
            fields["group_rows"] = tuple(self._group_rows_seen)
            fields["rows_digest"] = self._digest.hexdigest()
        if self.aliases:
            fields["format_version"] = ALIASED_FILE_FORMAT_VERSION
            fields["aliases"] = self.aliases
        return fields


@dataclass(frozen=True)
class Layouts:
    """Which (region, family) pairs of a load or job are written in the column layout.

    Attributes:
        plans: ``(family, plan)`` pairs: the families with a column plan.
        regions: The ``(region, family)`` pairs the plans apply to; None: every region.
    """

    plans: tuple[tuple[str, ColumnPlan], ...] = ()
    regions: frozenset[tuple[str, str]] | None = None

    def plan_for(self, region: str, family: str) -> ColumnPlan | None:
        """The plan for a region's family, or None (cells)."""
        if self.regions is not None and (region, family) not in self.regions:
            return None
        return next((p for f, p in self.plans if f == family), None)


_PUT: Final = int(CellType.PUT)

#: No (region, family) in the column layout.
NO_LAYOUTS: Final = Layouts()

#: The table property holding the codecs mapping-based loads recorded (docs/format.md 6.1).
_CODECS_PROPERTY: Final = "mapping.codecs"


def recorded_codecs(properties: Mapping[str, str]) -> dict[str, dict[bytes, str]]:
    """Per family, the qualifier codecs a table's properties record (section 6.1).

    Lenient: a property that is not the documented JSON declares nothing (the loader and
    readers report it; a layout is only an optimization).
    """
    out: dict[str, dict[bytes, str]] = {}
    try:
        doc = json.loads(properties.get(_CODECS_PROPERTY, "{}"))
        columns = doc.get("columns", {}) if isinstance(doc, dict) else {}
        for name, codec in columns.items() if isinstance(columns, dict) else ():
            family, sep, qualifier = str(name).partition(":")
            if sep and isinstance(codec, str):
                Codec.parse(codec)
                out.setdefault(family, {})[from_string_binary(qualifier)] = codec
    except (ValueError, CellstoreError):
        return {}
    return out


def plan_layouts(
    families: Sequence[Family],
    regions: Sequence[str],
    *,
    codecs: Mapping[str, Mapping[bytes, str]] | None = None,
    busy: Iterable[tuple[str, str]] | None = None,
    major: bool = False,
    key: RowKeySpec | None = None,
) -> Layouts:
    """Which (region, family) pairs a load or compaction writes in the column layout.

    Args:
        families: The table's families (each has its ``layout``).
        regions: Ids of the regions written.
        codecs: Declared value codecs per family (:func:`recorded_codecs`, plus the
            load's mapping).
        busy: The (region, family) pairs that hold live files (None: none). A load into
            an ``auto`` family writes column files only where the pair is not busy (a
            later load writes deltas as cells).
        major: A major compaction: every ``auto`` and ``columns`` pair is columns.
        key: The table's row-key spec: column files hold its fields as key columns in
            place of ``__row`` when every field decodes (docs/format.md 14.2).
    """
    taken = set(busy or ())
    plans: list[tuple[str, ColumnPlan]] = []
    pairs: set[tuple[str, str]] = set()
    for f in families:
        plan = ColumnPlan.for_layout(f.layout, dict((codecs or {}).get(f.name, {})))
        if plan is None:
            continue
        plan = dataclasses.replace(plan, key=keyed(key))
        plans.append((f.name, plan))
        every = plan.forced or major
        pairs.update((r, f.name) for r in regions if every or (r, f.name) not in taken)
    if not plans:
        return NO_LAYOUTS
    return Layouts(plans=tuple(plans), regions=frozenset(pairs))


class LayoutSink:
    """One roll step of a column-layout (region, family): a column file and a cell file.

    A :class:`~cellstore.storefiles.rolling.FileSink` whose :meth:`close` returns the
    files it wrote (the cell file first, then the column file; either may be missing).
    The column set is fixed by the first chunk (:meth:`ColumnPlan.columns_for`).

    Args:
        fs: Filesystem to write to.
        root: The table directory.
        region: The region's id.
        family: The family.
        stem: File-name stem (``<stem>.parquet`` for cells, ``<stem>-c.parquet`` for
            records).
        plan: The family's column plan.
        seq: Sequence number for the footers.
        load_id: Id of the load or job.
        row_group_cells: Cells per row group (values per row group for records).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        root: str,
        *,
        region: str,
        family: Family,
        stem: str,
        plan: ColumnPlan,
        seq: int,
        load_id: str,
        row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
    ) -> None:
        self.fs = fs
        self.root = root
        self.region = region
        self.family = family
        self.plan = plan
        self.seq = seq
        self.load_id = load_id
        self.row_group_cells = row_group_cells
        self.cells_relpath = store_file_relpath(region, family.name, stem)
        self.records_relpath = store_file_relpath(
            region, family.name, f"{stem}{COLUMN_FILE_SUFFIX}"
        )
        self.path = join(root, self.cells_relpath)
        self.paths: list[str] = []
        self._held: pa.Table | None = None
        self._specs: tuple[ColumnSpec, ...] | None = None
        self._cells: StoreFileWriter | None = None
        self._records: ColumnFileWriter | None = None
        self._complete = True
        #: The key-field aliases, decided on the first records (None: not yet).
        self._aliases: Aliases | None = None

    @property
    def bytes(self) -> int:
        """Uncompressed bytes written so far (cells, records and the held-back row)."""
        held = self._held.nbytes if self._held is not None else 0
        return (
            held
            + (self._cells.bytes if self._cells is not None else 0)
            + (self._records.bytes if self._records is not None else 0)
        )

    def write(self, cells: pa.Table) -> None:
        """Append sorted cells; the last row waits for the next chunk (or :meth:`close`)."""
        if cells.num_rows == 0:
            return
        held, self._held = self._held, None
        if self._specs is None:
            table = cells if held is None else pa.concat_tables([held, cells])
            if pc.any(pc.equal(table.column("type"), _PUT)).as_py():
                # the column set comes from the first cells that hold a Put (the held-back
                # row included); cells before them hold none and go to the cell file
                self._specs = self.plan.columns_for(table)
        starts = run_starts(cells.column("row"))
        if held is not None:
            # the held-back row, joined with its continuation when the chunk starts with
            # it (a small copy: the chunk itself is never concatenated or combined)
            first = int(starts[1]) if len(starts) > 1 else cells.num_rows
            if held.column("row")[0].equals(cells.column("row")[0]):
                joined = pa.concat_tables([held, cells.slice(0, first)]).combine_chunks()
                if first == cells.num_rows:
                    self._held = joined
                    return
                self._put(joined)
                cells, starts = cells.slice(first), starts[1:] - first
            else:
                self._put(held)
        last = int(starts[-1])
        # the last row waits for the next chunk; a copy, so the chunk can be freed
        self._held = cells.take(pa.array(np.arange(last, cells.num_rows)))
        if last:
            self._put(cells.slice(0, last))

    def _put(self, cells: pa.Table) -> None:
        """Write whole rows' cells, in pieces of about :data:`_SPLIT_CELLS` cells.

        Cutting records out of cells (:func:`~cellstore.core.columnar.split_cells`) takes
        about 110 bytes of numpy temporaries a cell (7 MiB for a 64K-cell chunk of a
        spill merge); pieces keep that at a quarter beside the row group of records the
        column file holds (the load's memory budget: bench/bench_memory.py).
        """
        n = cells.num_rows
        pieces = [cells]
        if n > _SPLIT_CELLS:
            starts = run_starts(cells.column("row"))
            # the row start at or before each multiple of _SPLIT_CELLS (never cut a row)
            at = starts[
                np.searchsorted(starts, np.arange(_SPLIT_CELLS, n, _SPLIT_CELLS), "right") - 1
            ]
            cuts = [0, *np.unique(at[at > 0]).tolist(), n]
            pieces = [cells.slice(lo, hi - lo) for lo, hi in itertools.pairwise(cuts)]
        # the chunk's records go to the column file at once (no copy: chunks of a table),
        # as without pieces: its first records decide the dictionaries
        done = [(r, f) for r, f in map(self._put_piece, pieces) if r.num_rows]
        if not done:
            return
        if self._records is None:
            self._records = ColumnFileWriter(
                self.fs,
                join(self.root, self.records_relpath),
                family=self.family,
                columns=self._specs or (),
                seq=self.seq,
                load_id=self.load_id,
                row_group_cells=self.row_group_cells,
                key=self.plan.key,
                aliases=self._aliases or (),
            )
        records = pa.concat_tables([r for r, _ in done])
        keyed = [f for _, f in done if f is not None]
        self._records.write(records, fields=pa.concat_tables(keyed) if keyed else None)

    def _put_piece(self, cells: pa.Table) -> tuple[pa.Table, pa.Table | None]:
        """Write a piece's other cells to the cell file.

        Returns:
            The piece's records, and their decoded key fields (a keyed file; else None).
        """
        rows = None
        key = self.plan.key
        specs = self._specs or ()
        fields = None
        decoded = None
        if key is not None and specs:
            # a keyed file holds only rows the spec gives back; others stay cells
            row = cells.column("row")
            distinct = row.take(pa.array(run_starts(row))).combine_chunks().cast(pa.binary())
            rows, decoded = keyable_rows(distinct, key)
        split = split_rows(cells, specs, rows=rows)
        records, rest = split.records, split.rest
        if key is not None and records.num_rows:
            assert decoded is not None  # (the records' rows are among the distinct rows)
            fields = decoded.take(pa.array(split.at))
            if self._aliases is None:  # decided on the file's first records
                self._aliases = choose_aliases(records, fields, specs, key)
            bad = alias_mismatch(records, fields, specs, self._aliases)
            if bad.any():
                # a record whose aliased value is not its key field's: its row stays cells
                assert rows is not None
                at = pc.index_in(records.column(ROW_COLUMN), value_set=distinct)
                rows = rows.copy()
                rows[at.to_numpy(zero_copy_only=False)[bad]] = False
                split = split_rows(cells, specs, rows=rows)
                records, rest = split.records, split.rest
                fields = fields.filter(pa.array(~bad))
        # (the cut is complete when :func:`put_columns` of the cells equals the cells taken)
        self._complete = self._complete and split.complete
        if rest.num_rows:
            if self._cells is None:
                self._cells = StoreFileWriter(
                    self.fs,
                    self.path,
                    family=self.family,
                    seq=self.seq,
                    load_id=self.load_id,
                    row_group_cells=self.row_group_cells,
                    # a region-family left in cells (no column set) writes a cell file
                    encoding=COMPANION_ENCODING if specs else CELL_ENCODING,
                )
            self._cells.write(rest)
        return records, fields

    def close(self) -> list[WrittenFile]:
        """Write what is held, close both files; returns them (cells first)."""
        if self._held is not None and self._held.num_rows:
            held, self._held = self._held, None
            self._put(held)
        out: list[WrittenFile] = []
        try:
            if self._cells is not None:
                out.append(WrittenFile(self.region, self.cells_relpath, self._cells.close()))
                self.paths.append(self._cells.path)
            if self._records is not None:
                self._records.complete = self._complete
                info = self._records.close()
                out.append(WrittenFile(self.region, self.records_relpath, info))
                self.paths.append(self._records.path)
        except BaseException:
            self.abort()
            raise
        return out

    def abort(self) -> None:
        """Delete both files (best effort)."""
        for w in (self._cells, self._records):
            if w is not None:
                w.abort()
        for path in self.paths:
            with contextlib.suppress(OSError):
                self.fs.rm(path)
        self.paths = []


def records_valid(records: pa.Table, specs: tuple[ColumnSpec, ...]) -> np.ndarray:
    """Per record, whether it holds at least one value (the column file's invariant)."""
    held = np.zeros(records.num_rows, dtype=bool)
    for s in specs:
        held |= valid_mask(records.column(s.value_name).combine_chunks())
    return held

"""``check``: verify a store file against the format's invariants."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import (
    CELL_SCHEMA,
    MAX_ROW_LENGTH,
    CellType,
    first_unsorted_index,
    run_starts,
)
from cellstore.core.codecs import valid_mask
from cellstore.core.columnar import ROW_COLUMN, TS_COLUMN
from cellstore.core.metadata import FileEntry
from cellstore.core.regions import Region
from cellstore.core.results import Checked
from cellstore.errors import CellstoreError
from cellstore.storefiles.columns import records_valid
from cellstore.storefiles.reader import RowGroupStats, StoreFileReader
from cellstore.storefiles.writer import _fold_stats, cell_stats

#: Most row groups of one file checked at once (decoding and comparing release the GIL).
MAX_THREADS: Final = 4
#: Cell type codes a store file may hold.
_KNOWN_TYPES: Final = pa.array([int(t) for t in CellType], pa.int8())

__all__ = ["CheckReport", "check"]


@dataclass(frozen=True)
class CheckReport(Checked):
    """Outcome of :func:`check`.

    Attributes:
        path: The file checked.
        problems: One line per broken invariant; empty when the file is sound.
    """

    path: str
    problems: tuple[str, ...]


def check(
    fs: fsspec.AbstractFileSystem,
    path: str,
    *,
    region: Region | None = None,
    entry: FileEntry | None = None,
) -> CheckReport:
    """Verify one store file; never raises for a bad file, reports instead.

    Row groups are decoded and checked one at a time, several on threads at once (memory
    stays about one row group per thread; a large file uses every core); order across row
    groups is checked at their boundaries.

    Checks: the file's Parquet footer has the footer digest the manifest ``entry`` records
    (if it records one; compared before the footer is parsed, so a damaged footer is a
    "footer digest mismatch" problem, never a crash); the file opens (both ``PAR1`` magics,
    a footer length inside the file) and every page passes its checksum; the schema is the cell
    schema; cells are strictly in cell order (unique keys); type codes are known; row keys
    are 1..32767 bytes; timestamps are >= 0; the footer's statistics equal the data; the
    row Bloom filter (if any) contains every row; rows lie inside ``region`` (if given); the
    manifest ``entry`` (if given) agrees with the footer.

    Args:
        fs: The filesystem.
        path: The store file.
        region: The region the file must fit in.
        entry: The manifest's record of the file.

    Returns:
        A :class:`CheckReport`.
    """
    problems: list[str] = []
    try:
        reader = StoreFileReader(
            fs,
            path,
            verify_checksums=True,
            footer_digest=entry.footer_digest if entry is not None else None,
        )
    except (CellstoreError, OSError) as e:
        return CheckReport(path, (f"cannot open: {e}",))
    with reader:
        schema = reader.parquet.schema_arrow
        # a column file's schema is its column set's, checked when it opened
        cells_schema = [(f.name, f.type) for f in CELL_SCHEMA]
        if not reader.info.columns and [(f.name, f.type) for f in schema] != cells_schema:
            problems.append(f"schema is {schema}, expected the cell schema")
            return CheckReport(path, tuple(problems))
        info = reader.info
        groups = reader.row_groups()
        if sum(g.num_cells for g in groups) == 0:
            problems.append("file holds no cells")
            return CheckReport(path, tuple(problems))
        try:
            results = _check_groups(reader, groups)
        except (CellstoreError, OSError, pa.ArrowException) as e:
            return CheckReport(path, (f"cannot read data (checksum or decoding error): {e}",))
        problems.extend(_combine(results, info, bloom=bool(info.bloom_filter)))
        if info.columns:
            try:
                problems.extend(_record_problems(reader, groups))
            except (CellstoreError, OSError, pa.ArrowException) as e:
                return CheckReport(path, (f"cannot read records: {e}",))
        if region is not None:
            if info.first_row < region.start:
                problems.append(
                    f"first row {info.first_row!r} is before region {region.id} "
                    f"start {region.start!r}"
                )
            if region.end and info.last_row >= region.end:
                problems.append(
                    f"last row {info.last_row!r} is not before region {region.id} "
                    f"end {region.end!r}"
                )
        if entry is not None:
            for key in ("cells", "delete_markers", "first_row", "last_row", "min_ts", "max_ts"):
                if getattr(entry, key) != getattr(info, key):
                    problems.append(
                        f"manifest {key} {getattr(entry, key)!r} != footer {getattr(info, key)!r}"
                    )
            if entry.family != info.family:
                problems.append(f"manifest family {entry.family!r} != footer {info.family!r}")
            if entry.size != info.size and info.size:
                problems.append(f"manifest size {entry.size} != file size {info.size}")
    return CheckReport(path, tuple(problems))


def _record_problems(reader: StoreFileReader, groups: list[RowGroupStats]) -> list[str]:
    """A column file's own invariants (docs/format.md section 14), group by group.

    Record rows strictly increase (a keyed file's, encoded from its key columns, start and
    end where its footer's row-group bounds say); every record holds a value; its ``__ts``
    is the largest timestamp of its cells; a cell's own timestamp is recorded only where it
    differs.
    """
    problems: list[str] = []
    specs = reader.info.columns
    previous: bytes | None = None
    for g in groups:
        records = reader.read_records([g.index], use_threads=False)
        rows = records.column(ROW_COLUMN).combine_chunks()
        n = len(rows)
        if not n:
            continue
        if previous is not None and rows[0].as_py() <= previous:
            problems.append(f"row group {g.index}: record rows do not increase from the last")
        if reader.info.row_key is not None and (
            rows[0].as_py() != g.min_row or rows[n - 1].as_py() != g.max_row
        ):
            problems.append(f"row group {g.index}: record rows are not the footer's row-group-rows")
        previous = rows[n - 1].as_py()
        if n > 1 and not pc.all(pc.less(rows.slice(0, n - 1), rows.slice(1))).as_py():
            problems.append(f"row group {g.index}: record rows are not strictly increasing")
        if not records_valid(records, specs).all():
            problems.append(f"row group {g.index}: a record holds no value")
        row_ts = records.column(TS_COLUMN).to_numpy()
        largest = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        for s in specs:
            held = valid_mask(records.column(s.value_name).combine_chunks())
            own = records.column(s.ts_name).combine_chunks()
            own_held = valid_mask(own)
            if (own_held & ~held).any() or (
                own_held.any() and (own.fill_null(0).to_numpy()[own_held] == row_ts[own_held]).any()
            ):
                problems.append(
                    f"row group {g.index}: column {s.value_name!r} records a timestamp where "
                    "it holds no value, or one equal to the record's"
                )
            ts = np.where(own_held, own.fill_null(0).to_numpy(), row_ts)
            largest = np.where(held, np.maximum(largest, ts), largest)
        if (largest != row_ts).any():
            problems.append(
                f"row group {g.index}: a record's __ts is not the largest timestamp of its cells"
            )
    return problems


@dataclass
class _GroupResult:
    """What checking one row group found."""

    start: int  # index of the group's first cell in the file
    unsorted: int | None  # file index of the first cell not after its predecessor
    unknown_type: tuple[int, int] | None  # (file index, code) of the first unknown type
    bad_row_length: bool
    negative_ts: bool
    stats: dict[str, Any]
    missing: list[bytes]  # rows the group's Bloom filter lacks
    first: pa.Table  # the group's first and last cells (key columns), for the boundaries
    last: pa.Table


def _check_groups(reader: StoreFileReader, groups: list[RowGroupStats]) -> list[_GroupResult]:
    """Check every row group of ``reader`` (on threads), in file order."""
    starts = np.concatenate([[0], np.cumsum([g.num_cells for g in groups])])[:-1]

    def one(i: int) -> _GroupResult:
        return _check_group(reader, groups[i], int(starts[i]))

    threads = min(MAX_THREADS, pa.cpu_count(), len(groups))
    if threads <= 1:
        return [one(i) for i in range(len(groups))]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cellstore-check") as pool:
        return list(pool.map(one, range(len(groups))))


def _check_group(reader: StoreFileReader, group: RowGroupStats, start: int) -> _GroupResult:
    """Check the cells of one row group (``start``: its first cell's index in the file)."""
    table = reader.read_row_groups([group.index], use_threads=False)
    n = table.num_rows
    bad = first_unsorted_index(table, strict=True)
    types = table.column("type")
    unknown = pc.invert(pc.is_in(types, value_set=_KNOWN_TYPES))
    unknown_type = None
    if pc.any(unknown).as_py():
        idx = int(np.flatnonzero(unknown.to_numpy(zero_copy_only=False))[0])
        unknown_type = (start + idx, int(types[idx].as_py()))
    row = table.column("row")
    lengths = pc.binary_length(row)
    bad_length = pc.any(pc.or_(pc.equal(lengths, 0), pc.greater(lengths, MAX_ROW_LENGTH)))
    missing: list[bytes] = []
    bloom = reader._bloom(group.index) if reader.info.bloom_filter and n else None
    if bloom is not None:
        rows = row.combine_chunks()
        distinct = rows.take(pa.array(run_starts(rows)))
        hits = bloom.might_contain_all(distinct)
        if not hits.all():
            missing = distinct.filter(pa.array(~hits)).to_pylist()
    keys = table.select(["row", "qualifier", "ts", "type"])
    return _GroupResult(
        start=start,
        unsorted=None if bad is None else start + bad,
        unknown_type=unknown_type,
        bad_row_length=bool(bad_length.as_py()),
        negative_ts=bool(pc.any(pc.less(table.column("ts"), 0)).as_py()) if n else False,
        stats=cell_stats(table) if n else {},
        missing=missing,
        first=keys.slice(0, 1),
        last=keys.slice(max(n - 1, 0), 1),
    )


def _combine(results: list[_GroupResult], info: Any, *, bloom: bool) -> list[str]:
    """The file's problems from its row groups' results (first problem of each kind)."""
    problems: list[str] = []
    live = [r for r in results if r.stats]
    unsorted = None
    for prev, cur in zip([None, *live[:-1]], live, strict=True):
        if prev is not None and first_unsorted_index(pa.concat_tables([prev.last, cur.first])):
            unsorted = cur.start
            break
        if cur.unsorted is not None:
            unsorted = cur.unsorted
            break
    if unsorted is not None:
        problems.append(f"cell {unsorted} is not after cell {unsorted - 1} in cell order")
    unknown = next((r.unknown_type for r in live if r.unknown_type is not None), None)
    if unknown is not None:
        problems.append(f"cell {unknown[0]} has unknown type code {unknown[1]}")
    if any(r.bad_row_length for r in live):
        problems.append("a row key is empty or longer than 32767 bytes")
    if any(r.negative_ts for r in live):
        problems.append("a timestamp is negative")
    stats = live[0].stats
    for r in live[1:]:
        stats = _fold_stats(stats, r.stats)
    for key, value in stats.items():
        footer_value = getattr(info, key)
        if footer_value != value:
            problems.append(f"footer {key} is {footer_value!r} but the data says {value!r}")
    if bloom:
        missing = [row for r in live for row in r.missing]
        if missing:
            problems.append(f"bloom filter misses {len(missing)} row(s), e.g. {missing[0]!r}")
    return problems

"""``check``: verify a store file against the format's invariants."""

from __future__ import annotations

from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import (
    CELL_SCHEMA,
    MAX_ROW_LENGTH,
    CellType,
    first_unsorted_index,
)
from cellstore.core.metadata import FileEntry
from cellstore.core.regions import Region
from cellstore.errors import CellstoreError
from cellstore.storefiles.reader import StoreFileReader
from cellstore.storefiles.writer import cell_stats

__all__ = ["CheckReport", "check"]


@dataclass(frozen=True)
class CheckReport:
    """Outcome of :func:`check`.

    Attributes:
        path: The file checked.
        problems: One line per broken invariant; empty when the file is sound.
    """

    path: str
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether no problem was found."""
        return not self.problems


def check(
    fs: fsspec.AbstractFileSystem,
    path: str,
    *,
    region: Region | None = None,
    entry: FileEntry | None = None,
) -> CheckReport:
    """Verify one store file; never raises for a bad file, reports instead.

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
        try:
            table = reader.parquet.read(use_threads=True)
        except (OSError, pa.ArrowException) as e:
            return CheckReport(path, (f"cannot read data (checksum or decoding error): {e}",))
        table = table.replace_schema_metadata(None)
        if [(f.name, f.type) for f in table.schema] != [(f.name, f.type) for f in CELL_SCHEMA]:
            problems.append(f"schema is {table.schema}, expected the cell schema")
            return CheckReport(path, tuple(problems))
        info = reader.info
        if table.num_rows == 0:
            problems.append("file holds no cells")
            return CheckReport(path, tuple(problems))
        bad = first_unsorted_index(table, strict=True)
        if bad is not None:
            problems.append(f"cell {bad} is not after cell {bad - 1} in cell order")
        known = pa.array([int(t) for t in CellType], pa.int8())
        unknown = pc.invert(pc.is_in(table.column("type"), value_set=known))
        if pc.any(unknown).as_py():
            idx = int(np.flatnonzero(unknown.to_numpy(zero_copy_only=False))[0])
            problems.append(f"cell {idx} has unknown type code {table.column('type')[idx]}")
        lengths = pc.binary_length(table.column("row"))
        if pc.any(pc.or_(pc.equal(lengths, 0), pc.greater(lengths, MAX_ROW_LENGTH))).as_py():
            problems.append("a row key is empty or longer than 32767 bytes")
        if pc.any(pc.less(table.column("ts"), 0)).as_py():
            problems.append("a timestamp is negative")
        stats = cell_stats(table)
        for key, value in stats.items():
            footer_value = getattr(info, key)
            if footer_value != value:
                problems.append(f"footer {key} is {footer_value!r} but the data says {value!r}")
        if info.bloom_filter:
            missing = reader.rows_missing_from_bloom(table.column("row"))
            if missing:
                problems.append(f"bloom filter misses {len(missing)} row(s), e.g. {missing[0]!r}")
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

"""The tasks of an HBase import (:mod:`cellstore.hbase.importer`): plan, run, clean up.

One frozen, picklable :class:`ImportTask` per (region, family) store (a large store is cut
into row ranges at HFile block boundaries, as scans cut it); :func:`run_import_task`
converts one into Parquet store files (nothing is committed); the tasks run on local
threads or a ``distributed`` client (:func:`cellstore.frames.run_tasks`), and a failed run
deletes what its tasks wrote.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import fsspec
import pyarrow as pa

from cellstore.core.cells import CELL_SCHEMA, equal_key_runs
from cellstore.core.family import Family
from cellstore.fs import join
from cellstore.hbasefiles.store import HFileStore, plain_keys
from cellstore.storefiles.rolling import write_rolled
from cellstore.storefiles.writer import DEFAULT_ROW_GROUP_CELLS, WrittenFile

__all__ = [
    "DEFAULT_IMPORT_MAX_FILE_BYTES",
    "ImportTask",
    "ImportTaskResult",
    "ProgressFn",
    "delete_written",
    "run_import_task",
]

#: Called with ``(done, total)`` tasks.
ProgressFn = Callable[[int, int], None]

#: Output store files roll at this many uncompressed cell bytes (on row boundaries).
DEFAULT_IMPORT_MAX_FILE_BYTES: Final = 1 << 30


# --------------------------------------------------------------------------- plan
@dataclass(frozen=True)
class ImportTask:
    """One (region, family) store, or a row range of one, to convert.

    Frozen and picklable: it runs on a local thread or a ``distributed`` worker.

    Attributes:
        number: The task's position in the plan (names its files).
        region: The cellstore region id the files belong to.
        hbase_region: The HBase region's encoded name.
        family: The family, with the settings the files are written with.
        start: First row of the range (inclusive; empty = the region's start).
        stop: Row after the range (exclusive; empty = unbounded).
        store: The HBase store's files, as scans read them.
        table_path: The target table's directory.
        stem: File-name stem shared by the import's files (import id and attempt nonce).
        import_id: The import's id (each file's load id).
        max_file_bytes: Output files roll at about this many uncompressed cell bytes.
        row_group_cells: Cells per Parquet row group.
    """

    number: int
    region: str
    hbase_region: str
    family: Family
    start: bytes
    stop: bytes
    store: HFileStore
    table_path: str
    stem: str
    import_id: str
    max_file_bytes: int
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS


@dataclass(frozen=True)
class ImportTaskResult:
    """What one :class:`ImportTask` wrote.

    Attributes:
        files: ``(file, rank)``: each written store file with the rank of the HFile it
            came from (0 = oldest of the store in HBase's order, R3.1).
        cells_read: Cells read from the HFiles (after R3.2 losers across files).
        cells: Cells written.
    """

    files: tuple[tuple[WrittenFile, int], ...]
    cells_read: int
    cells: int


def _first_of_equal_keys(cells: pa.Table) -> pa.Table:
    """``cells`` (in cell order) with only the first of each run of equal keys (R3.3)."""
    same = equal_key_runs(cells)
    if not same.any():
        return cells
    return cells.filter(pa.array(~same))


def run_import_task(
    src_fs: fsspec.AbstractFileSystem, dest_fs: fsspec.AbstractFileSystem, task: ImportTask
) -> ImportTaskResult:
    """Convert one store (range) of HFiles into store files; nothing is committed.

    Args:
        src_fs: The HBase root's filesystem.
        dest_fs: The warehouse filesystem.
        task: The task.

    Returns:
        The files written, each with its HFile's rank (see :class:`ImportTaskResult`).
        On an exception every file the task wrote is deleted first.

    Raises:
        MissingFileError, CorruptFileError: an HFile is gone or damaged.
        UnsupportedFormatError: an encrypted or v1 HFile.
    """
    runs, ranks = task.store.read_runs(src_fs, task.start, task.stop, point_row=None)
    written: list[tuple[WrittenFile, int]] = []
    read = kept = 0
    try:
        for run, rank in zip(runs, ranks, strict=True):
            read += run.num_rows
            cells = _first_of_equal_keys(plain_keys(run.select(CELL_SCHEMA.names)))
            kept += cells.num_rows
            files = write_rolled(
                dest_fs,
                task.table_path,
                cells,
                region=task.region,
                family=task.family,
                stem=f"{task.stem}-t{task.number:06d}-k{rank:04d}",
                seq=rank + 1,
                load_id=task.import_id,
                max_file_bytes=task.max_file_bytes,
                row_group_cells=task.row_group_cells,
            )
            written.extend((w, rank) for w in files)
    except BaseException:
        delete_written(dest_fs, task.table_path, [w for w, _ in written])
        raise
    return ImportTaskResult(tuple(written), read, kept)


# --------------------------------------------------------------------------- running
def delete_written(
    fs: fsspec.AbstractFileSystem, table_path: str, files: Sequence[WrittenFile]
) -> None:
    """Delete written store files (best effort: a file already gone is fine)."""
    for w in files:
        with contextlib.suppress(OSError):
            fs.rm(join(table_path, w.relpath))

"""Manifest files of format-version-2 table metadata (docs/format.md, section 13).

A manifest is an immutable Parquet file ``_meta/manifests/<uuid>.parquet`` with one row per
entry: an ``action`` (``add`` or ``remove``), the region start key of the entry's region and
the fields of a :class:`~cellstore.core.metadata.FileEntry`. Rows are sorted by region start,
family, seq and path, in row groups of :data:`SMALL_ROW_GROUP_ENTRIES` or
:data:`ROW_GROUP_ENTRIES` rows with statistics of
``region-start``, so a
reader of one region reads only the row groups whose region-start range can hold it.

A version's live set is its manifests applied oldest first, **last action wins** per key
``(path, region, family)``: an ``add`` makes the key live with that entry (replacing an
earlier one), a ``remove`` makes it not live. Everything here works on whole columns
(pyarrow.compute); only turning rows into :class:`FileEntry` objects is per entry.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cellstore.core.metadata import FileEntry, ManifestRef
from cellstore.errors import CorruptFileError
from cellstore.fs import is_local, join, write_exclusive

__all__ = [
    "MANIFEST_DIR",
    "MANIFEST_SCHEMA",
    "MAX_READ_THREADS",
    "ROW_GROUP_ENTRIES",
    "SMALL_MANIFEST_ENTRIES",
    "SMALL_ROW_GROUP_ENTRIES",
    "apply_last_wins",
    "entries_of",
    "manifest_relpath",
    "read_manifest",
    "read_manifests",
    "ref_of",
    "rows_of",
    "write_manifest",
]

#: Directory of manifest files, relative to the table directory.
MANIFEST_DIR: Final = "_meta/manifests"
#: Rows per Parquet row group of a manifest of up to :data:`SMALL_MANIFEST_ENTRIES` rows
#: (a load's, a merge of a few loads'): a point get decodes one group of every manifest
#: that can hold its region, so small groups keep that decode short (1,024 rows: about
#: 0.5 ms a manifest, 4,096: about 1.4 ms) for about 5% more bytes.
SMALL_ROW_GROUP_ENTRIES: Final = 1024
#: ... and of bigger manifests (a rewritten list of every live entry): their footer stays
#: small (250 groups at 1M entries), and their rows pack tighter (entries of one load in
#: neighbouring regions share a group: a 1M-entry list takes 41% more bytes at 1,024).
ROW_GROUP_ENTRIES: Final = 4096
#: See :data:`SMALL_ROW_GROUP_ENTRIES`.
SMALL_MANIFEST_ENTRIES: Final = 65_536
#: zstd level of manifest files: a merged manifest (runs of one region's entries) packs
#: into about a quarter of level 1's bytes at level 9, for under 2x the write time.
ZSTD_LEVEL: Final = 9
#: Parquet encodings of manifest columns (docs/format.md 13.2 allows any standard Parquet
#: encoding): sorted keys and paths share prefixes (DELTA_BYTE_ARRAY), numbers are close
#: to their neighbours (DELTA_BINARY_PACKED); the rest stay PLAIN.
_ENCODINGS: Final = {
    **dict.fromkeys(
        ("region-start", "path", "region", "first-row", "last-row"), "DELTA_BYTE_ARRAY"
    ),
    **dict.fromkeys(
        ("seq", "cells", "delete-markers", "size", "min-ts", "max-ts"), "DELTA_BINARY_PACKED"
    ),
}
#: Action values.
ADD: Final = "add"
REMOVE: Final = "remove"

#: Column layout of a manifest file (docs/format.md, section 13.2).
MANIFEST_SCHEMA: Final = pa.schema(
    [
        pa.field("action", pa.string(), nullable=False),
        pa.field("region-start", pa.binary(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("region", pa.string(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("cells", pa.int64(), nullable=False),
        pa.field("delete-markers", pa.int64(), nullable=False),
        pa.field("size", pa.int64(), nullable=False),
        pa.field("first-row", pa.binary(), nullable=False),
        pa.field("last-row", pa.binary(), nullable=False),
        pa.field("min-ts", pa.int64(), nullable=False),
        pa.field("max-ts", pa.int64(), nullable=False),
        pa.field("load-id", pa.string(), nullable=False),
        pa.field("footer-digest", pa.string(), nullable=True),
        pa.field("layout", pa.string(), nullable=True),
    ]
)
#: The columns of a manifest without ``layout`` (every file a cell file): what format
#: version 2 writes, and what this release writes when no entry is a column file.
CELLS_ONLY_NAMES: Final = MANIFEST_SCHEMA.names[:-1]
#: Values of the ``layout`` column (null reads as ``cells``).
LAYOUTS: Final = ("cells", "columns")
_SORT_KEYS: Final = [
    ("region-start", "ascending"),
    ("family", "ascending"),
    ("seq", "ascending"),
    ("path", "ascending"),
    ("region", "ascending"),
]
#: Column holding a row's position in apply order while combining manifests.
_ORDER: Final = "__order"


def manifest_relpath() -> str:
    """A fresh manifest path relative to the table directory."""
    return f"{MANIFEST_DIR}/{uuid.uuid4().hex}.parquet"


def rows_of(
    adds: Iterable[FileEntry],
    removes: Iterable[FileEntry],
    starts: dict[str, bytes],
) -> pa.Table:
    """The manifest rows of ``adds`` and ``removes`` (unsorted).

    Args:
        adds: Entries that join the live set.
        removes: Entries that leave it.
        starts: Region id to region start key, for every region of the entries.

    Raises:
        KeyError: an entry's region is not in ``starts``.
    """
    added, removed = list(adds), list(removes)
    entries = added + removed
    cols: dict[str, list[Any]] = {
        "action": [ADD] * len(added) + [REMOVE] * len(removed),
        "region-start": [starts[e.region] for e in entries],
    }
    for name, attr in _FIELDS:
        cols[name] = [getattr(e, attr) for e in entries]
    return pa.table(cols, schema=MANIFEST_SCHEMA)


#: Manifest columns holding a :class:`FileEntry` field, and the field.
_FIELDS: Final = (
    ("path", "path"),
    ("region", "region"),
    ("family", "family"),
    ("seq", "seq"),
    ("cells", "cells"),
    ("delete-markers", "delete_markers"),
    ("size", "size"),
    ("first-row", "first_row"),
    ("last-row", "last_row"),
    ("min-ts", "min_ts"),
    ("max-ts", "max_ts"),
    ("load-id", "load_id"),
    ("footer-digest", "footer_digest"),
    ("layout", "layout"),
)


def entries_of(table: pa.Table) -> list[FileEntry]:
    """The :class:`FileEntry` of every row of a manifest table (action ignored).

    A table's whole live set can hold a million entries, so they are built without the
    frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field, 5 us an entry):
    each instance gets its field dict in one step, the same state ``__init__`` would set
    (``FileEntry`` has no ``__post_init__``; the manifest schema fixes the field types).
    """
    columns = [table.column(name).to_pylist() for name, _ in _FIELDS]
    attrs = tuple(attr for _, attr in _FIELDS)
    new = object.__new__
    entries = []
    for values in zip(*columns, strict=True):
        entry = new(FileEntry)
        entry.__dict__.update(zip(attrs, values, strict=True))
        entries.append(entry)
    return entries


def _keys(table: pa.Table) -> pa.Array:
    """One string per row identifying its key (path, region, family)."""
    sep = "\x00"
    return pc.binary_join_element_wise(
        table.column("path"), table.column("region"), table.column("family"), sep
    )


def apply_last_wins(
    tables: Sequence[pa.Table], *, keep_removes: bool = False, drop_cancelled: bool = True
) -> pa.Table:
    """Combine manifest tables given oldest first: the last row of every key.

    Args:
        tables: Manifest tables in apply order.
        keep_removes: Keep keys whose last action is ``remove`` (a merge of a run that
            does not start at the oldest manifest must keep them, to cancel older adds),
            except those whose first action in ``tables`` is ``add`` (``drop_cancelled``):
            the key was not live before the run, so the pair cancels.
        drop_cancelled: See ``keep_removes``.

    Returns:
        Rows in manifest order (region start, family, seq, path) without the order column;
        with ``keep_removes`` False, only ``add`` rows: the live entries.
    """
    parts = []
    offset = 0
    for t in tables:
        t = t.select(MANIFEST_SCHEMA.names).cast(MANIFEST_SCHEMA)
        parts.append(t.append_column(_ORDER, pa.array(range(offset, offset + len(t)), pa.int64())))
        offset += len(t)
    if not parts:
        return MANIFEST_SCHEMA.empty_table()
    both = pa.concat_tables(parts)
    if both.num_rows == 0:
        return both.drop_columns([_ORDER])
    both = both.append_column("__key", _keys(both))
    both = both.take(pc.sort_indices(both, [("__key", "ascending"), (_ORDER, "ascending")]))
    keys = both.column("__key").combine_chunks()
    n = both.num_rows
    nxt = pc.not_equal(keys.slice(0, n - 1), keys.slice(1))
    last = pa.concat_arrays([nxt, pa.array([True])])
    prev = pa.concat_arrays([pa.array([True]), nxt])
    is_add = pc.equal(both.column("action"), ADD)
    if keep_removes:
        keep = last
        if drop_cancelled:
            # first action of the key (where it starts) is add, last is remove: cancelled
            first_action = pc.if_else(prev, both.column("action"), pa.scalar(None, pa.string()))
            first_filled = pc.fill_null_forward(first_action)
            cancelled = pc.and_(pc.equal(first_filled, ADD), pc.invert(is_add))
            keep = pc.and_(keep, pc.invert(cancelled))
    else:
        keep = pc.and_(last, is_add)
    out = both.filter(keep).drop_columns(["__key", _ORDER])
    return out.take(pc.sort_indices(out, _SORT_KEYS))


def write_manifest(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    rows: pa.Table,
    *,
    level: int,
    added_version: int,
) -> ManifestRef:
    """Write ``rows`` as a new manifest file (sorted, zstd, delta encodings, small row groups).

    Returns:
        The reference a root lists it by.
    """
    rows = rows.select(MANIFEST_SCHEMA.names).cast(MANIFEST_SCHEMA)
    rows = rows.take(pc.sort_indices(rows, _SORT_KEYS))
    layout = rows.column("layout")
    # no column file among the entries: the columns format version 2 knows (13.2)
    cells_only = pc.all(pc.equal(pc.fill_null(layout, "cells"), "cells")).as_py() is not False
    sink = pa.BufferOutputStream()
    pq.write_table(
        rows.select(CELLS_ONLY_NAMES) if cells_only else rows,
        sink,
        compression="zstd",
        compression_level=ZSTD_LEVEL,
        use_dictionary=False,  # smaller and faster to read at these sizes
        column_encoding=_ENCODINGS,
        row_group_size=(
            SMALL_ROW_GROUP_ENTRIES
            if rows.num_rows <= SMALL_MANIFEST_ENTRIES
            else ROW_GROUP_ENTRIES
        ),
        write_statistics=["region-start"],  # what readers select row groups by
        store_schema=False,  # readers cast to MANIFEST_SCHEMA; saves ~1 KB a manifest
    )
    data = sink.getvalue().to_pybytes()
    rel = manifest_relpath()
    write_exclusive(fs, join(table_path, rel), data)
    return ref_of(rows, path=rel, level=level, added_version=added_version, size=len(data))


def ref_of(rows: pa.Table, *, path: str, level: int, added_version: int, size: int) -> ManifestRef:
    """The summary of a manifest's rows (what a root records about it)."""
    n = rows.num_rows
    adds = int(pc.sum(pc.equal(rows.column("action"), ADD)).as_py() or 0) if n else 0
    if n:
        starts = pc.min_max(rows.column("region-start"))
        seqs = pc.min_max(rows.column("seq"))
        lo, hi = starts["min"].as_py(), starts["max"].as_py()
        min_seq, max_seq = seqs["min"].as_py(), seqs["max"].as_py()
    else:
        lo = hi = b""
        min_seq = max_seq = 0
    return ManifestRef(
        path=path,
        level=level,
        adds=adds,
        removes=n - adds,
        min_region_start=lo,
        max_region_start=hi,
        min_seq=min_seq,
        max_seq=max_seq,
        added_version=added_version,
        size=size,
    )


def read_manifest(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    ref: ManifestRef,
    *,
    region_starts: Sequence[bytes] | None = None,
) -> pa.Table:
    """Rows of one manifest; with ``region_starts``, only row groups that can hold them.

    Reads the footer and then only the chosen row groups (ranged reads).

    Raises:
        CorruptFileError: it is missing, or not a manifest (wrong columns, unreadable,
            invalid values).
    """
    path = join(table_path, ref.path)
    table = _read_rows(fs, path, region_starts)
    problem = _problem(table)
    if problem:
        raise CorruptFileError(f"{path}: manifest {problem}")
    return table


def _read_rows(
    fs: fsspec.AbstractFileSystem, path: str, region_starts: Sequence[bytes] | None
) -> pa.Table:
    """:func:`read_manifest` without the check of the values (:func:`_problem`).

    A local file is opened by pyarrow itself, so that reading it never takes the GIL (the
    threads of :func:`read_manifests` then run in parallel).
    """
    try:
        source = pa.OSFile(fs._strip_protocol(path)) if is_local(fs) else fs.open(path, "rb")
        with source as f:
            pf = pq.ParquetFile(f)
            names = pf.schema_arrow.names
            if names != MANIFEST_SCHEMA.names and names != CELLS_ONLY_NAMES:
                raise CorruptFileError(f"{path}: manifest columns {names} are not ours")
            if region_starts is None:
                table = pf.read(use_threads=False)
            else:
                groups = _row_groups(pf, region_starts)
                table = (
                    pf.read_row_groups(groups, use_threads=False)
                    if groups
                    else MANIFEST_SCHEMA.empty_table().select(names)
                )
        layout = (
            pc.fill_null(table.column("layout"), "cells")
            if "layout" in names
            else pa.array(["cells"] * table.num_rows, pa.string())
        )
        table = table.select(CELLS_ONLY_NAMES).append_column("layout", layout)
        return table.cast(MANIFEST_SCHEMA)
    except FileNotFoundError as e:
        raise CorruptFileError(f"{path}: manifest file is missing") from e
    except (OSError, pa.ArrowException, ValueError) as e:
        raise CorruptFileError(f"{path}: not a readable manifest file ({e})") from e


#: Most manifests one call of :func:`read_manifests` reads at once from an object store
#: (threads: the requests overlap, and pyarrow decodes without holding the GIL); from the
#: local disk at most one per core (pyarrow.cpu_count()), as reading is CPU-bound there.
MAX_READ_THREADS: Final = 8


def read_manifests(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    refs: Sequence[ManifestRef],
    *,
    region_starts: Sequence[bytes] | None = None,
    region_ids: Sequence[str] | None = None,
) -> list[pa.Table]:
    """Rows of several manifests, read concurrently, in the order of ``refs``.

    Each is read as by :func:`read_manifest` (with ``region_starts``: only the row groups
    that can hold them) on the threads of a pool that lives for this call only (at most
    :data:`MAX_READ_THREADS`); the values are checked once, over all rows kept.

    Args:
        fs: The table's filesystem.
        table_path: The table directory.
        refs: The manifests.
        region_starts: See :func:`read_manifest`.
        region_ids: Keep only the rows of these regions (a key includes its region, so
            other regions' rows cannot change these regions' live entries), and, with
            ``region_starts``, the rows of any region recorded at one of those starts (a
            live one there is damage the caller checks for).

    Raises:
        CorruptFileError: as :func:`read_manifest`, naming the first bad manifest in
            ``refs`` order (manifests not started yet when a read fails are not read).
    """
    ids = None if region_ids is None else pa.array(sorted(set(region_ids)), pa.string())
    at = None if region_starts is None else pa.array(sorted(set(region_starts)), pa.binary())
    paths = [join(table_path, ref.path) for ref in refs]

    def one(path: str) -> pa.Table:
        rows = _read_rows(fs, path, region_starts)
        if ids is not None:
            keep = pc.is_in(rows.column("region"), value_set=ids)
            if at is not None:
                keep = pc.or_(keep, pc.is_in(rows.column("region-start"), value_set=at))
            rows = rows.filter(keep)
        return rows

    threads = min(len(paths), MAX_READ_THREADS)
    if is_local(fs):
        threads = min(threads, max(2, pa.cpu_count()))
    if threads <= 1:
        tables = [one(path) for path in paths]
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            futures = [pool.submit(one, path) for path in paths]
            try:
                tables = [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    if len(tables) > 1 and _problem(pa.concat_tables(tables)) is None:
        return tables  # one check over all rows: the usual case
    for path, table in zip(paths, tables, strict=True):
        problem = _problem(table)
        if problem:
            raise CorruptFileError(f"{path}: manifest {problem}")
    return tables


def _problem(table: pa.Table) -> str | None:
    """What makes manifest rows invalid (checked on whole columns), or None."""
    if table.num_rows == 0:
        return None
    if not pc.all(pc.is_in(table.column("action"), value_set=pa.array([ADD, REMOVE]))).as_py():
        return "has an action other than add and remove"
    for name in ("cells", "delete-markers", "size"):
        if pc.min(table.column(name)).as_py() < 0:
            return f"has a negative {name}"
    if not pc.all(pc.is_in(table.column("layout"), value_set=pa.array(LAYOUTS))).as_py():
        return "has a layout other than cells and columns"
    digests = table.column("footer-digest")
    ok = pc.match_substring_regex(digests, r"^[0-9a-f]{16}$")
    if not pc.all(pc.or_kleene(ok, pc.is_null(digests))).as_py():
        return "has a footer-digest that is not 16 lower-case hex digits"
    return None


def _row_groups(pf: pq.ParquetFile, region_starts: Sequence[bytes]) -> list[int]:
    """Row groups whose region-start statistics can hold one of ``region_starts``."""
    col = 1  # region-start
    groups = []
    for i in range(pf.metadata.num_row_groups):
        stats = pf.metadata.row_group(i).column(col).statistics
        if stats is None or not stats.has_min_max:
            groups.append(i)
            continue
        lo, hi = _as_bytes(stats.min), _as_bytes(stats.max)
        if any(lo <= s <= hi for s in region_starts):
            groups.append(i)
    return groups


def _as_bytes(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    raise TypeError(f"unexpected statistics value {value!r}")

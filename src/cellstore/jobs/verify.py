"""Verify: check a table version's manifest and every live store file; report, never crash.

Two kinds of checks (docs/format.md sections 6, 8 and 9):

- **manifest**: regions sorted, contiguous and covering all keys with unique ids below
  ``next-region-id``; families unique and in name order; every entry's region and family
  exist; no entry given twice (same path, region and family); ``1 <= seq < next-seq``;
  entry statistics consistent; paths relative and inside the table directory (``..`` only
  as a clone's link ``../../../<namespace>/<qualifier>/<uuid>/...``, which stays inside
  the warehouse root; :func:`cellstore.storefiles.layout.entry_path_problem`); snapshot
  versions exist. A file whose path is refused is not opened.
- **manifest files** (format version 2): every manifest the root lists exists, parses,
  holds each key at most once and matches the root's summary of it; the root's totals
  match the live set (:func:`manifest_file_problems`).
- **files**, for every entry (in parallel): the file exists and has the entry's size; its
  Parquet footer has the entry's footer digest, if recorded (compared before the footer is
  parsed: a mismatch is a problem, never a crash); it opens and its footer parses; every
  Parquet page passes its checksum; cells are in cell order with unique keys, with valid
  types, rows and timestamps; the footer's statistics equal the data and the entry
  (:func:`cellstore.storefiles.check`); its rows lie inside the entry's region (splits
  keep this invariant by re-assigning or cutting files).

Problems are collected in a :class:`VerifyReport`; a corrupt or missing file is one more
problem, never an exception. The CLI exits with code 9 when there are any.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Literal

import fsspec

from cellstore.core.metadata import (
    UNASSIGNED_SEQ,
    FileEntry,
    FileTotals,
    TableMetadata,
    regions_to_list,
)
from cellstore.core.regions import Region, check_regions
from cellstore.core.results import Checked, JsonForm
from cellstore.errors import CellstoreError, VerifyError
from cellstore.fs import join
from cellstore.handle import TableHandle
from cellstore.manifest.files import MANIFEST_DIR, read_manifest, ref_of
from cellstore.storefiles import check
from cellstore.storefiles.layout import entry_path, entry_path_problem

__all__ = [
    "VerifyProblem",
    "VerifyReport",
    "check_entry",
    "manifest_file_problems",
    "manifest_problems",
    "verify",
]

#: Files checked at once by default (reading and decoding release the GIL).
DEFAULT_WORKERS: Final = 4
#: Problems the text of :class:`~cellstore.errors.VerifyError` lists before "... and N more".
_MESSAGE_PROBLEMS: Final = 5


@dataclass(frozen=True)
class VerifyProblem(JsonForm):
    """One broken invariant.

    Attributes:
        kind: ``manifest`` (the metadata document) or ``file`` (a store file).
        message: What is wrong.
        path: The entry's path (relative to the table directory), for file problems.
        region: The entry's region id, if the problem concerns one.
        family: The entry's family, if the problem concerns one.
    """

    json_keys = "kind path region family message"

    kind: Literal["manifest", "file"]
    message: str
    path: str | None = None
    region: str | None = None
    family: str | None = None

    def __str__(self) -> str:
        where = f"{self.path} ({self.region}/{self.family}): " if self.path is not None else ""
        return f"{self.kind}: {where}{self.message}"


@dataclass(frozen=True)
class VerifyReport(Checked, JsonForm):
    """Outcome of :func:`verify`.

    Attributes:
        table: The table's name.
        version: The version verified.
        files: Entries whose files were checked.
        cells: Cells those entries hold (per the manifest).
        bytes: Their total size (per the manifest).
        problems: Every problem found, manifest problems first.
    """

    json_keys = "table version ok files cells bytes problems"

    table: str
    version: int
    files: int
    cells: int
    bytes: int
    problems: tuple[VerifyProblem, ...]

    def raise_for_problems(self) -> None:
        """Raise :class:`~cellstore.errors.VerifyError` (CLI exit code 9) if not :attr:`ok`."""
        if self.ok:
            return
        shown = "; ".join(str(p) for p in self.problems[:_MESSAGE_PROBLEMS])
        more = len(self.problems) - _MESSAGE_PROBLEMS
        tail = f"; ... and {more} more" if more > 0 else ""
        raise VerifyError(
            f"table {self.table} version {self.version}: {len(self.problems)} problem(s): "
            f"{shown}{tail}"
        )


# -------------------------------------------------------------------------------- manifest
def _region_number(region_id: str) -> int | None:
    digits = region_id.lstrip("r")
    return int(digits) if digits.isdigit() else None


def manifest_problems(meta: TableMetadata, *, table_path: str = "") -> list[VerifyProblem]:
    """Inconsistencies inside one metadata version (pure; reads nothing).

    Args:
        meta: The version.
        table_path: The table directory (not needed any more: a table directory is always
            three levels below the root, so the path checks are lexical).
    """
    out: list[VerifyProblem] = []

    def bad(message: str, entry: FileEntry | None = None) -> None:
        if entry is None:
            out.append(VerifyProblem("manifest", message))
        else:
            out.append(VerifyProblem("manifest", message, entry.path, entry.region, entry.family))

    try:
        check_regions(meta.regions)
    except CellstoreError as e:
        bad(f"regions: {e}")
    for r in meta.regions:
        number = _region_number(r.id)
        if number is not None and number >= meta.next_region_id:
            bad(f"region id {r.id} is not below next-region-id {meta.next_region_id}")
    names = [f.name for f in meta.families]
    if len(set(names)) != len(names):
        bad(f"families are not unique: {names}")
    elif names != sorted(names, key=lambda n: n.encode("utf-8")):
        bad(f"families are not in name order: {names}")
    regions = {r.id for r in meta.regions}
    families = set(names)
    seen: Counter[tuple[str, str, str]] = Counter()
    for f in meta.files:
        seen[(f.path, f.region, f.family)] += 1
        if f.region not in regions:
            bad(f"region {f.region} does not exist", f)
        if f.family not in families:
            bad(f"family {f.family!r} does not exist", f)
        if not 1 <= f.seq < meta.next_seq and f.seq != UNASSIGNED_SEQ:  # -1: R14.5
            bad(f"seq {f.seq} is not in 1..{meta.next_seq - 1} (next-sequence-number)", f)
        if f.cells < 1 or not 0 <= f.delete_markers <= f.cells:
            bad(f"cells {f.cells} / delete markers {f.delete_markers} are inconsistent", f)
        if f.first_row > f.last_row or f.min_ts > f.max_ts or f.min_ts < 0:
            bad("first/last row or min/max ts are inverted or negative", f)
        if f.size <= 0:
            bad(f"size {f.size} is not positive", f)
        problem = entry_path_problem(f.path)
        if problem is not None:
            bad(f"path {problem}", f)
    for (path, region, family), n in sorted(seen.items()):
        if n > 1:
            out.append(VerifyProblem("manifest", f"entry listed {n} times", path, region, family))
    for name, ref in sorted(meta.snapshots.items()):
        if not 1 <= ref.version <= meta.version:
            bad(f"snapshot {name!r} names version {ref.version}, not in 1..{meta.version}")
    return out


def manifest_file_problems(
    fs: fsspec.AbstractFileSystem, table_path: str, meta: TableMetadata
) -> list[VerifyProblem]:
    """Problems of a format-version-2 version's manifest files (docs/format.md 13).

    Every listed manifest exists, parses as a manifest, holds each key at most once, has
    only ``add``/``remove`` actions and matches the summary the root records (row counts,
    region-start and seq ranges, byte size); the root's totals match the live set. A
    problem whose message starts with ``manifest file`` means the live set cannot be read.
    Version-1 metadata has none of these.
    """
    out: list[VerifyProblem] = []
    if meta.format_version < 2:
        return out
    out.extend(part_problems(fs, table_path, meta))
    for ref in meta.manifests:
        where = f"manifest file {ref.path}"
        if entry_path_problem(ref.path) is not None or not ref.path.startswith(MANIFEST_DIR + "/"):
            out.append(VerifyProblem("manifest", f"{where}: path is not under {MANIFEST_DIR}/"))
            continue
        try:
            rows = read_manifest(fs, table_path, ref)
            size = int(fs.info(join(table_path, ref.path))["size"])
        except FileNotFoundError:
            out.append(VerifyProblem("manifest", f"{where} is missing"))
            continue
        except (CellstoreError, OSError) as e:
            out.append(VerifyProblem("manifest", f"{where} is unreadable: {e}"))
            continue
        actual = ref_of(
            rows, path=ref.path, level=ref.level, added_version=ref.added_version, size=size
        )
        if actual != ref:
            out.append(
                VerifyProblem(
                    "manifest", f"manifest {ref.path}: summary {ref} != contents {actual}"
                )
            )
        if not set(rows.column("action").unique().to_pylist()) <= {"add", "remove"}:
            out.append(VerifyProblem("manifest", f"manifest {ref.path}: unknown action"))
        keys = set(
            zip(*(rows.column(c).to_pylist() for c in ("path", "region", "family")), strict=True)
        )
        if len(keys) != rows.num_rows:
            out.append(VerifyProblem("manifest", f"manifest {ref.path}: a key appears twice"))
    if not out:
        try:
            actual_totals = FileTotals.of(meta.files)
        except (CellstoreError, OSError) as e:
            return [VerifyProblem("manifest", f"manifest file list unreadable: {e}")]
        if meta.totals != actual_totals:
            out.append(
                VerifyProblem("manifest", f"totals {meta.totals} != live files {actual_totals}")
            )
    return out


def part_problems(
    fs: fsspec.AbstractFileSystem, table_path: str, meta: TableMetadata
) -> list[VerifyProblem]:
    """Problems of the part documents a format-version-2 root refers to (13.1).

    Each part (``regions-ref``, ``load-ids-ref``, ``manifests-ref``) exists, is a JSON list
    named by the SHA-256 of its bytes, and holds what the version resolved from it (the
    version's regions, its oldest load ids, its oldest manifests). A root whose part is
    missing or unreadable does not open at all (the error names the part); this finds a
    part damaged or removed since, or one whose bytes no longer match its name.
    """
    out: list[VerifyProblem] = []
    expected: dict[str, Any] = {}
    if meta.regions_ref is not None:
        expected[meta.regions_ref] = regions_to_list(meta.regions)
    if meta.load_ids_ref is not None:
        expected[meta.load_ids_ref] = list(meta.load_ids[: meta.load_ids_paged])
    if meta.manifests_ref is not None:
        paged = meta.manifests[: meta.manifests_paged]
        expected[meta.manifests_ref] = [m.to_dict() for m in paged]
    for rel, want in expected.items():
        where = f"part file {rel}"
        try:
            path = join(table_path, rel)
            fs.invalidate_cache(path)
            data = fs.cat_file(path)
        except FileNotFoundError:
            out.append(VerifyProblem("manifest", f"{where} is missing"))
            continue
        except OSError as e:
            out.append(VerifyProblem("manifest", f"{where} is unreadable: {e}"))
            continue
        name = rel.rsplit("/", 1)[-1].removesuffix(".json")
        if hashlib.sha256(data).hexdigest()[:32] != name:
            out.append(VerifyProblem("manifest", f"{where}: bytes do not match its SHA-256 name"))
        try:
            got = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            out.append(VerifyProblem("manifest", f"{where} is not valid JSON: {e}"))
            continue
        if got != want:
            out.append(VerifyProblem("manifest", f"{where}: contents differ from the version's"))
    return out


# ----------------------------------------------------------------------------------- files
def check_entry(
    fs: fsspec.AbstractFileSystem, table_path: str, entry: FileEntry, region: Region | None
) -> list[VerifyProblem]:
    """Problems of one live entry's file (never raises for a bad or missing file)."""
    out: list[VerifyProblem] = []

    def bad(message: str) -> None:
        out.append(VerifyProblem("file", message, entry.path, entry.region, entry.family))

    if entry_path_problem(entry.path) is not None:
        return out  # a manifest problem (manifest_problems); the file is not opened
    path = entry_path(table_path, entry.path)
    try:
        fs.invalidate_cache(path)
        size = int(fs.info(path)["size"])
    except FileNotFoundError:
        bad("file is missing")
        return out
    except OSError as e:
        bad(f"cannot stat: {e}")
        return out
    if size != entry.size:
        bad(f"file size {size} != manifest size {entry.size}")
    report = check(fs, path, region=region, entry=entry)
    for message in report.problems:
        if size != entry.size and message.startswith("manifest size"):
            continue  # said above
        bad(message)
    return out


def verify(
    table: TableHandle,
    *,
    workers: int = DEFAULT_WORKERS,
    client: Any = None,
) -> VerifyReport:
    """Check the manifest and every live file of the version ``table`` points at.

    Args:
        table: The table (a handle pinned with ``version=`` verifies that version).
        workers: Files checked at once on local threads.
        client: A ``distributed.Client`` to check files on instead (the filesystem is
            pickled to the workers, so it must be reachable from them).

    Returns:
        A :class:`VerifyReport`; call :meth:`VerifyReport.raise_for_problems` to turn
        problems into a :class:`~cellstore.errors.VerifyError`.
    """
    meta = table.metadata
    structure = manifest_file_problems(table.fs, table.path, meta)
    if any(p.message.startswith("manifest file") for p in structure):
        # the live set cannot be read: report what is wrong, check no store file
        return VerifyReport(
            table=str(table.name),
            version=meta.version,
            files=0,
            cells=0,
            bytes=0,
            problems=tuple(structure),
        )
    problems = [*structure, *manifest_problems(meta, table_path=table.path)]
    regions = {r.id: r for r in meta.regions}
    entries: Sequence[FileEntry] = meta.files
    args = [(table.fs, table.path, e, regions.get(e.region)) for e in entries]
    results: list[list[VerifyProblem]]
    if client is not None:
        futures = client.map(check_entry, *zip(*args, strict=True), pure=False) if args else []
        results = list(client.gather(futures))
    elif len(args) <= 1 or workers <= 1:
        results = [check_entry(*a) for a in args]
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(args))) as pool:
            results = list(pool.map(lambda a: check_entry(*a), args))
    for found in results:
        problems.extend(found)
    return VerifyReport(
        table=str(table.name),
        version=meta.version,
        files=len(entries),
        cells=sum(e.cells for e in entries),
        bytes=sum(e.size for e in entries),
        problems=tuple(problems),
    )

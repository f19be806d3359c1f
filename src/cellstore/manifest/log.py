"""Numbered, immutable metadata versions and the exclusive-create commit protocol.

A :class:`VersionLog` is a directory of JSON documents ``v00000000000000000001.json``,
``v...2.json``, ... Version N+1 is committed by creating its file with exclusive create; if
the file already exists another writer won, so the committer re-reads the latest version,
re-applies its change to it and tries again. Changes are functions of the base version,
so two concurrent committers never lose each other's work.

A ``latest`` hint file speeds up finding the newest version; it is only a hint: readers
probe forward from it until a version is missing, so a stale or lost hint is harmless.
Nothing here lists directories.

Two logs exist: each table's metadata (``<table>/_meta/``) and the warehouse catalog of
table names (``<root>/_catalog/``).

For a format-version-2 table (docs/format.md section 13) :class:`TableLog` also writes
what a root refers to: one manifest file per commit that changes files (merging runs of
manifests size-tiered), and part documents for large region lists, load ids and the
leading (merged) part of the manifest list; and it resolves them when it reads a version
(:meth:`TableLog.read`, the only parser of roots: every reader of a manifest list gets the
whole, resolved list; the live set is read lazily, see
:class:`~cellstore.manifest.live.LiveFiles`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar, overload

import fsspec
import pyarrow as pa

from cellstore.core.metadata import (
    MAX_REMEMBERED_LOAD_IDS,
    FileTotals,
    ManifestRef,
    TableMetadata,
    json_object,
    regions_to_list,
)
from cellstore.errors import CommitConflictError, CorruptFileError
from cellstore.fs import join, write_bytes, write_exclusive
from cellstore.manifest.files import apply_last_wins, read_manifests, rows_of, write_manifest
from cellstore.manifest.live import LiveFiles, entry_key

__all__ = [
    "CommitOutcome",
    "TableLog",
    "VersionLog",
    "version_file_name",
]

T = TypeVar("T")

#: How many times a commit re-applies its change before giving up.
MAX_COMMIT_ATTEMPTS: Final = 64
#: Format version 2: this many newest level-0 manifests are merged into one of level 1 by
#: the commit that makes them so many (size-tiered, docs/format.md 13.4).
MERGE_FAN_IN: Final = 16
#: ... and this many newest manifests of a higher level L into one of level L + 1.
UPPER_MERGE_FAN_IN: Final = 4
#: Format version 2: a root lists at most this many regions itself (more go to a part).
INLINE_REGIONS: Final = 64
#: Format version 2: a root lists fewer than this many load ids itself; the rest are in a
#: part document rewritten (trimmed to MAX_REMEMBERED_LOAD_IDS) when the inline ones fill.
INLINE_LOAD_IDS: Final = 64
#: Format version 2: a root shares the leading manifests of level >= 1 through a part
#: document when there are at least this many (13.1) ...
MIN_PAGED_MANIFESTS: Final = 2
#: ... and lists fewer than this many manifests itself (more go into a new part, level 0
#: included, so a root stays small when runs cannot be merged).
INLINE_MANIFESTS: Final = 64
#: Directory of part documents (regions, load ids, manifests), relative to the table
#: directory.
PARTS_DIR: Final = "_meta/parts"
_PART_PATH: Final = re.compile(r"_meta/parts/[0-9a-f]{32}\.json")
#: A commit merges manifests inline only while the run holds at most this many rows, so
#: that it writes at most about 1 MB (a merged entry of a real load takes about 40 bytes:
#: 16,000 of them about 0.65 MB); bigger runs are left to ``rewrite_manifests``
#: (``cellstore expire --rewrite-manifests``, and ``maintain`` when a table lists more
#: than 32 manifests). Readers stay correct either way.
MAX_INLINE_MERGE_ENTRIES: Final = 16_000


def version_file_name(version: int) -> str:
    """File name of metadata version ``version`` (zero-padded so names sort by version)."""
    return f"v{version:020d}.json"


@dataclass(frozen=True)
class CommitOutcome:
    """Result of a commit: the version written and how many attempts it took."""

    version: int
    attempts: int


class VersionLog:
    """A directory of numbered, immutable JSON versions on an fsspec filesystem.

    Args:
        fs: The filesystem.
        path: The log directory.
    """

    def __init__(self, fs: fsspec.AbstractFileSystem, path: str) -> None:
        self.fs = fs
        self.path = path

    def version_path(self, version: int) -> str:
        """Path of version ``version``."""
        return join(self.path, version_file_name(version))

    @property
    def hint_path(self) -> str:
        """Path of the ``latest`` hint file."""
        return join(self.path, "latest")

    @property
    def oldest_path(self) -> str:
        """Path of the ``oldest`` file: versions 2 .. oldest - 1 were expired."""
        return join(self.path, "oldest")

    def oldest_version(self) -> int:
        """Lowest version of the unbroken run that ends at the newest (1 unless expired).

        Version 1 is never expired; versions 2 .. ``oldest - 1`` may have been
        (docs/format.md 13.5).
        """
        return self._read_number(self.oldest_path, floor=1)

    def set_oldest_version(self, version: int) -> None:
        """Record that versions below ``version`` (but 1) may be deleted (expire only)."""
        write_bytes(self.fs, self.oldest_path, str(version).encode("ascii"))

    def read_bytes(self, version: int) -> bytes:
        """Bytes of version ``version``.

        Raises:
            FileNotFoundError: if that version does not exist.
        """
        path = self.version_path(version)
        self.fs.invalidate_cache(path)
        data: bytes = self.fs.cat_file(path)
        return data

    def exists(self, version: int) -> bool:
        """Whether version ``version`` has been committed."""
        path = self.version_path(version)
        self.fs.invalidate_cache(path)
        return bool(self.fs.exists(path))

    def _hint(self) -> int:
        return self._read_number(self.hint_path, floor=0)

    def _read_number(self, path: str, *, floor: int) -> int:
        """The ASCII number in the small file ``path``, at least ``floor``.

        ``floor`` when the file is missing or holds no number.
        """
        try:
            self.fs.invalidate_cache(path)
            text = self.fs.cat_file(path).decode("ascii").strip()
            return max(int(text), floor)
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return floor

    def latest_version(self) -> int:
        """The newest committed version, or 0 if the log is empty.

        Starts from the hint and probes forward while the next version exists. If the hint
        points at a missing version (it can only run ahead after manual tampering), falls
        back to probing from version 1, or from the ``oldest`` version when versions were
        expired (format version 2, docs/format.md 13.5).
        """
        v = self._hint()
        if v > 0 and not self.exists(v):
            v = 0
        oldest = self.oldest_version()
        if v < oldest and oldest > 1 and self.exists(oldest):
            v = oldest  # versions were expired: never probe across the gap
        while self.exists(v + 1):
            v += 1
        return v

    def create(self, version: int, data: bytes) -> None:
        """Create version ``version`` exclusively and update the hint.

        Raises:
            FileExistsError: if the version exists already (a concurrent commit won).
        """
        write_exclusive(self.fs, self.version_path(version), data)
        with contextlib.suppress(OSError):  # the hint is an optimisation only
            write_bytes(self.fs, self.hint_path, str(version).encode("ascii"))

    def commit(
        self,
        read: Callable[[int], T],
        update: Callable[[T | None, int], tuple[bytes, T]],
        *,
        base_version: int | None = None,
    ) -> tuple[T, CommitOutcome]:
        """Commit the next version, re-applying ``update`` on conflict.

        Args:
            read: Parses version N (called with the base version number).
            update: Given the base document (None when the log is empty) and the new
                version number, returns the serialized new version and its parsed form.
                It must be a pure function of its inputs: it runs again, on the newer base,
                after a conflict. It may raise to abort (e.g. CommitConflictError when its
                preconditions no longer hold).
            base_version: Version to start from (default: the latest).

        Returns:
            The new document and the commit outcome.

        Raises:
            CommitConflictError: when :data:`MAX_COMMIT_ATTEMPTS` attempts all conflicted.
        """
        base = self.latest_version() if base_version is None else base_version
        for attempt in range(1, MAX_COMMIT_ATTEMPTS + 1):
            doc = read(base) if base > 0 else None
            data, new_doc = update(doc, base + 1)
            try:
                self.create(base + 1, data)
            except FileExistsError:
                # Someone else committed base + 1: move to the newest version and retry.
                base = max(base + 1, self.latest_version())
                time.sleep(random.uniform(0, min(0.2, 0.005 * 2**attempt)))
                continue
            return new_doc, CommitOutcome(base + 1, attempt)
        raise CommitConflictError(
            f"{self.path}: gave up after {MAX_COMMIT_ATTEMPTS} conflicting commit attempts"
        )


class TableLog(VersionLog):
    """The metadata log of one table (``<table>/_meta/``).

    Args:
        fs: The filesystem.
        table_path: The table directory.
        merge_fan_in: Format version 2: merge this many newest level-0 manifests.
        upper_merge_fan_in: Format version 2: merge this many newest manifests of a
            higher level.
        max_inline_merge_entries: Format version 2: merge inline only runs this small.
        manifest_parts: Format version 2: share the leading manifests of a root through a
            part document (``manifests-ref``, 13.1). False writes every manifest into the
            root, as writers before ``manifests-ref`` did (benchmarks and tests only;
            reading is the same either way).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        *,
        merge_fan_in: int = MERGE_FAN_IN,
        upper_merge_fan_in: int = UPPER_MERGE_FAN_IN,
        max_inline_merge_entries: int = MAX_INLINE_MERGE_ENTRIES,
        manifest_parts: bool = True,
    ) -> None:
        super().__init__(fs, join(table_path, "_meta"))
        self.table_path = table_path
        self.merge_fan_in = max(2, merge_fan_in)
        self.upper_merge_fan_in = max(2, upper_merge_fan_in)
        self.max_inline_merge_entries = max_inline_merge_entries
        self.manifest_parts = manifest_parts

    def read(self, version: int) -> TableMetadata:
        """Metadata version ``version`` (format version 2: with its lazy live set).

        Raises:
            FileNotFoundError: if the version does not exist.
            CorruptFileError: if the file is not valid metadata.
        """
        source = self.version_path(version)
        data = self.read_bytes(version)
        doc = json_object(data, source=source)
        version_field = doc.get("format-version")
        if type(version_field) is int and version_field >= 2:
            self._resolve_parts(doc, source)
        meta = TableMetadata.from_dict(doc, source=source)
        if meta.version != version:
            raise CorruptFileError(
                f"{self.version_path(version)} claims to be version {meta.version}"
            )
        if meta.format_version >= 2:
            live = LiveFiles(
                self.fs,
                self.table_path,
                meta.manifests,
                regions={r.id: r.start for r in meta.regions},
                where=f"{self.version_path(version)} (version {version})",
            )
            meta = meta.evolve(files=live)
        return meta

    # ------------------------------------------------------------------- parts
    def _read_part(self, path: Any, source: str) -> list[Any]:
        if not isinstance(path, str) or not _PART_PATH.fullmatch(path):
            raise CorruptFileError(f"{source}: part path {path!r} is not {PARTS_DIR}/<hex>.json")
        try:
            part = json.loads(self.fs.cat_file(join(self.table_path, path)))
        except FileNotFoundError as e:
            raise CorruptFileError(f"{source}: part {path} is missing") from e
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            raise CorruptFileError(f"{source}: part {path} is not valid JSON ({e})") from e
        if not isinstance(part, list):
            raise CorruptFileError(f"{source}: part {path} is not a JSON list")
        return part

    def read_part(self, path: Any, *, source: str = "") -> list[Any]:
        """The JSON list of part document ``path`` (relative to the table directory).

        Raises:
            CorruptFileError: naming the part (and ``source``, the root referring to it)
                when the path is not a part path, or the part is missing, not JSON or not a
                list.
        """
        return self._read_part(path, source or self.path)

    def _resolve_parts(self, doc: dict[str, Any], source: str) -> None:
        """Replace a root's part references by the parts' lists (keeping the references).

        This is the one place that resolves ``regions-ref``, ``load-ids-ref`` and
        ``manifests-ref`` (docs/format.md 13.1).
        """
        if "regions-ref" in doc:
            doc["regions"] = self._read_part(doc["regions-ref"], source)
        mref = doc.get("manifests-ref")
        if mref is not None:
            if not isinstance(mref, dict) or not isinstance(mref.get("count"), int):
                raise CorruptFileError(f"{source}: manifests-ref {mref!r} is malformed")
            path = mref.get("path")
            paged = self._read_part(path, source)
            if len(paged) != mref["count"] or not all(isinstance(m, dict) for m in paged):
                raise CorruptFileError(
                    f"{source}: manifests part {path} holds {len(paged)} items, not "
                    f"{mref['count']} manifest references"
                )
            # the newer manifests: ``manifests-tail``, or ``manifests`` in roots of the
            # field's first layout (which releases before the field misread, 13.1)
            if ("manifests-tail" in doc) == ("manifests" in doc):
                raise CorruptFileError(
                    f"{source}: a root with manifests-ref needs manifests-tail (or, as "
                    "first written, manifests), not both or neither"
                )
            inline = doc.pop("manifests-tail") if "manifests-tail" in doc else doc["manifests"]
            if not isinstance(inline, list):
                raise CorruptFileError(f"{source}: manifests-tail is not a list")
            doc["manifests"] = [*paged, *inline]
        elif "manifests-tail" in doc:
            raise CorruptFileError(f"{source}: manifests-tail without manifests-ref")
        ref = doc.get("load-ids-ref")
        if ref is not None:
            if not isinstance(ref, dict) or not isinstance(ref.get("count"), int):
                raise CorruptFileError(f"{source}: load-ids-ref {ref!r} is malformed")
            paged = self._read_part(ref.get("path"), source)
            if len(paged) != ref["count"]:
                raise CorruptFileError(
                    f"{source}: load-ids part holds {len(paged)} ids, not {ref['count']}"
                )
            inline = doc.get("load-ids") or []
            if not isinstance(inline, list):
                raise CorruptFileError(f"{source}: load-ids is not a list")
            doc["load-ids"] = [*paged, *inline]

    def _write_part(self, items: list[Any]) -> str:
        """Write a part document (content-addressed: an existing one is reused)."""
        data = json.dumps(items, separators=(",", ":")).encode("utf-8")
        rel = f"{PARTS_DIR}/{hashlib.sha256(data).hexdigest()[:32]}.json"
        with contextlib.suppress(FileExistsError):
            write_exclusive(self.fs, join(self.table_path, rel), data)
        return rel

    def _parts(self, new: TableMetadata, base: TableMetadata | None) -> TableMetadata:
        """``new`` with its regions and load ids placed in parts where large (13.1)."""
        v2base = base if base is not None and base.format_version >= 2 else None
        regions_ref: str | None = None
        if len(new.regions) > INLINE_REGIONS:
            if v2base is not None and v2base.regions_ref and v2base.regions == new.regions:
                regions_ref = v2base.regions_ref
            else:
                regions_ref = self._write_part(regions_to_list(new.regions))
        ids = new.load_ids
        ref, paged = None, 0
        if v2base is not None and v2base.load_ids_ref is not None:
            n = v2base.load_ids_paged
            if ids[:n] == v2base.load_ids[:n] and len(ids) - n < INLINE_LOAD_IDS:
                ref, paged = v2base.load_ids_ref, n
        if ref is None and len(ids) >= INLINE_LOAD_IDS:
            ids = ids[-MAX_REMEMBERED_LOAD_IDS:]
            ref, paged = self._write_part(list(ids)), len(ids)
        if ref is None:
            ids = ids[-MAX_REMEMBERED_LOAD_IDS:]
        return new.evolve(
            regions_ref=regions_ref, load_ids=ids, load_ids_ref=ref, load_ids_paged=paged
        )

    def _manifest_part(
        self, refs: tuple[ManifestRef, ...], base: TableMetadata | None
    ) -> dict[str, Any]:
        """``manifests_ref`` / ``manifests_paged`` of a root listing ``refs`` (13.1).

        The part holds the leading run of manifests of level >= 1 (they change only when a
        merge completes); the newest level-0 ones stay in the root. The base version's part
        is reused while it is still a prefix of ``refs`` and no newer manifest of level
        >= 1 would join it; when :data:`INLINE_MANIFESTS` or more would stay in the root
        (runs too big to merge), the whole list goes into the part.
        """
        if not self.manifest_parts:
            return {"manifests_ref": None, "manifests_paged": 0}
        merged = 0
        while merged < len(refs) and refs[merged].level >= 1:
            merged += 1
        if base is not None and base.format_version >= 2 and base.manifests_ref is not None:
            n = base.manifests_paged
            if n >= merged and len(refs) - n < INLINE_MANIFESTS and refs[:n] == base.manifests[:n]:
                return {"manifests_ref": base.manifests_ref, "manifests_paged": n}
        if len(refs) - merged >= INLINE_MANIFESTS:
            merged = len(refs)
        if merged < MIN_PAGED_MANIFESTS:
            return {"manifests_ref": None, "manifests_paged": 0}
        path = self._write_part([r.to_dict() for r in refs[:merged]])
        return {"manifests_ref": path, "manifests_paged": merged}

    def encode(
        self,
        new: TableMetadata,
        base: TableMetadata | None,
        *,
        reuse: dict[Any, ManifestRef] | None = None,
    ) -> TableMetadata:
        """Write what version ``new`` needs besides its root document; return it as stored.

        Format version 1 needs nothing. For version 2 the change of ``new.files`` from
        ``base`` (a delta staged with :meth:`LiveFiles.with_delta`, or any other sequence,
        compared entry by entry) is written as one new level-0 manifest, runs of
        :data:`MERGE_FAN_IN` manifests of one level are merged (a change that completes a
        run goes straight into the merge, see :meth:`_merge`), and the result carries the
        new manifest list and totals; its :meth:`TableMetadata.to_json` is the root. The
        parts it refers to (regions, load ids, the leading manifests) are written here too,
        or the base version's reused while their contents are unchanged.

        Args:
            new: The next version as built by a change.
            base: The version it was built on (None for a new table).
            reuse: Manifests written by earlier attempts of the same commit, by content: a
                retry whose delta is the same reuses the file.
        """
        if new.format_version < 2:
            return new.evolve(
                regions_ref=None,
                load_ids_ref=None,
                load_ids_paged=0,
                manifests_ref=None,
                manifests_paged=0,
            )
        new = self._parts(new, base)
        files = new.files
        base_refs = base.manifests if base is not None and base.format_version >= 2 else ()
        if isinstance(files, LiveFiles) and files.refs == base_refs and base is not None:
            adds, removes = files.adds, files.removes
            totals = (base.totals or FileTotals()).plus(adds, removes)
            refs = base_refs
        elif isinstance(files, LiveFiles) and files.table_path == self.table_path:
            # a rewritten manifest list of this table (rewrite-manifests), maybe with a delta
            adds, removes = files.adds, files.removes
            refs = files.refs
            totals = FileTotals.of(LiveFiles(self.fs, self.table_path, refs)).plus(adds, removes)
        else:
            # a version-1 base (an upgrade) has no manifests: every entry is added
            old = tuple(base.files) if base is not None and base_refs else ()
            mine = tuple(files)
            before = set(old)
            keys = {entry_key(e) for e in mine}
            adds = tuple(e for e in mine if e not in before)
            removes = tuple(e for e in old if entry_key(e) not in keys)
            totals = FileTotals.of(mine)
            refs = base_refs
        if adds or removes:
            # what the manifest's content depends on, cheap to hash (C tuples of str/int)
            key = (
                tuple((e.path, e.region, e.family, e.seq) for e in adds),
                tuple((e.path, e.region, e.family, e.seq) for e in removes),
            )
            ref = (reuse or {}).get(key)
            if ref is not None:
                refs = self._merge((*refs, ref), version=new.version)
            else:
                starts = {r.id: r.start for r in new.regions}
                if base is not None:
                    for r in base.regions:
                        starts.setdefault(r.id, r.start)
                rows = rows_of(adds, removes, starts)
                refs, written = self._merge(refs, version=new.version, new_rows=rows)
                if reuse is not None and written is not None:
                    reuse[key] = written
        elif isinstance(files, LiveFiles) and files.refs == refs and not files.has_delta:
            return new.evolve(manifests=refs, totals=totals, **self._manifest_part(refs, base))
        live = LiveFiles(self.fs, self.table_path, refs)
        return new.evolve(
            files=live, manifests=refs, totals=totals, **self._manifest_part(refs, base)
        )

    @overload
    def _merge(self, refs: tuple[ManifestRef, ...], *, version: int) -> tuple[ManifestRef, ...]: ...

    @overload
    def _merge(
        self, refs: tuple[ManifestRef, ...], *, version: int, new_rows: pa.Table
    ) -> tuple[tuple[ManifestRef, ...], ManifestRef | None]: ...

    def _merge(
        self,
        refs: tuple[ManifestRef, ...],
        *,
        version: int,
        new_rows: pa.Table | None = None,
    ) -> tuple[ManifestRef, ...] | tuple[tuple[ManifestRef, ...], ManifestRef | None]:
        """Merge the newest run of manifests of one level while it is full (cascading).

        The cascade is planned first and written as **one** merge of the whole span at its
        final level: a manifest that the same commit would merge on (a level-1 one going
        into level 2, or the commit's own level-0 one) is never written, as no version
        would list it. Row counts are planned as the sums of the runs (an upper bound:
        pairs that cancel only make a merge smaller).

        Args:
            refs: The manifest list.
            version: The version that will list the result.
            new_rows: The rows of the commit's own level-0 manifest, not yet written: it
                is appended to ``refs`` (written only when no merge takes it in).

        Returns:
            The new list; with ``new_rows``, also the level-0 manifest written for them
            (None when they went into a merge).
        """
        # (level, rows, index of the first manifest it covers) per planned manifest
        plan = [(r.level, r.entries, i) for i, r in enumerate(refs)]
        if new_rows is not None:
            plan.append((0, new_rows.num_rows, len(refs)))
        start: int | None = None
        while plan:
            level = plan[-1][0]
            k = self.merge_fan_in if level == 0 else self.upper_merge_fan_in
            run = plan[-k:]
            if len(run) < k or any(p[0] != level for p in run):
                break
            rows = sum(p[1] for p in run)
            if rows > self.max_inline_merge_entries:
                break
            start = run[0][2]
            plan = [*plan[:-k], (level + 1, rows, start)]
        if new_rows is None:
            if start is None:
                return refs
            return self.merge_manifests(refs, start, version=version, level=plan[-1][0])
        if start is None:
            ref = write_manifest(self.fs, self.table_path, new_rows, level=0, added_version=version)
            return (*refs, ref), ref
        merged = self.merge_manifests(
            refs, start, version=version, level=plan[-1][0], new_rows=new_rows
        )
        return merged, None

    def merge_manifests(
        self,
        refs: tuple[ManifestRef, ...],
        start: int,
        *,
        version: int,
        level: int | None = None,
        new_rows: pa.Table | None = None,
    ) -> tuple[ManifestRef, ...]:
        """Replace ``refs[start:]`` by one manifest of the next level (same live set).

        Add/remove pairs inside the run cancel; removes are dropped too when the run starts
        at the oldest manifest (there is nothing older for them to cancel).

        Args:
            refs: A version's manifest list.
            start: Index of the first manifest to merge.
            version: The version that will list the result.
            level: Level of the result (default: one above the run's highest).
            new_rows: Rows of a level-0 manifest not yet written, newest of the run.
        """
        run = refs[start:]
        tables = read_manifests(self.fs, self.table_path, run)
        if new_rows is not None:
            tables.append(new_rows)
        rows = apply_last_wins(tables, keep_removes=start > 0)
        if level is None:
            level = max((r.level for r in run), default=0) + 1
        if rows.num_rows == 0 and start == 0:
            return ()
        ref = write_manifest(self.fs, self.table_path, rows, level=level, added_version=version)
        return (*refs[:start], ref)

    def rewrite_manifests(self, meta: TableMetadata, *, version: int) -> tuple[ManifestRef, ...]:
        """All of ``meta``'s manifests merged into one (the live entries only)."""
        if not meta.manifests:
            return ()
        return self.merge_manifests(meta.manifests, 0, version=version)

    def create_table(self, meta: TableMetadata) -> TableMetadata:
        """Create version 1 of a new table from ``meta`` (writing its manifest if any).

        Raises:
            FileExistsError: if the table has a version 1 already.
        """
        stored = self.encode(meta, None)
        self.create(1, stored.to_json())
        return stored

    def commit_table(
        self,
        change: Callable[[TableMetadata], TableMetadata],
        *,
        base_version: int | None = None,
    ) -> tuple[TableMetadata, CommitOutcome]:
        """Commit ``change(latest)`` as the next table version, retrying on conflict.

        ``change`` receives the current metadata and returns the next one (built with
        :meth:`TableMetadata.next_version`); it runs again on the newer metadata after a
        conflict, so it must re-validate its preconditions there. On a format-version-2
        table the change's files become one new manifest (see :meth:`encode`).

        Raises:
            CommitConflictError: if ``change`` refuses the newer base, or retries run out.
        """
        reuse: dict[Any, ManifestRef] = {}

        def update(doc: TableMetadata | None, version: int) -> tuple[bytes, TableMetadata]:
            if doc is None:
                raise CommitConflictError(f"{self.table_path}: table has no metadata")
            new = change(doc)
            if new.version != version:
                raise AssertionError("change() must build exactly the next version")
            stored = self.encode(new, doc, reuse=reuse)
            return stored.to_json(), stored

        return self.commit(self.read, update, base_version=base_version)


def manifest_entries(
    fs: fsspec.AbstractFileSystem, table_path: str, refs: tuple[ManifestRef, ...]
) -> pa.Table:
    """The live rows of a manifest list (a helper for jobs that work on columns)."""
    return apply_last_wins(read_manifests(fs, table_path, refs))

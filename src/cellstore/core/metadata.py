"""Table metadata: the immutable, numbered state of a table, and its JSON form.

One :class:`TableMetadata` is one committed version of a table: its schema (families), its
regions, the live store files of every region and family, the next sequence number and the
history entry of the commit that made it. docs/format.md is the normative description of the
JSON; this module is its only reader and writer. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from cellstore.core.entries import (
    UNASSIGNED_SEQ,
    FileEntry,
    FileTotals,
    HistoryEntry,
    ManifestRef,
    SnapshotRef,
    _hex,
    _is,
    _unhex,
)
from cellstore.core.family import Family
from cellstore.core.regions import MAX_SALT_BUCKETS, Region, check_regions
from cellstore.core.rowkey import RowKeySpec
from cellstore.errors import CorruptFileError, FormatVersionError, InvalidFamilyError

__all__ = [
    "COLUMNS_FORMAT_VERSION",
    "DEFAULT_FORMAT_VERSION",
    "METADATA_FORMAT_VERSION",
    "FileEntry",
    "FileTotals",
    "HistoryEntry",
    "LiveFileSource",
    "ManifestRef",
    "SnapshotRef",
    "TableMetadata",
    "UNASSIGNED_SEQ",
    "json_object",
]

#: Highest version of the table-metadata JSON this release reads (and writes on upgrade).
METADATA_FORMAT_VERSION: Final = 3
#: Format version of the tables this release creates (manifests, section 13).
DEFAULT_FORMAT_VERSION: Final = 2
#: The version a table takes with its first column-layout file (section 14); tables
#: without one stay at version 2, readable by releases that predate the column layout.
COLUMNS_FORMAT_VERSION: Final = 3
#: How many recent load ids a table remembers to make retried loads idempotent.
MAX_REMEMBERED_LOAD_IDS: Final = 1000


def json_object(data: bytes, *, source: str) -> dict[str, Any]:
    """The JSON object serialized in ``data`` (a metadata version's document).

    Raises:
        CorruptFileError: ``<source>: not valid JSON (...)`` or ``<source>: not a JSON
            object``.
    """
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise CorruptFileError(f"{source}: not valid JSON ({e})") from e
    if not isinstance(doc, dict):
        raise CorruptFileError(f"{source}: not a JSON object")
    return doc


@runtime_checkable
class LiveFileSource(Protocol):
    """A lazily read live file set (format version 2; see :mod:`cellstore.manifest`).

    ``TableMetadata.files`` of a version-2 table is such a sequence: iterating it reads
    every manifest once; :meth:`for_regions` reads only what can match.
    """

    def for_regions(self, regions: Sequence[tuple[str, bytes]]) -> tuple[FileEntry, ...]:
        """Live entries of the regions ``(id, start key)`` given, in no particular order."""
        ...

    @property
    def loaded(self) -> bool:
        """Whether the whole live set has been read already."""
        ...

    def __len__(self) -> int:
        """Number of live entries (reads the whole live set)."""
        ...


@dataclass(frozen=True, kw_only=True)
class TableMetadata:
    """One committed version of a table.

    Attributes:
        table_uuid: Unique id of the table (a dropped and re-created table gets a new one).
        name: Full table name ``namespace:qualifier``.
        version: This version's number (1 for a new table).
        families: Column families in name order.
        regions: Regions in key order (contiguous, covering all keys).
        salt_buckets: Phoenix-style salt bucket count, or None for an unsalted table.
        files: Live store files. For a format-version-2 table it is a lazy sequence
            (:class:`LiveFileSource`) read from the manifests on first use; prefer
            :meth:`files_in` / :meth:`files_of`, which read only what can match.
        next_seq: Sequence number the next commit that adds data will take.
        next_region_id: Number of the next region id to hand out.
        last_history: The commit that made this version.
        load_ids: Ids of recent loads (so a retried load is not applied twice).
        properties: Free-form table properties (string to string).
        row_key: The row-key spec stored with the table (how the loader builds row keys
            from input columns and how readers decode them), or None.
        snapshots: Named snapshots: name to the version it names (see
            :mod:`cellstore.jobs.snapshots`).
        format_version: Metadata format version.
        manifests: Format version 2: the manifest files whose entries, applied oldest
            first, make the live set (empty for version 1).
        totals: Format version 2: totals over the live files (None for version 1).
        regions_ref: Format version 2: path of the part document holding ``regions``
            when the root refers to one instead of listing them (docs/format.md 13.1).
        load_ids_ref: Format version 2: path of the part document holding the first
            ``load_ids_paged`` of ``load_ids`` (the root lists the rest).
        load_ids_paged: See ``load_ids_ref``.
        manifests_ref: Format version 2: path of the part document holding the first
            ``manifests_paged`` of ``manifests`` (the root lists the rest, 13.1);
            ``manifests`` is always the whole, resolved list.
        manifests_paged: See ``manifests_ref``.
    """

    table_uuid: str
    name: str
    version: int
    families: tuple[Family, ...]
    regions: tuple[Region, ...]
    salt_buckets: int | None
    files: Sequence[FileEntry]
    next_seq: int
    next_region_id: int
    last_history: HistoryEntry
    load_ids: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    row_key: RowKeySpec | None = None
    snapshots: Mapping[str, SnapshotRef] = field(default_factory=dict)
    format_version: int = 1
    manifests: tuple[ManifestRef, ...] = ()
    totals: FileTotals | None = None
    regions_ref: str | None = None
    load_ids_ref: str | None = None
    load_ids_paged: int = 0
    manifests_ref: str | None = None
    manifests_paged: int = 0

    # ----------------------------------------------------------------- lookups
    def family(self, name: str) -> Family:
        """The family called ``name``.

        Raises:
            InvalidFamilyError: if the table has no such family.
        """
        for fam in self.families:
            if fam.name == name:
                return fam
        known = ", ".join(f.name for f in self.families)
        raise InvalidFamilyError(f"table {self.name}: unknown family {name!r} (families: {known})")

    @property
    def family_names(self) -> tuple[str, ...]:
        """Family names in order."""
        return tuple(f.name for f in self.families)

    def region(self, region_id: str) -> Region:
        """The region with id ``region_id`` (KeyError if none)."""
        for r in self.regions:
            if r.id == region_id:
                return r
        raise KeyError(region_id)

    @property
    def split_keys(self) -> list[bytes]:
        """Start keys of every region but the first."""
        return [r.start for r in self.regions[1:]]

    def files_of(self, region: str, family: str) -> tuple[FileEntry, ...]:
        """Live files of one region and family, oldest (lowest seq) first.

        Callers loop over many stores (jobs), so on format version 2 this reads the whole
        live set once and answers from an index by region; a reader of a few regions uses
        :meth:`files_in` instead.
        """
        files = self.files
        if isinstance(files, LiveFileSource):
            len(files)  # materialize once (cached by the live set)
            found: Iterable[FileEntry] = files.for_regions([(region, b"")])
        else:
            found = (f for f in files if f.region == region)
        return tuple(
            sorted((f for f in found if f.family == family), key=lambda f: (f.seq, f.path))
        )

    def files_in(self, regions: Iterable[str]) -> tuple[FileEntry, ...]:
        """Live files of the regions with these ids (any order).

        On a format-version-2 table whose live set has not been read, this reads only the
        manifests (and their row groups) that can hold those regions' entries. A region id
        that is not one of this version's regions has no files.
        """
        wanted = set(regions)
        files = self.files
        if isinstance(files, LiveFileSource) and not files.loaded:
            keys = [(r.id, r.start) for r in self.regions if r.id in wanted]
            return files.for_regions(keys) if keys else ()
        return tuple(f for f in files if f.region in wanted)

    @property
    def part_paths(self) -> tuple[str, ...]:
        """Part documents (13.1) this root refers to, relative to the table directory."""
        refs = (self.regions_ref, self.load_ids_ref, self.manifests_ref)
        return tuple(p for p in refs if p is not None)

    def file_totals(self) -> FileTotals:
        """Totals over the live files (from the root on format version 2, no manifest read)."""
        if self.totals is not None:
            return self.totals
        return FileTotals.of(self.files)

    # ---------------------------------------------------------------- builders
    def evolve(self, **changes: Any) -> TableMetadata:
        """A copy with fields replaced."""
        return dataclasses.replace(self, **changes)

    def next_version(
        self,
        *,
        operation: str,
        timestamp_ms: int,
        summary: Mapping[str, Any] | None = None,
        **changes: Any,
    ) -> TableMetadata:
        """The metadata of the version after this one, with ``changes`` applied."""
        version = self.version + 1
        entry = HistoryEntry(
            version=version,
            operation=operation,
            timestamp_ms=timestamp_ms,
            summary=dict(summary or {}),
        )
        load_ids = tuple(changes.pop("load_ids", self.load_ids))
        if self.format_version < 2 or changes.get("format_version", 2) < 2:
            load_ids = load_ids[-MAX_REMEMBERED_LOAD_IDS:]
        # format version 2: the log trims them when it writes a new page (13.1)
        return dataclasses.replace(
            self,
            version=version,
            last_history=entry,
            load_ids=load_ids,
            **changes,
        )

    # -------------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """JSON form (see docs/format.md).

        ``row-key`` is written only when the table has a spec, ``snapshots`` only when it
        has some, so older readers and the golden files see the documents they know.
        Format version 1 lists ``files``; version 2 lists ``manifests`` and ``totals``
        instead (the manifest files themselves are written by :mod:`cellstore.manifest`).
        """
        doc: dict[str, Any] = {
            "format-version": self.format_version,
            "table-uuid": self.table_uuid,
            "name": self.name,
            "version": self.version,
            "families": [f.to_dict() for f in self.families],
            "salt-buckets": self.salt_buckets,
            "regions": regions_to_list(self.regions),
            "next-sequence-number": self.next_seq,
            "next-region-id": self.next_region_id,
            "history": self.last_history.to_dict(),
            "load-ids": list(self.load_ids),
            "properties": dict(self.properties),
        }
        if self.format_version >= 2:
            inline = [m.to_dict() for m in self.manifests[self.manifests_paged :]]
            if self.manifests_ref is None:
                doc["manifests"] = inline
            else:
                # no ``manifests``: a reader that does not know the reference refuses the
                # root instead of taking the newer manifests for the whole list (13.1)
                doc["manifests-ref"] = {"path": self.manifests_ref, "count": self.manifests_paged}
                doc["manifests-tail"] = inline
            doc["totals"] = (self.totals or FileTotals()).to_dict()
            if self.regions_ref is not None:
                del doc["regions"]
                doc["regions-ref"] = self.regions_ref
            if self.load_ids_ref is not None:
                doc["load-ids"] = list(self.load_ids[self.load_ids_paged :])
                doc["load-ids-ref"] = {"path": self.load_ids_ref, "count": self.load_ids_paged}
        else:
            doc["files"] = [f.to_dict() for f in self.files]
        if self.row_key is not None:
            doc["row-key"] = self.row_key.to_dict()
        if self.snapshots:
            doc["snapshots"] = {
                name: self.snapshots[name].to_dict() for name in sorted(self.snapshots)
            }
        return doc

    def to_json(self) -> bytes:
        """Serialized JSON bytes (UTF-8, stable key order; compact for format version 2)."""
        if self.format_version >= 2:  # one root per commit: keep it small
            return json.dumps(self.to_dict(), separators=(",", ":")).encode("utf-8")
        return json.dumps(self.to_dict(), indent=1, sort_keys=False).encode("utf-8")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str = "") -> TableMetadata:
        """Parse the JSON form, checking the format version and every field's type.

        Args:
            d: The parsed JSON document.
            source: Where the document came from (its path), for error messages.

        A format-version-2 document parses with ``files`` empty: its reader
        (:meth:`cellstore.manifest.TableLog.read`) attaches the lazy live set, and
        replaces ``regions-ref`` / ``load-ids-ref`` / ``manifests-ref`` by the parts' lists
        (``regions``, the full ``load-ids``, and ``manifests``: the part's followed by
        ``manifests-tail``) before calling this; the references are kept. An unresolved
        root with ``manifests-ref`` has no ``manifests`` and is refused as malformed, as
        releases that do not know the reference refuse it.

        Raises:
            FormatVersionError: if the format version is newer than this release reads.
            CorruptFileError: if a required field is missing or malformed (the message
                names ``source``).
        """
        where = source or "table metadata"
        version = d.get("format-version")
        if type(version) is not int:
            raise CorruptFileError(f"{where}: table metadata has no integer format-version")
        if version > METADATA_FORMAT_VERSION or version < 1:
            raise FormatVersionError(
                f"{where}: table metadata format version {version} is not supported "
                f"(this release reads 1..{METADATA_FORMAT_VERSION})"
            )
        try:
            _check_types(d)
            regions = tuple(
                Region(r["id"], _unhex(r["start"]), _unhex(r["end"])) for r in d["regions"]
            )
            check_regions(regions)
            families = tuple(Family.from_dict(f) for f in d["families"])
            _check_unique_families(families)
            row_key = RowKeySpec.from_dict(d["row-key"]) if d.get("row-key") else None
            _check_salt(d["salt-buckets"], row_key)
            manifests = tuple(ManifestRef.from_dict(m) for m in d.get("manifests", ()))
            totals = FileTotals.from_dict(d["totals"]) if version >= 2 else None
            if totals is not None and not manifests and totals != FileTotals():
                raise ValueError(f"totals count {totals.files} files but no manifest is listed")
            return cls(
                table_uuid=d["table-uuid"],
                name=d["name"],
                version=int(d["version"]),
                families=families,
                regions=regions,
                salt_buckets=d["salt-buckets"],
                files=tuple(FileEntry.from_dict(f) for f in d["files"]) if version == 1 else (),
                next_seq=int(d["next-sequence-number"]),
                next_region_id=int(d["next-region-id"]),
                last_history=HistoryEntry.from_dict(d["history"]),
                load_ids=tuple(d.get("load-ids", ())),
                properties=dict(d.get("properties", {})),
                row_key=row_key,
                snapshots={
                    str(name): SnapshotRef.from_dict(ref)
                    for name, ref in (d.get("snapshots") or {}).items()
                },
                format_version=version,
                manifests=manifests,
                totals=totals,
                regions_ref=_opt_str(d.get("regions-ref")),
                load_ids_ref=_opt_str((d.get("load-ids-ref") or {}).get("path")),
                load_ids_paged=int((d.get("load-ids-ref") or {}).get("count", 0)),
                manifests_ref=_opt_str((d.get("manifests-ref") or {}).get("path")),
                manifests_paged=_paged(d.get("manifests-ref"), len(d.get("manifests", ()))),
            )
        except FormatVersionError:
            raise
        except (
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
            IndexError,
            OverflowError,
            RecursionError,
        ) as e:  # InvalidArgumentError (a bad family, region...) is a ValueError too
            raise CorruptFileError(f"{where}: table metadata is malformed: {e!r}") from e

    @classmethod
    def from_json(cls, data: bytes, *, source: str = "") -> TableMetadata:
        """Parse serialized JSON bytes.

        Raises:
            CorruptFileError: if the bytes are not valid metadata JSON (the message names
                ``source``).
        """
        return cls.from_dict(json_object(data, source=source or "table metadata"), source=source)


def regions_to_list(regions: Iterable[Region]) -> list[dict[str, str]]:
    """JSON form of a region list (the root's ``regions``, or a regions part, 13.1)."""
    return [{"id": r.id, "start": _hex(r.start), "end": _hex(r.end)} for r in regions]


def _paged(ref: Any, listed: int) -> int:
    """The ``count`` of a resolved ``manifests-ref`` (0 without one), at most ``listed``."""
    if ref is None:
        return 0
    count = ref["count"]
    if not _is(count, (int,)) or not 0 <= count <= listed:
        raise ValueError(f"manifests-ref count {count!r} is not in 0..{listed}")
    return int(count)


def _opt_str(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{value!r} is not a string")


#: JSON types of the metadata fields whose consumers need them exact (None: may be null).
_FIELD_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "table-uuid": (str,),
    "name": (str,),
    "version": (int,),
    "families": (list,),
    "regions": (list,),
    "files": (list,),
    "next-sequence-number": (int,),
    "next-region-id": (int,),
    "history": (dict,),
}
_ENTRY_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "path": (str,),
    "region": (str,),
    "family": (str,),
    "seq": (int,),
    "cells": (int,),
    "delete-markers": (int,),
    "size": (int,),
    "first-row": (str,),
    "last-row": (str,),
    "min-ts": (int,),
    "max-ts": (int,),
    "load-id": (str,),
}
#: A file entry's ``footer-digest``: XXH3-64 as 16 lower-case hex digits.
_FOOTER_DIGEST: Final = re.compile(r"[0-9a-f]{16}")


def _check_types(d: Mapping[str, Any]) -> None:
    """Raise TypeError/ValueError for a field of the wrong JSON type or out of range.

    ``int(...)`` would otherwise accept floats and strings, and a wrong type would only
    fail later, far from the file, with an exception that is not a cellstore error.
    """
    v2 = d["format-version"] >= 2
    for key, types in _FIELD_TYPES.items():
        if key == "files" and v2:
            key, types = "manifests", (list,)
            if not _is(d.get("totals"), (dict,)):
                raise TypeError("totals is not an object")
        if not _is(d[key], types):
            raise TypeError(f"{key} is {type(d[key]).__name__}, not {types[0].__name__}")
    buckets = d["salt-buckets"]
    if buckets is not None and (not _is(buckets, (int,)) or not 1 <= buckets <= MAX_SALT_BUCKETS):
        raise ValueError(f"salt-buckets {buckets!r} is not null or 1..{MAX_SALT_BUCKETS}")
    for r in d["regions"]:
        if not isinstance(r, dict) or not all(_is(r[k], (str,)) for k in ("id", "start", "end")):
            raise TypeError(f"region {r!r} is not an object of id, start and end strings")
    for m in d.get("manifests", ()) if v2 else ():
        if not isinstance(m, dict):
            raise TypeError(f"manifest reference {m!r} is not an object")
    for f in () if v2 else d["files"]:
        if not isinstance(f, dict):
            raise TypeError(f"file entry {f!r} is not an object")
        for key, types in _ENTRY_TYPES.items():
            if not _is(f[key], types):
                raise TypeError(f"file entry {key} is {type(f[key]).__name__}")
        if f["size"] < 0 or f["cells"] < 0 or f["delete-markers"] < 0:
            raise ValueError(f"file entry {f['path']!r} has a negative size or count")
        if f.get("layout", "cells") != "cells":
            raise ValueError(
                f"file entry {f['path']!r} has layout {f['layout']!r}: format version 1 "
                "holds cell files only"
            )
        if "footer-digest" in f:
            digest = f["footer-digest"]
            if not isinstance(digest, str) or not _FOOTER_DIGEST.fullmatch(digest):
                raise ValueError(
                    f"file entry {f['path']!r} footer-digest {digest!r} is not 16 "
                    "lower-case hex digits"
                )
    for key, types in (("load-ids", (list,)), ("properties", (dict,)), ("snapshots", (dict,))):
        if d.get(key) is not None and not _is(d[key], types):
            raise TypeError(f"{key} is {type(d[key]).__name__}")
    if not all(isinstance(v, str) for v in (d.get("properties") or {}).values()):
        raise TypeError("properties are not all strings")
    if not all(isinstance(v, str) for v in d.get("load-ids") or ()):
        raise TypeError("load-ids are not all strings")


def _check_unique_families(families: Sequence[Family]) -> None:
    """Raise ValueError if two families share a name (lookups would see only the first)."""
    names = [f.name for f in families]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"family {twice[0]!r} is listed twice")


def _check_salt(buckets: int | None, row_key: RowKeySpec | None) -> None:
    """Raise ValueError if the row-key spec salts keys differently from the table.

    Loads by spec salt with the spec's bucket count, ``load_cells`` and scans with the
    table's: a difference would store rows where no read by key looks.
    """
    if row_key is not None and row_key.salt_buckets != buckets:
        raise ValueError(
            f"row-key spec salt-buckets {row_key.salt_buckets!r} != table salt-buckets {buckets!r}"
        )


def sorted_families(families: Iterable[Family]) -> tuple[Family, ...]:
    """Families in name order, rejecting duplicates.

    Raises:
        InvalidFamilyError: if two families share a name, or there are none.
    """
    out: dict[str, Family] = {}
    for fam in families:
        if fam.name in out:
            raise InvalidFamilyError(f"family {fam.name!r} given twice")
        out[fam.name] = fam
    if not out:
        raise InvalidFamilyError("a table needs at least one column family")
    return tuple(out[name] for name in sorted(out, key=lambda n: n.encode("utf-8")))

"""Store-file entries and the small records of a table-metadata version.

:class:`FileEntry` (a live store file as the manifest records it), :class:`HistoryEntry`,
:class:`SnapshotRef`, :class:`ManifestRef` and :class:`FileTotals`, each with its JSON form
(docs/format.md is the normative description). :mod:`cellstore.core.metadata` assembles them
into a :class:`~cellstore.core.metadata.TableMetadata` and re-exports them. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cellstore.core.results import JsonForm

__all__ = [
    "FileEntry",
    "FileTotals",
    "HistoryEntry",
    "ManifestRef",
    "SnapshotRef",
    "UNASSIGNED_SEQ",
]


#: The ``seq`` of a store file bulk-loaded without a sequence id (HBase's
#: ``hbase.mapreduce.bulkload.assign.sequenceNumbers=false``, R14.5): it ranks below every
#: file with a sequence id (R3.1), so its cells lose every equal-key tie (R3.2).
UNASSIGNED_SEQ: Final = -1

#: A format-version-2 manifest path (docs/format.md 13.1).
_MANIFEST_PATH: Final = re.compile(r"_meta/manifests/[0-9a-f]{32}\.parquet")


def _hex(b: bytes) -> str:
    return b.hex()


def _unhex(s: str) -> bytes:
    return bytes.fromhex(s)


def _is(value: Any, types: tuple[type, ...]) -> bool:
    """``isinstance`` where a JSON ``true`` is not an integer."""
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


@dataclass(frozen=True, kw_only=True)
class FileEntry:
    """A live store file, as the manifest records it.

    The manifest's ``seq`` is authoritative: a file written for a commit that had to retry
    may carry an older provisional sequence number in its footer (like HBase's bulk-loaded
    files, whose sequence id is assigned at load time, R14.5).

    Attributes:
        path: Path relative to the table directory.
        region: Id of the region the file belongs to.
        family: Family name.
        seq: Sequence number: higher wins exact key ties (R3.2). :data:`UNASSIGNED_SEQ`
            (-1) marks a file bulk-loaded without a sequence id (R14.5): it is older than
            every other file, and a compaction output takes the highest seq of its inputs.
        cells: Number of cells.
        delete_markers: Number of delete markers among them.
        size: File size in bytes.
        first_row: Smallest row key in the file.
        last_row: Largest row key in the file.
        min_ts: Smallest timestamp in the file.
        max_ts: Largest timestamp in the file.
        load_id: Id of the load or job that wrote the file.
        footer_digest: XXH3-64 of the file's Parquet footer (FileMetaData and 8-byte
            trailer) as 16 lower-case hex digits, recorded at write time; readers verify
            it before parsing the footer. None for entries written before it existed.
        layout: ``"cells"`` (a cell-layout store file) or ``"columns"`` (a column-layout
            one, docs/format.md section 14; only in format version 3).
    """

    path: str
    region: str
    family: str
    seq: int
    cells: int
    delete_markers: int
    size: int
    first_row: bytes
    last_row: bytes
    min_ts: int
    max_ts: int
    load_id: str
    footer_digest: str | None = None
    layout: str = "cells"

    @property
    def seq_assigned(self) -> bool:
        """Whether the file has a sequence id (False: bulk-loaded without one, R14.5)."""
        return self.seq != UNASSIGNED_SEQ

    def to_dict(self) -> dict[str, Any]:
        """JSON form (see docs/format.md); ``footer-digest`` only when recorded."""
        doc: dict[str, Any] = {
            "path": self.path,
            "region": self.region,
            "family": self.family,
            "seq": self.seq,
            "cells": self.cells,
            "delete-markers": self.delete_markers,
            "size": self.size,
            "first-row": _hex(self.first_row),
            "last-row": _hex(self.last_row),
            "min-ts": self.min_ts,
            "max-ts": self.max_ts,
            "load-id": self.load_id,
        }
        if self.footer_digest is not None:
            doc["footer-digest"] = self.footer_digest
        if self.layout != "cells":
            doc["layout"] = self.layout
        return doc

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FileEntry:
        """Inverse of :meth:`to_dict` (types are checked by :meth:`TableMetadata.from_dict`)."""
        return cls(
            path=d["path"],
            region=d["region"],
            family=d["family"],
            seq=int(d["seq"]),
            cells=int(d["cells"]),
            delete_markers=int(d["delete-markers"]),
            size=int(d["size"]),
            first_row=_unhex(d["first-row"]),
            last_row=_unhex(d["last-row"]),
            min_ts=int(d["min-ts"]),
            max_ts=int(d["max-ts"]),
            load_id=d["load-id"],
            footer_digest=d.get("footer-digest"),
            layout=d.get("layout", "cells"),
        )


@dataclass(frozen=True, kw_only=True)
class HistoryEntry(JsonForm):
    """What one commit did.

    Attributes:
        version: The table version the commit created.
        operation: ``create``, ``load``, ``alter``, ``compact``, ``split``, ...
        timestamp_ms: Commit time, milliseconds since the epoch.
        summary: Counts and parameters of the operation (JSON scalars).
    """

    version: int
    operation: str
    timestamp_ms: int
    summary: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HistoryEntry:
        """Inverse of :meth:`to_dict`."""
        return cls(
            version=int(d["version"]),
            operation=d["operation"],
            timestamp_ms=int(d["timestamp-ms"]),
            summary=dict(d.get("summary", {})),
        )


@dataclass(frozen=True, kw_only=True)
class SnapshotRef:
    """A named snapshot: a pointer to one (immutable) metadata version of the table.

    Attributes:
        version: The table version the snapshot names.
        created_ms: When the snapshot was taken, milliseconds since the epoch.
    """

    version: int
    created_ms: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form (see docs/format.md)."""
        return {"version": self.version, "created-ms": self.created_ms}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SnapshotRef:
        """Inverse of :meth:`to_dict`."""
        return cls(version=int(d["version"]), created_ms=int(d["created-ms"]))


@dataclass(frozen=True, kw_only=True)
class ManifestRef(JsonForm):
    """A format-version-2 root's reference to one immutable manifest file (docs/format.md 13).

    Attributes:
        path: Path of the manifest relative to the table directory
            (``_meta/manifests/<uuid>.parquet``).
        level: Merge level: 0 for a commit's own manifest, L+1 for a merge of level-L ones.
        adds: Number of ``add`` rows.
        removes: Number of ``remove`` rows.
        min_region_start: Lowest region start key among its rows.
        max_region_start: Highest region start key among its rows.
        min_seq: Lowest sequence number among its rows (0 when it has none).
        max_seq: Highest sequence number among its rows (0 when it has none).
        added_version: The table version whose commit wrote it.
        size: File size in bytes.
    """

    path: str
    level: int
    adds: int
    removes: int
    min_region_start: bytes
    max_region_start: bytes
    min_seq: int
    max_seq: int
    added_version: int
    size: int

    @property
    def entries(self) -> int:
        """Rows in the manifest."""
        return self.adds + self.removes

    def may_hold(self, region_start: bytes) -> bool:
        """Whether rows of a region starting at ``region_start`` can be in it."""
        return self.entries > 0 and self.min_region_start <= region_start <= self.max_region_start

    def _json_value(self, name: str) -> Any:
        value = getattr(self, name)
        return _hex(value) if isinstance(value, bytes) else super()._json_value(name)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ManifestRef:
        """Inverse of :meth:`to_dict` (types are checked by :meth:`TableMetadata.from_dict`)."""
        for key in ("level", "adds", "removes", "min-seq", "max-seq", "added-version", "size"):
            floor = UNASSIGNED_SEQ if key in ("min-seq", "max-seq") else 0  # R14.5
            if not _is(d[key], (int,)) or d[key] < floor:
                raise ValueError(f"manifest {key} {d[key]!r} is not an integer >= {floor}")
        if not isinstance(d["path"], str) or not _MANIFEST_PATH.fullmatch(d["path"]):
            raise ValueError(f"manifest path {d['path']!r} is not _meta/manifests/<hex>.parquet")
        return cls(
            path=d["path"],
            level=d["level"],
            adds=d["adds"],
            removes=d["removes"],
            min_region_start=_unhex(d["min-region-start"]),
            max_region_start=_unhex(d["max-region-start"]),
            min_seq=d["min-seq"],
            max_seq=d["max-seq"],
            added_version=d["added-version"],
            size=d["size"],
        )


@dataclass(frozen=True, kw_only=True)
class FileTotals:
    """Totals over a version's live files (kept in a format-version-2 root).

    Attributes:
        files: Live store files.
        cells: Cells in them.
        bytes: Their total size.
    """

    files: int = 0
    cells: int = 0
    bytes: int = 0

    @classmethod
    def of(cls, entries: Iterable[FileEntry]) -> FileTotals:
        """Totals of ``entries``."""
        files = cells = size = 0
        for e in entries:
            files += 1
            cells += e.cells
            size += e.size
        return cls(files=files, cells=cells, bytes=size)

    def plus(self, adds: Iterable[FileEntry], removes: Iterable[FileEntry]) -> FileTotals:
        """These totals with ``adds`` joining and ``removes`` leaving."""
        a, r = FileTotals.of(adds), FileTotals.of(removes)
        return FileTotals(
            files=self.files + a.files - r.files,
            cells=self.cells + a.cells - r.cells,
            bytes=self.bytes + a.bytes - r.bytes,
        )

    def to_dict(self) -> dict[str, int]:
        """JSON form."""
        return {"files": self.files, "cells": self.cells, "bytes": self.bytes}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FileTotals:
        """Inverse of :meth:`to_dict`."""
        for key in ("files", "cells", "bytes"):
            if not _is(d[key], (int,)) or d[key] < 0:
                raise ValueError(f"totals {key} {d[key]!r} is not a non-negative integer")
        return cls(files=d["files"], cells=d["cells"], bytes=d["bytes"])

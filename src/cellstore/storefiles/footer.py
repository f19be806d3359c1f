"""The store-file footer: cellstore's key-value metadata inside the Parquet footer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from cellstore.core.metadata import FileEntry
from cellstore.errors import CorruptFileError, FormatVersionError

__all__ = [
    "CHECKED_FIELDS",
    "FOOTER_KEY",
    "STORE_FILE_FORMAT_VERSION",
    "StoreFileInfo",
    "entry_mismatch",
]

#: Version of the store-file format this release writes (and the highest it reads).
STORE_FILE_FORMAT_VERSION: Final = 1
#: Parquet key-value metadata key holding the footer JSON.
FOOTER_KEY: Final = b"cellstore"
#: Footer fields every open compares with the file's manifest entry (besides the size).
#: ``seq`` and ``load_id`` are not among them: the manifest's ``seq`` is authoritative
#: (R14.5) and jobs may record their own id for files their tasks wrote.
CHECKED_FIELDS: Final = (
    "family",
    "cells",
    "delete_markers",
    "first_row",
    "last_row",
    "min_ts",
    "max_ts",
)


@dataclass(frozen=True, kw_only=True)
class StoreFileInfo:
    """What a store file's footer says about its cells (docs/format.md, "Footer").

    Attributes:
        path: Where the file is (filesystem path; not part of the footer itself).
        family: The family whose cells the file holds.
        seq: Sequence number the writer assigned (the manifest's entry wins if different).
        load_id: Id of the load or job that wrote the file.
        cells: Number of cells.
        delete_markers: Number of delete markers.
        rows: Number of distinct row keys.
        first_row: Smallest row key.
        last_row: Largest row key.
        min_ts: Smallest timestamp of any cell.
        max_ts: Largest timestamp of any cell.
        earliest_put_ts: Smallest Put timestamp, or None when the file has no Put.
        row_groups: Number of Parquet row groups.
        size: File size in bytes.
        bloom_filter: Whether the row column carries a Parquet Bloom filter.
        writer_version: cellstore version that wrote the file.
        format_version: Store-file format version.
    """

    path: str
    family: str
    seq: int
    load_id: str
    cells: int
    delete_markers: int
    rows: int
    first_row: bytes
    last_row: bytes
    min_ts: int
    max_ts: int
    earliest_put_ts: int | None
    row_groups: int
    size: int
    bloom_filter: bool
    writer_version: str
    format_version: int = STORE_FILE_FORMAT_VERSION

    def footer_dict(self) -> dict[str, Any]:
        """The footer JSON (everything but ``path``, ``size`` and ``row_groups``)."""
        return {
            "format-version": self.format_version,
            "writer-version": self.writer_version,
            "family": self.family,
            "seq": self.seq,
            "load-id": self.load_id,
            "cells": self.cells,
            "delete-markers": self.delete_markers,
            "rows": self.rows,
            "first-row": self.first_row.hex(),
            "last-row": self.last_row.hex(),
            "min-ts": self.min_ts,
            "max-ts": self.max_ts,
            "earliest-put-ts": self.earliest_put_ts,
            "bloom-filter": "row" if self.bloom_filter else "none",
        }

    @classmethod
    def from_footer(cls, raw: bytes, *, path: str, size: int, row_groups: int) -> StoreFileInfo:
        """Parse the footer JSON of the file at ``path``.

        Raises:
            FormatVersionError: if the file's format version is newer than this release.
            CorruptFileError: if the footer is missing fields or is not JSON.
        """
        try:
            d = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CorruptFileError(f"{path}: store-file footer is not JSON ({e})") from e
        version = d.get("format-version") if isinstance(d, dict) else None
        if not isinstance(version, int):
            raise CorruptFileError(f"{path}: store-file footer has no format-version")
        if not 1 <= version <= STORE_FILE_FORMAT_VERSION:
            raise FormatVersionError(
                f"{path}: store-file format version {version} is not supported "
                f"(this release reads 1..{STORE_FILE_FORMAT_VERSION})"
            )
        try:
            for key in ("family", "load-id", "writer-version", "first-row", "last-row"):
                if not isinstance(d[key], str):
                    raise TypeError(f"{key} is not a string")
            earliest = d["earliest-put-ts"]
            if earliest is not None and type(earliest) is not int:
                raise TypeError("earliest-put-ts is not an integer")
            return cls(
                path=path,
                family=d["family"],
                seq=int(d["seq"]),
                load_id=d["load-id"],
                cells=int(d["cells"]),
                delete_markers=int(d["delete-markers"]),
                rows=int(d["rows"]),
                first_row=bytes.fromhex(d["first-row"]),
                last_row=bytes.fromhex(d["last-row"]),
                min_ts=int(d["min-ts"]),
                max_ts=int(d["max-ts"]),
                earliest_put_ts=earliest,
                row_groups=row_groups,
                size=size,
                bloom_filter=d["bloom-filter"] == "row",
                writer_version=d["writer-version"],
                format_version=version,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptFileError(f"{path}: store-file footer is malformed ({e!r})") from e


def entry_mismatch(info: StoreFileInfo, entry: FileEntry) -> str | None:
    """How a file's size and footer disagree with its manifest entry, or None if they agree.

    A file swapped for another (or damaged in its footer) shows here: the manifest recorded
    the size and footer statistics at commit. Pure and cheap: no data is read.

    Returns:
        The first difference, e.g. ``size is 1234 bytes, the manifest says 1250``.
    """
    if info.size != entry.size:
        return f"size is {info.size} bytes, the manifest says {entry.size}"
    for key in CHECKED_FIELDS:
        found, recorded = getattr(info, key), getattr(entry, key)
        if found != recorded:
            name = key.replace("_", "-")
            return f"footer {name} is {_show(found)}, the manifest says {_show(recorded)}"
    return None


def _show(value: object) -> str:
    if isinstance(value, bytes):
        text = repr(value[:40])
        return text + ("..." if len(value) > 40 else "")
    return repr(value)

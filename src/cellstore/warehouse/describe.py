"""Typed descriptions of a table (``Table.describe``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cellstore.core.family import Family
from cellstore.core.metadata import (
    HistoryEntry,
)

if TYPE_CHECKING:
    from cellstore.core.rowkey import RowKeySpec


@dataclass(frozen=True)
class RegionDescription:
    """One region in :class:`TableDescription`."""

    id: str
    start: bytes
    end: bytes
    files: int
    cells: int
    bytes: int


@dataclass(frozen=True)
class TableDescription:
    """What ``describe`` reports about one table version.

    ``row_key`` is the row-key spec stored with the table (fields, encodings, salt
    buckets), or None for a table whose loads name their row-key column.
    """

    name: str
    table_uuid: str
    version: int
    families: tuple[Family, ...]
    salt_buckets: int | None
    regions: tuple[RegionDescription, ...]
    files: int
    cells: int
    bytes: int
    next_seq: int
    last_commit: HistoryEntry
    properties: Mapping[str, str]
    row_key: RowKeySpec | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (row keys as HBase-style escaped strings)."""
        from cellstore.core.keys import to_string_binary

        return {
            "name": self.name,
            "table-uuid": self.table_uuid,
            "version": self.version,
            "families": [f.to_dict() for f in self.families],
            "salt-buckets": self.salt_buckets,
            "row-key": None if self.row_key is None else self.row_key.to_dict(),
            "regions": [
                {
                    "id": r.id,
                    "start": to_string_binary(r.start),
                    "end": to_string_binary(r.end),
                    "files": r.files,
                    "cells": r.cells,
                    "bytes": r.bytes,
                }
                for r in self.regions
            ],
            "files": self.files,
            "cells": self.cells,
            "bytes": self.bytes,
            "next-sequence-number": self.next_seq,
            "last-commit": self.last_commit.to_dict(),
            "properties": dict(self.properties),
        }

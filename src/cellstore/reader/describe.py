"""What ``describe()`` of a readable table returns: a :class:`Description`.

A cellstore table describes itself as a :class:`TableDescription`, an HBase table as an
``HBaseTableDescription`` (``cellstore.hbase``); both print as the HBase shell's
``describe`` (``str()``/``text_lines()``, laid out by the same helpers:
:func:`families_block`, :func:`regions_block`), show that text as their ``repr`` (so
``t.describe()`` at a prompt prints it, through :class:`DescriptionText`) and give a
JSON-ready ``to_dict()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cellstore.core.family import Family
from cellstore.core.keys import to_string_binary
from cellstore.core.metadata import (
    HistoryEntry,
)
from cellstore.core.results import JsonForm
from cellstore.core.text import family_text, format_ts, grid, plural

if TYPE_CHECKING:
    from cellstore.core.rowkey import RowKeySpec

__all__ = [
    "Description",
    "DescriptionText",
    "RegionDescription",
    "TableDescription",
    "families_block",
    "regions_block",
]


@runtime_checkable
class Description(Protocol):
    """What ``describe()`` of a :class:`~cellstore.reader.ReadableTable` returns.

    Printed with ``str()`` as the HBase shell's ``describe`` (what ``cellstore describe``
    and ``cellstore hbase describe`` print); ``to_dict()`` is their ``--output json``.
    """

    @property
    def name(self) -> str:
        """The table's name."""
        ...

    def text_lines(self) -> list[str]:
        """The lines ``str()`` joins."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (row keys as HBase-style escaped strings)."""
        ...


class DescriptionText:
    """``str()`` and ``repr()`` of a description: its :meth:`text_lines`, joined.

    A description is a report for people: at a Python prompt ``t.describe()`` shows the
    HBase shell's text, as ``print(t.describe())`` does. The fields stay attributes, and
    ``to_dict()`` is the machine form. Dataclasses using it pass ``repr=False``.
    """

    def text_lines(self) -> list[str]:
        """The lines of the text (each description gives its own)."""
        raise NotImplementedError

    def __str__(self) -> str:
        """The HBase shell's ``describe`` (as ``cellstore describe`` prints it)."""
        return "\n".join(self.text_lines())

    def __repr__(self) -> str:
        return self.__str__()


def families_block(lines: Iterable[str]) -> list[str]:
    """``COLUMN FAMILIES DESCRIPTION``, one ``{NAME => ...}`` line each, ``N row(s)``."""
    items = list(lines)
    return ["COLUMN FAMILIES DESCRIPTION", *items, f"{len(items)} row(s)"]


def regions_block(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """``REGIONS``, a grid with ``headers`` and a row per region, ``N row(s)``."""
    return ["REGIONS", *grid(list(headers), [list(r) for r in rows]), f"{len(rows)} row(s)"]


@dataclass(frozen=True)
class RegionDescription(JsonForm):
    """One region in :class:`TableDescription`."""

    id: str
    start: bytes
    end: bytes
    files: int
    cells: int
    bytes: int


@dataclass(frozen=True, repr=False)
class TableDescription(JsonForm, DescriptionText):
    """What ``describe`` reports about one table version.

    ``row_key`` is the row-key spec stored with the table (fields, encodings, salt
    buckets), or None for a table whose loads name their row-key column.
    """

    json_keys = (
        "name table_uuid version families salt_buckets row_key regions files cells bytes "
        "next-sequence-number=next_seq last_commit properties"
    )

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

    def text_lines(self) -> list[str]:
        """The lines of ``str(self)``: the HBase shell's ``describe``, regions, totals."""
        d = self
        attrs = {"VERSION": str(d.version), "UUID": d.table_uuid}
        if d.salt_buckets is not None:
            attrs["SALT_BUCKETS"] = str(d.salt_buckets)
        attr_text = ", ".join(f"{k} => '{v}'" for k, v in attrs.items())
        if d.properties:
            meta = ", ".join(f"'{k}' => '{v}'" for k, v in sorted(d.properties.items()))
            attr_text += f", METADATA => {{{meta}}}"
        region_rows = [
            [r.id, to_string_binary(r.start), to_string_binary(r.end), r.files, r.cells, r.bytes]
            for r in d.regions
        ]
        return [
            f"Table {d.name} is ENABLED",
            f"{d.name}, {{TABLE_ATTRIBUTES => {{{attr_text}}}}}",
            *families_block(family_text(f) for f in d.families),
            *(["ROW KEY", *d.row_key.describe().splitlines()] if d.row_key is not None else []),
            *regions_block(["ID", "START KEY", "END KEY", "FILES", "CELLS", "BYTES"], region_rows),
            f"Total: {plural(d.files, 'file')}, {plural(d.cells, 'cell')}, "
            f"{plural(d.bytes, 'byte')}; next sequence number {d.next_seq}",
            f"Last commit: version {d.last_commit.version} {d.last_commit.operation} at "
            f"{format_ts(d.last_commit.timestamp_ms)}",
        ]

"""Renderers for command results: HBase-shell-like text, or one JSON document.

``--output`` picks :class:`TextOutput` or :class:`JsonOutput` (pyiceberg's
``cli/output.py`` pattern). Commands call one method per result and never print
themselves, so a new command adds one abstract method here and one implementation in
each renderer.

Only light modules are imported here: the result types are imported for type checking
only, so ``cellstore --help`` does not load pyarrow or fsspec.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

import click

from cellstore.core.family import FOREVER, Family
from cellstore.core.keys import to_string_binary

if TYPE_CHECKING:
    from cellstore.core.metadata import HistoryEntry
    from cellstore.ingest import LoadResult
    from cellstore.warehouse import TableDescription

__all__ = ["OUTPUT_FORMATS", "JsonOutput", "Output", "OutputFormat", "TextOutput", "make_output"]

OutputFormat = Literal["text", "json"]
OUTPUT_FORMATS: Final[tuple[OutputFormat, ...]] = ("text", "json")


class Output(ABC):
    """What every renderer can show."""

    @abstractmethod
    def tables(self, names: Sequence[str]) -> None:
        """Table names (``list``)."""

    @abstractmethod
    def describe_table(self, description: TableDescription) -> None:
        """One table version (``describe``)."""

    @abstractmethod
    def table_created(self, description: TableDescription) -> None:
        """A table that was just created (``create``)."""

    @abstractmethod
    def table_altered(self, description: TableDescription) -> None:
        """A table after a schema change (``alter``)."""

    @abstractmethod
    def table_dropped(self, name: str, *, purged: bool) -> None:
        """A dropped table (``drop``)."""

    @abstractmethod
    def history(self, name: str, entries: Sequence[HistoryEntry]) -> None:
        """Commits of a table, newest first (``history``)."""

    @abstractmethod
    def load_result(self, name: str, result: LoadResult) -> None:
        """What a load committed (``load-cells``)."""


def make_output(fmt: OutputFormat) -> Output:
    """The renderer for ``--output fmt``."""
    return JsonOutput() if fmt == "json" else TextOutput()


# ---------------------------------------------------------------------------- text helpers
def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def human_ttl(seconds: int | None) -> str:
    """A TTL as HBase's ``PrettyPrinter`` shows it.

    >>> human_ttl(None)
    'FOREVER'
    >>> human_ttl(90061)
    '90061 SECONDS (1 DAY 1 HOUR 1 MINUTE 1 SECOND)'
    """
    if seconds is None or seconds == FOREVER:
        return "FOREVER"
    if seconds < 60:
        return f"{seconds} SECOND" + ("" if seconds == 1 else "S")
    parts = []
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    for n, unit in ((days, "DAY"), (hours, "HOUR"), (minutes, "MINUTE"), (secs, "SECOND")):
        if n:
            parts.append(f"{n} {unit}" + ("" if n == 1 else "S"))
    return f"{seconds} SECONDS ({' '.join(parts)})"


def family_text(family: Family) -> str:
    """A family as ``describe`` in the HBase shell prints it.

    >>> family_text(Family(name="cf"))  # doctest: +NORMALIZE_WHITESPACE
    "{NAME => 'cf', VERSIONS => '3', MIN_VERSIONS => '0', TTL => 'FOREVER',
      KEEP_DELETED_CELLS => 'FALSE', COMPRESSION => 'ZSTD', BLOOMFILTER => 'ROW',
      BLOCKSIZE => '65536'}"
    """
    items = {
        "NAME": family.name,
        "VERSIONS": str(family.max_versions),
        "MIN_VERSIONS": str(family.min_versions),
        "TTL": human_ttl(family.ttl),
        "KEEP_DELETED_CELLS": family.keep_deleted_cells.value.upper(),
        "COMPRESSION": family.compression.upper(),
        "BLOOMFILTER": "ROW" if family.bloom_filter else "NONE",
        "BLOCKSIZE": str(family.block_size),
    }
    return _hbase_map(items)


def _hbase_map(items: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k} => '{v}'" for k, v in items.items()) + "}"


def format_ts(ms: int) -> str:
    """Milliseconds since the epoch as ISO-8601 UTC.

    >>> format_ts(0)
    '1970-01-01T00:00:00.000Z'
    """
    when = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _summary_text(summary: Mapping[str, Any]) -> str:
    parts = []
    for k, v in summary.items():
        text = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
        parts.append(f"{k}={text}")
    return ", ".join(parts)


def grid(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Left-aligned columns separated by two spaces, a header line first.

    >>> grid(["A", "BB"], [["x", 1]])
    ['A  BB', 'x  1']
    """
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def _echo_lines(lines: Sequence[str]) -> None:
    click.echo("\n".join(lines))


# ------------------------------------------------------------------------------ renderers
class TextOutput(Output):
    """Plain text that an HBase shell user recognises."""

    def tables(self, names: Sequence[str]) -> None:
        """``TABLE``, one name a line, then ``N row(s)``."""
        _echo_lines(["TABLE", *names, f"{len(names)} row(s)"])

    def describe_table(self, description: TableDescription) -> None:
        """Header, table attributes, families as HBase prints them, then the regions."""
        d = description
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
        lines = [
            f"Table {d.name} is ENABLED",
            f"{d.name}, {{TABLE_ATTRIBUTES => {{{attr_text}}}}}",
            "COLUMN FAMILIES DESCRIPTION",
            *(family_text(f) for f in d.families),
            f"{len(d.families)} row(s)",
            "REGIONS",
            *grid(["ID", "START KEY", "END KEY", "FILES", "CELLS", "BYTES"], region_rows),
            f"{len(d.regions)} row(s)",
            f"Total: {_plural(d.files, 'file')}, {_plural(d.cells, 'cell')}, "
            f"{_plural(d.bytes, 'byte')}; next sequence number {d.next_seq}",
            f"Last commit: version {d.last_commit.version} {d.last_commit.operation} at "
            f"{format_ts(d.last_commit.timestamp_ms)}",
        ]
        _echo_lines(lines)

    def table_created(self, description: TableDescription) -> None:
        """``Created table NAME`` with its family and region counts."""
        d = description
        families = _plural(len(d.families), "family", "families")
        click.echo(f"Created table {d.name} ({families}, {_plural(len(d.regions), 'region')})")

    def table_altered(self, description: TableDescription) -> None:
        """The new version and what changed."""
        d = description
        click.echo(
            f"Altered table {d.name}: version {d.version} ({_summary_text(d.last_commit.summary)})"
        )

    def table_dropped(self, name: str, *, purged: bool) -> None:
        """``Dropped table NAME``."""
        suffix = " and deleted its files" if purged else ""
        click.echo(f"Dropped table {name}{suffix}")

    def history(self, name: str, entries: Sequence[HistoryEntry]) -> None:
        """One line per commit, newest first."""
        rows = [
            [e.version, format_ts(e.timestamp_ms), e.operation, _summary_text(e.summary)]
            for e in entries
        ]
        _echo_lines(
            [*grid(["VERSION", "TIMESTAMP", "OPERATION", "SUMMARY"], rows), f"{len(rows)} row(s)"]
        )

    def load_result(self, name: str, result: LoadResult) -> None:
        """Cells, files and bytes committed, the new version, and files per region."""
        r = result
        if r.already_applied:
            click.echo(f"Load {r.load_id} was already applied to table {name}; nothing written")
            return
        if r.version is None:
            click.echo(f"No cells to load into table {name}; nothing committed")
            return
        lines = [
            f"Loaded {_plural(r.cells, 'cell')} into table {name}: {_plural(r.files, 'file')}, "
            f"{_plural(r.bytes, 'byte')}",
            f"version {r.version}, sequence number {r.seq}, load id {r.load_id}",
        ]
        if r.duplicates_dropped:
            lines.append(f"{_plural(r.duplicates_dropped, 'duplicate cell')} dropped")
        lines += grid(["REGION", "FILES"], sorted(r.files_per_region.items()))
        _echo_lines(lines)


class JsonOutput(Output):
    """One JSON document per command, for scripts (``jq``)."""

    def _print(self, doc: Any) -> None:
        click.echo(json.dumps(doc, indent=2))

    def tables(self, names: Sequence[str]) -> None:
        """``{"tables": [...]}``."""
        self._print({"tables": list(names)})

    def describe_table(self, description: TableDescription) -> None:
        """:meth:`TableDescription.to_dict` (keys in printable form)."""
        self._print(description.to_dict())

    def table_created(self, description: TableDescription) -> None:
        """The new table's description."""
        self._print(description.to_dict())

    def table_altered(self, description: TableDescription) -> None:
        """The table's description at its new version."""
        self._print(description.to_dict())

    def table_dropped(self, name: str, *, purged: bool) -> None:
        """``{"dropped": NAME, "purged": BOOL}``."""
        self._print({"dropped": name, "purged": purged})

    def history(self, name: str, entries: Sequence[HistoryEntry]) -> None:
        """``{"table": NAME, "history": [entry, ...]}``, newest first."""
        self._print({"table": name, "history": [e.to_dict() for e in entries]})

    def load_result(self, name: str, result: LoadResult) -> None:
        """The :class:`~cellstore.ingest.LoadResult` fields plus the table name."""
        self._print({"table": name, **result.to_dict()})

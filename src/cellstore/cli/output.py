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
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NamedTuple

import click

from cellstore.core.keys import to_string_binary
from cellstore.core.text import (
    family_text,
    format_ts,
    grid,
    human_bytes,
    human_ttl,
)
from cellstore.core.text import plural as _plural
from cellstore.core.text import summary_text as _summary_text

if TYPE_CHECKING:
    import pyarrow as pa

    from cellstore.cli.reads import ExportReport, QuickstartReport
    from cellstore.core.metadata import HistoryEntry
    from cellstore.loader import LoadReport
    from cellstore.warehouse import TableDescription

__all__ = [
    "OUTPUT_FORMATS",
    "JsonOutput",
    "Output",
    "OutputFormat",
    "PrintableCell",
    "TextOutput",
    "family_text",
    "format_ts",
    "grid",
    "human_bytes",
    "human_ttl",
    "make_output",
    "printable",
    "printable_cells",
]

OutputFormat = Literal["text", "json"]
OUTPUT_FORMATS: Final[tuple[OutputFormat, ...]] = ("text", "json")


class Output(ABC):
    """What every renderer can show."""

    #: Whether long-running commands may draw progress bars on stderr (when it is a
    #: terminal). JSON output is for scripts, so it keeps stderr quiet.
    shows_progress: ClassVar[bool] = False

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
    def load_result(self, name: str, result: LoadReport) -> None:
        """What a load committed (``load-cells``)."""

    @abstractmethod
    def scan_cells(self, name: str, batches: Iterable[pa.Table], *, started: float) -> None:
        """Scan results, batch by batch (``scan``).

        Args:
            name: The table.
            batches: Result cells in HBase result order (``Scan.to_batches()``); rows never
                span two batches.
            started: ``time.perf_counter()`` when the read started (for ``Took N seconds``).
        """

    @abstractmethod
    def get_cells(self, name: str, row: bytes, cells: pa.Table, *, started: float) -> None:
        """The cells of one row (``get``)."""

    @abstractmethod
    def row_count(self, name: str, rows: int, *, started: float) -> None:
        """A number of rows (``count``)."""

    @abstractmethod
    def scan_exported(self, name: str, report: ExportReport, *, started: float) -> None:
        """What ``scan --output-file`` wrote."""

    @abstractmethod
    def quickstart(self, report: QuickstartReport) -> None:
        """What ``quickstart`` did, a sample of the table, and what to type next."""


def make_output(fmt: OutputFormat) -> Output:
    """The renderer for ``--output fmt``."""
    return JsonOutput() if fmt == "json" else TextOutput()


def _echo_lines(lines: Sequence[str]) -> None:
    click.echo("\n".join(lines))


# ---------------------------------------------------------------------------- cell helpers
#: Matches byte strings that ``to_string_binary`` leaves unchanged (derived from it, so
#: the two can never disagree); they skip the per-byte table lookup.
_ALL_PRINTABLE: Final = re.compile(
    b"[" + re.escape(bytes(b for b in range(256) if to_string_binary(bytes([b])) == chr(b))) + b"]*"
)


def printable(data: bytes) -> str:
    r"""``data`` in HBase's printable form (``Bytes.toStringBinary``).

    >>> printable(b"com.cnn.www")
    'com.cnn.www'
    >>> print(printable(b"a\x00\xff\\"))
    a\x00\xFF\x5C
    """
    if _ALL_PRINTABLE.fullmatch(data):
        return data.decode("ascii")
    return to_string_binary(data)


class PrintableCell(NamedTuple):
    """One result cell for people and text files: bytes in printable form, the type by name.

    The fields are the columns ``load-cells`` reads, so a CSV or JSON-lines export of a
    scan loads back as it is.

    Attributes:
        row: Row key, printable form.
        family: Column family.
        qualifier: Qualifier, printable form.
        ts: Timestamp, ms since the epoch.
        type: HBase's type name: ``Put``, ``Delete``, ``DeleteColumn``, ...
        value: Value, printable form (empty for delete markers).
    """

    row: str
    family: str
    qualifier: str
    ts: int
    type: str
    value: str

    @property
    def column(self) -> str:
        """``family:qualifier``, as the HBase shell names a column."""
        return f"{self.family}:{self.qualifier}"

    def shell_text(self) -> str:
        """The cell part of an HBase shell line: ``timestamp=..., value=...``.

        Delete markers show their type instead of a value, as in a raw scan in the shell.

        >>> PrintableCell("r", "cf", "q", 5, "DeleteColumn", "").shell_text()
        'timestamp=5, type=DeleteColumn'
        """
        if self.type != "Put":
            return f"timestamp={self.ts}, type={self.type}"
        return f"timestamp={self.ts}, value={self.value}"

    def to_json(self) -> dict[str, Any]:
        """``{"row", "column", "timestamp", "type", "value"}``, strings in printable form."""
        return {
            "row": self.row,
            "column": self.column,
            "timestamp": self.ts,
            "type": self.type,
            "value": self.value,
        }


def printable_cells(cells: pa.Table) -> list[PrintableCell]:
    """Result cells (``row, family, qualifier, ts, type, value``) as :class:`PrintableCell`.

    Args:
        cells: An Arrow table in the scan result schema.

    Returns:
        One :class:`PrintableCell` per cell, in the table's order.
    """
    from cellstore.core.cells import CellType

    names = {int(t): t.hbase_name for t in CellType}
    rows, families, qualifiers, stamps, types, values = (
        cells.column(c).to_pylist() for c in ("row", "family", "qualifier", "ts", "type", "value")
    )
    return [
        PrintableCell(printable(r), f, printable(q), ts, names[t], printable(v))
        for r, f, q, ts, t, v in zip(rows, families, qualifiers, stamps, types, values, strict=True)
    ]


#: The HBase shell's first column (row key or column name) is padded to this width.
_KEY_WIDTH: Final = 27


def _shell_line(key: str, cell: str) -> str:
    """`` KEY<padding> CELL`` as the HBase shell's formatter prints a result line."""
    return f" {key:<{_KEY_WIDTH}} {cell}"


def _shell_header(key: str, cell: str) -> str:
    return f"{key:<{_KEY_WIDTH + 2}}{cell}"


def _took(started: float) -> str:
    return f"Took {time.perf_counter() - started:.4f} seconds"


def _echo_scan(batches: Iterable[pa.Table]) -> int:
    """Print scan results as the HBase shell does, batch by batch; return the row count."""
    click.echo(_shell_header("ROW", "COLUMN+CELL"))
    rows = 0
    previous: str | None = None
    for batch in batches:
        lines = []
        for cell in printable_cells(batch):
            if cell.row != previous:
                rows += 1
                previous = cell.row
            lines.append(_shell_line(cell.row, f"column={cell.column}, {cell.shell_text()}"))
        if lines:
            _echo_lines(lines)
    click.echo(f"{rows} row(s)")
    return rows


def _scan_json(batches: Iterable[pa.Table]) -> tuple[int, list[dict[str, Any]]]:
    """Row count and JSON cells of scan results."""
    cells = [c for batch in batches for c in printable_cells(batch)]
    rows = sum(1 for i, c in enumerate(cells) if i == 0 or c.row != cells[i - 1].row)
    return rows, [c.to_json() for c in cells]


def _load_lines(name: str, result: LoadReport) -> list[str]:
    """What a load did: cells, files, bytes, version, and files per region."""
    r = result
    if r.already_applied:
        return [f"Load {r.load_id} was already applied to table {name}; nothing written"]
    if r.version is None:
        return [f"No cells to load into table {name}; nothing committed"]
    lines = [
        f"Loaded {_plural(r.cells, 'cell')} into table {name}: {_plural(r.files, 'file')}, "
        f"{_plural(r.bytes, 'byte')}",
        f"version {r.version}, sequence number {r.seq}, load id {r.load_id}",
    ]
    if r.duplicates_dropped:
        lines.append(f"{_plural(r.duplicates_dropped, 'duplicate cell')} dropped")
    lines += grid(["REGION", "FILES"], sorted(r.files_per_region.items()))
    return lines


# ------------------------------------------------------------------------------ renderers
class TextOutput(Output):
    """Plain text that an HBase shell user recognises."""

    shows_progress = True

    def tables(self, names: Sequence[str]) -> None:
        """``TABLE``, one name a line, then ``N row(s)``."""
        _echo_lines(["TABLE", *names, f"{len(names)} row(s)"])

    def describe_table(self, description: TableDescription) -> None:
        """Header, table attributes, families as HBase prints them, then the regions."""
        _echo_lines(description.text_lines())

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

    def load_result(self, name: str, result: LoadReport) -> None:
        """Cells, files and bytes committed, the new version, and files per region."""
        _echo_lines(_load_lines(name, result))

    def scan_cells(self, name: str, batches: Iterable[pa.Table], *, started: float) -> None:
        """HBase shell ``scan``: ``ROW  COLUMN+CELL``, one line per cell, ``N row(s)``.

        Cells are printed as each batch arrives, so a large scan starts printing at once.
        Delete markers (raw scans) show ``type=...`` instead of a value.
        """
        _echo_scan(batches)
        click.echo(_took(started))

    def get_cells(self, name: str, row: bytes, cells: pa.Table, *, started: float) -> None:
        """HBase shell ``get``: ``COLUMN  CELL``, one line per cell, then ``N row(s)``.

        Like the shell, the footer counts the cells of the row.
        """
        found = printable_cells(cells)
        _echo_lines(
            [
                _shell_header("COLUMN", "CELL"),
                *(_shell_line(c.column, c.shell_text()) for c in found),
                f"{len(found)} row(s)",
                _took(started),
            ]
        )

    def row_count(self, name: str, rows: int, *, started: float) -> None:
        """``N row(s)`` as HBase's ``count`` ends."""
        _echo_lines([f"{rows} row(s)", _took(started)])

    def scan_exported(self, name: str, report: ExportReport, *, started: float) -> None:
        """``Wrote C cells (R row(s)) of TABLE to PATH as FORMAT, B bytes``."""
        r = report
        _echo_lines(
            [
                f"Wrote {_plural(r.cells, 'cell')} ({r.rows} row(s)) of table {name} to "
                f"{r.path} as {r.format}, {_plural(r.bytes, 'byte')}",
                _took(started),
            ]
        )

    def quickstart(self, report: QuickstartReport) -> None:
        """The table, the load, a short scan, the row count, and the commands to try next."""
        r = report
        d = r.description
        families = _plural(len(d.families), "family", "families")
        shape = f"{families}, {_plural(len(d.regions), 'region')}"
        if r.created:
            click.echo(f"Created table {r.table} in {r.root} ({shape})")
            _echo_lines([family_text(f) for f in d.families])
        else:
            click.echo(f"Table {r.table} already exists in {r.root} ({shape})")
        click.echo()
        _echo_lines(_load_lines(r.table, r.load))
        click.echo()
        click.echo(f"scan '{r.table}', {{LIMIT => {r.scan_limit}}}")
        _echo_scan([r.sample])
        click.echo()
        click.echo(f"count '{r.table}'")
        click.echo(f"{r.rows} row(s)")
        click.echo()
        _echo_lines(["Next, try:", *(f"  {c}" for c in r.next_commands)])


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

    def load_result(self, name: str, result: LoadReport) -> None:
        """The :class:`~cellstore.loader.LoadReport` fields (the table name among them)."""
        self._print({**result.to_dict(), "table": name})

    def scan_cells(self, name: str, batches: Iterable[pa.Table], *, started: float) -> None:
        """``{"table": NAME, "rows": N, "cells": [cell, ...]}``, strings in printable form.

        Each cell is ``{"row", "column", "timestamp", "type", "value"}``.
        """
        rows, cells = _scan_json(batches)
        self._print({"table": name, "rows": rows, "cells": cells})

    def get_cells(self, name: str, row: bytes, cells: pa.Table, *, started: float) -> None:
        """``{"table": NAME, "row": ROW, "cells": [cell, ...]}`` (no cells: absent row)."""
        found = [c.to_json() for c in printable_cells(cells)]
        self._print({"table": name, "row": printable(row), "cells": found})

    def row_count(self, name: str, rows: int, *, started: float) -> None:
        """``{"table": NAME, "rows": N}``."""
        self._print({"table": name, "rows": rows})

    def scan_exported(self, name: str, report: ExportReport, *, started: float) -> None:
        """``{"table", "file", "format", "rows", "cells", "bytes"}``."""
        self._print({"table": name, **report.to_dict()})

    def quickstart(self, report: QuickstartReport) -> None:
        """``{"table", "root", "created", "version", "load", "rows", "scan", "next"}``.

        ``load`` is the load result (``already-applied`` on a re-run), ``rows`` the table's
        row count and ``scan`` the first rows as ``{"limit", "rows", "cells"}``.
        """
        r = report
        sample_rows, sample = _scan_json([r.sample])
        self._print(
            {
                "table": r.table,
                "root": r.root,
                "created": r.created,
                "version": r.description.version,
                "load": r.load.to_dict(),
                "rows": r.rows,
                "scan": {"limit": r.scan_limit, "rows": sample_rows, "cells": sample},
                "next": list(r.next_commands),
            }
        )

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
import math
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NamedTuple, Protocol

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
    from cellstore.core.metadata import HistoryEntry, TableMetadata
    from cellstore.core.rowkey import RowKeySpec
    from cellstore.loader import LoadReport
    from cellstore.loader.mapping import KeyColumn, TableCodecs
    from cellstore.reader import Description
    from cellstore.warehouse import TableDescription

__all__ = [
    "OUTPUT_FORMATS",
    "CellDecoder",
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


class WideRows(Protocol):
    """A wide scan's results, whole or task by task (a :class:`~cellstore.reader.Scan`)."""

    def to_arrow(self) -> pa.Table:
        """Every row, the columns of all of them."""

    def to_batches(self) -> Iterator[pa.Table]:
        """The rows task by task."""


class Output(ABC):
    """What every renderer can show."""

    #: Whether long-running commands may draw progress bars on stderr (when it is a
    #: terminal). JSON output is for scripts, so it keeps stderr quiet.
    shows_progress: ClassVar[bool] = False

    @abstractmethod
    def tables(self, names: Sequence[str]) -> None:
        """Table names (``list``)."""

    @abstractmethod
    def describe_table(self, description: Description) -> None:
        """One table (``describe``, ``hbase describe``)."""

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
    def scan_cells(
        self,
        name: str,
        batches: Iterable[pa.Table],
        *,
        started: float,
        decoder: CellDecoder | None = None,
    ) -> None:
        """Scan results, batch by batch (``scan``).

        Args:
            name: The table.
            batches: Result cells in HBase result order (``Scan.to_batches()``); rows never
                span two batches.
            started: ``time.perf_counter()`` when the read started (for ``Took N seconds``).
            decoder: Decodes values and row keys with the codecs recorded with the table;
                None prints them raw (printable form).
        """

    @abstractmethod
    def get_cells(
        self,
        name: str,
        row: bytes,
        cells: pa.Table,
        *,
        started: float,
        decoder: CellDecoder | None = None,
    ) -> None:
        """The cells of one row (``get``); ``decoder`` as for :meth:`scan_cells`."""

    @abstractmethod
    def scan_wide(self, name: str, scan: WideRows, *, started: float) -> None:
        """A wide-shape scan (``scan --shape wide``): ``row``, key fields, one column each.

        The renderer reads ``scan`` as it needs: whole (a table's column widths) or batch
        by batch.
        """

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


# ------------------------------------------------------------------------- decoded cells
#: Control characters, escaped in decoded text so one cell stays one line.
_CONTROL: Final = re.compile("[\x00-\x1f\x7f]")


def _value_text(value: Any) -> str:
    r"""A decoded value as text: numbers as Python prints them, booleans as Java does.

    Strings print as they are but for control characters (``\x0A``), bytes in printable form.

    >>> _value_text(True), _value_text(21.5), _value_text("a\nb")
    ('true', '21.5', 'a\\x0Ab')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return printable(value)
    if isinstance(value, str):
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02X}", value)
    return str(value)


def _json_value(value: Any) -> Any:
    """A decoded value as JSON: non-finite floats as strings, bytes in printable form."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, bytes):
        return printable(value)
    return value


def _objects(values: list[Any]) -> Any:
    """A numpy object array holding ``values`` as they are."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class CellDecoder:
    """Decodes result values and row keys with the codecs recorded with a table.

    Values decode with the table's recorded column codecs
    (:class:`~cellstore.loader.mapping.TableCodecs`); row keys with the row-key spec stored
    with the table, else the row key of the latest mapping-based load (a spec's fields, or
    a numeric key column). A value or key that does not decode with its codec (another
    load wrote other bytes) stays raw. Decoding is vectorized per column and codec.

    Attributes:
        codecs: The recorded codecs.
        row_key: The salt-free row-key spec or key column that decodes rows, or None.
    """

    def __init__(self, codecs: TableCodecs, row_key: RowKeySpec | KeyColumn | None) -> None:
        self.codecs = codecs
        self.row_key = row_key

    @classmethod
    def for_table(cls, metadata: TableMetadata) -> CellDecoder | None:
        """The decoder of a table version, or None when nothing is recorded to decode with."""
        from dataclasses import replace

        from cellstore.core.codecs import Codec
        from cellstore.core.rowkey import RowKeySpec
        from cellstore.loader.mapping import TableCodecs

        try:
            codecs = TableCodecs.from_properties(metadata.properties)
        except ValueError:
            codecs = TableCodecs()
        key: RowKeySpec | KeyColumn | None = metadata.row_key or codecs.row_key
        if isinstance(key, RowKeySpec):
            key = replace(key, salt_buckets=None)  # results are salt-free
        elif key is not None and key.codec in (Codec.STRING, Codec.BYTES):
            key = None  # the printable form is the key already
        if key is None and not codecs.columns and not codecs.families:
            return None
        return cls(codecs, key)

    def values(self, cells: pa.Table) -> list[Any]:
        """Decoded values of ``cells`` (result schema), None where not decoded (raw)."""
        import numpy as np
        import pyarrow as pa

        from cellstore.core.codecs import decode_values
        from cellstore.loader.mapping.decoding import value_groups

        out = np.full(cells.num_rows, None, dtype=object)
        value = cells.column("value")
        for idx, codec in value_groups(self.codecs, cells):
            decoded = decode_values(value.take(pa.array(idx)), codec, field="value", errors="null")
            out[idx] = _objects(decoded.to_pylist())
        return list(out)

    def keys(self, rows: pa.Array | pa.ChunkedArray) -> list[dict[str, Any] | None]:
        """Decoded key fields of each row (``{field: value}``), None where not decoded.

        Only the first row of each run of equal rows is decoded (results are grouped by row).
        """
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from cellstore.core.codecs import decode_values
        from cellstore.loader.mapping import KeyColumn

        n = len(rows)
        if self.row_key is None or n == 0:
            return [None] * n
        arr = rows.combine_chunks() if isinstance(rows, pa.ChunkedArray) else rows
        starts = np.ones(n, dtype=bool)
        if n > 1:
            same = pc.equal(arr.slice(1), arr.slice(0, n - 1)).to_numpy(zero_copy_only=False)
            starts[1:] = ~same
        first = np.flatnonzero(starts)
        unique = arr.take(pa.array(first))
        if isinstance(self.row_key, KeyColumn):
            name = self.row_key.column
            decoded = decode_values(unique, self.row_key.codec, field="row", errors="null")
            per_run = [None if v is None else {name: v} for v in decoded.to_pylist()]
        else:
            fields = self.row_key.decode(unique, errors="null")
            valid = np.ones(len(unique), dtype=bool)
            for column in fields.columns:
                valid &= column.is_valid().to_numpy(zero_copy_only=False)
            per_run = [
                d if ok else None for d, ok in zip(fields.to_pylist(), valid.tolist(), strict=True)
            ]
        run_of = np.cumsum(starts) - 1
        return list(_objects(per_run)[run_of])


class _Shown(NamedTuple):
    """One result cell as shown: :class:`PrintableCell` plus its decoded value and key."""

    cell: PrintableCell
    key: dict[str, Any] | None
    value: Any

    @property
    def row_text(self) -> str:
        """The row as shown: ``field=value,...`` when decoded, else printable form."""
        if self.key is None:
            return self.cell.row
        return ",".join(f"{k}={_value_text(v)}" for k, v in self.key.items())

    def shell_text(self) -> str:
        """As :meth:`PrintableCell.shell_text`, with the decoded value."""
        if self.value is None or self.cell.type != "Put":
            return self.cell.shell_text()
        return f"timestamp={self.cell.ts}, value={_value_text(self.value)}"

    def to_json(self) -> dict[str, Any]:
        """As :meth:`PrintableCell.to_json`; a decoded value, and ``key`` when decoded."""
        doc = self.cell.to_json()
        if self.key is not None:
            doc["key"] = {k: _json_value(v) for k, v in self.key.items()}
        if self.value is not None and self.cell.type == "Put":
            doc["value"] = _json_value(self.value)
        return doc


def shown_cells(cells: pa.Table, decoder: CellDecoder | None) -> list[_Shown]:
    """Result cells with their decoded values and keys (raw where ``decoder`` is None)."""
    printed = printable_cells(cells)
    if decoder is None:
        return [_Shown(c, None, None) for c in printed]
    keys = decoder.keys(cells.column("row"))
    values = decoder.values(cells)
    return [_Shown(c, k, v) for c, k, v in zip(printed, keys, values, strict=True)]


#: The HBase shell's first column (row key or column name) is padded to this width.
_KEY_WIDTH: Final = 27


def _shell_line(key: str, cell: str) -> str:
    """`` KEY<padding> CELL`` as the HBase shell's formatter prints a result line."""
    return f" {key:<{_KEY_WIDTH}} {cell}"


def _shell_header(key: str, cell: str) -> str:
    return f"{key:<{_KEY_WIDTH + 2}}{cell}"


def _took(started: float) -> str:
    return f"Took {time.perf_counter() - started:.4f} seconds"


def _echo_scan(batches: Iterable[pa.Table], decoder: CellDecoder | None = None) -> int:
    """Print scan results as the HBase shell does, batch by batch; return the row count."""
    click.echo(_shell_header("ROW", "COLUMN+CELL"))
    rows = 0
    previous: str | None = None
    for batch in batches:
        lines = []
        for shown in shown_cells(batch, decoder):
            cell = shown.cell
            if cell.row != previous:
                rows += 1
                previous = cell.row
            lines.append(_shell_line(shown.row_text, f"column={cell.column}, {shown.shell_text()}"))
        if lines:
            _echo_lines(lines)
    click.echo(f"{rows} row(s)")
    return rows


def _scan_json(
    batches: Iterable[pa.Table], decoder: CellDecoder | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """Row count and JSON cells of scan results."""
    cells = [c for batch in batches for c in shown_cells(batch, decoder)]
    rows = sum(1 for i, c in enumerate(cells) if i == 0 or c.cell.row != cells[i - 1].cell.row)
    return rows, [c.to_json() for c in cells]


def _wide_records(rows: pa.Table) -> list[dict[str, Any]]:
    """A wide result's rows as ``{column: value}``: bytes in printable form, nulls left out."""
    return [{k: _json_value(v) for k, v in r.items() if v is not None} for r in rows.to_pylist()]


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
        f"version {r.version}, sequence number {r.seq if r.seq is not None else 'none'}, "
        f"load id {r.load_id}",
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

    def describe_table(self, description: Description) -> None:
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

    def scan_cells(
        self,
        name: str,
        batches: Iterable[pa.Table],
        *,
        started: float,
        decoder: CellDecoder | None = None,
    ) -> None:
        """HBase shell ``scan``: ``ROW  COLUMN+CELL``, one line per cell, ``N row(s)``.

        Cells are printed as each batch arrives, so a large scan starts printing at once.
        Delete markers (raw scans) show ``type=...`` instead of a value. With a decoder,
        values show decoded (``value=21.5``) and composite keys as ``field=value,...``.
        """
        _echo_scan(batches, decoder)
        click.echo(_took(started))

    def get_cells(
        self,
        name: str,
        row: bytes,
        cells: pa.Table,
        *,
        started: float,
        decoder: CellDecoder | None = None,
    ) -> None:
        """HBase shell ``get``: ``COLUMN  CELL``, one line per cell, then ``N row(s)``.

        Like the shell, the footer counts the cells of the row.
        """
        found = shown_cells(cells, decoder)
        _echo_lines(
            [
                _shell_header("COLUMN", "CELL"),
                *(_shell_line(c.cell.column, c.shell_text()) for c in found),
                f"{len(found)} row(s)",
                _took(started),
            ]
        )

    def scan_wide(self, name: str, scan: WideRows, *, started: float) -> None:
        """A grid: one line per row, a column each (bytes printable, empty for null)."""
        rows = scan.to_arrow()
        body = [["" if v is None else _value_text(v) for v in r.values()] for r in rows.to_pylist()]
        _echo_lines([*grid(rows.column_names, body), f"{rows.num_rows} row(s)", _took(started)])

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

    def describe_table(self, description: Description) -> None:
        """The description's ``to_dict()`` (keys in printable form)."""
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

    def scan_cells(
        self,
        name: str,
        batches: Iterable[pa.Table],
        *,
        started: float,
        decoder: CellDecoder | None = None,
    ) -> None:
        """``{"table": NAME, "rows": N, "cells": [cell, ...]}``, strings in printable form.

        Each cell is ``{"row", "column", "timestamp", "type", "value"}``; with a decoder,
        ``value`` is the decoded JSON value (number, string, boolean; NaN and infinities as
        strings) and a decoded row key adds ``"key": {field: value}``.
        """
        rows, cells = _scan_json(batches, decoder)
        self._print({"table": name, "rows": rows, "cells": cells})

    def get_cells(
        self,
        name: str,
        row: bytes,
        cells: pa.Table,
        *,
        started: float,
        decoder: CellDecoder | None = None,
    ) -> None:
        """``{"table": NAME, "row": ROW, "cells": [cell, ...]}`` (no cells: absent row)."""
        found = [c.to_json() for c in shown_cells(cells, decoder)]
        self._print({"table": name, "row": printable(row), "cells": found})

    def scan_wide(self, name: str, scan: WideRows, *, started: float) -> None:
        """JSON lines, one object per row: ``{"row": ROW, "family:qualifier": value, ...}``.

        Written task by task as the scan reads (bounded memory). Bytes in printable form,
        decoded values as JSON values (NaN and infinities as strings); a column the row
        has no value in is left out, as HBase's rows are sparse.
        """
        for batch in scan.to_batches():
            lines = [json.dumps(record) for record in _wide_records(batch)]
            if lines:
                _echo_lines(lines)

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

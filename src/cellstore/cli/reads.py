r"""Read commands: ``scan``, ``get`` and ``count`` (the HBase shell's reads), and ``quickstart``.

Each read builds its :class:`~cellstore.reader.ScanOptions` from its flags (defined once,
with that builder, in :mod:`cellstore.cli.scanflags`, which ``hbase scan``/``count`` and
``export`` share), makes one library call (:meth:`~cellstore.warehouse.Table.scan` or
:meth:`~cellstore.warehouse.Table.get`) and hands the result to the renderer; the library
validates the options (an invalid combination exits with 2 and one line). Row keys,
prefixes and qualifiers are typed in HBase's printable form (``\x00`` escapes), or, on a
table with a row-key spec, as key fields (``--key FIELD=VALUE``). Values and composite keys
print decoded with the codecs the table's mapping-based loads recorded
(:class:`~cellstore.cli.output.CellDecoder`; ``--raw-values`` prints the stored bytes), and
a ``--column`` that no cell read had warns on stderr.

``scan --output-file`` streams the results task by task into a file instead of the
terminal: CSV or JSON lines with the columns ``load-cells`` reads (bytes in printable form,
types by name), or Parquet with the scan's Arrow schema as it is. ``--shape wide`` prints a
table (JSON lines with ``--output json``) or writes the file with the recorded columns
decoded (typed Parquet columns; :func:`~cellstore.cli.scanflags.with_recorded_codecs`).
Cells-shape files keep the stored bytes in ``value``, so that they load back with
``load-cells``, and add a ``decoded`` text column on a table with recorded codecs.

pyarrow, tqdm and the warehouse are imported inside command bodies only, so
``cellstore --help`` stays fast.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.load_cells import read_cells_file
from cellstore.cli.params import PRINTABLE_KEY
from cellstore.cli.scanflags import (
    COUNT_FLAGS,
    GET_FLAGS,
    RAW_VALUES,
    SCAN_FLAGS,
    ScanFlags,
    key_help,
    key_names,
    key_texts,
    recorded_key,
    scan_flags,
)
from cellstore.core.family import Family
from cellstore.defaults import DEFAULT_ROOT

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    import pyarrow as pa

    from cellstore.loader import LoadReport
    from cellstore.loader.mapping import TableCodecs
    from cellstore.reader import Scan, ScanOptions
    from cellstore.warehouse import Table, TableDescription

__all__ = [
    "COMMANDS",
    "EXPORT_FORMATS",
    "QUICKSTART_LOAD_ID",
    "QUICKSTART_TABLE",
    "ExportFormat",
    "ExportReport",
    "QuickstartReport",
    "count_cmd",
    "export_scan",
    "get_cmd",
    "quickstart_cmd",
    "scan_cmd",
]

ExportFormat = Literal["csv", "json", "parquet"]
EXPORT_FORMATS: Final[tuple[ExportFormat, ...]] = get_args(ExportFormat)
_EXPORT_SUFFIXES: Final[dict[str, ExportFormat]] = {
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}

#: The table ``quickstart`` creates and loads.
QUICKSTART_TABLE: Final = "example:webtable"
#: The load id of the bundled example: a second ``quickstart`` finds it and loads nothing.
QUICKSTART_LOAD_ID: Final = "quickstart-webtable-v1"
#: Rows of the example table ``quickstart`` shows.
QUICKSTART_SCAN_LIMIT: Final = 5


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class ExportReport:
    """What ``scan --output-file`` wrote.

    Attributes:
        path: The file.
        format: ``csv``, ``json`` (JSON lines) or ``parquet``.
        rows: Rows written.
        cells: Cells written.
        bytes: Size of the file.
    """

    path: str
    format: ExportFormat
    rows: int
    cells: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        """``{"file", "format", "rows", "cells", "bytes"}``."""
        return {
            "file": self.path,
            "format": self.format,
            "rows": self.rows,
            "cells": self.cells,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class QuickstartReport:
    """What ``quickstart`` did.

    Attributes:
        table: The example table's name.
        root: The warehouse root, as given.
        created: Whether this run created the table (False: it existed).
        description: The table after the load.
        load: The load result (``already_applied`` on a re-run).
        rows: Rows in the table.
        scan_limit: Rows :attr:`sample` was limited to.
        sample: The first rows' cells (scan result schema).
        next_commands: CLI commands to try next, ready to paste.
    """

    table: str
    root: str
    created: bool
    description: TableDescription
    load: LoadReport
    rows: int
    scan_limit: int
    sample: pa.Table
    next_commands: tuple[str, ...]


# ----------------------------------------------------------------------- shared options
_GET_KEY = click.option(
    "--key",
    "key_fields",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Instead of ROW: a row-key field's value (repeatable, every field of the key); the "
    "key is built with the table's row-key spec (salt and hashes computed).",
)


def _row_of_key(handle: Table, texts: dict[str, str]) -> bytes:
    """The salt-free row key of ``--key`` fields, built with the table's recorded key."""
    from dataclasses import replace

    import pyarrow as pa

    from cellstore.core.codecs import encode_values
    from cellstore.errors import InvalidArgumentError
    from cellstore.loader.mapping import KeyColumn

    key = recorded_key(handle)
    if key is None:
        raise click.BadParameter(
            f"table {handle.name} has no row-key spec and no recorded key column; give ROW",
            param_hint="'--key'",
        )
    try:
        if isinstance(key, KeyColumn):
            if list(texts) != [key.column]:
                raise InvalidArgumentError(f"{key_help(key)}: give --key {key.column}=...")
            encoded = encode_values(pa.array([texts[key.column]]), key.codec, field=key.column)
            return bytes(encoded[0].as_py())
        return replace(key, salt_buckets=None).key_for(key.parse_values(texts))
    except InvalidArgumentError as e:
        raise click.BadParameter(f"table {handle.name}: {e}", param_hint="'--key'") from None


class _ColumnsSeen:
    """Which requested ``family:qualifier`` columns occur in result batches (vectorized)."""

    def __init__(self, options: ScanOptions) -> None:
        from cellstore.core.keys import split_column
        from cellstore.reader import as_names

        columns = [
            c if isinstance(c, bytes) else c.encode() for c in as_names(options.columns) or ()
        ]
        self.missing: dict[tuple[str, bytes], bytes] = {
            split_column(c): c for c in columns if b":" in c
        }

    def note(self, cells: pa.Table) -> None:
        """Note the requested columns ``cells`` (result schema) hold."""
        import pyarrow as pa
        import pyarrow.compute as pc

        for fam, qual in list(self.missing):
            hit = pc.and_(
                pc.equal(cells.column("family"), fam),
                pc.equal(cells.column("qualifier"), pa.scalar(qual, pa.binary())),
            )
            if pc.any(hit).as_py():
                del self.missing[(fam, qual)]

    def watch(self, batches: Iterable[pa.Table]) -> Iterator[pa.Table]:
        """``batches`` as they are, noting the requested columns each one holds."""
        for batch in batches:
            self.note(batch)
            yield batch

    def warn(self, handle: Table) -> None:
        """On stderr: each requested column no result cell had, with the closest name."""
        import difflib

        from cellstore.cli.output import printable
        from cellstore.loader.mapping import TableCodecs

        try:
            known = list(TableCodecs.from_properties(handle.metadata.properties).columns)
        except ValueError:
            known = []
        for column in self.missing.values():
            name = printable(column)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close and close[0] != name else ""
            click.echo(f"warning: column {name} does not occur in the cells read{hint}", err=True)


def _stderr_is_tty() -> bool:
    return sys.stderr is not None and sys.stderr.isatty()


# ---------------------------------------------------------------------------------- scan
def export_scan(
    scan: Scan,
    *,
    path: str,
    fmt: ExportFormat,
    progress: bool,
    label: str = "scan",
    decoded: bool = False,
) -> ExportReport:
    """Write ``scan`` to one file through :func:`cellstore.jobs.export.export_file`.

    The file appears only when complete (a failed or interrupted scan leaves nothing).

    Args:
        scan: The planned scan (cells or wide shape).
        path: Local file to write (replaced if it exists).
        fmt: ``csv`` or ``json`` (JSON lines; bytes in printable form and types by HBase
            name, as ``load-cells`` reads them), or ``parquet`` (the scan's Arrow schema).
        progress: Draw a progress bar over the scan's tasks on stderr.
        label: The progress bar's description.
        decoded: Cells shape: add a ``decoded`` column (the recorded codecs; ``value``
            keeps the stored bytes).

    Returns:
        The rows, cells and bytes written.
    """
    from tqdm import tqdm

    from cellstore.jobs.export import export_file

    target = str(Path(path).absolute())
    with tqdm(desc=label, unit="task", file=sys.stderr, disable=not progress) as bar:

        def tick(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        report = export_file(scan, target, format=fmt, progress=tick, decoded=decoded)
    return ExportReport(path, fmt, report.rows, report.cells, report.bytes)


class _FamilyDecoded:
    """A wide scan whose results also decode the columns of family codecs.

    (:func:`~cellstore.loader.mapping.decoding.decode_family_columns`: qualifiers from
    an input column, which ``column_types`` cannot name before reading.)
    """

    def __init__(self, scan: Scan, codecs: TableCodecs) -> None:
        self.scan = scan
        self.codecs = codecs
        types = scan.options.column_types
        self.keep = frozenset(types) if isinstance(types, Mapping) else frozenset()

    @classmethod
    def of(cls, scan: Scan) -> Scan | _FamilyDecoded:
        """``scan`` itself when its table has no family codec."""
        from cellstore.loader.mapping.decoding import recorded_codecs

        codecs = recorded_codecs(scan.metadata)
        return scan if codecs is None or not codecs.families else cls(scan, codecs)

    def to_arrow(self) -> pa.Table:
        """Every row, decoded."""
        from cellstore.loader.mapping.decoding import decode_family_columns

        return decode_family_columns(self.codecs, self.scan.to_arrow(), keep=self.keep)

    def to_batches(self) -> Iterator[pa.Table]:
        """The rows task by task, decoded."""
        from cellstore.loader.mapping.decoding import decode_family_columns

        for batch in self.scan.to_batches():
            yield decode_family_columns(self.codecs, batch, keep=self.keep)


def _export_format_for(path: str) -> ExportFormat:
    fmt = _EXPORT_SUFFIXES.get(PurePath(path).suffix.lower())
    if fmt is None:
        raise click.BadParameter(
            f"cannot tell the format of {path!r} from its extension; give --format "
            f"({'|'.join(EXPORT_FORMATS)})",
            param_hint="'--output-file'",
        )
    return fmt


@click.command("scan")
@click.argument("table")
@scan_flags(*SCAN_FLAGS)
@RAW_VALUES
@click.option(
    "--output-file",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    metavar="PATH",
    help="Write the cells to PATH instead of the terminal (a progress bar shows on stderr).",
)
@click.option(
    "--format",
    "file_format",
    type=click.Choice(EXPORT_FORMATS),
    default=None,
    help="Format of --output-file (default: from its extension: .csv, .json/.jsonl, "
    ".parquet). Cells: csv and json (JSON lines) have the columns load-cells reads, bytes in "
    "printable form; parquet keeps the binary Arrow schema; all add a decoded text column "
    "(recorded codecs). Wide: decoded values, typed parquet columns (--raw-values: bytes).",
)
@pass_cli_context
def scan_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    scan: ScanFlags,
    raw_values: bool,
    output_file: str | None,
    file_format: ExportFormat | None,
) -> None:
    """Scan TABLE's rows with HBase's read semantics, printed as the HBase shell does.

    \b
    Examples:
      cellstore scan example:webtable --prefix com.cnn --column contents:html
      cellstore scan example:webtable --raw --versions 10 --limit 3
      cellstore scan example:webtable --output-file webtable.parquet
      cellstore scan ns:sensors --key sensor_id=sensor-00001 --limit 3

    Values and composite row keys print decoded with the codecs the table's
    mapping-based loads recorded (--raw-values: as stored). --shape wide prints a table
    (JSON lines with --output json), or writes --output-file, decoded the same way.
    """  # noqa: D301 (click's \b marker)
    if file_format is not None and output_file is None:
        raise click.BadParameter("needs --output-file", param_hint="'--format'")
    warehouse = cli_ctx.warehouse()
    started = time.perf_counter()  # like the shell's "Took": the read, not the imports
    handle = warehouse.table(table)
    planned = handle.scan(scan.options(handle, decode=not raw_values))
    name = str(handle.name)
    if output_file is None and planned.options.shape == "wide":
        rows = planned if raw_values else _FamilyDecoded.of(planned)
        cli_ctx.output.scan_wide(name, rows, started=started)
        return
    if output_file is None:
        _print_cells(cli_ctx, handle, planned, started=started, raw_values=raw_values)
        return
    report = export_scan(
        planned,
        path=output_file,
        fmt=file_format or _export_format_for(output_file),
        progress=cli_ctx.output.shows_progress and _stderr_is_tty(),
        label=f"scan {name}",
        decoded=not raw_values,
    )
    cli_ctx.output.scan_exported(name, report, started=started)


def _print_cells(
    cli_ctx: CliContext, handle: Table, scan: Scan, *, started: float, raw_values: bool
) -> None:
    """Print a scan's cells as the HBase shell does; warn of requested columns not seen."""
    from cellstore.cli.output import CellDecoder

    decoder = None if raw_values else CellDecoder.for_table(handle.metadata)
    seen = _ColumnsSeen(scan.options)
    name = str(handle.name)
    cli_ctx.output.scan_cells(name, seen.watch(scan.to_batches()), started=started, decoder=decoder)
    seen.warn(handle)


# ----------------------------------------------------------------------------------- get
@click.command("get")
@click.argument("table")
@click.argument("row", type=PRINTABLE_KEY, required=False)
@scan_flags(*GET_FLAGS)
@_GET_KEY
@RAW_VALUES
@pass_cli_context
def get_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    row: bytes | None,
    scan: ScanFlags,
    key_fields: tuple[str, ...],
    raw_values: bool,
) -> None:
    """Get the cells of ROW (printable form) in TABLE, as the HBase shell's get.

    \b
    Examples:
      cellstore get example:webtable com.cnn.www --column contents:html --versions 3
      cellstore get ns:sensors --key sensor_id=sensor-00001 --key ts=1700000000000

    Values and composite row keys print decoded with the codecs the table's
    mapping-based loads recorded (--raw-values: as stored).
    """  # noqa: D301 (click's \b marker)
    if (row is None) == (not key_fields):
        raise click.UsageError("give ROW or --key FIELD=VALUE options (not both)")
    warehouse = cli_ctx.warehouse()
    started = time.perf_counter()  # like the shell's "Took": the read, not the imports
    handle = warehouse.table(table)
    if row is None:
        row = _row_of_key(handle, key_texts(key_fields))
    options = scan.options(handle)
    cells = handle.get(row, options)
    from cellstore.cli.output import CellDecoder

    decoder = None if raw_values else CellDecoder.for_table(handle.metadata)
    seen = _ColumnsSeen(options)
    seen.note(cells)
    cli_ctx.output.get_cells(str(handle.name), row, cells, started=started, decoder=decoder)
    if cells.num_rows == 0 and not key_fields:
        _hint_key(handle)
    seen.warn(handle)


def _hint_key(handle: Table) -> None:
    """On stderr: how to give a row by its key fields, when the table's keys are encoded."""
    key = recorded_key(handle)
    if key is not None and getattr(key, "codec", None) not in ("string", "bytes"):
        fields = " ".join(f"--key {n}=..." for n in key_names(key))
        click.echo(
            f"hint: ROW is the raw row key, and table {handle.name}: {key_help(key)}\n"
            f"  try: cellstore get {shlex.quote(str(handle.name))} {fields}",
            err=True,
        )


# --------------------------------------------------------------------------------- count
@click.command("count")
@click.argument("table")
@scan_flags(*COUNT_FLAGS)
@pass_cli_context
def count_cmd(cli_ctx: CliContext, *, table: str, scan: ScanFlags) -> None:
    """Count TABLE's rows that have at least one visible cell (HBase's count, RowCounter).

    \b
    Example:
      cellstore count example:webtable --prefix org.
    """  # noqa: D301 (click's \b marker)
    warehouse = cli_ctx.warehouse()
    started = time.perf_counter()  # like the shell's "Took": the read, not the imports
    handle = warehouse.table(table)
    rows = handle.scan(scan.options(handle)).count_rows()
    cli_ctx.output.row_count(str(handle.name), rows, started=started)


# ---------------------------------------------------------------------------- quickstart
def _example_families() -> list[Family]:
    return [Family(name="contents", max_versions=3), Family(name="anchor"), Family(name="people")]


#: Split keys of the example table: three regions, ``com.a..``, ``com.m..``, ``org..``.
_EXAMPLE_SPLITS: Final = (b"com.m", b"org")


def _next_commands(root: str, table: str) -> tuple[str, ...]:
    cmd = "cellstore" if root == DEFAULT_ROOT else f"cellstore --root {shlex.quote(root)}"
    t = shlex.quote(table)
    return (
        f"{cmd} scan {t} --prefix com.cnn",
        f"{cmd} get {t} com.cnn.www --versions 3",
        f"{cmd} describe {t}",
    )


@click.command("quickstart")
@click.option(
    "--table",
    default=QUICKSTART_TABLE,
    show_default=True,
    help="Name of the example table.",
)
@pass_cli_context
def quickstart_cmd(cli_ctx: CliContext, *, table: str) -> None:
    """Create and load the bundled example web table, then scan and count it.

    The table gets the families contents (VERSIONS=3), anchor and people, and split keys
    com.m and org. The cells are loaded with a fixed load id, so running quickstart again
    changes nothing. Uses --root (default ./cellstore-data, created when missing).
    """
    from importlib.resources import as_file, files

    from cellstore.errors import TableExistsError

    warehouse = cli_ctx.warehouse(missing_ok=True)
    created = False
    if warehouse.exists(table):
        handle = warehouse.table(table)
    else:
        try:
            handle = warehouse.create_table(
                table, families=_example_families(), splits=list(_EXAMPLE_SPLITS)
            )
            created = True
        except TableExistsError:  # a concurrent quickstart created it first
            handle = warehouse.table(table)
    with as_file(files("cellstore") / "examples" / "webtable.csv") as path:
        cells = read_cells_file(str(path), fmt="csv")
    load = handle.load_cells(cells, load_id=QUICKSTART_LOAD_ID)
    name = str(handle.name)
    report = QuickstartReport(
        table=name,
        root=cli_ctx.root,
        created=created,
        description=handle.describe(),
        load=load,
        rows=handle.scan().count_rows(),
        scan_limit=QUICKSTART_SCAN_LIMIT,
        sample=handle.scan(limit=QUICKSTART_SCAN_LIMIT).to_arrow(),
        next_commands=_next_commands(cli_ctx.root, name),
    )
    cli_ctx.output.quickstart(report)


#: The commands this module adds to the root group.
COMMANDS: tuple[click.Command, ...] = (scan_cmd, get_cmd, count_cmd, quickstart_cmd)

r"""The scan options of the read commands as flags, defined once, and their one builder.

Every :class:`~cellstore.reader.ScanOptions` field the CLI offers has one click option in
:data:`FLAGS`, keyed by the field's name (fields without a flag are in :data:`NO_FLAG`,
with the reason). A command takes the flags it offers with :func:`scan_flags`, which adds
the options and hands the command one :class:`ScanFlags`; :meth:`ScanFlags.options` builds
the command's :class:`~cellstore.reader.ScanOptions` from them. ``scan``, ``get``,
``count``, ``export`` and ``hbase scan``/``count`` all go through it.

A new scan option's flag: an entry in :data:`FLAGS` (and its conversion in
:meth:`ScanFlags.options` if the flag's value is not the option's), and its name in the
command lists below.

Row keys and qualifiers are typed in HBase's printable form (``\x00`` escapes), or, with
``--key FIELD=VALUE``, as the fields of the table's row-key spec.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from cellstore.cli.params import FAMILY_TIME_RANGE, PRINTABLE_KEY, parse_column_types

if TYPE_CHECKING:
    from cellstore.core.rowkey import RowKeySpec
    from cellstore.loader.mapping import KeyColumn
    from cellstore.reader import ReadableTable, ScanOptions

__all__ = [
    "COUNT_FLAGS",
    "EXPORT_FLAGS",
    "FLAGS",
    "GET_FLAGS",
    "HBASE_COUNT_FLAGS",
    "HBASE_SCAN_FLAGS",
    "NO_FLAG",
    "RAW_VALUES",
    "SCAN_FLAGS",
    "ScanFlags",
    "key_help",
    "key_names",
    "key_texts",
    "recorded_key",
    "scan_flags",
    "with_recorded_codecs",
]

F = TypeVar("F", bound=Callable[..., Any])

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _row(flag: str, dest: str, text: str) -> Decorator:
    """A row-key flag, typed in printable form."""
    return click.option(flag, dest, type=PRINTABLE_KEY, default=None, metavar="ROW", help=text)


def _number(
    flag: str, dest: str, text: str, *, low: int = 0, metavar: str = "N", default: int | None = None
) -> Decorator:
    """An integer flag of at least ``low``; absent, the option's default."""
    return click.option(
        flag, dest, type=click.IntRange(min=low), default=default, metavar=metavar, help=text
    )


def _repeated(flag: str, dest: str, metavar: str, text: str, kind: Any = None) -> Decorator:
    """A repeatable flag: a tuple of its values."""
    return click.option(flag, dest, type=kind, multiple=True, metavar=metavar, help=text)


#: Each scan option's flag, by :class:`~cellstore.reader.ScanOptions` field name.
FLAGS: Final[Mapping[str, Decorator]] = {
    "start_row": _row(
        "--start-row",
        "start_row",
        "First row, inclusive, in printable form (e.g. 'com.cnn' or '\\x00\\x01').",
    ),
    "stop_row": _row("--stop-row", "stop_row", "Row after the last, exclusive, in printable form."),
    "row_prefix": click.option(
        "--prefix",
        "row_prefix",
        type=PRINTABLE_KEY,
        default=None,
        metavar="PREFIX",
        help="Only rows starting with PREFIX, in printable form (not with --start-row/--stop-row).",
    ),
    "key": _repeated(
        "--key",
        "key",
        "FIELD=VALUE",
        "Only rows whose leading row-key fields have these values (repeatable, in key "
        "order; built with the table's row-key spec, not with --start-row/--stop-row/"
        "--prefix).",
    ),
    "columns": _repeated(
        "--column",
        "columns",
        "FAMILY[:QUALIFIER]",
        "Only this column, or the whole family without ':QUALIFIER' (repeatable; the "
        "qualifier in printable form).",
        PRINTABLE_KEY,
    ),
    "families": _repeated(
        "--family",
        "families",
        "FAMILY",
        "Only this column family (repeatable). Default: every family.",
    ),
    "time_range": click.option(
        "--time-range",
        type=(int, int),
        default=None,
        metavar="MIN MAX",
        help="Only cells with MIN <= timestamp < MAX (ms since the epoch).",
    ),
    "family_time_ranges": _repeated(
        "--family-time-range",
        "family_time_ranges",
        "FAMILY:MIN:MAX",
        "FAMILY's own time range, MIN <= timestamp < MAX, replacing --time-range/"
        "--timestamp for that family (HBase's setColumnFamilyTimeRange). Repeatable.",
        FAMILY_TIME_RANGE,
    ),
    "timestamp": _number(
        "--timestamp",
        "timestamp",
        "Only cells with exactly this timestamp (ms; not with --time-range).",
        metavar="TS",
    ),
    "max_versions": _number(
        "--versions",
        "max_versions",
        "Versions per column, newest first (default 1; at most the family's VERSIONS "
        "unless --raw).",
        low=1,
    ),
    "raw": click.option(
        "--raw",
        is_flag=True,
        help="Return delete markers and deleted cells as stored (not with --column QUALIFIERs).",
    ),
    "reversed": click.option(
        "--reversed", "reversed", is_flag=True, help="Rows in descending order."
    ),
    "limit": _number("--limit", "limit", "At most N rows.", low=1),
    "filter": click.option(
        "--filter",
        "filter",
        default=None,
        metavar="TEXT",
        help="HBase filter language, e.g. \"SingleColumnValueFilter('cf','q',>=,'binary:5',"
        'true,true) AND KeyOnlyFilter()" (also ValueFilter, ColumnPrefixFilter, '
        "TimestampsFilter). Comparators 'double:120.0', 'long:5', 'int:', 'short:', "
        "'float:', 'boolean:' compare numbers, decoded with the table's codecs "
        "(cellstore's extension; 'binary:' compares bytes, as in HBase).",
    ),
    "max_results_per_family": _number(
        "--max-results-per-family",
        "max_results_per_family",
        "At most N cells per row and family (HBase's setMaxResultsPerColumnFamily).",
    ),
    "row_offset_per_family": _number(
        "--row-offset-per-family",
        "row_offset_per_family",
        "Skip the first N cells of each row and family (setRowOffsetPerColumnFamily).",
        default=0,
    ),
    "shape": click.option(
        "--shape",
        type=click.Choice(["cells", "wide"]),
        default="cells",
        help="wide: one row per row key, a family:qualifier column each with its newest value "
        "(a table on the terminal, JSON lines with --output json, or --output-file).",
    ),
    "column_types": _repeated(
        "--column-type",
        "column_types",
        "FAMILY:QUALIFIER=CODEC|table",
        "With --shape wide, decode a column (long, int, short, double, float, boolean, "
        "string, bytes), or 'table': the columns the table's mapping-based loads recorded "
        "(only those, unless --column/--family select). Repeatable.",
    ),
    "decode_errors": click.option(
        "--decode-errors",
        type=click.Choice(["raise", "null"]),
        default="raise",
        help="With --column-type: fail on a value that does not decode (raise), or give null.",
    ),
    "memory_budget": _number(
        "--memory-budget",
        "memory_budget",
        "Most bytes of decoded cells one scan task reads (default 256 MiB); larger "
        "regions are read in row-aligned pieces.",
        low=1,
        metavar="BYTES",
    ),
    "now_ms": _number(
        "--now-ms",
        "now_ms",
        "'Now' for TTL expiry, in ms since the epoch (default: the clock), so reads of "
        "families with a TTL are reproducible.",
        metavar="MS",
    ),
    "version": _number(
        "--version",
        "version",
        "Read this table version (an as-of read; default: the latest).",
        low=1,
    ),
}

#: ``--raw-values``: the stored bytes instead of values decoded with the recorded codecs.
RAW_VALUES: Final = click.option(
    "--raw-values",
    is_flag=True,
    help="Values and row keys as stored (printable bytes; binary in Parquet) instead of "
    "decoded with the codecs and row key the table's mapping-based loads recorded (--shape "
    "wide, to the terminal or a file: typed columns). --column-type still decodes.",
)

#: Scan options without a flag, and why.
NO_FLAG: Final[Mapping[str, str]] = {
    "key_columns": "the terminal output decodes keys itself (--raw-values); files get them "
    "with --shape wide",
}

#: The flags of each command, in :data:`FLAGS`' order (``--help`` lists them so).
SCAN_FLAGS: Final = tuple(FLAGS)


def _without(*names: str, of: tuple[str, ...] = SCAN_FLAGS) -> tuple[str, ...]:
    return tuple(n for n in of if n not in names)


_ROW_RANGE: Final = ("start_row", "stop_row", "row_prefix", "key")
_NOT_FOR_COUNT: Final = ("timestamp", "max_versions", "raw", "reversed", "limit")
_NOT_FOR_FILES: Final = ("shape", "column_types", "decode_errors", "memory_budget")
GET_FLAGS: Final = _without(*_ROW_RANGE, "raw", "reversed", "limit", *_NOT_FOR_FILES)
COUNT_FLAGS: Final = _without(
    *_NOT_FOR_COUNT, "max_results_per_family", "row_offset_per_family", *_NOT_FOR_FILES
)
#: ``export`` has its own ``--shape`` and memory budget, and writes every row in key order.
EXPORT_FLAGS: Final = _without("reversed", "limit", "shape", "memory_budget")
#: HBase tables have no versions, row-key spec or recorded codecs.
HBASE_SCAN_FLAGS: Final = _without("key", "version", "shape", "column_types", "decode_errors")
HBASE_COUNT_FLAGS: Final = _without("key", "version", of=COUNT_FLAGS)


@dataclass(frozen=True)
class ScanFlags:
    """The scan option flags a command was given, as click parsed them.

    Attributes:
        values: Flag values by :class:`~cellstore.reader.ScanOptions` field name.
    """

    values: Mapping[str, Any]

    def options(
        self,
        table: ReadableTable | None = None,
        *,
        shape: str | None = None,
        decode: bool = False,
    ) -> ScanOptions:
        """The :class:`~cellstore.reader.ScanOptions` of these flags.

        Args:
            table: The table read (``--key`` is built with its row-key spec,
                ``--column-type table`` with its recorded codecs).
            shape: The shape when the command takes it apart from the scan flags
                (``export --shape``), for ``--column-type``'s check.
            decode: Decode a wide read's columns with the codecs the table's loads
                recorded (:func:`with_recorded_codecs`; ``--raw-values`` turns it off).

        Raises:
            click.BadParameter: a flag that does not parse, or a flag combination the
                command line refuses (``--key`` with a row range, ``--column-type``
                without ``--shape wide``, ``--column-type table`` on a table with no
                recorded codecs).
        """
        from cellstore.reader import ScanOptions

        given = dict(self.values)
        for name, value in list(given.items()):
            if isinstance(value, tuple) and name != "time_range":
                given[name] = value or None  # an unused repeatable flag
        if given.get("filter") is not None:
            from cellstore.core.filterparse import parse_filter

            given["filter"] = parse_filter(given["filter"])
        kind = shape if shape is not None else given.get("shape", "cells")
        if "column_types" in given:
            types = parse_column_types(given["column_types"] or (), shape=kind)
            if types.pop("table", None) is not None:
                types = {**_recorded_types(table), **types}
            given["column_types"] = types or None
        if given.get("key") is not None:
            given.update(_scan_key(table, given))
        options = ScanOptions(**given)
        if decode and table is not None and kind == "wide":
            return with_recorded_codecs(options, table)
        return options


def _recorded_types(table: ReadableTable | None) -> dict[str, str]:
    """``--column-type table``: the codecs the table's mapping-based loads recorded."""
    from cellstore.loader.mapping import recorded_column_types

    types = dict(recorded_column_types(table.metadata)) if table is not None else {}
    if not types:
        name = table.name if table is not None else "the table"
        raise click.BadParameter(
            f"table {name} has no recorded column codecs (no mapping-based load recorded "
            "any); give FAMILY:QUALIFIER=CODEC",
            param_hint="'--column-type table'",
        )
    return types


def with_recorded_codecs(options: ScanOptions, table: ReadableTable) -> ScanOptions:
    """A wide read's ``options`` with each column a mapping-based load recorded decoded.

    What the read commands do unless ``--raw-values``: every recorded
    ``family:qualifier`` codec the read selects joins ``column_types`` (a codec given with
    ``--column-type`` wins), and the read's columns stay what they were: a read naming no
    columns or families gets the table's visible families named, so that decoding does
    not turn into "only the typed columns" (the meaning of ``column_types`` alone). A read
    with ``--column-type`` but no columns or families (only those typed columns) is left
    as it is. Qualifiers that a mapping takes from an input column (a family codec) have
    no column name known up front: the outputs decode them after the read
    (:func:`~cellstore.loader.mapping.decoding.decode_family_columns`).

    Args:
        options: The read's options (wide shape).
        table: The table read.

    Returns:
        The options, decoding the recorded columns.
    """
    from dataclasses import replace

    from cellstore.core.keys import to_string_binary
    from cellstore.loader.mapping import recorded_column_types
    from cellstore.reader.options import as_names
    from cellstore.reader.readable import hidden_families

    if isinstance(options.column_types, str):  # "table": decodes the recorded ones already
        return options
    explicit = dict(options.column_types or {})
    recorded = recorded_column_types(table.metadata)
    no_selection = options.columns is None and options.families is None
    if not recorded or (explicit and no_selection):
        return options
    named = [
        c if isinstance(c, str) else to_string_binary(bytes(c))
        for c in as_names(options.columns) or ()
    ]
    families = set(as_names(options.families) or ())

    def selected(column: str) -> bool:
        family = column.partition(":")[0]
        if options.columns is not None:
            return column in named or family in named or family in families
        return no_selection or family in families

    types = {c: codec for c, codec in recorded.items() if selected(c)}
    if not types:
        return options
    changes: dict[str, Any] = {"column_types": {**types, **explicit}}
    if no_selection:
        meta = table.metadata
        changes["families"] = hidden_families(meta) or list(meta.family_names)
    return replace(options, **changes)


def scan_flags(*names: str) -> Callable[[F], F]:
    """Decorator: add the flags of scan options ``names`` to a click command.

    The command is called with one ``scan`` keyword, a :class:`ScanFlags`, instead of a
    keyword per flag.
    """

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in names}
            return command(*args, scan=ScanFlags(given), **kwargs)

        out: Callable[..., Any] = wrapper
        for name in reversed(names):
            out = FLAGS[name](out)
        return out  # type: ignore[return-value]

    return decorate


# ------------------------------------------------------------------------ row-key fields
def key_texts(items: tuple[str, ...]) -> dict[str, str]:
    """``("f=v", ...)`` as ``{"f": "v"}``; a missing ``=`` or a repeated field is an error."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(
                f"{item!r} is not FIELD=VALUE (e.g. --key sensor_id=sensor-00001)",
                param_hint="'--key'",
            )
        if name in out:
            raise click.BadParameter(f"field {name!r} given twice", param_hint="'--key'")
        out[name] = value
    return out


def recorded_key(handle: ReadableTable) -> RowKeySpec | KeyColumn | None:
    """The table's row-key spec, else the key its latest mapping-based load recorded."""
    from cellstore.loader.mapping import TableCodecs

    meta = handle.metadata
    if meta.row_key is not None:
        return meta.row_key
    try:
        return TableCodecs.from_properties(meta.properties).row_key
    except ValueError:
        return None


def key_names(key: RowKeySpec | KeyColumn) -> tuple[str, ...]:
    """The fields ``--key`` takes for ``key``."""
    from cellstore.loader.mapping import KeyColumn

    return (key.column,) if isinstance(key, KeyColumn) else key.columns


def key_help(key: RowKeySpec | KeyColumn) -> str:
    """How to give ``key``'s fields on the command line, for hints and errors."""
    from cellstore.loader.mapping import KeyColumn

    if isinstance(key, KeyColumn):
        return f"its row keys are the {key.codec.value} column {key.column}"
    return f"its row keys are built from {key}"


def _scan_key(handle: ReadableTable | None, given: Mapping[str, Any]) -> dict[str, Any]:
    """Scan options for leading ``--key`` fields (equalities: a key prefix)."""
    from dataclasses import replace

    from cellstore.core.rowkey import RowKeySpec
    from cellstore.errors import InvalidArgumentError

    if any(given.get(n) is not None for n in ("start_row", "stop_row", "row_prefix")):
        raise click.BadParameter("not with --start-row/--stop-row/--prefix", param_hint="'--key'")
    assert handle is not None, "--key needs the table"
    texts = key_texts(given["key"])
    key = recorded_key(handle)
    if not isinstance(key, RowKeySpec):
        raise click.BadParameter(
            f"table {handle.name} has no composite row key; use --prefix or --start-row",
            param_hint="'--key'",
        )
    try:
        values = key.parse_values(texts, partial=True)
        if handle.metadata.row_key is not None:
            return {"key": values}
        (span,) = replace(key, salt_buckets=None).key_ranges(equals=values)
    except InvalidArgumentError as e:
        raise click.BadParameter(f"table {handle.name}: {e}", param_hint="'--key'") from None
    return {"key": None, "start_row": span.start, "stop_row": span.stop}

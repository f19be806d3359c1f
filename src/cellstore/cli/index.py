r"""Secondary index commands: ``cellstore index create | build | verify | lookup | list | drop``.

Each command makes one library call (:mod:`cellstore.jobs.index`) and prints its report:
a few HBase-shell-like lines, or the report's ``to_dict()`` with ``--output json``.
``index verify`` exits with 9 when it finds problems. Values typed on the command line are
converted per index part: numbers for numeric parts, ``true``/``false`` for booleans,
printable form (``\x00`` escapes) for bytes.

The library (and with it pyarrow) is imported inside command bodies only, so
``cellstore --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.output import CellDecoder, JsonOutput, grid, printable
from cellstore.cli.scanflags import RAW_VALUES
from cellstore.core.keys import from_string_binary
from cellstore.errors import VerifyError

if TYPE_CHECKING:
    from cellstore.jobs.index import (
        Index,
        IndexBuildReport,
        IndexDefinition,
        IndexType,
        IndexVerifyReport,
    )

__all__ = [
    "COMMANDS",
    "build_cmd",
    "create_cmd",
    "drop_cmd",
    "index_group",
    "list_cmd",
    "lookup_cmd",
    "parse_inputs",
    "parse_value",
    "verify_cmd",
]


@click.group("index")
def index_group() -> None:
    """Global secondary indexes: define, build, verify and read through them.

    \b
    Example:
      cellstore index build demo:users by_email --column info:email --codec string
      cellstore index lookup demo:users by_email alice@example.com
      cellstore index build demo:users by_email --incremental
      cellstore index verify demo:users by_email
    """  # noqa: D301 (click's \b marker)


_DEFINE_OPTIONS = [
    click.option(
        "--column",
        default=None,
        metavar="FAMILY:QUALIFIER",
        help="The indexed column (with --codec).",
    ),
    click.option(
        "--codec",
        default=None,
        help="How the column's values decode: bytes (default), string, long, int, short, "
        "double, float, boolean.",
    ),
    click.option(
        "--part",
        "parts",
        multiple=True,
        metavar="EXPR",
        help="Instead of --column, one part of a composite value (repeatable, in order): "
        "key(FIELD) for a row-key field, CODEC(family:qualifier) or family:qualifier.",
    ),
    click.option(
        "--covered",
        multiple=True,
        metavar="FAMILY:QUALIFIER",
        help="A column copied into the index rows (repeatable).",
    ),
    click.option(
        "--index-table",
        default=None,
        help="The index table (default NAMESPACE:TABLE_idx_NAME).",
    ),
    click.option(
        "--maintain/--no-maintain",
        default=True,
        show_default=True,
        help="Keep the index current on every load into the table (else only builds do).",
    ),
    click.option(
        "--local",
        is_flag=True,
        help="A local index: rows in the table's own regions (hidden family _idx), split "
        "and merged with the data; lookups fan out per region.",
    ),
]


F = TypeVar("F", bound=Callable[..., Any])

_DEFINE_NAMES = ("column", "codec", "parts", "covered", "index_table", "maintain", "local")


def _define_options(command: F) -> F:
    """Decorator: add the index definition options (``--column`` ... ``--local``).

    The command is called with one ``definition`` keyword, the keywords of
    :func:`~cellstore.jobs.index.create_index` and ``build_index`` that define the index,
    instead of a keyword per option.

    Raises:
        click.UsageError: both ``--column`` and ``--part``.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in _DEFINE_NAMES}
        return command(*args, definition=_definition_args(**given), **kwargs)

    out: Callable[..., Any] = wrapper
    for option in reversed(_DEFINE_OPTIONS):
        out = option(out)
    return out  # type: ignore[return-value]


def _definition_args(
    column: str | None,
    codec: str | None,
    parts: Sequence[str],
    covered: Sequence[str],
    index_table: str | None,
    maintain: bool = True,
    local: bool = False,
) -> dict[str, Any]:
    if column is not None and parts:
        raise click.UsageError("give --column or --part, not both")
    return {
        "column": column,
        "codec": codec,
        "expression": list(parts) or None,
        "covered": list(covered),
        "index_table": index_table,
        "maintain": maintain,
        "local": local,
    }


def _emit(cli_ctx: CliContext, doc: dict[str, Any], lines: Sequence[str]) -> None:
    """Print ``doc`` as JSON (``--output json``) or ``lines`` as text."""
    if isinstance(cli_ctx.output, JsonOutput):
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo("\n".join(lines))


def _definition_lines(d: IndexDefinition) -> list[str]:
    lines = [
        f"Index {d.name} on {d.table}: {' + '.join(str(p) for p in d.parts)}",
        f"  index table {d.index_table}, family {d.family}",
    ]
    if d.covered:
        lines.append(f"  covers {', '.join(d.covered)}")
    lines.append("  kept current by every load" if d.maintain else "  updated by builds only")
    if d.local:
        lines.append("  local: rows in the table's regions (hidden family _idx)")
    return lines


# ------------------------------------------------------------------------------ create
@click.command("create")
@click.argument("table")
@click.argument("name")
@_define_options
@pass_cli_context
def create_cmd(cli_ctx: CliContext, *, table: str, name: str, definition: dict[str, Any]) -> None:
    """Define index NAME on TABLE and create its empty index table (no build)."""
    from cellstore.jobs.index import create_index

    if definition["column"] is None and definition["expression"] is None:
        raise click.UsageError("give --column or --part")
    created = create_index(cli_ctx.warehouse().table(table), name=name, **definition)
    _emit(cli_ctx, created.to_dict(), _definition_lines(created))


# ------------------------------------------------------------------------------- build
def _build_lines(r: IndexBuildReport) -> list[str]:
    head = f"Built index {r.index} of {r.table} ({r.mode}) into {r.index_table}"
    if r.index_version is None:
        head = f"Index {r.index} of {r.table} is up to date ({r.mode}); nothing committed"
    lines = [
        head,
        *grid(
            ["ROWS READ", "INDEX ROWS", "DELETED", "MISSING", "UNINDEXABLE", "CELLS", "FILES"],
            [
                [
                    r.rows_read,
                    r.index_rows,
                    r.deleted_rows,
                    r.missing,
                    r.unindexable,
                    r.cells,
                    r.files,
                ]
            ],
        ),
        f"data version {r.data_version}, index version {r.index_version}, job {r.job_id}",
        f"Took {r.seconds:.4f} seconds",
    ]
    return lines


@click.command("build")
@click.argument("table")
@click.argument("name")
@_define_options
@click.option(
    "--incremental",
    is_flag=True,
    help="Re-index only the rows changed since the previous build (or in --since/--until).",
)
@click.option(
    "--since",
    type=click.IntRange(min=0),
    default=None,
    metavar="TS",
    help="With --incremental: rows with a cell (or delete marker) at TS or later (ms).",
)
@click.option(
    "--until",
    type=click.IntRange(min=1),
    default=None,
    metavar="TS",
    help="With --since: and before TS (ms; default: no end).",
)
@pass_cli_context
def build_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    name: str,
    definition: dict[str, Any],
    incremental: bool,
    since: int | None,
    until: int | None,
) -> None:
    """Build index NAME of TABLE: define it (with --column or --part) and (re)build it.

    A full build replaces the index table's contents in one commit; --incremental
    re-indexes the rows changed since the previous build.
    """
    from cellstore.core.cells import LATEST_TIMESTAMP
    from cellstore.jobs.index import build_index

    args = definition
    if (since is not None or until is not None) and not incremental:
        raise click.UsageError("--since and --until go with --incremental")
    if until is not None and since is None:
        raise click.UsageError("--until goes with --since")
    time_range = None
    if since is not None:
        time_range = (since, until if until is not None else LATEST_TIMESTAMP)
    if args["column"] is None and args["expression"] is None:
        args = {}
        if definition["covered"] or definition["codec"] or definition["index_table"]:
            raise click.UsageError("--codec, --covered and --index-table need --column or --part")
    report = build_index(
        cli_ctx.warehouse().table(table),
        name=name,
        mode="incremental" if incremental else "full",
        time_range=time_range,
        **args,
    )
    _emit(cli_ctx, report.to_dict(), _build_lines(report))


# ------------------------------------------------------------------------------ verify
def _verify_lines(r: IndexVerifyReport) -> list[str]:
    status = "OK" if r.ok else f"{r.problems} problem(s)"
    lines = [
        f"Index {r.index} of {r.table} ({r.index_table}): {status}",
        *grid(
            ["DATA ROWS", "EXPECTED", "INDEX ROWS", "MISSING", "STALE", "COVERED", "UNPARSABLE"],
            [
                [
                    r.data_rows,
                    r.expected_rows,
                    r.index_rows,
                    r.missing,
                    r.stale,
                    r.covered,
                    r.unparsable,
                ]
            ],
        ),
    ]
    if r.samples:
        lines.append("SAMPLES")
        rows = []
        for s in r.samples:
            d = s.to_dict()
            rows.append([s.kind, d["row"], ", ".join(map(str, d["value"])), d["key"]])
        lines += grid(["KIND", "ROW", "VALUE", "INDEX KEY"], rows)
    lines.append(f"data version {r.data_version}, index version {r.index_version}")
    return lines


@click.command("verify")
@click.argument("table")
@click.argument("name", required=False)
@click.option(
    "--samples",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Examples shown per kind of problem.",
)
@pass_cli_context
def verify_cmd(cli_ctx: CliContext, *, table: str, name: str | None, samples: int) -> None:
    """Compare index NAME (default: every index) with TABLE's data; exit 9 on problems.

    Problems are index rows missing, stale, with other covered values, or unparsable.
    """
    from cellstore.jobs.index import list_indexes, verify_index

    data = cli_ctx.warehouse().table(table)
    if name is not None:
        report = verify_index(data, name=name, samples=samples)
        _emit(cli_ctx, report.to_dict(), _verify_lines(report))
        ok = report.ok
    else:
        reports = [verify_index(data, name=d.name, samples=samples) for d in list_indexes(data)]
        ok = all(r.ok for r in reports)
        lines = [line for r in reports for line in _verify_lines(r)]
        _emit(
            cli_ctx,
            {"table": str(data.name), "ok": ok, "indexes": [r.to_dict() for r in reports]},
            lines or [f"Table {data.name} has no indexes"],
        )
    if not ok:
        click.get_current_context().exit(VerifyError.exit_code)


# ------------------------------------------------------------------------------ lookup
def parse_value(index: Index, texts: Sequence[str]) -> tuple[Any, ...]:
    r"""Command-line values as the index's leading parts' types.

    Numbers parse as int or float, booleans from ``true``/``false``/``1``/``0``, bytes from
    the printable form (``\x00``); strings are taken as they are.

    Raises:
        click.BadParameter: a value that does not parse for its part.
    """
    out: list[Any] = []
    for typ, name, text in zip(index.types, index.definition.part_names, texts, strict=False):
        out.append(_convert(typ, text, f"part {name}"))
    if len(texts) > len(index.types):
        raise click.BadParameter(f"index {index.definition.name} has {len(index.types)} part(s)")
    return tuple(out)


def _convert(typ: IndexType, text: str, what: str) -> Any:
    from cellstore.jobs.index import IndexType

    try:
        if typ is IndexType.STRING:
            return text
        if typ is IndexType.BYTES:
            return from_string_binary(text)
        if typ is IndexType.BOOLEAN:
            lowered = text.strip().lower()
            if lowered not in ("true", "false", "1", "0"):
                raise ValueError("expected true or false")
            return lowered in ("true", "1")
        if typ in (IndexType.FLOAT32, IndexType.FLOAT64):
            return float(text)
        return int(text)
    except ValueError as e:
        raise click.BadParameter(f"{text!r} for {what} ({typ.value}): {e}") from None


def parse_inputs(index: Index, texts: Sequence[str]) -> dict[str, Any]:
    r"""``NAME=VALUE`` command-line inputs, typed by the column's codec or key field's type.

    Raises:
        click.BadParameter: a malformed input, an unknown name, or a value that does not
            parse for its type.
    """
    from cellstore.jobs.index import IndexType

    types = index.definition.key_types(index.table.metadata.row_key)
    for part in index.definition.parts:
        types |= {c.column: IndexType.of_codec(c.codec) for c in part.columns}
    out: dict[str, Any] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or name not in types:
            raise click.BadParameter(
                f"{text!r}: expected NAME=VALUE, NAME one of {', '.join(sorted(types))}"
            )
        out[name] = _convert(types[name], value, name)
    return out


@click.command("lookup")
@click.argument("table")
@click.argument("name")
@click.argument("values", nargs=-1, required=False)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=VALUE",
    help="Instead of VALUES: a column (family:qualifier) or key field value; the index's "
    "expressions are applied to them, e.g. --input info:name=ann for UPPER(string(info:name)) "
    "(repeatable).",
)
@click.option(
    "--column",
    "columns",
    multiple=True,
    metavar="FAMILY[:QUALIFIER]",
    help="Return only this column, or family (repeatable).",
)
@click.option(
    "--covered-only",
    is_flag=True,
    help="Print the index rows (value, row, covered columns) without reading TABLE.",
)
@RAW_VALUES
@click.option(
    "--limit", type=click.IntRange(min=0), default=None, help="Read at most N index rows."
)
@pass_cli_context
def lookup_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    name: str,
    values: tuple[str, ...],
    inputs: tuple[str, ...],
    columns: tuple[str, ...],
    covered_only: bool,
    raw_values: bool,
    limit: int | None,
) -> None:
    """Print TABLE's rows whose index NAME value is VALUES (one per leading part).

    The rows' values and keys print decoded as ``scan`` prints them (--raw-values: as
    stored); --covered-only prints the index rows as stored.

    \b
    Example:
      cellstore index lookup demo:users by_email alice@example.com --column info
    """  # noqa: D301 (click's \b marker)
    from cellstore.jobs.index import open_index

    started = time.perf_counter()
    data = cli_ctx.warehouse().table(table)
    index = open_index(data, name)
    if bool(values) == bool(inputs):
        raise click.UsageError("give VALUES or --input, not both (and not neither)")
    value = parse_value(index, values) if values else index.evaluate(parse_inputs(index, inputs))
    if covered_only:
        entries = index.scan(value, limit=limit)
        shown = [
            {
                k: printable(v) if isinstance(v, bytes) else v
                for k, v in zip(entries.column_names, row, strict=True)
            }
            for row in zip(
                *(entries.column(c).to_pylist() for c in entries.column_names), strict=True
            )
        ]
        cells = [["" if r[c] is None else r[c] for c in entries.column_names] for r in shown]
        lines = [
            *grid(entries.column_names, cells),
            f"{len(shown)} row(s)",
        ]
        _emit(cli_ctx, {"table": str(data.name), "index": name, "rows": shown}, lines)
        return
    cells = index.lookup(value, columns=list(columns) or None, limit=limit)
    decoder = None if raw_values else CellDecoder.for_table(data.metadata)
    cli_ctx.output.scan_cells(str(data.name), [cells], started=started, decoder=decoder)


# -------------------------------------------------------------------------- list, drop
@click.command("list")
@click.argument("table")
@pass_cli_context
def list_cmd(cli_ctx: CliContext, *, table: str) -> None:
    """List the indexes defined on TABLE."""
    from cellstore.jobs.index import list_indexes

    found = list_indexes(cli_ctx.warehouse().table(table))
    lines = [line for d in found for line in _definition_lines(d)]
    _emit(
        cli_ctx,
        {"table": table, "indexes": [d.to_dict() for d in found]},
        [*lines, f"{len(found)} index(es)"],
    )


@click.command("drop")
@click.argument("table")
@click.argument("name")
@click.option("--purge", is_flag=True, help="Delete the index table's files now.")
@pass_cli_context
def drop_cmd(cli_ctx: CliContext, *, table: str, name: str, purge: bool) -> None:
    """Drop index NAME of TABLE: its definition and its index table."""
    from cellstore.jobs.index import drop_index

    dropped = drop_index(cli_ctx.warehouse().table(table), name=name, purge=purge)
    _emit(
        cli_ctx,
        {"dropped": dropped.name, "table": dropped.table, "index-table": dropped.index_table},
        [f"Dropped index {dropped.name} of {dropped.table} and table {dropped.index_table}"],
    )


for _command in (create_cmd, build_cmd, verify_cmd, lookup_cmd, list_cmd, drop_cmd):
    index_group.add_command(_command)

#: Registered on the root group by :mod:`cellstore.cli.console`.
COMMANDS: tuple[click.Command, ...] = (index_group,)

r"""The ``load`` command: the bulk loader (HBase's ImportTsv + completebulkload in one).

``cellstore load TABLE INPUT... --mapping FILE`` (or inline ``--row-key`` / ``--column``
options) makes one library call, :meth:`~cellstore.warehouse.Table.load`, after creating
the table when ``--create`` asks for it (families, ``--regions N`` pre-split at sampled key
quantiles, or ``--salt-buckets N``). ``cellstore load --hfile-output DIR INPUT... --mapping
FILE [--split-keys F | --hbase-root R (--hbase-table T | --hbase-snapshot S)]`` without a
TABLE is ImportTsv's bulk output for an HBase user with no cellstore table
(:func:`~cellstore.loader.write_hfiles`): with ``--hfile-output`` the first positional is
TABLE only when a cellstore table of that name exists under ``--root`` (and is not an
existing local file); otherwise every positional is an INPUT. A progress bar over the
load's tasks shows on stderr when it is a terminal; the final report is text or
(``--output json``) one JSON document.

pyarrow, dask, tqdm and the warehouse are imported inside the command body only.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.loadopts import (
    SIZE,
    HFileFlags,
    InputFlags,
    LoadFlags,
    hfile_options,
    input_options,
    load_options,
    parse_size,
    text_options,
)
from cellstore.cli.output import JsonOutput, Output, human_bytes
from cellstore.cli.params import FAMILY
from cellstore.core.family import Family
from cellstore.core.text import plural
from cellstore.errors import InputNotFoundError, InvalidArgumentError

if TYPE_CHECKING:
    from cellstore.loader import HFileOutput, LoadReport, LoadSettings
    from cellstore.warehouse import Table, Warehouse

__all__ = [
    "COMMANDS",
    "SIZE",
    "LoadOutcome",
    "load_cmd",
    "parse_size",
    "render_load_report",
    "text_options",
]


class LoadOutcome:
    """What ``load`` did: the report plus whether this run created the table."""

    def __init__(
        self, report: LoadReport, *, created: bool, splits: int, tableless: bool = False
    ) -> None:
        self.report = report
        self.created = created
        self.splits = splits
        self.tableless = tableless

    def to_dict(self) -> dict[str, Any]:
        """The report's dict plus ``created``, ``split-keys`` and ``table-less``."""
        return {
            **self.report.to_dict(),
            "created": self.created,
            "split-keys": self.splits,
            "table-less": self.tableless,
        }


def render_load_report(output: Output, outcome: LoadOutcome) -> None:
    """Print a load report with the chosen renderer (text lines, or one JSON document)."""
    if isinstance(output, JsonOutput):
        click.echo(json.dumps(outcome.to_dict(), indent=2))
        return
    r = outcome.report
    lines: list[str] = []
    if outcome.created:
        lines.append(
            f"Created table {r.table}"
            + (f" with {outcome.splits + 1} regions" if outcome.splits else "")
        )
    if r.already_applied:
        lines.append(f"Load {r.load_id} was already applied to table {r.table}; nothing done")
        click.echo("\n".join(lines))
        return
    h = r.hfile_output
    if h is not None:
        lines.append(
            f"Wrote {r.cells} cells of {r.rows} rows as {r.files} HFiles, "
            f"{human_bytes(r.bytes)}, for HBase's bulk load under {h.url} (regions from "
            f"{h.split_source}: {h.regions}); "
            + (
                "no cellstore table involved"
                if outcome.tableless
                else f"nothing committed to table {r.table}"
            )
        )
    elif r.version is None:
        lines.append(f"No cells to load into table {r.table}; nothing committed")
    else:
        lines.append(
            f"Loaded {plural(r.rows, 'record')} as {plural(r.cells, 'cell')} into table {r.table}: "
            f"{plural(r.files, 'file')}, {human_bytes(r.bytes)} (version {r.version}, "
            f"sequence number {r.seq if r.seq is not None else 'none'})"
        )
    lines.append(
        f"load id {r.load_id}; {plural(r.records, 'record')} read from "
        f"{plural(r.inputs, 'input part')} in {r.seconds:.2f} s "
        f"({r.cells_per_second:,.0f} cells/s, {r.megabytes_per_second:.1f} MB/s); mode {r.mode}"
    )
    if r.duplicates_dropped:
        lines.append(
            f"{plural(r.duplicates_dropped, 'duplicate cell')} dropped (same row, column and "
            "timestamp: the last given wins)"
        )
        if r.duplicates_dropped >= r.cells:
            lines.append(
                "hint: most cells were dropped as duplicates. Without a timestamp column "
                "every cell of a load gets the same timestamp (the load time), so records "
                "that are versions of one cell overwrite each other: map one with "
                "--timestamp COLUMN[:unit] or `timestamp = ...` in the mapping"
            )
    if r.merged_runs:
        lines.append(
            f"{r.merged_runs} sorted runs merged (more than the files allowed per "
            "region and family)"
        )
    if r.rerouted_files:
        lines.append(f"{r.rerouted_files} files re-routed after a concurrent region change")
    if r.bad_records:
        lines.append(f"{r.bad_records} bad records skipped, written to {r.bad_records_path}:")
        lines += [f"  {count:>8}  {reason}" for reason, count in sorted(r.bad_reasons.items())]
    if h is not None and h.stores:
        from cellstore.core.keys import to_string_binary

        lines.append(
            "FAMILY           REGION                            FILES      CELLS  "
            "BYTES      START KEY"
        )
        lines += [
            f"{st.family:<16} {st.region:<33} {st.files:>5} {st.cells:>10}  "
            f"{human_bytes(st.bytes):<10} {to_string_binary(st.start)!r}"
            for st in h.stores
        ]
        target = r.table if outcome.tableless and r.table else "<table>"
        lines.append(f"then: hbase completebulkload {h.url} {target}")
    elif r.files_per_region:
        lines.append("REGION    FILES")
        lines += [f"{region:<9} {n:>5}" for region, n in sorted(r.files_per_region.items())]
    for w in r.warnings:
        lines.append(f"warning: {w.code}: {w.message}")
        lines.append(f"  fix: {w.fix}")
    if r.warnings:
        lines.append(
            f"(key-design check on sampled keys; 'cellstore advise {r.table} INPUT... "
            "--mapping FILE' checks an input before loading it)"
        )
    if r.report_path:
        lines.append(f"report: {r.report_path}")
    click.echo("\n".join(lines))


@click.command("load")
@click.argument("args", nargs=-1, required=True, metavar="[TABLE] INPUT...")
@input_options(load=True)
@click.option(
    "--create",
    is_flag=True,
    help="Create the table if it does not exist (families: --family, or the "
    "mapping's families with default settings).",
)
@click.option(
    "--family",
    "families",
    type=FAMILY,
    multiple=True,
    help="With --create: a column family spec, as for 'create' (repeatable).",
)
@click.option(
    "--regions",
    type=click.IntRange(1, 10_000),
    default=None,
    help="With --create: pre-split into N regions at sampled row-key quantiles.",
)
@click.option(
    "--salt-buckets",
    type=click.IntRange(1, 256),
    default=None,
    help="With --create: Phoenix-style salting, one region per bucket.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Run on a dask.distributed scheduler (tcp://host:8786) instead of local threads.",
)
@load_options()
@hfile_options()
@pass_cli_context
def load_cmd(
    cli_ctx: CliContext,
    *,
    args: tuple[str, ...],
    input_flags: InputFlags,
    create: bool,
    families: tuple[Family, ...],
    regions: int | None,
    salt_buckets: int | None,
    scheduler: str | None,
    load_flags: LoadFlags,
    hfile_flags: HFileFlags,
) -> None:
    """Bulk-load INPUT files (CSV, TSV, JSON lines, Parquet; paths, URLs or globs) into TABLE.

    Records become cells through a mapping: --mapping FILE (see docs/loading.md, "Mapping
    file"), or inline options for simple cases. Bad records stop the load with an error
    naming the file, line and field, and nothing is committed; --skip-bad-records skips
    them into a side file instead. The whole load is one commit.

    With --hfile-output DIR, HBase bulk-load HFiles are written instead (ImportTsv with
    importtsv.bulk.output). TABLE may then be left out: families and row key come from
    the mapping, regions and family settings from --split-keys or --hbase-root (else one
    region). The first positional is TABLE only if a cellstore table of that name exists.

    \b
    Examples:
      cellstore load ns:web pages.csv --mapping web.toml --create --regions 8
      cellstore load ns:users 's3://bucket/users/*.parquet' --row-key id \\
          --column info:name=name --column info:age=age:int --timestamp updated:s
      cellstore load ns:users users.csv --mapping users.toml \\
          --hfile-output /staging/users --hbase-root hdfs:///hbase --hbase-table ns:users
      cellstore load --hfile-output /staging/users users.csv --mapping users.toml \\
          --split-keys splits.txt
    """  # noqa: D301 (click's \b marker)
    if not create and (families or regions or salt_buckets):
        raise click.UsageError("--family, --regions and --salt-buckets need --create")
    if regions is not None and salt_buckets is not None:
        raise click.UsageError("give --regions or --salt-buckets, not both")
    output = hfile_flags.output()
    settings = load_flags.settings(input_flags)
    table, inputs = _table_and_inputs(cli_ctx, args, tableless_ok=output is not None and not create)
    if table is None:
        assert output is not None  # tableless_ok
        _write_tableless(cli_ctx, list(inputs), settings, output, scheduler)
        return
    warehouse = cli_ctx.warehouse(missing_ok=True)  # a missing table says to use --create
    created = create and not warehouse.exists(table)
    handle, splits = (
        _create_table(warehouse, table, list(inputs), settings, families, regions, salt_buckets)
        if created
        else (_open_table(warehouse, table), [])
    )
    try:
        with _running(cli_ctx, scheduler, label=f"load {handle.name}") as run:
            report = (
                handle.write_hfiles(list(inputs), output, replace(settings, **run))
                if output is not None
                else handle.load(list(inputs), replace(settings, **run))
            )
    except BaseException:
        if created:
            _drop_if_empty(warehouse, table)
        raise
    render_load_report(cli_ctx.output, LoadOutcome(report, created=created, splits=len(splits)))


def _write_tableless(
    cli_ctx: CliContext,
    inputs: list[str],
    settings: LoadSettings,
    output: HFileOutput,
    scheduler: str | None,
) -> None:
    """``load --hfile-output`` without a cellstore table (:func:`~cellstore.loader.write_hfiles`).

    Raises:
        click.BadParameter: ``--no-assign-seq-id`` (there is no commit).
        InputNotFoundError: the first input does not exist (saying no table of that
            name exists either).
        InvalidArgumentError: what ``write_hfiles`` raises.
    """
    from cellstore.loader import write_hfiles

    if not settings.assign_seq_id:
        raise click.BadParameter(
            "applies to loads that commit to a table", param_hint="'--no-assign-seq-id'"
        )
    try:
        with _running(cli_ctx, scheduler, label="write HFiles") as run:
            report = write_hfiles(inputs, output, replace(settings, **run))
    except InvalidArgumentError as e:
        if f"input {inputs[0]!r} does not exist" not in str(e):
            raise
        raise InputNotFoundError(
            f"{e}, and no cellstore table of that name exists under --root"
        ) from None
    render_load_report(cli_ctx.output, LoadOutcome(report, created=False, splits=0, tableless=True))


def _create_table(
    warehouse: Warehouse,
    table: str,
    sources: list[str],
    settings: LoadSettings,
    families: tuple[Family, ...],
    regions: int | None,
    salt_buckets: int | None,
) -> tuple[Table, list[bytes]]:
    """Create ``table`` for the load (``--create``): checks the inputs exist first.

    Families are ``--family`` or the mapping's; ``--regions N`` pre-splits at sampled key
    quantiles, ``--salt-buckets N`` salts. Returns the table and its split keys.
    """
    from cellstore.loader import sample_split_keys
    from cellstore.loader.inputs import discover_inputs
    from cellstore.loader.settings import load_mapping

    mapping = load_mapping(settings)
    discover_inputs(  # resolve globs and check the inputs exist before creating anything
        sources,
        columns=mapping.input_columns(),
        format=settings.format,
        text=settings.text,
        storage_options=settings.storage_options,
        target_part_bytes=64 << 20,
        column_uses=mapping.column_uses(),
    )
    splits: list[bytes] = []
    if regions is not None and regions > 1:
        splits = sample_split_keys(
            sources,
            mapping=mapping,
            regions=regions,
            input_format=settings.format,
            text=settings.text,
            input_storage_options=settings.storage_options,
        )
    key = mapping.row_key
    handle = warehouse.create_table(
        table,
        families=list(families) or [Family(name=f) for f in mapping.families],
        splits=splits or None,
        salt_buckets=salt_buckets,
        row_key=None if key is None or hasattr(key, "column") else key,
    )
    return handle, splits


def _open_table(warehouse: Warehouse, table: str) -> Table:
    """Open ``table``, saying ``--create`` creates it when it does not exist."""
    from cellstore.errors import TableNotFoundError

    try:
        return warehouse.table(table)
    except TableNotFoundError as e:
        raise TableNotFoundError(f"{e}; add --create to create it") from None


def _table_and_inputs(
    cli_ctx: CliContext, args: tuple[str, ...], *, tableless_ok: bool
) -> tuple[str | None, tuple[str, ...]]:
    """Split the positionals into TABLE and INPUTs.

    Without ``tableless_ok`` (no ``--hfile-output``, or ``--create``) the first is TABLE.
    With it, the first is TABLE only when it is not an existing local file and a cellstore
    table of that name exists under ``--root``; otherwise there is no TABLE.

    Raises:
        click.UsageError: TABLE without any INPUT.
    """
    import os

    from cellstore.errors import CellstoreError

    first = args[0]
    if tableless_ok:
        is_table = False
        if len(args) > 1 and "://" not in first and not os.path.exists(first):
            try:
                is_table = cli_ctx.warehouse(missing_ok=True).exists(first)
            except (CellstoreError, OSError, ValueError):
                is_table = False
        if not is_table:
            return None, args
    if len(args) < 2:
        raise click.UsageError(
            "give TABLE and at least one INPUT (without a cellstore table, with "
            "--hfile-output DIR, give the INPUTs only)"
        )
    return first, args[1:]


@contextlib.contextmanager
def _running(cli_ctx: CliContext, scheduler: str | None, *, label: str) -> Iterator[dict[str, Any]]:
    """The load's ``client`` (``--scheduler``, else None) and ``progress``, closed after."""
    client = None
    if scheduler is not None:
        from distributed import Client

        client = Client(scheduler)  # type: ignore[no-untyped-call]
    progress, bar = _progress_bar(cli_ctx.output, label=label)
    try:
        yield {"client": client, "progress": progress}
    finally:
        if bar is not None:
            bar.close()
        if client is not None:
            client.close()  # type: ignore[no-untyped-call]


def _drop_if_empty(warehouse: Warehouse, table: str) -> None:
    """Drop a table this command created when its load failed, if it is still empty.

    A table another writer has loaded into meanwhile is left alone; failures to drop are
    ignored (the load's own error is the one to report).
    """
    from cellstore.errors import CellstoreError

    with contextlib.suppress(CellstoreError, OSError):
        if not warehouse.table(table).files:
            warehouse.drop_table(table, purge=True)


def _progress_bar(output: Output, *, label: str) -> tuple[Any, Any]:
    if not (output.shows_progress and sys.stderr is not None and sys.stderr.isatty()):
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=0, desc=label, unit="task", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return progress, bar


#: The commands this module adds to the root group.
COMMANDS: tuple[click.Command, ...] = (load_cmd,)

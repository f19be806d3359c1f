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
import re
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.output import JsonOutput, Output, human_bytes
from cellstore.cli.params import FAMILY, LOAD_ID, STORAGE_OPTION, _ParamType
from cellstore.core.family import Family
from cellstore.core.text import plural
from cellstore.errors import InvalidArgumentError

if TYPE_CHECKING:
    from cellstore.loader import LoadMapping, LoadReport, TextOptions
    from cellstore.warehouse import Warehouse

__all__ = [
    "COMMANDS",
    "LoadOutcome",
    "load_cmd",
    "parse_size",
    "read_mapping",
    "render_load_report",
    "text_options",
]

_SIZE: Final = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS: Final = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of a size like ``512M``, ``2GiB``, ``1048576`` (binary multiples).

    Raises:
        InvalidArgumentError: if the text is not a size.
    """
    m = _SIZE.match(text)
    if m is None:
        raise InvalidArgumentError(f"not a size: {text!r} (e.g. 512M, 2G, 1048576)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


class _SizeType(_ParamType[int]):
    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except InvalidArgumentError as e:
            self.fail(str(e), param, ctx)


SIZE: Final = _SizeType()


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


def text_options(
    mapping: LoadMapping,
    *,
    delimiter: str | None,
    no_header: bool,
    column_names: str | None,
    multiline: bool = False,
) -> TextOptions:
    """Text-input options: the mapping's ``[input]`` overridden by the command-line flags."""
    from cellstore.loader import TextOptions

    text_opts = dict(mapping.input_options)
    text_opts.pop("format", None)
    if multiline:
        text_opts["multiline"] = True
    if delimiter is not None:
        text_opts["delimiter"] = "\t" if delimiter in ("\\t", "tab") else delimiter
    if no_header:
        text_opts["header"] = False
    if column_names is not None:
        text_opts["column_names"] = tuple(c.strip() for c in column_names.split(","))
    return TextOptions.from_options(text_opts)


def read_mapping(
    *,
    mapping_path: str | None,
    row_key: str | None,
    columns: Sequence[str],
    timestamp: str | None,
    operation: str | None,
    storage_options: dict[str, Any],
) -> LoadMapping:
    """The mapping from ``--mapping FILE`` or the inline options (not both).

    Raises:
        click.UsageError: both, or neither, given.
    """
    from cellstore.loader import LoadMapping

    if mapping_path is not None and (row_key or columns or timestamp or operation):
        raise click.UsageError("give --mapping or inline --row-key/--column options, not both")
    if mapping_path is None and not columns:
        raise click.UsageError("give --mapping FILE, or --column (and --row-key) options")
    if mapping_path is not None:
        return LoadMapping.from_file(mapping_path, storage_options=storage_options)
    return _inline_mapping(
        row_key=row_key, columns=columns, timestamp=timestamp, operation=operation
    )


def _inline_mapping(
    *,
    row_key: str | None,
    columns: Sequence[str],
    timestamp: str | None,
    operation: str | None,
) -> LoadMapping:
    from cellstore.core.codecs import Codec
    from cellstore.loader import KeyColumn, LoadMapping

    key = None
    if row_key is not None:
        name, _, codec = row_key.partition(":")
        key = KeyColumn(column=name, codec=Codec.parse(codec or "string"))
    ts_col, unit = None, "ms"
    if timestamp is not None:
        ts_col, _, unit = timestamp.partition(":")
        unit = unit or "ms"
    return LoadMapping.simple(
        row_key=key,
        columns=list(columns),
        timestamp=ts_col,
        timestamp_unit=unit,  # type: ignore[arg-type]  # validated by LoadMapping
        operation=operation,
    )


@click.command("load")
@click.argument("args", nargs=-1, required=True, metavar="[TABLE] INPUT...")
@click.option(
    "--mapping",
    "mapping_path",
    metavar="FILE",
    help="LoadMapping file (TOML or JSON; any fsspec URL).",
)
@click.option(
    "--row-key",
    metavar="COLUMN[:CODEC]",
    help="Inline mapping: the row-key column (codec default string).",
)
@click.option(
    "--column",
    "columns",
    multiple=True,
    metavar="FAMILY:QUALIFIER=COLUMN[:CODEC]",
    help="Inline mapping: a cell column (repeatable). FAMILY:{COL} takes the "
    "qualifier from input column COL.",
)
@click.option(
    "--timestamp",
    metavar="COLUMN[:UNIT]",
    help="Inline mapping: timestamp column, unit s|ms|us|ns (default: load time).",
)
@click.option(
    "--operation",
    metavar="COLUMN",
    help="Inline mapping: column with Put/Delete/DeleteColumn/DeleteFamily/... ",
)
@click.option(
    "--format",
    "input_format",
    type=click.Choice(["csv", "tsv", "jsonl", "parquet"]),
    help="Input format (default: from each file's extension).",
)
@click.option("--delimiter", metavar="CHAR", help="CSV field delimiter (default , or tab).")
@click.option("--no-header", is_flag=True, help="Text files have no header line.")
@click.option(
    "--column-names", metavar="A,B,...", help="Input column names (required with --no-header)."
)
@click.option(
    "--multiline",
    is_flag=True,
    help="CSV/TSV: quoted values may span lines (default: one record per line; a "
    "quote left open at the end of its line makes the record bad).",
)
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
    "--skip-bad-records",
    is_flag=True,
    help="Skip bad records into <report dir>/<load id>.bad.jsonl; commit the rest.",
)
@click.option(
    "--load-id",
    type=LOAD_ID,
    default=None,
    help="Idempotency key: a load id the table already committed is not applied again.",
)
@click.option(
    "--memory-budget",
    type=SIZE,
    default=None,
    metavar="SIZE",
    help="Memory the load may hold at once (e.g. 512M, 2G; default 1G).",
)
@click.option(
    "--max-file-size",
    type=SIZE,
    default=None,
    metavar="SIZE",
    help="Roll store files at about this many cell bytes (default 1G).",
)
@click.option(
    "--max-files-per-region",
    type=click.IntRange(1, 100_000),
    default=None,
    help="Spill mode: merge a region's sorted runs (per family) when there are more "
    "than N (default 32, HBase's bulk-load limit).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=None,
    help="Parallel tasks (default: CPU count, or the cluster's threads).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Run on a dask.distributed scheduler (tcp://host:8786) instead of local threads.",
)
@click.option(
    "--report-dir",
    metavar="URL",
    default=None,
    help="Where the report and bad-records file go (default <table>/_loads).",
)
@click.option(
    "--input-storage-option",
    "input_storage_options",
    type=STORAGE_OPTION,
    multiple=True,
    help="fsspec option for the inputs' filesystem (repeatable).",
)
@click.option(
    "--hfile-output",
    metavar="DIR",
    default=None,
    help="Write HBase bulk-load HFiles to DIR (DIR/<family>/<hex>, absent or empty) "
    "instead of committing, like ImportTsv -Dimporttsv.bulk.output; then run "
    "'hbase completebulkload DIR TABLE'.",
)
@click.option(
    "--split-keys",
    "split_keys_file",
    metavar="FILE",
    default=None,
    help="With --hfile-output: the HBase table's split keys, one per line, \\xNN "
    "escapes as the HBase shell prints them (default: this table's regions).",
)
@click.option(
    "--hbase-root",
    metavar="ROOT",
    default=None,
    help="With --hfile-output: HBase root dir (or exported snapshot) of the target "
    "table: its regions and family settings are used.",
)
@click.option(
    "--hbase-table", metavar="NS:TABLE", default=None, help="With --hbase-root: the target table."
)
@click.option(
    "--hbase-snapshot",
    metavar="NAME",
    default=None,
    help="With --hbase-root: a snapshot of the target table.",
)
@click.option(
    "--hfile-compression",
    type=click.Choice(["none", "gz", "snappy", "lz4", "zstd"]),
    default=None,
    help="With --hfile-output: codec of families without an HBase descriptor (default none).",
)
@click.option(
    "--hfile-encoding",
    type=click.Choice(["none", "prefix", "diff", "fast_diff", "row_index_v1"]),
    default=None,
    help="With --hfile-output: data block encoding (default none).",
)
@click.option(
    "--hfile-block-size",
    type=SIZE,
    default=None,
    metavar="SIZE",
    help="With --hfile-output: data block size (default: the family's, 64K).",
)
@click.option(
    "--hfile-bloom",
    type=click.Choice(["none", "row", "rowcol"]),
    default=None,
    help="With --hfile-output: Bloom filter type (default row).",
)
@click.option(
    "--hfile-storage-option",
    "hfile_storage_options",
    type=STORAGE_OPTION,
    multiple=True,
    help="fsspec option for --hfile-output, --split-keys and --hbase-root (repeatable).",
)
@click.option(
    "--no-assign-seq-id",
    is_flag=True,
    help="Commit without a sequence number, like HBase's bulk load with "
    "hbase.mapreduce.bulkload.assign.sequenceNumbers=false: at equal row, column, "
    "timestamp and type the cells already in the table win (not with --hfile-output).",
)
@pass_cli_context
def load_cmd(
    cli_ctx: CliContext,
    *,
    args: tuple[str, ...],
    mapping_path: str | None,
    row_key: str | None,
    columns: tuple[str, ...],
    timestamp: str | None,
    operation: str | None,
    input_format: str | None,
    delimiter: str | None,
    no_header: bool,
    column_names: str | None,
    multiline: bool,
    create: bool,
    families: tuple[Family, ...],
    regions: int | None,
    salt_buckets: int | None,
    skip_bad_records: bool,
    load_id: str | None,
    memory_budget: int | None,
    max_file_size: int | None,
    max_files_per_region: int | None,
    workers: int | None,
    scheduler: str | None,
    report_dir: str | None,
    input_storage_options: tuple[tuple[str, Any], ...],
    hfile_output: str | None = None,
    split_keys_file: str | None = None,
    hbase_root: str | None = None,
    hbase_table: str | None = None,
    hbase_snapshot: str | None = None,
    hfile_compression: str | None = None,
    hfile_encoding: str | None = None,
    hfile_block_size: int | None = None,
    hfile_bloom: str | None = None,
    hfile_storage_options: tuple[tuple[str, Any], ...] = (),
    no_assign_seq_id: bool = False,
) -> None:
    """Bulk-load INPUT files (CSV, TSV, JSON lines, Parquet; paths, URLs or globs) into TABLE.

    Records become cells through a mapping: --mapping FILE (see the README, "Loading
    data"), or inline options for simple cases. Bad records stop the load with an error
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
    from cellstore.errors import TableNotFoundError
    from cellstore.loader import sample_split_keys
    from cellstore.loader.inputs import discover_inputs

    if not create and (families or regions or salt_buckets):
        raise click.UsageError("--family, --regions and --salt-buckets need --create")
    if regions is not None and salt_buckets is not None:
        raise click.UsageError("give --regions or --salt-buckets, not both")
    hfile_opts = (
        split_keys_file,
        hbase_root,
        hbase_table,
        hbase_snapshot,
        hfile_compression,
        hfile_encoding,
        hfile_block_size,
        hfile_bloom,
    )
    if hfile_output is None and (any(o is not None for o in hfile_opts) or hfile_storage_options):
        raise click.UsageError("--split-keys, --hbase-*, --hfile-* options need --hfile-output")
    if split_keys_file is not None and hbase_root is not None:
        raise click.UsageError("give --split-keys or --hbase-root, not both")
    if hbase_root is not None and (hbase_table is None) == (hbase_snapshot is None):
        raise click.UsageError("--hbase-root needs --hbase-table or --hbase-snapshot")
    if hbase_root is None and (hbase_table is not None or hbase_snapshot is not None):
        raise click.UsageError("--hbase-table and --hbase-snapshot need --hbase-root")
    hfile_kwargs: dict[str, Any] = {}
    if hfile_output is not None:
        from cellstore.storefiles.rolling import HFileSettings

        hfile_kwargs = {
            "hfile_output": hfile_output,
            "split_keys": split_keys_file,
            "hbase_root": hbase_root,
            "hbase_table": hbase_table,
            "hbase_snapshot": hbase_snapshot,
            "hfile_settings": HFileSettings(
                compression=cast(Any, hfile_compression or "none"),
                encoding=cast(Any, hfile_encoding or "none"),
                block_size=hfile_block_size,
                bloom=cast(Any, hfile_bloom or "row"),
            ),
            "hfile_storage_options": dict(hfile_storage_options),
        }
    in_opts = dict(input_storage_options)
    mapping = read_mapping(
        mapping_path=mapping_path,
        row_key=row_key,
        columns=columns,
        timestamp=timestamp,
        operation=operation,
        storage_options=in_opts,
    )
    text = text_options(
        mapping,
        delimiter=delimiter,
        no_header=no_header,
        column_names=column_names,
        multiline=multiline,
    )
    fmt: Any = input_format or mapping.input_options.get("format")
    sizes: dict[str, Any] = {
        k: v
        for k, v in (
            ("memory_budget", memory_budget),
            ("max_file_bytes", max_file_size),
            ("max_files_per_region", max_files_per_region),
        )
        if v is not None
    }
    common: dict[str, Any] = {
        "load_id": load_id,
        "skip_bad_records": skip_bad_records,
        "format": fmt,
        "text": text,
        "storage_options": in_opts,
        "workers": workers,
        "report_dir": report_dir,
        **sizes,
    }
    table, inputs = _table_and_inputs(
        cli_ctx, args, tableless_ok=hfile_output is not None and not create
    )
    if table is None:
        from cellstore.loader import write_hfiles

        if no_assign_seq_id:
            raise click.BadParameter(
                "applies to loads that commit to a table", param_hint="'--no-assign-seq-id'"
            )
        try:
            with _running(cli_ctx, scheduler, label="write HFiles") as (client, progress):
                report = write_hfiles(
                    list(inputs),
                    mapping=mapping,
                    output=hfile_kwargs["hfile_output"],
                    split_keys=split_keys_file,
                    hbase_root=hbase_root,
                    hbase_table=hbase_table,
                    hbase_snapshot=hbase_snapshot,
                    hfile_settings=hfile_kwargs["hfile_settings"],
                    output_storage_options=hfile_kwargs["hfile_storage_options"],
                    client=client,
                    progress=progress,
                    **common,
                )
        except InvalidArgumentError as e:
            if f"input {inputs[0]!r} does not exist" not in str(e):
                raise
            raise InvalidArgumentError(
                f"{e}, and no cellstore table of that name exists under --root"
            ) from None
        outcome = LoadOutcome(report, created=False, splits=0, tableless=True)
        render_load_report(cli_ctx.output, outcome)
        return
    warehouse = cli_ctx.warehouse()
    created = False
    splits: list[bytes] = []
    sources: Any = list(inputs)
    if create and not warehouse.exists(table):
        # Resolve globs and check the inputs exist before creating anything.
        discover_inputs(
            sources,
            columns=mapping.input_columns(),
            format=fmt,
            text=text,
            storage_options=in_opts,
            target_part_bytes=64 << 20,
            column_uses=mapping.column_uses(),
        )
        fams = list(families) or [Family(name=f) for f in mapping.families]
        spec = (
            None
            if mapping.row_key is None or hasattr(mapping.row_key, "column")
            else (mapping.row_key)
        )
        if regions is not None and regions > 1:
            splits = sample_split_keys(
                sources,
                mapping=mapping,
                regions=regions,
                input_format=fmt,
                text=text,
                input_storage_options=in_opts,
            )
        handle = warehouse.create_table(
            table,
            families=fams,
            splits=splits or None,
            salt_buckets=salt_buckets,
            row_key=spec,
        )
        created = True
    else:
        try:
            handle = warehouse.table(table)
        except TableNotFoundError as e:
            raise TableNotFoundError(f"{e}; add --create to create it") from None
    try:
        with _running(cli_ctx, scheduler, label=f"load {handle.name}") as (client, progress):
            report = handle.load(
                sources,
                mapping=mapping,
                client=client,
                progress=progress,
                key_advice="report",
                **common,
                **hfile_kwargs,
                assign_seq_id=not no_assign_seq_id,
            )
    except BaseException:
        if created:
            _drop_if_empty(warehouse, table)
        raise
    render_load_report(cli_ctx.output, LoadOutcome(report, created=created, splits=len(splits)))


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
                is_table = cli_ctx.warehouse().exists(first)
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
def _running(
    cli_ctx: CliContext, scheduler: str | None, *, label: str
) -> Iterator[tuple[Any, Any]]:
    """A Dask client (``--scheduler``, else None) and a progress callback, closed after."""
    client = None
    if scheduler is not None:
        from distributed import Client

        client = Client(scheduler)  # type: ignore[no-untyped-call]
    progress, bar = _progress_bar(cli_ctx.output, label=label)
    try:
        yield client, progress
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

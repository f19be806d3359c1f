r"""``cellstore hbase``: read an HBase root directory or an exported snapshot in place.

``import`` converts one into a new cellstore table (``cellstore.hbase.import_snapshot``).

``describe``, ``scan`` and ``count`` take ROOT (an HBase root directory, or an
``ExportSnapshot`` target) and either ``--snapshot NAME`` or ``--table NS:TABLE``. The
scan options are those of ``cellstore scan`` (same option definitions), and results print
as ``cellstore scan`` prints them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.optionkit import (
    HFILE_BLOOMS,
    HFILE_COMPRESSIONS,
    HFILE_ENCODINGS,
    READ_THREADS_HELP,
    WRITE_THREADS_HELP,
    choice_option,
    count_option,
    threads_option,
    value_option,
)
from cellstore.cli.params import other_storage_options
from cellstore.cli.scanflags import (
    FLAGS,
    HBASE_COUNT_FLAGS,
    HBASE_SCAN_FLAGS,
    ScanFlags,
    scan_flags,
)

if TYPE_CHECKING:
    from cellstore.hbase.tables import HBaseTable
    from cellstore.reader import Scan

__all__ = [
    "COMMANDS",
    "HBaseSource",
    "PlannedScan",
    "count_cmd",
    "describe_cmd",
    "export_hfiles_cmd",
    "hbase_group",
    "hbase_scan",
    "hbase_source",
    "import_cmd",
    "scan_cmd",
]


@click.group("hbase")
def hbase_group() -> None:
    """Read HBase tables and snapshots in place, with HBase's read semantics.

    \b
    Examples:
      cellstore hbase describe /backups/hbase --snapshot nightly
      cellstore hbase scan /hbase --table ns:users --prefix u42 --limit 10
      cellstore hbase count s3://bucket/export --snapshot nightly
      cellstore hbase export-hfiles ns:users /staging/users
      cellstore hbase import /backups/hbase --snapshot nightly ./wh ns:users
    """  # noqa: D301 (click's \b marker)


_SNAPSHOT = value_option("--snapshot", metavar="NAME", help="Snapshot to read.")
_TABLE = value_option("--table", metavar="NS:TABLE", help="Table of the root directory to read.")
_THREADS = threads_option(help=READ_THREADS_HELP)
_FOLLOW_SYMLINKS = click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Follow symlinks that lead outside ROOT (default: only those inside it).",
)

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class HBaseSource:
    """What ``ROOT --snapshot NAME | --table NS:TABLE [--follow-symlinks]`` names.

    Attributes:
        root: The HBase root directory or ``ExportSnapshot`` target, as given.
        snapshot: The snapshot to read, or None.
        table: The table of the root directory to read, or None.
        follow_symlinks: Whether symlinks leading outside ``root`` are followed.
        threads: ``--threads``: each HFile's blocks decoded on this many threads
            (``HFileReadOptions.threads``; None: the default).
    """

    root: str
    snapshot: str | None
    table: str | None
    follow_symlinks: bool
    threads: int | None = None

    def open(self, cli_ctx: CliContext) -> HBaseTable:
        """Open the snapshot or table; the names are checked by ``cellstore.hbase``.

        Raises:
            click.UsageError: not exactly one of ``--snapshot`` and ``--table``.
        """
        from cellstore.hbase.tables import open_snapshot, open_table
        from cellstore.storefiles.hfile.readoptions import HFileReadOptions

        if (self.snapshot is None) == (self.table is None):
            raise click.UsageError("give exactly one of --snapshot NAME or --table NS:TABLE")
        root = self.root
        options: dict[str, Any] | None = dict(cli_ctx.storage_options) if "://" in root else None
        common: dict[str, Any] = {
            "storage_options": options,
            "follow_symlinks": self.follow_symlinks,
            "read_options": None
            if self.threads is None
            else HFileReadOptions(threads=self.threads),
        }
        if self.snapshot is not None:
            return open_snapshot(root, self.snapshot, **common)
        assert self.table is not None
        return open_table(root, self.table, **common)


def hbase_source(command: F) -> F:
    """Decorator: add ``ROOT``, ``--snapshot``, ``--table`` and ``--follow-symlinks``.

    The command is called with one ``source`` keyword, an :class:`HBaseSource`, instead
    of a keyword per parameter.
    """
    return _with_source(command, (click.argument("root"), _SNAPSHOT, _TABLE, _FOLLOW_SYMLINKS))


def hbase_read_source(command: F) -> F:
    """:func:`hbase_source` of a command that reads the HFiles' cells: also ``--threads``."""
    options = (click.argument("root"), _SNAPSHOT, _TABLE, _THREADS, _FOLLOW_SYMLINKS)
    return _with_source(command, options)


def _with_source(command: F, options: tuple[Callable[[Any], Any], ...]) -> F:
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in ("root", "snapshot", "table")}
        source = HBaseSource(
            **given,
            follow_symlinks=kwargs.pop("follow_symlinks"),
            threads=kwargs.pop("threads", None),
        )
        return command(*args, source=source, **kwargs)

    out: Callable[..., Any] = wrapper
    for add in reversed(options):
        out = add(out)
    return out  # type: ignore[return-value]


@click.command("describe")
@hbase_source
@pass_cli_context
def describe_cmd(cli_ctx: CliContext, *, source: HBaseSource) -> None:
    """Describe an HBase table or snapshot: families with their settings, regions, files."""
    cli_ctx.output.describe_table(source.open(cli_ctx).describe())


@dataclass(frozen=True)
class PlannedScan:
    """A read command's scan of an HBase table or snapshot, planned.

    Attributes:
        name: The table's name.
        scan: The planned scan.
        started: When the command started (``time.perf_counter()``), for the timing line.
    """

    name: str
    scan: Scan
    started: float


def hbase_scan(
    *flags: str,
) -> Callable[[Callable[[CliContext, PlannedScan], None]], Callable[..., None]]:
    """Decorator of a read command: ``ROOT`` and its source options, the scan ``flags``.

    The command is called with the CLI context and the :class:`PlannedScan`.
    """

    def decorate(command: Callable[[CliContext, PlannedScan], None]) -> Callable[..., None]:
        @hbase_read_source
        @scan_flags(*flags)
        @pass_cli_context
        @functools.wraps(command)
        def wrapper(cli_ctx: CliContext, *, source: HBaseSource, scan: ScanFlags) -> None:
            handle = source.open(cli_ctx)
            started = time.perf_counter()
            command(cli_ctx, PlannedScan(handle.name, handle.scan(scan.options(handle)), started))

        return wrapper

    return decorate


@click.command("scan")
@hbase_scan(*HBASE_SCAN_FLAGS)
def scan_cmd(cli_ctx: CliContext, read: PlannedScan) -> None:
    """Scan an HBase table or snapshot under ROOT, printed as ``cellstore scan`` does."""
    cli_ctx.output.scan_cells(read.name, read.scan.to_batches(), started=read.started)


@click.command("count")
@hbase_scan(*HBASE_COUNT_FLAGS)
def count_cmd(cli_ctx: CliContext, read: PlannedScan) -> None:
    """Count the rows of an HBase table or snapshot that have a visible cell."""
    cli_ctx.output.row_count(read.name, read.scan.count_rows(), started=read.started)


@click.command("export-hfiles")
@click.argument("table")
@click.argument("directory")
@FLAGS["families"]
@click.option(
    "--all-versions",
    is_flag=True,
    help="Every version the families keep (default: the latest version only).",
)
@click.option(
    "--raw",
    is_flag=True,
    help="Every version and delete marker as stored (not with --all-versions).",
)
@FLAGS["time_range"]
@choice_option("--compression", HFILE_COMPRESSIONS, default="none", help="HFile compression.")
@choice_option("--encoding", HFILE_ENCODINGS, default="none", help="Data block encoding.")
@choice_option("--bloom", HFILE_BLOOMS, default="row", help="Bloom filter type.")
@count_option(
    "--max-file-bytes",
    metavar="BYTES",
    help="Roll files at about this many uncompressed bytes, between rows (default 10 GiB).",
)
@threads_option(help=WRITE_THREADS_HELP)
@click.option("--overwrite", is_flag=True, help="Replace what DIRECTORY holds.")
@other_storage_options("--to-storage-option", "url_options", "DIRECTORY")
@pass_cli_context
def export_hfiles_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    directory: str,
    families: tuple[str, ...],
    all_versions: bool,
    raw: bool,
    time_range: tuple[int, int] | None,
    compression: str,
    encoding: str,
    bloom: str,
    max_file_bytes: int | None,
    threads: int | None,
    overwrite: bool,
    url_options: tuple[tuple[str, Any], ...],
) -> None:
    """Write cellstore TABLE as HFiles for HBase's bulk load, under DIRECTORY.

    DIRECTORY gets one sub-directory per family, each file inside one region of TABLE.
    Load them with ``hbase completebulkload DIRECTORY NS:TABLE``.

    \b
    Examples:
      cellstore hbase export-hfiles ns:users /staging/users
      cellstore hbase export-hfiles ns:users s3://bucket/bulk --raw --compression gz
    """  # noqa: D301 (click's \b marker)
    from cellstore.cli.admin import _emit, _output_options, _progress
    from cellstore.cli.output import human_bytes
    from cellstore.jobs.hfile_export import DEFAULT_HFILE_MAX_FILE_BYTES, export_hfiles
    from cellstore.storefiles.hfile.options import DEFAULT_WRITE_THREADS, HFileOptions

    if all_versions and raw:
        raise click.UsageError("give at most one of --all-versions and --raw")
    handle = cli_ctx.warehouse().table(table)
    with _progress(cli_ctx.output, label=f"export-hfiles {handle.name}") as progress:
        r = export_hfiles(
            handle,
            directory,
            families=families or None,
            max_versions=2**31 - 1 if all_versions else None,
            raw=raw,
            time_range=time_range,
            hfile_settings=HFileOptions(
                compression=compression,  # type: ignore[arg-type]
                encoding=encoding,  # type: ignore[arg-type]
                bloom=bloom,  # type: ignore[arg-type]
                threads=DEFAULT_WRITE_THREADS if threads is None else threads,
            ),
            max_file_bytes=max_file_bytes or DEFAULT_HFILE_MAX_FILE_BYTES,
            overwrite=overwrite,
            storage_options=_output_options(cli_ctx, directory, url_options),
            progress=progress,
        )
    _emit(
        cli_ctx.output,
        r.to_dict(),
        lambda: [
            f"Exported {r.cells} cell(s) of table {r.table} version {r.version} to {r.url}: "
            f"{len(r.files)} HFile(s) in {len(r.families)} family dir(s), "
            f"{human_bytes(r.bytes)}",
            f"Load with: hbase completebulkload {r.url} <namespace:table>",
        ],
    )


@click.command("import")
@hbase_read_source
@click.argument("warehouse")
@click.argument("dest")
@value_option(
    "--import-id",
    metavar="ID",
    help="Idempotency key (default: derived from ROOT and the snapshot or table); a retry "
    "with an id the table has committed does nothing.",
)
@count_option("--workers", metavar="N", help="Local threads (default: the CPU count).")
@value_option(
    "--scheduler",
    metavar="ADDRESS",
    help="Run the tasks on a dask.distributed scheduler (tcp://host:8786).",
)
@count_option(
    "--max-file-bytes",
    metavar="BYTES",
    help="Roll store files at about this many uncompressed bytes, between rows (default 1 GiB).",
)
@other_storage_options(
    "--warehouse-storage-option", "warehouse_options", "WAREHOUSE", root="ROOT's"
)
@pass_cli_context
def import_cmd(
    cli_ctx: CliContext,
    *,
    source: HBaseSource,
    warehouse: str,
    dest: str,
    import_id: str | None,
    workers: int | None,
    scheduler: str | None,
    max_file_bytes: int | None,
    warehouse_options: tuple[tuple[str, Any], ...],
) -> None:
    """Import an HBase snapshot or table under ROOT into a new table DEST of WAREHOUSE.

    DEST gets the HBase table's regions, families and settings, and every cell of its
    HFiles (delete markers included), converted to Parquet store files and committed at
    once. Running it again with the same source (or --import-id) does nothing.

    \b
    Examples:
      cellstore hbase import /backups/hbase --snapshot nightly ./wh ns:users
      cellstore hbase import s3://bucket/hbase --table ns:users s3://bucket/wh ns:users
    """  # noqa: D301 (click's \b marker)
    from cellstore.cli.admin import _emit, _progress
    from cellstore.cli.output import human_bytes
    from cellstore.hbase.importer import (
        DEFAULT_IMPORT_MAX_FILE_BYTES,
        import_hbase_table,
    )
    from cellstore.warehouse import connect

    root = source.root
    handle = source.open(cli_ctx)

    def protocol(u: str) -> str:
        return u.split("://", 1)[0] if "://" in u else "file"

    options = dict(warehouse_options) if warehouse_options else None
    if options is None and protocol(warehouse) == protocol(root) and "://" in root:
        options = dict(cli_ctx.storage_options)
    wh = connect(warehouse, storage_options=options)
    client = None
    if scheduler is not None:
        from distributed import Client

        client = Client(scheduler)  # type: ignore[no-untyped-call]
    try:
        with _progress(cli_ctx.output, label=f"import {dest}") as progress:
            r = import_hbase_table(
                handle,
                wh,
                dest,
                root=root,
                import_id=import_id,
                client=client,
                workers=workers,
                max_file_bytes=max_file_bytes or DEFAULT_IMPORT_MAX_FILE_BYTES,
                progress=progress,
            )
    finally:
        if client is not None:
            client.close()  # type: ignore[no-untyped-call]
    what = f"snapshot {r.snapshot}" if r.snapshot else f"table {r.hbase_table}"

    def lines() -> list[str]:
        if r.applied_before:
            return [
                f"Import {r.import_id} of HBase {what} into {r.table} was applied before "
                f"(version {r.version}); nothing done"
            ]
        return [
            f"Imported HBase {what} into table {r.table} version {r.version}: "
            f"{r.cells} cell(s) from {r.hfiles} HFile(s) in {r.regions} region(s), "
            f"{r.files} store file(s), {human_bytes(r.bytes)} in {r.seconds:.1f}s",
            f"Import id: {r.import_id}"
            + (
                f"; {r.duplicates_dropped} duplicate key(s) dropped" if r.duplicates_dropped else ""
            ),
        ]

    _emit(cli_ctx.output, r.to_dict(), lines)


hbase_group.add_command(describe_cmd)
hbase_group.add_command(scan_cmd)
hbase_group.add_command(count_cmd)
hbase_group.add_command(export_hfiles_cmd)
hbase_group.add_command(import_cmd)

COMMANDS: tuple[click.Command, ...] = (hbase_group,)

r"""Admin commands: snapshots, clone, restore, export, copy, vacuum, verify, expire, upgrade.

The HBase shell's ``snapshot`` / ``list_snapshots`` / ``delete_snapshot`` become
``snapshot create|list|delete``; ``clone_snapshot`` and ``restore_snapshot`` become
``clone`` and ``restore``; HBase's ``Export`` and ``CopyTable`` tools become ``export`` and
``copy``. ``vacuum`` deletes unreferenced files (dry run unless ``--yes``) and ``verify``
checks every live file, exiting with code 9 when it finds problems.

Each command makes one library call (:mod:`cellstore.jobs`) and prints its report as text
lines or, with ``--output json``, one JSON document (the report's ``to_dict()``). The jobs
(and with them pyarrow and fsspec) are imported inside command bodies only.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.output import JsonOutput, Output, format_ts, grid, human_bytes
from cellstore.cli.params import LOAD_ID, other_storage_options
from cellstore.cli.scanflags import EXPORT_FLAGS, FLAGS, RAW_VALUES, ScanFlags, scan_flags
from cellstore.core.text import plural
from cellstore.errors import InvalidArgumentError

if TYPE_CHECKING:
    from cellstore.jobs import SnapshotInfo

__all__ = [
    "COMMANDS",
    "clone_cmd",
    "copy_cmd",
    "export_cmd",
    "parse_duration",
    "restore_cmd",
    "snapshot_group",
    "expire_cmd",
    "upgrade_cmd",
    "vacuum_cmd",
    "verify_cmd",
]

_DURATION: Final = re.compile(r"^\s*([0-9]+)\s*(ms|s|m|h|d|w)?\s*$", re.IGNORECASE)
_DURATION_MS: Final = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration(text: str) -> int:
    """Milliseconds of a duration like ``7d``, ``12h``, ``30m``, ``90s``, ``500ms``, ``2w``.

    A bare ``0`` is zero; any other number needs a unit.

    >>> parse_duration("7d")
    604800000
    >>> parse_duration("0")
    0

    Raises:
        InvalidArgumentError: if the text is not a duration.
    """
    m = _DURATION.match(text)
    if m is None or (m.group(2) is None and int(m.group(1)) != 0):
        raise InvalidArgumentError(f"not a duration: {text!r} (e.g. 7d, 12h, 30m, 90s, 0)")
    unit = (m.group(2) or "ms").lower()
    return int(m.group(1)) * (7 * _DURATION_MS["d"] if unit == "w" else _DURATION_MS[unit])


def _duration_option(text: str, option: str) -> int:
    """:func:`parse_duration` of an option's value; a bad one is a usage error (exit 2)."""
    try:
        return parse_duration(text)
    except InvalidArgumentError as e:
        raise click.BadParameter(str(e), param_hint=f"'{option}'") from None


def _human_ms(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _emit(output: Output, doc: Any, lines: Callable[[], Sequence[str]]) -> None:
    """One JSON document, or the text lines."""
    if isinstance(output, JsonOutput):
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo("\n".join(lines()))


@contextmanager
def _progress(output: Output, *, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A ``(done, total)`` callback drawing a bar on a terminal's stderr, else None."""
    if not (output.shows_progress and sys.stderr is not None and sys.stderr.isatty()):
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=0, desc=label, unit="file", file=sys.stderr)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()


def _confirm(yes: bool, question: str, what: str) -> None:
    if yes:
        return
    if sys.stdin is None or not sys.stdin.isatty():
        raise click.UsageError(f"refusing to {what} without --yes (stdin is not a terminal)")
    click.confirm(question, abort=True, err=True)


# ------------------------------------------------------------------------------- snapshots
def _snapshot_rows(infos: Sequence[SnapshotInfo]) -> list[list[object]]:
    return [
        [s.name, s.table, s.version, format_ts(s.created_ms), s.files, s.cells, s.bytes]
        for s in infos
    ]


@click.group("snapshot")
def snapshot_group() -> None:
    """Named snapshots of table versions: create, list, delete.

    \b
    Examples:
      cellstore snapshot create ns:events before-backfill
      cellstore snapshot list ns:events
      cellstore snapshot delete ns:events before-backfill
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)


@snapshot_group.command("create")
@click.argument("table")
@click.argument("name")
@click.option(
    "--version",
    type=click.IntRange(min=1),
    default=None,
    help="Table version to name (default: the newest).",
)
@pass_cli_context
def snapshot_create_cmd(cli_ctx: CliContext, *, table: str, name: str, version: int | None) -> None:
    """Take snapshot NAME of TABLE (HBase's snapshot): one commit, no data copied."""
    from cellstore.jobs import snapshot

    info = snapshot(cli_ctx.warehouse().table(table), name, version=version)
    _emit(
        cli_ctx.output,
        info.to_dict(),
        lambda: [
            f"Snapshot {info.name} of table {info.table}: version {info.version} "
            f"({plural(info.files, 'file')}, {plural(info.cells, 'cell')}, "
            f"{human_bytes(info.bytes)})"
        ],
    )


@snapshot_group.command("list")
@click.argument("table", required=False)
@pass_cli_context
def snapshot_list_cmd(cli_ctx: CliContext, *, table: str | None) -> None:
    """List the snapshots of TABLE, or of every table (HBase's list_snapshots)."""
    from cellstore.jobs import list_snapshots

    wh = cli_ctx.warehouse()
    names = [table] if table is not None else wh.list_tables()
    infos = [s for name in names for s in list_snapshots(wh.table(name))]
    headers = ["SNAPSHOT", "TABLE", "VERSION", "CREATED", "FILES", "CELLS", "BYTES"]
    _emit(
        cli_ctx.output,
        {"snapshots": [s.to_dict() for s in infos]},
        lambda: [*grid(headers, _snapshot_rows(infos)), f"{len(infos)} row(s)"],
    )


@snapshot_group.command("delete")
@click.argument("table")
@click.argument("name")
@pass_cli_context
def snapshot_delete_cmd(cli_ctx: CliContext, *, table: str, name: str) -> None:
    """Delete snapshot NAME of TABLE (HBase's delete_snapshot); vacuum frees its files."""
    from cellstore.jobs import delete_snapshot

    info = delete_snapshot(cli_ctx.warehouse().table(table), name)
    _emit(
        cli_ctx.output,
        {"deleted": info.to_dict()},
        lambda: [f"Deleted snapshot {info.name} of table {info.table} (version {info.version})"],
    )


@click.command("clone")
@click.argument("table")
@click.argument("snapshot")
@click.argument("new_table")
@pass_cli_context
def clone_cmd(cli_ctx: CliContext, *, table: str, snapshot: str, new_table: str) -> None:
    """Create NEW_TABLE from SNAPSHOT of TABLE without copying data (clone_snapshot).

    The clone links to the source's files; its own loads and compactions write into its
    own directory.

    \b
    Example:
      cellstore clone ns:events before-backfill ns:events_replay
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)
    from cellstore.jobs import clone

    r = clone(cli_ctx.warehouse().table(table), snapshot, new_table)
    _emit(
        cli_ctx.output,
        r.to_dict(),
        lambda: [
            f"Cloned snapshot {r.snapshot} of table {r.source} (version {r.snapshot_version}) "
            f"into table {r.table}: {plural(r.files, 'file')} linked ({plural(r.cells, 'cell')}, "
            f"{human_bytes(r.bytes)}), no data copied"
        ],
    )


@click.command("restore")
@click.argument("table")
@click.argument("snapshot")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@pass_cli_context
def restore_cmd(cli_ctx: CliContext, *, table: str, snapshot: str, yes: bool) -> None:
    """Restore TABLE to SNAPSHOT (HBase's restore_snapshot), as one new version.

    Data committed after the snapshot leaves the table (earlier versions stay readable
    as-of until vacuum). Asks first unless --yes.
    """
    from cellstore.jobs import restore

    handle = cli_ctx.warehouse().table(table)
    _confirm(
        yes,
        f"Restore table {handle.name} (version {handle.version}) to snapshot {snapshot}?",
        f"restore table {handle.name}",
    )
    r = restore(handle, snapshot)
    _emit(
        cli_ctx.output,
        r.to_dict(),
        lambda: [
            f"Restored table {r.table} to snapshot {r.snapshot} (version "
            f"{r.snapshot_version}): now version {r.version}, {plural(r.files, 'file')}, "
            f"{plural(r.cells, 'cell')} ({plural(r.files_removed, 'file')} removed, "
            f"{r.files_restored} restored)"
        ],
    )


# ---------------------------------------------------------------------------- export, copy
def _output_options(
    cli_ctx: CliContext, url: str, given: Sequence[tuple[str, Any]]
) -> dict[str, Any]:
    """Options for an output URL: those given, else the root's when on the same protocol."""
    if given:
        return dict(given)

    def protocol(u: str) -> str:
        return u.split("://", 1)[0] if "://" in u else "file"

    return dict(cli_ctx.storage_options) if protocol(url) == protocol(cli_ctx.root) else {}


@click.command("export")
@click.argument("table")
@click.argument("url")
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["parquet", "csv"]),
    default="parquet",
    show_default=True,
    help="parquet keeps the binary Arrow schema; csv writes bytes in printable form and "
    "types by name (cells-shape CSV loads back with load-cells).",
)
@click.option(
    "--shape",
    type=click.Choice(["cells", "wide"]),
    default="cells",
    show_default=True,
    help="cells: one line per cell; wide: one line per row, a family:qualifier column each.",
)
@scan_flags(*EXPORT_FLAGS)
@RAW_VALUES
@click.option("--overwrite", is_flag=True, help="Replace an earlier export in URL.")
@other_storage_options("--to-storage-option", "url_options", "URL")
@pass_cli_context
def export_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    url: str,
    file_format: str,
    shape: str,
    scan: ScanFlags,
    raw_values: bool,
    overwrite: bool,
    url_options: tuple[tuple[str, Any], ...],
) -> None:
    """Export a scan of TABLE to Parquet or CSV files under the directory URL.

    One part file per scan task (part-00000.parquet, ...), then a _SUCCESS marker. URL is
    a local path or any fsspec URL (s3://bucket/out). Values decode with the codecs the
    table's mapping-based loads recorded: --shape wide in typed columns, cells in an added
    decoded text column next to the stored value (--raw-values: bytes only).

    \b
    Examples:
      cellstore export ns:events s3://bucket/exports/events --storage-option anon=false
      cellstore export ns:events ./events-csv --format csv --raw --versions 10
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)
    from cellstore.jobs import export

    handle = cli_ctx.warehouse().table(table)
    options = scan.options(handle, shape=shape, decode=not raw_values)
    with _progress(cli_ctx.output, label=f"export {handle.name}") as progress:
        r = export(
            handle,
            url,
            format=file_format,  # type: ignore[arg-type]
            shape=shape,  # type: ignore[arg-type]
            storage_options=_output_options(cli_ctx, url, url_options),
            overwrite=overwrite,
            progress=progress,
            decoded=not raw_values,
            **options.changes(),
        )
    _emit(
        cli_ctx.output,
        r.to_dict(),
        lambda: [
            f"Exported {r.rows} row(s) ({r.cells} cells) of table {r.table} version "
            f"{r.version} to {r.url}: {len(r.files)} {r.format} file(s), {human_bytes(r.bytes)}"
        ],
    )


@click.command("copy")
@click.argument("table")
@click.argument("dest_table")
@click.option(
    "--to-root",
    default=None,
    metavar="URL",
    help="Warehouse root of DEST_TABLE (default: the same as TABLE's).",
)
@other_storage_options("--to-storage-option", "dest_options", "--to-root")
@click.option(
    "--no-create",
    is_flag=True,
    help="Fail if DEST_TABLE does not exist (default: create it like TABLE).",
)
@click.option(
    "--family",
    "families",
    multiple=True,
    metavar="FAMILY",
    help="Copy only this family (repeatable). Default: every family.",
)
@click.option(
    "--job-id",
    type=LOAD_ID,
    default=None,
    help="Idempotency key: a copy with an id DEST_TABLE has committed is not applied again.",
)
@pass_cli_context
def copy_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    dest_table: str,
    to_root: str | None,
    dest_options: tuple[tuple[str, Any], ...],
    no_create: bool,
    families: tuple[str, ...],
    job_id: str | None,
) -> None:
    """Copy TABLE's stored cells (every version and delete marker) into DEST_TABLE.

    HBase's CopyTable with --all.cells. DEST_TABLE may live in another warehouse root.

    \b
    Example:
      cellstore copy ns:events backup:events --to-root s3://backups/warehouse
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)
    from cellstore.jobs import copy_table

    handle = cli_ctx.warehouse().table(table)
    dest: Any = None
    if to_root is not None:
        from cellstore.warehouse import connect

        dest = connect(to_root, storage_options=_output_options(cli_ctx, to_root, dest_options))
    with _progress(cli_ctx.output, label=f"copy {handle.name}") as progress:
        r = copy_table(
            handle,
            dest,
            dest_table,
            create=not no_create,
            families=families or None,
            job_id=job_id,
            progress=progress,
        )

    def lines() -> list[str]:
        if r.version is None:
            return [
                f"Nothing copied into table {r.dest} (empty source, or copy {r.job_id} "
                "was already applied)"
            ]
        made = " (created)" if r.created else ""
        return [
            f"Copied {r.cells} cells of table {r.source} version {r.source_version} into "
            f"table {r.dest}{made} at {r.dest_root}: {plural(r.files_written, 'file')}, "
            f"{human_bytes(r.bytes)}; version {r.version}, job id {r.job_id}"
        ]

    _emit(cli_ctx.output, r.to_dict(), lines)


# ---------------------------------------------------------------------------- vacuum, verify
#: ``vacuum`` and ``expire``: delete only with ``--yes``.
_DRY_RUN: Final = click.option(
    "--dry-run/--yes",
    "dry_run",
    default=True,
    show_default=True,
    help="--dry-run only shows what would be deleted; --yes deletes.",
)


def _no_retention_check(period: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--no-retention-check``; ``period`` names the command's retention in the help."""
    return click.option(
        "--no-retention-check",
        is_flag=True,
        help=f"Allow {period} under 1 hour (only when no load or job can be running).",
    )


def _dry_run_note(dry_run: bool, anything: bool) -> list[str]:
    """The closing line of a dry run that would have deleted ``anything``."""
    if dry_run and anything:
        return ["Dry run: nothing was deleted; run again with --yes to delete"]
    return []


@click.command("vacuum")
@click.argument("table")
@click.option(
    "--retention",
    default="7d",
    show_default=True,
    metavar="DURATION",
    help="Keep files (and as-of versions) younger than this: 7d, 12h, 30m, 90s.",
)
@_DRY_RUN
@_no_retention_check("a retention")
@FLAGS["now_ms"]
@pass_cli_context
def vacuum_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    retention: str,
    dry_run: bool,
    no_retention_check: bool,
    now_ms: int | None,
) -> None:
    """Delete TABLE's files that no readable version references (dry run unless --yes).

    Kept: files of the newest version, of snapshots, of versions current within the
    retention period (as-of reads), of clones' versions, and any file younger than the
    retention. Old bulk-load reports and leftover temporary files go too.

    \b
    Examples:
      cellstore vacuum ns:events                     # what would go
      cellstore vacuum ns:events --retention 2d --yes
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)
    from cellstore.jobs import vacuum

    r = vacuum(
        cli_ctx.warehouse().table(table),
        retention_ms=_duration_option(retention, "--retention"),
        dry_run=dry_run,
        enforce_retention=not no_retention_check,
        now_ms=now_ms,
    )

    def lines() -> list[str]:
        verb = "Would delete" if r.dry_run else "Deleted"
        kept = ", ".join(f"{n} {reason}" for reason, n in r.kept.items() if n) or "none"
        out = [
            f"{verb} {r.files_deleted} of {plural(r.files, 'data file')} "
            f"({human_bytes(r.bytes_deleted)}) of "
            f"table {r.table}, unreferenced and older than {_human_ms(r.retention_ms)}",
            *(f"  {p}" for p in r.deleted),
            f"Kept: {kept}",
        ]
        if r.other_deleted:
            out.append(f"{verb} {len(r.other_deleted)} load report / temporary file(s)")
            out += [f"  {p}" for p in r.other_deleted]
        out += _dry_run_note(r.dry_run, bool(r.deleted or r.other_deleted))
        return out

    _emit(cli_ctx.output, r.to_dict(), lines)


@click.command("verify")
@click.argument("table")
@click.option(
    "--version",
    type=click.IntRange(min=1),
    default=None,
    help="Verify this table version (default: the newest).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Files checked at once.",
)
@pass_cli_context
def verify_cmd(cli_ctx: CliContext, *, table: str, version: int | None, workers: int) -> None:
    """Check TABLE's manifest and every live file; exit 9 if any problem is found.

    Checks: files exist with their manifest size; footers parse and agree with the
    manifest; Parquet page checksums; cells in order with unique keys; rows inside their
    region; regions, families, entries and sequence numbers consistent.
    """
    from cellstore.jobs import verify

    r = verify(cli_ctx.warehouse().table(table, version=version), workers=workers)

    def lines() -> list[str]:
        head = (
            f"Verified table {r.table} version {r.version}: {plural(r.files, 'file')}, "
            f"{plural(r.cells, 'cell')}, {human_bytes(r.bytes)}"
        )
        if r.ok:
            return [f"{head}: OK"]
        return [f"{head}: {len(r.problems)} problem(s)", *(f"  {p}" for p in r.problems)]

    _emit(cli_ctx.output, r.to_dict(), lines)
    r.raise_for_problems()


@click.command("expire")
@click.argument("table")
@click.option(
    "--older-than",
    "older_than",
    default="7d",
    show_default=True,
    metavar="DURATION",
    help="Delete metadata versions not current within this period: 7d, 12h, 30m.",
)
@_DRY_RUN
@click.option(
    "--rewrite-manifests",
    "rewrite",
    is_flag=True,
    help="First fold the newest version's manifest files into one (a commit).",
)
@_no_retention_check("a period")
@FLAGS["now_ms"]
@pass_cli_context
def expire_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    older_than: str,
    dry_run: bool,
    rewrite: bool,
    no_retention_check: bool,
    now_ms: int | None,
) -> None:
    """Delete TABLE's old metadata versions and the manifest files only they list.

    Kept, as vacuum keeps their files: the newest version, snapshots' versions, versions
    current within the period, and version 1. As-of reads of deleted versions fail.

    \b
    Examples:
      cellstore expire ns:events                        # what would go
      cellstore expire ns:events --older-than 7d --yes
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)
    from cellstore.jobs import expire

    r = expire(
        cli_ctx.warehouse().table(table),
        retention_ms=_duration_option(older_than, "--older-than"),
        dry_run=dry_run,
        rewrite=rewrite,
        enforce_retention=not no_retention_check,
        now_ms=now_ms,
    )

    def lines() -> list[str]:
        verb = "Would delete" if r.dry_run else "Deleted"
        out = [
            f"{verb} {len(r.versions_deleted)} metadata version(s) and "
            f"{len(r.files_deleted)} manifest/part file(s) of table {r.table}; kept "
            f"{len(r.versions_kept)} version(s)",
        ]
        if r.rewritten:
            out.append("Rewrote the newest version's manifests into one")
        out += _dry_run_note(r.dry_run, bool(r.versions_deleted or r.files_deleted))
        return out

    _emit(cli_ctx.output, r.to_dict(), lines)


@click.command("upgrade")
@click.argument("table")
@pass_cli_context
def upgrade_cmd(cli_ctx: CliContext, *, table: str) -> None:
    """Rewrite TABLE's metadata as format version 2 (manifest files), in one commit.

    Data files are untouched; older versions stay readable. A table already at format
    version 2 is left as it is.

    \b
    Examples:
      cellstore upgrade ns:events
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)
    t = cli_ctx.warehouse().table(table)
    before = t.metadata.format_version
    upgraded = t.upgrade()
    doc = {
        "table": str(t.name),
        "upgraded": upgraded,
        "from-format-version": before,
        "format-version": t.metadata.format_version,
        "version": t.version,
        "manifests": len(t.metadata.manifests),
    }

    def lines() -> list[str]:
        if not upgraded:
            return [f"Table {t.name} is at format version {before} already; nothing to do"]
        return [
            f"Upgraded table {t.name} from format version {before} to "
            f"{t.metadata.format_version} (version {t.version}, "
            f"{len(t.metadata.manifests)} manifest file(s))"
        ]

    _emit(cli_ctx.output, doc, lines)


#: The commands this module adds to the root group.
COMMANDS: tuple[click.Command, ...] = (
    snapshot_group,
    clone_cmd,
    restore_cmd,
    export_cmd,
    copy_cmd,
    vacuum_cmd,
    verify_cmd,
    upgrade_cmd,
    expire_cmd,
)

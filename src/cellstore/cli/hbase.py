r"""``cellstore hbase``: read an HBase root directory or an exported snapshot in place.

``describe``, ``scan`` and ``count`` take ROOT (an HBase root directory, or an
``ExportSnapshot`` target) and either ``--snapshot NAME`` or ``--table NS:TABLE``. The
scan options are those of ``cellstore scan`` (same option definitions), and results print
as ``cellstore scan`` prints them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.output import JsonOutput
from cellstore.cli.reads import (
    _COLUMN,
    _FAMILY,
    _FILTER,
    _NOW,
    _PREFIX,
    _START_ROW,
    _STOP_ROW,
    _TIME_RANGE,
    _TIMESTAMP,
    _VERSIONS,
    _filters,
)

if TYPE_CHECKING:
    from cellstore.hbase.tables import HBaseTable

__all__ = ["COMMANDS", "count_cmd", "describe_cmd", "hbase_group", "scan_cmd"]


@click.group("hbase")
def hbase_group() -> None:
    """Read HBase tables and snapshots in place, with HBase's read semantics.

    \b
    Examples:
      cellstore hbase describe /backups/hbase --snapshot nightly
      cellstore hbase scan /hbase --table ns:users --prefix u42 --limit 10
      cellstore hbase count s3://bucket/export --snapshot nightly
    """  # noqa: D301 (click's \b marker)


_SNAPSHOT = click.option("--snapshot", default=None, metavar="NAME", help="Snapshot to read.")
_TABLE = click.option(
    "--table", default=None, metavar="NS:TABLE", help="Table of the root directory to read."
)


def _open(cli_ctx: CliContext, root: str, snapshot: str | None, table: str | None) -> HBaseTable:
    from cellstore.hbase.tables import open_snapshot, open_table

    if (snapshot is None) == (table is None):
        raise click.UsageError("give exactly one of --snapshot NAME or --table NS:TABLE")
    options: dict[str, Any] | None = dict(cli_ctx.storage_options) if "://" in root else None
    if snapshot is not None:
        return open_snapshot(root, snapshot, storage_options=options)
    assert table is not None
    return open_table(root, table, storage_options=options)


@click.command("describe")
@click.argument("root")
@_SNAPSHOT
@_TABLE
@pass_cli_context
def describe_cmd(
    cli_ctx: CliContext, *, root: str, snapshot: str | None, table: str | None
) -> None:
    """Describe an HBase table or snapshot: families with their settings, regions, files."""
    import json

    doc = _open(cli_ctx, root, snapshot, table).describe()
    if isinstance(cli_ctx.output, JsonOutput):
        click.echo(json.dumps(doc.to_dict(), indent=2))
        return
    what = f"snapshot {doc.snapshot} of " if doc.snapshot else ""
    lines = [f"Table {what}{doc.name} (HBase {doc.layout} layout at {doc.root})"]
    lines.append("COLUMN FAMILIES DESCRIPTION")
    for fam in doc.families:
        attrs = ", ".join(f"{k} => '{v}'" for k, v in sorted(fam.descriptor.attributes.items()))
        lines.append(f"{{NAME => '{fam.settings.name}', {attrs}}}")
    lines.append(f"{len(doc.regions)} region(s), {doc.files} file(s), {doc.bytes} bytes")
    for r in doc.to_dict()["regions"]:
        lines.append(
            f"  {r['id']}  [{r['start']!r}, {r['end']!r})  files={r['files']} bytes={r['bytes']}"
        )
    click.echo("\n".join(lines))


@click.command("scan")
@click.argument("root")
@_SNAPSHOT
@_TABLE
@_START_ROW
@_STOP_ROW
@_PREFIX
@_COLUMN
@_FAMILY
@_TIME_RANGE
@_TIMESTAMP
@_VERSIONS
@click.option("--raw", is_flag=True, help="Return delete markers and deleted cells as stored.")
@click.option("--reversed", "reverse", is_flag=True, help="Rows in descending order.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, metavar="N", help="At most N rows."
)
@_FILTER
@_NOW
@pass_cli_context
def scan_cmd(
    cli_ctx: CliContext,
    *,
    root: str,
    snapshot: str | None,
    table: str | None,
    start_row: bytes | None,
    stop_row: bytes | None,
    row_prefix: bytes | None,
    columns: tuple[bytes, ...],
    families: tuple[str, ...],
    time_range: tuple[int, int] | None,
    timestamp: int | None,
    max_versions: int | None,
    raw: bool,
    reverse: bool,
    limit: int | None,
    filter_text: str | None,
    now_ms: int | None,
) -> None:
    """Scan an HBase table or snapshot under ROOT, printed as ``cellstore scan`` does."""
    handle = _open(cli_ctx, root, snapshot, table)
    started = time.perf_counter()
    scan = handle.scan(
        start_row=start_row,
        stop_row=stop_row,
        row_prefix=row_prefix,
        columns=columns or None,
        families=families or None,
        time_range=time_range,
        timestamp=timestamp,
        max_versions=max_versions,
        raw=raw,
        reversed=reverse,
        limit=limit,
        filter=_filters(filter_text),
        now_ms=now_ms,
    )
    cli_ctx.output.scan_cells(handle.name, scan.to_batches(), started=started)


@click.command("count")
@click.argument("root")
@_SNAPSHOT
@_TABLE
@_START_ROW
@_STOP_ROW
@_PREFIX
@_COLUMN
@_FAMILY
@_TIME_RANGE
@_FILTER
@_NOW
@pass_cli_context
def count_cmd(
    cli_ctx: CliContext,
    *,
    root: str,
    snapshot: str | None,
    table: str | None,
    start_row: bytes | None,
    stop_row: bytes | None,
    row_prefix: bytes | None,
    columns: tuple[bytes, ...],
    families: tuple[str, ...],
    time_range: tuple[int, int] | None,
    filter_text: str | None,
    now_ms: int | None,
) -> None:
    """Count the rows of an HBase table or snapshot that have a visible cell."""
    handle = _open(cli_ctx, root, snapshot, table)
    started = time.perf_counter()
    rows = handle.scan(
        start_row=start_row,
        stop_row=stop_row,
        row_prefix=row_prefix,
        columns=columns or None,
        families=families or None,
        time_range=time_range,
        filter=_filters(filter_text),
        now_ms=now_ms,
    ).count_rows()
    cli_ctx.output.row_count(handle.name, rows, started=started)


hbase_group.add_command(describe_cmd)
hbase_group.add_command(scan_cmd)
hbase_group.add_command(count_cmd)

COMMANDS: tuple[click.Command, ...] = (hbase_group,)

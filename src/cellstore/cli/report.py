r"""The ``report`` command: a table measured and drawn for people to look at.

``cellstore report TABLE --html FILE`` writes one self-contained HTML page (charts as
inline SVG: no network, no server at view time); ``--output json`` prints the same
numbers as one JSON document; plain text prints a short summary. The charts need
matplotlib (``pip install "cellstore[report]"``); without it ``--html`` fails with a
one-line message naming the extra.

The warehouse and the report module (pyarrow) are imported inside the command body only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.output import JsonOutput, Output

if TYPE_CHECKING:
    from cellstore.report import TableReport

__all__ = ["COMMANDS", "render_report", "report_cmd"]


def render_report(output: Output, report: TableReport, *, html_path: str | None) -> None:
    """Print a report: the JSON document, or a short text summary."""
    if isinstance(output, JsonOutput):
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    r = report
    how = (
        f"a sample of {r.scanned_cells:,} of {r.total_cells:,} cells"
        if r.sampled
        else f"all {r.scanned_cells:,} cells"
    )
    lines = [
        f"Table report for {r.table} at version {r.version} ({how} read)",
        f"regions {len(r.regions):,}, store files {r.total_files:,}, cells "
        f"{r.total_cells:,}, bytes {r.total_bytes:,}, distinct row keys {r.rows:,}",
    ]
    hot = r.hotspot
    if hot is not None:
        share = hot.cells / r.total_cells if r.total_cells else 0.0
        lines.append(f"hotspot: region {hot.region} holds {share:.1%} of the cells")
    if r.key_lengths:
        lens = r.key_lengths
        lines.append(f"row-key length: {min(lens)} to {max(lens)} bytes")
    if r.columns:
        top = r.columns[0]
        lines.append(
            f"columns: {len(r.columns):,}; most puts: {top.column} "
            f"({top.puts:,} puts, up to {top.max_versions} versions per cell)"
        )
    markers = r.delete_markers
    lines.append(
        "delete markers: "
        + (", ".join(f"{k} {v:,}" for k, v in markers.items()) if markers else "none")
    )
    for f in r.families:
        if f.ttl_seconds is not None:
            lines.append(f"family {f.family}: {f.expired_share:.1%} of cells TTL-expired")
    lines.append(
        f"key-design findings: {len(r.advice.findings)} ({len(r.advice.warnings)} warnings); "
        "see 'cellstore advise'"
    )
    lines.append(f"history: {len(r.history)} commit(s) listed")
    if html_path:
        lines.append(f"wrote {html_path}")
    click.echo("\n".join(lines))


@click.command("report")
@click.argument("table")
@click.option(
    "--html",
    "html_path",
    metavar="FILE",
    help="Write the self-contained HTML page here (local path or fsspec URL).",
)
@click.option(
    "--sample-rows",
    type=click.IntRange(1, None),
    default=None,
    help="Read about this many cells at most; a larger table is sampled (default 2000000).",
)
@click.option("--all-cells", is_flag=True, help="Read every cell (no sampling).")
@click.option(
    "--history",
    type=click.IntRange(0, None),
    default=None,
    help="Commits to list, newest first (default 50).",
)
@click.option(
    "--version",
    "version",
    type=click.IntRange(1, None),
    default=None,
    help="Report on this table version (default: the latest).",
)
@pass_cli_context
def report_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    html_path: str | None,
    sample_rows: int | None,
    all_cells: bool,
    history: int | None,
    version: int | None,
) -> None:
    """Measure TABLE and draw it: regions, row keys, versions, deletes, TTL, advice, history.

    Cells, bytes and store files per region (the hotspot marked), row-key length and
    first-byte distributions, versions per column, delete markers by kind, the
    TTL-expired share per family, the key-design advice of 'cellstore advise' and the
    commit history. --html FILE writes one self-contained page (needs
    'pip install "cellstore[report]"'); --output json prints the same numbers.

    \b
    Examples:
      cellstore report ns:events --html events.html
      cellstore report ns:events --output json | jq .regions
    """  # noqa: D301 (click's \b marker)
    if all_cells and sample_rows is not None:
        raise click.UsageError("give --sample-rows or --all-cells, not both")
    from cellstore.report import DEFAULT_HISTORY, DEFAULT_SAMPLE_ROWS, require_matplotlib

    if html_path:
        try:
            require_matplotlib()
        except ImportError as e:
            from cellstore.errors import InvalidArgumentError

            raise InvalidArgumentError(f"--html: {e}") from None

    warehouse = cli_ctx.warehouse()
    handle = warehouse.table(table, version=version)
    report = handle.report(
        html=html_path,
        sample_rows=None if all_cells else (sample_rows or DEFAULT_SAMPLE_ROWS),
        history=DEFAULT_HISTORY if history is None else history,
    )
    render_report(cli_ctx.output, report, html_path=html_path)


#: The commands this module adds to the root group.
COMMANDS: tuple[click.Command, ...] = (report_cmd,)

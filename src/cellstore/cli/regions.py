r"""Region commands: ``split`` and ``merge`` (HBase shell's ``split`` and ``merge_region``).

Keys are typed in HBase's printable form (``\x00`` escapes); reports print as text lines
or, with ``--output json``, one JSON document (the report's ``to_dict()``). The jobs (and
with them pyarrow and fsspec) are imported on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from cellstore.cli.admin import _emit
from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.load import SIZE
from cellstore.cli.optionkit import value_option
from cellstore.cli.output import Output, human_bytes
from cellstore.cli.params import PRINTABLE_KEY
from cellstore.core.keys import to_string_binary
from cellstore.core.text import plural
from cellstore.errors import InvalidArgumentError

if TYPE_CHECKING:
    from cellstore.jobs.regions import MergeReport, SplitReport

__all__ = ["COMMANDS", "merge_cmd", "render_merge_report", "render_split_report", "split_cmd"]


def _bounds(start: bytes, end: bytes) -> str:
    return f"['{to_string_binary(start)}', '{to_string_binary(end)}')"


def _keys(keys: tuple[bytes, ...]) -> str:
    return ", ".join(f"'{to_string_binary(k)}'" for k in keys)


def render_split_report(output: Output, report: SplitReport) -> None:
    """Print a split report with the chosen renderer."""
    _emit(output, report.to_dict(), lambda: _split_lines(report))


def render_merge_report(output: Output, report: MergeReport) -> None:
    """Print a merge report with the chosen renderer."""
    _emit(output, report.to_dict(), lambda: _merge_lines(report))


def _split_lines(report: SplitReport) -> list[str]:
    lines: list[str] = []
    verb = "Would split" if report.dry_run else "Split"
    for s in report.splits:
        lines.append(
            f"{verb} region {s.parent} {_bounds(s.start, s.end)} at {_keys(s.keys)} into "
            f"{', '.join(s.children)}"
        )
        moved = (
            f"  {plural(s.files_reassigned, 'file')} re-assigned, {plural(s.files_cut, 'file')} cut"
        )
        if not report.dry_run:
            moved += (
                f" into {plural(s.files_written, 'file')} ({plural(s.cells_rewritten, 'cell')}, "
                f"{human_bytes(s.bytes_written)})"
            )
        lines.append(moved)
    if report.skipped_keys:
        lines.append(f"Already region boundaries (skipped): {_keys(report.skipped_keys)}")
    return [*lines, *_outcome(report, report.splits, "split")]


def _merge_lines(report: MergeReport) -> list[str]:
    verb = "Would merge" if report.dry_run else "Merged"
    merges = [
        f"{verb} regions {', '.join(m.merged)} into {m.region} {_bounds(m.start, m.end)}: "
        f"{plural(m.files_reassigned, 'file')} re-assigned ({human_bytes(m.bytes)}), none rewritten"
        for m in report.merges
    ]
    return [*merges, *_outcome(report, report.merges, "merge")]


def _outcome(report: SplitReport | MergeReport, planned: Sequence[object], job: str) -> list[str]:
    """The last line: the version committed, or that there was nothing to do."""
    if report.version is not None:
        return [f"table {report.table} is at version {report.version}"]
    return [] if planned else [f"Nothing to {job} in table {report.table}"]


@click.command("split")
@click.argument("table")
@value_option(
    "--region",
    metavar="ID",
    help="Region to split (e.g. r000002). Default: the region holding the --at keys, "
    "or without --at the largest region.",
)
@click.option(
    "--at",
    "keys",
    type=PRINTABLE_KEY,
    multiple=True,
    help="Split key in printable form, e.g. 'm' or '\\x80\\x00' (repeatable). Default: "
    "the row nearest the middle of the region's cells. Keys that already are region "
    "boundaries are skipped.",
)
@click.option("--dry-run", is_flag=True, help="Show the plan; write and commit nothing.")
@pass_cli_context
def split_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    region: str | None,
    keys: tuple[bytes, ...],
    dry_run: bool,
) -> None:
    """Split a region of TABLE at given keys or near its middle.

    Files entirely on one side of a key are re-assigned to a child region; files spanning
    a key are rewritten into one file per child, keeping their sequence numbers. Reads
    return the same cells before and after.

    \b
    Examples:
      cellstore split ns:events                       # largest region, at its middle
      cellstore split ns:events --region r000002 --at m --at t
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)
    from cellstore.jobs.regions import split

    handle = cli_ctx.warehouse().table(table)
    report = split(handle, region=region, at=list(keys) or None, dry_run=dry_run)
    render_split_report(cli_ctx.output, report)


@click.command("merge")
@click.argument("table")
@click.argument("regions", nargs=-1, metavar="[REGION]...")
@value_option(
    "--max-size",
    type=SIZE,
    help="Instead of REGION ids: merge every run of adjacent regions whose files "
    "together hold at most this much (e.g. 256M, 1G).",
)
@click.option("--dry-run", is_flag=True, help="Show the plan; commit nothing.")
@pass_cli_context
def merge_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    regions: tuple[str, ...],
    max_size: int | None,
    dry_run: bool,
) -> None:
    """Merge adjacent regions of TABLE into one (files are re-assigned, not rewritten).

    \b
    Examples:
      cellstore merge ns:events r000002 r000003
      cellstore merge ns:events --max-size 256M --dry-run
    """  # noqa: D301 (click's \b marker keeps the examples unwrapped)
    from cellstore.jobs.regions import merge, merge_small

    if (max_size is None) == (not regions):
        raise InvalidArgumentError("merge: give two or more REGION ids, or --max-size")
    handle = cli_ctx.warehouse().table(table)
    if max_size is not None:
        report = merge_small(handle, max_bytes=max_size, dry_run=dry_run)
    else:
        report = merge(handle, regions=regions, dry_run=dry_run)
    render_merge_report(cli_ctx.output, report)


#: Commands this module registers on the root group.
COMMANDS = (split_cmd, merge_cmd)

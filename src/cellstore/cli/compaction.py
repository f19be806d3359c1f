"""Compaction commands: ``compact``, ``purge-ttl`` and ``maintain`` (the compaction policy).

``cellstore compact TABLE [--major]`` is HBase shell's ``compact`` / ``major_compact``;
``cellstore compact TABLE --file PATH ...`` compacts exactly the named store files (HBase's
``CompactionTool``); ``maintain`` runs the whole policy once (for cron or Airflow), its minor
compactions choosing files with HBase's exploring selection. Reports print as text lines
or, with ``--output json``, one JSON document (the report's ``to_dict()``). The jobs are
imported on first use; long runs show a progress bar on stderr (text output only).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.load import SIZE
from cellstore.cli.output import JsonOutput, Output, human_bytes
from cellstore.core.text import plural

if TYPE_CHECKING:
    from cellstore.jobs.compact import CompactionReport
    from cellstore.jobs.maintain import MaintainReport

__all__ = ["COMMANDS", "compact_cmd", "maintain_cmd", "purge_ttl_cmd"]


def _progress(output: Output, label: str) -> tuple[Callable[[int, int], None] | None, Any]:
    """A tqdm bar on stderr for text output to a terminal (else None: no bar in files)."""
    if isinstance(output, JsonOutput) or sys.stderr is None or not sys.stderr.isatty():
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=0, desc=label, unit="task", file=sys.stderr, leave=False)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return progress, bar


def compaction_lines(name: str, report: CompactionReport, *, what: str) -> list[str]:
    """Text lines of a compaction or purge report."""
    lines = []
    verb = "Would rewrite" if report.dry_run else "Rewrote"
    for s in report.stores:
        line = (
            f"  {s['region']}/{s['family']}: {plural(s['input-files'], 'file')} "
            f"({plural(s['input-cells'], 'cell')}, {human_bytes(s['input-bytes'])})"
        )
        if "output-files" in s:
            line += (
                f" -> {plural(s['output-files'], 'file')} ({plural(s['output-cells'], 'cell')}, "
                f"{human_bytes(s['output-bytes'])})"
            )
        if s.get("expired-files"):
            line += f"; {plural(s['expired-files'], 'expired file')} dropped"
        dropped = int(s.get("input-markers", 0)) - int(s.get("output-markers", 0))
        if "output-files" in s and dropped > 0:
            line += f"; {plural(dropped, 'delete marker')} dropped"
        elif s.get("drop-deletes") and "output-files" not in s:
            line += "; drops delete markers"
        lines.append(line)
    for s in report.skipped:
        lines.append(f"  {s['region']}/{s['family']}: skipped ({s['reason']})")
    if not report.stores:
        lines.insert(0, f"Nothing to rewrite in table {name} ({what})")
    else:
        head = f"{verb} {plural(len(report.stores), 'store')} of table {name} ({what})"
        if report.version is not None:
            head += f": version {report.version}, {report.seconds:.2f} s"
        lines.insert(0, head)
    return lines


def _render(output: Output, lines: Sequence[str], doc: dict[str, Any]) -> None:
    if isinstance(output, JsonOutput):
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo("\n".join(lines))


@click.command("compact")
@click.argument("table")
@click.option("--major", is_flag=True, help="Major compaction: all files, markers dropped.")
@click.option("--region", "regions", multiple=True, help="Only this region id (repeatable).")
@click.option("--family", "families", multiple=True, help="Only this family (repeatable).")
@click.option(
    "--file",
    "files",
    multiple=True,
    metavar="PATH",
    help="Compact exactly this store file, a path as `describe`/Table.files list "
    "it (repeatable; minor unless it is all of its store's files).",
)
@click.option(
    "--min-files",
    type=int,
    default=3,
    show_default=True,
    help="Fewest files a minor compaction takes per store.",
)
@click.option(
    "--max-files",
    type=int,
    default=10,
    show_default=True,
    help="Most files a minor compaction takes per store.",
)
@click.option(
    "--time-to-purge-deletes",
    "ttp",
    type=int,
    default=0,
    show_default=True,
    metavar="MS",
    help="Keep markers younger than this in a major compaction.",
)
@click.option(
    "--memory-budget",
    type=SIZE,
    default="256MiB",
    show_default=True,
    help="Cells held per task; larger stores are compacted in row ranges.",
)
@click.option("--dry-run", is_flag=True, help="Show the plan; commit nothing.")
@pass_cli_context
def compact_cmd(
    cli: CliContext,
    *,
    table: str,
    major: bool,
    regions: tuple[str, ...],
    families: tuple[str, ...],
    files: tuple[str, ...],
    min_files: int,
    max_files: int,
    ttp: int,
    memory_budget: int,
    dry_run: bool,
) -> None:
    """Compact TABLE's stores (minor by default; --major drops delete markers)."""
    from cellstore.jobs.compact import compact

    handle = cli.warehouse().table(table)
    progress, bar = _progress(cli.output, "compact")
    try:
        report = compact(
            handle,
            major=major,
            regions=regions or None,
            families=families or None,
            files=files or None,
            min_files=min_files,
            max_files=max_files,
            time_to_purge_deletes_ms=ttp,
            memory_budget=memory_budget,
            dry_run=dry_run,
            progress=progress,
        )
    finally:
        if bar is not None:
            bar.close()
    what = "major compaction" if major else "minor compaction"
    _render(cli.output, compaction_lines(table, report, what=what), report.to_dict())


@click.command("purge-ttl")
@click.argument("table")
@click.option("--dry-run", is_flag=True, help="Show the plan; commit nothing.")
@pass_cli_context
def purge_ttl_cmd(cli: CliContext, *, table: str, dry_run: bool) -> None:
    """Remove TABLE's expired cells, rewriting only files that hold some."""
    from cellstore.jobs.purge import purge_ttl

    report = purge_ttl(cli.warehouse().table(table), dry_run=dry_run)
    _render(cli.output, compaction_lines(table, report, what="TTL purge"), report.to_dict())


def _maintain_lines(name: str, report: MaintainReport) -> list[str]:
    if not report.actions:
        return [f"Table {name} needs nothing (version {report.version})"]
    verb = "Would run" if report.dry_run else "Ran"
    lines = [f"{verb} {len(report.actions)} actions on table {name}:"]
    for a in report.actions:
        status = (
            f"error: {a['error']}"
            if "error" in a
            else (f"version {a['result'].get('version')}" if not report.dry_run else "planned")
        )
        lines.append(f"  {a['action']:<14} {a['reason']} ({status})")
        for store in a.get("result", {}).get("stores", ()):
            sel = store.get("selection")
            if sel is None:
                continue
            notes = [k for k in ("stuck", "off-peak") if sel.get(k)]
            if sel.get("skipped-large"):
                notes.append(f"{plural(sel['skipped-large'], 'large file')} skipped")
            extra = f" ({', '.join(notes)})" if notes else ""
            lines.append(
                f"    {store['region']}/{store['family']}: selected "
                f"{plural(len(sel['files']), 'file')}{extra}: {' '.join(sel['files'])}"
            )
    lines.append(f"table {name} is at version {report.version}")
    return lines


@click.command("maintain")
@click.argument("table")
@click.option(
    "--major-interval",
    type=float,
    default=7.0,
    show_default=True,
    metavar="DAYS",
    help="Major-compact when the last major compaction is older (0 = every run).",
)
@click.option("--no-major", is_flag=True, help="Never run scheduled major compactions.")
@click.option(
    "--max-store-files",
    type=int,
    default=None,
    help="Minor-compact only selections of more files than this (default: the "
    "table property hbase.hstore.compaction.min, else 3 files or more).",
)
@click.option(
    "--off-peak/--peak",
    "off_peak",
    default=None,
    help="Use the off-peak compaction ratio (default: from the table properties "
    "hbase.offpeak.start.hour/end.hour).",
)
@click.option(
    "--split-over",
    type=SIZE,
    default="10GiB",
    show_default=True,
    help="Split regions whose files total more than this.",
)
@click.option(
    "--merge-under",
    type=SIZE,
    default=None,
    help="Merge runs of adjacent regions whose files together stay within this.",
)
@click.option(
    "--max-manifests",
    type=click.IntRange(min=0),
    default=32,
    show_default=True,
    help="Rewrite the manifest list into one manifest when it holds more than this "
    "many (format version 2).",
)
@click.option("--no-manifest-rewrite", is_flag=True, help="Never rewrite the manifest list.")
@click.option("--no-purge", is_flag=True, help="Do not purge expired cells.")
@click.option("--dry-run", is_flag=True, help="Show the plan; commit nothing.")
@pass_cli_context
def maintain_cmd(
    cli: CliContext,
    *,
    table: str,
    major_interval: float,
    no_major: bool,
    max_store_files: int | None,
    off_peak: bool | None,
    split_over: int,
    merge_under: int | None,
    max_manifests: int,
    no_manifest_rewrite: bool,
    no_purge: bool,
    dry_run: bool,
) -> None:
    """Run TABLE's compaction policy once: purge TTL, compact, split, merge, fold manifests."""
    from cellstore.jobs.maintain import maintain

    report = maintain(
        cli.warehouse().table(table),
        purge=not no_purge,
        major_interval_ms=None if no_major else int(major_interval * 24 * 3600 * 1000),
        max_store_files=max_store_files,
        off_peak=off_peak,
        split_over_bytes=split_over,
        merge_under_bytes=merge_under,
        max_manifests=None if no_manifest_rewrite else max_manifests,
        dry_run=dry_run,
    )
    _render(cli.output, _maintain_lines(table, report), report.to_dict())


COMMANDS = (compact_cmd, purge_ttl_cmd, maintain_cmd)

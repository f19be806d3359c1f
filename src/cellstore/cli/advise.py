r"""The ``advise`` command: row-key design advice before (or after) a load.

``cellstore advise TABLE INPUT... --mapping FILE`` builds the row keys a
``cellstore load`` of the inputs would build (same mapping options, same row-key spec and
salt) from a sample of records, and reports hot-spotting, monotonic and long keys and long
names, each with its fix. Without inputs it checks TABLE's stored data. For a table that
does not exist yet, ``--salt-buckets N`` / ``--regions N`` say how ``load --create`` would
make it. The report is text or (``--output json``) one JSON document; ``--strict`` exits
with 9 when there are warnings (as verify on problems).

The warehouse and the loader (pyarrow) are imported inside the command body only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.loadopts import InputFlags, input_options
from cellstore.cli.output import JsonOutput, Output

if TYPE_CHECKING:
    from cellstore.loader.advise import KeyAdvice

__all__ = ["COMMANDS", "advise_cmd", "render_advice"]


def _wrap(text: str, indent: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=100, initial_indent=indent, subsequent_indent=indent + "  ")


def render_advice(output: Output, advice: KeyAdvice) -> None:
    """Print key-design advice (text lines, or one JSON document)."""
    if isinstance(output, JsonOutput):
        click.echo(json.dumps(advice.to_dict(), indent=2))
        return
    from cellstore.core.keys import to_string_binary

    s = advice.summary
    what = {
        "input": "built from the input",
        "table": "sampled from the store files",
        "load": "sampled during the load",
    }[advice.source]
    title = f"table {advice.table}" if advice.table else "a new table"
    read = ""
    if s.records_read is not None:
        read = f" ({s.records_read:,} records read{', the whole input' if s.complete else ''})"
    lines = [f"Row-key design advice for {title}: {s.sampled_keys:,} row keys {what}{read}"]
    if s.sampled_keys:
        lines.append(
            f"key length: min {s.min_length}, mean {s.mean_length:.1f}, max {s.max_length} "
            f"bytes; {s.distinct_keys:,} distinct keys"
        )
    if s.increasing_share is not None and s.ordered_pairs:
        lines.append(
            f"input order: {s.increasing_share:.1%} of {s.ordered_pairs:,} neighbouring "
            "pairs of keys increase"
        )
    measure = "CELLS" if any(r.cells is not None for r in s.regions) else "KEYS"
    lines.append(f"{'REGION':<12} {'START':<20} {'END':<20} {measure:>10} {'SHARE':>7}")
    for r in s.regions:
        count = r.cells if r.cells is not None else r.keys
        lines.append(
            f"{r.region:<12} {to_string_binary(r.start)[:20]:<20} "
            f"{to_string_binary(r.end)[:20]:<20} {count:>10,} {r.share:>7.1%}"
        )
    if s.salt_buckets:
        shares = "  ".join(f"{i}: {x:.1%}" for i, x in enumerate(s.salt_buckets))
        lines += _wrap(f"salt buckets (share of sampled keys): {shares}", "")
    for f in advice.findings:
        lines += _wrap(f"{f.severity.upper()} {f.code}: {f.message}", "")
        lines += _wrap(f"fix: {f.fix}", "  ")
    warnings = len(advice.warnings)
    if advice.findings:
        lines.append(f"{len(advice.findings)} finding(s), {warnings} warning(s)")
    else:
        lines.append("no findings: the sampled keys spread well and are short")
    click.echo("\n".join(lines))


@click.command("advise")
@click.argument("table")
@click.argument("inputs", nargs=-1, metavar="[INPUT]...")
@input_options(load=False)
@click.option(
    "--salt-buckets",
    type=click.IntRange(1, 256),
    default=None,
    help="TABLE does not exist yet: check keys as a table salted into N buckets.",
)
@click.option(
    "--regions",
    type=click.IntRange(1, 10_000),
    default=None,
    help="TABLE does not exist yet: check keys as 'load --create --regions N' "
    "would split it (at the sample's key quantiles).",
)
@click.option(
    "--sample",
    "sample_keys",
    type=click.IntRange(1, 100_000_000),
    default=None,
    help="Row keys (input records) to sample at most (default 100000).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit with 9 (problems found, as verify) when there are warnings.",
)
@pass_cli_context
def advise_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    inputs: tuple[str, ...],
    input_flags: InputFlags,
    salt_buckets: int | None,
    regions: int | None,
    sample_keys: int | None,
    strict: bool,
) -> None:
    """Row-key design advice for loading INPUT files into TABLE, or for TABLE's data.

    Reports hot-spotting (share of keys per region and salt bucket), monotonically
    increasing keys, row keys over 100 bytes and long family and qualifier names, each
    with its fix. Exit status 0 (with --strict: 9 when there are warnings).

    \b
    Examples:
      cellstore advise ns:events 'events/*.csv' --mapping events.toml
      cellstore advise ns:new in.parquet --row-key id --column d:v=v --salt-buckets 16
      cellstore advise ns:events --output json
    """  # noqa: D301 (click's \b marker)
    from cellstore.errors import TableNotFoundError
    from cellstore.loader.advise import DEFAULT_SAMPLE_KEYS, advise_input

    sample = sample_keys or DEFAULT_SAMPLE_KEYS
    if not inputs and input_flags.input_given:
        raise click.UsageError("mapping and input options need INPUT files")
    if inputs and not input_flags.mapping_given:
        raise click.UsageError("give --mapping FILE, or --column (and --row-key) options")
    if salt_buckets is not None and regions is not None:
        raise click.UsageError("give --regions or --salt-buckets, not both")
    warehouse = cli_ctx.warehouse(missing_ok=True)
    exists = warehouse.exists(table)
    if exists and (salt_buckets is not None or regions is not None):
        raise click.UsageError(
            f"table {table} exists: --salt-buckets and --regions are for tables not yet created"
        )
    if not exists and not inputs:
        raise TableNotFoundError(
            f"table {table} does not exist; give INPUT files and a mapping to check the keys "
            "a load would build"
        )
    advice: KeyAdvice
    if not inputs:
        advice = warehouse.table(table).advise(sample_keys=sample)
    else:
        mapping, text, fmt, in_opts = input_flags.resolve()
        if exists:
            advice = warehouse.table(table).advise(
                list(inputs),
                mapping=mapping,
                sample_keys=sample,
                format=fmt,
                text=text,
                storage_options=in_opts,
            )
        else:
            advice = advise_input(
                list(inputs),
                mapping=mapping,
                salt_buckets=salt_buckets,
                regions=regions,
                sample_keys=sample,
                input_format=fmt,
                text=text,
                storage_options=in_opts,
            )
    render_advice(cli_ctx.output, advice)
    if strict and advice.warnings:
        from cellstore.errors import VerifyError

        click.get_current_context().exit(VerifyError.exit_code)  # a check found problems


#: The commands this module adds to the root group.
COMMANDS: tuple[click.Command, ...] = (advise_cmd,)

"""Table commands (HBase shell's DDL): create, describe, list, alter, drop, history.

Each command makes one library call on the warehouse and hands the result to the
renderer; the warehouse (and with it fsspec and pyarrow) is imported on first use.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from cellstore.cli.context import CliContext, pass_cli_context
from cellstore.cli.params import FAMILY, FAMILY_CHANGE, KEY_VALUE, PRINTABLE_KEY, FamilyChange
from cellstore.core.family import Family

__all__ = [
    "COMMANDS",
    "alter_cmd",
    "create_cmd",
    "describe_cmd",
    "drop_cmd",
    "history_cmd",
    "list_cmd",
]

_FAMILY_SPEC_HELP = (
    "NAME or NAME:KEY=VALUE,... with HBase's keys (any case): VERSIONS, MIN_VERSIONS, "
    "TTL (seconds or FOREVER), KEEP_DELETED_CELLS (TRUE/FALSE/TTL), COMPRESSION "
    "(ZSTD/SNAPPY/LZ4/GZ/NONE), BLOOMFILTER (ROW/NONE), BLOCKSIZE."
)


@click.command("create")
@click.argument("table")
@click.option(
    "--family",
    "families",
    type=FAMILY,
    multiple=True,
    required=True,
    help=f"A column family (repeatable): {_FAMILY_SPEC_HELP}",
)
@click.option(
    "--split",
    "splits",
    type=PRINTABLE_KEY,
    multiple=True,
    help="A split key in printable form, e.g. 'm' or '\\x80\\x00' (repeatable): "
    "N keys make N + 1 regions.",
)
@click.option(
    "--salt-buckets",
    type=int,
    default=None,
    help="Salt row keys with a leading bucket byte 0..N-1 and pre-split on it "
    "(Phoenix's SALT_BUCKETS; not with --split).",
)
@click.option(
    "--property",
    "properties",
    type=KEY_VALUE,
    multiple=True,
    help="A free-form table property (repeatable).",
)
@pass_cli_context
def create_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    families: tuple[Family, ...],
    splits: tuple[bytes, ...],
    salt_buckets: int | None,
    properties: tuple[tuple[str, str], ...],
) -> None:
    """Create TABLE ([namespace:]name) with its column families.

    \b
    Example:
      cellstore create ns:events --family d:VERSIONS=1,TTL=604800 --split m
    """  # noqa: D301 (click's \b marker keeps the example unwrapped)
    created = cli_ctx.warehouse(missing_ok=True).create_table(
        table,
        families=families,
        splits=list(splits) or None,
        salt_buckets=salt_buckets,
        properties=dict(properties),
    )
    cli_ctx.output.table_created(created.describe())


@click.command("describe")
@click.argument("table")
@click.option(
    "--version",
    type=click.IntRange(min=1),
    default=None,
    help="Describe this table version instead of the latest.",
)
@pass_cli_context
def describe_cmd(cli_ctx: CliContext, *, table: str, version: int | None) -> None:
    """Show TABLE's families, regions, files and last commit."""
    cli_ctx.output.describe_table(cli_ctx.warehouse().table(table, version=version).describe())


@click.command("list")
@pass_cli_context
def list_cmd(cli_ctx: CliContext) -> None:
    """List the tables in the warehouse."""
    cli_ctx.output.tables(cli_ctx.warehouse().list_tables())


def _stdin_is_interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


@click.command("drop")
@click.argument("table")
@click.option(
    "--purge",
    is_flag=True,
    help="Delete the table's files now (default: they stay until a vacuum, so readers "
    "that already opened the table can finish).",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@pass_cli_context
def drop_cmd(cli_ctx: CliContext, *, table: str, purge: bool, yes: bool) -> None:
    """Drop TABLE from the warehouse (asks first unless --yes)."""
    warehouse = cli_ctx.warehouse()
    handle = warehouse.table(table)
    name = str(handle.name)
    if not yes:
        if not _stdin_is_interactive():
            raise click.UsageError(
                f"refusing to drop table {name} without --yes (stdin is not a terminal)"
            )
        d = handle.describe()
        what = " and delete its files now" if purge else ""
        click.confirm(
            f"Drop table {name} (version {d.version}, {d.files} files, {d.cells} cells){what}?",
            abort=True,
            err=True,
        )
    warehouse.drop_table(table, purge=purge)
    cli_ctx.output.table_dropped(name, purged=purge)


def _merge_changes(changes: tuple[FamilyChange, ...]) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for change in changes:
        settings = merged.setdefault(change.name, {})
        repeated = sorted(set(settings) & set(change.settings))
        if repeated:
            raise click.BadParameter(
                f"family {change.name!r}: {', '.join(repeated)} set twice", param_hint="'--set'"
            )
        settings.update(change.settings)
    return merged


@click.command("alter")
@click.argument("table")
@click.option(
    "--add-family",
    "add_families",
    type=FAMILY,
    multiple=True,
    help=f"Add a column family (repeatable): {_FAMILY_SPEC_HELP}",
)
@click.option(
    "--drop-family",
    "drop_families",
    multiple=True,
    metavar="NAME",
    help="Drop a column family and its data (repeatable).",
)
@click.option(
    "--set",
    "changes",
    type=FAMILY_CHANGE,
    multiple=True,
    help="Change settings of an existing family, NAME:KEY=VALUE,... (repeatable), "
    "e.g. cf:VERSIONS=5,TTL=FOREVER.",
)
@click.option(
    "--property",
    "properties",
    type=KEY_VALUE,
    multiple=True,
    help="Set a table property (repeatable).",
)
@click.option(
    "--remove-property",
    "removed_properties",
    multiple=True,
    metavar="KEY",
    help="Remove a table property (repeatable).",
)
@pass_cli_context
def alter_cmd(
    cli_ctx: CliContext,
    *,
    table: str,
    add_families: tuple[Family, ...],
    drop_families: tuple[str, ...],
    changes: tuple[FamilyChange, ...],
    properties: tuple[tuple[str, str], ...],
    removed_properties: tuple[str, ...],
) -> None:
    """Change TABLE's families or properties in one commit.

    \b
    Example:
      cellstore alter ns:events --add-family m --set d:VERSIONS=5 --drop-family old
    """  # noqa: D301 (click's \b marker)
    if not (add_families or drop_families or changes or properties or removed_properties):
        raise click.UsageError(
            "nothing to alter: give --add-family, --drop-family, --set, --property or "
            "--remove-property"
        )
    props: dict[str, str | None] = dict.fromkeys(removed_properties)
    props.update(properties)
    altered = cli_ctx.warehouse().alter_table(
        table,
        add_families=add_families,
        drop_families=drop_families,
        modify_families=_merge_changes(changes),
        properties=props,
    )
    cli_ctx.output.table_altered(altered.describe())


@click.command("history")
@click.argument("table")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Show at most this many commits.",
)
@pass_cli_context
def history_cmd(cli_ctx: CliContext, *, table: str, limit: int | None) -> None:
    """Show TABLE's commits, newest first."""
    handle = cli_ctx.warehouse().table(table)
    cli_ctx.output.history(str(handle.name), handle.history(limit=limit))


#: The commands this module adds to the root group.
COMMANDS: tuple[click.Command, ...] = (
    create_cmd,
    describe_cmd,
    list_cmd,
    drop_cmd,
    alter_cmd,
    history_cmd,
)

"""The root ``cellstore`` group: global options, error mapping and command registration.

Adding commands: write them in a module of this package (one module per group of
commands, e.g. ``tables.py`` for DDL, ``cells.py`` for cell loads, ``reads.py`` for
scan/get/count/quickstart) as ``@click.command`` functions taking
:data:`~cellstore.cli.context.pass_cli_context`, list them in the module's ``COMMANDS``,
and add the module to :data:`COMMAND_MODULES` below. Import
pyarrow, dask, pandas, fsspec and :mod:`cellstore.warehouse` inside command bodies only,
so ``--help`` stays fast (a test checks it).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Final, NoReturn

import click

from cellstore.cli import admin, advise, cells, compaction, index, load, reads, regions, tables
from cellstore.cli.context import CliContext
from cellstore.cli.output import OUTPUT_FORMATS, OutputFormat, make_output
from cellstore.cli.params import STORAGE_OPTION
from cellstore.defaults import DEFAULT_ROOT
from cellstore.errors import CellstoreError

__all__ = ["COMMAND_MODULES", "DEFAULT_ROOT", "CellstoreGroup", "cli", "main"]


#: Modules whose ``COMMANDS`` are registered on the root group.
COMMAND_MODULES: Final = (tables, cells, load, advise, reads, regions, admin, compaction, index)


def exit_with_error(ctx: click.Context, error: BaseException, *, exit_code: int) -> NoReturn:
    """Print ``error: <message>`` as one line on stderr and exit with ``exit_code``."""
    message = " ".join(str(error).split()) or type(error).__name__
    click.echo(f"error: {message}", err=True)
    ctx.exit(exit_code)


class CellstoreGroup(click.Group):
    """A group that turns expected errors into one line on stderr and an exit code.

    :class:`~cellstore.errors.CellstoreError` exits with the error's ``exit_code``;
    ``OSError`` from the filesystem (permissions, unreachable storage) exits with 1.
    Anything else is a bug and keeps its traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand, mapping expected errors to exit codes."""
        try:
            return super().invoke(ctx)
        except CellstoreError as e:
            exit_with_error(ctx, e, exit_code=e.exit_code)
        except BrokenPipeError:
            # The reader went away (``cellstore scan ... | head``): stop quietly, as cat does.
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(0)
        except OSError as e:
            exit_with_error(ctx, e, exit_code=1)


@click.group(cls=CellstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    envvar="CELLSTORE_ROOT",
    default=DEFAULT_ROOT,
    show_default=True,
    show_envvar=True,
    metavar="URL",
    help="Warehouse root: a local path or an fsspec URL (s3://bucket/prefix, memory://wh).",
)
@click.option(
    "--storage-option",
    "storage_options",
    type=STORAGE_OPTION,
    multiple=True,
    help="fsspec option for the root's filesystem (repeatable). Values are parsed as JSON "
    'when they parse: client_kwargs=\'{"endpoint_url": "http://127.0.0.1:5000"}\'.',
)
@click.option(
    "--output",
    "output_format",
    type=click.Choice(OUTPUT_FORMATS),
    default="text",
    show_default=True,
    help="text (HBase-shell style) or one JSON document.",
)
@click.version_option(package_name="cellstore")
@click.pass_context
def cli(
    ctx: click.Context,
    *,
    root: str,
    storage_options: Sequence[tuple[str, Any]],
    output_format: OutputFormat,
) -> None:
    """cellstore: HBase tables as Parquet store files on any fsspec filesystem."""
    ctx.obj = CliContext(
        root=root,
        storage_options=dict(storage_options),
        output=make_output(output_format),
    )


for _module in COMMAND_MODULES:
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``cellstore``).

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).
    """
    cli.main(args=list(argv) if argv is not None else sys.argv[1:], prog_name="cellstore")

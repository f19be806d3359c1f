"""The root ``cellstore`` group: global options, error mapping and command registration.

Adding commands: write them in a module of this package (one module per group of
commands, e.g. ``tables.py`` for DDL, ``cells.py`` for cell loads, ``reads.py`` for
scan/get/count/quickstart) as ``@click.command`` functions taking
:data:`~cellstore.cli.context.pass_cli_context`, list them in the module's ``COMMANDS``,
and add the module to :data:`COMMAND_MODULES` below. Import
pyarrow, dask, pandas, fsspec and :mod:`cellstore.warehouse` inside command bodies only,
so ``--help`` stays fast (a test checks it).

Errors: every failure of every command is one line on stderr (``error: ...``; with
``--output json`` one JSON object, ``{"error": {"kind", "message", "exit_code"}}``) and an
exit code, one per kind of failure (:data:`EXIT_CODES`, :func:`describe_error`); ``--debug``
prints the traceback first. Storage-option values never appear in either (they may be
credentials).
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NoReturn

import click

from cellstore.cli import (
    admin,
    advise,
    compaction,
    hbase,
    hfile,
    index,
    load,
    load_cells,
    reads,
    regions,
    report,
    tables,
)
from cellstore.cli.context import CliContext
from cellstore.cli.output import OUTPUT_FORMATS, OutputFormat, make_output
from cellstore.cli.params import SECRETS_META_KEY, STORAGE_OPTION, redact
from cellstore.defaults import DEFAULT_ROOT
from cellstore.errors import CellstoreError

__all__ = [
    "COMMAND_MODULES",
    "DEFAULT_ROOT",
    "EXIT_CODES",
    "EXIT_STORAGE",
    "EXIT_UNEXPECTED",
    "CellstoreGroup",
    "cli",
    "describe_error",
    "error_document",
    "main",
]


#: Modules whose ``COMMANDS`` are registered on the root group.
COMMAND_MODULES: Final = (
    tables,
    load_cells,
    load,
    advise,
    reads,
    regions,
    admin,
    compaction,
    index,
    hfile,
    hbase,
    report,
)


#: Every exit code of the CLI: its kind (the ``kind`` of a JSON error) and what it means.
#: One code per kind of failure; README's CLI section shows this table (a test keeps the
#: two equal). Errors carry their code (:attr:`~cellstore.errors.CellstoreError.exit_code`);
#: click's usage errors exit with 2 as bad arguments do.
EXIT_CODES: Final[Mapping[int, tuple[str, str]]] = {
    1: (
        "storage",
        "storage failure: permission denied, unreachable object storage, a storage "
        "client's error (`storage error (EndpointConnectionError): ...`)",
    ),
    2: ("invalid-argument", "bad arguments, options, names or settings"),
    3: (
        "not-found",
        "something named does not exist: a table, snapshot, index, table version, the "
        "warehouse at `--root`, or a file to read (input, mapping, split keys, cells)",
    ),
    4: ("exists", "it exists already (table, snapshot)"),
    5: ("commit-conflict", "another writer changed the table first; nothing was committed"),
    6: ("corrupt", "unreadable or corrupt metadata or store file, or an unsupported format"),
    7: ("unsupported-filesystem", "a filesystem without exclusive create"),
    8: (
        "bad-record",
        "a bad input record (file, line, field and value named); nothing was committed",
    ),
    9: (
        "problems-found",
        "a check found problems (`verify`, `index verify`, `hfile verify`, `advise --strict`)",
    ),
    10: ("unexpected", "anything else: a bug (`--debug` prints the traceback)"),
}
#: Exit code of storage failures: ``OSError`` (permissions, missing paths, unreachable
#: storage) and the errors of storage clients that are not ``OSError`` (botocore's
#: ``EndpointConnectionError``, ``NoCredentialsError``, ...).
EXIT_STORAGE: Final = 1
#: Exit code of any other error: a bug (``--debug`` shows where).
EXIT_UNEXPECTED: Final = 10
#: Modules whose exceptions are storage-client failures (matched by name, so the CLI
#: imports none of them).
_STORAGE_MODULES: Final = (
    "botocore",
    "aiobotocore",
    "s3transfer",
    "boto3",
    "aiohttp",
    "requests",
    "urllib3",
    "google.auth",
    "google.api_core",
    "gcsfs",
    "azure",
    "adlfs",
    "fsspec",
    "s3fs",
)


def _in_storage_module(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in _STORAGE_MODULES)


def _is_storage_error(error: BaseException) -> bool:
    """An error of a storage client: its class, or the code that raised it, is theirs.

    The second case covers builtin errors a client raises for its configuration
    (``TypeError`` for an unknown storage option, ``ImportError`` for a missing s3fs or
    gcsfs, ``ValueError`` for an unknown protocol).
    """
    if any(_in_storage_module(getattr(c, "__module__", "") or "") for c in type(error).__mro__):
        return True
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return _in_storage_module(str(tb.tb_frame.f_globals.get("__name__", "")))


def describe_error(error: BaseException) -> tuple[str, int]:
    """The one-line message and the exit code the CLI gives ``error``.

    - :class:`~cellstore.errors.CellstoreError`: its message and its ``exit_code``;
    - ``OSError``: its message, :data:`EXIT_STORAGE`;
    - errors of storage clients (botocore and friends, recognised by the module of the
      class or of the code that raised it, so none is imported here):
      ``storage error (<class>): <message>``, :data:`EXIT_STORAGE`;
    - anything else: ``unexpected <class>: <message>`` plus a hint to rerun with
      ``--debug``, :data:`EXIT_UNEXPECTED`.

    >>> describe_error(FileNotFoundError("no such file: x"))
    ('no such file: x', 1)
    """
    text = " ".join(str(error).split())
    name = type(error).__name__
    if isinstance(error, CellstoreError):
        return text or name, error.exit_code
    storage = _is_storage_error(error)
    if isinstance(error, OSError) and not storage:
        return text or name, EXIT_STORAGE
    if storage:
        label = f"storage error ({name})"
        return (f"{label}: {text}" if text else label), EXIT_STORAGE
    detail = f"{name}: {text}" if text else name
    return f"unexpected {detail} (run with --debug for the traceback)", EXIT_UNEXPECTED


def error_document(message: str, exit_code: int) -> dict[str, Any]:
    """The JSON form of an error: ``{"error": {"kind", "message", "exit_code"}}``.

    >>> error_document("table t does not exist in wh", 3)["error"]["kind"]
    'not-found'
    """
    kind = EXIT_CODES.get(exit_code, EXIT_CODES[EXIT_UNEXPECTED])[0]
    return {"error": {"kind": kind, "message": message, "exit_code": exit_code}}


def exit_with_error(
    ctx: click.Context,
    error: BaseException,
    *,
    exit_code: int | None = None,
    debug: bool = False,
    hidden: Iterable[str] = (),
    as_json: bool = False,
) -> NoReturn:
    """Print ``error: <message>`` as one line on stderr and exit with its exit code.

    Args:
        ctx: The click context (to exit through).
        error: The exception.
        exit_code: Overrides :func:`describe_error`'s code.
        debug: Print the traceback first.
        hidden: Texts (storage-option values) to replace with ``***`` in both.
        as_json: Print :func:`error_document` as one line on stderr instead (``--output
            json``).
    """
    message, code = describe_error(error)
    code = code if exit_code is None else exit_code
    if debug:
        trace = "".join(traceback.format_exception(error))
        click.echo(redact(trace, hidden).rstrip("\n"), err=True)
    if as_json:
        click.echo(json.dumps(error_document(redact(message, hidden), code)), err=True)
    else:
        click.echo(f"error: {redact(message, hidden)}", err=True)
    ctx.exit(code)


#: Global options that take a value, and global flags: also accepted after the subcommand.
_GLOBAL_VALUE_OPTIONS: Final = frozenset({"--root", "--storage-option", "--output"})
_GLOBAL_FLAGS: Final = frozenset({"--debug"})


def hoist_global_options(args: Sequence[str]) -> list[str]:
    """Move global options given after the subcommand to before it.

    ``cellstore list --output json`` then means ``cellstore --output json list``, as users of
    other CLIs expect. Only exact option tokens move (``--output json``, ``--output=json``,
    ``--debug``), never anything after ``--``; no subcommand defines an option of these names.

    >>> hoist_global_options(["scan", "t", "--output", "json", "--limit", "3"])
    ['--output', 'json', 'scan', 't', '--limit', '3']
    >>> hoist_global_options(["--root", "r", "list", "--debug"])
    ['--root', 'r', '--debug', 'list']
    """
    head: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):  # the root group's own options
        takes_value = args[i] in _GLOBAL_VALUE_OPTIONS
        head.extend(args[i : i + 2] if takes_value else args[i : i + 1])
        i += 2 if takes_value else 1
    moved: list[str] = []
    kept: list[str] = []
    rest = list(args[i:])
    j = 0
    while j < len(rest):
        token = rest[j]
        if token == "--":
            kept.extend(rest[j:])
            break
        if token in _GLOBAL_VALUE_OPTIONS and j + 1 < len(rest):
            moved.extend(rest[j : j + 2])
            j += 2
        elif token in _GLOBAL_FLAGS or token.split("=", 1)[0] in _GLOBAL_VALUE_OPTIONS:
            moved.append(token)
            j += 1
        else:
            kept.append(token)
            j += 1
    return head + moved + kept


class CellstoreGroup(click.Group):
    """A group that turns every error into one line on stderr and an exit code.

    :class:`~cellstore.errors.CellstoreError` exits with the error's ``exit_code``;
    storage failures (``OSError``, and storage clients' own errors such as botocore's
    ``EndpointConnectionError``) with :data:`EXIT_STORAGE`; anything else (a bug) with
    :data:`EXIT_UNEXPECTED`, see :func:`describe_error`. ``--debug`` prints the traceback
    as well. Values given with ``--storage-option`` (or any option of that type) are
    replaced by ``***`` in both. click's own exceptions (usage errors, ``--help``,
    ``ctx.exit``) pass through unchanged.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse, accepting global options after the subcommand too."""
        if ctx.parent is None:
            args = hoist_global_options(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand, mapping every error to an exit code."""
        try:
            return super().invoke(ctx)
        except click.exceptions.ClickException as e:
            if not _json_errors(ctx):
                raise
            message = " ".join(e.format_message().split())
            click.echo(json.dumps(error_document(message, e.exit_code)), err=True)
            ctx.exit(e.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (``cellstore scan ... | head``): stop quietly, as cat does.
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(0)
        except Exception as e:
            exit_with_error(
                ctx,
                e,
                debug=bool(ctx.params.get("debug")),
                hidden=ctx.meta.get(SECRETS_META_KEY, ()),
                as_json=_json_errors(ctx),
            )


def _json_errors(ctx: click.Context) -> bool:
    """Whether ``--output json`` was given (errors then print as JSON objects).

    Read from the parsed options, so that errors before the group's callback (an unknown
    command) print as JSON too.
    """
    return ctx.params.get("output_format") == "json"


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
@click.option(
    "--debug",
    is_flag=True,
    envvar="CELLSTORE_DEBUG",
    show_envvar=True,
    help="On an error, print its traceback too (storage-option values stay hidden).",
)
@click.version_option(package_name="cellstore")
@click.pass_context
def cli(
    ctx: click.Context,
    *,
    root: str,
    storage_options: Sequence[tuple[str, Any]],
    output_format: OutputFormat,
    debug: bool,
) -> None:
    """cellstore: HBase tables as Parquet store files on any fsspec filesystem."""
    _plain_warnings()
    ctx.obj = CliContext(
        root=root,
        storage_options=dict(storage_options),
        output=make_output(output_format),
        debug=debug,
    )


for _module in COMMAND_MODULES:
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def _plain_warnings() -> None:
    """Show cellstore's warnings as ``warning: MESSAGE`` lines on stderr, not Python's form."""
    import warnings

    from cellstore.errors import CellstoreWarning

    previous = warnings.showwarning
    if getattr(previous, "_cellstore", False):
        return

    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(category, type) and issubclass(category, CellstoreWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            previous(message, category, *args, **kwargs)

    show._cellstore = True  # type: ignore[attr-defined]
    warnings.showwarning = show


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``cellstore``).

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).
    """
    cli.main(args=list(argv) if argv is not None else sys.argv[1:], prog_name="cellstore")

"""Click options in one line each: a choice with its default shown, a count, an optional value.

Commands declare the common option forms through these instead of spelling out a
``click.option`` block per flag; the value sets of HBase's HFile settings are named once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import click

__all__ = [
    "HFILE_BLOOMS",
    "HFILE_COMPRESSIONS",
    "HFILE_ENCODINGS",
    "READ_THREADS_HELP",
    "WRITE_THREADS_HELP",
    "choice_option",
    "count_option",
    "threads_option",
    "value_option",
]

F = TypeVar("F", bound=Callable[..., Any])

#: HFile compression codecs, as ``--compression`` takes them.
HFILE_COMPRESSIONS: Final = ("none", "gz", "snappy", "lz4", "zstd")
#: HFile data block encodings, as ``--encoding`` takes them.
HFILE_ENCODINGS: Final = ("none", "prefix", "diff", "fast_diff", "row_index_v1")
#: HFile Bloom filter types, as ``--bloom`` takes them.
HFILE_BLOOMS: Final = ("row", "rowcol", "none")
#: ``--threads`` of the commands reading HFiles (``HFileReadOptions.threads``).
READ_THREADS_HELP: Final = (
    "HFile blocks decompressed and decoded on N threads (default: the cores, at most 2)."
)
#: ``--threads`` of the commands writing HFiles (``HFileOptions.threads``).
WRITE_THREADS_HELP: Final = (
    "HFile data blocks encoded and compressed on N threads (default: the cores, at most 2; "
    "the files' bytes do not depend on it)."
)


def choice_option(
    flag: str, choices: Sequence[str], *, default: str, help: str
) -> Callable[[F], F]:
    """``flag`` takes one of ``choices`` (in that order in ``--help``); ``default`` is shown."""
    return click.option(
        flag, type=click.Choice(list(choices)), default=default, show_default=True, help=help
    )


def count_option(flag: str, *, metavar: str, help: str) -> Callable[[F], F]:
    """``flag`` takes a whole number of at least 1; None when it is not given."""
    return click.option(flag, type=click.IntRange(min=1), default=None, metavar=metavar, help=help)


def value_option(
    flag: str, *, metavar: str | None = None, help: str, type: Any = None
) -> Callable[[F], F]:
    """``flag`` takes one value (of click type ``type``, text by default); None when not given."""
    return click.option(flag, type=type, default=None, metavar=metavar, help=help)


def threads_option(*, help: str) -> Callable[[F], F]:
    """``--threads N`` (at least 1; None when not given): the HFile reader's or writer's threads.

    What ``hfile cat``/``hfile write``, the ``hbase`` commands and ``load --hfile-output``
    take, handed on as the ``threads`` of ``HFileReadOptions`` or ``HFileOptions``.
    """
    return click.option(
        "--threads", type=click.IntRange(min=1), default=None, metavar="N", help=help
    )

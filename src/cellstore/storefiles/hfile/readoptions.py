"""Every option of reading an HFile's cells, once: :class:`HFileReadOptions`.

One frozen object says which cells of an HFile are read and how:
:func:`~cellstore.hbase.read_hfile`, :func:`~cellstore.hbase.iter_hfile_batches` and
:func:`~cellstore.hbase.read_hfiles` take it (or its fields as keyword overrides,
:class:`HFileReadKwargs`), and :meth:`HFileReadOptions.batch_kwargs` hands it to
:meth:`~cellstore.storefiles.hfile.reader.HFileReader.iter_batches`.

Adding a read option: a field here (and in :class:`HFileReadKwargs`, and in
:meth:`HFileReadOptions.batch_kwargs` when the reader acts on it), the reader code that
acts on it (``reader.py``/``batches.py``), and the CLI flag, if any (``cli/hfile.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Final, TypedDict, get_args

from cellstore.errors import InvalidArgumentError
from cellstore.storefiles.hfile.batches import OnCorrupt

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_THREADS",
    "HFileReadKwargs",
    "HFileReadOptions",
    "Row",
    "read_options",
    "row_bytes",
]

#: Decoded bytes of data blocks decoded together (one Arrow batch per group).
DEFAULT_BATCH_BYTES: Final = 16 << 20
#: Batches decoded at once by default: the machine's cores, at most 2 (one batch is
#: consumed while the next decode; the codecs and kernels release the GIL).
DEFAULT_THREADS: Final = max(1, min(2, os.cpu_count() or 1))

#: A row key: bytes, or text (encoded as UTF-8).
Row = bytes | str


def row_bytes(row: Row | None) -> bytes | None:
    """A row key as bytes (text is encoded as UTF-8); None stays None.

    >>> row_bytes("r1"), row_bytes(b"r2"), row_bytes(None)
    (b'r1', b'r2', None)
    """
    if row is None:
        return None
    return row.encode("utf-8") if isinstance(row, str) else bytes(row)


@dataclass(frozen=True, kw_only=True)
class HFileReadOptions:
    """Which cells of an HFile are read, and how (validated on construction).

    Rows given as text are kept as their UTF-8 bytes and ``columns`` as a tuple, so the
    options stay hashable and compare by value.

    Attributes:
        columns: Columns to return (default: row, family, qualifier, ts, type, value and
            the optional columns asked for).
        start_row: First row to return (inclusive); the index is used to skip blocks.
        stop_row: Row to stop before (exclusive).
        with_seq_id: Add ``seq_id``, the cells' memstore timestamps (0 when absent).
        with_tags: Add ``tags``, the raw tag records (empty when absent).
        batch_bytes: Bytes of cells (as they decode, unencoded and uncompressed) per
            batch: the memory bound of one batch. The on-disk bytes grouped into a batch
            are this divided by the file's expansion (estimated from its trailer and
            FileInfo), so a SNAPPY or FAST_DIFF file gives batches of about the same
            cells as a NONE file.
        on_corrupt: ``"raise"`` on a damaged data block, or ``"skip"`` its cells.
        threads: Batches read, verified, decompressed and decoded at once on a thread
            pool (default :data:`DEFAULT_THREADS`: the machine's cores, at most 2; 1 reads
            in the calling thread). Memory holds up to this many batches. Results and
            errors do not depend on it: an error in a worker comes out of the iterator as
            the same typed error naming the file and block.

    Raises:
        InvalidArgumentError: an ``on_corrupt`` other than ``"raise"`` or ``"skip"``, a
            ``batch_bytes`` or ``threads`` below 1.
    """

    columns: Sequence[str] | None = None
    start_row: Row | None = None
    stop_row: Row | None = None
    with_seq_id: bool = False
    with_tags: bool = False
    batch_bytes: int = DEFAULT_BATCH_BYTES
    on_corrupt: OnCorrupt = "raise"
    threads: int = DEFAULT_THREADS

    def __post_init__(self) -> None:
        if self.on_corrupt not in get_args(OnCorrupt):
            raise InvalidArgumentError(
                f"on_corrupt {self.on_corrupt!r} is not one of {', '.join(get_args(OnCorrupt))}"
            )
        for name in ("batch_bytes", "threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"HFile read {name} must be an int >= 1, not {value!r}")
        if self.columns is not None and not isinstance(self.columns, tuple):
            object.__setattr__(self, "columns", tuple(self.columns))
        for name in ("start_row", "stop_row"):
            object.__setattr__(self, name, row_bytes(getattr(self, name)))

    @property
    def start(self) -> bytes | None:
        """``start_row`` as bytes."""
        return row_bytes(self.start_row)

    @property
    def stop(self) -> bytes | None:
        """``stop_row`` as bytes."""
        return row_bytes(self.stop_row)

    def batch_kwargs(self) -> dict[str, Any]:
        """These options as keywords of ``HFileReader.iter_batches`` (and ``read``)."""
        return {
            "start_row": self.start,
            "stop_row": self.stop,
            "columns": list(self.columns) if self.columns is not None else None,
            "with_seq_id": self.with_seq_id,
            "with_tags": self.with_tags,
            "batch_bytes": self.batch_bytes,
            "on_corrupt": self.on_corrupt,
            "threads": self.threads,
        }


class HFileReadKwargs(TypedDict, total=False):
    """:class:`HFileReadOptions`' fields as keyword overrides (same names and types)."""

    columns: Sequence[str] | None
    start_row: Row | None
    stop_row: Row | None
    with_seq_id: bool
    with_tags: bool
    batch_bytes: int
    on_corrupt: OnCorrupt
    threads: int


def read_options(
    options: HFileReadOptions | None, overrides: Mapping[str, Any], *, caller: str = "read_hfile"
) -> HFileReadOptions:
    """``options`` (default: all defaults) with ``overrides`` replacing its fields.

    What ``read_hfile(path, options, **overrides)`` and its siblings do first.

    Raises:
        TypeError: ``options`` that is not an :class:`HFileReadOptions`, or an override
            that is not a read option (as for an unknown keyword argument).
        InvalidArgumentError: an invalid option.
    """
    if options is not None and not isinstance(options, HFileReadOptions):
        raise TypeError(
            f"{caller}() takes an HFileReadOptions (or keyword options), "
            f"not {type(options).__name__}"
        )
    unknown = sorted(set(overrides) - {f.name for f in fields(HFileReadOptions)})
    if unknown:
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    base = options if options is not None else HFileReadOptions()
    return replace(base, **overrides) if overrides else base

"""The exception hierarchy: one root, subclasses that also inherit the builtin they refine.

Every error raised by cellstore on purpose is a :class:`CellstoreError`. Subclasses also
inherit the builtin exception they refine (``ValueError``, ``FileNotFoundError``, ...), so
code that already catches the builtin keeps working. The CLI maps each class to an exit code
through :attr:`CellstoreError.exit_code`.
"""

from __future__ import annotations


class CellstoreError(Exception):
    """Root of every error cellstore raises on purpose."""

    #: Process exit code the CLI uses for this error (every subclass names its kind's
    #: code; 10, "unexpected", is for one that does not).
    exit_code: int = 10


class InvalidArgumentError(CellstoreError, ValueError):
    """An argument or setting is outside what HBase (and so cellstore) accepts."""

    exit_code = 2


class InvalidNameError(InvalidArgumentError):
    """A table, namespace or family name breaks HBase's naming rules (R15.3, R16.3)."""


class InvalidFamilyError(InvalidArgumentError):
    """A column-family setting is invalid (R15.2), or a family is unknown to the table."""


class InvalidRowRangeError(InvalidArgumentError):
    """A row range, row key or split key is invalid (empty, too long, unordered)."""


class BadCellError(InvalidArgumentError):
    """A cell handed to a write is invalid; the message names the record and the field.

    Attributes:
        record: Zero-based index of the first offending record in the input.
        field: The offending field (``row``, ``family``, ``qualifier``, ``ts``, ``type``,
            ``value``).
    """

    def __init__(
        self, message: str, *, record: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.record = record
        self.field = field


class TableNotFoundError(CellstoreError, FileNotFoundError):
    """No table of that name (or no such version of it) exists in the warehouse."""

    exit_code = 3


class InputNotFoundError(InvalidArgumentError, FileNotFoundError):
    """A file the caller named to read does not exist.

    A load's input (or a glob matching none), a mapping file, a split-key file, a raw
    cells file.

    Also an :class:`InvalidArgumentError` (as it was before it had its own class) and a
    ``FileNotFoundError``; the CLI exits with 3, as for every named thing not found.
    """

    exit_code = 3


class WarehouseNotFoundError(CellstoreError, FileNotFoundError):
    """No warehouse exists at the root a read or change names.

    No table was ever created there; creating a table starts one.
    """

    exit_code = 3


class TableExistsError(CellstoreError, FileExistsError):
    """A table of that name already exists."""

    exit_code = 4


class CommitConflictError(CellstoreError):
    """A commit could not be applied after retrying, or its base no longer holds.

    Raised when another writer changed the table in a way this commit cannot be re-applied
    on (for example its input files are no longer live), or when the retry budget ran out.
    Nothing of the failed commit is visible.
    """

    exit_code = 5


class FormatVersionError(CellstoreError, ValueError):
    """A metadata or store file has a format version this release cannot read."""

    exit_code = 6


class CorruptFileError(CellstoreError, ValueError):
    """A metadata or store file cannot be parsed or fails its checks."""

    exit_code = 6


class MissingFileError(CorruptFileError, FileNotFoundError):
    """A store file the manifest lists is gone (deleted, or never fully copied).

    The message names the file, the table version and how to repair: ``cellstore verify``
    lists every damaged file; ``cellstore restore`` brings back a snapshot.
    """


class UnsupportedFormatError(FormatVersionError):
    """A file is of a kind or version cellstore recognises but cannot read.

    For example an HBase HFile v1, an encrypted HFile, or a codec without a maintained
    Python library (LZO). The message names the file and what it is.
    """


class UnsupportedFilesystemError(CellstoreError, OSError):
    """The filesystem cannot honour exclusive create, so commits would not be safe."""

    exit_code = 7


class BadRecordError(BadCellError):
    """An input record of a bulk load cannot be loaded.

    The message names the source (file, or in-memory frame and partition), the line (text
    inputs) or record (zero-based, other inputs), the field and the reason.

    Attributes:
        source: The input file's URL, or a label for in-memory input.
        line: One-based line in a text file (CSV, TSV, JSON lines), or None.
        reason: Why the record is bad.
    """

    exit_code = 8

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        record: int | None = None,
        field: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message, record=record, field=field)
        self.source = source
        self.line = line
        self.reason = reason


class RegionsChangedError(CommitConflictError):
    """The table's regions changed (split or merge) between a load's planning and commit.

    The bulk loader catches it and re-routes its files to the new regions before
    committing again.
    """


class JobConflictError(CommitConflictError):
    """A batch job's inputs changed underneath it (another job replaced them).

    Nothing of the job became visible; running it again works on the new state.
    """


class VerifyError(CellstoreError):
    """``verify`` found problems in a table (the report lists them)."""

    exit_code = 9


class SnapshotNotFoundError(CellstoreError, LookupError):
    """A table has no snapshot of that name."""

    exit_code = 3


class SnapshotExistsError(CellstoreError, ValueError):
    """A table already has a snapshot of that name."""

    exit_code = 4


class CellstoreWarning(UserWarning):
    """Root of the warnings cellstore emits (filter them with this category)."""


class KeyDesignWarning(CellstoreWarning):
    """A load's row keys look like a design problem (hot-spotting, monotonic or long keys).

    ``Table.load`` emits one per problem found in a sample of the load's keys; the load
    report's ``warnings`` hold the same findings, and ``cellstore advise`` explains them.
    """

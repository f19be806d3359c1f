"""Names, validated by HBase's rules (hbase-semantics R15.3, R16.3) or a safe character set.

Table and family names follow HBase's rules; load ids, snapshot names and index names have
their own rules below. Names also become path segments under the warehouse root (table
names, families, load ids in file names), so anything that could escape the root
(``..``, ``/``, NUL) is refused by the same rules, and
:mod:`cellstore.storefiles.layout` refuses it once more where paths are built.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from cellstore.errors import InvalidNameError

__all__ = [
    "DEFAULT_NAMESPACE",
    "MAX_LOAD_ID_LENGTH",
    "SYSTEM_NAMESPACE",
    "TableName",
    "validate_family_name",
    "validate_index_name",
    "validate_load_id",
    "validate_snapshot_name",
]

#: The namespace of a table name given without ``namespace:``.
DEFAULT_NAMESPACE: Final = "default"
#: HBase's system namespace; user tables may not live there.
SYSTEM_NAMESPACE: Final = "hbase"
_MAX_NAME_BYTES: Final = 255
_MAX_FAMILY_BYTES: Final = 127
#: Longest load id: file names add a nonce and counters to it (and ``.report.json``),
#: and must stay below the 255-byte name limit of common filesystems.
MAX_LOAD_ID_LENGTH: Final = 128
#: Load ids (and job ids): ASCII letters, digits, '_', '-', '.', not starting with '.'.
_LOAD_ID: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
#: Snapshot names: HBase's table-qualifier rules (letters of any alphabet, digits, '_',
#: '-', '.'), not starting with '.' or '-'.
_SNAPSHOT_NAME: Final = re.compile(r"[^\W][\w.-]*")
#: Index names: ASCII letters, digits, '_', '-', '.', not starting with '.' or '-'.
_INDEX_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _is_word_char(ch: str) -> bool:
    # Java's \p{L} (any letter) or \p{Digit} (decimal digit) or '_' (R16.3).
    return ch == "_" or ch.isdecimal() or unicodedata.category(ch).startswith("L")


def _check_namespace(ns: str, full: str) -> None:
    if not ns:
        raise InvalidNameError(f"table name {full!r}: namespace is empty")
    bad = [c for c in ns if not _is_word_char(c)]
    if bad:
        raise InvalidNameError(
            f"table name {full!r}: namespace {ns!r} may only contain letters, digits and '_' "
            f"(found {bad[0]!r})"
        )


def _check_qualifier(q: str, full: str) -> None:
    if not q:
        raise InvalidNameError(f"table name {full!r}: table qualifier is empty")
    if q[0] in ".-":
        raise InvalidNameError(f"table name {full!r}: table qualifier may not start with {q[0]!r}")
    bad = [c for c in q if not (_is_word_char(c) or c in ".-")]
    if bad:
        raise InvalidNameError(
            f"table name {full!r}: table qualifier {q!r} may only contain letters, digits, "
            f"'_', '-' and '.' (found {bad[0]!r})"
        )


@dataclass(frozen=True, order=True)
class TableName:
    """A validated ``namespace:qualifier`` table name (R16.3).

    Attributes:
        namespace: Letters, digits and '_' (any alphabet); ``default`` when not given.
        qualifier: Letters, digits, '_', '-', '.'; not starting with '.' or '-'.
    """

    namespace: str
    qualifier: str

    @classmethod
    def parse(cls, name: str | TableName) -> TableName:
        """Parse and validate ``[namespace:]qualifier``.

        Raises:
            InvalidNameError: if the name breaks HBase's rules, names the reserved ``hbase``
                namespace, or is longer than 255 bytes.
        """
        if isinstance(name, TableName):
            return name
        if not isinstance(name, str):
            raise InvalidNameError(f"table name must be a string, not {type(name).__name__}")
        if len(name.encode("utf-8")) > _MAX_NAME_BYTES:
            raise InvalidNameError(f"table name {name[:40]!r}...: longer than 255 bytes")
        if name.count(":") > 1:
            raise InvalidNameError(f"table name {name!r}: at most one ':' allowed")
        ns, _, q = name.rpartition(":")
        if ":" not in name:
            ns = DEFAULT_NAMESPACE
        _check_namespace(ns, name)
        _check_qualifier(q, name)
        for part in (ns, q):
            if part == "zookeeper":
                raise InvalidNameError(f"table name {name!r}: 'zookeeper' is reserved")
        if ns == SYSTEM_NAMESPACE:
            raise InvalidNameError(
                f"table name {name!r}: namespace 'hbase' is reserved for system tables"
            )
        return cls(ns, q)

    def __str__(self) -> str:
        if self.namespace == DEFAULT_NAMESPACE:
            return self.qualifier
        return f"{self.namespace}:{self.qualifier}"

    @property
    def full(self) -> str:
        """``namespace:qualifier`` always including the namespace."""
        return f"{self.namespace}:{self.qualifier}"


def validate_family_name(name: str) -> str:
    r"""Validate a column-family name (R15.3) and return it.

    Raises:
        InvalidNameError: if the name is empty, starts with '.', contains ':', '\\', '/' or
            an ISO control character, is ``recovered.edits``, or exceeds 127 UTF-8 bytes.
    """
    if not isinstance(name, str):
        raise InvalidNameError(f"family name must be a string, not {type(name).__name__}")
    if not name:
        raise InvalidNameError("family name is empty")
    if name.startswith("."):
        raise InvalidNameError(f"family name {name!r} may not start with '.'")
    for ch in name:
        if ch in ":\\/" or unicodedata.category(ch) == "Cc":
            raise InvalidNameError(f"family name {name!r} may not contain {ch!r}")
    if name == "recovered.edits":
        raise InvalidNameError("family name 'recovered.edits' is reserved")
    if len(name.encode("utf-8")) > _MAX_FAMILY_BYTES:
        raise InvalidNameError(f"family name {name[:40]!r}: longer than 127 bytes")
    return name


def _shown(name: str) -> str:
    """A name for an error message, cut short when it is long."""
    return repr(name) if len(name) <= 60 else f"{name[:40]!r}..."


def validate_load_id(load_id: str) -> str:
    """Validate a load id (or job id) and return it.

    Load ids name files (``data/.../<load-id>-....parquet``,
    ``_loads/<load-id>.report.json``), so they are restricted to a safe character set.

    >>> validate_load_id("users-2024-06-01")
    'users-2024-06-01'

    Raises:
        InvalidNameError: if the id is not a string, is empty, longer than 128
            characters, starts with '.', or has a character other than ASCII letters,
            digits, '_', '-' and '.'.
    """
    if isinstance(load_id, str) and not load_id:
        raise InvalidNameError("load id is empty")
    return _token(
        "load id",
        load_id,
        size=len,
        limit=MAX_LOAD_ID_LENGTH,
        unit="characters",
        pattern=_LOAD_ID,
        rule="use ASCII letters, digits, '_', '-' and '.', not starting with '.'",
    )


def validate_snapshot_name(name: str) -> str:
    """Validate a snapshot name (HBase's table-qualifier rules) and return it.

    Raises:
        InvalidNameError: if the name is not a string, is empty, starts with '.' or '-',
            has a character other than letters, digits, '_', '-' and '.', or exceeds 255
            UTF-8 bytes.
    """
    return _token(
        "snapshot name",
        name,
        size=lambda n: len(n.encode("utf-8")),
        limit=_MAX_NAME_BYTES,
        unit="bytes",
        pattern=_SNAPSHOT_NAME,
        rule="use letters, digits, '_', '-' and '.', not starting with '-' or '.'",
    )


def validate_index_name(name: str) -> str:
    """Validate a secondary-index name and return it.

    Raises:
        InvalidNameError: if the name is not a string, is empty, starts with '.' or '-',
            has a character other than ASCII letters, digits, '_', '-' and '.', or exceeds
            255 characters.
    """
    return _token(
        "index name",
        name,
        size=len,
        limit=_MAX_NAME_BYTES,
        unit="characters",
        pattern=_INDEX_NAME,
        rule="use letters, digits, '_', '-' and '.', not starting with '-' or '.'",
    )


def _token(
    kind: str,
    name: object,
    *,
    size: Callable[[str], int],
    limit: int,
    unit: str,
    pattern: re.Pattern[str],
    rule: str,
) -> str:
    """``name`` if it is a string of at most ``limit`` (``size``) matching ``pattern``.

    Raises:
        InvalidNameError: ``<kind> must be a string``, ``<kind> <name>: longer than
            <limit> <unit>`` or ``<kind> <name>: <rule>``.
    """
    if not isinstance(name, str):
        raise InvalidNameError(f"{kind} must be a string, not {type(name).__name__}")
    if size(name) > limit:
        raise InvalidNameError(f"{kind} {_shown(name)}: longer than {limit} {unit}")
    if not pattern.fullmatch(name):
        raise InvalidNameError(f"{kind} {_shown(name)}: {rule}")
    return name

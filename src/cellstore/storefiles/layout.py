"""Where a table's files live: the one place that turns names into paths (docs/format.md §3).

Paths relative to a table directory (``<root>/<namespace>/<qualifier>/<table-uuid>``)::

    data/<region-id>/<quote(family)>/<stem>.parquet    store files
    _loads/<load-id>.report.json                       bulk-load reports
    _loads/<load-id>.bad.jsonl                         records a bulk load skipped

and, outside any table, HBase's bulk-load output (``completebulkload``'s input)::

    <output dir>/<family>/<32 lowercase hex>          HFiles (:func:`bulkload_file_relpath`)

Two directions, both refusing anything that leaves where it belongs:

- **Writing**: :func:`store_file_relpath` (and :func:`store_dir_relpath`,
  :func:`report_file_name`, :func:`bad_records_file_name`) build names from a region id,
  a family and a file stem or load id. Each part must be one safe path segment, so the
  result never leaves the table directory; a bad part raises
  :class:`~cellstore.errors.InvalidNameError` before anything is written.
- **Linking**: :func:`clone_link` builds a clone's entry for a file of its source table
  (``../../../<source location>/<path>``, section 3.2); :func:`is_clone_link` says whether
  an entry is such a link (and a valid one).
- **Reading**: :func:`entry_path` resolves a manifest entry's ``path`` against the table
  directory. A path is relative, has no empty or ``.`` segments, and uses ``..`` only as
  a clone's link ``../../../<namespace>/<qualifier>/<uuid>/<file>`` (section 3.2), which
  stays inside the warehouse root. Anything else (``/etc/x``, ``s3://other/x``,
  ``../../victim.parquet``, ``../../../../x``) raises
  :class:`~cellstore.errors.CorruptFileError` naming the table version and the path;
  :func:`entry_path_problem` says why without raising (``verify`` reports it).

The checks are lexical: a table directory is always exactly three levels below the root,
so they need neither the root nor the filesystem.
"""

from __future__ import annotations

import posixpath
import re
from typing import Final
from urllib.parse import quote

from cellstore.core.names import validate_family_name, validate_load_id
from cellstore.errors import CorruptFileError, InvalidArgumentError, InvalidNameError
from cellstore.fs import join

__all__ = [
    "DATA_DIR",
    "LOADS_DIR",
    "TABLE_DEPTH",
    "bad_records_file_name",
    "bulkload_file_relpath",
    "clone_link",
    "entry_path",
    "entry_path_problem",
    "is_clone_link",
    "loads_dir",
    "report_file_name",
    "store_dir_relpath",
    "store_file_relpath",
    "table_dir",
]

#: Store files live under ``<table dir>/data/``.
DATA_DIR: Final = "data"
#: Load reports and bad-record files live under ``<table dir>/_loads/``.
LOADS_DIR: Final = "_loads"
#: How many directory levels a table directory is below the root (``ns/qualifier/uuid``).
TABLE_DEPTH: Final = 3
#: Store-file suffix.
_SUFFIX: Final = ".parquet"
#: Longest file or directory name written (common filesystems allow 255 bytes).
_MAX_SEGMENT_BYTES: Final = 255
#: Region ids and file stems: ASCII letters, digits, '_', '-', '.', not starting with '.'.
_TOKEN: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_LINK: Final = "../../../<namespace>/<qualifier>/<uuid>/..."
#: Bulk-load HFile names: 32 lowercase hex digits, as ``HFileOutputFormat2`` names them.
_HFILE_NAME: Final = re.compile(r"[0-9a-f]{32}")


def _token(kind: str, value: str, *, suffix: str = "") -> str:
    """``value`` if it is one safe path segment (with ``suffix``), else InvalidNameError."""
    if not isinstance(value, str) or not _TOKEN.fullmatch(value):
        long = isinstance(value, str) and len(value) > 60
        shown = f"{value[:40]!r}..." if long else repr(value)
        raise InvalidNameError(
            f"{kind} {shown} cannot be part of a file name: use ASCII letters, digits, "
            "'_', '-' and '.', not starting with '.'"
        )
    if len((value + suffix).encode("utf-8")) > _MAX_SEGMENT_BYTES:
        raise InvalidNameError(f"{kind} {value[:40]!r}...: file name longer than 255 bytes")
    return value


def _family_segment(family: str) -> str:
    """The family's directory name: percent-encoded, and never ``.``, ``..`` or empty."""
    if not isinstance(family, str):
        raise InvalidNameError(f"family name must be a string, not {type(family).__name__}")
    segment = quote(family, safe="")
    if segment in ("", ".", "..") or len(segment.encode("utf-8")) > _MAX_SEGMENT_BYTES:
        raise InvalidNameError(f"family name {family[:40]!r} cannot be a directory name")
    return segment


def store_dir_relpath(region: str, family: str) -> str:
    """``data/<region>/<quote(family)>``: the directory of one store's files.

    >>> store_dir_relpath("r000001", "cf/x")
    'data/r000001/cf%2Fx'

    Raises:
        InvalidNameError: if the region id or family would not be one safe path segment.
    """
    return f"{DATA_DIR}/{_token('region id', region)}/{_family_segment(family)}"


def store_file_relpath(region: str, family: str, stem: str) -> str:
    """``data/<region>/<quote(family)>/<stem>.parquet``, relative to the table directory.

    The only function that names store files: loads and jobs alike.

    >>> store_file_relpath("r000001", "cf", "1700000000000-ab12-m00000-000")
    'data/r000001/cf/1700000000000-ab12-m00000-000.parquet'

    Raises:
        InvalidNameError: if the region id, family or stem would not be one safe path
            segment (a stem is a load or job id plus counters).
    """
    directory = store_dir_relpath(region, family)
    return f"{directory}/{_token('file stem', stem, suffix=_SUFFIX)}{_SUFFIX}"


def bulkload_file_relpath(family: str, name: str) -> str:
    """``<family>/<name>``: an HFile of HBase's bulk-load layout, relative to its directory.

    ``completebulkload`` takes every sub-directory of its input as a family name, so the
    family is used as it is (not percent-encoded) and must be a valid family name (R15.3:
    which also keeps it one safe path segment); the file name is 32 lowercase hex digits.

    >>> bulkload_file_relpath("cf", "0123456789abcdef0123456789abcdef")
    'cf/0123456789abcdef0123456789abcdef'

    Raises:
        InvalidNameError: an invalid family name, or a name that is not 32 lowercase hex.
    """
    validate_family_name(family)
    if family == "..":  # pragma: no cover - a leading '.' is already refused
        raise InvalidNameError("family name '..' cannot be a directory name")
    if not isinstance(name, str) or not _HFILE_NAME.fullmatch(name):
        raise InvalidNameError(
            f"bulk-load file name {name!r} is not 32 lowercase hexadecimal digits"
        )
    return f"{family}/{name}"


def loads_dir(table_path: str) -> str:
    """``<table dir>/_loads``: the default directory for load reports."""
    return join(table_path, LOADS_DIR)


def report_file_name(load_id: str) -> str:
    """``<load-id>.report.json``.

    Raises:
        InvalidNameError: for a load id that is not valid (:func:`validate_load_id`).
    """
    return f"{validate_load_id(load_id)}.report.json"


def bad_records_file_name(load_id: str) -> str:
    """``<load-id>.bad.jsonl``.

    Raises:
        InvalidNameError: for a load id that is not valid (:func:`validate_load_id`).
    """
    return f"{validate_load_id(load_id)}.bad.jsonl"


def _segments_problem(segments: list[str]) -> str | None:
    if any(s in ("", ".", "..") for s in segments):
        return "has an empty, '.' or '..' segment"
    return None


def table_dir(root: str, location: str) -> str:
    """The directory of the table at catalog ``location`` (``<ns>/<qualifier>/<uuid>``).

    Raises:
        CorruptFileError: if ``location`` is not three plain segments (it could leave the
            root, and clones' links rely on the depth).
    """
    problem: str | None = None
    if not isinstance(location, str) or "\\" in location or _has_control(location):
        problem = "has a backslash or control character"
    elif location.startswith("/") or "://" in location:
        problem = "is not relative to the warehouse root"
    else:
        segments = location.split("/")
        problem = _segments_problem(segments)
        if problem is None and len(segments) != TABLE_DEPTH:
            problem = "is not <namespace>/<qualifier>/<table-uuid>"
    if problem is not None:
        raise CorruptFileError(f"catalog: table location {location!r} {problem}")
    return join(root, location)


#: A control character (C0 or DEL).
_CONTROL: Final = re.compile("[\x00-\x1f\x7f]")


def _has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


def entry_path_problem(path: str) -> str | None:
    """Why a manifest entry's ``path`` is not allowed, or None if it is (pure).

    Allowed: a relative path of plain segments (``data/r000001/cf/x.parquet``), or a
    clone's link ``../../../<namespace>/<qualifier>/<uuid>/<path in that table>``
    (docs/format.md section 3.2), which resolves inside the warehouse root.

    >>> entry_path_problem("../../../ns/src/u0/data/r000001/cf/x.parquet") is None
    True
    >>> entry_path_problem("../../victim.parquet")
    "uses '..' other than as a clone's link ../../../<namespace>/<qualifier>/<uuid>/..."
    >>> entry_path_problem("/etc/passwd")
    'is not relative to the table directory'
    """
    if not isinstance(path, str) or not path:
        return "is empty"
    if "\\" in path or _has_control(path):
        return "has a backslash or control character"
    if path.startswith("/") or "://" in path:
        return "is not relative to the table directory"
    segments = path.split("/")
    if ".." not in segments:
        return _segments_problem(segments)
    ups = 0
    while ups < len(segments) and segments[ups] == "..":
        ups += 1
    if ups > TABLE_DEPTH:
        return "climbs above the warehouse root"
    rest = segments[ups:]
    if ups < TABLE_DEPTH or ".." in rest:
        return f"uses '..' other than as a clone's link {_LINK}"
    problem = _segments_problem(rest)
    if problem is not None:
        return problem
    if len(rest) <= TABLE_DEPTH:
        return "links to no file inside another table's directory"
    return None


def clone_link(source_location: str, path: str) -> str:
    """The entry path, relative to a clone's directory, of a source table's file.

    Every table directory is :data:`TABLE_DEPTH` levels below the root
    (``<namespace>/<qualifier>/<uuid>``), so ``../../..`` from any table directory is the
    root (docs/format.md section 3.2). A path that is itself a link (the source is a
    clone) resolves to the same file, so clones of clones link to the owner.

    >>> clone_link("ns/src/u0", "data/r000001/cf/l1.parquet")
    '../../../ns/src/u0/data/r000001/cf/l1.parquet'
    >>> clone_link("ns/src/u0", "../../../ns/orig/u9/data/r000001/cf/l1.parquet")
    '../../../ns/orig/u9/data/r000001/cf/l1.parquet'

    Raises:
        InvalidArgumentError: if ``source_location`` is not :data:`TABLE_DEPTH` levels deep.
    """
    if len([p for p in source_location.split("/") if p]) != TABLE_DEPTH:
        raise InvalidArgumentError(
            f"table location {source_location!r} is not <namespace>/<qualifier>/<uuid>"
        )
    return posixpath.normpath(posixpath.join(*[".."] * TABLE_DEPTH, source_location, path))


def is_clone_link(path: str) -> bool:
    """Whether a manifest entry's ``path`` is a valid clone link (see :func:`clone_link`).

    A link that leaves the warehouse is not one (:func:`entry_path_problem` names why).

    >>> is_clone_link("../../../ns/src/u0/data/r000001/cf/x.parquet")
    True
    >>> is_clone_link("data/r000001/cf/x.parquet"), is_clone_link("../../x.parquet")
    (False, False)
    """
    return path.startswith("../") and entry_path_problem(path) is None


def entry_path(
    table_path: str, path: str, *, table: object = None, version: int | None = None
) -> str:
    """Resolve a manifest entry's ``path`` against its table directory.

    Every reader, job, vacuum and verify opens store files through this function.

    Args:
        table_path: The table directory (as on the filesystem, no trailing slash).
        path: The entry's ``path``.
        table: The table's name, for the error message.
        version: The table version holding the entry, for the error message.

    Returns:
        The file's path on the filesystem (``..`` resolved, see :func:`cellstore.fs.join`).

    Raises:
        CorruptFileError: if the path is not allowed (:func:`entry_path_problem`), naming
            the table version and the path.
    """
    problem = entry_path_problem(path)
    if problem is None:
        try:
            return join(table_path, path)
        except ValueError:
            problem = "climbs above the filesystem root"
    where = f"table {table}" if table is not None else f"table at {table_path}"
    if version is not None:
        where += f" version {version}"
    raise CorruptFileError(f"{where}: store file path {path!r} {problem}")

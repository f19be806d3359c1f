r"""Names that become paths under an HBase root: checked by HBase's own rules, in one place.

HBase data is untrusted input: a table or snapshot name comes from an argument, and
table names, region names, family names and store-file names come from the files
themselves (descriptors, manifests, ``.filelist`` tracker files, Reference and HFileLink
names). :func:`check_name` is the one function that lets such a name into a path. It
applies HBase's naming rule for the kind of name (``TableName``, ``RegionInfo``,
``ColumnFamilyDescriptorBuilder``, ``StoreFileInfo``, ``HFileLink``; hbase-layout.md
section 4) and returns a :data:`Segment`; the path builders (:meth:`RootFiles.join`)
take only segments, so mypy proves that nothing unchecked is joined. Every rule allows
only single path segments: none is empty, ``.`` or ``..``, holds ``/``, ``\`` or NUL,
or is longer than 255 bytes. A name that breaks its rule raises the error the caller
chooses (:class:`~cellstore.errors.InvalidNameError` for an argument,
:class:`~cellstore.errors.CorruptFileError` for a name read from a file), naming where
the name came from.

:class:`RootFiles` reads the files of one root and keeps every read inside it: a path
is refused unless it lies lexically under the root and, on the local filesystem, its
real path (symlinks resolved) does too. A symlink that leads outside the root is refused
(``follow_symlinks=True`` follows it); one that stays inside is followed.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Final, Literal, NewType

import fsspec

from cellstore.core.names import validate_family_name
from cellstore.errors import CellstoreError, CorruptFileError, InvalidNameError, MissingFileError
from cellstore.fs import is_local

__all__ = [
    "ARCHIVE",
    "ARCHIVE_094",
    "DATA",
    "MAX_METADATA_BYTES",
    "MOBDIR",
    "TMP",
    "NameKind",
    "RootFiles",
    "Segment",
    "StoreFileName",
    "check_name",
    "is_name",
    "listed_name",
    "parse_store_file_name",
    "split_table_name",
]

#: A name checked by :func:`check_name` (or a constant of the layout): one safe segment.
Segment = NewType("Segment", str)

#: The kinds of names :func:`check_name` knows.
NameKind = Literal["namespace", "table", "snapshot", "region", "family", "hfile", "store file"]

#: Directories of a root directory's layout (hbase-layout.md section 5).
DATA: Final = Segment("data")
ARCHIVE: Final = Segment("archive")
ARCHIVE_094: Final = Segment(".archive")
TMP: Final = Segment(".tmp")
MOBDIR: Final = Segment("mobdir")

#: Largest metadata file read (descriptor, region info, manifest, reference, tracker
#: file): HBase's own cap on a snapshot manifest (``snapshot.manifest.size.limit``).
MAX_METADATA_BYTES: Final = 64 << 20
_MAX_SEGMENT_BYTES: Final = 255

_HFILE: Final = r"[0-9a-f]+(?:_SeqId_[0-9]+_|_del)?"
_HFILE_RE: Final = re.compile(_HFILE)
_MOB_RE: Final = re.compile(rf"{_HFILE}_{_HFILE}")
_LINK_RE: Final = re.compile(rf"(?:([^=]+)=)?([^=]+)=([0-9a-f]+)-({_HFILE})")
_REGION_RE: Final = re.compile(r"[0-9a-f]+")
_ASCII_QUALIFIER: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_ASCII_NAMESPACE: Final = re.compile(r"[A-Za-z0-9_]+")

_RULES: Final[dict[str, str]] = {
    "namespace": "letters, digits and '_'",
    "table": "letters, digits, '_', '-' and '.', not starting with '.' or '-'",
    "snapshot": "letters, digits, '_', '-' and '.', not starting with '.' or '-'",
    "region": "an encoded region name: lowercase hex digits",
    "family": "no leading '.', no ':', '\\', '/' or control character, at most 127 bytes",
    "hfile": "lowercase hex digits, optionally '_SeqId_<n>_' or '_del'",
    "store file": "an hfile, HFileLink ([ns=]table=region-hfile), Reference "
    "(<hfile or link>.<parent region>) or MOB file name",
}


def _word(ch: str) -> bool:
    r"""Java's ``\p{IsAlphabetic}``, ``\p{Digit}`` or ``_`` (``TableName``)."""
    return ch == "_" or ch.isdecimal() or unicodedata.category(ch).startswith("L")


def _is_namespace(name: str) -> bool:
    return bool(_ASCII_NAMESPACE.fullmatch(name)) or (bool(name) and all(_word(c) for c in name))


def _is_qualifier(name: str) -> bool:
    if _ASCII_QUALIFIER.fullmatch(name):
        return True
    return bool(name) and _word(name[0]) and all(_word(c) or c in "-." for c in name)


def _is_family(name: str) -> bool:
    try:
        validate_family_name(name)
    except InvalidNameError:
        return False
    return True


def _is_store_file(name: str) -> bool:
    try:
        parse_store_file_name(name, source="")
    except CorruptFileError:
        return False
    return True


_CHECKS: Final = {
    "namespace": _is_namespace,
    "table": _is_qualifier,
    "snapshot": _is_qualifier,
    "region": lambda n: bool(_REGION_RE.fullmatch(n)),
    "family": _is_family,
    "hfile": lambda n: bool(_HFILE_RE.fullmatch(n)),
    "store file": _is_store_file,
}


def _shown(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 200 else f"{text[:160]}...({len(text)} chars)"


def _one_segment(name: str) -> bool:
    """Whatever the kind: one path segment that cannot leave its directory."""
    return (
        name not in ("", ".", "..")
        and not any(c in name for c in "/\\\x00")
        and len(name.encode("utf-8", "surrogatepass")) <= _MAX_SEGMENT_BYTES
    )


def check_name(
    kind: NameKind,
    name: str,
    *,
    source: str,
    error: type[CellstoreError] = CorruptFileError,
) -> Segment:
    """``name`` if it is a valid HBase name of ``kind`` (so one safe path segment).

    Rules (hbase-layout.md section 4): ``namespace`` letters, digits, ``_``; ``table`` and
    ``snapshot`` letters, digits, ``_``, ``-``, ``.``, not starting with ``.`` or ``-``
    (``TableName.isLegalTableQualifierName``; letters of any alphabet); ``region`` an
    encoded region name (lowercase hex: an MD5, or the decimal name of an old region);
    ``family`` ``isLegalColumnFamilyName``; ``hfile`` ``[0-9a-f]+`` with an optional
    ``_SeqId_<n>_`` or ``_del``; ``store file`` any name :func:`parse_store_file_name`
    accepts. Every kind is also at most 255 UTF-8 bytes.

    Args:
        kind: What the name is.
        name: The name.
        source: Where it came from (a file, or ``"argument"``), for the message.
        error: The class raised: :class:`CorruptFileError` for a name read from a file
            (default), :class:`InvalidNameError` for an argument.

    Raises:
        CellstoreError: ``error``, naming ``source``, the name and the rule.
    """
    if not is_name(kind, name):
        raise error(f"{source}: {_shown(name)} is not a valid HBase {kind} name ({_RULES[kind]})")
    return Segment(name)


def is_name(kind: NameKind, name: str) -> bool:
    """Whether :func:`check_name` accepts ``name`` as a ``kind`` name."""
    return isinstance(name, str) and _one_segment(name) and _CHECKS[kind](name)


def listed_name(path: str) -> Segment:
    """The last segment of a path a directory listing returned (the filesystem's name).

    Raises:
        CorruptFileError: the listing returned something that is not one segment.
    """
    name = posixpath.basename(str(path).rstrip("/"))
    if not _one_segment(name):
        raise CorruptFileError(f"{path}: a directory listing returned the name {name!r}")
    return Segment(name)


def split_table_name(
    name: str, *, source: str, error: type[CellstoreError] = CorruptFileError
) -> tuple[Segment, Segment]:
    """``(namespace, qualifier)`` of ``ns:qualifier`` (``default`` when no ``ns:``), checked.

    Raises:
        CellstoreError: ``error`` (see :func:`check_name`), naming ``source``.
    """
    if not isinstance(name, str):
        raise error(f"{source}: table name {_shown(name)} is not a string")
    ns, sep, qual = name.partition(":")
    if not sep:
        ns, qual = "default", name
    what = f"{source} (table name {_shown(name)})" if sep else source
    return (
        check_name("namespace", ns, source=what, error=error),
        check_name("table", qual, source=what, error=error),
    )


@dataclass(frozen=True)
class StoreFileName:
    """A store-file name split into its parts (``StoreFileInfo``; layout section 6).

    Attributes:
        name: The name as listed.
        kind: ``hfile`` (plain or bulk-loaded), ``link`` (an HFileLink), ``reference``
            (a half of a parent region's file; the target may be a link) or ``mob``.
        hfile: The HFile's name in its directory (a link's or reference's target).
        namespace: The table a link names; None for the store's own table.
        qualifier: See ``namespace``.
        region: The region a link names; None for the store's (or the parent's) region.
        parent: A reference's parent region; None otherwise.
    """

    name: str
    kind: Literal["hfile", "link", "reference", "mob"]
    hfile: Segment
    namespace: Segment | None = None
    qualifier: Segment | None = None
    region: Segment | None = None
    parent: Segment | None = None


def _link(name: str, source: str) -> StoreFileName | None:
    m = _LINK_RE.fullmatch(name)
    if m is None:
        return None
    ns, qual, region, hfile = m.groups()
    what = f"{source} (HFileLink {_shown(name)})"
    return StoreFileName(
        name,
        "link",
        check_name("hfile", hfile, source=what),
        check_name("namespace", ns or "default", source=what),
        check_name("table", qual, source=what),
        check_name("region", region, source=what),
    )


def parse_store_file_name(name: str, *, source: str) -> StoreFileName:
    """Classify a store-file name as HBase does: HFileLink, Reference, then hfile or MOB.

    * HFileLink ``[<ns>=]<table>=<region>-<hfile>``;
    * Reference ``<hfile or HFileLink>.<parent region>`` (HBase's pattern takes any
      text as the parent; here it must be an encoded region name, so it stays one
      segment);
    * hfile ``[0-9a-f]+`` (``_SeqId_<n>_`` when bulk-loaded, ``_del``);
    * MOB ``<hfile>_<hfile>``.

    Every part is checked by :func:`check_name`.

    Raises:
        CorruptFileError: anything else (names ``source`` and the name).
    """
    if isinstance(name, str) and _one_segment(name):
        link = _link(name, source)
        if link is not None:
            return link
        target, dot, parent = name.rpartition(".")
        if dot and target:
            what = f"{source} (Reference {_shown(name)})"
            region = check_name("region", parent, source=what)
            inner = _link(target, source)
            if inner is not None:
                return StoreFileName(
                    name,
                    "reference",
                    inner.hfile,
                    inner.namespace,
                    inner.qualifier,
                    inner.region,
                    region,
                )
            if _HFILE_RE.fullmatch(target):
                return StoreFileName(name, "reference", Segment(target), parent=region)
        elif _HFILE_RE.fullmatch(name):
            return StoreFileName(name, "hfile", Segment(name))
        elif _MOB_RE.fullmatch(name):
            return StoreFileName(name, "mob", Segment(name))
    raise CorruptFileError(
        f"{source}: store file {_shown(name)} is not an hfile, link or reference name "
        f"({_RULES['store file']})"
    )


def _named_by(source: str | None) -> str:
    return f" (named by {source})" if source else ""


class RootFiles:
    """Reads of one HBase root directory that never leave it.

    Every path is built by :meth:`join` from checked segments, and every read
    (:meth:`read`, :meth:`size`, :meth:`ls`) first checks that the path is under the
    root. On the local filesystem the check also resolves symlinks: a path whose real
    location is outside the root's real location is refused, whether or not the file
    exists there, unless ``follow_symlinks`` (symlinks inside the root are always
    followed). Other fsspec filesystems (object stores, ``memory://``) have no symlinks.

    Args:
        fs: The filesystem.
        root: The root directory on ``fs`` (trusted: the caller's choice).
        follow_symlinks: Follow symlinks that lead outside the root.
    """

    def __init__(
        self, fs: fsspec.AbstractFileSystem, root: str, *, follow_symlinks: bool = False
    ) -> None:
        self.fs = fs
        self.root = root.rstrip("/") or "/"
        self.follow_symlinks = follow_symlinks
        self._local = is_local(fs) and not follow_symlinks
        self._real_root = os.path.realpath(self.root) if self._local else ""
        self._real_dirs: dict[str, str] = {}

    # ----------------------------------------------------------------- paths
    def join(self, base: str, *parts: Segment) -> str:
        """``base/part/...``; ``base`` is the root or a path :meth:`join` built."""
        return posixpath.join(base, *parts)

    def _lexically_inside(self, path: str) -> bool:
        prefix = self.root if self.root.endswith("/") else self.root + "/"
        norm = posixpath.normpath(path)
        return (norm == self.root or norm.startswith(prefix)) and "/../" not in path + "/"

    def _real(self, path: str) -> str:
        """The real path of ``path``, with one lstat per file (directories cached)."""
        parent, base = posixpath.split(path)
        real_dir = self._real_dirs.get(parent)
        if real_dir is None:
            real_dir = os.path.realpath(parent)
            if len(self._real_dirs) < 100_000:
                self._real_dirs[parent] = real_dir
        if os.path.islink(path):
            return os.path.realpath(path)
        return os.path.join(real_dir, base)

    def outside(self, path: str) -> str | None:
        """Where ``path`` really is when that is outside the root, else None."""
        if not self._lexically_inside(path):
            return path
        if not self._local:
            return None
        real = self._real(path)
        base = self._real_root.rstrip(os.sep) + os.sep
        if real == self._real_root or real.startswith(base):
            return None
        return real

    def check(self, path: str, *, source: str | None = None) -> str:
        """``path``, if it is inside the root (see the class docstring).

        Raises:
            CorruptFileError: it is not (names the path, ``source`` and where it leads).
        """
        real = self.outside(path)
        if real is None:
            return path
        whence = _named_by(source)
        if real == path:
            raise CorruptFileError(f"{path}{whence} is outside the HBase root {self.root}")
        raise CorruptFileError(
            f"{path}{whence} leads to {real} through a symlink, outside the HBase root "
            f"{self.root}; symlinks are followed only inside the root (follow_symlinks="
            "True, or --follow-symlinks, follows them anywhere)"
        )

    # ----------------------------------------------------------------- reads
    def read(self, path: str, *, source: str | None = None) -> bytes:
        """A metadata file's bytes (at most :data:`MAX_METADATA_BYTES`).

        Raises:
            CorruptFileError: outside the root, a directory, or larger than the limit.
            MissingFileError: no such file.
        """
        self.check(path, source=source)
        try:
            data: bytes = self.fs.cat_file(path, start=0, end=MAX_METADATA_BYTES + 1)
        except FileNotFoundError as e:
            raise MissingFileError(f"{path}{_named_by(source)} does not exist") from e
        except (IsADirectoryError, NotADirectoryError) as e:
            raise CorruptFileError(f"{path}{_named_by(source)} is not a file ({e})") from e
        if len(data) > MAX_METADATA_BYTES:
            raise CorruptFileError(
                f"{path}: larger than {MAX_METADATA_BYTES >> 20} MiB, HBase's limit for a "
                "metadata file (snapshot.manifest.size.limit)"
            )
        return data

    def size(self, path: str, *, source: str | None = None) -> int:
        """A file's size (its path checked first).

        Raises:
            CorruptFileError: outside the root, or a directory.
            MissingFileError: no such file (a ``FileNotFoundError``).
        """
        self.check(path, source=source)
        try:
            info = self.fs.info(path)
        except FileNotFoundError as e:
            raise MissingFileError(f"{path}{_named_by(source)} does not exist") from e
        if info.get("type") == "directory":
            raise CorruptFileError(f"{path}{_named_by(source)} is a directory, not a file")
        return int(info["size"])

    def ls(self, path: str, *, detail: bool = False) -> list[Any]:
        """A directory's entries, as ``fs.ls`` (its path checked first).

        Raises:
            CorruptFileError: outside the root.
            MissingFileError: no such directory.
        """
        self.check(path)
        try:
            out: list[Any] = self.fs.ls(path, detail=detail)
        except FileNotFoundError as e:
            raise MissingFileError(f"{path} does not exist") from e
        return out

    def isdir(self, path: str) -> bool:
        """Whether ``path`` is a directory (its path checked first).

        Raises:
            CorruptFileError: outside the root.
        """
        self.check(path)
        return bool(self.fs.isdir(path))

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists (a stat; nothing is opened)."""
        return bool(self.fs.exists(path))

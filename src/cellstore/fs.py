"""Filesystem access: fsspec resolution, exclusive create, and the capability probe.

Every commit in cellstore relies on one filesystem operation: *create a file only if it
does not exist* (exclusive create). Local disk gives it through ``os.link`` (atomic and
exclusive, so a reader never sees a half-written file); object stores and ``memory://``
through fsspec's ``"xb"`` mode (S3 conditional writes, ``If-None-Match: *``). A backend that
silently overwrites is refused by :func:`ensure_exclusive_create` with
:class:`~cellstore.errors.UnsupportedFilesystemError` rather than allowed to lose commits.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
import uuid
from collections.abc import Mapping
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from cellstore.errors import UnsupportedFilesystemError

__all__ = [
    "ensure_exclusive_create",
    "is_local",
    "join",
    "resolve_filesystem",
    "write_exclusive",
]

_probe_lock = threading.Lock()
_probed: set[tuple[str, str]] = set()


def resolve_filesystem(
    url: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    filesystem: fsspec.AbstractFileSystem | None = None,
) -> tuple[fsspec.AbstractFileSystem, str]:
    """Turn a URL (plus ``storage_options``) or a filesystem object into ``(fs, path)``.

    Give either ``storage_options`` or ``filesystem``, never both (as dask does).

    Args:
        url: A local path or any fsspec URL (``s3://bucket/prefix``, ``memory://x``).
        storage_options: Options for the fsspec filesystem (credentials, endpoint...).
        filesystem: An already-built fsspec filesystem; ``url`` is then a path on it.

    Returns:
        The filesystem and the root path on it (no trailing slash).

    Raises:
        ValueError: if both ``storage_options`` and ``filesystem`` are given.
    """
    if filesystem is not None:
        if storage_options:
            raise ValueError("give either storage_options or filesystem, not both")
        path = filesystem._strip_protocol(os.fspath(url))
        return filesystem, str(path).rstrip("/") or "/"
    text = os.fspath(url)
    fs, path = fsspec.core.url_to_fs(text, **dict(storage_options or {}))
    if isinstance(fs, LocalFileSystem):
        path = os.path.abspath(path)
    return fs, str(path).rstrip("/") or "/"


def is_local(fs: fsspec.AbstractFileSystem) -> bool:
    """Whether ``fs`` is the local disk."""
    return isinstance(fs, LocalFileSystem)


def join(*parts: str) -> str:
    """Join path segments with '/' (fsspec paths are POSIX-style everywhere).

    ``..`` segments are resolved (a cloned table's entries point into its source table's
    directory as ``../../../<source location>/<path>``, docs/format.md section 3.2), so
    every backend sees a plain path: object stores have no ``..``. A protocol prefix
    (``s3://``) and the leading slashes are kept; paths without ``..`` are returned as
    joined.

    >>> join("/wh/ns/t/u1", "../../../ns/s/u0/data/r1/cf/x.parquet")
    '/wh/ns/s/u0/data/r1/cf/x.parquet'
    >>> join("bucket/wh/ns/t/u1", "data/r1")
    'bucket/wh/ns/t/u1/data/r1'

    Which files a table may name is decided by :mod:`cellstore.storefiles.layout`; this
    function only keeps a path on its filesystem root.

    Raises:
        ValueError: if ``..`` climbs above the root of an absolute path or URL, or out of
            the first segment of a path without leading slash (an object store's bucket:
            ``bucket/a`` + ``../../other`` would be another bucket). A relative path that
            starts with ``..`` keeps its leading ``..``, as ``posixpath.normpath`` does.
    """
    path = posixpath.join(*parts)
    if ".." not in path.split("/"):
        return path
    protocol, sep, rest = path.rpartition("://")
    body = rest.lstrip("/")
    lead = rest[: len(rest) - len(body)]
    norm = posixpath.normpath(body)
    climbs = norm == ".." or norm.startswith("../")
    if (lead or sep) and climbs:
        raise ValueError(f"path {path!r} climbs above its root")
    top = body.split("/", 1)[0]
    if not lead and top not in ("", ".", "..") and norm != top and not norm.startswith(top + "/"):
        raise ValueError(f"path {path!r} climbs out of {top!r}")
    return f"{protocol}{sep}{lead}{'' if norm == '.' else norm}"


def makedirs_for(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Create the parent directory of ``path`` where the filesystem has directories."""
    if is_local(fs):
        os.makedirs(os.path.dirname(path), exist_ok=True)


def write_exclusive(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    """Create ``path`` holding ``data``, failing if it already exists.

    The file appears whole or not at all: on local disk it is written to a temporary name
    and hard-linked into place; on object stores the single PUT is atomic.

    Raises:
        FileExistsError: if ``path`` exists (another writer got there first).
    """
    if is_local(fs):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        finally:
            os.unlink(tmp)
        return
    with fs.open(path, "xb") as f:
        f.write(data)


def write_bytes(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    """Write (or overwrite) ``path``; used only for non-authoritative hint files."""
    makedirs_for(fs, path)
    with fs.open(path, "wb") as f:
        f.write(data)


def ensure_exclusive_create(fs: fsspec.AbstractFileSystem, root: str) -> None:
    """Check once per process and root that ``fs`` honours exclusive create.

    Writes a probe file under ``root/_probe/`` twice with exclusive create; the second
    write must fail with ``FileExistsError``. The probe file is removed afterwards.

    Raises:
        UnsupportedFilesystemError: if the second write succeeded or the backend does not
            support exclusive create at all.
    """
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    key = (f"{protocol}:{fs.fsid if _has_fsid(fs) else id(fs)}", root)
    with _probe_lock:
        if key in _probed:
            return
    probe = join(root, "_probe", uuid.uuid4().hex)
    try:
        write_exclusive(fs, probe, b"1")
        try:
            write_exclusive(fs, probe, b"2")
        except FileExistsError:
            pass
        else:
            raise UnsupportedFilesystemError(
                f"filesystem {protocol!r} at {root!r} silently overwrote a file opened for "
                "exclusive create; commits would not be safe there"
            )
    except (NotImplementedError, ValueError, TypeError) as e:
        raise UnsupportedFilesystemError(
            f"filesystem {protocol!r} at {root!r} does not support exclusive create "
            f"(needed for safe commits): {e}"
        ) from e
    finally:
        with contextlib.suppress(OSError):
            fs.rm(probe)
    with _probe_lock:
        _probed.add(key)


def _has_fsid(fs: fsspec.AbstractFileSystem) -> bool:
    try:
        fs.fsid  # noqa: B018
    except NotImplementedError:
        return False
    return True

"""All-or-nothing output directories for HBase's bulk load (``completebulkload``'s input).

Whatever writes bulk-load HFiles (``load(..., hfile_output=DIR)``, ``export_hfiles``)
stages them the same way (reference §12-13): :func:`stage_output` checks that ``DIR`` is
absent or empty and makes a hidden ``.<name>.<uuid>.tmp`` directory next to it; tasks write
``<tmp>/<family>/<32 hex>`` through :class:`~cellstore.storefiles.writer.HFileFormat`;
:meth:`StagedOutput.publish` moves the files into ``DIR`` only once every task succeeded
(one rename on local disk), and :meth:`StagedOutput.discard` removes the staging directory
after a failure, so a failed run leaves nothing under ``DIR``.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec

from cellstore.errors import InvalidArgumentError
from cellstore.fs import is_local, join, resolve_filesystem
from cellstore.storefiles.rolling import BulkLoadFile

__all__ = ["StagedOutput", "stage_output"]


def _is_empty_dir(fs: fsspec.AbstractFileSystem, path: str) -> bool:
    return bool(fs.isdir(path)) and not fs.ls(path, detail=False)


def _remove(fs: fsspec.AbstractFileSystem, path: str) -> None:
    if fs.exists(path):
        fs.rm(path, recursive=True)


@dataclass(frozen=True, kw_only=True)
class StagedOutput:
    """A bulk-load output directory and its hidden staging directory (picklable).

    Attributes:
        url: The output directory, as given.
        fs: Its filesystem.
        root: The output directory on ``fs``.
        tmp: The staging directory next to it (``.<name>.<uuid>.tmp``).
    """

    url: str
    fs: fsspec.AbstractFileSystem = field(repr=False)
    root: str
    tmp: str

    def scratch(self, name: str) -> str:
        """A scratch directory inside the staging directory, removed before publishing.

        ``name`` must start with ``_`` (``completebulkload`` skips such entries, and no
        family may be named so by this code path's callers).
        """
        if not name.startswith("_") or "/" in name:
            raise ValueError(f"scratch directory name {name!r} must be one '_'-prefixed segment")
        return join(self.tmp, name)

    def publish(
        self, files: Sequence[BulkLoadFile], *, scratch: Sequence[str] = ()
    ) -> list[BulkLoadFile]:
        """Move the staged files into the output directory; returns them with new paths.

        Args:
            files: Every file the tasks wrote (paths under :attr:`tmp`).
            scratch: Scratch directories (:meth:`scratch`) to remove first.

        On failure the output directory is removed again and the error re-raised (the
        caller then calls :meth:`discard`).
        """
        fs, tmp, root = self.fs, self.tmp, self.root
        for d in scratch:
            _remove(fs, d)
        _remove(fs, root)
        if is_local(fs):
            os.rename(tmp, root)
            return [dataclasses.replace(f, path=root + f.path[len(tmp) :]) for f in files]
        moved: list[BulkLoadFile] = []
        try:
            for f in files:
                dest = root + f.path[len(tmp) :]
                fs.mv(f.path, dest)
                moved.append(dataclasses.replace(f, path=dest))
        except BaseException:
            _remove(fs, root)
            raise
        _remove(fs, tmp)
        if not files:
            fs.makedirs(root, exist_ok=True)
        return moved

    def discard(self) -> None:
        """Remove the staging directory and everything in it (after a failure)."""
        _remove(self.fs, self.tmp)


def stage_output(
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    overwrite_allowed: bool = True,
) -> StagedOutput:
    """Check a bulk-load output directory and create its staging directory.

    Args:
        url: Output directory: a local path or any fsspec URL.
        storage_options: fsspec options for ``url``.
        overwrite: Allow a non-empty ``url`` (its content is replaced at publish time).
        overwrite_allowed: Whether the caller offers ``overwrite`` (for the message).

    Returns:
        The :class:`StagedOutput`.

    Raises:
        InvalidArgumentError: ``url`` exists and is not an empty directory (unless
            ``overwrite``).
    """
    fs, root = resolve_filesystem(url, storage_options=storage_options)
    root = root.rstrip("/")
    fs.invalidate_cache(root)
    if fs.exists(root) and not _is_empty_dir(fs, root) and not overwrite:
        hint = (
            "pass overwrite=True (CLI: --overwrite) or choose another directory"
            if overwrite_allowed
            else "empty it or choose another directory"
        )
        raise InvalidArgumentError(f"{url} exists and is not an empty directory; {hint}")
    parent, _, leaf = root.rpartition("/")
    tmp = f"{parent}/.{leaf}.{uuid.uuid4().hex}.tmp"
    if is_local(fs):
        os.makedirs(tmp)
    return StagedOutput(url=url, fs=fs, root=root, tmp=tmp)

"""A table's state at one version: :class:`TableHandle`.

The handle is what every layer above takes (loader, reader, jobs, report): name, location,
directory, filesystem, log, the metadata of one version (families, regions, live files),
whether it is pinned, and the catalog it came from. It knows nothing of the facade: the
:class:`~cellstore.warehouse.Table` subclasses it and adds loads, scans and reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import fsspec

from cellstore.core.family import Family
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.names import TableName
from cellstore.core.regions import Region
from cellstore.errors import InvalidArgumentError
from cellstore.manifest import TableLog
from cellstore.storefiles.layout import entry_path, table_dir

if TYPE_CHECKING:
    from cellstore.handle.catalog import Catalog
    from cellstore.handle.hooks import LoadHook


class TableHandle:
    """One table at one version: its state and paths, nothing more.

    A handle opened at the latest version follows its own commits; :meth:`refresh` moves it
    to other writers' commits. A handle opened at an older version is ``pinned`` and
    read-only (:meth:`check_writable` refuses it).

    Attributes:
        catalog: The catalog the table is registered in (filesystem, root, options, hooks).
        name: The table's name.
        location: The table directory relative to the catalog root (``ns/name/uuid``).
        path: The table directory.
        log: The table's metadata log.
        pinned: Opened at a given version (read-only).
    """

    def __init__(
        self,
        catalog: Catalog[TableHandle],
        name: TableName,
        location: str,
        metadata: TableMetadata,
        *,
        pinned: bool = False,
    ) -> None:
        self.catalog = catalog
        self.name = name
        self.location = location
        self.path = table_dir(catalog.root, location)
        self.log = TableLog(catalog.fs, self.path)
        self._metadata = metadata
        self.pinned = pinned

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.name)!r}, version={self.version})"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The catalog's filesystem."""
        return self.catalog.fs

    @property
    def root(self) -> str:
        """The catalog root (a path on :attr:`fs`)."""
        return self.catalog.root

    @property
    def storage_options(self) -> Mapping[str, Any]:
        """The fsspec options the catalog was opened with."""
        return self.catalog.storage_options

    @property
    def load_hooks(self) -> tuple[LoadHook, ...]:
        """What runs before every load commit into this table (see :mod:`.hooks`)."""
        return self.catalog.load_hooks

    @property
    def metadata(self) -> TableMetadata:
        """The metadata of the version this handle points at."""
        return self._metadata

    @property
    def version(self) -> int:
        """The table version this handle points at."""
        return self._metadata.version

    @property
    def families(self) -> tuple[Family, ...]:
        """Column families."""
        return self._metadata.families

    @property
    def regions(self) -> tuple[Region, ...]:
        """Regions in key order."""
        return self._metadata.regions

    @property
    def files(self) -> Sequence[FileEntry]:
        """Live store files (format version 2: read from the manifests on first use)."""
        return self._metadata.files

    def refresh(self) -> Self:
        """Move this handle to the latest version (not allowed on a pinned handle)."""
        self.check_writable("refresh")
        self._metadata = self.log.read(self.log.latest_version())
        return self

    def moved_to(self, metadata: TableMetadata) -> None:
        """Point this handle at ``metadata`` (a version this process just committed)."""
        self._metadata = metadata

    def check_writable(self, what: str) -> None:
        """Refuse ``what`` on a pinned handle.

        Raises:
            InvalidArgumentError: the handle was opened at a given version.
        """
        if self.pinned:
            raise InvalidArgumentError(
                f"table {self.name} was opened at version {self.version}; cannot {what} it"
            )

    def file_path(self, entry: FileEntry) -> str:
        """Filesystem path of a live file.

        Raises:
            CorruptFileError: if the entry's path leaves the warehouse (docs/format.md 3.2).
        """
        return entry_path(self.path, entry.path, table=self.name, version=self.version)

    def latest(self) -> Self:
        """A new handle on this table's latest version, of this handle's class."""
        return self.open(self.name.full)

    def at(self, metadata: TableMetadata, *, pinned: bool = True) -> Self:
        """A new handle on this table at ``metadata`` (staged or older), of this class."""
        return type(self)(self.catalog, self.name, self.location, metadata, pinned=pinned)

    def open(self, name: str, *, version: int | None = None) -> Self:
        """Another table of the same catalog, as a handle of this handle's class.

        Raises:
            TableNotFoundError: no such table, or no such version of it.
        """
        tname, location, meta = self.catalog.locate(name, version=version)
        return type(self)(self.catalog, tname, location, meta, pinned=version is not None)

    def same_kind(self, other: TableHandle) -> Self:
        """``other`` (a handle of any class) as a handle of this handle's class."""
        return type(self)(
            other.catalog, other.name, other.location, other.metadata, pinned=other.pinned
        )

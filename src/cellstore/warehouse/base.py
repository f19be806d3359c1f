"""The state every table handle holds.

A :class:`~cellstore.warehouse.table.Table` has its warehouse, name, log and the version
it points at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import fsspec

from cellstore.core.family import Family
from cellstore.core.metadata import (
    FileEntry,
    TableMetadata,
)
from cellstore.core.names import TableName
from cellstore.core.regions import (
    Region,
)
from cellstore.errors import (
    InvalidArgumentError,
)
from cellstore.loader.direct import now_ms
from cellstore.manifest import TableLog
from cellstore.storefiles.layout import entry_path, table_dir

if TYPE_CHECKING:
    from cellstore.warehouse.catalog import Warehouse


class TableBase:
    """A table handle's state and paths (see :class:`~cellstore.warehouse.table.Table`)."""

    def __init__(
        self,
        warehouse: Warehouse,
        name: TableName,
        location: str,
        metadata: TableMetadata,
        *,
        pinned: bool = False,
    ) -> None:
        self.warehouse = warehouse
        self.name = name
        self.location = location
        self.path = table_dir(warehouse.root, location)
        self.log = TableLog(warehouse.fs, self.path)
        self._metadata = metadata
        self.pinned = pinned

    def __repr__(self) -> str:
        return f"Table({str(self.name)!r}, version={self.version})"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The warehouse filesystem."""
        return self.warehouse.fs

    @property
    def root(self) -> str:
        """The warehouse root path on :attr:`fs`."""
        return self.warehouse.root

    @property
    def storage_options(self) -> Mapping[str, Any]:
        """The warehouse's fsspec options (sent to load tasks with the table's URL)."""
        return self.warehouse.storage_options

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
        self._writable("refresh")
        self._metadata = self.log.read(self.log.latest_version())
        return self

    def _writable(self, what: str) -> None:
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


def clock() -> int:
    """Milliseconds since the epoch, the default ``now`` of loads and reads."""
    return now_ms()

"""A table that can be read: the :class:`ReadableTable` protocol and its one implementation.

``cellstore.Table`` and ``cellstore.hbase.HBaseTable`` both satisfy :class:`ReadableTable`
through :class:`TableReads`, which implements ``scan``, ``get`` and ``describe`` once over
a :class:`~cellstore.reader.source.ReadSource` that each subclass gives
(:meth:`TableReads._read_source`). Code that only reads (the Spark source, exports, the
CLI's reads) takes a :class:`ReadableTable`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, Unpack, runtime_checkable

import fsspec
import pyarrow as pa

from cellstore.commit import now_ms
from cellstore.core.filters import bind_filters, is_typed, normalize_filters
from cellstore.core.metadata import TableMetadata
from cellstore.core.names import TableName
from cellstore.core.rowkey import salt_bytes
from cellstore.errors import InvalidArgumentError
from cellstore.reader.describe import Description, TableDescription
from cellstore.reader.options import ScanKwargs, ScanOptions, scan_options
from cellstore.reader.scan import Scan
from cellstore.reader.source import StoredTable, StoreFileSource, store_source

if TYPE_CHECKING:
    from cellstore.core.comparators import ColumnCodecs
    from cellstore.reader.source import ReadSource

__all__ = ["GET_REFUSED", "HandleReads", "ReadableTable", "TableReads", "hidden_families"]

D = TypeVar("D", bound=Description)

#: Options a get refuses: its row is the row range.
GET_REFUSED: tuple[str, ...] = ("start_row", "stop_row", "row_prefix", "key")


@runtime_checkable
class ReadableTable(Protocol):
    """What reads need of a table: a cellstore ``Table`` or an ``HBaseTable``.

    ``scan``, ``get`` and ``describe`` take and mean the same on both (one
    implementation, :class:`TableReads`); an HBase table has no versions, row-key spec or
    recorded value codecs, so ``version``, ``key`` and ``column_types="table"`` are
    refused there.
    """

    @property
    def name(self) -> TableName | str:
        """The table's name."""
        ...

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The filesystem of the table's files."""
        ...

    @property
    def metadata(self) -> TableMetadata:
        """The table version read: families, regions, salt, row-key spec, properties.

        ``cellstore.Table`` and ``HBaseTable`` also have them as ``families`` and
        ``regions``.
        """
        ...

    def scan(self, options: ScanOptions | None = None, /, **overrides: Unpack[ScanKwargs]) -> Scan:
        """Plan a scan (see :meth:`TableReads.scan`)."""
        ...

    def get(
        self,
        row: bytes | str,
        options: ScanOptions | None = None,
        **overrides: Unpack[ScanKwargs],
    ) -> pa.Table:
        """Read one row (see :meth:`TableReads.get`)."""
        ...

    def describe(self) -> Description:
        """Families, regions and store files (see :meth:`TableReads.describe`)."""
        ...


def hidden_families(metadata: TableMetadata) -> list[str] | None:
    """The families a read of ``metadata`` returns when none are named, None for all.

    Families listed in the table property ``hidden-families`` (local index rows) are left
    out unless named.
    """
    hidden = set(metadata.properties.get("hidden-families", "").split(",")) - {""}
    if not hidden:
        return None
    return [f for f in metadata.family_names if f not in hidden]


class TableReads(ABC, Generic[D]):
    """The one implementation of ``scan``/``get``/``describe`` (:class:`ReadableTable`).

    A subclass says where its cells are (:meth:`_read_source`) and may resolve
    ``column_types="table"`` from what its loads recorded (:meth:`_recorded_column_types`).
    """

    @abstractmethod
    def _read_source(self, version: int | None) -> ReadSource[D]:
        """The source of table version ``version`` (None: the version this handle is at).

        Raises:
            TableNotFoundError: no such version.
            InvalidArgumentError: the table has no versions to choose from.
        """

    def _recorded_column_types(self, metadata: TableMetadata) -> Mapping[str, str]:
        """``column_types="table"``: the codecs the table's loads recorded (none here)."""
        return {}

    def _recorded_value_codecs(self, metadata: TableMetadata) -> ColumnCodecs:
        """Typed filter comparators: ``(family, qualifier, codec)`` recorded (none here)."""
        return ()

    def _warn_unrecorded(self, metadata: TableMetadata, column_types: Mapping[str, str]) -> None:
        """Warn about ``column_types`` naming columns no load recorded (nothing here)."""

    def _resolve(self, options: ScanOptions, metadata: TableMetadata) -> ScanOptions:
        """``options`` with the table's own defaults: visible families, recorded codecs.

        Typed filter comparators are bound to the recorded codecs here
        (:func:`~cellstore.core.filters.bind_filters`).
        """
        changes: ScanKwargs = {}
        filters = normalize_filters(options.filter)
        if any(is_typed(f) for f in filters):
            changes["filter"] = bind_filters(filters, self._recorded_value_codecs(metadata))
        if options.families is None and options.columns is None:
            visible = hidden_families(metadata)
            if visible is not None:
                changes["families"] = visible
        types = options.column_types
        if isinstance(types, str):  # "table" (ScanOptions refuses other strings)
            recorded = self._recorded_column_types(metadata)
            if not recorded:
                raise InvalidArgumentError(
                    f"table {metadata.name} has no recorded column codecs (no mapping-based "
                    "load recorded any); pass column_types as {'family:qualifier': codec}"
                )
            changes["column_types"] = recorded
        elif types:
            self._warn_unrecorded(metadata, types)
        return replace(options, **changes) if changes else options

    def scan(self, options: ScanOptions | None = None, /, **overrides: Unpack[ScanKwargs]) -> Scan:
        """Plan a scan of this table with HBase's read semantics.

        Args:
            options: What to read (see :class:`~cellstore.reader.ScanOptions` for every
                option); default: everything, latest versions only.
            **overrides: Any :class:`~cellstore.reader.ScanOptions` field by name,
                replacing ``options``' value (``scan(start_row="a", max_versions=3)``).

        Returns:
            A :class:`~cellstore.reader.Scan`: call ``to_arrow()``, ``to_pandas()``,
            ``to_batches()``, ``to_dask()``, ``count_rows()`` or ``plan()``.

        Raises:
            TypeError: an unknown option.
            InvalidArgumentError: options that contradict each other or the table.
            InvalidFamilyError: a family the table does not have (the message names it).
            InvalidRowRangeError: a malformed row range.
        """
        opts = scan_options(options, overrides)
        source = self._read_source(opts.version)
        opts = self._resolve(opts, source.metadata)
        return Scan.over(source, opts, now_ms=now_ms())

    def get(
        self,
        row: bytes | str,
        options: ScanOptions | None = None,
        **overrides: Unpack[ScanKwargs],
    ) -> pa.Table:
        """Point read of one row (HBase ``Get``, R12.3): its visible cells, in result order.

        Files whose row Bloom filter or statistics rule the row out are not read. Options
        mean the same as for :meth:`scan`; the row range ones (``start_row``,
        ``stop_row``, ``row_prefix``, ``key``) are refused. An absent row gives an empty
        table. On a salted table ``row`` is the key without its salt byte (the salt is
        computed).

        Raises:
            TypeError: an unknown option.
            InvalidArgumentError: an empty row, a row range option, or options that
                contradict each other or the table.
        """
        opts = scan_options(options, overrides, caller="get")
        refused = [n for n in GET_REFUSED if getattr(opts, n) is not None]
        if refused:
            raise InvalidArgumentError(
                f"get reads one row: {', '.join(refused)} do(es) not apply (use scan)"
            )
        key = row.encode("utf-8") if isinstance(row, str) else bytes(row)
        if not key:
            raise InvalidArgumentError("get needs a non-empty row key (R16.1)")
        source = self._read_source(opts.version)
        buckets = source.metadata.salt_buckets
        if buckets is not None:  # salt-free key in, salt-free rows out
            key = bytes([int(salt_bytes(pa.array([key], pa.binary()), buckets)[0])]) + key
        opts = self._resolve(replace(opts, start_row=key, stop_row=key + b"\x00"), source.metadata)
        return Scan.over(source, opts, now_ms=now_ms(), point_row=key).to_arrow()

    def describe(self) -> D:
        """Families, regions with their store files and sizes, and totals.

        ``str()`` of the result prints as the HBase shell's ``describe``; ``to_dict()``
        is JSON-ready.
        """
        return self._read_source(None).describe()


class HandleReads(TableReads[TableDescription]):
    """``scan``/``get``/``describe`` of a cellstore table handle's store files.

    For code below the ``warehouse`` facade (jobs, reports) that holds a table handle:
    ``HandleReads(handle).scan(options)``. ``column_types="table"`` is refused here
    (the recorded codecs are the loader's; the facade's ``Table.scan`` resolves them).
    """

    def __init__(self, table: StoredTable) -> None:
        self.table = table
        self.name = str(table.name)
        self.fs: fsspec.AbstractFileSystem = table.fs

    @property
    def metadata(self) -> TableMetadata:
        """The version the handle points at."""
        return self.table.metadata

    def _read_source(self, version: int | None) -> StoreFileSource:
        return store_source(self.table, version)

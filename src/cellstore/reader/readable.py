"""A table that can be read: the :class:`ReadableTable` protocol and its one implementation.

``cellstore.Table`` and ``cellstore.hbase.HBaseTable`` both satisfy :class:`ReadableTable`
through :class:`TableReads`, which implements ``scan``, ``get`` and ``describe`` once over
a :class:`~cellstore.reader.source.ReadSource` that each subclass gives
(:meth:`TableReads._read_source`). Code that only reads (the Spark source, exports, the
CLI's reads) takes a :class:`ReadableTable`.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, Unpack, runtime_checkable

import fsspec
import pyarrow as pa

from cellstore.commit import now_ms
from cellstore.core.filters import bind_filters, is_typed, normalize_filters
from cellstore.core.keys import to_string_binary
from cellstore.core.metadata import TableMetadata
from cellstore.core.names import TableName
from cellstore.core.rowkey import salt_bytes
from cellstore.errors import CellstoreWarning, InvalidArgumentError
from cellstore.reader.describe import Description, TableDescription
from cellstore.reader.options import ScanKwargs, ScanOptions, scan_options
from cellstore.reader.scan import Scan
from cellstore.reader.source import StoredTable, StoreFileSource, store_source

if TYPE_CHECKING:
    from cellstore.core.comparators import ColumnCodecs
    from cellstore.core.rowkey import RowKeySpec
    from cellstore.reader.source import ReadSource

__all__ = ["GET_REFUSED", "HandleReads", "ReadableTable", "TableReads", "hidden_families"]

D = TypeVar("D", bound=Description)

#: Options a get refuses: its row is the row range (``key`` gives the row by its fields).
GET_REFUSED: tuple[str, ...] = ("start_row", "stop_row", "row_prefix")


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
        row: bytes | str | None = None,
        options: ScanOptions | None = None,
        **overrides: Unpack[ScanKwargs],
    ) -> pa.Table:
        """Read one row, by its key or its key fields (see :meth:`TableReads.get`)."""
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
        row: bytes | str | None = None,
        options: ScanOptions | None = None,
        **overrides: Unpack[ScanKwargs],
    ) -> pa.Table:
        """Point read of one row (HBase ``Get``, R12.3): its visible cells, in result order.

        The row is given as its key (``row``) or, on a table with a row-key spec, by the
        values of every key field (``key={"carrier": "UA", "flight": 17}``, as
        ``scan(key=...)`` takes them, equalities only). Files whose row Bloom filter or
        statistics rule the row out are not read. Options mean the same as for
        :meth:`scan`; the row range ones (``start_row``, ``stop_row``, ``row_prefix``)
        are refused. An absent row gives an empty table. On a salted table ``row`` is the
        key without its salt byte (the salt is computed).

        On a table with a row-key spec, a ``row`` that cannot be a whole key of the spec
        (``get("UA")`` where the key is ``carrier + flight``) warns
        (:class:`~cellstore.errors.CellstoreWarning`, naming the spec's fields): it can
        match no row.

        Raises:
            TypeError: an unknown option.
            InvalidArgumentError: an empty row, both or neither of ``row`` and ``key``, a
                ``key`` that misses a field, names an unknown one or gives a range, a row
                range option, or options that contradict each other or the table.
        """
        opts = scan_options(options, overrides, caller="get")
        refused = [n for n in GET_REFUSED if getattr(opts, n) is not None]
        if refused:
            raise InvalidArgumentError(
                f"get reads one row: {', '.join(refused)} do(es) not apply (use scan)"
            )
        if (row is None) == (opts.key is None):
            raise InvalidArgumentError(
                "get needs a row key or key={field: value, ...} (one of them, not both)"
            )
        key = b""
        if row is not None:
            key = row.encode("utf-8") if isinstance(row, str) else bytes(row)
            if not key:
                raise InvalidArgumentError("get needs a non-empty row key (R16.1)")
        source = self._read_source(opts.version)
        if opts.key is not None:
            key = _key_of_fields(source.metadata, dict(opts.key))
            opts = replace(opts, key=None)
        elif source.metadata.row_key is not None:
            _warn_partial_key(source.metadata, source.metadata.row_key, key)
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


def _key_of_fields(metadata: TableMetadata, values: Mapping[str, Any]) -> bytes:
    """The row key (salt-free) of ``get(key=values)``: every field of the spec, equalities.

    Raises:
        InvalidArgumentError: no row-key spec; a field missing, unknown or given a range.
    """
    spec = metadata.row_key
    if spec is None:
        raise InvalidArgumentError(
            f"table {metadata.name} has no row-key spec, so key= cannot be used; give the row"
        )
    fields = ", ".join(spec.columns)
    unknown = [n for n in values if n not in spec.columns]
    if unknown:
        raise InvalidArgumentError(
            f"get(key=...): {', '.join(map(repr, unknown))} is not a field of the row key "
            f"({fields})"
        )
    missing = [n for n in spec.columns if n not in values]
    if missing:
        raise InvalidArgumentError(
            f"get(key=...) reads one row and needs every key field ({fields}); missing "
            f"{', '.join(missing)} (scan(key=...) reads a part of the key)"
        )
    ranged = [n for n, v in values.items() if isinstance(v, tuple)]
    if ranged:
        raise InvalidArgumentError(
            f"get(key=...) takes one value per field; {', '.join(ranged)} is a range "
            "(use scan(key=...))"
        )
    return replace(spec, salt_buckets=None).key_for(values)


def _warn_partial_key(metadata: TableMetadata, spec: RowKeySpec, row: bytes) -> None:
    """Warn when ``row`` (salt-free) does not parse as a whole key of ``spec``."""
    if not spec.decodable_columns:
        return
    decoded = replace(spec, salt_buckets=None).decode(pa.array([row], pa.binary()), errors="null")
    if not any(decoded.column(i).null_count for i in range(decoded.num_columns)):
        return
    fields = ", ".join(spec.columns)
    example = ", ".join(f"{name!r}: ..." for name in spec.columns)
    warnings.warn(
        f"table {metadata.name}: row {to_string_binary(row)!r} is not a whole key of the "
        f"table's row-key spec ({spec}), so the get can match no row; give the key "
        f"fields ({fields}): get(key={{{example}}}), or scan(key=...) for a part of the key",
        CellstoreWarning,
        stacklevel=3,
    )


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

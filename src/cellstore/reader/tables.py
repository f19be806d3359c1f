"""Scans and gets of a :class:`~cellstore.handle.TableHandle` (what ``Table.scan``/``get`` run).

The facade's :meth:`Table.scan <cellstore.warehouse.Table.scan>` documents every option;
jobs read the tables they are given through these functions, so a job never needs the
facade.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from cellstore.commit import now_ms as clock
from cellstore.core.filters import Filter, normalize_filters
from cellstore.core.metadata import TableMetadata
from cellstore.core.rowkey import salt_bytes
from cellstore.errors import InvalidArgumentError
from cellstore.handle import TableHandle
from cellstore.reader.scan import (
    FamilyTimeRanges,
    Scan,
    ScanOptions,
    as_names,
    normalize_family_time_ranges,
)

__all__ = ["get_row", "scan_table", "visible_families"]


def visible_families(metadata: TableMetadata) -> list[str] | None:
    """The families a scan or get reads when none are named, None for all.

    Families listed in the property ``hidden-families`` (local index rows) are left out
    unless named.
    """
    hidden = set(metadata.properties.get("hidden-families", "").split(",")) - {""}
    if not hidden:
        return None
    return [f for f in metadata.family_names if f not in hidden]


def scan_table(
    table: TableHandle,
    *,
    columns: Iterable[bytes | str] | bytes | str | None = None,
    families: Iterable[str] | str | None = None,
    family_time_ranges: FamilyTimeRanges | None = None,
    filter: Filter | Sequence[Filter] | None = None,
    column_types: Mapping[str, str] | None = None,
    key: Mapping[str, Any] | None = None,
    **options: Any,
) -> Scan:
    """Plan a scan of ``table``'s version (options as ``Table.scan``'s).

    ``column_types`` is a mapping here (the facade resolves ``"table"``); ``options``
    are the remaining :class:`~cellstore.reader.ScanOptions` fields as given.
    """
    if families is None and columns is None:
        families = visible_families(table.metadata)
    scan_options = ScanOptions(
        columns=as_names(columns),
        families=as_names(families),
        family_time_ranges=normalize_family_time_ranges(family_time_ranges),
        filter=normalize_filters(filter),
        column_types=tuple((column_types or {}).items()) or None,
        key=tuple(key.items()) if key is not None else None,
        **options,
    )
    return Scan(table.fs, table.path, table.metadata, scan_options, now_ms=clock())


def get_row(
    table: TableHandle,
    row: bytes | str,
    *,
    columns: Iterable[bytes | str] | bytes | str | None = None,
    families: Iterable[str] | str | None = None,
    time_range: tuple[int, int] | None = None,
    family_time_ranges: FamilyTimeRanges | None = None,
    timestamp: int | None = None,
    max_versions: int | None = None,
    filter: Filter | Sequence[Filter] | None = None,
    now_ms: int | None = None,
) -> pa.Table:
    """Point read of one row of ``table`` (``Table.get``): its visible cells, in order."""
    key = row.encode("utf-8") if isinstance(row, str) else bytes(row)
    if not key:
        raise InvalidArgumentError("get needs a non-empty row key (R16.1)")
    buckets = table.metadata.salt_buckets
    if buckets is not None:  # salt-free key in, salt-free rows out
        key = bytes([int(salt_bytes(pa.array([key], pa.binary()), buckets)[0])]) + key
    if families is None and columns is None:
        families = visible_families(table.metadata)
    options = ScanOptions(
        start_row=key,
        stop_row=key + b"\x00",
        columns=as_names(columns),
        families=as_names(families),
        time_range=time_range,
        family_time_ranges=normalize_family_time_ranges(family_time_ranges),
        timestamp=timestamp,
        max_versions=max_versions,
        filter=normalize_filters(filter),
        now_ms=now_ms,
        point_row=key,
    )
    return Scan(table.fs, table.path, table.metadata, options, now_ms=clock()).to_arrow()

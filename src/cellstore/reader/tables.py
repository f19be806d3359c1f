"""Scans and gets of a :class:`~cellstore.handle.TableHandle`, for code below the facade.

Jobs read the tables they are given through these two functions (a job never needs the
``warehouse`` facade). Both are :class:`~cellstore.reader.readable.HandleReads`, the same
implementation ``Table.scan``/``Table.get`` and ``HBaseTable`` use: options as
:class:`~cellstore.reader.ScanOptions` (or its fields by name), except
``column_types="table"``, which the facade resolves from the loads' recorded codecs.
"""

from __future__ import annotations

from typing import Unpack

import pyarrow as pa

from cellstore.reader.options import ScanKwargs, ScanOptions
from cellstore.reader.readable import HandleReads, hidden_families
from cellstore.reader.scan import Scan
from cellstore.reader.source import StoredTable

__all__ = ["get_row", "scan_table", "visible_families"]

#: The families a read returns when none are named (``hidden-families`` left out).
visible_families = hidden_families


def scan_table(
    table: StoredTable, options: ScanOptions | None = None, /, **overrides: Unpack[ScanKwargs]
) -> Scan:
    """Plan a scan of ``table``'s version (as :meth:`TableReads.scan`)."""
    return HandleReads(table).scan(options, **overrides)


def get_row(
    table: StoredTable,
    row: bytes | str,
    options: ScanOptions | None = None,
    **overrides: Unpack[ScanKwargs],
) -> pa.Table:
    """Point read of one row of ``table`` (as :meth:`TableReads.get`)."""
    return HandleReads(table).get(row, options, **overrides)

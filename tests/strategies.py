"""Data builders shared by tests (not fixtures)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa


def cells_table(rows: Sequence[tuple[Any, ...]]) -> pa.Table:
    """Cells from ``(row, family, qualifier, ts, type, value)`` tuples."""
    cols = list(zip(*rows, strict=True)) if rows else [[]] * 6
    return pa.table(
        {
            "row": pa.array(cols[0], pa.binary()),
            "family": pa.array(cols[1], pa.string()),
            "qualifier": pa.array(cols[2], pa.binary()),
            "ts": pa.array(cols[3], pa.int64()),
            "type": pa.array(cols[4], pa.int8()),
            "value": pa.array(cols[5], pa.binary()),
        }
    )

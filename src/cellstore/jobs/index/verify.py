"""Verify an index against its data table: index rows missing, stale, or with wrong covers.

The data table is scanned as a full build would (what the index *should* hold) and the
index table is scanned (what it *does* hold); a join on the index row key classifies every
difference. Memory holds both sides' keys and covered values (index-sized, not data-sized).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.results import JsonForm
from cellstore.jobs.index.build import data_scan
from cellstore.jobs.index.catalog import definition_of, open_index_table
from cellstore.jobs.index.definition import IndexDefinition
from cellstore.jobs.index.keys import IndexType, decode_keys
from cellstore.jobs.index.local import local_name_mask, local_types, localize
from cellstore.jobs.index.rows import RowStats, empty_rows, index_rows, stored_rows
from cellstore.reader.tables import scan_table

if TYPE_CHECKING:
    from cellstore.handle import TableHandle

__all__ = ["DEFAULT_SAMPLES", "IndexProblem", "IndexVerifyReport", "verify_index"]

#: Examples kept per kind of problem.
DEFAULT_SAMPLES: Final = 10

ProblemKind = Literal["missing", "stale", "covered", "unparsable"]


@dataclass(frozen=True)
class IndexProblem(JsonForm):
    """One example of a problem.

    Attributes:
        kind: ``missing`` (a data row with a value has no index row), ``stale`` (an index
            row whose data row no longer has that value), ``covered`` (covered values
            differ from the data row's) or ``unparsable`` (an index row key that does not
            parse as this index's layout).
        row: The data row key (empty for ``unparsable``).
        key: The index row key.
        value: The indexed value, part by part (empty for ``unparsable``).
    """

    kind: ProblemKind
    row: bytes
    key: bytes
    value: tuple[Any, ...]


@dataclass(frozen=True)
class IndexVerifyReport(JsonForm):
    """What verify found.

    Attributes:
        table: The data table.
        index: The index name.
        index_table: The index table.
        data_version: The data table version read.
        index_version: The index table version read.
        data_rows: Data rows read.
        expected_rows: Index rows the data calls for.
        index_rows: Index rows found (with a visible marker cell).
        missing: Expected index rows that are absent.
        stale: Index rows no data row calls for.
        covered: Index rows whose covered values differ from the data.
        unparsable: Index rows whose key does not parse.
        samples: Up to ``samples`` examples of each kind.
    """

    json_keys = (
        "table index index_table data_version index_version ok data_rows expected_rows "
        "index_rows missing stale covered unparsable samples"
    )

    table: str
    index: str
    index_table: str
    data_version: int
    index_version: int
    data_rows: int
    expected_rows: int
    index_rows: int
    missing: int
    stale: int
    covered: int
    unparsable: int
    samples: tuple[IndexProblem, ...] = ()

    @property
    def problems(self) -> int:
        """Total problems found."""
        return self.missing + self.stale + self.covered + self.unparsable

    @property
    def ok(self) -> bool:
        """Whether the index matches the data exactly."""
        return self.problems == 0


def _expected(
    table: TableHandle, definition: IndexDefinition, types: Sequence[IndexType]
) -> tuple[pa.Table, int]:
    spec = table.metadata.row_key
    parts = [empty_rows(definition)]
    stats = RowStats()
    for batch in data_scan(table, definition).to_batches():
        rows, batch_stats = index_rows(batch, definition, types, spec)
        stats += batch_stats
        parts.append(localize(rows, definition, table.metadata) if definition.local else rows)
    return pa.concat_tables(parts).drop_columns(["ts"]), stats.rows


def _actual(
    index: TableHandle, definition: IndexDefinition, types: Sequence[IndexType]
) -> pa.Table:
    parts = [empty_rows(definition).append_column("marked", pa.array([], pa.bool_()))]
    if definition.local:  # the family holds every local index: keep this one's rows
        types = local_types(types)
    for batch in scan_table(index, families=[definition.family]).to_batches():
        if definition.local:
            batch = batch.filter(local_name_mask(batch.column("row"), definition))
        rows, _, marked = stored_rows(batch, definition, types)
        parts.append(rows.append_column("marked", pa.array(marked)))
    return pa.concat_tables(parts).drop_columns(["ts"])


def _samples(
    kind: ProblemKind, keys: pa.Array, rows: pa.Array, types: Sequence[IndexType], limit: int
) -> list[IndexProblem]:
    keys, rows = keys.slice(0, limit), rows.slice(0, limit)
    decoded = decode_keys(types, keys)
    values = [p.to_pylist() for p in decoded.parts]
    out = []
    for i, (key, row) in enumerate(zip(keys.to_pylist(), rows.to_pylist(), strict=True)):
        value = tuple(v[i] for v in values) if decoded.ok[i] else ()
        out.append(IndexProblem(kind, row or b"", key, value))
    return out


def _mask(arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def verify_index(
    table: TableHandle, *, name: str, samples: int = DEFAULT_SAMPLES
) -> IndexVerifyReport:
    """Compare index ``name`` with the data of ``table`` (at the version it points at).

    Args:
        table: The data table.
        name: The index.
        samples: Examples kept per kind of problem.

    Returns:
        An :class:`IndexVerifyReport`; ``ok`` is False when any problem was found.

    Raises:
        IndexNotFoundError: no such index.
    """
    definition = definition_of(table, name)
    types = definition.part_types(table.metadata.row_key)
    index = open_index_table(table.catalog, definition)
    expected, data_rows = _expected(table, definition, types)
    actual = _actual(index, definition, types)
    unparsable = actual.filter(pc.is_null(actual.column("row")))
    actual = actual.filter(pc.is_valid(actual.column("row")))
    exp = expected.rename_columns([c if c == "key" else f"e.{c}" for c in expected.column_names])
    act = actual.rename_columns([c if c == "key" else f"a.{c}" for c in actual.column_names])
    joined = exp.join(act, keys="key", join_type="full outer")
    joined = joined.take(pc.sort_indices(joined, sort_keys=[("key", "ascending")]))
    in_data = pc.is_valid(joined.column("e.row"))
    in_index = pc.is_valid(joined.column("a.row"))
    marked = pc.fill_null(joined.column("a.marked"), False)
    missing = _mask(pc.and_(in_data, pc.invert(marked)))
    stale = _mask(pc.and_(in_index, pc.invert(in_data)))
    same = pa.chunked_array([pa.array(np.ones(joined.num_rows, dtype=bool))])
    for c in definition.covered:
        a, b = joined.column(f"e.{c}"), joined.column(f"a.{c}")
        equal = pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b)))
        same = pc.and_(same, equal)
    covered = _mask(pc.and_(pc.and_(in_data, marked), pc.invert(same)))
    found: list[IndexProblem] = []
    keys = joined.column("key").combine_chunks()
    checks: list[tuple[ProblemKind, np.ndarray, str]] = [
        ("missing", missing, "e.row"),
        ("stale", stale, "a.row"),
        ("covered", covered, "e.row"),
    ]
    for kind, mask, row_col in checks:
        if mask.any():
            rows = joined.column(row_col).combine_chunks()
            where = pa.array(np.flatnonzero(mask)[:samples])
            sample_types = local_types(types) if definition.local else types
            found += _samples(kind, keys.take(where), rows.take(where), sample_types, samples)
    if unparsable.num_rows:
        bad = unparsable.column("key").combine_chunks().slice(0, samples)
        found += [IndexProblem("unparsable", b"", k, ()) for k in bad.to_pylist()]
    return IndexVerifyReport(
        table=str(table.name),
        index=definition.name,
        index_table=definition.index_table,
        data_version=table.version,
        index_version=index.version,
        data_rows=data_rows,
        expected_rows=expected.num_rows,
        index_rows=int(_mask(actual.column("marked")).sum()),
        missing=int(missing.sum()),
        stale=int(stale.sum()),
        covered=int(covered.sum()),
        unparsable=unparsable.num_rows,
        samples=tuple(found),
    )

"""Merging store-file runs, and merging and resolving in one pass."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from cellstore.core.cells import CELL_SCHEMA
from cellstore.core.family import Family
from cellstore.core.semantics.arrays import (
    _PUT,
    MERGED_SCHEMA,
    _BoolArray,
    _cell_columns,
    _decoded,
    _starts,
    _with_seq,
)
from cellstore.core.semantics.resolve import _include_mask, _MergedKeys, _TableKeys
from cellstore.core.semantics.sortkey import _plan_merge
from cellstore.core.semantics.spec import ReadSpec
from cellstore.errors import InvalidArgumentError


def merge_runs(runs: Sequence[pa.Table], seqs: Sequence[int]) -> pa.Table:
    """Merge the cell tables of several store files of one family into cell order.

    Equal keys (row, qualifier, ts, type) are ordered by descending sequence number, so the
    cell of the newest file comes first (R3.2); between runs with the same sequence number
    the run listed later counts as newer (as HBase's scanner order does); within one run the
    file order is kept. Duplicates are kept: :func:`resolve` drops them (R3.3).

    Args:
        runs: Tables with the columns of :data:`~cellstore.core.cells.CELL_SCHEMA` (extra
            columns are dropped), each already in cell order.
        seqs: The sequence number of each run (same length as ``runs``).

    Returns:
        A table with schema :data:`MERGED_SCHEMA`, in cell order. Runs whose row ranges do
        not overlap are concatenated without sorting.

    Raises:
        InvalidArgumentError: if ``runs`` and ``seqs`` differ in length or a run lacks a
            cell column.

    Runtime: overlapping runs are merged by one stable integer sort of a packed fixed-width
    key (see :func:`_plan_merge`), never by comparing binary row keys cell by cell.
    """
    if len(runs) != len(seqs):
        raise InvalidArgumentError(f"got {len(runs)} runs but {len(seqs)} sequence numbers")
    plan = _plan_merge([_cell_columns(run) for run in runs], [int(s) for s in seqs])
    if plan is None:
        return MERGED_SCHEMA.empty_table()
    if plan.order is None:
        tagged = [_with_seq(t, s) for t, s in zip(plan.runs, plan.seqs, strict=True)]
        return tagged[0] if len(tagged) == 1 else pa.concat_tables(tagged)
    cells = plan.gather(plan.order)
    seq = np.repeat(np.array(plan.seqs, dtype=np.int64), [t.num_rows for t in plan.runs])
    seq_col = pa.array(seq[plan.order], pa.int64())
    return pa.Table.from_arrays([*cells.columns, seq_col], schema=MERGED_SCHEMA)


def merge_resolve(
    runs: Sequence[pa.Table], seqs: Sequence[int], *, family: Family, spec: ReadSpec
) -> pa.Table:
    """``resolve(merge_runs(runs, seqs), family=family, spec=spec)``, computed faster.

    The merge order and the semantics are computed on the key columns only; then only the
    returned cells are gathered, so the merged table of all cells is never built. The
    ``row`` and ``qualifier`` columns of ``runs`` may be dictionary-encoded (as Parquet
    reads them with ``read_dictionary``); the result always has plain binary columns.

    Args:
        runs: Tables with the cell columns, each in cell order.
        seqs: The sequence number of each run.
        family: The family's settings.
        spec: The read.

    Returns:
        Exactly what ``resolve(merge_runs(runs, seqs), ...)`` returns (schema
        :data:`~cellstore.core.cells.CELL_SCHEMA`, cell order).

    Raises:
        InvalidArgumentError: as :func:`merge_runs` and :func:`resolve` do.
    """
    return merge_resolve_rows(runs, seqs, family=family, spec=spec)[0]


def merge_resolve_rows(
    runs: Sequence[pa.Table],
    seqs: Sequence[int],
    *,
    family: Family,
    spec: ReadSpec,
    decode: bool = True,
) -> tuple[pa.Table, _BoolArray]:
    """:func:`merge_resolve`, and where the result's rows start.

    The row starts come from the row codes (or dictionary indices) the semantics compare
    anyway, so a caller merging families on the row
    (:func:`~cellstore.core.semantics.runs.merge_families`) need not compare the row keys of
    one family's cells again.

    Args:
        runs: As :func:`merge_resolve`.
        seqs: As :func:`merge_resolve`.
        family: As :func:`merge_resolve`.
        spec: As :func:`merge_resolve`.
        decode: False to leave dictionary-encoded ``row``/``qualifier`` columns of the
            runs encoded in the result where no merge was needed (a caller that gathers
            the cells again, like the family merge, then decodes them once).

    Returns:
        ``(cells, row_starts)``: the cells :func:`merge_resolve` returns (with
        ``decode=False`` possibly with dictionary-encoded ``row``/``qualifier``), and per
        cell whether its row differs from the previous cell's (True for the first cell).

    Raises:
        InvalidArgumentError: as :func:`merge_resolve` does.
    """
    if len(runs) != len(seqs):
        raise InvalidArgumentError(f"got {len(runs)} runs but {len(seqs)} sequence numbers")
    cells, live_seqs = [], []
    for run, seq in zip(runs, seqs, strict=True):
        run_cells = _cell_columns(run, keep_dictionaries=True)
        if run_cells.num_rows:
            cells.append(run_cells)
            live_seqs.append(int(seq))
    if len({tuple(c.schema.types) for c in cells}) > 1:  # mixed encodings: decode all
        cells = [c.cast(CELL_SCHEMA) for c in cells]
    plan = _plan_merge(cells, live_seqs)
    if plan is None:
        return CELL_SCHEMA.empty_table(), np.zeros(0, dtype=bool)
    newest_only = _newest_put_per_column(family, spec)
    if plan.order is None:
        table = plan.runs[0] if len(plan.runs) == 1 else pa.concat_tables(plan.runs)
        keys = _TableKeys(table)
        if newest_only and bool((keys.typ == _PUT).all()):
            include = _starts(keys.col_eq)
        else:
            include = _include_mask(keys, family, spec)
        starts = _starts(keys.row_eq)
        if not include.all():
            table = table.filter(pa.array(include, pa.bool_()))
            starts = _kept_starts(starts, include)
        return (_decoded(table) if decode else table), starts
    assert plan.typ is not None
    if newest_only and bool((plan.typ == _PUT).all()):
        row_eq, col_eq = plan.neighbours_equal()
        include = _starts(col_eq)
    else:
        merged = _MergedKeys(plan)
        row_eq = merged.row_eq
        include = _include_mask(merged, family, spec)
    starts = _kept_starts(_starts(row_eq), include)
    return plan.gather(plan.order[include]), starts


def _kept_starts(starts: _BoolArray, include: _BoolArray) -> _BoolArray:
    """Row starts of the cells ``include`` keeps, from the row starts of all cells."""
    if include.all():
        return starts
    row_ids = np.cumsum(starts)[include]
    if not row_ids.size:
        return np.zeros(0, dtype=bool)
    return _starts(row_ids[1:] == row_ids[:-1])


def _newest_put_per_column(family: Family, spec: ReadSpec) -> bool:
    """Whether, when every cell is a Put, the read returns the first cell of each column.

    That is :func:`_normal_include`'s fast path seen from the outside: a normal read of
    one version, of all columns and all time, without TTL (nothing can expire) and without
    a per-row window. Duplicate keys never start a column, so dropping them (R3.3) does
    not change the first cells. Then only the column starts are needed: no timestamps,
    types or masks in merged order.
    """
    return (
        not spec.raw
        and spec.compaction is None
        and spec.qualifiers is None
        and spec.all_time
        and family.ttl_ms is None
        and min(spec.max_versions or 1, family.max_versions) == 1
        and spec.max_results_per_family is None
        and not spec.row_offset_per_family
    )

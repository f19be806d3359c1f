"""Filter pushdown at planning: row-group pruning of column files by typed statistics.

A scan whose filters include a :class:`~cellstore.core.filters.SingleColumnValueFilter`
on ``f:q`` that compares numbers (a typed comparator, or the binary comparator with a
numeric codec), with one of ``< <= == >= >`` and ``filter_if_missing=True``, drops every
row whose newest visible ``f:q`` fails, and every row without one. Where family ``f``'s
files in a task are column files that are the whole truth for ``q`` (the base, and at
most complete bases' older companions: the condition of the wide fast path), each row
group's Parquet statistics of ``q``'s value column say whether any of its values can
pass. A group none of whose values can pass holds no row of the result, and neither does
any row of its ``[first, last]`` row range in another family (it lacks ``f:q``). The
task is then cut into narrower tasks over the rows that remain; how tasks are read does
not change.

Pruning is exact: it never removes a row the filter keeps. It is skipped (the task is
kept whole) for a family with a TTL, a read with a time range, a raw read, a column whose
codec is ``bytes``/``string``/``boolean``, absent statistics or statistics holding NaN,
a filter preceded by another kind of filter (it could change which value the filter
judges), and a family with cell files the read cannot skip.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Final

import fsspec
import pyarrow.parquet as pq

from cellstore.core.codecs import Codec
from cellstore.core.comparators import Comparator, CompareOp, ValueTest
from cellstore.core.filters import SingleColumnValueFilter
from cellstore.reader.columnar.merge import older_companions, split_bases
from cellstore.reader.plan import FamilyRead, ScanTask, _overlaps

__all__ = ["prune_tasks", "pushdown_disabled"]

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("pushdown", default=True)

#: Operators whose failing groups statistics can tell (not ``!=``).
_ORDERED: Final = frozenset(
    {
        CompareOp.LESS,
        CompareOp.LESS_OR_EQUAL,
        CompareOp.EQUAL,
        CompareOp.GREATER_OR_EQUAL,
        CompareOp.GREATER,
    }
)
_INTEGER: Final = frozenset({Codec.LONG, Codec.INT, Codec.SHORT})
_FLOATING: Final = frozenset({Codec.DOUBLE, Codec.FLOAT})

#: An inclusive row range ``[first, last]`` that holds no row of the result.
Dead = tuple[bytes, bytes]


@contextlib.contextmanager
def pushdown_disabled() -> Iterator[None]:
    """Plan scans without pruning inside the block (for comparisons and diagnosis)."""
    token = _ENABLED.set(False)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def prune_tasks(fs: fsspec.AbstractFileSystem, tasks: Sequence[ScanTask]) -> list[ScanTask]:
    """``tasks`` with the row ranges no row of the result can lie in cut out.

    A task keeps its place; it becomes zero or more tasks over the ranges that remain,
    in key order, each with the files that overlap its range (see the module docstring
    for when a task is pruned). Only footers are read.
    """
    if not _ENABLED.get():
        return list(tasks)
    out: list[ScanTask] = []
    for task in tasks:
        out.extend(_prune(fs, task))
    return out


def _prune(fs: fsspec.AbstractFileSystem, task: ScanTask) -> list[ScanTask]:
    """One task cut to the rows its pushed-down filters may keep."""
    dead: list[Dead] = []
    for fam, flt in _pushable(task):
        dead.extend(_dead_ranges(fs, task, fam, flt))
    if not dead:
        return [task]
    out = []
    for lo, hi in _keep_ranges(task.start, task.stop, dead):
        reads = tuple(_narrowed(fam, lo, hi) for fam in task.families)
        if any(r.files for r in reads):
            out.append(replace(task, start=lo, stop=hi, families=reads))
    return out


def _narrowed(fam: FamilyRead, lo: bytes, hi: bytes) -> FamilyRead:
    """``fam`` with the files whose row span meets ``[lo, hi)`` (unknown spans stay)."""
    by_path = {e.path: e for e in fam.entries}
    return replace(
        fam,
        files=tuple(
            (p, seq) for p, seq in fam.files if p not in by_path or _overlaps(by_path[p], lo, hi)
        ),
        entries=tuple(e for e in fam.entries if _overlaps(e, lo, hi)),
    )


def _pushable(task: ScanTask) -> list[tuple[FamilyRead, SingleColumnValueFilter]]:
    """The task's filters statistics can judge, with the family read each one is on."""
    if task.filters is None:
        return []
    by_name = {fam.family.name: fam for fam in task.families}
    out = []
    for f in task.filters.filters:
        if not isinstance(f, SingleColumnValueFilter):
            break  # a filter before it may change which value it judges
        fam = by_name.get(f.family)
        if fam is None or not f.filter_if_missing or f.test.op not in _ORDERED:
            continue
        spec = fam.spec
        if (
            fam.source is not None
            or spec.raw
            or spec.compaction is not None
            or spec.time_range is not None
            or fam.family.ttl is not None
            or (spec.qualifiers is not None and f.qualifier not in spec.qualifiers)
            or len(fam.entries) != len(fam.files)
        ):
            continue
        out.append((fam, f))
    return out


def _dead_ranges(
    fs: fsspec.AbstractFileSystem, task: ScanTask, fam: FamilyRead, flt: SingleColumnValueFilter
) -> list[Dead]:
    """Row ranges of ``fam``'s column files where no value of the filter's column passes."""
    bases, deltas = split_bases(fam.entries)
    if not bases or any(e.layout != "columns" for e in bases):
        return []
    if deltas:
        if not flt.latest_version_only:
            return []  # older versions in the companions would be judged too
        skipped = older_companions(fs, task, fam, bases, deltas)
        if any(d.path not in skipped for d in deltas):
            return []
    dead: list[Dead] = []
    for entry in bases:
        with task.open_file(fs, fam, entry.path) as reader:
            spec = next((s for s in reader.info.columns if s.qualifier == flt.qualifier), None)
            if spec is None:
                continue  # the file holds no value of the column: left to the read
            compare = _statistics_test(flt.test, spec.codec)
            if compare is None:
                return []
            meta = reader.parquet.metadata
            at = _column_index(meta.schema, spec.value_name)
            if at is None:
                return []  # an aliased column (a key field): not stored, no statistics
            run: Dead | None = None
            for rg in reader.row_groups():
                group = meta.row_group(rg.index)
                hopeless = _hopeless(group.column(at).statistics, group.num_rows, compare)
                if not hopeless or rg.min_row is None or rg.max_row is None:
                    if run is not None:
                        dead.append(run)
                    run = None
                    continue
                # consecutive groups of one file: the rows between them lack f:q too
                run = (rg.min_row, rg.max_row) if run is None else (run[0], rg.max_row)
            if run is not None:
                dead.append(run)
    return dead


def _column_index(schema: pq.ParquetSchema, name: str) -> int | None:
    """The Parquet column index of top-level column ``name``, or None."""
    for j in range(len(schema)):
        if schema.column(j).path == name:
            return j
    return None


#: A statistics test: ``(operator, operand, domain)``; domain ``int`` or ``float``.
_Compare = tuple[CompareOp, int | float, type]


def _statistics_test(test: ValueTest, codec: Codec) -> _Compare | None:
    """How to judge statistics of values typed with ``codec`` as ``test`` would, or None.

    Mirrors :meth:`ValueTest.matches`: a typed test compares as int64 unless the operand
    or the column is floating (then float64); the binary comparator with a codec
    compares in the codec's own type (only long/int/short with an int operand and double
    with a float operand are judged here). The test's codec must be the file's.
    """
    value = test.value
    if isinstance(value, bool) or test.codec is not codec:
        return None
    if test.comparator is Comparator.TYPED:
        if codec in _INTEGER and isinstance(value, int) and -(2**63) <= value < 2**63:
            return (test.op, value, int)
        if codec in _INTEGER | _FLOATING and isinstance(value, int | float):
            return (test.op, float(value), float)
        return None
    if test.comparator is Comparator.BINARY:
        if codec in _INTEGER and isinstance(value, int):
            return (test.op, value, int)
        if codec is Codec.DOUBLE and isinstance(value, float):
            return (test.op, value, float)
    return None


def _hopeless(stats: pq.Statistics | None, num_rows: int, compare: _Compare) -> bool:
    """Whether no value a row group's statistics describe can pass ``compare``."""
    if stats is None or num_rows <= 0:
        return False
    if stats.has_null_count and stats.null_count >= num_rows:
        return True  # no row of the group holds the column: filter_if_missing drops it
    if not stats.has_min_max:
        return False
    op, v, domain = compare
    lo, hi = stats.min, stats.max
    if domain is int:
        if not isinstance(lo, int) or not isinstance(hi, int):
            return False
    else:
        lo, hi = float(lo), float(hi)
        if math.isnan(lo) or math.isnan(hi):
            return False
    # can some x with lo <= x <= hi pass? (NaN operands pass nothing: every test is False)
    if op is CompareOp.GREATER:
        may = hi > v
    elif op is CompareOp.GREATER_OR_EQUAL:
        may = hi >= v
    elif op is CompareOp.LESS:
        may = lo < v
    elif op is CompareOp.LESS_OR_EQUAL:
        may = lo <= v
    else:
        may = lo <= v <= hi
    return not may


def _keep_ranges(start: bytes, stop: bytes, dead: Sequence[Dead]) -> list[tuple[bytes, bytes]]:
    """``[start, stop)`` minus the inclusive ranges ``dead``, as ``[lo, hi)`` ranges."""
    keep: list[tuple[bytes, bytes]] = []
    at = start
    for first, last in sorted(dead):
        if stop and first >= stop:
            break
        if first > at:
            keep.append((at, first))
        after = last + b"\x00"  # the first row past ``last``
        at = max(at, after)
    if not stop or at < stop:
        keep.append((at, stop))
    return keep

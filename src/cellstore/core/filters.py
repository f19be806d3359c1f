"""Scan filters, as HBase users know them, applied after the read semantics (R12.8).

Filters never change which cells the semantics make visible; they only judge them. The
filters here are the ones HBase users reach for first:

* :class:`SingleColumnValueFilter`: keep a row when one column's newest visible value
  compares true (``filter_if_missing`` drops rows that lack the column);
* :class:`ValueFilter`: keep the cells whose value compares true;
* :class:`ColumnPrefixFilter`: keep the cells whose qualifier starts with a prefix;
* :class:`TimestampsFilter`: keep the cells whose timestamp is listed;
* :class:`KeyOnlyFilter`: drop the values (or replace each by its 4-byte length).

Besides HBase's comparators (bytes, prefix, substring, regex), the value filters take a
*typed* comparator, our extension: ``comparator="double"`` (or ``long``, ``int``,
``short``, ``float``, ``boolean`` and their aliases; ``'double:120.0'`` in the filter
language) compares numbers. Each value is decoded with the codec the table recorded for
its column (:func:`bind_filters`, done by ``Table.scan``), or, for a column without a
recorded codec, with the comparator's own type when the value has that type's width;
a column recorded as text compares its text read as a number (``"120.5"``). Values that
do not decode never match.

A scan takes one filter or a sequence of them; a sequence must all pass (HBase's
``FilterList`` with ``MUST_PASS_ALL``), and each filter sees only the cells that passed
the filters before it, as in HBase.

Versions (R12.8, HBASE-17125): with a filter, each column's versions are counted up to the
FAMILY's ``max_versions`` (not the read's), the filters judge those cells, and then at most
``min(read versions, family max_versions)`` accepted cells per column are returned. A raw
read with a filter checks every version and returns at most the read's versions of accepted
cells per column, delete markers included (HBase's ``versionsAfterFilter``). The
per-family limit and offset (R12.7) count cells that passed the filters; a row filter
(:class:`SingleColumnValueFilter`) decides on the whole row, across families, afterwards.

Everything here is a vectorized pass over the cells of a task in result order (row, family,
qualifier ascending, ts descending); there is no per-cell Python code.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import count_in_segments, segment_starts
from cellstore.core.codecs import Codec
from cellstore.core.comparators import (
    TYPED_COMPARATORS,
    ColumnCodecs,
    Comparator,
    CompareOp,
    ValueTest,
    as_mask,
    starts_with,
)
from cellstore.core.family import Family
from cellstore.core.keys import as_bytes, split_column, to_string_binary
from cellstore.core.semantics import ReadSpec
from cellstore.errors import InvalidArgumentError

__all__ = [
    "ColumnPrefixFilter",
    "CompareOp",
    "Comparator",
    "Filter",
    "KeyOnlyFilter",
    "SingleColumnValueFilter",
    "TimestampsFilter",
    "TYPED_COMPARATORS",
    "ValueFilter",
    "apply_filters",
    "bind_filters",
    "is_typed",
    "filtered_read",
    "normalize_filters",
]

#: "Every version": what a raw read with a filter checks (HBase uses Integer.MAX_VALUE).
_ALL_VERSIONS: Final = 2**31 - 1


@dataclass(frozen=True, init=False)
class SingleColumnValueFilter:
    """Keep rows whose ``column`` value compares true (HBase ``SingleColumnValueFilter``).

    The filter judges the column's newest cell that the read makes visible (with
    ``latest_version_only=False``: any visible version) and decides for the whole row,
    across families. A row without a visible cell of the column passes unless
    ``filter_if_missing``. As in HBase, the filter sees only the cells the scan selects: a
    scan whose ``columns`` leave the filter's column out treats every row as missing it.

    Args:
        column: ``family:qualifier``.
        op: ``<``, ``<=``, ``==``, ``!=``, ``>=``, ``>`` (or HBase's names, ``LESS``...).
        value: The operand: bytes/str compare as unsigned bytes; an int compares with
            8-byte longs, a float with doubles and a bool with booleans, as written by
            HBase's ``Bytes`` (override with ``codec``). With a typed comparator, a number
            (or its text: ``"120.5"``).
        comparator: ``binary`` (default), ``prefix``, ``substring`` or ``regex``; or a
            typed comparator (our extension, :data:`TYPED_COMPARATORS`): ``long``,
            ``int``, ``short``, ``double``, ``float``, ``boolean`` (or an alias) compares
            numbers, each value decoded with the codec the table recorded for the column
            (``Table.scan`` binds it), or, without one, with the comparator's type (values
            of another width never match).
        codec: Decode stored values with exactly this codec (``long``, ``int``,
            ``double``...) before comparing; values that do not decode never match. Not
            with a typed comparator.
        filter_if_missing: Drop rows that lack the column.
        latest_version_only: Judge only the newest visible version.

    Raises:
        InvalidArgumentError: on a bad column, operator, comparator or codec.
    """

    family: str
    qualifier: bytes
    test: ValueTest
    filter_if_missing: bool
    latest_version_only: bool

    def __init__(
        self,
        column: bytes | str,
        op: str | CompareOp,
        value: bytes | str | int | float | bool,
        *,
        comparator: str | Comparator = Comparator.BINARY,
        codec: str | Codec | None = None,
        filter_if_missing: bool = False,
        latest_version_only: bool = True,
    ) -> None:
        family, qualifier = split_column(column)
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "qualifier", qualifier)
        object.__setattr__(self, "test", ValueTest.build(op, value, comparator, codec))
        object.__setattr__(self, "filter_if_missing", bool(filter_if_missing))
        object.__setattr__(self, "latest_version_only", bool(latest_version_only))


@dataclass(frozen=True, init=False)
class ValueFilter:
    """Keep the cells whose value compares true (HBase ``ValueFilter``).

    Arguments as for :class:`SingleColumnValueFilter` (without the column). With a typed
    comparator each cell's value is decoded with its own column's recorded codec (text
    read as a number; text that is none never matches).
    """

    test: ValueTest

    def __init__(
        self,
        op: str | CompareOp,
        value: bytes | str | int | float | bool,
        *,
        comparator: str | Comparator = Comparator.BINARY,
        codec: str | Codec | None = None,
    ) -> None:
        object.__setattr__(self, "test", ValueTest.build(op, value, comparator, codec))


@dataclass(frozen=True)
class ColumnPrefixFilter:
    """Keep the cells whose qualifier starts with ``prefix`` (HBase ``ColumnPrefixFilter``).

    Args:
        prefix: bytes, or str (UTF-8).
    """

    prefix: bytes

    def __init__(self, prefix: bytes | str) -> None:
        object.__setattr__(self, "prefix", as_bytes(prefix, "prefix"))


@dataclass(frozen=True)
class TimestampsFilter:
    """Keep the cells whose timestamp is one of ``timestamps`` (HBase ``TimestampsFilter``).

    Versions are counted before the filter judges (R12.8): with family ``max_versions=3``
    and ``max_versions=1`` on the read, a listed timestamp that is the 4th newest version is
    not returned.
    """

    timestamps: tuple[int, ...]

    def __init__(self, timestamps: Sequence[int]) -> None:
        values = []
        for ts in timestamps:
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise InvalidArgumentError(f"timestamps must be integers >= 0, not {ts!r}")
            values.append(int(ts))
        object.__setattr__(self, "timestamps", tuple(sorted(set(values))))


@dataclass(frozen=True)
class KeyOnlyFilter:
    """Return cells without their values (HBase ``KeyOnlyFilter``).

    With ``len_as_value`` each value becomes its length as a 4-byte big-endian int.
    """

    len_as_value: bool = False


#: Any one filter.
Filter = (
    SingleColumnValueFilter | ValueFilter | ColumnPrefixFilter | TimestampsFilter | KeyOnlyFilter
)
_FILTER_TYPES: Final = (
    SingleColumnValueFilter,
    ValueFilter,
    ColumnPrefixFilter,
    TimestampsFilter,
    KeyOnlyFilter,
)


def normalize_filters(value: object) -> tuple[Filter, ...]:
    """A scan's ``filter`` argument as a tuple of filters.

    Takes None, one filter, a sequence of them, or HBase filter-language text.

    Raises:
        InvalidArgumentError: for anything that is not a filter.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        from cellstore.core.filterparse import parse_filter  # filterparse imports this module

        try:
            return parse_filter(value)
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(
                f"{value!r} is not a filter: as HBase filter-language text, {exc}"
            ) from None
    items = list(value) if isinstance(value, list | tuple) else [value]
    for item in items:
        if not isinstance(item, _FILTER_TYPES):
            raise InvalidArgumentError(
                f"{item!r} is not a filter (use cellstore.filters: SingleColumnValueFilter, "
                "ValueFilter, ColumnPrefixFilter, TimestampsFilter, KeyOnlyFilter)"
            )
    return tuple(items)  # type: ignore[arg-type]


def is_typed(f: Filter) -> bool:
    """Whether ``f`` compares with a typed comparator (and so wants :func:`bind_filters`)."""
    test = getattr(f, "test", None)
    return isinstance(test, ValueTest) and test.comparator is Comparator.TYPED


def bind_filters(filters: Iterable[Filter], codecs: ColumnCodecs) -> tuple[Filter, ...]:
    """``filters`` with typed comparators bound to the table's recorded value codecs.

    A :class:`SingleColumnValueFilter` decodes its column with the column's codec (else
    the family's, else the comparator's own type); a :class:`ValueFilter` keeps them all
    and picks each cell's. Other filters and comparators are returned as they are.

    Args:
        filters: The scan's filters.
        codecs: ``(family, qualifier, codec)`` as the table's loads recorded them
            (qualifier None: the family's codec). ``bytes`` means "not decoded" and is
            ignored.

    A column recorded as ``string`` compares its text read as a decimal number.

    Raises:
        InvalidArgumentError: a typed single-column filter comparing booleans with a
            column of numbers or text, or numbers with a boolean column.
    """
    out: list[Filter] = []
    for f in filters:
        if isinstance(f, ValueFilter):
            out.append(_with_test(f, f.test.bound(codecs)))
        elif isinstance(f, SingleColumnValueFilter) and f.test.comparator is Comparator.TYPED:
            own = {(fam, q): c for fam, q, c in codecs}
            codec = own.get((f.family, f.qualifier), own.get((f.family, None)))
            if codec is None or codec is Codec.BYTES:
                out.append(f)
                continue
            assert f.test.codec is not None
            column = f"{f.family}:{to_string_binary(f.qualifier)}"
            if (codec is Codec.BOOLEAN) != (f.test.codec is Codec.BOOLEAN):
                raise InvalidArgumentError(
                    f"filter: column {column} holds {codec} values (recorded by its loads); "
                    f"a {f.test.codec} comparator cannot compare them (binary: compares bytes)"
                )
            out.append(_with_test(f, replace(f.test, codec=codec)))
        else:
            out.append(f)
    return tuple(out)


_F = TypeVar("_F", SingleColumnValueFilter, ValueFilter)


def _with_test(f: _F, test: ValueTest) -> _F:
    """A copy of value filter ``f`` with another test (their ``__init__`` builds one)."""
    out = copy.copy(f)
    object.__setattr__(out, "test", test)
    return out


@dataclass(frozen=True, kw_only=True)
class FilterPlan:
    """The filters of a scan and the per-family limits they apply after (picklable).

    Attributes:
        filters: The filters, all of which must pass, in order.
        version_caps: Family name to the most accepted cells each column returns after the
            filters: ``min(read versions, family max_versions)`` (R12.8), or the read's
            versions for raw reads; absent = no cap.
        windows: Family name to ``(offset, limit)`` of R12.7, applied after the filters.
    """

    filters: tuple[Filter, ...]
    version_caps: Mapping[str, int] = field(default_factory=dict)
    windows: Mapping[str, tuple[int, int | None]] = field(default_factory=dict)


def filtered_read(
    spec: ReadSpec, family: Family
) -> tuple[ReadSpec, int, tuple[int, int | None] | None]:
    """How a read with filters runs on one family (R12.7, R12.8).

    HBase's ``ScanQueryMatcher#getTrackers`` counts versions up to the family's
    ``max_versions`` when a normal read has a filter (every version for a raw read), and
    ``UserScanQueryMatcher`` then returns at most ``versionsAfterFilter`` accepted cells per
    column: ``min(read versions, family max_versions)``, or the read's versions when raw.
    The per-family limit/offset count cells after the filters, so they move out of the
    semantics pass too.

    Returns:
        The spec for the semantics pass, the per-column cap after the filters, and the
        ``(offset, limit)`` window (None when the read has none).
    """
    read_versions = spec.max_versions or 1
    check = _ALL_VERSIONS if spec.raw else family.max_versions
    cap = read_versions if spec.raw else min(read_versions, family.max_versions)
    window = None
    if spec.max_results_per_family is not None or spec.row_offset_per_family:
        window = (spec.row_offset_per_family, spec.max_results_per_family)
    engine_spec = replace(
        spec, max_versions=check, max_results_per_family=None, row_offset_per_family=0
    )
    return engine_spec, cap, window


def apply_filters(cells: pa.Table, plan: FilterPlan) -> pa.Table:
    """Apply a scan's filters to one task's visible cells (in result order).

    Args:
        cells: Columns ``row, family, qualifier, ts, type, value``; rows together, and in
            each row families, qualifiers ascending and versions newest first.
        plan: The filters and the limits to apply after them.

    Returns:
        The cells that pass, same order and schema (values replaced by
        :class:`KeyOnlyFilter`).
    """
    n = cells.num_rows
    if n == 0 or not plan.filters:
        return cells
    rows = cells.column("row")
    fams = cells.column("family")
    quals = cells.column("qualifier")
    row_start = segment_starts(rows)
    fam_start = segment_starts(rows, fams)
    col_start = segment_starts(rows, fams, quals)
    row_id = np.cumsum(row_start) - 1
    keep = np.ones(n, dtype=bool)
    drop_row = np.zeros(int(row_id[-1]) + 1, dtype=bool)
    key_only: KeyOnlyFilter | None = None
    for f in plan.filters:
        if isinstance(f, KeyOnlyFilter):
            key_only = f
        elif isinstance(f, ColumnPrefixFilter):
            keep &= as_mask(starts_with(quals, f.prefix))
        elif isinstance(f, TimestampsFilter):
            listed = np.asarray(f.timestamps, dtype=np.int64)
            keep &= np.isin(cells.column("ts").to_numpy(), listed)
        elif isinstance(f, ValueFilter):
            keep &= f.test.matches(cells.column("value"), "value", families=fams, qualifiers=quals)
        else:
            drop_row |= _row_fails(cells, f, keep, row_id, drop_row.size)
    if plan.version_caps:
        keep &= _within_caps(keep, col_start, fams, plan.version_caps)
    if plan.windows:
        keep &= _within_windows(keep, fam_start, fams, plan.windows)
    keep &= ~drop_row[row_id]
    out = cells if keep.all() else cells.filter(pa.array(keep, pa.bool_()))
    if key_only is not None:
        out = _strip_values(out, key_only)
    return out


def _row_fails(
    cells: pa.Table, f: SingleColumnValueFilter, keep: np.ndarray, row_id: np.ndarray, rows: int
) -> np.ndarray:
    """Rows a single-column value filter drops, judged on the cells still kept."""
    target = keep & as_mask(pc.equal(cells.column("family"), f.family))
    target &= as_mask(pc.equal(cells.column("qualifier"), pa.scalar(f.qualifier, pa.binary())))
    idx = np.flatnonzero(target)
    found = np.zeros(rows, dtype=bool)
    found[row_id[idx]] = True
    if f.latest_version_only and idx.size:
        # The newest visible version is the first target cell of its row.
        first = np.ones(idx.size, dtype=bool)
        first[1:] = row_id[idx[1:]] != row_id[idx[:-1]]
        idx = idx[first]
    values = cells.column("value").take(pa.array(idx, pa.int64()))
    hits = f.test.matches(values, f"{f.family}:{f.qualifier!r}")
    matched = np.zeros(rows, dtype=bool)
    matched[row_id[idx[hits]]] = True
    result: np.ndarray = found & ~matched
    if f.filter_if_missing:
        result |= ~found
    return result


def _within_caps(
    keep: np.ndarray, col_start: np.ndarray, fams: pa.ChunkedArray, caps: Mapping[str, int]
) -> np.ndarray:
    rank = count_in_segments(keep, col_start)
    cap = _per_family(fams, caps, default=np.iinfo(np.int64).max)
    result: np.ndarray = rank <= cap
    return result


def _within_windows(
    keep: np.ndarray,
    fam_start: np.ndarray,
    fams: pa.ChunkedArray,
    windows: Mapping[str, tuple[int, int | None]],
) -> np.ndarray:
    rank = count_in_segments(keep, fam_start)
    big = np.iinfo(np.int64).max // 2
    offset = _per_family(fams, {k: v[0] for k, v in windows.items()}, default=0)
    limit = _per_family(
        fams, {k: big if v[1] is None else v[1] for k, v in windows.items()}, default=big
    )
    result: np.ndarray = (rank > offset) & (rank <= offset + limit)
    return result


def _per_family(fams: pa.ChunkedArray, values: Mapping[str, int], *, default: int) -> np.ndarray:
    out = np.full(len(fams), default, dtype=np.int64)
    for name, value in values.items():
        out[as_mask(pc.equal(fams, name))] = value
    return out


def _strip_values(cells: pa.Table, f: KeyOnlyFilter) -> pa.Table:
    i = cells.schema.get_field_index("value")
    if f.len_as_value:
        lengths = pc.binary_length(cells.column("value")).to_numpy(zero_copy_only=False)
        packed = np.asarray(lengths, dtype=">i4").tobytes()
        offsets = np.arange(0, 4 * (len(lengths) + 1), 4, dtype=np.int32)
        values = pa.Array.from_buffers(
            pa.binary(), len(lengths), [None, pa.py_buffer(offsets), pa.py_buffer(packed)]
        )
    else:
        values = pa.repeat(pa.scalar(b"", pa.binary()), cells.num_rows)
    return cells.set_column(i, cells.schema.field(i), values)

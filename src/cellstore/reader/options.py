"""The options of a scan, defined once: :class:`ScanOptions` and its keyword form.

Every layer that reads takes or builds a :class:`ScanOptions`: ``Table.scan``/``get`` and
``HBaseTable.scan``/``get`` (``scan(options, **overrides)``), the planner and executor
(:class:`~cellstore.reader.Scan`), the Spark source (option strings mapped through each
field's :data:`text form <TextForm>`) and the CLI (one flag per field,
``cellstore.cli.scanflags``).

Adding a scan option: a field here (its type in :class:`ScanKwargs` too, and its text form
if Spark may set it), the code that acts on it (``reader/scan.py``, ``reader/plan.py`` or
``reader/execute.py``), and its flag in ``cli/scanflags.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, Final, Literal, TypeAlias, TypedDict, TypeVar, cast

from cellstore.core.filters import Filter, normalize_filters
from cellstore.errors import InvalidArgumentError

__all__ = [
    "SCAN_OPTION_NAMES",
    "FamilyTimeRanges",
    "FrozenMap",
    "ScanKwargs",
    "ScanOptions",
    "TextForm",
    "as_names",
    "normalize_family_time_ranges",
    "scan_options",
    "text_forms",
]

K = TypeVar("K")
V = TypeVar("V")


def as_names(values: Iterable[Any] | bytes | str | None) -> tuple[Any, ...] | None:
    """One column/family name or an iterable of them, as a tuple (None stays None).

    What :class:`ScanOptions` does with ``columns``/``families``.

    >>> as_names("cf"), as_names(["a", "b"]), as_names(None)
    (('cf',), ('a', 'b'), None)
    """
    if values is None:
        return None
    if isinstance(values, bytes | str):
        return (values,)
    return tuple(values)


#: What ``family_time_ranges`` takes: family name to ``(min, max)``, as a mapping or pairs.
FamilyTimeRanges: TypeAlias = Mapping[str, tuple[int, int]] | Iterable[tuple[str, tuple[int, int]]]


def normalize_family_time_ranges(
    ranges: FamilyTimeRanges | None,
) -> tuple[tuple[str, tuple[int, int]], ...] | None:
    """``family_time_ranges`` in :class:`ScanOptions`' form.

    A mapping (or pairs) of family name to ``(min, max)`` becomes a sorted tuple of pairs
    (hashable, so the options stay frozen); None and empty stay None.

    >>> normalize_family_time_ranges({"b": (0, 15), "a": [5, 9]})
    (('a', (5, 9)), ('b', (0, 15)))

    Raises:
        InvalidArgumentError: a family name that is not a string, a range that is not two
            integers, or a family given twice.
    """
    if ranges is None:
        return None
    items = list(ranges.items()) if isinstance(ranges, Mapping) else list(ranges)
    out: dict[str, tuple[int, int]] = {}
    for item in items:
        try:
            fam, rng = item
            lo, hi = rng
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"family_time_ranges: expected family -> (min, max), got {item!r}"
            ) from None
        if not isinstance(fam, str):
            raise InvalidArgumentError(f"family_time_ranges: family {fam!r} is not a string")
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidArgumentError(
                    f"family_time_ranges: the range of family {fam!r} must be two integers "
                    f"(min, max), got {rng!r}"
                )
        if fam in out:
            raise InvalidArgumentError(f"family_time_ranges: family {fam!r} is given twice")
        out[fam] = (int(lo), int(hi))
    return tuple(sorted(out.items())) or None


class FrozenMap(Mapping[K, V]):
    """A read-only mapping in insertion order, so :class:`ScanOptions` stays frozen.

    Picklable; hashable when its values are.

    >>> m = FrozenMap({"user": "u1"})
    >>> m == {"user": "u1"}, dict(m)
    (True, {'user': 'u1'})
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._items: dict[K, V] = dict(items)

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __repr__(self) -> str:
        return repr(self._items)

    def __getstate__(self) -> dict[K, V]:
        return self._items

    def __setstate__(self, state: dict[K, V]) -> None:
        self._items = state


#: How an option is written as one string (Spark's options), or None: not settable so.
#: ``row``: a row key (UTF-8); ``names``: comma-separated or a JSON list; ``range``:
#: ``min,max`` or a JSON pair; ``family_ranges``: ``family:min:max,...``; ``int``;
#: ``bool``; ``word`` (lower-cased); ``pairs``: ``a=x,b=y`` or a JSON object; ``filter``:
#: HBase's filter language; ``json``: a JSON object (lists become tuples); ``codecs``:
#: ``table`` (the recorded codecs) or ``pairs``.
TextForm: TypeAlias = Literal[
    "row",
    "names",
    "range",
    "family_ranges",
    "int",
    "bool",
    "word",
    "pairs",
    "filter",
    "json",
    "codecs",
]


def _text(form: TextForm | None) -> dict[str, TextForm | None]:
    """A field's metadata: its text form (see :data:`TextForm`)."""
    return {"text": form}


@dataclass(frozen=True, kw_only=True)
class ScanOptions:
    """Everything a scan or get is asked for, with HBase's read semantics (frozen).

    Built with keywords (``ScanOptions(start_row="a", max_versions=3)``), or by
    ``Table.scan(options, **overrides)`` from keywords alone. Collections are stored in a
    frozen form: ``columns``/``families`` as tuples, ``family_time_ranges`` as sorted
    pairs, ``filter`` as a tuple, ``column_types``/``key`` as a :class:`FrozenMap`.

    Attributes:
        start_row: First row, inclusive (R12.1); None = from the first row.
        stop_row: Row after the last, exclusive; None = to the end. start == stop
            returns nothing.
        row_prefix: Only rows starting with this prefix (R12.4); not with start/stop.
        key: For a table with a row-key spec: predicates on the key fields, in key
            order: ``{"user": "alice", "ts": (lo, hi)}`` is user == "alice" and
            lo <= ts < hi (a 2-tuple is a range and must come last; either bound may
            be None). They become row ranges, one per salt bucket unless the salt is
            known. Not with ``start_row``/``stop_row``/``row_prefix``.
        columns: ``family:qualifier`` names (str or bytes); a bare ``family`` means the
            whole family (R11.1).
        families: Whole families to read. Nothing given = every family (but those the
            table property ``hidden-families`` lists).
        time_range: ``(min_ts, max_ts)``, min inclusive, max exclusive (R7.1).
        family_time_ranges: ``{"family": (min_ts, max_ts)}``: that family's own time
            range, replacing ``time_range``/``timestamp`` for it (HBase's
            ``setColumnFamilyTimeRange``, R7.1), applied before version counting and
            to the delete markers the read applies, in raw reads too. An unknown
            family or ``min > max`` is an InvalidArgumentError naming it.
        timestamp: Only this exact timestamp (``[ts, ts+1)``, R7.4).
        max_versions: Versions per column; default 1, capped by the family's
            ``max_versions`` except for raw scans (R6.1, R10.2).
        raw: Return delete markers and masked cells as stored (R10).
        reversed: Rows in descending order; cells inside a row keep their order (R2.4).
            As in HBase, ``start_row`` is then the higher bound (inclusive) and
            ``stop_row`` the lower bound (exclusive) (R12.5).
        limit: At most this many rows (``Scan#setLimit``).
        filter: One filter from :mod:`cellstore.filters` or a sequence of them that
            must all pass, or HBase filter-language text (``"ValueFilter(=,
            'substring:x')"``; typed comparators such as ``'double:120.0'`` are our
            extension). Filters judge the cells the semantics return and never change
            the semantics; with a filter, versions are counted up to the family's
            ``max_versions`` before the filter judges them (R12.8).
        max_results_per_family: At most this many cells per row and family (R12.7).
        row_offset_per_family: Skip this many cells at the start of each row and
            family (R12.7).
        shape: ``"cells"`` (one result row per cell version) or ``"wide"`` (one row per
            row key, a ``family:qualifier`` column each with its newest value).
        column_types: For the wide shape, ``{"family:qualifier": codec}`` decodes those
            columns with HBase's ``Bytes`` encodings (``long``/``int64``, ``int``,
            ``short``, ``double``, ``float``, ``boolean``, ``string``, ``bytes``).
            ``"table"``: the codecs the table's mapping-based loads recorded
            (``Table.value_codecs()``). Naming a column that no mapping-based load
            recorded, on a table with recorded codecs, warns (CellstoreWarning).
        decode_errors: ``"raise"`` (default) or ``"null"`` for values that do not
            decode with their column's codec.
        key_columns: Add the row key's decoded fields as columns after ``row`` (default:
            on for the wide shape, off for cells; needs a row-key spec).
        memory_budget: Most bytes of decoded cells one task may read; larger regions
            are cut at row boundaries using row-group statistics (HFile data blocks for
            an HBase table; default 256 MiB).
        now_ms: "Now" for TTL expiry (default: the clock), so TTL reads are testable.
        version: Read this table version (an as-of read; default: the version the
            handle points at). HBase tables have no versions.

    On a salted table, ``start_row``, ``stop_row`` and ``row_prefix`` are row keys
    without the salt byte: the scan fans out to one range per salt bucket, returns
    rows without the salt byte, bucket by bucket (so not in global key order).

    Raises:
        InvalidArgumentError: a malformed ``family_time_ranges``, ``filter``,
            ``column_types`` or ``key`` (the rest is checked against the table when the
            scan is planned).
    """

    start_row: bytes | str | None = field(default=None, metadata=_text("row"))
    stop_row: bytes | str | None = field(default=None, metadata=_text("row"))
    row_prefix: bytes | str | None = field(default=None, metadata=_text("row"))
    key: Mapping[str, Any] | None = field(default=None, metadata=_text("json"))
    columns: Iterable[bytes | str] | bytes | str | None = field(
        default=None, metadata=_text("names")
    )
    families: Iterable[str] | str | None = field(default=None, metadata=_text("names"))
    time_range: tuple[int, int] | None = field(default=None, metadata=_text("range"))
    family_time_ranges: FamilyTimeRanges | None = field(
        default=None, metadata=_text("family_ranges")
    )
    timestamp: int | None = field(default=None, metadata=_text("int"))
    max_versions: int | None = field(default=None, metadata=_text("int"))
    raw: bool = field(default=False, metadata=_text("bool"))
    reversed: bool = field(default=False, metadata=_text(None))
    limit: int | None = field(default=None, metadata=_text(None))
    filter: Filter | Sequence[Filter] | str | None = field(default=None, metadata=_text("filter"))
    max_results_per_family: int | None = field(default=None, metadata=_text("int"))
    row_offset_per_family: int = field(default=0, metadata=_text("int"))
    shape: str = field(default="cells", metadata=_text("word"))
    column_types: Mapping[str, str] | Literal["table"] | None = field(
        default=None, metadata=_text("codecs")
    )
    decode_errors: str = field(default="raise", metadata=_text("word"))
    key_columns: bool | None = field(default=None, metadata=_text("bool"))
    memory_budget: int | None = field(default=None, metadata=_text("int"))
    now_ms: int | None = field(default=None, metadata=_text("int"))
    version: int | None = field(default=None, metadata=_text("int"))

    def __post_init__(self) -> None:
        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        put("columns", as_names(self.columns))
        put("families", as_names(self.families))
        put("family_time_ranges", normalize_family_time_ranges(self.family_time_ranges))
        put("filter", normalize_filters(self.filter) or None)
        if self.time_range is not None:
            put("time_range", tuple(self.time_range))
        for name in ("column_types", "key"):
            value = getattr(self, name)
            if value is None or (name == "column_types" and value == "table"):
                continue
            if not isinstance(value, Mapping):
                alternative = " or 'table'" if name == "column_types" else ""
                raise InvalidArgumentError(f"{name} must be a mapping{alternative}, not {value!r}")
            put(name, FrozenMap(value) if value or name == "key" else None)

    def changes(self) -> dict[str, Any]:
        """The options that differ from their defaults, as keywords (``ScanKwargs``).

        >>> ScanOptions(max_versions=3, raw=False).changes()
        {'max_versions': 3}
        """
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != (None if f.default is MISSING else f.default)
        }


class ScanKwargs(TypedDict, total=False):
    """:class:`ScanOptions` as keyword arguments (``Table.scan(**overrides)``).

    The same names and types as the dataclass's fields (a test keeps them equal).
    """

    start_row: bytes | str | None
    stop_row: bytes | str | None
    row_prefix: bytes | str | None
    key: Mapping[str, Any] | None
    columns: Iterable[bytes | str] | bytes | str | None
    families: Iterable[str] | str | None
    time_range: tuple[int, int] | None
    family_time_ranges: FamilyTimeRanges | None
    timestamp: int | None
    max_versions: int | None
    raw: bool
    reversed: bool
    limit: int | None
    filter: Filter | Sequence[Filter] | str | None
    max_results_per_family: int | None
    row_offset_per_family: int
    shape: str
    column_types: Mapping[str, str] | Literal["table"] | None
    decode_errors: str
    key_columns: bool | None
    memory_budget: int | None
    now_ms: int | None
    version: int | None


#: The names of every scan option, in :class:`ScanOptions`' field order.
SCAN_OPTION_NAMES: Final[tuple[str, ...]] = tuple(f.name for f in fields(ScanOptions))


def scan_options(
    options: ScanOptions | None, overrides: Mapping[str, Any], *, caller: str = "scan"
) -> ScanOptions:
    """``options`` (default: all defaults) with ``overrides`` replacing its fields.

    What ``scan(options, **overrides)`` and ``get(row, options, **overrides)`` do first.

    >>> scan_options(ScanOptions(limit=5), {"raw": True}).changes()
    {'raw': True, 'limit': 5}

    Raises:
        TypeError: ``options`` that is not a :class:`ScanOptions`, or an override that
            is not a scan option (as for an unknown keyword argument).
    """
    if options is not None and not isinstance(options, ScanOptions):
        raise TypeError(
            f"{caller}() takes a ScanOptions (or keyword options), not {type(options).__name__}"
        )
    unknown = sorted(set(overrides) - set(SCAN_OPTION_NAMES))
    if unknown:
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    base = options if options is not None else ScanOptions()
    return replace(base, **overrides) if overrides else base


def text_forms() -> dict[str, TextForm]:
    """Each option that can be given as a string (Spark's options), with its form."""
    out: dict[str, TextForm] = {}
    for f in fields(ScanOptions):
        form = f.metadata.get("text")
        if form is not None:
            out[f.name] = cast(TextForm, form)
    return out

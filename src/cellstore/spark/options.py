"""Spark data source options: strings in, typed scan and load settings out (no pyspark).

Spark hands a data source its options as a case-insensitive ``str -> str`` mapping. This
module turns them into :class:`~cellstore.reader.ScanOptions` and into load settings, and
computes what a pushed-down row-key filter does to the scan's row range. It imports no
pyspark, so it is tested without a JVM.

A read's scan options are mapped by a table, not by hand: every
:class:`~cellstore.reader.ScanOptions` field with a text form
(:func:`cellstore.reader.options.text_forms`) is a Spark option of the same name, parsed by
the parser of its form (:data:`_PARSERS`); a new scan option needs nothing here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from cellstore.errors import InvalidArgumentError
from cellstore.loader import DEFAULT_MAX_FILE_BYTES, LoadMapping
from cellstore.loader.mapping import TimeUnit
from cellstore.reader import ScanKwargs, ScanOptions
from cellstore.reader.options import TextForm, text_forms
from cellstore.reader.plan import row_range
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS

__all__ = [
    "DEFAULT_WRITE_MEMORY",
    "HBASE_OPTIONS",
    "READ_OPTIONS",
    "WRITE_OPTIONS",
    "HBaseSource",
    "ReadOptions",
    "RowBounds",
    "WriteOptions",
    "missing_columns",
    "parse_bool",
    "parse_mapping",
]

#: Default memory budget of one Spark write task (bytes of input records held at once).
DEFAULT_WRITE_MEMORY: Final = 256 << 20

_COMMON: Final = frozenset({"root", "table", "storage_options", "path"})
#: Options that read an HBase root directory or snapshot in place instead of a warehouse.
HBASE_OPTIONS: Final = frozenset({"hbase.root", "hbase.snapshot", "hbase.table", "hbase.use_meta"})
#: Read options an HBase source has no use for (HBase tables have no versions or row-key spec).
_NOT_FOR_HBASE: Final = frozenset({"root", "table", "path", "version", "key", "key_columns"})
#: Options a read understands (Spark lower-cases option names): the scan options with a
#: text form, the location and ``pushdown``.
READ_OPTIONS: Final = _COMMON | HBASE_OPTIONS | frozenset({"pushdown", *text_forms()})
#: Options a write understands.
WRITE_OPTIONS: Final = _COMMON | frozenset(
    {
        "mapping",
        "row_key",
        "columns",
        "timestamp",
        "timestamp_unit",
        "operation",
        "load_id",
        "skip_bad_records",
        "memory_budget",
        "max_file_bytes",
        "row_group_cells",
        "now_ms",
    }
)


def parse_bool(text: str, *, name: str) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``), any case.

    Raises:
        InvalidArgumentError: anything else, naming the option.
    """
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise InvalidArgumentError(f"option {name!r} must be true or false, got {text!r}")


def _int(text: str, *, name: str) -> int:
    try:
        return int(text.strip().replace("_", ""))
    except ValueError as e:
        raise InvalidArgumentError(f"option {name!r} must be an integer, got {text!r}") from e


def _json(text: str, *, name: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise InvalidArgumentError(f"option {name!r} is not valid JSON: {e}") from e


def _names(text: str, *, name: str) -> tuple[str, ...]:
    """A JSON list of strings, or comma-separated names."""
    if text.lstrip().startswith("["):
        doc = _json(text, name=name)
        if not isinstance(doc, list) or not all(isinstance(v, str) for v in doc):
            raise InvalidArgumentError(f"option {name!r} must be a JSON list of strings")
        return tuple(doc)
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _pairs(text: str, *, name: str) -> dict[str, str]:
    """A JSON object of strings, or ``a=x,b=y``."""
    if text.lstrip().startswith("{"):
        doc = _json(text, name=name)
        if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
            raise InvalidArgumentError(f"option {name!r} must be a JSON object of strings")
        return {str(k): v for k, v in doc.items()}
    out: dict[str, str] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        key, sep, value = item.rpartition("=")
        if not sep or not key:
            raise InvalidArgumentError(
                f"option {name!r}: expected name=value items separated by commas, got {item!r}"
            )
        out[key.strip()] = value.strip()
    return out


def _codecs(text: str, *, name: str) -> dict[str, str] | str:
    """``table`` (the codecs the table's loads recorded), or :func:`_pairs`' forms."""
    if text.strip().lower() == "table":
        return "table"
    return _pairs(text, name=name)


def _pushdown(text: str) -> bool | None:
    """The ``pushdown`` option: ``auto`` (None) or a boolean."""
    if text.strip().lower() == "auto":
        return None
    try:
        return parse_bool(text, name="pushdown")
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"option 'pushdown' must be auto, true or false, got {text!r}"
        ) from None


def _storage_options(options: Mapping[str, str]) -> dict[str, Any]:
    text = options.get("storage_options")
    if not text:
        return {}
    doc = _json(text, name="storage_options")
    if not isinstance(doc, dict):
        raise InvalidArgumentError("option 'storage_options' must be a JSON object")
    return doc


def _location(options: Mapping[str, str], known: frozenset[str]) -> tuple[str, str]:
    unknown = sorted(k for k in options if k.lower() not in known)
    if unknown:
        hint = ""
        if any(k.lower() in HBASE_OPTIONS for k in unknown):
            hint = (
                " (HBase data is read in place, never written from Spark: write HFiles for "
                "HBase's bulk load with cellstore.jobs.export_hfiles)"
            )
        raise InvalidArgumentError(
            f"unknown cellstore option(s) {unknown}; known: {sorted(known)}{hint}"
        )
    root = options.get("root")
    table = options.get("table") or options.get("path")
    if not root:
        raise InvalidArgumentError("option 'root' (the warehouse root URL) is required")
    if not table:
        raise InvalidArgumentError("option 'table' (the table name) is required")
    return root, table


def _family_time_ranges(
    text: str, *, name: str = "family_time_ranges"
) -> tuple[tuple[str, tuple[int, int]], ...]:
    """``"b:0:15,c:5:9"`` -> ``(("b", (0, 15)), ("c", (5, 9)))`` (R7.1, per family).

    Raises:
        InvalidArgumentError: an item that is not ``family:min:max`` with integer bounds.
    """
    out = []
    for item in text.split(","):
        parts = item.strip().rsplit(":", 2)
        if len(parts) != 3 or not parts[0]:
            raise InvalidArgumentError(
                f"option {name!r}: {item.strip()!r} is not family:min:max (e.g. 'b:0:15,c:5:9')"
            )
        out.append((parts[0], (_int(parts[1], name=name), _int(parts[2], name=name))))
    return tuple(out)


def _time_range(text: str, *, name: str) -> tuple[int, int]:
    """``"min,max"`` or a JSON pair, in ms."""
    parts = _json(text, name=name) if text.lstrip().startswith("[") else text.split(",")
    if len(parts) != 2:
        raise InvalidArgumentError(f"option {name!r} must be 'min,max' (ms)")
    return (_int(str(parts[0]), name=name), _int(str(parts[1]), name=name))


def _json_object(text: str, *, name: str) -> dict[str, Any]:
    """A JSON object; its lists become tuples (``key``'s ranges)."""
    doc = _json(text, name=name)
    if not isinstance(doc, dict):
        raise InvalidArgumentError(f"option {name!r} must be a JSON object")
    return {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()}


def _filter(text: str, *, name: str) -> Any:
    from cellstore.core.filterparse import parse_filter

    return parse_filter(text)


def _word(text: str, *, name: str) -> str:
    return text.strip().lower()


#: The parser of each text form of a scan option (``row`` options make the row bounds).
_PARSERS: Final[Mapping[TextForm, Callable[..., Any]]] = {
    "names": _names,
    "range": _time_range,
    "family_ranges": _family_time_ranges,
    "int": _int,
    "bool": parse_bool,
    "word": _word,
    "pairs": _pairs,
    "codecs": _codecs,
    "filter": _filter,
    "json": _json_object,
}


def _scan_kwargs(opts: Mapping[str, str]) -> ScanKwargs:
    """The scan options given in lower-cased ``opts``, parsed (row bounds left out)."""
    out: dict[str, Any] = {}
    for name, form in text_forms().items():
        if form != "row" and opts.get(name):
            out[name] = _PARSERS[form](opts[name], name=name)
    return cast(ScanKwargs, out)


@dataclass(frozen=True)
class RowBounds:
    """A row range ``[lo, hi)`` in key order (salt-free); ``hi == b""`` is unbounded.

    Attributes:
        lo: First row, inclusive (``b""``: from the first row).
        hi: Row after the last, exclusive (``b""``: to the end).
        empty: No row can match.
    """

    lo: bytes = b""
    hi: bytes = b""
    empty: bool = False

    def intersect(self, lo: bytes = b"", hi: bytes = b"") -> RowBounds:
        """This range narrowed by ``[lo, hi)``."""
        if self.empty:
            return self
        new_lo = max(self.lo, lo)
        new_hi = min(h for h in (self.hi, hi) if h) if (self.hi or hi) else b""
        return RowBounds(new_lo, new_hi, bool(new_hi) and new_lo >= new_hi)

    def at_least(self, row: bytes) -> RowBounds:
        """Rows ``>= row``."""
        return self.intersect(lo=row)

    def above(self, row: bytes) -> RowBounds:
        """Rows ``> row`` (the next key after ``row`` is ``row + 0x00``)."""
        return self.intersect(lo=row + b"\x00")

    def below(self, row: bytes) -> RowBounds:
        """Rows ``< row``."""
        if not row:  # nothing sorts before the empty key
            return RowBounds(self.lo, self.hi, True)
        return self.intersect(hi=row)

    def at_most(self, row: bytes) -> RowBounds:
        """Rows ``<= row``."""
        return self.intersect(hi=row + b"\x00")

    def equal(self, row: bytes) -> RowBounds:
        """Only ``row``."""
        return self.intersect(lo=row, hi=row + b"\x00")

    def prefix(self, prefix: bytes) -> RowBounds:
        """Rows starting with ``prefix``."""
        from cellstore.reader.plan import prefix_stop_row

        return self.intersect(lo=prefix, hi=prefix_stop_row(prefix))


@dataclass(frozen=True)
class HBaseSource:
    """An HBase table or snapshot read in place.

    Options ``hbase.root`` and ``hbase.snapshot`` or ``hbase.table`` name it.

    Attributes:
        root: The HBase root directory (or an ``ExportSnapshot`` target) URL.
        snapshot: The snapshot's name, or None.
        table: The table's name (``ns:table``), or None.
        use_meta: Take a root's regions from ``hbase:meta`` when it lists the table
            (option ``hbase.use_meta``, default true; see ``hbase.open_table``).
    """

    root: str
    snapshot: str | None = None
    table: str | None = None
    use_meta: bool = True

    @property
    def name(self) -> str:
        """``snapshot NAME`` or ``table NAME`` (for messages)."""
        return f"snapshot {self.snapshot}" if self.snapshot else f"table {self.table}"


def _hbase_source(options: Mapping[str, str]) -> HBaseSource | None:
    """The HBase source of lower-cased read options, or None for a warehouse table.

    Raises:
        InvalidArgumentError: HBase options mixed with warehouse ones, or not exactly one
            of ``hbase.snapshot`` and ``hbase.table``.
    """
    given = {k: v for k, v in options.items() if k in HBASE_OPTIONS and v}
    if not given:
        return None
    clash = sorted(k for k in options if k in _NOT_FOR_HBASE)
    if clash:
        raise InvalidArgumentError(
            f"option(s) {clash} do not apply to an HBase source (hbase.root, with "
            "hbase.snapshot or hbase.table); HBase tables have no versions or row-key spec"
        )
    root = given.get("hbase.root")
    if not root:
        raise InvalidArgumentError(
            "option 'hbase.root' (the HBase root directory or ExportSnapshot target) is "
            "required with 'hbase.snapshot' or 'hbase.table'"
        )
    snapshot, table = given.get("hbase.snapshot"), given.get("hbase.table")
    if bool(snapshot) == bool(table):
        raise InvalidArgumentError(
            "give exactly one of options 'hbase.snapshot' (a snapshot's name) and "
            "'hbase.table' (ns:table) with 'hbase.root'"
        )
    use_meta = parse_bool(options.get("hbase.use_meta", "true"), name="hbase.use_meta")
    return HBaseSource(root, snapshot, table, use_meta)


@dataclass(frozen=True, kw_only=True)
class ReadOptions:
    """A Spark read's options, parsed (see :data:`READ_OPTIONS` and ``docs/cluster.md``).

    Attributes:
        root: Warehouse root URL (the HBase root for an HBase source).
        table: Table name (``snapshot NAME``/``table NAME`` for an HBase source).
        storage_options: fsspec options for the root.
        hbase: The HBase table or snapshot to read in place, or None for a cellstore table.
        scan: The scan options given (``ScanOptions`` fields as keywords) other than the
            row range; ``version`` among them reads that table version (as-of read).
        bounds: The row range from ``start_row``/``stop_row``/``row_prefix``.
        pushdown: Whether the reader takes Spark's filters on ``row`` and ``family``:
            True, False, or None (option ``auto``, the default) for "where Spark plans
            each query afresh" (see :func:`cellstore.spark.source.pushdown_enabled`;
            Spark 4.1-4.3 reuse a DataFrame's last pushed-down plan for later queries).
            Needs ``spark.sql.python.filterPushdown.enabled`` when on.
    """

    root: str
    table: str
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    hbase: HBaseSource | None = None
    scan: ScanKwargs = field(default_factory=lambda: ScanKwargs())
    bounds: RowBounds = RowBounds()
    pushdown: bool | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Parse Spark's option strings.

        Raises:
            InvalidArgumentError: a missing, unknown or malformed option, naming it.
        """
        opts = {k.lower(): v for k, v in options.items()}
        hbase = _hbase_source(opts)
        if hbase is None:
            root, table = _location(opts, READ_OPTIONS)
        else:
            _location({"root": hbase.root, "table": hbase.name, **opts}, READ_OPTIONS)
            root, table = hbase.root, hbase.name
        rng = row_range(
            start_row=opts.get("start_row") or None,
            stop_row=opts.get("stop_row") or None,
            row_prefix=opts.get("row_prefix") or None,
        )
        bounds = RowBounds(*rng) if rng is not None else RowBounds(empty=True)
        return cls(
            root=root,
            table=table,
            storage_options=_storage_options(opts),
            hbase=hbase,
            scan=_scan_kwargs(opts),
            bounds=bounds,
            pushdown=_pushdown(opts.get("pushdown", "auto")),
        )

    @property
    def shape(self) -> str:
        """``cells`` or ``wide``."""
        return str(self.scan.get("shape", "cells"))

    @property
    def version(self) -> int | None:
        """The table version to read (as-of read), or None for the latest."""
        return self.scan.get("version")

    def scan_kwargs(self, bounds: RowBounds | None = None) -> ScanKwargs:
        """The scan options as keywords, for the row range ``bounds`` (default: own)."""
        b = self.bounds if bounds is None else bounds
        kwargs = ScanKwargs(**self.scan)
        if b.lo:
            kwargs["start_row"] = b.lo
        if b.hi:
            kwargs["stop_row"] = b.hi
        return kwargs

    def scan_options(self, bounds: RowBounds | None = None) -> ScanOptions:
        """The :class:`~cellstore.reader.ScanOptions` of the row range ``bounds``."""
        return ScanOptions(**self.scan_kwargs(bounds))

    @property
    def families_pushable(self) -> bool:
        """Whether a filter on ``family`` may narrow the scan's families.

        Families are read independently, so reading fewer equals filtering the result,
        unless value filters look across families or the scan names columns itself.
        """
        return (
            self.shape == "cells"
            and "filter" not in self.scan
            and "columns" not in self.scan
            and "families" not in self.scan
        )


@dataclass(frozen=True, kw_only=True)
class WriteOptions:
    """A Spark write's options, parsed (see :data:`WRITE_OPTIONS` and ``docs/cluster.md``).

    Attributes:
        root: Warehouse root URL.
        table: Table name.
        storage_options: fsspec options for the root.
        mapping: The load mapping.
        load_id: Idempotency key, or None for a fresh one.
        skip_bad_records: Skip bad records into the bad-records file instead of failing.
        memory_budget: Bytes of input one write task holds before writing a sorted run.
        max_file_bytes: Roll store files at about this many cell bytes.
        row_group_cells: Cells per Parquet row group.
        now_ms: The load time (timestamp of cells without one), or None for the clock.
    """

    root: str
    table: str
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    mapping: LoadMapping
    load_id: str | None = None
    skip_bad_records: bool = False
    memory_budget: int = DEFAULT_WRITE_MEMORY
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS
    now_ms: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        """Parse Spark's option strings.

        Raises:
            InvalidArgumentError: a missing, unknown or malformed option, naming it.
        """
        opts = {k.lower(): v for k, v in options.items()}
        root, table = _location(opts, WRITE_OPTIONS)
        storage = _storage_options(opts)
        ints = {
            name: _int(opts[name], name=name)
            for name in ("memory_budget", "max_file_bytes", "row_group_cells", "now_ms")
            if opts.get(name)
        }
        return cls(
            root=root,
            table=table,
            storage_options=storage,
            mapping=parse_mapping(opts, storage_options=storage),
            load_id=opts.get("load_id") or None,
            skip_bad_records=parse_bool(
                opts.get("skip_bad_records", "false"), name="skip_bad_records"
            ),
            **ints,
        )


def parse_mapping(
    options: Mapping[str, str], *, storage_options: Mapping[str, Any] | None = None
) -> LoadMapping:
    """The load mapping of a write's options.

    Either ``mapping`` (inline JSON, or a TOML/JSON file path or URL) or the inline
    ``row_key``/``columns``/``timestamp``/``timestamp_unit``/``operation`` options.

    Raises:
        InvalidArgumentError: neither or both forms given, or a mapping that does not parse.
    """
    text = options.get("mapping")
    inline = [k for k in ("row_key", "columns", "timestamp", "operation") if options.get(k)]
    if text and inline:
        raise InvalidArgumentError(f"give either option 'mapping' or {inline}, not both")
    if text:
        if text.lstrip().startswith("{"):
            doc = _json(text, name="mapping")
            if not isinstance(doc, dict):
                raise InvalidArgumentError("option 'mapping' must be a JSON object")
            return LoadMapping.from_dict(doc)
        return LoadMapping.from_file(text, storage_options=storage_options)
    if not options.get("columns"):
        raise InvalidArgumentError(
            "a write needs option 'mapping' (JSON, or a TOML/JSON mapping file) or "
            "'columns' (FAMILY:QUALIFIER=COLUMN[:CODEC], comma-separated) with 'row_key'"
        )
    unit = options.get("timestamp_unit", "ms").strip()
    if unit not in ("s", "ms", "us", "ns"):
        raise InvalidArgumentError(f"option 'timestamp_unit' must be s, ms, us or ns: {unit!r}")
    return LoadMapping.simple(
        row_key=options.get("row_key") or None,
        columns=list(_names(options["columns"], name="columns")),
        timestamp=options.get("timestamp") or None,
        timestamp_unit=cast(TimeUnit, unit),
        operation=options.get("operation") or None,
    )


def missing_columns(mapping: LoadMapping, available: Iterable[str], spec: Any) -> list[str]:
    """Input columns ``mapping`` needs that ``available`` lacks."""
    have = set(available)
    return [c for c in mapping.input_columns(spec) if c not in have]

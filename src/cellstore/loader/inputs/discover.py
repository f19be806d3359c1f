"""Input discovery: what the user gave, as frozen, picklable :class:`InputPart` objects.

:func:`discover_inputs` turns fsspec URLs and globs of CSV, TSV, JSON-lines or Parquet
files (compressed by extension), a pandas or Arrow table, or a Dask DataFrame into parts:
one per text file, one per run of Parquet row groups, one per slice of an in-memory table,
one per Dask partition.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final, Literal, get_args

import fsspec
import numpy as np
import pyarrow as pa

from cellstore.errors import BadRecordError, InputNotFoundError, InvalidArgumentError

InputFormat = Literal["csv", "tsv", "jsonl", "parquet"]
INPUT_FORMATS: Final[tuple[InputFormat, ...]] = get_args(InputFormat)
PartKind = Literal["csv", "tsv", "jsonl", "parquet", "arrow", "dask"]

_SUFFIXES: Final[dict[str, InputFormat]] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSIONS: Final = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".lz4": "lz4"}
#: How much larger than its file a compressed text input is assumed to be in memory.
_COMPRESSED_EXPANSION: Final = 5
#: Bytes read per block from text files.
DEFAULT_BLOCK_SIZE: Final = 4 << 20
#: Field and reason of a record that does not parse.
_MALFORMED_WHY: Final = ("<line>", "<line>: malformed record")


@dataclass(frozen=True, kw_only=True)
class TextOptions:
    """How CSV/TSV/JSON-lines files are read.

    Attributes:
        delimiter: Field delimiter (default ``,`` for CSV, tab for TSV).
        header: Whether the first line holds the column names.
        column_names: Column names (required without a header; with a header they replace
            the file's).
        quote_char: Quoting character; None or ``""`` for no quoting.
        null_values: Field texts that mean null (no cell). Default: the empty field.
        compression: ``"infer"`` (from the extension), a codec name, or None.
        block_size: Bytes per read block (bounds memory per batch).
        multiline: Whether a quoted CSV/TSV value may hold line breaks (like Spark's
            ``multiLine``). Off by default: every line is one record, and a line whose
            quote is not closed on it is a bad record (named by file, line and field)
            instead of swallowing the lines after it.
    """

    delimiter: str | None = None
    header: bool = True
    column_names: tuple[str, ...] | None = None
    quote_char: str | None = '"'
    null_values: tuple[str, ...] = ("",)
    compression: str | None = "infer"
    block_size: int = DEFAULT_BLOCK_SIZE
    multiline: bool = False

    def __post_init__(self) -> None:
        if self.column_names is not None:
            if isinstance(self.column_names, str | bytes) or not all(
                isinstance(c, str) for c in self.column_names
            ):
                raise InvalidArgumentError("column_names must be a list of strings")
            object.__setattr__(self, "column_names", tuple(self.column_names))
        if isinstance(self.null_values, str | bytes) or not all(
            isinstance(v, str) for v in self.null_values
        ):
            raise InvalidArgumentError("null_values must be a list of strings")
        object.__setattr__(self, "null_values", tuple(self.null_values))
        for name in ("delimiter", "quote_char"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidArgumentError(f"{name} must be a string")
        for name in ("header", "multiline"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgumentError(f"{name} must be true or false")
        if self.compression is not None and (
            not isinstance(self.compression, str)
            or (
                self.compression != "infer"
                and self.compression not in fsspec.available_compressions()
            )
        ):
            raise InvalidArgumentError(
                "compression must be 'infer', null or one of "
                f"{', '.join(str(c) for c in fsspec.available_compressions() if c)}"
            )
        if self.delimiter is not None and (
            len(self.delimiter) != 1 or self.delimiter in "\r\n" or not self.delimiter.isascii()
        ):
            raise InvalidArgumentError(
                "delimiter must be one ASCII character other than a line break"
            )
        if self.quote_char and (
            len(self.quote_char) != 1 or self.quote_char in "\r\n" or not self.quote_char.isascii()
        ):
            raise InvalidArgumentError(
                "quote_char must be one ASCII character other than a line break (or empty)"
            )
        if self.quote_char and self.quote_char == self.delimiter:
            raise InvalidArgumentError("quote_char and delimiter must differ")
        if not self.header and not self.column_names:
            raise InvalidArgumentError("without a header line, give column_names")
        if not isinstance(self.block_size, int) or self.block_size < 1024:
            raise InvalidArgumentError("block_size must be at least 1024 bytes")

    @classmethod
    def from_options(cls, options: MappingABC[str, Any]) -> TextOptions:
        """Build from a mapping file's ``[input]`` table (unknown keys are ignored).

        Raises:
            InvalidArgumentError: an option of the wrong type or value.
        """
        keys = {
            "delimiter", "header", "column_names", "quote_char", "null_values", "compression",
            "multiline",
        }  # fmt: skip
        kwargs = {k: v for k, v in options.items() if k in keys}
        for name in ("column_names", "null_values"):
            value = kwargs.get(name)
            if value is not None:
                if not isinstance(value, list | tuple):
                    raise InvalidArgumentError(f"{name} must be a list of strings")
                kwargs[name] = tuple(value)
        return cls(**kwargs)


@dataclass(frozen=True, kw_only=True)
class InputPart:
    """One unit of input a load task reads (frozen and picklable; holds no open files).

    Attributes:
        index: Position among the load's parts (input order; later parts win exact key
            ties with earlier ones).
        kind: ``csv``, ``tsv``, ``jsonl``, ``parquet``, ``arrow`` (an in-memory slice) or
            ``dask`` (a Dask partition, handed to the task by the scheduler).
        source: The file's URL, or a label for in-memory input.
        storage_options: fsspec options for ``source``.
        row_groups: Parquet row groups of this part.
        first_record: Record number (zero-based, within ``source``) of the part's first
            record.
        table: The in-memory slice (``arrow`` parts).
        partition: The Dask partition number (``dask`` parts).
        estimated_bytes: Estimated Arrow size of the part's records.
        text: Options for text files.
        columns: The input columns to read.
        rows: Number of records, when known without reading (Parquet, in-memory).
        byte_range: For a piece of a large uncompressed text file (one record a line):
            the bytes ``[start, end)`` whose lines it owns (a line belongs to the piece
            where it starts); None reads the whole file. A piece not starting at 0 knows
            neither its first line nor its first record number; they are worked out only
            when a bad record needs them.
    """

    index: int
    kind: PartKind
    source: str
    storage_options: MappingABC[str, Any] = field(default_factory=dict, repr=False)
    row_groups: tuple[int, ...] = ()
    first_record: int = 0
    table: pa.Table | None = None
    partition: int | None = None
    estimated_bytes: int = 0
    text: TextOptions | None = None
    columns: tuple[str, ...] = ()
    rows: int | None = None
    byte_range: tuple[int, int] | None = None

    def batch_rows(self, target_bytes: int, *, limit: int = 262_144) -> int:
        """Records per batch so that a batch holds about ``target_bytes`` of input."""
        if not self.rows or not self.estimated_bytes:
            return limit
        per_row = max(1, self.estimated_bytes // self.rows)
        return max(1024, min(limit, target_bytes // per_row))

    def where(self, record: int, line: int | None) -> str:
        """Human form of a record's place: ``file.csv, line 12`` or ``<pandas>, record 3``."""
        if line is not None:
            return f"{self.source}, line {line}"
        if self.kind == "dask":
            return f"{self.source}, partition {self.partition}, record {record}"
        return f"{self.source}, record {record}"


@dataclass(frozen=True)
class DiscoveredInputs:
    """Parts of a load's input, plus the Dask collection for ``dask`` parts.

    Attributes:
        parts: The parts, in input order.
        dask_frame: The Dask DataFrame whose partitions ``dask`` parts name, or None.
    """

    parts: tuple[InputPart, ...]
    dask_frame: Any = None

    @property
    def estimated_bytes(self) -> int:
        """Sum of the parts' estimated Arrow sizes."""
        return sum(p.estimated_bytes for p in self.parts)


@dataclass(frozen=True)
class Batch:
    """Records read from a part.

    Attributes:
        table: The records (only the requested columns).
        records: Zero-based record number within the source of every record.
        lines: One-based line number of every record (text files), or None. For CSV/TSV
            read with ``multiline`` these are *record* numbers (the header counts, blank
            lines do not) until ``line_map`` turns them into the file's line numbers.
        malformed: ``(line, text)`` of records in this batch that could not be parsed
            (``line`` as in ``lines``).
        malformed_why: ``(field, reason)`` of each ``malformed`` entry, in the same order
            (``reason`` reads ``"<field>: <why>"``); entries past its end (or all, when it is
            empty) are ``("<line>", "<line>: malformed record")``.
        line_map: Turns ``lines`` values into the lines where those records start in the
            file (CSV/TSV with ``multiline``, whose quoted values may hold line breaks). It
            scans the file and is only called for bad records.
        record_map: Turns ``records`` values into record numbers within the source (a
            piece of a split text file numbers its records from 0; this counts the
            records before it, error path only).
    """

    table: pa.Table
    records: np.ndarray
    lines: np.ndarray | None = None
    malformed: tuple[tuple[int | None, str], ...] = ()
    line_map: Callable[[np.ndarray], np.ndarray] | None = None
    malformed_why: tuple[tuple[str, str], ...] = ()
    record_map: Callable[[np.ndarray], np.ndarray] | None = None

    def records_of(self, idx: np.ndarray) -> np.ndarray:
        """Record numbers (within the source) of the records at positions ``idx``."""
        got = self.records[idx]
        return self.record_map(got) if self.record_map is not None and len(got) else got

    def lines_of(self, idx: np.ndarray) -> np.ndarray | None:
        """File line numbers of the records at positions ``idx`` (None without lines)."""
        if self.lines is None:
            return None
        got = self.lines[idx]
        return self.line_map(got) if self.line_map is not None and len(got) else got

    def malformed_lines(self) -> list[tuple[int | None, str]]:
        """:attr:`malformed` with file line numbers."""
        if self.line_map is None or not self.malformed:
            return list(self.malformed)
        known = np.array([ln for ln, _ in self.malformed if ln is not None], dtype=np.int64)
        mapped = iter(self.line_map(known).tolist()) if len(known) else iter(())
        return [(None if ln is None else int(next(mapped)), text) for ln, text in self.malformed]

    def malformed_details(self) -> list[tuple[int | None, str, str, str]]:
        """``(line, text, field, reason)`` of every malformed record, lines as in the file."""
        out = []
        for i, (ln, text) in enumerate(self.malformed_lines()):
            field, reason = self.malformed_why[i] if i < len(self.malformed_why) else _MALFORMED_WHY
            out.append((ln, text, field, reason))
        return out


def format_for(path: str) -> tuple[InputFormat, str | None]:
    """Input format and compression of a file from its extension (``x.csv.gz``).

    Raises:
        InvalidArgumentError: if the extension names no known format.
    """
    p = PurePosixPath(path.rstrip("/"))
    suffixes = [s.lower() for s in p.suffixes]
    compression = None
    if suffixes and suffixes[-1] in _COMPRESSIONS:
        compression = _COMPRESSIONS[suffixes[-1]]
        suffixes = suffixes[:-1]
    fmt = _SUFFIXES.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        raise InvalidArgumentError(
            f"cannot tell the format of {path!r} from its extension; give the format "
            f"({', '.join(INPUT_FORMATS)})"
        )
    return fmt, compression


def _expand(url: str, storage_options: MappingABC[str, Any]) -> list[str]:
    """Files a URL names: a glob's matches, a directory's files, or the file itself."""
    fs, path = fsspec.core.url_to_fs(url, **dict(storage_options))
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]

    def unstrip(p: str) -> str:
        if protocol in ("file", "local"):
            return str(p)
        return fs.unstrip_protocol(p)  # type: ignore[no-any-return]

    if any(ch in path for ch in "*?["):
        matches = sorted(p for p in fs.glob(path) if fs.isfile(p))
        if not matches:
            raise InputNotFoundError(f"input {url!r} matches no files")
        return [unstrip(p) for p in matches]
    if fs.isdir(path):
        found = sorted(
            p
            for p in fs.find(path)
            if not any(seg.startswith((".", "_")) for seg in PurePosixPath(p).parts[-1:])
        )
        if not found:
            raise InvalidArgumentError(f"input directory {url!r} holds no files")
        return [unstrip(p) for p in found]
    if not fs.exists(path):
        raise InputNotFoundError(f"input {url!r} does not exist")
    return [unstrip(path)]


def missing_columns_error(
    source: str,
    missing: Sequence[str],
    available: Sequence[str],
    uses: MappingABC[str, str] | None = None,
) -> InvalidArgumentError:
    """The error for mapped columns an input lacks.

    The message names each missing column, the mapping entry that reads it, the input's
    columns and the closest of them (``difflib``).
    """
    import difflib

    parts = []
    for col in missing:
        text = repr(col)
        if uses and col in uses:
            text += f" (mapping {uses[col]})"
        close = difflib.get_close_matches(col, [str(a) for a in available], n=1, cutoff=0.5)
        if close:
            text += f"; did you mean {close[0]!r}?"
        parts.append(text)
    shown = ", ".join(repr(str(a)) for a in list(available)[:50])
    if len(available) > 50:
        shown += f", ... ({len(available)} in all)"
    noun = "column" if len(missing) == 1 else "columns"
    text = parts[0]
    for part in parts[1:]:  # a question ends its sentence: no "?;" or "?."
        text += f" No {part}" if text.endswith("?") else f"; no {part}"
    end = "" if text.endswith("?") else "."
    return InvalidArgumentError(
        f"input {source} has no {noun} {text}{end} Its columns: {shown or '(none)'}"
    )


def _check_columns(
    part: InputPart, available: Sequence[str], uses: MappingABC[str, str] | None = None
) -> None:
    have = set(available)
    missing = [c for c in part.columns if c not in have]
    if missing:
        raise missing_columns_error(part.source, missing, available, uses)


def discover_inputs(
    sources: Any,
    *,
    columns: Sequence[str],
    format: InputFormat | None = None,
    text: TextOptions | None = None,
    storage_options: MappingABC[str, Any] | None = None,
    target_part_bytes: int,
    column_uses: MappingABC[str, str] | None = None,
) -> DiscoveredInputs:
    """Turn load sources into :class:`InputPart` objects (reads footers and header lines).

    The mapped ``columns`` are checked against every input's schema before any data is
    read: Parquet footers, CSV/TSV header lines (or ``column_names``), frame columns.
    JSON lines have no schema; a key missing from a record is a null there.

    Args:
        sources: One URL or glob (str or path), a list of them, a pandas DataFrame, a
            pyarrow Table or RecordBatch, or a Dask DataFrame.
        columns: The input columns the mapping reads.
        format: Input format for every file (default: from each file's extension).
        text: Options for text files.
        storage_options: fsspec options for the input URLs.
        target_part_bytes: Aim for parts of about this many Arrow bytes (Parquet row groups
            and in-memory tables are cut to it; an uncompressed CSV/TSV or JSON-lines file
            read one record a line is cut into byte ranges of about this size, others are
            one part each, read in blocks).
        column_uses: For error messages: the mapping entry reading each column
            (:meth:`~cellstore.loader.Mapping.column_uses`).

    Returns:
        The parts.

    Raises:
        InvalidArgumentError: no input, an unknown format, a URL that matches nothing, or
            an input without a mapped column (naming it, the mapping entry, the input's
            columns and the closest one).
        BadRecordError: a CSV/TSV header line that does not parse.
    """
    opts = dict(storage_options or {})
    cols = tuple(columns)
    frame_kind = _frame_kind(sources)
    if frame_kind == "dask":
        dask_names = [str(c) for c in sources.columns]
        missing = [c for c in cols if c not in dask_names]
        if missing:
            raise missing_columns_error("<dask>", missing, dask_names, column_uses)
        n = int(sources.npartitions)
        parts = tuple(
            InputPart(
                index=i,
                kind="dask",
                source="<dask>",
                partition=i,
                estimated_bytes=target_part_bytes,
                columns=cols,
            )
            for i in range(n)
        )
        return DiscoveredInputs(parts, sources)
    if frame_kind is not None:
        return DiscoveredInputs(
            _frame_parts(sources, frame_kind, cols, target_part_bytes, column_uses)
        )
    urls = [sources] if isinstance(sources, str | os.PathLike) else list(sources)
    if not urls:
        raise InvalidArgumentError("no input given")
    files = [f for u in urls for f in _expand(os.fspath(u), opts)]
    found: list[InputPart] = []
    for url in files:
        fmt, compression = (format, None) if format is not None else format_for(url)
        if format is not None:
            try:
                compression = format_for(url)[1]
            except InvalidArgumentError:
                compression = None
        if fmt == "parquet":
            found.extend(
                _parquet_parts(
                    url, opts, cols, target_part_bytes, start=len(found), uses=column_uses
                )
            )
            continue
        topts = text or TextOptions()
        fs, fpath = fsspec.core.url_to_fs(url, **opts)
        size = int(fs.size(fpath))
        part = InputPart(
            index=len(found),
            kind=fmt,
            source=url,
            storage_options=opts,
            estimated_bytes=size * (_COMPRESSED_EXPANSION if compression else 1),
            text=topts,
            columns=cols,
        )
        if fmt in ("csv", "tsv") and cols:
            from cellstore.loader.inputs.csv import text_columns  # csv imports this module

            try:
                names = text_columns(part)
            except (OSError, EOFError, pa.ArrowException, UnicodeDecodeError) as e:
                if isinstance(e, FileNotFoundError):
                    raise
                message = " ".join(str(e).split())
                raise BadRecordError(f"{url}: cannot read as {fmt}: {message}", source=url) from e
            if names is not None:
                _check_columns(part, names, column_uses)
        if topts.compression != "infer":
            compression = topts.compression
        if (
            compression is None
            and size > target_part_bytes
            and not (fmt in ("csv", "tsv") and topts.multiline)
        ):
            found.extend(_text_pieces(part, size, target_part_bytes))
        else:
            found.append(part)
    return DiscoveredInputs(tuple(found))


def _text_pieces(part: InputPart, size: int, target: int) -> list[InputPart]:
    """An uncompressed text file as parts of byte ranges of about ``target`` bytes."""
    from dataclasses import replace

    n = -(-size // max(1, target))
    cuts = [size * i // n for i in range(n + 1)]
    return [
        replace(
            part,
            index=part.index + i,
            byte_range=(cuts[i], cuts[i + 1]),
            estimated_bytes=cuts[i + 1] - cuts[i],
        )
        for i in range(n)
    ]


def _frame_kind(sources: Any) -> Literal["pandas", "arrow", "dask"] | None:
    if isinstance(sources, pa.Table | pa.RecordBatch):
        return "arrow"
    module = type(sources).__module__
    if module.startswith("dask") and hasattr(sources, "npartitions"):
        return "dask"
    if module.startswith("pandas") and hasattr(sources, "columns"):
        return "pandas"
    return None


def pandas_to_arrow(frame: Any, cols: Sequence[str], *, source: str) -> pa.Table:
    """The columns ``cols`` of a pandas DataFrame as an Arrow table.

    Object columns Arrow cannot type on its own (Python integers beyond 64 bits, mixed
    kinds) are converted value by value to text (error path only), so the value codecs
    judge each record: ``2**70`` for a ``long`` is a bad record, not a crash.

    Raises:
        InvalidArgumentError: a column that cannot be converted at all.
    """
    try:
        return pa.Table.from_pandas(frame[list(cols)], preserve_index=False)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        pass
    arrays = []
    for c in cols:
        series = frame[c]
        try:
            arrays.append(pa.Array.from_pandas(series))
            continue
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            pass
        values = [_as_text(v) for v in series.tolist()]
        try:
            arrays.append(pa.array(values, pa.string()))
        except (pa.ArrowException, UnicodeError) as e:
            raise InvalidArgumentError(
                f"input {source}: column {c!r} cannot be converted to Arrow ({e})"
            ) from e
    return pa.table(arrays, names=list(cols))


def _as_text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _frame_parts(
    frame: Any,
    kind: str,
    cols: tuple[str, ...],
    target: int,
    uses: MappingABC[str, str] | None = None,
) -> tuple[InputPart, ...]:
    if kind == "pandas":
        names = [str(c) for c in frame.columns]
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise missing_columns_error("<pandas>", missing, names, uses)
        table = pandas_to_arrow(frame, cols, source="<pandas>")
        label = "<pandas>"
    else:
        table = pa.Table.from_batches([frame]) if isinstance(frame, pa.RecordBatch) else frame
        missing = [c for c in cols if c not in table.column_names]
        if missing:
            raise missing_columns_error("<arrow>", missing, table.column_names, uses)
        table = table.select(list(cols))
        label = "<arrow>"
    n = table.num_rows
    per_row = max(1, table.nbytes // max(n, 1))
    rows = max(1, target // per_row)
    parts = []
    single = n <= rows
    for i, start in enumerate(range(0, max(n, 1), rows)):
        # A compact copy: a pickled slice would carry the whole table's buffers to workers.
        piece = table if single else table.take(np.arange(start, min(n, start + rows)))
        parts.append(
            InputPart(
                index=i,
                kind="arrow",
                source=label,
                first_record=start,
                table=piece,
                estimated_bytes=piece.nbytes,
                columns=cols,
                rows=piece.num_rows,
            )
        )
    return tuple(parts)


def _parquet_parts(
    url: str,
    opts: dict[str, Any],
    cols: tuple[str, ...],
    target: int,
    *,
    start: int,
    uses: MappingABC[str, str] | None = None,
) -> list[InputPart]:
    import pyarrow.parquet as pq

    try:
        with fsspec.open(url, "rb", **opts) as f:
            meta = pq.ParquetFile(f).metadata
        names = list(meta.schema.to_arrow_schema().names)
    except (pa.ArrowException, OSError, EOFError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        message = " ".join(str(e).split())
        raise BadRecordError(f"{url}: cannot read as parquet: {message}", source=url) from e
    missing = [c for c in cols if c not in set(names)]
    if missing:
        raise missing_columns_error(url, missing, names, uses)
    parts: list[InputPart] = []
    groups: list[int] = []
    size = 0
    first = record = 0
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        if groups and size + rg.total_byte_size > target:
            parts.append(
                _pq_part(url, opts, cols, start + len(parts), groups, first, size, record - first)
            )
            groups, size, first = [], 0, record
        groups.append(g)
        size += rg.total_byte_size
        record += rg.num_rows
    if groups or not parts:
        parts.append(
            _pq_part(url, opts, cols, start + len(parts), groups, first, size, record - first)
        )
    return parts


def _pq_part(
    url: str,
    opts: dict[str, Any],
    cols: tuple[str, ...],
    index: int,
    groups: list[int],
    first: int,
    size: int,
    rows: int,
) -> InputPart:
    return InputPart(
        index=index,
        kind="parquet",
        source=url,
        storage_options=opts,
        row_groups=tuple(groups),
        first_record=first,
        estimated_bytes=size,
        columns=cols,
        rows=rows,
    )

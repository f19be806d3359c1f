"""Input discovery and streaming reads: files on any fsspec URL, and in-memory frames.

:func:`discover_inputs` turns what the user gave — fsspec URLs and globs of CSV, TSV,
JSON-lines or Parquet files (compressed by extension: ``.gz``, ``.bz2``, ``.xz``, ``.zst``),
a pandas or Arrow table, or a Dask DataFrame — into frozen, picklable :class:`InputPart`
objects: one per text file, one per run of Parquet row groups, one per slice of an
in-memory table, one per Dask partition. :func:`read_part` streams a part as Arrow record
batches of bounded size, each tagged with where its records come from (line numbers for
text files, record numbers otherwise), so bad records can be named.

Every column is read as it is typed in the input; text formats give strings, which the
value codecs parse (``"42"`` as a long). Empty CSV fields are nulls, so they become no
cell.
"""

from __future__ import annotations

import codecs
import io
import json
import os
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final, Literal, get_args

import fsspec
import numpy as np
import pyarrow as pa

from cellstore.errors import BadRecordError, InvalidArgumentError

__all__ = [
    "INPUT_FORMATS",
    "Batch",
    "DiscoveredInputs",
    "InputFormat",
    "InputPart",
    "TextOptions",
    "discover_inputs",
    "format_for",
    "missing_columns_error",
    "pandas_to_arrow",
    "read_part",
    "text_columns",
]

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
    """

    table: pa.Table
    records: np.ndarray
    lines: np.ndarray | None = None
    malformed: tuple[tuple[int | None, str], ...] = ()
    line_map: Callable[[np.ndarray], np.ndarray] | None = None
    malformed_why: tuple[tuple[str, str], ...] = ()

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
            raise InvalidArgumentError(f"input {url!r} matches no files")
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
        raise InvalidArgumentError(f"input {url!r} does not exist")
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
    return InvalidArgumentError(
        f"input {source} has no {noun} {'; no '.join(parts)}. Its columns: {shown or '(none)'}"
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
            and in-memory tables are cut to it; a text file is one part, read in blocks).
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
            try:
                names = text_columns(part)
            except (OSError, EOFError, pa.ArrowException, UnicodeDecodeError) as e:
                if isinstance(e, FileNotFoundError):
                    raise
                message = " ".join(str(e).split())
                raise BadRecordError(f"{url}: cannot read as {fmt}: {message}", source=url) from e
            if names is not None:
                _check_columns(part, names, column_uses)
        found.append(part)
    return DiscoveredInputs(tuple(found))


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


# --------------------------------------------------------------------------- reading
def read_part(part: InputPart, data: Any = None, *, batch_rows: int = 262_144) -> Iterator[Batch]:
    """Stream a part's records as batches of bounded size.

    Args:
        part: The part.
        data: For ``dask`` parts, the partition (a pandas DataFrame).
        batch_rows: Records per batch for Parquet and in-memory parts.

    Yields:
        :class:`Batch` objects in record order.

    Raises:
        BadRecordError: a file that cannot be read as its format, or lacks a column.
    """
    if part.kind in ("arrow", "dask"):
        if part.kind == "dask":
            missing = [c for c in part.columns if c not in data.columns]
            if missing:
                raise BadRecordError(
                    f"input <dask> partition {part.partition} has no column(s) {missing}",
                    source=part.source,
                    field=missing[0],
                )
            table = pandas_to_arrow(data, part.columns, source=f"<dask> partition {part.partition}")
        else:
            assert part.table is not None
            table = part.table
        for start in range(0, table.num_rows, batch_rows):
            piece = table.slice(start, batch_rows)
            first = part.first_record + start
            yield Batch(piece, np.arange(first, first + piece.num_rows, dtype=np.int64))
        return
    try:
        if part.kind == "parquet":
            yield from _read_parquet(part, batch_rows)
        elif part.kind in ("csv", "tsv"):
            yield from _read_csv(part)
        else:
            yield from _read_jsonl(part)
    except (pa.ArrowException, OSError, EOFError, UnicodeDecodeError) as e:
        # pyarrow and codec errors on bad bytes (ArrowKeyError is a KeyError, and
        # compressed streams raise EOFError on truncation) become one cellstore error.
        if isinstance(e, FileNotFoundError):
            raise
        message = " ".join(str(e).split())
        raise BadRecordError(
            f"{part.source}: cannot read as {part.kind}: {message}", source=part.source
        ) from e


def _read_parquet(part: InputPart, batch_rows: int) -> Iterator[Batch]:
    import pyarrow.parquet as pq

    with fsspec.open(part.source, "rb", **dict(part.storage_options)) as f:
        # Buffered page reads instead of whole column chunks: memory stays per batch.
        pf = pq.ParquetFile(f, buffer_size=1 << 20, pre_buffer=False)
        record = part.first_record
        # One thread per task: load tasks already run one per core (no oversubscription).
        for batch in pf.iter_batches(
            batch_size=batch_rows,
            row_groups=list(part.row_groups),
            columns=list(part.columns),
            use_threads=False,
        ):
            n = batch.num_rows
            yield Batch(
                pa.Table.from_batches([batch]), np.arange(record, record + n, dtype=np.int64)
            )
            record += n


def _compression(part: InputPart) -> str | None:
    assert part.text is not None
    if part.text.compression == "infer":
        try:
            return format_for(part.source)[1]
        except InvalidArgumentError:
            return None
    return part.text.compression


def _valid_lines(k: np.ndarray, invalid: np.ndarray, base: int) -> np.ndarray:
    """Line numbers of valid records ``k`` when the lines in ``invalid`` were skipped.

    The valid lines are the integers from ``base`` upwards without ``invalid``; record k
    is the k-th of them.
    """
    if not invalid.size:
        return k + base
    rel = np.sort(invalid - base)
    adjusted = rel - np.arange(rel.size)
    return k + np.searchsorted(adjusted, k, side="right") + base


class _CsvLines:
    r"""Where CSV records start in the file, found by scanning it on demand (error path).

    pyarrow numbers records, not lines: the header counts, blank lines do not, and a
    quoted value may span several lines. This scanner reads the file a second time, up to
    the records asked for, and follows pyarrow's rules: records end at ``\n``, ``\r``
    or ``\r\n`` outside quotes; a quote opens a quoted value only at the start of a
    field (elsewhere it is a plain character); inside, a doubled quote is a literal quote
    and a single one closes; empty lines are not records. Only quote and line-break bytes
    are visited, and only when a bad record needs its line.
    """

    def __init__(self, part: InputPart, *, delimiter: str, quote: str | None) -> None:
        self.part = part
        self.delimiter = delimiter.encode("utf-8")[0]
        self.quote = quote.encode("utf-8")[0] if quote else None
        self.starts: list[int] = []  # file line of record i (0-based record index)
        self._file: Any = None
        self._done = False
        self._line = 1  # line of the next byte
        self._in_quotes = False
        self._record_empty = True  # nothing seen since the last record end
        self._prev = -1  # the byte before the current block (-1: start of file)
        self._carry = b""

    def lines(self, record_numbers: np.ndarray) -> np.ndarray:
        """File line where each record starts (one-based record numbers in)."""
        need = int(record_numbers.max()) if len(record_numbers) else 0
        while len(self.starts) < need and not self._done:
            self._scan_block()
        starts = np.asarray(self.starts, dtype=np.int64)
        idx = np.asarray(record_numbers, dtype=np.int64) - 1
        known = (idx >= 0) & (idx < len(starts))
        out = np.asarray(record_numbers, dtype=np.int64).copy()
        out[known] = starts[idx[known]]
        return out

    def _scan_block(self) -> None:
        if self._file is None:
            self._file = fsspec.open(
                self.part.source,
                "rb",
                compression=_compression(self.part),
                **dict(self.part.storage_options),
            ).open()
        size = self.part.text.block_size if self.part.text else DEFAULT_BLOCK_SIZE
        block = self._file.read(size)
        data = self._carry + block
        # A quote at the end may be the first of a doubled quote: keep it for the next block.
        keep = 1 if block and data and data[-1] == self.quote else 0
        self._carry = data[len(data) - keep :]
        self._scan(data[: len(data) - keep])
        if not block:
            self._done = True
            self._file.close()

    def _scan(self, data: bytes) -> None:
        if not data:
            return
        buf = np.frombuffer(data, dtype=np.uint8)
        marks = np.array([10, 13] + ([self.quote] if self.quote is not None else []), np.uint8)
        cursor = 0  # bytes in [cursor, p) are neither quotes nor line breaks
        skip = -1
        for p in np.flatnonzero(np.isin(buf, marks)).tolist():
            if p == skip:
                continue
            if p > cursor and self._record_empty:
                self._begin_record()
            b = data[p]
            prev = data[p - 1] if p else self._prev
            if b == self.quote:
                if self._record_empty:
                    self._begin_record()
                if self._in_quotes:
                    if p + 1 < len(data) and data[p + 1] == self.quote:
                        skip = p + 1  # a doubled quote inside quotes is a literal quote
                    else:
                        self._in_quotes = False
                elif prev in (-1, 10, 13, self.delimiter):
                    self._in_quotes = True
            elif not (b == 10 and prev == 13):  # \r\n is one line break
                self._line += 1
                if not self._in_quotes:
                    self._record_empty = True
            cursor = max(p, skip) + 1
        if len(data) > cursor and self._record_empty:
            self._begin_record()
        self._prev = data[-1]

    def _begin_record(self) -> None:
        self.starts.append(self._line)
        self._record_empty = False


def _delimiter(part: InputPart) -> str:
    topts = part.text or TextOptions()
    return topts.delimiter or ("\t" if part.kind == "tsv" else ",")


def _read_csv(part: InputPart) -> Iterator[Batch]:
    topts = part.text or TextOptions()
    if topts.multiline:
        yield from _read_csv_multiline(part)
    else:
        yield from _read_csv_lines(part)


def _read_csv_multiline(part: InputPart) -> Iterator[Batch]:
    """CSV/TSV whose quoted values may span lines: pyarrow's streaming reader."""
    import pyarrow.csv as pv

    topts = part.text or TextOptions()
    delimiter = _delimiter(part)
    names = list(topts.column_names) if topts.column_names else None
    read_options = pv.ReadOptions(
        use_threads=False,  # line numbers of malformed rows are only known single-threaded
        block_size=topts.block_size,
        column_names=names,
        skip_rows=1 if (topts.header and names) else 0,
    )
    malformed: list[tuple[int | None, str]] = []

    def on_invalid(row: Any) -> str:
        malformed.append((row.number, row.text))
        return "skip"

    parse_options = pv.ParseOptions(
        delimiter=delimiter,
        quote_char=topts.quote_char if topts.quote_char else False,
        newlines_in_values=bool(topts.quote_char),  # quoted values may span lines (opted in)
        invalid_row_handler=on_invalid,
    )
    line_map = _CsvLines(part, delimiter=delimiter, quote=topts.quote_char or None)
    convert_options = pv.ConvertOptions(
        column_types={c: pa.string() for c in part.columns},
        include_columns=list(part.columns),
        strings_can_be_null=True,
        null_values=list(topts.null_values),
    )
    base = 2 if topts.header else 1  # line of the first record
    record = 0
    with fsspec.open(
        part.source, "rb", compression=_compression(part), **dict(part.storage_options)
    ) as f:
        reader = pv.open_csv(
            io.BufferedReader(_Utf8Checked(f, part.source), buffer_size=1 << 16),
            read_options=read_options,
            parse_options=parse_options,
            convert_options=convert_options,
        )
        seen_invalid = 0
        for batch in reader:
            n = batch.num_rows
            k = np.arange(record, record + n, dtype=np.int64)
            invalid = np.array([ln for ln, _ in malformed if ln is not None], dtype=np.int64)
            new = tuple(malformed[seen_invalid:])
            seen_invalid = len(malformed)
            yield Batch(
                pa.Table.from_batches([batch]),
                k,
                _valid_lines(k, invalid, base),
                new,
                line_map.lines,
            )
            record += n
        if len(malformed) > seen_invalid:
            yield Batch(
                pa.table({c: pa.array([], pa.string()) for c in part.columns}),
                np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64),
                tuple(malformed[seen_invalid:]),
                line_map.lines,
            )


# ------------------------------------------------------------------- CSV, one record a line
def _split_first_line(f: Any, block_size: int) -> tuple[bytes | None, bytes, int]:
    r"""Read up to the end of the first non-empty line of a text file.

    Returns:
        The line (None for a file without one), the bytes read after its line break, and
        the number of lines it and the empty lines before it take.
    """
    data = b""
    while True:
        block = f.read(block_size)
        eof = not block
        data += block
        body = data.lstrip(b"\r\n")
        lead = data[: len(data) - len(body)]
        ends = [i for i in (body.find(b"\n"), body.find(b"\r")) if i >= 0]
        end = min(ends) if ends else -1
        # A \r at the very end of what was read may be the first byte of \r\n.
        if end >= 0 and (body[end] == 10 or end + 1 < len(body) or eof):
            width = 2 if body[end : end + 2] == b"\r\n" else 1
            line, rest = body[:end], body[end + width :]
        elif eof:
            line, rest = body, b""
        else:
            continue
        skipped = lead.count(b"\n") + lead.count(b"\r") - lead.count(b"\r\n")
        return (line or None), rest, skipped + (1 if line else 0)


def _header_names(part: InputPart, line: bytes) -> list[str]:
    """Column names of a CSV header line (parsed by pyarrow, with the part's quoting)."""
    import pyarrow.csv as pv

    topts = part.text or TextOptions()
    try:
        table = pv.read_csv(
            pa.py_buffer(line + b"\n"),
            read_options=pv.ReadOptions(use_threads=False),
            parse_options=pv.ParseOptions(
                delimiter=_delimiter(part),
                quote_char=topts.quote_char if topts.quote_char else False,
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as e:
        message = " ".join(str(e).split())
        raise BadRecordError(
            f"{part.source}: cannot read the header line: {message}",
            source=part.source,
            line=1,
            field="<header>",
            reason="<header>: header line does not parse",
        ) from e
    return list(table.column_names)


def text_columns(part: InputPart) -> list[str] | None:
    """The column names of a CSV/TSV part: ``column_names``, or its header (one line read).

    Returns:
        The names, or None for an empty file (no header, no records).
    """
    topts = part.text or TextOptions()
    if topts.column_names:
        return list(topts.column_names)
    with fsspec.open(
        part.source, "rb", compression=_compression(part), **dict(part.storage_options)
    ) as f:
        line, _, _ = _split_first_line(f, min(topts.block_size, 1 << 16))
    return None if line is None else _header_names(part, line)


def _last_break(data: bytes) -> int:
    r"""Offset just past the last complete line break of ``data`` (0: none).

    A ``\r`` that ends ``data`` does not count: it may be the first byte of ``\r\n``.
    """
    return max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1)) + 1


@dataclass(frozen=True)
class _Lines:
    """The lines of a chunk of text: starts, ends (before the line break), first line."""

    starts: np.ndarray
    ends: np.ndarray
    first: int

    @classmethod
    def of(cls, data: bytes, first: int) -> _Lines:
        r"""Lines of ``data`` by pyarrow's rules (``\n``, ``\r\n`` or a lone ``\r``)."""
        buf = np.frombuffer(data, dtype=np.uint8)
        n = len(buf)
        if b"\r" not in data:
            ends = np.flatnonzero(buf == 10)
            starts = np.concatenate([[0], ends + 1])
        else:
            nl = buf == 10
            cr = buf == 13
            nl_after_cr = np.zeros(n, dtype=bool)
            nl_after_cr[1:] = nl[1:] & cr[:-1]
            ends = np.flatnonzero(cr | (nl & ~nl_after_cr))
            followed_by_nl = np.zeros(n, dtype=bool)
            followed_by_nl[:-1] = nl[1:]
            starts = np.concatenate([[0], ends + 1 + followed_by_nl[ends]])
        if starts[-1] < n:  # a last line without a line break (end of file)
            ends = np.append(ends, n)
        else:
            starts = starts[:-1]
        return cls(starts.astype(np.int64), ends.astype(np.int64), first)

    @property
    def breaks(self) -> int:
        """Lines of the chunk that end with a line break (where the next chunk's start)."""
        return len(self.ends)

    @property
    def records(self) -> np.ndarray:
        """Indices of the non-empty lines (pyarrow skips empty ones)."""
        return np.flatnonzero(self.ends > self.starts)


def _open_quote_field(line: bytes, *, delimiter: int, quote: int) -> int | None:
    """Field number where a quote opens and is not closed on ``line``, or None.

    pyarrow's rules: a quote opens a quoted value only at the start of a field (elsewhere
    it is a plain character); inside, a doubled quote is a literal quote and a single one
    closes. Only quote and delimiter bytes are visited (error path, and one line a chunk).
    """
    buf = np.frombuffer(line, dtype=np.uint8)
    marks = np.flatnonzero((buf == quote) | (buf == delimiter)).tolist()
    field = opened = 0
    field_start = 0
    in_quotes = False
    skip = -1
    for p in marks:
        if p == skip:
            continue
        b = line[p]
        if in_quotes:
            if b == quote:
                if p + 1 < len(line) and line[p + 1] == quote:
                    skip = p + 1
                else:
                    in_quotes = False
        elif b == delimiter:
            field += 1
            field_start = p + 1
        elif p == field_start:
            in_quotes, opened = True, field
    return opened if in_quotes else None


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class _Utf8Checked(io.RawIOBase):
    """A binary stream raising :class:`BadRecordError` at the first byte that is not UTF-8.

    pyarrow's CSV reader cannot hand a row that is not UTF-8 to its invalid-row handler.
    """

    def __init__(self, f: Any, source: str) -> None:
        super().__init__()
        self._f = f
        self._source = source
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._line = 1

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._f.read(len(view))
        try:
            self._decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            line = self._line + data[: max(e.start, 0)].count(b"\n")
            raise BadRecordError(
                f"{self._source}, line {line}: not valid UTF-8 text",
                source=self._source,
                line=line,
                field="<line>",
                reason="<line>: not valid UTF-8 text",
            ) from None
        self._line += data.count(b"\n")
        view[: len(data)] = data
        return len(data)


def _read_csv_lines(part: InputPart) -> Iterator[Batch]:
    """CSV/TSV where every line is one record (``multiline`` off).

    The file is cut into chunks at line breaks and each chunk parsed by pyarrow. A chunk
    parsed into as many records as it has non-empty lines, whose last line closes its
    quotes, is good (the common case: one count and one line looked at). Otherwise some
    quoted value ran past its line; those lines are found, reported as bad records and
    blanked, and the chunk is parsed again.
    """
    topts = part.text or TextOptions()
    with fsspec.open(
        part.source, "rb", compression=_compression(part), **dict(part.storage_options)
    ) as f:
        rest = b""
        line = 1  # file line of the first byte of the next chunk
        names = list(topts.column_names) if topts.column_names else None
        if topts.header:
            header, rest, taken = _split_first_line(f, topts.block_size)
            if header is None:
                return
            line += taken
            if names is None:
                names = _header_names(part, header)
        assert names is not None
        _check_columns(part, names)
        record = 0
        while True:
            block = f.read(topts.block_size)
            data = rest + block
            if block:
                cut = _last_break(data)
                if cut == 0:
                    rest = data
                    continue
                data, rest = data[:cut], data[cut:]
            else:
                rest = b""
            if data:
                batch, breaks = _csv_chunk(part, data, line, record, names)
                line += breaks
                if batch is not None:
                    record += batch.table.num_rows
                    yield batch
            if not block:
                break


def _parse_chunk(
    part: InputPart, data: bytes, names: list[str]
) -> tuple[pa.Table, list[tuple[int, str]]]:
    import pyarrow.csv as pv

    topts = part.text or TextOptions()
    invalid: list[tuple[int, str]] = []

    def on_invalid(row: Any) -> str:
        invalid.append((int(row.number), str(row.text)))
        return "skip"

    table = pv.read_csv(
        pa.py_buffer(data),
        read_options=pv.ReadOptions(
            use_threads=False,
            block_size=max(topts.block_size, len(data) + 1),
            column_names=names,
        ),
        parse_options=pv.ParseOptions(
            delimiter=_delimiter(part),
            quote_char=topts.quote_char if topts.quote_char else False,
            newlines_in_values=False,
            invalid_row_handler=on_invalid,
        ),
        convert_options=pv.ConvertOptions(
            column_types={c: pa.string() for c in part.columns},
            include_columns=list(part.columns),
            strings_can_be_null=True,
            null_values=list(topts.null_values),
        ),
    )
    return table, invalid


def _csv_chunk(
    part: InputPart, data: bytes, first_line: int, record: int, names: list[str]
) -> tuple[Batch | None, int]:
    """Parse one chunk of whole lines; returns its batch and how many lines it ends."""
    topts = part.text or TextOptions()
    quote = topts.quote_char.encode("utf-8")[0] if topts.quote_char else None
    delimiter = _delimiter(part).encode("utf-8")[0]
    lines = _Lines.of(data, first_line)
    recs = lines.records
    if not recs.size:
        return None, lines.breaks
    opened: list[tuple[int, int]] = []  # (line index, field) of quotes not closed
    table: pa.Table | None = None
    invalid: list[tuple[int, str]] = []

    def check_last() -> bool:
        last = int(recs[-1])
        text = data[int(lines.starts[last]) : int(lines.ends[last])]
        if quote is None or quote not in text:
            return True
        return _open_quote_field(text, delimiter=delimiter, quote=quote) is None

    utf8 = _is_utf8(data)  # pyarrow cannot report a bad row that is not UTF-8
    ok = False
    if utf8:
        try:
            table, invalid = _parse_chunk(part, data, names)
            ok = table.num_rows + len(invalid) == recs.size and check_last()
        except pa.ArrowInvalid:
            ok = False
    if not ok:
        # Error path: find the lines that are not UTF-8 or whose quote is not closed,
        # blank them, parse again.
        for i in recs.tolist():
            start, end = int(lines.starts[i]), int(lines.ends[i])
            raw = data[start:end]
            if not utf8 and not _is_utf8(raw):
                opened.append((i, -1))
            elif quote is not None and quote in raw:
                field = _open_quote_field(raw, delimiter=delimiter, quote=quote)
                if field is not None:
                    opened.append((i, field))
        if opened:  # the same bytes without those lines' text (their line breaks stay)
            pieces = []
            pos = 0
            for i, _ in opened:
                pieces.append(data[pos : int(lines.starts[i])])
                pos = int(lines.ends[i])
            pieces.append(data[pos:])
            fixed = b"".join(pieces)
            # Line breaks stay, so the lines keep their numbers (an emptied last line
            # without a break just ends the chunk).
            recs = _Lines.of(fixed, first_line).records
            table, invalid = None, []
            try:
                if recs.size:
                    table, invalid = _parse_chunk(part, fixed, names)
                ok = table is None or table.num_rows + len(invalid) == recs.size
            except pa.ArrowInvalid:
                ok = False
    if not ok:
        first = int(first_line + recs[0]) if recs.size else first_line
        raise BadRecordError(
            f"{part.source}, lines {first}-{first_line + lines.breaks}: cannot be parsed as "
            f"{part.kind}",
            source=part.source,
            line=first,
            field="<line>",
            reason="<line>: malformed record",
        )
    file_lines = recs.astype(np.int64) + first_line
    bad: list[tuple[int, str, tuple[str, str]]] = []
    for i, field in opened:
        text = data[int(lines.starts[i]) : int(lines.ends[i])].decode("utf-8", "replace")
        if field < 0:
            bad.append((first_line + i, text, ("<line>", "<line>: not valid UTF-8 text")))
            continue
        name = names[field] if field < len(names) else f"#{field + 1}"
        why = (
            f"{name}: unterminated quote (a quoted value may not span lines; set multiline "
            "to allow it)"
        )
        bad.append((first_line + i, text, (name, why)))
    valid = np.ones(recs.size, dtype=bool)
    for number, text in invalid:
        idx = number - 1
        if 0 <= idx < recs.size:
            valid[idx] = False
            bad.append((int(file_lines[idx]), text, _MALFORMED_WHY))
    bad.sort(key=lambda b: b[0])
    n = 0 if table is None else table.num_rows
    out = (
        table
        if table is not None
        else pa.table({c: pa.array([], pa.string()) for c in part.columns})
    )
    batch = Batch(
        out,
        np.arange(record, record + n, dtype=np.int64),
        file_lines[valid],
        tuple((ln, text) for ln, text, _ in bad),
        None,
        tuple(why for _, _, why in bad),
    )
    return batch, lines.breaks


def _read_jsonl(part: InputPart) -> Iterator[Batch]:
    topts = part.text or TextOptions()
    line = 1
    record = 0
    rest = b""
    with fsspec.open(
        part.source, "rb", compression=_compression(part), **dict(part.storage_options)
    ) as f:
        while True:
            block = f.read(topts.block_size)
            data = rest + block
            if block:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    rest = data
                    continue
                data, rest = data[:cut], data[cut:]
            else:
                rest = b""
            if data.strip():
                batch = _json_block(part, data, line, record)
                record += batch.table.num_rows
                yield batch
            line += data.count(b"\n")
            if not block:
                break


def _line_numbers(data: bytes, first_line: int) -> np.ndarray:
    """One-based line numbers of the non-blank lines of ``data``."""
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    if not data.endswith(b"\n"):
        ends = np.append(ends, len(buf))
    starts = np.concatenate([[0], ends[:-1] + 1]) if ends.size else np.zeros(0, np.int64)
    nonblank = np.zeros(len(ends), dtype=bool)
    if buf.size:
        ws = np.isin(buf, np.frombuffer(b" \t\r\n", np.uint8))
        counts = np.concatenate([[0], np.cumsum(~ws)])
        nonblank = counts[ends] - counts[starts] > 0
    return np.flatnonzero(nonblank).astype(np.int64) + first_line


def _json_block(part: InputPart, data: bytes, first_line: int, record: int) -> Batch:
    """Parse one block of whole JSON lines (pyarrow; per line only on the error path).

    Every non-blank line must be one JSON object. A line that is not JSON, not an object,
    or has anything after its object is a malformed record; a mapped value that is an
    object or an array is a bad record naming its field.
    """
    import pyarrow.json as pj

    lines = _line_numbers(data, first_line)
    table: pa.Table | None = None
    if _is_utf8(data):  # pyarrow's JSON reader lets bytes that are not UTF-8 into strings
        try:
            table = pj.read_json(pa.py_buffer(data), read_options=pj.ReadOptions(use_threads=False))
        except pa.ArrowInvalid:
            table = None
    if table is not None and (
        table.num_rows != len(lines)
        or any(
            _is_nested(table.schema.field(c).type) for c in part.columns if c in table.column_names
        )
    ):
        table = None  # objects sharing a line, or nested values: look line by line
    if table is None:
        return _json_lines_slowly(part, data, lines, record)
    n = len(lines)
    cols = {}
    for c in part.columns:
        cols[c] = table.column(c) if c in table.column_names else pa.nulls(n)
    out = pa.table(cols) if cols else pa.table({"_": pa.nulls(n)})
    return Batch(out, np.arange(record, record + n, dtype=np.int64), lines)


def _is_nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_nested(t))


def _json_lines_slowly(part: InputPart, data: bytes, lines: np.ndarray, record: int) -> Batch:
    """Error path of :func:`_json_block`: decode each line with :mod:`json`."""
    texts = [t for t in data.split(b"\n") if t.strip()]
    good_lines: list[int] = []
    values: dict[str, list[Any]] = {c: [] for c in part.columns}
    malformed: list[tuple[int | None, str]] = []
    why: list[tuple[str, str]] = []
    for ln, text in zip(lines.tolist(), texts, strict=True):
        shown = text.decode("utf-8", "replace")
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if not isinstance(obj, dict):
            malformed.append((ln, shown))
            why.append(_MALFORMED_WHY)
            continue
        problem = None
        for c in part.columns:
            v = obj.get(c)
            if isinstance(v, dict | list):
                problem = (c, f"{c}: a JSON object or array is not a value")
            elif isinstance(v, str) and not _encodes(v):
                problem = (c, f"{c}: not valid Unicode text")
            if problem is not None:
                break
        if problem is not None:
            malformed.append((ln, shown))
            why.append(problem)
            continue
        good_lines.append(ln)
        for c in part.columns:
            values[c].append(obj.get(c))
    n = len(good_lines)
    cols = {c: _json_column(v) for c, v in values.items()}
    out = pa.table(cols) if cols else pa.table({"_": pa.nulls(n)})
    return Batch(
        out,
        np.arange(record, record + n, dtype=np.int64),
        np.asarray(good_lines, dtype=np.int64),
        tuple(malformed),
        None,
        tuple(why),
    )


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape
        return False
    return True


def _json_column(values: list[Any]) -> pa.Array:
    """Arrow array of decoded JSON scalars: typed as Arrow infers it, else as text."""
    try:
        return pa.array(values)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        return pa.array([_json_text(v) for v in values], pa.string())


def _json_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)

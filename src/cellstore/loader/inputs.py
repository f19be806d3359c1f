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
    "read_part",
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
    """

    delimiter: str | None = None
    header: bool = True
    column_names: tuple[str, ...] | None = None
    quote_char: str | None = '"'
    null_values: tuple[str, ...] = ("",)
    compression: str | None = "infer"
    block_size: int = DEFAULT_BLOCK_SIZE

    def __post_init__(self) -> None:
        if self.column_names is not None:
            object.__setattr__(self, "column_names", tuple(self.column_names))
        object.__setattr__(self, "null_values", tuple(self.null_values))
        if self.delimiter is not None and len(self.delimiter) != 1:
            raise InvalidArgumentError(f"delimiter must be one character, got {self.delimiter!r}")
        if not self.header and not self.column_names:
            raise InvalidArgumentError("without a header line, give column_names")
        if self.block_size < 1024:
            raise InvalidArgumentError("block_size must be at least 1024 bytes")

    @classmethod
    def from_options(cls, options: MappingABC[str, Any]) -> TextOptions:
        """Build from a mapping file's ``[input]`` table (unknown keys are ignored)."""
        keys = {"delimiter", "header", "column_names", "quote_char", "null_values", "compression"}
        kwargs = {k: v for k, v in options.items() if k in keys}
        if "column_names" in kwargs and kwargs["column_names"] is not None:
            kwargs["column_names"] = tuple(kwargs["column_names"])
        if "null_values" in kwargs:
            kwargs["null_values"] = tuple(kwargs["null_values"])
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
    storage_options: MappingABC[str, Any] = field(default_factory=dict)
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
            these are *record* numbers (the header counts, blank lines do not) until
            ``line_map`` turns them into the file's line numbers.
        malformed: ``(line, text)`` of lines in this batch that could not be parsed
            (``line`` as in ``lines``).
        line_map: Turns ``lines`` values into the lines where those records start in the
            file (CSV/TSV, whose quoted values may hold line breaks). It scans the file
            and is only called for bad records.
    """

    table: pa.Table
    records: np.ndarray
    lines: np.ndarray | None = None
    malformed: tuple[tuple[int | None, str], ...] = ()
    line_map: Callable[[np.ndarray], np.ndarray] | None = None

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


def discover_inputs(
    sources: Any,
    *,
    columns: Sequence[str],
    format: InputFormat | None = None,
    text: TextOptions | None = None,
    storage_options: MappingABC[str, Any] | None = None,
    target_part_bytes: int,
) -> DiscoveredInputs:
    """Turn load sources into :class:`InputPart` objects (reads only Parquet footers).

    Args:
        sources: One URL or glob (str or path), a list of them, a pandas DataFrame, a
            pyarrow Table or RecordBatch, or a Dask DataFrame.
        columns: The input columns the mapping reads.
        format: Input format for every file (default: from each file's extension).
        text: Options for text files.
        storage_options: fsspec options for the input URLs.
        target_part_bytes: Aim for parts of about this many Arrow bytes (Parquet row groups
            and in-memory tables are cut to it; a text file is one part, read in blocks).

    Returns:
        The parts.

    Raises:
        InvalidArgumentError: no input, an unknown format, or a URL that matches nothing.
    """
    opts = dict(storage_options or {})
    cols = tuple(columns)
    frame_kind = _frame_kind(sources)
    if frame_kind == "dask":
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
        return DiscoveredInputs(_frame_parts(sources, frame_kind, cols, target_part_bytes))
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
            found.extend(_parquet_parts(url, opts, cols, target_part_bytes, start=len(found)))
            continue
        topts = text or TextOptions()
        fs, fpath = fsspec.core.url_to_fs(url, **opts)
        size = int(fs.size(fpath))
        found.append(
            InputPart(
                index=len(found),
                kind=fmt,
                source=url,
                storage_options=opts,
                estimated_bytes=size * (_COMPRESSED_EXPANSION if compression else 1),
                text=topts,
                columns=cols,
            )
        )
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


def _frame_parts(
    frame: Any, kind: str, cols: tuple[str, ...], target: int
) -> tuple[InputPart, ...]:
    if kind == "pandas":
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise InvalidArgumentError(f"input <pandas> has no column(s) {missing}")
        table = pa.Table.from_pandas(frame[list(cols)], preserve_index=False)
        label = "<pandas>"
    else:
        table = pa.Table.from_batches([frame]) if isinstance(frame, pa.RecordBatch) else frame
        missing = [c for c in cols if c not in table.column_names]
        if missing:
            raise InvalidArgumentError(f"input <arrow> has no column(s) {missing}")
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
    url: str, opts: dict[str, Any], cols: tuple[str, ...], target: int, *, start: int
) -> list[InputPart]:
    import pyarrow.parquet as pq

    with fsspec.open(url, "rb", **opts) as f:
        meta = pq.ParquetFile(f).metadata
    names = set(meta.schema.to_arrow_schema().names)
    missing = [c for c in cols if c not in names]
    if missing:
        raise InvalidArgumentError(f"input {url} has no column(s) {missing}")
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
            table = pa.Table.from_pandas(data[list(part.columns)], preserve_index=False)
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
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as e:
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
        for batch in pf.iter_batches(
            batch_size=batch_rows, row_groups=list(part.row_groups), columns=list(part.columns)
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
            self._file = fsspec.open(self.part.source, "rb", compression=_compression(self.part),
                                     **dict(self.part.storage_options)).open()
        size = self.part.text.block_size if self.part.text else DEFAULT_BLOCK_SIZE
        block = self._file.read(size)
        data = self._carry + block
        # A quote at the end may be the first of a doubled quote: keep it for the next block.
        keep = 1 if block and data and data[-1] == self.quote else 0
        self._carry = data[len(data) - keep:]
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


def _read_csv(part: InputPart) -> Iterator[Batch]:
    import pyarrow.csv as pv

    topts = part.text or TextOptions()
    delimiter = topts.delimiter or ("\t" if part.kind == "tsv" else ",")
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
        newlines_in_values=bool(topts.quote_char),  # quoted values may span lines
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
            f,
            read_options=read_options,
            parse_options=parse_options,
            convert_options=convert_options,
        )
        seen_invalid = 0
        for batch in reader:
            n = batch.num_rows
            k = np.arange(record, record + n, dtype=np.int64)
            invalid = np.array(
                [ln for ln, _ in malformed if ln is not None], dtype=np.int64
            )
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
    import pyarrow.json as pj

    lines = _line_numbers(data, first_line)
    try:
        table = pj.read_json(pa.py_buffer(data), read_options=pj.ReadOptions(use_threads=False))
        malformed: tuple[tuple[int | None, str], ...] = ()
    except pa.ArrowInvalid:
        # Error path only: find the lines that are not JSON objects, parse the rest.
        good: list[tuple[int, bytes]] = []
        bad: list[tuple[int, bytes]] = []
        texts = [t for t in data.split(b"\n") if t.strip()]
        for ln, text in zip(lines.tolist(), texts, strict=True):
            try:
                ok = isinstance(json.loads(text), dict)
            except ValueError:
                ok = False
            (good if ok else bad).append((ln, text))
        malformed = tuple((ln, t.decode("utf-8", "replace")) for ln, t in bad)
        lines = np.array([ln for ln, _ in good], dtype=np.int64)
        if good:
            table = pj.read_json(pa.py_buffer(b"\n".join(t for _, t in good) + b"\n"))
        else:
            table = pa.table({})
    n = len(lines)
    cols = {}
    for c in part.columns:
        cols[c] = table.column(c) if c in table.column_names else pa.nulls(n)
    out = pa.table(cols) if cols else pa.table({"_": pa.nulls(n)})
    return Batch(out, np.arange(record, record + n, dtype=np.int64), lines, malformed)

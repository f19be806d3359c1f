"""CSV and TSV reading: one record a line (vectorized) or quoted values spanning lines."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from cellstore.errors import BadRecordError
from cellstore.loader.inputs.discover import (
    _MALFORMED_WHY,
    DEFAULT_BLOCK_SIZE,
    Batch,
    InputPart,
    TextOptions,
    _check_columns,
)
from cellstore.loader.inputs.textfile import (
    _compression,
    _is_utf8,
    _line_chunks,
    _open_part,
    _piece_maps,
    _RangeFile,
    _Utf8Checked,
)


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


def _only_line_breaks(part: InputPart) -> bool:
    """Whether the part's file holds nothing but line breaks (read block by block)."""
    return _lone_line(part) == b""


def _lone_line(part: InputPart) -> bytes | None:
    """The part's file's only line, without the line breaks around it.

    ``b""`` for a file of nothing but line breaks, None for one of two lines or more (read
    block by block, stopping at the second line).
    """
    block_size = (part.text or TextOptions()).block_size
    text = b""
    with _open_part(part) as f:
        while block := f.read(block_size):
            text = (text + block).strip(b"\r\n")
            if b"\n" in text or b"\r" in text:
                return None
    return text


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
        try:
            reader = pv.open_csv(
                io.BufferedReader(_Utf8Checked(f, part.source), buffer_size=1 << 16),
                read_options=read_options,
                parse_options=parse_options,
                convert_options=convert_options,
            )
        except pa.ArrowInvalid as e:
            lone = _lone_line(part) if "Empty CSV file" in str(e) else None
            if lone is None:
                raise
            if not lone:
                return  # no records, as when every record is one line
            # One line without a line break after it (a header alone): pyarrow finds no
            # block in it; read it with its line break, as one-line mode does.
            reader = pv.open_csv(
                io.BytesIO(lone + b"\n"),
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


def _read_csv_lines(part: InputPart) -> Iterator[Batch]:
    """CSV/TSV where every line is one record (``multiline`` off).

    The file (or the part's byte range) is cut into chunks at line breaks and each chunk
    parsed by pyarrow. A chunk parsed into as many records as it has non-empty lines, whose
    last line closes its quotes, is good (the common case: one count and one line looked
    at). Otherwise some quoted value ran past its line; those lines are found, reported as
    bad records and blanked, and the chunk is parsed again. The header line belongs to the
    part starting at byte 0; the others take the column names from it.
    """
    topts = part.text or TextOptions()
    piece = part.byte_range is not None and part.byte_range[0] > 0
    with _open_part(part) as raw:
        f = _RangeFile(raw, part.byte_range, topts.block_size)
        line_map, record_map = _piece_maps(part, f)
        rest = b""
        line = 1  # file line (piece line, for a piece) of the first byte of the next chunk
        names = list(topts.column_names) if topts.column_names else None
        if piece and names is None:
            names = text_columns(part)
            if names is None:
                return
        elif topts.header and not piece:
            header, rest, taken = _split_first_line(f, topts.block_size)
            if header is None:
                return
            line += taken
            if names is None:
                names = _header_names(part, header)
        assert names is not None
        _check_columns(part, names)
        record = 0
        for data in _line_chunks(f, topts.block_size, rest):
            if data:
                batch, breaks = _csv_chunk(part, data, line, record, names, line_map)
                line += breaks
                if batch is not None:
                    record += batch.table.num_rows
                    if line_map is not None:
                        batch = replace(batch, line_map=line_map, record_map=record_map)
                    yield batch


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
    part: InputPart,
    data: bytes,
    first_line: int,
    record: int,
    names: list[str],
    line_map: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[Batch | None, int]:
    """Parse one chunk of whole lines; returns its batch and how many lines it ends.

    ``line_map`` turns a piece's line numbers into the file's (for the error raised here).
    """
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
        last = first_line + lines.breaks
        if line_map is not None:
            first, last = (int(v) for v in line_map(np.array([first, last], dtype=np.int64)))
        raise BadRecordError(
            f"{part.source}, lines {first}-{last}: cannot be parsed as {part.kind}",
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

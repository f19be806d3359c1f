"""The bytes of a text input (CSV, TSV, JSON lines), shared by their readers.

Opening a part's file (decompressed as its options say), reading only the lines that start
in its byte range (:class:`_RangeFile`), cutting it into chunks of whole lines
(:func:`_line_chunks`), checking UTF-8 (:class:`_Utf8Checked`), and turning a piece's line
and record numbers into the file's (:func:`_piece_maps`, on the error path only).
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import fsspec
import numpy as np

from cellstore.errors import BadRecordError, InvalidArgumentError
from cellstore.loader.inputs.discover import DEFAULT_BLOCK_SIZE, InputPart, format_for


def _compression(part: InputPart) -> str | None:
    assert part.text is not None
    if part.text.compression == "infer":
        try:
            return format_for(part.source)[1]
        except InvalidArgumentError:
            return None
    return part.text.compression


class _RangeFile:
    r"""The bytes of a part's lines: the whole file, or the lines starting in its byte range.

    A line belongs to the range where its first byte is: reading skips to just after the
    first ``\n`` at or after ``start - 1`` (nothing to skip when ``start`` is 0 or follows
    a ``\n``) and stops after the first ``\n`` at or after ``end - 1``. Only ``\n``
    cuts: a lone ``\r`` line break inside a range is read like any other byte.

    Attributes:
        begin: File offset of the first byte read (known after the first :meth:`read`).
    """

    def __init__(self, f: Any, byte_range: tuple[int, int] | None, block_size: int) -> None:
        self._f = f
        self._range = byte_range
        self._block = block_size
        self._pos = 0  # file offset of the next byte read from f
        self._started = byte_range is None or byte_range[0] == 0
        self._done = False
        self.begin = 0

    def _skip(self, start: int) -> bytes:
        self._f.seek(start - 1)
        self._pos = start - 1
        while True:
            block: bytes = self._f.read(self._block)
            if not block:  # no line starts in the range
                self._done = True
                self.begin = self._pos
                return b""
            i = block.find(b"\n")
            if i >= 0:
                self._pos += len(block)
                self.begin = self._pos - len(block) + i + 1
                return block[i + 1 :]
            self._pos += len(block)

    def read(self, size: int = -1) -> bytes:
        """The next bytes of the part (``b""`` at its end); ``size`` is a hint."""
        if self._done:
            return b""
        if self._range is None:
            return self._f.read(self._block if size < 0 else size)  # type: ignore[no-any-return]
        start, end = self._range
        block = b""
        if not self._started:
            self._started = True
            block = self._skip(start)
            if self.begin >= end:  # the first line starting here starts past the range
                self._done = True
                return b""
            at = self.begin
        else:
            at = self._pos
        if not block:
            block = bytes(self._f.read(self._block))
            at = self._pos
            self._pos += len(block)
            if not block:
                self._done = True
                return b""
        limit = end - 1  # read through the first line break at or after this offset
        if at + len(block) <= limit:
            return block
        i = block.find(b"\n", max(0, limit - at))
        if i >= 0:
            self._done = True
            return block[: i + 1]
        return block


def _open_part(part: InputPart) -> Any:
    """The part's file, opened for reading (decompressed as its options say)."""
    return fsspec.open(
        part.source, "rb", compression=_compression(part), **dict(part.storage_options)
    )


class _Before:
    """Lines and records of a file before a piece of it (lazy: bad records only).

    A piece of a split text file (``byte_range`` not starting at 0) numbers its lines from
    1 and its records from 0; these maps turn them into the file's numbers. The line count
    reads the bytes before the piece (line breaks only); the record count parses them,
    since bad lines before the piece are no records.
    """

    def __init__(self, part: InputPart, begin: Callable[[], int]) -> None:
        self.part = part
        self._begin = begin
        self._lines: int | None = None
        self._records: int | None = None

    def lines(self) -> int:
        """Line breaks before the piece's first line."""
        if self._lines is None:
            end = self._begin()
            csv_rules = self.part.kind in ("csv", "tsv")
            count = 0
            prev_cr = False
            block_size = self.part.text.block_size if self.part.text else DEFAULT_BLOCK_SIZE
            with _open_part(self.part) as f:
                pos = 0
                while pos < end:
                    data = f.read(min(block_size, end - pos))
                    if not data:
                        break
                    pos += len(data)
                    count += data.count(b"\n")
                    if csv_rules:  # pyarrow's rules: \r\n, \n or a lone \r
                        count += data.count(b"\r") - data.count(b"\r\n")
                        if prev_cr and data[:1] == b"\n":
                            count -= 1
                        prev_cr = data[-1:] == b"\r"
            self._lines = count
        return self._lines

    def records(self) -> int:
        """Records (parsed, good or bad by value) before the piece."""
        if self._records is None:
            from cellstore.loader.inputs.csv import _read_csv_lines
            from cellstore.loader.inputs.jsonl import _read_jsonl

            assert self.part.byte_range is not None
            head = replace(self.part, byte_range=(0, self.part.byte_range[0]))
            reader = _read_jsonl if self.part.kind == "jsonl" else _read_csv_lines
            self._records = sum(b.table.num_rows for b in reader(head))
        return self._records

    def line_map(self, lines: np.ndarray) -> np.ndarray:
        return lines + self.lines()

    def record_map(self, records: np.ndarray) -> np.ndarray:
        return records + self.records()


def _piece_maps(
    part: InputPart, f: _RangeFile
) -> tuple[Callable[[np.ndarray], np.ndarray] | None, Callable[[np.ndarray], np.ndarray] | None]:
    """``(line_map, record_map)`` of a piece not starting at 0, else ``(None, None)``."""
    if part.byte_range is None or part.byte_range[0] == 0:
        return None, None
    before = _Before(part, lambda: f.begin)
    return before.line_map, before.record_map


def _last_break(data: bytes) -> int:
    r"""Offset just past the last complete line break of ``data`` (0: none).

    A ``\r`` that ends ``data`` does not count: it may be the first byte of ``\r\n``.
    """
    return max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1)) + 1


def _line_chunks(
    f: _RangeFile,
    block_size: int,
    rest: bytes = b"",
    *,
    cut: Callable[[bytes], int] = _last_break,
) -> Iterator[bytes]:
    """``rest``, then ``f``, in chunks of whole lines read ``block_size`` bytes at a time.

    ``cut(data)`` is the offset just past the last line break of ``data`` (0: none); a
    chunk ends there, and what follows starts the next one. The last chunk is whatever
    remains at the end of ``f`` (possibly empty, or without a closing line break).
    """
    while True:
        block = f.read(block_size)
        data = rest + block
        if not block:
            yield data
            return
        n = cut(data)
        if n:
            data, rest = data[:n], data[n:]
            yield data
        else:
            rest = data


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

"""JSON-lines reading: blocks of lines parsed by Arrow, line numbers kept for bad records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from cellstore.loader.inputs.discover import _MALFORMED_WHY, Batch, InputPart, TextOptions
from cellstore.loader.inputs.textfile import (
    _is_utf8,
    _line_chunks,
    _open_part,
    _piece_maps,
    _RangeFile,
)


def _read_jsonl(part: InputPart) -> Iterator[Batch]:
    topts = part.text or TextOptions()
    line = 1  # file line (piece line, for a piece of a split file) of the next block
    record = 0
    with _open_part(part) as raw:
        f = _RangeFile(raw, part.byte_range, topts.block_size)
        line_map, record_map = _piece_maps(part, f)
        for data in _line_chunks(f, topts.block_size, cut=_after_last_newline):
            if data.strip():
                batch = _json_block(part, data, line, record)
                record += batch.table.num_rows
                if line_map is not None:
                    batch = replace(batch, line_map=line_map, record_map=record_map)
                yield batch
            line += data.count(b"\n")


def _after_last_newline(data: bytes) -> int:
    r"""Offset just past the last ``\n`` of ``data`` (0: none)."""
    return data.rfind(b"\n") + 1


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

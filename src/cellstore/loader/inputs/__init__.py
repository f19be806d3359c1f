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

from collections.abc import Iterator
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from cellstore.errors import BadRecordError
from cellstore.loader.inputs.csv import _read_csv, text_columns
from cellstore.loader.inputs.discover import (
    INPUT_FORMATS,
    Batch,
    DiscoveredInputs,
    InputFormat,
    InputPart,
    TextOptions,
    discover_inputs,
    format_for,
    missing_columns_error,
    pandas_to_arrow,
)
from cellstore.loader.inputs.jsonl import _read_jsonl

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

"""The Parquet encodings of column files and of their companion cell files.

Readers decode any standard encoding (docs/format.md 9 and 14.2), so these are writer
choices only, measured on bench/bench_analytics.py's table: :func:`choose_encodings`
picks each key and value column's encoding of a column file by a trial on its first
records; :data:`COMPANION_ENCODING` is how the cell file beside a column file is written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cellstore.core.columnar import ROW_COLUMN, TS_COLUMN
from cellstore.storefiles.writer import CellEncoding

__all__ = [
    "COLUMN_ZSTD_LEVEL",
    "COMPANION_ENCODING",
    "TRIAL_RECORDS",
    "choose_encodings",
    "column_level",
]

#: zstd level of column files: written once by a load or a major compaction and read by
#: every analytics query, so smaller beats faster to write (level 6 keeps a load's write
#: step within ~1.5x of level 1's time; measured in docs/performance.md).
COLUMN_ZSTD_LEVEL: Final = int(os.environ.get("CELLSTORE_COLUMN_ZSTD_LEVEL", "6"))

#: The encoding of a column file's companion cell file (older versions, delete markers,
#: values no column holds): written once, read only by reads the column file cannot
#: answer alone. Its rows repeat runs of a record's cells, which zstd at the column
#: files' level holds in fewer bytes than a dictionary does; values are mostly short
#: numbers, their lengths kept apart. On bench/bench_analytics.py's compacted table the
#: companions took 0.98 MB with :data:`~cellstore.storefiles.writer.CELL_ENCODING` and
#: 0.73 MB with this. The trade: decoding them plain took 0.9x the CPU, but a read that
#: asks for ``row`` as an Arrow dictionary (a merge's) hashes the rows: 1.6x (20 ms
#: against 13 ms for those 233k cells), small beside the column files' expansion such a
#: read also does. Not ``DELTA_BYTE_ARRAY`` rows: pyarrow cannot read those as an Arrow
#: dictionary.
COMPANION_ENCODING: Final = CellEncoding(
    dictionary=("qualifier",),
    encodings=(("value", "DELTA_LENGTH_BYTE_ARRAY"),),
    zstd_level=COLUMN_ZSTD_LEVEL,
)

#: Records a column file's writer tries the encodings of a column on.
TRIAL_RECORDS: Final = 16384

#: A column file's encodings (the names pyarrow's ``column_encoding`` takes; a dictionary
#: is ``use_dictionary``). No BYTE_STREAM_SPLIT, though it would make a key's trailing
#: int32 field a fifth smaller again: the vectorized Parquet reader of Spark 4.1 (our
#: floor), which ``read_optimized`` uses, has no decoder for it (4.3 has; both decode
#: DELTA_BINARY_PACKED).
_DICTIONARY: Final = "dictionary"
_PLAIN: Final = "PLAIN"
_DELTA_INTS: Final = "DELTA_BINARY_PACKED"
_DELTA_BYTES: Final = "DELTA_BYTE_ARRAY"


def column_level(compression: str) -> int | None:
    """The compression level of a column file (zstd: :data:`COLUMN_ZSTD_LEVEL`)."""
    return COLUMN_ZSTD_LEVEL if compression == "zstd" else None


def choose_encodings(
    first: pa.Table, names: Sequence[str], *, compression: str, rows: bool
) -> tuple[list[str], dict[str, str]]:
    """A column file's encodings: the columns with dictionaries, and the others' own.

    ``__ts`` takes a dictionary and ``__row`` (``rows``: the file holds it)
    ``DELTA_BYTE_ARRAY``. Each key and value column of ``names`` is decided on ``first``
    (the file's first records, up to :data:`TRIAL_RECORDS`), by a trial of its candidate
    encodings there, compressed as the file is (``compression``): the smallest wins (a
    tie goes to the earlier of dictionary, plain, delta). A dictionary is a candidate when
    at most half the values held are distinct (random ids and raw measurements are
    smaller plain), and wins without a trial when at most one value in 16 is distinct in a
    column that is not an integer one; an integer column also tries
    ``DELTA_BINARY_PACKED`` (ordered or close numbers, such as a key's trailing field or
    times of day: about a fifth smaller than plain or a dictionary on
    bench/bench_analytics.py's table, and decoded as fast as plain).

    Returns:
        ``(use_dictionary, column_encoding)`` for pyarrow's Parquet writer.
    """
    first = first.slice(0, TRIAL_RECORDS)
    dictionary = [TS_COLUMN]
    encodings = {ROW_COLUMN: _DELTA_BYTES} if rows else {}
    for name in names:
        choice = _encoding_of(first.column(name), compression)
        if choice == _DICTIONARY:
            dictionary.append(name)
        elif choice != _PLAIN:
            encodings[name] = choice
    return dictionary, encodings


def _encoding_of(col: pa.ChunkedArray, compression: str) -> str:
    """The encoding of a key or value column whose first records are ``col``."""
    held = len(col) - col.null_count
    if not held:
        return _PLAIN
    integer = pa.types.is_integer(col.type)
    distinct = pc.count_distinct(col).as_py()
    candidates = [_DICTIONARY] if 2 * distinct <= held else []
    if candidates and not integer and 16 * distinct <= len(col):
        return _DICTIONARY  # few distinct values: a dictionary always wins
    candidates.append(_PLAIN)
    if integer:
        candidates.append(_DELTA_INTS)
    if len(candidates) == 1:
        return candidates[0]
    if compression == "none" and not integer:
        return candidates[0]  # uncompressed, a dictionary of repeats wins
    sizes = [_trial_size(col, c, compression) for c in candidates]
    return candidates[sizes.index(min(sizes))]


def _trial_size(col: pa.ChunkedArray, encoding: str, compression: str) -> int:
    """Bytes of ``col`` written alone with ``encoding``, compressed as the file is."""
    sink = pa.BufferOutputStream()
    pq.write_table(
        pa.table({"c": col}),
        sink,
        compression=compression,
        compression_level=column_level(compression),
        use_dictionary=encoding == _DICTIONARY,
        column_encoding={"c": encoding} if encoding == _DELTA_INTS else None,
        write_statistics=True,  # page headers as the file's (statistics, checksums)
        write_page_checksum=True,
    )
    return int(sink.getvalue().size)

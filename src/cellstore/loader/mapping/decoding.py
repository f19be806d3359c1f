"""Values decoded with the codecs a table's mapping-based loads recorded, for outputs.

What the CLI's outputs and file exports use to show values decoded (issue 29), vectorized
per column and codec: :func:`value_groups` (which cells each codec decodes),
:func:`decoded_text` and :func:`with_decoded` (a cells-shape result's ``decoded`` text
column, beside the stored ``value``), and :func:`decode_family_columns` (a wide result's
columns whose qualifiers came from an input column, which ``column_types`` cannot name
before reading). The codecs come from :class:`~cellstore.loader.mapping.TableCodecs`
(:func:`recorded_codecs`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CellType
from cellstore.core.codecs import Codec, decode_values
from cellstore.core.keys import from_string_binary
from cellstore.errors import InvalidArgumentError
from cellstore.loader.mapping.tablecodecs import TableCodecs

if TYPE_CHECKING:
    from cellstore.core.metadata import TableMetadata

__all__ = [
    "decode_family_columns",
    "decoded_text",
    "recorded_codecs",
    "value_groups",
    "with_decoded",
]


def recorded_codecs(metadata: TableMetadata) -> TableCodecs | None:
    """A table's recorded value codecs, or None when none is (or the record is bad)."""
    try:
        codecs = TableCodecs.from_properties(metadata.properties)
    except InvalidArgumentError:
        return None
    return codecs if codecs.columns or codecs.families else None


def value_groups(codecs: TableCodecs, cells: pa.Table) -> list[tuple[np.ndarray, Codec]]:
    """The Put cells of ``cells`` (result schema) that decode, grouped by codec.

    A cell's codec is its column's, else its family's (qualifiers from an input column);
    ``bytes`` and cells with neither are left out. Vectorized per column.

    Returns:
        ``(indices, codec)`` pairs: ascending row indices of ``cells``, none empty.
    """
    n = cells.num_rows
    if n == 0 or (not codecs.columns and not codecs.families):
        return []
    family, qualifier = cells.column("family"), cells.column("qualifier")
    puts = pc.equal(cells.column("type"), int(CellType.PUT)).to_numpy(zero_copy_only=False)
    covered = np.zeros(n, dtype=bool)
    wanted: list[tuple[np.ndarray, Codec]] = []
    for name, codec in codecs.columns.items():
        fam, _, qual = name.partition(":")
        q = pa.scalar(from_string_binary(qual), pa.binary())
        hit = pc.and_(pc.equal(family, fam), pc.equal(qualifier, q))
        mask = hit.to_numpy(zero_copy_only=False)
        covered |= mask
        wanted.append((mask, codec))
    for fam, codec in codecs.families.items():
        wanted.append((pc.equal(family, fam).to_numpy(zero_copy_only=False) & ~covered, codec))
    groups: list[tuple[np.ndarray, Codec]] = []
    for mask, codec in wanted:
        idx = np.flatnonzero(mask & puts)
        if codec is not Codec.BYTES and idx.size:
            groups.append((idx, codec))
    return groups


def decoded_text(codecs: TableCodecs, cells: pa.Table) -> pa.Array:
    """Each cell's value decoded with its recorded codec, as text (vectorized).

    Numbers as Arrow writes them (``517.5``, ``-3``), booleans ``true``/``false``, strings
    as they are; null for delete markers, cells without a codec (or ``bytes``) and values
    that do not decode.

    Args:
        codecs: The table's recorded codecs.
        cells: Result cells (``row, family, qualifier, ts, type, value``).

    Returns:
        A string array, one entry per cell.
    """
    value = cells.column("value")
    pieces: list[pa.Array] = []
    at = np.full(cells.num_rows, -1, dtype=np.int64)  # -1: the trailing null
    offset = 0
    for idx, codec in value_groups(codecs, cells):
        decoded = decode_values(value.take(pa.array(idx)), codec, field="value", errors="null")
        pieces.append(decoded.cast(pa.string()))
        at[idx] = np.arange(offset, offset + idx.size)
        offset += idx.size
    pieces.append(pa.nulls(1, pa.string()))
    at[at < 0] = offset
    return pa.concat_arrays(pieces).take(pa.array(at))


def with_decoded(codecs: TableCodecs, cells: pa.Table) -> pa.Table:
    """``cells`` with a ``decoded`` column after ``value`` (:func:`decoded_text`)."""
    at = cells.column_names.index("value") + 1
    return cells.add_column(at, "decoded", decoded_text(codecs, cells))


def decode_family_columns(
    codecs: TableCodecs, wide: pa.Table, *, keep: Collection[str] = ()
) -> pa.Table:
    """A wide result's still-binary columns of families with a family codec, decoded.

    Qualifiers a mapping took from an input column (tall-to-wide designs) have no column
    name known before reading, so ``column_types`` cannot name them; this decodes them
    afterwards, one vectorized pass per column (null where a value does not decode).

    Args:
        codecs: The table's recorded codecs.
        wide: A wide-shape result (``row``, key fields, ``family:qualifier`` columns).
        keep: Columns to leave as they are (a ``bytes`` codec the caller gave).

    Returns:
        ``wide`` with those columns typed.
    """
    for i, name in enumerate(wide.column_names):
        family, colon, _ = name.partition(":")
        codec = codecs.families.get(family) if colon else None
        column = wide.column(i)
        if codec is None or codec is Codec.BYTES or name in keep or name in codecs.columns:
            continue
        if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
            typed = decode_values(column.combine_chunks(), codec, field=name, errors="null")
            wide = wide.set_column(i, name, typed)
    return wide

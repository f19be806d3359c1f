"""Output shapes: HBase's cells (long) and one row per row key ("wide").

The wide shape pivots a scan's cells: one output row per row key, one column per
``family:qualifier`` holding that column's newest returned value (null where the row has no
visible cell of the column). Values stay bytes unless a column mapping names a codec for the
column (HBase ``Bytes`` encodings: ``long``, ``int``, ``short``, ``double``, ``float``,
``boolean``, ``string``; see :mod:`cellstore.core.codecs`).

A read that names only ``column_types`` (no ``columns``, no ``families``) returns just the
typed columns it names, in that order, after ``row`` (and any decoded key fields); naming
columns or families selects them, and ``column_types`` then only decodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import segment_starts
from cellstore.core.codecs import Codec, arrow_type, decode_values
from cellstore.core.keys import split_column, to_string_binary
from cellstore.core.rowkey import RowKeySpec
from cellstore.errors import BadCellError, InvalidArgumentError

__all__ = ["Shape", "WideSpec", "column_name", "to_wide"]


class Shape(StrEnum):
    """The layout of scan results."""

    CELLS = "cells"
    WIDE = "wide"

    @classmethod
    def parse(cls, value: str | Shape) -> Shape:
        """A shape from its name.

        Raises:
            InvalidArgumentError: for an unknown shape.
        """
        try:
            return cls(str(value).lower())
        except ValueError:
            raise InvalidArgumentError(f"unknown shape {value!r} (valid: cells, wide)") from None


def column_name(family: str, qualifier: bytes) -> str:
    """The wide-shape name of a column: ``family:qualifier``.

    The qualifier is shown as UTF-8 when it decodes, else in HBase's printable escaping.
    """
    try:
        text = qualifier.decode("utf-8")
    except UnicodeDecodeError:
        text = to_string_binary(qualifier)
    return f"{family}:{text}"


@dataclass(frozen=True, kw_only=True)
class WideSpec:
    """How to pivot cells to the wide shape (picklable).

    Attributes:
        columns: The output columns ``(family, qualifier)`` in order, or None to take every
            column found, in HBase order (family, then qualifier bytes).
        codecs: ``(family, qualifier)`` to the codec that decodes that column's values.
        decode_errors: ``"raise"`` (a value that does not decode is an error naming the row
            and column) or ``"null"``.
    """

    columns: tuple[tuple[str, bytes], ...] | None
    codecs: tuple[tuple[tuple[str, bytes], Codec], ...] = ()
    decode_errors: str = "raise"

    @classmethod
    def build(
        cls,
        *,
        columns: Sequence[tuple[str, bytes]] | None,
        column_types: Mapping[str, str | Codec] | None,
        decode_errors: str = "raise",
        typed_only: bool = False,
    ) -> WideSpec:
        """Validate a column list and a ``{"family:qualifier": codec}`` mapping.

        Args:
            columns: The output columns in order, or None (see ``typed_only``).
            column_types: ``{"family:qualifier": codec}``; the named columns are decoded.
            decode_errors: ``"raise"`` or ``"null"``.
            typed_only: With ``columns`` None and some ``column_types``: output only the
                typed columns, in the order named (a read that names no columns or
                families, only types); False: every column found, the typed ones decoded.

        Returns:
            The spec; its ``columns`` are None only when every column found is wanted.

        Raises:
            InvalidArgumentError: an unknown codec, a malformed column name, or a bad
                ``decode_errors``.
        """
        if decode_errors not in ("raise", "null"):
            raise InvalidArgumentError("decode_errors must be 'raise' or 'null'")
        codecs = []
        for name, codec in (column_types or {}).items():
            codecs.append((split_column(name), Codec.parse(codec)))
        cols = None if columns is None else tuple(dict.fromkeys(columns))
        if cols is None and typed_only and codecs:
            cols = tuple(dict.fromkeys(col for col, _ in codecs))
        return cls(columns=cols, codecs=tuple(codecs), decode_errors=decode_errors)

    def empty(self) -> pa.Table:
        """The output schema with no rows (known only when the columns are)."""
        if self.columns is None:
            raise InvalidArgumentError(
                "the wide shape's columns are unknown before reading; name them with columns= "
                "or column_types="
            )
        codecs = dict(self.codecs)
        fields = [pa.field("row", pa.binary(), nullable=False)]
        for fam, qual in self.columns:
            codec = codecs.get((fam, qual))
            fields.append(pa.field(column_name(fam, qual), arrow_type(codec or Codec.BYTES)))
        return pa.schema(fields).empty_table()


def to_wide(cells: pa.Table, spec: WideSpec) -> pa.Table:
    """Pivot cells (in result order) to one row per row key.

    Args:
        cells: ``row, family, qualifier, ts, type, value`` with each row's cells together,
            newest version first within a column (any number of versions).
        spec: Columns and codecs.

    Returns:
        ``row`` then one column per ``family:qualifier``, rows in the order they come in.

    Raises:
        BadCellError: a value does not decode with its column's codec (``decode_errors``
            ``"raise"``), naming the row and column.
    """
    n = cells.num_rows
    rows = cells.column("row")
    row_start = segment_starts(rows)
    col_start = segment_starts(rows, cells.column("family"), cells.column("qualifier"))
    row_id = np.cumsum(row_start) - 1
    n_rows = int(row_id[-1]) + 1 if n else 0
    newest = cells.filter(pa.array(col_start, pa.bool_())) if n else cells
    newest_row = row_id[col_start]
    # One code per distinct (family, qualifier): encode "family" + 0x00 + qualifier.
    keys = pc.binary_join_element_wise(
        newest.column("family").cast(pa.binary()), newest.column("qualifier"), b"\x00"
    )
    encoded = pc.dictionary_encode(keys).combine_chunks()
    found = [_split_key(k) for k in encoded.dictionary.to_pylist()]
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    if spec.columns is None:
        wanted = sorted(found, key=lambda c: (c[0], c[1]))
    else:
        wanted = list(spec.columns)
    code_of = {col: i for i, col in enumerate(found)}
    codecs = dict(spec.codecs)
    values = newest.column("value")
    arrays: list[pa.Array] = [rows.filter(pa.array(row_start, pa.bool_())).combine_chunks()]
    names = ["row"]
    for col in wanted:
        codec = codecs.get(col)
        code = code_of.get(col)
        name = column_name(*col)
        if code is None:
            arrays.append(pa.nulls(n_rows, arrow_type(codec or Codec.BYTES)))
            names.append(name)
            continue
        where = np.flatnonzero(codes == code)
        index = np.full(n_rows, -1, dtype=np.int64)
        index[newest_row[where]] = np.arange(where.size)
        column = values.take(pa.array(where, pa.int64())).combine_chunks()
        if codec is not None and codec is not Codec.BYTES:
            column = _decode(column, codec, name, newest, where, spec.decode_errors)
        arrays.append(column.take(pa.array(index, mask=index < 0)))
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def _decode(
    column: pa.Array,
    codec: Codec,
    name: str,
    newest: pa.Table,
    where: np.ndarray,
    errors: str,
) -> pa.Array:
    """Decode one column's values; an error names the row (not the record index)."""
    typed = decode_values(column, codec, field=name, errors="null")
    bad = np.flatnonzero(np.asarray(pc.is_null(typed).to_numpy(zero_copy_only=False), dtype=bool))
    if bad.size and errors == "raise":
        raise undecodable(newest.column("row")[int(where[bad[0]])].as_py(), name, codec)
    result: pa.Array = typed
    return result


def undecodable(row: bytes, name: str, codec: Codec) -> BadCellError:
    """The error of a wide read for a value its column's codec cannot decode.

    It names the row (printable) and the column, as every read path words it.
    """
    return BadCellError(
        f"row {to_string_binary(row)}: value of {name} is not a valid {codec} "
        "(use decode_errors='null' to read it as null)",
        field=name,
    )


def _split_key(key: bytes) -> tuple[str, bytes]:
    fam, _, qual = key.partition(b"\x00")
    return fam.decode("utf-8"), qual


def with_key_columns(
    table: pa.Table, spec: RowKeySpec | None, *, fields: pa.Table | None = None
) -> pa.Table:
    """``table`` with the row key's decoded fields inserted after ``row``.

    A field named like a result column (``ts``, ``family``...) is added as ``key_<name>``.
    Keys that do not parse with the spec give nulls (a table may hold rows written by
    other means than the loader).

    Args:
        table: A result with a ``row`` column.
        spec: The table's row-key spec (None: ``table`` as it is).
        fields: The decoded fields of ``table``'s rows when already known (a keyed
            column file's key columns), in the spec's field order; not decoded again.
    """
    if spec is None:
        return table
    if fields is None or fields.num_rows != table.num_rows:
        decoded = spec.decode(table.column("row"), errors="null")
    else:
        decoded = fields.select(list(spec.decodable_columns))
    taken = set(table.column_names)
    for i, name in enumerate(decoded.column_names):
        out = f"key_{name}" if name in taken else name
        column = pa.field(out, decoded.schema.field(i).type)  # nullable, as decoded
        table = table.add_column(1 + i, column, decoded.column(i))
    return table

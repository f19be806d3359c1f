"""Reading through an index: :func:`open_index` and :class:`Index`.

``Index.lookup(value)`` is a prefix scan of the index table for the encoded value, then one
read of the data rows found (row by row for a few, one scan over their span for many); each
data row is kept only if its current value still encodes to the index row it was found by,
so entries the index has not caught up with yet are never returned. ``Index.scan`` returns
the index rows themselves (value, data row, covered columns) without reading the data
table, like a covered-index query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.codecs import Codec, decode_values
from cellstore.core.keys import RowRange, split_column
from cellstore.errors import InvalidArgumentError
from cellstore.jobs.index.catalog import definition_of, open_index_table
from cellstore.jobs.index.definition import IndexDefinition
from cellstore.jobs.index.expr import KeyRef, env_key, evaluate
from cellstore.jobs.index.keys import (
    IndexType,
    _scalar,
    decode_keys,
    encode_parts,
    encode_values,
    index_keys,
)
from cellstore.jobs.index.local import local_ranges, local_types
from cellstore.jobs.index.rows import empty_rows, index_rows, key_decoder, read_rows, stored_rows
from cellstore.reader.shapes import Shape, WideSpec, to_wide
from cellstore.reader.tables import scan_table

if TYPE_CHECKING:
    from cellstore.handle import TableHandle

__all__ = ["Index", "open_index"]


def open_index(table: TableHandle, name: str) -> Index:
    """The index ``name`` of ``table``, for lookups.

    Raises:
        IndexNotFoundError: no such index.
    """
    definition = definition_of(table, name)
    return Index(table, definition, open_index_table(table.catalog, definition))


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if isinstance(value, tuple | list):
        return tuple(value)
    return (value,)


class Index:
    """One global secondary index: its definition, its table, and reads through it.

    Values are given per part: a scalar for a one-part index, a tuple for a composite one
    (a shorter tuple matches on the leading parts). Strings for ``string`` parts, bytes
    (or str, as UTF-8) for ``bytes`` parts, ints, floats and bools for the others.
    """

    def __init__(
        self, table: TableHandle, definition: IndexDefinition, index_table: TableHandle
    ) -> None:
        self.table = table
        self.definition = definition
        self.index_table = index_table
        self.types: tuple[IndexType, ...] = definition.part_types(table.metadata.row_key)

    def __repr__(self) -> str:
        return f"Index({self.definition.name!r}, table={self.definition.table!r})"

    def refresh(self) -> Index:
        """Move the data and index table handles to their newest versions.

        An :class:`Index` reads the versions it was opened at (like a
        :class:`~cellstore.handle.TableHandle` handle); call this to see later loads and builds.
        """
        self.table = self.table.latest()
        self.index_table = self.index_table.refresh()
        return self

    def encode(self, value: Any) -> bytes:
        """The index key prefix of ``value`` (all parts, or the leading ones of a tuple)."""
        return encode_values(self.types, _as_tuple(value), self.definition.part_names)

    # ------------------------------------------------------------------ index rows
    def _entries(self, where: RowRange, limit: int | None) -> pa.Table:
        ranges, types = [where], self.types
        if self.definition.local:  # one range per region (docs/format.md 12.5)
            ranges = local_ranges(self.index_table.metadata, self.definition, where)
            types = local_types(self.types)
        parts = [empty_rows(self.definition)]
        found = 0
        for rng in ranges:
            if limit is not None and found >= limit:
                break
            scan = scan_table(
                self.index_table,
                start_row=rng.start,
                stop_row=rng.stop,
                families=[self.definition.family],
                limit=None if limit is None else limit - found,
            )
            for batch in scan.to_batches():
                rows, _, marked = stored_rows(batch, self.definition, types)
                keep = pc.and_(pa.array(marked), pc.is_valid(rows.column("row")))
                parts.append(rows.filter(keep))
                found += parts[-1].num_rows
        return pa.concat_tables(parts)

    def _global_keys(self, keys: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Index keys in the global layout (a local key without its region prefix)."""
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if not self.definition.local:
            return keys
        decoded = decode_keys(local_types(self.types), keys)
        return index_keys(encode_parts(self.types, decoded.parts[2:]), decoded.rows)

    def _range(self, lo: Any, hi: Any) -> RowRange:
        start = self.encode(lo) if lo is not None else b""
        stop = self.encode(hi) if hi is not None else b""
        found = RowRange(start, stop)
        return RowRange(start, start) if found.is_empty and stop else found

    def scan(
        self,
        value: Any = None,
        *,
        lo: Any = None,
        hi: Any = None,
        limit: int | None = None,
        column_types: Mapping[str, Codec | str] | None = None,
    ) -> pa.Table:
        """The index rows for ``value`` (or ``lo <= value < hi``), without the data table.

        Args:
            value: The value (or leading parts) to match; None with no bounds: every row.
            lo: Inclusive lower bound (a value or leading parts), instead of ``value``.
            hi: Exclusive upper bound.
            limit: At most this many index rows.
            column_types: ``{"family:qualifier": codec}`` to decode covered columns.

        Returns:
            One row per index row, in index order: a column per part (named by the part's
            column or key field, typed), ``row`` (the data row key), ``ts``, and the
            covered columns (bytes, or decoded per ``column_types``). Entries are as the
            index holds them: use :meth:`lookup` for rows checked against the data.
        """
        entries = self._entries(self._where(value, lo, hi), limit)
        decoded = decode_keys(self.types, self._global_keys(entries.column("key")))
        names = [f"key_{n}" if n in ("row", "ts") else n for n in self.definition.part_names]
        out = pa.table(
            [*decoded.parts, entries.column("row"), entries.column("ts")],
            names=[*names, "row", "ts"],
        )
        codecs = {k: Codec.parse(v) for k, v in (column_types or {}).items()}
        for c in self.definition.covered:
            values = entries.column(c).combine_chunks()
            if c in codecs:
                values = decode_values(values, codecs[c], field=c)
            out = out.append_column(c, values)
        return out

    def _where(self, value: Any, lo: Any, hi: Any) -> RowRange:
        if value is not None:
            if lo is not None or hi is not None:
                raise InvalidArgumentError("give a value or lo/hi bounds, not both")
            return RowRange.of_prefix(self.encode(value))
        return self._range(lo, hi)

    # -------------------------------------------------------------------- lookups
    def evaluate(self, inputs: Mapping[str, Any]) -> tuple[Any, ...]:
        """The indexed value (one entry per part) a data row with these inputs has.

        Applies the index's parts -- functional ones included -- to one row's values, as
        a build does to the data, so ``lookup(index.evaluate(inputs))`` finds the rows
        that index like ``inputs``.

        Args:
            inputs: Per ``family:qualifier`` the parts read, the column's decoded value
                (``str`` for ``string``, ``int`` for ``long``, ``bytes`` for ``bytes``, ...);
                per row-key field, the field's value.

        Raises:
            InvalidArgumentError: an input the parts need is missing or of the wrong type.
        """
        key_types = self.definition.key_types(self.table.metadata.row_key)
        out: list[Any] = []
        for part, typ in zip(self.definition.parts, self.types, strict=True):
            env: dict[str, pa.Array] = {}
            for ref in part.columns:
                env[env_key(ref)] = _input(inputs, ref.column, IndexType.of_codec(ref.codec))
            for name in part.key_fields:
                env[env_key(KeyRef(name))] = _input(inputs, name, key_types[name])
            if part.tree is None:
                (only,) = env.values()
                out.append(only.cast(typ.arrow_type)[0].as_py())
            else:
                out.append(evaluate(part.tree, env, key_types, 1)[0].as_py())
        return tuple(out)

    def lookup(
        self,
        value: Any = None,
        *,
        inputs: Mapping[str, Any] | None = None,
        columns: Iterable[str] | str | None = None,
        shape: str = "cells",
        column_types: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        """The data rows whose indexed value is ``value`` (or starts with these parts).

        Args:
            value: A value, or a tuple of the leading parts' values (for a functional
                part, the expression's value: ``"ANN"`` for ``UPPER(string(info:name))``).
            inputs: Instead of ``value``: column and key-field values the index's
                expressions are applied to (:meth:`evaluate`), e.g.
                ``{"info:name": "ann"}`` finds the rows whose upper-cased name is ``ANN``.
            columns: ``family:qualifier`` (or bare family) names to return; None: all.
            shape: ``"cells"`` (as ``Table.scan``) or ``"wide"`` (a row per data row).
            column_types: For the wide shape, codecs per ``family:qualifier``.
            limit: Read at most this many index rows (stale ones are dropped after).

        Returns:
            The data rows' current cells (or wide rows), grouped by row in index order
            (value, then row key). Only rows whose current value is ``value`` are
            returned, even when the index is behind the data.
        """
        if inputs is not None:
            if value is not None:
                raise InvalidArgumentError("give a value or inputs, not both")
            value = self.evaluate(inputs)
            if any(v is None for v in value):
                raise InvalidArgumentError(f"the index gives no value for inputs {inputs!r}")
        if value is None:
            raise InvalidArgumentError("lookup needs a value (use lookup_range for ranges)")
        return self._fetch(self._where(value, None, None), columns, shape, column_types, limit)

    def lookup_range(
        self,
        lo: Any = None,
        hi: Any = None,
        *,
        columns: Iterable[str] | str | None = None,
        shape: str = "cells",
        column_types: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        """The data rows with ``lo <= value < hi`` (either bound may be None), in value order.

        Rows come as :meth:`lookup` returns them.

        Bounds are values or tuples of leading parts; the order is the value's (numbers
        numerically, strings and bytes bytewise), so a range on the first part of a
        composite index works too.
        """
        return self._fetch(self._range(lo, hi), columns, shape, column_types, limit)

    def _fetch(
        self,
        where: RowRange,
        columns: Iterable[str] | str | None,
        shape: str,
        column_types: Mapping[str, str] | None,
        limit: int | None,
    ) -> pa.Table:
        wanted = None if columns is None else _names(columns)
        form = Shape.parse(shape)
        entries = self._entries(where, limit)
        rows = pc.unique(entries.column("row").combine_chunks())
        rows = rows.take(pc.sort_indices(rows))
        read: list[str] | None = None
        if wanted is not None:
            read = list(dict.fromkeys([*wanted, *self.definition.indexed_columns]))
        data = read_rows(self.table, rows, columns=read)
        current, _ = index_rows(data, self.definition, self.types, self.table.metadata.row_key)
        found = self._global_keys(entries.column("key"))
        good = entries.filter(pc.is_in(found, value_set=current.column("key")))
        order = good.column("row").combine_chunks()
        cells = data.filter(pc.is_in(data.column("row"), value_set=order))
        if wanted is not None:
            cells = cells.filter(_column_mask(cells, wanted))
        rank = pc.index_in(cells.column("row"), value_set=order)
        by_rank = pc.sort_indices(pa.table({"rank": rank}), sort_keys=[("rank", "ascending")])
        cells = cells.take(by_rank)
        if form is Shape.CELLS:
            return cells
        explicit = None
        if wanted is not None and all(":" in c for c in wanted):
            explicit = [split_column(c) for c in wanted]
        spec = WideSpec.build(columns=explicit, column_types=column_types)
        if cells.num_rows:
            wide = to_wide(cells, spec)
        elif explicit is not None:
            wide = spec.empty()
        else:
            wide = pa.table({"row": pa.array([], pa.binary())})
        decoder = key_decoder(self.table.metadata.row_key)
        if decoder is not None:
            decoded = decoder.decode(wide.column("row"), errors="null")
            for i, name in enumerate(decoded.column_names):
                out = f"key_{name}" if name in wide.column_names else name
                wide = wide.add_column(1 + i, out, decoded.column(i))
        return wide


def _input(inputs: Mapping[str, Any], name: str, typ: IndexType) -> pa.Array:
    if name not in inputs:
        raise InvalidArgumentError(f"the index reads {name!r}: give it in inputs")
    return _scalar(typ, inputs[name], f"input {name}")


def _names(columns: Iterable[str] | str) -> list[str]:
    if isinstance(columns, str):
        return [columns]
    return list(columns)


def _column_mask(cells: pa.Table, wanted: Sequence[str]) -> pa.Array:
    """Cells of the wanted ``family:qualifier`` columns or bare families."""
    families = [c for c in wanted if ":" not in c]
    explicit = [split_column(c) for c in wanted if ":" in c]
    names = pa.array([f.encode("utf-8") + b"\x00" + q for f, q in explicit], pa.binary())
    keys = pc.binary_join_element_wise(
        cells.column("family").cast(pa.binary()), cells.column("qualifier"), b"\x00"
    )
    mask = pc.is_in(keys, value_set=names)
    if families:
        mask = pc.or_(mask, pc.is_in(cells.column("family"), value_set=pa.array(families)))
    return mask

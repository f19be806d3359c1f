"""Pivoting cells into records, and the sorted union of record runs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.codecs import Codec, arrow_type, decode_values, encode_values
from cellstore.reader.columnar.types import Column, Typed
from cellstore.reader.shapes import WideSpec, column_name, to_wide


def _pivot(
    name: str, cells: pa.Table, wanted: set[Column] | None
) -> tuple[pa.Array, dict[Column, Typed]]:
    """Resolved cells of one family (cell order) as rows and newest values (bytes)."""
    if not cells.num_rows:
        return pa.array([], pa.binary()), {}
    quals = pc.unique(cells.column("qualifier")).to_pylist()
    columns = tuple((name, q) for q in sorted(quals))
    with_family = cells.add_column(1, "family", pa.array([name] * cells.num_rows, pa.string()))
    table = to_wide(with_family, WideSpec(columns=columns))
    rows = table.column(0).combine_chunks()
    out: dict[Column, Typed] = {}
    for i, key in enumerate(columns, start=1):
        if wanted is None or key in wanted:
            out[key] = (table.column(i).combine_chunks(), Codec.BYTES)
    return rows, out


def _union(
    base_rows: pa.Array,
    untouched: pa.Array,
    a: dict[Column, Typed],
    touched: tuple[pa.Array, dict[Column, Typed]],
) -> tuple[pa.Array, dict[Column, Typed]]:
    """Untouched base rows and resolved touched rows, as one family part in row order.

    ``untouched`` masks ``base_rows`` (whose values are ``a``); ``touched`` holds the rows
    the deltas touch, resolved (values as bytes). When every touched row is a base row
    (updates and deletes of loaded rows) the touched values replace the base's in place;
    rows only the deltas hold need a sort.
    """
    t_rows, b = touched
    b = {k: _typed_like(v, a.get(k), k) for k, v in b.items()}
    at = pc.index_in(t_rows, value_set=base_rows)
    if at.null_count:
        return _union_sorted(base_rows, untouched, a, (t_rows, b))
    # one gather per column from [base values, touched values]: an untouched row takes
    # its base value, a touched one its resolved value; rows the deltas deleted drop out
    source = np.full(len(base_rows), -1, dtype=np.int64)
    source[untouched.to_numpy(zero_copy_only=False)] = np.flatnonzero(
        untouched.to_numpy(zero_copy_only=False)
    )
    source[at.to_numpy(zero_copy_only=False)] = len(base_rows) + np.arange(len(t_rows))
    order = pa.array(source[source >= 0])
    out: dict[Column, Typed] = {}
    for key in {**a, **b}:
        base, new = _aligned(a.get(key), b.get(key), key, len(base_rows), len(t_rows))
        both = pa.concat_arrays([base[0], new[0]]) if len(t_rows) else base[0]
        out[key] = (both.take(order), base[1])
    return pa.concat_arrays([base_rows, t_rows]).take(order), out


def _aligned(
    base: Typed | None, new: Typed | None, key: Column, n_base: int, n_new: int
) -> tuple[Typed, Typed]:
    """A column's base and touched values with one type.

    A missing side is nulls; when the two sides' codecs differ, both are bytes.
    """
    if base is not None and new is not None:
        if base[0].type == new[0].type:
            return base, new
        as_bytes = (_bytes_of(base[0], key), Codec.BYTES)
        return as_bytes, (new[0] if new[1] is Codec.BYTES else _bytes_of(new[0], key), Codec.BYTES)
    if base is not None:
        return base, (pa.nulls(n_new, base[0].type), base[1])
    assert new is not None
    return (pa.nulls(n_base, new[0].type), new[1]), new


def _typed_like(new: Typed, base: Typed | None, key: Column) -> Typed:
    """Touched values (bytes) typed like the base's column when every one round-trips."""
    arr, codec = new
    if base is None or base[1] is codec or codec is not Codec.BYTES:
        return new
    name = column_name(*key)
    typed = decode_values(arr, base[1], field=name, errors="null")
    if typed.null_count != arr.null_count:
        return new  # a value the base's codec does not read: keep bytes (read decides)
    back = encode_values(typed, base[1], field=name)
    if not pc.all(pc.fill_null(pc.equal(back, arr.cast(pa.binary())), True)).as_py():
        return new  # not given back byte for byte (a NaN payload): keep bytes
    return typed, base[1]


def _union_sorted(
    base_rows: pa.Array,
    untouched: pa.Array,
    a: dict[Column, Typed],
    touched: tuple[pa.Array, dict[Column, Typed]],
) -> tuple[pa.Array, dict[Column, Typed]]:
    """:func:`_union` when the deltas hold rows the base does not: concatenate, sort."""
    t_rows, b = touched
    rows = pa.concat_arrays([base_rows.filter(untouched), t_rows])
    order = pc.sort_indices(rows)
    n_a, n_b = len(rows) - len(t_rows), len(t_rows)
    out: dict[Column, Typed] = {}
    for key in {**a, **b}:
        codecs = {p[key][1] for p in (a, b) if key in p}
        as_bytes = len(codecs) > 1
        parts = []
        for part, n, filt in ((a, n_a, untouched), (b, n_b, None)):
            typed = part.get(key)
            if typed is None:
                other = (b if part is a else a)[key]
                parts.append(pa.nulls(n, pa.binary() if as_bytes else other[0].type))
                continue
            arr = typed[0] if filt is None else typed[0].filter(filt)
            parts.append(_bytes_of(arr, key) if as_bytes and typed[1] is not Codec.BYTES else arr)
        codec = Codec.BYTES if as_bytes else codecs.pop()
        out[key] = (pa.concat_arrays(parts).take(order), codec)
    return rows.take(order), out


def _bytes_of(arr: pa.Array, key: Column) -> pa.Array:
    """A typed value column back to HBase value bytes (its type names the codec)."""
    for codec in Codec:
        if arrow_type(codec) == arr.type and codec is not Codec.STRING:
            return encode_values(arr, codec, field=column_name(*key)).cast(pa.binary())
    return arr.cast(pa.binary())

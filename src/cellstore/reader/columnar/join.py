"""Families joined on the row into one wide table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.codecs import Codec, decode_values, encode_values, valid_mask
from cellstore.core.rowkey import RowKeySpec
from cellstore.reader.columnar.types import Column, Typed
from cellstore.reader.shapes import undecodable


@dataclass(frozen=True)
class _Part:
    """One family's part of a task: rows, wanted values, rows in the result.

    The rows are ``rows``, or, when that is None, ``keys``: the key fields of keyed
    files (with ``key`` the spec that encodes them). ``present`` says which rows are in
    the result (None: all of them). ``digest``: the rows digest of one keyed file read
    whole (two parts with the same digest hold the same rows).
    """

    rows: pa.Array | None
    columns: dict[Column, Typed]
    present: np.ndarray | None = None
    keys: pa.Table | None = None
    key: RowKeySpec | None = None
    digest: str | None = None
    count: int = 0  # the rows' count when neither rows nor keys are held (shared rows)
    span: tuple[int, int] | None = None  # one keyed file's records read, by position

    @property
    def size(self) -> int:
        """How many rows the part holds."""
        if self.rows is not None:
            return len(self.rows)
        return self.keys.num_rows if self.keys is not None else self.count

    def row_keys(self) -> pa.Array:
        """The rows (encoded from the key fields when the part holds those)."""
        if self.rows is not None:
            return self.rows
        assert self.keys is not None and self.key is not None
        return self.key.encode(self.keys)

    def kept(self) -> _Part:
        """The rows in the result and their values."""
        if self.present is None or self.present.all():
            return _Part(self.rows, self.columns, None, self.keys, self.key)
        keep = pa.array(self.present)
        return _Part(
            None if self.rows is None else self.rows.filter(keep),
            {k: (a.filter(keep), c) for k, (a, c) in self.columns.items()},
            None,
            None if self.keys is None else self.keys.filter(keep),
            self.key,
        )

    def as_rows(self) -> tuple[pa.Array, dict[Column, Typed]]:
        """The part's rows (encoded if need be) and values."""
        return self.row_keys(), self.columns


_NO_ROWS: Final = _Part(pa.array([], pa.binary()), {})


def _same_rows(fams: Sequence[_Part]) -> bool:
    """Whether every family's part holds the same rows (records of one write each)."""
    first = fams[0]
    if all(f.size == first.size for f in fams[1:]):
        if first.digest is not None and all(f.digest == first.digest for f in fams[1:]):
            return True
        if first.rows is not None and all(f.rows is not None for f in fams[1:]):
            return all(first.rows.equals(f.rows) for f in fams[1:])
    return False


def _join(fams: Sequence[_Part]) -> _Part:
    """Families' parts joined on the row: the union of their result rows, ascending."""
    if not fams:
        return _NO_ROWS
    if _same_rows(fams):
        # every family holds the same records (one per row, each family's file): a row
        # is in the result when it is in any family's; no join
        present = np.zeros(fams[0].size, dtype=bool)
        same: dict[Column, Typed] = {}
        for f in fams:
            present |= True if f.present is None else f.present
            same.update(f.columns)
        rows = next((f.rows for f in fams if f.rows is not None), None)
        keys = next((f for f in fams if f.keys is not None), None)
        if rows is None and keys is None:
            return _NO_ROWS
        return _Part(
            rows,
            same,
            present,
            None if keys is None else keys.keys,
            None if keys is None else keys.key,
        ).kept()
    kept = [f.kept() for f in fams]
    parts = [p.as_rows() for p in kept if p.size]
    if not parts:
        return _NO_ROWS
    if len(parts) == 1:
        return _Part(*parts[0])
    widest = max(parts, key=lambda p: len(p[0]))[0]
    within = [pc.index_in(rows, value_set=widest) for rows, _ in parts]
    if all(at.null_count == 0 for at in within):
        # every family's rows are among the widest family's (a column null in some
        # records): place each family's values at its rows' positions, no sort
        out_w: dict[Column, Typed] = {}
        for (fam_rows, columns), at in zip(parts, within, strict=True):
            where = np.full(len(widest), -1, dtype=np.int64)
            where[at.to_numpy(zero_copy_only=False)] = np.arange(len(fam_rows))
            index = pa.array(where, mask=where < 0)
            for key, (arr, codec) in columns.items():
                out_w[key] = (arr.take(index), codec)
        return _Part(widest, out_w)
    every = pa.concat_arrays([rows for rows, _ in parts])
    rows = pc.unique(every)
    rows = rows.take(pc.sort_indices(rows))
    out: dict[Column, Typed] = {}
    for fam_rows, columns in parts:
        at = pc.index_in(rows, value_set=fam_rows)
        for key, (arr, codec) in columns.items():
            out[key] = (arr.take(at), codec)
    return _Part(rows, out)


def _as_codec(
    typed: Typed, codec: Codec, name: str, errors: str, rows: pa.Array | None = None
) -> pa.Array:
    """A column's values (typed with the file's codec) as the read's codec gives them.

    With ``errors="raise"``, a value the codec cannot decode is a ``BadCellError`` naming
    its row (of ``rows``, the column's rows) and the column, worded as the cells path
    words it (:func:`~cellstore.reader.shapes.undecodable`).
    """
    arr, have = typed
    if have is codec:
        return arr
    raw = encode_values(arr, have, field=name)
    if codec is Codec.BYTES:
        return raw
    out = decode_values(raw, codec, field=name, errors="null")
    if errors == "raise" and out.null_count != raw.null_count:
        bad = np.flatnonzero(valid_mask(raw) & ~valid_mask(out))
        row = rows[int(bad[0])].as_py() if rows is not None else None
        if row is None:  # (no rows given: the record's position)
            return decode_values(raw, codec, field=name, errors="raise")
        raise undecodable(row, name, codec)
    return out


def _strip_first_byte(rows: pa.Array) -> pa.Array:
    """Every row key without its first byte (the salt)."""
    return pc.binary_slice(rows, 1, 1 << 30)  # an explicit stop: pyarrow 26 fails without

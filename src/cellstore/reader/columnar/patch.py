"""Deltas newer than the base, patched into its columns (the wide read's fast case).

A family's column files (the base) and its later files (deltas: cell files, and column
deltas, the later writes' column files under ``layout="columns"``) need no general merge
when every delta cell is newer than every base cell (each delta file's smallest
timestamp above the base files' largest, by the manifest's entries) and the cell deltas
hold only Puts and DeleteFamily markers (docs/format.md 14.4); a column delta holds only
Puts, typed (its records, :class:`Record`). Then, for a latest-value wide
read with no time range (HBase's rules, docs/hbase-semantics.md):

- a delta Put of a (row, qualifier) hides the base's value (R3.3: newer timestamp), so
  the newest delta Put is the column's value when it is visible;
- a DeleteFamily hides every Put of its row with a timestamp at most its own, whatever
  the sequence ids (R5.1, R5.8): it is newer than every base cell, so it hides the base's
  whole row, and a delta Put stays visible exactly when its timestamp is above the row's
  newest DeleteFamily;
- a Put older than the family's TTL is expired (R8.1), and so is everything older.

So the deltas are read with only the cell columns they need (:func:`delta_columns`) and
gathered once (:func:`~cellstore.reader.columnar.pivot.pivot_cells`); the touched rows
are found in the base's rows by binary search (:class:`~cellstore.reader.columnar.pivot.Located`),
each touched (row, qualifier) keeps its newest Put by (timestamp, sequence id), of a
cell file or a column delta, and each touched row its newest DeleteFamily
(:func:`~cellstore.reader.columnar.pivot.decide`; module
:mod:`~cellstore.reader.columnar.pivot` holds this first half), and each qualifier's
newest cell Puts are typed once with the base column's codec (a column delta typing a
column unlike the base declines). Every column is then one compiled gather over the
kept rows (:func:`apply`): the base's value, the delta's, or null. Anything else (other
markers, a delta row the base does not hold, older deltas) is left to the general merge
(:mod:`cellstore.reader.rowmerge`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core import pool
from cellstore.core.codecs import Codec, arrow_type, binary_parts, one_array
from cellstore.core.metadata import FileEntry
from cellstore.reader.columnar.gather import (
    fixed_width,
    gather2,
    gather_numbers,
    gather_put,
    same_bytes,
)
from cellstore.reader.columnar.join import _Part
from cellstore.reader.columnar.pivot import Decided, Located, Pivot, Record, decide, pivot_cells
from cellstore.reader.columnar.types import Column
from cellstore.reader.rowmerge import _as_bytes, typed_like

__all__ = [
    "Decided",
    "Located",
    "Pivot",
    "apply",
    "cut_shared",
    "decide",
    "delta_columns",
    "Record",
    "newer_deltas",
    "pivot_cells",
]


def newer_deltas(bases: Sequence[FileEntry], deltas: Sequence[FileEntry]) -> bool:
    """Whether every cell of ``deltas`` (cell files, column deltas) is newer than the base's.

    By the manifest's entries: each delta's smallest timestamp is above the largest of
    every base file (so no timestamp tie needs a sequence id, R3.3).
    """
    if not bases or not deltas or any(d.layout not in ("cells", "columns") for d in deltas):
        return False
    return min(d.min_ts for d in deltas) > max(b.max_ts for b in bases)


def delta_columns(entry: FileEntry) -> list[str]:
    """The cell columns :func:`pivot_cells` needs of a delta file, by its entry.

    A file of Puts only (no delete markers, by the manifest) needs no ``type``; a file
    of markers only needs no ``qualifier`` nor ``value`` (:func:`pivot_cells` takes
    only DeleteFamily markers, which cover every qualifier).
    """
    if entry.delete_markers == 0:
        return ["row", "qualifier", "ts", "value"]
    if entry.delete_markers == entry.cells:
        return ["row", "ts", "type"]
    return ["row", "qualifier", "ts", "type", "value"]


def apply(
    part: _Part,
    rows: pa.Array,
    keep: np.ndarray | None,
    patch: tuple[Pivot, Decided] | None,
    *,
    family: str,
    wanted: set[Column] | None,
    cuts: Cuts | None = None,
) -> _Part:
    """``part`` (one family's base, rows ``rows``) with its deltas patched in.

    Args:
        part: The family's base part.
        rows: The part's rows (encoded), already cut to ``keep``.
        keep: Which base rows the result keeps (None: all).
        patch: The family's pivoted deltas and what they decide (None: none).
        family: The family's name.
        wanted: The wanted columns (None: all).
        cuts: Columns already cut to ``keep`` in this task (shared by its families:
            a key field and the columns aliasing it hold the same array).

    Returns:
        The part with rows ``rows``: every changed column gathered once (its kept rows,
        the touched values replaced or nulled), the others cut to the kept rows.
    """
    n = len(part.present) if part.present is not None else part.size
    kept = None if keep is None else pool.flatnonzero(keep)
    present = np.ones(n, dtype=bool) if part.present is None else part.present
    columns: dict[Column, tuple[pa.Array, Codec]] = {}
    if patch is not None:
        pivot, decided = patch
        present = decided.present
        mine = {q for f, q in part.columns if f == family}
        mine |= {q for q in pivot.qualifiers if wanted is None or (family, q) in wanted}
        where = decided.where
        if kept is None:
            at, index = where, np.arange(n, dtype=np.int64)
        else:  # touched rows in the result (-1: dropped): less the rows dropped before
            assert keep is not None
            at = where - np.searchsorted(np.flatnonzero(~keep), where)
            at[~keep[where]] = -1
            index = kept
        for q in sorted(mine):
            column = _patched_column(part.columns.get((family, q)), n, at, index, decided, q)
            if column is not None:
                columns[(family, q)] = column
    for col, (arr, codec) in part.columns.items():
        if col not in columns:
            columns[col] = (arr if kept is None else _kept(arr, kept, keep, cuts), codec)
    keys = part.keys
    digest = part.digest
    if kept is not None and keep is not None:
        present = present[kept]
        if keys is not None:
            keys = pa.table(
                [_kept(one_array(c), kept, keep, cuts) for c in keys.columns],
                names=keys.column_names,
            )
        if digest is not None:  # the same rows as another family's kept alike
            digest = f"{digest}/{hashlib.blake2b(np.packbits(keep).tobytes()).hexdigest()}"
    return dataclasses.replace(
        part, rows=rows, columns=columns, present=present, keys=keys, digest=digest
    )


def _patched_column(
    held: tuple[pa.Array, Codec] | None,
    n: int,
    at: np.ndarray,
    index: np.ndarray,
    decided: Decided,
    q: bytes,
) -> tuple[pa.Array, Codec] | None:
    """Column ``q`` over the kept base rows with the deltas' values (None: unchanged).

    ``at``: each touched row's position in the result (-1: dropped); ``index``: each
    result row's position in the base.
    """
    new = None
    if q in decided.shown:
        visible, taking, src = decided.shown[q]
        extra = decided.extra.get(q, [])
        if held is not None and not extra and _rewrites(held, decided, q, at):
            return None  # (the caller cuts it to the kept rows)
        if held is not None and not extra:
            numbers = _patched_numbers(held, decided, q, at, index)
            if numbers is not None:
                return numbers
        if held is None and extra:
            held = (pa.nulls(n, extra[0][0].type), extra[0][1])
        raw = decided.raw[q]
        fast = None if held is None else _typed_numbers(raw, held[1], held[0].type)
        if fast is not None and held is not None:
            base_arr, codec = held
            new = fast
        elif len(raw) or held is None:
            base_arr, codec, new = typed_like(held, n, raw)
            new = new.cast(base_arr.type)
        else:  # (no cell Put of the column: nothing to type)
            base_arr, codec = held
            new = base_arr[:0]
        if extra:
            more = [a if c is codec else _as_bytes(a, c) for a, c in extra]
            new = pa.concat_arrays([new, *(a.cast(base_arr.type) for a in more)])
        blank = ~visible
    elif held is not None and decided.hidden.any():
        base_arr, codec = held
        taking = src = np.zeros(len(at), dtype=bool)
        blank = decided.hidden
    else:
        return None
    mine = at >= 0
    took = taking & mine
    gone = blank & mine
    if (
        new is not None
        and held is not None
        and base_arr is held[0]
        and not gone.any()
        and _unchanged(base_arr, decided.where[took], new, src[took])
    ):
        return None  # (the caller cuts it to the kept rows)
    return gather_put(base_arr, new, index, at[took], src[took], at[gone]), codec


def _patched_numbers(
    held: tuple[pa.Array, Codec],
    decided: Decided,
    q: bytes,
    at: np.ndarray,
    index: np.ndarray,
) -> tuple[pa.Array, Codec] | None:
    """Number column ``q`` patched in one compiled pass (None: not such a column).

    A column of a number codec, of that codec's Arrow type, whose deltas' values all
    have its width and (floats) no NaN: the values' big-endian bytes are the numbers
    :func:`_typed_numbers` would type, so the column is what the typed path gathers
    (:func:`~cellstore.reader.columnar.gather.gather_numbers`), with no typed copy.
    """
    base, codec = held
    kind = _NUMBERS.get(codec)
    if kind is None or base.type != arrow_type(codec) or not fixed_width(base.type):
        return None
    visible, taking, src = decided.shown[q]
    mine = at >= 0
    took = taking & mine
    gone = ~visible & mine
    out = gather_numbers(  # (the values where they are: their positions mapped)
        base,
        index,
        at[took],
        decided.raw.picks[q][src[took]],
        at[gone],
        decided.raw.stored,
        floats=kind[1] == "f",
    )
    return None if out is None else (out, codec)


#: Numeric codecs typed by :func:`_typed_numbers`: big-endian numpy kind and width.
_NUMBERS: Final = {
    Codec.LONG: ">i8",
    Codec.INT: ">i4",
    Codec.SHORT: ">i2",
    Codec.DOUBLE: ">f8",
    Codec.FLOAT: ">f4",
}


def _typed_numbers(raw: pa.Array, codec: Codec, t: pa.DataType) -> pa.Array | None:
    """Delta values' bytes as a number column of type ``t`` when that is plain.

    Every value present and of the codec's width, and (floats) no NaN, whose payload a
    decoded value would not keep: then each value gives its bytes back, and the values
    are one big-endian buffer. None otherwise (:func:`typed_like` decides).
    """
    kind = _NUMBERS.get(codec)
    if kind is None or raw.null_count or not len(raw):
        return None
    offsets, data = binary_parts(raw)
    width = int(kind[-1])
    if len(data) != width * len(raw) or (np.diff(offsets) != width).any():
        return None
    values = np.frombuffer(data, dtype=kind).astype(kind[1:])
    if kind[1] == "f" and np.isnan(values).any():
        return None
    out = pa.array(values)
    return out if out.type == t else None


def _rewrites(held: tuple[pa.Array, Codec], decided: Decided, q: bytes, at: np.ndarray) -> bool:
    """Whether text column ``q``'s kept touched rows show the base's own values again.

    So when no kept touched row is hidden and every delta value a kept row shows has the
    bytes of the base's value there (valid): the column is then the base's, cut. (A load
    of whole records that changes one column rewrites the others with the same values.)
    Of a text codec only, whose values are their bytes: compared as stored, before any
    typing (:func:`~cellstore.reader.columnar.gather.same_bytes`). A number column
    answers False: its patch costs what its cut does, and the check more than it saves.
    """
    base, codec = held
    t = base.type
    raw = decided.raw.stored  # (where they are: positions mapped through the picks)
    if (
        codec not in (Codec.STRING, Codec.BYTES)
        or not (pa.types.is_string(t) or pa.types.is_binary(t))
        or raw.type != pa.binary()
        or raw.null_count
    ):
        return False
    visible, taking, src = decided.shown[q]
    mine = at >= 0
    if (mine & ~visible).any():
        return False
    took = taking & mine
    return same_bytes(base, decided.where[took], raw, decided.raw.picks[q][src[took]])


def _unchanged(base: pa.Array, at: np.ndarray, new: pa.Array, src: np.ndarray) -> bool:
    """Whether a text or binary column's values at ``at`` equal ``new``'s at ``src``.

    (A rewrite of the same values is common; a cut of such a column costs several times
    less than the gather that patches it.) Other types answer False: their gather costs
    what their cut does.
    """
    t = base.type
    if not (pa.types.is_binary(t) or pa.types.is_string(t)) or new.type != t:
        return False
    if not new.null_count:  # (one compiled comparison where they are, no copies)
        return same_bytes(base, at, new, src)
    old, got = base.take(pa.array(at)), new.take(pa.array(src))
    nulls = old.null_count or got.null_count
    if nulls and not pc.all(pc.equal(old.is_valid(), got.is_valid())).as_py():
        return False
    return bool(pc.all(pc.equal(old, got)).as_py() in (True, None))


#: Arrays cut to a task's kept rows, by their data (:func:`_kept`).
Cuts = dict[tuple[int, int, int, int, str], pa.Array]


def cut_shared(arrays: Sequence[pa.Array], keep: np.ndarray, cuts: Cuts) -> None:
    """Cut ``arrays`` (a task's key fields) to ``keep`` into ``cuts`` before the patches.

    The families' patches run at once and share ``cuts``: a key field and a column
    aliasing it (another family's, docs/format.md 14.2) hold the same array, and one cut
    made first serves both (two patches missing it at once would each cut it).
    """
    kept = pool.flatnonzero(keep)
    for arr in arrays:
        _kept(arr, kept, keep, cuts)


def _kept(
    arr: pa.Array, kept: np.ndarray, keep: np.ndarray | None, cuts: Cuts | None = None
) -> pa.Array:
    """``arr``'s values at ``kept`` (the positions where the mask ``keep`` is true).

    With ``cuts``, an array of the same buffers (validity and data), offset, length and
    type cut before is taken from there (one task's families share one ``keep``).
    """
    if cuts is None:
        return _cut(arr, kept, keep)
    buffers = arr.buffers()
    data = buffers[1] if len(buffers) > 1 else None
    if data is None:
        return _cut(arr, kept, keep)
    validity = 0 if buffers[0] is None else buffers[0].address
    at = (validity, data.address, arr.offset, len(arr), str(arr.type))
    if at not in cuts:
        cuts[at] = _cut(arr, kept, keep)
    return cuts[at]


def _cut(arr: pa.Array, kept: np.ndarray, keep: np.ndarray | None) -> pa.Array:
    if fixed_width(arr.type) or keep is None:
        return gather2(arr, None, kept)  # (Arrow's filter of nullable numbers is slower)
    return arr.filter(pa.array(keep))

"""The column layout's pure core: one record per row, typed columns, lossless expansion.

A column-layout store file (docs/format.md section 14) holds, for one region and one
family, one **record** per row key, sorted by row: the row, the row's timestamp, and for
each qualifier of a fixed, ordered column set a typed value column (null: no cell) and a
timestamp column that holds the cell's timestamp only where it differs from the row's.
It holds at most one Put per (row, qualifier): the newest of its write. Everything else
of the same write (older versions, delete markers, qualifiers outside the column set,
values the column's codec cannot hold byte for byte) goes to a cell-layout file written
beside it, so the cells of the write are always the expanded records plus the rest.

Two functions carry that contract, both vectorized (loops run over columns, never over
cells):

- :func:`split_cells` cuts sorted cells of whole rows into records and the rest;
- :func:`expand_records` turns records back into cells in cell order (R2.1), exactly the
  cells :func:`split_cells` put in (row, qualifier, ts, type Put, value bytes).

Everything here is pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CELL_SCHEMA, CellType, run_starts
from cellstore.core.codecs import Codec, arrow_type, decode_values, encode_values, valid_mask
from cellstore.core.keys import to_string_binary
from cellstore.core.rowkey import RowKeySpec

__all__ = [
    "AUTO_MAX_COLUMNS",
    "Aliases",
    "AUTO_MIN_ROWS",
    "MAX_COLUMNS",
    "KEY_PREFIX",
    "ROW_COLUMN",
    "TS_COLUMN",
    "ColumnSpec",
    "column_set",
    "put_columns",
    "expand_records",
    "alias_mismatch",
    "check_aliases",
    "choose_aliases",
    "key_names",
    "keyable_rows",
    "keyed",
    "record_rows",
    "records_schema",
    "restore_aliases",
    "Split",
    "split_cells",
    "split_rows",
    "stored_names",
]

#: The record's row key column.
ROW_COLUMN: Final = "__row"
#: Prefix of a key column: a keyed column file holds the row key's fields as typed
#: columns ``__key:<field>`` instead of ``__row`` (docs/format.md 14.2).
KEY_PREFIX: Final = "__key:"
#: The record's timestamp column (the largest timestamp of the row's cells in the file).
TS_COLUMN: Final = "__ts"
#: Most qualifiers ``layout="auto"`` makes columns of (more: the family stays cells).
AUTO_MAX_COLUMNS: Final = 64
#: Fewest rows ``layout="auto"`` writes a column file for (a region-family's first chunk of
#: cells holds fewer: it stays cells; one row group of records, below which columns buy
#: nothing over cells).
AUTO_MIN_ROWS: Final = 4096
#: Most qualifiers any column file holds (``layout="columns"``: the rest go to cell files).
MAX_COLUMNS: Final = 1024

_PUT: Final = int(CellType.PUT)

#: A keyed column file's key-field aliases (docs/format.md 14.2): ``(qualifier, field)``
#: pairs, in qualifier order, for the columns whose every value in the file equals a key
#: field of the same type and so is not stored (its values are the key column's).
Aliases = tuple[tuple[bytes, str], ...]


@dataclass(frozen=True, order=True)
class ColumnSpec:
    """One qualifier of a column set and how its values are typed.

    Attributes:
        qualifier: The qualifier's bytes.
        codec: The value codec the column is typed with (``bytes``: a binary column). A
            value the codec cannot give back byte for byte stays a cell (in the cell file).
    """

    qualifier: bytes
    codec: Codec = Codec.BYTES

    @property
    def value_name(self) -> str:
        """The value column's name: the qualifier's printable form.

        ``__q:`` goes before a form that is empty or starts with ``__`` (names that start
        with ``__`` are the layout's own columns).
        """
        text = to_string_binary(self.qualifier)
        return f"__q:{text}" if not text or text.startswith("__") else text

    @property
    def ts_name(self) -> str:
        """The timestamp column's name: ``__ts:`` and the qualifier's printable form."""
        return f"__ts:{to_string_binary(self.qualifier)}"

    @property
    def arrow_type(self) -> pa.DataType:
        """The value column's Arrow type."""
        return arrow_type(self.codec)

    def to_dict(self) -> dict[str, str]:
        """JSON form in a column file's footer (docs/format.md section 14)."""
        return {
            "qualifier": self.qualifier.hex(),
            "codec": self.codec.value,
            "value": self.value_name,
            "ts": self.ts_name,
        }

    @classmethod
    def from_dict(cls, d: object) -> ColumnSpec:
        """Inverse of :meth:`to_dict`; the names must be the ones the spec gives.

        Raises:
            ValueError: a field is missing, of the wrong type, or not what the spec names.
        """
        if not isinstance(d, dict):
            raise ValueError("a column is not an object")
        q, codec = d.get("qualifier"), d.get("codec")
        if not isinstance(q, str) or not isinstance(codec, str):
            raise ValueError("a column's qualifier or codec is not a string")
        spec = cls(bytes.fromhex(q), Codec(codec))
        if d.get("value") != spec.value_name or d.get("ts") != spec.ts_name:
            raise ValueError(f"column names of qualifier {q} are not the layout's")
        return spec


def column_set(specs: Iterable[ColumnSpec]) -> tuple[ColumnSpec, ...]:
    """``specs`` in qualifier order (R2.1), one per qualifier (the first spec wins).

    Raises:
        ValueError: two qualifiers give the same column name (cannot happen for distinct
            qualifiers: the printable form is one-to-one).
    """
    by_q: dict[bytes, ColumnSpec] = {}
    for s in specs:
        by_q.setdefault(s.qualifier, s)
    out = tuple(by_q[q] for q in sorted(by_q))
    names = [s.value_name for s in out]
    if len(set(names)) != len(names):  # pragma: no cover - the printable form is 1:1
        raise ValueError("two qualifiers share a column name")
    return out


def keyed(key: RowKeySpec | None) -> RowKeySpec | None:
    """``key`` when a column file can hold its rows as key columns (every field decodes)."""
    if key is None or not all(f.decodable for f in key.fields):
        return None
    return key


def key_names(key: RowKeySpec) -> list[str]:
    """The key columns of a keyed column file, in key order."""
    return [KEY_PREFIX + f.name for f in key.fields]


def records_schema(
    specs: Sequence[ColumnSpec], key: RowKeySpec | None = None, aliases: Aliases = ()
) -> pa.Schema:
    """The Arrow schema of a column file: row (or key columns), ts, values, timestamps.

    ``key``: a keyed file (:func:`keyed`): the row key's fields, typed, in place of
    ``__row``. ``aliases``: columns whose values the file does not store (their key
    field's column holds them); their timestamp columns stay.
    """
    held = {q for q, _ in aliases}
    if key is None:
        head = [pa.field(ROW_COLUMN, pa.binary(), nullable=False)]
    else:
        head = [
            pa.field(name, f.type.arrow_type, nullable=False)
            for name, f in zip(key_names(key), key.fields, strict=True)
        ]
    return pa.schema(
        [
            *head,
            pa.field(TS_COLUMN, pa.int64(), nullable=False),
            *(pa.field(s.value_name, s.arrow_type) for s in specs if s.qualifier not in held),
            *(pa.field(s.ts_name, pa.int64()) for s in specs),
        ]
    )


def check_aliases(aliases: Aliases, specs: Sequence[ColumnSpec], key: RowKeySpec | None) -> None:
    """Refuse aliases that do not fit the file (docs/format.md 14.2).

    Raises:
        ValueError: aliases without a row-key spec, not in strictly increasing qualifier
            order, naming a qualifier outside the column set, a key field the spec does
            not have, or a field whose type is not the column's.
    """
    if not aliases:
        return
    if key is None:
        raise ValueError("aliases in a file without row-key")
    by_q = {s.qualifier: s for s in specs}
    types = {f.name: f.type.arrow_type for f in key.fields}
    previous = None
    for q, name in aliases:
        if previous is not None and q <= previous:
            raise ValueError("aliases are not in strictly increasing qualifier order")
        previous = q
        if q not in by_q:
            raise ValueError(f"alias of qualifier {q.hex()} names no column")
        if name not in types:
            raise ValueError(f"alias of qualifier {q.hex()} names key field {name!r}, not a field")
        if types[name] != by_q[q].arrow_type:
            raise ValueError(f"alias of qualifier {q.hex()}: key field {name!r} is not its type")


def _same_bits(values: pa.Array, keys: pa.Array) -> np.ndarray:
    """Per record, whether a value is held and equals the key field bit for bit.

    Floats compare by their bits (``-0.0`` is not ``0.0``, a NaN equals only the same
    NaN), so an alias gives back every value's exact bytes.
    """
    values, keys = _flat(values), _flat(keys)
    if pa.types.is_floating(values.type):
        width = pa.int64() if values.type == pa.float64() else pa.int32()
        values, keys = values.view(width), keys.view(width)
    same: np.ndarray = pc.fill_null(pc.equal(values, keys), False).to_numpy(zero_copy_only=False)
    return same


def choose_aliases(
    records: pa.Table, fields: pa.Table, specs: Sequence[ColumnSpec], key: RowKeySpec
) -> Aliases:
    """The columns of ``records`` that are aliases of a key field (the first such field).

    A column is an alias of a field when its type is the field's and every record holds
    a value equal to the record's field (``fields``: the records' key fields, named by
    field). Decided on the first records a writer sees (docs/format.md 14.2).
    """
    if not records.num_rows:
        return ()
    out: list[tuple[bytes, str]] = []
    for s in specs:
        for f in key.fields:
            if f.type.arrow_type != s.arrow_type:
                continue
            if _same_bits(records.column(s.value_name), fields.column(f.name)).all():
                out.append((s.qualifier, f.name))
                break
    return tuple(out)


def alias_mismatch(
    records: pa.Table, fields: pa.Table, specs: Sequence[ColumnSpec], aliases: Aliases
) -> np.ndarray:
    """Per record, whether an aliased column's value is missing or not its key field's.

    Such a record cannot be held by a file with those aliases: its row's cells go to the
    companion cell file.
    """
    bad = np.zeros(records.num_rows, dtype=bool)
    by_q = {s.qualifier: s for s in specs}
    for q, name in aliases:
        bad |= ~_same_bits(records.column(by_q[q].value_name), fields.column(name))
    return bad


def stored_names(
    names: Sequence[str], specs: Sequence[ColumnSpec], key: RowKeySpec | None, aliases: Aliases
) -> list[str]:
    """The file's columns to read for record columns ``names`` (aliases: their key columns)."""
    if not aliases or key is None:
        return list(names)
    by_name = _alias_names(specs, aliases)
    out: list[str] = []
    for n in names:
        stored = KEY_PREFIX + by_name[n] if n in by_name else n
        if stored not in out:
            out.append(stored)
    return out


def _alias_names(specs: Sequence[ColumnSpec], aliases: Aliases) -> dict[str, str]:
    """Aliased value column name -> key field name."""
    fields = dict(aliases)
    return {s.value_name: fields[s.qualifier] for s in specs if s.qualifier in fields}


def restore_aliases(
    table: pa.Table,
    names: Sequence[str] | None,
    specs: Sequence[ColumnSpec],
    key: RowKeySpec | None,
    aliases: Aliases,
) -> pa.Table:
    """Records read with :func:`stored_names`, as the record columns ``names`` asked for.

    An aliased value column is its key column (typed alike: no copy); key columns read
    only for an alias are dropped. ``names`` None: every record column, in
    :func:`records_schema` order (``__row`` first when read).
    """
    if not aliases or key is None:
        return table
    by_name = _alias_names(specs, aliases)
    if names is None:
        lead = [ROW_COLUMN] if ROW_COLUMN in table.column_names else []
        names = [*lead, *records_schema(specs, key).names]
    cols = [
        table.column(KEY_PREFIX + by_name[n]) if n in by_name else table.column(n) for n in names
    ]
    return pa.Table.from_arrays(cols, names=list(names))


def record_rows(records: pa.Table, key: RowKeySpec | None) -> pa.Array:
    """The records' row keys: ``__row``, or encoded from a keyed file's key columns.

    Raises:
        BadCellError: a key column holds a value the spec cannot encode (a damaged file).
    """
    if ROW_COLUMN in records.column_names or key is None:
        return _flat(records.column(ROW_COLUMN)).cast(pa.binary())
    fields = pa.table(
        [records.column(n) for n in key_names(key)], names=[f.name for f in key.fields]
    )
    return key.encode(fields)


def keyable_rows(rows: pa.Array, key: RowKeySpec) -> tuple[np.ndarray, pa.Table]:
    """Which row keys a keyed file can hold, and their decoded fields (named like the keys).

    A row qualifies when it decodes with ``key`` and encodes back to the same bytes (a
    row written by other means than the spec, or in a non-canonical form, does not: its
    cells stay in the cell file).
    """
    fields = key.decode(rows, errors="null")
    back = key.encode(fields, errors="mask")
    ok = ~back.bad & pc.fill_null(pc.equal(back.values, rows), False).to_numpy(zero_copy_only=False)
    return ok, fields


def _flat(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _row_ids(row: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's row number (0, 0, 1, ...) and the rows' first cells."""
    starts = run_starts(row)
    ids = np.zeros(len(row), dtype=np.int64)
    if len(starts) > 1:
        ids[starts[1:]] = 1
    return np.cumsum(ids), starts


@dataclass(frozen=True)
class Split:
    """Cells cut into records and the rest (:func:`split_rows`).

    Attributes:
        records: The records (:func:`records_schema`), one per row with a Put taken.
        rest: The cells not taken, in cell order.
        at: Per record, its row's number among the cells' distinct rows (in order).
        complete: Whether the newest Put of every (row, qualifier) holding a Put was
            taken (docs/format.md 14.3: :func:`put_columns` of the cells equals the
            cells taken).
    """

    records: pa.Table
    rest: pa.Table
    at: np.ndarray
    complete: bool


def split_cells(
    cells: pa.Table, specs: Sequence[ColumnSpec], *, rows: np.ndarray | None = None
) -> tuple[pa.Table, pa.Table]:
    """:func:`split_rows`' records and rest."""
    out = split_rows(cells, specs, rows=rows)
    return out.records, out.rest


def split_rows(
    cells: pa.Table, specs: Sequence[ColumnSpec], *, rows: np.ndarray | None = None
) -> Split:
    """Cut sorted cells of whole rows into records (a column file's) and the other cells.

    Args:
        cells: One family's cells in cell order (R2.1) with unique keys, every row whole
            (a row's cells are all here).
        specs: The column set, in qualifier order (:func:`column_set`).
        rows: Per distinct row of ``cells`` (in order), whether its Puts may be taken
            (default: every row); the cells of the other rows are all in the rest.

    Returns:
        The records in :func:`records_schema` (one per row that has at least one Put
        taken), and the cells not taken, in cell order. A Put is taken when its
        qualifier is a column, it is the first Put of its (row, qualifier) in cell order
        (the newest: cells of one write share a sequence number), and the column's codec
        gives its value back byte for byte. So the cut is complete exactly when every
        Put's qualifier is a column, no Put's row is left out by ``rows``, and the codec
        gives back every first Put.
    """
    schema = records_schema(specs)
    n = cells.num_rows
    none = np.zeros(0, dtype=np.int64)
    types = _flat(cells.column("type")).to_numpy(zero_copy_only=False) if n else none
    puts = types == _PUT
    if n == 0 or not specs:
        return Split(schema.empty_table(), cells, none, not puts.any())
    row = _flat(cells.column("row"))
    quals = pa.array([s.qualifier for s in specs], pa.binary())
    qi = pc.index_in(_flat(cells.column("qualifier")), value_set=quals)
    qidx = qi.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    candidates = np.flatnonzero(puts & (qidx >= 0))
    complete = len(candidates) == int(np.count_nonzero(puts))
    if not len(candidates):
        return Split(schema.empty_table(), cells, none, complete)
    rid, _ = _row_ids(row)
    if rows is not None:
        allowed = rows[rid[candidates]]
        complete = complete and bool(allowed.all())
        candidates = candidates[allowed]
        if not len(candidates):
            return Split(schema.empty_table(), cells, none, complete)
    cr, cq = rid[candidates], qidx[candidates]
    first = np.ones(len(candidates), dtype=bool)
    first[1:] = (cr[1:] != cr[:-1]) | (cq[1:] != cq[:-1])
    chosen = candidates[first]
    cq = qidx[chosen]
    value_col = _flat(cells.column("value"))
    keep = np.ones(len(chosen), dtype=bool)
    typed: list[tuple[np.ndarray, pa.Array]] = []  # per column: chosen positions, values
    for j, spec in enumerate(specs):
        sel = np.flatnonzero(cq == j)
        raw = value_col.take(pa.array(chosen[sel]))  # one copy of each column's values
        if spec.codec is Codec.BYTES:
            typed.append((sel, raw))
            continue
        name = spec.value_name
        decoded = decode_values(raw, spec.codec, field=name, errors="null")
        same = _gives_back(raw, decoded, spec)
        keep[sel[~same]] = False
        typed.append((sel, decoded))
    taken = chosen[keep]
    complete = complete and bool(keep.all())
    if not len(taken):
        return Split(schema.empty_table(), cells, none, complete)
    # Records: one per distinct row among the taken cells, in row order.
    trid = rid[taken]
    new_rec = np.ones(len(taken), dtype=bool)
    new_rec[1:] = trid[1:] != trid[:-1]
    rec = np.cumsum(new_rec) - 1
    rec_first = np.flatnonzero(new_rec)
    nrec = len(rec_first)
    ts_all = _flat(cells.column("ts")).to_numpy(zero_copy_only=False)
    tts = ts_all[taken]
    row_ts = np.maximum.reduceat(tts, rec_first)
    # Where each chosen cell went: its position among the taken ones (-1: not taken).
    pos = np.full(len(chosen), -1, dtype=np.int64)
    pos[keep] = np.arange(len(taken))
    value_cols: list[pa.Array] = []
    ts_cols: list[pa.Array] = []
    for spec, (sel, arr) in zip(specs, typed, strict=True):
        p = pos[sel]
        ok = p >= 0
        src = np.flatnonzero(ok)
        at = rec[p[ok]]
        index = np.full(nrec, -1, dtype=np.int64)
        index[at] = src
        value_cols.append(arr.take(pa.array(index, mask=index < 0)).cast(spec.arrow_type))
        cell_ts = tts[p[ok]]
        differs = cell_ts != row_ts[at]
        ts_col = np.zeros(nrec, dtype=np.int64)
        ts_valid = np.zeros(nrec, dtype=bool)
        ts_col[at[differs]] = cell_ts[differs]
        ts_valid[at[differs]] = True
        ts_cols.append(pa.array(ts_col, type=pa.int64(), mask=~ts_valid))
    records = pa.Table.from_arrays(
        [
            row.take(pa.array(taken[rec_first])).cast(pa.binary()),
            pa.array(row_ts, type=pa.int64()),
            *value_cols,
            *ts_cols,
        ],
        schema=schema,
    )
    rest_mask = np.ones(n, dtype=bool)
    rest_mask[taken] = False
    rest = cells.filter(pa.array(rest_mask)) if not rest_mask.all() else cells
    return Split(records, rest, rid[taken[rec_first]], complete)


def put_columns(cells: pa.Table) -> int:
    """How many (row, qualifier) pairs of ``cells`` (cell order) hold a Put.

    :func:`split_cells` took the newest Put of every such pair exactly when it took this
    many cells (``cells.num_rows - rest.num_rows``): the column file is then *complete*
    (docs/format.md 14.3), and its companion cell file holds only older Puts and markers.
    """
    puts = cells.filter(pc.equal(cells.column("type"), _PUT))
    n = int(puts.num_rows)
    if n < 2:
        return n
    row, qual = _flat(puts.column("row")), _flat(puts.column("qualifier"))
    same_row = pc.equal(row.slice(0, n - 1), row.slice(1))
    same_qual = pc.equal(qual.slice(0, n - 1), qual.slice(1))
    repeats = pc.sum(pc.and_(same_row, same_qual)).as_py() or 0
    return n - int(repeats)


#: Codecs whose every value of the right length decodes and encodes back unchanged (any
#: bit pattern is a two's-complement integer); a wrong length decodes as null.
_EVERY_PATTERN: Final = frozenset({Codec.LONG, Codec.INT, Codec.SHORT})


def _gives_back(raw: pa.Array, decoded: pa.Array, spec: ColumnSpec) -> np.ndarray:
    """Per value, whether ``spec``'s codec gives ``raw`` back byte for byte from ``decoded``.

    Integers: whenever they decode (right length). Strings: whenever they decode (valid
    UTF-8). Floats: unless a NaN whose bits are not the canonical NaN. Booleans: only the
    bytes ``00`` and ``FF``. Checked without re-encoding every value.
    """
    held = valid_mask(decoded)
    if spec.codec in _EVERY_PATTERN or spec.codec is Codec.STRING:
        return held
    if spec.codec is Codec.BOOLEAN:
        canonical = pc.is_in(raw, value_set=pa.array([b"\x00", b"\xff"], pa.binary()))
        ok: np.ndarray = held & canonical.to_numpy(zero_copy_only=False)
        return ok
    nan = held & pc.fill_null(pc.is_nan(decoded), False).to_numpy(zero_copy_only=False)
    if not nan.any():
        return held
    at = np.flatnonzero(nan)
    back = encode_values(decoded.take(pa.array(at)), spec.codec, field=spec.value_name)
    same = pc.equal(back, raw.take(pa.array(at))).to_numpy(zero_copy_only=False)
    held[at[~same]] = False
    return held


def expand_records(
    records: pa.Table,
    specs: Sequence[ColumnSpec],
    *,
    columns: Sequence[str] | None = None,
    encoded: bool = False,
    key: RowKeySpec | None = None,
) -> pa.Table:
    """The cells of records, in cell order (R2.1): the inverse of :func:`split_cells`.

    Args:
        records: Records in :func:`records_schema` (the value and ts columns of every
            spec; other columns are ignored), sorted by unique row.
        specs: The file's column set, in qualifier order.
        columns: Cell columns wanted (default all of ``row, qualifier, ts, type, value``).
        encoded: ``row`` and ``qualifier`` as Arrow dictionaries whose values are sorted
            (the records' rows; the column set's qualifiers), as the cell layout's
            dictionary-encoded reads give them.
        key: The file's row-key spec when its records hold key columns, not ``__row``.

    Returns:
        A table with the wanted cell columns, one Put per non-null value.
    """
    wanted = list(CELL_SCHEMA.names if columns is None else columns)
    nrec, q = records.num_rows, len(specs)
    valid = np.zeros((nrec, q), dtype=bool)
    for j, spec in enumerate(specs):
        valid[:, j] = valid_mask(_flat(records.column(spec.value_name)))
    flat = np.flatnonzero(valid)
    rec = flat // q if q else flat
    col = flat % q if q else flat
    out: dict[str, pa.Array] = {}
    if "row" in wanted:
        rows = record_rows(records, key)
        if encoded:
            out["row"] = pa.DictionaryArray.from_arrays(pa.array(rec, pa.int32()), rows)
        else:
            out["row"] = rows.take(pa.array(rec))
    if "qualifier" in wanted:
        quals = pa.array([s.qualifier for s in specs], pa.binary())
        if encoded:
            out["qualifier"] = pa.DictionaryArray.from_arrays(pa.array(col, pa.int32()), quals)
        else:
            out["qualifier"] = quals.take(pa.array(col))
    if "ts" in wanted:
        row_ts = _flat(records.column(TS_COLUMN)).to_numpy(zero_copy_only=False)
        ts = row_ts[rec]
        for j, spec in enumerate(specs):
            own = _flat(records.column(spec.ts_name))
            if own.null_count == len(own):
                continue
            here = np.flatnonzero(col == j)
            own_valid = valid_mask(own)[rec[here]]
            own_ts = own.fill_null(0).to_numpy(zero_copy_only=False)[rec[here]]
            ts[here[own_valid]] = own_ts[own_valid]
        out["ts"] = pa.array(ts, type=pa.int64())
    if "type" in wanted:
        out["type"] = pa.array(np.full(len(flat), _PUT, dtype=np.int8), type=pa.int8())
    if "value" in wanted:
        parts = [_value_bytes(_flat(records.column(s.value_name)), s) for s in specs]
        if parts:
            every = pa.concat_arrays(parts)
            out["value"] = every.take(pa.array(col * nrec + rec))
        else:
            out["value"] = pa.array([], pa.binary())
    fields = [CELL_SCHEMA.field(name) for name in wanted]
    arrays = [out[name] for name in wanted]
    schema = pa.schema(
        [
            pa.field(f.name, a.type, nullable=False) if encoded else f
            for f, a in zip(fields, arrays, strict=True)
        ]
    )
    return pa.Table.from_arrays(arrays, schema=schema)


def _value_bytes(values: pa.Array, spec: ColumnSpec) -> pa.Array:
    """A value column as HBase value bytes (null stays null), one per record."""
    if spec.codec is Codec.BYTES:
        return values.cast(pa.binary())
    return encode_values(values, spec.codec, field=spec.value_name).cast(pa.binary())

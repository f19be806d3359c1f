"""Multi-family results are merged from each family's sorted run, never re-sorted.

The expectations are independent of the merge kernel: Python's stable ``sorted`` on the row
of the per-family results concatenated in family order (R2.3: row, then family, then the
family's own order; R2.4: reversed scans reverse rows only), and the pure-Python model
(``tests/model.py``) for each family's cells.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import model
from cellstore.core.family import Family
from cellstore.core.semantics import ReadSpec, merge_resolve
from cellstore.core.semantics.arrays import pool_empty
from cellstore.core.semantics.merge import merge_resolve_rows
from cellstore.core.semantics.runs import merge_families, merge_family_order
from cellstore.errors import InvalidArgumentError
from cellstore.reader import execute
from cellstore.reader.execute import RESULT_SCHEMA
from cellstore.warehouse import connect

NOW = 10_000_000

_ROWS = st.lists(st.binary(min_size=0, max_size=3), max_size=12).map(sorted)


def _expected_order(runs: list[list[bytes]], *, reverse: bool) -> list[int]:
    """Stable sort on the row of the runs concatenated in run order (R2.3, R2.4)."""
    flat = [(row, i) for i, row in enumerate(r for run in runs for r in run)]
    rows_in_order = sorted({row for row, _ in flat}, reverse=reverse)
    by_row: dict[bytes, list[int]] = {}
    for row, i in flat:  # concatenation order keeps family, then in-family order
        by_row.setdefault(row, []).append(i)
    return [i for row in rows_in_order for i in by_row[row]]


@settings(max_examples=200, deadline=None)
@given(runs=st.lists(_ROWS, min_size=1, max_size=4), reverse=st.booleans())
def test_merge_order_equals_stable_sort_on_row_r2_3_r2_4(
    runs: list[list[bytes]], reverse: bool
) -> None:
    """Prefix keys (b"a" < b"a\\x00"), empty keys, empty runs and equal rows across runs."""
    arrays = [pa.array(run, pa.binary()) for run in runs]
    order = merge_family_order(arrays, reverse=reverse)
    assert order.tolist() == _expected_order(runs, reverse=reverse)


def test_merge_order_of_chunked_and_sliced_columns() -> None:
    a = pa.chunked_array([pa.array([b"a", b"b"]), pa.array([b"b", b"d"])])
    b = pa.array([b"x", b"a", b"c", b"d"]).slice(1)
    assert merge_family_order([a, b]).tolist() == [0, 4, 1, 2, 5, 3, 6]


def test_merge_families_builds_the_result_table() -> None:
    def fam(rows: list[bytes], quals: list[bytes]) -> pa.Table:
        n = len(rows)
        return pa.table(
            {
                "row": pa.array(rows, pa.binary()),
                "qualifier": pa.array(quals, pa.binary()),
                "ts": pa.array(range(n), pa.int64()),
                "type": pa.array([4] * n, pa.int8()),
                "value": pa.array([r + q for r, q in zip(rows, quals, strict=True)]),
            }
        )

    a = fam([b"r1", b"r1", b"r3"], [b"x", b"y", b"x"])
    b = fam([b"r1", b"r2"], [b"z", b"z"])
    empty = fam([], [])
    out = merge_families([a, empty, b], ["a", "b", "c"], schema=RESULT_SCHEMA)
    assert out.schema == RESULT_SCHEMA
    assert [(r["row"], r["family"], r["qualifier"]) for r in out.to_pylist()] == [
        (b"r1", "a", b"x"),
        (b"r1", "a", b"y"),
        (b"r1", "c", b"z"),
        (b"r2", "c", b"z"),
        (b"r3", "a", b"x"),
    ]
    back = merge_families([a, b], ["a", "c"], schema=RESULT_SCHEMA, reverse=True)
    assert [(r["row"], r["family"]) for r in back.to_pylist()] == [
        (b"r3", "a"),
        (b"r2", "c"),
        (b"r1", "a"),
        (b"r1", "a"),
        (b"r1", "c"),
    ]
    assert merge_families([empty], ["a"], schema=RESULT_SCHEMA).num_rows == 0


def _random_loads(
    rng: np.random.Generator, families: list[str]
) -> list[list[tuple[str, model.Cell]]]:
    """Three overlapping loads of puts and deletes, each key once per load."""
    loads = []
    for _ in range(3):
        cells: dict[tuple[object, ...], tuple[str, model.Cell]] = {}
        for _ in range(400):
            row = b"r%03d" % rng.integers(0, 120)
            if rng.random() < 0.1:
                row += b"\x00"  # a prefix pair: r007 < r007\x00 < r008
            fam = families[int(rng.integers(0, len(families)))]
            qual = b"q%d" % rng.integers(0, 3)
            ts = int(rng.integers(1, 50))
            typ = int(rng.choice([4, 4, 4, 4, 8, 12]))
            value = b"%s:%s:%d" % (fam.encode(), row, ts) if typ == 4 else b""
            cells[(row, fam, qual, ts, typ)] = (fam, model.Cell(row, qual, ts, typ, value))
        loads.append(list(cells.values()))
    return loads


@pytest.mark.parametrize("chunk_cells", [execute.CHUNK_CELLS, 64])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_of_three_families_matches_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_cells: int, reverse: bool
) -> None:
    """Families resolved as the model says, merged in result order (R2.3, R2.4), whether
    the task runs as one chunk or as many row-aligned chunks on threads."""
    monkeypatch.setattr(execute, "CHUNK_CELLS", chunk_cells)
    families = ["a", "b", "c"]
    t = connect(str(tmp_path)).create_table(
        "t", families=[Family(name=f, max_versions=2) for f in families]
    )
    loads = _random_loads(np.random.default_rng(7), families)
    for load in loads:
        t.load_cells(
            pa.table(
                {
                    "row": pa.array([c.row for _, c in load], pa.binary()),
                    "family": pa.array([f for f, _ in load]),
                    "qualifier": pa.array([c.qualifier for _, c in load], pa.binary()),
                    "ts": pa.array([c.ts for _, c in load], pa.int64()),
                    "type": pa.array([c.type for _, c in load], pa.int8()),
                    "value": pa.array([c.value for _, c in load], pa.binary()),
                }
            ),
            now_ms=NOW,
            row_group_cells=32,
        )
    t = connect(str(tmp_path)).table("t")
    per_family = []
    for fam in families:
        runs = [
            sorted(
                (
                    model.Cell(c.row, c.qualifier, c.ts, c.type, c.value, seq=i + 1)
                    for f, c in load
                    if f == fam
                ),
                key=model.cell_key,
            )
            for i, load in enumerate(loads)
        ]
        merged = model.merge(runs, [1, 2, 3])
        got = model.read(
            merged,
            max_versions=2,
            min_versions=0,
            ttl_seconds=None,
            keep_deleted_cells="false",
            now_ms=NOW,
            read_versions=2,
        )
        per_family.append([(row, fam, q, ts, typ, v) for row, q, ts, typ, v in got])
    flat = [c for cells in per_family for c in cells]
    expected = sorted(flat, key=lambda c: c[0], reverse=reverse)
    if reverse:  # R2.4: rows descend, the cells of a row keep their order
        rows = sorted({c[0] for c in flat}, reverse=True)
        expected = [c for row in rows for c in flat if c[0] == row]
    out = t.scan(max_versions=2, reversed=reverse).to_arrow()
    got_cells = [
        (r["row"], r["family"], r["qualifier"], r["ts"], r["type"], r["value"])
        for r in out.to_pylist()
    ]
    assert got_cells == expected
    assert len({c[1] for c in got_cells}) == 3


def test_one_family_passes_through_with_its_chunks() -> None:
    """One family in ascending order is the result as it is (no merge, no copy): R2.3."""
    part = pa.table(
        {
            "row": pa.chunked_array([[b"a", b"b"], [b"b", b"c"]], pa.binary()),
            "qualifier": pa.chunked_array([[b"x", b"x"], [b"y", b"x"]], pa.binary()),
            "ts": pa.chunked_array([[3, 2], [1, 1]], pa.int64()),
            "type": pa.chunked_array([[4, 4], [4, 4]], pa.int8()),
            "value": pa.chunked_array([[b"1", b"2"], [b"3", b"4"]], pa.binary()),
        }
    )
    out = merge_families([part], ["fam"], schema=RESULT_SCHEMA)
    assert out.schema == RESULT_SCHEMA
    assert out.column("value").num_chunks == 2  # not combined
    assert out.column("family").to_pylist() == ["fam"] * 4
    for name in ("row", "qualifier", "ts", "type", "value"):
        assert out.column(name).to_pylist() == part.column(name).to_pylist()
    back = merge_families([part], ["fam"], schema=RESULT_SCHEMA, reverse=True)
    assert back.column("row").to_pylist() == [b"c", b"b", b"b", b"a"]
    assert back.column("qualifier").to_pylist() == [b"x", b"x", b"y", b"x"]  # row keeps order


@pytest.mark.parametrize("names", [["a", "b", "c"], ["a", "bb", "ccc"], ["é", "x", "yy"]])
def test_family_names_of_any_length_r2_3(names: list[str]) -> None:
    """The family column is built from names of equal byte length or not (UTF-8)."""

    def fam(rows: list[bytes]) -> pa.Table:
        n = len(rows)
        return pa.table(
            {
                "row": pa.array(rows, pa.binary()),
                "qualifier": pa.array([b"q"] * n, pa.binary()),
                "ts": pa.array([1] * n, pa.int64()),
                "type": pa.array([4] * n, pa.int8()),
                "value": pa.array(rows, pa.binary()),
            }
        )

    out = merge_families(
        [fam([b"r1", b"r3"]), fam([b"r1", b"r2"]), fam([b"r3"])], names, schema=RESULT_SCHEMA
    )
    assert [(r["row"], r["family"]) for r in out.to_pylist()] == [
        (b"r1", names[0]),
        (b"r1", names[1]),
        (b"r2", names[1]),
        (b"r3", names[0]),
        (b"r3", names[2]),
    ]
    assert out.column("value").to_pylist() == out.column("row").to_pylist()


def _row_starts(rows: list[bytes]) -> np.ndarray:
    """Per cell: whether its row differs from the previous cell's."""
    return np.array([i == 0 or rows[i] != rows[i - 1] for i in range(len(rows))], bool)


@settings(max_examples=150, deadline=None)
@given(runs=st.lists(_ROWS, min_size=1, max_size=4), reverse=st.booleans())
def test_merge_families_with_row_starts_equals_without_r2_3_r2_4(
    runs: list[list[bytes]], reverse: bool
) -> None:
    """Given row starts, only heads of different families are compared: same table."""
    tables = [
        pa.table(
            {
                "row": pa.array(run, pa.binary()),
                "qualifier": pa.array([b"q"] * len(run), pa.binary()),
                "ts": pa.array(range(len(run)), pa.int64()),
                "type": pa.array([4] * len(run), pa.int8()),
                "value": pa.array([b"%d:%d" % (f, i) for i in range(len(run))], pa.binary()),
            }
        )
        for f, run in enumerate(runs)
    ]
    names = [f"f{i}" for i in range(len(runs))]
    starts = [_row_starts(run) for run in runs]
    got = merge_families(tables, names, schema=RESULT_SCHEMA, reverse=reverse, row_starts=starts)
    plain = merge_families(tables, names, schema=RESULT_SCHEMA, reverse=reverse)
    assert got.equals(plain)
    flat_values = [b"%d:%d" % (f, i) for f, run in enumerate(runs) for i in range(len(run))]
    expected = [flat_values[i] for i in _expected_order(runs, reverse=reverse)]
    assert got.column("value").to_pylist() == expected


def _encoded(values: list[bytes], cut: int, how: str) -> pa.ChunkedArray:
    """``values`` as chunks split at ``cut``: dictionary-encoded, plain, or one of each.

    Dictionaries are built by Arrow (``dictionary_encode``), so they need not be sorted
    and may hold more entries than a chunk uses (a slice), as Parquet's may not.
    """
    cut = min(cut, len(values))
    parts = [values[:cut], values[cut:]]
    chunks: list[pa.Array] = []
    for i, part in enumerate(parts):
        plain = pa.array(part, pa.binary())
        coded = how == "dict" or (how == "mixed" and i == 0)
        if coded:
            extra = pa.array([b"unused", *part, b"\x00"], pa.binary()).dictionary_encode()
            plain = extra.slice(1, len(part))
        chunks.append(plain)
    if any(pa.types.is_dictionary(c.type) for c in chunks):
        dict_type = pa.dictionary(pa.int32(), pa.binary())
        chunks = [c if pa.types.is_dictionary(c.type) else c.dictionary_encode() for c in chunks]
        return pa.chunked_array([c.cast(dict_type) for c in chunks], dict_type)
    return pa.chunked_array(chunks, pa.binary())


@settings(max_examples=150, deadline=None)
@given(
    runs=st.lists(_ROWS, min_size=1, max_size=4),
    reverse=st.booleans(),
    cut=st.integers(0, 12),
    how=st.sampled_from(["dict", "mixed", "plain"]),
    with_starts=st.booleans(),
)
def test_merge_families_of_dictionary_encoded_columns_r2_3(
    runs: list[list[bytes]], reverse: bool, cut: int, how: str, with_starts: bool
) -> None:
    """Rows and qualifiers as Parquet reads them (dictionaries per chunk): same table."""
    plain_tables, coded_tables = [], []
    for f, run in enumerate(runs):
        quals = [b"q%d" % (i % 3) for i in range(len(run))]
        rest = {
            "ts": pa.array(range(len(run)), pa.int64()),
            "type": pa.array([4] * len(run), pa.int8()),
            "value": pa.array([b"%d:%d" % (f, i) for i in range(len(run))], pa.binary()),
        }
        plain_tables.append(
            pa.table({"row": pa.array(run, pa.binary()), "qualifier": pa.array(quals), **rest})
        )
        coded_tables.append(
            pa.table(
                {"row": _encoded(run, cut, how), "qualifier": _encoded(quals, cut, how), **rest}
            )
        )
    names = [f"f{i}" for i in range(len(runs))]
    starts = [_row_starts(run) for run in runs] if with_starts else None
    got = merge_families(
        coded_tables, names, schema=RESULT_SCHEMA, reverse=reverse, row_starts=starts
    )
    expected = merge_families(plain_tables, names, schema=RESULT_SCHEMA, reverse=reverse)
    assert got.schema == RESULT_SCHEMA
    assert got.equals(expected)


def test_merge_families_rejects_row_starts_of_other_lengths() -> None:
    table = pa.table(
        {
            "row": pa.array([b"a", b"b"], pa.binary()),
            "qualifier": pa.array([b"q", b"q"], pa.binary()),
            "ts": pa.array([1, 1], pa.int64()),
            "type": pa.array([4, 4], pa.int8()),
            "value": pa.array([b"1", b"2"], pa.binary()),
        }
    )
    with pytest.raises(InvalidArgumentError):
        merge_families([table, table], ["a", "b"], schema=RESULT_SCHEMA, row_starts=[None])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError):
        merge_families(
            [table, table],
            ["a", "b"],
            schema=RESULT_SCHEMA,
            row_starts=[np.ones(2, bool), np.ones(3, bool)],
        )


_CELL = st.tuples(
    st.sampled_from([b"r1", b"r2", b"r2\x00", b"r3"]),
    st.sampled_from([b"q1", b"q2"]),
    st.integers(1, 4),
    st.sampled_from([4, 4, 4, 8, 12]),
)


@settings(max_examples=150, deadline=None)
@given(
    runs=st.lists(st.lists(_CELL, max_size=10), min_size=1, max_size=3),
    versions=st.integers(1, 3),
    dictionary=st.booleans(),
)
def test_merge_resolve_rows_marks_row_starts_r3_2(
    runs: list[list[tuple[bytes, bytes, int, int]]], versions: int, dictionary: bool
) -> None:
    """The row starts match the returned cells' rows, after overlapping runs are merged
    (R3.2) and cells are dropped by versions and delete markers; the cells are exactly
    :func:`merge_resolve`'s."""
    tables = []
    for run in runs:
        cells = sorted(set(run), key=lambda c: (c[0], c[1], -c[2], -c[3]))
        table = pa.table(
            {
                "row": pa.array([c[0] for c in cells], pa.binary()),
                "qualifier": pa.array([c[1] for c in cells], pa.binary()),
                "ts": pa.array([c[2] for c in cells], pa.int64()),
                "type": pa.array([c[3] for c in cells], pa.int8()),
                "value": pa.array([b"v%d" % c[2] for c in cells], pa.binary()),
            }
        )
        if dictionary:
            table = table.set_column(0, "row", pc.dictionary_encode(table.column("row")))
        tables.append(table)
    seqs = list(range(1, len(tables) + 1))
    family = Family(name="f", max_versions=3)
    spec = ReadSpec(now_ms=NOW, max_versions=versions)
    cells, starts = merge_resolve_rows(tables, seqs, family=family, spec=spec)
    assert cells.equals(merge_resolve(tables, seqs, family=family, spec=spec))
    assert starts.tolist() == _row_starts(cells.column("row").to_pylist()).tolist()


def test_pool_arrays_live_in_arrows_memory_pool() -> None:
    """Per-cell scratch arrays come from Arrow's pool (reused pages) and are freed with
    the array: the pool counts them while they live and not after."""
    before = pa.total_allocated_bytes()
    values = pool_empty(1_000_000, np.int64)
    values[:] = np.arange(1_000_000)
    assert values.dtype == np.int64 and values.shape == (1_000_000,)
    assert values.flags.writeable and int(values[-1]) == 999_999
    assert pa.total_allocated_bytes() >= before + 8_000_000
    del values
    assert pa.total_allocated_bytes() < before + 8_000_000
    assert pool_empty(0, np.bool_).shape == (0,)


def test_merge_of_more_than_127_families_r2_3() -> None:
    """Family ids past int8 (128+ families) keep row, then family order."""
    names = [f"f{i:03d}" for i in range(130)]
    tables = []
    for i in range(130):
        rows = [b"r1", b"r3"] if i % 2 else [b"r2"]
        tables.append(
            pa.table(
                {
                    "row": pa.array(rows, pa.binary()),
                    "qualifier": pa.array([b"q"] * len(rows), pa.binary()),
                    "ts": pa.array([i] * len(rows), pa.int64()),
                    "type": pa.array([4] * len(rows), pa.int8()),
                    "value": pa.array([b"%d" % i] * len(rows), pa.binary()),
                }
            )
        )
    for reverse in (False, True):
        out = merge_families(tables, names, schema=RESULT_SCHEMA, reverse=reverse)
        got = [(r["row"], r["family"]) for r in out.to_pylist()]
        odd = [names[i] for i in range(1, 130, 2)]
        even = [names[i] for i in range(0, 130, 2)]
        blocks = [(b"r1", odd), (b"r2", even), (b"r3", odd)]
        if reverse:
            blocks.reverse()
        assert got == [(row, name) for row, fams in blocks for name in fams]
        assert out.column("value").to_pylist() == [
            n[1:].lstrip("0").encode() or b"0" for _, n in got
        ]

"""The fast read path returns exactly what the reference path returns.

* ``merge_runs`` (packed integer keys, one stable sort) equals the previous implementation
  (a comparison sort of the concatenated runs on the binary key columns), byte for byte,
  for keys that exercise every key encoding: fixed-width keys read as integers, keys with
  more than 8 varying bytes (ranked), variable-length keys ending in zero bytes (length
  suffix), short keys, and timestamps that need more than one 64-bit sort word.
* ``merge_resolve`` equals ``resolve(merge_runs(...))`` for random reads, also when the
  row/qualifier columns arrive dictionary-encoded in several chunks (as the store-file
  reader delivers them), with dictionaries that are unsorted or repeat values.
* The chunked, multi-threaded scan of a table equals the single-chunk read, and a failing
  chunk raises instead of hanging.
"""

from __future__ import annotations

import threading
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore.core.semantics.merge as semantics_merge
import cellstore.core.semantics.sortkey as sortkey
from cellstore.core.cells import CELL_SCHEMA, SORT_KEYS, CellType
from cellstore.core.family import Family
from cellstore.core.semantics import MERGED_SCHEMA, ReadSpec, merge_resolve, merge_runs, resolve
from cellstore.errors import CorruptFileError, InvalidArgumentError

try:
    from test_semantics_model import families, read_specs, store_runs, to_table
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests.test_semantics_model import families, read_specs, store_runs, to_table

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Row alphabets, one per key encoding path of the merge.
ROW_ALPHABETS = {
    "fixed-integer": [b"user%05d" % i for i in (0, 1, 2, 10, 99999)],
    "fixed-ranked": [b"%012d" % i + b"tail" for i in (0, 1, 7, 10**11)],
    "zero-ending": [b"a", b"a\x00", b"a\x00\x00", b"a\x01", b"\xff", b"\xff\x00", b""],
    "short": [b"\x00", b"\x01", b"a", b"ab", b"\x80\x7f"],
    "long-prefix": [b"com.example/" * 3 + s for s in (b"a", b"ab", b"b", b"a\x00")],
}
QUALIFIERS = [
    b"",
    b"a",
    b"a\x00",
    b"b",
    b"\x80",
    b"long-qualifier-name-0",
    b"long-qualifier-name-1",
]
TIMESTAMPS = [0, 1, 2, 5, 1000, 2**40, 2**62, 2**63 - 1, -(2**63), -1]
TYPES = [int(t) for t in CellType]


def reference_merge(runs: list[pa.Table], seqs: list[int]) -> pa.Table:
    """The merge as it was before the fast path: concatenate, comparison-sort."""
    tagged = []
    for run, seq in zip(runs, seqs, strict=True):
        cells = run.select(list(CELL_SCHEMA.names)).cast(CELL_SCHEMA)
        seq_col = pa.array(np.full(cells.num_rows, seq, dtype=np.int64), pa.int64())
        tagged.append(pa.Table.from_arrays([*cells.columns, seq_col], schema=MERGED_SCHEMA))
    tagged = [t for t in tagged if t.num_rows]
    if not tagged:
        return MERGED_SCHEMA.empty_table()
    if len(tagged) == 1:
        return tagged[0]
    bounds = sorted(
        (
            (t.column("row")[0].as_py(), t.column("row")[-1].as_py(), i)
            for i, t in enumerate(tagged)
        ),
    )
    if all(last < first for (_, last, _), (first, _, _) in pairwise(bounds)):
        return pa.concat_tables([tagged[i] for _, _, i in bounds])
    merged = pa.concat_tables(tagged[::-1])
    order = pc.sort_indices(merged, sort_keys=[*SORT_KEYS, ("seq", "descending")])
    return merged.take(order)


@st.composite
def wide_runs(draw: st.DrawFn) -> tuple[list[pa.Table], list[int]]:
    """1-4 sorted runs over one row alphabet, any qualifiers, timestamps and types."""
    rows = draw(st.sampled_from(sorted(ROW_ALPHABETS)))
    alphabet = ROW_ALPHABETS[rows]
    n_runs = draw(st.integers(1, 4))
    runs = []
    for r in range(n_runs):
        cells = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(alphabet),
                    st.sampled_from(QUALIFIERS),
                    st.sampled_from(TIMESTAMPS),
                    st.sampled_from(TYPES),
                ),
                max_size=20,
            )
        )
        table = pa.table(
            {
                "row": pa.array([c[0] for c in cells], pa.binary()),
                "qualifier": pa.array([c[1] for c in cells], pa.binary()),
                "ts": pa.array([c[2] for c in cells], pa.int64()),
                "type": pa.array([c[3] for c in cells], pa.int8()),
                "value": pa.array([b"%d.%d" % (r, i) for i in range(len(cells))], pa.binary()),
            },
            schema=CELL_SCHEMA,
        )
        runs.append(table.take(pc.sort_indices(table, sort_keys=list(SORT_KEYS))))
    seqs = draw(st.lists(st.integers(0, 3), min_size=n_runs, max_size=n_runs))
    return runs, seqs


def encode(table: pa.Table, data: st.DataObject) -> pa.Table:
    """``table`` with row/qualifier as dictionary chunks, as a store-file read gives them.

    Chunk borders are random; each chunk's dictionary may be sorted (as Parquet's), shuffled,
    or carry repeated and unused values, which the engine must not rely on.
    """
    n = table.num_rows
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=3))) | {0, n})
    columns = {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        if name not in ("row", "qualifier"):
            columns[name] = col
            continue
        chunks = []
        for lo, hi in pairwise(cuts):
            part = col.slice(lo, hi - lo)
            style = data.draw(st.sampled_from(["sorted", "shuffled", "repeats"]))
            values = sorted(set(part.to_pylist()))
            if style == "shuffled":
                values = data.draw(st.permutations(values))
            elif style == "repeats":
                values = [*values, *values, b"unused"]
            lookup = {v: i for i, v in enumerate(values)}
            index = pa.array([lookup[v] for v in part.to_pylist()], pa.int32())
            chunks.append(pa.DictionaryArray.from_arrays(index, pa.array(values, pa.binary())))
        columns[name] = pa.chunked_array(chunks, pa.dictionary(pa.int32(), pa.binary()))
    return pa.table(columns)


def outcome(fn):  # type: ignore[no-untyped-def]
    """The table ``fn`` returns, or the message of the InvalidArgumentError it raises."""
    try:
        return fn()
    except InvalidArgumentError as e:
        return str(e)


@SETTINGS
@given(runs_and_seqs=wide_runs())
def test_merge_runs_equals_reference_merge(runs_and_seqs) -> None:
    runs, seqs = runs_and_seqs
    got = merge_runs(runs, seqs)
    expected = reference_merge(runs, seqs)
    assert got.schema.equals(MERGED_SCHEMA)
    assert got.to_pylist() == expected.to_pylist()


@SETTINGS
@given(data=st.data(), runs_and_seqs=wide_runs(), family=families())
def test_merge_resolve_equals_resolve_of_merge(data, runs_and_seqs, family) -> None:
    runs, seqs = runs_and_seqs
    spec = data.draw(read_specs(family))
    if data.draw(st.booleans()):
        runs = [encode(r, data) for r in runs]
    expected = outcome(lambda: resolve(reference_merge(runs, seqs), family=family, spec=spec))
    got = outcome(lambda: merge_resolve(runs, seqs, family=family, spec=spec))
    if isinstance(expected, str):
        assert got == expected
    else:
        assert got.schema.equals(CELL_SCHEMA)
        assert got.to_pylist() == expected.to_pylist()


@SETTINGS
@given(data=st.data(), runs_and_seqs=store_runs(), family=families())
def test_merge_resolve_equals_resolve_on_model_runs(data, runs_and_seqs, family) -> None:
    """The model tests' tiny alphabets (every kind of key collision), encoded or not."""
    runs, seqs = runs_and_seqs
    spec = data.draw(read_specs(family))
    tables = [to_table(r) for r in runs]
    if data.draw(st.booleans()):
        tables = [encode(t, data) for t in tables]
    expected = outcome(lambda: resolve(merge_runs(tables, seqs), family=family, spec=spec))
    got = outcome(lambda: merge_resolve(tables, seqs, family=family, spec=spec))
    if isinstance(expected, str):
        assert got == expected
    else:
        assert got.to_pylist() == expected.to_pylist()


@SETTINGS
@given(runs_and_seqs=wide_runs())
def test_merge_without_fixed_width_keys_equals_reference(runs_and_seqs) -> None:
    """Arrow's comparison sort (used for huge keys) ranks exactly like the numpy keys."""
    runs, seqs = runs_and_seqs
    limit = sortkey._MAX_FIXED_WIDTH_BYTES
    sortkey._MAX_FIXED_WIDTH_BYTES = 0  # type: ignore[misc]
    try:
        got = merge_runs(runs, seqs)
    finally:
        sortkey._MAX_FIXED_WIDTH_BYTES = limit  # type: ignore[misc]
    assert got.to_pylist() == reference_merge(runs, seqs).to_pylist()


@SETTINGS
@given(values=st.lists(st.binary(max_size=12), min_size=1, max_size=40))
def test_candidate_codes_order_like_binary(values: list[bytes]) -> None:
    codes, bits, _ = sortkey._candidate_codes(pa.array(values, pa.binary()))
    assert int(codes.max()) < 2**bits if bits else int(codes.max()) == 0
    for (a, ca), (b, cb) in pairwise(sorted(zip(values, codes.tolist(), strict=True))):
        assert (ca < cb) if a < b else (ca == cb)


@SETTINGS
@given(
    data=st.data(),
    runs_and_seqs=wide_runs(),
    max_versions=st.integers(1, 3),
    read_versions=st.sampled_from([None, 1, 2]),
)
def test_newest_put_fast_path_equals_general_path(
    data, runs_and_seqs, max_versions, read_versions
) -> None:
    """Puts only, one version, no TTL: the column-start fast path vs the general engine."""
    runs, seqs = runs_and_seqs
    runs = [r.filter(pc.equal(r.column("type"), int(CellType.PUT))) for r in runs]
    family = Family(name="f", max_versions=max_versions)
    spec = ReadSpec(now_ms=0, max_versions=read_versions)
    assert semantics_merge._newest_put_per_column(family, spec) == (
        min(read_versions or 1, max_versions) == 1
    )
    if data.draw(st.booleans()):
        runs = [encode(r, data) for r in runs]
    expected = resolve(reference_merge(runs, seqs), family=family, spec=spec)
    got = merge_resolve(runs, seqs, family=family, spec=spec)
    assert got.to_pylist() == expected.to_pylist()


def test_puts_only_fast_path_equals_general_path() -> None:
    """Latest version of Puts-only cells (the fast path) on random multi-run data."""
    rng = np.random.default_rng(7)
    runs = []
    for r in range(3):
        n = 5000
        rows = np.sort(rng.integers(0, 800, n))
        table = pa.table(
            {
                "row": pa.array([b"row%04d" % x for x in rows], pa.binary()),
                "qualifier": pa.array([b"q%d" % x for x in rng.integers(0, 4, n)], pa.binary()),
                "ts": pa.array(rng.integers(0, 5, n), pa.int64()),
                "type": pa.array(np.full(n, 4, np.int8)),
                "value": pa.array([b"%d.%d" % (r, i) for i in range(n)], pa.binary()),
            },
            schema=CELL_SCHEMA,
        )
        runs.append(table.take(pc.sort_indices(table, sort_keys=list(SORT_KEYS))))
    family = Family(name="f", max_versions=3)
    for spec in (
        ReadSpec(now_ms=0),
        ReadSpec(now_ms=0, max_versions=2),
        ReadSpec(now_ms=0, time_range=(1, 4)),
        ReadSpec(now_ms=0, qualifiers=frozenset({b"q1", b"q3"})),
    ):
        expected = resolve(reference_merge(runs, [1, 2, 2]), family=family, spec=spec)
        assert merge_resolve(runs, [1, 2, 2], family=family, spec=spec).equals(expected)


# ------------------------------------------------------------------------------------------
# the chunked, threaded store-file read


@pytest.fixture
def multi_file_table(tmp_path):
    """A table whose one region holds 3 overlapping store files with small row groups."""
    from cellstore.warehouse import connect

    t = connect(str(tmp_path)).create_table("t", families=[Family(name="f", max_versions=2)])
    rng = np.random.default_rng(3)
    for load in range(3):
        n = 3000
        rows = rng.integers(0, 700, n)
        cells = pa.table(
            {
                "row": pa.array([b"r%05d" % x for x in rows], pa.binary()),
                "family": pa.array(["f"] * n),
                "qualifier": pa.array([b"q%d" % x for x in rng.integers(0, 5, n)], pa.binary()),
                "ts": pa.array(rng.integers(1, 6, n), pa.int64()),
                "type": pa.array(rng.choice([4, 4, 4, 8, 12, 14], n).astype(np.int8)),
                "value": pa.array([b"v%d.%d" % (load, i) for i in range(n)], pa.binary()),
            }
        )
        # Family markers have an empty qualifier; markers carry no value.
        fam_marker = pc.equal(cells.column("type"), 14)
        quals = pc.if_else(fam_marker, pa.scalar(b"", pa.binary()), cells.column("qualifier"))
        cells = cells.set_column(2, "qualifier", quals)
        put = pc.equal(cells.column("type"), 4)
        values = pc.if_else(put, cells.column("value"), pa.scalar(b"", pa.binary()))
        cells = cells.set_column(5, "value", values)
        t.load_cells(cells, row_group_cells=256)
    return t


def reference_scan(table, **kwargs) -> list[dict]:  # type: ignore[no-untyped-def]
    """Read every file whole and apply the reference merge and resolve."""
    from cellstore.storefiles import read_store_file

    scan = table.scan(**kwargs)
    out = []
    for task in scan.plan():
        for fam in task.families:
            runs = [
                read_store_file(
                    table.fs, f"{task.table_path}/{p}", start=task.start, stop=task.stop
                )
                for p, _ in fam.files
            ]
            merged = reference_merge(runs, [s for _, s in fam.files])
            out.extend(resolve(merged, family=fam.family, spec=fam.spec).to_pylist())
    return out


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"max_versions": 2}, {"raw": True}, {"start_row": "r00100", "stop_row": "r00400"}],
)
def test_chunked_scan_equals_reference(multi_file_table, monkeypatch, kwargs, threads) -> None:
    import cellstore.reader.execute as execute

    monkeypatch.setattr(execute, "CHUNK_CELLS", 500)
    monkeypatch.setattr(pa, "cpu_count", lambda: threads)
    got = multi_file_table.scan(**kwargs).to_arrow()
    expected = reference_scan(multi_file_table, **kwargs)
    assert [{k: v for k, v in d.items() if k != "family"} for d in got.to_pylist()] == expected


def test_failing_chunk_raises_without_hanging(multi_file_table, monkeypatch) -> None:
    import cellstore.reader.execute as execute
    from cellstore.storefiles import StoreFileReader

    monkeypatch.setattr(execute, "CHUNK_CELLS", 500)
    monkeypatch.setattr(pa, "cpu_count", lambda: 3)
    original = StoreFileReader.read_row_groups
    calls = {"n": 0}
    lock = threading.Lock()

    def flaky(self, groups, **kwargs):  # type: ignore[no-untyped-def]
        with lock:
            calls["n"] += 1
            fail = calls["n"] == 4
        if fail:
            raise CorruptFileError("simulated bad page")
        return original(self, groups, **kwargs)

    monkeypatch.setattr(StoreFileReader, "read_row_groups", flaky)
    result: dict[str, BaseException] = {}

    def scan() -> None:
        try:
            multi_file_table.scan().to_arrow()
        except BaseException as e:  # recorded for the assertion
            result["error"] = e

    worker = threading.Thread(target=scan, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "scan hung after a chunk failed"
    assert isinstance(result.get("error"), CorruptFileError)


def test_footer_cache_never_serves_a_rewritten_file(tmp_path) -> None:
    import fsspec

    from cellstore.storefiles import StoreFileReader, write_store_file

    fs = fsspec.filesystem("file")
    path = str(tmp_path / "f.parquet")

    def cells(value: bytes) -> pa.Table:
        return pa.table(
            {
                "row": [b"a", b"b"],
                "qualifier": [b"q", b"q"],
                "ts": [1, 1],
                "type": pa.array([4, 4], pa.int8()),
                "value": [value, value],
            },
            schema=CELL_SCHEMA,
        )

    write_store_file(fs, path, cells(b"1"), family=Family(name="f"), seq=1, load_id="L")
    with StoreFileReader(fs, path) as r:
        assert r.info.seq == 1 and r.read().column("value").to_pylist() == [b"1", b"1"]
    write_store_file(fs, path, cells(b"2"), family=Family(name="f"), seq=2, load_id="L")
    with StoreFileReader(fs, path) as r:
        assert r.info.seq == 2 and r.read().column("value").to_pylist() == [b"2", b"2"]

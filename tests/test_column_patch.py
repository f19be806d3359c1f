"""Cell deltas newer than the base, patched into its columns (reader/columnar/patch.py).

A ``layout="auto"`` table's first load writes column files; later loads write cell files.
When every delta cell is newer than every base cell (by the manifest's timestamps) and
the deltas hold only Puts and DeleteFamilies, a wide read pivots them once and patches
the base's columns (families of the same keyed rows keep sharing them); anything else
(another marker, a delta row the base lacks, an older delta) is read by the general
merge. Either way the result must be exactly what a ``layout="cells"`` twin gives.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.core.cells import CellType
from cellstore.core.columnar import AUTO_MIN_ROWS
from cellstore.core.family import Family
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import CellstoreError
from cellstore.reader.columnar import fast
from cellstore.reader.columnar.gather import gather2, gather_numbers, gather_put, same_bytes
from test_column_layout import cell_table as table

PUT = int(CellType.PUT)
DC = int(CellType.DELETE_COLUMN)
DF = int(CellType.DELETE_FAMILY)
D = int(CellType.DELETE)
DFV = int(CellType.DELETE_FAMILY_VERSION)
KEY = RowKeySpec(fields=(KeyField(name="carrier"), KeyField(name="n", type="int32")))
CARRIERS = ["AA", "DL", "UA"]
N = AUTO_MIN_ROWS  # records per family: the fewest ``auto`` writes as columns
TYPES = {"f:dep": "double", "f:tail": "string", "g:dep": "double", "g:tail": "string"}
PROPS = {"mapping.codecs": json.dumps({"columns": TYPES})}
BASE_TS = 10
FIVE = struct.pack(">d", 5.0)


def key_row(i: int) -> bytes:
    fields = pa.table({"carrier": [CARRIERS[i % 3]], "n": pa.array([i // 3], pa.int32())})
    return bytes(KEY.encode(fields)[0].as_py())


ROWS = [key_row(i) for i in range(N)]
NEW_ROW = bytes(
    KEY.encode(pa.table({"carrier": ["ZZ"], "n": pa.array([1], pa.int32())}))[0].as_py()
)


def value(q: bytes, i: int) -> bytes:
    return struct.pack(">d", float(i)) if q == b"dep" else b"N%d" % (i % 97)


def base_cells(families: tuple[str, ...] = ("f", "g")) -> pa.Table:
    return table(
        [
            (row, fam, q, BASE_TS, PUT, value(q, i))
            for fam in families
            for i, row in enumerate(ROWS)
            for q in (b"dep", b"tail")
        ]
    )


def load(t: Any, cells: list[tuple[bytes, str, bytes, int, int, bytes]]) -> None:
    t.load_cells(table(sorted(cells, key=lambda c: (c[0], c[1], c[2], -c[3], -c[4]))))


def twins(
    root: str, *, ttl: int | None = None, made: str | None = None, layout: str = "auto"
) -> tuple[Any, Any]:
    """The cells twin and the ``auto`` table (of ``layout``), the base loaded (into
    ``root``, or copied there from ``made``, a root where this was done)."""
    if made is not None:
        shutil.copytree(made, root, dirs_exist_ok=True)
        wh = cellstore.connect(root)
        return wh.table("cells"), wh.table("auto")
    wh = cellstore.connect(root)
    fams = [Family(name="f", ttl=ttl), Family(name="g", ttl=ttl)]
    made = {}
    for name in ("cells", "auto"):
        of_layout = [f.replace(layout=name if name == "cells" else layout) for f in fams]
        made[name] = wh.create_table(name, families=of_layout, row_key=KEY, properties=PROPS)
        made[name].load_cells(base_cells())
    return made["cells"], made["auto"]


READS: list[dict[str, Any]] = [
    {"shape": "wide", "column_types": "table"},
    {"shape": "wide"},
    {"shape": "wide", "columns": ["g:tail", "f:dep"], "reversed": True},
    {"shape": "wide", "column_types": "table", "key": {"carrier": "DL"}},
    {"shape": "wide", "column_types": "table", "key": {"carrier": "UA", "n": (3, 700)}},
    {"shape": "wide", "columns": ["f:new"]},
]


def outcome(t: Any, opts: dict[str, Any]) -> tuple[Any, ...]:
    """A read's schema and rows, or the error it raised (a value that does not decode:
    the wide fast path words it by record and field, the general path by row)."""
    try:
        got = t.refresh().scan(**opts).to_arrow()
    except CellstoreError as e:
        return (type(e),)
    return (got.schema, got.to_pylist())


def assert_twins(cells: Any, auto: Any, *, now_ms: int | None = None) -> list[dict[str, Any]]:
    extra = {} if now_ms is None else {"now_ms": now_ms}
    out = []
    for opts in READS:
        want = outcome(cells, {**opts, **extra})
        assert outcome(auto, {**opts, **extra}) == want, opts
        out = want[-1] if opts == READS[0] else out
    return out


def spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[bool]]:
    """Record what the patch path did: pivots made, decisions made, shared rows."""
    seen: dict[str, list[bool]] = {"pivot": [], "decide": [], "shared": []}
    real_pivot, real_decide, real_shared = fast.pivot_cells, fast.decide, fast._shared_rows

    def pivot(*a: Any, **k: Any) -> Any:
        out = real_pivot(*a, **k)
        seen["pivot"].append(out is not None)
        return out

    def decide(*a: Any, **k: Any) -> Any:
        out = real_decide(*a, **k)
        seen["decide"].append(out is not None)
        return out

    def shared(*a: Any) -> bool:
        seen["shared"].append(real_shared(*a))
        return seen["shared"][-1]

    monkeypatch.setattr(fast, "pivot_cells", pivot)
    monkeypatch.setattr(fast, "decide", decide)
    monkeypatch.setattr(fast, "_shared_rows", shared)
    return seen


def test_newer_puts_and_delete_families_are_patched_into_shared_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Newer Puts (a rewrite, a changed value, a new qualifier) and newer DeleteFamilies
    in both families: the families keep sharing their rows, the deltas are pivoted and
    patched, and every read equals the twin's. R3.3: the newer Put wins; R5.1: a
    DeleteFamily hides the row's older Puts (the whole base record) but not a newer Put;
    per family (a row deleted in one family stays for the other's values)."""
    seen = spy(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        rewrite = [
            (ROWS[i], "f", q, 20, PUT, value(q, i)) for i in (1, 2, 3) for q in (b"dep", b"tail")
        ]
        rewrite += [(ROWS[4], "f", b"dep", 20, PUT, struct.pack(">d", -4.5))]
        rewrite += [(ROWS[5], "g", b"new", 20, PUT, b"fresh")]
        rewrite += [(ROWS[6], "g", b"dep", 20, PUT, struct.pack(">d", -0.0))]
        markers = [(ROWS[i], fam, b"", 30, DF, b"") for i in (2, 7) for fam in ("f", "g")]
        markers += [(ROWS[8], "f", b"", 30, DF, b"")]
        late = [(ROWS[7], "g", b"tail", 40, PUT, b"back")]  # above the DeleteFamily
        for t in (cells, auto):
            for cells_of_load in (rewrite, markers, late):
                load(t, cells_of_load)
        got = assert_twins(cells, auto)
        new = auto.refresh().scan(shape="wide", columns=["g:new"]).to_arrow().to_pylist()
    assert new == [{"row": ROWS[5], "carrier": "UA", "n": 1, "g:new": b"fresh"}]
    assert seen["shared"].count(True) == len(READS) - 1  # (one read is of one family)
    assert seen["pivot"] and all(seen["pivot"])
    assert seen["decide"] and all(seen["decide"])
    by_row = {r["row"]: r for r in got}
    assert len(by_row) == N - 1 and ROWS[2] not in by_row
    assert by_row[ROWS[4]]["f:dep"] == -4.5
    assert str(by_row[ROWS[6]]["g:dep"]) == "-0.0"  # bit for bit, not "equal to 0.0"
    assert (by_row[ROWS[7]]["f:dep"], by_row[ROWS[7]]["g:tail"]) == (None, "back")
    assert (by_row[ROWS[8]]["f:tail"], by_row[ROWS[8]]["g:tail"]) == (None, "N8")


@pytest.mark.parametrize("kind", [D, DFV, DC])
def test_another_marker_among_newer_deltas_reads_generally(
    kind: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Delete, DeleteFamilyVersion or DeleteColumn among deltas newer than the base is
    not pivoted: the task (families of shared rows) is read again by the general merge,
    exactly as the twin. R5.4: a Delete of the newest version uncovers the base's older
    one; R5.5: a DeleteColumn hides every older version."""
    seen = spy(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        q = b"" if kind == DFV else b"dep"
        # (a Delete and a DeleteFamilyVersion hide their own timestamp's version)
        ts = {D: 20, DFV: BASE_TS, DC: 30}[kind]
        update = [(ROWS[1], "f", b"dep", 20, PUT, value(b"dep", 9))]
        marker = [(ROWS[1], "f", q, ts, kind, b""), (ROWS[2], "g", q, ts, kind, b"")]
        for t in (cells, auto):
            load(t, update)
            load(t, marker)
        if kind == DFV:  # its timestamp is the base's: not newer, so no pivot is tried
            assert_twins(cells, auto)
            assert not seen["pivot"]
            return
        got = assert_twins(cells, auto)
    assert seen["shared"].count(True) == len(READS) - 1
    assert seen["pivot"] and not all(seen["pivot"])
    by_row = {r["row"]: r for r in got}
    want = (1.0, 2.0) if kind == D else (None, None)  # R5.4 / R5.5
    assert (by_row[ROWS[1]]["f:dep"], by_row[ROWS[2]]["g:dep"]) == want


def test_a_row_the_base_lacks_reads_generally(monkeypatch: pytest.MonkeyPatch) -> None:
    """A newer Put of a row the base does not hold cannot be patched in place: the task is
    read again by the general merge, and the new row is in the result as in the twin."""
    seen = spy(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        for t in (cells, auto):
            load(t, [(NEW_ROW, "f", b"tail", 20, PUT, b"new"), (ROWS[0], "g", b"", 20, DF, b"")])
        got = assert_twins(cells, auto)
    assert seen["pivot"] and all(seen["pivot"])
    assert False in seen["decide"]
    by_row = {r["row"]: r for r in got}
    assert by_row[NEW_ROW]["f:tail"] == "new" and by_row[ROWS[0]]["g:tail"] is None


def test_deltas_not_newer_than_the_base_take_the_merge_by_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A delta whose timestamps reach into the base's (an equal timestamp: R3.3 decides by
    sequence id) is not patched: rows are not shared, the merge by row decides."""
    seen = spy(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        for t in (cells, auto):
            load(t, [(ROWS[3], "f", b"dep", BASE_TS, PUT, struct.pack(">d", 33.0))])
        got = assert_twins(cells, auto)
    # (reads of other carriers' keys plan no task holding the delta: those share rows)
    assert not seen["pivot"] and seen["shared"][:3] == [False, False, False]
    assert {r["row"]: r for r in got}[ROWS[3]]["f:dep"] == 33.0


@st.composite
def deltas(draw: st.DrawFn) -> list[tuple[bytes, str, bytes, int, int, bytes]]:
    kinds = draw(st.sampled_from([[PUT, DF], [PUT, PUT, DF], [PUT, DF, D, DC, DFV]]))
    low = draw(st.sampled_from([BASE_TS + 1, BASE_TS]))
    keys = draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    [*ROWS[:6], ROWS[-1], NEW_ROW] if draw(st.booleans()) else ROWS[:6]
                ),
                st.sampled_from(["f", "g"]),
                st.sampled_from([b"dep", b"tail", b"new"]),
                st.integers(low, low + 8),
                st.sampled_from(kinds),
            ),
            min_size=1,
            max_size=10,
            unique_by=lambda k: (k[0], k[1], b"" if k[4] in (DF, DFV) else k[2], k[3], k[4]),
        )
    )
    out = []
    for row, fam, q, ts, kind in keys:
        q = b"" if kind in (DF, DFV) else q
        v = b""
        if kind == PUT:
            v = draw(st.sampled_from([struct.pack(">d", 7.0), b"short", b"N1"]))
        out.append((row, fam, q, ts, kind, v))
    return out


@pytest.fixture(scope="module")
def bases() -> Iterator[dict[Any, str]]:
    """Roots holding the twins with their base loaded, per TTL (copied by each example),
    and per (TTL, layout) for ``layout="columns"``."""
    top = tempfile.mkdtemp()
    made: dict[Any, str] = {}
    for ttl in (None, 25):
        made[ttl] = os.path.join(top, str(ttl))
        twins(made[ttl], ttl=ttl)
        made[(ttl, "columns")] = os.path.join(top, f"{ttl}-columns")
        twins(made[(ttl, "columns")], ttl=ttl, layout="columns")
    yield made
    shutil.rmtree(top)


#: Per layout of the table: the roots' key and the read's time (under a TTL). Under
#: ``columns`` the horizon (TTL is in seconds) is 14: the base expired, deltas below 14 too.
LAYOUTS: dict[str, tuple[Any, int]] = {"auto": (None, 30), "columns": ("columns", 25_014)}


@settings(
    max_examples=int(os.environ.get("PATCH_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(loads=st.lists(deltas(), min_size=1, max_size=2), ttl=st.sampled_from([None, 25]))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_patched_reads_like_the_cells_twin(
    bases: dict[Any, str],
    loads: list[list[tuple[bytes, str, bytes, int, int, bytes]]],
    ttl: int | None,
    layout: str,
) -> None:
    """Random later loads over a keyed two-family base (newer or not, Puts and
    DeleteFamilies or any marker, rows the base lacks or not, a TTL): every wide read of
    the ``auto`` table equals the cells twin's (or fails alike: a value that does not
    decode), whichever path answers. Under ``layout="columns"`` each later load's newest
    Puts are a column delta (typed records, patched in when newer than the base), the
    rest cell files."""
    made, now_ms = LAYOUTS[layout]
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root, ttl=ttl, made=bases[ttl if made is None else (ttl, made)])
        for cells_of_load in loads:
            for t in (cells, auto):
                load(t, cells_of_load)
        assert_twins(cells, auto, now_ms=now_ms if ttl else None)


def spy_records(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record, for each pivot made, how many column deltas it holds."""
    seen: list[int] = []
    real = fast.pivot_cells

    def pivot(*a: Any, **k: Any) -> Any:
        out = real(*a, **k)
        seen.append(-1 if out is None else len(out.records))
        return out

    monkeypatch.setattr(fast, "pivot_cells", pivot)
    return seen


def test_newer_column_deltas_are_patched_into_shared_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``layout="columns"`` a later load's Puts are a column delta (typed records)
    and a load of markers a cell file: both newer than the base, they are patched in
    (the families keep sharing their rows) and every read equals the twin's. R3.3: the
    newer Put wins (also over an earlier column delta); R5.1: a DeleteFamily hides the
    base record and the column delta's older Puts, not a newer Put."""
    seen = spy(monkeypatch)
    records = spy_records(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root, layout="columns")
        rewrite = [
            (ROWS[i], "f", q, 20, PUT, value(q, i + 1))
            for i in (1, 2, 3)
            for q in (b"dep", b"tail")
        ]
        rewrite += [(ROWS[5], "g", b"new", 20, PUT, b"fresh")]
        again = [(ROWS[1], "f", b"dep", 25, PUT, struct.pack(">d", -1.5))]
        markers = [(ROWS[i], fam, b"", 30, DF, b"") for i in (2, 7) for fam in ("f", "g")]
        markers += [(ROWS[3], "f", b"", 30, DF, b"")]
        late = [(ROWS[7], "g", b"tail", 40, PUT, b"back")]  # above the DeleteFamily
        for t in (cells, auto):
            for cells_of_load in (rewrite, again, markers, late):
                load(t, cells_of_load)
        assert [e.layout for e in auto.refresh().files].count("columns") == 2 + 2 + 1 + 1
        got = assert_twins(cells, auto)
    assert seen["shared"].count(True) == len(READS) - 1
    assert seen["decide"] and all(seen["decide"])
    assert records and max(records) == 2  # f: rewrite and again; g: rewrite and late
    by_row = {r["row"]: r for r in got}
    assert len(by_row) == N - 1 and ROWS[2] not in by_row
    assert (by_row[ROWS[1]]["f:dep"], by_row[ROWS[1]]["f:tail"]) == (-1.5, "N2")
    assert (by_row[ROWS[3]]["f:dep"], by_row[ROWS[3]]["g:dep"]) == (None, 3.0)
    assert (by_row[ROWS[7]]["f:dep"], by_row[ROWS[7]]["g:tail"]) == (None, "back")


def test_a_column_delta_row_the_base_lacks_reads_generally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A column delta holding a row the base does not: the patch declines, the task is
    read again by the general path, and the new row is in the result as in the twin."""
    seen = spy(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root, layout="columns")
        for t in (cells, auto):
            # (ROWS[0] makes the column delta overlap the base: a delta, not a base)
            load(
                t, [(NEW_ROW, "f", b"tail", 20, PUT, b"new"), (ROWS[0], "f", b"dep", 20, PUT, FIVE)]
            )
        got = assert_twins(cells, auto)
    assert seen["pivot"] and all(seen["pivot"])
    assert False in seen["decide"]
    by_row = {r["row"]: r for r in got}
    assert by_row[NEW_ROW]["f:tail"] == "new" and by_row[ROWS[0]]["f:dep"] == 5.0


@pytest.mark.parametrize("layout", ["auto", "columns"])
def test_a_delta_expired_by_ttl_hides_the_base_value_too(
    layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R8.1: a delta Put (a cell file under ``auto``, a column delta under ``columns``)
    newer than the base but older than the TTL's horizon is hidden, and so is the base's
    older value; a delta Put inside it shows. The patch decides it."""
    seen = spy(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root, ttl=25, layout=layout)
        early = [(ROWS[1], "f", b"dep", 12, PUT, struct.pack(">d", 12.0))]
        fresh = [(ROWS[2], "f", b"dep", 20, PUT, struct.pack(">d", 20.0))]
        for t in (cells, auto):
            load(t, early)
            load(t, fresh)
        # (TTL is in seconds) horizon 15: the base (10) and the early Put (12) expired
        got = assert_twins(cells, auto, now_ms=25_015)
    assert seen["decide"] and all(seen["decide"])
    by_row = {r["row"]: r for r in got}
    assert set(by_row) == {ROWS[2]} and by_row[ROWS[2]]["f:dep"] == 20.0


def test_a_time_range_read_takes_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wide read with a time range is not patched (a range can hide a newest value and
    show an older one, R7.3): no pivot is made, and the read equals the twin's."""
    seen = spy(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        update = [(ROWS[1], "f", b"dep", 20, PUT, struct.pack(">d", -1.0))]
        for t in (cells, auto):
            load(t, update)
            load(t, [(ROWS[2], "g", b"", 30, DF, b"")])
        opts: dict[str, Any] = {"shape": "wide", "column_types": "table", "time_range": (5, 15)}
        got = outcome(auto, opts)
        assert got == outcome(cells, opts)
    assert not seen["pivot"]
    by_row = {r["row"]: r for r in got[1]}
    # the newer Put lies outside the range (the base's shows); a marker newer than the
    # range still deletes (R7.3)
    assert by_row[ROWS[1]]["f:dep"] == 1.0 and by_row[ROWS[2]]["g:dep"] is None


def test_delta_files_are_read_with_only_the_columns_the_patch_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A delta of Puts only is read without its ``type`` column, one of markers only
    without ``qualifier`` and ``value`` (by the manifest's marker counts); a delta
    holding both is read whole. The reads equal the twin's."""
    asked: list[tuple[str, ...]] = []
    real = fast._cells_of

    def cells_of(*a: Any, **k: Any) -> Any:
        if k.get("columns") is not None:
            asked.extend(tuple(k["columns"](e)) for e in a[3])
        return real(*a, **k)

    monkeypatch.setattr(fast, "_cells_of", cells_of)
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        puts = [(ROWS[1], "f", b"dep", 20, PUT, struct.pack(">d", -1.0))]
        markers = [(ROWS[2], "f", b"", 30, DF, b"")]
        both = [(ROWS[3], "f", b"dep", 40, PUT, struct.pack(">d", -3.0))]
        both += [(ROWS[4], "f", b"", 40, DF, b"")]
        for t in (cells, auto):
            for cells_of_load in (puts, markers, both):
                load(t, cells_of_load)
        got = assert_twins(cells, auto)
    assert set(asked) == {
        ("row", "qualifier", "ts", "value"),
        ("row", "ts", "type"),
        ("row", "qualifier", "ts", "type", "value"),
    }
    by_row = {r["row"]: r for r in got}
    assert by_row[ROWS[1]]["f:dep"] == -1.0 and by_row[ROWS[3]]["f:dep"] == -3.0
    assert by_row[ROWS[2]]["f:dep"] is None and by_row[ROWS[4]]["f:tail"] is None


def test_a_rewrite_of_equal_text_values_keeps_the_column() -> None:
    """A rewrite whose text values equal the base's (a record put again) leaves the text
    column as the base's, cut to the kept rows; a changed one in the same rewrite shows.
    Equal to the twin either way."""
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        same = [(ROWS[i], "f", b"tail", 20, PUT, value(b"tail", i)) for i in range(1, 9)]
        changed = [(ROWS[9], "g", b"tail", 20, PUT, b"other")]
        gone = [(ROWS[2], fam, b"", 30, DF, b"") for fam in ("f", "g")]
        for t in (cells, auto):
            for cells_of_load in (same + changed, gone):
                load(t, cells_of_load)
        got = assert_twins(cells, auto)
    by_row = {r["row"]: r for r in got}
    assert ROWS[2] not in by_row and by_row[ROWS[3]]["f:tail"] == "N3"
    assert by_row[ROWS[9]]["g:tail"] == "other"


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_gather2_takes_from_either_array_or_gives_null(data: st.DataObject) -> None:
    """``gather2`` equals the reference (a list built value by value) for every type it
    gathers compiled and one it leaves to Arrow, sliced or not, with nulls."""
    kind = data.draw(st.sampled_from(["f64", "i32", "ts", "str", "bin", "bool"]))
    n = data.draw(st.integers(0, 40))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    make = {
        "f64": lambda k: pa.array(rng.normal(size=k), mask=rng.random(k) < 0.2),
        "i32": lambda k: pa.array(rng.integers(-9, 9, k).astype(np.int32)),
        "ts": lambda k: pa.array(rng.integers(0, 10**6, k), pa.timestamp("ms")),
        "str": lambda k: pa.array(
            [("x" * int(j)) for j in rng.integers(0, 4, k)], pa.string(), mask=rng.random(k) < 0.2
        ),
        "bin": lambda k: pa.array([b"y" * int(j) for j in rng.integers(0, 4, k)], pa.binary()),
        "bool": lambda k: pa.array(rng.random(k) < 0.5, pa.bool_()),
    }[kind]
    cut = data.draw(st.integers(0, 3))
    base = make(n + cut).slice(cut)
    new = make(data.draw(st.integers(0, 5)))
    choices = [*range(len(base)), -1, *(-2 - j for j in range(len(new)))]
    index = data.draw(st.lists(st.sampled_from(choices), max_size=30))
    got = gather2(base, new, np.array(index, dtype=np.int64))
    got.validate(full=True)
    vals, more = base.to_pylist(), new.to_pylist()
    want = [vals[i] if i >= 0 else None if i == -1 else more[-2 - i] for i in index]
    assert got.type == base.type and got.to_pylist() == want


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_gather_put_equals_gather2_of_the_written_index(data: st.DataObject) -> None:
    """``gather_put`` (rows of the base, some put from ``new``, some nulled after the
    puts) equals ``gather2`` of the index with those codes written in: numbers with and
    without nulls on either side, sliced arrays, and text (which takes the index path)."""
    t = data.draw(st.sampled_from([pa.int64(), pa.int32(), pa.float64(), pa.string()]))
    n = data.draw(st.integers(1, 20))
    cut = data.draw(st.integers(0, 2))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))

    def arr(size: int, nulls: bool) -> pa.Array:
        nums = rng.integers(-100, 100, size + cut)
        mask = rng.random(size + cut) < 0.3 if nulls else None
        values = [str(v) for v in nums] if t == pa.string() else nums
        return pa.array(values, t, mask=mask).cast(t).slice(cut)

    base = arr(n, data.draw(st.booleans()))
    k = data.draw(st.integers(1, 6))
    new = arr(k, data.draw(st.booleans()))
    index = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=15)))
    slots = data.draw(st.permutations(range(len(index))))
    put = np.array(slots[: len(slots) // 2], dtype=np.int64)
    gone = np.array(data.draw(st.lists(st.sampled_from(slots), max_size=3)), dtype=np.int64)
    src = np.array([data.draw(st.integers(0, k - 1)) for _ in put], dtype=np.int64)
    got = gather_put(base, new, index, put, src, gone)
    full = index.astype(np.int64).copy()
    full[put] = -2 - src
    full[gone] = -1
    got.validate(full=True)
    assert got.equals(gather2(base, new, full))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_gather_numbers_equals_typing_then_gather2(data: st.DataObject) -> None:
    """``gather_numbers`` (a number column patched from the deltas' big-endian bytes)
    equals typing those bytes and ``gather2``; it declines (None) exactly when a value
    it puts has another width or, of floats, is a NaN (whose payload the typed path
    decides). Values no position names are not looked at."""
    fmt, t = data.draw(
        st.sampled_from(
            [
                (">i8", pa.int64()),
                (">i4", pa.int32()),
                (">i2", pa.int16()),
                (">f8", pa.float64()),
                (">f4", pa.float32()),
            ]
        )
    )
    width = t.bit_width // 8
    floats = fmt[1] == "f"
    n = data.draw(st.integers(1, 20))
    cut = data.draw(st.integers(0, 2))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    nums = rng.integers(-100, 100, n + cut).astype(fmt[1:])
    base = pa.array(nums, t, mask=rng.random(n + cut) < 0.2).slice(cut)
    k = data.draw(st.integers(0, 6))
    news = rng.integers(-100, 100, k).astype(fmt)
    if floats and k and data.draw(st.booleans()):
        news[0] = np.nan
    raw_values = [news[i : i + 1].tobytes() for i in range(k)]  # (big-endian, as stored)
    if k and data.draw(st.integers(0, 5)) == 0:
        raw_values[-1] = raw_values[-1][:-1]  # a value of another width
    raw = pa.array(raw_values, pa.binary())
    index = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=15)))
    slots = data.draw(st.permutations(range(len(index))))
    put = [p for p in slots[: len(slots) // 2]] if k else []
    gone = list(slots[len(slots) // 2 :][:2])
    put_src = np.array([data.draw(st.integers(0, k - 1)) for _ in put], dtype=np.int64)
    got = gather_numbers(
        base,
        index,
        np.array(put, dtype=np.int64),
        put_src,
        np.array(gone, dtype=np.int64),
        raw,
        floats=floats,
    )
    used = [raw_values[i] for i in sorted(set(put_src.tolist()))]  # (only these are read)
    odd = any(len(v) != width for v in used)
    nan = floats and any(np.isnan(np.frombuffer(v, fmt)[0]) for v in used if len(v) == width)
    if odd or nan:
        assert got is None
        return
    # (a value no position names may be odd: it stands in the typed copy as a zero)
    fitted = [v if len(v) == width else bytes(width) for v in raw_values]
    typed = pa.array(np.frombuffer(b"".join(fitted), fmt).astype(fmt[1:]), t)
    full = index.astype(np.int64).copy()
    full[np.array(put, dtype=np.int64)] = -2 - put_src
    full[np.array(gone, dtype=np.int64)] = -1
    want = gather2(base, typed, full)
    assert got is not None
    got.validate(full=True)
    assert got.equals(want)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_same_bytes_is_true_only_for_valid_equal_bytes(data: st.DataObject) -> None:
    """``same_bytes`` (the text rewrite check) equals the reference: every base value at
    ``at`` valid and equal, byte for byte, to the raw value at ``src``; sliced arrays,
    nulls, empty values and values that are prefixes of each other included."""
    words = st.binary(max_size=3)
    kind = data.draw(st.sampled_from([pa.string(), pa.binary()]))
    values = data.draw(
        st.lists(
            st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b"])), min_size=1, max_size=12
        )
    )
    cut = data.draw(st.integers(0, 2))
    base = pa.array(["z"] * cut + values, pa.string()).cast(kind).slice(cut)
    raw = pa.array(
        data.draw(
            st.lists(st.one_of(words, st.sampled_from([b"a", b"ab"])), min_size=1, max_size=8)
        ),
        pa.binary(),
    )
    pairs = data.draw(
        st.lists(
            st.tuples(st.integers(0, len(base) - 1), st.integers(0, len(raw) - 1)), max_size=10
        )
    )
    at = np.array([a for a, _ in pairs], dtype=np.int64)
    src = np.array([b for _, b in pairs], dtype=np.int64)
    got = same_bytes(base, at, raw, src)
    old = base.cast(pa.binary()).to_pylist()
    new = raw.to_pylist()
    assert got == all(old[a] is not None and old[a] == new[b] for a, b in pairs)


def test_deltas_are_written_in_small_row_groups() -> None:
    """A later load into an ``auto`` family's region that holds column files writes its
    cell file (a delta) in row groups of DELTA_ROW_GROUP_CELLS, so that a key-range read
    decodes little of it; a ``cells`` family keeps the load's row-group size."""
    from cellstore.storefiles import StoreFileReader
    from cellstore.storefiles.rolling import DELTA_ROW_GROUP_CELLS

    quals = (b"dep", b"new", b"tail")
    n = len(quals) * N  # cells of the delta: two row groups
    assert DELTA_ROW_GROUP_CELLS < n <= 2 * DELTA_ROW_GROUP_CELLS
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        rows = [(row, "f", q, 20, PUT, value(q, i)) for i, row in enumerate(ROWS) for q in quals]
        groups = {}
        for t in (cells, auto):
            load(t, rows)
            t = t.refresh()
            newest = max((e for e in t.files if e.family == "f"), key=lambda e: e.seq)
            assert newest.layout == "cells" and newest.cells == n
            with StoreFileReader(t.fs, t.file_path(newest), entry=newest) as reader:
                groups[t.name.qualifier] = reader.info.row_groups
        assert_twins(cells, auto)
    assert groups == {"cells": 1, "auto": 2}


def test_a_nan_payload_patched_in_keeps_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A newer Put of a double column whose bytes are a NaN with a payload: the patch
    keeps the column's values as bytes (a decoded NaN would not give them back), so a
    read as bytes shows them exactly, as the twin does (R1: values are bytes)."""
    seen = spy(monkeypatch)
    nan = b"\x7f\xf8\x00\x00\x00\x00\x00\x01"
    with tempfile.TemporaryDirectory() as root:
        cells, auto = twins(root)
        for t in (cells, auto):
            load(t, [(ROWS[1], "f", b"dep", 20, PUT, nan)])
        opts: dict[str, Any] = {"shape": "wide", "column_types": {"f:dep": "bytes"}}
        got = outcome(auto, opts)
        assert got == outcome(cells, opts)
    assert seen["decide"] and all(seen["decide"])
    by_row = {r["row"]: r["f:dep"] for r in got[1]}
    assert by_row[ROWS[1]] == nan and by_row[ROWS[2]] == struct.pack(">d", 2.0)

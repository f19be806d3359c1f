"""Cell deltas merged into column files by row (reader/rowmerge.py, docs/format.md 14.4).

A ``layout="auto"`` table's first load writes column files; later loads write cell files
(deltas). A wide read merges the deltas' Puts, DeleteColumns and DeleteFamilies into the
records by row, without expanding records into cells; any other marker, or a time
range, takes the general path. Either way the result must be exactly what a
``layout="cells"`` twin gives (R3.3 ties by sequence id, R5.1/R5.5 masking by timestamp
whatever the write order (R5.8), R8.1 TTL, R11 columns).
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.core.cells import CellType
from cellstore.core.columnar import AUTO_MIN_ROWS
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.reader import rowmerge
from cellstore.reader.columnar import fast, merge
from test_column_layout import cell_table as table

PUT = int(CellType.PUT)
DC = int(CellType.DELETE_COLUMN)
DF = int(CellType.DELETE_FAMILY)
D = int(CellType.DELETE)
DFV = int(CellType.DELETE_FAMILY_VERSION)
BASE_ROWS = AUTO_MIN_ROWS  # the smallest region-family ``auto`` writes as columns
QUALS = [b"l", b"s", b"x"]
TYPES = {"f:l": "long", "f:s": "string"}
TOUCHABLE = [f"r{i:05d}".encode() for i in range(6)] + [b"r99999", b"a-new-first-row"]


def base_cells(ts: int) -> pa.Table:
    rows = [f"r{i:05d}".encode() for i in range(BASE_ROWS)]
    cells = []
    for i, row in enumerate(rows):
        cells.append((row, b"l", struct.pack(">q", i)))
        cells.append((row, b"s", b"s%d" % i))
        if i % 3:
            cells.append((row, b"x", b"x"))
    return table([(r, "f", q, ts, PUT, v) for r, q, v in cells])


@st.composite
def delta(draw: st.DrawFn, kinds: list[int]) -> list[tuple[bytes, str, bytes, int, int, bytes]]:
    keys = draw(
        st.lists(
            st.tuples(
                st.sampled_from(TOUCHABLE),
                st.sampled_from([*QUALS, b"new"]),
                st.integers(0, 12),
                st.sampled_from(kinds),
            ),
            min_size=1,
            max_size=10,
            unique_by=lambda k: (k[0], b"" if k[3] in (DF, DFV) else k[1], k[2], k[3]),
        )
    )
    out = []
    for row, q, ts, kind in keys:
        if kind in (DF, DFV):
            q = b""
        value = b""
        if kind == PUT:
            value = draw(st.sampled_from([struct.pack(">q", 7), b"short", b"v"]))
        out.append((row, "f", q, ts, kind, value))
    return out


def spy_answers(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[bool]:
    """Record, for each call of ``owner.name``, whether it answered (not None)."""
    answered: list[bool] = []
    real = getattr(owner, name)

    def spy(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        answered.append(out is not None)
        return out

    monkeypatch.setattr(owner, name, spy)
    return answered


def spy_merges(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, for each call of the merge by row, whether it answered (not None)."""
    return spy_answers(monkeypatch, merge, "merge_by_row")


def spy_patches(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, for each family whose deltas were pivoted to be patched, whether the
    patch was made (not None: every delta row is the base's)."""
    return spy_answers(monkeypatch, fast, "decide")


@settings(
    max_examples=int(os.environ.get("DELTA_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
@pytest.mark.parametrize("layout", ["auto", "columns"])
def test_deltas_merged_by_row_read_like_the_cells_twin(
    layout: str, data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random deltas (1-2 later loads) over a column-file base: every wide read of the
    ``auto`` or ``columns`` table equals the cells twin's, and the merge by row answers
    when it may. Under ``auto`` the later loads are cell files; under ``columns`` their
    newest Puts are column files that overlap the base (column deltas), the rest cells."""
    kinds = data.draw(st.sampled_from([[PUT, DC, DF], [PUT, PUT, DC, DF], [PUT, DC, DF, D, DFV]]))
    fam = Family(
        name="f",
        max_versions=data.draw(st.integers(1, 3)),
        ttl=data.draw(st.sampled_from([None, 5])),
        keep_deleted_cells=data.draw(st.sampled_from(list(KeepDeletedCells))),
    )
    base_ts = data.draw(st.sampled_from([3, 6]))
    now_ms = data.draw(st.integers(0, 16)) + (5000 if fam.ttl else 0)
    loads = [data.draw(delta(kinds)) for _ in range(data.draw(st.integers(1, 2)))]
    merged = spy_merges(monkeypatch)
    patched = spy_patches(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        wh = cellstore.connect(root)
        props = {"mapping.codecs": json.dumps({"columns": TYPES})}
        cells = wh.create_table("cells", families=[fam.replace(layout="cells")], properties=props)
        auto = wh.create_table("auto", families=[fam.replace(layout=layout)], properties=props)
        for t in (cells, auto):
            t.load_cells(base_cells(base_ts))
            for cells_of_load in loads:
                t.load_cells(table(sorted(cells_of_load, key=lambda c: (c[0], c[2], -c[3], -c[4]))))
        layouts = [e.layout for e in auto.refresh().files]
        # deltas over the base (a later load's column file of rows apart from the base's
        # is a base file too: then no delta is merged nor patched)
        _, later = merge.split_bases(list(auto.refresh().files))
        with_puts = sum(any(c[4] == PUT for c in cells_of_load) for cells_of_load in loads)
        if layout == "auto":
            assert layouts.count("columns") == 1 and "cells" in layouts
        else:  # a load's Puts are columns where the codec gives their bytes back
            assert 1 <= layouts.count("columns") <= 1 + with_puts
        for opts in (
            {"shape": "wide"},
            {"shape": "wide", "column_types": TYPES, "decode_errors": "null"},
            {"shape": "wide", "columns": ["f:l", "f:new"], "reversed": True},
            {"shape": "wide", "columns": ["f:x"]},
            {"shape": "wide", "time_range": (4, 9)},
        ):
            want = cells.refresh().scan(now_ms=now_ms, **opts).to_arrow()
            got = auto.refresh().scan(now_ms=now_ms, **opts).to_arrow()
            assert got.column_names == want.column_names
            assert got.to_pylist() == want.to_pylist(), opts
    if D not in kinds:
        # Puts, DeleteColumns, DeleteFamilies: merged by row, or (deltas newer than the
        # base, no DeleteColumn) patched into it (tests/test_column_patch.py)
        # (a patch declines a delta row the base lacks: the merge by row then answers)
        assert all(merged) and (merged or (patched and all(patched)) or not later)


def test_a_later_column_file_apart_from_the_base_is_base_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``layout="columns"``, a later load of a row outside the base's row range
    writes a column file that overlaps no base file: it is a base file too (no delta is
    merged nor patched), and every read equals the cells twin's. (Hypothesis found this
    case: the twin test's check that a delta path answered must not ask it of a load
    that made no delta.)"""
    merged = spy_merges(monkeypatch)
    patched = spy_patches(monkeypatch)
    with tempfile.TemporaryDirectory() as root:
        wh = cellstore.connect(root)
        props = {"mapping.codecs": json.dumps({"columns": TYPES})}
        fam = Family(name="f", max_versions=1)
        twins = [
            wh.create_table(name, families=[fam.replace(layout=name)], properties=props)
            for name in ("cells", "columns")
        ]
        for t in twins:
            t.load_cells(base_cells(3))
            t.load_cells(table([(b"r99999", "f", b"l", 0, PUT, struct.pack(">q", 7))]))
        entries = list(twins[1].refresh().files)
        bases, later = merge.split_bases(entries)
        assert [e.layout for e in entries] == ["columns", "columns"]
        assert len(bases) == 2 and not later
        for opts in ({"shape": "wide"}, {"shape": "wide", "column_types": TYPES}):
            want = twins[0].refresh().scan(**opts).to_arrow()
            got = twins[1].refresh().scan(**opts).to_arrow()
            assert got.to_pylist() == want.to_pylist()
            assert got.num_rows == BASE_ROWS + 1
    assert merged == [] and patched == []


def test_merge_by_row_declines_version_markers() -> None:
    """A Delete or DeleteFamilyVersion can uncover a version the records do not hold: the
    merge declines and the caller resolves by the general rules."""
    base = rowmerge.BaseColumns(
        rows=pa.array([b"a"], pa.binary()),
        seq=np.array([1]),
        values={b"q": (pa.array([b"v"], pa.binary()), rowmerge.Codec.BYTES)},
        stamps={b"q": np.array([5])},
        present=np.array([True]),
    )
    for kind in (D, DFV):
        run = table([(b"a", "f", b"q" if kind == D else b"", 5, kind, b"")])
        assert rowmerge.merge_by_row(base, [run], [2], qualifiers=None, oldest=None) is None
    run = table([(b"a", "f", b"q", 5, DC, b"")])
    out = rowmerge.merge_by_row(base, [run], [2], qualifiers=None, oldest=None)
    assert out is not None and out.values[b"q"][0].to_pylist() == [None]
    assert out.present.tolist() == [False]


@pytest.mark.parametrize("layout", ["auto", "columns"])
def test_delete_family_and_update_in_one_region(
    layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An update load, then DeleteFamily markers, then a late Put, in one region: the merge
    by row answers and gives each rule's result. R3.3: an equal key in a newer load wins.
    R5.1: a DeleteFamily hides the row's Puts at or below its timestamp, base and delta
    alike, and not a newer Put. R5.8: a Put written after a DeleteFamily with an older
    timestamp stays hidden. Under ``columns`` the update is a column delta, merged as
    typed records (not expanded to cells)."""
    merged: list[bool] = []
    records: list[int] = []
    real = rowmerge.merge_by_row

    def spy(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        merged.append(out is not None)
        records.append(len(kw.get("records", ())))
        return out

    monkeypatch.setattr("cellstore.reader.columnar.merge.merge_by_row", spy)
    update = [
        (b"r00001", "f", b"l", 20, PUT, struct.pack(">q", 100)),
        (b"r00002", "f", b"l", 20, PUT, struct.pack(">q", 200)),
        (b"r00003", "f", b"s", 20, PUT, b"new3"),
        (b"r00005", "f", b"l", 10, PUT, struct.pack(">q", 500)),  # the base's key (R3.3)
    ]
    markers = [
        (b"r00001", "f", b"", 25, DF, b""),  # above the update (R5.1)
        (b"r00002", "f", b"", 15, DF, b""),  # between base and update (R5.1)
        (b"r00004", "f", b"", 30, DF, b""),
        (b"r00006", "f", b"", 15, DF, b""),
    ]
    late = [(b"r00006", "f", b"l", 12, PUT, struct.pack(">q", 600))]  # R5.8
    with tempfile.TemporaryDirectory() as root:
        wh = cellstore.connect(root)
        props = {"mapping.codecs": json.dumps({"columns": TYPES})}
        fam = Family(name="f", layout=layout)
        twin = wh.create_table("cells", families=[fam.replace(layout="cells")], properties=props)
        t = wh.create_table("t", families=[fam], properties=props)
        for tab in (twin, t):
            tab.load_cells(base_cells(10))
            for cells_of_load in (update, markers, late):
                tab.load_cells(table(cells_of_load))
        layouts = [e.layout for e in t.refresh().files]
        assert layouts.count("columns") == (1 if layout == "auto" else 3)
        opts: dict[str, Any] = {"shape": "wide", "columns": ["f:l", "f:s"], "column_types": TYPES}
        got = t.refresh().scan(**opts).to_arrow()
        assert got.to_pylist() == twin.refresh().scan(**opts).to_arrow().to_pylist()
    assert merged and all(merged)
    assert records == ([0] if layout == "auto" else [2])  # the update and the late Put
    by_row = {r["row"]: (r["f:l"], r["f:s"]) for r in got.to_pylist()}
    assert len(by_row) == BASE_ROWS - 3
    assert b"r00001" not in by_row and b"r00004" not in by_row and b"r00006" not in by_row
    assert by_row[b"r00000"] == (0, "s0")
    assert by_row[b"r00002"] == (200, None)
    assert by_row[b"r00003"] == (3, "new3")
    assert by_row[b"r00005"] == (500, "s5")
    assert by_row[b"r00007"] == (7, "s7")


@pytest.mark.parametrize("layout", ["auto", "columns"])
def test_two_families_deleted_apart(layout: str) -> None:
    """Two families of the same rows, each with its own deltas: a DeleteFamily in one
    family hides only that family's cells (R5.1 is per family), so the row stays while
    the other family shows a value; the families' kept rows differ and are joined."""
    base = base_cells(10)
    both = pa.concat_tables([base, base.set_column(1, "family", pa.array(["g"] * len(base)))])
    update = [
        (b"r00001", "g", b"l", 20, PUT, struct.pack(">q", 100)),
        (b"r00002", "f", b"l", 20, PUT, struct.pack(">q", 200)),
    ]
    markers = [
        (b"r00001", "f", b"", 30, DF, b""),  # f gone, g stays
        (b"r00002", "g", b"", 30, DF, b""),  # g gone, f's update stays
        (b"r00003", "f", b"", 30, DF, b""),
        (b"r00003", "g", b"", 30, DF, b""),  # the whole row gone
    ]
    types = {**TYPES, "g:l": "long", "g:s": "string"}
    with tempfile.TemporaryDirectory() as root:
        wh = cellstore.connect(root)
        props = {"mapping.codecs": json.dumps({"columns": types})}
        fams = [Family(name="f", layout=layout), Family(name="g", layout=layout)]
        twin = wh.create_table(
            "cells", families=[f.replace(layout="cells") for f in fams], properties=props
        )
        t = wh.create_table("t", families=fams, properties=props)
        for tab in (twin, t):
            tab.load_cells(both)
            for cells_of_load in (update, markers):
                tab.load_cells(table(sorted(cells_of_load)))
        opts: dict[str, Any] = {"shape": "wide", "column_types": types}
        got = t.refresh().scan(**opts).to_arrow()
        assert got.to_pylist() == twin.refresh().scan(**opts).to_arrow().to_pylist()
    by_row = {r["row"]: r for r in got.to_pylist()}
    assert len(by_row) == BASE_ROWS - 1 and b"r00003" not in by_row
    assert (by_row[b"r00001"]["f:l"], by_row[b"r00001"]["g:l"]) == (None, 100)
    assert (by_row[b"r00002"]["f:l"], by_row[b"r00002"]["g:l"]) == (200, None)


def test_column_delta_typed_unlike_the_base_takes_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A column delta whose file types a column unlike the base (the mapping's codec
    changed between loads) is not merged by row: the merge declines and the rows it
    touches are resolved by the general rules, exactly as the cells twin reads them."""
    merged = spy_merges(monkeypatch)
    update = [(b"r00001", "f", b"l", 20, PUT, b"now a string")]
    with tempfile.TemporaryDirectory() as root:
        wh = cellstore.connect(root)
        props = {"mapping.codecs": json.dumps({"columns": TYPES})}
        fam = Family(name="f", layout="columns")
        twin = wh.create_table("cells", families=[fam.replace(layout="cells")], properties=props)
        t = wh.create_table("t", families=[fam], properties=props)
        changed = {"mapping.codecs": json.dumps({"columns": {**TYPES, "f:l": "string"}})}
        for tab in (twin, t):
            tab.load_cells(base_cells(10))
            wh.alter_table(tab.name, properties=changed)
            tab.refresh().load_cells(table(update))
        assert [e.layout for e in t.refresh().files].count("columns") == 2
        for opts in ({"shape": "wide"}, {"shape": "wide", "columns": ["f:l"]}):
            got = t.refresh().scan(**opts).to_arrow()
            assert got.to_pylist() == twin.refresh().scan(**opts).to_arrow().to_pylist()
    assert merged and not any(merged)
    by_row = {r["row"]: r["f:l"] for r in got.to_pylist()}
    assert by_row[b"r00001"] == b"now a string"


def test_one_stamp_column_deltas_read_without_their_timestamps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A column delta whose values share one timestamp (its entry's smallest and largest
    agree: a load stamps its cells alike) is patched in without reading its timestamp
    columns, and reads like the cells twin. R3.3: two such deltas of one timestamp, the
    later load's value wins; an older stamp loses to the base's newer one nowhere (every
    delta is newer than the base here); R8.1: under a TTL, a delta value expired by its
    one timestamp shows nothing, and neither does the older base value it replaced."""
    from cellstore.storefiles.reader import StoreFileReader

    asked: list[list[str]] = []
    real = StoreFileReader.read_records

    def spy(self: StoreFileReader, groups: Any, **kw: Any) -> pa.Table:
        if self.info.columns and self.info.rows < BASE_ROWS:  # (a delta's records)
            asked.append(list(kw.get("columns") or []))
        return real(self, groups, **kw)

    monkeypatch.setattr(StoreFileReader, "read_records", spy)
    patched = spy_patches(monkeypatch)
    first = [
        (b"r00001", "f", b"l", 20, PUT, struct.pack(">q", 100)),
        (b"r00001", "f", b"s", 20, PUT, b"first"),
        (b"r00002", "f", b"l", 20, PUT, struct.pack(">q", 200)),
    ]
    second = [  # the same timestamp: the later load wins (R3.3)
        (b"r00001", "f", b"s", 20, PUT, b"second"),
        (b"r00003", "f", b"l", 20, PUT, struct.pack(">q", 300)),
    ]
    with tempfile.TemporaryDirectory() as root:
        wh = cellstore.connect(root)
        props = {"mapping.codecs": json.dumps({"columns": TYPES})}
        for ttl in (None, 5):
            fam = Family(name="f", layout="columns", ttl=ttl)
            twin = wh.create_table(
                f"cells{ttl}", families=[fam.replace(layout="cells")], properties=props
            )
            t = wh.create_table(f"t{ttl}", families=[fam], properties=props)
            for tab in (twin, t):
                tab.load_cells(base_cells(10))
                for cells_of_load in (first, second):
                    tab.load_cells(table(cells_of_load))
            entries = t.refresh().files
            assert [e.layout for e in entries] == ["columns"] * 3
            assert all(e.min_ts == e.max_ts for e in entries)  # one stamp each
            opts: dict[str, Any] = {"shape": "wide", "column_types": TYPES}
            for now_ms in (None, 5_015):  # (TTL 5 s: the base expired, the deltas live)
                got = t.refresh().scan(now_ms=now_ms, **opts).to_arrow().to_pylist()
                want = twin.refresh().scan(now_ms=now_ms, **opts).to_arrow().to_pylist()
                assert got == want, (ttl, now_ms)
            by_row = {r["row"]: (r["f:l"], r["f:s"]) for r in got}
            if ttl is None:
                assert by_row[b"r00001"] == (100, "second")
                assert by_row[b"r00002"] == (200, "s2")
                assert by_row[b"r00003"] == (300, "s3")
                assert by_row[b"r00004"] == (4, "s4")
            else:  # only the deltas' values live
                assert by_row == {
                    b"r00001": (100, "second"),
                    b"r00002": (200, None),
                    b"r00003": (300, None),
                }
    assert patched and all(patched)
    assert asked and all(not any(c.startswith("__ts") for c in cols) for cols in asked), asked

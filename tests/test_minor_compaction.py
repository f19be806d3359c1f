"""Minor compaction of chosen store files: ``compact(table, files=[...])`` (R13.2, R13.3, R3.2).

HBase's minor compaction (``Compactor`` with ``ScanType.COMPACT_RETAIN_DELETES``, matched by
``MinorCompactionScanQueryMatcher``) keeps every delete marker (they may mask cells in files
outside the compaction, R13.2; minus redundant ones, R13.7), drops Puts masked by markers of
the compacted files, expired cells (R8) and versions past VERSIONS; a compaction that takes
every file of the store drops deletes (R13.3).

Expectations are independent of the job: the literal model's compaction
(``tests/model.py`` ``compact``) of the chosen files, loaded into a second table in the
same sequence order as the job's output, must read exactly like the compacted table -- raw
scans, time-range reads and normal reads. Normal (non-raw, whole-time) reads must also be
unchanged by the compaction wherever HBase keeps them so: everywhere except where a
version marker (Delete, DeleteFamilyVersion) outside the selection, or any version marker
under KEEP_DELETED_CELLS, uncovers a version the compaction dropped as past VERSIONS (a
consequence of R13.2 with R6.3, shown in ``test_version_marker_outside_uncovers_...``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.errors import InvalidArgumentError
from cellstore.jobs.compact import compact

try:
    import model
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests import model

NOW = 1_000_000
TYPES = {"Put": 4, "Delete": 8, "DeleteFamilyVersion": 10, "DeleteColumn": 12, "DeleteFamily": 14}
VERSION_MARKERS = {"Delete", "DeleteFamilyVersion"}

Spec = tuple[bytes, bytes, int, str]


def cells(specs: list[Spec], family: str = "f") -> pa.Table:
    """(row, qualifier, ts, type) tuples to a load_cells table (values name the cell)."""
    return pa.Table.from_pylist(
        [
            {
                "row": row,
                "family": family,
                "qualifier": qual,
                "ts": ts,
                "type": typ,
                "value": f"{row.decode()}/{qual.decode()}/{ts}".encode() if typ == "Put" else b"",
            }
            for row, qual, ts, typ in specs
        ]
    )


def raw(table: Any) -> list[tuple[Any, ...]]:
    got = table.scan(raw=True, max_versions=1000, now_ms=NOW).to_arrow()
    return [(r["row"], r["qualifier"], r["ts"], r["type"], r["value"]) for r in got.to_pylist()]


def read(table: Any, **options: Any) -> list[tuple[Any, ...]]:
    got = table.scan(now_ms=NOW, **options).to_arrow()
    return [(r["row"], r["qualifier"], r["ts"], r["value"]) for r in got.to_pylist()]


def paths(table: Any) -> list[str]:
    return [f.path for f in table.metadata.files_of(table.regions[0].id, "f")]


@pytest.fixture
def wh(tmp_path: Path) -> Any:
    return cellstore.connect(str(tmp_path / "wh"))


def make(wh: Any, *, name: str = "t", **family: Any) -> Any:
    return wh.create_table(name, families=[Family(name="f", **family)])


# ------------------------------------------------------------------------------ scenarios
def test_minor_compaction_of_chosen_files_keeps_markers(wh: Any) -> None:
    """R13.2: the DeleteColumn stays and still masks the put of the older file outside;
    the put it masks inside the selection is dropped; one commit replaces exactly them."""
    t = make(wh, max_versions=3)
    t.load_cells(cells([(b"r", b"q", 10, "Put")]))  # outside, older
    t.load_cells(cells([(b"r", b"q", 12, "Put"), (b"r", b"z", 1, "Put")]))
    t.load_cells(cells([(b"r", b"q", 12, "DeleteColumn")]))
    t.load_cells(cells([(b"r", b"q", 20, "Put")]))  # outside, newer
    before_raw, before = raw(t), read(t, max_versions=3)
    old, a, b, new = paths(t)
    version = t.version
    report = compact(t, files=[b, a], now_ms=NOW)
    assert report.version == version + 1
    (store,) = report.stores
    assert store["drop-deletes"] is False and store["input-files"] == 2
    assert store["selection"] == {"policy": "files", "files": [a, b]}
    live = paths(t)
    assert live[0] == old and live[-1] == new and len(live) == 3
    assert a not in live and b not in live
    assert read(t, max_versions=3) == before
    after_raw = raw(t)
    assert (b"r", b"q", 12, TYPES["DeleteColumn"], b"") in after_raw
    assert (b"r", b"q", 12, TYPES["Put"], b"r/q/12") not in after_raw  # masked, dropped
    assert (b"r", b"q", 10, TYPES["Put"], b"r/q/10") in after_raw  # outside: untouched
    assert len(after_raw) == len(before_raw) - 1
    (commit,) = [c for c in t.history() if c.version == report.version]
    assert commit.operation == "compact"


def test_selecting_every_file_drops_deletes(wh: Any) -> None:
    """R13.3: a compaction of all the store's files drops deletes, even of chosen files."""
    t = make(wh)
    t.load_cells(cells([(b"r", b"q", 10, "Put")]))
    t.load_cells(cells([(b"r", b"q", 11, "DeleteColumn"), (b"r", b"x", 1, "Put")]))
    report = compact(t, files=paths(t), now_ms=NOW)
    assert report.stores[0]["drop-deletes"] is True
    assert [c[:4] for c in raw(t)] == [(b"r", b"x", 1, 4)]


def test_minor_compaction_drops_versions_and_expired_cells(wh: Any) -> None:
    """R13.2 (MinorCompactionScanQueryMatcher checks versions) and R8: a minor compaction
    drops versions past VERSIONS and expired cells of the chosen files; reads agree."""
    t = make(wh, max_versions=1, ttl=100)  # TTL in seconds: cells older than NOW - 100 s
    old_ts = NOW - 200_000
    t.load_cells(cells([(b"r", b"q", NOW - 5, "Put")]))
    t.load_cells(cells([(b"r", b"q", NOW - 3, "Put"), (b"r", b"e", old_ts, "Put")]))
    t.load_cells(cells([(b"r", b"q", NOW - 1, "Put")]))
    before = read(t)
    _, a, b = paths(t)
    compact(t, files=[a, b], now_ms=NOW)
    assert read(t) == before
    kept = [(c[1], c[2]) for c in raw(t)]
    assert (b"q", NOW - 3) not in kept and (b"e", old_ts) not in kept
    assert (b"q", NOW - 5) in kept and (b"q", NOW - 1) in kept


def test_version_marker_outside_uncovers_a_version_the_compaction_dropped(wh: Any) -> None:
    """HBase-exact, not read-preserving: VERSIONS=1, versions 1 and 2 compacted (2 kept, 1
    dropped as excess, R13.2); a Delete of version 2 in a newer file outside the selection
    then masks 2, and version 1 -- visible before -- is gone (R6.3: compactions can
    change what version-specific deletes uncover). Matches the model."""
    t = make(wh, max_versions=1)
    t.load_cells(cells([(b"r", b"q", 1, "Put")]))
    t.load_cells(cells([(b"r", b"q", 2, "Put")]))
    t.load_cells(cells([(b"r", b"q", 2, "Delete")]))
    assert read(t) == [(b"r", b"q", 1, b"r/q/1")]
    a, b, _ = paths(t)
    compact(t, files=[a, b], now_ms=NOW)
    assert read(t) == []
    merged = model.merge([[model.Cell(b"r", b"q", 1, 4)], [model.Cell(b"r", b"q", 2, 4)]], [1, 2])
    out = model.compact(
        merged,
        drop_deletes=False,
        max_versions=1,
        min_versions=0,
        ttl_seconds=None,
        keep_deleted_cells="FALSE",
        now_ms=NOW,
        time_to_purge_deletes=0,
    )
    assert [(c.ts, c.type) for c in out] == [(2, 4)]


def test_unknown_file_is_named_with_a_suggestion(wh: Any) -> None:
    t = make(wh)
    t.load_cells(cells([(b"r", b"q", 1, "Put")]))
    (path,) = paths(t)
    typo = path[:-9] + "x" + path[-8:]
    with pytest.raises(InvalidArgumentError, match="did you mean") as err:
        compact(t, files=[typo])
    assert typo in str(err.value) and path in str(err.value)
    with pytest.raises(InvalidArgumentError, match="at least one"):
        compact(t, files=[])
    with pytest.raises(InvalidArgumentError, match="major"):
        compact(t, files=[path], major=True)
    with pytest.raises(InvalidArgumentError, match="regions/families"):
        compact(t, files=[path], families=["f"])


def test_selection_that_would_reorder_equal_keys_is_refused(wh: Any) -> None:
    """R3.2: the output takes the newest input's sequence number. Leaving out a middle
    file that shares rows would rank the oldest file's cells above it at equal keys."""
    t = make(wh, max_versions=5)
    t.load_cells(cells([(b"r", b"q", 5, "Put")]))
    t.load_cells(cells([(b"r", b"q", 5, "Put"), (b"s", b"q", 1, "Put")]))
    t.load_cells(cells([(b"x", b"z", 5, "Put")]))  # rows x..x: shares none with file 2
    t.load_cells(cells([(b"x", b"z", 5, "Put")]))
    first, middle, third, fourth = paths(t)
    with pytest.raises(InvalidArgumentError, match=middle):
        compact(t, files=[first, third])
    # A file left out that shares no rows with the older chosen files is no obstacle.
    before = raw(t)
    report = compact(t, files=[middle, fourth], now_ms=NOW)
    assert report.version is not None
    assert raw(t) == before
    assert read(t, max_versions=5)[0] == (b"r", b"q", 5, b"r/q/5")


def test_files_of_several_stores_compact_per_store_in_one_commit(wh: Any) -> None:
    t = wh.create_table("t", families=[Family(name="f"), Family(name="g")], splits=[b"m"])
    for i in range(2):
        t.load_cells(
            pa.concat_tables(
                [
                    cells([(b"a", b"q", i, "Put"), (b"z", b"q", i, "Put")]),
                    cells([(b"a", b"q", i, "Put")], family="g"),
                ]
            )
        )
    left, right = (r.id for r in t.regions)
    chosen = [
        *(f.path for f in t.metadata.files_of(left, "f")),
        *(f.path for f in t.metadata.files_of(left, "g")),
        t.metadata.files_of(right, "f")[0].path,
    ]
    before, version = read(t, max_versions=3), t.version
    report = compact(t, files=chosen, now_ms=NOW)
    assert report.version == version + 1
    assert sorted((s["region"], s["family"], s["input-files"]) for s in report.stores) == [
        (left, "f", 2),
        (left, "g", 2),
        (right, "f", 1),
    ]
    assert read(t, max_versions=3) == before
    assert len(t.metadata.files_of(left, "f")) == 1
    assert len(t.metadata.files_of(right, "f")) == 2


def test_concurrent_load_during_compaction_is_kept(wh: Any) -> None:
    """A load committed while the compaction runs stays live: the commit replaces exactly
    the chosen files (conflict checks of cellstore.commit)."""
    t = make(wh, max_versions=5)
    for ts in range(3):
        t.load_cells(cells([(b"r", b"q", ts, "Put")]))
    other = wh.table("t")
    chosen = paths(t)[:2]

    def load_meanwhile(done: int, total: int) -> None:
        if done == total:
            other.load_cells(cells([(b"r", b"q", 9, "Put")]))

    report = compact(t, files=chosen, now_ms=NOW, progress=load_meanwhile)
    assert report.version is not None and not report.skipped
    assert [c[2] for c in read(t, max_versions=5)] == [9, 2, 1, 0]
    assert len(t.files) == 3


def test_concurrently_replaced_selection_is_skipped(wh: Any) -> None:
    t = make(wh, max_versions=5)
    for ts in range(3):
        t.load_cells(cells([(b"r", b"q", ts, "Put")]))
    other = wh.table("t")
    chosen = paths(t)

    def compact_meanwhile(done: int, total: int) -> None:
        if done == total:
            compact(other, major=True, now_ms=NOW)

    report = compact(t, files=chosen[:2], now_ms=NOW, progress=compact_meanwhile)
    assert report.version is None and len(report.skipped) == 1
    assert [c[2] for c in read(t, max_versions=5)] == [2, 1, 0]


# ------------------------------------------------------------------------ property test
KEYS = st.tuples(
    st.sampled_from([b"a", b"b", b"c"]),
    st.sampled_from([b"", b"x", b"y"]),
    st.integers(1, 6),
    st.sampled_from(list(TYPES)),
).map(lambda k: (k[0], b"" if k[3].startswith("DeleteFamily") else k[1], k[2], k[3]))


def _model_cells(specs: list[Spec]) -> list[model.Cell]:
    unique = {(r, q, ts, TYPES[typ]) for r, q, ts, typ in specs}
    return sorted((model.Cell(*k) for k in unique), key=model.cell_key)


def _spec_of(c: model.Cell) -> Spec:
    return (c.row, c.qualifier, c.ts, {v: k for k, v in TYPES.items()}[c.type])


def _refused(files: list[list[Spec]], chosen: set[int]) -> bool:
    """The rule of R3.2 for one-seq-per-file outputs: a file left out, older than the
    newest chosen one, must share no rows with any chosen file older than it."""
    top = max(chosen)

    def span(i: int) -> tuple[bytes, bytes]:
        rows = [c[0] for c in files[i]]
        return min(rows), max(rows)

    for i in range(top):
        if i in chosen:
            continue
        lo, hi = span(i)
        for j in chosen:
            jlo, jhi = span(j)
            if j < i and not (hi < jlo or jhi < lo):
                return True
    return False


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    files=st.lists(st.lists(KEYS, min_size=1, max_size=6), min_size=2, max_size=4),
    picks=st.sets(st.integers(0, 3), min_size=1),
    max_versions=st.integers(1, 3),
    kdc=st.sampled_from(list(KeepDeletedCells)),
    ttl_s=st.sampled_from([None, None, 1]),
)
def test_minor_compaction_reads_like_the_model(
    files: list[list[Spec]],
    picks: set[int],
    max_versions: int,
    kdc: KeepDeletedCells,
    ttl_s: int | None,
) -> None:
    """Random files, a random selection of them compacted: refused exactly when it would
    reorder equal keys (R3.2); otherwise every read (raw, time range, normal) equals a
    table holding the model's compaction in the output's place, and normal reads are
    unchanged where HBase keeps them so (see the module docstring)."""
    chosen = {min(i, len(files) - 1) for i in picks}
    top = max(chosen)
    # With a TTL of 1 s, timestamps sit at 1001..1006 and "now" expires those below 1003.
    base, now = (0, NOW) if ttl_s is None else (1000, 2003)
    family = {"max_versions": max_versions, "keep_deleted_cells": kdc, "ttl": ttl_s}
    files = [[(r, q, base + ts, typ) for r, q, ts, typ in f] for f in files]
    with tempfile.TemporaryDirectory() as tmp:
        wh = cellstore.connect(str(Path(tmp) / "wh"))
        t = make(wh, **family)
        for f in files:
            t.load_cells(cells(f))
        options: list[dict[str, Any]] = [
            {"max_versions": max_versions},
            {"max_versions": 1},
            {"time_range": (base + 2, base + 5), "max_versions": 3},
            {"raw": True, "max_versions": 1000},
        ]
        before = [_scan(t, now, o) for o in options]
        names = paths(t)
        if _refused(files, chosen):
            with pytest.raises(InvalidArgumentError, match=r"R3\.2"):
                compact(t, files=[names[i] for i in sorted(chosen)], now_ms=now)
            assert [_scan(t, now, o) for o in options] == before
            return
        report = compact(t, files=[names[i] for i in sorted(chosen)], now_ms=now)
        all_files = len(chosen) == len(files)
        assert report.stores[0]["drop-deletes"] is all_files

        # The model's compaction of the chosen files, in the output's place (the newest
        # chosen file's).
        sel = [_model_cells(files[i]) for i in sorted(chosen)]
        merged = model.merge(sel, list(range(len(sel))))
        out = model.compact(
            merged,
            drop_deletes=all_files,
            max_versions=max_versions,
            min_versions=0,
            ttl_seconds=ttl_s,
            keep_deleted_cells=kdc.value,
            now_ms=now,
            time_to_purge_deletes=0,
        )
        left_out = [i for i in range(len(files)) if i not in chosen]
        ref = make(wh, name="ref", **family)
        for f in [
            *(files[i] for i in left_out if i < top),
            [_spec_of(c) for c in out],
            *(files[i] for i in left_out if i > top),
        ]:
            if f:
                ref.load_cells(cells(f))
        after = [_scan(t, now, o) for o in options]
        assert after == [_scan(ref, now, o) for o in options]

        version_markers_outside = any(c[3] in VERSION_MARKERS for i in left_out for c in files[i])
        version_markers = any(c[3] in VERSION_MARKERS for f in files for c in f)
        preserved = not version_markers_outside and (
            kdc is KeepDeletedCells.FALSE or not version_markers
        )
        if preserved:
            assert after[:2] == before[:2]


def _scan(table: Any, now: int, options: dict[str, Any]) -> list[tuple[Any, ...]]:
    got = table.scan(now_ms=now, **options).to_arrow()
    return [(r["row"], r["qualifier"], r["ts"], r["type"], r["value"]) for r in got.to_pylist()]

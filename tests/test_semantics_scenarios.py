"""Named scenarios for core.semantics, one or more per rule of hbase-semantics.md R1-R12.

Each test cites its rule (and the HBase test whose worked example it reproduces, where
there is one). Expected outputs are written by hand from the rules, never computed by the
engine. Timestamps in the HBase tests are relative to a ``ts``; here ``TS = 1000``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa
import pytest

from cellstore.core.cells import CELL_SCHEMA, LATEST_TIMESTAMP, CellType, sort_indices
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.core.semantics import ReadSpec, merge_runs, resolve
from cellstore.errors import InvalidArgumentError
from layouts import LAYOUTS, stored

Cell = tuple[bytes, bytes, int, str, bytes]

ROW = b"r"
TS = 1000
NOW = 10_000


def put(q: bytes, ts: int, value: bytes = b"", *, row: bytes = ROW) -> Cell:
    return (row, q, ts, "Put", value)


def delete(q: bytes, ts: int, *, row: bytes = ROW) -> Cell:
    """``Delete#addColumn(f, q, ts)``: one version (R1.3)."""
    return (row, q, ts, "Delete", b"")


def delete_column(q: bytes, ts: int, *, row: bytes = ROW) -> Cell:
    """``Delete#addColumns(f, q, ts)``: all versions <= ts (R1.3)."""
    return (row, q, ts, "DeleteColumn", b"")


def delete_family(ts: int, *, row: bytes = ROW) -> Cell:
    """``Delete#addFamily(f, ts)`` / ``new Delete(row, ts)``: empty qualifier (R1.3, R1.4)."""
    return (row, b"", ts, "DeleteFamily", b"")


def delete_family_version(ts: int, *, row: bytes = ROW) -> Cell:
    """``Delete#addFamilyVersion(f, ts)``: empty qualifier (R1.3)."""
    return (row, b"", ts, "DeleteFamilyVersion", b"")


#: The store-file layout every scenario's runs are written in (tests/layouts.py): each
#: scenario runs once per layout (the ``layout`` fixture below).
_LAYOUT = ["cells"]


@pytest.fixture(autouse=True, params=LAYOUTS)
def layout(request: pytest.FixtureRequest) -> Iterable[str]:
    """Run the scenario with its store files in each layout (docs/format.md 14)."""
    _LAYOUT[0] = request.param
    yield request.param
    _LAYOUT[0] = "cells"


def run(cells: Iterable[Cell]) -> pa.Table:
    """A store file: the cells in cell order (stable, so duplicates keep their order),
    written in the scenario's layout and read back."""
    table = pa.Table.from_pylist(
        [
            {"row": r, "qualifier": q, "ts": ts, "type": int(CellType.parse(kind)), "value": v}
            for r, q, ts, kind, v in cells
        ],
        schema=CELL_SCHEMA,
    )
    return stored(table.take(sort_indices(table)), _LAYOUT[0])


def read(
    *runs: Sequence[Cell],
    family: Family | None = None,
    seqs: Sequence[int] | None = None,
    now_ms: int = NOW,
    **spec: object,
) -> list[Cell]:
    """Read one family; run i has sequence number i + 1 unless ``seqs`` says otherwise."""
    family = family or Family(name="f", max_versions=3)
    seqs = list(seqs) if seqs is not None else list(range(1, len(runs) + 1))
    merged = merge_runs([run(r) for r in runs], seqs)
    out = resolve(merged, family=family, spec=ReadSpec(now_ms=now_ms, **spec))  # type: ignore[arg-type]
    assert out.schema.equals(CELL_SCHEMA)
    return [
        (d["row"], d["qualifier"], d["ts"], CellType(d["type"]).hbase_name, d["value"])
        for d in out.to_pylist()
    ]


def fam(**settings: object) -> Family:
    return Family(name="f", **settings)  # type: ignore[arg-type]


def values(cells: list[Cell]) -> list[bytes]:
    return [c[4] for c in cells]


# ------------------------------------------------------------------------------------------
# R1: the four delete markers


def test_r1_3_delete_masks_exactly_one_version() -> None:
    cells = [put(b"q", 3, b"v3"), put(b"q", 2, b"v2"), delete(b"q", 2)]
    assert read(cells, max_versions=5) == [put(b"q", 3, b"v3")]


def test_r1_3_delete_column_masks_that_ts_and_older() -> None:
    cells = [put(b"q", 4, b"v4"), put(b"q", 3), put(b"q", 2), delete_column(b"q", 3)]
    assert read(cells, max_versions=5) == [put(b"q", 4, b"v4")]


def test_r1_3_delete_family_masks_every_column_at_or_below() -> None:
    cells = [put(b"a", 5, b"a5"), put(b"a", 4), put(b"b", 4), put(b"", 3), delete_family(4)]
    assert read(cells, max_versions=5) == [put(b"a", 5, b"a5")]


def test_r1_3_delete_family_version_masks_that_ts_in_every_column() -> None:
    cells = [
        put(b"a", 5, b"a5"),
        put(b"a", 4),
        put(b"b", 4),
        put(b"b", 3, b"b3"),
        delete_family_version(4),
    ]
    assert read(cells, max_versions=5) == [put(b"a", 5, b"a5"), put(b"b", 3, b"b3")]


def test_r1_4_whole_row_delete_is_a_delete_family_in_this_family() -> None:
    """TestKeepDeletes#testBasicScenario: ``new Delete(row, ts)`` = DeleteFamily per family."""
    cells = [
        put(b"c0", TS + 4, b"T4"),
        put(b"c0", TS + 2, b"T3"),
        put(b"c0", TS + 1, b"T2"),
        put(b"c0", TS, b"T1"),
        delete_family(TS + 2),
    ]
    assert values(read(cells, max_versions=10)) == [b"T4"]


# ------------------------------------------------------------------------------------------
# R2: sort order


def test_r2_1_results_in_cell_order_unsigned_bytes() -> None:
    """Rows and qualifiers compare as unsigned bytes, a prefix first; empty qualifier first."""
    cells = [
        put(b"\x80", 1, row=b"a"),
        put(b"b", 1, row=b"a"),
        put(b"", 1, row=b"a"),
        put(b"q", 1, row=b"\xff"),
        put(b"q", 1, row=b"a\x00"),
        put(b"q", 1, row=b"b"),
    ]
    assert read(cells) == [
        put(b"", 1, row=b"a"),
        put(b"b", 1, row=b"a"),
        put(b"\x80", 1, row=b"a"),
        put(b"q", 1, row=b"a\x00"),
        put(b"q", 1, row=b"b"),
        put(b"q", 1, row=b"\xff"),
    ]


def test_r2_1_versions_newest_first() -> None:
    cells = [put(b"q", 1, b"1"), put(b"q", 3, b"3"), put(b"q", 2, b"2")]
    assert values(read(cells, max_versions=3)) == [b"3", b"2", b"1"]


def test_r2_2_empty_qualifier_put_newer_than_delete_family_is_visible() -> None:
    """FromClientSideTest3#testScanAfterDeletingSpecifiedRowV2: DeleteFamily@now, then
    puts at now+1 (empty qualifier), now+2 (qual1), now+3 (qual0): all three are returned."""
    now = 5000
    cells = [
        delete_family(now),
        put(b"", now + 1, b"testValue"),
        put(b"qual1", now + 2, b"qual1"),
        put(b"qual0", now + 3, b"qual0"),
    ]
    assert values(read(cells)) == [b"testValue", b"qual0", b"qual1"]


def test_r2_2_family_marker_after_empty_qualifier_versions_still_applies() -> None:
    """The empty-qualifier column holds puts newer than a DeleteFamily; even when the version
    limit is reached before the marker, the marker still masks other columns (HBASE-18471)."""
    cells = [
        put(b"", 20, b"e20"),
        put(b"", 15, b"e15"),
        delete_family(12),
        put(b"a", 13, b"a13"),
        put(b"a", 10, b"a10"),
    ]
    assert values(read(cells, max_versions=1)) == [b"e20", b"a13"]


# ------------------------------------------------------------------------------------------
# R3: equal keys across runs


def test_r3_2_equal_keys_newest_run_wins() -> None:
    """TestStoreScanner#testScanSameTimestamp: same key in two files, the newer one wins."""
    older = [put(b"q", 5, b"old")]
    newer = [put(b"q", 5, b"new")]
    assert values(read(older, newer, seqs=[1, 2])) == [b"new"]
    assert values(read(newer, older, seqs=[2, 1])) == [b"new"]


def test_r3_2_equal_sequence_numbers_later_listed_run_wins() -> None:
    """R3.2: equal sequence ids -> the scanner with the higher order (listed later) first."""
    assert values(read([put(b"q", 5, b"first")], [put(b"q", 5, b"second")], seqs=[7, 7])) == [
        b"second"
    ]


def test_r14_5_unassigned_sequence_id_loses_every_tie() -> None:
    """R14.5/R3.1: a bulk-loaded file without a sequence id (-1) ranks below every file,
    older or newer; its cells that tie nothing are read like any other (R14.6)."""
    existing = [put(b"q", 5, b"existing")]
    bulk = [put(b"q", 5, b"bulk"), put(b"q", 6, b"bulk-6")]
    for runs, seqs in (([existing, bulk], [1, -1]), ([bulk, existing], [-1, 1])):
        assert values(read(*runs, seqs=seqs, max_versions=3)) == [b"bulk-6", b"existing"]
    later = [put(b"q", 5, b"later")]
    assert values(read(bulk, later, seqs=[-1, 2], max_versions=3)) == [b"bulk-6", b"later"]
    # raw reads settle the tie the same way (R3.3)
    assert values(read(existing, bulk, seqs=[1, -1], raw=True, max_versions=3)) == [
        b"bulk-6",
        b"existing",
    ]


def test_r3_3_duplicate_is_not_counted_as_a_version() -> None:
    """FromClientSideTest4#testDuplicateVersions: rewriting a version does not use a slot."""
    first = [put(b"q", 5, b"v5-old"), put(b"q", 4, b"v4"), put(b"q", 3, b"v3")]
    second = [put(b"q", 5, b"v5-new")]
    assert values(read(first, second, max_versions=2)) == [b"v5-new", b"v4"]
    assert values(read(first, second, max_versions=3)) == [b"v5-new", b"v4", b"v3"]


def test_r3_3_within_one_run_first_occurrence_wins() -> None:
    assert values(read([put(b"q", 5, b"first"), put(b"q", 5, b"second")], max_versions=3)) == [
        b"first"
    ]


def test_r3_3_applies_to_raw_reads() -> None:
    older = [put(b"q", 5, b"old"), delete(b"q", 5)]
    newer = [put(b"q", 5, b"new"), delete(b"q", 5)]
    assert read(older, newer, raw=True, max_versions=5) == [delete(b"q", 5), put(b"q", 5, b"new")]


def test_r3_4_sequence_numbers_never_decide_masking() -> None:
    """A newer run's put at ts <= an older run's DeleteColumn is still masked (R5.8)."""
    older = [delete_column(b"q", 20)]
    newer = [put(b"q", 15, b"masked"), put(b"q", 25, b"visible")]
    assert values(read(older, newer, max_versions=3)) == [b"visible"]


# ------------------------------------------------------------------------------------------
# R4: processing order and per-row state


def test_r4_2_masked_and_out_of_range_puts_do_not_use_version_slots() -> None:
    cells = [
        put(b"q", 9, b"9"),
        put(b"q", 8, b"8"),
        put(b"q", 7, b"7"),
        put(b"q", 6, b"6"),
        put(b"q", 5, b"5"),
        delete(b"q", 8),
    ]
    # ts 9 is above the range, 8 is masked: the two slots go to 7 and 6.
    assert values(read(cells, max_versions=2, time_range=(0, 9))) == [b"7", b"6"]


def test_r4_3_delete_state_is_per_row() -> None:
    cells = [
        delete_family(10, row=b"a"),
        put(b"q", 5, b"a5", row=b"a"),
        put(b"q", 5, b"b5", row=b"b"),
    ]
    assert read(cells) == [put(b"q", 5, b"b5", row=b"b")]


def test_r4_4_deleted_row_then_good_row() -> None:
    """TestStoreScanner#testDeletedRowThenGoodRow: a fully deleted row yields no cells."""
    cells = [
        put(b"a", 5, row=b"R1"),
        put(b"b", 5, row=b"R1"),
        delete_family(6, row=b"R1"),
        put(b"a", 5, b"good", row=b"R2"),
    ]
    assert read(cells) == [put(b"a", 5, b"good", row=b"R2")]


# ------------------------------------------------------------------------------------------
# R5: delete markers


def test_r5_1_delete_family_stamp_masks_older_puts() -> None:
    """TestScanDeleteTracker#testDeletedByDeleteFamily / TestStoreScanner#testDeleteFamily."""
    cells = [delete_family(10), put(b"q", 5), put(b"q", 10), put(b"q", 11, b"11")]
    assert values(read(cells, max_versions=3)) == [b"11"]


def test_r5_1_newest_delete_family_sets_the_stamp() -> None:
    cells = [delete_family(5), delete_family(8), put(b"q", 7), put(b"q", 9, b"9")]
    assert values(read(cells, max_versions=3)) == [b"9"]


def test_r5_2_markers_at_or_below_the_family_stamp_change_nothing() -> None:
    cells = [
        delete_family(10),
        delete_column(b"q", 8),
        delete(b"q", 12),
        delete_family_version(9),
        put(b"q", 12),
        put(b"q", 11, b"11"),
        put(b"q", 9),
    ]
    assert values(read(cells, max_versions=3)) == [b"11"]


def test_r5_3_delete_family_version_exact_ts_across_columns() -> None:
    """TestScanDeleteTracker#testDeletedByDeleteFamilyVersion (timestamp 10)."""
    cells = [delete_family_version(10)]
    cells += [put(q, 10) for q in (b"qualifier1", b"qualifier2", b"qualifier3", b"qualifier4")]
    cells += [
        put(b"qualifier1", 13, b"q1@13"),
        put(b"qualifier2", 8, b"q2@8"),
        put(b"qualifier3", 5, b"q3@5"),
        put(b"qualifier4", 18, b"q4@18"),
    ]
    assert values(read(cells, max_versions=3)) == [b"q1@13", b"q2@8", b"q3@5", b"q4@18"]


def test_r5_3_delete_family_version_in_client_test() -> None:
    """FromClientSideTest1#testDeleteFamilyVersion: versions 2 and 4 deleted in all columns."""
    cells = [put(q, ts, b"%s@%d" % (q, ts)) for q in (b"a", b"b") for ts in (1, 2, 3, 4, 5)]
    cells += [delete_family_version(2), delete_family_version(4)]
    assert values(read(cells, max_versions=5)) == [b"a@5", b"a@3", b"a@1", b"b@5", b"b@3", b"b@1"]


def test_r5_4_delete_then_delete_column_of_same_column() -> None:
    """TestScanDeleteTracker#testDeleteDeleteColumn: Delete@10, DeleteColumn@5."""
    cells = [
        delete(b"qualifier", 10),
        delete_column(b"qualifier", 5),
        put(b"qualifier", 10),
        put(b"qualifier", 7, b"7"),
        put(b"qualifier", 5),
        put(b"qualifier", 0),
    ]
    assert values(read(cells, max_versions=3)) == [b"7"]


def test_r5_4_delete_after_delete_column_of_same_column_is_ignored() -> None:
    """R5.4: a Delete arriving after a DeleteColumn of its column is not recorded; the
    DeleteColumn keeps masking everything at or below its ts."""
    cells = [
        delete_column(b"q", 10),
        delete(b"q", 6),
        put(b"q", 11, b"11"),
        put(b"q", 8),
        put(b"q", 6),
        put(b"q", 3),
    ]
    assert values(read(cells, max_versions=5)) == [b"11"]


def test_r5_4_column_marker_of_another_column() -> None:
    """TestScanDeleteTracker#testDeleteColumnDelete: DeleteColumn on 'qualifier' then
    Delete on 'qualifier1' at the same ts: the Delete masks qualifier1@10 only."""
    cells = [
        delete_column(b"qualifier", 10),
        delete(b"qualifier1", 10),
        put(b"qualifier", 10),
        put(b"qualifier1", 10),
        put(b"qualifier1", 9, b"9"),
        put(b"qualifier2", 10, b"other"),
    ]
    assert values(read(cells, max_versions=3)) == [b"9", b"other"]


def test_r5_5_delete_column_leaves_newer_versions() -> None:
    """TestScanDeleteTracker#testDeletedByDeleteColumn: DeleteColumn@10 masks 10 and 5."""
    cells = [delete_column(b"q", 10), put(b"q", 12, b"12"), put(b"q", 10), put(b"q", 5)]
    assert values(read(cells, max_versions=3)) == [b"12"]


def test_r5_6_delete_masks_the_version_in_every_run() -> None:
    """TestStoreScanner#testDeleteVersionMaskingMultiplePuts."""
    first = [put(b"q", 5, b"a"), put(b"q", 4, b"older")]
    second = [put(b"q", 5, b"b"), delete(b"q", 5)]
    assert values(read(first, second, max_versions=3)) == [b"older"]


def test_r5_6_delete_is_cleared_by_an_older_put() -> None:
    """TestScanDeleteTracker#testDeleteKeepVersionZero: Delete@10 does not mask a put@0."""
    assert values(read([delete(b"q", 10), put(b"q", 0, b"zero")])) == [b"zero"]


def test_r5_6_several_version_deletes_in_one_column() -> None:
    cells = [put(b"q", ts, b"%d" % ts) for ts in (1, 2, 3, 4, 5)]
    cells += [delete(b"q", 5), delete(b"q", 3), delete(b"q", 2)]
    assert values(read(cells, max_versions=5)) == [b"4", b"1"]


def test_r5_8_put_written_after_the_delete_stays_masked() -> None:
    """FromClientSideTest1#testDeletes: a re-put at a deleted ts is invisible."""
    earlier = [put(b"q", 6, b"orig"), delete(b"q", 6)]
    later = [put(b"q", 6, b"re-put")]
    assert read(earlier, later) == []


def test_r5_9_future_dated_put_and_marker() -> None:
    """TestHRegion#testDeleteRowWithFutureTs."""
    future = LATEST_TIMESTAMP - 5
    cells = [put(b"q", future, b"future"), delete_family(NOW)]
    assert values(read(cells)) == [b"future"]
    assert read(cells, [delete_family(LATEST_TIMESTAMP - 4)]) == []


def test_r5_10_marker_written_before_its_target() -> None:
    """R5.10: a Delete@5000 written before any version 5000 masks a later Put@5000."""
    assert read([delete(b"q", 5000)], [put(b"q", 5000, b"late")]) == []


def test_r5_11_expired_marker_skipped_when_min_versions_is_zero() -> None:
    """TestStoreScanner#testExpiredDeleteFamily: an expired DeleteFamily hides nothing that
    is not already expired; the fresh put is returned."""
    cells = [delete_family(8000), put(b"q", 9500, b"fresh"), put(b"q", 7000, b"old")]
    assert values(read(cells, family=fam(ttl=1, max_versions=3), max_versions=3)) == [b"fresh"]


def test_r5_11_expired_marker_still_applies_with_min_versions() -> None:
    """With MIN_VERSIONS > 0 an expired put is kept by MIN_VERSIONS but an expired
    DeleteFamily above it still masks it."""
    family = fam(ttl=1, max_versions=3, min_versions=1)
    assert values(read([put(b"q", 7000, b"old")], family=family)) == [b"old"]
    assert read([put(b"q", 7000, b"old"), delete_family(8000)], family=family) == []


# ------------------------------------------------------------------------------------------
# R6: versions


def test_r6_1_default_is_one_version() -> None:
    cells = [put(b"q", 3, b"3"), put(b"q", 2, b"2")]
    assert values(read(cells, family=fam(max_versions=5))) == [b"3"]


def test_r6_1_read_versions_capped_by_family() -> None:
    cells = [put(b"q", ts, b"%d" % ts) for ts in (1, 2, 3, 4)]
    assert values(read(cells, family=fam(max_versions=3), max_versions=10)) == [b"4", b"3", b"2"]
    assert values(read(cells, family=fam(max_versions=3), max_versions=2)) == [b"4", b"3"]


def test_r6_2_versions_are_counted_per_column() -> None:
    cells = [put(q, ts, q + b"%d" % ts) for q in (b"a", b"b") for ts in (1, 2, 3)]
    assert values(read(cells, max_versions=2)) == [b"a3", b"a2", b"b3", b"b2"]


def test_r6_3_deleting_a_version_reveals_an_older_one() -> None:
    """BOOK "Major compactions change query results": VERSIONS=3, versions 0..3 on disk,
    delete 3 -> 2, 1, 0 (TestMinorCompaction#testMinorCompactionWithDeleteColumn2)."""
    cells = [put(b"q", ts, b"%d" % ts) for ts in (0, 1, 2, 3)]
    family = fam(max_versions=3)
    assert values(read(cells, family=family, max_versions=10)) == [b"3", b"2", b"1"]
    cells.append(delete(b"q", 3))
    assert values(read(cells, family=family, max_versions=10)) == [b"2", b"1", b"0"]


def test_r6_3_twelve_versions_on_disk_with_versions_ten() -> None:
    """FromClientSideTest1#testVersions: 12 versions, VERSIONS=10, delete the two newest ->
    the two oldest reappear."""
    cells = [put(b"q", ts, b"%d" % ts) for ts in range(1, 13)]
    family = fam(max_versions=10)
    assert values(read(cells, family=family, max_versions=100)) == [
        b"%d" % ts for ts in range(12, 2, -1)
    ]
    cells += [delete(b"q", 12), delete(b"q", 11)]
    assert values(read(cells, family=family, max_versions=100)) == [
        b"%d" % ts for ts in range(10, 0, -1)
    ]


def test_r6_4_duplicates_do_not_count() -> None:
    older = [put(b"q", 3, b"3-old"), put(b"q", 2, b"2")]
    newer = [put(b"q", 3, b"3-new"), put(b"q", 1, b"1")]
    assert values(read(older, newer, max_versions=3)) == [b"3-new", b"2", b"1"]


def test_r6_5_narrow_time_range_reaches_versions_beyond_the_limit() -> None:
    """FromClientSideTest1#testVersions: getVersionAndVerify(STAMPS[1]) with 12 on disk."""
    cells = [put(b"q", ts, b"%d" % ts) for ts in range(1, 13)]
    assert values(read(cells, family=fam(max_versions=10), time_range=(1, 2))) == [b"1"]


# ------------------------------------------------------------------------------------------
# R7: time ranges


def test_r7_1_min_inclusive_max_exclusive() -> None:
    cells = [put(b"q", ts, b"%d" % ts) for ts in (4, 5, 6, 7)]
    assert values(read(cells, max_versions=3, time_range=(5, 7))) == [b"6", b"5"]
    assert read(cells, max_versions=3, time_range=(5, 5)) == []


def test_r7_1_zero_to_latest_is_all_time() -> None:
    cells = [put(b"q", LATEST_TIMESTAMP, b"max"), put(b"q", 0, b"zero")]
    assert values(read(cells, max_versions=3)) == [b"max", b"zero"]
    assert values(read(cells, max_versions=3, time_range=(0, LATEST_TIMESTAMP))) == [
        b"max",
        b"zero",
    ]
    assert values(read(cells, max_versions=3, time_range=(0, LATEST_TIMESTAMP - 1))) == [b"zero"]


def test_r7_2_time_range_before_version_counting() -> None:
    """TestStoreScanner#testScanTimeRange: a range selects older versions than VERSIONS."""
    cells = [put(b"q", ts, b"%d" % ts) for ts in (1, 2, 3, 4, 5)]
    family = fam(max_versions=2)
    assert values(read(cells, family=family, max_versions=5, time_range=(1, 4))) == [b"3", b"2"]


def test_r7_3_keep_deleted_false_time_travel_cannot_see_deleted_cells() -> None:
    """TestKeepDeletes#testWithoutKeepingDeletes: put@ts, then a Delete of version ts; a
    get with range [0, ts+1) is empty (the marker at ts is inside the range)."""
    family = fam(max_versions=3, keep_deleted_cells=KeepDeletedCells.FALSE)
    cells = [put(b"c0", TS, b"T1")]
    assert values(read(cells, family=family, max_versions=10, time_range=(0, TS + 1))) == [b"T1"]
    cells.append(delete(b"c0", TS))
    assert read(cells, family=family, max_versions=10, time_range=(0, TS + 1)) == []


def test_r7_3_markers_newer_than_the_range_apply_with_keep_deleted_false() -> None:
    cells = [
        put(b"q", 3, b"3"),
        put(b"q", 2, b"2"),
        delete_column(b"q", 10),
        put(b"r", 3, b"r3"),
        delete_family_version(3),
    ]
    family = fam(keep_deleted_cells=KeepDeletedCells.FALSE)
    assert read(cells, family=family, max_versions=3, time_range=(0, 5)) == []
    family = fam(keep_deleted_cells=KeepDeletedCells.TRUE)
    assert values(read(cells, family=family, max_versions=3, time_range=(0, 5))) == [b"2"]


def test_r7_1_family_range_replaces_the_read_wide_range() -> None:
    """R7.1 (UserScanQueryMatcher constructor): a family's matcher takes that family's range
    when the read gives one; the engine reads that family with it as its range, so the
    per-family read equals a plain read with that range and ignores the read-wide one."""
    cells = [put(b"q", ts, b"%d" % ts) for ts in (4, 10, 20)] + [delete_column(b"q", 30)]
    keep = fam(max_versions=3, keep_deleted_cells=KeepDeletedCells.TRUE)
    # the read-wide [15, 25) would return 20; the family's [0, 15) returns 10 and 4 (R7.2),
    # and the DeleteColumn@30 is newer than the family's range: ignored under TRUE (R9.2),
    assert values(read(cells, family=keep, max_versions=3, time_range=(0, 15))) == [b"10", b"4"]
    # applied under FALSE (R7.3)
    assert read(cells, family=fam(max_versions=3), max_versions=3, time_range=(0, 15)) == []


def test_r7_4_get_with_timestamp_does_not_fall_back() -> None:
    """FromClientSideTest4#testJiraTest861: no version at exactly that ts -> empty."""
    cells = [put(b"q", 1, b"1"), put(b"q", 3, b"3")]
    assert read(cells, time_range=(2, 3)) == []
    assert values(read(cells, time_range=(3, 4))) == [b"3"]


# ------------------------------------------------------------------------------------------
# R8: TTL and MIN_VERSIONS


def test_r8_1_ttl_boundary_is_strict() -> None:
    """Expired iff ts < now - ttl*1000: with TTL 1 s and now 10000, ts 9000 is alive."""
    cells = [put(b"a", 9000, b"a9000"), put(b"b", 8999, b"b8999")]
    assert values(read(cells, family=fam(ttl=1))) == [b"a9000"]


def test_r8_1_expiry_uses_the_cell_timestamp() -> None:
    """A backdated put is born expired; a future-dated one outlives its write time."""
    cells = [put(b"back", 100, b"backdated"), put(b"fut", NOW + 50_000, b"future")]
    assert values(read(cells, family=fam(ttl=5))) == [b"future"]


def test_r8_2_ttl_expires_the_newest_version_too() -> None:
    cells = [put(b"q", 5000, b"newest"), put(b"q", 4000)]
    assert read(cells, family=fam(ttl=1, max_versions=3), max_versions=3) == []


def test_r8_3_min_versions_zero_hides_every_expired_cell() -> None:
    cells = [put(b"q", 9500, b"fresh"), put(b"q", 8000), put(b"q", 7000)]
    assert values(read(cells, family=fam(ttl=1, max_versions=5), max_versions=5)) == [b"fresh"]


def test_r8_4_min_versions_base_case() -> None:
    """TestMinVersions#testBaseCase: MIN_VERSIONS 2, VERSIONS 1000, TTL 1 s, four versions
    written 2 s ago (all expired)."""
    ts = NOW - 2000
    family = fam(min_versions=2, max_versions=1000, ttl=1)
    cells = [
        put(b"c0", ts - 3, b"T1"),
        put(b"c0", ts - 2, b"T2"),
        put(b"c0", ts - 1, b"T3"),
        put(b"c0", ts, b"T4"),
    ]
    assert values(read(cells, family=family)) == [b"T4"]
    assert values(read(cells, family=family, time_range=(0, ts + 1))) == [b"T4"]
    # "oldest version still exists": counted inside the range, it is the 1st version.
    assert values(read(cells, family=family, time_range=(0, ts - 2))) == [b"T1"]
    everything = LATEST_TIMESTAMP
    assert values(read(cells, family=family, max_versions=everything)) == [b"T4", b"T3"]
    assert values(
        read(cells, family=family, max_versions=everything, qualifiers=frozenset({b"c0"}))
    ) == [b"T4", b"T3"]


def test_r8_4_min_versions_with_a_duplicate_across_runs() -> None:
    """TestMinVersions#testStoreMemStore: MIN_VERSIONS 3; ts-3 exists in both the store file
    and the memstore; wildcard and explicit reads both return T3, T2, T1."""
    ts = NOW - 2000
    family = fam(min_versions=3, max_versions=1000, ttl=1)
    store_file = [put(b"c0", ts - 1, b"T2"), put(b"c0", ts - 3, b"T0")]
    memstore = [put(b"c0", ts, b"T3"), put(b"c0", ts - 2, b"T1"), put(b"c0", ts - 3, b"T0")]
    many = 1000
    assert values(read(store_file, memstore, family=family, max_versions=many)) == [
        b"T3",
        b"T2",
        b"T1",
    ]
    assert values(
        read(store_file, memstore, family=family, max_versions=many, qualifiers=frozenset({b"c0"}))
    ) == [b"T3", b"T2", b"T1"]


def test_r8_4_min_versions_never_protect_from_deletes() -> None:
    """TestMinVersions#testDelete: MIN_VERSIONS 3, DeleteFamily@ts-1 -> only T3 remains."""
    ts = NOW - 2000
    family = fam(min_versions=3, max_versions=1000, ttl=1)
    cells = [
        put(b"c0", ts - 2, b"T1"),
        put(b"c0", ts - 1, b"T2"),
        put(b"c0", ts, b"T3"),
        delete_family(ts - 1),
    ]
    assert values(read(cells, family=family, max_versions=1000)) == [b"T3"]
    assert values(read(cells, family=family, max_versions=1000, qualifiers=frozenset({b"c0"}))) == [
        b"T3"
    ]


def test_r8_4_min_versions_counted_inside_the_time_range() -> None:
    """TestKeepDeletes#testWithMinVersions (first get): MIN_VERSIONS 3, TTL 1 s,
    KEEP_DELETED_CELLS true; markers at ts-1 lie outside [0, ts-2): T1, T0."""
    ts = NOW - 2000
    family = fam(min_versions=3, max_versions=1000, ttl=1, keep_deleted_cells=KeepDeletedCells.TRUE)
    cells = [
        put(b"c0", ts, b"T3"),
        put(b"c0", ts - 1, b"T2"),
        put(b"c0", ts - 3, b"T1"),
        put(b"c0", ts - 4, b"T0"),
        delete_family(ts - 1),
        delete_column(b"c0", ts - 1),
    ]
    assert values(read(cells, family=family, max_versions=1000, time_range=(0, ts - 2))) == [
        b"T1",
        b"T0",
    ]


def test_r8_4_fresh_versions_then_expired_beyond_min_versions() -> None:
    family = fam(min_versions=1, max_versions=5, ttl=1)
    cells = [put(b"a", 9500, b"fresh"), put(b"a", 8000, b"expired1"), put(b"a", 7000)]
    assert values(read(cells, family=family, max_versions=5)) == [b"fresh"]


def test_r8_5_explicit_columns_return_one_extra_expired_version() -> None:
    """R8.5 (code-derived quirk, ExplicitColumnTracker#checkVersions): m=1, fresh@9500,
    expired@8000: an explicit-column read returns both, a family read only the fresh one."""
    family = fam(min_versions=1, max_versions=5, ttl=1)
    cells = [put(b"a", 9500, b"fresh"), put(b"a", 8000, b"expired1"), put(b"a", 7000, b"expired2")]
    assert values(read(cells, family=family, max_versions=5)) == [b"fresh"]
    assert values(read(cells, family=family, max_versions=5, qualifiers=frozenset({b"a"}))) == [
        b"fresh",
        b"expired1",
    ]


# ------------------------------------------------------------------------------------------
# R9: KEEP_DELETED_CELLS


def test_r9_2_keep_deleted_cells_time_travel() -> None:
    """TestKeepDeletes#testBasicScenario (before the flush): KEEP_DELETED_CELLS true,
    VERSIONS 3; DeleteFamily@ts+2; a get with range [0, ts+2) sees T2, T1; a range that
    includes the marker does not."""
    family = fam(max_versions=3, keep_deleted_cells=KeepDeletedCells.TRUE)
    cells = [
        put(b"c0", TS, b"T1"),
        put(b"c0", TS + 1, b"T2"),
        put(b"c0", TS + 2, b"T3"),
        put(b"c0", TS + 4, b"T4"),
        delete_family(TS + 2),
    ]
    many = 1000
    assert values(read(cells, family=family, max_versions=many, time_range=(0, TS + 2))) == [
        b"T2",
        b"T1",
    ]
    assert read(cells, family=family, max_versions=many, time_range=(0, TS + 4)) == []
    assert values(read(cells, family=family, max_versions=many)) == [b"T4"]


@pytest.mark.parametrize("kdc", [KeepDeletedCells.TRUE, KeepDeletedCells.TTL])
def test_r9_2_ranges(kdc: KeepDeletedCells) -> None:
    """TestKeepDeletes#testRanges, both families (c0, c1), rows T1/T2, columns c0/c1."""
    c0_family = [
        put(q, ts, v, row=row)
        for row in (b"T1", b"T2")
        for q in (b"c0", b"c1")
        for ts, v in ((TS, b"T1"), (TS + 1, b"T2"))
    ]
    c1_family = list(c0_family)
    c0_family += [delete_column(b"c0", TS + 2, row=b"T1"), delete_family(TS + 2, row=b"T2")]
    c1_family += [delete_family(TS + 2, row=b"T1"), delete_family(TS - 10, row=b"T1")]
    family = fam(max_versions=3, keep_deleted_cells=kdc)

    def get(cells: list[Cell], row: bytes, col: bytes, until: int) -> list[bytes]:
        got = read(
            cells,
            family=family,
            max_versions=1000,
            time_range=(0, until),
            qualifiers=frozenset({col}),
        )
        return [c[4] for c in got if c[0] == row]

    for cells in (c0_family, c1_family):  # ts+2 does not include the markers at ts+2
        for row in (b"T1", b"T2"):
            for col in (b"c0", b"c1"):
                assert get(cells, row, col, TS + 2) == [b"T2", b"T1"]
    # ts+3 does
    assert get(c0_family, b"T1", b"c0", TS + 3) == []
    assert get(c0_family, b"T1", b"c1", TS + 3) == [b"T2", b"T1"]
    assert get(c1_family, b"T1", b"c0", TS + 3) == []
    assert get(c1_family, b"T1", b"c1", TS + 3) == []
    assert get(c0_family, b"T2", b"c0", TS + 3) == []
    assert get(c0_family, b"T2", b"c1", TS + 3) == []
    assert get(c1_family, b"T2", b"c0", TS + 3) == [b"T2", b"T1"]
    assert get(c1_family, b"T2", b"c1", TS + 3) == [b"T2", b"T1"]


def test_r9_2_all_time_reads_behave_as_false() -> None:
    cells = [put(b"q", 5, b"5"), put(b"q", 4, b"4"), delete(b"q", 5)]
    for kdc in KeepDeletedCells:
        assert values(read(cells, family=fam(keep_deleted_cells=kdc), max_versions=3)) == [b"4"]


def test_r9_5_ttl_mode_reads_like_true() -> None:
    """TestKeepDeletes#testWithTTL (before the flush): MIN_VERSIONS 1, TTL 1 s,
    KEEP_DELETED_CELLS ttl; a get over [0, ts+1) still sees T3 after DeleteFamily@ts+2."""
    ts = NOW - 2000
    family = fam(min_versions=1, max_versions=1000, ttl=1, keep_deleted_cells=KeepDeletedCells.TTL)
    cells = [put(b"c0", ts, b"T3", row=b"T1"), put(b"c0", ts - 10, b"T1", row=b"T2")]
    get = {"max_versions": 1000, "time_range": (0, ts + 1), "qualifiers": frozenset({b"c0"})}
    assert values(read(cells, family=family, **get)) == [b"T3", b"T1"]
    cells.append(delete_family(ts + 2, row=b"T1"))
    assert values(read(cells, family=family, **get)) == [b"T3", b"T1"]
    # An all-time read applies the marker (R9.2), MIN_VERSIONS does not protect (R8.4).
    assert values(read(cells, family=family, max_versions=1000)) == [b"T1"]


# ------------------------------------------------------------------------------------------
# R10: raw reads


def _raw_scan_cells() -> list[Cell]:
    """TestKeepDeletes#testRawScan, family c0: puts at ts, ts+2, ts+4; DeleteFamily@ts+1;
    Delete c0@ts+2; DeleteColumn c0@ts+3."""
    return [
        put(b"c0", TS, b"T1"),
        put(b"c0", TS + 2, b"T2"),
        put(b"c0", TS + 4, b"T3"),
        delete_family(TS + 1),
        delete(b"c0", TS + 2),
        delete_column(b"c0", TS + 3),
    ]


def test_r10_1_raw_scan_returns_markers_in_cell_order() -> None:
    family = fam(max_versions=3, keep_deleted_cells=KeepDeletedCells.TRUE)
    assert read(_raw_scan_cells(), family=family, raw=True, max_versions=1000) == [
        delete_family(TS + 1),
        put(b"c0", TS + 4, b"T3"),
        delete_column(b"c0", TS + 3),
        delete(b"c0", TS + 2),
        put(b"c0", TS + 2, b"T2"),
        put(b"c0", TS, b"T1"),
    ]


def test_r10_3_raw_scan_honours_the_time_range_for_markers_too() -> None:
    family = fam(max_versions=3, keep_deleted_cells=KeepDeletedCells.TRUE)
    cells = _raw_scan_cells()
    assert read(cells, family=family, raw=True, max_versions=1000, time_range=(0, 1)) == []
    assert read(cells, family=family, raw=True, max_versions=1000, time_range=(0, TS + 2)) == [
        delete_family(TS + 1),
        put(b"c0", TS, b"T1"),
    ]
    assert read(cells, family=family, raw=True, max_versions=1000, time_range=(TS + 3, TS + 5)) == [
        put(b"c0", TS + 4, b"T3"),
        delete_column(b"c0", TS + 3),
    ]


def test_r10_1_raw_scan_without_keep_deleted_cells() -> None:
    """TestKeepDeletes#testRawScanWithoutKeepingDeletes: the put and its Delete."""
    cells = [put(b"c0", TS, b"T1"), delete(b"c0", TS)]
    assert read(cells, raw=True, max_versions=1000) == [delete(b"c0", TS), put(b"c0", TS, b"T1")]


def test_r10_2_raw_versions_are_the_reads_not_the_familys() -> None:
    """FromClientSideTest5#testRawScanRespectsVersions: the raw read's versions, uncapped."""
    cells = [put(b"q", ts, b"%d" % ts) for ts in (1, 2, 3, 4)]
    family = fam(max_versions=1)
    assert values(read(cells, family=family, raw=True)) == [b"4"]
    assert values(read(cells, family=family, raw=True, max_versions=3)) == [b"4", b"3", b"2"]
    assert values(read(cells, family=family, raw=True, max_versions=10)) == [b"4", b"3", b"2", b"1"]


def test_r10_2_raw_markers_are_not_counted_and_cut_after_the_limit() -> None:
    """TestKeepDeletes#testDeleteMarkerVersioning (countDeleteMarkers with VERSIONS 1):
    markers after the 1st put are returned until the 2nd put ends the column."""
    cells = [
        put(b"q", 9, b"9"),
        delete(b"q", 8),
        put(b"q", 7, b"7"),
        delete_column(b"q", 6),
        put(b"q", 5, b"5"),
        delete(b"q", 4),
    ]
    assert read(cells, raw=True, max_versions=1) == [put(b"q", 9, b"9"), delete(b"q", 8)]
    assert read(cells, raw=True, max_versions=2) == [
        put(b"q", 9, b"9"),
        delete(b"q", 8),
        put(b"q", 7, b"7"),
        delete_column(b"q", 6),
    ]


def test_r10_3_raw_scan_ignores_ttl() -> None:
    cells = [put(b"q", 100, b"ancient"), delete_family(50)]
    assert read(cells, family=fam(ttl=1), raw=True) == [
        delete_family(50),
        put(b"q", 100, b"ancient"),
    ]


def test_r10_4_raw_scan_may_not_name_columns() -> None:
    """TestKeepDeletes#testRawScanWithColumns."""
    with pytest.raises(InvalidArgumentError, match="raw"):
        ReadSpec(now_ms=NOW, raw=True, qualifiers=frozenset({b"c0"}))


# ------------------------------------------------------------------------------------------
# R11: column selection


def test_r11_1_explicit_columns_only() -> None:
    cells = [put(b"", 1, b"empty"), put(b"a", 1, b"a"), put(b"b", 1, b"b"), put(b"c", 1, b"c")]
    assert values(read(cells, qualifiers=frozenset({b"a", b"c", b"zz"}))) == [b"a", b"c"]
    assert values(read(cells, qualifiers=frozenset({b""}))) == [b"empty"]


def test_r11_1_no_columns_means_the_whole_family() -> None:
    cells = [put(b"a", 1, b"a"), put(b"b", 1, b"b")]
    assert values(read(cells, qualifiers=frozenset())) == [b"a", b"b"]
    assert values(read(cells)) == [b"a", b"b"]


def test_r11_2_family_markers_apply_to_requested_columns() -> None:
    cells = [
        put(b"a", 5, b"a5"),
        put(b"a", 4, b"a4"),
        put(b"b", 3, b"b3"),
        put(b"b", 2),
        delete_family_version(4),
        delete_family(2),
    ]
    assert values(read(cells, max_versions=3, qualifiers=frozenset({b"a"}))) == [b"a5"]
    assert values(read(cells, max_versions=3, qualifiers=frozenset({b"b"}))) == [b"b3"]


def test_r11_1_explicit_column_versions() -> None:
    cells = [put(b"a", ts, b"%d" % ts) for ts in (1, 2, 3)] + [put(b"b", 1, b"b")]
    assert values(read(cells, max_versions=2, qualifiers=frozenset({b"a", b"b"}))) == [
        b"3",
        b"2",
        b"b",
    ]


# ------------------------------------------------------------------------------------------
# R12.7: per-family limit and offset


def test_r12_7_limit_and_offset_per_row() -> None:
    cells = [put(q, 1, row + q, row=row) for row in (b"r1", b"r2") for q in (b"a", b"b", b"c")]
    assert values(read(cells, max_results_per_family=2)) == [b"r1a", b"r1b", b"r2a", b"r2b"]
    assert values(read(cells, row_offset_per_family=1, max_results_per_family=1)) == [
        b"r1b",
        b"r2b",
    ]
    assert values(read(cells, row_offset_per_family=2)) == [b"r1c", b"r2c"]


def test_r12_7_counts_only_cells_that_passed_every_check() -> None:
    cells = [
        put(b"a", 2, b"a2"),
        put(b"a", 1, b"a1"),
        put(b"b", 1),
        delete(b"b", 1),
        put(b"c", 1, b"c1"),
        put(b"d", 1, b"d1"),
    ]
    assert values(read(cells, max_results_per_family=2)) == [b"a2", b"c1"]


def test_r12_7_raw_reads_count_markers() -> None:
    cells = [delete_family(9), put(b"a", 5, b"a5"), put(b"b", 5, b"b5")]
    assert read(cells, raw=True, max_results_per_family=2) == [
        delete_family(9),
        put(b"a", 5, b"a5"),
    ]


# ------------------------------------------------------------------------------------------
# ReadSpec validation and merge bookkeeping


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_versions": 0},
        {"time_range": (-1, 5)},
        {"time_range": (6, 5)},
        {"max_results_per_family": -1},
        {"row_offset_per_family": -1},
    ],
)
def test_read_spec_rejects_invalid_reads(kwargs: dict[str, object]) -> None:
    """R6.1 (versions > 0), R7.1 (0 <= min <= max)."""
    with pytest.raises(InvalidArgumentError):
        ReadSpec(now_ms=NOW, **kwargs)  # type: ignore[arg-type]


def test_merge_runs_keeps_duplicates_and_orders_by_sequence_number() -> None:
    """R3.2: duplicates are kept by merge_runs (resolve drops them), newest seq first."""
    merged = merge_runs([run([put(b"q", 5, b"old")]), run([put(b"q", 5, b"new")])], [3, 9])
    assert merged.column("value").to_pylist() == [b"new", b"old"]
    assert merged.column("seq").to_pylist() == [9, 3]


def test_merge_runs_of_disjoint_runs_concatenates_in_row_order() -> None:
    a = run([put(b"q", 1, b"a", row=b"a")])
    b = run([put(b"q", 1, b"b", row=b"b")])
    merged = merge_runs([b, a], [1, 2])
    assert merged.column("value").to_pylist() == [b"a", b"b"]
    assert merged.column("seq").to_pylist() == [2, 1]


def test_empty_input() -> None:
    assert merge_runs([], []).num_rows == 0
    assert read([]) == []
    assert read([], raw=True) == []

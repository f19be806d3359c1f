"""HBase's exploring minor-compaction selection (cellstore.jobs.selection).

The cases replay HBase's ``TestDefaultCompactSelection`` (testCompactionRatio,
testOffPeakCompactionRatio, testStuckStoreCompaction) with the settings of its base class
``TestCompactionPolicy``: min files 3, max files 5, min size 10, max size 2100, ratio 1.0,
and 10 blocking store files. Forced-major and reference-file cases are not minor
selections and are left out. A Hypothesis test checks the pure function against a
brute-force reading of the documented algorithm.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellstore.errors import InvalidArgumentError
from cellstore.jobs.selection import PROPERTY_NAMES, SelectionPolicy, select_files

MAX_SIZE = 2100
TEST_POLICY = SelectionPolicy(
    min_files=3, max_files=5, min_size=10, max_size=MAX_SIZE, ratio=1.0, blocking_files=10
)
TOO_BIG = MAX_SIZE + 1


def chosen(sizes: Sequence[int], policy: SelectionPolicy = TEST_POLICY, **kw: bool) -> list[int]:
    sel = select_files(sizes, policy=policy, **kw)
    return [sizes[i] for i in sel.indexes]


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        # default case: preserve user ratio on size
        ((100, 50, 23, 12, 12), [23, 12, 12]),
        # less than compact threshold: don't compact
        ((100, 50, 25, 12, 12), []),
        # greater than compact size: skip those
        ((TOO_BIG, TOO_BIG, 700, 700, 700), [700, 700, 700]),
        # big size + threshold
        ((TOO_BIG, TOO_BIG, 700, 700), []),
        # small files: don't care about ratio
        ((7, 1, 1), [7, 1, 1]),
        # don't exceed max file compact threshold
        ((7, 6, 5, 4, 3, 2, 1), [5, 4, 3, 2, 1]),
        ((50, 10, 10, 10, 10), [10, 10, 10, 10]),
        ((10, 10, 10, 10, 50), [10, 10, 10, 10]),
        ((251, 253, 251, MAX_SIZE - 1), [251, 253, 251]),
        ((MAX_SIZE - 1, MAX_SIZE - 1, MAX_SIZE - 1), []),
        # empty cases
        ((), []),
        ((TOO_BIG, TOO_BIG), []),
    ],
)
def test_default_compact_selection_ratio(sizes: tuple[int, ...], expected: list[int]) -> None:
    """TestDefaultCompactSelection#testCompactionRatio (minor cases)."""
    assert chosen(sizes) == expected


def test_always_compact_something_below_blocking_count() -> None:
    """testCompactionRatio with hbase.hstore.compaction.min.size = 1: a stuck store (10
    files) compacts its smallest run although no run is in ratio."""
    policy = SelectionPolicy(
        min_files=3, max_files=5, min_size=1, max_size=MAX_SIZE, ratio=1.0, blocking_files=10
    )
    sel = select_files((512, 256, 128, 64, 32, 16, 8, 4, 2, 1), policy=policy)
    assert sel.stuck
    assert [(512, 256, 128, 64, 32, 16, 8, 4, 2, 1)[i] for i in sel.indexes] == [4, 2, 1]


def test_off_peak_ratio() -> None:
    """TestDefaultCompactSelection#testOffPeakCompactionRatio (off-peak ratio 5.0)."""
    policy = SelectionPolicy(
        min_files=3,
        max_files=5,
        min_size=10,
        max_size=MAX_SIZE,
        ratio=1.0,
        off_peak_ratio=5.0,
        blocking_files=10,
    )
    assert chosen((999, 50, 12, 12, 1), policy, off_peak=True) == [50, 12, 12, 1]
    assert chosen((999, 50, 12, 12, 1), policy) == [12, 12, 1]


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        # select the smallest compaction if the store is stuck
        ((99, 99, 99, 99, 99, 99, 30, 30, 30, 30), [30, 30, 30]),
        # if not stuck, standard policy applies
        ((99, 99, 99, 99, 99, 30, 30, 30, 30), [99, 30, 30, 30, 30]),
        # add sufficiently small files to compaction, though
        ((99, 99, 99, 99, 99, 99, 30, 30, 30, 15), [30, 30, 30, 15]),
        # prefer earlier compaction to latter if the benefit is not significant
        ((99, 99, 99, 99, 30, 26, 26, 29, 25, 25), [30, 26, 26]),
        # prefer later compaction if the benefit is significant
        ((99, 99, 99, 99, 27, 27, 27, 20, 20, 20), [20, 20, 20]),
    ],
)
def test_stuck_store(sizes: tuple[int, ...], expected: list[int]) -> None:
    """TestDefaultCompactSelection#testStuckStoreCompaction."""
    assert chosen(sizes) == expected


def test_hbase_defaults_and_properties() -> None:
    default = SelectionPolicy()
    assert (default.ratio, default.off_peak_ratio, default.min_files, default.max_files) == (
        1.2,
        5.0,
        3,
        10,
    )
    assert default.max_size is None and default.min_size == 128 << 20
    props = {
        PROPERTY_NAMES["ratio"]: "2.5",
        "hbase.hstore.compactionThreshold": "4",
        PROPERTY_NAMES["max_size"]: "1000",
    }
    policy = SelectionPolicy.from_properties(props, max_files=7, min_size=None)
    assert (policy.ratio, policy.min_files, policy.max_files, policy.max_size) == (
        2.5,
        4,
        7,
        1000,
    )
    # The new name wins over the old one.
    both = {**props, PROPERTY_NAMES["min_files"]: "5"}
    assert SelectionPolicy.from_properties(both).min_files == 5
    with pytest.raises(InvalidArgumentError, match=r"hbase\.hstore\.compaction\.ratio"):
        SelectionPolicy.from_properties({PROPERTY_NAMES["ratio"]: "fast"})
    with pytest.raises(InvalidArgumentError, match="min_files"):
        SelectionPolicy(min_files=5, max_files=4)


def _brute_force(sizes: Sequence[int], policy: SelectionPolicy) -> list[int]:
    """The documented algorithm for an unstuck store, spelled out over all runs."""
    limit = policy.max_size
    skip = 0
    while limit is not None and skip < len(sizes) and sizes[skip] > limit:
        skip += 1
    cands = list(range(skip, len(sizes)))
    runs = []
    for a in range(len(cands)):
        for b in range(a + policy.min_files, min(a + policy.max_files, len(cands)) + 1):
            run = [sizes[i] for i in cands[a:b]]
            total = sum(run)
            if limit is not None and total > limit:
                continue
            ok = all(s <= (total - s) * policy.ratio for s in run)
            if total >= policy.min_size and not ok:
                continue
            # most files, then smallest total, then earliest start
            runs.append((-len(run), total, a, cands[a:b]))
    return min(runs)[3] if runs else []


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), max_size=9),
    ratio=st.sampled_from([0.5, 1.0, 1.2, 5.0]),
    min_files=st.integers(2, 4),
    extra=st.integers(0, 4),
    min_size=st.sampled_from([0, 10, 100]),
    max_size=st.sampled_from([None, 150, 600]),
)
def test_unstuck_selection_is_best_admissible_run(
    sizes: list[int],
    ratio: float,
    min_files: int,
    extra: int,
    min_size: int,
    max_size: int | None,
) -> None:
    policy = SelectionPolicy(
        ratio=ratio,
        min_files=min_files,
        max_files=min_files + extra,
        min_size=min_size,
        max_size=max_size,
        blocking_files=100,
    )
    sel = select_files(sizes, policy=policy)
    assert list(sel.indexes) == _brute_force(sizes, policy)
    assert not sel or policy.min_files <= len(sel) <= policy.max_files

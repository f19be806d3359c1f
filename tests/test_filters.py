"""Scan filters (HBase's SingleColumnValueFilter, ValueFilter, ColumnPrefixFilter,
TimestampsFilter, KeyOnlyFilter), their interplay with versions (R12.8) and the per-family
limit/offset (R12.7). Rule numbers refer to docs/hbase-semantics.md."""

from __future__ import annotations

import struct

import pytest

from cellstore.errors import InvalidArgumentError
from cellstore.filters import (
    ColumnPrefixFilter,
    CompareOp,
    KeyOnlyFilter,
    SingleColumnValueFilter,
    TimestampsFilter,
    ValueFilter,
)
from cellstore.warehouse import connect
from strategies import cells_table

PUT, DELETE, DC = 4, 8, 12


def cells(table):
    return [
        (r["row"], r["family"], r["qualifier"], r["ts"], r["type"], r["value"])
        for r in table.to_pylist()
    ]


def rows(table):
    return sorted({r["row"] for r in table.to_pylist()})


@pytest.fixture
def table(memory_root):
    return connect(memory_root).create_table(
        "t", families=[{"name": "cf", "max_versions": 3}, {"name": "meta", "max_versions": 1}]
    )


def load(t, data):
    t.load_cells(cells_table(data))


# ---------------------------------------------------------------- R12.8 versions window


def test_filter_sees_family_versions_not_read_versions_r12_8(table):
    # FromClientSideTest5#testReadWithFilter: family VERSIONS=3, four versions, the two
    # oldest are "value-a". The oldest (ts 1000) is outside the family's window, so a
    # value-a filter finds ts 2000, with readVersions 3 and with readVersions 1.
    load(
        table,
        [
            (b"row", "cf", b"q", 1000, PUT, b"value-a"),
            (b"row", "cf", b"q", 2000, PUT, b"value-a"),
            (b"row", "cf", b"q", 3000, PUT, b"value-b"),
            (b"row", "cf", b"q", 4000, PUT, b"value-b"),
        ],
    )
    f = ValueFilter("==", "value-a", comparator="substring")
    for versions in (3, 1, None):
        got = cells(table.scan(filter=f, max_versions=versions).to_arrow())
        assert got == [(b"row", "cf", b"q", 2000, PUT, b"value-a")], versions
        got = cells(table.get("row", filter=f, max_versions=versions))
        assert got == [(b"row", "cf", b"q", 2000, PUT, b"value-a")], versions


def test_timestamps_filter_inside_family_window_r12_8(table):
    load(table, [(b"r", "cf", b"q", ts, PUT, b"v%d" % ts) for ts in (1, 2, 3, 4, 5)])
    # Window = 3 newest (5, 4, 3); listed 3 and 1: only 3 is inside the window.
    got = cells(table.scan(filter=TimestampsFilter([1, 3]), max_versions=3).to_arrow())
    assert got == [(b"r", "cf", b"q", 3, PUT, b"v3")]
    # readVersions 1: at most one accepted cell per column, the newest accepted.
    got = cells(table.scan(filter=TimestampsFilter([3, 4]), max_versions=1).to_arrow())
    assert got == [(b"r", "cf", b"q", 4, PUT, b"v4")]
    got = cells(table.scan(filter=TimestampsFilter([3, 4]), max_versions=2).to_arrow())
    assert [c[3] for c in got] == [4, 3]


def test_filter_never_reaches_deleted_or_out_of_range_cells(table):
    load(
        table,
        [
            (b"r", "cf", b"q", 10, PUT, b"a"),
            (b"r", "cf", b"q", 20, PUT, b"a"),
            (b"r", "cf", b"q", 30, PUT, b"b"),
        ],
    )
    load(table, [(b"r", "cf", b"q", 20, DELETE, b"")])  # masks the put at 20 (R5)
    f = ValueFilter("==", b"a")
    assert [c[3] for c in cells(table.scan(filter=f, max_versions=3).to_arrow())] == [10]
    # Time range applies before versions and filters (R7).
    got = cells(table.scan(filter=f, max_versions=3, time_range=(0, 15)).to_arrow())
    assert [c[3] for c in got] == [10]
    assert cells(table.scan(filter=f, time_range=(25, 40)).to_arrow()) == []


# ---------------------------------------------------------------- SingleColumnValueFilter


@pytest.fixture
def people(table):
    load(
        table,
        [
            (b"alice", "cf", b"age", 1, PUT, struct.pack(">q", 30)),
            (b"alice", "cf", b"name", 1, PUT, b"Alice"),
            (b"alice", "meta", b"src", 1, PUT, b"a"),
            (b"bob", "cf", b"age", 1, PUT, struct.pack(">q", 17)),
            (b"bob", "cf", b"age", 2, PUT, struct.pack(">q", 18)),
            (b"bob", "cf", b"name", 1, PUT, b"Bob"),
            (b"carol", "cf", b"name", 1, PUT, b"Carol"),
            (b"carol", "meta", b"src", 1, PUT, b"c"),
        ],
    )
    return table


def test_scvf_keeps_whole_rows_across_families(people):
    f = SingleColumnValueFilter("cf:age", ">=", 18)
    got = people.scan(filter=f).to_arrow()
    # bob's newest age is 18; carol has no age and passes (filter_if_missing=False).
    assert rows(got) == [b"alice", b"bob", b"carol"]
    assert ("meta", b"src") in {(r["family"], r["qualifier"]) for r in got.to_pylist()}
    f = SingleColumnValueFilter("cf:age", ">", 18, filter_if_missing=True)
    assert rows(people.scan(filter=f).to_arrow()) == [b"alice"]


def test_scvf_latest_version_only(people):
    # bob's older age (17) matches < 18, but only the newest version is judged by default.
    f = SingleColumnValueFilter("cf:age", "<", 18, filter_if_missing=True)
    assert rows(people.scan(filter=f).to_arrow()) == []
    f = SingleColumnValueFilter(
        "cf:age", "<", 18, filter_if_missing=True, latest_version_only=False
    )
    assert rows(people.scan(filter=f, max_versions=3).to_arrow()) == [b"bob"]


def test_scvf_binary_comparison_is_unsigned_bytes(people):
    f = SingleColumnValueFilter(
        "cf:name", CompareOp.GREATER_OR_EQUAL, "Bob", filter_if_missing=True
    )
    assert rows(people.scan(filter=f).to_arrow()) == [b"bob", b"carol"]
    f = SingleColumnValueFilter("cf:name", "==", "ar", comparator="substring")
    assert rows(people.scan(filter=f, families="cf").to_arrow()) == [b"carol"]
    f = SingleColumnValueFilter("cf:name", "!=", "^A", comparator="regex", filter_if_missing=True)
    assert rows(people.scan(filter=f).to_arrow()) == [b"bob", b"carol"]


def test_scvf_sees_only_selected_columns(people):
    # As in HBase: if the scan's columns leave the filter's column out, every row is
    # "missing" it.
    f = SingleColumnValueFilter("cf:age", ">", 100)
    assert rows(people.scan(filter=f, columns="cf:name").to_arrow()) == [b"alice", b"bob", b"carol"]
    f = SingleColumnValueFilter("cf:age", ">", 0, filter_if_missing=True)
    assert rows(people.scan(filter=f, columns="cf:name").to_arrow()) == []


def test_scvf_on_deleted_column_counts_as_missing(people):
    load(people, [(b"alice", "cf", b"age", 5, DC, b"")])
    f = SingleColumnValueFilter("cf:age", ">", 0, filter_if_missing=True)
    assert rows(people.scan(filter=f).to_arrow()) == [b"bob"]


def test_scvf_codec_and_undecodable_values(people):
    load(people, [(b"dave", "cf", b"age", 1, PUT, b"not-a-long")])
    f = SingleColumnValueFilter("cf:age", ">", 0, codec="long", filter_if_missing=True)
    assert rows(people.scan(filter=f).to_arrow()) == [b"alice", b"bob"]


# ---------------------------------------------------------------- cell filters


def test_column_prefix_value_and_key_only(people):
    got = cells(people.scan(filter=ColumnPrefixFilter("na")).to_arrow())
    assert {c[2] for c in got} == {b"name"}
    got = cells(people.scan(filter=ValueFilter("==", "Bob")).to_arrow())
    assert got == [(b"bob", "cf", b"name", 1, PUT, b"Bob")]
    got = people.scan(filter=KeyOnlyFilter(), row_prefix="alice").to_arrow()
    assert {r["value"] for r in got.to_pylist()} == {b""}
    assert got.num_rows == 3
    got = people.scan(filter=KeyOnlyFilter(len_as_value=True), columns="cf:name").to_arrow()
    assert [r["value"] for r in got.to_pylist()] == [struct.pack(">i", n) for n in (5, 3, 5)]


def test_filter_list_all_must_pass_in_order(people):
    # The prefix filter runs first, so the value filter never sees cf:age: rows are
    # "missing" it (FilterList MUST_PASS_ALL, each filter sees what the previous passed).
    f = [
        ColumnPrefixFilter("name"),
        SingleColumnValueFilter("cf:age", ">", 0, filter_if_missing=True),
    ]
    assert rows(people.scan(filter=f).to_arrow()) == []
    f = [
        SingleColumnValueFilter("cf:age", ">", 20, filter_if_missing=True),
        ColumnPrefixFilter("name"),
    ]
    assert cells(people.scan(filter=f).to_arrow()) == [(b"alice", "cf", b"name", 1, PUT, b"Alice")]


def test_filters_with_raw_scan(table):
    load(table, [(b"r", "cf", b"q", 1, PUT, b"a"), (b"r", "cf", b"q", 2, PUT, b"b")])
    load(table, [(b"r", "cf", b"q", 2, DELETE, b"")])
    got = cells(table.scan(raw=True, max_versions=10, filter=TimestampsFilter([2])).to_arrow())
    assert [(c[3], c[4]) for c in got] == [(2, DELETE), (2, PUT)]


# ---------------------------------------------------------------- R12.7 limit / offset


def test_per_family_limit_and_offset_r12_7(people):
    got = cells(people.scan(max_results_per_family=1, row_prefix="alice").to_arrow())
    assert [(c[1], c[2]) for c in got] == [("cf", b"age"), ("meta", b"src")]
    got = cells(people.scan(row_offset_per_family=1, row_prefix="alice").to_arrow())
    assert [(c[1], c[2]) for c in got] == [("cf", b"name")]


def test_limit_offset_count_cells_that_passed_the_filter_r12_7(people):
    # Offsets count only cells the filters accepted.
    f = ColumnPrefixFilter("n")
    got = cells(people.scan(filter=f, row_offset_per_family=0, max_results_per_family=1).to_arrow())
    assert [(c[0], c[2]) for c in got] == [
        (b"alice", b"name"),
        (b"bob", b"name"),
        (b"carol", b"name"),
    ]
    assert cells(people.scan(filter=f, row_offset_per_family=1).to_arrow()) == []


# ---------------------------------------------------------------- validation


def test_filter_arguments_are_validated(people):
    with pytest.raises(InvalidArgumentError, match="compare operator"):
        SingleColumnValueFilter("cf:age", "~", 1)
    with pytest.raises(InvalidArgumentError, match="family:qualifier"):
        SingleColumnValueFilter("age", "==", 1)
    with pytest.raises(InvalidArgumentError, match="only == and !="):
        ValueFilter("<", "x", comparator="substring")
    with pytest.raises(InvalidArgumentError, match="not a filter"):
        people.scan(filter="cf:age > 3")
    with pytest.raises(InvalidArgumentError, match="timestamps"):
        TimestampsFilter([-1])


def test_filtered_scan_tasks_pickle(people):
    import pickle

    scan = people.scan(filter=[SingleColumnValueFilter("cf:age", ">", 1), KeyOnlyFilter()])
    tasks = scan.plan()
    assert pickle.loads(pickle.dumps(tasks)) == tasks


# ---------------------------------------------------------------- HBase filter language


def test_parse_filter_language():
    from cellstore.core.filterparse import parse_filter

    (f,) = parse_filter("SingleColumnValueFilter('cf', 'age', >=, 'binary:18', true, false)")
    assert isinstance(f, SingleColumnValueFilter)
    assert (f.family, f.qualifier, f.filter_if_missing, f.latest_version_only) == (
        "cf",
        b"age",
        True,
        False,
    )
    fs = parse_filter("ColumnPrefixFilter('it''s') AND KeyOnlyFilter() AND TimestampsFilter(5, 1)")
    assert fs == (ColumnPrefixFilter("it's"), KeyOnlyFilter(), TimestampsFilter([1, 5]))
    (v,) = parse_filter("ValueFilter(!=, 'regexstring:^a.*')")
    assert v.test.op is CompareOp.NOT_EQUAL and v.test.comparator == "regex"
    for bad, msg in [
        ("PrefixFilter('a')", "not supported"),
        ("KeyOnlyFilter() OR KeyOnlyFilter()", "only AND"),
        ("ValueFilter(=, 'nope:1')", "comparator"),
        ("ColumnPrefixFilter(", "end"),
        ("SingleColumnValueFilter('cf','q',=)", "takes 4 or 6"),
        ("", "empty"),
    ]:
        with pytest.raises(InvalidArgumentError, match=msg):
            parse_filter(bad)


def test_filter_language_through_the_scan(people):
    from cellstore.core.filterparse import parse_filter

    f = parse_filter("SingleColumnValueFilter('cf','name',=,'binaryprefix:B',true,true)")
    assert rows(people.scan(filter=f).to_arrow()) == [b"bob"]
    f = parse_filter("ValueFilter(=,'substring:CAR')")  # SubstringComparator ignores case
    assert cells(people.scan(filter=f).to_arrow()) == [(b"carol", "cf", b"name", 1, PUT, b"Carol")]

"""The read path through the Table API: merging store files of several loads and regions,
row ranges, columns, reversed scans, gets, planning, Dask and S3. Rule numbers refer to
docs/hbase-semantics.md; the semantics engine itself is covered rule by rule in
test_semantics_*.py."""

from __future__ import annotations

import pickle

import pytest

from cellstore.errors import InvalidArgumentError, InvalidFamilyError, InvalidRowRangeError
from cellstore.reader import prefix_stop_row
from cellstore.warehouse import connect
from clusters import process_client
from strategies import cells_table

PUT, DELETE, DFV, DC, DF = 4, 8, 10, 12, 14
NOW = 10_000_000


def cells(table):
    return [
        (r["row"], r["family"], r["qualifier"], r["ts"], r["type"], r["value"])
        for r in table.to_pylist()
    ]


@pytest.fixture
def web(tmp_path):
    t = connect(tmp_path).create_table(
        "web", families=[{"name": "a", "max_versions": 3}, "b"], splits=[b"m"]
    )
    t.load_cells(
        cells_table(
            [
                (b"c", "a", b"q", 1, PUT, b"c1"),
                (b"c", "a", b"q", 2, PUT, b"c2"),
                (b"c", "b", b"x", 1, PUT, b"cbx"),
                (b"c", "a", b"", 1, PUT, b"cempty"),
                (b"r1", "a", b"q", 5, PUT, b"r1"),
                (b"r2", "a", b"q", 5, PUT, b"r2"),
                (b"z\xff", "b", b"y", 3, PUT, b"zz"),
            ]
        )
    )
    return t


def test_result_order_rows_then_families_r2_3(web):
    got = cells(web.scan(max_versions=5).to_arrow())
    assert got == [
        (b"c", "a", b"", 1, PUT, b"cempty"),
        (b"c", "a", b"q", 2, PUT, b"c2"),
        (b"c", "a", b"q", 1, PUT, b"c1"),
        (b"c", "b", b"x", 1, PUT, b"cbx"),
        (b"r1", "a", b"q", 5, PUT, b"r1"),
        (b"r2", "a", b"q", 5, PUT, b"r2"),
        (b"z\xff", "b", b"y", 3, PUT, b"zz"),
    ]


def test_default_one_version_r6_1(web):
    got = cells(web.scan(row_prefix="c", families="a").to_arrow())
    assert got == [(b"c", "a", b"", 1, PUT, b"cempty"), (b"c", "a", b"q", 2, PUT, b"c2")]


def test_newer_load_wins_exact_key_tie_r3_2_r3_3(web):
    web.load_cells(cells_table([(b"c", "a", b"q", 2, PUT, b"newer")]))
    assert cells(web.get("c", columns="a:q"))[0][5] == b"newer"
    raw = cells(web.scan(raw=True, max_versions=10, row_prefix="c", families="a").to_arrow())
    assert [c[5] for c in raw if c[2] == b"q"] == [b"newer", b"c1"]  # the loser is gone


def test_put_after_delete_with_older_ts_stays_hidden_r5_8(web):
    web.load_cells(cells_table([(b"r1", "a", b"q", 10, DC, b"")]))
    web.load_cells(
        cells_table(
            [(b"r1", "a", b"q", 7, PUT, b"late but old"), (b"r1", "a", b"q", 11, PUT, b"newer")]
        )
    )
    assert cells(web.get("r1", max_versions=5)) == [(b"r1", "a", b"q", 11, PUT, b"newer")]


def test_deleted_version_uncovers_older_r6_3(web):
    web.load_cells(
        cells_table([(b"c", "a", b"q", 3, PUT, b"c3"), (b"c", "a", b"q", 4, PUT, b"c4")])
    )
    assert [c[3] for c in cells(web.get("c", columns="a:q", max_versions=3))] == [4, 3, 2]
    web.load_cells(cells_table([(b"c", "a", b"q", 4, DELETE, b"")]))
    assert [c[3] for c in cells(web.get("c", columns="a:q", max_versions=3))] == [3, 2, 1]


def test_delete_family_masks_requested_column_r11_2(web):
    web.load_cells(cells_table([(b"c", "a", b"", 1, DF, b"")]))
    got = cells(web.get("c", columns=["a:q"], max_versions=3))
    assert got == [(b"c", "a", b"q", 2, PUT, b"c2")]  # ts 1 masked, ts 2 survives


def test_row_range_bounds_r12_1(web):
    rows = lambda s: sorted({c[0] for c in cells(s.to_arrow())})  # noqa: E731
    assert rows(web.scan(start_row="c", stop_row="r2")) == [b"c", b"r1"]
    assert rows(web.scan(start_row="d")) == [b"r1", b"r2", b"z\xff"]
    assert rows(web.scan(stop_row="r1")) == [b"c"]
    assert rows(web.scan(start_row="r1", stop_row="r1")) == []
    assert rows(web.scan(start_row="r2", stop_row="r1")) == []
    assert web.scan(start_row="r1", stop_row="r1").plan() == []


def test_prefix_scan_r12_4(web):
    assert prefix_stop_row(b"ab") == b"ac"
    assert prefix_stop_row(b"a\xff\xff") == b"b"
    assert prefix_stop_row(b"\xff") == b""
    assert {c[0] for c in cells(web.scan(row_prefix="r").to_arrow())} == {b"r1", b"r2"}
    assert {c[0] for c in cells(web.scan(row_prefix=b"z\xff").to_arrow())} == {b"z\xff"}
    with pytest.raises(InvalidRowRangeError):
        web.scan(row_prefix="r", start_row="a")


def test_reversed_scan_r2_4_r12_5(web):
    got = cells(web.scan(reversed=True, max_versions=5).to_arrow())
    assert [c[0] for c in got] == [b"z\xff", b"r2", b"r1", b"c", b"c", b"c", b"c"]
    # Inside a row the normal order holds.
    assert [(c[1], c[2], c[3]) for c in got if c[0] == b"c"] == [
        ("a", b"", 1),
        ("a", b"q", 2),
        ("a", b"q", 1),
        ("b", b"x", 1),
    ]
    # start_row is the higher bound (inclusive), stop_row the lower (exclusive).
    rows = [c[0] for c in cells(web.scan(reversed=True, start_row="r2", stop_row="c").to_arrow())]
    assert rows == [b"r2", b"r1"]


def test_columns_and_families_r11_1(web):
    assert {(c[1], c[2]) for c in cells(web.scan(columns=["a:q"]).to_arrow())} == {("a", b"q")}
    assert {(c[1], c[2]) for c in cells(web.scan(columns=["a:"]).to_arrow())} == {("a", b"")}
    # A bare family after a column widens to the whole family.
    assert {(c[1], c[2]) for c in cells(web.scan(columns=["a:q", "a"]).to_arrow())} == {
        ("a", b"q"),
        ("a", b""),
    }
    assert {c[1] for c in cells(web.scan(families=["b"]).to_arrow())} == {"b"}
    with pytest.raises(InvalidFamilyError):
        web.scan(families=["nope"])
    with pytest.raises(InvalidArgumentError, match="raw"):
        web.scan(raw=True, columns=["a:q"])


def test_time_range_and_timestamp_r7(web):
    got = cells(web.scan(time_range=(1, 2), columns="a:q", max_versions=3).to_arrow())
    assert [(c[0], c[3]) for c in got] == [(b"c", 1)]
    assert cells(web.get("c", timestamp=2, columns="a:q")) == [(b"c", "a", b"q", 2, PUT, b"c2")]
    assert cells(web.get("c", timestamp=9)) == []
    with pytest.raises(InvalidArgumentError):
        web.scan(timestamp=1, time_range=(0, 5))


def test_ttl_uses_injected_now_r8_1(tmp_path):
    t = connect(tmp_path).create_table("t", families=[{"name": "f", "ttl": 10}])
    t.load_cells(cells_table([(b"r", "f", b"q", 1000, PUT, b"v")]))
    assert cells(t.scan(now_ms=11_000).to_arrow()) != []  # 1000 == 11000 - 10*1000: alive
    assert cells(t.scan(now_ms=11_001).to_arrow()) == []


def test_limit_and_count(web):
    assert web.scan().count_rows() == 4
    assert web.scan(limit=2).count_rows() == 2
    assert {c[0] for c in cells(web.scan(limit=2).to_arrow())} == {b"c", b"r1"}
    assert web.scan(limit=0).count_rows() == 0


def test_get_reads_one_row_and_absent_rows(web):
    assert {c[0] for c in cells(web.get(b"r1"))} == {b"r1"}
    assert cells(web.get("r15")) == []
    assert cells(web.get("zzzz")) == []
    with pytest.raises(InvalidArgumentError):
        web.get(b"")


def test_plan_is_deterministic_picklable_and_prunes_files(web):
    web.load_cells(cells_table([(b"x", "a", b"q", 1, PUT, b"x")]))
    plan = web.scan(now_ms=NOW).plan()
    assert plan == web.scan(now_ms=NOW).plan()
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert [t.region for t in plan] == ["r000001", "r000002"]
    # Only the second region, and only the file whose rows can match.
    tasks = web.scan(start_row="x", stop_row="y").plan()
    assert [t.region for t in tasks] == ["r000002"]
    assert [len(f.files) for f in tasks[0].families] == [1, 0]
    assert (tasks[0].start, tasks[0].stop) == (b"x", b"y")


def test_as_of_version_scan(web):
    v2 = web.version
    web.load_cells(cells_table([(b"c", "a", b"q", 9, PUT, b"later")]))
    old = connect(web.warehouse.root).table("web", version=v2)
    assert cells(old.get("c", columns="a:q"))[0][5] == b"c2"
    assert cells(web.get("c", columns="a:q"))[0][5] == b"later"


def test_to_dask_known_divisions_and_binary_keys(web):
    scan = web.scan(max_versions=5)
    ddf = scan.to_dask()
    assert ddf.npartitions == 2
    assert ddf.divisions == (b"", b"m", b"z\xff")
    df = ddf.compute()
    assert list(df["row"]) == [c[0] for c in cells(scan.to_arrow())]
    assert list(ddf.loc[b"r1":b"r2"].compute()["row"]) == [b"r1", b"r2"]
    assert web.scan(reversed=True).to_dask().divisions == (None, None, None)


def test_to_dask_adds_no_string_conversion_task_without_object_columns(web):
    """Dask's object-to-string step would be a no-op task per partition on a cluster
    (binary columns are ``pd.ArrowDtype``, strings already ``string``): it is left out,
    the dtypes are the meta's, and the caller's Dask config is untouched."""
    import dask
    import pandas as pd

    ddf = web.scan(max_versions=5).to_dask()
    objects = any(pd.api.types.is_object_dtype(t) for t in ddf.dtypes)
    assert objects == (int(pd.__version__.split(".")[0]) < 3)  # pandas 2: str is object
    converted = "ArrowStringConversion" in {type(e).__name__ for e in ddf.expr.walk()}
    assert converted == objects  # kept only where it converts something
    assert dask.config.get("dataframe.convert-string", None) is None
    df = ddf.compute()
    assert dict(df.dtypes) == dict(ddf.dtypes)
    assert list(df["value"]) == [c[5] for c in cells(web.scan(max_versions=5).to_arrow())]


@pytest.mark.slow
def test_to_dask_on_local_cluster_with_processes(web):
    with process_client(2):
        df = web.scan(max_versions=5).to_dask().compute()
    assert list(df["value"]) == [c[5] for c in cells(web.scan(max_versions=5).to_arrow())]


@pytest.mark.s3
def test_scan_on_s3(s3_root, s3_options):
    t = connect(s3_root, storage_options=s3_options).create_table("t", families=["f"], splits=["m"])
    t.load_cells(cells_table([(b"a", "f", b"q", 1, PUT, b"1"), (b"z", "f", b"q", 1, PUT, b"2")]))
    t.load_cells(cells_table([(b"a", "f", b"q", 1, DC, b"")]))
    assert cells(t.scan().to_arrow()) == [(b"z", "f", b"q", 1, PUT, b"2")]
    assert cells(t.get("z")) == [(b"z", "f", b"q", 1, PUT, b"2")]


@pytest.mark.parametrize("layout", ["cells", "columns"])
def test_to_dask_reads_only_the_projected_columns_and_keeps_every_row(tmp_path, layout):
    """Dask's optimizer passes the columns a computation uses (``from_map``'s ``columns``):
    a wide read reads only those, and the partitions keep the rows (and ``row`` index) of
    the whole read, also rows whose only cells are in columns left out."""
    import dask
    import pandas as pd

    from cellstore import Family
    from cellstore.loader import Mapping
    from cellstore.reader import scan as scan_module

    t = connect(str(tmp_path)).create_table(
        "p", families=[Family(name="f", layout=layout), Family(name="g", layout=layout)]
    )
    n = 40
    t.load(
        pd.DataFrame(
            {
                "k": [f"r{i:03d}" for i in range(n)],
                "a": [i if i % 3 else None for i in range(n)],  # rows 0, 3, ...: no f:a
                "b": [f"b{i}" if i % 3 == 0 else None for i in range(n)],  # only there: f:b
                "c": [float(i) if i % 2 else None for i in range(n)],
            },
        ),
        mapping=Mapping.simple(row_key="k", columns=["f:a=a:long", "f:b=b:string", "g:c=c:double"]),
    )
    types = {"f:a": "long", "f:b": "string", "g:c": "double"}
    whole = t.scan(shape="wide", column_types=types).to_arrow()
    assert whole.num_rows == n
    read: list[tuple[str, ...]] = []
    real = scan_module.ScanPartitionReader.read_arrow

    def spy(self, task):
        read.append(tuple(f"{f}:{q.decode()}" for f, q in self.wide.columns))
        return real(self, task)

    with dask.config.set(scheduler="sync"):
        scan_module.ScanPartitionReader.read_arrow = spy
        try:
            ddf = t.scan(shape="wide", column_types=types).to_dask()
            got = ddf[["f:a"]].compute()
            total = ddf["g:c"].sum().compute()
        finally:
            scan_module.ScanPartitionReader.read_arrow = real
    assert read and set(read) == {("f:a",), ("g:c",)}  # never the whole set
    assert list(got.columns) == ["f:a"]
    assert list(got.index) == whole.column("row").to_pylist()  # every row, f:a or not
    want = whole.column("f:a").to_pylist()
    assert got["f:a"].isna().tolist() == [v is None for v in want]
    assert [int(v) for v in got["f:a"].dropna()] == [v for v in want if v is not None]
    assert total == pytest.approx(sum(v for v in whole.column("g:c").to_pylist() if v is not None))


def test_scan_tasks_tokenize_once_and_deterministically(web):
    """Dask tokenizes a collection's tasks at every optimizer step: a task's token is a
    digest made once per object, equal for equal tasks, different for different ones."""
    from dask.base import tokenize

    a = web.scan().plan()
    b = [pickle.loads(pickle.dumps(x)) for x in a]  # equal tasks, other objects
    assert [tokenize(x) for x in a] == [tokenize(x) for x in b]
    assert len({tokenize(x) for x in a}) == len(a) == 2
    assert tokenize(a[0]) != tokenize(web.scan(start_row="b").plan()[0])
    assert a[0].__dask_tokenize__() is a[0].__dask_tokenize__()  # made once
    assert pickle.loads(pickle.dumps(a[0])) == a[0]

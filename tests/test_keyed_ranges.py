"""Key-range reads of keyed column files agree with the cells twin (Hypothesis).

Two families whose keyed files hold the same rows (so the first family's cut is every
family's, reader/columnar/fast.py ``_shared_rows``), in many row groups, under three row-key
specs: ascending, descending fields, salted. Random ``key=`` predicates, row ranges cut
anywhere (inside a field's bytes too), reversed, limits and column subsets read exactly
what the same cells written as cell files read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.core.family import Family
from cellstore.core.rowkey import KeyField, RowKeySpec
from test_column_keyed import CARRIERS, KEY, TYPES, keyed_cells

RECORDS = 1500
#: Both families' columns typed (``column_types="table"`` reads them all).
PROPERTIES = {
    "mapping.codecs": json.dumps(
        {"columns": {**TYPES, **{"g" + k[1:]: v for k, v in TYPES.items()}}}
    )
}
SPECS = {
    "ascending": KEY,
    "descending": RowKeySpec(
        fields=(
            KeyField(name="carrier", descending=True),
            KeyField(name="n", type="int32", descending=True),
        )
    ),
    "salted": RowKeySpec(
        fields=(KeyField(name="carrier"), KeyField(name="n", type="int32")), salt_buckets=3
    ),
}


def _source(spec: RowKeySpec) -> tuple[pa.Table, str]:
    """Cells of two families (f and g, the same rows) under ``spec``'s physical rows."""
    fields = pa.table(
        {
            "carrier": [CARRIERS[i % 3] for i in range(RECORDS)],
            "n": pa.array([i // 3 - 50 for i in range(RECORDS)], pa.int32()),
        }
    )
    rows = spec.encode(fields).to_pylist()
    f = keyed_cells(RECORDS)
    f = f.set_column(0, "row", pa.array([r for r in rows for _ in (0, 1)], pa.binary()))
    g = f.set_column(1, "family", pa.array(["g"] * f.num_rows))
    cells = pa.concat_tables([f, g])
    order = sorted(range(cells.num_rows), key=lambda i: cells["row"][i].as_py())
    return cells.take(pa.array(order)), "physical" if spec.salt_buckets else "logical"


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Any, Any]]]:
    root: Path = tmp_path_factory.mktemp("keyed-ranges")
    wh = cellstore.connect(str(root))
    out = {}
    for name, spec in SPECS.items():
        pair = []
        for layout in ("cells", "columns"):
            fams = [Family(name=n, max_versions=1, layout=layout) for n in ("f", "g")]
            t = wh.create_table(
                f"{name}_{layout}", families=fams, row_key=spec, properties=PROPERTIES
            )
            cells, keys = _source(spec)
            t.load_cells(cells, keys=keys, row_group_cells=300)  # 150-record groups
            pair.append(t.refresh())
        out[name] = (pair[0], pair[1])
    yield out


def _bound(spec: RowKeySpec) -> st.SearchStrategy[bytes | None]:
    """A row bound: a logical key's bytes cut anywhere, nudged, or arbitrary bytes."""
    logical = RowKeySpec(fields=spec.fields)
    keys = st.builds(
        lambda c, n: logical.encode(
            pa.table({"carrier": [c], "n": pa.array([n], pa.int32())})
        ).to_pylist()[0],
        st.sampled_from([*CARRIERS, "D", "ZZ"]),
        st.integers(-60, 460),
    )
    cut = st.tuples(keys, st.integers(0, 8)).map(lambda kc: kc[0][: len(kc[0]) - kc[1]])
    return st.none() | cut | st.binary(min_size=1, max_size=6)


@st.composite
def reads(draw: st.DrawFn, spec: RowKeySpec) -> dict[str, Any]:
    opts: dict[str, Any] = {"shape": "wide", "column_types": "table"}
    if draw(st.booleans()):
        key: dict[str, Any] = {"carrier": draw(st.sampled_from([*CARRIERS, "ZZ"]))}
        if draw(st.booleans()):
            lo = draw(st.none() | st.integers(-60, 460))
            hi = draw(st.none() | st.integers(-60, 460))
            key["n"] = (lo, hi)
        opts["key"] = key
    else:
        start, stop = draw(_bound(spec)), draw(_bound(spec))
        if start is not None:
            opts["start_row"] = start
        if stop is not None:
            opts["stop_row"] = stop
    if draw(st.booleans()):
        opts["reversed"] = True
    limit = draw(st.none() | st.integers(1, 40))
    if limit is not None:
        opts["limit"] = limit
    if draw(st.booleans()):
        opts["columns"] = draw(st.sampled_from([["g:tail", "f:dep"], ["f:tail"], ["g:dep"]]))
    return opts


def _check(twins: dict[str, tuple[Any, Any]], name: str, opts: dict[str, Any]) -> None:
    a, b = twins[name]
    try:
        want = a.scan(**opts).to_arrow().to_pylist()
    except cellstore.CellstoreError as e:  # a range the reader refuses: both refuse it
        with pytest.raises(type(e)):
            b.scan(**opts).to_arrow()
        return
    assert b.scan(**opts).to_arrow().to_pylist() == want, opts


@pytest.mark.parametrize("name", list(SPECS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_key_ranges_read_like_the_twin(
    twins: dict[str, tuple[Any, Any]], name: str, data: st.DataObject
) -> None:
    _check(twins, name, data.draw(reads(SPECS[name])))


def test_families_of_the_same_rows_share_one_cut(
    twins: dict[str, tuple[Any, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key range that cuts row groups: the rows are read and cut in the first family
    only (the second reads its values at the same positions), and nothing is joined."""
    from cellstore.reader.columnar import base, fast, join

    shared: list[bool] = []
    cuts: list[int] = []
    joined: list[int] = []
    real_shared, real_cut, real_rows = fast._shared_rows, base._cut_range, join._Part.as_rows

    def spy_shared(*args: Any) -> bool:
        shared.append(real_shared(*args))
        return shared[-1]

    def spy_cut(*args: Any) -> tuple[int, int]:
        cuts.append(1)
        return real_cut(*args)

    def spy_rows(self: Any) -> Any:
        joined.append(1)
        return real_rows(self)

    monkeypatch.setattr(fast, "_shared_rows", spy_shared)
    monkeypatch.setattr(base, "_cut_range", spy_cut)
    monkeypatch.setattr(join._Part, "as_rows", spy_rows)
    opts = {"shape": "wide", "column_types": "table", "key": {"carrier": "DL", "n": (30, 200)}}
    _check(twins, "ascending", opts)
    assert shared == [True] and len(cuts) == 1 and not joined
    # a second read opens each family's file once: whether the rows are shared is known
    # from the first (by the manifest entry's footer digest)
    from cellstore.reader import plan

    opened: list[str] = []
    real_open = plan.ScanTask.open_file

    def spy_open(self: Any, fs: Any, fam: Any, path: str) -> Any:
        opened.append(path)
        return real_open(self, fs, fam, path)

    monkeypatch.setattr(plan.ScanTask, "open_file", spy_open)
    _check(twins, "ascending", opts)
    columns = [p for p in opened if p.endswith("-c.parquet")]  # not the cells twin's
    assert shared == [True, True] and len(columns) == len(set(columns)) == 2


def test_key_ranges_are_planned_once_per_predicate(twins: dict[str, tuple[Any, Any]]) -> None:
    """A ``key=`` predicate's row ranges are computed once per spec and predicate; values
    equal in Python but of other types (``1``, ``1.0``, ``True``) are not confused, and an
    unhashable value is planned without the cache."""
    from cellstore.reader import scan

    _, b = twins["ascending"]
    opts = {"shape": "wide", "key": {"carrier": "DL", "n": (3, 9)}}
    first = b.scan(**opts).to_arrow()
    before = scan._cached_key_ranges.cache_info().hits
    assert b.scan(**opts).to_arrow().equals(first)
    assert scan._cached_key_ranges.cache_info().hits == before + 1
    typed = {scan._typed_items({"n": v}) for v in (1, 1.0, True)}
    assert len(typed) == 3
    assert scan._typed_items({"carrier": ["DL"]}) is None

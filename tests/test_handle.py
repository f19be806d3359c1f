"""The table handle, the catalog, load hooks and the jobs' option objects (issue 27)."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pyarrow as pa
import pytest

from cellstore.handle import Catalog, PendingLoad, TableHandle
from cellstore.jobs import CompactionOptions, IndexOptions, MaintainOptions, compact
from cellstore.jobs.compact import CompactionKwargs, plan_compaction
from cellstore.jobs.index.catalog import IndexKwargs
from cellstore.jobs.maintain import MaintainKwargs
from cellstore.warehouse import LOAD_HOOKS, Table, Warehouse, connect

PAIRS = [
    (CompactionOptions, CompactionKwargs),
    (MaintainOptions, MaintainKwargs),
    (IndexOptions, IndexKwargs),
]


def cells(rows: list[bytes], ts: int) -> pa.Table:
    n = len(rows)
    return pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "family": ["cf"] * n,
            "qualifier": pa.array([b"q"] * n, pa.binary()),
            "ts": pa.array([ts] * n, pa.int64()),
            "value": pa.array([b"v%d" % ts] * n, pa.binary()),
        }
    )


@pytest.mark.parametrize("options, kwargs", PAIRS, ids=lambda c: c.__name__)
def test_options_and_their_keyword_overrides_agree(options: type, kwargs: type) -> None:
    """Each options dataclass and its TypedDict of overrides: same names, same types."""
    fields = {f.name: f.type for f in dataclasses.fields(options)}
    hints = typing.get_type_hints(kwargs)
    assert list(fields) == list(hints)
    resolved = typing.get_type_hints(options)
    assert {k: resolved[k] for k in fields} == hints


def test_a_warehouse_is_a_catalog_of_tables(tmp_path: Path) -> None:
    wh = connect(str(tmp_path))
    t = wh.create_table("ns:t", families=["cf"])
    assert isinstance(wh, Catalog) and isinstance(t, Table) and isinstance(t, TableHandle)
    assert t.catalog is wh and t.warehouse is wh and wh.load_hooks == LOAD_HOOKS
    assert type(t.open("ns:t")) is Table and type(t.latest()) is Table
    assert type(wh.at(str(tmp_path))) is Warehouse


def test_jobs_run_on_a_plain_handle(tmp_path: Path) -> None:
    """A low-level catalog's handles (no facade) are enough for the jobs."""
    wh = connect(str(tmp_path))
    t = wh.create_table("t", families=["cf"])
    for ts in (1, 2, 3):
        t.load_cells(cells([b"a", b"b"], ts))
    plain = Catalog(wh.fs, wh.root, handle_type=TableHandle).table("t")
    assert type(plain) is TableHandle
    assert len(plan_compaction(plain, major=True)) == 1
    report = compact(plain, CompactionOptions(major=True))
    assert report.major and report.version == plain.version
    assert t.refresh().scan().to_arrow().column("value").to_pylist() == [b"v3", b"v3"]


def test_options_objects_and_keywords_mean_the_same(tmp_path: Path) -> None:
    wh = connect(str(tmp_path))
    t = wh.create_table("t", families=["cf"])
    for ts in (1, 2, 3, 4):
        t.load_cells(cells([b"a"], ts))
    by_object = plan_compaction(
        t, CompactionOptions(min_files=2, max_files=2, now_ms=9), job_id="j"
    )
    by_keyword = plan_compaction(t, min_files=2, max_files=2, now_ms=9, job_id="j")
    overridden = plan_compaction(
        t, CompactionOptions(min_files=9, now_ms=9), min_files=2, max_files=2, job_id="j"
    )
    assert by_object == by_keyword == overridden
    with pytest.raises(TypeError, match="majr"):
        compact(t, majr=True)  # type: ignore[call-arg]
    assert CompactionOptions(regions="r1").regions == ("r1",)


def test_load_hooks_run_before_every_load_commit(tmp_path: Path) -> None:
    """The catalog's hooks see each load's files before its commit, on every load path."""
    seen: list[PendingLoad] = []

    def hook(pending: PendingLoad) -> None:
        assert pending.log.latest_version() == pending.base.version  # not committed yet
        seen.append(pending)

    wh = connect(str(tmp_path))
    catalog = Catalog(wh.fs, wh.root, handle_type=Table, load_hooks=(hook,))
    wh.create_table("t", families=["cf"])
    t = catalog.table("t")
    t.load_cells(cells([b"a", b"b"], 5), load_id="L1")
    assert [p.load_id for p in seen] == ["L1"] and len(seen[0].written) == 1
    t.load_cells(cells([b"a"], 5), load_id="L1")  # already applied: no files, no hook
    assert len(seen) == 1

"""The compaction policy (``maintain``) and the compaction CLI commands."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

import cellstore
from cellstore.cli import cli
from cellstore.core.family import Family
from cellstore.errors import InvalidArgumentError
from cellstore.jobs.compact import LAST_MAJOR_PROPERTY
from cellstore.jobs.maintain import is_off_peak, maintain
from cellstore.jobs.selection import SelectionPolicy

NOW = 10_000_000
DAY = 24 * 3600 * 1000


def load(t: Any, row: bytes, ts: int, qual: bytes = b"q") -> None:
    t.load_cells(
        pa.table(
            {"row": [row], "family": ["f"], "qualifier": [qual], "ts": [ts], "value": [b"v%d" % ts]}
        )
    )


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def make(root: str, **family: Any) -> Any:
    return cellstore.connect(root).create_table("t", families=[Family(name="f", **family)])


def test_maintain_major_compacts_when_due_then_minor_by_file_count(root: str) -> None:
    t = make(root)
    for ts in range(3):
        load(t, b"a", ts)
    report = maintain(t, now_ms=NOW)
    assert [a["action"] for a in report.actions] == ["major-compact"]
    assert len(t.files) == 1
    assert t.metadata.properties[LAST_MAJOR_PROPERTY] == str(NOW)
    # Not due again a day later; four new files exceed the threshold of 3: minor compaction.
    for ts in range(10, 14):
        load(t, b"b", ts)
    report = maintain(t, now_ms=NOW + DAY)
    assert [a["action"] for a in report.actions] == ["compact"]
    # The ratio policy takes the small old file too: all files, so deletes drop (R13.3).
    assert len(t.files) == 1 and report.actions[0]["result"]["stores"][0]["input-files"] == 5
    # Nothing left to do: the run is a no-op.
    again = maintain(t, now_ms=NOW + DAY)
    assert again.actions == () and again.version == t.version


def test_maintain_dry_run_plans_without_committing(root: str) -> None:
    t = make(root, ttl=1)
    load(t, b"a", NOW - 5000)
    load(t, b"b", NOW - 10)
    version = t.version
    report = maintain(t, now_ms=NOW, dry_run=True)
    assert {a["action"] for a in report.actions} == {"purge-ttl", "major-compact"}
    assert t.refresh().version == version
    report = maintain(t, now_ms=NOW)
    assert t.version > version
    assert [r["row"] for r in t.scan(now_ms=NOW).to_arrow().to_pylist()] == [b"b"]


def test_maintain_splits_large_regions(root: str) -> None:
    t = make(root)
    t.load_cells(
        pa.table(
            {
                "row": [b"r%03d" % i for i in range(200)],
                "family": ["f"] * 200,
                "qualifier": [b"q"] * 200,
                "ts": [1] * 200,
                "value": [b"x" * 100] * 200,
            }
        ),
        row_group_cells=20,
    )
    before = t.scan().to_arrow()
    report = maintain(t, now_ms=NOW, major_interval_ms=None, split_over_bytes=1000)
    assert "split" in [a["action"] for a in report.actions]
    assert len(t.regions) >= 2
    assert t.scan().to_arrow().equals(before)


def run_cli(root: str, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--root", root, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_cli_compact_purge_and_maintain(root: str) -> None:
    t = make(root, ttl=3600)
    now = time.time_ns() // 1_000_000
    for ts in range(3):
        load(t, b"a", now - 1000 + ts)
    load(t, b"b", now)
    text = run_cli(root, "compact", "t", "--dry-run").output
    assert "Would rewrite 1 store of table t (minor compaction)" in text
    doc = json.loads(run_cli(root, "--output", "json", "compact", "t", "--major").output)
    assert doc["major"] is True and doc["version"] is not None
    assert doc["stores"][0]["input-files"] == 4
    text = run_cli(root, "purge-ttl", "t").output
    assert "Nothing to rewrite in table t (TTL purge)" in text
    doc = json.loads(run_cli(root, "--output", "json", "maintain", "t", "--dry-run").output)
    assert doc["dry-run"] is True
    text = run_cli(root, "maintain", "t", "--no-major").output
    assert "needs nothing" in text


# ------------------------------------------------- HBase's exploring selection in maintain
def _big_then_small(root: str, **properties: str) -> Any:
    """A store of one large old file and three small newer ones (one load each)."""
    t = cellstore.connect(root).create_table(
        "t", families=[Family(name="f")], properties=properties
    )
    rng = np.random.default_rng(7)
    n = 400
    t.load_cells(
        pa.table(
            {
                "row": [b"r%04d" % i for i in range(n)],
                "family": ["f"] * n,
                "qualifier": [b"q"] * n,
                "ts": [1] * n,
                "value": [rng.bytes(200) for _ in range(n)],
            }
        )
    )
    for ts in range(3):
        load(t, b"s", 10 + ts)
    return t


def test_maintain_minor_compaction_uses_the_exploring_selection(root: str) -> None:
    """Ratio 1.0 with no small-file exemption (min.size 0): the large old file is out of
    ratio, so the three small files are selected; the report lists them."""
    t = _big_then_small(
        root,
        **{"hbase.hstore.compaction.ratio": "1.0", "hbase.hstore.compaction.min.size": "0"},
    )
    big, *small = (f.path for f in t.metadata.files_of(t.regions[0].id, "f"))
    before = t.scan().to_arrow()
    report = maintain(t, now_ms=NOW, major_interval_ms=None)
    (action,) = report.actions
    assert action["action"] == "compact" and "ratio 1.0" in action["reason"]
    (store,) = action["result"]["stores"]
    assert store["selection"] == {
        "policy": "exploring",
        "files": small,
        "stuck": False,
        "off-peak": False,
        "skipped-large": 0,
    }
    assert store["drop-deletes"] is False
    assert big in {f.path for f in t.files} and len(t.files) == 2
    assert t.scan().to_arrow().equals(before)


def test_maintain_selection_settings_from_properties_and_options(root: str) -> None:
    props = {
        "hbase.hstore.compaction.ratio": "1.0",
        "hbase.hstore.compaction.min.size": "0",
        "hbase.hstore.compaction.min": "5",
    }
    t = _big_then_small(root, **props)
    # Fewer than hbase.hstore.compaction.min files qualify: nothing to do.
    assert maintain(t, now_ms=NOW, major_interval_ms=None).actions == ()
    # An option overrides the property; a huge off-peak ratio takes the large file too.
    report = maintain(
        t,
        now_ms=NOW,
        major_interval_ms=None,
        max_store_files=2,
        off_peak=True,
        policy=SelectionPolicy(ratio=1.0, off_peak_ratio=1000.0, min_size=0),
    )
    (store,) = report.actions[0]["result"]["stores"]
    assert store["input-files"] == 4 and store["selection"]["off-peak"] is True
    assert store["drop-deletes"] is True  # all files (R13.3)


def test_off_peak_hours_from_properties() -> None:
    hour = 3_600_000
    props = {"hbase.offpeak.start.hour": "22", "hbase.offpeak.end.hour": "6"}
    assert is_off_peak(props, 23 * hour) and is_off_peak(props, 24 * hour + 5 * hour)
    assert not is_off_peak(props, 6 * hour) and not is_off_peak(props, 12 * hour)
    assert is_off_peak({"hbase.offpeak.start.hour": "1", "hbase.offpeak.end.hour": "3"}, hour)
    assert not is_off_peak({}, hour)
    with pytest.raises(InvalidArgumentError, match=r"hbase\.offpeak\.end\.hour"):
        is_off_peak({"hbase.offpeak.start.hour": "1", "hbase.offpeak.end.hour": "24"}, hour)


def test_cli_compact_files_and_maintain_selection(root: str) -> None:
    t = _big_then_small(
        root,
        **{"hbase.hstore.compaction.ratio": "1.0", "hbase.hstore.compaction.min.size": "0"},
    )
    _, first, second, _ = (f.path for f in t.metadata.files_of(t.regions[0].id, "f"))
    doc = json.loads(
        run_cli(root, "--output", "json", "compact", "t", "--file", first, "--file", second).output
    )
    (store,) = doc["stores"]
    assert store["selection"] == {"policy": "files", "files": [first, second]}
    assert store["input-files"] == 2 and doc["version"] is not None
    result = CliRunner().invoke(cli, ["--root", root, "compact", "t", "--file", first + "x"])
    assert result.exit_code != 0 and "did you mean" in result.output
    load(t, b"s", 20)
    text = run_cli(root, "maintain", "t", "--no-major").output
    assert "selected 3 files" in text

"""``maintain`` folds a long manifest list of a format-version-2 table into one manifest.

A commit merges manifests only while the merge stays small (docs/format.md 13.4), so a
table of large loads collects merged manifests; ``maintain`` rewrites the list when it holds
more than ``max_manifests`` of them, keeping the live set and what reads return.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from click.testing import CliRunner

import cellstore
from cellstore.cli import cli
from cellstore.jobs.maintain import DEFAULT_MAX_MANIFESTS, maintain
from cellstore.manifest import TableLog


def _loaded(tmp_path: Path, loads: int) -> Any:
    t = cellstore.connect(str(tmp_path / "wh")).create_table("ns:t", families=["f"])
    t.log = TableLog(t.fs, t.path, max_inline_merge_entries=0)  # no merge inside commits
    for i in range(loads):
        t.load_cells(
            pa.table(
                {
                    "row": [b"r%03d" % i],
                    "family": ["f"],
                    "qualifier": [b"q"],
                    "ts": [i + 1],
                    "value": [b"v%d" % i],
                }
            )
        )
    return t.refresh()


def _quiet(t: Any, **options: Any) -> Any:
    """maintain with only the manifest rewrite left on."""
    return maintain(
        t, major_interval_ms=None, max_store_files=1000, split_over_bytes=None, **options
    )


def test_maintain_rewrites_a_long_manifest_list(tmp_path: Path) -> None:
    t = _loaded(tmp_path, 7)
    before = t.metadata
    assert len(before.manifests) == 7  # one per load, none merged
    files = {(f.path, f.region, f.family, f.seq) for f in before.files}
    rows = t.scan().to_arrow()

    report = _quiet(t, max_manifests=None)  # disabled: nothing happens
    assert report.actions == () and t.refresh().version == before.version
    report = _quiet(t, max_manifests=7)  # not more than the threshold
    assert report.actions == () and t.refresh().version == before.version

    planned = _quiet(t, max_manifests=4, dry_run=True)
    assert [a["action"] for a in planned.actions] == ["rewrite-manifests"]
    assert planned.actions[0]["result"]["manifests-before"] == 7
    assert t.refresh().version == before.version  # dry run: no commit

    done = _quiet(t, max_manifests=4)
    assert [a["action"] for a in done.actions] == ["rewrite-manifests"]
    assert done.actions[0]["reason"] == "7 manifests > 4"
    after = t.refresh().metadata
    assert done.actions[0]["result"]["version"] == after.version == before.version + 1
    assert after.last_history.operation == "rewrite-manifests"
    assert len(after.manifests) == 1
    assert {(f.path, f.region, f.family, f.seq) for f in after.files} == files
    assert after.totals == before.totals
    assert t.scan().to_arrow().equals(rows)
    # one manifest is under the threshold: the next run leaves it alone
    assert _quiet(t, max_manifests=0).actions == ()


def test_default_threshold_folds_what_commits_leave(tmp_path: Path) -> None:
    t = _loaded(tmp_path, DEFAULT_MAX_MANIFESTS)
    assert _quiet(t).actions == ()  # not more than the default
    t = _loaded(tmp_path / "more", DEFAULT_MAX_MANIFESTS + 1)
    assert len(t.metadata.manifests) == DEFAULT_MAX_MANIFESTS + 1
    report = _quiet(t)
    assert [a["action"] for a in report.actions] == ["rewrite-manifests"]
    assert len(t.refresh().metadata.manifests) == 1


def test_cli_maintain_max_manifests(tmp_path: Path) -> None:
    """``cellstore maintain --max-manifests N`` folds the list; --no-manifest-rewrite and
    the default (32) leave a list of 5 alone."""
    t = _loaded(tmp_path, 5)
    root = str(tmp_path / "wh")
    base = ["--root", root, "--output", "json", "maintain", "ns:t", "--no-major"]
    base += ["--split-over", "1TiB", "--max-store-files", "1000"]
    runner = CliRunner()

    def run(*extra: str) -> dict[str, Any]:
        result = runner.invoke(cli, [*base, *extra])
        assert result.exit_code == 0, result.output
        doc: dict[str, Any] = json.loads(result.output)
        return doc

    assert run()["actions"] == []  # 5 <= 32 by default
    assert run("--max-manifests", "2", "--no-manifest-rewrite")["actions"] == []
    assert len(t.refresh().metadata.manifests) == 5
    doc = run("--max-manifests", "2")
    assert [a["action"] for a in doc["actions"]] == ["rewrite-manifests"]
    assert doc["actions"][0]["reason"] == "5 manifests > 2"
    assert len(t.refresh().metadata.manifests) == 1
    text = runner.invoke(cli, [*base[:4], "maintain", "ns:t", "--max-manifests", "-1"])
    assert text.exit_code != 0 and "-1" in text.output

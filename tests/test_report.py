"""Table reports (issue 17, "Seeing the table"): the numbers, the JSON, the HTML page.

The numbers are checked against plain-Python counting over the cells the test loaded
(an independent path: no pyarrow.compute, no store-file reads); the page is loaded in a
real headless Chromium, which must show every chart with a nonzero size and log no
console error.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import cellstore
from cellstore.cli import cli
from cellstore.core.family import Family
from cellstore.errors import InvalidArgumentError
from cellstore.report import MARKER_KINDS, TableReport, render_html

NOW = 1_700_000_000_000
HOUR = 3_600_000
SPLITS = [b"g", b"p"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PUT, DELETE, DFV, DCOL, DFAM = 4, 8, 10, 12, 14

Cell = tuple[bytes, str, bytes, int, int]  # row, family, qualifier, ts, type


def _cells(seed: int, n_rows: int) -> list[Cell]:
    """Cells with a hot first region, several versions, every marker kind, TTL'd cells."""
    rnd = random.Random(seed)
    out: set[Cell] = set()
    for i in range(n_rows):
        first = rnd.choice("abcdef" * 4 + "hkmqsz")  # most rows in region 1 (before "g")
        row = f"{first}{i:0{rnd.randint(2, 9)}d}".encode()
        for q in (b"q1", b"q2", b"q3")[: rnd.randint(1, 3)]:
            for v in range(rnd.randint(1, 4)):
                out.add((row, "d", q, 1000 + 10 * v, PUT))
        old = rnd.random() < 0.3  # R8.1: expired iff ts < now - ttl (ttl 1 hour)
        out.add((row, "t", b"x", NOW - 2 * HOUR if old else NOW - 60_000, PUT))
        kind = rnd.random()
        if kind < 0.1:
            out.add((row, "d", b"q1", 1005, DELETE))
        elif kind < 0.2:
            out.add((row, "d", b"q2", 1100, DCOL))
        elif kind < 0.25:
            out.add((row, "d", b"", 1200, DFAM))
        elif kind < 0.3:
            out.add((row, "d", b"", 1010, DFV))
    return sorted(out)


def _arrow(cells: list[Cell]) -> pa.Table:
    return pa.table(
        {
            "row": pa.array([c[0] for c in cells], pa.binary()),
            "family": [c[1] for c in cells],
            "qualifier": pa.array([c[2] for c in cells], pa.binary()),
            "ts": pa.array([c[3] for c in cells], pa.int64()),
            "type": pa.array([c[4] for c in cells], pa.int8()),
            "value": pa.array([b"v" if c[4] == PUT else b"" for c in cells], pa.binary()),
        }
    )


def _region_of(row: bytes) -> int:
    return sum(row >= s for s in SPLITS)


@pytest.fixture
def loaded(tmp_path: Path) -> tuple[cellstore.Table, list[Cell], list[Any]]:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table(
        "ns:rep",
        families=[Family(name="d", max_versions=2), Family(name="t", ttl=3600)],
        splits=SPLITS,
    )
    first, second = _cells(1, 300), _cells(2, 80)
    loads = [
        t.load_cells(_arrow(first), row_group_cells=64),
        t.load_cells(_arrow(second), row_group_cells=64),
    ]
    return t, first + second, loads


def test_numbers_match_independent_counts(loaded: Any) -> None:
    t, cells, loads = loaded
    rep = t.report(now_ms=NOW)
    assert isinstance(rep, TableReport)
    assert not rep.sampled
    assert rep.scanned_cells == rep.total_cells == len(cells)
    assert rep.total_files == len(t.files)

    # per region: cells (manifest), files, distinct rows; the hotspot is the biggest region
    per_region = Counter(_region_of(c[0]) for c in cells)
    rows = {c[0] for c in cells}
    assert [r.cells for r in rep.regions] == [per_region[i] for i in range(3)]
    assert [r.scanned_cells for r in rep.regions] == [per_region[i] for i in range(3)]
    assert [r.rows for r in rep.regions] == [
        len({r for r in rows if _region_of(r) == i}) for i in range(3)
    ]
    assert [r.files for r in rep.regions] == [
        sum(f.region == r.region for f in t.files) for r in rep.regions
    ]
    assert [r.bytes for r in rep.regions] == [
        sum(f.size for f in t.files if f.region == r.region) for r in rep.regions
    ]
    assert rep.hotspot is not None and rep.hotspot.region == rep.regions[0].region
    assert sum(r.hotspot for r in rep.regions) == 1

    # row keys: length and first-byte distributions of the distinct keys
    assert rep.rows == len(rows)
    assert dict(rep.key_lengths) == dict(sorted(Counter(len(r) for r in rows).items()))
    assert list(rep.first_bytes) == [sum(r[0] == b for r in rows) for b in range(256)]

    # versions per column: stored puts per (row, column); over the family limit (R6.1)
    pairs = Counter((c[1], c[2], c[0]) for c in cells if c[4] == PUT)
    limit = {f.name: f.max_versions for f in t.families}
    assert limit["d"] == 2
    expected = {}
    for fam, q in {(f, q) for f, q, _ in pairs}:
        ns = [n for (f2, q2, _), n in pairs.items() if (f2, q2) == (fam, q)]
        expected[(fam, q)] = (sum(ns), len(ns), max(ns), sum(max(0, n - limit[fam]) for n in ns))
    got = {
        (c.family, c.qualifier): (c.puts, c.cells, c.max_versions, c.over_limit)
        for c in rep.columns
    }
    assert got == expected
    assert [c.puts for c in rep.columns] == sorted((c.puts for c in rep.columns), reverse=True)

    # delete markers by kind, per family (R1.2 type codes)
    fams = {f.family: f for f in rep.families}
    marker_counts = Counter((c[1], MARKER_KINDS[c[4]]) for c in cells if c[4] != PUT)
    for fam in ("d", "t"):
        assert dict(fams[fam].delete_markers) == {
            k: n for (f, k), n in marker_counts.items() if f == fam
        }
    assert set(rep.delete_markers) == {
        "Delete",
        "DeleteColumn",
        "DeleteFamily",
        "DeleteFamilyVersion",
    }

    # TTL: R8.1, expired iff ts < now - ttl*1000 (strict); no TTL = nothing expires
    t_cells = [c for c in cells if c[1] == "t"]
    assert fams["t"].cells == len(t_cells)
    assert fams["t"].expired == sum(c[3] < NOW - HOUR for c in t_cells)
    assert 0 < fams["t"].expired_share < 1
    assert fams["d"].ttl_seconds is None and fams["d"].expired == 0

    # the advice is cellstore advise's, unchanged
    assert rep.advice.to_dict() == t.advise().to_dict()

    # history: newest first; each load added exactly the files it wrote
    assert [h.operation for h in rep.history] == ["load", "load", "create"]
    assert [h.version for h in rep.history] == [3, 2, 1]
    assert [h.files_added for h in rep.history[:2]] == [loads[1].files, loads[0].files]
    assert [h.files_removed for h in rep.history] == [0, 0, 0]
    assert rep.history[0].cells == len(cells)
    assert rep.history[1].cells == loads[0].cells


def test_ttl_boundary_is_strict(tmp_path: Path) -> None:
    """R8.1: a cell whose ts equals now - ttl is not expired; one ms older is."""
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("b", families=[Family(name="t", ttl=1)])
    cells = [(b"r1", "t", b"c", NOW - 1000, PUT), (b"r2", "t", b"c", NOW - 1001, PUT)]
    t.load_cells(_arrow(cells))
    (fam,) = t.report(now_ms=NOW).families
    assert (fam.cells, fam.expired) == (2, 1)


def test_history_counts_files_removed_by_compaction(loaded: Any) -> None:
    from cellstore.jobs import compact

    t, _, _ = loaded
    before = {f.path for f in t.files}
    compact(t, major=True, now_ms=NOW)
    t.refresh()
    after = {f.path for f in t.files}
    rep = t.report(now_ms=NOW, history=2)
    assert len(rep.history) == 2
    newest = rep.history[0]
    assert newest.operation == "compact"
    assert (newest.files_added, newest.files_removed) == (
        len(after - before),
        len(before - after),
    )
    assert rep.total_files == len(after)


def test_sampling_reads_a_part_and_says_so(loaded: Any) -> None:
    t, cells, _ = loaded
    rep = t.report(now_ms=NOW, sample_rows=200)
    assert rep.sampled
    assert 0 < rep.scanned_cells < len(cells)
    assert rep.scanned_cells <= 200 + len(t.files)  # at most one cell of rounding per file
    assert [r.cells for r in rep.regions] == [r.cells for r in t.report(now_ms=NOW).regions]
    with pytest.raises(InvalidArgumentError):
        t.report(sample_rows=0)


def test_salted_table_shows_stored_keys(tmp_path: Path) -> None:
    """On a salted table the report counts stored keys: the first byte is the bucket."""
    from model import java_salt

    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("s", families=[Family(name="d")], salt_buckets=4)
    cells = [(f"user{i:04d}".encode(), "d", b"c", 1, PUT) for i in range(200)]
    t.load_cells(_arrow(cells))
    rep = t.report()
    salts = [java_salt(c[0], 4) for c in cells]  # Phoenix's formula, independently
    assert list(rep.first_bytes[:4]) == [salts.count(b) for b in range(4)]
    assert sum(rep.first_bytes) == rep.rows == 200
    assert dict(rep.key_lengths) == {9: 200}  # salt byte + 8
    assert [r.cells for r in rep.regions] == [salts.count(b) for b in range(4)]
    assert rep.salt_buckets == 4
    counts = [salts.count(b) for b in range(4)]
    hot = max(counts) > 1.5 * sum(counts) / 4  # the hotspot rule: 1.5 x the even share
    assert (rep.hotspot is not None) == hot


def test_empty_table(tmp_path: Path) -> None:
    wh = cellstore.connect(str(tmp_path / "wh"))
    t = wh.create_table("e", families=[Family(name="d")], splits=[b"m"])
    rep = t.report()
    assert (rep.total_cells, rep.rows, rep.hotspot, rep.columns) == (0, 0, None, ())
    assert [h.operation for h in rep.history] == ["create"]
    page = render_html(rep)
    assert "No cells." in page and "<svg" in page  # the region bars, all zero


def test_cli_json_gives_the_same_numbers(loaded: Any, tmp_path: Path) -> None:
    t, _, _ = loaded
    root = t.warehouse.root
    out = CliRunner().invoke(cli, ["--root", root, "report", "ns:rep", "--output", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    expected = t.report().to_dict()
    for d in (doc, expected):  # "now" (and the TTL share with it) moves between the runs
        d.pop("now-ms")
        for f in d["families"]:
            f.pop("expired")
            f.pop("expired-share")
    assert doc == expected
    assert doc["hotspot"] == t.regions[0].id
    assert doc["regions"][0]["hotspot"] is True

    html = tmp_path / "page.html"
    out = CliRunner().invoke(cli, ["--root", root, "report", "ns:rep", "--html", str(html)])
    assert out.exit_code == 0, out.output
    assert f"wrote {html}" in out.output and "hotspot: region" in out.output
    assert html.read_text().startswith("<!DOCTYPE html>")
    out = CliRunner().invoke(cli, ["--root", root, "report", "nope"])
    assert out.exit_code != 0


def test_cli_without_matplotlib_names_the_extra(loaded: Any, tmp_path: Path) -> None:
    t, _, _ = loaded
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from cellstore.cli import main\n"
        f"main(['--root', {t.warehouse.root!r}, 'report', 'ns:rep', '--html', "
        f"{str(tmp_path / 'x.html')!r}])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2  # invalid-argument (issue 29: 1, the storage code, before)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install "cellstore[report]"' in lines[0], out.stderr
    assert not (tmp_path / "x.html").exists()


def test_notebook_repr_is_a_fragment_and_says_sampled(loaded: Any) -> None:
    t, _, _ = loaded
    frag = t.report(now_ms=NOW, sample_rows=200)._repr_html_()
    assert frag.startswith('<div class="cellstore-report">') and "<body" not in frag
    assert frag.count("<svg") == 6
    assert "Sampled: a sample of" in frag  # the page says the numbers are a sample


# ------------------------------------------------------------------ in a real browser
_PROBE = """
<script>
window.addEventListener("load", () => {
  const sizes = [...document.querySelectorAll("svg")].map(s => {
    const b = s.getBoundingClientRect();
    return [s.closest("figure") ? 1 : 0, Math.round(b.width), Math.round(b.height)];
  });
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify({sizes, title: document.title,
                                    h2: [...document.querySelectorAll("h2")].length});
  document.body.appendChild(pre);
});
</script>
"""


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=1200,3000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.needs(
    need="browser",
    present=CHROMIUM is not None,
    reason="chromium is not installed (Debian: apt-get "
    "install chromium); the HTML report is checked in a real browser",
)
def test_page_renders_in_headless_chromium(loaded: Any, tmp_path: Path) -> None:
    t, _, _ = loaded
    page_path = tmp_path / "report.html"
    rep = t.report(html=str(page_path), now_ms=NOW)
    page = page_path.read_text()
    # self-contained: no script, no external resource (the SVG namespace is not a fetch)
    assert "<script" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<svg" in page and page.count("<svg") == 6

    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", _PROBE + "</body>"))
    run = _chromium("--dump-dom", probed.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    console = [ln for ln in run.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == [], console
    m = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, flags=re.S)
    assert m, run.stdout[-2000:]
    probe = json.loads(m.group(1).replace("&quot;", '"'))
    assert probe["title"] == f"cellstore report: {rep.table}"
    assert probe["h2"] == 7  # regions, row keys, versions, deletes, TTL, advice, history
    charts = [s for s in probe["sizes"] if s[0]]
    assert len(charts) == 6
    assert all(w > 100 and h > 100 for _, w, h in charts), charts

    shot = tmp_path / "report.png"
    run = _chromium(f"--screenshot={shot}", page_path.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert [ln for ln in run.stderr.splitlines() if ":CONSOLE" in ln] == []
    assert shot.stat().st_size > 10_000
    print(f"report screenshot: {shot}")

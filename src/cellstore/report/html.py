"""Draw a :class:`~cellstore.report.model.TableReport` as one self-contained HTML page.

Charts are matplotlib figures saved as SVG and inlined (text drawn as paths, so no fonts
are needed either): the page loads nothing from the network and needs no server or
script. matplotlib is an optional dependency: ``pip install "cellstore[report]"``.
"""

from __future__ import annotations

import datetime as dt
import html
import io
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from cellstore.report.model import MARKER_KINDS, TableReport

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MISSING_MATPLOTLIB", "render_html", "require_matplotlib"]

#: The one-line message when matplotlib is missing.
MISSING_MATPLOTLIB: Final = (
    'the table report draws its charts with matplotlib: pip install "cellstore[report]"'
)

_BAR: Final = "#4c78a8"
_HOT: Final = "#e45756"
_ACCENT: Final = "#f58518"
#: Bars drawn at most in one chart (columns by puts); the JSON output has them all.
_MAX_COLUMNS: Final = 30

_PAGE_CSS: Final = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.4; }
"""
_CSS: Final = """
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.note { color: #555; font-size: 0.92em; } .warning { color: #b00020; font-weight: 600; }
.info { color: #1f5fa8; font-weight: 600; } figure.chart { margin: 0.6em 0; }
figure.chart svg { max-width: 100%; height: auto; }
.summary td:first-child { text-align: left; font-weight: 600; }
"""


def _scoped_css() -> str:
    """:data:`_CSS` with every selector under ``.cellstore-report`` (for a notebook cell)."""

    def scope(m: re.Match[str]) -> str:
        selectors = ", ".join(f".cellstore-report {s.strip()}" for s in m.group(2).split(","))
        return f"{m.group(1)}{selectors} {{"

    return re.sub(r"(^|\}\s*)([^{}]+)\{", scope, _CSS)


def require_matplotlib() -> Any:
    """Import matplotlib (the charts use ``Figure`` objects: pyplot's backend is untouched).

    Raises:
        ImportError: it is not installed; the message names the ``report`` extra.
    """
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError(MISSING_MATPLOTLIB) from e
    return matplotlib


def _svg(fig: Figure, name: str) -> str:
    """The figure as an inline ``<svg>`` element (unique ids per chart)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"cellstore-{name}", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    start = text.find("<svg")
    svg = text[start:]
    # ids must not collide between charts inlined in one document
    return (
        re.sub(r'id="([^"]+)"', rf'id="{name}-\1"', svg)
        .replace("url(#", f"url(#{name}-")
        .replace('xlink:href="#', f'xlink:href="#{name}-')
    )


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=96)
    return fig


def _human(n: float) -> str:
    for unit in ("", "K", "M", "G", "T"):
        if abs(n) < 1000:
            return f"{n:g}" if unit == "" else f"{n:.1f}{unit}"
        n /= 1000
    return f"{n:.1f}P"


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _key(b: bytes, width: int = 24) -> str:
    from cellstore.core.keys import to_string_binary

    text = to_string_binary(b) if b else "(open)"
    return text if len(text) <= width else text[: width - 1] + "…"


def _region_chart(report: TableReport) -> str:
    from matplotlib.ticker import MaxNLocator

    regions = report.regions
    fig = _figure(max(8.0, min(14.0, 2.0 + 0.35 * len(regions))), 6.4)
    axes = fig.subplots(3, 1, sharex=True)
    x = list(range(len(regions)))
    colors = [_HOT if r.hotspot else _BAR for r in regions]
    top = max((r.bytes for r in regions), default=0)
    power = 0
    while power < 4 and top >= 1024 ** (power + 1):
        power += 1
    unit = ("B", "KiB", "MiB", "GiB", "TiB")[power]
    series = (
        ("cells", [float(r.cells) for r in regions]),
        (f"bytes ({unit})", [r.bytes / 1024**power for r in regions]),
        ("store files", [float(r.files) for r in regions]),
    )
    for ax, (label, values) in zip(axes, series, strict=True):
        ax.bar(x, values, color=colors)
        ax.yaxis.set_major_locator(MaxNLocator(integer=not label.startswith("bytes")))
        ax.yaxis.set_major_formatter(lambda v, _p: _human(v))
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    last = axes[-1]
    if len(regions) <= 40:
        last.set_xticks(x, [r.region for r in regions], rotation=60, ha="right", fontsize=8)
    last.set_xlabel("region (key order)")
    from matplotlib.patches import Patch

    handles = [Patch(color=_BAR, label="region")]
    if report.hotspot is not None:
        share = report.hotspot.cells / report.total_cells if report.total_cells else 0.0
        handles.append(Patch(color=_HOT, label=f"hotspot: {report.hotspot.region} ({share:.0%})"))
    axes[0].legend(
        handles=handles,
        loc="lower right",
        bbox_to_anchor=(1.0, 1.02),
        ncols=2,
        fontsize=8,
        frameon=False,
    )
    axes[0].set_title("Cells, bytes and store files per region", loc="left")
    return _svg(fig, "regions")


def _key_length_chart(report: TableReport) -> str:
    from matplotlib.ticker import MaxNLocator

    fig = _figure(7.0, 3.0)
    ax = fig.subplots()
    lo, hi = min(report.key_lengths), max(report.key_lengths)
    dense = [report.key_lengths.get(n, 0) for n in range(lo, hi + 1)]
    # one filled step artist, not a patch per bar: fast for any spread of lengths
    ax.stairs(dense, [n - 0.5 for n in range(lo, hi + 2)], fill=True, color=_BAR)
    ax.set_xlim(lo - 1, hi + 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("row-key length (bytes)")
    ax.set_ylabel("distinct row keys")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Row-key length distribution")
    return _svg(fig, "key-lengths")


def _first_byte_chart(report: TableReport) -> str:
    from matplotlib.ticker import MaxNLocator

    fig = _figure(10.0, 3.0)
    ax = fig.subplots()
    ax.stairs(report.first_bytes, [b - 0.5 for b in range(257)], fill=True, color=_BAR)
    ticks = list(range(0, 256, 16))
    labels = [f"{t:02x}" + (f"\n{chr(t)!s}" if 0x20 < t < 0x7F else "") for t in ticks]
    ax.set_xticks(ticks, labels, fontsize=8)
    ax.set_xlim(-1, 256)
    ax.set_xlabel("first byte of the row key (hex)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("distinct row keys")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Row keys by first byte" + (" (the salt byte)" if report.salt_buckets else ""))
    return _svg(fig, "first-bytes")


def _versions_chart(report: TableReport) -> str:
    from matplotlib.ticker import MaxNLocator

    cols = report.columns[:_MAX_COLUMNS]
    fig = _figure(8.0, max(2.4, 0.9 + 0.3 * len(cols)))
    ax = fig.subplots()
    y = list(range(len(cols)))
    ax.barh(
        [i - 0.2 for i in y],
        [c.mean_versions for c in cols],
        height=0.4,
        color=_BAR,
        label="mean versions per cell",
    )
    ax.barh(
        [i + 0.2 for i in y],
        [c.max_versions for c in cols],
        height=0.4,
        color=_ACCENT,
        label="most versions in one cell",
    )
    ax.set_yticks(y, [c.column for c in cols], fontsize=8)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("stored versions (puts) per (row, column)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Versions per column")
    return _svg(fig, "versions")


def _markers_chart(report: TableReport) -> str:
    from matplotlib.ticker import MaxNLocator

    fams = report.families
    kinds = list(MARKER_KINDS.values())
    fig = _figure(7.0, 3.0)
    ax = fig.subplots()
    palette = ["#4c78a8", "#72b7b2", "#f58518", "#e45756"]
    width = 0.8 / max(1, len(fams))
    for i, f in enumerate(fams):
        xs = [k + i * width - 0.4 + width / 2 for k in range(len(kinds))]
        ax.bar(
            xs,
            [f.delete_markers.get(k, 0) for k in kinds],
            width=width,
            color=palette[i % len(palette)],
            label=f"family {f.family}",
        )
    ax.set_xticks(range(len(kinds)), kinds, fontsize=8)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("delete markers")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Delete markers by kind")
    return _svg(fig, "markers")


def _ttl_chart(report: TableReport) -> str:
    fams = report.families
    fig = _figure(7.0, max(2.0, 0.9 + 0.35 * len(fams)))
    ax = fig.subplots()
    y = list(range(len(fams)))
    ax.barh(y, [100 * f.expired_share for f in fams], color=_HOT, height=0.6)
    ax.set_yticks(
        y,
        [
            f"{f.family} (TTL {f.ttl_seconds}s)"
            if f.ttl_seconds is not None
            else f"{f.family} (no TTL)"
            for f in fams
        ],
        fontsize=8,
    )
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("TTL-expired cells (% of the family's cells)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("TTL-expired share per family")
    return _svg(fig, "ttl")


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1) -> str:
    """An HTML table; the first ``left`` columns are left-aligned."""

    def cell(tag: str, i: int, v: Any) -> str:
        cls = ' class="l"' if i < left else ""
        return f"<{tag}{cls}>{html.escape(str(v))}</{tag}>"

    out = ["<table>", "<tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _chart(svg: str) -> str:
    return f'<figure class="chart">{svg}</figure>'


def _summary_section(r: TableReport) -> list[str]:
    """Title, version and the table's totals (and whether the cells were sampled)."""
    e = html.escape
    parts = [
        f"<h1>Table report: {e(r.table)}</h1>",
        f'<p class="note">version {r.version}, measured {_when(r.now_ms)}</p>',
    ]
    scanned = (
        f"a sample of {r.scanned_cells:,} of {r.total_cells:,} cells (whole row groups spread "
        "over every store file): row keys, versions, delete markers and TTL are sample counts"
        if r.sampled
        else f"every cell ({r.scanned_cells:,})"
    )
    summary = [
        ("regions", f"{len(r.regions):,}"),
        ("store files", f"{r.total_files:,}"),
        ("cells (stored)", f"{r.total_cells:,}"),
        ("bytes", _bytes(r.total_bytes)),
        ("distinct row keys", f"{r.rows:,}" + (" (in the sample)" if r.sampled else "")),
        ("families", ", ".join(f.family for f in r.families)),
        ("salt buckets", str(r.salt_buckets) if r.salt_buckets else "none"),
        ("read for this report", scanned),
    ]
    parts.append(
        '<table class="summary">'
        + "".join(f'<tr><td>{e(k)}</td><td class="l">{e(v)}</td></tr>' for k, v in summary)
        + "</table>"
    )
    if r.sampled:
        parts.append(f'<p class="warning">Sampled: {e(scanned)}.</p>')
    return parts


def _regions_section(r: TableReport) -> list[str]:
    """The hotspot, the cells-per-region chart and the regions' table."""
    parts = ["<h2>Regions</h2>"]
    hot = r.hotspot
    if hot is not None:
        share = hot.cells / r.total_cells if r.total_cells else 0.0
        parts.append(
            f'<p>Hotspot (most cells): <span class="warning">{html.escape(hot.region)}</span> '
            f"with {hot.cells:,} cells, {share:.1%} of the table (an even spread would be "
            f"{1 / len(r.regions):.1%}).</p>"
        )
    if r.regions:
        parts.append(_chart(_region_chart(r)))
    rows = [
        (
            x.region,
            _key(x.start),
            _key(x.end),
            f"{x.cells:,}",
            _bytes(x.bytes),
            x.files,
            f"{x.rows:,}",
            "yes" if x.hotspot else "",
        )
        for x in r.regions
    ]
    head = ["region", "start", "end", "cells", "bytes", "files", "rows", "hotspot"]
    parts.append(_table(head, rows, left=3))
    return parts


def _row_keys_section(r: TableReport) -> list[str]:
    """Row-key lengths and first bytes."""
    parts = ["<h2>Row keys</h2>"]
    if not r.key_lengths:
        return [*parts, "<p>No cells.</p>"]
    lens = r.key_lengths
    total = sum(lens.values())
    mean = sum(k * v for k, v in lens.items()) / total
    parts.append(
        f"<p>{total:,} distinct row keys, {min(lens)} to {max(lens)} bytes long "
        f"(mean {mean:.1f}).</p>"
    )
    parts.append(_chart(_key_length_chart(r)))
    parts.append(_chart(_first_byte_chart(r)))
    return parts


def _versions_section(r: TableReport) -> list[str]:
    """Stored put versions per column (the columns with the most puts)."""
    parts = ["<h2>Versions per column</h2>"]
    if not r.columns:
        return [*parts, "<p>No put cells.</p>"]
    shown = (
        ""
        if len(r.columns) <= _MAX_COLUMNS
        else (f" (the {_MAX_COLUMNS} columns with the most puts of {len(r.columns):,})")
    )
    parts.append(
        f"<p>Stored put versions per (row, column){html.escape(shown)}; "
        "versions beyond the family's limit are never read and a major "
        "compaction drops them.</p>"
    )
    parts.append(_chart(_versions_chart(r)))
    rows = [
        (
            c.column,
            f"{c.puts:,}",
            f"{c.cells:,}",
            f"{c.mean_versions:.2f}",
            c.max_versions,
            f"{c.over_limit:,}",
        )
        for c in r.columns[:_MAX_COLUMNS]
    ]
    head = ["column", "puts", "cells", "mean versions", "max versions", "over the limit"]
    parts.append(_table(head, rows))
    return parts


def _markers_section(r: TableReport) -> list[str]:
    """Delete markers per kind."""
    parts = ["<h2>Delete markers</h2>"]
    markers = r.delete_markers
    if not markers:
        return [*parts, "<p>No delete markers.</p>"]
    text = ", ".join(f"{k}: {v:,}" for k, v in markers.items())
    return [*parts, "<p>" + html.escape(text) + "</p>", _chart(_markers_chart(r))]


def _ttl_section(r: TableReport) -> list[str]:
    """TTL-expired cells per family."""
    parts = ["<h2>TTL</h2>"]
    if any(f.ttl_seconds is not None for f in r.families):
        parts.append(
            "<p>Cells with a timestamp older than now minus the family's TTL: reads "
            "skip them and a major compaction drops them (unless MIN_VERSIONS keeps "
            "some).</p>"
        )
        parts.append(_chart(_ttl_chart(r)))
    rows = [
        (
            f.family,
            f.ttl_seconds if f.ttl_seconds is not None else "forever",
            f"{f.cells:,}",
            f"{f.expired:,}",
            f"{f.expired_share:.1%}",
        )
        for f in r.families
    ]
    parts.append(_table(["family", "TTL (s)", "cells", "expired", "expired share"], rows))
    return parts


def _advice_section(r: TableReport) -> list[str]:
    """The findings of ``cellstore advise`` on the sampled row keys."""
    e = html.escape
    parts = ["<h2>Row-key design advice</h2>"]
    advice = r.advice
    if advice.findings:
        items = [
            f'<li><span class="{e(f.severity)}">{e(f.severity.upper())} {e(f.code)}</span>: '
            f"{e(f.message)}<br><em>Fix:</em> {e(f.fix)}</li>"
            for f in advice.findings
        ]
        parts.append("<ul>" + "".join(items) + "</ul>")
    else:
        parts.append("<p>No findings: the sampled keys spread well and are short.</p>")
    parts.append(
        f'<p class="note">From <code>cellstore advise</code>: '
        f"{advice.summary.sampled_keys:,} row keys sampled from the store files.</p>"
    )
    return parts


def _history_section(r: TableReport) -> list[str]:
    """The table's commits."""
    head = [
        "version",
        "operation",
        "time",
        "files added",
        "files removed",
        "cells after",
        "summary",
    ]
    rows = [
        (
            h.version,
            h.operation,
            _when(h.timestamp_ms),
            "?" if h.files_added is None else h.files_added,
            "?" if h.files_removed is None else h.files_removed,
            f"{h.cells:,}",
            ", ".join(f"{k}={v}" for k, v in h.summary.items()),
        )
        for h in r.history
    ]
    return ["<h2>History</h2>", _table(head, rows, left=3)]


#: The report's sections, in page order: a new section is a function here.
_SECTIONS: Final[tuple[Callable[[TableReport], list[str]], ...]] = (
    _summary_section,
    _regions_section,
    _row_keys_section,
    _versions_section,
    _markers_section,
    _ttl_section,
    _advice_section,
    _history_section,
)


def render_html(report: TableReport, *, fragment: bool = False) -> str:
    """The report as HTML: a whole page, or (``fragment``) a ``<div>`` for a notebook.

    The page is :data:`_SECTIONS`, in order.

    Raises:
        ImportError: matplotlib is not installed (the message names the extra).
    """
    require_matplotlib()
    body = "\n".join(part for section in _SECTIONS for part in section(report))
    if fragment:
        return f'<div class="cellstore-report"><style>{_scoped_css()}</style>{body}</div>'
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>cellstore report: {html.escape(report.table)}</title>"
        f"<style>{_PAGE_CSS}{_CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )

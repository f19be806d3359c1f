"""Table reports: what a table looks like, measured and drawn (``cellstore report``).

:func:`build_report` measures one table version into a :class:`TableReport` (cells,
bytes and store files per region with the hotspot marked, row-key length and first-byte
distributions, versions per column, delete markers, TTL-expired share per family, the
key-design advice of ``cellstore advise`` and the commit history); :func:`render_html`
draws it as one self-contained HTML page (matplotlib SVG inlined; needs the ``report``
extra). ``Table.report()`` is the usual entry point.
"""

from cellstore.report.compute import (
    DEFAULT_HISTORY,
    DEFAULT_SAMPLE_ROWS,
    HOTSPOT_FACTOR,
    RegionTask,
    build_report,
    plan_report,
    run_region_task,
)
from cellstore.report.html import MISSING_MATPLOTLIB, render_html, require_matplotlib
from cellstore.report.model import (
    MARKER_KINDS,
    ColumnVersions,
    CommitRecord,
    FamilyExpiry,
    RegionStats,
    TableReport,
)

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_SAMPLE_ROWS",
    "HOTSPOT_FACTOR",
    "MARKER_KINDS",
    "MISSING_MATPLOTLIB",
    "ColumnVersions",
    "CommitRecord",
    "FamilyExpiry",
    "RegionStats",
    "RegionTask",
    "TableReport",
    "build_report",
    "plan_report",
    "render_html",
    "require_matplotlib",
    "run_region_task",
]

"""The typed result of a table report: frozen dataclasses, each with ``to_dict()`` for JSON.

Every number in the HTML page and in ``cellstore report --output json`` comes from a
:class:`TableReport`; the page draws nothing it does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cellstore.core.cells import CellType
from cellstore.core.keys import to_string_binary
from cellstore.core.results import JsonForm

if TYPE_CHECKING:
    from cellstore.core.keycheck import KeyAdvice

__all__ = [
    "MARKER_KINDS",
    "ColumnVersions",
    "CommitRecord",
    "FamilyExpiry",
    "RegionStats",
    "TableReport",
]

#: Delete-marker kinds by type code, as HBase names them (R1.2: ``KeyValue.Type``).
MARKER_KINDS: Mapping[int, str] = {
    int(CellType.DELETE): "Delete",
    int(CellType.DELETE_FAMILY_VERSION): "DeleteFamilyVersion",
    int(CellType.DELETE_COLUMN): "DeleteColumn",
    int(CellType.DELETE_FAMILY): "DeleteFamily",
}


def _key(b: bytes) -> str:
    return to_string_binary(b)


@dataclass(frozen=True)
class RegionStats(JsonForm):
    """One region: the manifest's exact totals plus what the scan saw.

    Attributes:
        region: Region id.
        start: First row key (inclusive); empty = table start.
        end: Row key after the last (exclusive); empty = table end.
        cells: Stored cells (puts and delete markers) in the region's live files, from the
            manifest (a file shared after a split counts in each region holding it).
        bytes: Bytes of those files, from the manifest.
        files: Live store files of the region (all families).
        scanned_cells: Cells of the region read for the report (all of them unless sampled).
        rows: Distinct row keys among the scanned cells.
        hotspot: True for the region with the most cells when it holds more than
            :data:`~cellstore.report.compute.HOTSPOT_FACTOR` times the mean cells per
            region (one at most; none with one region or an even spread).
    """

    region: str
    start: bytes
    end: bytes
    cells: int
    bytes: int
    files: int
    scanned_cells: int
    rows: int
    hotspot: bool = False


@dataclass(frozen=True)
class ColumnVersions(JsonForm):
    """Stored versions of one column (``family:qualifier``), over the scanned puts.

    Attributes:
        family: Column family.
        qualifier: Column qualifier.
        puts: Stored put cells of the column.
        cells: ``(row, column)`` pairs holding at least one put (HBase's "cells").
        max_versions: Most stored puts in one ``(row, column)`` pair.
        over_limit: Puts beyond the family's ``max_versions`` in their pair: stored
            versions no read returns and a major compaction drops (R6.1, R13.3).
    """

    json_keys = "family qualifier column puts cells max_versions mean_versions over_limit"

    family: str
    qualifier: bytes
    puts: int
    cells: int
    max_versions: int
    over_limit: int

    @property
    def mean_versions(self) -> float:
        """Average stored puts per ``(row, column)`` pair."""
        return self.puts / self.cells if self.cells else 0.0

    @property
    def column(self) -> str:
        """``family:qualifier`` (the qualifier as ``Bytes.toStringBinary``)."""
        return f"{self.family}:{to_string_binary(self.qualifier)}"


@dataclass(frozen=True)
class FamilyExpiry(JsonForm):
    """TTL state of one family over the scanned cells (R8.1, R8.2).

    Attributes:
        family: Column family.
        ttl_seconds: The family's TTL; None = forever (nothing expires).
        cells: Scanned cells of the family (puts and markers).
        expired: Those with ``ts < now - ttl * 1000`` (strict, R8.1); markers expire too
            (R8.2). A major compaction drops them (subject to ``min_versions``, R8.4).
        delete_markers: Scanned delete markers of the family, by kind name
            (:data:`MARKER_KINDS`), kinds with none left out.
    """

    json_keys = "family ttl_seconds cells expired expired_share delete_markers"

    family: str
    ttl_seconds: int | None
    cells: int
    expired: int
    delete_markers: Mapping[str, int] = field(default_factory=dict)

    @property
    def expired_share(self) -> float:
        """``expired / cells`` (0 for an empty family)."""
        return self.expired / self.cells if self.cells else 0.0


@dataclass(frozen=True)
class CommitRecord(JsonForm):
    """One commit of the table's history (its manifest log), newest first in the report.

    Attributes:
        version: The table version the commit made.
        operation: ``create``, ``load``, ``compact``, ``split``, ...
        timestamp_ms: Commit time (ms since the epoch, UTC).
        files_added: Live files this version has that the previous one had not; None when
            the previous version has expired (its metadata is gone).
        files_removed: Live files of the previous version this one dropped (None as above).
        cells: Live cells after the commit (manifest totals).
        summary: The commit's own summary (JSON scalars).
    """

    version: int
    operation: str
    timestamp_ms: int
    files_added: int | None
    files_removed: int | None
    cells: int
    summary: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TableReport(JsonForm):
    """What :func:`~cellstore.report.build_report` measured on one table version.

    Per-region cells, bytes and files are exact (manifest). Row keys, versions, delete
    markers and TTL are counted over the scanned cells: every cell of the table unless
    ``sampled`` (then whole row groups spread evenly over every store file, about
    ``sample_rows`` cells in all).

    Attributes:
        table: Table name.
        version: Table version reported on.
        now_ms: "Now" used for TTL expiry.
        total_cells: Stored cells in the live files (manifest).
        total_bytes: Bytes of the live files (manifest).
        total_files: Live store files.
        scanned_cells: Cells read for the report.
        sampled: True when ``scanned_cells`` is a sample of the table's cells.
        regions: Per region, in key order.
        rows: Distinct row keys among the scanned cells.
        key_lengths: ``{length in bytes: distinct row keys}``, ascending.
        first_bytes: 256 counts: distinct row keys by their first byte.
        columns: Versions per column, most puts first.
        families: TTL and delete markers per family, in family order.
        advice: The row-key design advice of ``cellstore advise`` for the table.
        history: Commits, newest first (at most the report's ``history`` limit).
        salt_buckets: Salt buckets of a salted table (the first byte is then the salt).
    """

    json_keys = (
        "table version now_ms total_cells total_bytes total_files scanned_cells sampled "
        "salt_buckets hotspot regions rows key_lengths first_bytes columns families "
        "delete_markers advice history"
    )

    table: str
    version: int
    now_ms: int
    total_cells: int
    total_bytes: int
    total_files: int
    scanned_cells: int
    sampled: bool
    regions: tuple[RegionStats, ...]
    rows: int
    key_lengths: Mapping[int, int]
    first_bytes: tuple[int, ...]
    columns: tuple[ColumnVersions, ...]
    families: tuple[FamilyExpiry, ...]
    advice: KeyAdvice
    history: tuple[CommitRecord, ...]
    salt_buckets: int | None = None

    @property
    def hotspot(self) -> RegionStats | None:
        """The region marked as the hotspot, if any."""
        return next((r for r in self.regions if r.hotspot), None)

    @property
    def delete_markers(self) -> dict[str, int]:
        """Scanned delete markers by kind over all families (kinds with none left out)."""
        out: dict[str, int] = {}
        for f in self.families:
            for kind, n in f.delete_markers.items():
                out[kind] = out.get(kind, 0) + n
        return {k: out[k] for k in MARKER_KINDS.values() if k in out}

    def _json_value(self, name: str) -> Any:
        if name == "hotspot":
            hot = self.hotspot
            return hot.region if hot else None
        if name == "key_lengths":
            return {str(k): v for k, v in self.key_lengths.items()}
        return super()._json_value(name)

    def to_html(self) -> str:
        """The self-contained HTML page (needs matplotlib: ``cellstore[report]``)."""
        from cellstore.report.html import render_html

        return render_html(self)

    def _repr_html_(self) -> str:
        """Notebook display: the page's body (charts need ``cellstore[report]``)."""
        from cellstore.report.html import render_html

        try:
            return render_html(self, fragment=True)
        except ImportError as e:
            return f"<pre>{e}</pre>"

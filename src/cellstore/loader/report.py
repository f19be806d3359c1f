"""The load report and the bad-records file.

A load returns a :class:`LoadReport` (frozen; ``to_dict()`` is the CLI's ``--output json``).
With ``skip_bad_records`` the skipped records go to ``<report dir>/<load id>.bad.jsonl``,
one JSON object per line::

    {"source": "s3://b/in/part-1.csv", "line": 12, "record": 10, "field": "age",
     "reason": "age: not an integer (long)", "values": {"id": "u7", "age": "x"}}

``line`` is one-based for text inputs (null otherwise), ``record`` zero-based within the
source. The report itself is written next to it as ``<load id>.report.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import fsspec

from cellstore.core.results import JsonForm, Total
from cellstore.fs import join, makedirs_for
from cellstore.loader.keycheck import KeyFinding
from cellstore.storefiles.layout import bad_records_file_name, report_file_name
from cellstore.storefiles.rolling import BulkLoadFile

__all__ = [
    "BadRecord",
    "HFileOutputReport",
    "HFileStoreSummary",
    "LoadReport",
    "write_bad_records",
    "write_report",
]


@dataclass(frozen=True, kw_only=True)
class BadRecord(JsonForm):
    """One skipped input record.

    Attributes:
        source: Input file URL or in-memory label.
        line: One-based line (text inputs), or None.
        record: Zero-based record number within the source (None for unparsable lines).
        field: The offending input field (``"<line>"`` for a line that does not parse).
        reason: ``"<field>: <why>"``.
        values: The record's mapped input values (or ``{"text": line}`` for a malformed line).
    """

    source: str
    line: int | None
    record: int | None
    field: str
    reason: str
    values: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class HFileStoreSummary(JsonForm):
    """The HFiles one (family, region) got in a load with ``hfile_output``.

    Attributes:
        family: The family.
        region: The region's id (an HBase encoded name when the regions came from HBase).
        start: The region's start key (inclusive; empty: the first region).
        end: Its end key (exclusive; empty: the last region).
        files: HFiles written (at most ``max_files_per_region``).
        cells: Cells in them.
        bytes: Their total size.
    """

    family: str
    region: str
    start: bytes
    end: bytes
    files: int
    cells: int
    bytes: int


@dataclass(frozen=True, kw_only=True)
class HFileOutputReport(JsonForm):
    """What a load with ``hfile_output`` wrote (the input of ``completebulkload``).

    Attributes:
        url: The output directory, as given.
        split_source: Where the regions came from: ``table``, ``split-keys``,
            ``hbase-table`` or ``hbase-snapshot``.
        regions: Regions the cells were routed to.
        files: Every HFile, in family then region then key order, paths under ``url``.
        stores: Files, cells and bytes per (family, region) that got cells.
    """

    json_keys = "url split_source regions cells bytes stores files"

    url: str
    split_source: str
    regions: int
    files: tuple[BulkLoadFile, ...]
    stores: tuple[HFileStoreSummary, ...]

    cells = Total("files", "cells", "Cells written.")
    bytes = Total("files", "size", "Bytes of HFiles written.")


@dataclass(frozen=True, kw_only=True)
class LoadReport(JsonForm):
    """What a bulk load did.

    Attributes:
        table: Table name.
        load_id: The load's id (idempotency key).
        version: Table version the commit created; None if nothing was committed (empty
            input, or the load id had been applied before).
        seq: Sequence number of the load's files.
        already_applied: The load id had been committed before: nothing was done.
        mode: ``"merge"`` (input within the memory budget: one sorted file set per region
            and family), ``"spill"`` (sorted runs written as separate files as the budget
            fills; readers merge them) or ``"cells"`` (``Table.load_cells``: cells given
            directly, one file per region and family).
        inputs: Input parts read (files, Parquet row-group runs, frame slices).
        records: Input records read.
        rows: Records loaded (good records).
        cells: Cells written (after dropping exact duplicate keys).
        bytes: Bytes of store files written.
        files: Store files written.
        files_per_region: Files per region id.
        duplicates_dropped: Cells dropped because a later one had the same key.
        bad_records: Records skipped (``skip_bad_records``) or 0.
        bad_reasons: Skipped records counted by reason.
        bad_records_path: The bad-records file, if any records were skipped.
        report_path: Where this report was written as JSON, if it was.
        rerouted_files: Files re-routed (or split) because regions changed before commit.
        merged_runs: Spill mode: sorted runs merged (per region and family) before commit
            because they exceeded ``max_files_per_region`` (see ``LoadSettings``).
        warnings: Key-design problems found in a sample of the load's row keys (hot
            region, salt skew, monotonic or long keys; see ``cellstore advise``).
        seconds: Wall time of the load.
        hfile_output: With ``hfile_output``: the HFiles written for HBase's bulk load
            (then nothing is committed: ``version`` and ``seq`` are None, and ``cells``,
            ``bytes``, ``files`` and ``files_per_region`` count the HFiles).
    """

    json_keys = (
        "table load_id version seq already_applied mode inputs records rows cells bytes files"
        " files_per_region duplicates_dropped bad_records bad_reasons bad_records_path"
        " report_path rerouted_files merged_runs warnings seconds cells_per_second"
        " megabytes_per_second"
    )
    json_digits: ClassVar[Mapping[str, int]] = {
        "seconds": 3,
        "cells_per_second": 1,
        "megabytes_per_second": 3,
    }

    table: str
    load_id: str
    version: int | None
    seq: int | None
    already_applied: bool = False
    mode: str = "merge"
    inputs: int = 0
    records: int = 0
    rows: int = 0
    cells: int = 0
    bytes: int = 0
    files: int = 0
    files_per_region: Mapping[str, int] = field(default_factory=dict)
    duplicates_dropped: int = 0
    bad_records: int = 0
    bad_reasons: Mapping[str, int] = field(default_factory=dict)
    bad_records_path: str | None = None
    report_path: str | None = None
    rerouted_files: int = 0
    merged_runs: int = 0
    warnings: tuple[KeyFinding, ...] = ()
    seconds: float = 0.0
    hfile_output: HFileOutputReport | None = None

    @property
    def cells_per_second(self) -> float:
        """Throughput in cells per second."""
        return self.cells / self.seconds if self.seconds > 0 else 0.0

    @property
    def megabytes_per_second(self) -> float:
        """Throughput in MB (10^6 bytes) of store files written per second."""
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (kebab-case keys; ``hfile-output`` only with HFile output)."""
        out = super().to_dict()
        if self.hfile_output is not None:
            out["hfile-output"] = self.hfile_output.to_dict()
        return out

    def _json_value(self, name: str) -> Any:
        if name in ("files_per_region", "bad_reasons"):  # by key
            return dict(sorted(getattr(self, name).items()))
        return super()._json_value(name)


def write_bad_records(
    fs: fsspec.AbstractFileSystem, directory: str, load_id: str, records: Sequence[BadRecord]
) -> str:
    """Write ``<directory>/<load_id>.bad.jsonl`` and return its path."""
    path = join(directory, bad_records_file_name(load_id))
    makedirs_for(fs, path)
    text = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in records)
    with fs.open(path, "wb") as f:
        f.write(text.encode("utf-8"))
    return path


def write_report(fs: fsspec.AbstractFileSystem, directory: str, report: LoadReport) -> str:
    """Write ``<directory>/<load_id>.report.json`` and return its path."""
    path = join(directory, report_file_name(report.load_id))
    makedirs_for(fs, path)
    doc = {**report.to_dict(), "report-path": path}
    with fs.open(path, "wb") as f:
        f.write(json.dumps(doc, indent=1).encode("utf-8"))
    return path

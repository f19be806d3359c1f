"""A :class:`Table`: loads, scans, gets, descriptions and history of one table."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import fsspec
import pyarrow as pa

from cellstore.commit import Commit, NothingToCommit, Staged, commit
from cellstore.core.filters import Filter
from cellstore.core.metadata import (
    METADATA_FORMAT_VERSION,
    FileEntry,
    HistoryEntry,
)
from cellstore.loader.advise import DEFAULT_SAMPLE_KEYS, advise_table
from cellstore.loader.mapping import TableCodecs, resolve_column_types
from cellstore.reader import FamilyTimeRanges, Scan
from cellstore.reader.tables import get_row, scan_table
from cellstore.report import DEFAULT_HISTORY, DEFAULT_SAMPLE_ROWS
from cellstore.warehouse.describe import RegionDescription, TableDescription

if TYPE_CHECKING:
    from cellstore.report import TableReport
    from cellstore.warehouse.catalog import Warehouse

from cellstore.warehouse.loading import TableLoading


class Table(TableLoading):
    """A handle on one table at one version.

    A handle opened at the latest version follows its own commits (after ``load_cells``
    it describes the new version); call :meth:`refresh` to see other writers' commits.
    A handle opened with ``version=`` is pinned and read-only.
    """

    @property
    def warehouse(self) -> Warehouse:
        """The warehouse this table is registered in (its :attr:`catalog`)."""
        return cast("Warehouse", self.catalog)

    # ----------------------------------------------------------------- reads
    def scan(
        self,
        *,
        start_row: bytes | str | None = None,
        stop_row: bytes | str | None = None,
        row_prefix: bytes | str | None = None,
        columns: Iterable[bytes | str] | bytes | str | None = None,
        families: Iterable[str] | str | None = None,
        time_range: tuple[int, int] | None = None,
        family_time_ranges: FamilyTimeRanges | None = None,
        timestamp: int | None = None,
        max_versions: int | None = None,
        raw: bool = False,
        reversed: bool = False,
        limit: int | None = None,
        filter: Filter | Sequence[Filter] | None = None,
        max_results_per_family: int | None = None,
        row_offset_per_family: int = 0,
        shape: str = "cells",
        column_types: Mapping[str, str] | Literal["table"] | None = None,
        decode_errors: str = "raise",
        memory_budget: int | None = None,
        key: Mapping[str, Any] | None = None,
        key_columns: bool | None = None,
        now_ms: int | None = None,
    ) -> Scan:
        """Plan a scan of this table version with HBase's read semantics.

        Args:
            start_row: First row, inclusive (R12.1); None = from the first row.
            stop_row: Row after the last, exclusive; None = to the end. start == stop
                returns nothing.
            row_prefix: Only rows starting with this prefix (R12.4); not with start/stop.
            columns: ``family:qualifier`` names (str or bytes); a bare ``family`` means the
                whole family (R11.1).
            families: Whole families to read. Nothing given = every family.
            time_range: ``(min_ts, max_ts)``, min inclusive, max exclusive (R7.1).
            family_time_ranges: ``{"family": (min_ts, max_ts)}``: that family's own time
                range, replacing ``time_range``/``timestamp`` for it (HBase's
                ``setColumnFamilyTimeRange``, R7.1), applied before version counting and
                to the delete markers the read applies, in raw reads too. An unknown
                family or ``min > max`` is an InvalidArgumentError naming it.
            timestamp: Only this exact timestamp (``[ts, ts+1)``, R7.4).
            max_versions: Versions per column; default 1, capped by the family's
                ``max_versions`` except for raw scans (R6.1, R10.2).
            raw: Return delete markers and masked cells as stored (R10).
            reversed: Rows in descending order; cells inside a row keep their order (R2.4).
                As in HBase, ``start_row`` is then the higher bound (inclusive) and
                ``stop_row`` the lower bound (exclusive) (R12.5).
            limit: At most this many rows (``Scan#setLimit``).
            filter: One filter from :mod:`cellstore.filters` or a sequence of them that
                must all pass. Filters judge the cells the semantics return and never change
                the semantics; with a filter, versions are counted up to the family's
                ``max_versions`` before the filter judges them (R12.8).
            max_results_per_family: At most this many cells per row and family (R12.7).
            row_offset_per_family: Skip this many cells at the start of each row and
                family (R12.7).
            shape: ``"cells"`` (one result row per cell version) or ``"wide"`` (one row per
                row key, a ``family:qualifier`` column each with its newest value).
            column_types: For the wide shape, ``{"family:qualifier": codec}`` decodes those
                columns with HBase's ``Bytes`` encodings (``long``/``int64``, ``int``,
                ``short``, ``double``, ``float``, ``boolean``, ``string``, ``bytes``).
                ``"table"``: the codecs the table's mapping-based loads recorded
                (:meth:`value_codecs`). Naming a column that no mapping-based load
                recorded, on a table with recorded codecs, warns (CellstoreWarning).
            decode_errors: ``"raise"`` (default) or ``"null"`` for values that do not
                decode with their column's codec.
            memory_budget: Most bytes of decoded cells one task may read; larger regions
                are cut at row boundaries using row-group statistics (default 256 MiB).
            key: For a table with a row-key spec: predicates on the key fields, in key
                order: ``{"user": "alice", "ts": (lo, hi)}`` is user == "alice" and
                lo <= ts < hi (a 2-tuple is a range and must come last; either bound may
                be None). They become row ranges, one per salt bucket unless the salt is
                known. Not with ``start_row``/``stop_row``/``row_prefix``.
            key_columns: Add the row key's decoded fields as columns after ``row`` (default:
                on for the wide shape, off for cells; needs a row-key spec).
            now_ms: "Now" for TTL expiry (default: the clock), so TTL reads are testable.

        On a salted table, ``start_row``, ``stop_row`` and ``row_prefix`` are row keys
        without the salt byte: the scan fans out to one range per salt bucket, returns
        rows without the salt byte, bucket by bucket (so not in global key order).

        Returns:
            A :class:`~cellstore.reader.Scan`: call ``to_arrow()``, ``to_pandas()``,
            ``to_batches()``, ``to_dask()``, ``count_rows()`` or ``plan()``.
        """
        return scan_table(
            self,
            start_row=start_row,
            stop_row=stop_row,
            row_prefix=row_prefix,
            columns=columns,
            families=families,
            time_range=time_range,
            family_time_ranges=family_time_ranges,
            timestamp=timestamp,
            max_versions=max_versions,
            raw=raw,
            reversed=reversed,
            limit=limit,
            filter=filter,
            max_results_per_family=max_results_per_family,
            row_offset_per_family=row_offset_per_family,
            shape=shape,
            column_types=resolve_column_types(self.metadata, column_types, stacklevel=3),
            decode_errors=decode_errors,
            memory_budget=memory_budget,
            key=key,
            key_columns=key_columns,
            now_ms=now_ms,
        )

    def value_codecs(self) -> TableCodecs:
        """The value codecs and row key this table's mapping-based loads recorded.

        Each :meth:`load` through a mapping records its columns' codecs in the table
        properties ``mapping.codecs`` and ``mapping.row-key`` (docs/format.md, section 6.1);
        the CLI's ``scan``/``get`` decode with them. Reads stay raw unless asked:
        ``scan(shape="wide", column_types="table")``.
        """
        return TableCodecs.from_properties(self._metadata.properties)

    def get(
        self,
        row: bytes | str,
        *,
        columns: Iterable[bytes | str] | bytes | str | None = None,
        families: Iterable[str] | str | None = None,
        time_range: tuple[int, int] | None = None,
        family_time_ranges: FamilyTimeRanges | None = None,
        timestamp: int | None = None,
        max_versions: int | None = None,
        filter: Filter | Sequence[Filter] | None = None,
        now_ms: int | None = None,
    ) -> pa.Table:
        """Point read of one row (HBase ``Get``, R12.3): its visible cells, in result order.

        Files whose row Bloom filter or row-group statistics rule the row out are not read.
        Options mean the same as for :meth:`scan`. An absent row gives an empty table. On a
        salted table ``row`` is the key without its salt byte (the salt is computed).
        """
        return get_row(
            self,
            row,
            columns=columns,
            families=families,
            time_range=time_range,
            family_time_ranges=family_time_ranges,
            timestamp=timestamp,
            max_versions=max_versions,
            filter=filter,
            now_ms=now_ms,
        )

    def describe(self) -> TableDescription:
        """Families, regions with their files and sizes, totals and the last commit."""
        meta = self._metadata
        regions = []
        by_region: dict[str, list[FileEntry]] = {}
        for f in meta.files:
            by_region.setdefault(f.region, []).append(f)
        totals = meta.file_totals()
        for r in meta.regions:
            files = by_region.get(r.id, [])
            regions.append(
                RegionDescription(
                    r.id,
                    r.start,
                    r.end,
                    len(files),
                    sum(f.cells for f in files),
                    sum(f.size for f in files),
                )
            )
        return TableDescription(
            name=str(self.name),
            table_uuid=meta.table_uuid,
            version=meta.version,
            families=meta.families,
            salt_buckets=meta.salt_buckets,
            regions=tuple(regions),
            files=totals.files,
            cells=totals.cells,
            bytes=totals.bytes,
            next_seq=meta.next_seq,
            last_commit=meta.last_history,
            properties=meta.properties,
            row_key=meta.row_key,
        )

    def upgrade(self) -> bool:
        """Rewrite a format-version-1 table's metadata as format version 2, in one commit.

        The live entries move into one manifest file (docs/format.md, section 13); data
        files, regions, history and snapshots stay as they are, and older versions stay
        version 1 documents (as-of reads and snapshots of them keep working). The handle
        moves to the new version.

        Returns:
            True if the table was upgraded, False if it was format version 2 already.
        """
        self.check_writable("upgrade")

        def update(staged: Staged) -> Mapping[str, Any]:
            meta = staged.meta
            if meta.format_version >= METADATA_FORMAT_VERSION:
                raise NothingToCommit
            files = tuple(meta.files)
            return {
                "format_version": METADATA_FORMAT_VERSION,
                "files": files,
                "summary": {"from-format-version": meta.format_version, "files": len(files)},
            }

        result = commit(self.log, Commit("upgrade", update=update))
        self._metadata = result.metadata
        return result.committed

    def history(self, *, limit: int | None = None) -> list[HistoryEntry]:
        """Commits that made this table, newest first (reads one metadata file each).

        Stops at the first expired version (docs/format.md 13.5).
        """
        out: list[HistoryEntry] = []
        v = self.version
        while v >= 1 and (limit is None or len(out) < limit):
            try:
                out.append(self.log.read(v).last_history)
            except FileNotFoundError:  # expired (jobs.expire): older history is gone
                break
            v -= 1
        return out

    def report(
        self,
        *,
        html: str | os.PathLike[str] | None = None,
        sample_rows: int | None = DEFAULT_SAMPLE_ROWS,
        sample_keys: int = DEFAULT_SAMPLE_KEYS,
        history: int = DEFAULT_HISTORY,
        now_ms: int | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> TableReport:
        """Measure this table version for people to look at (``cellstore report``).

        Cells, bytes and store files per region (the hotspot marked), row-key length and
        first-byte distributions, versions per column, delete markers by kind, the
        TTL-expired share per family, the key-design advice of :meth:`advise` and the
        commit history. Reads the store files (one region at a time, never values);
        writes nothing but ``html``. In a notebook the result renders as the page.

        Args:
            html: Also write the self-contained HTML page here (local path or fsspec
                URL); needs matplotlib (``pip install "cellstore[report]"``).
            sample_rows: Read about this many cells at most: a larger table is sampled
                (whole row groups spread over every file) and the report says so.
                None reads every cell.
            sample_keys: Row keys the key-design advice samples.
            history: Commits to list, newest first.
            now_ms: "Now" for TTL expiry (default: the clock).
            storage_options: fsspec options for an ``html`` URL.

        Returns:
            A :class:`~cellstore.report.TableReport` (``to_dict()`` for JSON,
            ``to_html()`` for the page).

        Raises:
            InvalidArgumentError: ``sample_rows`` or ``history`` out of range.
            ImportError: ``html`` given without matplotlib (names the extra).
        """
        from cellstore.report import build_report, render_html, require_matplotlib

        if html is not None:
            require_matplotlib()  # fail before reading anything
        advice = advise_table(self.fs, self.path, self._metadata, sample_keys=sample_keys)
        result = build_report(
            self.fs,
            self.path,
            self._metadata,
            self.log,
            advice=advice,
            sample_rows=sample_rows,
            history=history,
            now_ms=now_ms,
        )
        if html is not None:
            page = render_html(result)
            with fsspec.open(
                os.fspath(html), "w", encoding="utf-8", **dict(storage_options or {})
            ) as out:
                out.write(page)
        return result

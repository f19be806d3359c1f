"""A :class:`Table`: loads, scans, gets, descriptions and history of one table."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import fsspec

from cellstore.commit import Commit, NothingToCommit, Staged, commit
from cellstore.core.metadata import (
    DEFAULT_FORMAT_VERSION,
    HistoryEntry,
    TableMetadata,
)
from cellstore.loader.advise import DEFAULT_SAMPLE_KEYS, advise_table
from cellstore.loader.mapping import (
    TableCodecs,
    recorded_column_types,
    recorded_value_codecs,
    warn_unrecorded,
)
from cellstore.reader import StoreFileSource, TableDescription, TableReads, store_source
from cellstore.report import DEFAULT_HISTORY, DEFAULT_SAMPLE_ROWS

if TYPE_CHECKING:
    from cellstore.core.comparators import ColumnCodecs
    from cellstore.report import TableReport
    from cellstore.warehouse.catalog import Warehouse

from cellstore.warehouse.loading import TableLoading


class Table(TableReads[TableDescription], TableLoading):
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
    # scan(), get() and describe() come from TableReads (cellstore.reader.readable), over
    # this version's store files.
    def _read_source(self, version: int | None) -> StoreFileSource:
        """The store files of ``version`` (None: the version this handle is at)."""
        return store_source(self, version)

    def value_codecs(self) -> TableCodecs:
        """The value codecs and row key this table's mapping-based loads recorded.

        Each :meth:`load` through a mapping records its columns' codecs in the table
        properties ``mapping.codecs`` and ``mapping.row-key`` (docs/format.md, section 6.1);
        the CLI's ``scan``/``get`` decode with them. Reads stay raw unless asked:
        ``scan(shape="wide", column_types="table")``.
        """
        return TableCodecs.from_properties(self._metadata.properties)

    def _recorded_column_types(self, metadata: TableMetadata) -> Mapping[str, str]:
        return recorded_column_types(metadata)

    def _recorded_value_codecs(self, metadata: TableMetadata) -> ColumnCodecs:
        return recorded_value_codecs(metadata)

    def _warn_unrecorded(self, metadata: TableMetadata, column_types: Mapping[str, str]) -> None:
        warn_unrecorded(metadata, column_types, stacklevel=5)

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
            if meta.format_version >= DEFAULT_FORMAT_VERSION:
                raise NothingToCommit
            files = tuple(meta.files)
            return {
                "format_version": DEFAULT_FORMAT_VERSION,
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

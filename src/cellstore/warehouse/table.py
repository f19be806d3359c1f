"""A :class:`Table`: loads, scans, gets, descriptions and history of one table."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import fsspec

from cellstore.commit import Commit, NothingToCommit, Staged, commit
from cellstore.core.metadata import (
    METADATA_FORMAT_VERSION,
    HistoryEntry,
    TableMetadata,
)
from cellstore.errors import CellstoreWarning
from cellstore.loader.advise import (
    DEFAULT_SAMPLE_KEYS,
)
from cellstore.loader.mapping import TableCodecs
from cellstore.reader import StoreFileSource, TableDescription, TableReads, store_source
from cellstore.report import DEFAULT_HISTORY, DEFAULT_SAMPLE_ROWS

if TYPE_CHECKING:
    from cellstore.report import TableReport

from cellstore.warehouse.loading import TableLoading


class Table(TableReads[TableDescription], TableLoading):
    """A handle on one table at one version.

    A handle opened at the latest version follows its own commits (after ``load_cells``
    it describes the new version); call :meth:`refresh` to see other writers' commits.
    A handle opened with ``version=`` is pinned and read-only.
    """

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
        return TableCodecs.from_properties(metadata.properties).column_types()

    def _warn_unrecorded(self, metadata: TableMetadata, column_types: Mapping[str, str]) -> None:
        """Warn about columns no mapping-based load recorded (cheap: table properties)."""
        import difflib

        codecs = TableCodecs.from_properties(metadata.properties)
        if not codecs.columns and not codecs.families:
            return
        known = list(codecs.columns)
        for name in column_types:
            family = str(name).partition(":")[0]
            if name in codecs.columns or family in codecs.families:
                continue
            close = difflib.get_close_matches(str(name), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            warnings.warn(
                f"table {self.name}: column_types names {name!r}, a column no mapping-based "
                f"load recorded{hint}",
                CellstoreWarning,
                stacklevel=4,
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
        self._writable("upgrade")

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
        result = build_report(
            self.fs,
            self.path,
            self._metadata,
            self.log,
            sample_rows=sample_rows,
            sample_keys=sample_keys,
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

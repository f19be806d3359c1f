"""A :class:`Table`: loads, scans, gets, descriptions and history of one table."""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import fsspec
import pyarrow as pa

from cellstore.commit import Commit, NothingToCommit, Staged, commit
from cellstore.core.family import Family
from cellstore.core.filters import Filter, normalize_filters
from cellstore.core.metadata import (
    METADATA_FORMAT_VERSION,
    FileEntry,
    HistoryEntry,
    TableMetadata,
)
from cellstore.core.names import TableName, validate_load_id
from cellstore.core.regions import (
    Region,
)
from cellstore.core.rowkey import salt_bytes
from cellstore.errors import (
    CellstoreWarning,
    InvalidArgumentError,
    KeyDesignWarning,
)
from cellstore.fs import ensure_exclusive_create
from cellstore.loader import (
    LoadMapping,
    LoadReport,
    LoadSettings,
    ProgressFn,
    TextOptions,
    run_load,
)
from cellstore.loader.advise import (
    DEFAULT_SAMPLE_KEYS,
    AdviceThresholds,
    KeyAdvice,
    advise_input,
    advise_table,
)
from cellstore.loader.direct import (
    KeyKind,
    new_load_id,
    normalize_cells,
    now_ms,
    salt_rows,
    write_cells,
)
from cellstore.loader.execute import commit_load
from cellstore.loader.inputs import InputFormat
from cellstore.loader.mapping import TableCodecs, properties_after_load
from cellstore.loader.plan import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES_PER_REGION,
    DEFAULT_MEMORY_BUDGET,
)
from cellstore.manifest import TableLog
from cellstore.reader import (
    FamilyTimeRanges,
    Scan,
    ScanOptions,
    as_names,
    normalize_family_time_ranges,
)
from cellstore.report import DEFAULT_HISTORY, DEFAULT_SAMPLE_ROWS
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS
from cellstore.storefiles.layout import entry_path, table_dir
from cellstore.storefiles.writer import HFileSettings
from cellstore.warehouse.describe import RegionDescription, TableDescription

if TYPE_CHECKING:
    from cellstore.report import TableReport
    from cellstore.warehouse.catalog import Warehouse


class Table:
    """A handle on one table at one version.

    A handle opened at the latest version follows its own commits (after ``load_cells``
    it describes the new version); call :meth:`refresh` to see other writers' commits.
    A handle opened with ``version=`` is pinned and read-only.
    """

    def __init__(
        self,
        warehouse: Warehouse,
        name: TableName,
        location: str,
        metadata: TableMetadata,
        *,
        pinned: bool = False,
    ) -> None:
        self.warehouse = warehouse
        self.name = name
        self.location = location
        self.path = table_dir(warehouse.root, location)
        self.log = TableLog(warehouse.fs, self.path)
        self._metadata = metadata
        self.pinned = pinned

    def __repr__(self) -> str:
        return f"Table({str(self.name)!r}, version={self.version})"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The warehouse filesystem."""
        return self.warehouse.fs

    @property
    def metadata(self) -> TableMetadata:
        """The metadata of the version this handle points at."""
        return self._metadata

    @property
    def version(self) -> int:
        """The table version this handle points at."""
        return self._metadata.version

    @property
    def families(self) -> tuple[Family, ...]:
        """Column families."""
        return self._metadata.families

    @property
    def regions(self) -> tuple[Region, ...]:
        """Regions in key order."""
        return self._metadata.regions

    @property
    def files(self) -> Sequence[FileEntry]:
        """Live store files (format version 2: read from the manifests on first use)."""
        return self._metadata.files

    def refresh(self) -> Table:
        """Move this handle to the latest version (not allowed on a pinned handle)."""
        self._writable("refresh")
        self._metadata = self.log.read(self.log.latest_version())
        return self

    def _writable(self, what: str) -> None:
        if self.pinned:
            raise InvalidArgumentError(
                f"table {self.name} was opened at version {self.version}; cannot {what} it"
            )

    def file_path(self, entry: FileEntry) -> str:
        """Filesystem path of a live file.

        Raises:
            CorruptFileError: if the entry's path leaves the warehouse (docs/format.md 3.2).
        """
        return entry_path(self.path, entry.path, table=self.name, version=self.version)

    # ---------------------------------------------------------------- writes
    def load_cells(
        self,
        cells: Any,
        *,
        load_id: str | None = None,
        now_ms: int | None = None,
        row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
        keys: KeyKind = "logical",
        assign_seq_id: bool = True,
    ) -> LoadReport:
        """Write cells and commit them at once: the raw write primitive.

        ``cells`` is a pyarrow Table or pandas DataFrame with columns ``row``, ``family``,
        ``qualifier``, ``ts`` (ms; optional, default now), ``type`` (code or HBase name;
        optional, default Put) and ``value`` (see :func:`cellstore.loader.direct.normalize_cells`).
        Cells are routed to regions and sorted (vectorized); one store file per region and
        family is written; one commit adds them all with the next sequence number, so a
        later load wins exact key ties (R3.2). Among identical keys inside one call, the
        last given wins. A failure leaves nothing visible.

        The load writes on the table's newest version (this handle moves there): if
        regions were split or merged meanwhile, or are split during the load, its cells are
        re-routed to the current regions and the commit is retried, as :meth:`load` does.

        On a salted table, row keys are logical keys, as :meth:`get` and :meth:`scan` take
        them: each gets its salt byte (Phoenix), so the cells are found by key. Pass
        ``keys="physical"`` for keys that already carry their salt byte; each one is
        verified (a wrong salt byte is a :class:`~cellstore.errors.BadCellError`).

        Args:
            cells: The cells.
            load_id: Idempotency key: a load id the table has already committed is not
                applied again (the result says ``already_applied``). ASCII letters,
                digits, '_', '-' and '.' (not first), at most 128 characters.
            now_ms: Time used for cells without a timestamp (default: the clock).
            row_group_cells: Cells per Parquet row group.
            keys: ``"logical"`` (default) or ``"physical"`` row keys on a salted table
                (``"physical"`` on an unsalted table is an InvalidArgumentError).
            assign_seq_id: False commits the files without a sequence number, as HBase's
                ``hbase.mapreduce.bulkload.assign.sequenceNumbers=false`` does (R14.5):
                they rank below every other file, so at equal (row, family, qualifier,
                ts, type) the cells already in the table, or loaded later with a
                sequence number, win (R3.1, R3.2); the report's ``seq`` is None. A
                compaction output takes the highest sequence number of its inputs.

        Returns:
            A :class:`~cellstore.loader.LoadReport` (``mode="cells"``; the same type
            :meth:`load` returns).

        Raises:
            BadCellError: naming the first bad record and field (also a physical key whose
                salt byte is wrong); nothing is written.
            InvalidNameError: a load id outside ``[A-Za-z0-9._-]`` (not starting with '.',
                at most 128 characters): it names files.
            CommitConflictError: if a concurrent change made the load impossible.
        """
        self._writable("load into")
        started = time.perf_counter()
        load_id = validate_load_id(load_id or new_load_id())
        base = self.refresh().metadata  # write where the newest regions are

        def report(**fields: Any) -> LoadReport:
            return LoadReport(
                table=str(self.name),
                load_id=load_id,
                mode="cells",
                seconds=time.perf_counter() - started,
                **{"version": None, "seq": None, **fields},
            )

        if load_id in base.load_ids:
            return report(already_applied=True)
        ensure_exclusive_create(self.fs, self.warehouse.root)
        now = now_ms if now_ms is not None else _clock()
        normalized = normalize_cells(cells, metadata=base, now=now)
        normalized = salt_rows(normalized, base.salt_buckets, keys=keys)
        records = normalized.num_rows
        if records == 0:
            return report()
        written, dropped = write_cells(
            self.fs,
            self.path,
            base,
            normalized,
            load_id=load_id,
            seq=base.next_seq,
            row_group_cells=row_group_cells,
        )
        cells_written = sum(w.info.cells for w in written)
        meta, already, written, rerouted = commit_load(  # re-routes if regions changed
            self.fs,
            self.path,
            self.log,
            base,
            written,
            load_id=load_id,
            summary={
                "cells": cells_written,
                "files": len(written),
                "bytes": sum(w.info.size for w in written),
            },
            row_group_cells=row_group_cells,
            assign_seq_id=assign_seq_id,
        )
        self._metadata = meta
        if already:
            return report(already_applied=True)
        return report(
            version=meta.version,
            seq=meta.last_history.summary.get("seq"),
            inputs=1,
            records=records,
            rows=records,
            cells=cells_written,
            files=len(written),
            bytes=sum(w.info.size for w in written),
            files_per_region=dict(Counter(w.region for w in written)),
            duplicates_dropped=dropped,
            rerouted_files=rerouted,
        )

    def load(
        self,
        source: Any,
        *,
        mapping: LoadMapping | Mapping[str, Any] | str | os.PathLike[str],
        load_id: str | None = None,
        skip_bad_records: bool = False,
        format: InputFormat | None = None,
        text: TextOptions | None = None,
        storage_options: Mapping[str, Any] | None = None,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
        max_files_per_region: int = DEFAULT_MAX_FILES_PER_REGION,
        client: Any = None,
        workers: int | None = None,
        progress: ProgressFn | None = None,
        report_dir: str | None = None,
        now_ms: int | None = None,
        key_advice: Literal["warn", "report", "off"] = "warn",
        hfile_output: str | None = None,
        split_keys: Sequence[bytes | str] | str | None = None,
        hbase_root: str | None = None,
        hbase_table: str | None = None,
        hbase_snapshot: str | None = None,
        hfile_settings: HFileSettings | None = None,
        hfile_storage_options: Mapping[str, Any] | None = None,
        assign_seq_id: bool = True,
    ) -> LoadReport:
        r"""Bulk-load records through a mapping, in parallel Dask tasks, in one commit.

        The bulk loader (HBase's ImportTsv + HFileOutputFormat2 + completebulkload in one
        call): input records become cells through ``mapping`` (row key, ``family:qualifier``
        cells with value codecs, timestamp source, optional operation column; nulls are no
        cells), are routed to regions and sorted, and each region's store files are written
        by parallel Dask tasks. One manifest commit adds them all; if regions were split or
        merged meanwhile, files are re-routed (or split) first.

        Args:
            source: fsspec URL(s) or glob(s) of CSV/TSV/JSON-lines/Parquet files
                (compression by extension), a pandas DataFrame, a pyarrow Table, or a Dask
                DataFrame.
            mapping: A :class:`~cellstore.loader.Mapping`, its dict form, or the path/URL of
                a TOML or JSON mapping file.
            load_id: Idempotency key: a load id the table has committed is not applied
                again (the report says ``already_applied``). Default: a fresh id. ASCII
                letters, digits, '_', '-' and '.' (not first), at most 128 characters.
            skip_bad_records: Write bad records to ``<report_dir>/<load_id>.bad.jsonl``
                (with counts by reason in the report) and commit the good ones, instead of
                failing on the first.
            format: Input format for every file (default: from the extension, or the
                mapping's ``[input] format``).
            text: CSV/TSV/JSON-lines reading options (default: the mapping's ``[input]``).
            storage_options: fsspec options for the input URLs.
            memory_budget: Bytes of data the load may hold at once. Inputs estimated above
                it are loaded in sorted runs written as separate files.
            max_file_bytes: Roll store files at about this many uncompressed cell bytes,
                on row boundaries.
            row_group_cells: Cells per Parquet row group.
            max_files_per_region: Inputs loaded in sorted runs leave at most about this
                many store files per region and family: more runs are merged (in bounded
                memory) before the commit. Default 32, HBase's bulk-load limit.
            client: A ``distributed.Client`` to run on; default: local threads.
            workers: Tasks at once (default: the CPU count, or the cluster's threads).
            progress: Called with ``(done, total)`` tasks as tasks finish.
            report_dir: Directory (path or URL) for the report JSON and the bad-records
                file; default ``<table dir>/_loads``.
            now_ms: The load time (timestamp of cells without one; default the clock).
            key_advice: The loader samples the load's row keys and checks them for
                hot-spotting (a region or salt bucket getting most keys), monotonic and
                overlong keys (see :mod:`cellstore.loader.advise`). ``"warn"``: the
                problems are in the report's ``warnings`` and each is also emitted as a
                :class:`~cellstore.errors.KeyDesignWarning`; ``"report"``: only in the
                report; ``"off"``: not checked.
            hfile_output: Write HBase bulk-load HFiles to this directory (path or URL)
                instead of committing to this table, like ``ImportTsv`` with
                ``-Dimporttsv.bulk.output``: ``DIR/<family>/<32 hex>``, every file inside
                one target region, at most ``max_files_per_region`` per region and
                family, rolled at ``max_file_bytes`` between rows, all or nothing. ``DIR``
                must be absent or empty. Then ``hbase completebulkload DIR ns:table``.
                See :mod:`cellstore.loader.hfiles`. ``load_id`` is not recorded.
            split_keys: With ``hfile_output``: the target HBase table's split keys (bytes,
                or printable-form strings with ``\xNN`` escapes), or the path/URL of a
                file with one per line. Default: this table's regions.
            hbase_root: With ``hfile_output``: an HBase root directory (or exported
                snapshot) with the target table, whose regions and family settings
                (compression, block size, Bloom type, encoding) the files follow.
            hbase_table: The target table in ``hbase_root`` (``ns:table``).
            hbase_snapshot: Or a snapshot of it in ``hbase_root``.
            hfile_settings: HFile settings of families without an HBase descriptor
                (default: no compression, no encoding, the family's block size, ROW Bloom).
            hfile_storage_options: fsspec options for ``hfile_output``, the split-key
                file and ``hbase_root``.
            assign_seq_id: False commits without a sequence number (as
                :meth:`load_cells`; HBase's ``assign.sequenceNumbers=false``, R14.5).

        Returns:
            A :class:`~cellstore.loader.LoadReport` (with ``hfile_output`` set when HFiles
            were written).

        Raises:
            BadRecordError: naming the file, line or record, and field of the first bad
                record (without ``skip_bad_records``); nothing is committed.
            InvalidFamilyError: the mapping names a family the table lacks.
            InvalidNameError: a load id outside ``[A-Za-z0-9._-]`` (not starting with '.',
                at most 128 characters): it names files.
            InvalidArgumentError: a mapping or option that does not fit.
            CommitConflictError: a concurrent change made the load impossible.
        """
        self._writable("load into")
        load_id = validate_load_id(load_id or new_load_id())
        if key_advice not in ("warn", "report", "off"):
            raise InvalidArgumentError(
                f"key_advice must be 'warn', 'report' or 'off', not {key_advice!r}"
            )
        if isinstance(mapping, str | os.PathLike):
            mapping = LoadMapping.from_file(os.fspath(mapping))
        elif not isinstance(mapping, LoadMapping):
            mapping = LoadMapping.from_dict(mapping)
        input_opts = dict(mapping.input_options)
        if format is None and input_opts.get("format"):
            format = input_opts["format"]
        if text is None and input_opts:
            text = TextOptions.from_options(input_opts)
        if workers is None:
            workers = (
                max(1, sum(client.nthreads().values()))
                if client is not None
                else os.cpu_count() or 2
            )
        hfile_args = (split_keys, hbase_root, hbase_table, hbase_snapshot, hfile_settings)
        if hfile_output is None and any(a is not None for a in hfile_args):
            raise InvalidArgumentError(
                "split_keys, hbase_root, hbase_table, hbase_snapshot and hfile_settings "
                "apply only with hfile_output"
            )
        if hfile_output is not None and not assign_seq_id:
            raise InvalidArgumentError(
                "assign_seq_id=False applies to loads that commit to this table, not "
                "with hfile_output (HBase's completebulkload decides the sequence id)"
            )
        if hfile_output is None:
            ensure_exclusive_create(self.fs, self.warehouse.root)
        settings = LoadSettings(
            memory_budget=memory_budget,
            max_file_bytes=max_file_bytes,
            row_group_cells=row_group_cells,
            skip_bad_records=skip_bad_records,
            workers=workers,
            max_files_per_region=max_files_per_region,
            assign_seq_id=assign_seq_id,
            **({"key_sample": 0} if key_advice == "off" else {}),
        )
        if hfile_output is not None:
            from cellstore.loader.hfiles import hfile_regions, run_hfile_load

            metadata = self.log.read(self.log.latest_version())
            report = run_hfile_load(
                fs=self.fs,
                table_path=self.path,
                metadata=metadata,
                source=source,
                mapping=mapping,
                load_id=load_id,
                now_ms=now_ms if now_ms is not None else _clock(),
                settings=settings,
                hfile_output=hfile_output,
                target=hfile_regions(
                    metadata,
                    split_keys=split_keys,
                    hbase_root=hbase_root,
                    hbase_table=hbase_table,
                    hbase_snapshot=hbase_snapshot,
                    storage_options=hfile_storage_options,
                ),
                hfile_settings=hfile_settings,
                output_storage_options=hfile_storage_options,
                input_format=format,
                text=text,
                input_storage_options=storage_options,
                client=client,
                progress=progress,
                report_dir=report_dir,
            )
            self._warn_keys(report, key_advice)
            return report
        report, meta = run_load(
            fs=self.fs,
            table_path=self.path,
            table_url=self.fs.unstrip_protocol(self.path),
            storage_options=self.warehouse.storage_options,
            log=self.log,
            source=source,
            mapping=mapping,
            load_id=load_id,
            now_ms=now_ms if now_ms is not None else _clock(),
            settings=settings,
            input_format=format,
            text=text,
            input_storage_options=storage_options,
            client=client,
            progress=progress,
            report_dir=report_dir,
        )
        if report.version is not None:
            self._warn_codec_changes(mapping)
        self._metadata = meta
        self._warn_keys(report, key_advice)
        return report

    def _warn_codec_changes(self, mapping: LoadMapping) -> None:
        """Warn about columns a load recorded with another codec than before (it wins)."""
        before = self._metadata
        _, changes = properties_after_load(before.properties, mapping, stored_spec=before.row_key)
        for message in changes:
            warnings.warn(f"table {self.name}: {message}", CellstoreWarning, stacklevel=3)

    def _warn_keys(self, report: LoadReport, key_advice: str) -> None:
        if key_advice == "warn":
            for finding in report.warnings:
                warnings.warn(
                    f"table {self.name}: {finding.message}. Fix: {finding.fix}",
                    KeyDesignWarning,
                    stacklevel=3,
                )

    def advise(
        self,
        source: Any = None,
        *,
        mapping: LoadMapping | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        sample_keys: int = DEFAULT_SAMPLE_KEYS,
        format: InputFormat | None = None,
        text: TextOptions | None = None,
        storage_options: Mapping[str, Any] | None = None,
        thresholds: AdviceThresholds | None = None,
    ) -> KeyAdvice:
        """Row-key design advice: hot-spotting, monotonic and long keys, long names.

        Without ``source``, checks this table version: the distribution of cells over
        regions (from the manifest) and a sample of row keys and qualifiers from its
        store files. With ``source`` and ``mapping``, checks the keys a :meth:`load` of
        it would build (the point: advice before loading), routed to this table's
        regions. Nothing is written. See :mod:`cellstore.loader.advise` for the checks
        and their thresholds.

        Args:
            source: Input to check, as :meth:`load` takes it (not a Dask DataFrame), or
                None to check the table's own data.
            mapping: The load mapping (with ``source``): object, dict or file path/URL.
            sample_keys: Row keys (input records) to sample at most.
            format: Input format (default: from the extension or the mapping).
            text: Text-input options (default: the mapping's ``[input]``).
            storage_options: fsspec options for the input URLs.
            thresholds: When a sample is a problem.

        Returns:
            A :class:`~cellstore.loader.advise.KeyAdvice` (``to_dict()`` for JSON).

        Raises:
            InvalidArgumentError: ``source`` without a mapping, or an unusable input.
            InvalidFamilyError: the mapping names a family the table lacks.
        """
        if source is None:
            if mapping is not None:
                raise InvalidArgumentError("a mapping needs an input to advise on")
            return advise_table(
                self.fs,
                self.path,
                self._metadata,
                sample_keys=sample_keys,
                thresholds=thresholds,
            )
        if mapping is None:
            raise InvalidArgumentError("advice on input needs the load's mapping")
        if isinstance(mapping, str | os.PathLike):
            mapping = LoadMapping.from_file(os.fspath(mapping), storage_options=storage_options)
        elif not isinstance(mapping, LoadMapping):
            mapping = LoadMapping.from_dict(mapping)
        input_opts = dict(mapping.input_options)
        if format is None and input_opts.get("format"):
            format = input_opts["format"]
        if text is None and input_opts:
            text = TextOptions.from_options(input_opts)
        return advise_input(
            source,
            mapping=mapping,
            metadata=self._metadata,
            sample_keys=sample_keys,
            input_format=format,
            text=text,
            storage_options=storage_options,
            thresholds=thresholds,
        )

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
        if isinstance(column_types, str):
            column_types = self._recorded_column_types(column_types)
        elif column_types:
            self._warn_unrecorded(column_types)
        if families is None and columns is None:
            families = self._visible_families()
        options = ScanOptions(
            start_row=start_row,
            stop_row=stop_row,
            row_prefix=row_prefix,
            columns=as_names(columns),
            families=as_names(families),
            time_range=time_range,
            family_time_ranges=normalize_family_time_ranges(family_time_ranges),
            timestamp=timestamp,
            max_versions=max_versions,
            raw=raw,
            reversed=reversed,
            limit=limit,
            filter=normalize_filters(filter),
            max_results_per_family=max_results_per_family,
            row_offset_per_family=row_offset_per_family,
            shape=shape,
            column_types=tuple((column_types or {}).items()) or None,
            decode_errors=decode_errors,
            memory_budget=memory_budget,
            key=tuple(key.items()) if key is not None else None,
            key_columns=key_columns,
            now_ms=now_ms,
        )
        return Scan(self.fs, self.path, self._metadata, options, now_ms=_clock())

    def _visible_families(self) -> list[str] | None:
        """The families a scan or get reads when none are named, None for all.

        Families listed in the property ``hidden-families`` (local index rows) are left
        out unless named.
        """
        hidden = set(self._metadata.properties.get("hidden-families", "").split(",")) - {""}
        if not hidden:
            return None
        return [f for f in self._metadata.family_names if f not in hidden]

    def value_codecs(self) -> TableCodecs:
        """The value codecs and row key this table's mapping-based loads recorded.

        Each :meth:`load` through a mapping records its columns' codecs in the table
        properties ``mapping.codecs`` and ``mapping.row-key`` (docs/format.md, section 6.1);
        the CLI's ``scan``/``get`` decode with them. Reads stay raw unless asked:
        ``scan(shape="wide", column_types="table")``.
        """
        return TableCodecs.from_properties(self._metadata.properties)

    def _recorded_column_types(self, which: str) -> dict[str, str]:
        if which != "table":
            raise InvalidArgumentError(f"column_types must be a mapping or 'table', not {which!r}")
        types = self.value_codecs().column_types()
        if not types:
            raise InvalidArgumentError(
                f"table {self.name} has no recorded column codecs (no mapping-based load "
                "recorded any); pass column_types as {'family:qualifier': codec}"
            )
        return types

    def _warn_unrecorded(self, column_types: Mapping[str, str]) -> None:
        """Warn about columns no mapping-based load recorded (cheap: table properties)."""
        import difflib

        codecs = self.value_codecs()
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
                stacklevel=3,
            )

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
        key = row.encode("utf-8") if isinstance(row, str) else bytes(row)
        if not key:
            raise InvalidArgumentError("get needs a non-empty row key (R16.1)")
        buckets = self._metadata.salt_buckets
        if buckets is not None:  # salt-free key in, salt-free rows out
            key = bytes([int(salt_bytes(pa.array([key], pa.binary()), buckets)[0])]) + key
        if families is None and columns is None:
            families = self._visible_families()
        options = ScanOptions(
            start_row=key,
            stop_row=key + b"\x00",
            columns=as_names(columns),
            families=as_names(families),
            time_range=time_range,
            family_time_ranges=normalize_family_time_ranges(family_time_ranges),
            timestamp=timestamp,
            max_versions=max_versions,
            filter=normalize_filters(filter),
            now_ms=now_ms,
            point_row=key,
        )
        return Scan(self.fs, self.path, self._metadata, options, now_ms=_clock()).to_arrow()

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


def _clock() -> int:
    return now_ms()

"""Writes of a table handle: ``load_cells``, ``load`` and ``advise``.

Mixed into :class:`~cellstore.warehouse.table.Table` (key-design advice runs before or
after a load).
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from cellstore.commit import now_ms as _clock
from cellstore.core.names import validate_load_id
from cellstore.errors import (
    CellstoreWarning,
    InvalidArgumentError,
    KeyDesignWarning,
)
from cellstore.fs import ensure_exclusive_create
from cellstore.handle import TableHandle
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
    salt_rows,
    write_cells,
)
from cellstore.loader.execute import commit_load
from cellstore.loader.inputs import InputFormat
from cellstore.loader.mapping import properties_after_load
from cellstore.loader.plan import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES_PER_REGION,
    DEFAULT_MEMORY_BUDGET,
)
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS
from cellstore.storefiles.rolling import HFileSettings


class TableLoading(TableHandle):
    """Loads into a table (mixed into :class:`~cellstore.warehouse.table.Table`)."""

    # ---------------------------------------------------------------- writes
    def load_cells(
        self,
        cells: Any,
        *,
        load_id: str | None = None,
        now_ms: int | None = None,
        row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
        keys: KeyKind | None = None,
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
        ``keys="physical"`` for keys that already carry their salt byte, such as
        :meth:`RowKeySpec.encode <cellstore.core.rowkey.RowKeySpec.encode>` returns; each
        one is verified (a wrong salt byte is a :class:`~cellstore.errors.BadCellError`).
        By default a call whose every key already starts with its own salt byte (and, on
        a table with a row-key spec, is the spec's key behind it) is refused with a
        ``BadCellError`` naming ``keys="physical"``: salting such keys again would store
        rows that no read by key finds. ``keys="logical"`` loads them as logical keys.

        Args:
            cells: The cells.
            load_id: Idempotency key: a load id the table has already committed is not
                applied again (the result says ``already_applied``). ASCII letters,
                digits, '_', '-' and '.' (not first), at most 128 characters.
            now_ms: Time used for cells without a timestamp (default: the clock).
            row_group_cells: Cells per Parquet row group.
            keys: On a salted table: None (default; logical keys, refusing keys that
                all already carry their salt byte), ``"logical"`` (logical keys, not
                checked) or ``"physical"`` (keys with their salt byte, verified).
                ``"physical"`` on an unsalted table is an InvalidArgumentError.
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
                salt byte is wrong, or, with ``keys=None``, keys that all already carry
                their salt byte); nothing is written.
            InvalidNameError: a load id outside ``[A-Za-z0-9._-]`` (not starting with '.',
                at most 128 characters): it names files.
            CommitConflictError: if a concurrent change made the load impossible.
        """
        self.check_writable("load into")
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
        ensure_exclusive_create(self.fs, self.root)
        now = now_ms if now_ms is not None else _clock()
        normalized = normalize_cells(cells, metadata=base, now=now)
        normalized = salt_rows(normalized, base.salt_buckets, keys=keys, row_key=base.row_key)
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
            hooks=self.load_hooks,
            storage_options=self.storage_options,
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
        self.check_writable("load into")
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
            ensure_exclusive_create(self.fs, self.root)
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
            storage_options=self.storage_options,
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
            hooks=self.load_hooks,
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

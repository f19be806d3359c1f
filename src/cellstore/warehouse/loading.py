"""Writes of a table handle: ``load_cells``, ``load``, ``write_hfiles`` and ``advise``.

Mixed into :class:`~cellstore.warehouse.table.Table`: each method checks the handle may
write, hands the table and one settings object to the loader
(:mod:`cellstore.loader.pipeline`, :mod:`cellstore.loader.hfiles`), moves the handle to
the version the load committed and turns the report's findings into Python warnings.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Unpack

from cellstore.commit import now_ms as _clock
from cellstore.errors import (
    CellstoreWarning,
    InvalidArgumentError,
    KeyDesignWarning,
)
from cellstore.handle import TableHandle
from cellstore.loader import (
    HFileOutput,
    LoadKwargs,
    LoadMapping,
    LoadReport,
    LoadSettings,
    TextOptions,
    WriteHFilesKwargs,
)
from cellstore.loader.advise import (
    DEFAULT_SAMPLE_KEYS,
    AdviceThresholds,
    KeyAdvice,
    advise_input,
    advise_table,
)
from cellstore.loader.direct import KeyKind
from cellstore.loader.hfiles import run_hfile_load
from cellstore.loader.inputs import InputFormat
from cellstore.loader.mapping import properties_after_load
from cellstore.loader.pipeline import load_cells, load_table
from cellstore.loader.settings import (
    hfile_output_of,
    load_mapping,
    resolve_input,
    resolve_settings,
    split_overrides,
)
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS
from cellstore.storefiles.hfile.options import HFileOptions


def _settings(settings: LoadSettings | None, overrides: Mapping[str, Any]) -> LoadSettings:
    """``settings`` (default ``LoadSettings()``) with keyword overrides, resolved."""
    base = settings if settings is not None else LoadSettings()
    return resolve_settings(replace(base, **overrides) if overrides else base)


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
        report, self._metadata = load_cells(
            self,
            cells,
            load_id=load_id,
            now_ms=now_ms if now_ms is not None else _clock(),
            row_group_cells=row_group_cells,
            keys=keys,
            assign_seq_id=assign_seq_id,
        )
        return report

    def load(
        self,
        source: Any,
        settings: LoadSettings | None = None,
        /,
        *,
        hfile_output: str | None = None,
        split_keys: Sequence[bytes | str] | str | None = None,
        hbase_root: str | None = None,
        hbase_table: str | None = None,
        hbase_snapshot: str | None = None,
        hfile_settings: HFileOptions | None = None,
        hfile_storage_options: Mapping[str, Any] | None = None,
        **overrides: Unpack[LoadKwargs],
    ) -> LoadReport:
        """Bulk-load records through a mapping, in parallel Dask tasks, in one commit.

        The bulk loader (HBase's ImportTsv + HFileOutputFormat2 + completebulkload in one
        call): input records become cells through the settings' ``mapping`` (row key,
        ``family:qualifier`` cells with value codecs, timestamp source, optional operation
        column; nulls are no cells), are routed to regions and sorted, and each region's
        store files are written by parallel Dask tasks. One manifest commit adds them
        all; if regions were split or merged meanwhile, files are re-routed (or split)
        first. ``t.load(src, mapping=m, memory_budget=2 << 30)`` and
        ``t.load(src, LoadSettings(mapping=m, memory_budget=2 << 30))`` are the same.

        Args:
            source: fsspec URL(s) or glob(s) of CSV/TSV/JSON-lines/Parquet files
                (compression by extension), a pandas DataFrame, a pyarrow Table, or a Dask
                DataFrame.
            settings: Every option of the load (:class:`~cellstore.loader.LoadSettings`:
                mapping, input format and text options, bad-record handling, key advice,
                memory budget, file sizes, workers and client, progress, load id, clock,
                report directory, sequence numbers).
            hfile_output: Write HBase bulk-load HFiles to this directory instead of
                committing: the same as :meth:`write_hfiles` (preferred), which takes the
                arguments below as an :class:`~cellstore.loader.HFileOutput`
                (``hfile_storage_options`` is its ``output_storage_options``).
            split_keys: With ``hfile_output``: the HBase table's split keys (as
                :class:`~cellstore.loader.HFileOutput` takes them).
            hbase_root: With ``hfile_output``: the HBase root of the target table.
            hbase_table: With ``hbase_root``: the target table.
            hbase_snapshot: With ``hbase_root``: a snapshot of the target table.
            hfile_settings: With ``hfile_output``: HFile options of families without an
                HBase descriptor.
            hfile_storage_options: With ``hfile_output``: fsspec options for it, the
                split-key file and ``hbase_root``.
            **overrides: :class:`~cellstore.loader.LoadSettings` fields replacing those of
                ``settings`` (``mapping=...``, ``skip_bad_records=True``, ...).

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
        resolved = _settings(settings, overrides)
        legacy: dict[str, Any] = {
            "split_keys": split_keys,
            "hbase_root": hbase_root,
            "hbase_table": hbase_table,
            "hbase_snapshot": hbase_snapshot,
            "hfile_settings": hfile_settings,
        }
        if hfile_output is not None:
            legacy["output_storage_options"] = hfile_storage_options
            return self.write_hfiles(source, HFileOutput(output=hfile_output, **legacy), resolved)
        if any(a is not None for a in legacy.values()):
            raise InvalidArgumentError(
                "split_keys, hbase_root, hbase_table, hbase_snapshot and hfile_settings "
                "apply only with hfile_output"
            )
        report, meta = load_table(self, source, resolved)
        if report.version is not None:
            self._warn_codec_changes(load_mapping(resolved))
        self._metadata = meta
        self._warn_keys(report, resolved.key_advice)
        return report

    def write_hfiles(
        self,
        source: Any,
        output: HFileOutput | str | None = None,
        settings: LoadSettings | None = None,
        /,
        **overrides: Unpack[WriteHFilesKwargs],
    ) -> LoadReport:
        """Load records as HBase bulk-load HFiles for this table's regions; commit nothing.

        ImportTsv with ``-Dimporttsv.bulk.output=DIR``: the load's pipeline (read, map,
        build row keys, route by region, sort, bad records) runs as in :meth:`load`, but
        each region's cells of each family go to HFiles in ``completebulkload``'s layout,
        ``DIR/<family>/<32 hex>``, every file inside one target region, at most
        ``max_files_per_region`` per region and family, rolled at ``max_file_bytes``
        between rows, all or nothing (``DIR`` must be absent or empty). Then
        ``hbase completebulkload DIR ns:table``. The regions are this table's newest
        ones unless the output names split keys or an HBase table (see
        :class:`~cellstore.loader.HFileOutput` and :mod:`cellstore.loader.hfiles`). The
        load id is not recorded; ``assign_seq_id=False`` is refused.

        Args:
            source: As :meth:`load` takes it.
            output: Where the HFiles go and for which HBase table
                (:class:`~cellstore.loader.HFileOutput`), or just the directory.
            settings: How the input is loaded, as for :meth:`load`.
            **overrides: Fields of :class:`~cellstore.loader.LoadSettings` and of
                :class:`~cellstore.loader.HFileOutput` replacing those of ``settings``
                and ``output``.

        Returns:
            A :class:`~cellstore.loader.LoadReport` with ``hfile_output`` set (``version``
            and ``seq`` None).

        Raises:
            InvalidArgumentError: the output directory is not empty; conflicting options.
            InvalidFamilyError: a mapped family the table or the HBase table lacks.
            BadRecordError: a bad record (without ``skip_bad_records``); nothing is left
                in the output directory.
        """
        self.check_writable("load into")
        load_overrides, output_overrides = split_overrides(overrides)
        resolved = _settings(settings, load_overrides)
        target = hfile_output_of(output, output_overrides)
        report = run_hfile_load(self, source, resolved, target)
        self._warn_keys(report, resolved.key_advice)
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
        resolved, format, text = resolve_input(mapping, format, text, storage_options)
        return advise_input(
            source,
            mapping=resolved,
            metadata=self._metadata,
            sample_keys=sample_keys,
            input_format=format,
            text=text,
            storage_options=storage_options,
            thresholds=thresholds,
        )

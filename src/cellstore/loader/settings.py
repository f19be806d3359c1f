"""Every option of a load, described once: :class:`LoadSettings` and :class:`HFileOutput`.

A load is ``source`` + :class:`LoadSettings` (how records become cells, how strictly, with
how much memory and parallelism, under which load id and clock, where the report goes),
and either a table to commit to (``Table.load``) or an :class:`HFileOutput` (HBase
bulk-load HFiles: ``Table.write_hfiles`` or the table-less
:func:`~cellstore.loader.write_hfiles`). Both are frozen; the public entry points take one
object plus typed keyword overrides (``**overrides: Unpack[LoadKwargs]``), so
``t.load(src, mapping=m, memory_budget=2 << 30)`` and
``t.load(src, LoadSettings(mapping=m, memory_budget=2 << 30))`` are the same load.

:class:`LoadKwargs` and :class:`HFileOutputKwargs` name the same fields with the same types
as the dataclasses (a test checks that they agree).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final, Literal, TypedDict

from cellstore.commit import now_ms as clock_ms
from cellstore.core.names import validate_load_id
from cellstore.errors import InvalidArgumentError
from cellstore.loader.inputs import InputFormat, TextOptions
from cellstore.loader.mapping import LoadMapping
from cellstore.storefiles.hfile.options import HFileOptions
from cellstore.storefiles.writer import DEFAULT_ROW_GROUP_CELLS

__all__ = [
    "DEFAULT_KEY_SAMPLE",
    "DEFAULT_MAX_FILES_PER_REGION",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MEMORY_BUDGET",
    "MEMORY_FACTOR",
    "HFileOutput",
    "HFileOutputKwargs",
    "KeyAdvice",
    "LoadKwargs",
    "LoadSettings",
    "ProgressFn",
    "WriteHFilesKwargs",
    "hfile_output_of",
    "load_mapping",
    "new_load_id",
    "resolve_input",
    "resolve_settings",
    "split_overrides",
]

#: ``progress(done, total)``: called as tasks finish.
ProgressFn = Callable[[int, int], None]
#: What a load does with the key-design findings on its sampled row keys.
KeyAdvice = Literal["warn", "report", "off"]

#: Default memory budget of a load (bytes of Arrow data held at once, all tasks together).
DEFAULT_MEMORY_BUDGET: Final = 1 << 30
#: Default size at which a store file is rolled (uncompressed cell bytes; HBase rolls
#: HFiles at ``hbase.hregion.max.filesize``, default 10 GiB, but smaller files parallelise
#: reads and keep row groups seekable).
DEFAULT_MAX_FILE_BYTES: Final = 1 << 30
#: Most store files per region and family a spill-mode load leaves (HBase's
#: ``hbase.mapreduce.bulkload.max.hfiles.perRegion.perFamily``, R14.4).
DEFAULT_MAX_FILES_PER_REGION: Final = 32
#: Row keys a load samples for its key-design checks.
DEFAULT_KEY_SAMPLE: Final = 16_384
#: Peak memory of processing input data, as a multiple of its Arrow size (records, their
#: encoded form, cells, the sorted copy and the Parquet writer's buffers). Conservative.
MEMORY_FACTOR: Final = 6


@dataclass(frozen=True, kw_only=True)
class LoadSettings:
    """Every option of a load (frozen; ``dataclasses.replace`` makes variants).

    Fields left None are filled in when the load starts (see
    :func:`cellstore.loader.pipeline.resolve_settings`): a fresh load id, the clock, the
    mapping's ``[input]`` format and text options, the CPU count or the cluster's threads.

    Attributes:
        mapping: How records become cells: a :class:`~cellstore.loader.LoadMapping`, its
            dict form, or the path/URL of a TOML or JSON mapping file (read with
            ``storage_options``). Required by every load.
        format: Input format for every file (default: from the extension, or the
            mapping's ``[input] format``).
        text: CSV/TSV/JSON-lines reading options (default: the mapping's ``[input]``).
        storage_options: fsspec options for the input URLs (and the mapping file).
        skip_bad_records: Write bad records to ``<report_dir>/<load_id>.bad.jsonl`` (with
            counts by reason in the report) and load the good ones, instead of failing on
            the first.
        key_advice: The load samples its row keys and checks them for hot-spotting,
            monotonic and overlong keys (:mod:`cellstore.loader.advise`). ``"warn"``: the
            problems are in the report's ``warnings`` and each is also emitted as a
            :class:`~cellstore.errors.KeyDesignWarning`; ``"report"``: only in the report;
            ``"off"``: not checked.
        key_sample: Row keys the load samples (spread over its tasks, in input order) for
            those checks; 0 turns them off.
        memory_budget: Bytes of data the load may hold at once, all tasks together.
            Inputs estimated above it are loaded in sorted runs written as separate files.
        max_file_bytes: Roll output files at about this many uncompressed cell bytes, on
            row boundaries.
        row_group_cells: Cells per Parquet row group.
        max_files_per_region: Spill mode: when a region and family would get more files
            than this (HBase refuses more than 32 per region and family in one bulk load,
            R14.4), its sorted runs are merged (in bounded memory) first.
        workers: Tasks running at once (default: the CPU count, or the cluster's threads).
        client: A ``distributed.Client`` to run on (default: local threads). Not sent to
            the tasks, not compared.
        progress: Called with ``(done, total)`` tasks as tasks finish. Not compared.
        load_id: Idempotency key: a load id the table has committed is not applied again
            (the report says ``already_applied``). Default: a fresh id. ASCII letters,
            digits, '_', '-' and '.' (not first), at most 128 characters.
        now_ms: The load time: timestamp of cells without one (default: the clock); with
            HFile output also the files' ``BULKLOAD_TIMESTAMP``.
        report_dir: Directory (path or URL) for the report JSON and the bad-records file;
            default ``<table dir>/_loads`` (a table-less HFile load writes none without it).
        assign_seq_id: Commit the files with the next sequence number (default). False
            is HBase's ``hbase.mapreduce.bulkload.assign.sequenceNumbers=false`` (R14.5):
            the files get none, and their cells lose every equal-key tie (R3.1). Only for
            loads that commit to a table.

    Raises:
        InvalidArgumentError: a value out of range (on construction).
    """

    mapping: LoadMapping | Mapping[str, Any] | str | os.PathLike[str] | None = None
    format: InputFormat | None = None
    text: TextOptions | None = None
    storage_options: Mapping[str, Any] | None = field(default=None, repr=False)
    skip_bad_records: bool = False
    key_advice: KeyAdvice = "warn"
    key_sample: int = DEFAULT_KEY_SAMPLE
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS
    max_files_per_region: int = DEFAULT_MAX_FILES_PER_REGION
    workers: int | None = None
    client: Any = field(default=None, compare=False, repr=False)
    progress: ProgressFn | None = field(default=None, compare=False, repr=False)
    load_id: str | None = None
    now_ms: int | None = None
    report_dir: str | None = None
    assign_seq_id: bool = True

    def __post_init__(self) -> None:
        if self.memory_budget < 1 << 20:
            raise InvalidArgumentError("memory_budget must be at least 1 MiB")
        if self.max_file_bytes < 1 << 10:
            raise InvalidArgumentError("max_file_bytes must be at least 1 KiB")
        if self.row_group_cells < 1:
            raise InvalidArgumentError("row_group_cells must be positive")
        if self.workers is not None and self.workers < 1:
            raise InvalidArgumentError("workers must be positive")
        if self.max_files_per_region < 1:
            raise InvalidArgumentError("max_files_per_region must be at least 1")
        if self.key_sample < 0:
            raise InvalidArgumentError("key_sample must not be negative")
        if self.key_advice not in ("warn", "report", "off"):
            raise InvalidArgumentError(
                f"key_advice must be 'warn', 'report' or 'off', not {self.key_advice!r}"
            )

    @property
    def task_count(self) -> int:
        """Tasks running at once: ``workers``, else the cluster's threads or CPU count."""
        if self.workers is not None:
            return self.workers
        if self.client is not None:
            return max(1, int(sum(self.client.nthreads().values())))
        return os.cpu_count() or 2

    @property
    def run_bytes(self) -> int:
        """Input bytes one task accumulates before writing a sorted run (spill mode)."""
        return max(1 << 16, self.memory_budget // (MEMORY_FACTOR * self.task_count))

    @property
    def sampled_keys(self) -> int:
        """Row keys to sample for the key-design checks (0 with ``key_advice="off"``)."""
        return 0 if self.key_advice == "off" else self.key_sample


class LoadKwargs(TypedDict, total=False):
    """:class:`LoadSettings`' fields as keyword overrides (same names and types)."""

    mapping: LoadMapping | Mapping[str, Any] | str | os.PathLike[str] | None
    format: InputFormat | None
    text: TextOptions | None
    storage_options: Mapping[str, Any] | None
    skip_bad_records: bool
    key_advice: KeyAdvice
    key_sample: int
    memory_budget: int
    max_file_bytes: int
    row_group_cells: int
    max_files_per_region: int
    workers: int | None
    client: Any
    progress: ProgressFn | None
    load_id: str | None
    now_ms: int | None
    report_dir: str | None
    assign_seq_id: bool


@dataclass(frozen=True, kw_only=True)
class HFileOutput:
    r"""Where and for which HBase table a load writes bulk-load HFiles instead of committing.

    ImportTsv's ``-Dimporttsv.bulk.output=DIR``: ``DIR/<family>/<32 hex>``, every file
    inside one target region, at most ``max_files_per_region`` per region and family,
    rolled at ``max_file_bytes`` between rows (both :class:`LoadSettings`), all or nothing.
    Then ``hbase completebulkload DIR ns:table``. See :mod:`cellstore.loader.hfiles`.

    Attributes:
        output: The output directory (path or URL); absent or empty.
        split_keys: The target HBase table's split keys (bytes, or printable-form strings
            with ``\xNN`` escapes), or the path/URL of a file with one per line. Default:
            the cellstore table's regions (one region without a table).
        hbase_root: An HBase root directory (or exported snapshot) with the target table,
            whose regions and family settings (compression, block size, Bloom type,
            encoding) the files follow.
        hbase_table: The target table in ``hbase_root`` (``ns:table``).
        hbase_snapshot: Or a snapshot of it in ``hbase_root``.
        hfile_settings: HFile writer options of families without an HBase descriptor
            (default: no compression, no encoding, the family's block size, ROW Bloom);
            its ``threads`` apply to every family's files.
        output_storage_options: fsspec options for ``output``, the split-key file and
            ``hbase_root``.
        table: The target's name in the report (default: the HBase table's, else the
            cellstore table's, else empty).
    """

    output: str
    split_keys: Sequence[bytes | str] | str | None = None
    hbase_root: str | None = None
    hbase_table: str | None = None
    hbase_snapshot: str | None = None
    hfile_settings: HFileOptions | None = None
    output_storage_options: Mapping[str, Any] | None = None
    table: str | None = None


class HFileOutputKwargs(TypedDict, total=False):
    """:class:`HFileOutput`'s fields as keyword overrides (same names and types)."""

    output: str
    split_keys: Sequence[bytes | str] | str | None
    hbase_root: str | None
    hbase_table: str | None
    hbase_snapshot: str | None
    hfile_settings: HFileOptions | None
    output_storage_options: Mapping[str, Any] | None
    table: str | None


class WriteHFilesKwargs(LoadKwargs, HFileOutputKwargs, total=False):
    """Overrides of an HFile-output load: :class:`LoadKwargs` and :class:`HFileOutputKwargs`."""


_OUTPUT_FIELDS: Final = frozenset(f.name for f in fields(HFileOutput))


def split_overrides(
    overrides: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split :class:`WriteHFilesKwargs` into (load settings, HFile output) overrides."""
    load = {k: v for k, v in overrides.items() if k not in _OUTPUT_FIELDS}
    out = {k: v for k, v in overrides.items() if k in _OUTPUT_FIELDS}
    return load, out


def hfile_output_of(output: HFileOutput | str | None, overrides: Mapping[str, Any]) -> HFileOutput:
    """The :class:`HFileOutput` of ``output`` (an object or the directory) with overrides.

    Raises:
        InvalidArgumentError: no output directory at all.
    """
    if isinstance(output, str):
        output = HFileOutput(output=output)
    if output is not None:
        return replace(output, **overrides) if overrides else output
    if "output" not in overrides:
        raise InvalidArgumentError(
            "HFile output needs its directory: output='DIR' or an HFileOutput(output=...)"
        )
    return HFileOutput(**overrides)


def new_load_id() -> str:
    """A fresh, unique load id (sortable by creation time)."""
    return f"{clock_ms():013d}-{uuid.uuid4().hex[:12]}"


def resolve_input(
    mapping: LoadMapping | Mapping[str, Any] | str | os.PathLike[str] | None,
    format: InputFormat | None,
    text: TextOptions | None,
    storage_options: Mapping[str, Any] | None,
) -> tuple[LoadMapping, InputFormat | None, TextOptions | None]:
    """The mapping object, and the input format and text options with its defaults.

    A mapping file is read with ``storage_options``; ``format`` and ``text`` default to
    the mapping's ``[input]`` section.

    Raises:
        InvalidArgumentError: no mapping, or one that does not parse.
    """
    if mapping is None:
        raise InvalidArgumentError(
            "a load needs a mapping: mapping=LoadMapping(...), its dict form or a mapping file"
        )
    if isinstance(mapping, str | os.PathLike):
        mapping = LoadMapping.from_file(os.fspath(mapping), storage_options=storage_options)
    elif not isinstance(mapping, LoadMapping):
        mapping = LoadMapping.from_dict(mapping)
    input_opts = dict(mapping.input_options)
    if format is None and input_opts.get("format"):
        format = input_opts["format"]
    if text is None and input_opts:
        text = TextOptions.from_options(input_opts)
    return mapping, format, text


def resolve_settings(settings: LoadSettings) -> LoadSettings:
    """``settings`` with every default filled in, as the load will run them.

    The mapping becomes a :class:`~cellstore.loader.LoadMapping` (and gives the input
    format and text options not set), the load id is checked (a fresh one when None),
    ``now_ms`` is read from the clock when None, and ``workers`` is the number of tasks
    that will run at once. Resolving resolved settings changes nothing.

    Raises:
        InvalidArgumentError: no mapping, or one that does not parse.
        InvalidNameError: a load id that cannot name files.
    """
    mapping, fmt, text = resolve_input(
        settings.mapping, settings.format, settings.text, settings.storage_options
    )
    return replace(
        settings,
        mapping=mapping,
        format=fmt,
        text=text,
        load_id=validate_load_id(settings.load_id or new_load_id()),
        now_ms=settings.now_ms if settings.now_ms is not None else clock_ms(),
        workers=settings.task_count,
    )


def load_mapping(settings: LoadSettings) -> LoadMapping:
    """The mapping of resolved settings (see :func:`resolve_settings`)."""
    if not isinstance(settings.mapping, LoadMapping):
        raise InvalidArgumentError("the load settings are not resolved (resolve_settings)")
    return settings.mapping

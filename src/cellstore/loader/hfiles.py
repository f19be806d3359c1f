r"""Loads that write HBase bulk-load HFiles instead of committing (``hfile_output``).

What ``ImportTsv -Dimporttsv.bulk.output=DIR`` does, without a JVM: the loader's normal
pipeline (read, map, build row keys, route by region, sort, bad records) runs unchanged,
but each region's cells of each family go to HFiles in ``completebulkload``'s layout,
``DIR/<family>/<32 hex>``, and nothing is committed to the cellstore table. Then::

    hbase completebulkload DIR ns:table

Rules of the output (reference ``hbase-hfile-format.md`` §12-13):

* **Regions.** The cells are routed to the target HBase table's regions, so every file's
  first and last row lie inside one region and the tool never splits a file. The
  regions come from (first given wins): ``split_keys`` (a list, or a file with one key
  per line, see :func:`parse_split_keys`), an HBase root directory's table or snapshot
  (``hbase_root`` with ``hbase_table`` or ``hbase_snapshot``), else the cellstore table's
  regions.
* **Family settings.** Compression, block size, Bloom type and data block encoding come
  from the HBase table descriptor when one is given, else from ``hfile_settings``.
* **Files.** At most ``max_files_per_region`` (default 32, HBase's
  ``hbase.mapreduce.bulkload.max.hfiles.perRegion.perFamily``) per region and family,
  rolled at ``max_file_bytes`` only between rows; written in parallel by Dask tasks (one
  per region in ``merge`` mode; one per region and family when merging ``spill`` runs).
* **All or nothing.** Everything is written under a hidden ``.<name>.<uuid>.tmp``
  directory next to ``DIR`` (spill runs in its ``_runs`` scratch directory), moved into
  ``DIR`` only once every task succeeded. ``DIR`` must be absent or empty; a failed run
  leaves nothing under it.

Split-key files: one key per line in HBase's printable form (``Bytes.toStringBinary``, as
the HBase shell prints keys): ``\xNN`` is the byte 0xNN, every other character stands
for its UTF-8 bytes; write a backslash as ``\x5C``. Empty lines are skipped. Keys must
be strictly increasing.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeVar, Unpack

import fsspec

from cellstore.core.family import Family
from cellstore.core.keys import from_string_binary, to_string_binary
from cellstore.core.metadata import HistoryEntry, TableMetadata
from cellstore.core.regions import Region, region_id
from cellstore.errors import InputNotFoundError, InvalidArgumentError, InvalidFamilyError
from cellstore.fs import resolve_filesystem
from cellstore.loader.execute import execute_plan
from cellstore.loader.mapping import KeyColumn, LoadMapping
from cellstore.loader.pipeline import (
    LoadableTable,
    LoadTally,
    report_location,
    write_load_files,
)
from cellstore.loader.plan import HFileTarget, LoadPlan, plan_load
from cellstore.loader.report import (
    HFileOutputReport,
    HFileStoreSummary,
    LoadReport,
    write_bad_records,
)
from cellstore.loader.settings import (
    HFileOutput,
    LoadSettings,
    WriteHFilesKwargs,
    hfile_output_of,
    load_mapping,
    resolve_settings,
    split_overrides,
)
from cellstore.loader.spill import runs_to_hfiles
from cellstore.storefiles.bulkload import stage_output
from cellstore.storefiles.hfile.encoders import Encoding
from cellstore.storefiles.hfile.options import BloomType, HFileOptions
from cellstore.storefiles.hfile.serialize import Codec
from cellstore.storefiles.rolling import BulkLoadFile, HFileFormat

__all__ = [
    "HFileRegions",
    "check_split_keys",
    "hfile_regions",
    "hfile_settings_of",
    "parse_split_keys",
    "read_split_keys",
    "run_hfile_load",
    "tableless_metadata",
    "write_hfiles",
]

#: HBase descriptor values -> HFile writer names.
_CODECS: Final[dict[str, Codec]] = {
    "NONE": "none",
    "GZ": "gz",
    "SNAPPY": "snappy",
    "LZ4": "lz4",
    "ZSTD": "zstd",
}
_ENCODINGS: Final[dict[str, Encoding]] = {
    "NONE": "none",
    "PREFIX": "prefix",
    "DIFF": "diff",
    "FAST_DIFF": "fast_diff",
    "ROW_INDEX_V1": "row_index_v1",
}
_BLOOMS: Final[dict[str, BloomType]] = {"NONE": "none", "ROW": "row", "ROWCOL": "rowcol"}
_T = TypeVar("_T")


# ------------------------------------------------------------------------- split keys
def check_split_keys(
    keys: Sequence[bytes], *, source: str, lines: Sequence[int] | None = None
) -> list[bytes]:
    """Check split keys: non-empty and strictly increasing.

    Args:
        keys: The keys.
        source: Where they came from, for messages.
        lines: Each key's one-based line in ``source`` (for messages), or None.

    Returns:
        The keys, as a list.

    Raises:
        InvalidArgumentError: an empty, duplicated or out-of-order key, naming it (and its
            line).
    """
    out = [bytes(k) for k in keys]

    def where(i: int) -> str:
        return f"{source}, line {lines[i]}" if lines is not None else f"{source}, key {i + 1}"

    for i, k in enumerate(out):
        if not k:
            raise InvalidArgumentError(f"{where(i)}: empty split key")
        if i and k == out[i - 1]:
            raise InvalidArgumentError(
                f"{where(i)}: split key {to_string_binary(k)!r} is duplicated "
                f"(also at {where(i - 1)})"
            )
        if i and k < out[i - 1]:
            raise InvalidArgumentError(
                f"{where(i)}: split keys are not sorted: {to_string_binary(k)!r} comes after "
                f"{to_string_binary(out[i - 1])!r} ({where(i - 1)})"
            )
    return out


def parse_split_keys(text: str, *, source: str = "split keys") -> list[bytes]:
    r"""Split keys from text: one per line, ``\xNN`` escapes (``Bytes.toBytesBinary``).

    >>> parse_split_keys("a\nb\\x00c\n\nz\n")
    [b'a', b'b\x00c', b'z']

    Raises:
        InvalidArgumentError: a key that is duplicated or out of order (naming the line).
    """
    keys: list[bytes] = []
    lines: list[int] = []
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.rstrip("\r")
        if not line:
            continue
        keys.append(from_string_binary(line))
        lines.append(n)
    return check_split_keys(keys, source=source, lines=lines)


def read_split_keys(url: str, *, storage_options: Mapping[str, Any] | None = None) -> list[bytes]:
    """Read a split-key file (see :func:`parse_split_keys`) from a path or fsspec URL.

    Raises:
        InvalidArgumentError: the file does not exist or is not UTF-8 text, or a key is
            duplicated or out of order (naming the line).
    """
    fs, path = resolve_filesystem(url, storage_options=storage_options)
    try:
        data = fs.cat_file(path)
    except FileNotFoundError:
        raise InputNotFoundError(f"split-key file {url} does not exist") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidArgumentError(f"split-key file {url}: not UTF-8 text ({e})") from None
    return parse_split_keys(text, source=url)


def _regions_of(keys: Sequence[bytes]) -> tuple[Region, ...]:
    bounds = [b"", *keys, b""]
    return tuple(Region(region_id(i + 1), bounds[i], bounds[i + 1]) for i in range(len(keys) + 1))


# ------------------------------------------------------------------------ the target
def hfile_settings_of(attributes: Mapping[str, str], *, family: str, table: str) -> HFileOptions:
    """HFile settings from an HBase family descriptor's attributes (HBase 2.x defaults).

    Raises:
        InvalidArgumentError: a compression, encoding or Bloom type the writer lacks.
    """

    def pick(key: str, default: str, table_of: Mapping[str, _T]) -> _T:
        value = attributes.get(key, default).strip().upper()
        if value not in table_of:
            raise InvalidArgumentError(
                f"HBase table {table}, family {family}: {key} => '{value}' is not supported "
                f"for bulk-load output (supported: {', '.join(table_of)})"
            )
        return table_of[value]

    try:
        block_size = int(attributes.get("BLOCKSIZE", "65536"))
    except ValueError:
        raise InvalidArgumentError(
            f"HBase table {table}, family {family}: BLOCKSIZE "
            f"{attributes.get('BLOCKSIZE')!r} is not a number"
        ) from None
    return HFileOptions(
        compression=pick("COMPRESSION", "NONE", _CODECS),
        encoding=pick("DATA_BLOCK_ENCODING", "NONE", _ENCODINGS),
        block_size=block_size,
        bloom=pick("BLOOMFILTER", "ROW", _BLOOMS),
    )


@dataclass(frozen=True, kw_only=True)
class HFileRegions:
    """The regions and family settings a load's HFiles are written for.

    Attributes:
        regions: The target regions, in key order, tiling the key space.
        families: HFile settings per family (from an HBase descriptor), or empty.
        source: ``table``, ``split-keys``, ``hbase-table``, ``hbase-snapshot`` or
            ``single-region`` (a table-less load without split points).
        known_families: Families the target table has (None: not known, the cellstore
            table's families apply).
        table: The target's name, for messages.
        unsupported: Families whose HBase settings the writer cannot produce, with why
            (an error when the load maps them).
    """

    regions: tuple[Region, ...]
    families: Mapping[str, HFileOptions] = field(default_factory=dict)
    source: str
    known_families: tuple[str, ...] | None = None
    table: str
    unsupported: Mapping[str, str] = field(default_factory=dict)


def hfile_regions(metadata: TableMetadata | None, output: HFileOutput) -> HFileRegions:
    """Resolve where a ``hfile_output`` load's regions and family settings come from.

    Args:
        metadata: The cellstore table (its regions are the default), or None for a
            table-less load (:func:`write_hfiles`), whose default is one region holding
            every key.
        output: The output: its ``split_keys`` (bytes or printable-form strings, or the
            path/URL of a split-key file), or its ``hbase_root`` (an HBase root directory
            or exported snapshot) with ``hbase_table`` or ``hbase_snapshot``; its
            ``output_storage_options`` apply to the split-key file and ``hbase_root``.

    Raises:
        InvalidArgumentError: conflicting sources, bad split keys (naming the line), an
            HBase family setting the writer does not support.
        TableNotFoundError, SnapshotNotFoundError: an unknown HBase table or snapshot.
    """
    split_keys, hbase_root = output.split_keys, output.hbase_root
    hbase_table, hbase_snapshot = output.hbase_table, output.hbase_snapshot
    storage_options = output.output_storage_options
    if split_keys is not None and hbase_root is not None:
        raise InvalidArgumentError("give split_keys or hbase_root, not both")
    if hbase_root is None and (hbase_table is not None or hbase_snapshot is not None):
        raise InvalidArgumentError("hbase_table and hbase_snapshot need hbase_root")
    if split_keys is not None:
        if isinstance(split_keys, str):
            keys = read_split_keys(split_keys, storage_options=storage_options)
        else:
            keys = check_split_keys(
                [from_string_binary(k) if isinstance(k, str) else k for k in split_keys],
                source="split_keys",
            )
        return HFileRegions(
            regions=_regions_of(keys),
            families={},
            source="split-keys",
            known_families=None,
            table=metadata.name if metadata is not None else "",
        )
    if hbase_root is not None:
        from cellstore.hbasefiles.roots import open_snapshot_layout, open_table_layout

        if (hbase_table is None) == (hbase_snapshot is None):
            raise InvalidArgumentError("with hbase_root, give hbase_table or hbase_snapshot")
        if hbase_snapshot is not None:
            _, layout = open_snapshot_layout(
                hbase_root, hbase_snapshot, storage_options=storage_options
            )
            source = "hbase-snapshot"
        else:
            assert hbase_table is not None
            _, layout = open_table_layout(hbase_root, hbase_table, storage_options=storage_options)
            source = "hbase-table"
        layout.core_families()  # read settings that do not parse: refused, as open_table does
        table_name = layout.descriptor.name
        families: dict[str, HFileOptions] = {}
        unsupported: dict[str, str] = {}
        for f in layout.descriptor.families:
            try:
                families[f.name] = hfile_settings_of(f.attributes, family=f.name, table=table_name)
            except InvalidArgumentError as e:  # an error only if the load writes it
                unsupported[f.name] = str(e)
        return HFileRegions(
            regions=layout.core_regions(),
            families=families,
            source=source,
            known_families=tuple(f.name for f in layout.descriptor.families),
            table=table_name,
            unsupported=unsupported,
        )
    if metadata is None:
        return HFileRegions(
            regions=_regions_of([]),
            families={},
            source="single-region",
            known_families=None,
            table="",
        )
    return HFileRegions(
        regions=metadata.regions,
        families={},
        source="table",
        known_families=None,
        table=metadata.name,
    )


# ----------------------------------------------------------------------------- the load
def _summaries(
    files: Sequence[BulkLoadFile], regions: Sequence[Region]
) -> tuple[HFileStoreSummary, ...]:
    by_id = {r.id: r for r in regions}
    order = {r.id: i for i, r in enumerate(regions)}
    groups: dict[tuple[str, str], list[BulkLoadFile]] = {}
    for f in files:
        groups.setdefault((f.family, f.region), []).append(f)
    return tuple(
        HFileStoreSummary(
            family=fam,
            region=rid,
            start=by_id[rid].start,
            end=by_id[rid].end,
            files=len(fs),
            cells=sum(f.cells for f in fs),
            bytes=sum(f.size for f in fs),
        )
        for (fam, rid), fs in sorted(groups.items(), key=lambda kv: (kv[0][0], order[kv[0][1]]))
    )


def _check_families(mapping: LoadMapping, target: HFileRegions) -> None:
    """Refuse mapped families the target HBase table lacks or whose settings are unsupported.

    Raises:
        InvalidFamilyError: a family the HBase table lacks (naming its families).
        InvalidArgumentError: a family whose HBase settings the writer cannot produce.
    """
    if target.known_families is not None:
        unknown = [f for f in mapping.families if f not in target.known_families]
        if unknown:
            raise InvalidFamilyError(
                f"HBase table {target.table} has no family "
                f"{', '.join(map(repr, unknown))} (families: "
                f"{', '.join(target.known_families)})"
            )
    for fam in mapping.families:
        if fam in target.unsupported:
            raise InvalidArgumentError(target.unsupported[fam])


def _write_staged(
    metadata: TableMetadata,
    source: Any,
    settings: LoadSettings,
    output: HFileOutput,
    target: HFileRegions,
) -> tuple[LoadPlan, LoadTally, list[BulkLoadFile]]:
    """Plan and run the load into a staged output directory, then publish its HFiles.

    Raises:
        InvalidArgumentError: the output directory exists and is not empty.
        BadRecordError: a bad record (not skipping); nothing is left under the output.
    """
    assert settings.load_id is not None and settings.now_ms is not None  # resolved
    storage = output.output_storage_options
    staged = stage_output(output.output, storage_options=storage, overwrite_allowed=False)
    try:
        scratch = staged.scratch("_runs")
        default = output.hfile_settings or HFileOptions()
        hfiles = HFileTarget(
            output=staged,
            format=HFileFormat(
                default=default,
                # The descriptor gives each family's settings; how many threads write
                # them is the load's (``hfile_settings.threads``).
                families={
                    k: replace(v, threads=default.threads) for k, v in target.families.items()
                },
                bulkload_timestamp=settings.now_ms,
                source_task=f"cellstore:{settings.load_id}",
            ),
            split_source=target.source,
        )
        plan, inputs = plan_load(
            metadata,
            table_url=staged.fs.unstrip_protocol(scratch),
            storage_options=storage,
            source=source,
            settings=settings,
            regions=target.regions,
            hfiles=hfiles,
        )
        outputs = execute_plan(
            plan, dask_frame=inputs.dask_frame, client=settings.client, progress=settings.progress
        )
        merged_runs = merge_dropped = 0
        files = [f for o in outputs for f in o.hfiles]
        if plan.mode == "spill":
            runs = [w for o in outputs for w in o.written]
            files, merged_runs, merge_dropped = runs_to_hfiles(plan, runs, client=settings.client)
        order = {r.id: i for i, r in enumerate(plan.target.regions)}
        files.sort(key=lambda f: (f.family, order[f.region], f.first_row))
        files = staged.publish(files, scratch=[scratch])
    except BaseException:
        staged.discard()
        raise
    tally = LoadTally.of(plan, outputs, merged_runs=merged_runs, merge_dropped=merge_dropped)
    return plan, tally, files


def _report_place(
    table: LoadableTable | None, report_dir: str | None
) -> tuple[fsspec.AbstractFileSystem | None, str]:
    """Where an HFile-output load's report and bad records go (none: nowhere)."""
    if table is not None:
        return report_location(table.fs, table.path, report_dir, {})
    if report_dir is not None:
        rfs, rdir = resolve_filesystem(report_dir)
        return rfs, rdir.rstrip("/")
    return None, ""


def run_hfile_load(
    table: LoadableTable | None, source: Any, settings: LoadSettings, output: HFileOutput
) -> LoadReport:
    """Plan and execute a load whose output is bulk-load HFiles (nothing is committed).

    The one implementation behind ``Table.write_hfiles`` (and ``Table.load(hfile_output=
    ...)``) and the table-less :func:`write_hfiles` (``table`` None: the mapping gives the
    families and row key, see :func:`tableless_metadata`; the report and bad records go to
    ``report_dir`` only).

    Returns:
        A :class:`LoadReport` with ``hfile_output`` set (``version`` and ``seq`` None).

    Raises:
        InvalidArgumentError: the output exists and is not empty; bad options;
            ``assign_seq_id=False``; without a table, ``skip_bad_records`` without
            ``report_dir`` or a mapping without a row key.
        InvalidFamilyError: the mapping names a family the target HBase table lacks.
        TableNotFoundError, SnapshotNotFoundError: an unknown HBase table or snapshot.
        BadRecordError: a bad record (not skipping); nothing is left under the output.
    """
    started = time.perf_counter()
    if table is None and settings.skip_bad_records and settings.report_dir is None:
        raise InvalidArgumentError(
            "skip_bad_records without a cellstore table needs report_dir (where the skipped "
            "records are written)"
        )
    if not settings.assign_seq_id:
        raise InvalidArgumentError(
            "assign_seq_id=False applies to loads that commit to this table, not "
            "with hfile_output (HBase's completebulkload decides the sequence id)"
        )
    settings = resolve_settings(settings)
    assert settings.load_id is not None  # resolved
    mapping = load_mapping(settings)
    metadata = table.log.read(table.log.latest_version()) if table is not None else None
    target = hfile_regions(metadata, output)
    if metadata is None:
        name = output.table if output.table is not None else target.table
        metadata = tableless_metadata(mapping, name=name)
    _check_families(mapping, target)
    plan, tally, files = _write_staged(metadata, source, settings, output, target)
    rfs, rdir = _report_place(table, settings.report_dir)
    bad = tally.bad
    bad_path = write_bad_records(rfs, rdir, settings.load_id, bad) if bad and rfs else None
    out = HFileOutputReport(
        url=output.output,
        split_source=target.source,
        regions=len(plan.target.regions),
        files=tuple(files),
        stores=_summaries(files, plan.target.regions),
    )
    report = LoadReport(
        table=output.table if output.table is not None else metadata.name,
        load_id=settings.load_id,
        version=None,
        seq=None,
        rows=tally.rows,
        cells=out.cells,
        bytes=out.bytes,
        files=len(files),
        files_per_region=dict(Counter(f.region for f in files)),
        bad_records_path=bad_path,
        warnings=tally.warnings,
        seconds=time.perf_counter() - started,
        hfile_output=out,
        **tally.report_fields(),
    )
    return write_load_files(rfs, rdir, report, report_file=settings.report_dir is not None)


# ------------------------------------------------------------------- without a table
def tableless_metadata(mapping: LoadMapping, *, name: str) -> TableMetadata:
    """The stand-in table version a table-less :func:`write_hfiles` plans against.

    Families are the mapping's (default settings: the HFiles' settings come from the HBase
    descriptor or ``hfile_settings``, and every mapped cell is written); the row key is
    the mapping's (a column, or a row-key spec with its salting). Regions are not used
    (the load routes by its :class:`HFileRegions`).

    Raises:
        InvalidArgumentError: the mapping has no row key.
        InvalidFamilyError: a family name HBase does not allow.
    """
    key = mapping.row_key
    if key is None:
        raise InvalidArgumentError(
            "writing HFiles without a cellstore table needs the row key in the mapping: "
            "row_key (a column) or a row-key spec"
        )
    salt = None if isinstance(key, KeyColumn) else getattr(key, "salt_buckets", None)
    return TableMetadata(
        table_uuid="",
        name=name,
        version=0,
        families=tuple(Family(name=f) for f in sorted(mapping.families)),
        regions=_regions_of([]),
        salt_buckets=salt,
        files=(),
        next_seq=1,
        next_region_id=2,
        last_history=HistoryEntry(version=0, operation="hfile-output", timestamp_ms=0),
    )


def write_hfiles(
    source: Any,
    output: HFileOutput | str | None = None,
    settings: LoadSettings | None = None,
    /,
    **overrides: Unpack[WriteHFilesKwargs],
) -> LoadReport:
    r"""Write input records as HBase bulk-load HFiles, without a cellstore table.

    ImportTsv with ``-Dimporttsv.bulk.output=DIR``: the input, a mapping and the target
    HBase table's regions are all it needs. The same pipeline as ``Table.write_hfiles``
    (:func:`run_hfile_load`): records are read, mapped, keyed, routed to the target
    regions, sorted and written as ``output/<family>/<32 hex>``, ready for
    ``hbase completebulkload output ns:table``.

    * **Families** are the mapping's; with ``hbase_root`` each must exist in the HBase
      table's descriptor.
    * **Row keys** come from the mapping (``row_key``: a column, or a row-key spec).
    * **Regions** come from ``split_keys`` (a list, or a split-key file, see
      :func:`parse_split_keys`) or from ``hbase_root`` with ``hbase_table`` or
      ``hbase_snapshot``; with neither, one region holds every key.
    * **Family settings** come from the HBase descriptor, else ``hfile_settings``.

    ``write_hfiles(src, HFileOutput(output="out", split_keys="splits.txt"),
    LoadSettings(mapping="m.toml"))`` and ``write_hfiles(src, mapping="m.toml",
    output="out", split_keys="splits.txt")`` are the same call.

    Args:
        source: Input paths/URLs/globs, a list of them, a pandas/Dask DataFrame or an
            Arrow table (as ``Table.load``).
        output: Where the HFiles go and for which HBase table
            (:class:`~cellstore.loader.HFileOutput`), or just the output directory.
        settings: How the input is loaded (:class:`~cellstore.loader.LoadSettings`; its
            ``mapping`` is required and must name the row key). Without a table,
            ``report_dir`` is where the JSON report and skipped records go (no report
            file without it; required with ``skip_bad_records``); ``load_id`` names the
            run (``BULKLOAD_SOURCE_TASK``); ``now_ms`` is the cell timestamp when the
            mapping has no timestamp column and the files' ``BULKLOAD_TIMESTAMP``.
        **overrides: Fields of :class:`~cellstore.loader.LoadSettings` and of
            :class:`~cellstore.loader.HFileOutput` replacing those of ``settings`` and
            ``output``.

    Returns:
        A :class:`~cellstore.loader.LoadReport` with ``hfile_output`` set (``version``
        and ``seq`` None).

    Raises:
        InvalidArgumentError: ``output`` exists and is not empty; split keys unsorted or
            duplicated (naming the line); conflicting options; no row key in the mapping;
            ``skip_bad_records`` without ``report_dir``.
        InvalidFamilyError: a mapped family the HBase table lacks (naming its families).
        TableNotFoundError, SnapshotNotFoundError: an unknown HBase table or snapshot.
        BadRecordError: a bad record (without ``skip_bad_records``).
        In every error case nothing is left under ``output``.
    """
    load_overrides, output_overrides = split_overrides(overrides)
    base = settings if settings is not None else LoadSettings()
    settings = replace(base, **load_overrides) if load_overrides else base
    return run_hfile_load(None, source, settings, hfile_output_of(output, output_overrides))

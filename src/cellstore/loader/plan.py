"""Planning a bulk load: frozen, picklable plan and task objects, built before anything runs.

:func:`plan_load` reads the table's metadata and the inputs' footers and sizes (no data) and
returns a :class:`LoadPlan`: the bound mapping, the target table's regions and families,
one :class:`LoadTask` per input part, and the mode:

* ``merge`` when the estimated memory of the whole input fits the memory budget: each task
  encodes its part and hands its records, routed by region, to one task per region that
  sorts them and writes one store file per family (rolled at ``max_file_bytes`` on row
  boundaries) — HBase's one-HFile-per-region-per-family layout (R14.1);
* ``spill`` otherwise: each task sorts and writes its records as soon as they fill its share
  of the budget, so memory stays bounded; each such sorted run is a separate store file and
  readers merge them (within one load, a later run wins an exact key tie). A region and
  family left with more than ``max_files_per_region`` runs (default 32, HBase's bulk-load
  limit) has them merged in bounded memory before the commit (:mod:`~cellstore.loader.spill`).

The plan is inspectable and testable without Dask; :mod:`cellstore.loader.execute` runs it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pyarrow as pa

from cellstore.core.family import Family
from cellstore.core.metadata import TableMetadata
from cellstore.core.regions import Region
from cellstore.errors import InvalidArgumentError
from cellstore.loader.inputs import (
    DiscoveredInputs,
    InputFormat,
    InputPart,
    TextOptions,
    discover_inputs,
    read_part,
)
from cellstore.loader.keycheck import quantile_split_keys
from cellstore.loader.mapping import KeyColumn, LoadMapping
from cellstore.loader.records import BoundMapping, encode_records
from cellstore.loader.settings import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES_PER_REGION,
    DEFAULT_MEMORY_BUDGET,
    MEMORY_FACTOR,
    LoadKwargs,
    LoadSettings,
    load_mapping,
    resolve_settings,
)
from cellstore.storefiles import NO_ROLL
from cellstore.storefiles.bulkload import StagedOutput
from cellstore.storefiles.columns import NO_LAYOUTS, Layouts, plan_layouts, recorded_codecs
from cellstore.storefiles.rolling import HFileFormat

__all__ = [
    "DEFAULT_MAX_FILES_PER_REGION",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MEMORY_BUDGET",
    "MEMORY_FACTOR",
    "HFileTarget",
    "LoadMode",
    "LoadPlan",
    "LoadSettings",
    "LoadTask",
    "TableTarget",
    "bind_mapping",
    "plan_load",
    "sample_split_keys",
]

LoadMode = Literal["merge", "spill"]


@dataclass(frozen=True, kw_only=True)
class TableTarget:
    """What tasks need to know about the table they write (no open handles).

    Attributes:
        url: The filesystem's protocol-qualified URL of the table directory.
        storage_options: fsspec options for it (may hold secrets: not in the ``repr``).
        name: Table name.
        families: The table's families.
        regions: The regions the load routes to (the base version's).
        base_version: The table version the plan was made from.
        layouts: The (region, family) pairs the load writes in the column layout
            (:func:`load_layouts`).
    """

    url: str
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    name: str
    families: tuple[Family, ...]
    regions: tuple[Region, ...]
    base_version: int
    layouts: Layouts = NO_LAYOUTS

    @property
    def split_keys(self) -> list[bytes]:
        """Start keys of every region but the first."""
        return [r.start for r in self.regions[1:]]


@dataclass(frozen=True, kw_only=True)
class HFileTarget:
    """Where a load writes bulk-load HFiles instead of committing (``hfile_output``).

    Attributes:
        output: The output directory and its staging directory.
        format: How each family's HFiles are written.
        split_source: Where the regions came from: ``table``, ``split-keys``,
            ``hbase-table`` or ``hbase-snapshot``.
    """

    output: StagedOutput
    format: HFileFormat
    split_source: str


@dataclass(frozen=True, kw_only=True)
class LoadTask:
    """Read, encode and route one input part (and in spill mode, write its runs).

    Attributes:
        part: The input part.
        name: File-name stem of the task's runs (spill mode): ``<load>-<nonce>-p<index>``.
        key_sample: Row keys the task samples for the key-design checks (0: none).
    """

    part: InputPart
    name: str
    key_sample: int = 0


@dataclass(frozen=True, kw_only=True)
class LoadPlan:
    """A planned load (frozen, picklable): everything the tasks need, nothing open.

    Attributes:
        load_id: The load's id.
        nonce: Random per-attempt token in file names (a retried load id never overwrites
            files of an earlier attempt).
        seq: Provisional sequence number for the footers (the commit's wins).
        now_ms: The load time (timestamp of cells without one).
        mode: ``merge`` or ``spill`` (see the module docstring).
        target: The table.
        bound: The mapping bound to the table.
        settings: Load settings.
        tasks: One task per input part, in input order.
        estimated_bytes: Estimated Arrow size of the whole input.
        hfiles: Write HBase bulk-load HFiles here instead of store files for a commit
            (None: a normal load). Then ``target.url`` is a scratch directory for sorted
            runs, and ``target.regions`` the HBase table's regions.
    """

    load_id: str
    nonce: str
    seq: int
    now_ms: int
    mode: LoadMode
    target: TableTarget
    bound: BoundMapping
    settings: LoadSettings
    tasks: tuple[LoadTask, ...]
    estimated_bytes: int
    hfiles: HFileTarget | None = None

    @property
    def run_file_bytes(self) -> int:
        """Roll size of spill runs and of merged runs.

        ``max_file_bytes``; no rolling for an ``hfile_output`` load, whose runs are scratch
        (its HFiles are rolled when they are written).
        """
        return NO_ROLL if self.hfiles is not None else self.settings.max_file_bytes

    def region_file_stem(self, region_index: int) -> str:
        """File-name stem of a merged region's files: ``<load>-<nonce>-m<region>``."""
        return f"{self.load_id}-{self.nonce}-m{region_index:05d}"


def bind_mapping(mapping: LoadMapping, metadata: TableMetadata) -> BoundMapping:
    """Validate ``mapping`` against a table version and bind its row key.

    Raises:
        InvalidFamilyError: a mapped family is not in the table.
        InvalidArgumentError: no row key, or one that conflicts with the table's spec.
    """
    mapping.validate(metadata)
    spec = getattr(metadata, "row_key", None)
    key = mapping.row_key if mapping.row_key is not None else spec
    assert key is not None  # validate() guarantees it
    if not isinstance(key, KeyColumn):
        spec_salt = getattr(key, "salt_buckets", None)
        if spec_salt != metadata.salt_buckets:
            raise InvalidArgumentError(
                f"the row-key spec has salt_buckets={spec_salt} but table {metadata.name} "
                f"has {metadata.salt_buckets}"
            )
    mapped = set(mapping.families)
    return BoundMapping(
        mapping=mapping,
        key=key,
        salt_buckets=metadata.salt_buckets,
        families=tuple(f for f in metadata.family_names if f in mapped),
    )


def load_layouts(metadata: TableMetadata, mapping: LoadMapping | None = None) -> Layouts:
    """The (region, family) pairs a load into ``metadata`` writes as column files.

    A family with ``layout="columns"``: every region; ``auto``: the regions where it has
    no live file yet (a later load writes deltas as cells). Columns are declared by the
    codecs the table records (docs/format.md 6.1) and those of ``mapping`` (a load's own
    codec wins). A format-version-1 table gets none (column files need version 3).
    """
    if metadata.format_version < 2 or all(f.layout == "cells" for f in metadata.families):
        return NO_LAYOUTS
    codecs = recorded_codecs(metadata.properties)
    for c in mapping.cells if mapping is not None else ():
        if c.value is not None and c.qualifier is not None:
            codecs.setdefault(c.family, {})[c.qualifier] = c.codec.value
    busy = None
    if metadata.file_totals().files:
        busy = {(e.region, e.family) for e in metadata.files}
    return plan_layouts(
        metadata.families,
        [r.id for r in metadata.regions],
        codecs=codecs,
        busy=busy,
        key=metadata.row_key,
    )


def plan_load(
    metadata: TableMetadata,
    *,
    table_url: str,
    storage_options: Mapping[str, Any] | None,
    source: Any,
    settings: LoadSettings,
    mapping: LoadMapping | None = None,
    load_id: str | None = None,
    now_ms: int | None = None,
    regions: tuple[Region, ...] | None = None,
    hfiles: HFileTarget | None = None,
) -> tuple[LoadPlan, DiscoveredInputs]:
    """Plan a load of ``source`` into the table version ``metadata`` (reads no data).

    ``settings`` say how (resolved here, see
    :func:`~cellstore.loader.settings.resolve_settings`); ``mapping``, ``load_id`` and
    ``now_ms``, when given, replace theirs. The plan keeps the settings without
    ``client`` and ``progress`` (it is sent to the tasks). ``regions`` (default: the
    table's) route the records; ``hfiles`` makes the load write bulk-load HFiles instead
    of store files (see :class:`HFileTarget`).

    Returns:
        The plan and the discovered inputs (which carry the Dask collection, if any).

    Raises:
        InvalidFamilyError, InvalidArgumentError: a mapping that does not fit the table,
            an input that does not exist, has an unknown format, or lacks a mapped column
            (checked against its schema or header before any data is read).
    """
    given: LoadKwargs = {}
    if mapping is not None:
        given["mapping"] = mapping
    if load_id is not None:
        given["load_id"] = load_id
    if now_ms is not None:
        given["now_ms"] = now_ms
    settings = resolve_settings(replace(settings, **given))
    mapping = load_mapping(settings)
    bound = bind_mapping(mapping, metadata)
    spec = getattr(metadata, "row_key", None)
    inputs = discover_inputs(
        source,
        columns=mapping.input_columns(spec),
        format=settings.format,
        text=settings.text,
        storage_options=settings.storage_options,
        target_part_bytes=max(1 << 16, settings.run_bytes),
        column_uses=mapping.column_uses(spec),
    )
    estimated = inputs.estimated_bytes
    mode: LoadMode = "merge" if estimated * MEMORY_FACTOR <= settings.memory_budget else "spill"
    nonce = uuid.uuid4().hex[:8]
    assert settings.load_id is not None and settings.now_ms is not None  # resolved
    sample = settings.sampled_keys
    per_task = max(256, sample // max(1, len(inputs.parts))) if sample else 0
    tasks = tuple(
        LoadTask(part=p, name=f"{settings.load_id}-{nonce}-p{p.index:06d}", key_sample=per_task)
        for p in inputs.parts
    )
    target = TableTarget(
        url=table_url,
        storage_options=dict(storage_options or {}),
        name=metadata.name,
        families=metadata.families,
        regions=metadata.regions if regions is None else regions,
        base_version=metadata.version,
        layouts=NO_LAYOUTS if hfiles is not None else load_layouts(metadata, mapping),
    )
    plan = LoadPlan(
        load_id=settings.load_id,
        nonce=nonce,
        seq=metadata.next_seq,
        now_ms=settings.now_ms,
        mode=mode,
        target=target,
        bound=bound,
        settings=replace(settings, client=None, progress=None),
        tasks=tasks,
        estimated_bytes=estimated,
        hfiles=hfiles,
    )
    return plan, inputs


def sample_split_keys(
    source: Any,
    *,
    mapping: LoadMapping,
    regions: int,
    families: tuple[str, ...] | None = None,
    input_format: InputFormat | None = None,
    text: TextOptions | None = None,
    input_storage_options: Mapping[str, Any] | None = None,
    sample_records: int = 200_000,
) -> list[bytes]:
    """Split keys cutting the input's row keys into ``regions`` ranges of equal counts.

    Reads up to ``sample_records`` records, spread over the input's parts (the first
    batches of each), builds their row keys with the mapping (which must name its row key)
    and takes the quantiles of the distinct keys. Bad records are ignored. Fewer keys come
    back when the sample has fewer distinct keys than ``regions``.

    Raises:
        InvalidArgumentError: ``regions`` < 1, or a mapping without a row key.
    """
    if regions < 1:
        raise InvalidArgumentError(f"regions must be at least 1, got {regions}")
    if regions == 1:
        return []
    if mapping.row_key is None:
        raise InvalidArgumentError("pre-splitting by sampled keys needs a row key in the mapping")
    inputs = discover_inputs(
        source,
        columns=mapping.input_columns(),
        format=input_format,
        text=text,
        storage_options=input_storage_options,
        target_part_bytes=64 << 20,
        column_uses=mapping.column_uses(),
    )
    if inputs.dask_frame is not None:
        raise InvalidArgumentError("pre-splitting by sampled keys is not supported for Dask input")
    bound = BoundMapping(
        mapping=mapping,
        key=mapping.row_key,
        salt_buckets=None,
        families=families or mapping.families,
    )
    per_part = max(1000, sample_records // max(1, len(inputs.parts)))
    keys: list[pa.Array] = []
    for part in inputs.parts:
        taken = 0
        for batch in read_part(part, batch_rows=min(per_part, 65536)):
            enc = encode_records(batch.table, bound, now=0)
            rows = enc.records.column("row").combine_chunks()
            keys.append(rows)
            taken += len(rows)
            if taken >= per_part:
                break
    if not keys:
        return []
    return quantile_split_keys(pa.concat_arrays(keys), regions)

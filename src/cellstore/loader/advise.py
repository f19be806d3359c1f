"""Row-key design advice: sample row keys, report hot-spotting and size problems with fixes.

HBase schema design comes down to a few rules the Reference Guide spells out ("Rowkey
Design": hot-spotting, monotonically increasing row keys, minimising row and column sizes,
the number of column families). This module samples keys and checks them with
:func:`~cellstore.loader.keycheck.analyze_keys` (the checks and thresholds are listed in
:mod:`cellstore.loader.keycheck`):

* :func:`advise_input` builds keys from input files or frames through a mapping exactly
  as ``Table.load`` / ``cellstore load`` would — advice before the load, the main point;
* :func:`advise_table` checks a table: its cells per region (manifest) and a sample of
  row keys and qualifiers from its store files;
* every load samples its own keys (:class:`~cellstore.loader.keycheck.KeySampler` in each
  task) and runs the checks on the keys (hot region, salt skew, monotonic and long keys):
  the warnings go into the load report and, from ``Table.load``, to Python's
  :mod:`warnings` as :class:`~cellstore.errors.KeyDesignWarning`.

``cellstore advise`` is the command line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.codecs import encode_values
from cellstore.core.regions import Region, regions_from_splits, salt_split_keys
from cellstore.errors import InvalidArgumentError
from cellstore.loader.inputs import (
    InputFormat,
    InputPart,
    TextOptions,
    discover_inputs,
    read_part,
)
from cellstore.loader.keycheck import (
    AdviceSource,
    AdviceThresholds,
    KeyAdvice,
    KeyFinding,
    KeySampler,
    KeySummary,
    RegionShare,
    Severity,
    analyze_keys,
    quantile_split_keys,
)
from cellstore.loader.mapping import KeyColumn, LoadMapping
from cellstore.loader.records import BoundMapping, encode_row_keys

if TYPE_CHECKING:
    import fsspec

    from cellstore.core.metadata import TableMetadata
    from cellstore.core.rowkey import RowKeySpec

__all__ = [
    "DEFAULT_SAMPLE_KEYS",
    "MAX_SAMPLED_FILES",
    "AdviceSource",
    "AdviceThresholds",
    "KeyAdvice",
    "KeyFinding",
    "KeySampler",
    "KeySummary",
    "RegionShare",
    "Severity",
    "advise_input",
    "advise_table",
    "analyze_keys",
    "quantile_split_keys",
]

#: Row keys :func:`advise_input` and :func:`advise_table` sample by default.
DEFAULT_SAMPLE_KEYS: Final = 100_000
#: Store files :func:`advise_table` opens at most (one row group read from each).
MAX_SAMPLED_FILES: Final = 64


def _literal_qualifiers(mapping: LoadMapping) -> list[bytes]:
    return [c.qualifier for c in mapping.cells if c.qualifier is not None]


@dataclass(frozen=True)
class _AdviceTarget:
    """What the keys of an input are checked against: a table, or one to be created."""

    bound: BoundMapping
    spec: RowKeySpec | None
    regions: tuple[Region, ...]
    salt: int | None
    families: Sequence[str]
    name: str | None


def _advice_target(
    mapping: LoadMapping,
    metadata: TableMetadata | None,
    salt_buckets: int | None,
    regions: int | None,
) -> _AdviceTarget:
    """The table the keys would go to (``metadata``), or the one ``--create`` would make.

    Raises:
        InvalidArgumentError: conflicting salt settings, or no row key for a new table.
        InvalidFamilyError: the mapping names a family the table lacks.
    """
    from cellstore.loader.plan import bind_mapping

    if metadata is not None:
        if salt_buckets is not None or regions is not None:
            raise InvalidArgumentError("salt_buckets and regions are for tables not yet created")
        return _AdviceTarget(
            bind_mapping(mapping, metadata),
            metadata.row_key,
            metadata.regions,
            metadata.salt_buckets,
            metadata.family_names,
            metadata.name,
        )
    key = mapping.row_key
    if key is None:
        raise InvalidArgumentError("the mapping needs a row key (the table does not exist)")
    spec = None if isinstance(key, KeyColumn) else key
    spec_salt = None if spec is None else spec.salt_buckets
    if spec is not None and salt_buckets is not None and spec_salt != salt_buckets:
        raise InvalidArgumentError(
            f"the row-key spec has salt_buckets={spec_salt}, not {salt_buckets}"
        )
    salt = spec_salt if spec is not None else salt_buckets
    if salt is not None and regions is not None:
        raise InvalidArgumentError("give salt_buckets or regions, not both")
    bound = BoundMapping(mapping=mapping, key=key, salt_buckets=salt, families=mapping.families)
    table_regions = regions_from_splits(salt_split_keys(salt) if salt else [])
    return _AdviceTarget(bound, spec, table_regions, salt, mapping.families, None)


@dataclass
class _Sample:
    """Row keys (one run of input order per part) and qualifiers read from an input."""

    runs: list[pa.Array] = field(default_factory=list)
    quals: list[pa.Array] = field(default_factory=list)
    read: int = 0
    complete: bool = True


def _spread_parts(parts: Sequence[InputPart], sample_keys: int) -> tuple[InputPart, ...]:
    """Parts evenly spread over the input, about 1000 records each for the sample."""
    max_parts = max(1, -(-sample_keys // 1000))  # at least ~1000 records per part read
    if len(parts) <= max_parts:
        return tuple(parts)
    chosen = sorted({int(i) for i in np.linspace(0, len(parts) - 1, max_parts)})
    return tuple(parts[i] for i in chosen)


def _sample_part(part: InputPart, bound: BoundMapping, per_part: int, sample: _Sample) -> None:
    """Add the row keys and qualifiers of a part's first ``per_part`` records to ``sample``."""
    mapping = bound.mapping
    qual_maps = [c for c in mapping.cells if c.qualifier_column is not None]
    taken = 0
    part_keys: list[pa.Array] = []  # one run of input order per part
    batches = read_part(part, batch_rows=min(per_part, 65536))
    for batch in batches:
        table = batch.table.slice(0, per_part - taken)
        rows, bad = encode_row_keys(table, bound)
        part_keys.append(rows.filter(pa.array(~bad)) if bad.any() else rows)
        for cm in qual_maps:
            assert cm.qualifier_column is not None
            q = encode_values(
                table.column(cm.qualifier_column),
                cm.qualifier_codec,
                field=cm.qualifier_column,
                errors="mask",
            ).values
            sample.quals.append(pc.unique(q.drop_null()))
        taken += table.num_rows
        if taken >= per_part:
            cut = table.num_rows < batch.table.num_rows
            sample.complete = sample.complete and not cut and next(batches, None) is None
            break
    if part_keys:
        sample.runs.append(pa.concat_arrays(part_keys) if len(part_keys) > 1 else part_keys[0])
    sample.read += taken


def _sample_input(
    source: Any,
    target: _AdviceTarget,
    sample_keys: int,
    *,
    input_format: InputFormat | None,
    text: TextOptions | None,
    storage_options: Mapping[str, Any] | None,
) -> _Sample:
    """Read up to ``sample_keys`` records spread over the input; build their keys.

    Raises:
        InvalidArgumentError: a Dask input, or an input that does not exist.
    """
    mapping = target.bound.mapping
    columns = list(mapping.key_columns(target.spec))
    qual_maps = [c for c in mapping.cells if c.qualifier_column is not None]
    columns += [q for c in qual_maps if (q := c.qualifier_column) and q not in columns]
    inputs = discover_inputs(
        source,
        columns=columns,
        format=input_format,
        text=text,
        storage_options=storage_options,
        target_part_bytes=8 << 20,
    )
    if inputs.dask_frame is not None:
        raise InvalidArgumentError(
            "advice on Dask input is not supported; pass a sample "
            "(e.g. ddf.head(100_000)) as a pandas DataFrame"
        )
    parts = _spread_parts(inputs.parts, sample_keys)
    per_part = max(1, -(-sample_keys // max(1, len(parts))))
    sample = _Sample(complete=len(parts) == len(inputs.parts))
    for part in parts:
        _sample_part(part, target.bound, per_part, sample)
    return sample


def advise_input(
    source: Any,
    *,
    mapping: LoadMapping,
    metadata: TableMetadata | None = None,
    salt_buckets: int | None = None,
    regions: int | None = None,
    sample_keys: int = DEFAULT_SAMPLE_KEYS,
    input_format: InputFormat | None = None,
    text: TextOptions | None = None,
    storage_options: Mapping[str, Any] | None = None,
    thresholds: AdviceThresholds | None = None,
) -> KeyAdvice:
    """Advice on the row keys a load of ``source`` would build (reads a sample, writes nothing).

    Keys are built exactly as ``Table.load`` builds them (the mapping's row key or the
    table's row-key spec, the salt byte), from the first records of each input part:
    parts are taken evenly spread over the input, up to ``sample_keys`` records in all
    (every record when the input is that small; text files are read from their start).
    Bad records are left out.

    Args:
        source: What ``Table.load`` takes: URL(s)/glob(s), pandas, Arrow (not Dask).
        mapping: The load's mapping.
        metadata: The target table (its regions, salt buckets and row-key spec), or None
            for a table that does not exist yet.
        salt_buckets: Without ``metadata``: the salt buckets the table would get.
        regions: Without ``metadata``: the regions ``--create --regions N`` would make
            (split at the sample's key quantiles, as the loader does).
        sample_keys: Records to read at most.
        input_format: Input format (default: from the extension).
        text: Text-input options.
        storage_options: fsspec options for the inputs.
        thresholds: When a sample is a problem.

    Returns:
        The advice (``source="input"``).

    Raises:
        InvalidArgumentError: no row key, a Dask input, conflicting salt settings, or an
            input that does not exist.
        InvalidFamilyError: the mapping names a family the table lacks.
    """
    if sample_keys < 1:
        raise InvalidArgumentError(f"sample_keys must be positive, got {sample_keys}")
    target = _advice_target(mapping, metadata, salt_buckets, regions)
    sample = _sample_input(
        source,
        target,
        sample_keys,
        input_format=input_format,
        text=text,
        storage_options=storage_options,
    )
    split_regions = target.regions
    if metadata is None and regions is not None and regions > 1:
        keys = pa.concat_arrays(sample.runs) if sample.runs else pa.array([], pa.binary())
        split_regions = tuple(
            Region(f"planned-{i + 1}", r.start, r.end)
            for i, r in enumerate(regions_from_splits(quantile_split_keys(keys, regions)))
        )
    qualifiers = _literal_qualifiers(mapping)
    if sample.quals:
        quals = pa.concat_arrays([q.cast(pa.binary()) for q in sample.quals])
        qualifiers += pc.unique(quals).to_pylist()
    return analyze_keys(
        sample.runs,
        input_order=True,
        regions=split_regions,
        salt_buckets=target.salt,
        families=target.families,
        qualifiers=qualifiers,
        thresholds=thresholds,
        table=target.name,
        source="input",
        records_read=sample.read,
        complete=sample.complete,
    )


def advise_table(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    metadata: TableMetadata,
    *,
    sample_keys: int = DEFAULT_SAMPLE_KEYS,
    thresholds: AdviceThresholds | None = None,
) -> KeyAdvice:
    """Advice on a table's row keys, from its manifest and a sample of its store files.

    The distribution per region is exact (cells per region, from the manifest). Row keys
    and qualifiers are sampled from up to :data:`MAX_SAMPLED_FILES` store files spread
    over the regions: the distinct rows of one row group each (read dictionary-encoded,
    so only the distinct values are decoded), thinned evenly to ``sample_keys``.

    Args:
        fs: The warehouse filesystem.
        table_path: The table directory.
        metadata: The table version to check.
        sample_keys: Row keys to keep at most.
        thresholds: When a sample is a problem.

    Returns:
        The advice (``source="table"``; store files are sorted, so no order check).
    """
    from cellstore.storefiles import StoreFileReader
    from cellstore.storefiles.layout import entry_path

    if sample_keys < 1:
        raise InvalidArgumentError(f"sample_keys must be positive, got {sample_keys}")
    order = {r.id: i for i, r in enumerate(metadata.regions)}
    files = sorted(metadata.files, key=lambda f: (order.get(f.region, -1), f.family, f.path))
    if len(files) > MAX_SAMPLED_FILES:
        pick = np.unique(np.linspace(0, len(files) - 1, MAX_SAMPLED_FILES).astype(np.int64))
        files = [files[int(i)] for i in pick]
    rows: list[pa.Array] = []
    quals: list[pa.Array] = []
    for entry in files:
        with StoreFileReader(fs, entry_path(table_path, entry.path), entry=entry) as reader:
            groups = reader.row_groups()
            if not groups:
                continue
            group = groups[len(groups) // 2].index
            cells = reader.read_row_groups([group], columns=["row", "qualifier"], encoded=True)
        region = metadata.region(entry.region)
        for name, out in (("row", rows), ("qualifier", quals)):
            col = cells.column(name)
            values = [
                c.dictionary if pa.types.is_dictionary(c.type) else pc.unique(c) for c in col.chunks
            ]
            if values:
                arr = pa.concat_arrays([v.cast(pa.binary()) for v in values])
                if name == "row":  # a file referenced by a split region holds other rows too
                    inside = pc.greater_equal(arr, pa.scalar(region.start, pa.binary()))
                    if region.end:
                        inside = pc.and_(inside, pc.less(arr, pa.scalar(region.end, pa.binary())))
                    arr = arr.filter(inside)
                out.append(arr)
    keys = pc.unique(pa.concat_arrays(rows)) if rows else pa.array([], pa.binary())
    keys = keys.take(pc.sort_indices(keys))
    if len(keys) > sample_keys:
        keys = keys.take(pa.array(np.linspace(0, len(keys) - 1, sample_keys).astype(np.int64)))
    qualifiers = pc.unique(pa.concat_arrays(quals)).to_pylist() if quals else []
    cells_per_region = [0] * len(metadata.regions)
    for f in metadata.files:
        if f.region in order:
            cells_per_region[order[f.region]] += f.cells
    return analyze_keys(
        [keys],
        input_order=False,
        regions=metadata.regions,
        region_cells=cells_per_region,
        salt_buckets=metadata.salt_buckets,
        families=metadata.family_names,
        qualifiers=qualifiers,
        thresholds=thresholds,
        table=metadata.name,
        source="table",
    )

"""Read-optimized wide reads in Spark: Spark's own Parquet reader on column files.

The ``cellstore`` data source ships rows through Python workers. For a table in the
column layout (docs/format.md section 14) most regions need none of that: their families
are held by column files alone, which are plain typed Parquet. :func:`read_optimized`
(Hudi calls this a *read-optimized query*) reads those regions with
``spark.read.parquet`` (column pruning, vectorized decoding, Spark's own splits) and the
other regions with the ``cellstore`` source, and unions the two. The result has the rows,
columns and values of the source's wide shape with ``key_columns`` off (tested).

A region is read from its column files when, for every family read, its files are column
files (and companions of older versions only: docs/format.md 14.3), with one column set per
family, typed with the codecs the read asks for, and
neither the family's TTL nor a time range could hide a value, on an unsalted table:
then the newest visible value of each column is the file's (section 14.3) and a row is
in the result when one of its requested cells is. Everything else (deltas, TTL, salted
tables, mixed column sets, and keyed column files: docs/format.md 14.2, whose rows Spark
cannot encode from the key fields) goes through the ``cellstore`` source.

Spark must be able to read the table's files by their URLs (local paths, or ``s3a://``
with Spark's S3 support configured).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cellstore.core.codecs import Codec
from cellstore.core.columnar import ColumnSpec
from cellstore.core.keys import to_string_binary
from cellstore.reader import ScanTask
from cellstore.reader.columnar import fast_wide_families, older_companions
from cellstore.reader.shapes import WideSpec, column_name
from cellstore.storefiles.layout import entry_path
from cellstore.storefiles.reader import StoreFileReader
from cellstore.warehouse import Table, connect

__all__ = ["OptimizedPlan", "plan_optimized", "read_optimized"]


@dataclass(frozen=True)
class OptimizedPlan:
    """Which regions a read-optimized read takes from column files, and which not.

    Attributes:
        files: Family to the column files (URLs) read with Spark's Parquet reader, and
            each family's column set.
        ranges: Row ranges ``(start, stop)`` read through the ``cellstore`` source.
        columns: The output columns ``(family, qualifier)``, in order.
        codecs: Each output column's codec.
    """

    files: dict[str, list[str]] = field(default_factory=dict)
    specs: dict[str, tuple[ColumnSpec, ...]] = field(default_factory=dict)
    ranges: list[tuple[bytes, bytes]] = field(default_factory=list)
    columns: tuple[tuple[str, bytes], ...] = ()
    codecs: dict[tuple[str, bytes], Codec] = field(default_factory=dict)


def plan_optimized(t: Table, *, columns: Sequence[str] | None = None) -> OptimizedPlan:
    """Plan a read-optimized wide read of ``t`` (see the module docstring).

    Args:
        t: The table.
        columns: ``family:qualifier`` columns (default: every column the table's recorded
            codecs name, as ``scan(shape="wide", column_types="table")``).

    Returns:
        The plan: column files for Spark's reader, row ranges for the source.
    """
    scan = t.scan(shape="wide", columns=columns, column_types="table", key_columns=False)
    wide = scan.wide
    assert wide is not None and wide.columns is not None  # named by columns or the codecs
    plan = OptimizedPlan(columns=tuple(wide.columns), codecs=dict(wide.codecs))
    by_region: dict[str, list[ScanTask]] = defaultdict(list)
    for task in scan.plan():
        by_region[task.region].append(task)
    for region, tasks in by_region.items():
        found = _region_files(t, tasks, wide)
        if found is None or t.metadata.salt_buckets is not None:
            bounds = t.metadata.region(region)
            plan.ranges.append((bounds.start, bounds.end))
            continue
        for fam, (paths, specs) in found.items():
            if plan.specs.setdefault(fam, specs) != specs:
                bounds = t.metadata.region(region)
                plan.ranges.append((bounds.start, bounds.end))
                break
            plan.files.setdefault(fam, []).extend(paths)
    return plan


def _region_files(
    t: Table, tasks: Sequence[ScanTask], wide: WideSpec
) -> dict[str, tuple[list[str], tuple[ColumnSpec, ...]]] | None:
    """A region's column files per family, or None when it needs the source."""
    codecs = dict(wide.codecs)
    out: dict[str, tuple[list[str], tuple[ColumnSpec, ...]]] = {}
    for task in tasks:
        if fast_wide_families(task) is not None:
            return None
        for fam in task.families:
            if fam.family.ttl is not None or fam.spec.time_range is not None:
                return None
            bases = [e for e in fam.entries if e.layout == "columns"]
            deltas = [e for e in fam.entries if e.layout != "columns"]
            if deltas and len(older_companions(t.fs, task, fam, bases, deltas)) < len(deltas):
                return None  # a delta that can change a value: the source merges it
            for entry in bases:
                path = entry_path(task.table_path, entry.path)
                with StoreFileReader(t.fs, path, entry=entry) as reader:
                    specs = reader.info.columns
                    if reader.info.row_key is not None or reader.info.aliases:
                        # a keyed file holds key fields, not rows (section 14.2), and an
                        # aliased column's values only in its key field's column: Spark
                        # cannot encode them to row keys, the source does
                        return None
                name = fam.family.name
                for s in specs:
                    want = codecs.get((name, s.qualifier), Codec.BYTES)
                    if (name, s.qualifier) in (wide.columns or ()) and s.codec is not want:
                        return None
                paths, have = out.setdefault(name, ([], specs))
                if have != specs:
                    return None
                url = t.fs.unstrip_protocol(path)
                if url not in paths:
                    paths.append(url)
    return out


def read_optimized(
    spark: Any,
    *,
    root: str,
    table: str,
    columns: Sequence[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Any:
    """A wide DataFrame of ``table``: column files through Spark's Parquet reader.

    Args:
        spark: The Spark session (``cellstore.spark.register`` already called on it).
        root: The warehouse root URL.
        table: The table's name.
        columns: ``family:qualifier`` columns (default: every column with a recorded codec).
        storage_options: fsspec options of the root (also passed to the source).

    Returns:
        A DataFrame with ``row`` (binary) and one column per ``family:qualifier``, typed by
        the table's recorded codecs: the rows and values of
        ``spark.read.format("cellstore")`` with ``shape=wide``, these columns and types,
        and ``key_columns=false`` (row order unspecified, as in Spark).
    """
    from pyspark.sql import functions as F

    t = connect(root, storage_options=storage_options).table(table)
    plan = plan_optimized(t, columns=columns)
    names = [column_name(f, q) for f, q in plan.columns]
    parts = []
    fam_frames = []
    for fam, paths in plan.files.items():
        specs = {s.qualifier: s for s in plan.specs[fam]}
        picks = [F.col("`__row`").alias("row")]
        for (f, q), name in zip(plan.columns, names, strict=True):
            if f == fam and q in specs:
                picks.append(F.col(f"`{specs[q].value_name}`").alias(name))
        if len(picks) > 1 or columns is None:
            fam_frames.append(spark.read.parquet(*paths).select(*picks))
    if fam_frames:
        joined = fam_frames[0]
        for other in fam_frames[1:]:
            joined = joined.join(other, on="row", how="full_outer")
        present = [F.col(f"`{n}`") for n in names if n in joined.columns]
        if columns is not None and present:
            # a row is in the result when one of its requested cells is (R11.1)
            held = present[0].isNotNull()
            for c in present[1:]:
                held = held | c.isNotNull()
            joined = joined.filter(held)
        for name, (f, q) in zip(names, plan.columns, strict=True):
            if name not in joined.columns:
                kind = _spark_type(plan.codecs.get((f, q), Codec.BYTES))
                joined = joined.withColumn(name, F.lit(None).cast(kind))
        parts.append(joined.select("row", *[F.col(f"`{n}`") for n in names]))
    types = json.dumps(
        {column_name(f, q): c.value for (f, q), c in plan.codecs.items() if (f, q) in plan.columns}
    )
    for start, stop in _adjacent_merged(plan.ranges):
        reader = (
            spark.read.format("cellstore")
            .option("root", root)
            .option("table", table)
            .option("shape", "wide")
            .option("key_columns", "false")
            .option("column_types", types)
            .option("columns", ",".join(names))
        )
        if storage_options:
            reader = reader.option("storage_options", json.dumps(dict(storage_options)))
        if start:
            reader = reader.option("start_row", to_string_binary(start))
        if stop:
            reader = reader.option("stop_row", to_string_binary(stop))
        parts.append(reader.load().select("row", *[F.col(f"`{n}`") for n in names]))
    if not parts:
        return spark.createDataFrame([], _empty_schema(names, plan))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _adjacent_merged(ranges: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Row ranges with adjacent ones joined (one source read for neighbouring regions)."""
    out: list[tuple[bytes, bytes]] = []
    for start, stop in sorted(ranges):
        if out and out[-1][1] == start and start:
            out[-1] = (out[-1][0], stop)
        else:
            out.append((start, stop))
    return out


def _spark_type(codec: Codec) -> str:
    """The Spark SQL type name of a codec's values."""
    return {
        Codec.BYTES: "binary",
        Codec.STRING: "string",
        Codec.LONG: "bigint",
        Codec.INT: "int",
        Codec.SHORT: "smallint",
        Codec.DOUBLE: "double",
        Codec.FLOAT: "float",
        Codec.BOOLEAN: "boolean",
    }[codec]


def _empty_schema(names: Sequence[str], plan: OptimizedPlan) -> str:
    """The DDL schema of an empty result."""
    cols = ", ".join(
        f"`{n}` {_spark_type(plan.codecs.get(c, Codec.BYTES))}"
        for n, c in zip(names, plan.columns, strict=True)
    )
    return f"row binary, {cols}" if cols else "row binary"

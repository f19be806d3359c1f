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
tables, mixed column sets) goes through the ``cellstore`` source.

Keyed column files (docs/format.md 14.2) hold a record's key fields, not its row: Spark
reads them too, joins the families on the key fields and builds ``row`` from them in Spark
SQL (:mod:`cellstore.spark.rowexpr`, byte-identical to the spec's encoding). ``row`` is
then an expression Spark computes only when the query uses it: a count or a groupby over
value columns never encodes a key. A spec Spark SQL cannot encode (float fields,
``uint64``, ``reverse``) keeps such regions on the source. When every region's families
hold the same rows (:attr:`OptimizedPlan.shared_rows`), the families are left-joined as
sides unique on the key, which Spark drops when a query uses none of their columns (a
count reads one family's footers); a read naming columns of several such families goes
through the source, which joins them by position where Spark would shuffle both sides.

Spark must be able to read the table's files by their URLs (local paths, or ``s3a://``
with Spark's S3 support configured).
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cellstore.core.codecs import Codec
from cellstore.core.columnar import ROW_COLUMN, Aliases, ColumnSpec
from cellstore.core.keys import to_string_binary
from cellstore.core.rowkey import RowKeySpec
from cellstore.reader import ScanTask
from cellstore.reader.columnar import fast_wide_families, older_companions
from cellstore.reader.columnar.merge import split_bases
from cellstore.reader.shapes import WideSpec, column_name
from cellstore.spark.rowexpr import expressible, key_column, key_spark_type, row_expression
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
        row_keys: Family to the row-key spec its column files hold key fields of (keyed
            files, docs/format.md 14.2); families absent hold ``__row``.
        shared_rows: Every region read from files holds one keyed file per family, all
            with the same rows digest (the same rows): the families need no full join.
        aliases: Family to its files' key-field aliases (docs/format.md 14.2): those
            columns are read from their key field's column.
    """

    files: dict[str, list[str]] = field(default_factory=dict)
    specs: dict[str, tuple[ColumnSpec, ...]] = field(default_factory=dict)
    ranges: list[tuple[bytes, bytes]] = field(default_factory=list)
    columns: tuple[tuple[str, bytes], ...] = ()
    codecs: dict[tuple[str, bytes], Codec] = field(default_factory=dict)
    row_keys: dict[str, RowKeySpec] = field(default_factory=dict)
    shared_rows: bool = True
    aliases: dict[str, Aliases] = field(default_factory=dict)


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
    found_by_region = {region: _region_files(t, tasks, wide) for region, tasks in by_region.items()}
    held = [found for found in found_by_region.values() if found]
    shared = all(map(_shares_rows, held)) and len({frozenset(f) for f in held}) <= 1
    by_family = {f for found in found_by_region.values() if found for f in found}
    valued = {f for f, q in wide.columns if f in by_family}
    if columns is not None and shared and len(valued) > 1:
        # values of several families of keyed files with the same rows: the source joins
        # them by position, Spark would shuffle both (docs/cluster.md, measured)
        found_by_region = dict.fromkeys(found_by_region)
    for region, found in found_by_region.items():
        if found is None or t.metadata.salt_buckets is not None or not _fits(plan, found):
            bounds = t.metadata.region(region)
            plan.ranges.append((bounds.start, bounds.end))
            continue
        for fam, (paths, specs, key, _, aliases) in found.items():
            plan.specs[fam] = specs
            if key is not None:
                plan.row_keys[fam] = key
            if aliases:
                plan.aliases[fam] = aliases
            plan.files.setdefault(fam, []).extend(paths)
    if plan.row_keys and (
        set(plan.row_keys) != set(plan.files) or len(set(plan.row_keys.values())) > 1
    ):
        # families of keyed and unkeyed files (or of two specs): no common join key,
        # every region through the source
        return dataclasses.replace(plan, files={}, specs={}, row_keys={}, ranges=_every(t))
    return dataclasses.replace(plan, shared_rows=shared and bool(plan.files))


def _every(t: Table) -> list[tuple[bytes, bytes]]:
    """Every region's row range."""
    return [(r.start, r.end) for r in t.metadata.regions]


#: Per family: the file URLs, the column set, the row-key spec, the rows digests, the
#: key-field aliases.
_Found = dict[
    str, tuple[list[str], tuple[ColumnSpec, ...], RowKeySpec | None, list[str | None], Aliases]
]


def _fits(plan: OptimizedPlan, found: _Found) -> bool:
    """Whether a region's families have the column sets and keys of the regions planned."""
    return all(
        fam not in plan.specs
        or (
            plan.specs[fam] == specs
            and plan.row_keys.get(fam) == key
            and plan.aliases.get(fam, ()) == aliases
        )
        for fam, (_, specs, key, _, aliases) in found.items()
    )


def _shares_rows(found: _Found) -> bool:
    """Whether a region's families are one keyed file each, all holding the same rows."""
    digests = {tuple(d) for _, _, _, d, _ in found.values()}
    return len(digests) == 1 and all(len(d) == 1 and d[0] is not None for d in digests)


def _region_files(t: Table, tasks: Sequence[ScanTask], wide: WideSpec) -> _Found | None:
    """A region's column files per family, or None when it needs the source."""
    codecs = dict(wide.codecs)
    out: _Found = {}
    for task in tasks:
        if fast_wide_families(task) is not None:
            return None
        for fam in task.families:
            if fam.family.ttl is not None or fam.spec.time_range is not None:
                return None
            bases, deltas = split_bases(fam.entries)  # a later column file is a delta too
            if deltas and len(older_companions(t.fs, task, fam, bases, deltas)) < len(deltas):
                return None  # a delta that can change a value: the source merges it
            for entry in bases:
                path = entry_path(task.table_path, entry.path)
                with StoreFileReader(t.fs, path, entry=entry) as reader:
                    specs = reader.info.columns
                    key = reader.info.row_key
                    digest = reader.info.rows_digest
                    aliases = reader.info.aliases
                if key is not None and not expressible(key):
                    return None  # a keyed file whose rows Spark SQL cannot encode
                name = fam.family.name
                for s in specs:
                    want = codecs.get((name, s.qualifier), Codec.BYTES)
                    if (name, s.qualifier) in (wide.columns or ()) and s.codec is not want:
                        return None
                paths, have, have_key, digests, have_aliases = out.setdefault(
                    name, ([], specs, key, [], aliases)
                )
                if have != specs or have_key != key or have_aliases != aliases:
                    return None
                url = t.fs.unstrip_protocol(path)
                if url not in paths:
                    paths.append(url)
                    digests.append(digest)
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
    fam_frames = {}
    for fam, paths in plan.files.items():
        frame = _family_frame(spark, fam, paths, plan, names, bare=columns is None)
        if frame is not None:
            fam_frames[fam] = frame
    if fam_frames:
        joined = _joined(fam_frames, plan)
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


def _family_frame(
    spark: Any,
    fam: str,
    paths: Sequence[str],
    plan: OptimizedPlan,
    names: Sequence[str],
    *,
    bare: bool,
) -> Any:
    """A family's column files as a DataFrame, or None.

    Returns:
        The family's row (``row``, or the key fields of a keyed file) and its requested
        columns; None when it has no requested column and ``bare`` is false.
    """
    from pyspark.sql import functions as F

    specs = {s.qualifier: s for s in plan.specs[fam]}
    key = plan.row_keys.get(fam)
    if key is None:
        heads = [(ROW_COLUMN, "binary", "row")]
    else:
        heads = [(key_column(f), key_spark_type(f), key_column(f)) for f in key.fields]
    aliases = dict(plan.aliases.get(fam, ()))
    wanted = [
        (q, name)
        for (f, q), name in zip(plan.columns, names, strict=True)
        if f == fam and q in specs
    ]
    if not wanted and not bare:
        return None
    values = [
        (specs[q].value_name, _spark_type(specs[q].codec), name)
        for q, name in wanted
        if q not in aliases
    ]
    # the schema is known from the footers: Spark need not read one to infer it
    read = [*heads, *values]
    schema = ", ".join(f"{_quoted(n)} {kind}" for n, kind, _ in read)
    frame = spark.read.schema(schema).parquet(*paths)
    picked = {alias: F.col(_quoted(n)).alias(alias) for n, _, alias in read}
    if aliases:
        # an aliased column is its key field's column, typed as the column (section 14.2)
        fields = {f.name: f for f in key.fields} if key is not None else {}
        for q, name in wanted:
            if q in aliases:
                source = F.col(_quoted(key_column(fields[aliases[q]])))
                picked[name] = source.cast(_spark_type(specs[q].codec)).alias(name)
    return frame.select(*[picked[alias] for _, _, alias in heads], *[picked[n] for _, n in wanted])


def _quoted(name: str) -> str:
    """A column name quoted for Spark SQL (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _joined(frames: Mapping[str, Any], plan: OptimizedPlan) -> Any:
    """The families' frames joined on the row, with ``row`` (binary) and their columns.

    When every family holds the same key's fields, they are joined on those fields and
    ``row`` is built once, after the join, as an expression (computed only where a query
    uses it); families of ``__row`` files are joined on ``row`` (the plan never mixes the
    two).
    With :attr:`OptimizedPlan.shared_rows` the first family's rows are every family's, so
    the others are left-joined as sides unique on the key (one ``first`` per key), and
    Spark drops the join of a family whose columns a query does not use: a count reads
    one family's footers only.
    """
    from pyspark.sql import functions as F

    keys = {plan.row_keys.get(fam) for fam in frames}
    if len(keys) == 1 and (spec := next(iter(keys))) is not None:
        on = [key_column(f) for f in spec.fields]
        first, *others = frames.values()
        joined = first
        for frame in others:
            if plan.shared_rows:
                # the same rows in every family: a left join on a side Spark knows to be
                # unique, which it drops when a query uses none of its columns (a count)
                values = [c for c in frame.columns if c not in on]
                if not values:
                    continue
                frame = frame.groupBy(*on).agg(*[F.first(F.col(f"`{c}`")).alias(c) for c in values])
                joined = joined.join(frame, on=on, how="left_outer")
            else:
                joined = joined.join(frame, on=on, how="full_outer")
        rest = [F.col(f"`{c}`") for c in joined.columns if c not in on]
        return joined.select(row_expression(spec).alias("row"), *rest)
    joined = None  # __row files: joined on row
    for frame in frames.values():
        joined = frame if joined is None else joined.join(frame, on="row", how="full_outer")
    return joined


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

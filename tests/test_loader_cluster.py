"""The bulk loader on real parts: S3 (moto server) and a distributed LocalCluster."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cellstore.loader import Mapping
from cellstore.storefiles import check
from cellstore.warehouse import connect
from clusters import process_client

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


@pytest.mark.s3
def test_load_from_and_into_s3(s3_root, s3_options):
    import s3fs

    fs = s3fs.S3FileSystem(**s3_options)
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    df1, df2 = frame(500), frame(300, offset=1000)
    with fs.open(f"{bucket}/in/part-1.csv", "wb") as f:
        f.write(df1.to_csv(index=False).encode())
    with fs.open(f"{bucket}/in/part-2.parquet", "wb") as f:
        pq.write_table(pa.Table.from_pandas(df2, preserve_index=False), f)
    wh = connect(s3_root, storage_options=s3_options)
    t = wh.create_table("ns:t", families=["f", "g"], splits=[b"key000400"])
    report = t.load(
        [f"s3://{bucket}/in/*.csv", f"s3://{bucket}/in/*.parquet"],
        mapping=MAPPING,
        storage_options=s3_options,
    )
    assert report.inputs == 2 and report.rows == 800
    assert report.cells == expected_cells(df1) + expected_cells(df2)
    assert report.report_path.startswith(f"{bucket}/warehouse/")
    for entry in t.files:
        assert check(t.fs, t.file_path(entry), region=t.metadata.region(entry.region)).ok
    got = wh.table("ns:t").scan().to_pandas()
    assert len(got) == report.cells


def test_load_on_local_cluster_with_worker_processes(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"in-{i}.parquet"
        pq.write_table(
            pa.Table.from_pandas(frame(2000, offset=i * 2000), preserve_index=False),
            p,
            row_group_size=700,
        )
        paths.append(str(p))
    t = connect(tmp_path / "wh").create_table(
        "t", families=["f", "g"], splits=[b"key002000", b"key004000"]
    )
    with process_client(2) as client:
        merge = t.load(str(tmp_path / "in-*.parquet"), mapping=MAPPING, client=client)
        big = frame(20000, offset=6000)
        spill = t.load(big, mapping=MAPPING, client=client, memory_budget=1 << 20)
    assert merge.mode == "merge" and merge.inputs == 3 and merge.rows == 6000
    assert merge.files_per_region == {"r000001": 2, "r000002": 2, "r000003": 2}
    assert spill.mode == "spill" and spill.rows == 20000 and spill.inputs > 2
    for entry in t.files:
        assert check(t.fs, t.file_path(entry), region=t.metadata.region(entry.region)).ok
    got = t.scan().to_pandas()
    assert len(got) == sum(
        expected_cells(frame(2000, offset=i * 2000)) for i in range(3)
    ) + expected_cells(big)

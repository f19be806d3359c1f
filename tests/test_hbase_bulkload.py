"""Loads with ``hfile_output``: the input as HBase bulk-load HFiles (ImportTsv's bulk output).

Every output is checked against reference ``hbase-hfile-format.md`` §12-13 (what
``HFileOutputFormat2`` writes and what ``completebulkload``/the region server check):
``DIR/<family>/<32 hex>`` only, each file's first and last row inside one target region,
cells sorted (R2.1), the bulk-load FileInfo keys, at most N files per region and family,
rows never split across files, and the cells read back with ``read_hfile`` equal an
independent model of the input (last record wins an exact key tie, R3.3 / R14.5).
"""

from __future__ import annotations

import itertools
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore.cli import cli
from cellstore.core.regions import Region
from cellstore.errors import BadRecordError, InvalidArgumentError, InvalidFamilyError
from cellstore.hbase import hfile_info, read_hfile, verify_hfile
from cellstore.loader import Mapping
from cellstore.loader.hfiles import parse_split_keys
from cellstore.storefiles.layout import bulkload_file_relpath
from cellstore.storefiles.rolling import HFileSettings
from cellstore.warehouse import connect
from clusters import process_client
from requirements import unavailable

VECTORS = Path(__file__).parents[2] / "shared" / "testdata" / "hbase-hfiles"
BIGTABLE = VECTORS / "google-bigtable-hbase" / "EndToEndIT-snapshot.zip"
NS_UPGRADE = VECTORS / "apache-hbase" / "TestNamespaceUpgrade.0.98.tgz"
NOW = 1_700_000_000_000
PUT = 4
#: FileInfo keys HFileOutputFormat2 + StoreFileWriter write (reference §12).
BULKLOAD_KEYS = (
    "BULKLOAD_TIMESTAMP",
    "BULKLOAD_SOURCE_TASK",
    "MAJOR_COMPACTION_KEY",
    "EXCLUDE_FROM_MINOR_COMPACTION",
    "TIMERANGE",
    "EARLIEST_PUT_TS",
    "DELETE_FAMILY_COUNT",
    "KEY_VALUE_VERSION",
    "MAX_MEMSTORE_TS_KEY",
    "hfile.LASTKEY",
)
MAPPING = Mapping.simple(row_key="id", columns=["cf:a=a", "g:b=b"])
SPLITS = [b"k00300", b"k00600"]


def frame(n: int, *, offset: int = 0, dup_every: int = 0) -> pd.DataFrame:
    """Records ``k<i>`` with two string columns; ``dup_every`` repeats some ids later."""
    ids = [f"k{i + offset:05d}" for i in range(n)]
    a = [f"a{i + offset}" for i in range(n)]
    b: list[str | None] = [f"b{i + offset}" if i % 5 else None for i in range(n)]
    if dup_every:
        ids += ids[::dup_every]
        a += [f"again{i}" for i in range(len(ids) - n)]
        b += [None] * (len(ids) - n)
    return pd.DataFrame({"id": ids, "a": a, "b": b})


def model(df: pd.DataFrame) -> dict[str, list[tuple[Any, ...]]]:
    """Expected cells per family, in HBase order: the last record wins a key tie."""
    cells: dict[tuple[str, bytes, bytes], bytes] = {}
    for rec in df.itertuples(index=False):
        for fam, col in (("cf", "a"), ("g", "b")):
            value = getattr(rec, col)
            if value is not None and not (isinstance(value, float) and pd.isna(value)):
                cells[(fam, rec.id.encode(), col.encode())] = value.encode()
    out: dict[str, list[tuple[Any, ...]]] = {}
    for (fam, row, qual), value in sorted(cells.items()):
        out.setdefault(fam, []).append((row, fam, qual, NOW, PUT, value))
    return out


def tuples(cells: pa.Table) -> list[tuple[Any, ...]]:
    cols = ["row", "family", "qualifier", "ts", "type", "value"]
    return [tuple(r.values()) for r in cells.select(cols).to_pylist()]


def region_index(regions: list[tuple[bytes, bytes]], row: bytes) -> int:
    (i,) = [i for i, (s, e) in enumerate(regions) if row >= s and (not e or row < e)]
    return i


def check_output(
    out: Path,
    report: Any,
    *,
    regions: list[tuple[bytes, bytes]],
    expected: dict[str, list[tuple[Any, ...]]],
    max_files: int = 32,
    bloom: str = "ROW",
    compression: str = "NONE",
) -> dict[tuple[int, str], list[Path]]:
    """Check every reference §13 rule on ``out``; returns the files per (region, family)."""
    h = report.hfile_output
    assert h is not None and report.version is None and report.seq is None
    # Family directories only, HFiles named by 32 lowercase hex digits (§12 layout).
    assert sorted(p.name for p in out.iterdir()) == sorted(expected)
    per_store: dict[tuple[int, str], list[Path]] = {}
    got: dict[str, list[tuple[int, bytes, list[tuple[Any, ...]]]]] = {}
    for fam_dir in out.iterdir():
        assert fam_dir.is_dir()
        for f in fam_dir.iterdir():
            assert re.fullmatch(r"[0-9a-f]{32}", f.name), f
            assert verify_hfile(str(f)).ok
            info = hfile_info(str(f))
            cells = read_hfile(str(f))
            assert info.version == "3.3" and info.entry_count == cells.num_rows > 0
            for key in BULKLOAD_KEYS:
                assert key in info.file_info, key
            assert info.max_seq_id is None and info.bulkload_timestamp == NOW
            assert info.bloom_type == bloom and info.compression == compression
            # First and last row inside one region: completebulkload never splits it.
            assert info.first_row is not None and info.last_row is not None
            r = region_index(regions, info.first_row)
            assert r == region_index(regions, info.last_row)
            assert set(cells.column("family").to_pylist()) == {fam_dir.name}
            keys = [(c[0], c[2], -c[3], -c[4]) for c in tuples(cells)]
            assert keys == sorted(keys) and len(set(keys)) == len(keys)  # R2.1, unique
            per_store.setdefault((r, fam_dir.name), []).append(f)
            got.setdefault(fam_dir.name, []).append((r, info.first_row, tuples(cells)))
    for (_, _), files in per_store.items():
        assert len(files) <= max_files
        seen: set[bytes] = set()
        for f in files:  # a row is never split across files
            rows = set(read_hfile(str(f)).column("row").to_pylist())
            assert not rows & seen
            seen |= rows
    for fam, parts in got.items():
        assert [c for _, _, part in sorted(parts) for c in part] == expected[fam]
    # The report lists exactly these files, with their counts.
    assert sorted(Path(f.path) for f in h.files) == sorted(
        f for files in per_store.values() for f in files
    )
    assert report.cells == h.cells == sum(len(v) for v in expected.values())
    assert sum(s.files for s in h.stores) == len(h.files) == report.files
    return per_store


def no_staging_left(parent: Path) -> None:
    assert not [p for p in parent.iterdir() if p.name.startswith(".")]


@pytest.fixture
def table(tmp_path: Path) -> Any:
    return connect(str(tmp_path / "wh")).create_table("ns:t", families=["cf", "g"], splits=SPLITS)


TABLE_REGIONS = [(b"", b"k00300"), (b"k00300", b"k00600"), (b"k00600", b"")]


def test_merge_mode_output_follows_reference_13(table: Any, tmp_path: Path) -> None:
    df = frame(900, dup_every=7)
    out = tmp_path / "bulk"
    version = table.version
    report = table.load(df, mapping=MAPPING, hfile_output=str(out), now_ms=NOW)
    assert report.mode == "merge" and report.rows == len(df)
    assert report.duplicates_dropped > 0
    per_store = check_output(out, report, regions=TABLE_REGIONS, expected=model(df))
    assert set(per_store) == {(r, f) for r in range(3) for f in ("cf", "g")}
    assert report.hfile_output.split_source == "table"
    table.refresh() if hasattr(table, "refresh") else None
    assert not table.files and table.log.latest_version() == version  # nothing committed
    no_staging_left(tmp_path)
    # The same input loaded into a cellstore table (another write path) has the same cells.
    table.load(df, mapping=MAPPING, now_ms=NOW)
    for fam, cells in model(df).items():
        assert tuples(table.scan(families=[fam]).to_arrow()) == cells


def test_spill_mode_rolls_on_rows_and_caps_files(table: Any, tmp_path: Path) -> None:
    df = frame(8000, dup_every=11)
    out = tmp_path / "bulk"
    report = table.load(
        df,
        mapping=MAPPING,
        hfile_output=str(out),
        now_ms=NOW,
        memory_budget=1 << 20,
        max_file_bytes=1 << 10,
        max_files_per_region=2,
    )
    assert report.mode == "spill" and report.merged_runs > 0
    per_store = check_output(out, report, regions=TABLE_REGIONS, expected=model(df), max_files=2)
    assert max(len(v) for v in per_store.values()) == 2  # rolled at 1 KiB, capped at 2
    assert not (out / "_runs").exists()
    no_staging_left(tmp_path)


def test_split_keys_from_file_with_escapes(table: Any, tmp_path: Path) -> None:
    keys = tmp_path / "splits.txt"
    keys.write_text("k0010\\x7F\n\nk00200\nk0050\\x00x\n")
    assert parse_split_keys(keys.read_text()) == [b"k0010\x7f", b"k00200", b"k0050\x00x"]
    df = frame(700)
    out = tmp_path / "bulk"
    report = table.load(
        df, mapping=MAPPING, hfile_output=str(out), split_keys=str(keys), now_ms=NOW
    )
    regions = [
        (b"", b"k0010\x7f"),
        (b"k0010\x7f", b"k00200"),
        (b"k00200", b"k0050\x00x"),
        (b"k0050\x00x", b""),
    ]
    per_store = check_output(out, report, regions=regions, expected=model(df))
    assert {r for r, _ in per_store} == {0, 1, 2, 3}
    assert report.hfile_output.split_source == "split-keys"
    assert [(s.start, s.end) for s in report.hfile_output.stores if s.family == "cf"] == regions
    # A list of keys works too (bytes, or printable strings).
    out2 = tmp_path / "bulk2"
    r2 = table.load(
        df, mapping=MAPPING, hfile_output=str(out2), split_keys=["k00100", b"k00400"], now_ms=NOW
    )
    check_output(
        out2,
        r2,
        regions=[(b"", b"k00100"), (b"k00100", b"k00400"), (b"k00400", b"")],
        expected=model(df),
    )


@pytest.fixture(scope="module")
def snapshot_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if not BIGTABLE.exists():
        unavailable("vectors", "HBase test vectors not present")
    d = tmp_path_factory.mktemp("bigtable")
    with zipfile.ZipFile(BIGTABLE) as z:
        z.extractall(d)
    yield d / "data"


def test_regions_and_settings_from_an_hbase_snapshot(tmp_path: Path, snapshot_root: Path) -> None:
    t = connect(str(tmp_path / "wh")).create_table("t", families=["cf"])
    df = pd.DataFrame({"id": [f"{i:02d}x" for i in range(100)], "a": [f"v{i}" for i in range(100)]})
    mapping = Mapping.simple(row_key="id", columns=["cf:a=a"])
    out = tmp_path / "bulk"
    report = t.load(
        df,
        mapping=mapping,
        hfile_output=str(out),
        hbase_root=str(snapshot_root),
        hbase_snapshot="test-snappy-snapshot",
        now_ms=NOW,
    )
    keys = [b""] + [str(i).encode() for i in range(10, 100, 10)] + [b""]
    regions = list(itertools.pairwise(keys))
    expected = {
        "cf": [
            (r.encode(), "cf", b"a", NOW, PUT, v.encode()) for r, v in zip(df.id, df.a, strict=True)
        ]
    }
    # COMPRESSION => 'SNAPPY' from the snapshot's table descriptor.
    per_store = check_output(out, report, regions=regions, expected=expected, compression="SNAPPY")
    assert len(per_store) == 10
    assert report.hfile_output.split_source == "hbase-snapshot"
    ids = {s.region for s in report.hfile_output.stores}
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)  # HBase encoded region names
    # A family the HBase table lacks: a clear error, nothing written.
    t2 = connect(str(tmp_path / "wh2")).create_table("t", families=["cf", "zz"])
    with pytest.raises(
        InvalidFamilyError, match="HBase table test-snappy-table has no family 'zz'"
    ):
        t2.load(
            df.assign(z="1"),
            mapping=Mapping.simple(row_key="id", columns=["zz:z=z"]),
            hfile_output=str(tmp_path / "bad"),
            hbase_root=str(snapshot_root),
            hbase_snapshot="test-snappy-snapshot",
        )
    assert not (tmp_path / "bad").exists()
    no_staging_left(tmp_path)


def test_regions_and_settings_from_an_hbase_root_table(tmp_path: Path) -> None:
    import tarfile

    if not NS_UPGRADE.exists():
        unavailable("vectors", "HBase test vectors not present")
    with tarfile.open(NS_UPGRADE) as tf:
        tf.extractall(tmp_path / "root", filter="data")
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f"])
    df = pd.DataFrame({"id": ["r2", "r1", "r3"], "a": ["x", "y", "z"]})
    out = tmp_path / "bulk"
    report = t.load(
        df,
        mapping=Mapping.simple(row_key="id", columns=["f:a=a"]),
        hfile_output=str(out),
        hbase_root=str(tmp_path / "root" / "hbase"),
        hbase_table="foo",
        now_ms=NOW,
        hfile_settings=HFileSettings(compression="gz"),
    )  # descriptor wins
    expected = {
        "f": [(r, "f", b"a", NOW, PUT, v) for r, v in [(b"r1", b"y"), (b"r2", b"x"), (b"r3", b"z")]]
    }
    # foo: one region, BLOOMFILTER => 'NONE', COMPRESSION => 'NONE'.
    check_output(out, report, regions=[(b"", b"")], expected=expected, bloom="NONE")
    assert report.hfile_output.split_source == "hbase-table"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\nc\nb\n", r"splits.txt, line 3: split keys are not sorted: 'b' comes after 'c'"),
        ("a\n\nb\nb\n", r"splits.txt, line 4: split key 'b' is duplicated \(also at .*line 3\)"),
    ],
)
def test_bad_split_keys_name_the_line(table: Any, tmp_path: Path, text: str, message: str) -> None:
    keys = tmp_path / "splits.txt"
    keys.write_text(text)
    out = tmp_path / "bulk"
    with pytest.raises(InvalidArgumentError, match=message):
        table.load(frame(10), mapping=MAPPING, hfile_output=str(out), split_keys=str(keys))
    assert not out.exists()
    no_staging_left(tmp_path)


def test_unknown_family_and_non_empty_dir(table: Any, tmp_path: Path) -> None:
    out = tmp_path / "bulk"
    with pytest.raises(InvalidFamilyError, match="zz"):
        table.load(
            frame(10).assign(z="1"),
            mapping=Mapping.simple(row_key="id", columns=["zz:z=z"]),
            hfile_output=str(out),
        )
    assert not out.exists()
    out.mkdir()
    (out / "old").write_text("x")
    with pytest.raises(InvalidArgumentError, match="exists and is not an empty directory"):
        table.load(frame(10), mapping=MAPPING, hfile_output=str(out))
    assert [p.name for p in out.iterdir()] == ["old"]
    with pytest.raises(InvalidArgumentError, match="only with hfile_output"):
        table.load(frame(10), mapping=MAPPING, split_keys=[b"a"])
    no_staging_left(tmp_path)


def test_a_failing_task_leaves_nothing_under_dir(table: Any, tmp_path: Path) -> None:
    """Spill mode: tasks write their sorted runs as they go; a bad record in the last input
    fails the load, and nothing is left under DIR (nor the staging directory)."""
    paths = []
    for i in range(4):
        df = frame(8000, offset=i * 8000).assign(a=lambda d: d["a"].str.len().astype(str))
        if i == 3:
            df.loc[7990, "a"] = "notanumber"
        df.to_csv(tmp_path / f"in{i}.csv", index=False)
        paths.append(str(tmp_path / f"in{i}.csv"))
    out = tmp_path / "bulk"
    out.mkdir()  # an empty DIR stays empty
    strict = Mapping.simple(row_key="id", columns=["cf:a=a:long", "g:b=b"])
    with pytest.raises(BadRecordError, match=r"in3.csv, line 7992, field 'a'"):
        table.load(paths, mapping=strict, hfile_output=str(out), memory_budget=1 << 20, workers=2)
    assert list(out.iterdir()) == []
    no_staging_left(tmp_path)


@pytest.mark.slow
def test_local_cluster_with_worker_processes(table: Any, tmp_path: Path) -> None:
    df = frame(3000)
    out = tmp_path / "bulk"
    with process_client(2) as client:
        report = table.load(df, mapping=MAPPING, hfile_output=str(out), client=client, now_ms=NOW)
        out2 = tmp_path / "bulk2"
        spill = table.load(
            frame(20000),
            mapping=MAPPING,
            hfile_output=str(out2),
            client=client,
            now_ms=NOW,
            memory_budget=1 << 20,
        )
    check_output(out, report, regions=TABLE_REGIONS, expected=model(df))
    assert spill.mode == "spill"
    check_output(out2, spill, regions=TABLE_REGIONS, expected=model(frame(20000)))
    no_staging_left(tmp_path)


@pytest.mark.s3
def test_hfile_output_on_s3(table: Any, s3_root: str, s3_options: dict[str, Any]) -> None:
    """DIR on S3 (moto): files are staged, then moved under DIR (no rename on S3)."""
    import fsspec

    url = s3_root.rsplit("/", 1)[0] + "/bulk"
    df = frame(2000)
    report = table.load(
        df, mapping=MAPPING, hfile_output=url, now_ms=NOW, hfile_storage_options=s3_options
    )
    fs = fsspec.filesystem("s3", **s3_options)
    bucket = url.split("/")[2]
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls(bucket)) == ["bulk"]  # no staging left
    got: dict[str, list[tuple[Any, ...]]] = {}
    names = fs.find(url)
    assert sorted(names) == sorted(f.path for f in report.hfile_output.files)
    for f in sorted(report.hfile_output.files, key=lambda f: (f.family, f.first_row)):
        assert re.fullmatch(r"[0-9a-f]{32}", f.path.rsplit("/", 1)[1])
        assert f.path.split("/")[-2] == f.family
        cells = read_hfile(f"s3://{f.path}", storage_options=s3_options)
        got.setdefault(f.family, []).extend(tuples(cells))
    assert got == model(df)


def test_cli_hfile_output_json(tmp_path: Path) -> None:
    root = str(tmp_path / "wh")
    connect(root).create_table("ns:t", families=["cf", "g"])
    df = frame(50)
    df.to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "splits.txt").write_text("k00010\nk00030\n")
    out = tmp_path / "bulk"
    runner = CliRunner()
    args = [
        "--root",
        root,
        "--output",
        "json",
        "load",
        "ns:t",
        str(tmp_path / "in.csv"),
        "--row-key",
        "id",
        "--column",
        "cf:a=a",
        "--column",
        "g:b=b",
        "--hfile-output",
        str(out),
        "--split-keys",
        str(tmp_path / "splits.txt"),
        "--hfile-compression",
        "gz",
        "--hfile-bloom",
        "rowcol",
    ]
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    h = doc["report"]["hfile-output"] if "report" in doc else doc["hfile-output"]
    assert h["split-source"] == "split-keys" and h["regions"] == 3
    assert {(s["family"], s["start"]) for s in h["stores"]} == {
        (f, k) for f in ("cf", "g") for k in ("", "k00010", "k00030")
    }
    for f in h["files"]:
        info = hfile_info(f["path"])
        assert info.compression == "GZ" and info.bloom_type == "ROWCOL"
    # The same DIR again: refused (not empty), a bad argument (exit code 2).
    again = runner.invoke(cli, [*args[:2], "--output", "text", *args[4:]])
    assert again.exit_code == 2 and "not an empty directory" in again.output, again.output
    (tmp_path / "bad.txt").write_text("b\na\n")
    bad = runner.invoke(
        cli,
        [
            *args[:-8],
            "--hfile-output",
            str(tmp_path / "o2"),
            "--split-keys",
            str(tmp_path / "bad.txt"),
        ],
    )
    assert bad.exit_code == 2 and "bad.txt, line 2" in bad.output, bad.output
    text = runner.invoke(
        cli, [*args[:2], "--output", "text", *args[4:-10], "--hfile-output", str(tmp_path / "o3")]
    )
    assert text.exit_code == 0, text.output
    assert "nothing committed" in text.output and "completebulkload" in text.output


def test_layout_names_bulkload_files() -> None:
    assert bulkload_file_relpath("cf", "0" * 32) == "cf/" + "0" * 32
    from cellstore.errors import InvalidNameError

    for fam, name in [
        ("a/b", "0" * 32),
        (".x", "0" * 32),
        ("cf", "0" * 31),
        ("cf", "A" * 32),
        ("cf", "../" + "0" * 29),
    ]:
        with pytest.raises(InvalidNameError):
            bulkload_file_relpath(fam, name)
    assert Region("r", b"", b"").contains(b"x")


def test_family_settings_from_hbase_descriptor_attributes() -> None:
    from cellstore.loader.hfiles import hfile_settings_of

    got = hfile_settings_of(
        {
            "COMPRESSION": "GZ",
            "DATA_BLOCK_ENCODING": "FAST_DIFF",
            "BLOCKSIZE": "16384",
            "BLOOMFILTER": "ROWCOL",
        },
        family="cf",
        table="ns:t",
    )
    assert got == HFileSettings(
        compression="gz", encoding="fast_diff", block_size=16384, bloom="rowcol"
    )
    assert hfile_settings_of({}, family="cf", table="t") == HFileSettings(block_size=65536)
    with pytest.raises(
        InvalidArgumentError,
        match=r"ns:t, family cf: BLOOMFILTER => "
        r"'ROWPREFIX_FIXED_LENGTH' is not supported",
    ):
        hfile_settings_of({"BLOOMFILTER": "ROWPREFIX_FIXED_LENGTH"}, family="cf", table="ns:t")
    with pytest.raises(InvalidArgumentError, match="HFile compression 'bogus'"):
        HFileSettings(compression="bogus")


# ----------------------------------------------------------- without a cellstore table
def test_tableless_csv_with_split_keys_file(tmp_path: Path) -> None:
    """ImportTsv's case: input + mapping + the HBase table's split keys, no cellstore table;
    CSV input (another read path than the frames above), duplicates: last record wins."""
    from cellstore.loader import write_hfiles

    df = frame(700, dup_every=7)
    df.to_csv(tmp_path / "in.csv", index=False)
    keys = tmp_path / "splits.txt"
    keys.write_text("k00100\nk0040\\x00\n")
    out = tmp_path / "bulk"
    report = write_hfiles(
        str(tmp_path / "in.csv"), mapping=MAPPING, output=str(out), split_keys=str(keys), now_ms=NOW
    )
    regions = [(b"", b"k00100"), (b"k00100", b"k0040\x00"), (b"k0040\x00", b"")]
    per_store = check_output(out, report, regions=regions, expected=model(df))
    assert set(per_store) == {(r, f) for r in range(3) for f in ("cf", "g")}
    assert report.hfile_output.split_source == "split-keys" and report.table == ""
    assert report.rows == len(df) and report.duplicates_dropped > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bulk", "in.csv", "splits.txt"]
    # No split points at all: one region holding every key.
    one = write_hfiles(df, mapping=MAPPING, output=str(tmp_path / "one"), now_ms=NOW)
    check_output(tmp_path / "one", one, regions=[(b"", b"")], expected=model(df))
    assert one.hfile_output.split_source == "single-region" and one.hfile_output.regions == 1


def test_tableless_regions_and_settings_from_an_exported_snapshot(
    tmp_path: Path, snapshot_root: Path
) -> None:
    from cellstore.loader import write_hfiles

    df = pd.DataFrame({"id": [f"{i:02d}x" for i in range(99, -1, -1)]})
    df["a"] = [f"v{i}" for i in range(100)]
    out = tmp_path / "bulk"
    report = write_hfiles(
        df,
        mapping=Mapping.simple(row_key="id", columns=["cf:a=a"]).to_dict(),  # dict form
        output=str(out),
        hbase_root=str(snapshot_root),
        hbase_snapshot="test-snappy-snapshot",
        hfile_settings=HFileSettings(compression="gz"),  # the descriptor wins
        now_ms=NOW,
    )
    keys = [b""] + [str(i).encode() for i in range(10, 100, 10)] + [b""]
    expected = {
        "cf": sorted(
            (r.encode(), "cf", b"a", NOW, PUT, v.encode()) for r, v in zip(df.id, df.a, strict=True)
        )
    }
    per_store = check_output(
        out, report, regions=list(itertools.pairwise(keys)), expected=expected, compression="SNAPPY"
    )
    assert len(per_store) == 10 and report.table == "test-snappy-table"
    assert report.hfile_output.split_source == "hbase-snapshot"
    # A family the HBase table lacks: named, with the table's families; nothing written.
    with pytest.raises(
        InvalidFamilyError,
        match=r"HBase table test-snappy-table has no family 'zz' \(families: cf\)",
    ):
        write_hfiles(
            df.assign(z="1"),
            mapping=Mapping.simple(row_key="id", columns=["cf:a=a", "zz:z=z"]),
            output=str(tmp_path / "bad"),
            hbase_root=str(snapshot_root),
            hbase_snapshot="test-snappy-snapshot",
        )
    assert not (tmp_path / "bad").exists()
    no_staging_left(tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\nc\nb\n", r"splits.txt, line 3: split keys are not sorted: 'b' comes after 'c'"),
        ("a\n\nb\nb\n", r"splits.txt, line 4: split key 'b' is duplicated \(also at .*line 3\)"),
    ],
)
def test_tableless_bad_input_writes_nothing(tmp_path: Path, text: str, message: str) -> None:
    from cellstore.loader import write_hfiles

    keys = tmp_path / "splits.txt"
    keys.write_text(text)
    out = tmp_path / "bulk"
    with pytest.raises(InvalidArgumentError, match=message):
        write_hfiles(frame(10), mapping=MAPPING, output=str(out), split_keys=str(keys))
    assert not out.exists()
    with pytest.raises(InvalidArgumentError, match="needs the row key in the mapping"):
        write_hfiles(
            frame(10), mapping=Mapping.simple(row_key=None, columns=["cf:a=a"]), output=str(out)
        )
    with pytest.raises(InvalidArgumentError, match="needs report_dir"):
        write_hfiles(frame(10), mapping=MAPPING, output=str(out), skip_bad_records=True)
    assert not out.exists()
    out.mkdir()
    (out / "old").write_text("x")
    with pytest.raises(InvalidArgumentError, match="exists and is not an empty directory"):
        write_hfiles(frame(10), mapping=MAPPING, output=str(out))
    assert [p.name for p in out.iterdir()] == ["old"]
    # Bad records skipped into report_dir (not under the output directory).
    df = frame(20).assign(a=lambda d: d["a"].str.len().astype(str))
    df.loc[3, "a"] = "notanumber"
    strict = Mapping.simple(row_key="id", columns=["cf:a=a:long"])
    rep = write_hfiles(
        df,
        mapping=strict,
        output=str(tmp_path / "ok"),
        skip_bad_records=True,
        report_dir=str(tmp_path / "reports"),
        now_ms=NOW,
    )
    assert rep.bad_records == 1 and rep.cells == 19
    assert rep.bad_records_path is not None and Path(rep.bad_records_path).exists()
    assert [p.name for p in (tmp_path / "ok").iterdir()] == ["cf"]
    no_staging_left(tmp_path)


def test_cli_tableless_hfile_output(tmp_path: Path, snapshot_root: Path) -> None:
    """``cellstore load --hfile-output DIR INPUT... --mapping M --split-keys F``: no TABLE,
    no warehouse (nothing is created under --root)."""
    df = frame(60, dup_every=9)
    df.to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "m.json").write_text(json.dumps(MAPPING.to_dict()))
    (tmp_path / "splits.txt").write_text("k00020\nk00040\n")
    root = tmp_path / "wh"
    out = tmp_path / "bulk"
    runner = CliRunner()
    base = ["--root", str(root), "--output", "json", "load", "--hfile-output"]
    result = runner.invoke(
        cli,
        [
            *base,
            str(out),
            str(tmp_path / "in.csv"),
            "--mapping",
            str(tmp_path / "m.json"),
            "--split-keys",
            str(tmp_path / "splits.txt"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["table-less"] is True and doc["hfile-output"]["regions"] == 3
    got: dict[str, list[tuple[Any, ...]]] = {}
    for f in sorted(doc["hfile-output"]["files"], key=lambda f: (f["family"], f["first-row"])):
        got.setdefault(f["family"], []).extend(tuples(read_hfile(f["path"])))
    # Cells get the load's time as timestamp (no --now on the command line): one value.
    (ts,) = {c[3] for cells in got.values() for c in cells}
    assert got == {
        fam: [(r, f, q, ts, t, v) for r, f, q, _, t, v in cells] for fam, cells in model(df).items()
    }
    assert not root.exists()
    # Regions and settings from the exported snapshot; text output names the HBase table.
    snap = pd.DataFrame({"id": ["05", "55", "95"], "a": ["x", "y", "z"]})
    snap.to_csv(tmp_path / "s.csv", index=False)
    text = runner.invoke(
        cli,
        [
            *base[:2],
            "load",
            "--hfile-output",
            str(tmp_path / "snap"),
            str(tmp_path / "s.csv"),
            "--row-key",
            "id",
            "--column",
            "cf:a=a",
            "--hbase-root",
            str(snapshot_root),
            "--hbase-snapshot",
            "test-snappy-snapshot",
        ],
    )
    assert text.exit_code == 0, text.output
    assert "regions from hbase-snapshot: 10" in text.output
    assert f"completebulkload {tmp_path / 'snap'} test-snappy-table" in text.output
    assert len(list((tmp_path / "snap" / "cf").iterdir())) == 3  # one file per region hit
    # Unsorted split keys: a usage error naming the line, nothing written.
    (tmp_path / "bad.txt").write_text("b\na\n")
    bad = runner.invoke(
        cli,
        [
            *base,
            str(tmp_path / "o2"),
            str(tmp_path / "in.csv"),
            "--mapping",
            str(tmp_path / "m.json"),
            "--split-keys",
            str(tmp_path / "bad.txt"),
        ],
    )
    assert bad.exit_code == 2 and "bad.txt, line 2" in bad.output, bad.output
    assert not (tmp_path / "o2").exists() and not root.exists()
    # A first positional that is neither an input nor a cellstore table: both said.
    typo = runner.invoke(
        cli,
        [
            *base[:2],
            "load",
            "ns:nope",
            str(tmp_path / "in.csv"),
            "--mapping",
            str(tmp_path / "m.json"),
            "--hfile-output",
            str(tmp_path / "o3"),
        ],
    )
    assert typo.exit_code == 3, typo.output  # not found (issue 29: 2 before)
    assert "input 'ns:nope' does not exist, and no cellstore table" in typo.output
    assert not (tmp_path / "o3").exists()


def test_tableless_row_key_spec_in_the_mapping(tmp_path: Path) -> None:
    """A salted composite row-key spec given inline (no table stores it): keys are what the
    spec's own encoder gives, and each salt bucket's rows land in its region."""
    from cellstore.core.rowkey import KeyField, RowKeySpec
    from cellstore.loader import write_hfiles

    spec = RowKeySpec(
        fields=(KeyField(name="user"), KeyField(name="n", type="int64")), salt_buckets=3
    )
    df = pd.DataFrame({"user": list("abcdefgh"), "n": range(8), "v": [f"x{i}" for i in range(8)]})
    out = tmp_path / "bulk"
    report = write_hfiles(
        df,
        mapping={
            "row_key": spec.to_dict(),
            "cells": [{"family": "f", "qualifier": "v", "value": "v"}],
        },
        output=str(out),
        split_keys=[b"\x01", b"\x02"],
        now_ms=NOW,
    )
    rows = spec.encode(pa.table(df)).to_pylist()
    cells = zip(rows, df.v, strict=True)
    expected = {"f": sorted((r, "f", b"v", NOW, PUT, v.encode()) for r, v in cells)}
    regions = [(b"", b"\x01"), (b"\x01", b"\x02"), (b"\x02", b"")]
    per_store = check_output(out, report, regions=regions, expected=expected)
    for (r, _), files in per_store.items():  # the salt byte is the region's
        salts = {row[0] for f in files for row in read_hfile(str(f)).column("row").to_pylist()}
        assert salts == {r}

"""Row-key design advice: ``cellstore advise``, ``Table.advise`` and the load-time check."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from cellstore import connect
from cellstore.cli import cli
from cellstore.core.family import Family
from cellstore.core.regions import regions_from_splits
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import InvalidArgumentError, KeyDesignWarning
from cellstore.loader import Mapping, advise_input
from cellstore.loader.keycheck import AdviceThresholds, KeySampler, analyze_keys


def codes(advice) -> set[str]:
    return {f.code for f in advice.findings}


def write_csv(path: Path, ids: list[str], *, extra: str = "v") -> Path:
    lines = [f"id,{extra},ts"] + [f"{k},x{i},{1_700_000_000 + i}" for i, k in enumerate(ids)]
    path.write_text("\n".join(lines) + "\n")
    return path


SEQUENTIAL = [f"ev{i:08d}" for i in range(2000)]
SHUFFLED = random.Random(7).sample(SEQUENTIAL, len(SEQUENTIAL))


@pytest.fixture
def wh(tmp_path: Path):
    return connect(str(tmp_path / "wh"))


# ----------------------------------------------------------------------------- pure checks
def test_monotonic_keys_found_in_input_order_only():
    keys = pa.array([k.encode() for k in SEQUENTIAL], pa.binary())
    advice = analyze_keys([keys], input_order=True)
    (finding,) = [f for f in advice.findings if f.code == "monotonic-keys"]
    assert finding.severity == "warning"
    assert finding.details["direction"] == "increasing" and finding.details["pairs"] == 1999
    assert "salt" in finding.fix and "Monotonically Increasing Row Keys" in finding.fix
    assert advice.summary.increasing_share == 1.0
    # The same keys from sorted store files carry no order information.
    assert "monotonic-keys" not in codes(analyze_keys([keys], input_order=False))
    # Shuffled keys are not monotonic.
    shuffled = pa.array([k.encode() for k in SHUFFLED], pa.binary())
    advice = analyze_keys([shuffled], input_order=True)
    assert "monotonic-keys" not in codes(advice)
    assert 0.4 < (advice.summary.increasing_share or 0) < 0.6


def test_decreasing_keys_and_runs_are_compared_within_a_run_only():
    desc = pa.array([k.encode() for k in reversed(SEQUENTIAL)], pa.binary())
    (f,) = analyze_keys([desc], input_order=True).findings
    assert f.code == "monotonic-keys" and f.details["direction"] == "decreasing"
    assert "first region" in f.message
    # Many short increasing runs whose starts jump around: still monotonic within runs,
    # and pairs across runs are not counted.
    runs = [pa.array([f"{p}-{i:04d}".encode() for i in range(50)]) for p in "qwertyuiop"]
    advice = analyze_keys(runs, input_order=True)
    assert advice.summary.ordered_pairs == 10 * 49
    assert "monotonic-keys" in codes(advice)


def test_too_few_keys_say_nothing_about_order_or_regions():
    keys = pa.array([f"k{i:03d}".encode() for i in range(50)])
    regions = regions_from_splits([b"k9"])
    advice = analyze_keys([keys], input_order=True, regions=regions)
    assert advice.findings == ()
    lower = AdviceThresholds(min_keys=10)
    assert {"monotonic-keys", "hot-region"} <= codes(
        analyze_keys([keys], input_order=True, regions=regions, thresholds=lower)
    )


def test_hot_region_threshold_scales_with_region_count():
    th = AdviceThresholds()
    assert th.hot_share(2) == 0.75 and th.hot_share(3) == 0.5 and th.hot_share(8) == 0.5
    keys = pa.array(
        [f"a{i:05d}".encode() for i in range(700)] + [f"z{i:05d}".encode() for i in range(300)]
    )
    two = regions_from_splits([b"m"])
    assert "hot-region" not in codes(analyze_keys([keys], input_order=False, regions=two))
    three = regions_from_splits([b"m", b"y"])
    advice = analyze_keys([keys], input_order=False, regions=three)
    (hot,) = [f for f in advice.findings if f.code == "hot-region"]
    assert hot.details["share"] == 0.7 and hot.details["region"] == three[0].id
    assert [r.keys for r in advice.summary.regions] == [700, 0, 300]


def test_long_keys_and_names():
    keys = pa.array([b"k" * 150, b"short", b"x" * 101])
    advice = analyze_keys(
        [keys],
        input_order=True,
        families=["d", "a_rather_long_family", "x", "y"],
        qualifiers=[b"via", b"myVeryImportantAttribute"],
    )
    by_code = {f.code: f for f in advice.findings}
    assert by_code["long-row-keys"].severity == "warning"
    assert by_code["long-row-keys"].details == {"over": 2, "sampled": 3, "limit": 100, "max": 150}
    assert by_code["long-family-name"].severity == "info"
    assert by_code["long-family-name"].details["families"] == ["a_rather_long_family"]
    assert by_code["many-families"].details["families"] == 4
    assert by_code["long-qualifiers"].details["examples"] == ["myVeryImportantAttribute"]
    assert [f.severity for f in advice.findings] == ["warning", "info", "info", "info"]
    s = advice.summary
    assert (s.min_length, s.max_length, s.sampled_keys) == (5, 150, 3)
    assert s.mean_length == pytest.approx((150 + 5 + 101) / 3)


def test_salt_skew_from_repeated_keys():
    from cellstore.loader.records import prefix_salt

    hot = [b"celebrity"] * 900 + [f"user{i}".encode() for i in range(300)]
    keys = prefix_salt(pa.array(hot, pa.binary()), 8)
    advice = analyze_keys(
        [keys],
        input_order=True,
        salt_buckets=8,
        regions=regions_from_splits([bytes([i]) for i in range(1, 8)]),
    )
    assert "salt-skew" in codes(advice) and "hot-region" in codes(advice)
    assert sum(advice.summary.salt_buckets) == pytest.approx(1.0)
    even = prefix_salt(pa.array([f"user{i}".encode() for i in range(2000)], pa.binary()), 8)
    advice = analyze_keys([even], input_order=True, salt_buckets=8)
    assert "salt-skew" not in codes(advice)
    assert max(advice.summary.salt_buckets) < 0.2


def test_sequential_keys_under_a_salt_are_not_reported():
    """Phoenix's salt of consecutive keys walks the buckets in order, so salted keys
    mostly increase too; the salt is the fix, so the order is measured under it."""
    from cellstore.loader.records import prefix_salt

    keys = prefix_salt(pa.array([k.encode() for k in SEQUENTIAL], pa.binary()), 16)
    advice = analyze_keys([keys], input_order=True, salt_buckets=16)
    assert advice.findings == ()
    assert advice.summary.increasing_share == 1.0  # without the salt byte


def test_key_sampler_is_bounded_even_and_in_order():
    sampler = KeySampler(100)
    for start in range(0, 10_000, 333):
        stop = min(start + 333, 10_000)
        sampler.add(pa.array([f"{i:06d}".encode() for i in range(start, stop)]))
    got = [int(k) for k in sampler.sample().to_pylist()]
    assert 100 <= len(got) <= 200
    assert got == sorted(got) and got[0] == 0
    steps = set(np.diff(got).tolist())
    assert steps == {sampler.stride}  # systematic: every stride-th key
    assert got[-1] >= 10_000 - sampler.stride
    none = KeySampler(0)
    none.add(pa.array([b"a"]))
    assert len(none.sample()) == 0 and none.seen == 1


def test_thresholds_are_validated():
    with pytest.raises(InvalidArgumentError):
        AdviceThresholds(hot_region_share=0)
    with pytest.raises(InvalidArgumentError):
        AdviceThresholds(min_keys=0)


# ------------------------------------------------------------------------- input advice
def test_advise_input_before_create(tmp_path):
    seq = write_csv(tmp_path / "seq.csv", SEQUENTIAL)
    plain = Mapping.simple(row_key="id", columns=["d:v=v"])
    advice = advise_input(str(seq), mapping=plain)
    assert advice.source == "input" and advice.table is None
    assert advice.summary.complete and advice.summary.records_read == 2000
    assert codes(advice) == {"monotonic-keys"}
    # A hash prefix on the leading field spreads the same ids.
    hashed = Mapping.from_dict(
        {
            "row_key": {"fields": [{"name": "id", "hash": "md5_prefix", "hash_bytes": 2}]},
            "cells": [{"family": "d", "qualifier": "v", "value": "v"}],
        }
    )
    advice = advise_input(str(seq), mapping=hashed)
    assert advice.findings == () and advice.summary.min_length == 12
    # So does salting (the loader's salt byte for a one-column key).
    advice = advise_input(str(seq), mapping=plain, salt_buckets=8)
    assert advice.findings == () and len(advice.summary.regions) == 8
    # --regions N: split at the sample's quantiles, as load --create does: even.
    advice = advise_input(str(seq), mapping=plain, regions=4)
    assert [r.region for r in advice.summary.regions] == [f"planned-{i}" for i in (1, 2, 3, 4)]
    assert [r.keys for r in advice.summary.regions] == [500, 500, 500, 500]


def test_advise_input_samples_spread_parts(tmp_path):
    """With a small sample, parts are picked across the input and read from their start."""
    for p in range(6):
        write_csv(tmp_path / f"part-{p}.csv", [f"{p}-{i:05d}" for i in range(1000)])
    plain = Mapping.simple(row_key="id", columns=["d:v=v"])
    advice = advise_input(str(tmp_path / "part-*.csv"), mapping=plain, sample_keys=1200)
    s = advice.summary
    assert s.records_read == 1200 and not s.complete
    # 6 parts, 1 chosen per 1000 sampled keys: the first and last part, 600 records each.
    assert s.sampled_keys == 1200 and s.ordered_pairs == 2 * 599
    assert "monotonic-keys" in codes(advice)


def test_table_advise_on_input_routes_to_the_tables_regions(wh, tmp_path):
    t = wh.create_table("ns:ev", families=[Family(name="d")], splits=[b"ev00001000", b"m"])
    skew = write_csv(tmp_path / "skew.csv", SHUFFLED)  # all below "m": regions 1 and 2
    advice = t.advise(str(skew), mapping=Mapping.simple(row_key="id", columns=["d:v=v"]))
    assert advice.table == "ns:ev"
    assert [r.keys for r in advice.summary.regions] == [1000, 1000, 0]
    assert "hot-region" not in codes(advice)  # 50% each of three regions: not above 50%
    t2 = wh.create_table("ns:ev2", families=[Family(name="d")], splits=[b"a", b"m"])
    advice = t2.advise(str(skew), mapping=Mapping.simple(row_key="id", columns=["d:v=v"]))
    (hot,) = [f for f in advice.findings if f.code == "hot-region"]
    assert hot.details["share"] == 1.0 and "region" in hot.message
    assert advice.summary.increasing_share is not None
    assert "monotonic-keys" not in codes(advice)
    with pytest.raises(InvalidArgumentError):
        t.advise(str(skew))  # input without a mapping


def test_long_keys_and_long_names_from_a_mapping(wh, tmp_path):
    ids = [("k" * 120) + f"{i:04d}" for i in range(10)]
    path = write_csv(tmp_path / "long.csv", ids, extra="quite_a_long_column_name")
    t = wh.create_table("long", families=[Family(name="information")])
    mapping = Mapping.from_dict(
        {
            "row_key": "id",
            "cells": [
                {
                    "family": "information",
                    "qualifier": "quite_a_long_column_name",
                    "value": "quite_a_long_column_name",
                }
            ],
        }
    )
    advice = t.advise(str(path), mapping=mapping)
    assert codes(advice) == {"long-row-keys", "long-family-name", "long-qualifiers"}
    assert advice.warnings[0].details["max"] == 124


def test_qualifiers_from_columns_are_checked(tmp_path):
    path = tmp_path / "follows.csv"
    path.write_text("id,followed\nu1,someone_with_a_very_long_handle\nu2,bo\n")
    mapping = Mapping.from_dict(
        {
            "row_key": "id",
            "cells": [{"family": "f", "qualifier_column": "followed"}],
        }
    )
    advice = advise_input(str(path), mapping=mapping)
    (f,) = advice.findings
    assert f.code == "long-qualifiers"
    assert f.details["examples"] == ["someone_with_a_very_long_handle"]


def test_row_key_spec_of_the_table_is_used(wh):
    spec = RowKeySpec(
        fields=(KeyField(name="user"), KeyField(name="ts", type="int64", reverse_timestamp=True))
    )
    t = wh.create_table("tl", families=[Family(name="d")], row_key=spec)
    n = 600
    df = pd.DataFrame({"user": ["alice"] * n, "ts": np.arange(n, dtype=np.int64), "v": ["x"] * n})
    advice = t.advise(df, mapping=Mapping.simple(row_key=None, columns=["d:v=v"]))
    (f,) = advice.findings  # newer events sort first: the keys decrease in input order
    assert f.code == "monotonic-keys" and f.details["direction"] == "decreasing"
    assert advice.summary.min_length == len(b"alice\x00") + 8


# ------------------------------------------------------------------------- table advice
def test_advise_table_from_store_files(wh):
    t = wh.create_table(
        "t", families=[Family(name="d"), Family(name="longfamilyname")], splits=[b"m"]
    )
    df = pd.DataFrame({"id": [f"a{i:05d}" for i in range(900)] + ["z1"] * 1, "v": ["x"] * 901})
    t.load(
        df,
        mapping=Mapping.simple(row_key="id", columns=["d:v=v", "longfamilyname:w=v"]),
        key_advice="off",
    )
    advice = t.advise()
    assert advice.source == "table" and advice.table == "default:t"
    s = advice.summary
    assert s.ordered_pairs is None and s.increasing_share is None
    assert [r.cells for r in s.regions] == [1800, 2]
    assert s.sampled_keys == 901 and s.distinct_keys == 901
    assert codes(advice) == {"hot-region", "long-family-name"}
    hot = advice.warnings[0]
    assert "cells" in hot.message and hot.details["share"] == pytest.approx(1800 / 1802, 1e-3)
    doc = advice.to_dict()
    assert doc["warnings"] == 1 and doc["summary"]["regions"][1]["start"] == "m"
    json.dumps(doc)


def test_advise_empty_table(wh):
    advice = wh.create_table("empty", families=["d"]).advise()
    assert advice.summary.sampled_keys == 0 and advice.findings == ()


# ------------------------------------------------------------------------- load warnings
def test_load_warns_about_monotonic_keys(wh):
    t = wh.create_table("w", families=["d"])
    df = pd.DataFrame({"id": SEQUENTIAL, "v": ["x"] * len(SEQUENTIAL)})
    mapping = Mapping.simple(row_key="id", columns=["d:v=v"])
    with pytest.warns(KeyDesignWarning, match="increase in input order") as record:
        report = t.load(df, mapping=mapping)
    assert len(record) == 1 and "Fix: salt the row key" in str(record[0].message)
    assert record[0].filename == __file__  # points at the caller of Table.load
    assert [w.code for w in report.warnings] == ["monotonic-keys"]
    assert report.to_dict()["warnings"][0]["code"] == "monotonic-keys"
    shuffled = pd.DataFrame({"id": [f"x{k}" for k in SHUFFLED], "v": ["x"] * len(SHUFFLED)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", KeyDesignWarning)
        assert t.load(shuffled, mapping=mapping).warnings == ()
        assert t.load(df, mapping=mapping, key_advice="off").warnings == ()
        quiet = t.load(df, mapping=mapping, key_advice="report")
    assert [w.code for w in quiet.warnings] == ["monotonic-keys"]
    with pytest.raises(InvalidArgumentError):
        t.load(df, mapping=mapping, key_advice="loud")  # type: ignore[arg-type]


def test_load_warns_about_a_hot_region_in_spill_mode(wh):
    """Every task samples its keys, in both load modes; regions are the table's."""
    t = wh.create_table("hot", families=["d"], splits=[b"b", b"c", b"d"])
    ids = [f"a{k}" for k in SHUFFLED]
    df = pd.DataFrame({"id": ids, "v": ["x" * 200] * len(ids)})
    with pytest.warns(KeyDesignWarning, match="region"):
        report = t.load(
            df,
            mapping=Mapping.simple(row_key="id", columns=["d:v=v"]),
            memory_budget=1 << 20,
            workers=2,
        )
    assert report.mode == "spill"
    assert [w.code for w in report.warnings] == ["hot-region"]


# ---------------------------------------------------------------------------------- CLI
@pytest.fixture
def run(tmp_path: Path):
    runner = CliRunner()
    root = str(tmp_path / "wh")

    def invoke(*args: str, output: str = "text") -> Result:
        return runner.invoke(
            cli, ["--root", root, "--output", output, *args], catch_exceptions=False
        )

    return invoke


def test_cli_advise_text_json_and_strict(run, tmp_path):
    seq = write_csv(tmp_path / "seq.csv", SEQUENTIAL)
    args = ("advise", "ns:new", str(seq), "--row-key", "id", "--column", "d:v=v")
    res = run(*args)
    assert res.exit_code == 0, res.output
    assert "Row-key design advice for a new table: 2,000 row keys built from the input" in (
        res.output
    )
    assert "key length: min 10, mean 10.0, max 10 bytes" in res.output
    assert "WARNING monotonic-keys" in res.output and "fix: salt the row key" in res.output
    assert run(*args, "--strict").exit_code == 9  # issue 29: one code per kind (was 1)
    res = run(*args, "--salt-buckets", "8", "--strict", output="json")
    assert res.exit_code == 0
    doc = json.loads(res.output)
    assert doc["findings"] == [] and doc["warnings"] == 0
    assert len(doc["summary"]["regions"]) == 8 and len(doc["summary"]["salt-buckets"]) == 8
    doc = json.loads(run(*args, output="json").output)
    assert doc["findings"][0]["code"] == "monotonic-keys"
    assert doc["summary"]["key-length"] == {"min": 10, "mean": 10.0, "max": 10}


def test_cli_advise_existing_table_and_errors(run, tmp_path):
    assert run("advise", "nope").exit_code == 3
    assert run("create", "t", "--family", "d", "--split", "m").exit_code == 0
    csv = write_csv(tmp_path / "in.csv", [f"a{k}" for k in SHUFFLED])
    res = run("advise", "t", str(csv), "--row-key", "id", "--column", "d:v=v")
    assert res.exit_code == 0 and "WARNING hot-region" in res.output
    assert "r000001" in res.output and "100.0%" in res.output
    res = run(
        "advise", "t", str(csv), "--row-key", "id", "--column", "d:v=v", "--salt-buckets", "4"
    )
    assert res.exit_code == 2 and "exists" in res.stderr
    assert run("advise", "t", str(csv)).exit_code == 2  # input without a mapping
    assert run("advise", "t", "--row-key", "id").exit_code == 2  # mapping without input
    res = run("advise", "t", str(csv), "--row-key", "id", "--column", "x:v=v")
    assert res.exit_code == 2 and "x" in res.stderr  # unknown family
    assert run("load", "t", str(csv), "--row-key", "id", "--column", "d:v=v").exit_code == 0
    res = run("advise", "t")
    assert res.exit_code == 0
    assert "sampled from the store files" in res.output and "CELLS" in res.output
    doc = json.loads(run("advise", "t", "--strict", output="json").output)
    assert doc["source"] == "table" and doc["summary"]["regions"][0]["cells"] == 2000


def test_cli_load_prints_key_warnings(run, tmp_path):
    seq = write_csv(tmp_path / "seq.csv", SEQUENTIAL)
    args = ("load", "t", str(seq), "--row-key", "id", "--column", "d:v=v", "--create")
    with warnings.catch_warnings():
        warnings.simplefilter("error", KeyDesignWarning)  # the CLI reports, never warns
        res = run(*args)
    assert res.exit_code == 0, res.output
    assert "warning: monotonic-keys: row keys increase in input order" in res.output
    assert "cellstore advise default:t INPUT..." in res.output
    res = run(*args, "--load-id", "again", output="json")
    assert json.loads(res.output)["warnings"][0]["code"] == "monotonic-keys"

"""Large CSV/TSV and JSON-lines files load as several tasks, one per byte range.

An uncompressed text file read one record a line is cut into byte ranges of about the
planner's target part size (``memory_budget=1 MiB`` makes it 64 KiB here). A range owns the
lines that start in it. Split and unsplit loads must give the same table (later records
win exact key ties, R3.1), the same bad-record lines and record numbers, and the same
bad-records file.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cellstore import connect
from cellstore.errors import BadRecordError
from cellstore.loader import Mapping, TextOptions
from cellstore.loader.inputs import discover_inputs, read_part

MAPPING = Mapping.simple(row_key="k", columns=["f:n=n:long", "f:t=t"])
SMALL = 1 << 20  # memory budget giving 64 KiB parts
NOW = 1_700_000_000_000


def csv_text(
    n: int,
    *,
    seed: int,
    eol: str = "\n",
    bad: frozenset[int] = frozenset(),
    final_eol: bool = True,
    dup_every: int = 0,
) -> tuple[str, dict[int, int]]:
    """CSV (header k,n,t) with empty lines and some long lines; line of record ``i``."""
    rnd = random.Random(seed)
    out = ["k,n,t"]
    where = {}
    for i in range(n):
        if rnd.random() < 0.05:
            out.append("")
        key = f"k{(i // dup_every if dup_every else i):05d}"
        t = "v" * rnd.choice([1, 7, 40, 3000])
        out.append(f"{key},{'oops' if i in bad else i},{t}")
        where[i] = len(out)
    return eol.join(out) + (eol if final_eol else ""), where


def jsonl_text(
    n: int, *, seed: int, bad: frozenset[int] = frozenset(), malformed: frozenset[int] = frozenset()
) -> tuple[str, dict[int, int]]:
    rnd = random.Random(seed)
    out = []
    where = {}
    for i in range(n):
        if rnd.random() < 0.05:
            out.append("  ")
        if i in malformed:
            out.append("{not json")
        else:
            out.append(
                json.dumps(
                    {
                        "k": f"k{i:05d}",
                        "n": "oops" if i in bad else i,
                        "t": "w" * rnd.choice([1, 9, 2500]),
                    }
                )
            )
        where[i] = len(out)
    return "\n".join(out), where


def parts_of(path: Path, target: int, **text: object) -> int:
    inputs = discover_inputs(
        str(path), columns=["k", "n", "t"], target_part_bytes=target, text=TextOptions(**text)
    )  # type: ignore[arg-type]
    return len(inputs.parts)


def read_all(path: Path, target: int, block_size: int = 4096) -> tuple[pa.Table, list, list, list]:
    """Every part's records, record numbers, lines and malformed lines, concatenated."""
    inputs = discover_inputs(
        str(path),
        columns=["k", "n", "t"],
        target_part_bytes=target,
        text=TextOptions(block_size=block_size),
    )
    tables, records, lines, malformed = [], [], [], []
    for part in inputs.parts:
        for b in read_part(part):
            idx = np.arange(b.table.num_rows)
            tables.append(b.table)
            records += b.records_of(idx).tolist()
            lines += (b.lines_of(idx) if b.lines is not None else idx).tolist()
            malformed += b.malformed_lines()
    return pa.concat_tables(tables), records, lines, malformed


def load(tmp_path: Path, name: str, path: Path, *, budget: int | None = None, skip: bool = False):
    t = connect(str(tmp_path / "wh")).create_table(name, families=["f"])
    extra = {"memory_budget": budget} if budget else {}
    report = t.load(
        str(path), mapping=MAPPING, key_advice="off", now_ms=NOW, skip_bad_records=skip, **extra
    )
    return t, report


def cells(t) -> list:
    return t.scan(max_versions=10).to_pandas().to_dict("records")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_split_load_equals_unsplit_load(tmp_path, fmt):
    if fmt == "csv":
        text, _ = csv_text(600, seed=1, dup_every=3)  # exact key ties inside and across parts
    else:
        text, _ = jsonl_text(600, seed=1)
    path = tmp_path / f"in.{fmt}"
    path.write_text(text)
    gz = tmp_path / f"in.{fmt}.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert parts_of(path, 1 << 16) > 4
    assert parts_of(gz, 1 << 16) == 1  # compressed files cannot be cut
    split, r1 = load(tmp_path, "split", path, budget=SMALL)
    whole, r2 = load(tmp_path, "whole", path)
    from_gz, r3 = load(tmp_path, "gz", gz, budget=SMALL)
    got = cells(split)
    assert got == cells(whole) == cells(from_gz)
    assert len(got) == (400 if fmt == "csv" else 1200)  # 200 keys x 2 cells after ties
    assert r1.records == r2.records == r3.records == 600


def test_later_record_wins_tie_across_part_boundary(tmp_path):
    # R3.1: an exact key tie (same row, column, timestamp) goes to the later record.
    lines = ["k,n,t"] + [f"k{i:05d},{i},{'x' * 200}" for i in range(2000)] + ["k00000,-1,last"]
    path = tmp_path / "in.csv"
    path.write_text("\n".join(lines) + "\n")
    assert parts_of(path, 1 << 16) > 4
    t, _ = load(tmp_path, "t", path, budget=SMALL)
    row = t.scan(start_row="k00000", stop_row="k00001").to_pandas()
    assert sorted(row.value.tolist()) == [b"last", (-1).to_bytes(8, "big", signed=True)]


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("final_eol", [True, False])
def test_csv_ranges_match_unsplit_read(tmp_path, eol, final_eol):
    text, _ = csv_text(400, seed=2, eol=eol, final_eol=final_eol, bad=frozenset({3, 250, 399}))
    text = text.replace(f"{eol}k00123,", f'{eol}k00123,"', 1)  # unterminated quote
    path = tmp_path / "in.csv"
    path.write_bytes(text.encode())
    whole = read_all(path, 1 << 30)
    for target in (2999, 20_000):
        got = read_all(path, target)
        assert got[0].equals(whole[0])
        assert got[1:] == whole[1:]
    assert parts_of(path, 2999) > 50


def test_jsonl_ranges_match_unsplit_read(tmp_path):
    text, _ = jsonl_text(400, seed=3, malformed=frozenset({7, 200, 201}))
    path = tmp_path / "in.jsonl"
    path.write_text(text)
    whole = read_all(path, 1 << 30)
    assert len(whole[3]) == 3
    for target in (1000, 5003, 30_000):
        got = read_all(path, target)
        assert got[0].equals(whole[0])
        assert got[1:] == whole[1:]


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["", "a", "bb", "x" * 50, '"q', "ü"]),
            st.sampled_from(["\n", "\r\n", "\n\n", "\r\n\r\n"]),
        ),
        min_size=1,
        max_size=60,
    ),
    cuts=st.integers(min_value=2, max_value=40),
    final=st.booleans(),
)
def test_random_cut_points_keep_every_line_once(tmp_path_factory, rows, cuts, final):
    """Any cut of any file: every record read once, in order, with its line and number."""
    body = "".join(f"r{i},{i},{v}{eol}" for i, (v, eol) in enumerate(rows))
    if not final:
        body = body.rstrip("\r\n")
    data = ("k,n,t\n" + body).encode()
    path = tmp_path_factory.mktemp("cut") / "in.csv"
    path.write_bytes(data)
    whole = read_all(path, 1 << 30, block_size=1024)
    got = read_all(path, max(1, len(data) // cuts), block_size=1024)
    assert got[0].equals(whole[0])
    assert got[1:] == whole[1:]


def test_bad_record_in_later_part_names_its_line_strict(tmp_path):
    text, where = csv_text(600, seed=4, bad=frozenset({555}))
    path = tmp_path / "in.csv"
    path.write_text(text)
    assert parts_of(path, 1 << 16) > 4
    with pytest.raises(BadRecordError) as e:
        load(tmp_path, "t", path, budget=SMALL)
    assert e.value.line == where[555]
    assert f"{path}, line {where[555]}, field 'n'" in str(e.value)


def test_malformed_jsonl_in_later_part_names_its_line_strict(tmp_path):
    text, where = jsonl_text(600, seed=5, malformed=frozenset({580}))
    path = tmp_path / "in.jsonl"
    path.write_text(text)
    assert parts_of(path, 1 << 16) > 4
    with pytest.raises(BadRecordError) as e:
        load(tmp_path, "t", path, budget=SMALL)
    assert e.value.line == where[580]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_skip_mode_bad_records_file_same_as_unsplit(tmp_path, fmt):
    bad = frozenset({0, 150, 151, 420, 599})
    if fmt == "csv":
        text, where = csv_text(600, seed=6, bad=bad)
    else:
        text, where = jsonl_text(600, seed=6, bad=bad, malformed=frozenset({10, 300}))
    path = tmp_path / f"in.{fmt}"
    path.write_text(text)
    assert parts_of(path, 1 << 16) > 4
    _, split = load(tmp_path, "split", path, budget=SMALL, skip=True)
    _, whole = load(tmp_path, "whole", path, skip=True)
    assert split.bad_records == whole.bad_records == len(bad) + (0 if fmt == "csv" else 2)
    assert split.bad_reasons == whole.bad_reasons
    assert split.records == whole.records
    got = sorted(Path(split.bad_records_path).read_text().splitlines())
    want = sorted(Path(whole.bad_records_path).read_text().splitlines())
    assert got == want
    found = {json.loads(x)["line"] for x in got}
    assert {where[i] for i in bad} <= found


def test_multiline_csv_stays_one_part(tmp_path):
    text, _ = csv_text(300, seed=7)
    path = tmp_path / "in.csv"
    path.write_text(text)
    assert parts_of(path, 1 << 16) > 1
    assert parts_of(path, 1 << 16, multiline=True) == 1

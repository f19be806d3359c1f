"""Strict input handling (issue 12): quotes that run past their line, bad JSON lines,
mappings naming missing columns or unknown keys, and numbers that overflow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore import connect
from cellstore.cli import cli
from cellstore.errors import BadCellError, BadRecordError, InvalidArgumentError
from cellstore.loader import Mapping, TextOptions
from cellstore.warehouse import Table

MAPPING = Mapping.simple(row_key="k", columns=["f:v=v"])
UNTERMINATED = 'k,v\nr1,a\nr2,"unterminated\nr3,c\nr4,d\n'


@pytest.fixture
def table(tmp_path: Path) -> Table:
    return connect(str(tmp_path / "wh")).create_table("t", families=["f"])


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def values(t: Table) -> dict[bytes, bytes]:
    """Row key to value of the table's (single-column) cells."""
    cells = t.scan().to_arrow()
    return dict(
        zip(cells.column("row").to_pylist(), cells.column("value").to_pylist(), strict=True)
    )


def bad_lines(report: Any) -> list[dict[str, Any]]:
    assert report.bad_records_path is not None
    text = Path(report.bad_records_path).read_text()
    return [json.loads(x) for x in text.splitlines()]


# ------------------------------------------------------------------------ CSV quotes
def test_unterminated_quote_fails_with_file_line_and_field(tmp_path, table):
    path = write(tmp_path, "in.csv", UNTERMINATED)
    with pytest.raises(BadRecordError) as e:
        table.load(str(path), mapping=MAPPING, key_advice="off")
    assert e.value.line == 3 and e.value.field == "v" and e.value.source == str(path)
    assert f"{path}, line 3, field 'v': unterminated quote" in str(e.value)
    assert table.files == ()  # nothing committed


def test_unterminated_quote_is_skipped_and_later_lines_load(tmp_path, table):
    path = write(tmp_path, "in.csv", UNTERMINATED)
    report = table.load(str(path), mapping=MAPPING, skip_bad_records=True, key_advice="off")
    assert report.bad_records == 1 and report.rows == 3 and report.records == 4
    (bad,) = bad_lines(report)
    assert (bad["line"], bad["field"]) == (3, "v")
    assert bad["values"] == {"text": 'r2,"unterminated'}
    assert values(table) == {b"r1": b"a", b"r3": b"c", b"r4": b"d"}


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_unterminated_quote_on_the_last_line(tmp_path, table, eol):
    path = write(tmp_path, "in.csv", f'k,v{eol}r1,a{eol}r2,"open')
    report = table.load(str(path), mapping=MAPPING, skip_bad_records=True, key_advice="off")
    assert [(b["line"], b["field"]) for b in bad_lines(report)] == [(3, "v")]
    assert values(table) == {b"r1": b"a"}


def test_tsv_unterminated_quote_in_an_unmapped_column(tmp_path, table):
    path = write(tmp_path, "in.tsv", 'k\tx\tv\nr1\t"open\t1\nr2\tok\t2\n')
    report = table.load(str(path), mapping=MAPPING, skip_bad_records=True, key_advice="off")
    assert [(b["line"], b["field"]) for b in bad_lines(report)] == [(2, "x")]
    assert values(table) == {b"r2": b"2"}


def test_quotes_that_close_on_their_line_are_fine(tmp_path, table):
    text = 'k,v\nr1,"a ""b"" c"\nr2,5" tall\nr3,"x,y"\n\nr4,""\n'
    path = write(tmp_path, "in.csv", text)
    report = table.load(str(path), mapping=MAPPING, key_advice="off")
    assert report.bad_records == 0 and report.rows == 4
    # An empty field, quoted or not, is a null: no cell for r4.
    assert values(table) == {b"r1": b'a "b" c', b"r2": b'5" tall', b"r3": b"x,y"}


@pytest.mark.parametrize("data", ["", "\n", "\n\r\n\n"])
@pytest.mark.parametrize("multiline", [False, True])
def test_a_file_of_line_breaks_loads_nothing_in_both_modes(tmp_path, table, data, multiline):
    """(Found by the input fuzzer's model.) Multiline mode used to refuse an empty file."""
    path = write(tmp_path, "in.csv", data)
    for skip in (False, True):
        report = table.load(
            str(path),
            mapping=MAPPING,
            text=TextOptions(multiline=multiline),
            skip_bad_records=skip,
            key_advice="off",
        )
        assert (report.records, report.bad_records, report.version) == (0, 0, None)


def test_multiline_blank_first_block_with_data_after_it_is_not_read_as_empty(tmp_path, table):
    """Data after a first block of only line breaks is an error, never silently nothing."""
    path = write(tmp_path, "in.csv", "\n" * 3000 + "k,v\nr1,a\n")
    with pytest.raises(BadRecordError, match="cannot read as csv"):
        table.load(str(path), mapping=MAPPING, text=TextOptions(multiline=True, block_size=1024))


def test_multiline_option_accepts_quoted_line_breaks(tmp_path, table):
    path = write(tmp_path, "in.csv", 'k,v\nr1,"x\ny"\nr2,b\n')
    with pytest.raises(BadRecordError, match="line 2, field 'v': unterminated quote"):
        table.load(str(path), mapping=MAPPING, key_advice="off")
    report = table.load(
        str(path), mapping=MAPPING, key_advice="off", text=TextOptions(multiline=True)
    )
    assert report.rows == 2
    assert values(table) == {b"r1": b"x\ny", b"r2": b"b"}


def test_multiline_from_the_mapping_file(tmp_path, table):
    mapping = write(
        tmp_path,
        "m.toml",
        """
row_key = "k"
[input]
multiline = true
[[cells]]
family = "f"
qualifier = "v"
value = "v"
""",
    )
    path = write(tmp_path, "in.csv", 'k,v\nr1,"x\ny"\n')
    assert table.load(str(path), mapping=str(mapping), key_advice="off").rows == 1
    assert Mapping.from_file(str(mapping)).input_options == {"multiline": True}


def test_line_mode_across_small_blocks(tmp_path, table):
    rows = [f"r{i:05d},{'x' * (i % 50)}" for i in range(3000)]
    bad = {7, 1500, 2999}
    for i in bad:
        rows[i] = f'r{i:05d},"open'
    path = write(tmp_path, "in.csv", "k,v\n" + "\n".join(rows) + "\n")
    report = table.load(
        str(path),
        mapping=MAPPING,
        skip_bad_records=True,
        key_advice="off",
        text=TextOptions(block_size=1024),
    )
    assert sorted(b["line"] for b in bad_lines(report)) == sorted(i + 2 for i in bad)
    assert report.rows == 3000 - len(bad)


# --------------------------------------------------------------------------- JSON lines
def test_jsonl_bad_lines_are_named_and_counted(tmp_path, table):
    text = (
        '{"k": "r1", "v": "a"}\n'
        '{"k": "r2", "v": "trunc\n'
        "[1, 2]\n"
        '{"k": "r4", "v": "d"} garbage\n'
        '{"k": "r5", "v": {"nested": 1}}\n'
        '{"k": "r6", "v": 6}\n'
    )
    path = write(tmp_path, "in.jsonl", text)
    with pytest.raises(BadRecordError) as e:
        table.load(str(path), mapping=MAPPING, key_advice="off")
    assert e.value.line == 2 and e.value.source == str(path)
    report = table.load(str(path), mapping=MAPPING, skip_bad_records=True, key_advice="off")
    got = [(b["line"], b["field"]) for b in bad_lines(report)]
    assert got == [(2, "<line>"), (3, "<line>"), (4, "<line>"), (5, "v")]
    assert report.bad_records == 4 and report.rows == 2
    assert values(table) == {b"r1": b"a", b"r6": b"6"}


def test_jsonl_line_that_is_not_utf8_is_a_bad_record(tmp_path, table):
    """Found by the fuzzer: pyarrow's JSON reader let raw non-UTF-8 bytes into a string
    column, and the load crashed with UnicodeDecodeError instead of naming the line."""
    data = b'{"k": "r1", "v": "a"}\n{"k": "r2", "v": "\x80"}\n{"k": "r3", "v": "c"}\n'
    path = write(tmp_path, "in.jsonl", data)
    with pytest.raises(BadRecordError) as e:
        table.load(str(path), mapping=MAPPING, key_advice="off")
    assert e.value.line == 2
    report = table.load(str(path), mapping=MAPPING, skip_bad_records=True, key_advice="off")
    assert [b["line"] for b in bad_lines(report)] == [2]
    assert report.bad_records == 1 and report.rows == 2
    assert values(table) == {b"r1": b"a", b"r3": b"c"}


def test_jsonl_types_that_change_between_lines(tmp_path, table):
    path = write(tmp_path, "in.jsonl", '{"k": "r1", "v": 1}\n{"k": "r2", "v": "x"}\n')
    assert table.load(str(path), mapping=MAPPING, key_advice="off").rows == 2
    assert values(table) == {b"r1": b"1", b"r2": b"x"}


# ------------------------------------------------------------------- missing columns
def test_mapping_missing_column_names_it_before_reading(tmp_path, table):
    path = write(tmp_path, "in.csv", "k,value,other\nr1,a,b\n")
    mapping = Mapping.simple(row_key="k", columns=["f:v=valeu"])
    with pytest.raises(InvalidArgumentError) as e:
        table.load(str(path), mapping=mapping, key_advice="off")
    msg = str(e.value)
    assert f"input {path} has no column 'valeu'" in msg
    assert "cells[0] (f:v) value" in msg
    assert "did you mean 'value'?" in msg
    assert "'k', 'value', 'other'" in msg


@pytest.mark.parametrize("kind", ["parquet", "pandas", "arrow"])
def test_missing_column_in_typed_inputs(tmp_path, table, kind):
    frame = pd.DataFrame({"key": ["a"], "v": ["1"]})
    source: Any = frame
    if kind == "parquet":
        source = str(tmp_path / "in.parquet")
        frame.to_parquet(source)
    elif kind == "arrow":
        source = pa.Table.from_pandas(frame)
    with pytest.raises(
        InvalidArgumentError,
        match=r"no column 'k' \(mapping row_key\); "
        r"did you mean 'key'\?",
    ):
        table.load(source, mapping=MAPPING, key_advice="off")


def test_cli_missing_column_is_one_line(tmp_path):
    path = write(tmp_path, "in.csv", "id,v\nr1,a\n")
    res = CliRunner().invoke(
        cli,
        [
            "--root",
            str(tmp_path / "wh"),
            "load",
            "t",
            str(path),
            "--row-key",
            "ik",
            "--column",
            "f:v=v",
            "--create",
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == InvalidArgumentError.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr
    assert lines[0].startswith("error: input ") and "no column 'ik' (mapping row_key)" in lines[0]
    assert "did you mean 'id'?" in lines[0]


def test_cli_multiline_flag(tmp_path):
    path = write(tmp_path, "in.csv", 'k,v\nr1,"x\ny"\n')
    args = [
        "--root",
        str(tmp_path / "wh"),
        "load",
        "t",
        str(path),
        "--row-key",
        "k",
        "--column",
        "f:v=v",
        "--create",
    ]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 8 and "unterminated quote" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    res = CliRunner().invoke(cli, [*args, "--multiline"], catch_exceptions=False)
    assert res.exit_code == 0, res.output


# ---------------------------------------------------------------------- mapping keys
@pytest.mark.parametrize(
    ("doc", "hint"),
    [
        ({"row_kye": "k", "cells": [{"family": "f", "qualifier": "v"}]}, "'row_key'"),
        ({"row_key": "k", "cells": [{"family": "f", "qualifer": "v"}]}, "'qualifier'"),
        (
            {
                "row_key": "k",
                "cells": [{"family": "f", "qualifier": "v"}],
                "input": {"delimeter": ";"},
            },
            "'delimiter'",
        ),
        (
            {
                "row_key": "k",
                "timestamp": {"column": "t", "unti": "s"},
                "cells": [{"family": "f", "qualifier": "v"}],
            },
            "'unit'",
        ),
        (
            {
                "row_key": "k",
                "cells": [{"family": "f", "qualifier": "v", "value": "v", "codec": "lnog"}],
            },
            "'long'",
        ),
    ],
)
def test_mapping_key_typos_suggest_the_known_key(doc, hint):
    with pytest.raises(InvalidArgumentError, match=f"did you mean {hint}"):
        Mapping.from_dict(doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"row_key": 5, "cells": [{"family": "f", "qualifier": "v"}]},
        {"row_key": "k", "cells": "f:v"},
        {"row_key": "k", "cells": [{"family": 3, "qualifier": "v"}]},
        {"row_key": "k", "cells": [{"family": "f", "qualifier": 7}]},
        {"row_key": "k", "cells": [{"family": "f", "qualifier_hex": "zz"}]},
        {"row_key": "k", "cells": [{"family": "f", "qualifier": "v", "value": ["x"]}]},
        {"row_key": "k", "columns": 3},
        {"row_key": "k", "cells": [{"family": "f", "qualifier": "v"}], "input": []},
        {"row_key": "k", "cells": [{"family": "f", "qualifier": "v"}], "input": {"header": "yes"}},
        {
            "row_key": "k",
            "cells": [{"family": "f", "qualifier": "v"}],
            "input": {"delimiter": ",,"},
        },
        {
            "row_key": {"fields": [{"name": "a", "width": "x"}]},
            "cells": [{"family": "f", "qualifier": "v"}],
        },
    ],
)
def test_mapping_values_of_the_wrong_shape(doc):
    with pytest.raises(InvalidArgumentError):
        Mapping.from_dict(doc)


# ---------------------------------------------------------------------------- overflow
TS_MAPPING = Mapping.simple(row_key="k", columns=["f:v=v"], timestamp="ts")


@pytest.mark.parametrize(
    ("ts", "unit"),
    [(str(2**70), "ms"), (str(2**63), "ms"), (str(2**62), "s"), (str(-(2**70)), "ms")],
)
def test_timestamp_beyond_int64_is_a_bad_record(tmp_path, table, ts, unit):
    mapping = Mapping.simple(row_key="k", columns=["f:v=v"], timestamp="ts", timestamp_unit=unit)
    path = write(tmp_path, "in.csv", f"k,v,ts\nr1,a,5\nr2,b,{ts}\nr3,c,7\n")
    with pytest.raises(BadRecordError) as e:
        table.load(str(path), mapping=mapping, key_advice="off")
    assert (e.value.line, e.value.field) == (3, "ts")
    assert f"{path}, line 3, field 'ts'" in str(e.value)
    report = table.load(str(path), mapping=mapping, skip_bad_records=True, key_advice="off")
    assert report.bad_records == 1 and report.rows == 2


@pytest.mark.parametrize("ts", [2**64 + 1, 2**63, -(2**64)])
def test_pandas_object_timestamp_past_64_bits_is_a_bad_record(table, ts):
    """A Python int past 64 bits in a pandas object column: a bad record naming the field,
    from the bulk loader and from load_cells (pyarrow's OverflowError never leaks)."""
    frame = pd.DataFrame({"k": ["r1", "r2", "r3"], "v": ["a", "b", "c"]})
    frame["ts"] = pd.Series([5, ts, 7], dtype=object)
    with pytest.raises(BadRecordError, match="field 'ts'") as e:
        table.load(frame, mapping=TS_MAPPING, key_advice="off")
    assert (e.value.record, e.value.field) == (1, "ts")
    report = table.load(frame, mapping=TS_MAPPING, skip_bad_records=True, key_advice="off")
    assert (report.records, report.rows, report.bad_records) == (3, 2, 1)
    assert sorted(table.scan().to_arrow().column("row").to_pylist()) == [b"r1", b"r3"]
    cells = pd.DataFrame({"row": [b"x", b"y"], "family": ["f", "f"], "qualifier": [b"q"] * 2})
    cells["ts"] = pd.Series([ts, 1], dtype=object)
    cells["value"] = [b"v", b"w"]
    version = table.refresh().version
    with pytest.raises(BadCellError, match=r"record 0, field 'ts': .*64-bit long") as e:
        table.load_cells(cells)
    assert (e.value.record, e.value.field) == (0, "ts")
    late = cells.assign(ts=pd.Series([1, ts], dtype=object))
    with pytest.raises(BadCellError, match="record 1, field 'ts'"):
        table.load_cells(late)
    assert table.refresh().version == version  # nothing committed


def test_pandas_values_that_do_not_convert_are_bad_cells(table):
    """A pandas value pyarrow cannot convert names its record and field in load_cells."""
    cells = pd.DataFrame(
        {"row": [b"x", 5], "family": ["f", "f"], "qualifier": [b"q", b"q"], "value": [b"v"] * 2}
    )
    with pytest.raises(BadCellError, match="record 1, field 'row'") as e:
        table.load_cells(cells)
    assert (e.value.record, e.value.field) == (1, "row")


def test_timestamp_columns_in_every_unit(table):
    frame = pd.DataFrame(
        {
            "k": ["a", "b"],
            "v": ["1", "2"],
            "ts": pd.to_datetime([1_500_000, 2_000_000_000_999_999], unit="ns"),
        }
    )
    table.load(frame, mapping=TS_MAPPING, key_advice="off")
    cells = table.scan().to_arrow()
    assert sorted(cells.column("ts").to_pylist()) == [1, 2_000_000_000]
    huge = pa.table({"k": ["a"], "v": ["1"], "ts": pa.array([2**63 - 1], pa.timestamp("s"))})
    with pytest.raises(BadRecordError, match="field 'ts': timestamp out of range"):
        table.load(huge, mapping=TS_MAPPING, key_advice="off")
    wrapped = pa.table({"k": ["a"], "v": ["1"], "ts": pa.array([2**64 - 1], pa.uint64())})
    with pytest.raises(BadRecordError, match="field 'ts': timestamp out of range"):
        table.load(wrapped, mapping=TS_MAPPING, key_advice="off")


@pytest.mark.parametrize(
    ("codec", "value"), [("long", 2**70), ("int", 2**40), ("short", 2**20), ("long", -(2**64))]
)
def test_numbers_that_overflow_their_codec(tmp_path, table, codec, value):
    mapping = Mapping.simple(row_key="k", columns=[f"f:v=v:{codec}"])
    path = write(tmp_path, "in.csv", f"k,v\nr1,1\nr2,{value}\n")
    with pytest.raises(BadRecordError, match=f"line 3, field 'v': out of range for {codec}"):
        table.load(str(path), mapping=mapping, key_advice="off")
    frame = pd.DataFrame({"k": ["r1", "r2"], "v": [1, value]})  # object column past 64 bits
    with pytest.raises(BadRecordError, match=f"record 1, field 'v': out of range for {codec}"):
        table.load(frame, mapping=mapping, key_advice="off")
    report = table.load(frame, mapping=mapping, skip_bad_records=True, key_advice="off")
    assert report.bad_records == 1 and report.rows == 1
    jsonl = write(tmp_path, "in.jsonl", f'{{"k": "r1", "v": 1}}\n{{"k": "r2", "v": {value}}}\n')
    report = table.load(str(jsonl), mapping=mapping, skip_bad_records=True, key_advice="off")
    assert report.bad_records == 1 and [b["line"] for b in bad_lines(report)] == [2]

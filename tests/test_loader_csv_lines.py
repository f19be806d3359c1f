"""Bad-record line numbers in CSV files whose quoted values span lines (and blank lines).

Quoted values may span lines only with ``multiline`` (off by default), so these loads
turn it on.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cellstore import connect
from cellstore.errors import BadRecordError
from cellstore.loader import Mapping, TextOptions

MAPPING = Mapping.simple(row_key="k", columns=["f:n=n:long", "f:t=t"])
MULTILINE = TextOptions(multiline=True)


def build(
    rows: list[tuple[str, str, str]], *, eol: str = "\n", seed: int = 0, blank_every: int = 0
) -> tuple[str, list[int]]:
    """CSV text (header k,n,t) and the line where each record starts."""
    rnd = random.Random(seed)
    out = [f"k,n,t{eol}"]
    line = 2
    starts = []
    for i, (k, n, t) in enumerate(rows):
        if blank_every and i % blank_every == 0:
            out.append(eol)
            line += 1
        starts.append(line)
        quoted = any(c in t for c in '\n",') or rnd.random() < 0.3
        field = '"' + t.replace('"', '""') + '"' if quoted else t
        out.append(f"{k},{n},{field}{eol}")
        line += 1 + t.count("\n")
    return "".join(out), starts


def texts(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    pool = ["plain", "two\nlines", 'say ""hi""', "a,b", "x\n\ny", 'q"\nz', '5" tall']
    return [rnd.choice(pool) for _ in range(n)]


def load_bad_lines(
    tmp_path: Path, text: str, *, block_size: int = 1 << 20, newline: str = ""
) -> list[int]:
    path = tmp_path / "in.csv"
    path.write_bytes(text.encode())
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f"])
    report = t.load(
        str(path),
        mapping=MAPPING,
        skip_bad_records=True,
        key_advice="off",
        text=TextOptions(block_size=block_size, multiline=True),
    )
    assert report.bad_records_path is not None
    lines = Path(report.bad_records_path).read_text().splitlines()
    return [json.loads(x)["line"] for x in lines]


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_bad_record_lines_with_multiline_values(tmp_path, eol):
    n = 60
    bad = {3, 17, 18, 41, 59}
    values = texts(n, seed=1)
    rows = [(f"k{i:03d}", "oops" if i in bad else str(i), values[i]) for i in range(n)]
    text, starts = build(rows, eol=eol, blank_every=7)
    got = load_bad_lines(tmp_path, text)
    assert got == [starts[i] for i in sorted(bad)]


def test_first_bad_record_error_names_its_line(tmp_path):
    rows = [("a", "1", "line one\nline two\nline three"), ("b", "2", "ok"), ("c", "x", "ok")]
    text, starts = build(rows)
    path = tmp_path / "in.csv"
    path.write_text(text)
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f"])
    with pytest.raises(BadRecordError) as e:
        t.load(str(path), mapping=MAPPING, key_advice="off", text=MULTILINE)
    assert e.value.line == starts[2] == 6
    assert f"{path}, line 6, field 'n'" in str(e.value)


def test_malformed_rows_after_multiline_values(tmp_path):
    text = 'k,n,t\na,1,"x\ny"\n\nb,2,3,4\nc,3,ok\nd,4\n'
    path = tmp_path / "in.csv"
    path.write_text(text)
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f"])
    report = t.load(
        str(path), mapping=MAPPING, skip_bad_records=True, key_advice="off", text=MULTILINE
    )
    bad = [json.loads(x) for x in Path(report.bad_records_path).read_text().splitlines()]
    assert [(b["line"], b["field"]) for b in bad] == [(5, "<line>"), (7, "<line>")]
    assert report.rows == 2


def test_line_scan_across_small_blocks(tmp_path):
    """The scanner reads in blocks; quotes and line breaks straddle block boundaries."""
    n = 400
    bad = set(range(5, n, 37))
    values = texts(n, seed=2)
    rows = [(f"k{i:04d}", "nope" if i in bad else str(i), values[i] * 3) for i in range(n)]
    text, starts = build(rows, eol="\r\n", blank_every=11, seed=3)
    assert len(text) > 8 * 1024
    got = load_bad_lines(tmp_path, text, block_size=1024)
    assert got == [starts[i] for i in sorted(bad)]


def test_quote_inside_an_unquoted_value_is_a_plain_character(tmp_path):
    text = 'k,n,t\na,1,5" tall\nb,x,"multi\nline"\nc,y,ok\n'
    path = tmp_path / "in.csv"
    path.write_text(text)
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f"])
    report = t.load(
        str(path), mapping=MAPPING, skip_bad_records=True, key_advice="off", text=MULTILINE
    )
    bad = [json.loads(x) for x in Path(report.bad_records_path).read_text().splitlines()]
    assert [b["line"] for b in bad] == [3, 5]
    assert t.get("a").column("value").to_pylist()[1] == b'5" tall'

"""Values and row keys decoded with the codecs a table's mapping-based loads recorded.

Issue 18, "Rough edges": a mapping-based load records its column codecs and row key in the
table properties ``mapping.codecs`` / ``mapping.row-key`` (docs/format.md section 6.1);
``cellstore scan``/``get`` decode with them by default (``--raw-values`` turns it off),
``--key FIELD=VALUE`` builds composite keys, and mistakes are explained. Expected values
come from the input records and from ``struct`` (HBase ``Bytes`` encodings), not from the
decoder under test.
"""

from __future__ import annotations

import json
import struct
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from cellstore import Family, connect
from cellstore.cli import cli
from cellstore.cli.output import printable
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import CellstoreWarning, InvalidArgumentError
from cellstore.loader import KeyColumn, LoadMapping
from cellstore.loader.mapping import CODECS_PROPERTY, ROW_KEY_PROPERTY, TableCodecs

TABLE = "ns:sensors"
#: Input records: sensor id, time (ms), temperature (double), reading count (long), ok flag.
RECORDS = [
    ("sensor-00001", 1_700_000_000_000, 21.5, 7, True),
    ("sensor-00001", 1_700_000_060_000, -3.25, 8, False),
    ("sensor-00002", 1_700_000_000_000, 19.0, 1, True),
]
SPEC = RowKeySpec(
    fields=(KeyField(name="sensor_id", type="string"), KeyField(name="ts", type="int64")),
    salt_buckets=4,
)
COLUMNS = ("m:temp=temp:double", "m:count=count:long", "m:ok=ok:boolean")


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def run(root: str):
    runner = CliRunner()

    def invoke(*args: str, output: str = "text") -> Result:
        return runner.invoke(cli, ["--root", root, "--output", output, *args])

    return invoke


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.output, result.stderr)
    return result


@pytest.fixture
def csv_input(tmp_path: Path) -> str:
    path = tmp_path / "sensors.csv"
    lines = ["sensor_id,ts,temp,count,ok"]
    lines += [f"{s},{ts},{t},{c},{str(o).lower()}" for s, ts, t, c, o in RECORDS]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def sensors(root: str, run, csv_input: str) -> str:
    """A salted composite-key table loaded through ``cellstore load`` with inline codecs."""
    connect(root).create_table(TABLE, families=[Family(name="m")], row_key=SPEC, salt_buckets=4)
    args = [a for c in COLUMNS for a in ("--column", c)]
    result = ok(run("load", TABLE, csv_input, *args))
    assert "%|" not in result.stderr and "it/s" not in result.stderr  # no bar off a TTY
    return TABLE


def _cell_lines(result: Result) -> list[str]:
    return [line for line in ok(result).stdout.splitlines() if "column=" in line]


# ------------------------------------------------------------------- recorded properties
def test_load_records_codecs_in_one_documented_property(sensors, root):
    props = connect(root).table(sensors).metadata.properties
    assert json.loads(props[CODECS_PROPERTY]) == {
        "columns": {"m:count": "long", "m:ok": "boolean", "m:temp": "double"},
        "families": {},
    }
    # The spec stored with the table is its row key: not repeated in a property.
    assert ROW_KEY_PROPERTY not in props


def test_a_key_column_load_records_its_row_key_and_get_uses_it(root, run):
    t = connect(root).create_table("ns:ids", families=[Family(name="f")])
    frame = pa.table({"id": [42, 7], "v": ["a", "b"]})
    key = KeyColumn(column="id", codec="long")
    t.load(frame, mapping=LoadMapping.simple(row_key=key, columns=["f:v=v"]), key_advice="off")
    props = connect(root).table("ns:ids").metadata.properties
    assert json.loads(props[ROW_KEY_PROPERTY]) == {"column": "id", "codec": "long"}
    assert TableCodecs.from_properties(props).row_key == key
    got = ok(run("get", "ns:ids", "--key", "id=42"))
    assert "value=a" in got.stdout
    doc = json.loads(ok(run("get", "ns:ids", "--key", "id=42", output="json")).stdout)
    assert doc["row"] == printable(struct.pack(">q", 42))
    assert doc["cells"][0]["key"] == {"id": 42}
    lines = _cell_lines(run("scan", "ns:ids"))
    assert [line.split()[0] for line in lines] == ["id=7", "id=42"]  # big-endian order


def test_a_changed_codec_warns_and_the_latest_wins(sensors, root, csv_input):
    t = connect(root).table(sensors)
    with pytest.warns(CellstoreWarning, match=r"m:temp was loaded as double .* string now"):
        t.load(csv_input, mapping=LoadMapping.simple(row_key=None, columns=["m:temp=temp"]))
    codecs = connect(root).table(sensors).value_codecs()
    assert codecs.columns["m:temp"].value == "string"
    assert codecs.columns["m:count"].value == "long"  # columns the load did not map stay


def test_the_same_codecs_again_do_not_warn(sensors, root, csv_input):
    t = connect(root).table(sensors)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CellstoreWarning)
        t.load(
            csv_input,
            mapping=LoadMapping.simple(row_key=None, columns=list(COLUMNS)),
            key_advice="off",
        )


# ------------------------------------------------------------------------- scan and get
def test_scan_decodes_values_and_composite_keys_by_default(sensors, run):
    lines = _cell_lines(run("scan", sensors))
    for sensor, ts, temp, count, flag in RECORDS:
        key = f"sensor_id={sensor},ts={ts}"
        mine = [line for line in lines if line.split()[0] == key]
        assert len(mine) == 3, (key, lines)
        assert any("column=m:temp, timestamp=" in m and m.endswith(f"value={temp!r}") for m in mine)
        assert any(m.endswith(f"value={count}") for m in mine)
        assert any(m.endswith(f"value={str(flag).lower()}") for m in mine)


def test_raw_values_prints_stored_bytes(sensors, run):
    lines = _cell_lines(run("scan", sensors, "--raw-values", "--column", "m:temp"))
    values = sorted(line.rsplit("value=", 1)[1] for line in lines)
    expected = sorted(printable(struct.pack(">d", r[2])) for r in RECORDS)
    assert values == expected
    # Row keys are the spec's encoding (salt-free): the sensor id, 0x00, the int64 ts.
    rows = {line.split()[0] for line in lines}
    assert printable(b"sensor-00002\x00" + struct.pack(">Q", RECORDS[2][1] ^ (1 << 63))) in rows


def test_scan_json_has_typed_values_and_key_fields(sensors, run):
    doc = json.loads(ok(run("scan", sensors, output="json")).stdout)
    assert doc["rows"] == 3
    temps = {
        (c["key"]["sensor_id"], c["key"]["ts"]): c["value"]
        for c in doc["cells"]
        if c["column"] == "m:temp"
    }
    assert temps == {(s, ts): t for s, ts, t, _, _ in RECORDS}
    flags = [c["value"] for c in doc["cells"] if c["column"] == "m:ok"]
    assert sorted(flags) == sorted(r[4] for r in RECORDS)
    assert all(isinstance(c["row"], str) for c in doc["cells"])  # the raw row stays


def test_get_with_key_fields_equals_get_of_the_raw_row(sensors, run):
    sensor, ts, temp, count, _ = RECORDS[1]
    by_key = json.loads(
        ok(
            run("get", sensors, "--key", f"sensor_id={sensor}", "--key", f"ts={ts}", output="json")
        ).stdout
    )
    assert {c["column"]: c["value"] for c in by_key["cells"]} == {
        "m:temp": temp,
        "m:count": count,
        "m:ok": False,
    }
    by_row = json.loads(ok(run("get", sensors, by_key["row"], output="json")).stdout)
    assert by_row["cells"] == by_key["cells"]


def test_get_of_a_plain_string_on_a_composite_key_hints_at_key_fields(sensors, run):
    # issue 29: Table.get itself warns about a row that cannot be a whole key (the CLI
    # prints cellstore's warnings as "warning: ..." lines; pytest's filter would raise)
    with warnings.catch_warnings():
        warnings.simplefilter("always", CellstoreWarning)
        result = ok(run("get", sensors, "sensor-00001"))
    assert "warning: table ns:sensors: row 'sensor-00001' is not a whole key" in result.stderr
    assert "0 row(s)" in result.stdout
    assert "--key sensor_id=... --key ts=..." in result.stderr


def test_key_mistakes_are_explained(sensors, run):
    result = run("get", sensors, "--key", "sensor=sensor-00001", "--key", "ts=1")
    assert result.exit_code == 2
    assert "did you mean 'sensor_id'" in result.stderr
    result = run("get", sensors, "--key", "sensor_id=x", "--key", "ts=soon")
    assert result.exit_code == 2 and "'ts' is int64" in result.stderr
    result = run("get", sensors, "--key", "sensor_id=x")
    assert result.exit_code == 2 and "missing ts" in result.stderr
    assert run("get", sensors).exit_code == 2  # neither ROW nor --key


def test_scan_key_prefix_selects_one_sensor(sensors, run):
    lines = _cell_lines(run("scan", sensors, "--key", "sensor_id=sensor-00002"))
    assert lines and all(line.split()[0].startswith("sensor_id=sensor-00002,") for line in lines)
    assert len(lines) == 3


def test_a_column_that_never_occurs_warns_with_the_closest_name(sensors, run):
    result = ok(run("scan", sensors, "--column", "m:tmp"))
    assert "0 row(s)" in result.stdout
    assert "column m:tmp does not occur" in result.stderr
    assert "did you mean 'm:temp'" in result.stderr
    assert "warning" not in ok(run("scan", sensors, "--column", "m:temp")).stderr


# ----------------------------------------------------------------------------- Python API
def test_python_scan_stays_raw_unless_asked(sensors, root):
    t = connect(root).table(sensors)
    assert t.scan().to_arrow().column("value").type == pa.binary()  # cells keep their bytes
    frame = t.scan(shape="wide", column_types="table").to_arrow()
    temps = sorted(frame.column("m:temp").to_pylist())
    assert temps == sorted(r[2] for r in RECORDS)
    assert sorted(frame.column("m:ok").to_pylist()) == sorted(r[4] for r in RECORDS)


def test_python_column_types_naming_an_unrecorded_column_warns(sensors, root):
    t = connect(root).table(sensors)
    with pytest.warns(CellstoreWarning, match="did you mean 'm:temp'"):
        t.scan(shape="wide", column_types={"m:tmp": "double"})


def test_column_types_table_without_recorded_codecs_is_an_error(root):
    t = connect(root).create_table("ns:bare", families=[Family(name="f")])
    with pytest.raises(InvalidArgumentError, match="no recorded column codecs"):
        t.scan(shape="wide", column_types="table")


# ----------------------------------------------------------------- mapping mistakes (check)
def test_mapping_key_typo_and_missing_input_column_are_explained(root, tmp_path, csv_input):
    with pytest.raises(InvalidArgumentError, match="did you mean 'cells'"):
        LoadMapping.from_dict({"row_key": "id", "cels": []})
    t = connect(root).create_table("ns:m", families=[Family(name="m")])
    with pytest.raises(InvalidArgumentError) as info:
        t.load(csv_input, mapping=LoadMapping.simple(row_key="sensor", columns=["m:t=temp"]))
    assert "sensor_id" in str(info.value) and "temp" in str(info.value)


def test_cli_load_with_a_changed_codec_warns_on_stderr(sensors, run, csv_input):
    with warnings.catch_warnings():
        warnings.simplefilter("always", CellstoreWarning)  # pytest's filters make it an error
        result = ok(run("load", sensors, csv_input, "--column", "m:count=count:int"))
    assert "warning: table ns:sensors: column m:count was loaded as long before" in result.stderr
    lines = _cell_lines(run("scan", sensors, "--column", "m:count"))
    assert sorted(int(line.rsplit("value=", 1)[1]) for line in lines) == sorted(
        r[3] for r in RECORDS
    )  # the latest codec decodes the newest cells


def test_no_progress_bars_off_a_terminal(sensors, run, tmp_path):
    """Loads (the fixture checks), compactions and scans to files keep stderr clean."""
    assert ok(run("compact", sensors, "--major")).stderr == ""
    out = tmp_path / "cells.csv"
    assert ok(run("scan", sensors, "--output-file", str(out))).stderr == ""
    assert out.read_text().count("\n") == 1 + 3 * len(RECORDS)  # header + cells


def test_qualifiers_from_a_column_decode_with_their_family_codec(root, run):
    t = connect(root).create_table("ns:tall", families=[Family(name="f")])
    frame = pa.table({"id": ["a", "a", "b"], "metric": ["x", "y", "x"], "v": [1.5, 2.0, -0.5]})
    t.load(frame, mapping=LoadMapping.simple(row_key="id", columns=["f:{metric}=v:double"]))
    codecs = t.value_codecs()
    assert dict(codecs.families) == {"f": "double"} and not codecs.columns
    doc = json.loads(ok(run("scan", "ns:tall", output="json")).stdout)
    got = {(c["row"], c["column"]): c["value"] for c in doc["cells"]}
    assert got == {("a", "f:x"): 1.5, ("a", "f:y"): 2.0, ("b", "f:x"): -0.5}


def test_recorded_codecs_round_trip_and_merge():
    codecs = TableCodecs(columns={"f:q\\x00": "double"}, families={"g": "long"})
    assert TableCodecs.from_properties(codecs.to_properties()) == TableCodecs(
        columns={"f:q\\x00": "double"}, families={"g": "long"}
    )
    assert codecs.codec_of("f", b"q\x00") == "double"
    assert codecs.codec_of("g", b"anything") == "long"
    assert codecs.codec_of("f", b"other") is None
    merged, changes = codecs.merged(TableCodecs(columns={"f:q\\x00": "long"}))
    assert merged.columns["f:q\\x00"] == "long" and merged.families["g"] == "long"
    assert changes == (
        "column f:q\\x00 was loaded as double before and as long now; keeping long for decoding",
    )
    with pytest.raises(InvalidArgumentError, match=r"mapping\.codecs"):
        TableCodecs.from_properties({CODECS_PROPERTY: "[1]"})


def test_string_values_print_as_text_with_control_characters_escaped(root, run):
    t = connect(root).create_table("ns:txt", families=[Family(name="f")])
    frame = pa.table({"id": ["a"], "city": ["Zürich\nHB"]})
    t.load(frame, mapping=LoadMapping.simple(row_key="id", columns=["f:city=city"]))
    assert _cell_lines(run("scan", "ns:txt"))[0].endswith("value=Zürich\\x0AHB")
    raw = _cell_lines(run("scan", "ns:txt", "--raw-values"))[0]
    assert raw.endswith("value=" + printable("Zürich\nHB".encode()))
    doc = json.loads(ok(run("get", "ns:txt", "a", output="json")).stdout)
    assert doc["cells"][0]["value"] == "Zürich\nHB"


# ------------------------------------------------- wide outputs decode by default (issue 29)
def _by_sensor(records: list[dict]) -> dict[tuple[str, int], tuple]:
    return {(r["sensor_id"], r["ts"]): (r["m:temp"], r["m:count"], r["m:ok"]) for r in records}


EXPECTED = {(s, ts): (t, c, o) for s, ts, t, c, o in RECORDS}


def test_wide_scan_prints_a_decoded_table_and_json_lines(sensors, run):
    text = ok(run("scan", sensors, "--shape", "wide")).stdout.splitlines()
    assert text[0].split() == ["row", "sensor_id", "ts", "m:count", "m:ok", "m:temp"]
    assert text[-2] == "3 row(s)" and text[-1].startswith("Took ")
    body = [line.split()[1:] for line in text[1:-2]]
    assert sorted(body) == sorted(
        [s, str(ts), str(c), str(o).lower(), repr(t)] for s, ts, t, c, o in RECORDS
    )
    lines = ok(run("scan", sensors, "--shape", "wide", output="json")).stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 3 and _by_sensor(records) == EXPECTED
    assert all(isinstance(r["row"], str) for r in records)


def test_wide_files_are_decoded_and_parquet_is_typed(sensors, run, tmp_path):
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    pq_out, csv_out, json_out = (tmp_path / f"w.{x}" for x in ("parquet", "csv", "json"))
    for out in (pq_out, csv_out, json_out):
        ok(run("scan", sensors, "--shape", "wide", "--output-file", str(out)))
    typed = pq.read_table(pq_out)
    assert typed.schema.field("m:temp").type == pa.float64()
    assert typed.schema.field("m:count").type == pa.int64()
    assert typed.schema.field("m:ok").type == pa.bool_()
    assert _by_sensor(typed.to_pylist()) == EXPECTED
    assert _by_sensor(pacsv.read_csv(csv_out).to_pylist()) == EXPECTED
    assert _by_sensor([json.loads(x) for x in json_out.read_text().splitlines()]) == EXPECTED
    raw = tmp_path / "raw.parquet"
    ok(run("scan", sensors, "--shape", "wide", "--raw-values", "--output-file", str(raw)))
    stored = pq.read_table(raw)
    assert stored.schema.field("m:temp").type == pa.binary()
    assert sorted(stored.column("m:temp").to_pylist()) == sorted(
        struct.pack(">d", r[2]) for r in RECORDS
    )


def test_wide_export_is_decoded_unless_raw_values(sensors, run, tmp_path):
    import pyarrow.parquet as pq

    ok(run("export", sensors, str(tmp_path / "out"), "--shape", "wide"))
    typed = pq.read_table(tmp_path / "out")
    assert typed.schema.field("m:count").type == pa.int64()
    assert _by_sensor(typed.to_pylist()) == EXPECTED
    ok(run("export", sensors, str(tmp_path / "raw"), "--shape", "wide", "--raw-values"))
    raw = pq.read_table(tmp_path / "raw")
    assert sorted(raw.column("m:count").to_pylist()) == sorted(
        struct.pack(">q", r[3]) for r in RECORDS
    )


def test_wide_decoding_keeps_the_selected_columns(sensors, run):
    one = ok(run("scan", sensors, "--shape", "wide", "--column", "m:temp")).stdout.splitlines()
    assert one[0].split() == ["row", "sensor_id", "ts", "m:temp"]
    assert sorted(line.split()[-1] for line in one[1:-2]) == sorted(repr(r[2]) for r in RECORDS)
    given = ok(run("scan", sensors, "--shape", "wide", "--column-type", "m:count=bytes"))
    header = given.stdout.splitlines()[0].split()
    assert header == ["row", "sensor_id", "ts", "m:count"]  # only the typed column, as before


def test_column_type_table_is_accepted(sensors, run, root):
    lines = ok(run("scan", sensors, "--shape", "wide", "--column-type", "table", output="json"))
    records = [json.loads(x) for x in lines.stdout.splitlines()]
    assert _by_sensor(records) == EXPECTED
    # "table" plus an explicit codec: the explicit one wins its column.
    mixed = ok(
        run(
            "scan",
            sensors,
            "--shape",
            "wide",
            "--raw-values",
            "--column-type",
            "table",
            "--column-type",
            "m:count=bytes",
            output="json",
        )
    )
    records = [json.loads(x) for x in mixed.stdout.splitlines()]
    assert sorted(r["m:temp"] for r in records) == sorted(r[2] for r in RECORDS)
    assert sorted(r["m:count"] for r in records) == sorted(
        printable(struct.pack(">q", r[3])) for r in RECORDS
    )
    connect(root).create_table("ns:bare", families=[Family(name="f")])
    bare = run("scan", "ns:bare", "--shape", "wide", "--column-type", "table")
    assert bare.exit_code == 2
    assert "table ns:bare has no recorded column codecs" in bare.stderr


def test_index_lookup_prints_decoded_values_unless_raw(sensors, run):
    """Issue 29: every console output of values decodes, ``index lookup`` included."""
    ok(run("index", "build", sensors, "by_count", "--column", "m:count", "--codec", "long"))
    lines = _cell_lines(run("index", "lookup", sensors, "by_count", "8", "--column", "m:temp"))
    assert len(lines) == 1 and lines[0].split()[0] == "sensor_id=sensor-00001,ts=1700000060000"
    assert lines[0].endswith("value=-3.25")
    raw = _cell_lines(
        run("index", "lookup", sensors, "by_count", "8", "--column", "m:temp", "--raw-values")
    )
    assert len(raw) == 1 and raw[0].endswith(f"value={printable(struct.pack('>d', -3.25))}")


def test_cells_files_keep_the_bytes_and_add_a_decoded_column(sensors, run, root, tmp_path):
    """Cells shape: ``value`` as stored (so the file loads back), ``decoded`` beside it."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    out = {x: tmp_path / f"c.{x}" for x in ("csv", "json", "parquet")}
    for path in out.values():
        ok(run("scan", sensors, "--output-file", str(path)))
    cells = pq.read_table(out["parquet"])
    assert cells.column_names == ["row", "family", "qualifier", "ts", "type", "value", "decoded"]
    by_column: dict[bytes, list] = {}
    for r in cells.to_pylist():
        by_column.setdefault(r["qualifier"], []).append((r["value"], r["decoded"]))
    assert sorted((v, float(d)) for v, d in by_column[b"temp"]) == sorted(
        (struct.pack(">d", t), t) for _, _, t, _, _ in RECORDS
    )  # Arrow's number text: 19.0 is "19"
    assert sorted(d for _, d in by_column[b"ok"]) == sorted(str(o).lower() for *_, o in RECORDS)
    assert sorted(d for _, d in by_column[b"count"]) == sorted(str(c) for *_, c, _ in RECORDS)
    text = pacsv.read_csv(
        out["csv"], convert_options=pacsv.ConvertOptions(strings_can_be_null=True)
    )
    assert text.column("decoded").to_pylist() == cells.column("decoded").to_pylist()
    lines = [json.loads(x) for x in out["json"].read_text().splitlines()]
    assert [x["decoded"] for x in lines] == cells.column("decoded").to_pylist()
    # The files load back as they are: the decoded column is left out.
    connect(root).create_table("ns:copy", families=[Family(name="m")])
    for path in out.values():
        ok(run("load-cells", "ns:copy", str(path)))
    got = connect(root).table("ns:copy").scan().to_arrow()
    want = connect(root).table(sensors).scan().to_arrow()
    assert sorted(got.column("value").to_pylist()) == sorted(want.column("value").to_pylist())
    raw = tmp_path / "raw.parquet"
    ok(run("scan", sensors, "--raw-values", "--output-file", str(raw)))
    assert "decoded" not in pq.read_table(raw).column_names
    ok(run("export", sensors, str(tmp_path / "out")))
    exported = pq.read_table(tmp_path / "out")
    assert sorted(exported.column("decoded").to_pylist()) == sorted(
        cells.column("decoded").to_pylist()
    )


def test_wide_outputs_decode_qualifiers_from_a_column_with_the_family_codec(root, run, tmp_path):
    """Tall-to-wide qualifiers (``f:{metric}``) have no name before reading: decoded after."""
    import pyarrow.parquet as pq

    t = connect(root).create_table("ns:tall", families=[Family(name="f")])
    frame = pa.table({"id": ["a", "a", "b"], "metric": ["x", "y", "x"], "v": [1.5, 2.0, -0.5]})
    t.load(frame, mapping=LoadMapping.simple(row_key="id", columns=["f:{metric}=v:double"]))
    lines = ok(run("scan", "ns:tall", "--shape", "wide", output="json")).stdout.splitlines()
    assert [json.loads(x) for x in lines] == [
        {"row": "a", "f:x": 1.5, "f:y": 2.0},
        {"row": "b", "f:x": -0.5},
    ]
    text = ok(run("scan", "ns:tall", "--shape", "wide")).stdout.splitlines()
    assert [line.split() for line in text[:3]] == [
        ["row", "f:x", "f:y"],
        ["a", "1.5", "2.0"],
        ["b", "-0.5"],
    ]
    out = tmp_path / "tall.parquet"
    ok(run("scan", "ns:tall", "--shape", "wide", "--output-file", str(out)))
    typed = pq.read_table(out)
    assert typed.schema.field("f:x").type == pa.float64()
    assert typed.column("f:y").to_pylist() == [2.0, None]
    ok(run("export", "ns:tall", str(tmp_path / "exp"), "--shape", "wide"))
    assert pq.read_table(tmp_path / "exp").column("f:x").to_pylist() == [1.5, -0.5]
    kept = tmp_path / "kept.parquet"
    args = ("--shape", "wide", "--family", "f", "--column-type", "f:x=bytes")
    ok(run("scan", "ns:tall", *args, "--output-file", str(kept)))
    assert pq.read_table(kept).column("f:x").to_pylist() == [
        struct.pack(">d", 1.5),
        struct.pack(">d", -0.5),
    ]
    raw = ok(run("scan", "ns:tall", "--shape", "wide", "--raw-values", output="json"))
    assert json.loads(raw.stdout.splitlines()[0])["f:x"] == printable(struct.pack(">d", 1.5))

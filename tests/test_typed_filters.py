"""Typed comparators in the filter language and the filter objects (issue 29).

``SingleColumnValueFilter('d', 'arr_delay', >, 'double:120.0')`` compares numbers: values
are decoded with the codec the table's loads recorded for the column, else with the
comparator's own type. HBase's ``binary:`` keeps comparing bytes. Expected rows come from
the input records, values written with ``struct`` (HBase ``Bytes`` encodings).
"""

from __future__ import annotations

import pickle
import struct

import pandas as pd
import pytest
from click.testing import CliRunner

from cellstore import Family, connect
from cellstore.cli import cli
from cellstore.core.codecs import Codec
from cellstore.core.comparators import HBASE_COMPARATORS, TYPED_COMPARATORS
from cellstore.core.filterparse import parse_filter
from cellstore.errors import InvalidArgumentError
from cellstore.filters import SingleColumnValueFilter, ValueFilter
from cellstore.loader import LoadMapping
from strategies import cells_table

#: flight, carrier, arrival delay in minutes (double), distance (long)
FLIGHTS = [
    ("f1", "UA", 5.0, 300),
    ("f2", "UA", 130.5, 2500),
    ("f3", "AA", 120.0, 900),
    ("f4", "DL", -12.0, 80),
    ("f5", "AA", 240.0, 1200),
]


def rows(table):
    return sorted({r["row"].decode() for r in table.to_pylist()})


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "wh")


@pytest.fixture
def flights(root):
    """A table loaded through a mapping: d:arr_delay recorded as double, d:dist as long."""
    t = connect(root).create_table("air:flights", families=[Family(name="d")])
    frame = pd.DataFrame(FLIGHTS, columns=["flight", "carrier", "arr_delay", "dist"])
    mapping = LoadMapping.simple(
        row_key="flight",
        columns=["d:carrier=carrier", "d:arr_delay=arr_delay:double", "d:dist=dist:long"],
    )
    t.load(frame, mapping=mapping)
    return t


def expect(pred):
    return sorted(f for f, _, delay, dist in FLIGHTS if pred(delay, dist))


def test_typed_comparators_never_collide_with_hbase_comparator_types():
    # HBase's ParseFilter.createComparator knows binary, binaryprefix, regexstring and
    # substring (ParseConstants); our type names are all different.
    assert {"binary", "binaryprefix", "regexstring", "substring"} == HBASE_COMPARATORS
    assert not HBASE_COMPARATORS & set(TYPED_COMPARATORS)
    assert {"long", "int", "short", "double", "float", "boolean"} <= set(TYPED_COMPARATORS)


def test_double_comparator_string_form_compares_numbers(flights):
    text = "SingleColumnValueFilter('d','arr_delay',>,'double:120.0')"
    assert rows(flights.scan(filter=text).to_arrow()) == expect(lambda d, _: d > 120.0)
    # binary: stays HBase's byte order: the 3-byte text '120' against 8-byte doubles
    binary = "SingleColumnValueFilter('d','arr_delay',>,'binary:120')"
    stored = {f: struct.pack(">d", d) for f, _, d, _ in FLIGHTS}
    assert rows(flights.scan(filter=binary).to_arrow()) == sorted(
        f for f, v in stored.items() if v > b"120"
    )


@pytest.mark.parametrize(
    ("text", "pred"),
    [
        ("SingleColumnValueFilter('d','arr_delay',>=,'long:120')", lambda d, _: d >= 120),
        ("SingleColumnValueFilter('d','arr_delay',<,'int:0')", lambda d, _: d < 0),
        ("SingleColumnValueFilter('d','dist',>,'double:899.5')", lambda _, m: m > 899.5),
        ("SingleColumnValueFilter('d','dist',=,'long:80')", lambda _, m: m == 80),
        ("SingleColumnValueFilter('d','dist',!=,'short:80')", lambda _, m: m != 80),
        ("SingleColumnValueFilter('d','dist',<=,'float64:900')", lambda _, m: m <= 900),
    ],
)
def test_the_recorded_codec_decodes_whatever_the_comparator_type(flights, text, pred):
    # 'long:120' on a double column and 'double:899.5' on a long column: the table's
    # codec decodes the value, then the numbers compare.
    assert rows(flights.scan(filter=text).to_arrow()) == expect(pred)


def test_filter_objects_take_typed_comparators(flights):
    f = SingleColumnValueFilter("d:arr_delay", ">", 120, comparator="double")
    assert rows(flights.scan(filter=f).to_arrow()) == expect(lambda d, _: d > 120)
    f = SingleColumnValueFilter("d:dist", "<", "1000", comparator="long")  # text operand
    assert rows(flights.scan(filter=[f]).to_arrow()) == expect(lambda _, m: m < 1000)
    with pytest.raises(InvalidArgumentError, match="drop codec"):
        SingleColumnValueFilter("d:dist", "<", 5, comparator="long", codec="int")
    with pytest.raises(InvalidArgumentError, match="needs a number"):
        SingleColumnValueFilter("d:dist", "<", "soon", comparator="long")


def test_a_double_operand_compares_longs_beyond_2_to_the_53(root):
    """Longs too large for a double's 53 bits compare as the nearest double (not an
    error): 2**60 > 1.5, -(2**60) < 1.5."""
    t = connect(root).create_table("big", families=[Family(name="d")])
    frame = pd.DataFrame({"k": ["a", "b", "c"], "n": [2**60, -(2**60), 7]})
    t.load(frame, mapping=LoadMapping.simple(row_key="k", columns=["d:n=n:long"]))
    f = SingleColumnValueFilter("d:n", ">", 1.5, comparator="double")
    assert rows(t.scan(filter=f).to_arrow()) == ["a", "c"]
    f = SingleColumnValueFilter("d:n", "<", 1.5, comparator="double")
    assert rows(t.scan(filter=f).to_arrow()) == ["b"]


def test_value_filter_decodes_each_cell_with_its_columns_codec(flights):
    # d:arr_delay is double, d:dist long, d:carrier text (no number: never matches).
    out = flights.scan(filter="ValueFilter(>, 'double:1000')").to_arrow().to_pylist()
    got = sorted((r["row"].decode(), r["qualifier"].decode()) for r in out)
    assert got == sorted((f, "dist") for f, _, _, m in FLIGHTS if m > 1000)
    out = flights.scan(filter=ValueFilter(">=", 120, comparator="long")).to_arrow().to_pylist()
    got = sorted((r["row"].decode(), r["qualifier"].decode()) for r in out)
    want = [(f, "arr_delay") for f, _, d, _ in FLIGHTS if d >= 120]
    want += [(f, "dist") for f, _, _, m in FLIGHTS if m >= 120]
    assert got == sorted(want)
    # bound to the table's codecs, the tasks still pickle (Dask, Spark)
    tasks = flights.scan(filter="ValueFilter(>, 'double:1000')").plan()
    assert pickle.loads(pickle.dumps(tasks)) == tasks
    (bound,) = tasks[0].filters.filters
    assert ("d", b"dist", Codec.LONG) in bound.test.column_codecs


def test_text_columns_compare_their_text_as_numbers(root):
    # Values loaded without a codec are recorded as string: "120.5" compares as 120.5, and
    # text that is no number never matches (filter_if_missing drops those rows too).
    t = connect(root).create_table("air:text", families=[Family(name="d")])
    delays = ["5", " 130.5 ", "120", "-12.0", "2.4e2", "n/a", "0x10"]
    frame = pd.DataFrame({"flight": [f"f{i}" for i in range(len(delays))], "delay": delays})
    t.load(frame, mapping=LoadMapping.simple(row_key="flight", columns=["d:delay=delay"]))
    assert t.value_codecs().columns == {"d:delay": Codec.STRING}
    text = "SingleColumnValueFilter('d','delay',>,'double:120',true,true)"
    assert rows(t.scan(filter=text).to_arrow()) == ["f1", "f4"]
    assert rows(t.scan(filter="ValueFilter(<=,'long:5')").to_arrow()) == ["f0", "f3"]
    # binary: is HBase's byte order: "5" > "120" and "n/a" > "120"
    binary = "SingleColumnValueFilter('d','delay',>,'binary:120',true,true)"
    assert rows(t.scan(filter=binary).to_arrow()) == sorted(
        f"f{i}" for i, d in enumerate(delays) if d.encode() > b"120"
    )
    with pytest.raises(InvalidArgumentError, match=r"d:delay holds string values"):
        t.scan(filter="SingleColumnValueFilter('d','delay',=,'boolean:true')")


def test_without_recorded_codecs_the_comparator_type_decodes_values_of_its_width(root):
    t = connect(root).create_table("raw", families=[Family(name="d")])
    t.load_cells(
        cells_table(
            [
                (b"a", "d", b"n", 1, 4, struct.pack(">q", 5)),  # long
                (b"b", "d", b"n", 1, 4, struct.pack(">q", 500)),
                (b"c", "d", b"n", 1, 4, struct.pack(">i", 500)),  # int: 4 bytes
                (b"d", "d", b"n", 1, 4, b"500"),  # text
            ]
        )
    )
    scan = lambda text: rows(t.scan(filter=text).to_arrow())  # noqa: E731
    # filter_if_missing=true so rows whose value does not decode are dropped too
    assert scan("SingleColumnValueFilter('d','n',>,'long:100',true,true)") == ["b"]
    assert scan("SingleColumnValueFilter('d','n',>,'int:100',true,true)") == ["c"]
    assert scan("ValueFilter(>,'long:1')") == ["a", "b"]


def test_cli_filter_flag_takes_typed_comparators(flights, root):
    result = CliRunner().invoke(
        cli,
        [
            "--root",
            root,
            "scan",
            "air:flights",
            "--filter",
            "SingleColumnValueFilter('d','arr_delay',>,'double:120.0',true,true)",
        ],
    )
    assert result.exit_code == 0, result.output
    shown = {line.split()[0] for line in result.stdout.splitlines() if "column=" in line}
    assert shown == set(expect(lambda d, _: d > 120.0))


def test_parse_errors_name_the_typed_comparators():
    with pytest.raises(InvalidArgumentError, match="long:, int:, short:, double:"):
        parse_filter("ValueFilter(=, 'decimal:1')")
    with pytest.raises(InvalidArgumentError, match="true or false"):
        parse_filter("ValueFilter(=, 'boolean:yes')")

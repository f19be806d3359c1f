"""``Table.get(key={...})`` and the warning for a plain row that cannot be a whole key.

Issue 29 ("Python API"): on a table with a row-key spec, ``get("UA")`` returned nothing,
silently. ``get(key=...)`` takes the key fields as ``scan(key=...)`` does, and a plain
row that does not parse as a whole key of the spec warns, naming the spec's fields.
Expected rows come from the input records and from ``RowKeySpec.encode`` of them.
"""

from __future__ import annotations

import warnings

import pandas as pd
import pyarrow as pa
import pytest

from cellstore import Family, KeyField, RowKeySpec, connect
from cellstore.errors import CellstoreWarning, InvalidArgumentError
from cellstore.loader import LoadMapping

#: carrier, flight number, arrival delay
RECORDS = [("UA", 17, 5.0), ("UA", 901, 130.5), ("AA", 17, -3.0)]
SPEC = RowKeySpec(
    fields=(KeyField(name="carrier", type="string"), KeyField(name="flight", type="int64")),
    salt_buckets=4,
)


@pytest.fixture
def flights(tmp_path):
    wh = connect(str(tmp_path / "wh"))
    t = wh.create_table("air:legs", families=[Family(name="d")], row_key=SPEC, salt_buckets=4)
    frame = pd.DataFrame(RECORDS, columns=["carrier", "flight", "arr_delay"])
    t.load(frame, mapping=LoadMapping.simple(row_key=SPEC, columns=["d:arr=arr_delay:double"]))
    return t


def logical_key(carrier: str, flight: int) -> bytes:
    plain = RowKeySpec(fields=SPEC.fields)  # without the salt byte: get's key form
    return plain.encode(pa.table({"carrier": [carrier], "flight": [flight]}))[0].as_py()


def test_get_by_key_fields_reads_that_row(flights):
    cells = flights.get(key={"carrier": "UA", "flight": 901})
    assert cells.column("row").to_pylist() == [logical_key("UA", 901)]
    assert cells.column("qualifier").to_pylist() == [b"arr"]
    # the same row as a get of its encoded key, and no warning for it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert flights.get(logical_key("UA", 901)).equals(cells)
    assert flights.get(key={"carrier": "DL", "flight": 1}).num_rows == 0  # absent row


def test_get_of_a_row_that_is_not_a_whole_key_warns_with_the_fields(flights):
    with pytest.warns(CellstoreWarning, match=r"not a whole key.*carrier, flight.*get\(key="):
        assert flights.get("UA").num_rows == 0


def test_get_key_mistakes_are_explained(flights):
    with pytest.raises(InvalidArgumentError, match="missing flight"):
        flights.get(key={"carrier": "UA"})
    with pytest.raises(InvalidArgumentError, match="'airline' is not a field"):
        flights.get(key={"airline": "UA", "flight": 1})
    with pytest.raises(InvalidArgumentError, match="is a range"):
        flights.get(key={"carrier": "UA", "flight": (1, 5)})
    with pytest.raises(InvalidArgumentError, match="not both"):
        flights.get(logical_key("UA", 17), key={"carrier": "UA", "flight": 17})
    with pytest.raises(InvalidArgumentError, match="one of them"):
        flights.get()


def test_get_key_on_a_table_without_a_spec_is_refused_and_plain_gets_do_not_warn(tmp_path):
    t = connect(str(tmp_path / "wh")).create_table("plain", families=[Family(name="d")])
    with pytest.raises(InvalidArgumentError, match="no row-key spec"):
        t.get(key={"carrier": "UA"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert t.get("UA").num_rows == 0

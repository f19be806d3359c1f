"""Recorded codecs read back from table properties (loader/mapping/tablecodecs.py)."""

from __future__ import annotations

import json

import pytest

from cellstore.core.codecs import Codec
from cellstore.errors import InvalidArgumentError
from cellstore.loader.mapping.tablecodecs import CODECS_PROPERTY, ROW_KEY_PROPERTY, TableCodecs


def test_properties_parsed_once_give_every_caller_its_own_mappings() -> None:
    props = {
        CODECS_PROPERTY: json.dumps({"columns": {"d:x": "double"}, "families": {"i": "int"}}),
        ROW_KEY_PROPERTY: json.dumps({"column": "k", "codec": "string"}),
    }
    first = TableCodecs.from_properties(props)
    assert first.columns == {"d:x": Codec.DOUBLE}
    assert first.families == {"i": Codec.INT}
    first.columns["d:y"] = Codec.LONG  # a caller changing its copy
    again = TableCodecs.from_properties(dict(props))
    assert again.columns == {"d:x": Codec.DOUBLE}
    assert again.row_key == first.row_key
    changed = {**props, CODECS_PROPERTY: json.dumps({"columns": {"d:x": "long"}})}
    assert TableCodecs.from_properties(changed).columns == {"d:x": Codec.LONG}
    assert TableCodecs.from_properties({}) == TableCodecs()


def test_bad_properties_raise_every_time() -> None:
    bad = {CODECS_PROPERTY: json.dumps({"columns": {"d:x": "nonsense"}})}
    for _ in range(2):
        with pytest.raises(InvalidArgumentError):
            TableCodecs.from_properties(bad)

"""ScanOptions: every scan option once, and the layers that build or consume it.

The options object, its keyword form (``ScanKwargs``), the CLI flags and the Spark option
names are kept in step here, and ``Table``/``HBaseTable`` are checked to be one
``ReadableTable`` implementation.
"""

from __future__ import annotations

import dataclasses
import pickle
import shutil
import tarfile
import typing
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from cellstore.cli.console import cli
from cellstore.cli.scanflags import (
    COUNT_FLAGS,
    EXPORT_FLAGS,
    FLAGS,
    GET_FLAGS,
    HBASE_COUNT_FLAGS,
    HBASE_SCAN_FLAGS,
    NO_FLAG,
    SCAN_FLAGS,
)
from cellstore.errors import InvalidArgumentError, TableNotFoundError
from cellstore.filters import KeyOnlyFilter
from cellstore.reader import (
    SCAN_OPTION_NAMES,
    Description,
    ReadableTable,
    ScanKwargs,
    ScanOptions,
    scan_options,
)
from cellstore.warehouse import connect
from requirements import unavailable

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
NS_UPGRADE = VECTORS / "apache-hbase" / "TestNamespaceUpgrade.0.98.tgz"


# ------------------------------------------------------------------ one list of options
def test_scan_kwargs_has_the_fields_of_scan_options():
    hints = typing.get_type_hints(ScanOptions)
    assert list(ScanKwargs.__annotations__) == [f.name for f in dataclasses.fields(ScanOptions)]
    assert typing.get_type_hints(ScanKwargs) == hints
    assert tuple(hints) == SCAN_OPTION_NAMES


def test_every_option_has_a_cli_flag_or_a_reason():
    assert set(FLAGS) | set(NO_FLAG) == set(SCAN_OPTION_NAMES)
    assert not set(FLAGS) & set(NO_FLAG)
    lists = (SCAN_FLAGS, GET_FLAGS, COUNT_FLAGS, EXPORT_FLAGS, HBASE_SCAN_FLAGS, HBASE_COUNT_FLAGS)
    for names in lists:
        assert set(names) <= set(FLAGS) and len(set(names)) == len(names)
    assert set(SCAN_FLAGS) == set(FLAGS)  # cellstore scan offers every flag


# ------------------------------------------------------------------------ the object
def test_options_normalize_to_a_frozen_form():
    o = ScanOptions(
        columns="cf:a",
        families=["cf"],
        family_time_ranges={"cf": [1, 5]},
        filter=KeyOnlyFilter(),
        column_types={"cf:a": "long"},
        key={"user": "u1"},
        time_range=[1, 9],  # type: ignore[arg-type]
    )
    assert o.columns == ("cf:a",) and o.families == ("cf",)
    assert o.family_time_ranges == (("cf", (1, 5)),) and o.time_range == (1, 9)
    assert o.filter == (KeyOnlyFilter(),)
    assert o.column_types == {"cf:a": "long"} and o.key == {"user": "u1"}
    assert hash(o) == hash(dataclasses.replace(o))
    assert pickle.loads(pickle.dumps(o)) == o
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.raw = True  # type: ignore[misc]
    with pytest.raises(InvalidArgumentError, match="family_time_ranges"):
        ScanOptions(family_time_ranges={"cf": (1,)})  # type: ignore[dict-item]
    # issue 29: HBase filter-language text is parsed (it was refused before)
    assert ScanOptions(filter="KeyOnlyFilter()").filter == (KeyOnlyFilter(),)
    with pytest.raises(InvalidArgumentError, match="not a filter"):
        ScanOptions(filter="KeyOnlyFilter() OR")


def test_overrides_replace_fields_and_unknown_names_are_type_errors():
    base = ScanOptions(start_row="a", limit=5)
    assert scan_options(base, {"limit": 2}) == ScanOptions(start_row="a", limit=2)
    assert scan_options(None, {}) == ScanOptions()
    assert base.changes() == {"start_row": "a", "limit": 5}
    with pytest.raises(TypeError, match="'bogus'"):
        scan_options(base, {"bogus": 1})
    with pytest.raises(TypeError, match="ScanOptions"):
        scan_options("a", {})  # type: ignore[arg-type]


# --------------------------------------------------------------------- the one reader
@pytest.fixture
def table(tmp_path):
    t = connect(str(tmp_path)).create_table("ns:t", families=["cf", "g"])
    rows = [f"r{i}".encode() for i in range(6)]
    cells = pa.table(
        {
            "row": rows + rows[:2],
            "family": ["cf"] * 6 + ["g"] * 2,
            "qualifier": [b"q"] * 8,
            "ts": [1, 1, 1, 1, 1, 1, 2, 2],
            "value": [b"v"] * 8,
        }
    )
    t.load_cells(cells)
    t.load_cells(
        pa.table(
            {"row": [b"r9"], "family": ["cf"], "qualifier": [b"q"], "ts": [3], "value": [b"w"]}
        )
    )
    return t


def test_options_object_and_keywords_read_the_same(table):
    opts = ScanOptions(start_row="r1", families=["cf"])
    assert table.scan(opts).to_arrow().equals(table.scan(start_row="r1", families="cf").to_arrow())
    assert table.scan(opts, limit=2).count_rows() == 2
    assert table.scan(opts).options == opts  # no override: the object as given
    got = table.get("r0", ScanOptions(families=["g"]))
    assert got.column("family").to_pylist() == ["g"]
    with pytest.raises(InvalidArgumentError, match="start_row do"):
        table.get("r0", start_row="r1")
    with pytest.raises(TypeError):
        table.scan(bogus=True)  # type: ignore[call-arg]


def test_as_of_version_is_a_scan_option(table):
    assert table.version == 3
    assert table.scan(version=2).count_rows() == 6
    assert table.scan().count_rows() == 7
    assert table.get("r9", version=2).num_rows == 0
    with pytest.raises(TableNotFoundError, match="no version 9"):
        table.scan(version=9)
    result = CliRunner().invoke(
        cli, ["--root", str(Path(table.warehouse.root)), "count", "ns:t", "--version", "2"]
    )
    assert result.exit_code == 0 and "6 row(s)" in result.output, result.output


def test_table_is_readable_and_describes_itself(table):
    assert isinstance(table, ReadableTable)
    d = table.describe()
    assert isinstance(d, Description)
    assert str(d).splitlines()[0] == "Table ns:t is ENABLED"
    assert d.files == 3 and d.name == "ns:t"  # cf and g of the first load, cf of the second


@pytest.fixture(scope="module")
def root094(tmp_path_factory: pytest.TempPathFactory):
    if not NS_UPGRADE.exists():
        unavailable("vectors", "HBase test vectors not present")
    d = tmp_path_factory.mktemp("ns094")
    with tarfile.open(NS_UPGRADE) as t:
        t.extractall(d, filter="data")
    yield d / "hbase"
    shutil.rmtree(d, ignore_errors=True)


def test_hbase_table_is_the_same_readable_table(root094):
    from cellstore.hbase import open_table

    t = open_table(str(root094), "data")
    assert isinstance(t, ReadableTable)
    d = t.describe()
    assert isinstance(d, Description)
    assert str(d).startswith("Table data (HBase 0.94 layout at ")
    opts = ScanOptions(start_row="5", max_versions=2)
    assert t.scan(opts).to_arrow().equals(t.scan(start_row="5", max_versions=2).to_arrow())
    with pytest.raises(InvalidArgumentError, match="no versions"):
        t.scan(version=1)
    with pytest.raises(InvalidArgumentError, match="no recorded column codecs"):
        t.scan(shape="wide", column_types="table")


def test_a_bare_handle_reads_through_handle_reads(table):
    from cellstore.reader import HandleReads

    reads = HandleReads(table)  # any object with name, fs, path, metadata and log
    assert isinstance(reads, ReadableTable)
    assert reads.scan(families=["g"]).to_arrow().equals(table.scan(families=["g"]).to_arrow())
    assert reads.get("r0", version=2).num_rows == 2
    assert reads.describe() == table.describe()
    with pytest.raises(InvalidArgumentError, match="no recorded column codecs"):
        reads.scan(shape="wide", column_types="table")

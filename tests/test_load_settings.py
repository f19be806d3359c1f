"""Load settings and HFile options: one object per concern, typed keyword overrides.

Each options dataclass and its ``TypedDict`` of keyword overrides name the same fields
with the same types, so ``t.load(src, mapping=m)`` and ``t.load(src, LoadSettings(
mapping=m))`` are one call; HFile output is its own entry point (``Table.write_hfiles``),
and ``Table.load(hfile_output=...)`` still works.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pandas as pd
import pytest

import cellstore
from cellstore import connect
from cellstore.errors import InvalidArgumentError
from cellstore.hbase import HFileOptions, read_hfile
from cellstore.jobs.hfile_export import HFileExportKwargs, HFileExportOptions
from cellstore.loader import (
    HFileKwargs,
    HFileOutput,
    HFileOutputKwargs,
    LoadKwargs,
    LoadSettings,
    Mapping,
    WriteHFilesKwargs,
    resolve_settings,
    write_hfiles,
)
from cellstore.storefiles.hfile.writer import build_hfile
from cellstore.storefiles.rolling import HFileSettings


def _fields(cls: type) -> dict[str, str]:
    hints = typing.get_type_hints(cls)
    return {f.name: str(hints[f.name]) for f in dataclasses.fields(cls)}


def _keys(td: type) -> dict[str, str]:
    return {k: str(v) for k, v in typing.get_type_hints(td).items()}


@pytest.mark.parametrize(
    ("options", "kwargs"),
    [
        (LoadSettings, LoadKwargs),
        (HFileOutput, HFileOutputKwargs),
        (HFileOptions, HFileKwargs),
    ],
)
def test_overrides_name_the_fields_with_their_types(options: type, kwargs: type) -> None:
    assert _keys(kwargs) == _fields(options)


def test_write_hfiles_overrides_are_load_and_output_fields() -> None:
    assert _keys(WriteHFilesKwargs) == {**_fields(LoadSettings), **_fields(HFileOutput)}
    assert not set(_fields(LoadSettings)) & set(_fields(HFileOutput))


def test_export_overrides_are_its_fields_plus_hfile_shortcuts() -> None:
    fields = _fields(HFileExportOptions)
    keys = _keys(HFileExportKwargs)
    shortcuts = {"compression", "encoding", "block_size", "bloom"}
    assert {k: v for k, v in keys.items() if k not in shortcuts} == fields
    assert shortcuts <= set(keys) and shortcuts <= set(_fields(HFileOptions))


def test_public_names() -> None:
    assert cellstore.LoadSettings is LoadSettings
    assert cellstore.HFileOutput is HFileOutput
    assert cellstore.HFileOptions is HFileOptions
    assert HFileSettings is HFileOptions  # the earlier name


def test_settings_validate_and_resolve(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="key_advice"):
        LoadSettings(key_advice="loud")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="memory_budget"):
        LoadSettings(memory_budget=1)
    with pytest.raises(InvalidArgumentError, match="needs a mapping"):
        resolve_settings(LoadSettings())
    path = tmp_path / "m.json"
    path.write_text('{"row_key": "k", "columns": {"f:v": "v"}, "input": {"format": "csv"}}')
    resolved = resolve_settings(LoadSettings(mapping=str(path), workers=3, now_ms=5))
    assert isinstance(resolved.mapping, Mapping)
    assert resolved.format == "csv" and resolved.workers == 3 and resolved.now_ms == 5
    assert resolved.load_id and resolve_settings(resolved) == resolved
    assert LoadSettings(key_advice="off").sampled_keys == 0


def test_settings_object_and_keywords_load_the_same(tmp_path: Path) -> None:
    wh = connect(tmp_path / "wh")
    df = pd.DataFrame({"k": ["a", "b", "c"], "v": ["1", "2", "3"]})
    m = Mapping.simple(row_key="k", columns=["f:v=v"])
    one = wh.create_table("one", families=["f"])
    two = wh.create_table("two", families=["f"])
    r1 = one.load(df, mapping=m, load_id="L", now_ms=7, key_advice="off")
    r2 = two.load(df, LoadSettings(mapping=m, load_id="L", now_ms=7, key_advice="off"))
    assert (r1.cells, r1.rows, r1.files) == (r2.cells, r2.rows, r2.files) == (3, 3, 1)
    assert one.scan().to_arrow().equals(two.scan().to_arrow())
    again = two.load(df, LoadSettings(mapping=m, load_id="L"), key_advice="off")
    assert again.already_applied


def test_write_hfiles_entry_point_matches_hfile_output(tmp_path: Path) -> None:
    wh = connect(tmp_path / "wh")
    t = wh.create_table("t", families=["f"], splits=[b"m"])
    df = pd.DataFrame({"k": ["a", "p", "z"], "v": ["1", "2", "3"]})
    m = Mapping.simple(row_key="k", columns=["f:v=v"])
    options = HFileOptions(compression="gz")
    old = t.load(
        df,
        mapping=m,
        now_ms=1,
        key_advice="off",
        hfile_output=str(tmp_path / "old"),
        hfile_settings=options,
    )
    new = t.write_hfiles(
        df,
        HFileOutput(output=str(tmp_path / "new"), hfile_settings=options),
        LoadSettings(mapping=m, now_ms=1, key_advice="off"),
    )
    kw = t.write_hfiles(df, output=str(tmp_path / "kw"), mapping=m, now_ms=1, key_advice="off")
    assert t.version == 1 and not t.files  # nothing committed
    for r in (old, new, kw):
        assert r.hfile_output is not None and r.version is None
        assert (r.cells, r.files) == (3, 2)
    cells = [read_hfile(f.path).num_rows for f in new.hfile_output.files]  # type: ignore[union-attr]
    assert sum(cells) == 3
    with pytest.raises(InvalidArgumentError, match="needs its directory"):
        t.write_hfiles(df, mapping=m)
    with pytest.raises(InvalidArgumentError, match="only with hfile_output"):
        t.load(df, mapping=m, split_keys=[b"m"])


def test_table_less_write_hfiles_with_objects(tmp_path: Path) -> None:
    df = pd.DataFrame({"k": ["a", "p", "z"], "v": ["1", "2", "3"]})
    m = Mapping.simple(row_key="k", columns=["f:v=v"])
    report = write_hfiles(
        df,
        HFileOutput(output=str(tmp_path / "o"), split_keys=[b"m"], table="ns:t"),
        LoadSettings(mapping=m, now_ms=1),
    )
    assert report.table == "ns:t" and (report.cells, report.files) == (3, 2)


def test_hfile_writer_options_object_and_keywords_agree() -> None:
    cells = pd.DataFrame(
        {
            "row": [b"a", b"b"],
            "qualifier": [b"q", b"q"],
            "ts": [2, 1],
            "type": [4, 4],
            "value": [b"x", b"y"],
        }
    )
    fixed = {"create_time": 1, "bulkload_timestamp": 2}
    by_object, _ = build_hfile(cells, HFileOptions(compression="gz", **fixed), family=b"f")
    by_keywords, _ = build_hfile(cells, family=b"f", compression="gz", **fixed)  # type: ignore[arg-type]
    assert by_object == by_keywords
    assert HFileOptions().data_block_size == 65536
    with pytest.raises(InvalidArgumentError, match="HFile compression 'lzo'"):
        HFileOptions(compression="lzo")  # type: ignore[arg-type]

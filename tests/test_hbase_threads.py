"""``--threads`` of the commands that read or write HFiles (issue 29).

``hbase scan/count/import`` hand it to the HFile reader (``HFileReadOptions.threads``),
``hbase export-hfiles`` and ``load --hfile-output`` to the writer (``HFileOptions.threads``).
Each test checks, through the CLI, that the results do not depend on it, and with a spy
on the real reader or writer that the number given is the one used.
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
from cellstore.cli.console import cli
from cellstore.errors import InvalidArgumentError
from cellstore.hbase import HFileReadOptions, open_table, read_hfile
from cellstore.storefiles.hfile import assembler
from cellstore.storefiles.hfile.reader import HFileReader
from hbase_fixtures import HFileSpec, bench_cells, write_root2


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A 2.x root: table t, two regions, two SNAPPY files in the first (overlapping keys)."""
    cells = bench_cells(400)
    newer = bench_cells(400, seed=1, ts_base=10)
    made = write_root2(
        tmp_path,
        families={"f": {"VERSIONS": "2"}},
        splits=[b"user000000000200"],
        stores={
            (0, "f"): [
                HFileSpec("a" * 32, cells.slice(0, 2000), max_seq_id=5, compression="snappy"),
                HFileSpec("b" * 32, newer.slice(0, 2000), max_seq_id=9, compression="snappy"),
            ],
            (1, "f"): [HFileSpec("c" * 32, cells.slice(2000), max_seq_id=5)],
        },
    )
    return made.root


@pytest.fixture
def read_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``threads`` of every ``HFileReader.iter_batches`` call (a spy: it reads on)."""
    seen: list[int] = []
    real = HFileReader.iter_batches

    def spy(self: HFileReader, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("threads", -1))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(HFileReader, "iter_batches", spy)
    return seen


@pytest.fixture
def write_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``threads`` of every HFile assembled (a spy on the real assembler)."""
    seen: list[int] = []
    real = assembler.Assembler.__init__

    def spy(self: assembler.Assembler, out: Any, options: Any) -> None:
        seen.append(options.threads)
        real(self, out, options)

    monkeypatch.setattr(assembler.Assembler, "__init__", spy)
    return seen


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def test_hbase_scan_count_threads(root: Path, read_threads: list[int]) -> None:
    shown = {}
    for threads in ("1", "3"):
        read_threads.clear()
        code, out = _run(
            "--output", "json", "hbase", "scan", str(root), "--table", "t", "--threads", threads
        )
        assert code == 0, out
        assert read_threads and set(read_threads) == {int(threads)}
        shown[threads] = json.loads(out)["cells"]
    assert shown["1"] == shown["3"]
    assert len(shown["1"]) == 400 * 5  # the latest version of each column
    assert shown["1"][0]["timestamp"] == 1_600_000_002_010  # the newer file's, region 1
    read_threads.clear()
    code, out = _run("hbase", "count", str(root), "--table", "t", "--threads", "2")
    assert code == 0 and "400" in out, out
    assert set(read_threads) == {2}
    # Without --threads, the reader's default.
    read_threads.clear()
    assert _run("hbase", "count", str(root), "--table", "t")[0] == 0
    assert set(read_threads) == {HFileReadOptions().threads}
    code, out = _run("hbase", "count", str(root), "--table", "t", "--threads", "0")
    assert code == 2 and "--threads" in out
    # describe reads no cells: no --threads
    code, out = _run("hbase", "describe", str(root), "--table", "t", "--threads", "2")
    assert code == 2 and "No such option" in out


def test_hbase_import_threads(root: Path, tmp_path: Path, read_threads: list[int]) -> None:
    tables = {}
    for threads in ("1", "2"):
        read_threads.clear()
        wh = str(tmp_path / f"wh{threads}")
        code, out = _run(
            "hbase", "import", str(root), "--table", "t", wh, "ns:t", "--threads", threads
        )
        assert code == 0, out
        assert read_threads and set(read_threads) == {int(threads)}
        tables[threads] = connect(wh).table("ns:t").scan(max_versions=2).to_arrow()
    assert tables["1"].equals(tables["2"])
    assert tables["1"].num_rows == 400 * 5 * 2


def test_open_table_read_options(root: Path) -> None:
    one = open_table(str(root), "t", read_options=HFileReadOptions(threads=1, batch_bytes=4096))
    two = open_table(str(root), "t", read_options=HFileReadOptions(threads=2))
    assert one.scan().to_arrow().equals(two.scan().to_arrow())
    with pytest.raises(InvalidArgumentError, match="only threads and batch_bytes"):
        open_table(str(root), "t", read_options=HFileReadOptions(columns=["row"]))
    with pytest.raises(InvalidArgumentError, match="only threads and batch_bytes"):
        open_table(str(root), "t", read_options=HFileReadOptions(on_corrupt="skip"))


def test_export_hfiles_threads(tmp_path: Path, write_threads: list[int]) -> None:
    wh = str(tmp_path / "wh")
    t = connect(wh).create_table("ns:t", families=["cf"])
    t.load_cells(bench_cells(30).append_column("family", pa.array(["cf"] * 300)))
    got = []
    for threads in ("1", "2"):
        write_threads.clear()
        out = tmp_path / f"out{threads}"
        code, text = _run(
            "--root", wh, "--output", "json", "hbase", "export-hfiles", "ns:t", str(out),
            "--compression", "snappy", "--threads", threads,
        )  # fmt: skip
        assert code == 0, text
        assert write_threads and set(write_threads) == {int(threads)}
        files = sorted((out / "cf").iterdir())
        got.append([read_hfile(str(f)).select(["row", "qualifier", "value"]) for f in files])
    assert [g.to_pylist() for g in got[0]] == [g.to_pylist() for g in got[1]]
    assert sum(g.num_rows for g in got[0]) == 30 * 5  # the latest version of each column


def test_load_hfile_output_threads(tmp_path: Path, write_threads: list[int]) -> None:
    wh = str(tmp_path / "wh")
    connect(wh).create_table("ns:t", families=["cf"])
    pd.DataFrame({"id": [f"k{i:04d}" for i in range(200)], "a": ["x"] * 200}).to_csv(
        tmp_path / "in.csv", index=False
    )
    base = ["--root", wh, "load", "ns:t", str(tmp_path / "in.csv"), "--row-key", "id"]
    base += ["--column", "cf:a=a"]
    rows = []
    for threads in ("1", "2"):
        write_threads.clear()
        out = tmp_path / f"bulk{threads}"
        code, text = _run(*base, "--hfile-output", str(out), "--threads", threads)
        assert code == 0, text
        assert write_threads and set(write_threads) == {int(threads)}
        (f,) = (out / "cf").iterdir()
        rows.append(read_hfile(str(f)).column("row").to_pylist())
    assert rows[0] == rows[1] == [f"k{i:04d}".encode() for i in range(200)]
    code, text = _run(*base, "--threads", "2")
    assert code == 2 and "need --hfile-output" in text


def test_read_options_that_are_not_options_are_refused(root: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="HFileReadOptions"):
        open_table(str(root), "t", read_options={"threads": 2})  # type: ignore[arg-type]


def test_load_for_an_hbase_table_threads(root: Path, tmp_path: Path, write_threads: list[int]):
    """Families whose settings come from the HBase descriptor are written on ``--threads``."""
    wh = str(tmp_path / "wh")
    connect(wh).create_table("ns:t", families=["f"])
    pd.DataFrame({"id": ["user000000000100", "user000000000300"], "a": ["x", "y"]}).to_csv(
        tmp_path / "in.csv", index=False
    )
    code, text = _run(
        "--root", wh, "load", "ns:t", str(tmp_path / "in.csv"), "--row-key", "id",
        "--column", "f:a=a", "--hfile-output", str(tmp_path / "bulk"),
        "--hbase-root", str(root), "--hbase-table", "t", "--threads", "1",
    )  # fmt: skip
    assert code == 0, text
    assert len(write_threads) == 2 and set(write_threads) == {1}  # one file per region

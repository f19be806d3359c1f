"""Layering: imports run one way (cli -> api -> loader/reader/jobs -> storage -> core)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "cellstore"

# Lower number = lower layer. A module may import only from its own layer or below.
LAYERS = {
    "errors": 0,
    "defaults": 0,
    "core": 0,
    "filters": 0,
    "fs": 1,
    "frames": 1,
    "storefiles": 1,
    "manifest": 1,
    "commit": 1,
    "reader": 3,
    "loader": 3,
    "hbase": 3,
    "report": 3,
    "warehouse": 4,
    "jobs": 5,
    "spark": 5,
    "cli": 6,
}
#: ``from cellstore import X`` of a name that is not a submodule goes through the package
#: root, which re-exports the API (``connect`` from warehouse): that is an import of this layer.
ROOT_PACKAGE = "<cellstore package root>"
LAYERS[ROOT_PACKAGE] = LAYERS["warehouse"]


def _module_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("cellstore.")
        ):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "cellstore" and not node.level:
            for alias in node.names:
                out.add(alias.name if alias.name in LAYERS else ROOT_PACKAGE)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("cellstore."):
                    out.add(alias.name.split(".")[1])
                elif alias.name == "cellstore":
                    out.add(ROOT_PACKAGE)
    return out


FILES = [p for p in SRC.rglob("*.py") if p.name != "__init__.py" or p.parent != SRC]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_run_one_way(path):
    me = _module_of(path)
    if me not in LAYERS:
        pytest.fail(f"{me} has no layer in test_imports.LAYERS; add it")
    for dep in _imports(path):
        assert dep in LAYERS, f"{path}: imports unknown module cellstore.{dep}"
        assert LAYERS[dep] <= LAYERS[me], (
            f"{path.relative_to(SRC)} (layer {LAYERS[me]}) imports cellstore.{dep} "
            f"(layer {LAYERS[dep]})"
        )


def test_root_package_imports_are_checked(tmp_path):
    """``from cellstore import __version__`` in a lower layer is an upward arrow."""
    path = tmp_path / "probe.py"
    path.write_text(
        "from cellstore import __version__\nfrom cellstore import fs\nimport cellstore\n"
    )
    assert _imports(path) == {ROOT_PACKAGE, "fs"}


def test_core_does_no_io():
    for path in (SRC / "core").rglob("*.py"):
        text = path.read_text()
        for banned in ("import fsspec", "open(", "import os", "pyarrow.parquet"):
            assert banned not in text, f"{path}: core must not do I/O ({banned})"


def test_cli_help_does_not_import_heavy_modules():
    code = (
        "import sys, cellstore.cli; "
        "print(','.join(m for m in ('pyarrow', 'dask', 'pandas', 'fsspec', 'distributed') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_local_load_does_not_import_distributed(tmp_path: Path) -> None:
    """A load on local threads never imports ``distributed`` (Dask looks for a client
    when the threaded scheduler is named; about 13 MiB of a process that runs no cluster)."""
    code = (
        "import sys\n"
        "import pyarrow as pa, pyarrow.parquet as pq\n"
        "from cellstore.loader import Mapping\n"
        "from cellstore.warehouse import connect\n"
        f"root = {str(tmp_path)!r}\n"
        "pq.write_table(pa.table({'id': ['b', 'a', 'c'], 'v': [1, 2, 3]}), root + '/in.parquet')\n"
        "t = connect(root + '/wh').create_table('t', families=['cf'])\n"
        "mapping = Mapping.simple(row_key='id', columns=['cf:v=v:long'])\n"
        "report = t.load(root + '/in.parquet', mapping=mapping, key_advice='off')\n"
        "print(report.rows, t.scan().to_arrow().num_rows, 'distributed' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3", "3", "False"]

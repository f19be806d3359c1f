"""The layering of ``src/cellstore`` (docs/architecture.md), checked on every import.

What this enforces, exactly (each ``import``/``from ... import`` of a ``cellstore`` module in
any file under ``src/cellstore``, including imports inside functions and under
``TYPE_CHECKING``: a type-only import is still an arrow):

1. Every top-level module or package of ``cellstore`` has a layer in :data:`LAYERS`::

       layer 0  errors, defaults, core, filters, rowkey    (pure: no I/O in core)
       layer 1  fs, frames, storefiles, manifest, commit, handle, hbasefiles
       layer 2  reader, loader, report                     (siblings)
       layer 3  jobs, hbase                                (siblings)
       layer 4  warehouse                                  (the facade)
       layer 5  spark, cli                                 (siblings)

   ``hbase`` sits at layer 3, beside ``jobs``: ``HBaseTable`` reads HBase tables through the
   reader (the one scan implementation), and the importer writes through the commit.
   ``hbasefiles`` (layer 1) reads HBase's own files (root and snapshot layouts,
   descriptors, ``hbase:meta``, HFiles) with no reader, writing nothing: the loader's
   HFile output reads an HBase table's regions from it, and ``hbase`` builds on it.
2. A module imports only from its own layer or below (no upward arrow).
3. At layers 2 and up, a module does not import a sibling (another top-level module of the
   same layer); imports within one package (``cellstore.jobs.x`` -> ``cellstore.jobs.y``)
   are fine. At layers 0 and 1 modules build on each other (``commit`` uses ``manifest``),
   but the arrows between them have no cycle.
4. ``cellstore.jobs`` never imports ``cellstore.warehouse`` (jobs take a
   :class:`~cellstore.handle.TableHandle`; the facade calls them).
5. No ``importlib.import_module(...)`` or ``__import__(...)`` of a ``cellstore`` module (or
   of a name not written literally) outside the package root ``cellstore/__init__.py``, so
   no import escapes these checks. ``importlib.resources`` is fine. The root uses
   ``importlib`` for its lazy attributes (PEP 562 ``__getattr__``, so ``import cellstore``
   stays light): its ``_LAZY`` targets count as imports of the root, which sits at the
   facade's layer, and ``from cellstore import <name that is not a module>`` anywhere is
   an import of that layer.

A failure says what to move where. :data:`KNOWN_EXCEPTIONS` lists the arrows still to be
removed, each with its reason; an entry that no longer occurs fails too (delete it).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "cellstore"

#: Lower number = lower layer. A module may import only from its own layer or below.
LAYERS = {
    "errors": 0,
    "defaults": 0,
    "core": 0,
    "filters": 0,
    "rowkey": 0,
    "fs": 1,
    "frames": 1,
    "storefiles": 1,
    "manifest": 1,
    "commit": 1,
    "handle": 1,
    "hbasefiles": 1,
    "reader": 2,
    "loader": 2,
    "report": 2,
    "jobs": 3,
    "hbase": 3,
    "warehouse": 4,
    "spark": 5,
    "cli": 5,
}
#: The layers whose top-level modules build on each other (acyclically); above them,
#: siblings do not import each other.
FOUNDATION = 1
#: ``from cellstore import X`` of a name that is not a submodule goes through the package
#: root, which re-exports the API (``connect`` from warehouse): that is an import of this layer.
ROOT_PACKAGE = "<cellstore package root>"
LAYERS[ROOT_PACKAGE] = LAYERS["warehouse"]

#: Arrows that break the rules today, each with why and who removes it:
#: ``(file relative to src/cellstore, imported top-level module) -> reason``.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Arrow:
    """One import of a cellstore module: the top-level module and the names taken."""

    module: str
    names: tuple[str, ...]
    line: int


def _module_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _arrows(path: Path) -> Iterator[Arrow]:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = tuple(a.name for a in node.names)
            if node.module.startswith("cellstore."):
                yield Arrow(node.module.split(".")[1], names, node.lineno)
            elif node.module == "cellstore":
                for name in names:
                    top = name if name in LAYERS else ROOT_PACKAGE
                    yield Arrow(top, (name,), node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("cellstore."):
                    yield Arrow(alias.name.split(".")[1], (alias.name,), node.lineno)
                elif alias.name == "cellstore":
                    yield Arrow(ROOT_PACKAGE, ("cellstore",), node.lineno)


def _imports(path: Path) -> set[str]:
    """The top-level cellstore modules ``path`` imports."""
    return {a.module for a in _arrows(path)}


def _dynamic_imports(path: Path) -> Iterator[tuple[int, str]]:
    """``importlib.import_module``/``__import__`` calls of a cellstore or non-literal name."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
        if name not in ("import_module", "__import__"):
            continue
        arg = node.args[0] if node.args else None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if arg.value == "cellstore" or arg.value.startswith("cellstore."):
                yield node.lineno, f"{name}({arg.value!r})"
        else:
            yield node.lineno, f"{name}(<not a literal>)"


ROOT_INIT = SRC / "__init__.py"
FILES = sorted(p for p in SRC.rglob("*.py") if p != ROOT_INIT)


def _rel(path: Path) -> str:
    return str(path.relative_to(SRC))


def _problems(path: Path, *, rel: str | None = None) -> list[str]:
    """What is wrong with the imports of ``path`` (known exceptions left out).

    ``rel``: where the file sits under ``src/cellstore`` (default: where it is).
    """
    rel = rel if rel is not None else _rel(path)
    me = rel.split("/")[0].removesuffix(".py")
    out = []
    for arrow in _arrows(path):
        dep = arrow.module
        if dep == me or (rel, dep) in KNOWN_EXCEPTIONS:
            continue
        what = f"cellstore/{rel}:{arrow.line} imports cellstore.{dep}"
        names = ", ".join(arrow.names)
        if dep not in LAYERS:
            out.append(f"{what}, which has no layer: add it to test_imports.LAYERS")
        elif LAYERS[dep] > LAYERS[me]:
            out.append(
                f"{what} (layer {LAYERS[dep]}, above this file's layer {LAYERS[me]}): move "
                f"{names} down to layer {LAYERS[me]} or below, or move this code up"
            )
        elif LAYERS[dep] == LAYERS[me] and LAYERS[me] > FOUNDATION:
            out.append(
                f"{what} (a sibling at layer {LAYERS[me]}): move {names} down to a lower "
                "layer, or move this code up"
            )
    return out


def test_every_module_has_a_layer() -> None:
    tops = {_module_of(p) for p in FILES}
    missing = sorted(tops - set(LAYERS))
    assert not missing, f"top-level modules without a layer in test_imports.LAYERS: {missing}"


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_imports_run_one_way(path: Path) -> None:
    problems = _problems(path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("layer", range(FOUNDATION + 1))
def test_foundation_layers_have_no_cycles(layer: int) -> None:
    """At layers 0 and 1 modules use each other, one way: no cycle between them."""
    edges: dict[str, set[str]] = {}
    for path in FILES:
        me = _module_of(path)
        if LAYERS.get(me) != layer:
            continue
        deps = {d for d in _imports(path) if d != me and LAYERS.get(d) == layer}
        edges.setdefault(me, set()).update(deps)

    def cycle_from(node: str, stack: list[str]) -> list[str] | None:
        if node in stack:
            return [*stack[stack.index(node) :], node]
        for nxt in sorted(edges.get(node, ())):
            found = cycle_from(nxt, [*stack, node])
            if found:
                return found
        return None

    for start in sorted(edges):
        cycle = cycle_from(start, [])
        assert cycle is None, (
            f"layer {layer} modules import each other in a cycle: {' -> '.join(cycle or [])}; "
            "move the shared piece into one of them (or a lower layer)"
        )


def test_jobs_never_import_the_warehouse() -> None:
    """Jobs take a ``TableHandle``; the facade (``cellstore.warehouse``) calls them."""
    found = [
        f"cellstore/{_rel(p)}:{a.line}"
        for p in FILES
        if _module_of(p) == "jobs"
        for a in _arrows(p)
        if a.module in ("warehouse", ROOT_PACKAGE)
    ]
    assert not found, (
        f"jobs import the facade at {', '.join(found)}: take a cellstore.handle.TableHandle "
        "(and its catalog) instead"
    )


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_no_dynamic_imports_of_cellstore(path: Path) -> None:
    """Only the package root imports by name (its lazy attributes)."""
    found = [f"line {line}: {call}" for line, call in _dynamic_imports(path)]
    assert not found, (
        f"cellstore/{_rel(path)} imports by name ({'; '.join(found)}), which hides the arrow "
        "from these checks: import it statically (or, for a hook into a higher layer, let "
        "the facade pass a callable down, as cellstore.handle.hooks does)"
    )


def test_root_package_lazy_attributes_stay_at_its_layer() -> None:
    """The root's ``_LAZY`` targets are its imports: at or below the facade's layer."""
    tree = ast.parse(ROOT_INIT.read_text())
    lazy = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
    )
    assert isinstance(lazy, ast.Dict)
    targets = [v.value for v in lazy.values if isinstance(v, ast.Constant)]
    assert targets, "cellstore/__init__.py: _LAZY names no module"
    for target in targets:
        top = str(target).split(".")[1]
        assert LAYERS[top] <= LAYERS[ROOT_PACKAGE], (
            f"cellstore/__init__.py lazily imports {target} (layer {LAYERS[top]}), above the "
            f"root's layer {LAYERS[ROOT_PACKAGE]}"
        )
    for arrow in _arrows(ROOT_INIT):
        assert LAYERS[arrow.module] <= LAYERS[ROOT_PACKAGE]


def test_known_exceptions_still_occur() -> None:
    """An exception that no longer occurs is deleted from :data:`KNOWN_EXCEPTIONS`."""
    for (rel, dep), reason in KNOWN_EXCEPTIONS.items():
        assert reason
        path = SRC / rel
        assert path.exists() and dep in _imports(path), (
            f"cellstore/{rel} no longer imports cellstore.{dep}: delete it from "
            "test_imports.KNOWN_EXCEPTIONS"
        )


def test_the_checks_catch_what_they_claim(tmp_path: Path) -> None:
    """Upward, sibling and dynamic imports in a probe file are reported with what to move."""
    text = (
        "from cellstore.loader.direct import write_cells\n"
        "from cellstore.warehouse import Table\n"
        "import importlib\n"
        "importlib.import_module('cellstore.jobs')\n"
    )
    copy = tmp_path / "probe.py"
    copy.write_text(text)
    arrows = list(_arrows(copy))
    assert [(a.module, a.names) for a in arrows] == [
        ("loader", ("write_cells",)),
        ("warehouse", ("Table",)),
    ]
    assert [c for _, c in _dynamic_imports(copy)] == ["import_module('cellstore.jobs')"]
    assert _problems(copy, rel="report/_probe_for_test_imports.py") == [
        "cellstore/report/_probe_for_test_imports.py:1 imports cellstore.loader (a sibling "
        "at layer 2): move write_cells down to a lower layer, or move this code up",
        "cellstore/report/_probe_for_test_imports.py:2 imports cellstore.warehouse (layer 4, "
        "above this file's layer 2): move Table down to layer 2 or below, or move this code up",
    ]


def test_root_package_imports_are_checked(tmp_path: Path) -> None:
    """``from cellstore import __version__`` in a lower layer is an upward arrow."""
    path = tmp_path / "probe.py"
    path.write_text(
        "from cellstore import __version__\nfrom cellstore import fs\nimport cellstore\n"
    )
    assert _imports(path) == {ROOT_PACKAGE, "fs"}


def test_core_does_no_io() -> None:
    for path in (SRC / "core").rglob("*.py"):
        text = path.read_text()
        for banned in ("import fsspec", "open(", "import os", "pyarrow.parquet"):
            assert banned not in text, f"{path}: core must not do I/O ({banned})"


def test_cli_help_does_not_import_heavy_modules() -> None:
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

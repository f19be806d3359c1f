"""Property: whatever names a caller passes, no file is ever created outside the root.

Random table, family, qualifier, load-id, snapshot and index names (path escapes, separators,
control characters, any Unicode, and valid names so the writes also happen) go through the
public API: create a table, ``load_cells``, ``load``, snapshot and clone, define an index,
major-compact. Each call may refuse its input (a :class:`CellstoreError`) or succeed; a
listing of a sandbox directory around the root, before and after, must show new files under
the root only.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import cellstore
from cellstore.errors import CellstoreError
from cellstore.jobs import clone, compact, snapshot
from cellstore.jobs.index import create_index
from cellstore.loader import Mapping

try:
    from strategies import cells_table
except ImportError:  # pragma: no cover
    from tests.strategies import cells_table

PUT = 4
#: Names that try to leave a directory, or confuse a path or URL parser.
ESCAPES = [
    "..",
    ".",
    "../X",
    "../../../X",
    "../../../../../../X",
    "a/../../../X",
    "/X",
    "//X",
    "\\..\\..\\X",
    "..\\X",
    "%2e%2e",
    "%2e%2e%2fX",
    "~",
    "X\x00Y",
    "X\nY",
    "s3://bucket/X",
    "file:///X",
    "C:\\X",
    "ns:..",
    "..:t",
    "a/b",
    "",
]
VALID = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,12}", fullmatch=True)
NAMES = st.one_of(
    st.sampled_from(ESCAPES),
    st.text(alphabet=st.sampled_from(list("./\\%~:_-aZ0 \x00\n")), max_size=14),
    st.text(max_size=14),
    VALID,
)
TABLE_NAMES = st.one_of(
    VALID,
    st.builds(lambda ns, q: f"{ns}:{q}", VALID, VALID),
    NAMES,
    st.builds(lambda ns, q: f"{ns}:{q}", NAMES, NAMES),
)


def listing(path: Path) -> set[str]:
    """Every file and directory under ``path``, relative to it."""
    return {
        os.path.relpath(os.path.join(d, f), path)
        for d, dirs, names in os.walk(path)
        for f in [*names, *dirs]
    }


def memory_listing() -> set[str]:
    """Every file and directory of the (process-global) memory:// store."""
    fs = fsspec.filesystem("memory")
    return set(fs.store) | set(fs.pseudo_dirs)


def attempt(what: str, call: Callable[[], Any]) -> Any:
    """Run ``call``; a refusal (any CellstoreError) is fine, anything else is a bug."""
    try:
        result = call()
    except CellstoreError:
        event(f"{what}: refused")
        return None
    event(f"{what}: done")
    return result


@settings(
    max_examples=int(os.environ.get("CELLSTORE_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    table=TABLE_NAMES,
    family=NAMES,
    qualifier=NAMES,
    load_id=NAMES,
    snapshot_name=NAMES,
    clone_name=TABLE_NAMES,
    index=NAMES,
)
def test_no_file_is_created_outside_the_root(
    tmp_path_factory: pytest.TempPathFactory,
    table: str,
    family: str,
    qualifier: str,
    load_id: str,
    snapshot_name: str,
    clone_name: str,
    index: str,
) -> None:
    sandbox = tmp_path_factory.mktemp("sandbox")
    root = sandbox / "a" / "b" / "wh"
    root.parent.mkdir(parents=True)
    before = listing(sandbox)
    memory_root = f"/fuzz-{uuid.uuid4().hex}/a/b/wh"
    memory_before = memory_listing()
    for wh in (cellstore.connect(str(root)), cellstore.connect(f"memory://{memory_root}")):
        _exercise(wh, table, family, qualifier, load_id, snapshot_name, clone_name, index)

    inside = os.path.relpath(root, sandbox)
    escaped = {
        p for p in listing(sandbox) - before if p != inside and not p.startswith(inside + os.sep)
    }
    assert not escaped, escaped
    new = memory_listing() - memory_before
    assert all(p == memory_root or p.startswith(memory_root + "/") for p in new), new
    fsspec.filesystem("memory").rm(memory_root.split("/a/")[0], recursive=True)


def _exercise(
    wh: Any,
    table: str,
    family: str,
    qualifier: str,
    load_id: str,
    snapshot_name: str,
    clone_name: str,
    index: str,
) -> None:
    """Every public entry that turns one of the names into a path."""

    # Each name on its own: a bad table name must not hide what a family name does.
    t = attempt("create", lambda: wh.create_table(table, families=[family]))
    fam = family
    if t is None:
        t = attempt("create (table name)", lambda: wh.create_table(table, families=["f"]))
        fam = "f"
    if t is None:
        t = attempt("create (family)", lambda: wh.create_table("ns:t", families=[family]))
        fam = family
    if t is None:
        t, fam = wh.create_table("ns:t", families=["f"]), "f"
    qual = qualifier.encode("utf-8", "surrogatepass")
    cells = cells_table([(b"r1", fam, qual, 1, PUT, b"v"), (b"r2", fam, b"q", 2, PUT, b"w")])
    attempt("load_cells", lambda: t.load_cells(cells, load_id=load_id))
    frame = pd.DataFrame({"id": ["r3", "r4"], "v": ["x", "y"]})

    def bulk_load() -> Any:
        mapping = Mapping.simple(row_key="id", columns=[f"{fam}:{qualifier}=v"])
        return t.load(frame, mapping=mapping, load_id=load_id, skip_bad_records=True, workers=1)

    attempt("load", bulk_load)
    attempt("load_cells again", lambda: t.load_cells(cells, load_id=f"{load_id}-again"))
    if attempt("snapshot", lambda: snapshot(t, snapshot_name)) is not None:
        attempt("clone", lambda: clone(t, snapshot_name, clone_name))
    attempt("index", lambda: create_index(t, name=index, column=f"{fam}:q"))
    attempt("compact", lambda: compact(t, major=True))

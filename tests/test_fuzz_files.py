"""Fuzzing a table's files: mutated metadata versions and store files (issue 12).

Whatever happens to the newest metadata version (``_meta/v...json``) or to a store file
(bit flips, truncation, swapped bytes, random bytes, JSON values replaced), opening the
table, scanning it, a ``get`` and ``verify`` end either normally or in a cellstore error (a
:class:`~cellstore.errors.CellstoreError`): never another exception type, never a hang.
Whatever opens must read back what was written, or be refused: a mutated metadata version
that opens and scans must give the pristine answer, unless it describes another valid table
(a family setting, the regions, the salt changed), and then the answer of a fresh table made
with the mutated document's settings and loaded with the same cells (never the code under
test's reading of the damaged document). A store file whose size changed must fail every
read (its manifest entry records the size),
and so must one whose Parquet footer changed (its entry records the footer digest, checked
before pyarrow parses the footer: some damaged footers abort pyarrow). Store-file mutations
cover the whole file; a second test aims them at the footer and its 8-byte trailer.

Each test builds one small table and restores the mutated file after every example. CI
runs a bounded number of examples (``tests/fuzzing.py``); ``bench/fuzz_long.sh`` more.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

import cellstore
from cellstore.core.family import Family
from cellstore.errors import CellstoreError, CorruptFileError
from cellstore.jobs import verify
from cellstore.storefiles.reader import clear_footer_cache
from fuzzing import FUZZ_SETTINGS

PUT = 4
DELETE_COLUMN = 12


def cells() -> pa.Table:
    """300 rows on both sides of the split at ``m``, with a few delete markers."""
    rows = [f"{p}{i:04d}".encode() for p in ("a", "n") for i in range(150)]
    n = len(rows)
    types = np.full(n, PUT, dtype=np.int8)
    types[::37] = DELETE_COLUMN
    return pa.table(
        {
            "row": rows,
            "family": ["f"] * n,
            "qualifier": [b"q"] * n,
            "ts": np.arange(n, dtype=np.int64) + 1,
            "type": types,
            "value": [
                b"" if t == DELETE_COLUMN else b"v" + r for r, t in zip(rows, types, strict=True)
            ],
        }
    )


def load_the_cells(t: Any) -> None:
    """The fixture's two loads (the second overwrites the first 40 cells' keys)."""
    t.load_cells(cells(), row_group_cells=64)
    t.load_cells(cells().slice(0, 40), now_ms=5)


def _answer_shape(meta: Any) -> tuple[Any, ...]:
    """What a raw scan's answer depends on besides the cells: the table's settings, its
    regions and salt, and (format version 2) the manifests that make the live set."""
    live = meta.manifests if meta.format_version >= 2 else tuple(meta.files)
    return (meta.families, meta.split_keys, meta.salt_buckets, meta.row_key, live)


class Fixture:
    """A table with two regions, two loads, and the pristine bytes of its files."""

    def __init__(self, root: Path) -> None:
        clear_footer_cache()
        self.root = str(root / "wh")
        self.scratch = root / "expected"
        wh = cellstore.connect(self.root)
        t = wh.create_table("ns:t", families=[Family(name="f")], splits=["m"])
        load_the_cells(t)
        self.pristine_shape = _answer_shape(t.metadata)
        self.meta_path = Path(t.log.version_path(t.version))
        self.store_path = Path(t.file_path(max(t.files, key=lambda f: f.cells)))
        self.meta_bytes = self.meta_path.read_bytes()
        self.store_bytes = self.store_path.read_bytes()
        assert all(f.footer_digest for f in t.files)  # what protects the footer
        footer_len = int.from_bytes(self.store_bytes[-8:-4], "little")
        #: Where the serialized FileMetaData starts (then its length and ``PAR1``).
        self.footer_start = len(self.store_bytes) - 8 - footer_len
        self.pristine_scan = self.scan()

    def scan(self) -> pa.Table:
        """A raw scan of every version of the table (pristine: the expected answer)."""
        t = cellstore.connect(self.root).table("ns:t")
        return t.scan(raw=True, max_versions=5).to_arrow()

    def expected(self, meta: Any) -> pa.Table | None:
        """The raw scan a table described by ``meta`` must give, holding the written cells.

        The pristine answer when nothing it depends on changed; else that of a fresh table
        created with ``meta``'s families, regions and salt and loaded with the same cells
        (None, so no check, when ``create_table`` refuses those settings). A changed live
        set (the manifests) has no fresh equivalent: the pristine answer stands.
        """
        shape = _answer_shape(meta)
        if shape[:4] == self.pristine_shape[:4]:
            return self.pristine_scan
        root = str(self.scratch / uuid.uuid4().hex)
        try:
            t = cellstore.connect(root).create_table(
                "ns:t",
                families=list(meta.families),
                splits=None if meta.salt_buckets else meta.split_keys,
                salt_buckets=meta.salt_buckets,
                row_key=meta.row_key,
            )
            load_the_cells(t)
        except CellstoreError:
            event("mutated settings a fresh table refuses: not compared")
            return None
        event("mutated settings: compared with a fresh table")
        return t.scan(raw=True, max_versions=5).to_arrow()

    def check_metadata_answer(self) -> None:
        """What opens reads back what was written (see :meth:`expected`), or is refused."""
        try:
            t = cellstore.connect(self.root).table("ns:t")
            got = t.scan(raw=True, max_versions=5).to_arrow()
        except CellstoreError:
            return
        want = self.expected(t.metadata)
        if want is not None:
            assert got == want, "a damaged metadata version opened and answered wrongly"

    def exercise(self) -> list[str]:
        """Open, scan, get and verify; the names of the steps that raised a CellstoreError.

        Any other exception propagates and fails the test.
        """
        failed = []
        try:
            t = cellstore.connect(self.root).table("ns:t")
        except CellstoreError:
            return ["open"]
        steps: dict[str, Callable[[], Any]] = {
            "scan": lambda: t.scan(raw=True, max_versions=5).to_arrow(),
            "scan-budget": lambda: t.scan(memory_budget=1, start_row="a0100").to_arrow(),
            "get": lambda: t.get("a0003"),
            "verify": lambda: verify(t).raise_for_problems(),
        }
        for name, step in steps.items():
            try:
                step()
            except CellstoreError:
                failed.append(name)
        return failed

    def fuzz(self) -> list[str]:
        """:meth:`exercise` inside a Hypothesis example (its outcome becomes an event)."""
        failed = self.exercise()
        event(f"failed: {', '.join(failed) or 'nothing'}")
        return failed

    def restore(self) -> None:
        self.meta_path.write_bytes(self.meta_bytes)
        self.store_path.write_bytes(self.store_bytes)


@pytest.fixture
def files(tmp_path: Path) -> Iterator[Fixture]:
    fixture = Fixture(tmp_path)
    assert fixture.exercise() == []  # the pristine table reads
    yield fixture
    clear_footer_cache()


# ---------------------------------------------------------------------------- mutations
@st.composite
def byte_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` with bit flips, a byte swap, a truncation, or random bytes in place."""
    data = bytearray(seed)
    op = draw(st.sampled_from(["flip", "swap", "truncate", "random", "overwrite"]))
    if op == "flip":
        for _ in range(draw(st.integers(1, 4))):
            pos = draw(st.integers(0, len(data) - 1))
            data[pos] ^= 1 << draw(st.integers(0, 7))
    elif op == "swap":
        i, j = draw(st.integers(0, len(data) - 1)), draw(st.integers(0, len(data) - 1))
        data[i], data[j] = data[j], data[i]
    elif op == "truncate":
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif op == "random":
        data = bytearray(draw(st.binary(max_size=2 * len(seed))))
    else:  # the same size, a stretch overwritten
        pos = draw(st.integers(0, len(data) - 1))
        chunk = draw(st.binary(min_size=1, max_size=64))
        data[pos : pos + len(chunk)] = chunk[: len(data) - pos]
    return bytes(data)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["", "00", "6d", "ff" * 3, "r000001", "f", "../x", "data/x.parquet"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key/index path inside a JSON document (not the root)."""
    out: list[tuple[Any, ...]] = []
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for key, value in items:
        out.append((*prefix, key))
        out.extend(_paths(value, (*prefix, key)))
    return out


@st.composite
def json_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """The metadata document with a few values replaced by random JSON, or keys deleted."""
    doc = json.loads(seed)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return json.dumps(doc).encode()


@st.composite
def footer_mutation(draw: st.DrawFn, seed: bytes, start: int) -> bytes:
    """``seed`` changed in its footer (``seed[start:]``): bit flips, a stretch overwritten,
    or the end cut off."""
    data = bytearray(seed)
    op = draw(st.sampled_from(["flip", "overwrite", "truncate"]))
    if op == "flip":
        for _ in range(draw(st.integers(1, 4))):
            pos = draw(st.integers(start, len(data) - 1))
            data[pos] ^= 1 << draw(st.integers(0, 7))
    elif op == "overwrite":
        pos = draw(st.integers(start, len(data) - 1))
        chunk = draw(st.binary(min_size=1, max_size=16))
        data[pos : pos + len(chunk)] = chunk[: len(data) - pos]
    else:
        data = data[: draw(st.integers(start, len(data) - 1))]
    return bytes(data)


# -------------------------------------------------------------------------------- tests
@FUZZ_SETTINGS
@given(data=st.data())
@example(data=None)  # the document cut in half
def test_mutated_metadata_bytes_end_in_cellstore_errors(files: Fixture, data: Any) -> None:
    mutated = (
        files.meta_bytes[: len(files.meta_bytes) // 2]
        if data is None
        else data.draw(byte_mutation(files.meta_bytes))
    )
    files.meta_path.write_bytes(mutated)
    try:
        files.fuzz()
        files.check_metadata_answer()
    finally:
        files.restore()


@FUZZ_SETTINGS
@given(data=st.data())
def test_mutated_metadata_values_end_in_cellstore_errors(files: Fixture, data: Any) -> None:
    files.meta_path.write_bytes(data.draw(json_mutation(files.meta_bytes)))
    try:
        files.fuzz()
        files.check_metadata_answer()
    finally:
        files.restore()


@FUZZ_SETTINGS
@given(data=st.data())
def test_mutated_store_file_ends_in_cellstore_errors(files: Fixture, data: Any) -> None:
    mutated = data.draw(byte_mutation(files.store_bytes))
    files.store_path.write_bytes(mutated)
    try:
        failed = files.fuzz()
        if "scan" not in failed:  # undetected: then the answer is still right
            assert files.scan() == files.pristine_scan
        if len(mutated) != len(files.store_bytes):
            # Its size no longer matches the manifest: every read of it must fail.
            assert {"scan", "scan-budget", "verify"} <= set(failed) or failed == ["open"]
        elif mutated[files.footer_start :] != files.store_bytes[files.footer_start :]:
            # Its footer digest no longer matches the manifest: every read must fail.
            assert {"scan", "scan-budget", "verify"} <= set(failed)
    finally:
        files.restore()


@FUZZ_SETTINGS
@given(data=st.data())
def test_mutated_store_file_footer_ends_in_cellstore_errors(files: Fixture, data: Any) -> None:
    mutated = data.draw(footer_mutation(files.store_bytes, files.footer_start))
    files.store_path.write_bytes(mutated)
    try:
        failed = files.fuzz()
        if mutated != files.store_bytes:
            assert {"scan", "scan-budget", "verify"} <= set(failed), failed
    finally:
        files.restore()


def test_version_file_names_the_metadata_document(files: Fixture) -> None:
    """A broken metadata document is reported as corrupt, naming the file."""
    files.meta_path.write_bytes(b'{"format-version": 1, "regions": 7}')
    try:
        with pytest.raises(CorruptFileError, match=files.meta_path.name):
            cellstore.connect(files.root).table("ns:t")
    finally:
        files.restore()

"""Every invariant of a table's metadata that readers and loaders rely on is checked when
the metadata is read: a document that breaks one does not open (issue 26).

Each case breaks one invariant of a real table's newest metadata version, in place, and
expects opening the table to fail with a CorruptFileError (or FormatVersionError) that
names the document and the broken rule. Every case was checked by mutation: with the one
check that guards it removed from the code, its case fails (see the issue's notes).

Why the region rules matter: the loader routes each cell to the region whose range holds
its row (``region_index`` over the split keys) and a scan reads the regions whose ranges
meet its own. Regions with a gap (or an overlap) between them would let a load report a
cell written into the gap that no scan ever returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import cellstore
from cellstore.core.metadata import METADATA_FORMAT_VERSION
from cellstore.core.rowkey import KeyField, RowKeySpec
from cellstore.errors import CorruptFileError, FormatVersionError
from cellstore.jobs import verify

Doc = dict[str, Any]


def _hex(b: bytes) -> str:
    return b.hex()


def cells(rows: list[bytes]) -> pa.Table:
    n = len(rows)
    return pa.table(
        {"row": rows, "family": ["f"] * n, "qualifier": [b"q"] * n, "value": [b"v"] * n}
    )


def make_table(root: Path, *, format_version: int = 2, spec: bool = False) -> Any:
    """A table with regions [,g) [g,p) [p,) and one load (or a salted spec table)."""
    wh = cellstore.connect(str(root / "wh"))
    if spec:
        key = RowKeySpec(fields=(KeyField(name="user"),), salt_buckets=4)
        t = wh.create_table("ns:t", families=["f"], row_key=key, format_version=format_version)
        t.load_cells(cells([b"ann", b"bob"]))
    else:
        t = wh.create_table(
            "ns:t", families=["f"], splits=["g", "p"], format_version=format_version
        )
        t.load_cells(cells([b"a", b"h", b"q"]))
    return t


def rewrite(table: Any, change: Callable[[Doc], None]) -> Path:
    """Apply ``change`` to the table's newest metadata document, in place."""
    path = Path(table.log.version_path(table.version))
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc))
    return path


def setter(*keys: Any, value: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        target = doc
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value

    return change


def region(i: int, key: str, value: bytes) -> Callable[[Doc], None]:
    return setter("regions", i, key, value=_hex(value))


def both(*changes: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        for c in changes:
            c(doc)

    return change


def delete(key: str) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        del doc[key]

    return change


# (case id, format version, table with a salted spec, change, message pattern)
REGION_CASES = [
    ("no-regions", 2, False, setter("regions", value=[]), "at least one region"),
    ("first-start", 2, False, region(0, "start", b"a"), "must start at the first row"),
    ("last-end", 2, False, region(2, "end", b"z"), "must end after the last row"),
    ("gap", 2, False, region(1, "start", b"h"), "not contiguous"),
    ("overlap", 2, False, region(1, "start", b"f"), "not contiguous"),
    (
        "open-middle",  # the first region runs to the end, the next starts at the start
        2,
        False,
        both(region(0, "end", b""), region(1, "start", b"")),
        "not contiguous",
    ),
    (
        "inverted",
        2,
        False,
        both(region(1, "end", b"c"), region(2, "start", b"c")),
        "empty or inverted",
    ),
    ("empty", 2, False, both(region(1, "end", b"g"), region(2, "start", b"g")), "empty or"),
    ("duplicate-id", 2, False, setter("regions", 2, "id", value="r000002"), "duplicate region"),
    ("gap-v1", 1, False, region(1, "start", b"h"), "not contiguous"),
]

TYPE_CASES = [
    ("table-uuid", 2, False, setter("table-uuid", value=7), "table-uuid is int"),
    ("name", 2, False, setter("name", value=None), "name is NoneType"),
    ("version-type", 2, False, setter("version", value="2"), "version is str"),
    ("families", 2, False, setter("families", value={}), "families is dict"),
    ("regions", 2, False, setter("regions", value={}), "regions is dict"),
    ("manifests", 2, False, setter("manifests", value={}), "manifests is dict"),
    ("files", 1, False, setter("files", value={}), "files is dict"),
    ("next-seq", 2, False, setter("next-sequence-number", value=2.0), "next-sequence-number"),
    ("next-seq-bool", 2, False, setter("next-sequence-number", value=True), "next-sequence"),
    ("next-region-id", 2, False, setter("next-region-id", value="4"), "next-region-id is"),
    ("history", 2, False, setter("history", value=[]), "history is list"),
    ("totals", 2, False, setter("totals", value=[1]), "totals is not an object"),
    ("totals-value", 2, False, setter("totals", "cells", value=-1), "totals cells -1"),
    ("salt-zero", 2, False, setter("salt-buckets", value=0), "salt-buckets 0"),
    ("salt-high", 2, False, setter("salt-buckets", value=257), "salt-buckets 257"),
    ("salt-text", 2, False, setter("salt-buckets", value="4"), "salt-buckets '4'"),
    ("region-object", 2, False, setter("regions", 0, value=["r", "", ""]), "region .* is not"),
    ("region-start", 2, False, setter("regions", 0, "start", value=0), "region .* is not"),
    ("manifest-ref", 2, False, setter("manifests", 0, value=3), "manifest reference 3"),
    ("manifest-path", 2, False, setter("manifests", 0, "path", value="../x"), "manifest path"),
    ("manifest-count", 2, False, setter("manifests", 0, "adds", value=-1), "manifest adds -1"),
    ("entry-object", 1, False, setter("files", 0, value="x"), "file entry 'x' is not"),
    ("entry-seq", 1, False, setter("files", 0, "seq", value="1"), "file entry seq is str"),
    ("entry-size", 1, False, setter("files", 0, "size", value=-1), "negative size"),
    ("entry-cells", 1, False, setter("files", 0, "cells", value=-2), "negative size"),
    ("entry-digest", 1, False, setter("files", 0, "footer-digest", value="AB"), "footer-digest"),
    ("load-ids", 2, False, setter("load-ids", value="x"), "load-ids is str"),
    ("load-id-value", 2, False, setter("load-ids", value=[1]), "load-ids are not all strings"),
    ("properties", 2, False, setter("properties", value=[]), "properties is list"),
    ("property-value", 2, False, setter("properties", value={"a": 1}), "properties are not"),
    ("snapshots", 2, False, setter("snapshots", value=[]), "snapshots is list"),
    ("missing-field", 2, False, delete("next-region-id"), "next-region-id"),
]

SEMANTIC_CASES = [
    (
        "duplicate-family",
        2,
        False,
        lambda doc: doc["families"].append(dict(doc["families"][0])),
        "family 'f' is listed twice",
    ),
    ("spec-salt", 2, True, setter("salt-buckets", value=8), "row-key spec salt-buckets 4 != "),
    ("spec-unsalted", 2, True, setter("salt-buckets", value=None), "salt-buckets 4 != table"),
    (  # the fuzzer's find: an empty live set read as the table's data
        "totals-without-manifests",
        2,
        False,
        setter("manifests", value=[]),
        "totals count 3 files but no manifest is listed",
    ),
    ("claims-version", 2, False, setter("version", value=9), "claims to be version 9"),
    ("no-format-version", 2, False, delete("format-version"), "no integer format-version"),
]


@pytest.mark.parametrize(
    ("fmt", "spec", "change", "message"),
    [pytest.param(*case[1:], id=case[0]) for case in REGION_CASES + TYPE_CASES + SEMANTIC_CASES],
)
def test_a_broken_invariant_does_not_open(
    tmp_path: Path, fmt: int, spec: bool, change: Callable[[Doc], None], message: str
) -> None:
    t = make_table(tmp_path, format_version=fmt, spec=spec)
    path = rewrite(t, change)
    with pytest.raises(CorruptFileError, match=message) as info:
        cellstore.connect(str(tmp_path / "wh")).table("ns:t")
    assert path.name in str(info.value)  # names the document


@pytest.mark.parametrize("version", [0, METADATA_FORMAT_VERSION + 1])
def test_an_unknown_format_version_does_not_open(tmp_path: Path, version: int) -> None:
    t = make_table(tmp_path)
    rewrite(t, setter("format-version", value=version))
    with pytest.raises(FormatVersionError, match=f"format version {version} is not supported"):
        cellstore.connect(str(tmp_path / "wh")).table("ns:t")


def test_the_pristine_documents_open(tmp_path: Path) -> None:
    """The cases above break a document that opens and reads as it should."""
    for fmt, spec in ((2, False), (1, False), (2, True)):
        root = tmp_path / f"{fmt}-{spec}"
        t = make_table(root, format_version=fmt, spec=spec)
        rewrite(t, lambda doc: None)
        again = cellstore.connect(str(root / "wh")).table("ns:t")
        assert again.scan().count_rows() == (2 if spec else 3)


def test_a_gap_between_regions_cannot_take_a_load(tmp_path: Path) -> None:
    """The issue's scenario: regions [,g) [h,p) [p,) leave [g,h) to no region. The version
    does not open, and a load through a handle opened before it is refused (a load moves
    to the newest version first), so no cell is written into the gap and lost to scans."""
    t = make_table(tmp_path)
    stale = cellstore.connect(str(tmp_path / "wh")).table("ns:t")
    version = t.version
    rewrite(t, region(1, "start", b"h"))
    with pytest.raises(CorruptFileError, match="not contiguous"):
        stale.load_cells(cells([b"gx"]))
    meta = Path(t.log.version_path(version)).parent
    assert (
        sorted(p.name for p in meta.glob("v*.json"))[-1] == Path(t.log.version_path(version)).name
    )  # nothing committed after the broken version


@pytest.mark.parametrize("read", ["scan", "get", "files"])
def test_a_live_file_of_a_region_the_version_lacks_is_refused(tmp_path: Path, read: str) -> None:
    """Format 2 keeps file entries in manifests, each under its region id. A version whose
    region was renamed (one flipped byte of its id, found by the metadata fuzzer) lists a
    live file under no region of its own: every read would skip it, so its cells vanished
    without an error. Reading that version's files (the whole set, or one region's rows
    for a scan or a get) is refused, naming the version and the file; verify reports it."""
    t = make_table(tmp_path)
    path = rewrite(t, setter("regions", 1, "id", value="s000002"))
    opened = cellstore.connect(str(tmp_path / "wh")).table("ns:t")  # the document parses
    with pytest.raises(CorruptFileError, match="under region 'r000002', which this") as info:
        if read == "scan":
            opened.scan().to_arrow()
        elif read == "get":
            opened.get(b"h")
        else:
            list(opened.files)
    assert path.name in str(info.value) and "data/r000002/f/" in str(info.value)
    report = verify(opened)
    assert not report.ok and any("r000002" in p.message for p in report.problems)


def test_a_live_file_recorded_at_another_regions_start_is_refused(tmp_path: Path) -> None:
    """The region id kept, its start moved (a split point shifted in the document while the
    manifests still record the old start): the file's rows are outside the region."""
    t = make_table(tmp_path)
    rewrite(t, both(region(1, "start", b"f"), region(0, "end", b"f")))
    opened = cellstore.connect(str(tmp_path / "wh")).table("ns:t")
    with pytest.raises(CorruptFileError, match="recorded as starting at b'g'"):
        opened.scan().to_arrow()

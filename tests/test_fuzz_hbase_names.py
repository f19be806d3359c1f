"""Property: no name ``cellstore.hbase`` accepts resolves to a path outside the HBase root.

Random names (path escapes, separators, control characters, any Unicode, and names that
follow HBase's rules, so acceptance happens too) of every kind that reaches a path:
table (``ns:qualifier``), namespace, snapshot, region, family, hfile, and store-file
names (HFileLinks and References built from random parts). Each either is refused by
:func:`cellstore.hbasefiles.paths.check_name` (or :func:`parse_store_file_name`,
:func:`split_table_name`) or is accepted, and then every path the reader builds from it
(table directory, snapshot directory, the HFileLink/Reference locations of both layouts)
normalises to a path inside the root with exactly the segments expected, none ``.`` or
``..``. Then the same names go through the public API on a real root, as arguments
(``open_table``, ``open_snapshot``) and as ``.filelist`` entries, on the recording
``audit://`` filesystem: every call ends in a result or a :class:`CellstoreError`, and
nothing outside the root is opened.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest
from fsspec.implementations.local import LocalFileSystem
from hypothesis import event, given
from hypothesis import strategies as st

from cellstore.errors import CellstoreError, CorruptFileError, InvalidNameError
from cellstore.hbase import open_snapshot, open_table
from cellstore.hbasefiles.descriptors import encoded_region_name
from cellstore.hbasefiles.layout import _Resolver, _table_rel
from cellstore.hbasefiles.paths import (
    RootFiles,
    Segment,
    check_name,
    parse_store_file_name,
    split_table_name,
)
from fuzzing import FUZZ_SETTINGS
from hbase_fixtures import root2_links
from test_hbase_untrusted import (
    AuditFileSystem,
    entry,
    file_tracked_root,
    touched_outside,
    track_file,
)

ROOT = "/sandbox/hbase/root"
#: Names that try to leave a directory, or confuse a path parser (test_fuzz_names.py's,
#: plus HBase's own shapes: references, links, catalog names).
ESCAPES = [
    "..",
    ".",
    "../X",
    "../../../X",
    "a/../../../X",
    "/X",
    "//X",
    "\\..\\..\\X",
    "X\x00Y",
    "X\nY",
    "s3://bucket/X",
    "file:///X",
    "C:\\X",
    "ns:..",
    "..:t",
    "a/b",
    "",
    "-ROOT-",
    ".META.",
    "hbase:meta",
    "cccc...",
    "cccc./etc",
    "cccc.0/../../X",
    "t=../X-abc",
    "ns=t=..-abc",
    "ns=t=abc-../X",
    "abc_def",
    "abc_SeqId_12_",
]
VALID = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,12}", fullmatch=True)
HEX = st.from_regex(r"[0-9a-f]{1,32}", fullmatch=True)
TEXT = st.one_of(
    st.sampled_from(ESCAPES),
    st.text(alphabet=st.sampled_from(list("./\\%~:=_-af09Z \x00\n")), max_size=16),
    st.text(max_size=16),
    VALID,
    HEX,
)
HFILES = st.one_of(HEX, st.builds(lambda h, n: f"{h}_SeqId_{n}_", HEX, st.integers(0, 99)))
NAMESPACES = st.one_of(st.just(""), st.from_regex(r"[A-Za-z0-9_]{1,8}", fullmatch=True))
#: HFileLinks: valid ones, and ones with a random part.
VALID_LINKS = st.builds(
    lambda ns, q, r, h: (f"{ns}=" if ns else "") + f"{q}={r}-{h}", NAMESPACES, VALID, HEX, HFILES
)
LINKS = st.one_of(
    VALID_LINKS,
    st.builds(
        lambda ns, q, r, h: (f"{ns}=" if ns else "") + f"{q}={r}-{h}",
        st.one_of(NAMESPACES, TEXT),
        st.one_of(VALID, TEXT),
        st.one_of(HEX, TEXT),
        st.one_of(HFILES, TEXT),
    ),
)
#: References: valid ones (to an hfile or a link), and ones with a random part.
REFERENCES = st.one_of(
    st.builds(lambda t, p: f"{t}.{p}", st.one_of(HFILES, VALID_LINKS), HEX),
    st.builds(lambda t, p: f"{t}.{p}", st.one_of(HFILES, LINKS, TEXT), st.one_of(HEX, TEXT)),
)
STORE_FILES = st.one_of(TEXT, HFILES, LINKS, REFERENCES)
#: What the FILE-tracked root of the API test can resolve (root2_links' link and
#: reference into the archive), among random names.
PARENT = encoded_region_name("t", b"", 1)
TRACKED = st.one_of(st.sampled_from([f"t={PARENT}-cccc", f"cccc.{PARENT}"]), STORE_FILES)
TABLES = st.one_of(TEXT, st.builds(lambda ns, q: f"{ns}:{q}", TEXT, TEXT))
FILES = RootFiles(LocalFileSystem(), ROOT)


def inside(path: str, segments: int) -> bool:
    """``path`` is ``ROOT`` plus exactly ``segments`` plain segments, none '.' or '..'."""
    if not path.startswith(ROOT + "/"):
        return False
    parts = path[len(ROOT) + 1 :].split("/")
    return (
        len(parts) == segments
        and all(p not in ("", ".", "..") for p in parts)
        and posixpath.normpath(path) == path
    )


@FUZZ_SETTINGS
@given(table=TABLES, snapshot=TEXT, region=TEXT, family=TEXT, store_file=STORE_FILES)
def test_accepted_names_stay_inside_the_root(
    table: str, snapshot: str, region: str, family: str, store_file: str
) -> None:
    try:
        ns, qual = split_table_name(table, source="arg", error=InvalidNameError)
    except InvalidNameError:
        event("table: refused")
        ns, qual = Segment("default"), Segment("t")
    else:
        event("table: accepted")
        assert inside(FILES.join(ROOT, *_table_rel("2", ns, qual)), 3)
        assert inside(FILES.join(ROOT, *_table_rel("0.94", ns, qual)), 1)
    try:
        snap = check_name("snapshot", snapshot, source="arg", error=InvalidNameError)
    except InvalidNameError:
        event("snapshot: refused")
    else:
        event("snapshot: accepted")
        assert inside(FILES.join(ROOT, Segment(".hbase-snapshot"), snap), 2)
    checked: dict[str, Segment] = {}
    for kind, name in (("region", region), ("family", family), ("hfile", store_file)):
        try:
            checked[kind] = check_name(kind, name, source="file")
        except CorruptFileError:
            event(f"{kind}: refused")
        else:
            event(f"{kind}: accepted")
            assert inside(FILES.join(ROOT, checked[kind]), 1)
    try:
        parsed = parse_store_file_name(store_file, source="file")
    except CorruptFileError:
        event("store file: refused")
        return
    event(f"store file: accepted {parsed.kind}")
    assert check_name("store file", store_file, source="file") == store_file
    for version, depth in (("2", 6), ("0.94", 4)):
        resolver = _Resolver(FILES, version, ns, qual, "fuzz")
        reg = checked.get("region", Segment("0123abcd"))
        fam = checked.get("family", Segment("f"))
        locations = resolver._locations(parsed, parsed.parent or reg, fam)
        assert inside(locations[0], depth), locations[0]
        for loc in locations[1:]:
            assert inside(loc, depth + 1), loc


# ------------------------------------------------------------------- through the API
@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 2.x root (``root2_links``) and a FILE-tracked one whose list the test writes."""
    plain = root2_links(tmp_path_factory.mktemp("plain")).root
    _, _, fdir = file_tracked_root(tmp_path_factory.mktemp("tracked"))
    return plain, fdir


@FUZZ_SETTINGS
@given(table=st.one_of(st.just("t"), TABLES), snapshot=TEXT, store_file=TRACKED)
def test_no_file_outside_the_root_is_opened(
    roots: tuple[Path, Path], table: str, snapshot: str, store_file: str
) -> None:
    plain, fdir = roots
    tracked = fdir.parents[4]
    (fdir / ".filelist" / "f1.1").write_bytes(track_file([entry(store_file)], timestamp=1))
    AuditFileSystem.touched.clear()
    for call in (
        lambda: open_table(f"audit://{plain}", table),
        lambda: open_snapshot(f"audit://{plain}", snapshot),
        lambda: open_table(f"audit://{tracked}", "t").scan().to_arrow(),
    ):
        try:
            call()
        except CellstoreError as e:
            event(f"refused: {type(e).__name__}")
        else:
            event("done")
    assert set(touched_outside(plain)) & set(touched_outside(tracked)) == set()

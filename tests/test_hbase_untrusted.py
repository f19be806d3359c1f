"""HBase files are untrusted input (issue 26): names that would lead reads out of the root.

Each hostile case is built from the real vectors (``../shared/testdata/hbase-hfiles``,
unpacked into ``tmp_path``) or the synthetic roots of ``hbase_fixtures``, with a
*sentinel* outside the root: a valid HFile (or snapshot, or table) that the unchecked
path would read, so without the checks the open succeeds and the scan prints the
sentinel's cells (or another error class is raised), and these tests fail. Every case
runs through the Python API (``cellstore.hbase.open_table``/``open_snapshot``, then a
scan) and through the CLI (``cellstore hbase scan``), on an ``audit://`` filesystem: the
local filesystem with every opened file and listed directory recorded, so each test
also proves that nothing outside the root was opened.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import pyarrow as pa
import pytest
from click.testing import CliRunner
from fsspec.implementations.local import LocalFileSystem

from cellstore.cli.console import cli
from cellstore.errors import (
    CellstoreError,
    CorruptFileError,
    InvalidNameError,
    MissingFileError,
)
from cellstore.hbase import open_snapshot, open_table, write_hfile
from cellstore.hbasefiles.descriptors import encoded_region_name
from cellstore.storefiles.hfile.trailer import iter_pb_fields
from cellstore.storefiles.hfile.varint import read_pb_varint

try:
    from hbase_fixtures import (
        BIGTABLE,
        NS_UPGRADE,
        cells,
        pb_field,
        root2_links,
        table_schema,
        unpack_vector,
        varint,
        write_root2,
    )
except ImportError:  # pragma: no cover
    from tests.hbase_fixtures import (
        BIGTABLE,
        NS_UPGRADE,
        cells,
        pb_field,
        root2_links,
        table_schema,
        unpack_vector,
        varint,
        write_root2,
    )

SENTINEL = "SENTINEL-outside-the-root"
VIAS = ["python", "cli"]

pytestmark = pytest.mark.skipif(
    not BIGTABLE.exists() or not NS_UPGRADE.exists(), reason="HBase test vectors not present"
)


# --------------------------------------------------------------------------- audit://
class AuditFileSystem(LocalFileSystem):
    """The local filesystem, recording every file opened and directory listed.

    Registered as ``audit://``: ``open_table("audit:///path", ...)`` and the CLI get it
    through fsspec as any other URL; it reads exactly what ``file://`` reads.
    """

    protocol = ("audit",)
    touched: ClassVar[list[str]] = []

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        text = str(path)
        if text.startswith("audit://"):
            text = text[len("audit://") :]
        return super()._strip_protocol(text)

    def _open(self, path: Any, mode: str = "rb", **kwargs: Any) -> Any:
        AuditFileSystem.touched.append(str(self._strip_protocol(path)))
        return super()._open(path, mode, **kwargs)

    def ls(self, path: Any, detail: bool = False, **kwargs: Any) -> Any:
        AuditFileSystem.touched.append(str(self._strip_protocol(path)))
        return super().ls(path, detail=detail, **kwargs)


fsspec.register_implementation("audit", AuditFileSystem, clobber=True)


def touched_outside(root: Path) -> list[str]:
    """Files opened or directories listed whose real location is outside ``root``."""
    real_root = os.path.realpath(root)
    return [
        p
        for p in AuditFileSystem.touched
        if os.path.realpath(p) != real_root
        and not os.path.realpath(p).startswith(real_root + os.sep)
    ]


@pytest.fixture(autouse=True)
def _fresh_audit() -> None:
    AuditFileSystem.touched.clear()


# --------------------------------------------------------------------------- reads
def attempt(via: str, kind: str, root: Path, name: str, *, follow: bool = False) -> Any:
    """Open ``kind`` (``table``/``snapshot``) ``name`` of ``root`` and scan it.

    Returns the raised :class:`CellstoreError` or the scan's rows (Python), or the
    CLI's ``Result``.
    """
    url = f"audit://{root}"
    if via == "cli":
        args = ["hbase", "scan", url, f"--{kind}", name]
        return CliRunner().invoke(cli, args + (["--follow-symlinks"] if follow else []))
    opener: Callable[..., Any] = open_table if kind == "table" else open_snapshot
    try:
        options = {"follow_symlinks": True} if follow else {}
        return opener(url, name, **options).scan().to_arrow().to_pylist()
    except CellstoreError as e:
        return e


def assert_refused(outcome: Any, cls: type[CellstoreError], *fragments: str) -> None:
    """``outcome`` is ``cls`` (not a missing file), its message holds every fragment."""
    if isinstance(outcome, list):
        pytest.fail(f"read succeeded; expected {cls.__name__}: {str(outcome)[:300]}")
    if isinstance(outcome, BaseException):
        assert isinstance(outcome, cls), repr(outcome)
        if cls is not MissingFileError:
            assert not isinstance(outcome, MissingFileError), outcome
        text = " ".join(str(outcome).split())
    else:
        text = " ".join(outcome.output.split())
        assert outcome.exit_code == cls.exit_code, outcome.output
        assert "unexpected" not in text and "Traceback" not in text, text
    for fragment in fragments:
        assert " ".join(fragment.split()) in text, (fragment, text)
    assert SENTINEL not in text


def scanned_values(outcome: Any) -> set[bytes]:
    """The values a successful Python scan returned, or the CLI's output as one value."""
    if isinstance(outcome, list):
        return {c["value"] for c in outcome}
    assert outcome.exit_code == 0, outcome.output
    return {outcome.output.encode()}


def sentinel_hfile(path: Path, family: str, row: str) -> None:
    """A valid HFile outside the root, whose one cell says SENTINEL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_hfile(str(path), cells([(row, "q", 1, 4, SENTINEL)]), family=family.encode())


# --------------------------------------------------------------------------- protobuf
def pb_edit(msg: bytes, path: tuple[int, ...], fn: Callable[[bytes], bytes | None]) -> bytes:
    """``msg`` re-encoded with the bytes field at ``path`` replaced by ``fn(value)``.

    Every field on the path is a length-delimited field; ``fn`` returning None drops it.
    """
    out = b""
    for num, value in iter_pb_fields(msg, what="test"):
        if num == path[0] and isinstance(value, bytes):
            value = fn(value) if len(path) == 1 else pb_edit(value, path[1:], fn)
            if value is None:
                continue
        out += pb_field(num, value)
    return out


#: Paths inside ``SnapshotDataManifest`` (hbase-layout.md section 2).
TABLE_QUALIFIER = (1, 1, 2)  # table_schema.table_name.qualifier
STORE_FILE_NAME = (2, 3, 2, 1)  # region_manifests.family_files.store_files.name
REGION_INFO = (2, 2)  # region_manifests.region_info


def split_key(row: bytes) -> bytes:
    """A Reference's split key: the KeyValue key of the first cell of ``row``."""
    return struct.pack(">H", len(row)) + row + b"\x00" + b"\x7f" + b"\xff" * 7 + b"\xff"


def track_file(entries: list[bytes], timestamp: int) -> bytes:
    """A ``.filelist`` file (``StoreFileListFile``): length, StoreFileList, CRC32."""
    import zlib

    msg = pb_field(1, timestamp) + b"".join(pb_field(2, e) for e in entries)
    return len(msg).to_bytes(4, "big") + msg + zlib.crc32(msg).to_bytes(4, "big")


def entry(name: str, reference: bytes | None = None) -> bytes:
    """A ``StoreFileEntry``: name, size and (newer HBase) the Reference."""
    out = pb_field(1, name.encode()) + pb_field(2, 1)
    return out + (pb_field(3, reference) if reference is not None else b"")


def file_tracked_root(tmp: Path) -> tuple[Path, dict[str, str], Path]:
    """``root2_links`` switched to the FILE tracker; the first region's list is honest.

    Returns the root, the fixture's extras (``parent``) and the second region's family
    directory (its ``.filelist`` is up to the test).
    """
    r = root2_links(tmp)
    tdir = r.root / "data" / "default" / "t"
    fam = {"VERSIONS": "2", "hbase.store.file-tracker.impl": "FILE"}
    (tdir / ".tabledesc" / ".tableinfo.0000000002").write_bytes(
        table_schema("default", "t", {"f": fam})
    )
    f1 = tdir / r.regions[0] / "f" / ".filelist"
    f1.mkdir()
    (f1 / "f1.1").write_bytes(
        track_file([entry("aaaa_SeqId_5_"), entry("bbbb_SeqId_7_")], timestamp=1)
    )
    f2 = tdir / r.regions[1] / "f"
    (f2 / ".filelist").mkdir()
    return r.root, dict(r.extra), f2


# ------------------------------------------------------------------ Reference parents
@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("parent_kind", ["absolute", "dotdot"])
def test_reference_parent_region_outside_the_root(
    tmp_path: Path, via: str, parent_kind: str
) -> None:
    """A Reference ``<hfile>.<parent>`` whose parent is absolute or climbs with ``..``.

    HBase's own pattern takes any text as the parent; joined unchecked it names the
    sentinel (``<parent>/f/cccc``), a valid HFile whose row is in the TOP half.
    """
    root, _, f2 = file_tracked_root(tmp_path / "in")
    outside = tmp_path / "outside"
    sentinel_hfile(outside / "f" / "cccc", "f", "zz-sentinel")
    tdir = root / "data" / "default" / "t"
    parent = str(outside) if parent_kind == "absolute" else os.path.relpath(outside, tdir)
    ref = pb_field(1, split_key(b"m")) + pb_field(2, 0)
    tracker = f2 / ".filelist" / "f1.1"
    tracker.write_bytes(track_file([entry(f"cccc.{parent}", ref)], timestamp=1))

    assert_refused(
        attempt(via, "table", root, "t"),
        CorruptFileError,
        str(tracker),
        "is not a valid HBase store file name",
    )
    assert touched_outside(root) == []


@pytest.mark.parametrize("via", VIAS)
def test_filelist_entry_that_climbs_out_is_not_read(tmp_path: Path, via: str) -> None:
    """A ``.filelist`` Reference entry without content: its name is the file to read.

    ``<family dir>/cccc.0/../../..`` climbs to ``/`` and on to a sentinel Reference file
    outside the root; unchecked, that file is opened (then the target is missing).
    """
    root, _, f2 = file_tracked_root(tmp_path / "in")
    outside_ref = tmp_path / "outside" / "ref"
    outside_ref.parent.mkdir()
    outside_ref.write_bytes(b"PBUF" + pb_field(1, split_key(b"m")) + pb_field(2, 0))
    (f2 / "cccc.0").mkdir()  # the attacker controls the root: the climb starts here
    climb = "cccc.0" + "/.." * (len(f2.parts) + 2) + str(outside_ref)
    tracker = f2 / ".filelist" / "f2.9"
    tracker.write_bytes(track_file([entry(climb)], timestamp=1))

    assert_refused(
        attempt(via, "table", root, "t"),
        CorruptFileError,
        str(tracker),
        "is not a valid HBase store file name",
    )
    assert touched_outside(root) == []


# ------------------------------------------------------------------- snapshot manifests
def e2e_root(tmp: Path) -> Path:
    """The real ExportSnapshot output (``EndToEndIT-snapshot.zip``), unpacked; its root."""
    return unpack_vector(BIGTABLE, tmp) / "data"


def manifest_regions(manifest: bytes) -> list[tuple[str, bytes, list[str]]]:
    """``(encoded region, start key, hfile names)`` of each region of a data.manifest."""
    out = []
    for num, rm in iter_pb_fields(manifest, what="test"):
        if num != 2 or not isinstance(rm, bytes):
            continue
        start, rid, names = b"", 0, []
        for n, v in iter_pb_fields(rm, what="test"):
            if n == 2 and isinstance(v, bytes):
                for n2, v2 in iter_pb_fields(v, what="test"):
                    if n2 == 1 and isinstance(v2, int):
                        rid = v2
                    elif n2 == 3 and isinstance(v2, bytes):
                        start = v2
            elif n == 3 and isinstance(v, bytes):
                for n2, v2 in iter_pb_fields(v, what="test"):
                    if n2 == 2 and isinstance(v2, bytes):
                        names.append(bytes(dict(iter_pb_fields(v2, what="test"))[1]).decode())
        out.append((encoded_region_name("test-table", start, rid), start, names))
    return out


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("where", ["manifest-dotdot", "manifest-absolute", "snapshotinfo"])
def test_snapshot_table_name_outside_the_root(tmp_path: Path, via: str, where: str) -> None:
    """The table qualifier of ``data.manifest`` (or ``.snapshotinfo``'s table) leaves the root.

    Unchecked, every store file resolves to ``<root>/data/default/<qualifier>/...``: the
    sentinel tree outside holds a valid HFile at each of those places.
    """
    root = e2e_root(tmp_path / "in")
    snap = root / ".hbase-snapshot" / "test-snapshot"
    manifest = (snap / "data.manifest").read_bytes()
    outside = tmp_path / "outside"
    for enc, start, names in manifest_regions(manifest):
        for name in names:
            sentinel_hfile(outside / enc / "cf" / name, "cf", (start or b"0").decode() + "-s")
    tdir_parent = root / "data" / "default"
    qualifier = (
        str(outside) if where == "manifest-absolute" else os.path.relpath(outside, tdir_parent)
    )
    if where == "snapshotinfo":
        # No qualifier in the schema: the table comes from .snapshotinfo (layout 8.3).
        (snap / "data.manifest").write_bytes(pb_edit(manifest, TABLE_QUALIFIER, lambda _: None))
        info = pb_edit((snap / ".snapshotinfo").read_bytes(), (2,), lambda _: qualifier.encode())
        (snap / ".snapshotinfo").write_bytes(info)
        named = snap / ".snapshotinfo"
    else:
        (snap / "data.manifest").write_bytes(
            pb_edit(manifest, TABLE_QUALIFIER, lambda _: qualifier.encode())
        )
        named = snap / "data.manifest"

    assert_refused(
        attempt(via, "snapshot", root, "test-snapshot"),
        CorruptFileError,
        str(named),
        "is not a valid HBase table name",
    )
    assert touched_outside(root) == []


@pytest.mark.parametrize("via", VIAS)
def test_snapshot_store_file_name_outside_the_root(tmp_path: Path, via: str) -> None:
    """A manifest's store-file name that is a Reference to an absolute parent region."""
    root = e2e_root(tmp_path / "in")
    snap = root / ".hbase-snapshot" / "test-snapshot"
    manifest = (snap / "data.manifest").read_bytes()
    outside = tmp_path / "outside"
    names = [n for _, _, ns in manifest_regions(manifest) for n in ns]
    for name in names:
        sentinel_hfile(outside / "cf" / name, "cf", "0-s")
    edited = pb_edit(manifest, STORE_FILE_NAME, lambda n: n + b"." + str(outside).encode())
    (snap / "data.manifest").write_bytes(edited)

    assert_refused(
        attempt(via, "snapshot", root, "test-snapshot"),
        CorruptFileError,
        str(snap / "data.manifest"),
        "is not an hfile, link or reference name",
    )
    assert touched_outside(root) == []


# ------------------------------------------------------------------- names as arguments
@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("form", ["dotdot", "absolute"])
def test_snapshot_name_with_path_separators(tmp_path: Path, via: str, form: str) -> None:
    """``open_snapshot(root, "../x")``: the sentinel is a complete snapshot outside."""
    root = e2e_root(tmp_path / "in")
    other = e2e_root(tmp_path / "outside") / ".hbase-snapshot" / "test-snapshot"
    base = root / ".hbase-snapshot"
    name = str(other) if form == "absolute" else os.path.relpath(other, base)

    assert_refused(
        attempt(via, "snapshot", root, name),
        InvalidNameError,
        f"'{name[:40]}",
        "is not a valid HBase snapshot name",
    )
    assert touched_outside(root) == []


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize(
    "form", ["namespace-dotdot", "qualifier-dotdot", "no-namespace-dotdot", "absolute"]
)
def test_table_name_with_path_separators(tmp_path: Path, via: str, form: str) -> None:
    """``open_table(root, "ns:../../t")``: the sentinel is a whole table outside."""
    r = root2_links(tmp_path / "in")
    other = write_root2(
        tmp_path / "outside",
        families={"f": {}},
        stores={(0, "f"): []},
    )
    sentinel_hfile(other.root / "data" / "default" / "t" / other.regions[0] / "f" / "ab", "f", "s")
    target = other.root / "data" / "default" / "t"
    if form == "namespace-dotdot":  # <root>/data/<ns>/t
        name = os.path.relpath(target.parent, r.root / "data") + ":t"
    elif form == "qualifier-dotdot":  # <root>/data/default/<qualifier>
        name = "default:" + os.path.relpath(target, r.root / "data" / "default")
    elif form == "no-namespace-dotdot":
        name = os.path.relpath(target, r.root / "data" / "default")
    else:  # posixpath.join drops everything before an absolute part
        name = f"ns:{target}"

    rule = "namespace" if form == "namespace-dotdot" else "table"
    assert_refused(
        attempt(via, "table", r.root, name),
        InvalidNameError,
        f"is not a valid HBase {rule} name",
    )
    assert touched_outside(r.root) == []


# ----------------------------------------------------------------------------- symlinks
@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("what", ["store file", "family directory", "archive directory"])
def test_symlink_leading_outside_the_root(tmp_path: Path, via: str, what: str) -> None:
    """A symlink in the root that points outside: refused, unless ``--follow-symlinks``.

    The sentinel is the symlink's target; followed, its cell shows up in the scan.
    """
    r = root2_links(tmp_path / "in")
    tdir = r.root / "data" / "default" / "t"
    outside = tmp_path / "outside"
    if what == "store file":
        sentinel_hfile(outside / "dddd", "f", "b-s")
        link = tdir / r.regions[0] / "f" / "dddd"
        link.symlink_to(outside / "dddd")
    elif what == "family directory":
        fdir = tdir / r.regions[0] / "f"
        shutil.move(str(fdir), str(outside))  # the family's files now live outside
        sentinel_hfile(outside / "dddd", "f", "b-s")
        link = fdir
        link.symlink_to(outside, target_is_directory=True)
    else:
        arch = r.root / "archive"
        shutil.move(str(arch), str(outside))
        parent = r.extra["parent"]
        sentinel_hfile(outside / "data" / "default" / "t" / parent / "f" / "cccc", "f", "zz-s")
        link = arch
        link.symlink_to(outside, target_is_directory=True)

    assert_refused(
        attempt(via, "table", r.root, "t"), CorruptFileError, str(link), "through a symlink"
    )
    assert touched_outside(r.root) == []
    # Opting in follows it: the sentinel's cell is read.
    assert any(
        SENTINEL.encode() in v
        for v in scanned_values(attempt(via, "table", r.root, "t", follow=True))
    )


@pytest.mark.parametrize("via", VIAS)
def test_symlink_inside_the_root_is_followed(tmp_path: Path, via: str) -> None:
    """A symlink that stays inside the root is read as the file it points to."""
    r = root2_links(tmp_path / "in")
    tdir = r.root / "data" / "default" / "t"
    inside = r.root / "elsewhere" / "dddd"
    inside.parent.mkdir()
    write_hfile(str(inside), cells([("c", "q", 9, 4, "linked")]), family=b"f")
    (tdir / r.regions[0] / "f" / "dddd").symlink_to(inside)
    assert any(b"linked" in v for v in scanned_values(attempt(via, "table", r.root, "t")))
    assert touched_outside(r.root) == []


# ----------------------------------------------------------------------- non-UTF-8 names
def ns_root(tmp: Path) -> Path:
    """The real HBase 0.94 root (``TestNamespaceUpgrade.0.98.tgz``), unpacked."""
    return unpack_vector(NS_UPGRADE, tmp) / "hbase"


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize(
    ("kind", "name", "relpath", "old", "new"),
    [
        ("table", "foo", "foo/.tableinfo.0000000001", b"\x03foo", b"\x03\xff\xfeo"),
        ("table", "foo", "foo/.tableinfo.0000000001", b"\x09\x01f", b"\x09\x01\xff"),
        (
            "snapshot",
            "foo_snapshot1",
            ".snapshot/foo_snapshot1/.tableinfo.0000000001",
            b"\x03foo",
            b"\x03f\xc3(",
        ),
        (
            "snapshot",  # a table's regions come from .META. here, a v1 snapshot's do not
            "foo_snapshot1",
            ".snapshot/foo_snapshot1/b882ec3d98ebbbf4851594c8787273ce/.regioninfo",
            b"\x03foo",
            b"\x03\x80oo",
        ),
    ],
    ids=["tableinfo-table", "tableinfo-family", "snapshot-tableinfo", "snapshot-regioninfo"],
)
def test_non_utf8_names_in_094_files(
    tmp_path: Path, via: str, kind: str, name: str, relpath: str, old: bytes, new: bytes
) -> None:
    """A 0.94 Writable ``.tableinfo``/``.regioninfo`` whose names are not UTF-8."""
    root = ns_root(tmp_path)
    path = root / relpath
    data = path.read_bytes()
    assert data.count(old) >= 1
    path.write_bytes(data.replace(old, new, 1))

    assert_refused(attempt(via, kind, root, name), CorruptFileError, str(path), "not UTF-8")


@pytest.mark.parametrize("via", VIAS)
def test_non_utf8_names_in_manifest_and_pb_descriptor(tmp_path: Path, via: str) -> None:
    """Non-UTF-8 in a protobuf ``data.manifest`` (a store-file name) and a 2.x descriptor."""
    root = e2e_root(tmp_path / "e2e")
    manifest = root / ".hbase-snapshot" / "test-snapshot" / "data.manifest"
    manifest.write_bytes(pb_edit(manifest.read_bytes(), STORE_FILE_NAME, lambda n: n + b"\xff"))
    assert_refused(
        attempt(via, "snapshot", root, "test-snapshot"), CorruptFileError, str(manifest), "UTF-8"
    )
    r = root2_links(tmp_path / "r2")
    info = r.root / "data" / "default" / "t" / ".tabledesc" / ".tableinfo.0000000002"
    info.write_bytes(b"PBUF" + pb_field(1, pb_field(1, b"default") + pb_field(2, b"t\xfe")))
    assert_refused(attempt(via, "table", r.root, "t"), CorruptFileError, str(info), "UTF-8")


# -------------------------------------------------------------------------- hbase:meta
META_COMPARATOR = "org.apache.hadoop.hbase.CellComparatorImpl$MetaCellComparator"


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize(
    "value",
    [b"PBUF\x0a\xff\xff\xff\xff\x0f", b"PBUF" + b"\x10" + b"\xff" * 11, b"\x01\x7f"],
    ids=["truncated-field", "overlong-varint", "writable-truncated"],
)
def test_garbage_meta_regioninfo_names_file_and_row(tmp_path: Path, via: str, value: bytes) -> None:
    """A garbage ``info:regioninfo`` in hbase:meta's HFile: the error names both."""
    r = root2_links(tmp_path)
    mdir = r.root / "data" / "hbase" / "meta" / "1588230740" / "info"
    mdir.mkdir(parents=True)
    meta_file = mdir / "0123abcd"
    row = b"t,,2." + r.regions[0].encode() + b"."
    write_hfile(
        str(meta_file),
        pa.table(
            {
                "row": pa.array([row], pa.binary()),
                "qualifier": pa.array([b"regioninfo"], pa.binary()),
                "ts": pa.array([100], pa.int64()),
                "type": pa.array([4], pa.int8()),
                "value": pa.array([value], pa.binary()),
            }
        ),
        family=b"info",
        comparator=META_COMPARATOR,
    )
    assert_refused(
        attempt(via, "table", r.root, "t"),
        CorruptFileError,
        str(meta_file),
        f"hbase:meta row 't,,2.{r.regions[0]}.'",
        "info:regioninfo does not parse",
    )


# ----------------------------------------------------------------- forged lengths, counts
def _forge_094_count(root: Path) -> Path:
    """foo's 0.94 ``.tableinfo`` with its attribute count (i32 after the name) at 2**31-1."""
    path = root / "foo" / ".tableinfo.0000000001"
    data = bytearray(path.read_bytes())
    at = 4 + 1 + 3 + 2  # version, VInt length, "foo", isRoot, isMeta
    assert data[at : at + 4] == b"\x00\x00\x00\x02"
    data[at : at + 4] = b"\x7f\xff\xff\xff"
    path.write_bytes(bytes(data))
    return path


def _forge_regioninfo_length(root: Path) -> Path:
    """root2's first ``.regioninfo`` with a delimited length of 2**62."""
    path = next((root / "data" / "default" / "t").glob("*/.regioninfo"))
    data = path.read_bytes()
    n = data[4]
    path.write_bytes(b"PBUF" + varint(1 << 62) + data[5 : 5 + n])
    return path


def _forge_manifest_length(root: Path) -> Path:
    """The first region manifest's length in data.manifest claims 2**60 bytes."""
    path = root / ".hbase-snapshot" / "test-snapshot" / "data.manifest"
    data = path.read_bytes()
    assert data[0] == 0x0A  # table_schema
    n, at = read_pb_varint(data, 1)
    at += n
    assert data[at] == 0x12  # the first region_manifests field
    _, body = read_pb_varint(data, at + 1)
    path.write_bytes(data[: at + 1] + varint(1 << 60) + data[body:])
    return path


def _forge_reference_key(root: Path) -> Path:
    """root2's Reference file with a split key claiming 2**40 bytes."""
    path = next((root / "data" / "default" / "t").glob("*/f/cccc.*"))
    path.write_bytes(b"PBUF" + b"\x0a" + varint(1 << 40) + b"\x00\x01m")
    return path


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize(
    ("forge", "kind", "name", "fragment"),
    [
        (_forge_094_count, "table", "foo", "count 2147483647"),
        (_forge_regioninfo_length, "table", "t", "overruns the file"),
        (_forge_manifest_length, "snapshot", "test-snapshot", "truncated protobuf field 2"),
        (_forge_reference_key, "table", "t", "truncated protobuf field 1"),
    ],
    ids=["094-count", "regioninfo-length", "manifest-length", "reference-key-length"],
)
def test_forged_lengths_and_counts_are_checked(
    tmp_path: Path, via: str, forge: Callable[[Path], Path], kind: str, name: str, fragment: str
) -> None:
    """A forged varint length or i32 count is checked before use: a CorruptFileError."""
    if forge is _forge_094_count:
        root = ns_root(tmp_path)
    elif forge is _forge_manifest_length:
        root = e2e_root(tmp_path)
    else:
        root = root2_links(tmp_path).root
    path = forge(root)
    assert_refused(attempt(via, kind, root, name), CorruptFileError, str(path), fragment)

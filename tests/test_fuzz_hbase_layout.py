"""Fuzzing HBase's metadata files: the snapshot and root-directory readers (issue 26).

The real vectors (the ExportSnapshot output, the HBase 0.94 root with its v1 snapshots)
and synthetic 2.x roots (a Reference file, a ``.filelist``, a v2 snapshot made of
``region-manifest.*`` files) are unpacked once. Each example mutates one metadata file
(``data.manifest``, ``region-manifest.*``, ``.snapshotinfo``, ``.tableinfo``,
``.regioninfo``, a Reference file or a ``.filelist`` file) with bit flips, a truncation,
absurd varints or ``i32`` counts inserted or written over its bytes, or garbage
appended; then opens the table or snapshot, describes it and counts its rows in a
:class:`~fuzzing.BoundedWorker` (a child process under an address-space and a time
limit, so a forged length that allocates or loops fails the example, not the machine),
and restores the file.

Every outcome must be a read or a :class:`~cellstore.errors.CellstoreError`: never
another exception, a dead child (out of memory, a crash) or a hang. A read whose mutated
file still decodes to what the pristine file decodes to must give the pristine answer.
CI runs ``FUZZ_SETTINGS``' bounded number of examples; ``bench/fuzz_long.sh`` many more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from cellstore.errors import CellstoreError
from cellstore.hbase import open_snapshot, open_table
from cellstore.hbasefiles import descriptors as d
from cellstore.hbasefiles.descriptors import encoded_region_name
from cellstore.storefiles.hfile.varint import read_pb_varint
from fuzzing import FUZZ_SETTINGS, BoundedWorker
from hbase_fixtures import (
    BIGTABLE,
    NS_UPGRADE,
    pb_field,
    region_info,
    root2_links,
    table_schema,
    unpack_vector,
    varint,
)
from test_hbase_untrusted import entry, file_tracked_root, split_key, track_file

pytestmark = pytest.mark.skipif(
    not BIGTABLE.exists() or not NS_UPGRADE.exists(), reason="HBase test vectors not present"
)

NS094_REGION = "b882ec3d98ebbbf4851594c8787273ce"
PARSERS: dict[str, Callable[..., Any]] = {
    "snapshot info": d.parse_snapshot_info,
    "data manifest": d.parse_data_manifest,
    "region manifest": d.parse_region_manifest,
    "table descriptor": d.parse_table_descriptor,
    "region info": d.parse_region_info,
    "reference": d.parse_reference,
    "store file list": d.parse_store_file_list,
}


@dataclass(frozen=True)
class Target:
    """One metadata file to mutate, and the read that reaches it."""

    root: str  # key of the corpus
    file: str  # path relative to that root
    kind: str  # "table" or "snapshot"
    name: str
    parser: str
    use_meta: bool = True


def _targets() -> dict[str, Target]:
    parent = encoded_region_name("t", b"", 1)
    r1, r2 = (encoded_region_name("t", s, 2) for s in (b"", b"m"))
    snap = ".hbase-snapshot/test-snapshot"
    v1 = ".snapshot/foo_snapshot1"
    return {
        "export data.manifest": Target("e2e", f"{snap}/data.manifest", "snapshot", "test-snapshot", "data manifest"),
        "export .snapshotinfo": Target("e2e", f"{snap}/.snapshotinfo", "snapshot", "test-snapshot", "snapshot info"),
        "0.94 .tableinfo": Target("ns", "foo/.tableinfo.0000000001", "table", "foo", "table descriptor"),
        "0.94 .regioninfo": Target("ns", f"foo/{NS094_REGION}/.regioninfo", "table", "foo", "region info", use_meta=False),
        "0.94 v1 .snapshotinfo": Target("ns", f"{v1}/.snapshotinfo", "snapshot", "foo_snapshot1", "snapshot info"),
        "0.94 v1 .tableinfo": Target("ns", f"{v1}/.tableinfo.0000000001", "snapshot", "foo_snapshot1", "table descriptor"),
        "0.94 v1 .regioninfo": Target("ns", f"{v1}/{NS094_REGION}/.regioninfo", "snapshot", "foo_snapshot1", "region info"),
        "2.x .tableinfo": Target("r2", "data/default/t/.tabledesc/.tableinfo.0000000001", "table", "t", "table descriptor"),
        "2.x .regioninfo": Target("r2", f"data/default/t/{r2}/.regioninfo", "table", "t", "region info"),
        "2.x reference": Target("r2", f"data/default/t/{r2}/f/cccc.{parent}", "table", "t", "reference"),
        "2.x .filelist": Target("tracked", f"data/default/t/{r2}/f/.filelist/f1.1", "table", "t", "store file list"),
        "2.x region-manifest": Target("r2", f".hbase-snapshot/s2/region-manifest.{r2}", "snapshot", "s2", "region manifest"),
        "2.x region-manifest (first)": Target("r2", f".hbase-snapshot/s2/region-manifest.{r1}", "snapshot", "s2", "region manifest"),
        "2.x snapshot .snapshotinfo": Target("r2", ".hbase-snapshot/s2/.snapshotinfo", "snapshot", "s2", "snapshot info"),
    }  # fmt: skip


TARGETS = _targets()


# --------------------------------------------------------------------------- child side
def read_target(
    kind: str, root: str, name: str, use_meta: bool, parser: str, path: str, pristine: bytes
) -> tuple[bool | None, tuple[int, int, int, int]]:
    """Run in the bounded child: decode the file as mutated, then open and read.

    Returns:
        Whether the mutated file decodes to what ``pristine`` decodes to (None when it
        does not decode), and the read's ``(regions, files, rows, cells)``.
    """
    parse = PARSERS[parser]
    try:
        same: bool | None = parse(Path(path).read_bytes(), where=path) == parse(
            pristine, where=path
        )
    except CellstoreError:
        same = None
    t = open_table(root, name, use_meta=use_meta) if kind == "table" else open_snapshot(root, name)
    desc = t.describe()
    cells = t.scan(raw=True, max_versions=2**31 - 1).to_arrow()
    rows = len(set(cells.column("row").to_pylist()))
    return same, (len(desc.regions), desc.files, rows, cells.num_rows)


# --------------------------------------------------------------------------- corpus
def _snapshot_of_region_manifests(root: Path, parent: str) -> None:
    """A v2 snapshot ``s2`` of root2_links' table without ``data.manifest``: one
    ``region-manifest.<enc>`` per region, the schema in its ``.tabledesc``."""
    snap = root / ".hbase-snapshot" / "s2"
    (snap / ".tabledesc").mkdir(parents=True)
    (snap / ".tabledesc" / ".tableinfo.0000000001").write_bytes(
        table_schema("default", "t", {"f": {"VERSIONS": "2"}})
    )
    (snap / ".snapshotinfo").write_bytes(
        pb_field(1, b"s2") + pb_field(2, b"t") + pb_field(3, 1) + pb_field(5, 2)
    )
    ref = pb_field(1, split_key(b"m")) + pb_field(2, 0)
    regions = [
        (b"", b"m", [pb_field(1, b"aaaa_SeqId_5_"), pb_field(1, b"bbbb_SeqId_7_")]),
        (
            b"m",
            b"",
            [
                pb_field(1, f"t={parent}-cccc".encode()),
                pb_field(1, f"cccc.{parent}".encode()) + pb_field(2, ref),
            ],
        ),
    ]
    for start, end, files in regions:
        delimited = region_info("default", "t", 2, start, end)
        n, at = read_pb_varint(delimited, 4)  # the message, without PBUF and its length
        info = delimited[at : at + n]
        fam = pb_field(1, b"f") + b"".join(pb_field(2, f) for f in files)
        enc = encoded_region_name("t", start, 2)
        (snap / f"region-manifest.{enc}").write_bytes(pb_field(2, info) + pb_field(3, fam))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The pristine roots, by key."""
    e2e = unpack_vector(BIGTABLE, tmp_path_factory.mktemp("e2e")) / "data"
    ns = unpack_vector(NS_UPGRADE, tmp_path_factory.mktemp("ns")) / "hbase"
    r2 = root2_links(tmp_path_factory.mktemp("r2"))
    _snapshot_of_region_manifests(r2.root, r2.extra["parent"])
    tracked, extra, fdir = file_tracked_root(tmp_path_factory.mktemp("tracked"))
    parent = extra["parent"]
    (fdir / ".filelist" / "f1.1").write_bytes(
        track_file([entry(f"t={parent}-cccc"), entry(f"cccc.{parent}")], timestamp=3)
    )
    return {"e2e": e2e, "ns": ns, "r2": r2.root, "tracked": tracked}


@pytest.fixture(scope="module")
def worker() -> Iterator[BoundedWorker]:
    w = BoundedWorker()
    yield w
    w.close()


@pytest.fixture(scope="module")
def pristine(corpus: dict[str, Path], worker: BoundedWorker) -> dict[str, Any]:
    """Each target's read on the pristine files (it must succeed)."""
    out = {}
    for key, t in TARGETS.items():
        path = corpus[t.root] / t.file
        outcome = worker.call(
            "test_fuzz_hbase_layout:read_target",
            t.kind,
            str(corpus[t.root]),
            t.name,
            t.use_meta,
            t.parser,
            str(path),
            path.read_bytes(),
        )
        assert outcome.kind == "ok", (key, outcome.message)
        assert outcome.value[0] is True
        out[key] = outcome.value[1]
    return out


# --------------------------------------------------------------------------- mutations
#: Numbers a forged file would carry: protobuf varints (huge, over-long, unterminated),
#: i32 counts and lengths, Hadoop VLongs of 8 bytes, zero.
ABSURD = [
    varint(1 << 62),
    varint((1 << 64) - 1),
    b"\xff" * 10 + b"\x01",
    b"\x80" * 11,
    b"\x7f\xff\xff\xff",
    b"\xff\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\x88\x7f\xff\xff\xff\xff\xff\xff\xff",
    b"\x87" + b"\xff" * 8,
    b"\x00",
]
FRACTION = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
MUTATIONS = st.one_of(
    st.tuples(
        st.just("flip"), st.lists(st.tuples(FRACTION, st.integers(0, 7)), min_size=1, max_size=8)
    ),
    st.tuples(st.just("truncate"), FRACTION),
    st.tuples(st.just("insert"), FRACTION, st.sampled_from(ABSURD)),
    st.tuples(st.just("overwrite"), FRACTION, st.sampled_from(ABSURD)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=32)),
)


def mutate(data: bytes, mutation: tuple[Any, ...]) -> bytes:
    """``data`` with one mutation applied (positions are fractions of the length)."""
    kind = mutation[0]

    def at(fraction: float) -> int:
        return min(int(fraction * len(data)), max(len(data) - 1, 0))

    if kind == "flip":
        out = bytearray(data)
        for fraction, bit in mutation[1]:
            if out:
                out[at(fraction)] ^= 1 << bit
        return bytes(out)
    if kind == "truncate":
        return data[: at(mutation[1])]
    if kind == "insert":
        i = at(mutation[1])
        return data[:i] + mutation[2] + data[i:]
    if kind == "overwrite":
        i = at(mutation[1])
        return data[:i] + mutation[2] + data[i + len(mutation[2]) :]
    return data + mutation[1]


@FUZZ_SETTINGS
@given(key=st.sampled_from(sorted(TARGETS)), mutation=MUTATIONS)
def test_mutated_metadata_reads_or_is_refused(
    corpus: dict[str, Path],
    worker: BoundedWorker,
    pristine: dict[str, Any],
    key: str,
    mutation: tuple[Any, ...],
) -> None:
    t = TARGETS[key]
    path = corpus[t.root] / t.file
    original = path.read_bytes()
    mutated = mutate(original, mutation)
    path.write_bytes(mutated)
    try:
        outcome = worker.call(
            "test_fuzz_hbase_layout:read_target",
            t.kind,
            str(corpus[t.root]),
            t.name,
            t.use_meta,
            t.parser,
            str(path),
            original,
        )
    finally:
        path.write_bytes(original)
    assert outcome.kind in ("ok", "error"), f"{key} {mutation}: {outcome.kind}: {outcome.message}"
    if outcome.kind == "error":
        assert outcome.is_cellstore, f"{key} {mutation}: {outcome.error_type}: {outcome.message}"
        message = outcome.message.split("\nTraceback")[0]
        assert str(corpus[t.root]) in message, message  # names a file or the root
        event(f"refused: {outcome.error_type.rsplit('.', 1)[-1]}")
        event(
            "refused: the message names the mutated file"
            if str(path) in message
            else "refused: names another file"
        )
        return
    same, result = outcome.value
    if same:
        assert result == pristine[key], (key, mutation, result, pristine[key])
        event("read: decodes as pristine, same answer")
    else:
        event("read: decodes differently" if same is False else "read: file does not decode")

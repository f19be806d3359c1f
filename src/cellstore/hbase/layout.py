"""Finding an HBase table's regions and store files: root directories and snapshots.

Reads the directory trees of hbase-layout.md section 5 (HBase 0.94 and 2.x/3.x root
directories, exported snapshots) and resolves every store file name to the bytes to read
(section 6): plain hfiles, HFileLinks (table directory, then archive, then ``.tmp``),
References (the top or bottom half of a parent region's file) and bulk-loaded
``_SeqId_N_`` files. The result, an :class:`HBaseLayout`, lists regions in key order with
their resolved files per family; nothing here reads an HFile.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

import fsspec

from cellstore.commit import now_ms
from cellstore.errors import (
    CorruptFileError,
    MissingFileError,
    SnapshotNotFoundError,
    TableNotFoundError,
    UnsupportedFormatError,
)
from cellstore.hbase.descriptors import (
    PBUF_MAGIC,
    FamilyDescriptor,
    HBaseRegionInfo,
    ReferenceInfo,
    SnapshotInfo,
    StoreFileListing,
    TableDescriptor,
    parse_data_manifest,
    parse_reference,
    parse_region_info,
    parse_region_manifest,
    parse_snapshot_info,
    parse_store_file_list,
    parse_table_descriptor,
)
from cellstore.hbase.meta import read_meta_regions

__all__ = [
    "HBaseLayout",
    "HFileRef",
    "RegionFiles",
    "load_file_list",
    "load_snapshot",
    "load_table",
]

_HFILE: Final = r"[0-9a-f]+(?:_SeqId_[0-9]+_|_del)?"
_LINK: Final = rf"(?:([_\w]+)=)?([_\w][-_.\w]*)=([a-f0-9]+)-({_HFILE})"
_LINK_RE: Final = re.compile(rf"^{_LINK}$")
_REF_RE: Final = re.compile(rf"^({_HFILE}|{_LINK})\.(.+)$")
_HFILE_RE: Final = re.compile(rf"^{_HFILE}$")
_MOB_RE: Final = re.compile(rf"^{_HFILE}_{_HFILE}$")
_TRACK_RE: Final = re.compile(r"^f(1|2)(?:\.([0-9]+))?$")
_TRACKER_KEY: Final = "hbase.store.file-tracker.impl"
_MIGRATION_SRC_KEY: Final = "hbase.store.file-tracker.migration.src.impl"
_CATALOG: Final = frozenset({"-ROOT-", ".META.", "-META-", "hbase:meta", "hbase:namespace"})

Version = Literal["0.94", "2"]


@dataclass(frozen=True)
class HFileRef:
    """One store file to read, resolved to a path.

    Attributes:
        name: The name as listed (hfile, HFileLink or Reference).
        path: The HFile's path on the filesystem.
        size: Its size in bytes.
        top: For a Reference, True for the top half (rows >= ``split_row``), False for the
            bottom half (rows < ``split_row``); None for a whole file.
        split_row: The Reference's split row.
    """

    name: str
    path: str
    size: int
    top: bool | None = None
    split_row: bytes = b""

    def clip(self, start: bytes, stop: bytes) -> tuple[bytes, bytes] | None:
        """``[start, stop)`` narrowed to this file's half; None when nothing is left."""
        if self.top is True and self.split_row > start:
            start = self.split_row
        elif self.top is False and (not stop or self.split_row < stop):
            stop = self.split_row
        if stop and start >= stop:
            return None
        return start, stop


@dataclass(frozen=True)
class RegionFiles:
    """One region and its resolved store files per family (families in name order)."""

    info: HBaseRegionInfo
    files: Mapping[str, tuple[HFileRef, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class HBaseLayout:
    """A table as found on disk: descriptor, regions in key order, resolved files.

    Attributes:
        root: The root directory (path on ``fs``).
        version: ``"0.94"`` or ``"2"`` (0.96 and later).
        descriptor: The table descriptor.
        regions: Regions in key order, split parents and replicas dropped.
        snapshot: The snapshot read, or None for a table directory.
        regions_from: Where the regions came from: ``"manifest"`` (a snapshot),
            ``"hbase:meta"`` or ``"directories"`` (the region directories of a root).
    """

    root: str
    version: Version
    descriptor: TableDescriptor
    regions: tuple[RegionFiles, ...]
    snapshot: SnapshotInfo | None = None
    regions_from: Literal["manifest", "hbase:meta", "directories"] = "directories"


# --------------------------------------------------------------------------- helpers
def _version(fs: fsspec.AbstractFileSystem, root: str) -> Version:
    """0.94 or 2.x: ``hbase.version`` says (PBUF = 0.96+); else ``archive`` vs ``.archive``."""
    vfile = posixpath.join(root, "hbase.version")
    if fs.exists(vfile):
        return "2" if fs.cat_file(vfile).startswith(PBUF_MAGIC) else "0.94"
    if fs.exists(posixpath.join(root, "archive")) or not fs.exists(
        posixpath.join(root, ".archive")
    ):
        return "2"
    return "0.94"


def _split_name(name: str) -> tuple[str, str]:
    ns, sep, qual = name.partition(":")
    return (ns, qual) if sep else ("default", name)


def _table_rel(version: Version, ns: str, qual: str) -> str:
    return posixpath.join("data", ns, qual) if version == "2" else qual


def _locations(
    root: str, version: Version, ns: str, qual: str, region: str, family: str, hfile: str
) -> list[str]:
    """Where HBase looks for a linked file, in order (``HFileLink`` locations)."""
    rel = posixpath.join(_table_rel(version, ns, qual), region, family, hfile)
    tops = ["", "archive", ".tmp", "mobdir"] if version == "2" else ["", ".archive", ".tmp"]
    return [posixpath.join(root, top, rel) if top else posixpath.join(root, rel) for top in tops]


def _read(fs: fsspec.AbstractFileSystem, path: str) -> bytes:
    data: bytes = fs.cat_file(path)
    return data


def _latest_tableinfo(fs: fsspec.AbstractFileSystem, dirs: Sequence[str]) -> str | None:
    """The newest ``.tableinfo.*`` in the first of ``dirs`` that has one (names sort)."""
    for d in dirs:
        if not fs.isdir(d):
            continue
        names = [posixpath.basename(p) for p in fs.ls(d, detail=False)]
        infos = sorted((n for n in names if n.startswith(".tableinfo")), reverse=True)
        if infos:
            return posixpath.join(d, infos[0])
    return None


@dataclass
class _Resolver:
    """Turns store-file names of one table into :class:`HFileRef` (layout section 6)."""

    fs: fsspec.AbstractFileSystem
    root: str
    version: Version
    ns: str
    qual: str
    where: str

    def resolve(
        self, region: str, family: str, listing: StoreFileListing, *, ref_path: str | None
    ) -> HFileRef:
        name = listing.name
        what = f"{self.where}, region {region}, family {family}: store file {name}"
        if _MOB_RE.match(name) and not _HFILE_RE.match(name):
            raise UnsupportedFormatError(f"{what} is a MOB file; MOB data is not supported")
        ref = _REF_RE.match(name)
        if _LINK_RE.match(name) or _HFILE_RE.match(name):
            return self._find(name, self._candidates(region, family, name), None, what)
        if ref is None:
            raise CorruptFileError(f"{what} is not an hfile, link or reference name")
        target, parent = ref.group(1), ref.group(ref.lastindex or 1)
        info = listing.reference
        if info is None:
            if ref_path is None:
                raise CorruptFileError(f"{what}: reference without its content")
            info = parse_reference(_read(self.fs, ref_path), where=ref_path)
        return self._find(name, self._candidates(parent, family, target), info, what)

    def _candidates(self, region: str, family: str, name: str) -> list[str]:
        link = _LINK_RE.match(name)
        if link:
            ns, qual, reg, hfile = link.groups()
            return _locations(self.root, self.version, ns or "default", qual, reg, family, hfile)
        return _locations(self.root, self.version, self.ns, self.qual, region, family, name)

    def _find(self, name: str, tried: list[str], ref: ReferenceInfo | None, what: str) -> HFileRef:
        for path in tried:
            try:
                size = int(self.fs.size(path))
            except FileNotFoundError:
                continue
            top = None if ref is None else ref.top
            split = b"" if ref is None else ref.split_row
            return HFileRef(name, path, size, top, split)
        raise MissingFileError(f"{what} not found; tried: {', '.join(tried)}")


def _tracker(desc: TableDescriptor, fam: FamilyDescriptor) -> str:
    """The store-file tracker of a family: ``DEFAULT``, ``FILE`` or ``MIGRATION`` (section 7).

    The family's configuration, then its attributes, then the table's attributes decide
    (``StoreFileTrackerFactory``); class names map to their short names. A migration
    reads from its source tracker.
    """

    def lookup(key: str) -> str:
        for values in (fam.configuration, fam.attributes, desc.attributes):
            if key in values:
                return values[key].strip()
        return ""

    def short(name: str) -> str:
        base = name.rsplit(".", 1)[-1].upper()
        return {
            "DEFAULTSTOREFILETRACKER": "DEFAULT",
            "FILEBASEDSTOREFILETRACKER": "FILE",
            "MIGRATIONSTOREFILETRACKER": "MIGRATION",
        }.get(base, base or "DEFAULT")

    impl = short(lookup(_TRACKER_KEY))
    if impl == "MIGRATION":
        return short(lookup(_MIGRATION_SRC_KEY))
    return impl


def load_file_list(fs: fsspec.AbstractFileSystem, family_dir: str) -> list[StoreFileListing] | None:
    """The live files of a store per its ``.filelist`` (FILE tracker), or None if it has none.

    Tracker files are ``f1.<seq>`` and ``f2.<seq>``; the highest ``<seq>`` with a
    complete file wins, and of its two files the one with the larger
    ``StoreFileList.timestamp`` (``StoreFileListFile#load``). Files cut short are skipped.

    Raises:
        CorruptFileError: a damaged tracker file, more than two for one ``<seq>``, or no
            complete tracker file at all.
    """
    tdir = posixpath.join(family_dir, ".filelist")
    if not fs.isdir(tdir):
        return None
    groups: dict[int, list[str]] = {}
    for path in fs.ls(tdir, detail=False):
        m = _TRACK_RE.match(posixpath.basename(str(path).rstrip("/")))
        if m:
            groups.setdefault(int(m.group(2) or -1), []).append(str(path))
    for seq in sorted(groups, reverse=True):
        paths = sorted(groups[seq], key=posixpath.basename)
        if len(paths) > 2:
            raise CorruptFileError(
                f"{tdir}: {len(paths)} store file lists for sequence {seq} (at most 2): "
                f"{', '.join(paths)}"
            )
        lists = [parse_store_file_list(_read(fs, p), where=p) for p in paths]
        done = [(lst.timestamp, -i, lst) for i, lst in enumerate(lists) if lst is not None]
        if done:
            return list(max(done, key=lambda d: (d[0], d[1]))[2].files)
    raise CorruptFileError(f"{tdir}: no complete store file list (f1.*/f2.*) in the directory")


def _store_files(
    fs: fsspec.AbstractFileSystem, fdir: str, *, tracker: str, where: str
) -> list[tuple[StoreFileListing, str]]:
    """A store's files with their paths: the ``.filelist`` if any, else the listing.

    Raises:
        MissingFileError: the family uses the FILE tracker but has no ``.filelist``.
    """
    if not fs.isdir(fdir):
        return []
    tracked = load_file_list(fs, fdir)
    if tracked is not None:
        return [(f, posixpath.join(fdir, f.name)) for f in tracked]
    if tracker == "FILE":
        raise MissingFileError(
            f"{where}: {fdir} has no .filelist, but the table descriptor sets "
            f"{_TRACKER_KEY}=FILE (the live store files are only listed there)"
        )
    found = []
    for d in sorted(fs.ls(fdir, detail=True), key=lambda d: str(d["name"])):
        name = posixpath.basename(str(d["name"]).rstrip("/"))
        if d["type"] == "directory" or name.startswith("."):
            continue
        if not d["size"] and not _LINK_RE.match(name):
            continue  # not a valid store file (StoreFileInfo.isValid)
        found.append((StoreFileListing(name), str(d["name"])))
    return found


def _meta_online(
    fs: fsspec.AbstractFileSystem, root: str, version: Version, table: str, where: str
) -> list[HBaseRegionInfo] | None:
    """The online regions of ``table`` per the catalog's HFiles; None if it lists none.

    The catalog is ``data/hbase/meta`` (0.96+) or ``.META.`` (``-META-`` before 0.92
    final) in a 0.94 root; its rows are read by :func:`read_meta_regions`.
    """
    if version == "2":
        ns, qual = "hbase", "meta"
    else:
        ns = "default"
        qual = next(
            (q for q in (".META.", "-META-") if fs.isdir(posixpath.join(root, q))), ".META."
        )
    mdir = posixpath.join(root, _table_rel(version, ns, qual))
    if not fs.isdir(mdir):
        return None
    resolver = _Resolver(fs, root, version, ns, qual, f"{table} in the catalog of {root}")
    paths: list[str] = []
    for rdir in sorted(fs.ls(mdir, detail=False)):
        region = posixpath.basename(str(rdir).rstrip("/"))
        if region.startswith(".") or not fs.isdir(rdir):
            continue
        fdir = posixpath.join(rdir, "info")
        for listing, path in _store_files(fs, fdir, tracker="DEFAULT", where=where):
            paths.append(resolver.resolve(region, "info", listing, ref_path=path).path)
    regions = read_meta_regions(fs, paths, table, now_ms=now_ms())
    if not regions:
        return None
    return [m.info for m in regions if m.online]


def _tile(regions: list[RegionFiles], where: str) -> tuple[RegionFiles, ...]:
    """Regions in key order; they must cover every key exactly once (section 8.4)."""
    regions.sort(key=lambda r: r.info.start)
    prev_end = b""
    for i, r in enumerate(regions):
        if r.info.start != prev_end or (i and not prev_end):
            raise CorruptFileError(
                f"{where}: regions do not tile the key space at region {r.info.encoded} "
                f"(start {r.info.start!r}, previous end {prev_end!r})"
            )
        prev_end = r.info.end
    if regions and prev_end:
        raise CorruptFileError(f"{where}: the last region ends at {prev_end!r}, not at the end")
    return tuple(regions)


def _newest_cover(infos: list[HBaseRegionInfo]) -> list[HBaseRegionInfo]:
    """Drop regions whose range overlaps a newer region's (split parents; section 8).

    A root directory's ``.regioninfo`` files do not mark split parents; their daughters
    have larger region ids, so keeping the newest region of every overlap keeps them.
    """
    kept: list[HBaseRegionInfo] = []
    for r in sorted(infos, key=lambda r: -r.region_id):
        if any((not k.end or r.start < k.end) and (not r.end or k.start < r.end) for k in kept):
            continue
        kept.append(r)
    return kept


def _check_descriptor(desc: TableDescriptor, where: str) -> None:
    for fam in desc.families:
        if fam.is_encrypted:
            raise UnsupportedFormatError(
                f"{where}: family {fam.name} is encrypted (ENCRYPTION="
                f"{fam.attributes['ENCRYPTION']}); encrypted HFiles are not supported"
            )


# --------------------------------------------------------------------------- tables
def load_table(
    fs: fsspec.AbstractFileSystem, root: str, table: str, *, use_meta: bool = True
) -> HBaseLayout:
    """A table of a root directory (0.94 or 2.x/3.x; a copy of one is fine).

    Regions are those ``hbase:meta`` lists as online (its flushed HFiles under
    ``data/hbase/meta``, or ``.META.`` in 0.94; split and merged parents, daughters still
    being made and replicas skipped) when it lists the table and ``use_meta``; otherwise the
    region directories with a ``.regioninfo``, split parents (whose range a newer region
    covers) dropped. A store's files are those its ``.filelist`` names (FILE tracker),
    else those in its directory. Data in WALs or memstores is not visible (flush first,
    or read a snapshot).

    Raises:
        TableNotFoundError: no such table under ``root`` (the message lists the tables).
        UnsupportedFormatError: a catalog table, MOB or encrypted data.
        MissingFileError: a store file is missing from every location HBase looks in, a
            region hbase:meta lists has no directory, or a FILE-tracked store has no
            ``.filelist``.
        CorruptFileError: a descriptor, region info or file list does not parse, regions
            do not tile.
    """
    version = _version(fs, root)
    ns, qual = _split_name(table)
    if table in _CATALOG or (version == "0.94" and qual in _CATALOG):
        raise UnsupportedFormatError(f"{root}: catalog table {table} cannot be read")
    if version == "0.94" and ns != "default":
        qual = f"{ns}.{qual}"  # 0.94 has no namespaces; 0.96 maps "a.b" to a:b only on upgrade
        ns = "default"
    tdir = posixpath.join(root, _table_rel(version, ns, qual))
    where = f"HBase table {table} in {root}"
    info = _latest_tableinfo(fs, [posixpath.join(tdir, ".tabledesc"), tdir])
    if info is None:
        raise TableNotFoundError(
            f"{root}: no HBase table {table!r} (no {tdir}/.tabledesc); tables: "
            f"{', '.join(list_tables(fs, root)) or 'none'}"
        )
    desc = parse_table_descriptor(_read(fs, info), where=info)
    _check_descriptor(desc, where)
    infos: dict[str, HBaseRegionInfo] = {}
    online = _meta_online(fs, root, version, desc.name, where) if use_meta else None
    if online is not None:
        for r in online:
            rdir = posixpath.join(tdir, r.encoded)
            if not fs.isdir(rdir):
                raise MissingFileError(
                    f"{where}: hbase:meta (as flushed to its HFiles) lists region {r.encoded} "
                    f"[{r.start!r}, {r.end!r}) but {rdir} does not exist; flush hbase:meta, "
                    "read a snapshot, or pass use_meta=False"
                )
            infos[r.encoded] = r
        kept = list(infos.values())
    else:
        for entry in fs.ls(tdir, detail=False):
            rfile = posixpath.join(entry, ".regioninfo")
            if posixpath.basename(entry).startswith(".") or not fs.exists(rfile):
                continue
            r = parse_region_info(_read(fs, rfile), where=rfile)
            infos[posixpath.basename(entry)] = r
        kept = _newest_cover([r for r in infos.values() if r.replica_id == 0])
    resolver = _Resolver(fs, root, version, ns, qual, where)
    regions = []
    by_info = {id(r): d for d, r in infos.items()}
    for r in kept:
        rdir = posixpath.join(tdir, by_info[id(r)])
        files = {}
        for fam in desc.families:
            listed = _store_files(
                fs,
                posixpath.join(rdir, fam.name),
                tracker=_tracker(desc, fam),
                where=f"{where}, region {by_info[id(r)]}, family {fam.name}",
            )
            if listed and fam.is_mob:
                raise UnsupportedFormatError(f"{where}: family {fam.name} is a MOB family")
            files[fam.name] = tuple(
                resolver.resolve(by_info[id(r)], fam.name, listing, ref_path=path)
                for listing, path in listed
            )
        regions.append(RegionFiles(r, files))
    if online is None:
        return HBaseLayout(root, version, desc, _tile(regions, where))
    try:
        tiled = _tile(regions, f"{where} (regions from hbase:meta)")
    except CorruptFileError as e:
        raise CorruptFileError(
            f"{e}; hbase:meta's flushed HFiles may be behind a split or merge: flush "
            "hbase:meta, read a snapshot, or pass use_meta=False"
        ) from e
    return HBaseLayout(root, version, desc, tiled, regions_from="hbase:meta")


def list_tables(fs: fsspec.AbstractFileSystem, root: str) -> list[str]:
    """Names of the user tables of a root directory (``ns:t``, or ``t`` in default)."""
    version = _version(fs, root)
    out = []
    if version == "2":
        data = posixpath.join(root, "data")
        if fs.isdir(data):
            for nsdir in fs.ls(data, detail=False):
                ns = posixpath.basename(nsdir)
                if ns == "hbase" or not fs.isdir(nsdir):
                    continue
                for tdir in fs.ls(nsdir, detail=False):
                    if fs.isdir(posixpath.join(tdir, ".tabledesc")):
                        t = posixpath.basename(tdir)
                        out.append(t if ns == "default" else f"{ns}:{t}")
    else:
        for tdir in fs.ls(root, detail=False):
            t = posixpath.basename(tdir)
            if t in _CATALOG or t.startswith("."):
                continue
            if _latest_tableinfo(fs, [tdir]) is not None:
                out.append(t)
    return sorted(out)


# --------------------------------------------------------------------------- snapshots
def list_snapshots(fs: fsspec.AbstractFileSystem, root: str) -> list[str]:
    """Names of the completed snapshots under ``root`` (``.hbase-snapshot``, ``.snapshot``)."""
    out = set()
    for top in (".hbase-snapshot", ".snapshot"):
        d = posixpath.join(root, top)
        if fs.isdir(d):
            for p in fs.ls(d, detail=False):
                if fs.exists(posixpath.join(p, ".snapshotinfo")):
                    out.add(posixpath.basename(p))
    return sorted(out)


def load_snapshot(fs: fsspec.AbstractFileSystem, root: str, name: str) -> HBaseLayout:
    """A snapshot of a root directory or an ``ExportSnapshot`` output (layout section 8).

    v2 snapshots read ``data.manifest`` (or the ``region-manifest.*`` files with the
    schema from ``.tabledesc``); v1 snapshots read the region directories of the snapshot.
    Split parents, replicas and the MOB region are skipped; file names resolve like
    HFileLinks to the snapshot's table (table directory, then archive).

    Raises:
        SnapshotNotFoundError: no such snapshot (the message lists the snapshots).
        CorruptFileError: a manifest or info file that does not parse.
        MissingFileError: a store file is missing from every location.
        UnsupportedFormatError: MOB or encrypted data.
    """
    snap = None
    for top in (".hbase-snapshot", ".snapshot"):
        d = posixpath.join(root, top, name)
        if fs.exists(posixpath.join(d, ".snapshotinfo")):
            snap = d
            break
    if snap is None:
        raise SnapshotNotFoundError(
            f"{root}: no HBase snapshot {name!r} (looked in .hbase-snapshot/ and .snapshot/); "
            f"snapshots: {', '.join(list_snapshots(fs, root)) or 'none'}"
        )
    version = _version(fs, root)
    info_path = posixpath.join(snap, ".snapshotinfo")
    info = parse_snapshot_info(_read(fs, info_path), where=info_path)
    where = f"HBase snapshot {name} in {root}"
    manifests: list[tuple[HBaseRegionInfo, dict[str, list[StoreFileListing]]]] = []
    ref_dirs: dict[str, str] = {}
    data_manifest = posixpath.join(snap, "data.manifest")
    if info.version == 2 and fs.exists(data_manifest):
        desc, manifests = parse_data_manifest(_read(fs, data_manifest), where=data_manifest)
    else:
        tinfo = _latest_tableinfo(fs, [posixpath.join(snap, ".tabledesc"), snap])
        if tinfo is None:
            raise CorruptFileError(f"{where}: no data.manifest and no table descriptor")
        desc = parse_table_descriptor(_read(fs, tinfo), where=tinfo)
        for p in sorted(fs.ls(snap, detail=False)):
            base = posixpath.basename(p)
            if base.startswith("region-manifest."):
                manifests.append(parse_region_manifest(_read(fs, p), where=p))
            elif fs.exists(posixpath.join(p, ".regioninfo")):
                manifests.append(_v1_region(fs, p))
                ref_dirs[manifests[-1][0].encoded] = p
    _check_descriptor(desc, where)
    table = desc.name if desc.qualifier else info.table
    ns, qual = _split_name(table)
    resolver = _Resolver(fs, root, version, ns, qual, where)
    regions = []
    for region, fams in manifests:
        if region.is_split_parent or region.replica_id != 0:
            continue
        if region.start == b".mob" and region.region_id == 0:
            continue  # the MOB region (MobUtils.getMobRegionInfo)
        files = {}
        for fam in desc.families:
            listed = fams.get(fam.name, [])
            if listed and fam.is_mob:
                raise UnsupportedFormatError(f"{where}: family {fam.name} is a MOB family")
            rdir = ref_dirs.get(region.encoded)
            files[fam.name] = tuple(
                resolver.resolve(
                    region.encoded,
                    fam.name,
                    f,
                    ref_path=None if rdir is None else posixpath.join(rdir, fam.name, f.name),
                )
                for f in listed
            )
        regions.append(RegionFiles(region, files))
    return HBaseLayout(root, version, desc, _tile(regions, where), info, "manifest")


def _v1_region(
    fs: fsspec.AbstractFileSystem, rdir: str
) -> tuple[HBaseRegionInfo, dict[str, list[StoreFileListing]]]:
    """A v1 snapshot region directory: ``.regioninfo`` and one directory per family."""
    rfile = posixpath.join(rdir, ".regioninfo")
    region = parse_region_info(_read(fs, rfile), where=rfile)
    fams: dict[str, list[StoreFileListing]] = {}
    for p in sorted(fs.ls(rdir, detail=False)):
        fam = posixpath.basename(p)
        if fam.startswith(".") or not fs.isdir(p):
            continue
        fams[fam] = [
            StoreFileListing(posixpath.basename(f))
            for f in sorted(fs.ls(p, detail=False))
            if not posixpath.basename(f).startswith(".")
        ]
    return region, fams

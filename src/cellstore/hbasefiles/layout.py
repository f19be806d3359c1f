"""Finding an HBase table's regions and store files: root directories and snapshots.

Reads the directory trees of hbase-layout.md section 5 (HBase 0.94 and 2.x/3.x root
directories, exported snapshots) and resolves every store file name to the bytes to read
(section 6): plain hfiles, HFileLinks (table directory, then archive, then ``.tmp``),
References (the top or bottom half of a parent region's file) and bulk-loaded
``_SeqId_N_`` files. The result, an :class:`HBaseLayout`, lists regions in key order with
their resolved files per family; nothing here reads an HFile.

Every name that becomes part of a path (the table or snapshot asked for, and the table,
region, family and store-file names read from descriptors, manifests and tracker files)
is checked by :func:`cellstore.hbasefiles.paths.check_name`, and every read goes through
:class:`cellstore.hbasefiles.paths.RootFiles`, which refuses paths outside the root (symlinks
included).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

import fsspec

from cellstore.commit import now_ms
from cellstore.core.family import Family
from cellstore.core.regions import Region
from cellstore.errors import (
    CorruptFileError,
    InvalidNameError,
    MissingFileError,
    SnapshotNotFoundError,
    TableNotFoundError,
    UnsupportedFormatError,
)
from cellstore.hbasefiles.descriptors import (
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
from cellstore.hbasefiles.meta import read_meta_regions
from cellstore.hbasefiles.paths import (
    ARCHIVE,
    ARCHIVE_094,
    DATA,
    MOBDIR,
    TMP,
    NameKind,
    RootFiles,
    Segment,
    StoreFileName,
    check_name,
    is_name,
    listed_name,
    parse_store_file_name,
    split_table_name,
)

__all__ = [
    "HBaseLayout",
    "HFileRef",
    "RegionFiles",
    "load_file_list",
    "load_snapshot",
    "load_table",
]

_TRACK_RE: Final = re.compile(r"^f(1|2)(?:\.([0-9]+))?$")
_TRACKER_KEY: Final = "hbase.store.file-tracker.impl"
_MIGRATION_SRC_KEY: Final = "hbase.store.file-tracker.migration.src.impl"
_CATALOG: Final = frozenset({"-ROOT-", ".META.", "-META-", "hbase:meta", "hbase:namespace"})
#: Directory names of the layout itself (constants, not read from anywhere).
_HBASE_VERSION: Final = Segment("hbase.version")
_TABLEDESC: Final = Segment(".tabledesc")
_REGIONINFO: Final = Segment(".regioninfo")
_FILELIST: Final = Segment(".filelist")
_SNAPSHOTINFO: Final = Segment(".snapshotinfo")
_DATA_MANIFEST: Final = Segment("data.manifest")
_SNAPSHOT_DIRS: Final = (Segment(".hbase-snapshot"), Segment(".snapshot"))
_META_2: Final = (Segment("hbase"), Segment("meta"))
_META_094: Final = (Segment(".META."), Segment("-META-"))
_DEFAULT: Final = Segment("default")
_INFO: Final = Segment("info")

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

    @property
    def where(self) -> str:
        """How messages name the table: ``HBase table <name> in <root>``."""
        return f"HBase table {self.descriptor.name} in {self.root}"

    def core_families(self) -> tuple[Family, ...]:
        """The families' read settings as core :class:`Family` objects, in name order.

        Raises:
            CorruptFileError: a family setting that does not parse (naming the table).
        """
        return tuple(f.to_family(where=self.where) for f in self.descriptor.families)

    def core_regions(self) -> tuple[Region, ...]:
        """The regions in key order as core :class:`Region` objects (ids: encoded names)."""
        return tuple(Region(r.info.encoded, r.info.start, r.info.end) for r in self.regions)


# --------------------------------------------------------------------------- helpers
def _version(files: RootFiles) -> Version:
    """0.94 or 2.x: ``hbase.version`` says (PBUF = 0.96+); else ``archive`` vs ``.archive``."""
    root = files.root
    vfile = files.join(root, _HBASE_VERSION)
    if files.exists(vfile):
        return "2" if files.read(vfile).startswith(PBUF_MAGIC) else "0.94"
    if files.exists(files.join(root, ARCHIVE)) or not files.exists(files.join(root, ARCHIVE_094)):
        return "2"
    return "0.94"


def _table_rel(version: Version, ns: Segment, qual: Segment) -> tuple[Segment, ...]:
    return (DATA, ns, qual) if version == "2" else (qual,)


def _latest_tableinfo(files: RootFiles, dirs: Sequence[str]) -> str | None:
    """The newest ``.tableinfo.*`` in the first of ``dirs`` that has one (names sort)."""
    for d in dirs:
        if not files.isdir(d):
            continue
        names = [listed_name(p) for p in files.ls(d)]
        infos = sorted((n for n in names if n.startswith(".tableinfo")), reverse=True)
        if infos:
            return files.join(d, infos[0])
    return None


@dataclass
class _Resolver:
    """Turns store-file names of one table into :class:`HFileRef` (layout section 6)."""

    files: RootFiles
    version: Version
    ns: Segment
    qual: Segment
    where: str

    def resolve(
        self,
        region: Segment,
        family: Segment,
        listing: StoreFileListing,
        *,
        source: str,
        ref_path: str | None,
    ) -> HFileRef:
        """Resolve one listed name; ``source`` is where the name was read (for messages).

        Raises:
            CorruptFileError: not a store-file name (or a part of it breaks HBase's
                rules), a reference without content, a path outside the root.
            UnsupportedFormatError: a MOB file.
            MissingFileError: in none of the places HBase looks.
        """
        name = listing.name
        what = f"{self.where}, region {region}, family {family}: store file {name}"
        parsed = parse_store_file_name(name, source=f"{source} (region {region}, family {family})")
        if parsed.kind == "mob":
            raise UnsupportedFormatError(f"{what} is a MOB file; MOB data is not supported")
        if parsed.kind != "reference":
            return self._find(name, self._locations(parsed, region, family), None, what)
        info = listing.reference
        if info is None:
            if ref_path is None:
                raise CorruptFileError(f"{what}: reference without its content")
            info = parse_reference(self.files.read(ref_path), where=ref_path)
        assert parsed.parent is not None
        return self._find(name, self._locations(parsed, parsed.parent, family), info, what)

    def _locations(self, name: StoreFileName, region: Segment, family: Segment) -> list[str]:
        """Where HBase looks for a (linked) file, in order (``HFileLink`` locations).

        A link names its own table and region; a plain name or a reference's target is
        in this table, in ``region`` (the store's, or the reference's parent).
        """
        rel = (
            *_table_rel(self.version, name.namespace or self.ns, name.qualifier or self.qual),
            name.region or region,
            family,
            name.hfile,
        )
        tops = [ARCHIVE, TMP, MOBDIR] if self.version == "2" else [ARCHIVE_094, TMP]
        root = self.files.root
        return [self.files.join(root, *rel)] + [self.files.join(root, t, *rel) for t in tops]

    def _find(self, name: str, tried: list[str], ref: ReferenceInfo | None, what: str) -> HFileRef:
        for path in tried:
            try:
                size = self.files.size(path, source=what)
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


def load_file_list(files: RootFiles, family_dir: str) -> tuple[list[StoreFileListing], str] | None:
    """The live files of a store per its ``.filelist`` (FILE tracker), or None if it has none.

    Tracker files are ``f1.<seq>`` and ``f2.<seq>``; the highest ``<seq>`` with a
    complete file wins, and of its two files the one with the larger
    ``StoreFileList.timestamp`` (``StoreFileListFile#load``). Files cut short are skipped.

    Returns:
        The files listed, and the tracker file they were read from.

    Raises:
        CorruptFileError: a damaged tracker file, more than two for one ``<seq>``, or no
            complete tracker file at all.
    """
    tdir = files.join(family_dir, _FILELIST)
    if not files.isdir(tdir):
        return None
    groups: dict[int, list[str]] = {}
    for path in files.ls(tdir):
        name = listed_name(path)
        m = _TRACK_RE.match(name)
        if m:
            groups.setdefault(int(m.group(2) or -1), []).append(files.join(tdir, name))
    for seq in sorted(groups, reverse=True):
        paths = sorted(groups[seq])
        if len(paths) > 2:
            raise CorruptFileError(
                f"{tdir}: {len(paths)} store file lists for sequence {seq} (at most 2): "
                f"{', '.join(paths)}"
            )
        lists = [parse_store_file_list(files.read(p), where=p) for p in paths]
        done = [(lst.timestamp, -i, lst) for i, lst in enumerate(lists) if lst is not None]
        if done:
            _, minus_i, best = max(done, key=lambda d: (d[0], d[1]))
            return list(best.files), paths[-minus_i]
    raise CorruptFileError(f"{tdir}: no complete store file list (f1.*/f2.*) in the directory")


def _store_files(
    files: RootFiles, fdir: str, *, tracker: str, where: str
) -> list[tuple[StoreFileListing, str, str]]:
    """A store's files: the ``.filelist`` if any, else the listing.

    Returns:
        ``(listing, path, source)`` per file: the path a reference's content is read
        from, and the file or directory that named it.

    Raises:
        MissingFileError: the family uses the FILE tracker but has no ``.filelist``.
        CorruptFileError: a ``.filelist`` entry that is not a store-file name.
    """
    if not files.isdir(fdir):
        return []
    tracked = load_file_list(files, fdir)
    if tracked is not None:
        listed, source = tracked
        return [
            (f, files.join(fdir, check_name("store file", f.name, source=source)), source)
            for f in listed
        ]
    if tracker == "FILE":
        raise MissingFileError(
            f"{where}: {fdir} has no .filelist, but the table descriptor sets "
            f"{_TRACKER_KEY}=FILE (the live store files are only listed there)"
        )
    found = []
    for d in sorted(files.ls(fdir, detail=True), key=lambda d: str(d["name"])):
        name = listed_name(str(d["name"]))
        if d["type"] == "directory" or name.startswith("."):
            continue
        if not d["size"] and not _is_link(name):
            continue  # not a valid store file (StoreFileInfo.isValid)
        found.append((StoreFileListing(name), files.join(fdir, name), fdir))
    return found


def _is_link(name: str) -> bool:
    return is_name("store file", name) and parse_store_file_name(name, source="").kind == "link"


def _meta_online(
    files: RootFiles, version: Version, table: str, where: str
) -> list[HBaseRegionInfo] | None:
    """The online regions of ``table`` per the catalog's HFiles; None if it lists none.

    The catalog is ``data/hbase/meta`` (0.96+) or ``.META.`` (``-META-`` before 0.92
    final) in a 0.94 root; its rows are read by :func:`read_meta_regions`.
    """
    root = files.root
    if version == "2":
        ns, qual = _META_2
    else:
        ns = _DEFAULT
        qual = next((q for q in _META_094 if files.isdir(files.join(root, q))), _META_094[0])
    mdir = files.join(root, *_table_rel(version, ns, qual))
    if not files.isdir(mdir):
        return None
    resolver = _Resolver(files, version, ns, qual, f"{table} in the catalog of {root}")
    paths: list[str] = []
    for rdir in sorted(files.ls(mdir)):
        name = listed_name(rdir)
        if not is_name("region", name):
            continue  # not a region directory (FSUtils.RegionDirFilter)
        region = check_name("region", name, source=mdir)
        fdir = files.join(mdir, region, _INFO)
        for listing, path, source in _store_files(files, fdir, tracker="DEFAULT", where=where):
            ref = resolver.resolve(region, _INFO, listing, source=source, ref_path=path)
            paths.append(ref.path)
    regions = read_meta_regions(files.fs, paths, table, now_ms=now_ms())
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


def _check_descriptor(desc: TableDescriptor, where: str, *, source: str) -> dict[str, Segment]:
    """Refuse encrypted families; the family names, checked (``source``: the descriptor).

    Raises:
        CorruptFileError: a family name that breaks HBase's rules (names ``source``).
        UnsupportedFormatError: an encrypted family.
    """
    names = {}
    for fam in desc.families:
        names[fam.name] = check_name("family", fam.name, source=source)
        if fam.is_encrypted:
            raise UnsupportedFormatError(
                f"{where}: family {fam.name} is encrypted (ENCRYPTION="
                f"{fam.attributes['ENCRYPTION']}); encrypted HFiles are not supported"
            )
    return names


# --------------------------------------------------------------------------- tables
def load_table(
    fs: fsspec.AbstractFileSystem,
    root: str,
    table: str,
    *,
    use_meta: bool = True,
    follow_symlinks: bool = False,
) -> HBaseLayout:
    """A table of a root directory (0.94 or 2.x/3.x; a copy of one is fine).

    Regions are those ``hbase:meta`` lists as online (its flushed HFiles under
    ``data/hbase/meta``, or ``.META.`` in 0.94; split and merged parents, daughters still
    being made and replicas skipped) when it lists the table and ``use_meta``; otherwise the
    region directories with a ``.regioninfo``, split parents (whose range a newer region
    covers) dropped. A store's files are those its ``.filelist`` names (FILE tracker),
    else those in its directory. Data in WALs or memstores is not visible (flush first,
    or read a snapshot).

    Every name that becomes a path is checked by HBase's naming rules, and nothing
    outside ``root`` is read: a symlink leading out of it is refused unless
    ``follow_symlinks`` (:mod:`cellstore.hbasefiles.paths`).

    Raises:
        InvalidNameError: ``table`` is not a valid HBase table name.
        TableNotFoundError: no such table under ``root`` (the message lists the tables).
        UnsupportedFormatError: a catalog table, MOB or encrypted data.
        MissingFileError: a store file is missing from every location HBase looks in, a
            region hbase:meta lists has no directory, or a FILE-tracked store has no
            ``.filelist``.
        CorruptFileError: a descriptor, region info or file list does not parse, regions
            do not tile, a name read from a file breaks HBase's rules, or a path leads
            outside the root.
    """
    files = RootFiles(fs, root, follow_symlinks=follow_symlinks)
    root = files.root
    version = _version(files)
    if table in _CATALOG or (version == "0.94" and table.rpartition(":")[2] in _CATALOG):
        raise UnsupportedFormatError(f"{root}: catalog table {table} cannot be read")
    ns, qual = split_table_name(
        table, source=f"HBase table argument for {root}", error=InvalidNameError
    )
    if version == "0.94" and ns != "default":
        # 0.94 has no namespaces; 0.96 maps "a.b" to a:b only on upgrade
        qual = check_name("table", f"{ns}.{qual}", source=f"HBase table {table}")
        ns = _DEFAULT
    tdir = files.join(root, *_table_rel(version, ns, qual))
    where = f"HBase table {table} in {root}"
    info = _latest_tableinfo(files, [files.join(tdir, _TABLEDESC), tdir])
    if info is None:
        raise TableNotFoundError(
            f"{root}: no HBase table {table!r} (no {tdir}/.tabledesc); tables: "
            f"{', '.join(list_tables(files)) or 'none'}"
        )
    desc = parse_table_descriptor(files.read(info), where=info)
    families = _check_descriptor(desc, where, source=info)
    infos: dict[Segment, HBaseRegionInfo] = {}
    online = _meta_online(files, version, desc.name, where) if use_meta else None
    if online is not None:
        for r in online:
            enc = check_name("region", r.encoded, source=f"hbase:meta of {root}")
            rdir = files.join(tdir, enc)
            if not files.isdir(rdir):
                raise MissingFileError(
                    f"{where}: hbase:meta (as flushed to its HFiles) lists region {r.encoded} "
                    f"[{r.start!r}, {r.end!r}) but {rdir} does not exist; flush hbase:meta, "
                    "read a snapshot, or pass use_meta=False"
                )
            infos[enc] = r
        kept = list(infos.values())
    else:
        for entry in files.ls(tdir):
            name = listed_name(entry)
            if not is_name("region", name):
                continue  # not a region directory (FSUtils.RegionDirFilter)
            enc = check_name("region", name, source=tdir)
            rfile = files.join(tdir, enc, _REGIONINFO)
            if not files.exists(rfile):
                continue
            infos[enc] = parse_region_info(files.read(rfile), where=rfile)
        kept = _newest_cover([r for r in infos.values() if r.replica_id == 0])
    resolver = _Resolver(files, version, ns, qual, where)
    regions = []
    by_info = {id(r): d for d, r in infos.items()}
    for r in kept:
        enc = by_info[id(r)]
        rdir = files.join(tdir, enc)
        found = {}
        for fam in desc.families:
            fname = families[fam.name]
            listed = _store_files(
                files,
                files.join(rdir, fname),
                tracker=_tracker(desc, fam),
                where=f"{where}, region {enc}, family {fam.name}",
            )
            if listed and fam.is_mob:
                raise UnsupportedFormatError(f"{where}: family {fam.name} is a MOB family")
            found[fam.name] = tuple(
                resolver.resolve(enc, fname, listing, source=source, ref_path=path)
                for listing, path, source in listed
            )
        regions.append(RegionFiles(r, found))
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


def list_tables(files: RootFiles) -> list[str]:
    """Names of the user tables of a root directory (``ns:t``, or ``t`` in default).

    Directories that are not valid names, or lead outside the root, are left out.
    """
    root = files.root
    out = []
    if _version(files) == "2":
        data = files.join(root, DATA)
        if files.isdir(data):
            for ns, nsdir in _named_dirs(files, data, "namespace"):
                if ns == "hbase" or files.outside(nsdir) is not None or not files.isdir(nsdir):
                    continue
                for t, tdir in _named_dirs(files, nsdir, "table"):
                    desc = files.join(tdir, _TABLEDESC)
                    if files.outside(desc) is None and files.isdir(desc):
                        out.append(t if ns == "default" else f"{ns}:{t}")
    else:
        for t, path in _named_dirs(files, root, "table"):
            if t in _CATALOG:
                continue
            if files.outside(path) is None and _latest_tableinfo(files, [path]) is not None:
                out.append(t)
    return sorted(out)


def _named_dirs(files: RootFiles, parent: str, kind: NameKind) -> Iterator[tuple[str, str]]:
    """``(name, path)`` of the entries of ``parent`` named as a valid ``kind`` name.

    Whether the path leads outside the root is left to the caller (with what it reads).
    """
    for entry in files.ls(parent):
        name = listed_name(entry)
        if is_name(kind, name):
            yield name, files.join(parent, check_name(kind, name, source=parent))


# --------------------------------------------------------------------------- snapshots
def list_snapshots(files: RootFiles) -> list[str]:
    """Names of the completed snapshots under the root (``.hbase-snapshot``, ``.snapshot``).

    Directories that are not valid names, or lead outside the root, are left out.
    """
    out = set()
    for top in _SNAPSHOT_DIRS:
        d = files.join(files.root, top)
        if files.isdir(d):
            for name, sdir in _named_dirs(files, d, "snapshot"):
                info = files.join(sdir, _SNAPSHOTINFO)
                if files.outside(info) is None and files.exists(info):
                    out.add(name)
    return sorted(out)


def load_snapshot(
    fs: fsspec.AbstractFileSystem, root: str, name: str, *, follow_symlinks: bool = False
) -> HBaseLayout:
    """A snapshot of a root directory or an ``ExportSnapshot`` output (layout section 8).

    v2 snapshots read ``data.manifest`` (or the ``region-manifest.*`` files with the
    schema from ``.tabledesc``); v1 snapshots read the region directories of the snapshot.
    Split parents, replicas and the MOB region are skipped; file names resolve like
    HFileLinks to the snapshot's table (table directory, then archive).

    Every name that becomes a path is checked by HBase's naming rules, and nothing
    outside ``root`` is read: a symlink leading out of it is refused unless
    ``follow_symlinks`` (:mod:`cellstore.hbasefiles.paths`).

    Raises:
        InvalidNameError: ``name`` is not a valid HBase snapshot name.
        SnapshotNotFoundError: no such snapshot (the message lists the snapshots).
        CorruptFileError: a manifest or info file that does not parse, a name in one that
            breaks HBase's rules, or a path that leads outside the root.
        MissingFileError: a store file is missing from every location.
        UnsupportedFormatError: MOB or encrypted data.
    """
    files = RootFiles(fs, root, follow_symlinks=follow_symlinks)
    root = files.root
    seg = check_name(
        "snapshot", name, source=f"HBase snapshot argument for {root}", error=InvalidNameError
    )
    snap = None
    for top in _SNAPSHOT_DIRS:
        d = files.join(root, top, seg)
        if files.exists(files.join(d, _SNAPSHOTINFO)):
            snap = d
            break
    if snap is None:
        raise SnapshotNotFoundError(
            f"{root}: no HBase snapshot {name!r} (looked in .hbase-snapshot/ and .snapshot/); "
            f"snapshots: {', '.join(list_snapshots(files)) or 'none'}"
        )
    version = _version(files)
    info_path = files.join(snap, _SNAPSHOTINFO)
    info = parse_snapshot_info(files.read(info_path), where=info_path)
    where = f"HBase snapshot {name} in {root}"
    manifests: list[tuple[HBaseRegionInfo, dict[str, list[StoreFileListing]], str]] = []
    ref_dirs: dict[str, str] = {}
    data_manifest = files.join(snap, _DATA_MANIFEST)
    if info.version == 2 and files.exists(data_manifest):
        desc, regions_read = parse_data_manifest(files.read(data_manifest), where=data_manifest)
        manifests = [(r, fams, data_manifest) for r, fams in regions_read]
        desc_source = data_manifest
    else:
        tinfo = _latest_tableinfo(files, [files.join(snap, _TABLEDESC), snap])
        if tinfo is None:
            raise CorruptFileError(f"{where}: no data.manifest and no table descriptor")
        desc = parse_table_descriptor(files.read(tinfo), where=tinfo)
        desc_source = tinfo
        for p in sorted(files.ls(snap)):
            base = listed_name(p)
            path = files.join(snap, base)
            if base.startswith("region-manifest."):
                region, fams = parse_region_manifest(files.read(path), where=path)
                manifests.append((region, fams, path))
            elif is_name("region", base) and files.exists(files.join(path, _REGIONINFO)):
                region, fams = _v1_region(files, path)
                manifests.append((region, fams, path))
                ref_dirs[region.encoded] = path
    families = _check_descriptor(desc, where, source=desc_source)
    if desc.qualifier:
        ns = check_name("namespace", desc.namespace, source=desc_source)
        qual = check_name("table", desc.qualifier, source=desc_source)
    else:
        ns, qual = split_table_name(info.table, source=info_path)
    resolver = _Resolver(files, version, ns, qual, where)
    regions = []
    for region, fams, source in manifests:
        if region.is_split_parent or region.replica_id != 0:
            continue
        if region.start == b".mob" and region.region_id == 0:
            continue  # the MOB region (MobUtils.getMobRegionInfo)
        enc = check_name("region", region.encoded, source=source)
        found = {}
        for fam in desc.families:
            fname = families[fam.name]
            listed = fams.get(fam.name, [])
            if listed and fam.is_mob:
                raise UnsupportedFormatError(f"{where}: family {fam.name} is a MOB family")
            rdir = ref_dirs.get(region.encoded)
            found[fam.name] = tuple(
                resolver.resolve(
                    enc,
                    fname,
                    f,
                    source=source,
                    ref_path=None
                    if rdir is None
                    else files.join(rdir, fname, check_name("store file", f.name, source=source)),
                )
                for f in listed
            )
        regions.append(RegionFiles(region, found))
    return HBaseLayout(root, version, desc, _tile(regions, where), info, "manifest")


def _v1_region(
    files: RootFiles, rdir: str
) -> tuple[HBaseRegionInfo, dict[str, list[StoreFileListing]]]:
    """A v1 snapshot region directory: ``.regioninfo`` and one directory per family."""
    rfile = files.join(rdir, _REGIONINFO)
    region = parse_region_info(files.read(rfile), where=rfile)
    fams: dict[str, list[StoreFileListing]] = {}
    for p in sorted(files.ls(rdir)):
        fam = listed_name(p)
        if not is_name("family", fam):
            continue  # not a family directory (FSUtils.FamilyDirFilter)
        fdir = files.join(rdir, check_name("family", fam, source=rdir))
        if not files.isdir(fdir):
            continue
        fams[fam] = [
            StoreFileListing(n)
            for n in sorted(listed_name(f) for f in files.ls(fdir))
            if not n.startswith(".")
        ]
    return region, fams

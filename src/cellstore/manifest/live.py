"""The live file set of a format-version-2 table version, read lazily from its manifests.

:class:`LiveFiles` is what ``TableMetadata.files`` holds for a version-2 table: a sequence
of :class:`~cellstore.core.metadata.FileEntry` that reads all manifests the first time it
is iterated, and answers :meth:`LiveFiles.for_regions` by reading only the manifests and row
groups that can hold those regions. A commit in progress stages its change as a *delta*
(entries added, entries removed) on top of the base version's manifests without reading
them (:meth:`LiveFiles.with_delta`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, overload

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.metadata import FileEntry, ManifestRef
from cellstore.errors import CorruptFileError
from cellstore.manifest.files import apply_last_wins, entries_of, read_manifests

__all__ = ["REGION_CACHE_ENTRIES", "LiveFiles", "check_live_regions", "entry_key"]

#: Most entries a version's live set keeps of the regions it read one by one (a point
#: get reads its region's entries from the manifests once, not on every get).
REGION_CACHE_ENTRIES: Final = 100_000


def entry_key(entry: FileEntry) -> tuple[str, str, str]:
    """Identity of a live entry: (path, region, family)."""
    return (entry.path, entry.region, entry.family)


class RegionMap:
    """A version's regions (id -> start key), with the Arrow arrays the check compares to."""

    def __init__(self, regions: Mapping[str, bytes]) -> None:
        self.starts = dict(regions)
        self.ids = pa.array(list(self.starts), pa.string())
        self.start_keys = pa.array(list(self.starts.values()), pa.binary())


def check_live_regions(live: pa.Table, regions: RegionMap | None, *, where: str) -> None:
    """Raise unless every live manifest row is of one of the version's regions, by its start.

    A live entry of a region the version does not have (or whose recorded region start is
    not that region's) would never be read by any scan: its cells would silently vanish
    (docs/format.md 13.2: every entry's rows lie inside its region). Vectorized.

    Args:
        live: Live manifest rows (:func:`apply_last_wins`), with ``region`` and
            ``region-start``.
        regions: The version's regions; None skips the check.
        where: Names the table version in the message.

    Raises:
        CorruptFileError: naming the first such file, its region and what is wrong.
    """
    if regions is None or live.num_rows == 0:
        return
    at = pc.index_in(live.column("region"), value_set=regions.ids)
    same = pc.equal(pc.take(regions.start_keys, at), live.column("region-start"))
    ok = pc.fill_null(same, False)
    if pc.all(ok).as_py():
        return
    row = live.slice(int(pc.index(ok, False).as_py()), 1).to_pylist()[0]
    rid, start = row["region"], row["region-start"]
    known = regions.starts.get(rid)
    why = (
        "which this version does not have"
        if known is None
        else f"recorded as starting at {start!r}, but the region starts at {known!r}"
    )
    raise CorruptFileError(
        f"{where}: live store file {row['path']!r} is listed under region {rid!r}, {why}; "
        "its cells could never be read (cellstore verify reports it)"
    )


class _Base:
    """The materialized live set of one manifest list, shared by the deltas built on it."""

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        refs: tuple[ManifestRef, ...],
        regions: Mapping[str, bytes] | None = None,
        where: str = "",
    ) -> None:
        self.fs = fs
        self.table_path = table_path
        self.refs = refs
        #: The version's regions (id -> start) every live entry must belong to; None: no check.
        self.region_starts = regions
        self.region_map = None if regions is None else RegionMap(regions)
        self.where = where or table_path
        self.entries: tuple[FileEntry, ...] | None = None
        self.by_region: dict[str, list[FileEntry]] | None = None
        # regions read from the manifests without materializing the whole set (gets and
        # small scans of one version): kept, most recently used last, up to
        # REGION_CACHE_ENTRIES entries in all
        self.regions: OrderedDict[str, list[FileEntry]] = OrderedDict()
        self.regions_size = 0
        self.lock = threading.Lock()

    def load(self) -> tuple[FileEntry, ...]:
        with self.lock:
            if self.entries is None:
                tables = read_manifests(self.fs, self.table_path, self.refs)
                live = apply_last_wins(tables)
                check_live_regions(live, self.region_map, where=self.where)
                self.entries = tuple(entries_of(live))
                self.regions.clear()  # the whole set answers every region from now on
                self.regions_size = 0
            return self.entries

    def region_index(self) -> dict[str, list[FileEntry]]:
        entries = self.load()
        with self.lock:
            if self.by_region is None:
                index: dict[str, list[FileEntry]] = {}
                for e in entries:
                    index.setdefault(e.region, []).append(e)
                self.by_region = index
            return self.by_region

    def for_regions(self, regions: Sequence[tuple[str, bytes]]) -> list[FileEntry]:
        if self.entries is not None:
            index = self.region_index()
            return [e for rid, _ in regions for e in index.get(rid, ())]
        wanted = dict(regions)  # region id -> start, first occurrence order
        with self.lock:
            found = {rid: self.regions[rid] for rid in wanted if rid in self.regions}
            for rid in found:
                self.regions.move_to_end(rid)
        missing = [(rid, start) for rid, start in wanted.items() if rid not in found]
        if missing:
            starts = sorted({start for _, start in missing})
            refs = [ref for ref in self.refs if any(ref.may_hold(s) for s in starts)]
            ids = [rid for rid, _ in missing]
            tables = read_manifests(
                self.fs, self.table_path, refs, region_starts=starts, region_ids=ids
            )
            live = apply_last_wins(tables)
            # Rows of other (or no) regions at a wanted region's start came along: a live
            # one is damage, not noise (its cells would never be read).
            check_live_regions(live, self.region_map, where=self.where)
            live = live.filter(pc.is_in(live.column("region"), pa.array(ids, pa.string())))
            read: dict[str, list[FileEntry]] = {rid: [] for rid, _ in missing}
            for e in entries_of(live):
                read[e.region].append(e)
            found.update(read)
            with self.lock:
                for rid, entries in read.items():
                    if rid not in self.regions:
                        self.regions[rid] = entries
                        self.regions_size += len(entries) + 1
                while self.regions_size > REGION_CACHE_ENTRIES and len(self.regions) > 1:
                    _, dropped = self.regions.popitem(last=False)
                    self.regions_size -= len(dropped) + 1
        return [e for rid in wanted for e in found[rid]]


class LiveFiles(Sequence[FileEntry]):
    """Live entries of a version-2 table version: manifests plus an optional staged delta.

    Args:
        fs: The table's filesystem.
        table_path: The table directory.
        refs: The version's manifests, oldest first.
        adds: Staged entries joining the set (replacing an entry of the same key).
        removes: Staged entries leaving it.
        regions: The version's regions (id -> start key): every live entry read from the
            manifests must be of one of them (:func:`check_live_regions`), else reading
            raises CorruptFileError. None (sets built for totals and expiry) skips it.
        where: Names the table version in those errors.
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        refs: Iterable[ManifestRef],
        *,
        adds: Iterable[FileEntry] = (),
        removes: Iterable[FileEntry] = (),
        regions: Mapping[str, bytes] | None = None,
        where: str = "",
        _base: _Base | None = None,
    ) -> None:
        refs = tuple(refs)
        self._base = _base if _base is not None else _Base(fs, table_path, refs, regions, where)
        self.adds: tuple[FileEntry, ...] = tuple(adds)
        self.removes: tuple[FileEntry, ...] = tuple(removes)
        self._all: tuple[FileEntry, ...] | None = None

    # ------------------------------------------------------------------ identity
    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The filesystem."""
        return self._base.fs

    @property
    def table_path(self) -> str:
        """The table directory."""
        return self._base.table_path

    @property
    def refs(self) -> tuple[ManifestRef, ...]:
        """The manifests under the delta, oldest first."""
        return self._base.refs

    @property
    def has_delta(self) -> bool:
        """Whether a change is staged on top of the manifests."""
        return bool(self.adds or self.removes)

    @property
    def loaded(self) -> bool:
        """Whether the manifests' live set has been read already."""
        return self._base.entries is not None

    def with_delta(self, adds: Iterable[FileEntry], removes: Iterable[FileEntry]) -> LiveFiles:
        """This set with ``removes`` leaving and then ``adds`` joining (nothing is read).

        ``removes`` must be live in this set (the caller checked them).
        """
        adds = tuple(adds)
        removes = tuple(removes)
        mine, out_removes = self.adds, self.removes + removes
        if self.adds:  # a change on top of a staged change
            gone = {entry_key(e) for e in removes} | {entry_key(e) for e in adds}
            mine = tuple(a for a in self.adds if entry_key(a) not in gone)
            staged = {entry_key(a) for a in self.adds}
            out_removes = self.removes + tuple(r for r in removes if entry_key(r) not in staged)
        return LiveFiles(
            self.fs,
            self.table_path,
            self.refs,
            adds=mine + adds,
            removes=out_removes,
            _base=self._base,
        )

    # ------------------------------------------------------------------ reading
    def _apply(self, entries: Iterable[FileEntry]) -> list[FileEntry]:
        if not self.has_delta:
            return list(entries)
        gone = {entry_key(e) for e in self.removes} | {entry_key(e) for e in self.adds}
        return [e for e in entries if entry_key(e) not in gone]

    def _materialize(self) -> tuple[FileEntry, ...]:
        if self._all is None:
            base = self._base.load()
            self._all = base if not self.has_delta else (*self._apply(base), *self.adds)
        return self._all

    def for_regions(self, regions: Sequence[tuple[str, bytes]]) -> tuple[FileEntry, ...]:
        """Live entries of the regions ``(id, start key)``: reads only what can match."""
        ids = {rid for rid, _ in regions}
        base = self._apply(self._base.for_regions(regions))
        return (*base, *(a for a in self.adds if a.region in ids))

    def __len__(self) -> int:
        return len(self._materialize())

    @overload
    def __getitem__(self, index: int) -> FileEntry: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[FileEntry]: ...

    def __getitem__(self, index: int | slice) -> FileEntry | Sequence[FileEntry]:
        return self._materialize()[index]

    def __iter__(self) -> Iterator[FileEntry]:
        return iter(self._materialize())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LiveFiles) and other._base is self._base:
            return other.adds == self.adds and other.removes == self.removes
        if isinstance(other, Sequence):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[FileEntry]) -> tuple[FileEntry, ...]:
        return (*self, *other)

    def __radd__(self, other: Sequence[FileEntry]) -> tuple[FileEntry, ...]:
        return (*other, *self)

    def __repr__(self) -> str:
        state = f"{len(self._base.entries)} loaded" if self._base.entries is not None else "lazy"
        return (
            f"LiveFiles({len(self.refs)} manifests, {state}, +{len(self.adds)} "
            f"-{len(self.removes)})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles its references, not the (possibly large) entries read from them.
        base = self._base
        return (
            _rebuild,
            (
                self.fs,
                self.table_path,
                self.refs,
                self.adds,
                self.removes,
                base.region_starts,
                base.where,
            ),
        )


def _rebuild(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    refs: tuple[ManifestRef, ...],
    adds: tuple[FileEntry, ...],
    removes: tuple[FileEntry, ...],
    regions: Mapping[str, bytes] | None = None,
    where: str = "",
) -> LiveFiles:
    return LiveFiles(fs, table_path, refs, adds=adds, removes=removes, regions=regions, where=where)

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
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, overload

import fsspec

from cellstore.core.metadata import FileEntry, ManifestRef
from cellstore.manifest.files import apply_last_wins, entries_of, read_manifests

__all__ = ["REGION_CACHE_ENTRIES", "LiveFiles", "entry_key"]

#: Most entries a version's live set keeps of the regions it read one by one (a point
#: get reads its region's entries from the manifests once, not on every get).
REGION_CACHE_ENTRIES: Final = 100_000


def entry_key(entry: FileEntry) -> tuple[str, str, str]:
    """Identity of a live entry: (path, region, family)."""
    return (entry.path, entry.region, entry.family)


class _Base:
    """The materialized live set of one manifest list, shared by the deltas built on it."""

    def __init__(
        self, fs: fsspec.AbstractFileSystem, table_path: str, refs: tuple[ManifestRef, ...]
    ) -> None:
        self.fs = fs
        self.table_path = table_path
        self.refs = refs
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
                self.entries = tuple(entries_of(apply_last_wins(tables)))
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
            tables = read_manifests(
                self.fs,
                self.table_path,
                refs,
                region_starts=starts,
                region_ids=[rid for rid, _ in missing],
            )
            read: dict[str, list[FileEntry]] = {rid: [] for rid, _ in missing}
            for e in entries_of(apply_last_wins(tables)):
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
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        refs: Iterable[ManifestRef],
        *,
        adds: Iterable[FileEntry] = (),
        removes: Iterable[FileEntry] = (),
        _base: _Base | None = None,
    ) -> None:
        refs = tuple(refs)
        self._base = _base if _base is not None else _Base(fs, table_path, refs)
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
        return (
            _rebuild,
            (self.fs, self.table_path, self.refs, self.adds, self.removes),
        )


def _rebuild(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    refs: tuple[ManifestRef, ...],
    adds: tuple[FileEntry, ...],
    removes: tuple[FileEntry, ...],
) -> LiveFiles:
    return LiveFiles(fs, table_path, refs, adds=adds, removes=removes)

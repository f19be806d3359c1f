"""The catalog: table names to table directories, and the table administration mechanics.

A catalog root on any fsspec filesystem holds a numbered version log of table names and
locations (``<root>/_catalog/v....json``) and one directory per table with its own
metadata log. :class:`Catalog` creates, opens, alters and drops tables there and hands
out :class:`~cellstore.handle.TableHandle` objects (of the class it was given: the facade's
:class:`~cellstore.warehouse.Warehouse` is a ``Catalog`` of
:class:`~cellstore.warehouse.Table`). Jobs that create or open other tables (clones,
copies, index tables) use it through ``TableHandle.catalog``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar

import fsspec

from cellstore.commit import Commit, Staged, commit, now_ms
from cellstore.core.family import Family
from cellstore.core.metadata import (
    DEFAULT_FORMAT_VERSION,
    FileTotals,
    HistoryEntry,
    TableMetadata,
    sorted_families,
)
from cellstore.core.names import TableName
from cellstore.core.regions import (
    regions_from_splits,
    salt_split_keys,
)
from cellstore.core.rowkey import RowKeySpec
from cellstore.core.text import did_you_mean
from cellstore.errors import (
    CorruptFileError,
    FormatVersionError,
    InvalidArgumentError,
    InvalidFamilyError,
    TableExistsError,
    TableNotFoundError,
)
from cellstore.fs import ensure_exclusive_create, join, resolve_filesystem
from cellstore.handle.hooks import LoadHook
from cellstore.handle.table import TableHandle
from cellstore.manifest import TableLog, VersionLog
from cellstore.storefiles.layout import is_clone_link, table_dir

__all__ = ["CATALOG_FORMAT_VERSION", "Catalog"]

#: The handle class a catalog hands out.
H = TypeVar("H", bound=TableHandle, covariant=True)

CATALOG_FORMAT_VERSION: Final = 1


def _as_row_key_spec(spec: RowKeySpec | Mapping[str, Any] | None) -> RowKeySpec | None:
    if spec is None or isinstance(spec, RowKeySpec):
        return spec
    if isinstance(spec, Mapping):
        doc = dict(spec)
        if "salt_buckets" in doc:
            doc["salt-buckets"] = doc.pop("salt_buckets")
        return RowKeySpec.from_dict(doc)
    raise InvalidArgumentError(f"row_key must be a RowKeySpec or a dict, not {spec!r}")


def _as_family(spec: Family | str | Mapping[str, Any]) -> Family:
    if isinstance(spec, Family):
        return spec
    if isinstance(spec, str):
        return Family(name=spec)
    if isinstance(spec, Mapping):
        return Family(**dict(spec))
    raise InvalidFamilyError(f"a family is a Family, a name or a dict of settings, not {spec!r}")


class Catalog(Generic[H]):
    """A catalog root: the tables and their directories, handing out handles of one class.

    Args:
        fs: The filesystem.
        root: The root path on ``fs``.
        handle_type: The class of the handles :meth:`table` and friends return (its
            constructor is :class:`~cellstore.handle.TableHandle`'s).
        url: How the root was named (for messages); default ``root``.
        storage_options: fsspec options the filesystem was built with.
        load_hooks: What runs before every load commit into one of its tables
            (:mod:`cellstore.handle.hooks`).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        root: str,
        *,
        handle_type: type[H],
        url: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        load_hooks: Sequence[LoadHook] = (),
    ) -> None:
        self.fs = fs
        self.root = root
        self.url = url or root
        self.storage_options = dict(storage_options or {})
        self.handle_type = handle_type
        self.load_hooks = tuple(load_hooks)
        self._catalog = VersionLog(fs, join(root, "_catalog"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def at(
        self, root: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
    ) -> Catalog[H]:
        """A catalog of the same kind (handle class, hooks) at another root."""
        fs, path = resolve_filesystem(root, storage_options=storage_options)
        return Catalog(
            fs,
            path,
            handle_type=self.handle_type,
            url=os.fspath(root),
            storage_options=storage_options,
            load_hooks=self.load_hooks,
        )

    def _handle(
        self, name: TableName, location: str, meta: TableMetadata, *, pinned: bool = False
    ) -> H:
        return self.handle_type(self, name, location, meta, pinned=pinned)

    # --------------------------------------------------------------- catalog
    def _read_catalog(self, version: int) -> dict[str, Any]:
        path = self._catalog.version_path(version)
        try:
            doc = json.loads(self._catalog.read_bytes(version))
        except json.JSONDecodeError as e:
            raise CorruptFileError(f"{path}: not valid JSON ({e})") from e
        fv = doc.get("format-version")
        if fv != CATALOG_FORMAT_VERSION:
            raise FormatVersionError(f"{path}: catalog format version {fv!r} is not supported")
        tables: dict[str, Any] = doc["tables"]
        return tables

    def _tables(self) -> dict[str, Any]:
        v = self._catalog.latest_version()
        return self._read_catalog(v) if v else {}

    def _commit_catalog(self, change: Any) -> None:
        ensure_exclusive_create(self.fs, self.root)

        def update(doc: dict[str, Any] | None, version: int) -> tuple[bytes, dict[str, Any]]:
            tables = change(dict(doc or {}))
            data = {"format-version": CATALOG_FORMAT_VERSION, "version": version, "tables": tables}
            return json.dumps(data, indent=1, sort_keys=True).encode("utf-8"), tables

        self._catalog.commit(self._read_catalog, update)

    def _entry(self, name: TableName) -> Mapping[str, Any]:
        tables = self._tables()
        entry = tables.get(name.full)
        if entry is None:
            known = [str(TableName.parse(full)) for full in tables]
            hint = did_you_mean(str(name), known)
            raise TableNotFoundError(f"table {name} does not exist in {self.url}{hint}")
        result: Mapping[str, Any] = entry
        return result

    # ------------------------------------------------------------------- API
    def list_tables(self) -> list[str]:
        """Names of all tables (``ns:name``, or just ``name`` in the default namespace)."""
        return sorted(str(TableName.parse(full)) for full in self._tables())

    def started(self) -> bool:
        """Whether a catalog exists at the root: a table was created there at least once.

        A root without one holds no warehouse (``connect`` writes nothing until the first
        table is created), as when the root is misspelt.
        """
        return self._catalog.latest_version() > 0

    def exists(self, name: str) -> bool:
        """Whether a table called ``name`` exists."""
        return TableName.parse(name).full in self._tables()

    def create_table(
        self,
        name: str,
        *,
        families: Sequence[Family | str | Mapping[str, Any]],
        splits: Sequence[bytes | str] | None = None,
        salt_buckets: int | None = None,
        properties: Mapping[str, str] | None = None,
        row_key: RowKeySpec | Mapping[str, Any] | None = None,
        format_version: int = DEFAULT_FORMAT_VERSION,
    ) -> H:
        """Create a table.

        Args:
            name: ``[namespace:]name`` (HBase's rules, R16.3).
            families: Column families: :class:`Family` objects, names (default settings)
                or dicts of :class:`Family` keyword arguments.
            splits: Split keys (bytes, or str encoded as UTF-8): N keys make N + 1 regions.
            salt_buckets: Phoenix-style salting: the first byte of every row key is a
                bucket number ``0 .. salt_buckets - 1`` and the table starts with one
                region per bucket. Cannot be combined with ``splits``.
            properties: Free-form string properties stored with the table.
            row_key: A row-key spec (:class:`~cellstore.core.rowkey.RowKeySpec` or its
                dict form) stored with the table: the loader builds row keys from input
                columns with it and readers decode them back into columns. A salted spec
                salts the table (``salt_buckets`` may be omitted, or must agree).
            format_version: Metadata format version (docs/format.md): 2 (the default,
                manifest files) or 1 (one JSON document per version, for readers that
                know only version 1).

        Returns:
            The new table.

        Raises:
            InvalidNameError: bad table or family name.
            InvalidFamilyError: bad family settings or duplicate families.
            InvalidRowRangeError: bad split keys or salt bucket count.
            TableExistsError: a table of that name exists.
        """
        tname = TableName.parse(name)
        if format_version not in (1, DEFAULT_FORMAT_VERSION):
            raise InvalidArgumentError(
                f"format_version must be 1 or {DEFAULT_FORMAT_VERSION}, got {format_version!r}"
            )
        fams = sorted_families(_as_family(f) for f in families)
        spec = _as_row_key_spec(row_key)
        if spec is not None and spec.salt_buckets is not None:
            if salt_buckets is None:
                salt_buckets = spec.salt_buckets
            elif salt_buckets != spec.salt_buckets:
                raise InvalidArgumentError(
                    f"salt_buckets={salt_buckets} but the row-key spec has "
                    f"salt_buckets={spec.salt_buckets}"
                )
        elif spec is not None and salt_buckets is not None:
            raise InvalidArgumentError(
                "a salted table with a row-key spec needs the salt in the spec "
                "(RowKeySpec(salt_buckets=...)), so that keys and regions agree"
            )
        if salt_buckets is not None and splits:
            raise InvalidArgumentError(
                "give either splits or salt_buckets: a salted table is pre-split on the salt "
                "byte (as Phoenix's SALT_BUCKETS, which cannot be combined with SPLIT ON)"
            )
        keys = salt_split_keys(salt_buckets) if salt_buckets is not None else list(splits or [])
        regions = regions_from_splits(keys)
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        now = now_ms()
        meta = TableMetadata(
            table_uuid="",
            name=tname.full,
            version=1,
            families=fams,
            regions=regions,
            salt_buckets=salt_buckets,
            files=(),
            next_seq=1,
            next_region_id=len(regions) + 1,
            last_history=HistoryEntry(
                version=1,
                operation="create",
                timestamp_ms=now,
                summary={"families": len(fams), "regions": len(regions)},
            ),
            properties=props,
            row_key=spec,
            format_version=format_version,
            totals=FileTotals() if format_version >= 2 else None,
        )
        return self._register(tname, meta)

    def create_table_from(
        self,
        name: str,
        *,
        template: TableMetadata,
        operation: str = "create",
        summary: Mapping[str, Any] | None = None,
    ) -> H:
        """Create a table whose version 1 has ``template``'s schema, regions and files.

        The primitive behind ``jobs.clone``: families, regions (ids included), salt,
        row-key spec, properties, files (paths as given, relative to the *new* table's
        directory, so ``../../../<location>/...`` links into another table's directory),
        the next sequence number and the next region id are taken from ``template``; the
        new table gets a fresh uuid and directory, no load ids and no snapshots.

        Args:
            name: ``[namespace:]name`` of the new table.
            template: The metadata to copy.
            operation: History operation of version 1 (``create``, ``clone``...).
            summary: History summary of version 1.

        Returns:
            The new table.

        Raises:
            InvalidNameError: bad table name.
            TableExistsError: a table of that name exists.
        """
        tname = TableName.parse(name)
        meta = template.evolve(
            version=1,
            last_history=HistoryEntry(
                version=1, operation=operation, timestamp_ms=now_ms(), summary=dict(summary or {})
            ),
            load_ids=(),
            snapshots={},
        )
        return self._register(tname, meta)

    def _register(self, tname: TableName, meta: TableMetadata) -> H:
        """Write ``meta`` as version 1 of a new table directory, then add it to the catalog.

        The table gets a fresh uuid (and so a new directory) and the name ``tname``.
        """
        if self.exists(str(tname)):
            raise TableExistsError(f"table {tname} already exists in {self.url}")
        ensure_exclusive_create(self.fs, self.root)
        table_uuid = uuid.uuid4().hex
        location = join(tname.namespace, tname.qualifier, table_uuid)
        meta = meta.evolve(table_uuid=table_uuid, name=tname.full)
        log = TableLog(self.fs, join(self.root, location))
        meta = log.create_table(meta)
        created = meta.last_history.timestamp_ms

        def add(tables: dict[str, Any]) -> dict[str, Any]:
            if tname.full in tables:
                raise TableExistsError(f"table {tname} already exists in {self.url}")
            tables[tname.full] = {"location": location, "uuid": table_uuid, "created-ms": created}
            return tables

        self._commit_catalog(add)
        return self._handle(tname, location, meta)

    def table(self, name: str, *, version: int | None = None) -> H:
        """Open a table, at its latest version or at ``version`` (read-only, as-of).

        Raises:
            TableNotFoundError: no such table, or no such version of it.
        """
        tname, location, meta = self.locate(name, version=version)
        return self._handle(tname, location, meta, pinned=version is not None)

    def locate(
        self, name: str, *, version: int | None = None
    ) -> tuple[TableName, str, TableMetadata]:
        """A table's name, location and metadata (latest, or at ``version``).

        Raises:
            TableNotFoundError: no such table, or no such version of it.
        """
        tname = TableName.parse(name)
        entry = self._entry(tname)
        location = entry["location"]
        log = TableLog(self.fs, table_dir(self.root, location))
        v = version if version is not None else log.latest_version()
        if v < 1:
            raise TableNotFoundError(f"table {tname} has no version {v}")
        try:
            meta = log.read(v)
        except FileNotFoundError:
            raise TableNotFoundError(f"table {tname} has no version {v}") from None
        return tname, location, meta

    def drop_table(self, name: str, *, purge: bool = False) -> None:
        """Drop a table from the catalog.

        The table's files stay until a vacuum (or are deleted now with ``purge=True``), so
        a reader that opened the table before the drop can finish.

        ``purge=True`` is refused while another table still reads this table's files:
        a clone (``jobs.clone``) whose latest version or one of whose snapshots links into
        this table's directory. Drop without purge then (the files stay for the clone), or
        major-compact the clone and delete its snapshots first.

        Raises:
            TableNotFoundError: no such table.
            InvalidArgumentError: ``purge=True`` while clones still read the table's files
                (the message names them); nothing was dropped.
        """
        tname = TableName.parse(name)
        entry = self._entry(tname)
        if purge:
            users = self.clones_of(str(tname))
            if users:
                raise InvalidArgumentError(
                    f"cannot purge table {tname}: table(s) {', '.join(users)} still read its "
                    "files (clones); drop it without purge (its files stay for them), or "
                    "major-compact them and delete their snapshots first"
                )

        def remove(tables: dict[str, Any]) -> dict[str, Any]:
            if tname.full not in tables:
                raise TableNotFoundError(f"table {tname} does not exist in {self.url}")
            del tables[tname.full]
            return tables

        self._commit_catalog(remove)
        if purge:
            path = table_dir(self.root, entry["location"])
            if self.fs.exists(path):
                self.fs.rm(path, recursive=True)

    def clones_of(self, name: str) -> list[str]:
        """Other tables whose latest version or a snapshot reads files of table ``name``.

        A clone's file entries link into its source's directory (``../../../<location>/``,
        docs/format.md section 3.2). Only tables created by a clone can hold such entries,
        so this reads every other table's version 1 and, for clones, their latest metadata
        and their snapshots' versions (no listing), and names those with an entry
        resolving into ``name``'s directory.

        Raises:
            TableNotFoundError: no such table.
        """
        tname = TableName.parse(name)
        target = table_dir(self.root, self._entry(tname)["location"]) + "/"
        users = []
        for full, entry in sorted(self._tables().items()):
            if full == tname.full:
                continue
            path = table_dir(self.root, entry["location"])
            log = TableLog(self.fs, path)
            latest = log.latest_version()
            if latest < 1 or log.read(1).last_history.operation != "clone":
                continue
            meta = log.read(latest)
            versions = [meta, *(log.read(ref.version) for ref in meta.snapshots.values())]
            if any(
                join(path, f.path).startswith(target)
                for m in versions
                for f in m.files
                if is_clone_link(f.path)
            ):
                users.append(str(TableName.parse(full)))
        return users

    def alter_table(
        self,
        name: str,
        *,
        add_families: Iterable[Family | str | Mapping[str, Any]] = (),
        drop_families: Iterable[str] = (),
        modify_families: Mapping[str, Mapping[str, Any]] | None = None,
        properties: Mapping[str, str | None] | None = None,
    ) -> H:
        """Change a table's schema in one commit.

        Args:
            name: The table.
            add_families: New families.
            drop_families: Families to remove, with their data (files stay until vacuum).
            modify_families: Family name to settings to change, e.g.
                ``{"cf": {"ttl": 86400, "max_versions": 5}}`` (validated as HBase does).
            properties: Properties to set (a None value removes the property).

        Returns:
            The table at its new version.

        Raises:
            InvalidFamilyError: unknown family, duplicate family, bad settings, or dropping
                the last family.
        """
        table = self.table(name)
        adds = [_as_family(f) for f in add_families]
        drops = set(drop_families)
        mods = dict(modify_families or {})
        props = dict(properties or {})

        def update(staged: Staged) -> dict[str, Any]:
            meta = staged.meta
            current = {f.name: f for f in meta.families}
            for d in drops:
                if d not in current:
                    raise InvalidFamilyError(f"table {meta.name}: unknown family {d!r}")
                del current[d]
            for fname, settings in mods.items():
                if fname not in current:
                    raise InvalidFamilyError(f"table {meta.name}: unknown family {fname!r}")
                if "name" in settings:
                    raise InvalidFamilyError("a family cannot be renamed")
                current[fname] = current[fname].replace(**dict(settings))
            for f in adds:
                if f.name in current:
                    raise InvalidFamilyError(f"table {meta.name}: family {f.name!r} exists")
                current[f.name] = f
            if not current:
                raise InvalidFamilyError(f"table {meta.name}: cannot drop every family")
            new_props = dict(meta.properties)
            for k, v in props.items():
                if v is None:
                    new_props.pop(k, None)
                else:
                    new_props[str(k)] = str(v)
            return {
                "summary": {
                    "added": sorted(f.name for f in adds),
                    "dropped": sorted(drops),
                    "modified": sorted(mods),
                },
                "families": sorted_families(current.values()),
                "files": tuple(f for f in meta.files if f.family not in drops),
                "properties": new_props,
            }

        ensure_exclusive_create(self.fs, self.root)
        meta = commit(table.log, Commit(operation="alter", update=update)).metadata
        return self._handle(table.name, table.location, meta)

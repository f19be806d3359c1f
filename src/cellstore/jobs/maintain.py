"""The compaction policy: one job a scheduler runs to keep a table healthy (``maintain``).

Like a region server's background chores, in one pass over the table's newest version:

1. **TTL purge** of the files that hold expired cells (:func:`~cellstore.jobs.purge.purge_ttl`);
2. **major compaction** of the whole table when the last one is older than
   ``major_interval_ms`` (HBase's ``hbase.hregion.majorcompaction``, 7 days), recorded in the
   table property ``compaction.last-major-ms``;
3. otherwise a **minor compaction** of every store where HBase's exploring selection
   (:mod:`cellstore.jobs.selection`) picks files: at least ``hbase.hstore.compaction.min``
   (3) and at most ``hbase.hstore.compaction.max`` (10) contiguous files in ratio
   (``hbase.hstore.compaction.ratio`` 1.2; off-peak ``...ratio.offpeak`` 5.0 inside
   ``hbase.offpeak.start.hour``..``hbase.offpeak.end.hour``, UTC), most files then
   smallest size. The settings are table properties with HBase's names (HBase's defaults
   when absent); ``maintain``'s options override them. The report lists each store's
   selection (files, stuck, off-peak);
4. **split** of every region whose files exceed ``split_over_bytes`` (HBase's
   ``hbase.hregion.max.filesize``, 10 GiB), near the middle of its data;
5. optionally **merge** of runs of adjacent small regions (``merge_under_bytes``);
6. **rewrite of the manifest list** of a format-version-2 table that lists more than
   ``max_manifests`` (32) manifests (:func:`~cellstore.jobs.expire.rewrite_manifests`:
   one manifest of the live entries). A commit merges manifests only while the merge
   stays small (``MAX_INLINE_MERGE_ENTRIES`` rows, so that it writes about 1 MB at most),
   so a table of large loads collects merged manifests that only this folds; a reader
   reads every one that can hold its regions.

``dry_run`` plans the same actions and commits nothing. Each action is its own job and its
own commit, so a conflict with a concurrent job skips only that action (it shows in the
report; the next run picks it up).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, TypedDict, Unpack

from cellstore.commit import now_ms as clock
from cellstore.core.results import JsonForm
from cellstore.errors import CommitConflictError, InvalidArgumentError
from cellstore.handle import TableHandle
from cellstore.jobs.common import with_overrides
from cellstore.jobs.compact import LAST_MAJOR_PROPERTY, compact
from cellstore.jobs.expire import rewrite_manifests
from cellstore.jobs.purge import purge_ttl
from cellstore.jobs.regions import merge_small, region_sizes, split
from cellstore.jobs.selection import SelectionPolicy

__all__ = ["MaintainKwargs", "MaintainOptions", "MaintainReport", "is_off_peak", "maintain"]

#: HBase's ``hbase.hregion.majorcompaction``: a week.
DEFAULT_MAJOR_INTERVAL_MS: Final = 7 * 24 * 3600 * 1000
#: Table properties of HBase's off-peak hours (hours 0-23 UTC; -1 = no off-peak hours).
OFF_PEAK_START: Final = "hbase.offpeak.start.hour"
OFF_PEAK_END: Final = "hbase.offpeak.end.hour"
#: HBase's ``hbase.hregion.max.filesize``.
DEFAULT_SPLIT_BYTES: Final = 10 << 30
#: Format version 2: rewrite the manifest list when it holds more than this many.
DEFAULT_MAX_MANIFESTS: Final = 32


@dataclass(frozen=True)
class MaintainReport(JsonForm):
    """What :func:`maintain` did (or would do).

    Attributes:
        actions: One dict per action: ``action`` (purge-ttl, major-compact, compact, split,
            merge), ``reason``, and either the job's report (``result``) or ``error`` when a
            concurrent job made it conflict.
        dry_run: Whether only the plan was computed.
        version: Table version after the run.
        seconds: Wall time.
    """

    json_keys = "dry_run version actions seconds"

    actions: tuple[dict[str, Any], ...]
    dry_run: bool
    version: int
    seconds: float


@dataclass(frozen=True, kw_only=True)
class MaintainOptions:
    """The policy one :func:`maintain` run applies (:func:`maintain` documents each field)."""

    now_ms: int | None = None
    purge: bool = True
    major_interval_ms: int | None = DEFAULT_MAJOR_INTERVAL_MS
    max_store_files: int | None = None
    policy: SelectionPolicy | None = None
    off_peak: bool | None = None
    split_over_bytes: int | None = DEFAULT_SPLIT_BYTES
    merge_under_bytes: int | None = None
    max_manifests: int | None = DEFAULT_MAX_MANIFESTS


class MaintainKwargs(TypedDict, total=False):
    """:class:`MaintainOptions` fields as keyword overrides (same names and types)."""

    now_ms: int | None
    purge: bool
    major_interval_ms: int | None
    max_store_files: int | None
    policy: SelectionPolicy | None
    off_peak: bool | None
    split_over_bytes: int | None
    merge_under_bytes: int | None
    max_manifests: int | None


def maintain(
    table: TableHandle,
    options: MaintainOptions | None = None,
    /,
    *,
    dry_run: bool = False,
    client: Any = None,
    **overrides: Unpack[MaintainKwargs],
) -> MaintainReport:
    """Run the compaction policy once (see the module docstring).

    Args:
        table: The table (a pinned handle is refused).
        options: A :class:`MaintainOptions`; keyword overrides replace its fields (every
            field below but ``dry_run`` and ``client``).
        now_ms: "Now" (default: the clock).
        purge: Purge expired cells first.
        major_interval_ms: Major-compact when the last major compaction is older than this
            (or never happened); None disables scheduled major compactions.
        max_store_files: Minor-compact only stores where more than this many files are
            selected (sets the policy's ``min_files`` to this + 1); None keeps the policy's
            (``hbase.hstore.compaction.min``, 3).
        policy: The minor-compaction selection settings (default: from the table's
            properties, :meth:`SelectionPolicy.from_properties`).
        off_peak: Whether this run is off-peak (default: from the table properties
            ``hbase.offpeak.start.hour``/``end.hour`` and ``now_ms``, see :func:`is_off_peak`).
        split_over_bytes: Split regions whose files total more than this; None disables.
        merge_under_bytes: Merge runs of adjacent regions whose files together stay within
            this; None (default) disables.
        max_manifests: Format version 2: rewrite the manifest list into one manifest when
            it holds more than this many (after the other actions); None disables.
        dry_run: Plan only.
        client: A ``distributed.Client`` for the compactions.

    Returns:
        A :class:`MaintainReport`.
    """
    started = time.perf_counter()
    o = with_overrides(MaintainOptions, options, overrides)
    table.check_writable("maintain")
    table.refresh()
    now = o.now_ms if o.now_ms is not None else clock()
    run = _Run(table, now=now, dry_run=dry_run, client=client)
    if o.purge and any(f.ttl is not None for f in table.families):
        run(
            "purge-ttl",
            "families with a TTL",
            lambda: purge_ttl(table, now_ms=now, dry_run=dry_run, client=client),
        )
    _compactions(run, o)
    _region_sizes(run, o)
    meta = table.metadata
    if o.max_manifests is not None and meta.format_version >= 2:
        count = len(meta.manifests)
        if count > o.max_manifests:
            run(
                "rewrite-manifests",
                f"{count} manifests > {o.max_manifests}",
                lambda: _RewriteReport.run(table, manifests=count, dry_run=dry_run),
            )
    table.refresh()
    return MaintainReport(
        actions=tuple(run.actions),
        dry_run=dry_run,
        version=table.version,
        seconds=time.perf_counter() - started,
    )


class _Run:
    """One maintain run: runs its actions, each its own job, and records what they did."""

    def __init__(self, table: TableHandle, *, now: int, dry_run: bool, client: Any) -> None:
        self.table = table
        self.now = now
        self.dry_run = dry_run
        self.client = client
        self.actions: list[dict[str, Any]] = []

    def __call__(self, action: str, reason: str, job: Any) -> None:
        """Run ``job`` (a conflict with a concurrent job is recorded and skipped)."""
        try:
            report = job()
        except CommitConflictError as e:
            self.actions.append({"action": action, "reason": reason, "error": str(e)})
            return
        result = report.to_dict()
        if _did_something(result):
            self.actions.append({"action": action, "reason": reason, "result": result})
        self.table.refresh()


def _compactions(run: _Run, o: MaintainOptions) -> None:
    """A major compaction when one is due, else a minor one by the exploring selection."""
    table, now = run.table, run.now
    last_major = table.metadata.properties.get(LAST_MAJOR_PROPERTY)
    due = o.major_interval_ms is not None and (
        last_major is None or now - int(last_major) >= o.major_interval_ms
    )
    if due:
        reason = (
            "no major compaction recorded"
            if last_major is None
            else f"last major compaction {now - int(last_major)} ms ago"
        )
        run(
            "major-compact",
            reason,
            lambda: compact(
                table,
                major=True,
                now_ms=now,
                dry_run=run.dry_run,
                client=run.client,
                skip_compacted=True,
            ),
        )
        return
    props = table.metadata.properties
    chosen = o.policy or SelectionPolicy.from_properties(props)
    if o.max_store_files is not None:
        chosen = replace(
            chosen,
            min_files=max(o.max_store_files + 1, 2),
            max_files=max(chosen.max_files, o.max_store_files + 1),
        )
    peak = is_off_peak(props, now) if o.off_peak is None else o.off_peak
    run(
        "compact",
        f"exploring selection (ratio {chosen.off_peak_ratio if peak else chosen.ratio}, "
        f"{chosen.min_files}-{chosen.max_files} files{', off-peak' if peak else ''})",
        lambda: compact(
            table,
            now_ms=now,
            policy=chosen,
            off_peak=peak,
            dry_run=run.dry_run,
            client=run.client,
        ),
    )


def _region_sizes(run: _Run, o: MaintainOptions) -> None:
    """Split regions over ``split_over_bytes``, then merge runs within ``merge_under_bytes``."""
    table, dry_run = run.table, run.dry_run
    if o.split_over_bytes is not None:
        limit = o.split_over_bytes
        for region_id, size in region_sizes(table.metadata).items():
            if size > limit:
                run(
                    "split",
                    f"region {region_id} holds {size} bytes > {limit}",
                    lambda rid=region_id: split(table, region=rid, dry_run=dry_run),
                )
    merge_under = o.merge_under_bytes
    if merge_under is not None:
        run(
            "merge",
            f"adjacent regions within {merge_under} bytes",
            lambda: merge_small(table, max_bytes=merge_under, dry_run=dry_run),
        )


def is_off_peak(properties: Mapping[str, str], now_ms: int) -> bool:
    """Whether ``now_ms`` falls in the off-peak hours the table properties set.

    As HBase's ``OffPeakHours``: hours ``start <= hour < end`` (UTC), wrapping past midnight
    when ``start > end``; none when either is unset or -1 (HBase's default).

    Raises:
        InvalidArgumentError: an hour that is not an integer in -1..23.
    """
    hours = []
    for key in (OFF_PEAK_START, OFF_PEAK_END):
        raw = properties.get(key, "-1")
        try:
            hour = int(raw)
        except ValueError:
            hour = -2
        if not -1 <= hour <= 23:
            raise InvalidArgumentError(f"table property {key}={raw!r} is not an hour in -1..23")
        hours.append(hour)
    start, end = hours
    if start == -1 or end == -1 or start == end:
        return False
    hour = (now_ms // 3_600_000) % 24
    return start <= hour < end if start < end else (hour >= start or hour < end)


@dataclass(frozen=True)
class _RewriteReport(JsonForm):
    """What the manifest-list rewrite of :func:`maintain` did (or would do)."""

    json_keys = "manifests_before dry_run version rewrite"

    manifests_before: int
    dry_run: bool
    version: int | None

    @classmethod
    def run(cls, table: TableHandle, *, manifests: int, dry_run: bool) -> _RewriteReport:
        if dry_run:
            return cls(manifests_before=manifests, dry_run=True, version=None)
        committed = rewrite_manifests(table)
        return cls(
            manifests_before=manifests,
            dry_run=False,
            version=table.refresh().version if committed else None,
        )

    @property
    def rewrite(self) -> bool:
        """Whether the manifest list was (or would be) rewritten."""
        return self.dry_run or self.version is not None


def _did_something(result: dict[str, Any]) -> bool:
    """Whether a job report describes work (a commit, or planned stores/regions/merges)."""
    if result.get("version") is not None:
        return True
    return bool(
        result.get("stores")
        or result.get("splits")
        or result.get("merges")
        or result.get("rewrite")
    )

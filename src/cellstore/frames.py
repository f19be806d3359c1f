"""Planned tasks, run as a Dask collection or to completion (on threads or a cluster).

:func:`from_tasks` (one partition per task) is shared by :meth:`cellstore.reader.Scan.to_dask`
and :func:`cellstore.hbase.read_hfiles_dask` (anything that hands picklable tasks and a
picklable reader to ``dd.from_map``); :func:`run_tasks` by the jobs that write files per
task (HBase import, HFile export) and clean up after a failed one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

__all__ = ["from_tasks", "run_tasks"]

_R = TypeVar("_R")


def from_tasks(
    reader: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    meta: Any,
    divisions: Sequence[Any] | None,
    label: str,
) -> Any:
    """A lazy ``dask.dataframe`` whose partition ``i`` is ``reader(tasks[i])``.

    Args:
        reader: Picklable callable returning a pandas DataFrame shaped like ``meta``.
        tasks: Picklable tasks, at least one.
        meta: Empty DataFrame with every partition's columns and dtypes.
        divisions: ``len(tasks) + 1`` known boundaries of the index, or None.
        label: Prefix of the task names.

    Dask appends an object-to-``string[pyarrow]`` step to every partition of ``from_map``
    (its ``dataframe.convert-string`` option). When ``meta`` has no object column nor
    object index the step changes nothing, yet on a ``distributed`` cluster it runs as one
    more task per partition (the scheduler does not fuse it into the read): it is left out
    then. With object columns Dask's conversion applies as usual. The caller's Dask
    configuration is not changed.
    """
    import dask
    import dask.dataframe as dd
    import pandas as pd

    objects = any(pd.api.types.is_object_dtype(t) for t in (*meta.dtypes, meta.index.dtype))
    options = (
        contextlib.nullcontext()
        if objects
        else dask.config.set({"dataframe.convert-string": False})
    )
    with options:
        return dd.from_map(  # type: ignore[no-untyped-call]
            reader,
            list(tasks),
            meta=meta,
            divisions=None if divisions is None else tuple(divisions),
            label=label,
            enforce_metadata=False,
        )


def run_tasks(
    fn: Callable[..., _R],
    tasks: Sequence[Any],
    *shared: Any,
    client: Any = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[_R], BaseException | None]:
    """Run ``fn(*shared, task)`` for every task, on a ``distributed`` client or on threads.

    Args:
        fn: Picklable function (on a client) of the shared arguments and one task.
        tasks: Picklable tasks.
        *shared: Arguments every call gets before its task (filesystems, say).
        client: A ``distributed.Client``; None: threads.
        workers: Threads (default: the CPU count), at most one per task.
        progress: Called with ``(tasks done, tasks)`` as tasks finish, until one fails.

    Returns:
        The results of the tasks that succeeded, in task order (so that a caller can use
        or remove what they wrote), and the first error (None when every task succeeded),
        once every started task has stopped. On threads the first failure cancels the
        tasks not yet started; on a client every task runs.
    """
    n = len(tasks)
    if not tasks:
        return [], None
    if client is not None:
        results: list[_R] = []
        error: BaseException | None = None
        futures = client.map(fn, *([arg] * n for arg in shared), list(tasks), pure=False)
        for i, fut in enumerate(futures):
            try:
                results.append(fut.result())
            except Exception as exc:  # the caller raises it once every task has stopped
                error = error or exc
            if progress is not None and error is None:
                progress(i + 1, n)
        return results, error
    threads = max(1, min(n, workers if workers is not None else (os.cpu_count() or 4)))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        submitted: list[Future[_R]] = [pool.submit(fn, *shared, t) for t in tasks]
        pending = set(submitted)
        error = None
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            failed = [f.exception() for f in done if not f.cancelled()]
            error = error or next((e for e in failed if e is not None), None)
            if error is not None:
                for f in pending:
                    f.cancel()
            elif progress is not None:
                progress(n - len(pending), n)
    ok = [f for f in submitted if not f.cancelled() and f.exception() is None]
    return [f.result() for f in ok], error

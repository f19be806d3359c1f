"""Running a load's Dask graph so that a failure returns only once every task has stopped.

A failed load (or ``hfile_output`` load) deletes what its tasks wrote. Dask's threaded
scheduler re-raises a task's error at once, while tasks already running on other threads
go on and may write files after the cleanup; a ``distributed`` gather does the same with
tasks on the workers. :func:`compute_all` runs the local graph on its own thread pool and
shuts it down (waiting for the running tasks, cancelling the queued ones) before the error
propagates, and on a client waits for every future before gathering.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["compute_all", "wait_all"]


def wait_all(futures: Sequence[Any]) -> None:
    """Block until every ``distributed`` future has finished, failed or been cancelled.

    Works with any client (``distributed.wait`` needs the default one).
    """
    for future in futures:
        with contextlib.suppress(BaseException):
            future.exception()


def compute_all(graph: Sequence[Any], *, client: Any = None, workers: int = 1) -> list[Any]:
    """Compute Dask delayed objects; on failure, raise once every task has stopped.

    Args:
        graph: The delayed objects.
        client: A ``distributed.Client``, or None for local threads.
        workers: Threads of the local pool.

    Returns:
        The results, in ``graph`` order.
    """
    if client is not None:
        futures = client.compute(list(graph))
        wait_all(futures)  # nothing is running any more when gather raises
        return list(client.gather(futures))
    from dask.base import compute
    from dask.threaded import get as threaded_get

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        # The threaded scheduler passed as a function, not by name: for a name Dask imports
        # ``distributed`` to look for a client first (100+ modules, about 13 MiB of a
        # process that runs no cluster), and then uses the threads anyway.
        results = compute(*graph, scheduler=threaded_get, pool=pool)  # type: ignore[no-untyped-call]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return list(results)

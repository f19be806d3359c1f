"""Real Dask clusters for tests: worker processes on 127.0.0.1, no fixed ports."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def process_client(workers: int, *, as_default: bool = True) -> Iterator[Any]:
    """A ``distributed.Client`` on a ``LocalCluster`` of ``workers`` worker processes.

    Each worker has one thread; the scheduler listens on 127.0.0.1 on a free port, and so
    does its HTTP server (the scheduler always serves one, for metrics, on 8787 unless told
    otherwise; a busy 8787, such as another cluster's, would be a warning and so a test
    error). Both are closed when the block ends.

    Args:
        workers: Worker processes.
        as_default: Make the client Dask's default (``set_as_default``).
    """
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers,
            processes=True,
            threads_per_worker=1,
            scheduler_port=0,
            dashboard_address="127.0.0.1:0",
            host="127.0.0.1",
        ) as cluster,
        Client(cluster, set_as_default=as_default) as client,
    ):
        yield client

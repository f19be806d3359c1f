"""An ordered, bounded map on a thread pool: what the HFile writer compresses blocks with.

Pure: no I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["ordered_map"]

_T = TypeVar("_T")
_R = TypeVar("_R")


def ordered_map(
    fn: Callable[[_T], _R], items: Iterable[_T], *, threads: int, ahead: int
) -> Generator[_R, None, None]:
    """``fn(item)`` for each of ``items``, in order, computed on up to ``threads`` threads.

    At most ``ahead`` results are computed or waiting before the caller takes them (the
    memory bound). ``threads <= 1`` computes each result in the calling thread, when it
    is asked for. An exception of ``fn`` is raised to the caller when it reaches the item
    that raised it, as it would be without threads; closing the iterator early cancels
    what has not started and waits for what has.
    """
    if threads <= 1:
        for item in items:
            yield fn(item)
        return
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cellstore-hfile") as pool:
        waiting: deque[Future[_R]] = deque()
        todo = iter(items)
        try:
            for item in todo:
                waiting.append(pool.submit(fn, item))
                if len(waiting) >= max(1, ahead):
                    break
            while waiting:
                done = waiting.popleft().result()
                for nxt in todo:  # the next item, if any
                    waiting.append(pool.submit(fn, nxt))
                    break
                yield done
        finally:
            for f in waiting:
                f.cancel()

"""Settings shared by the fuzz suites (``tests/test_fuzz_*.py``).

CI runs a bounded number of examples per fuzz test; ``bench/fuzz_long.sh`` raises it
through ``CELLSTORE_FUZZ_EXAMPLES`` for a long run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, settings

#: Examples per fuzz test: small in CI, large in the bench run.
FUZZ_EXAMPLES = int(os.environ.get("CELLSTORE_FUZZ_EXAMPLES", "150"))

#: Settings for every fuzz test: bounded examples, no deadline (I/O varies on a loaded box).
FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


# --------------------------------------------------------------------------- bounded child
#: Address space a bounded worker may add to what it holds once started (its imports).
BOUNDED_EXTRA_BYTES = int(os.environ.get("CELLSTORE_FUZZ_MEMORY", str(1536 << 20)))
#: Seconds one call in a bounded worker may take before it counts as a hang.
BOUNDED_TIMEOUT = float(os.environ.get("CELLSTORE_FUZZ_TIMEOUT", "30"))


@dataclass(frozen=True)
class Outcome:
    """What one call in a :class:`BoundedWorker` ended in.

    Attributes:
        kind: ``"ok"`` (returned), ``"error"`` (raised), ``"died"`` (the child process
            ended: an abort, a crash or the kernel's OOM killer) or ``"hang"`` (it ran past
            its time limit and was killed).
        value: What the function returned (``ok``), picklable.
        error_type: The exception's class, ``module.QualName`` (``error``).
        is_cellstore: Whether the exception is a :class:`~cellstore.errors.CellstoreError`.
        message: The exception's message, or what happened to the child.
    """

    kind: str
    value: Any = None
    error_type: str = ""
    is_cellstore: bool = False
    message: str = ""

    @property
    def bounded_failure(self) -> bool:
        """Whether the call ended in a typed cellstore error (the only allowed failure)."""
        return self.kind == "error" and self.is_cellstore


def _child_main(conn: Any, extra: int, paths: list[str]) -> None:  # pragma: no cover - child
    import importlib
    import resource
    import sys
    import traceback

    sys.path[:0] = [p for p in paths if p not in sys.path]
    import cellstore.errors

    # The imports a call needs, done before the limit is set.
    import cellstore.hbase
    import cellstore.storefiles.hfile.reader

    with open("/proc/self/status") as f:
        size = next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmSize:"))
    limit = size + extra
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    conn.send(("ready", limit))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        target, args = msg
        mod, _, name = target.partition(":")
        try:
            fn = getattr(importlib.import_module(mod), name)
            conn.send(("ok", fn(*args)))
        except BaseException as e:  # report everything, even MemoryError
            conn.send(
                (
                    "error",
                    f"{type(e).__module__}.{type(e).__qualname__}",
                    isinstance(e, cellstore.errors.CellstoreError),
                    f"{e}"[:2000] + "\n" + "".join(traceback.format_exception(e))[-3000:],
                )
            )


class BoundedWorker:
    """A child process that runs test functions under an address-space and a time limit.

    A blow-up (a forged size allocated, a decompression bomb, an exponential walk) then
    fails one call instead of the machine: the child's ``RLIMIT_AS`` is what it held after
    its imports plus :data:`BOUNDED_EXTRA_BYTES`, and a call that runs past
    :data:`BOUNDED_TIMEOUT` seconds is killed and reported as a hang. A child that dies or
    hangs is replaced on the next call. Functions are named ``"module:function"`` (the
    ``tests`` directory is importable in the child); arguments and results must pickle.
    """

    def __init__(
        self, *, extra_bytes: int = BOUNDED_EXTRA_BYTES, timeout: float = BOUNDED_TIMEOUT
    ) -> None:
        self.extra_bytes = extra_bytes
        self.timeout = timeout
        self.limit = 0
        self._proc: Any = None
        self._conn: Any = None

    def _start(self) -> None:
        import multiprocessing
        import sys

        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        tests_dir = os.path.dirname(os.path.abspath(__file__))
        self._proc = ctx.Process(
            target=_child_main, args=(child, self.extra_bytes, [tests_dir, *sys.path]), daemon=True
        )
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(120):
            self.close()
            raise RuntimeError("bounded worker did not start in 120 s")
        _, self.limit = parent.recv()

    def call(self, target: str, *args: Any) -> Outcome:
        """Run ``target(*args)`` in the child and say how it ended."""
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send((target, args))
        if not self._conn.poll(self.timeout):
            self.close()
            return Outcome("hang", message=f"no answer in {self.timeout:.0f} s")
        try:
            reply = self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(10)
            code = self._proc.exitcode
            self.close()
            return Outcome("died", message=f"child process ended (exit code {code})")
        if reply[0] == "ok":
            return Outcome("ok", value=reply[1])
        _, etype, is_cs, message = reply
        return Outcome("error", error_type=etype, is_cellstore=is_cs, message=message)

    def close(self) -> None:
        """Stop the child (it is started again on the next call)."""
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(10)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

"""What some tests need from outside the project, and what happens when it is missing.

A few tests need things a clone does not carry: the HBase test vectors (``../shared/
testdata/hbase-hfiles`` beside the clone), Java (PySpark) or a Chromium browser (the HTML
report). On a newcomer's machine such a test skips with a note. Where the thing is
expected, a switch turns the skip into a failure, so a CI run that lost its vectors, its
Java or its browser cannot pass by skipping what it was meant to check:

=================  ==============================
need               switch (set to ``1``)
=================  ==============================
``vectors``        ``CELLSTORE_REQUIRE_VECTORS``
``java``           ``CELLSTORE_REQUIRE_JAVA``
``browser``        ``CELLSTORE_REQUIRE_BROWSER``
=================  ==============================

``.ci/run`` sets all three. Use :func:`needs` as a mark (``pytestmark = needs(...)`` or a
decorator; ``tests/conftest.py`` applies it) or call :func:`unavailable` where the test
or fixture finds the thing missing. ``pytest.mark.needs(need=..., present=...,
reason=...)`` is the same mark without importing this module.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

#: The switch of each need: set (not empty, not ``0``), a missing need fails the test.
SWITCHES = {
    "vectors": "CELLSTORE_REQUIRE_VECTORS",
    "java": "CELLSTORE_REQUIRE_JAVA",
    "browser": "CELLSTORE_REQUIRE_BROWSER",
}

#: The HBase test vectors, beside the clone (CI has ``../shared`` there).
VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"


def required(need: str) -> bool:
    """Whether this run requires ``need`` (its switch is set)."""
    return os.environ.get(SWITCHES[need], "") not in ("", "0")


def unavailable(need: str, reason: str) -> NoReturn:
    """Skip the calling test (or module, or fixture's tests), or fail it when required.

    Args:
        need: ``"vectors"``, ``"java"`` or ``"browser"``.
        reason: What is missing and how to get it.
    """
    if required(need):
        pytest.fail(f"{reason} ({SWITCHES[need]} is set: this run requires it)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def needs(need: str, present: bool, reason: str) -> pytest.MarkDecorator:
    """A mark that runs the test when ``present``, else :func:`unavailable` at its setup."""
    if need not in SWITCHES:
        raise ValueError(f"unknown need {need!r}; one of {', '.join(SWITCHES)}")
    return pytest.mark.needs(need=need, present=bool(present), reason=reason)


def check_marks(item: pytest.Item) -> None:
    """Apply the item's ``needs`` marks (called by ``tests/conftest.py`` at setup)."""
    for mark in item.iter_markers("needs"):
        if not mark.kwargs["present"]:
            unavailable(mark.kwargs["need"], mark.kwargs["reason"])

"""The shared pieces of result dataclasses (core.results) and the task runner (frames)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from cellstore.core.results import Checked, JsonForm, Total, json_value
from cellstore.frames import run_tasks


@dataclass(frozen=True)
class _Part(JsonForm):
    name: str
    start: bytes
    cells: int


@dataclass(frozen=True)
class _Report(JsonForm):
    json_keys = "table dry_run parts cells share row-count=rows seconds"
    json_digits: ClassVar[Mapping[str, int]] = {"seconds": 3, "share": 2}

    table: str
    dry_run: bool
    parts: tuple[_Part, ...]
    rows: int
    share: float
    seconds: float
    hidden: str = "not in the JSON"

    cells = Total("parts", "cells", "Cells over all parts.")


@dataclass(frozen=True)
class _Hooked(JsonForm):
    kept: Mapping[str, int]
    ratio: float

    def _json_value(self, name: str) -> Any:
        if name == "kept":
            return {k: self.kept.get(k, 0) for k in ("a", "b")}
        return super()._json_value(name)


@dataclass(frozen=True)
class _Check(Checked):
    problems: tuple[str, ...]


def _report() -> _Report:
    parts = (_Part(name="p0", start=b"\x00a", cells=3), _Part(name="p1", start=b"m", cells=4))
    return _Report(table="ns:t", dry_run=True, parts=parts, rows=7, share=0.123456, seconds=1.23456)


def test_default_keys_are_the_fields_in_order_kebab_case_bytes_printable():
    assert _Part(name="p", start=b"\x00\xffz", cells=2).to_dict() == {
        "name": "p",
        "start": "\\x00\\xFFz",
        "cells": 2,
    }


def test_json_keys_order_properties_renames_rounding_and_nesting():
    doc = _report().to_dict()
    assert list(doc) == ["table", "dry-run", "parts", "cells", "share", "row-count", "seconds"]
    assert doc["parts"] == [
        {"name": "p0", "start": "\\x00a", "cells": 3},
        {"name": "p1", "start": "m", "cells": 4},
    ]
    assert doc["cells"] == 7
    assert doc["share"] == 0.12
    assert doc["seconds"] == 1.235
    assert "hidden" not in doc
    json.dumps(doc)  # JSON-ready


def test_a_hook_changes_one_value_and_defers_for_the_rest():
    doc = _Hooked(kept={"b": 2, "z": 9}, ratio=0.333333333).to_dict()
    assert doc == {"kept": {"a": 0, "b": 2}, "ratio": 0.333333333}  # no digits: as it is


def test_json_value_forms():
    assert json_value(b"\x01") == "\\x01"
    assert json_value((1, b"a", (2,))) == [1, "a", [2]]
    source = {"k": 1}
    copied = json_value(source)
    assert copied == source and copied is not source
    assert json_value(_Part(name="x", start=b"", cells=0)) == {"name": "x", "start": "", "cells": 0}
    assert json_value(None) is None


def test_total_is_a_read_only_sum_with_its_docstring():
    assert _report().cells == 7
    assert _Report.cells.__doc__ == "Cells over all parts."
    with pytest.raises(AttributeError):
        _report().cells = 3  # type: ignore[misc]


def test_checked_is_ok_without_problems():
    assert _Check(problems=()).ok
    assert not _Check(problems=("row out of order",)).ok


def _square(offset: int, task: int) -> int:
    if task < 0:
        raise ValueError(f"task {task} fails")
    return offset + task * task


def test_run_tasks_results_in_task_order_with_progress():
    seen: list[tuple[int, int]] = []
    results, error = run_tasks(
        _square, [3, 1, 2], 10, workers=2, progress=lambda d, n: seen.append((d, n))
    )
    assert error is None
    assert results == [19, 11, 14]
    assert seen[-1] == (3, 3)
    assert all(n == 3 for _, n in seen)


def test_run_tasks_empty():
    assert run_tasks(_square, [], 0) == ([], None)


def test_run_tasks_first_failure_cancels_tasks_not_started():
    started: list[int] = []

    def work(task: int) -> int:
        started.append(task)
        if task == 0:
            raise RuntimeError("first task fails")
        time.sleep(0.5)  # the failure is seen (and the rest cancelled) long before this ends
        return task

    results, error = run_tasks(work, list(range(6)), workers=1)
    assert isinstance(error, RuntimeError)
    assert started in ([0], [0, 1])  # one thread: at most the task it took next still ran
    assert results == started[1:]


def test_run_tasks_returns_what_succeeded_with_the_error():
    barrier = threading.Barrier(3, timeout=10)

    def work(task: int) -> int:
        barrier.wait()  # all three run: none is cancelled before it starts
        return _square(0, task)

    results, error = run_tasks(work, [1, -1, 2], workers=3)
    assert isinstance(error, ValueError)
    assert results == [1, 4]  # the successes, in task order, so a caller can clean up

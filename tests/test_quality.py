"""The package stays ruff- and mypy-clean (configured in pyproject.toml)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _tool(name: str) -> str:
    """The tool's executable; skips without it (``dev`` extra) unless CI requires it."""
    exe = Path(sys.executable).parent / name
    found = str(exe) if exe.exists() else shutil.which(name)
    if found is None:
        message = f'{name} is not installed: pip install -e ".[dev]"'
        if os.environ.get("CELLSTORE_REQUIRE_DEV"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def test_ruff_clean():
    out = subprocess.run(
        [_tool("ruff"), "check", "src", "tests", "bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format_clean():
    """The tree is as ``ruff format`` writes it (the dev extra pins ruff's minor version,
    whose formatting is stable), so a contributor's format run changes only their lines."""
    out = subprocess.run(
        [_tool("ruff"), "format", "--check", "src", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_strict_clean():
    out = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

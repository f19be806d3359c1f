"""The README's and the user guide's Python examples run as written (issue 18).

Every ```` ```python ```` block of README.md, then of the user guide pages it links to
(:data:`GUIDE`, in the order they continue each other's examples), runs in order in one
namespace (later blocks use the tables earlier ones made), from a fresh directory that
sees the repository's
``src/`` (the examples use the bundled ``src/cellstore/examples`` files, as a user who
cloned the repository would). A block is skipped only when the line before it says
``<!-- readme-test: not run (reason) -->``; the test checks that every such block names a
reason and that the skipped blocks are few.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow.compute as pc
import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: The user guide pages whose examples continue the README's, in the order they run.
GUIDE = [
    README,
    *(
        REPO / "docs" / f"{page}.md"
        for page in ("reading", "loading", "jobs", "indexes", "cluster")
    ),
]
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)\n```", re.DOTALL)
_NOT_RUN = re.compile(r"<!-- readme-test: not run \((?P<why>[^)]+)\) -->")


def _blocks() -> list[tuple[str, str, str | None]]:
    """(``file:line``, code, reason not run or None) of every Python block, in run order."""
    out = []
    for path in GUIDE:
        text = path.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("code")) + 1
            skip = _NOT_RUN.fullmatch(m.group("before").strip())
            where = f"{path.relative_to(REPO)}:{line}"
            out.append((where, m.group("code"), skip.group("why") if skip else None))
    return out


def test_readme_has_python_examples_and_few_are_skipped() -> None:
    blocks = _blocks()
    assert len(blocks) >= 8
    skipped = [why for _, _, why in blocks if why is not None]
    assert all(why.strip() for why in skipped)
    assert len(skipped) <= len(blocks) // 2


# The examples' key designs must not draw cellstore's own advice (pyproject ignores
# KeyDesignWarning suite-wide for test data; a README example must not need that).
@pytest.mark.filterwarnings("error::cellstore.errors.CellstoreWarning")
def test_readme_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src").symlink_to(REPO / "src", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    ran = 0
    for where, code, why in _blocks():
        if why is not None:
            continue
        try:
            exec(compile(code, where, "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{where} block failed: {type(exc).__name__}: {exc}")
        ran += 1
    assert ran >= 6
    # The examples did real work: the tables they made hold what they loaded.
    t = namespace["t"]
    assert os.path.isdir(tmp_path / "cellstore-data")
    users = namespace["wh"].table("demo:users")  # type: ignore[attr-defined]
    assert users.scan(families=["profile"]).count_rows() >= 300
    assert t is not None
    # The local index example: after a split, its lookup finds every row of the value.
    assert len(users.regions) >= 2
    country = users.scan(columns=["profile:country"]).to_arrow()
    want = country.filter(pc.equal(country.column("value"), b"SE")).column("row").to_pylist()
    got = namespace["swedes"].column("row").unique().to_pylist()  # type: ignore[attr-defined]
    assert want and sorted(got) == sorted(want)

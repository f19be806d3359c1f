"""Every HBase-semantics rule the project cites is defined in docs/hbase-semantics.md.

Code, tests and docs cite rules as ``R13.2`` (one rule) or ``R13`` (a whole section), and
some tests are named after their rule (``def test_r5_6_...``). Each such citation must be a
heading, with its anchor, of docs/hbase-semantics.md, so a reader can look it up.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "hbase-semantics.md"

#: A citation: ``R`` plus a section number and optionally a rule number, standing alone.
#: Not part of a longer word or path (``HR1``, ``R2D2``, ``a/R1``), and not a dotted number
#: with a third component (``R1.2.3``). ``R5.x`` and ``R3-R12`` cite sections.
CITATION = re.compile(r"(?<![\w/\\])R(\d{1,2}(?:\.\d{1,2})?)(?!\.?\d)(?!\w)")
#: A test named after the rule it exercises: ``def test_r5_6_delete_masks...``.
TEST_NAME = re.compile(r"\bdef test_r(\d{1,2})_(\d{1,2})_")
#: A section or rule heading: ``## <a id="R5"></a>R5 — ...``, ``### <a id="R5.6"></a>R5.6 — ...``.
HEADING = re.compile(r'^(#{2,3}) <a id="R([\d.]+)"></a>R([\d.]+) — \S', re.MULTILINE)
QUOTES = {'"', "'"}


def citations(text: str) -> list[tuple[str, int]]:
    """The rules ``text`` cites, as (``"R13.2"``, line number), in order."""
    found = []
    for m in CITATION.finditer(text):
        start, end = m.span()
        # A quoted token such as the row key b"R1" is data, not a citation.
        if text[start - 1 : start] in QUOTES and text[end : end + 1] in QUOTES:
            continue
        found.append((f"R{m.group(1)}", text.count("\n", 0, start) + 1))
    for m in TEST_NAME.finditer(text):
        found.append((f"R{m.group(1)}.{m.group(2)}", text.count("\n", 0, m.start()) + 1))
    return found


def cited_files() -> list[Path]:
    """The files whose citations must resolve (this file's examples excluded)."""
    files = [ROOT / "README.md"]
    for folder, patterns in [
        ("src", ["*.py"]),
        ("tests", ["*.py"]),
        ("bench", ["*.py", "*.sh"]),
        ("docs", ["*.md"]),
    ]:
        for pattern in patterns:
            files += sorted((ROOT / folder).rglob(pattern))
    return [f for f in files if f.resolve() != Path(__file__).resolve()]


def defined_rules() -> dict[str, str]:
    """The headings of the document: rule or section number to heading level."""
    headings: dict[str, str] = {}
    for m in HEADING.finditer(DOC.read_text(encoding="utf-8")):
        level, anchor, shown = m.groups()
        assert anchor == shown, f"anchor R{anchor} on the heading of R{shown}"
        assert f"R{anchor}" not in headings, f"R{anchor} is defined twice"
        headings[f"R{anchor}"] = level
    return headings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("masks older puts (R5.1).", ["R5.1"]),
        ("see R13.1\u2013R13.4 and R9", ["R13.1", "R13.4", "R9"]),
        ("hbase-semantics R3-R12, R5.x say", ["R3", "R12", "R5"]),
        ("the rules (R1..R17)", ["R1", "R17"]),
        ("R14.4's bottom/top halves", ["R14.4"]),
        ('    """R5.10: a Delete@5000', ["R5.10"]),
        ("[R2.1](#R2.1)", ["R2.1", "R2.1"]),
        ("def test_r8_4_min_versions(", ["R8.4"]),
        ('put(b"a", 5, row=b"R1"), (b"R12", 1)', []),
        ("HR1 R2D2 R1.2.3 a/R4 r5.1 R100 PR12 ORR1", []),
    ],
)
def test_citation_pattern(text: str, expected: list[str]) -> None:
    assert [rule for rule, _ in citations(text)] == expected


def test_document_numbers_rules_by_section() -> None:
    headings = defined_rules()
    sections = [r for r, level in headings.items() if level == "##"]
    rules = [r for r, level in headings.items() if level == "###"]
    assert all("." not in s for s in sections) and all("." in r for r in rules)
    assert sections == [f"R{i}" for i in range(1, len(sections) + 1)], "sections R1, R2, ..."
    for section in sections:
        inside = [r for r in rules if r.split(".")[0] == section]
        assert inside == [f"{section}.{i}" for i in range(1, len(inside) + 1)], section
    assert len(rules) == sum(1 for r in rules if r.split(".")[0] in sections)


def test_every_cited_rule_is_in_the_document() -> None:
    defined = defined_rules()
    missing: dict[str, list[str]] = {}
    count = 0
    for path in cited_files():
        for rule, line in citations(path.read_text(encoding="utf-8")):
            count += 1
            if rule not in defined:
                missing.setdefault(rule, []).append(f"{path.relative_to(ROOT)}:{line}")
    assert count > 100, "the citation scan found almost nothing; is the pattern broken?"
    assert not missing, "rules cited but not defined in docs/hbase-semantics.md: " + "; ".join(
        f"{rule} at {', '.join(where)}" for rule, where in sorted(missing.items())
    )


def test_cellstore_modules_named_by_the_document_exist() -> None:
    """Module paths are relative to src/cellstore/, test files to tests/, others to the root."""
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`([\w/]+\.py)`", text))
    assert named
    gone = sorted(
        p
        for p in named
        if not any(
            (base / p).exists() for base in (ROOT / "src" / "cellstore", ROOT / "tests", ROOT)
        )
    )
    assert not gone, f"docs/hbase-semantics.md names files that do not exist: {gone}"

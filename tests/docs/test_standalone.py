"""The docs stand alone: README.md and docs/ cite nothing outside the repository.

A reader has the repository and nothing else, so a rule must be stated where it is used, or
pointed to in a file the repository holds (docs/records.md, the shipped JSON Schema, ...):
never a project note, a spec file kept beside the repository, or the issue tracker.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .blocks import ROOT

# Each pattern names what it catches. They are precise on purpose: a random or hypothesis
# seed, a run id such as `demo-002` or a module such as `benchmarks.issue22` are no citation.
OUTSIDE: dict[str, re.Pattern[str]] = {
    "a spec file kept outside": re.compile(r"decisions\.md|\bapi\.md\b|STYLE\.md|\.\./shared"),
    "the seed": re.compile(r"(?<![-\w])(?<!random )(?<!hypothesis )seeds?\b(?!\s*=)", re.IGNORECASE),
    "a numbered outside document": re.compile(r"(?<![-\w])(?<!\w[.,:])00\d(?![-\w]|[.,:]\w)"),
    "the issue tracker": re.compile(
        r"\bissues? #?\d+|\b(?:the|this|that) issue\b|\bissue's\b|\(issue\)|\bissue text\b|"
        r"(?<![\w&/])#\d{1,3}\b",
        re.IGNORECASE,
    ),
}


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def citations(text: str) -> list[tuple[int, str, str]]:
    """(line, what, matched text) for every outside citation in a document's text."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in OUTSIDE.items():
            found += [(number, what, m.group()) for m in pattern.finditer(line)]
    return found


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("a malformed step path (decisions.md, Step paths)", "a spec file kept outside"),
        ("every `fe.<name>` of api.md resolves as before", "a spec file kept outside"),
        ("see ../shared/STYLE.md", "a spec file kept outside"),
        ("`fe.RunRecorder` is the seed's Recording v0", "the seed"),
        ("an input payload, seed 002 and api.md", "the seed"),
        ("The Workfile Standard (002, Record Identity and Retention)", "a numbered outside document"),
        ("keeps 002's invariants", "a numbered outside document"),
        ("## PostgreSQL (`benchmarks/postgres.py`, issue 21)", "the issue tracker"),
        ("# issue 22's rows: import, group commit", "the issue tracker"),
        ("`target` is the issue's target where one is set", "the issue tracker"),
        ("| target (issue) | measured | |", "the issue tracker"),
        ("| target | before (issue text) |", "the issue tracker"),
        ("Since Issue 20 every connection", "the issue tracker"),
        ("fixed in #12", "the issue tracker"),
    ],
)
def test_a_citation_is_caught(line: str, what: str) -> None:
    assert what in {w for _, w, _ in citations(line)}


@pytest.mark.parametrize(
    "line",
    [
        "Forkline's Recording v0 layout, as docs/records.md describes",
        "hypothesis seed 12 replays the failure; random seed 3; `seed=4`, `--seed 5`",
        "run ids `demo-002` and `r.003`, `python -m benchmarks.issue22 --markdown`",
        "see [PostgreSQL](#postgresql-benchmarkspostgrespy) and `&#39;` in HTML, /runs/#1",
        "the JSON Schema ships as `forkline_es/schema/run-record.schema.json`",
        "1,002 events at 10,000 steps",
    ],
)
def test_an_ordinary_line_is_not_a_citation(line: str) -> None:
    assert citations(line) == []


def test_the_docs_cite_nothing_outside_the_repository() -> None:
    problems = [
        f"{path.relative_to(ROOT)}:{number}: {what}: {text!r}"
        for path in documents()
        for number, what, text in citations(path.read_text(encoding="utf-8"))
    ]
    assert not problems, "say the rule, or point into the repository:\n" + "\n".join(problems)

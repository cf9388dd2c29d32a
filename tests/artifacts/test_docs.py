"""docs/verify.md stays true: each python block runs alone and prints the text block after it."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "verify.md"
_BLOCK = re.compile(r"```python\n(.*?)```\s*```text\n(.*?)```", re.S)


def _examples() -> list[tuple[str, str]]:
    return [(code, out) for code, out in _BLOCK.findall(DOC.read_text(encoding="utf-8"))]


def test_the_doc_has_examples() -> None:
    assert len(_examples()) >= 4


@pytest.mark.parametrize(("code", "expected"), _examples())
def test_each_example_prints_what_the_doc_says(code: str, expected: str) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    assert printed.getvalue() == expected

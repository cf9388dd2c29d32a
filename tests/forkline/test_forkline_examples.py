"""Forkline-style example scripts, run on Forkline 0.5.0 and, with only their imports
changed, on ``forkline_es.forkline``.

Forkline 0.5.0's wheel ships no examples, so these are written from its documentation
(the replay ones print the same on both packages; the redaction one differs where
docs/forkline.md documents it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent / "examples"


def run(source: str, folder: Path) -> str:
    script = folder / "example.py"
    script.write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, script.name], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def ported(source: str) -> str:
    """The import change, and nothing else."""
    return source.replace("from forkline import", "from forkline_es.forkline import").replace(
        "from forkline.", "from forkline_es.forkline."
    )


@pytest.mark.parametrize("name", ["replay_happy_path.py", "replay_divergence.py"])
def test_replay_examples_print_the_same(name: str, tmp_path: Path) -> None:
    source = (EXAMPLES / name).read_text(encoding="utf-8")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "ours").mkdir()
    theirs = run(source, tmp_path / "theirs")
    ours = run(ported(source), tmp_path / "ours")
    assert ours == theirs
    assert ours.splitlines()[0] in ("True MATCH: 2 steps, 4 events compared", "diverged False")


def test_redaction_demo(tmp_path: Path) -> None:
    source = (EXAMPLES / "redaction_demo.py").read_text(encoding="utf-8")
    lines = run(ported(source), tmp_path).splitlines()
    assert "sk-secret" not in lines[0] and "abc123" not in lines[0]
    assert "'api_key': '[REDACTED]'" in lines[0] and "'url': 'https://api.example.com'" in lines[0]
    assert lines[1] == "{'card_number': '***', 'amount': 5}"

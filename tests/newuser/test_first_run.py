"""A new user's first five minutes: the README's first command in a fresh copy, then the
commands the demo suggests, each checked for its output and exit status.

Slow (it builds a virtual environment and installs the project into it): deselect it
locally with ``-m 'not newuser'``; CI runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 900
COMMAND_TIMEOUT_S = 120

#: Not part of a checkout a new user would have.
IGNORED = shutil.ignore_patterns(
    ".git", ".venv", "venv", "__pycache__", "*.egg-info", "build", "dist", ".*_cache", ".hypothesis",
    "*.db", "*.db-wal", "*.db-shm", "*.db.artifacts",
)  # fmt: skip

#: What each suggested command must print, and the status it must exit with.
EXPECTED = {
    "runs": (0, ["demo-first", "demo-replay", "demo/translate"]),
    "show": (0, ["summarize", "fetch/1", "recovery"]),
    "step": (0, ["summarize"]),
    "diff": (1, ["summarize"]),  # the replay diverges at summarize, by design
    "verify": (0, ["demo-first"]),
    "rebuild": (0, []),
}


def quick_start() -> list[str]:
    """The command lines of the block under the README's "Quick start" heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def clean_env() -> dict[str, str]:
    """The environment of a shell that has not activated any virtual environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        parts = env.get("PATH", "").split(os.pathsep)
        env["PATH"] = os.pathsep.join(p for p in parts if not p.startswith(venv))
    return env


def run(command: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.newuser
def test_readme_to_a_diffed_and_verified_run(tmp_path: Path) -> None:
    checkout = tmp_path / "forkline_es"
    shutil.copytree(ROOT, checkout, ignore=IGNORED)
    install, _ = quick_start()

    first = run(install, checkout, INSTALL_TIMEOUT_S)
    assert first.returncode == 0, f"`{install}` failed:\n{first.stdout}\n{first.stderr}"
    assert "recorded the demo into runs.db" in first.stdout
    assert (checkout / "runs.db").is_file()
    commands = [" ".join(c.split()) for c in first.stdout.split("Next, try:", 1)[1].strip().splitlines()]
    assert all(c.startswith("forkline-es ") for c in commands)
    assert {c.split()[1] for c in commands} == EXPECTED.keys()

    for command in commands:
        done = run(".venv/bin/" + command, checkout, COMMAND_TIMEOUT_S)
        status, words = EXPECTED[command.split()[1]]
        assert done.returncode == status, (
            f"`{command}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
        for word in words:
            assert word in done.stdout, f"`{command}` did not mention {word!r}:\n{done.stdout}"

    again = run(".venv/bin/forkline-es demo", checkout, COMMAND_TIMEOUT_S)
    assert again.returncode == 0, again.stderr
    assert "already in runs.db" in again.stdout

    missing = run(".venv/bin/forkline-es runs --db nowhere.db", checkout, COMMAND_TIMEOUT_S)
    assert missing.returncode == 2
    assert "forkline-es demo" in missing.stderr
    assert not (checkout / "nowhere.db").exists()

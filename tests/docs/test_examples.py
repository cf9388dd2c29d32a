"""Every example in README.md and docs/*.md runs, so the docs cannot rot (rules: blocks.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.demo import demo_ids, record_demo

from .blocks import SHELL, Block, blocks, commands, doc_files

TIMEOUT_S = 120
BIN = Path(sys.executable).parent  # the forkline-es script of the interpreter running the tests

ALL_BLOCKS = [b for path in doc_files() for b in blocks(path)]
PYTHON = [b for b in ALL_BLOCKS if b.lang in ("python", "py")]
SHELL_BLOCKS = [b for b in ALL_BLOCKS if b.lang in SHELL and commands(b)]


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the demo's runs.db (and its artifacts), recorded once."""
    folder = tmp_path_factory.mktemp("demo-db")
    with fe.Store.open(folder / "runs.db") as store:
        ids, _ = demo_ids(store)
        record_demo(store, ids)
    return folder


def fresh_copy(demo_dir: Path, into: Path) -> Path:
    for item in demo_dir.iterdir():
        if item.is_dir():
            shutil.copytree(item, into / item.name)
        else:
            shutil.copy2(item, into / item.name)
    return into


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)  # the example sees the installed package, as a reader would
    return env


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_python_example_runs(block: Block, demo_dir: Path, tmp_path: Path) -> None:
    cwd = fresh_copy(demo_dir, tmp_path)
    script = cwd / "doc_example.py"
    script.write_text(block.text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, script.name],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, f"{block.where} failed:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=[b.where for b in SHELL_BLOCKS])
def test_shell_commands_run(block: Block, demo_dir: Path, tmp_path: Path) -> None:
    cwd = fresh_copy(demo_dir, tmp_path)
    for command in commands(block):
        done = subprocess.run(
            ["bash", "-c", command.line],
            cwd=cwd,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        assert done.returncode == command.expect, (
            f"{block.where}: `{command.line}` exited {done.returncode}, the doc says {command.expect}:\n"
            f"{done.stdout}\n{done.stderr}"
        )


def test_the_docs_have_examples_to_run() -> None:
    """The two tests above are not vacuous: the README alone has Python and commands."""
    readme = Path(__file__).resolve().parents[2] / "README.md"
    assert any(b.file == readme for b in PYTHON)
    assert any(b.file == readme for b in SHELL_BLOCKS)


def test_block_rules() -> None:
    """The extraction rules themselves, on a small document."""
    doc = Path(__file__).with_name("sample.md.txt")
    sample = blocks(doc)
    assert [b.lang for b in sample] == ["console", "sh", "text", "python"]
    assert [(c.line, c.expect) for c in commands(sample[0])] == [
        ("forkline-es runs --json", 0),
        ("forkline-es diff a b  # exit 1", 1),
    ]
    assert [c.line for c in commands(sample[1])] == ["forkline-es show demo-first --db x.db"]
    assert commands(sample[2]) == []

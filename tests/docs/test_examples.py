"""Every example in README.md and docs/*.md runs, so the docs cannot rot (rules: blocks.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

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


#: What differs from one run of an example to the next: recording times, generated run ids.
_VOLATILE: Final = (
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<run id>"),
)


def steady(text: str) -> str:
    for pattern, stands_for in _VOLATILE:
        text = pattern.sub(stands_for, text)
    return text


def shown_output(block: Block) -> str | None:
    """The ```text block right after a printing example (only blank lines between): what the
    doc says it prints."""
    if "print(" not in block.text:
        return None
    closing = block.line + len(block.text.splitlines()) + 1  # 1-based line of the closing fence
    later = [b for b in blocks(block.file) if b.line > closing]
    if not later or later[0].lang != "text":
        return None
    lines = block.file.read_text(encoding="utf-8").splitlines()
    between = lines[closing : later[0].line - 1]
    return later[0].text if all(not line.strip() for line in between) else None


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_python_example_runs(block: Block, demo_dir: Path, tmp_path: Path) -> None:
    """Each example runs; one followed directly by a ```text block prints exactly that text."""
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
    shown = shown_output(block)
    if shown is not None:
        assert steady(done.stdout) == steady(shown), f"{block.where} prints other than its doc shows"


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
    assert len([b for b in PYTHON if shown_output(b) is not None]) >= 8  # outputs compared


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

"""Fenced code blocks of the Markdown docs, and the commands inside shell blocks.

The rules the docs follow (README.md says so too):
- a ```python block is a whole program: it runs alone, in a fresh directory;
- a ```sh, ```bash or ```console block's lines that start with ``forkline-es`` (after a
  ``$ `` prompt in a console block) are run in order, in a directory holding the demo's
  ``runs.db``; each must exit 0, or with the status a trailing ``# exit N`` comment states;
- a ```text block (and any other language) is shown, never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL = ("sh", "bash", "console", "shell")

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_EXIT = re.compile(r"#\s*exits?\s+(\d+)\s*$")


@dataclass(frozen=True)
class Block:
    file: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Command:
    line: str  # the command as a shell would run it (continuations joined, no prompt)
    expect: int


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``; an unclosed fence is an error, not silence."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, lang = m.groups()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent) :] if line.startswith(indent) else line)
            i += 1
        if i == len(lines):
            raise ValueError(f"{path}:{start + 1}: the code block is never closed")
        found.append(Block(path, start + 1, lang.lower(), "\n".join(body) + "\n"))
        i += 1
    return found


def commands(block: Block) -> list[Command]:
    """The ``forkline-es`` commands of a shell block, with the exit status each expects."""
    if block.lang not in SHELL:
        return []
    joined: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        line = raw.strip()
        if block.lang == "console" and not pending:
            if not line.startswith("$ "):
                continue  # output shown after a prompt
            line = line[2:]
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        joined.append(pending + line)
        pending = ""
    found = []
    for line in joined:
        line = line.strip()
        if not line.startswith("forkline-es"):
            continue
        m = _EXIT.search(line)
        found.append(Command(line, int(m.group(1)) if m else 0))
    return found

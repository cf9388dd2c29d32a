"""The quick start, the CLI reference and the command line's promises stay true."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner

from forkline_es.cli.main import SECTIONS, main

from .blocks import ROOT, blocks

READ_SECTIONS = ("Inspect", "Compare and check")


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "tools" / "gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quick_start() -> list[str]:
    """The command lines of the first block under the README's "Quick start" heading."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    heading = text.index("\n## Quick start\n")
    line = text[:heading].count("\n") + 2
    block = next(b for b in blocks(readme) if b.line > line)
    return [c for c in block.text.splitlines() if c.strip() and not c.lstrip().startswith("#")]


def leaf_commands(
    group: click.Group = main, prefix: str = "forkline-es"
) -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            yield from leaf_commands(command, path)
        else:
            yield path, command


def read_commands() -> list[tuple[str, click.Command]]:
    names = {n for section in READ_SECTIONS for n in SECTIONS[section]}
    return [(p, c) for p, c in leaf_commands() if p.split()[1] in names]


def test_quick_start_is_exactly_two_commands() -> None:
    install, test = quick_start()
    assert "-m venv .venv" in install and "forkline-es demo" in install
    assert "pytest" in test


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, test = quick_start()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test.strip() in [line.strip() for line in ci]


def test_cli_reference_is_generated_from_help() -> None:
    generated = load_generator().render()
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == generated, "docs/cli.md is stale: run python tools/gen_cli_docs.py"


def test_every_command_is_documented() -> None:
    documented = load_generator().documented_commands((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))
    groups = {f"forkline-es {n}" for n, c in main.commands.items() if isinstance(c, click.Group)}
    assert {p for p, _ in leaf_commands()} | groups | {"forkline-es"} <= documented


def test_every_command_has_a_section_in_help() -> None:
    placed = {n for names in SECTIONS.values() for n in names}
    assert set(main.commands) <= placed, "add the command to cli/main.py SECTIONS"


def test_every_command_takes_db_and_every_read_takes_json() -> None:
    for path, command in leaf_commands():
        if path.startswith("forkline-es forkline ci "):
            continue  # Forkline's CI commands work on artifact files and scripts, never a database
        options = {o for p in command.params for o in p.opts}
        assert "--db" in options, f"{path} has no --db"
    for path, command in [*read_commands(), ("forkline-es rebuild", main.commands["rebuild"])]:
        options = {o for p in command.params for o in p.opts}
        assert "--json" in options, f"{path} reads but has no --json"


def test_db_before_the_subcommand_applies_to_it(tmp_path: Path) -> None:
    db = str(tmp_path / "g.db")
    runner = CliRunner()
    assert runner.invoke(main, ["--db", db, "demo"]).exit_code == 0
    listed = runner.invoke(main, ["--db", db, "runs", "--json"])
    assert listed.exit_code == 0 and "demo-first" in listed.output
    dry = runner.invoke(main, ["--db", db, "retention", "apply", "--keep-last", "1", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    checked = runner.invoke(main, ["--db", db, "rebuild", "--check", "--json"])
    assert checked.exit_code == 0 and '"equal":true' in checked.output
    missing = runner.invoke(main, ["--db", str(tmp_path / "none.db"), "runs"])
    assert missing.exit_code == 2 and not (tmp_path / "none.db").exists()


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert re.fullmatch(r"forkline-es, version \d+\.\d+\.\d+\S*\n", result.output)


@pytest.mark.parametrize("path", [p for p, _ in read_commands()])
def test_read_command_on_a_missing_database_suggests_the_demo(path: str, tmp_path: Path) -> None:
    command = dict(read_commands())[path]
    args = [
        a
        for p in command.params
        if isinstance(p, click.Argument)
        for a in ["demo-first"] * (p.nargs if p.nargs > 0 else 2)
    ]
    db = tmp_path / "missing.db"
    result = CliRunner().invoke(main, [*path.split()[1:], *args, "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "forkline-es demo" in result.stderr
    assert not db.exists()


def test_relative_links_point_at_files() -> None:
    """A link to a doc or a source file that moved is rot too."""
    link = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in link.findall(doc.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to missing {target}"


def test_readme_benchmark_figures_come_from_docs_benchmarks() -> None:
    """Every figure of the README's benchmark section is one docs/benchmarks.md states."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- benchmarks:start", 1)[1].split("<!-- benchmarks:end -->", 1)[0]
    source = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    figures = re.findall(r"\d[\d,.]*\d|\d", section)
    assert len(figures) > 10
    missing = [f for f in figures if f not in source]
    assert not missing, f"README benchmark figures not in docs/benchmarks.md: {missing}"


@pytest.mark.parametrize(
    "args", [["show", "nope"], ["step", "nope", "a"], ["export", "nope"], ["log", "nope"]]
)
def test_a_refusal_prints_its_code(args: list[str], tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    assert CliRunner().invoke(main, ["demo", "--db", db]).exit_code == 0
    result = CliRunner().invoke(main, [*args, "--db", db])
    assert result.exit_code == 2
    assert "run-not-found" in result.stderr

"""`forkline-es --help` lists each command with its whole first sentence, never cut."""

from __future__ import annotations

import click
from click.testing import CliRunner

from forkline_es.cli.main import main, summary


def test_every_summary_is_whole_sentences_and_shown_whole() -> None:
    out = CliRunner().invoke(main, ["--help"], terminal_width=100).output
    assert "..." not in out.split("\n", 1)[1]  # the usage line has its own [ARGS]...
    flat = " ".join(out.split())
    for name, command in main.commands.items():
        text = summary(command)
        assert text.endswith((".", ")")) and text[:1].isupper(), (name, text)
        assert " ".join(text.split()) in flat, name  # wrapped, never shortened


def test_summary_is_the_first_paragraph() -> None:
    command = click.Command("x", help="First line\n    goes on.\n\n    Second paragraph.")
    assert summary(command) == "First line goes on."


def _every_command(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name, command in group.commands.items():
        out.append((prefix + name, command))
        if isinstance(command, click.Group):
            out += _every_command(command, f"{prefix}{name} ")
    return out


def test_every_command_and_option_help_is_whole_sentences() -> None:
    """Subcommands of groups (`retention apply`) and every option too: no help cut short."""
    commands = _every_command(main)
    assert any(name == "retention apply" for name, _ in commands) and any(n == "stats" for n, _ in commands)
    for name, command in commands:
        text = summary(command)
        assert text.endswith((".", ")")) and text[:1].isupper(), (name, text)
        help_text = CliRunner().invoke(main, [*name.split(), "--help"], terminal_width=100).output
        assert " ".join(text.split()) in " ".join(help_text.split()), name
        for param in command.params:
            if isinstance(param, click.Option) and param.help:
                assert param.help.rstrip().endswith((".", ")")) and param.help[:1].isupper(), (
                    name,
                    param.name,
                )

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

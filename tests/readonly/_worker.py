"""Reads a store read-only in a place the operating system refuses to write, for the parent.

``python _worker.py DB``: open DB with ``read_only=True``, print one JSON line: every read of
``helpers.READS``, each write call's outcome, and each read command's exit status and output.
"""

from __future__ import annotations

import json
import sys

from click.testing import CliRunner
from helpers import reads, refused_writes  # this script's folder is on sys.path

import forkline_es as fe
from forkline_es.cli import main

COMMANDS = (
    ("runs", "--json"),
    ("show", "done", "--json"),
    ("step", "done", "fetch/0", "--json"),
    ("log", "done", "--json"),
    ("diff", "done", "done"),
    ("export", "done"),
    ("verify", "--all"),
)


def run(db: str) -> None:
    with fe.Store.open(db, read_only=True) as store:
        out = {"reads": reads(store), "writes": refused_writes(store)}
    cli = {}
    for args in COMMANDS:
        result = CliRunner().invoke(main, [*args, "--db", db])
        cli[args[0]] = [result.exit_code, result.output]
    out["cli"] = cli
    print(json.dumps(out, sort_keys=True), flush=True)


if __name__ == "__main__":
    run(sys.argv[1])

"""Golden-run assertions for pytest: a run must match its stored baseline file."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from forkline_es.errors import InvalidRequest
from forkline_es.replay.baseline import export_baseline, live_document, load_baseline
from forkline_es.replay.diff import diff_documents

if TYPE_CHECKING:
    from forkline_es.store import Store

__all__ = ["assert_matches_baseline", "rerecord_command", "write_baseline"]


def _in_memory(store: Store) -> bool:
    return store.path in ("", ":memory:")


def rerecord_command(store: Store, run_id: str, path: str | Path) -> str:
    """How to (re-)record the baseline at ``path`` from ``run_id``: the shell command.

    An in-memory store exists only in this process, where no command can open it: then
    it is the Python call, ``fe.testing.write_baseline(store, run_id, path)``.
    """
    if _in_memory(store):
        return f"fe.testing.write_baseline(store, {run_id!r}, {str(path)!r})"
    return (
        f"forkline-es export --db {shlex.quote(store.path)} --baseline {shlex.quote(run_id)}"
        f" > {shlex.quote(str(path))}"
    )


def write_baseline(store: Store, run_id: str, path: str | Path) -> None:
    """Write the run's baseline to ``path`` (what the re-record command does)."""
    Path(path).write_bytes(export_baseline(store, run_id))


def assert_matches_baseline(store: Store, run_id: str, path: str | Path) -> None:
    """Fail with the first divergence and the re-record command unless the run matches.

    A missing or unreadable baseline fails too, with the command that records it.
    """
    command = rerecord_command(store, run_id, path)
    if not Path(path).exists():
        raise AssertionError(f"no baseline at {path}; record it with:\n  {command}")
    try:
        baseline = load_baseline(path)
    except InvalidRequest as e:
        raise AssertionError(f"{e.message}\nRe-record it with:\n  {command}") from None
    diff = diff_documents(baseline, live_document(store, run_id), resolve=store.get_run_record)
    if diff.first is None:
        return
    more = len(diff.divergences) - 1
    lister = ""
    if not _in_memory(store):
        q = shlex.quote
        diff_all = f"forkline-es diff --db {q(store.path)} --all --baseline {q(str(path))} {q(run_id)}"
        lister = f"; `{diff_all}` lists them"
    raise AssertionError(
        f"run {run_id} does not match the baseline {path}:\n"
        f"{diff.first.describe()}\n"
        + (f"({more} more divergences{lister})\n" if more else "")
        + f"If the new behaviour is intended, re-record the baseline with:\n  {command}"
    )

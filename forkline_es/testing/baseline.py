"""Golden-run assertions for pytest: a run must match its stored baseline file."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from forkline_es.replay.baseline import export_baseline, load_baseline
from forkline_es.replay.diff import diff_documents

if TYPE_CHECKING:
    from forkline_es.store import Store

__all__ = ["assert_matches_baseline", "rerecord_command", "write_baseline"]


def rerecord_command(store: Store, run_id: str, path: str | Path) -> str:
    """The shell command that (re-)records the baseline at ``path`` from ``run_id``."""
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
    baseline = load_baseline(path)
    diff = diff_documents(baseline, store.get_run_record(run_id), resolve=store.get_run_record)
    if diff.first is None:
        return
    more = len(diff.divergences) - 1
    raise AssertionError(
        f"run {run_id} does not match the baseline {path}:\n"
        f"{diff.first.describe()}\n"
        + (f"({more} more divergences; `forkline-es diff --all` lists them)\n" if more else "")
        + f"If the new behaviour is intended, re-record the baseline with:\n  {command}"
    )

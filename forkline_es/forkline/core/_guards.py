"""Replay mode: while it is on, a guarded live call (a tool, an LLM, the network) raises.

A context variable, so the mode follows the code that entered it: other threads and
asyncio tasks started outside it are unaffected, and nested modes restore the outer one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from forkline_es.forkline.core._errors import DeterminismViolationError

__all__ = [
    "assert_not_in_replay_mode",
    "get_replay_run_id",
    "guard_live_call",
    "is_replay_mode_active",
    "replay_mode",
]

_active: contextvars.ContextVar[bool] = contextvars.ContextVar("forkline_replay_active", default=False)
_run_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("forkline_replay_run_id", default=None)


def is_replay_mode_active() -> bool:
    return _active.get()


def get_replay_run_id() -> str | None:
    """The run being replayed, or None outside replay mode (or when none was named)."""
    return _run_id.get() if _active.get() else None


def assert_not_in_replay_mode(operation: str = "live call") -> None:
    """Raise ``DeterminismViolationError`` (``live_call_during_replay``) in replay mode."""
    if _active.get():
        run_id = _run_id.get() or "unknown"
        raise DeterminismViolationError(
            f"Live {operation} attempted during replay of run '{run_id}'. "
            "Replay mode forbids live calls to ensure determinism. Use recorded artifacts instead.",
            step_idx=-1,
            expected="<recorded artifact>",
            actual=f"<live {operation}>",
            violation_type="live_call_during_replay",
        )


def guard_live_call(operation: str = "live call") -> None:
    """Call first thing in a tool or LLM adapter: refuses to run while a run is replayed."""
    assert_not_in_replay_mode(operation)


@contextmanager
def replay_mode(run_id: str | None = None) -> Iterator[None]:
    """Turn replay mode on for the block; the previous mode (and run id) come back after it."""
    active = _active.set(True)
    named = _run_id.set(run_id)
    try:
        yield
    finally:
        _active.reset(active)
        _run_id.reset(named)

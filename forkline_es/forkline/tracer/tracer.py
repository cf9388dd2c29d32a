"""Forkline's ``Tracer``: ``with Tracer() as t: with t.step("fetch"): t.record_event(...)``.

Steps are numbered 0, 1, 2, ... in the order they are entered (nested ones too), and
recorded through ``SQLiteStore``. Where Forkline's step store only stamps an end time, a
step left by an exception ends here with outcome ``failed`` (and ``succeeded`` otherwise),
so the run's documents say which steps failed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from forkline_es.errors import InvalidRequest
from forkline_es.forkline.core.types import Event
from forkline_es.forkline.storage.store import SQLiteStore

__all__ = ["NoActiveStep", "StepScope", "Tracer"]


class NoActiveStep(InvalidRequest, RuntimeError):
    """``record_event`` outside ``tracer.step(...)``: a RuntimeError, as Forkline raises, with a code."""


@dataclass
class Tracer:
    store: SQLiteStore = field(default_factory=SQLiteStore)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    _active_step_idx: int | None = field(default=None, init=False, repr=False)
    _next_step_idx: int = field(default=0, init=False, repr=False)

    def __enter__(self) -> Tracer:
        self.store.start_run(self.run_id)
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None  # the run stays open, as in Forkline: the step store has no run end

    def step(self, name: str) -> StepScope:
        return StepScope(tracer=self, name=name)

    def record_event(self, name: str, payload: dict[str, Any] | None = None) -> Event:
        """Append an event to the innermost active step."""
        if self._active_step_idx is None:
            raise NoActiveStep("No active step. Use tracer.step(...) context.")
        return self.store.append_event(
            run_id=self.run_id, step_idx=self._active_step_idx, type=name, payload_dict=payload or {}
        )


@dataclass
class StepScope:
    tracer: Tracer
    name: str
    idx: int = 0
    _previous_step_idx: int | None = field(default=None, init=False, repr=False)

    def __enter__(self) -> StepScope:
        tracer = self.tracer
        idx = tracer._next_step_idx
        tracer.store.start_step(tracer.run_id, idx, self.name)  # refused: no step is entered
        self.idx, self._previous_step_idx = idx, tracer._active_step_idx
        tracer._next_step_idx, tracer._active_step_idx = idx + 1, idx
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        tracer = self.tracer
        try:
            tracer.store.end_step(tracer.run_id, self.idx, outcome="succeeded" if e is None else "failed")
        finally:
            tracer._active_step_idx = self._previous_step_idx

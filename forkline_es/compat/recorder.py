"""Forkline's ``RunRecorder`` (Recording v0), recorded as runs of the engine.

Switching is one import: ``from forkline_es import RunRecorder``. Each call delegates:
``start_run`` is ``Store.start_run(workflow=entrypoint)``, ``log_event`` appends one
non-entry ``forkline-logged`` event through the run's handle (its payload, redacted, as
canonical JSON in slot ``payload``), ``end_run`` concludes the run. Reads go through the
``runs`` and ``events`` views (``compat.views``), the same ones ``sqlite3`` shows. Where
Forkline is silently wrong (unknown runs, duplicate ids, non-JSON payloads), this refuses
with a coded error instead; docs/forkline.md lists every difference.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Any, Final

from forkline_es.compat.views import RUN_COLUMNS, run_events
from forkline_es.errors import Conflict, InvalidRequest, RunNotFound, RunNotRetained, shown
from forkline_es.log.connection import Durability
from forkline_es.log.events import ONE_OFF_KEY, ForklineLogged, Slot
from forkline_es.recording.payloads import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    EARLY,
    SIZED,
    check_least_size,
    too_large,
)
from forkline_es.recording.run import Run
from forkline_es.recording.state import check_text
from forkline_es.redaction import RedactionPolicy, checked_policy
from forkline_es.store import Store
from forkline_es.values import canonical_json, decode_json, is_text, sha256_digest

__all__ = ["STATUSES", "RunRecorder", "logged_event"]

#: Forkline status -> (engine terminal outcome, conclude code). The engine's own outcomes
#: are accepted as they are; the ``runs`` view maps them back to Forkline's words.
STATUSES: Final[dict[str, tuple[str, str | None]]] = {
    "success": ("succeeded", None),
    "failure": ("failed", None),
    "error": ("failed", "error"),
    "succeeded": ("succeeded", None),
    "failed": ("failed", None),
    "cancelled": ("cancelled", None),
    "stopped": ("stopped", None),
}

_SELECT_RUN: Final = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE run_id = ?"
_POSITION: Final = "SELECT position FROM log WHERE run_id = ? AND seq = ?"
_RACES: Final = 1_000  # appends lost in a row to other writers before giving up
_HANDLES: Final = 256  # run handles kept open per recorder; older ones are re-read on demand
_decode: Final = decode_json  # payloads may hold integers of any size


def logged_event(
    policy: RedactionPolicy,
    event_type: str,
    payload: Any,
    limit: int = DEFAULT_MAX_PAYLOAD_BYTES,
    step: str | None = None,
) -> tuple[ForklineLogged, tuple[tuple[str, bytes], ...]]:
    """The event and payload row of one ``log_event``: the payload redacted, then canonical JSON.

    A value JSON cannot carry is refused with ``invalid-value`` naming where it is, and so
    is canonical JSON longer than ``limit`` bytes (the store's ``max_payload_bytes``).
    ``step`` is the step path of a step store's event.
    """
    check_text(event_type, "event_type")
    # A policy without rules changes nothing; canonical_json checks the value either way.
    redacted = policy.redact(payload) if policy._rules else payload
    if type(redacted) in SIZED and len(redacted) > EARLY:
        check_least_size("payload", redacted, limit, typed=False)
    data = canonical_json(redacted)
    if len(data) > limit:  # here too, not only in Run._record: the importer checks a whole source first
        raise too_large("payload", data, limit)
    event = ForklineLogged(
        event_type=event_type,
        slots={"payload": Slot(state="present", digest=sha256_digest(data))},
        step=step,
    )
    return event, (("payload", data),)


class RunRecorder:
    """Forkline's explicit recorder: start a run, log events in order, end it.

    ``redaction_policy=None`` applies ``RedactionPolicy.default()``, as Forkline 0.5.0 does;
    pass ``RedactionPolicy.none()`` to store payloads unredacted. ``durability`` is the
    store's (``"normal"``: survives a crash; ``"full"``: also a power loss, like Forkline);
    so is ``max_payload_bytes``, the longest payload's canonical JSON (``Store.open``).
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] = "runs.db",
        redaction_policy: RedactionPolicy | None = None,
        *,
        durability: Durability = "normal",
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        if redaction_policy is None:
            redaction_policy = RedactionPolicy.default()
        self.redaction_policy = checked_policy(redaction_policy, "redaction_policy")
        self.db_path = os.fspath(db_path)
        self.store = Store.open(
            self.db_path,
            durability=durability,
            redaction=redaction_policy,
            max_payload_bytes=max_payload_bytes,
        )
        self._handles: dict[str, Run] = {}
        # Idempotency keys unique to this recorder and call: two identical log_event calls
        # are two events, never one call repeated (see _log).
        nonce = uuid.uuid4().hex[:12]
        self._keys = (f"{ONE_OFF_KEY}{nonce}:{n}" for n in itertools.count(1))

    def close(self) -> None:
        self._handles.clear()
        self.store.close()

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunRecorder(db_path={self.db_path!r})"

    # -- writing ---------------------------------------------------------------------------

    def start_run(self, entrypoint: str, run_id: str | None = None) -> str:
        """Start a run (environment snapshot included) and return its id, a UUID hex if not given.

        A ``run_id`` already taken (or once taken by an evicted run) is a ``conflict``.
        """
        rid = uuid.uuid4().hex if run_id is None else run_id
        # A key of its own: a start under a taken id, even a concurrent one, cannot pass for a
        # repeat of that run's start, so the store refuses it.
        run = self.store.start_run(workflow=entrypoint, run_id=rid, key=next(self._keys))
        self._remember(run)
        return rid

    def log_event(self, run_id: str, event_type: str, payload: Any) -> int:
        """Append one event and return its ``event_id`` (its global log position, increasing).

        The payload is redacted, then stored as canonical JSON; a value JSON cannot carry
        (NaN, infinities, bytes, sets, non-string keys, objects) is refused with
        ``invalid-value`` naming where it is. An unknown run is ``run-not-found``; a run
        already ended is a ``conflict``.
        """
        limit = self.store.max_payload_bytes
        event, payloads = logged_event(self.redaction_policy, event_type, payload, limit)
        key = next(self._keys)
        run, seq = self._append(run_id, lambda r: r._append_event(event, key, payloads))
        if run.last_position is not None:
            return run.last_position
        rows = self.store.backend.cursor().execute(_POSITION, (run.id, seq)).fetchall()  # a repeated call
        return int(rows[0][0])

    def end_run(self, run_id: str, status: str = "success") -> None:
        """Conclude the run. ``success``/``failure``/``error`` map to the engine's outcomes.

        Ending it again with the same status is a no-op; with another, a ``conflict``.
        """
        mapped = STATUSES.get(status) if isinstance(status, str) else None
        if mapped is None:
            raise InvalidRequest(f"status must be one of {sorted(STATUSES)}, not {shown(status)}")
        outcome, code = mapped
        key = f"conclude:{outcome}:{code or ''}"  # "success" twice, or then "succeeded": one call
        self._append(run_id, lambda r: r.conclude(outcome, code=code, key=key))
        self._handles.pop(run_id, None)

    def _remember(self, run: Run) -> None:
        if len(self._handles) >= _HANDLES:
            self._handles.pop(next(iter(self._handles)))
        self._handles[run.id] = run

    def _append(self, run_id: str, call: Callable[[Run], int]) -> tuple[Run, int]:
        """Run ``call(handle)``; when other writers appended to the run first, catch up and retry.

        Forkline lets several processes log to one run; here each such race is a seq
        clash (``conflict``, nothing written). The handle then reads the rows appended
        since and tries again, as long as each conflict comes with new rows; a conflict
        with nothing new in the log (the run was ended) is the answer. Retrying is safe:
        a call whose commit was not acknowledged is adopted by the handle (``Run._record``).
        """
        run = self._handles.get(run_id) if type(run_id) is str else None  # cached: checked
        if run is None:
            run = self._resume(run_id)  # checks run_id
            self._remember(run)
        for _ in range(_RACES):
            try:
                return run, call(run)
            except Conflict:
                fresh = run._caught_up()
                self._handles.pop(run_id, None)
                if fresh is None:
                    raise
                run = fresh
                self._remember(run)
        raise Conflict(
            f"run {run_id!r}: lost {_RACES} races for the next seq in a row to other writers; retry"
        )

    def _resume(self, run_id: str) -> Run:
        check_text(run_id, "run_id")
        try:
            return self.store.resume_run(run_id)
        except RunNotRetained:
            raise
        except RunNotFound:
            raise RunNotFound(
                f"no run {run_id!r} in {self.db_path}; start it with start_run(...) first"
            ) from None

    # -- reading ---------------------------------------------------------------------------

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run's row of the ``runs`` view as a dict, or None when there is no such run."""
        if not is_text(run_id):
            return None  # no run can have that identifier (Forkline too answers None)
        rows = self.store.backend.cursor().execute(_SELECT_RUN, (run_id,)).fetchall()
        return dict(zip(RUN_COLUMNS, rows[0], strict=True)) if rows else None

    def get_events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's events ordered by ``event_id``; ``payload`` decoded (None if removed)."""
        out: list[dict[str, Any]] = []
        if not is_text(run_id):
            return out  # no run can have that identifier
        for event_id, rid, ts, kind, payload in run_events(self.store, run_id):
            out.append(
                {
                    "event_id": event_id,
                    "run_id": rid,
                    "ts": ts,
                    "type": kind,
                    "payload": None if payload is None else _decode(payload),
                }
            )
        return out

"""Importing a Forkline 0.5.0 ``runs.db``: its runs become runs of the engine, times kept.

Switching is one import, but a Forkline database already on disk is another application's
file, which a store refuses to write. ``import_forkline`` reads it (read-only, never
changed) and records each of its runs into a store through the same log as
``RunRecorder``: a start with the source's environment snapshot, one ``forkline-logged``
event per source event in ``event_id`` order (payload redacted by the policy, then
canonical JSON), and a conclusion when the source run has a status. Every row keeps the
source's timestamp (``Store._recorded_at``), so ``runs``/``events`` show the same times.

Everything is checked before anything is written: orphan events (Forkline does not
enforce its foreign key), payloads that are not standard JSON (``NaN``), statuses with no
engine outcome, unreadable timestamps, and run ids the store already holds for another
run are refused with one ``invalid-request`` (or ``conflict``) listing them. Each run is
then written in its own transactions (its start, then its events and conclusion in one
batch) under idempotency keys derived from the source, so an import interrupted by a
crash is finished by running it again: what was written is recognised, not duplicated.

A Forkline step store (``SQLiteStore``'s ``forkline.db``) is imported the same way, each run
as ``forkline_es.forkline.SQLiteStore`` records one (``compat.steps``): its start, then its
steps' begins, events and ends in the order of their times, a step's events never before
its begin. Steps or events Forkline's ``load_run`` could never show (an event of no step, a
second step of one index) refuse the import like orphan events.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from forkline_es._logging import get_logger
from forkline_es.compat.recorder import STATUSES, logged_event
from forkline_es.compat.steps import (
    STEP_COLUMNS,
    STEP_EVENT_COLUMNS,
    STEP_STORE_WORKFLOW,
    has_step_store_tables,
    step_arguments,
)
from forkline_es.compat.views import EVENT_COLUMNS, RUN_COLUMNS, has_forkline_tables
from forkline_es.errors import Conflict, InvalidRequest, RecordError
from forkline_es.log.events import RunStarted
from forkline_es.log.foreign import ForeignFile, ForeignFileError, open_foreign
from forkline_es.recording.payloads import encode_slots
from forkline_es.redaction import RedactionPolicy, checked_policy
from forkline_es.store import Store
from forkline_es.values import is_text
from forkline_es.values._bigint import int_from_text
from forkline_es.values._paths import Refused
from forkline_es.values._time import utc_text

__all__ = ["ImportReport", "import_forkline"]

_log = get_logger("forkline_es.compat")

#: The idempotency key of an imported run's start; a run already in the store under any
#: other start key is not an earlier import of this run.
START_KEY: Final = "forkline-import:start"
_END_KEY: Final = "forkline-import:end"
_EVENT_KEY: Final = "forkline-import:"  # + the source event_id
_STEP_KEY: Final = "forkline-import:step:"  # + the source step_id
_STEP_END_KEY: Final = "forkline-import:step-end:"  # + the source step_id
#: Problems listed in a refusal before the rest are counted.
_LISTED: Final = 10


@dataclass(frozen=True, slots=True)
class ImportReport:
    """``runs``: runs of the source, now all in the store; ``events``: their events;
    ``resumed``: runs an earlier import of the source had begun (nothing of them repeated,
    what it lacked added)."""

    source: str
    runs: int
    events: int
    resumed: int


@dataclass(frozen=True, slots=True)
class _SourceRun:
    run_id: str
    entrypoint: str
    started_at: str
    ended_at: str | None
    status: str | None
    env: dict[str, str]


def _instant(text: object, what: str) -> str:
    """A Forkline ISO 8601 timestamp as canonical UTC text (a naive one is UTC, as Forkline writes)."""
    if not isinstance(text, str):
        raise ValueError(f"{what} is {text!r}, not an ISO 8601 timestamp")
    try:
        dt = datetime.fromisoformat(text)
        return utc_text(dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC))
    except ValueError:
        raise ValueError(f"{what} {text!r} is not an ISO 8601 timestamp") from None
    except Refused as e:
        raise ValueError(f"{what} {text!r}: {e}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


def _payload(text: object) -> Any:
    if not isinstance(text, str):
        raise ValueError(f"payload is {type(text).__name__}, not JSON text")
    try:  # integers of any size are values; Python's own parser stops at 4,300 digits
        return json.loads(text, parse_int=int_from_text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("payload is JSON nested too deeply to read") from None


def _open_source(path: str) -> tuple[ForeignFile, bool]:
    """The source, read-only, and whether it is a step store (``forkline.db``) rather than a
    ``runs.db``."""
    if not os.path.isfile(path):
        raise InvalidRequest(f"no Forkline database at {path}")
    try:
        conn = open_foreign(path)
        recorder, steps = has_forkline_tables(conn), has_step_store_tables(conn)
    except ForeignFileError as e:
        raise InvalidRequest(f"{path} is not a readable SQLite database: {e}") from None
    if not (recorder or steps):
        conn.close()
        raise InvalidRequest(
            f"{path} is not a Forkline database (neither a runs.db with Recording v0 runs and "
            "events tables, nor a step store with runs, steps and events tables)"
        )
    return conn, steps and not recorder


def _run(row: tuple[Any, ...]) -> _SourceRun:
    """One source run, converted; a row that cannot be raises ValueError naming it."""
    values = dict(zip(RUN_COLUMNS, row, strict=True))
    rid = values["run_id"]
    if not isinstance(rid, str) or not rid:
        raise ValueError(f"run id {rid!r} is not a nonempty string")
    if not is_text(rid) or "\x00" in rid:
        raise ValueError(f"run id {rid!r} is not Unicode text without NUL")
    if not isinstance(values["entrypoint"], str) or not values["entrypoint"]:
        raise ValueError(f"run {rid}: entrypoint {values['entrypoint']!r} is not a nonempty string")
    if not is_text(values["entrypoint"]) or "\x00" in values["entrypoint"]:
        raise ValueError(f"run {rid!r}: entrypoint {values['entrypoint']!r} is not Unicode text without NUL")
    status = values["status"]
    if status is not None and status not in STATUSES:
        raise ValueError(f"run {rid}: status {status!r} has no engine outcome (one of {sorted(STATUSES)})")
    ended = values["ended_at"]
    return _SourceRun(
        run_id=rid,
        entrypoint=values["entrypoint"],
        started_at=_instant(values["started_at"], f"run {rid}: started_at"),
        ended_at=None if ended is None else _instant(ended, f"run {rid}: ended_at"),
        status=status,
        env={k: str(values[k]) for k in ("python_version", "platform", "cwd") if values[k] is not None},
    )


def _rows(conn: ForeignFile, table: str, columns: tuple[str, ...], order: str) -> Iterator[Any]:
    yield from conn.rows(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}")


def _closed_differently(store: Store, run: _SourceRun, closed: dict[str, set[str]]) -> str | None:
    """For a run an earlier import began: why finishing it would contradict the store, if so.

    A concluded copy is final: the source must end it the same way (its events are checked
    against ``closed`` by the caller). An open copy simply receives what it lacks.
    """
    with store.log.snapshot() as cur:
        ends = cur.execute(
            "SELECT key, body FROM log WHERE run_id = ? AND kind = 'run-concluded'", (run.run_id,)
        ).fetchall()
        keys = [k for (k,) in cur.execute("SELECT key FROM log WHERE run_id = ?", (run.run_id,))]
    if not ends:
        return None
    key, text = ends[0]
    body = json.loads(text)
    if key != _END_KEY:
        return f"run {run.run_id}: concluded in the store since it was imported (not by the import)"
    if run.status is None:
        return f"run {run.run_id}: imported as {body['status']}, the source now has no status"
    if (body["status"], body.get("code")) != STATUSES[run.status]:
        return f"run {run.run_id}: imported as {body['status']}, the source now says {run.status!r}"
    closed[run.run_id] = set(keys)
    return None


def _problems(conn: ForeignFile, store: Store, policy: RedactionPolicy) -> tuple[list[str], list[str], int]:
    """What makes the source unimportable, the run ids the store holds for other runs, and
    how many runs an earlier (interrupted) import of this source started."""
    invalid: list[str] = []
    taken: list[str] = []
    known: set[str] = set()
    closed: dict[str, set[str]] = {}  # imported runs the store has concluded: their keys
    resumed = 0
    for row in _rows(conn, "runs", RUN_COLUMNS, "run_id"):
        known.add(row[0])
        try:
            run = _run(row)
        except ValueError as e:
            invalid.append(str(e))
            continue
        if store.log.eviction(run.run_id) is not None:
            taken.append(f"run {run.run_id}: the store evicted a run of that id; identities are never reused")
            continue
        with store.log.snapshot() as cur:
            first = cur.execute("SELECT key FROM log WHERE run_id = ? AND seq = 1", (run.run_id,)).fetchall()
        if not first:
            continue  # a new run
        if first[0][0] != START_KEY:
            taken.append(f"run {run.run_id}: the store already holds another run with that id")
            continue
        resumed += 1
        problem = _closed_differently(store, run, closed)
        if problem is not None:
            taken.append(problem)
    for event_id, rid, ts, kind, payload in _rows(conn, "events", EVENT_COLUMNS, "event_id"):
        where = f"event {event_id} (run {rid})"
        if rid not in known:
            invalid.append(f"{where}: no such run (Forkline wrote an orphan event)")
            continue
        if rid in closed and f"{_EVENT_KEY}{event_id}" not in closed[rid]:
            taken.append(f"{where}: added to the source after the run was imported and concluded")
        try:
            _instant(ts, "ts")
            logged_event(policy, kind, _payload(payload), store.max_payload_bytes)
        except ValueError as e:
            invalid.append(f"{where}: {e}")
        except RecordError as e:
            invalid.append(f"{where}: {e.message}")
    return invalid, taken, resumed


def _record_run(
    store: Store, policy: RedactionPolicy, run: _SourceRun, events: list[tuple[int, str, str, str, str]]
) -> None:
    slots, payloads = encode_slots({"inputs": {}}, store.is_sensitive)  # as RunRecorder.start_run
    start = RunStarted(workflow=run.entrypoint, standard="1.0", env=run.env, slots=slots)
    with store._recorded_at(run.started_at):
        handle = store._start(run.run_id, start, payloads, START_KEY)
    with handle.batch():
        for event_id, _, ts, kind, text in events:
            event, rows = logged_event(policy, kind, _payload(text), store.max_payload_bytes)
            with store._recorded_at(_instant(ts, "ts")):
                handle._append_event(event, f"{_EVENT_KEY}{event_id}", rows)
        if run.status is not None:
            outcome, code = STATUSES[run.status]
            ended = run.ended_at or (_instant(events[-1][2], "ts") if events else run.started_at)
            with store._recorded_at(ended):
                handle.conclude(outcome, code=code, key=_END_KEY)


def _refuse(path: str, invalid: list[str], taken: list[str]) -> None:
    if invalid or taken:
        problems = invalid + taken
        listed = "; ".join(problems[:_LISTED])
        more = f" (and {len(problems) - _LISTED} more)" if len(problems) > _LISTED else ""
        error = InvalidRequest if invalid else Conflict
        raise error(f"{path} cannot be imported, nothing was written: {listed}{more}")


# -- Forkline's step store (forkline.db) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Action:
    """One thing to record for a step-store run, at ``at``: a step's begin or end, or an event."""

    when: datetime  # the order: the source's time, never before what it depends on
    rank: int  # at one instant: begins, then events, then ends
    source_id: int
    at: str  # canonical UTC text of the source's time
    kind: str
    idx: int
    row: tuple[Any, ...]


def _step_run_problems(
    conn: ForeignFile, store: Store, policy: RedactionPolicy
) -> tuple[list[str], list[str], int, dict[str, str], dict[str, list[_Action]]]:
    """The step store's problems, taken ids, resumed runs, each run's start time and its
    actions in the order to record them. Checks everything a write could refuse."""
    invalid: list[str] = []
    taken: list[str] = []
    resumed = 0
    started: dict[str, str] = {}
    closed: dict[str, set[str]] = {}  # imported runs the store has concluded since: their keys
    for rid, created_at in conn.rows("SELECT run_id, created_at FROM runs ORDER BY run_id"):
        if not isinstance(rid, str) or not rid or not is_text(rid) or "\x00" in rid:
            invalid.append(f"run id {rid!r} is not nonempty Unicode text without NUL")
            continue
        try:
            started[rid] = _instant(created_at, f"run {rid}: created_at")
        except ValueError as e:
            invalid.append(str(e))
            continue
        if store.log.eviction(rid) is not None:
            taken.append(f"run {rid}: the store evicted a run of that id; identities are never reused")
            continue
        with store.log.snapshot() as cur:
            first = cur.execute("SELECT key, body FROM log WHERE run_id = ? AND seq = 1", (rid,)).fetchall()
        if first:
            key, body = first[0]
            if key != START_KEY or json.loads(body).get("workflow") != STEP_STORE_WORKFLOW:
                taken.append(f"run {rid}: the store already holds another run with that id")
                continue
            resumed += 1
            with store.log.snapshot() as cur:
                rows = cur.execute("SELECT key, kind FROM log WHERE run_id = ?", (rid,)).fetchall()
            if any(kind == "run-concluded" for _, kind in rows):
                closed[rid] = {k for k, _ in rows}
    begins: dict[tuple[str, int], _Action] = {}
    actions: dict[str, list[_Action]] = {rid: [] for rid in started}
    for row in conn.rows(f"SELECT {', '.join(STEP_COLUMNS)} FROM steps ORDER BY step_id"):
        step_id, rid, idx, name, started_at, ended_at = row
        where = f"step {step_id} (run {rid})"
        if rid not in started:
            invalid.append(f"{where}: no such run")
            continue
        if type(idx) is not int or idx < 0:
            invalid.append(f"{where}: idx {idx!r} is not an integer >= 0")
            continue
        if (rid, idx) in begins:
            invalid.append(f"{where}: run {rid} already has a step {idx} (Forkline wrote it twice)")
            continue
        if not isinstance(name, str) or not name or not is_text(name) or "\x00" in name:
            invalid.append(f"{where}: name {name!r} is not nonempty Unicode text without NUL")
            continue
        try:
            at = _instant(started_at, "started_at")
            end = None if ended_at is None else _instant(ended_at, "ended_at")
        except ValueError as e:
            invalid.append(f"{where}: {e}")
            continue
        begin = _Action(_moment(at), 0, step_id, at, "begin", idx, row)
        begins[(rid, idx)] = begin
        actions[rid].append(begin)
        if end is not None:
            actions[rid].append(_Action(max(_moment(end), begin.when), 2, step_id, end, "end", idx, row))
    last: dict[tuple[str, int], datetime] = {}
    for row in conn.rows(f"SELECT {', '.join(STEP_EVENT_COLUMNS)} FROM events ORDER BY event_id"):
        event_id, rid, step_idx, kind, text, created_at = row
        where = f"event {event_id} (run {rid})"
        begun = begins.get((rid, step_idx))
        if begun is None:
            invalid.append(f"{where}: no step {step_idx!r} (Forkline's load_run never shows it)")
            continue
        try:
            at = _instant(created_at, "created_at")
            logged_event(policy, kind, _payload(text), store.max_payload_bytes, step=str(step_idx))
        except ValueError as e:
            invalid.append(f"{where}: {e}")
            continue
        except RecordError as e:
            invalid.append(f"{where}: {e.message}")
            continue
        action = _Action(max(_moment(at), begun.when), 1, event_id, at, "event", step_idx, row)
        last[(rid, step_idx)] = max(last.get((rid, step_idx), action.when), action.when)
        actions[rid].append(action)
    for rid, todo in actions.items():  # an end is never before its step's last event
        todo[:] = [
            a if a.kind != "end" else _Action(max(a.when, last.get((rid, a.idx), a.when)), *_fields(a))
            for a in todo
        ]
        todo.sort(key=lambda a: (a.when, a.rank, a.source_id))
        if rid in closed and any(_step_key(a) not in closed[rid] for a in todo):
            taken.append(f"run {rid}: the source gained steps or events since the store concluded the run")
    return invalid, taken, resumed, started, actions


def _step_key(action: _Action) -> str:
    """The idempotency key an action is recorded under: the source's row, never reused."""
    prefix = {"begin": _STEP_KEY, "end": _STEP_END_KEY, "event": _EVENT_KEY}[action.kind]
    return f"{prefix}{action.source_id}"


def _fields(action: _Action) -> tuple[Any, ...]:
    return (action.rank, action.source_id, action.at, action.kind, action.idx, action.row)


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _record_step_run(
    store: Store, policy: RedactionPolicy, run_id: str, started_at: str, actions: list[_Action]
) -> int:
    """Record one step-store run as ``SQLiteStore`` would have; returns its event count."""
    slots, payloads = encode_slots({"inputs": {}}, store.is_sensitive)
    start = RunStarted(workflow=STEP_STORE_WORKFLOW, standard="1.0", slots=slots)
    with store._recorded_at(started_at):
        handle = store._start(run_id, start, payloads, START_KEY)
    events = 0
    with handle.batch():
        for action in actions:
            path = str(action.idx)
            with store._recorded_at(action.at):
                key = _step_key(action)
                if action.kind == "begin":
                    handle.begin_step(path, arguments=step_arguments(action.row[3]), key=key)
                elif action.kind == "end":
                    handle.end_step(path, "succeeded", key=key)
                else:
                    kind, text = action.row[3], action.row[4]
                    event, rows = logged_event(
                        policy, kind, _payload(text), store.max_payload_bytes, step=path
                    )
                    handle._append_event(event, key, rows)
                    events += 1
    return events


def _import_steps(conn: ForeignFile, path: str, store: Store, policy: RedactionPolicy) -> ImportReport:
    invalid, taken, resumed, started, actions = _step_run_problems(conn, store, policy)
    _refuse(path, invalid, taken)
    events = 0
    for run_id in sorted(started):
        events += _record_step_run(store, policy, run_id, started[run_id], actions[run_id])
    _log.info("forkline_imported", source=path, runs=len(started), events=events, resumed=resumed)
    return ImportReport(source=path, runs=len(started), events=events, resumed=resumed)


def import_forkline(
    source: str | os.PathLike[str], store: Store, redaction_policy: RedactionPolicy | None = None
) -> ImportReport:
    """Record every run of the Forkline database ``source`` into ``store``; see the module doc.

    ``source`` is a ``runs.db`` (``RunRecorder``'s) or a step store (``SQLiteStore``'s
    ``forkline.db``, whose runs are recorded as ``forkline_es.forkline.SQLiteStore`` records
    them: steps by index, each event in its step).

    ``redaction_policy=None`` applies ``RedactionPolicy.default()`` to the imported payloads,
    as ``RunRecorder`` does to new ones. Refuses with ``invalid-request`` (a listed problem
    per bad run or event) or ``conflict`` (a run id the store holds for another run),
    writing nothing.
    """
    policy = checked_policy(
        RedactionPolicy.default() if redaction_policy is None else redaction_policy, "redaction_policy"
    )
    path = os.fspath(source)
    conn, is_step_store = _open_source(path)
    try:
        if is_step_store:
            return _import_steps(conn, path, store, policy)
        invalid, taken, resumed = _problems(conn, store, policy)
        _refuse(path, invalid, taken)
        runs = events = 0
        pending = (_run(row) for row in _rows(conn, "runs", RUN_COLUMNS, "run_id"))
        current = next(pending, None)
        batch: list[tuple[int, str, str, str, str]] = []
        # Both sides in run_id order: each run's events arrive together, in event_id order.
        for row in _rows(conn, "events", EVENT_COLUMNS, "run_id, event_id"):
            while current is not None and current.run_id != row[1]:
                _record_run(store, policy, current, batch)
                runs, events, batch = runs + 1, events + len(batch), []
                current = next(pending, None)
            batch.append(row)
        while current is not None:
            _record_run(store, policy, current, batch)
            runs, events, batch = runs + 1, events + len(batch), []
            current = next(pending, None)
    finally:
        conn.close()
    _log.info("forkline_imported", source=path, runs=runs, events=events, resumed=resumed)
    return ImportReport(source=path, runs=runs, events=events, resumed=resumed)

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


def _open_source(path: str) -> ForeignFile:
    if not os.path.isfile(path):
        raise InvalidRequest(f"no Forkline database at {path}")
    try:
        conn = open_foreign(path)
        forkline = has_forkline_tables(conn)
    except ForeignFileError as e:
        raise InvalidRequest(f"{path} is not a readable SQLite database: {e}") from None
    if not forkline:
        conn.close()
        raise InvalidRequest(
            f"{path} is not a Forkline runs.db (it has no Recording v0 runs and events tables)"
        )
    return conn


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


def import_forkline(
    source: str | os.PathLike[str], store: Store, redaction_policy: RedactionPolicy | None = None
) -> ImportReport:
    """Record every run of the Forkline database ``source`` into ``store``; see the module doc.

    ``redaction_policy=None`` applies ``RedactionPolicy.default()`` to the imported payloads,
    as ``RunRecorder`` does to new ones. Refuses with ``invalid-request`` (a listed problem
    per bad run or event) or ``conflict`` (a run id the store holds for another run),
    writing nothing.
    """
    policy = checked_policy(
        RedactionPolicy.default() if redaction_policy is None else redaction_policy, "redaction_policy"
    )
    path = os.fspath(source)
    conn = _open_source(path)
    try:
        invalid, taken, resumed = _problems(conn, store, policy)
        if invalid or taken:
            problems = invalid + taken
            listed = "; ".join(problems[:_LISTED])
            more = f" (and {len(problems) - _LISTED} more)" if len(problems) > _LISTED else ""
            error = InvalidRequest if invalid else Conflict
            raise error(f"{path} cannot be imported, nothing was written: {listed}{more}")
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

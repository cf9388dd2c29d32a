"""Executor histories for property tests, and a plain reference fold of the raw log.

Three things other test suites can reuse:

- ``payload_values()`` / ``payload_args()``: hypothesis strategies for the typed domain and
  for what a recorder call may pass as a payload (a value, ``NOT_RECORDED``,
  ``Sensitive``, ``Partial`` in dry runs, or nothing);
- ``HistoryMachine``: a ``RuleBasedStateMachine`` that drives the real recording API
  through valid executor histories over several runs (nested paths, iterations, retries,
  ambiguous dispatch, crashes with recovery and supersession, child runs, suspensions and
  holds, dry runs). Subclass it and add ``@invariant`` methods;
- ``reference_documents(cursor)`` / ``reference_summaries(cursor)``: the run record
  documents and listings computed from the ``log`` and ``payload`` tables with plain SQL
  (any backend's cursor: ``store.backend.cursor()``) and the
  stdlib ``json`` module, straight from the rules of 002, without the projection code, so
  that a test can hold the projections against an independent reading of the log.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from typing import Any, ClassVar, Final

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from forkline_es.compat.recorder import logged_event
from forkline_es.log.backend import Cursor
from forkline_es.log.events import ONE_OFF_KEY
from forkline_es.recording.markers import MISSING, NOT_RECORDED, Partial, Sensitive
from forkline_es.recording.run import Run
from forkline_es.recording.state import orphaned_by
from forkline_es.redaction import RedactionPolicy
from forkline_es.store import Store
from forkline_es.testing.backends import FreshStores
from forkline_es.values import FileRef

__all__ = [
    "ARTIFACT",
    "SLOT_CLASS",
    "HistoryMachine",
    "payload_args",
    "payload_values",
    "reference_documents",
    "reference_summaries",
    "step_paths",
]

#: A connector manifest digest for invoke entries.
ARTIFACT: Final = "sha256:" + "c0" * 32

#: decisions.md, Payload slots (written out again here on purpose: the reference is independent).
SLOT_CLASS: Final[dict[str, str]] = {
    "inputs": "inputs",
    "trigger": "inputs",
    "outputs": "outputs",
    "arguments": "arguments",
    "result": "results",
    "details": "results",
    "binding": "results",
    "event": "events",
}

_WORKFLOWS: Final = ("billing/invoice", "ingest", "ingest/child")
_SEGMENTS: Final = ("fetch", "parse", "items", "0", "1", "12", "$retry", "sub_step")
_TERMINAL: Final = ("succeeded", "failed", "cancelled", "stopped")
_OUTCOMES: Final = ("succeeded", "failed", "skipped", "cancelled")
_WORK_KINDS: Final = frozenset(
    {"step-begun", "action-invoked", "action-result", "step-ended", "child-started"}
)

# -- strategies --------------------------------------------------------------------------------


def payload_values() -> st.SearchStrategy[Any]:
    """Small values of the typed domain, every kind included."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.datetimes(
            min_value=dt.datetime(1970, 1, 2),
            max_value=dt.datetime(2100, 1, 1),
            timezones=st.just(dt.UTC),
        ),
        st.integers(min_value=-(10**9), max_value=10**9).map(lambda ms: dt.timedelta(milliseconds=ms)),
        st.builds(FileRef, st.sampled_from(["s3://b/k", "file:///tmp/x"]), name=st.none() | st.just("x")),
    )
    # Keys that look like the document's own members or the reader's private markers too:
    # a user map may hold any key, and nothing may read them as structure.
    keys = st.text(max_size=4) | st.sampled_from(["~", "~removed", "state", "value", "kind", "class"])
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
        max_leaves=4,
    )


def payload_args(dry_run: bool = False) -> st.SearchStrategy[Any]:
    """What a recorder call may pass for one payload slot (``MISSING`` = nothing)."""
    return _PAYLOAD_ARGS[dry_run]


def _payload_args(dry_run: bool) -> st.SearchStrategy[Any]:
    options = [
        st.just(MISSING),
        st.just(NOT_RECORDED),
        payload_values().map(Sensitive),
        payload_values(),
    ]
    if dry_run:
        suppressed = st.lists(
            st.lists(st.text(max_size=3) | st.integers(0, 3), max_size=2), min_size=1, max_size=2
        )
        # The suppression is kept whatever the value's availability (002), so unavailable
        # partial values are drawn too.
        partial_of = payload_values() | st.just(NOT_RECORDED) | payload_values().map(Sensitive)
        options.append(st.builds(Partial, partial_of, suppressed))
    return st.one_of(*options)


def step_paths() -> st.SearchStrategy[str]:
    """Well-formed step paths from a small pool, so that histories revisit the same steps."""
    return _STEP_PATHS


# Built once: constructing (and validating) strategies per draw dominates a machine's time.
_PAYLOAD_ARGS: Final = {False: _payload_args(False), True: _payload_args(True)}
_STEP_PATHS: Final = st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=3).map("/".join)


# -- the machine -------------------------------------------------------------------------------


class HistoryMachine(RuleBasedStateMachine):
    """Valid executor histories against the real API. ``self.store`` is the store under test.

    Each rule picks a run and a call the log will accept (from the run handle's folded
    state), so every call is expected to succeed: a refusal fails the test. Override
    ``open_store`` to choose the store, and ``open_others`` to add stores on the same
    database (other processes): a crashed run is then resumed through any of them, and a
    store meets the runs others appended to since it last wrote (its caches gone stale).
    """

    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.stores = [self.store, *self.open_others(self.store)]
        self.handles: dict[str, Run] = {}
        self.dry: dict[str, bool] = {}
        self.counter = 0

    #: Where each example's store is made (``testing.backends.on_backend``); None: in memory.
    fresh: ClassVar[FreshStores | None] = None

    def open_store(self) -> Store:
        return Store.open(":memory:") if self.fresh is None else self.fresh.open(memory=True)

    def open_others(self, store: Store) -> list[Store]:
        """More stores on ``store``'s database; none by default (``:memory:`` is not shared)."""
        return []

    def teardown(self) -> None:
        for store in reversed(self.stores):
            store.close()

    # -- helpers ---------------------------------------------------------------------------

    def _open_runs(self) -> list[str]:
        return sorted(r for r, h in self.handles.items() if not h._state.concluded)

    def _pick(self, data: st.DataObject) -> Run:
        return self.handles[data.draw(st.sampled_from(self._open_runs()), label="run")]

    def _new_id(self) -> str:
        self.counter += 1
        return f"run-{self.counter:03d}"

    def _has_open(self) -> bool:
        return bool(self._open_runs())

    # -- rules -----------------------------------------------------------------------------

    @rule(data=st.data())
    def start_run(self, data: st.DataObject) -> None:
        dry = data.draw(st.booleans(), label="dry_run")
        run = self.store.start_run(
            workflow=data.draw(st.sampled_from(_WORKFLOWS), label="workflow"),
            name=data.draw(st.none() | st.just("Invoice"), label="name"),
            inputs=data.draw(payload_args(dry), label="inputs"),
            trigger=data.draw(payload_args(dry), label="trigger"),
            dry_run=dry,
            predecessor=data.draw(st.none() | st.sampled_from(sorted(self.handles) or ["r0"])),
            pins=data.draw(st.none() | st.just({"definition": ARTIFACT})),
            run_id=self._new_id(),
        )
        self.handles[run.id] = run
        self.dry[run.id] = dry

    @precondition(_has_open)
    @rule(data=st.data())
    def begin_step(self, data: st.DataObject) -> None:
        run = self._pick(data)
        state = run._state
        path = data.draw(step_paths(), label="path")
        if state.path_status.get(path) == "ended" or state.begun_in.get(path) == state.generation:
            return
        run.begin_step(path, arguments=data.draw(payload_args(self.dry[run.id]), label="arguments"))

    @precondition(_has_open)
    @rule(data=st.data())
    def invoke(self, data: st.DataObject) -> None:
        run = self._pick(data)
        state = run._state
        path = data.draw(st.sampled_from(sorted(state.path_status) or ["fetch"]) | step_paths())
        if state.path_status.get(path) == "ended":
            return
        attempt = state.max_attempt.get(path, 0) + data.draw(st.integers(1, 2), label="attempt step")
        run.invoke(
            path,
            attempt,
            data.draw(st.sampled_from(["http.get", "llm.chat"]), label="operation"),
            ARTIFACT,
            data.draw(st.sampled_from(["not-dispatched", "ambiguous"]), label="dispatch"),
            arguments=data.draw(payload_args(self.dry[run.id]), label="arguments"),
        )

    @precondition(_has_open)
    @rule(data=st.data())
    def result(self, data: st.DataObject) -> None:
        run = self._pick(data)
        pending = sorted(run._state.open_invokes)
        if not pending:
            return
        path, attempt = data.draw(st.sampled_from(pending), label="invoke")
        dry = self.dry[run.id]
        run.result(
            path,
            attempt,
            data.draw(st.sampled_from(["succeeded", "failed", "ambiguous"]), label="dispatch"),
            code=data.draw(st.none() | st.sampled_from(["timeout", "http-500"]), label="code"),
            result=data.draw(payload_args(dry), label="result"),
            details=data.draw(payload_args(dry), label="details"),
        )

    @precondition(_has_open)
    @rule(data=st.data())
    def end_step(self, data: st.DataObject) -> None:
        run = self._pick(data)
        active = sorted(p for p, s in run._state.path_status.items() if s == "active")
        if not active:
            return
        dry = self.dry[run.id]
        branch: st.SearchStrategy[dict[str, Any] | None] = st.one_of(
            st.none(),
            st.sampled_from(["a", "b"]).map(lambda c: {"case": c}),
            st.integers(0, 3).map(lambda a: {"arm": a}),
            st.just({"else": True}),
        )
        run.end_step(
            data.draw(st.sampled_from(active), label="path"),
            data.draw(st.sampled_from(_OUTCOMES), label="outcome"),
            code=data.draw(st.none() | st.just("timeout"), label="code"),
            branch=data.draw(branch, label="branch"),
            result=data.draw(payload_args(dry), label="result"),
            binding=data.draw(payload_args(dry), label="binding"),
            event=data.draw(payload_args(dry), label="event"),
        )

    @precondition(_has_open)
    @rule(data=st.data())
    def start_child(self, data: st.DataObject) -> None:
        parent = self._pick(data)
        path = data.draw(step_paths(), label="path")
        if parent._state.path_status.get(path) == "ended":
            return
        child = self.store.start_run(
            workflow=data.draw(st.sampled_from(_WORKFLOWS), label="child workflow"),
            parent=parent.id,
            dry_run=self.dry[parent.id],
            inputs={},
            run_id=self._new_id(),
        )
        self.handles[child.id] = child
        self.dry[child.id] = self.dry[parent.id]
        parent.child(path, child.id)

    @precondition(_has_open)
    @rule(data=st.data(), to=st.sampled_from(["suspended", "held", "active"]))
    def change_status(self, data: st.DataObject, to: str) -> None:
        run = self._pick(data)
        status = run._state.status
        if to == "suspended" and status == "active":
            run.suspend(reason=data.draw(st.none() | st.just("waiting for approval")))
        elif to == "held" and status in ("active", "suspended"):
            run.hold(
                code=data.draw(st.none() | st.just("quota")),
                step=data.draw(st.none() | step_paths()),
                reason=data.draw(st.none() | st.just("over budget")),
            )
        elif to == "active" and status in ("suspended", "held"):
            run.resume()

    @precondition(_has_open)
    @rule(data=st.data())
    def log_forkline_event(self, data: st.DataObject) -> None:
        """A Forkline ``log_event`` into the run: the one event no projection folds, so its
        append skips the fold (``Projections.folds``) and the next event must still find the
        run's state right."""
        run = self._pick(data)
        payload = data.draw(st.dictionaries(st.sampled_from("ab"), st.integers() | st.text(max_size=4)))
        event, payloads = logged_event(RedactionPolicy.none(), "note", payload)
        self.counter += 1
        run._append_event(event, f"{ONE_OFF_KEY}{self.counter}", payloads)  # as RunRecorder's

    def _shared(self) -> bool:
        return len(self.stores) > 1 and self._has_open()

    @precondition(_shared)
    @rule(data=st.data())
    def hand_over(self, data: st.DataObject) -> None:
        """Another process goes on with the run from where the log is (no crash, no new
        generation); the store that wrote before meets it again later, its cache stale."""
        run_id = self._pick(data).id
        self.handles[run_id] = data.draw(st.sampled_from(self.stores), label="to").resume_run(run_id)

    @precondition(_has_open)
    @rule(data=st.data())
    def crash_and_recover(self, data: st.DataObject) -> None:
        """Drop the handle as a crashed process would, resume from the log (in any of the
        stores: another process may take over), enter a new generation."""
        run_id = self._pick(data).id
        del self.handles[run_id]
        run = data.draw(st.sampled_from(self.stores), label="resumed by").resume_run(run_id)
        self.handles[run_id] = run
        work = [f.entry for f in run._state.facts if f.log_kind in _WORK_KINDS and not f.superseded]
        supersedes = data.draw(st.lists(st.sampled_from(work), unique=True) if work else st.just([]))
        # A result goes with its invoke and a step's end with its begin (else a conflict).
        supersedes += [orphan for orphan, _ in orphaned_by(run._state.facts, supersedes)]
        run.recover(supersedes)

    @precondition(_has_open)
    @rule(data=st.data())
    def conclude(self, data: st.DataObject) -> None:
        run = self._pick(data)
        status = data.draw(st.sampled_from(_TERMINAL), label="status")
        outputs = (
            data.draw(payload_args(self.dry[run.id]), label="outputs") if status == "succeeded" else None
        )
        run.conclude(
            status,
            path=data.draw(st.none() | step_paths(), label="path"),
            code=data.draw(st.none() | st.just("boom"), label="code"),
            reason=data.draw(st.none() | st.just("done"), label="reason"),
            outputs=MISSING if outputs is None else outputs,
        )


# -- the reference fold ------------------------------------------------------------------------


def _slots(position: int, slots: dict[str, Any], values: dict[tuple[int, str], str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, recorded in slots.items():
        slot: dict[str, Any] = {"class": SLOT_CLASS[name], "state": recorded["state"]}
        if "suppressed" in recorded:
            slot["suppressed"] = recorded["suppressed"]
        if recorded["state"] == "present":
            stored = values.get((position, name))
            if stored is None:
                slot["state"] = "removed"
            else:
                slot["value"] = json.loads(stored)
        out[name] = slot
    return out


class _Row:
    __slots__ = ("at", "body", "entry", "generation", "kind", "position", "superseded")

    def __init__(self, position: int, entry: int | None, generation: int, kind: str, at: str, body: str):
        self.position = position
        self.entry = entry
        self.generation = generation
        self.kind = kind
        self.at = at
        self.body: dict[str, Any] = json.loads(body)
        self.superseded = False


def _step_view(path: str, rows: Iterable[_Row], values: dict[tuple[int, str], str]) -> dict[str, Any] | None:
    """002's step record of ``path`` over the active rows given, in seq order.

    Attempt-dependent slots (arguments, result, details) and the code describe the latest
    attempt of the reported generation; arguments recorded at the step's begin stay.
    """
    generation: int | None = None
    sources: dict[str, _Row] = {}  # slot -> the row whose slot is reported
    begin: _Row | None = None
    attempt: int | None = None
    code: str | None = None
    end: _Row | None = None
    started: str | None = None  # the time of the occurrence's first row in its generation
    attempts = 0
    for row in rows:
        if row.superseded or row.body.get("path") != path:
            continue
        own = row.body.get("slots", {})
        if row.kind == "step-begun":
            if generation is not None and generation != row.generation:
                sources, attempt, code, end, started, attempts = {}, None, None, None, None, 0
            begin = row
        elif row.kind == "action-invoked":
            sources = {k: r for k, r in sources.items() if k not in ("arguments", "result", "details")}
            if begin is not None and "arguments" in begin.body.get("slots", {}):
                sources["arguments"] = begin
            attempts += row.body["attempt"] != attempt
            attempt, code = row.body["attempt"], None
        elif row.kind == "action-result":
            if attempt != row.body["attempt"]:
                continue
            code = row.body.get("code")
            if end is not None:  # a late result: the ended step's own code, or a failure's
                code = end.body.get("code", code if end.body["outcome"] == "failed" else None)
        elif row.kind == "step-ended":
            end = row
            code = row.body.get("code", code if row.body["outcome"] == "failed" else None)
        elif row.kind != "child-started":
            continue
        if started is None and (row.kind != "action-result" or generation is not None):
            started = row.at
        for name in own:
            sources[name] = row
        generation = row.generation
    if generation is None:
        return None
    record: dict[str, Any] = {
        "path": path,
        "generation": generation,
        "status": "ended" if end is not None else "active",
        "payloads": {
            name: _slots(r.position, {name: r.body["slots"][name]}, values)[name]
            for name, r in sources.items()
        },
    }
    if end is not None:
        record["outcome"] = end.body["outcome"]
        if "branch" in end.body:
            record["branch"] = end.body["branch"]
    if code is not None:
        record["code"] = code
    if started is not None:
        record["x-started-at"] = started
    if end is not None:
        record["x-ended-at"] = end.at
    record["x-attempts"] = attempts
    return record


def _entry(row: _Row, rows: list[_Row], values: dict[tuple[int, str], str]) -> dict[str, Any]:
    body = row.body
    entry: dict[str, Any] = {"seq": row.entry, "generation": row.generation, "x-at": row.at}
    kind = row.kind
    if kind in ("step-begun", "step-ended"):
        entry["kind"] = "step"
        entry["step"] = _step_view(body["path"], rows, values)
        return entry
    entry["kind"] = {
        "run-started": "start",
        "action-invoked": "invoke",
        "action-result": "result",
        "child-started": "child",
        "recovered": "recovery",
        "run-concluded": "conclude",
    }[kind]
    members = {
        "action-invoked": ("path", "attempt", "operation", "artifact", "dispatch"),
        "action-result": ("path", "attempt", "dispatch", "code"),
        "child-started": ("path", "child"),
        "run-concluded": ("status", "path", "code", "reason"),
    }.get(kind, ())
    for m in members:
        if m in body:
            entry[m] = body[m]
    if kind == "recovered":
        entry["supersedes"] = body.get("supersedes", [])
    if body.get("slots"):
        entry["payloads"] = _slots(row.position, body["slots"], values)
    return entry


def _read(conn: Cursor) -> tuple[dict[str, list[_Row]], dict[tuple[int, str], str]]:
    runs: dict[str, list[_Row]] = {}
    for position, run_id, entry, generation, kind, at, body in conn.execute(
        "SELECT position, run_id, entry, generation, kind, at, body FROM log ORDER BY run_id, seq"
    ).fetchall():
        runs.setdefault(run_id, []).append(_Row(position, entry, generation, kind, at, body))
    values = {(p, s): v for p, s, v in conn.execute("SELECT position, slot, value FROM payload").fetchall()}
    return runs, values


def _document(run_id: str, rows: list[_Row], values: dict[tuple[int, str], str]) -> dict[str, Any]:
    start = rows[0].body
    run: dict[str, Any] = {
        "id": run_id,
        "workflow": start["workflow"],
        "status": "active",
        "started_at": rows[0].at,
        "dry_run": start.get("dry_run", False),
        "parent": start.get("parent"),
        "generation": 0,
    }
    for member in ("name", "predecessor"):
        if start.get(member) is not None:
            run[member] = start[member]
    if start.get("labels"):
        run["x-labels"] = start["labels"]
    run["x-updated-at"] = [r for r in rows if r.kind != "payloads-removed"][-1].at  # retention is no activity
    payloads = _slots(rows[0].position, start.get("slots", {}), values)
    entries: list[dict[str, Any]] = []
    by_entry = {r.entry: r for r in rows if r.entry is not None}
    seen: list[_Row] = []
    for row in rows:
        seen.append(row)
        status = {"run-suspended": "suspended", "run-held": "held", "run-resumed": "active"}.get(row.kind)
        if row.kind == "run-concluded":
            status = row.body["status"]
            run["x-ended-at"] = row.at
            payloads.update(_slots(row.position, row.body.get("slots", {}), values))
        if status is not None:
            run["status"] = status
            for member, source in (("code", "code"), ("step", "step"), ("reason", "reason")):
                if row.kind == "run-concluded" and member == "step":
                    source = "path"
                run.pop(member, None)
                if row.body.get(source) is not None:
                    run[member] = row.body[source]
        if row.kind == "recovered":
            run["generation"] = row.generation
            for n in row.body.get("supersedes", []):
                by_entry[n].superseded = True
        if row.entry is not None:
            entries.append(_entry(row, seen, values))
    paths = sorted({r.body["path"] for r in rows if r.kind in _WORK_KINDS})
    steps = {p: v for p in paths if (v := _step_view(p, rows, values)) is not None}
    document: dict[str, Any] = {
        "record": 1,
        "standard": start["standard"],
        "run": run,
        "steps": steps,
        "payloads": payloads,
        "entries": entries,
    }
    if start.get("pins") is not None:
        document["pins"] = start["pins"]
    return document


def reference_documents(conn: Cursor) -> dict[str, dict[str, Any]]:
    """Every retained run's document, folded from the raw ``log`` and ``payload`` rows."""
    runs, values = _read(conn)
    return {run_id: _document(run_id, rows, values) for run_id, rows in runs.items()}


def reference_summaries(conn: Cursor, workflow: str | None = None) -> list[dict[str, Any]]:
    """What ``list_runs(workflow)`` must return (in run id order), from the raw log."""
    out = []
    for _, doc in sorted(reference_documents(conn).items()):
        run = doc["run"]
        if workflow is not None and run["workflow"] != workflow:
            continue
        summary = {k: run[k] for k in ("id", "workflow", "status", "started_at", "dry_run", "parent")}
        for member in ("name", "x-labels", "x-updated-at", "x-ended-at"):
            if member in run:
                summary[member] = run[member]
        out.append(summary)
    return out

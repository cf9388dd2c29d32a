"""Random valid and invalid calls against one run, judged by an independent model.

The model keeps the run as plain lists and dicts and decides, without the code under
test, what each call must do: append exactly one event (and return the next entry
seq), return the original seq of an identical earlier call, or be refused with a given
code and append nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import forkline_es as fe
from forkline_es.testing.backends import FreshStores, on_backend

from .helpers import ARTIFACT, check_integrity

GOOD_PATHS = ["a", "b", "a/0"]
# Mostly valid arguments, so that runs get deep enough for the log-dependent rules to matter.
PATHS = st.sampled_from(["a", "a", "a", "b", "b", "a/0", "a//b", "01"])
ATTEMPTS = st.sampled_from([1, 1, 1, 2, 2, 3, 0, -1])
INVOKE_DISPATCH = st.sampled_from(["not-dispatched", "not-dispatched", "ambiguous", "succeeded"])
RESULT_DISPATCH = st.sampled_from(["succeeded", "succeeded", "failed", "not-dispatched"])
NAN = float("nan")

Outcome = tuple[str, Any]  # ("append", entry or None) | ("repeat", value) | ("refuse", code)


@dataclass
class Entry:
    kind: str
    path: str | None = None
    generation: int = 0
    superseded: bool = False
    attempt: int | None = None


@dataclass
class Model:
    generation: int = 0
    status: str = "active"
    concluded: bool = False
    entries: list[Entry] = field(default_factory=lambda: [Entry("start")])
    keys: dict[tuple[Any, ...], tuple[Any, Any]] = field(default_factory=dict)
    max_attempt: dict[str, int] = field(default_factory=dict)
    open_invokes: set[tuple[str, int]] = field(default_factory=set)
    children: set[str] = field(default_factory=set)

    def path_state(self, path: str) -> tuple[str | None, int | None]:
        """(status, generation of the last begin) over the entries not superseded."""
        status: str | None = None
        begun: int | None = None
        for e in self.entries:
            if e.path != path or e.superseded:
                continue
            if e.kind == "begin":
                status, begun = "active", e.generation
            elif e.kind == "end":
                status = "ended"
            elif status is None:
                status = "active"
        return status, begun

    def orphans(self, supersedes: list[int]) -> bool:
        """Would superseding these leave an active result without its invoke, or an active
        end without the begin it closed (the path's last active begin before it)?"""
        chosen = set(supersedes)
        for i, e in enumerate(self.entries, 1):
            if e.superseded or i in chosen:
                continue
            if e.kind == "result":
                invoke = next(
                    j
                    for j, x in enumerate(self.entries, 1)
                    if x.kind == "invoke" and (x.path, x.attempt) == (e.path, e.attempt)
                )
                if invoke in chosen:
                    return True
            elif e.kind == "end":
                begins = [
                    j
                    for j, x in enumerate(self.entries[: i - 1], 1)
                    if x.kind == "begin" and x.path == e.path and not x.superseded
                ]
                if begins and begins[-1] in chosen:
                    return True
        return False

    def keyed(self, key: tuple[Any, ...], signature: Any) -> Outcome | None:
        if key in self.keys:
            seen, value = self.keys[key]
            return ("repeat", value) if seen == signature else ("refuse", "conflict")
        return None

    def append(self, key: tuple[Any, ...], signature: Any, entry: Entry | None) -> Outcome:
        value = None
        if entry is not None:
            self.entries.append(entry)
            value = len(self.entries)
        self.keys[key] = (signature, value)
        return ("append", value)


BAD_REQUEST: Outcome = ("refuse", "invalid-request")
CONFLICT: Outcome = ("refuse", "conflict")


class RecordingMachine(RuleBasedStateMachine):
    #: Where each example's store is made (``on_backend``): a file, or a schema.
    fresh: ClassVar[FreshStores]

    def __init__(self) -> None:
        super().__init__()
        self.db = self.fresh.location()
        self.store = self.fresh.open(self.db)
        self.run = self.store.start_run(workflow="w", run_id="r")
        self.model = Model()
        self.probes = 0

    def teardown(self) -> None:
        self.store.close()
        check_integrity(self.db)

    def rows(self) -> int:
        return int(self.store.backend.cursor().execute("SELECT count(*) FROM log").fetchall()[0][0])

    def expect(self, outcome: Outcome, call: Any) -> None:
        before = self.rows()
        try:
            got: Outcome = ("ok", call())
        except fe.RecordError as e:
            got = ("refuse", e.code)
        kind, value = outcome
        if kind == "refuse":
            assert got == outcome, (outcome, got)
            assert self.rows() == before
        elif kind == "repeat":
            assert got == ("ok", value), (outcome, got)
            assert self.rows() == before
        else:
            assert got == ("ok", value), (outcome, got)
            assert self.rows() == before + 1

    # -- the calls -----------------------------------------------------------------------

    @rule(path=PATHS, bad_value=st.booleans())
    def begin_step(self, path: str, bad_value: bool) -> None:
        m = self.model
        arguments = {"x": NAN} if bad_value else {"p": path}
        if path not in GOOD_PATHS:
            out = BAD_REQUEST
        elif bad_value:
            out = ("refuse", "invalid-value")
        else:
            key = ("begin", m.generation, path)
            status, begun = m.path_state(path)
            out = m.keyed(key, path) or (
                CONFLICT
                if m.concluded or status == "ended" or begun == m.generation
                else m.append(key, path, Entry("begin", path, m.generation))
            )
        self.expect(out, lambda: self.run.begin_step(path, arguments=arguments))

    @rule(
        path=PATHS,
        attempt=ATTEMPTS,
        dispatch=st.sampled_from(["not-dispatched", "not-dispatched", "ambiguous", "succeeded"]),
    )
    def invoke(self, path: str, attempt: int, dispatch: str) -> None:
        m = self.model
        if path not in GOOD_PATHS or attempt < 1 or dispatch == "succeeded":
            out = BAD_REQUEST
        else:
            key = ("invoke", m.generation, path, attempt)
            status, _ = m.path_state(path)
            out = m.keyed(key, dispatch) or (
                CONFLICT
                if m.concluded or status == "ended" or attempt <= m.max_attempt.get(path, 0)
                else m.append(key, dispatch, Entry("invoke", path, m.generation, attempt=attempt))
            )
            if out[0] == "append":
                m.max_attempt[path] = attempt
                m.open_invokes.add((path, attempt))
        self.expect(out, lambda: self.run.invoke(path, attempt, "op", ARTIFACT, dispatch))

    @rule(
        path=PATHS,
        attempt=ATTEMPTS,
        dispatch=st.sampled_from(["succeeded", "succeeded", "failed", "not-dispatched"]),
    )
    def result(self, path: str, attempt: int, dispatch: str) -> None:
        m = self.model
        if path not in GOOD_PATHS or attempt < 1 or dispatch == "not-dispatched":
            out = BAD_REQUEST
        else:
            key = ("result", m.generation, path, attempt)
            out = m.keyed(key, dispatch) or (
                CONFLICT
                if m.concluded or (path, attempt) not in m.open_invokes
                else m.append(key, dispatch, Entry("result", path, m.generation, attempt=attempt))
            )
            if out[0] == "append":
                m.open_invokes.discard((path, attempt))
        self.expect(out, lambda: self.run.result(path, attempt, dispatch))

    @rule(path=PATHS, outcome=st.sampled_from(["succeeded", "failed", "ended"]))
    def end_step(self, path: str, outcome: str) -> None:
        m = self.model
        if path not in GOOD_PATHS or outcome == "ended":
            out = BAD_REQUEST
        else:
            key = ("end", m.generation, path)
            status, _ = m.path_state(path)
            out = m.keyed(key, outcome) or (
                CONFLICT
                if m.concluded or status in (None, "ended")
                else m.append(key, outcome, Entry("end", path, m.generation))
            )
        self.expect(out, lambda: self.run.end_step(path, outcome))

    @rule(path=st.sampled_from(GOOD_PATHS), child=st.sampled_from(["k1", "k2"]))
    def child(self, path: str, child: str) -> None:
        m = self.model
        key = ("child", m.generation, path, child)
        status, _ = m.path_state(path)
        out = m.keyed(key, None) or (
            CONFLICT
            if m.concluded or child in m.children or status == "ended"
            else m.append(key, None, Entry("child", path, m.generation))
        )
        if out[0] == "append":
            m.children.add(child)
        self.expect(out, lambda: self.run.child(path, child))

    @rule(to=st.sampled_from(["suspended", "held", "active"]))
    def status_change(self, to: str) -> None:
        m = self.model
        allowed = {"suspended": {"active"}, "held": {"active", "suspended"}, "active": {"suspended", "held"}}
        if m.concluded or m.status not in allowed[to]:
            out = CONFLICT
        else:
            out = ("append", None)
            m.status = to
        call = {"suspended": self.run.suspend, "held": self.run.hold, "active": self.run.resume}[to]
        self.expect(out, call)

    @rule(data=st.data())
    def recover(self, data: st.DataObject) -> None:
        m = self.model
        known = st.integers(2, len(m.entries)) if len(m.entries) > 1 else st.just(1)
        anything = st.integers(0, len(m.entries) + 1)
        self.recover_with(data.draw(st.lists(st.one_of(known, known, known, anything), max_size=3)))

    def recover_with(self, supersedes: list[int]) -> None:
        m = self.model
        if len(set(supersedes)) != len(supersedes):
            out = BAD_REQUEST
        elif (
            m.concluded
            or any(
                not 1 <= n <= len(m.entries)
                or m.entries[n - 1].kind in ("start", "recovery")
                or m.entries[n - 1].superseded
                for n in supersedes
            )
            or m.orphans(supersedes)
        ):
            out = CONFLICT
        else:
            for n in supersedes:
                m.entries[n - 1].superseded = True
            m.generation += 1
            m.open_invokes.clear()
            m.entries.append(Entry("recovery", None, m.generation))
            out = ("append", m.generation)
        self.expect(out, lambda: self.run.recover(supersedes))

    @precondition(lambda self: len(self.model.entries) > 8)  # otherwise most runs end early
    @rule(status=st.sampled_from(["succeeded", "failed", "active"]))
    def conclude(self, status: str) -> None:
        m = self.model
        if status == "active":
            out = BAD_REQUEST
        else:
            out = m.keyed(("conclude",), status) or (
                CONFLICT if m.concluded else m.append(("conclude",), status, Entry("conclude"))
            )
            if out[0] == "append":
                m.concluded = True
        self.expect(out, lambda: self.run.conclude(status))

    # -- targeted calls, so that runs reach the deeper rules (still judged by the model) --

    @precondition(lambda self: bool(self.model.open_invokes))
    @rule(data=st.data())
    def result_of_an_open_invoke(self, data: st.DataObject) -> None:
        path, attempt = data.draw(st.sampled_from(sorted(self.model.open_invokes)))
        self.result(path, attempt, "succeeded")

    @rule(path=st.sampled_from(GOOD_PATHS))
    def invoke_next_attempt(self, path: str) -> None:
        self.invoke(path, self.model.max_attempt.get(path, 0) + 1, "not-dispatched")

    @rule(data=st.data())
    def recover_a_step(self, data: st.DataObject) -> None:
        """Supersede the entries of one path (some may be superseded already)."""
        path = data.draw(st.sampled_from(GOOD_PATHS))
        entries = [n for n, e in enumerate(self.model.entries, 1) if e.path == path]
        self.recover_with(data.draw(st.lists(st.sampled_from(entries), unique=True)) if entries else [])

    @precondition(lambda self: not self.model.concluded)
    @rule()
    def recovered_elsewhere(self) -> None:
        """Another store recovers the run: this handle is fenced, a fresh one goes on."""
        m = self.model
        with self.fresh.open(self.db) as other:
            assert other.resume_run("r").recover([]) == m.generation + 1
        m.generation += 1
        m.open_invokes.clear()
        m.entries.append(Entry("recovery", None, m.generation))
        self.probes += 1
        before = self.rows()
        for _ in range(2):  # refused, and still refused
            try:
                self.run.hold(code="probe", key=f"probe-{self.probes}")
            except fe.Conflict:
                pass
            else:
                raise AssertionError("a stale handle appended after a recovery made elsewhere")
        assert self.rows() == before
        self.run = self.store.resume_run("r")
        assert self.run.generation == m.generation

    @invariant()
    def handle_agrees_with_model(self) -> None:
        assert self.run.generation == self.model.generation
        assert self.run.status == (self.run.status if self.model.concluded else self.model.status)


def test_recording_calls_agree_with_a_model_of_the_run(fresh_stores: FreshStores) -> None:
    """Three fifths of the profile's examples on SQLite: 60 in CI, 1,200 under --slow; a
    tenth of those on PostgreSQL, where each costs a schema."""
    run_state_machine_as_test(
        on_backend(RecordingMachine, fresh_stores),
        settings=settings(
            max_examples=fresh_stores.examples(settings().max_examples * 3 // 5), stateful_step_count=40
        ),
    )

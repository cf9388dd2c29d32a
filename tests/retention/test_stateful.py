"""Random recording interleaved with random retention: nothing mandatory is lost, nothing else moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule, run_state_machine_as_test

import forkline_es as fe
from forkline_es.retention.policy import PAYLOAD_CLASSES
from forkline_es.testing.backends import FreshStores, on_backend
from forkline_es.testing.histories import HistoryMachine, reference_documents

LATER = datetime.now(UTC) + timedelta(days=1)
CLASSES = sorted(PAYLOAD_CLASSES)


def reduced_only(before: Any, after: Any) -> bool:
    """``after`` equals ``before`` except slots that went from present to removed (value dropped)."""
    if isinstance(before, dict) and isinstance(after, dict):
        if "class" in before and "state" in before and before != after:
            rest = {k: v for k, v in before.items() if k not in ("state", "value")}
            return before["state"] == "present" and after == {**rest, "state": "removed"}
        return before.keys() == after.keys() and all(reduced_only(before[k], after[k]) for k in before)
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(
            reduced_only(b, a) for b, a in zip(before, after, strict=True)
        )
    return bool(before == after)


class RetentionMachine(HistoryMachine):
    def __init__(self) -> None:
        super().__init__()
        self.evicted: set[str] = set()
        self.purged: set[str] = set()
        self.positions: dict[int, tuple[str, int]] = {}  # every position seen -> its (run, seq)
        self.top = 0
        self.acked: int | None = None  # checkpoint of the one consumer, when registered

    # -- helpers ---------------------------------------------------------------------------

    def _retained(self) -> list[str]:
        return sorted(r for r in self.handles if r not in self.evicted)

    def _completed(self) -> list[str]:
        return [r for r in self._retained() if self.handles[r]._state.concluded]

    def _has_completed(self) -> bool:
        return bool(self._completed())

    def _snapshot(self) -> dict[str, tuple[Any, Any, dict[str, Any]]]:
        conn = self.store.backend.cursor()
        out = {}
        for run_id in self._retained():
            log = conn.execute("SELECT * FROM log WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
            values = conn.execute(
                "SELECT p.* FROM payload AS p JOIN log AS l USING (position) "
                "WHERE l.run_id = ? ORDER BY 1, 2",
                (run_id,),
            ).fetchall()
            out[run_id] = (log, values, self.store.get_run_record(run_id))
        return out

    def _check_after(self, before: dict[str, tuple[Any, Any, dict[str, Any]]], touched: set[str]) -> None:
        """Untouched runs are byte-identical; touched retained runs only lost values."""
        after = self._snapshot()
        for run_id, (log, values, doc) in before.items():
            if run_id in self.evicted:
                assert run_id not in after
                continue
            if run_id not in touched:
                assert after[run_id] == (log, values, doc), run_id
                continue
            new_log, new_values, new_doc = after[run_id]
            assert new_log[: len(log)] == log  # only appended to (the payloads-removed event)
            assert set(new_values) <= set(values)
            assert reduced_only(doc, new_doc), run_id

    def _parent_retained(self, run_id: str) -> bool:
        rows = (
            self.store.backend.cursor()
            .execute("SELECT parent FROM run_summary WHERE run_id = ?", (run_id,))
            .fetchall()
        )
        parent = rows[0][0] if rows else None
        return parent is not None and parent in self.handles and parent not in self.evicted

    def _unacked(self, run_id: str) -> bool:
        if self.acked is None:
            return False
        pos = (
            self.store.backend.cursor()
            .execute("SELECT position FROM log WHERE run_id = ? AND kind = 'run-concluded'", (run_id,))
            .fetchall()[0][0]
        )
        return bool(pos > self.acked)

    # -- retention rules -------------------------------------------------------------------

    @precondition(_has_completed)
    @rule(data=st.data())
    def remove_payloads(self, data: st.DataObject) -> None:
        run_id = data.draw(st.sampled_from(self._completed()), label="reduce")
        classes = data.draw(st.none() | st.sets(st.sampled_from(CLASSES), min_size=1), label="classes")
        before = self._snapshot()
        self.store.remove_payloads(run_id, classes)
        self._check_after(before, {run_id})

    @precondition(_has_completed)
    @rule(data=st.data(), force=st.booleans())
    def evict(self, data: st.DataObject, force: bool) -> None:
        run_id = data.draw(st.sampled_from(self._completed()), label="evict")
        refused = not force and (self._parent_retained(run_id) or self._unacked(run_id))
        before = self._snapshot()
        try:
            self.store.evict_run(run_id, reason="test", force=force)
        except fe.Conflict:
            assert refused
        else:
            assert not refused
            self.evicted.add(run_id)
        self._check_after(before, set())

    @rule(
        keep_last=st.none() | st.integers(0, 2),
        max_age=st.none() | st.just("0s"),
        drop=st.none() | st.just("0s"),
        classes=st.none() | st.sets(st.sampled_from(CLASSES), min_size=1),
    )
    def apply_policy(
        self, keep_last: int | None, max_age: str | None, drop: str | None, classes: Any
    ) -> None:
        policy = fe.RetentionPolicy(keep_last, max_age, drop, classes)
        before = self._snapshot()
        unacked = {r for r in self._completed() if self._unacked(r)}
        report = self.store.apply_retention(policy, now=LATER)
        gone = {e.run_id for e in report.evicted}
        for run_id in gone:
            assert self.handles[run_id]._state.concluded  # non-terminal runs are never touched
            assert run_id not in unacked
        self.evicted |= gone
        self._check_after(before, {r.run_id for r in report.reduced})

    @precondition(lambda self: bool(self.evicted - self.purged))
    @rule(data=st.data(), what=st.sampled_from(["observe", "artifact", "manifest"]))
    def append_to_evicted(self, data: st.DataObject, what: str) -> None:
        """A handle kept on an evicted run: every append is run-not-retained and writes nothing."""
        run = self.handles[data.draw(st.sampled_from(sorted(self.evicted - self.purged)), label="evicted")]
        self.counter += 1
        calls = {
            "observe": lambda: run.observe(f"late-{self.counter}", 1.0),
            "artifact": lambda: run.add_artifact(f"late {self.counter}".encode(), "trace"),
            "manifest": lambda: run.record_manifest(config={"late": self.counter}),
        }
        before = self._snapshot()
        try:
            calls[what]()
        except fe.RunNotRetained:
            pass
        except fe.Conflict:  # a manifest other than the one it recorded: refused before the log
            assert what == "manifest" and run._state.manifest is not None
        else:
            raise AssertionError(f"{what} appended to the evicted run {run.id}")
        assert self.store.backend.cursor().execute(
            "SELECT count(*) FROM log WHERE run_id = ?", (run.id,)
        ).fetchall() == [(0,)]
        self._check_after(before, set())

    @precondition(lambda self: bool(self.evicted))
    @rule(data=st.data())
    def reuse_evicted_id(self, data: st.DataObject) -> None:
        """An evicted run's id: refused while its tombstone is kept, an empty history after."""
        run_id = data.draw(st.sampled_from(sorted(self.evicted)), label="reuse")
        if run_id not in self.purged:
            try:
                self.store.start_run("wf", run_id=run_id)
            except fe.Conflict:
                return
            raise AssertionError(f"{run_id} was reused while its tombstone is kept")
        run = self.store.start_run("wf", run_id=run_id)
        rows = (
            self.store.backend.cursor().execute("SELECT seq FROM log WHERE run_id = ?", (run_id,)).fetchall()
        )
        assert rows == [(1,)]
        self.handles[run_id], self.dry[run_id] = run, False
        self.evicted.discard(run_id)
        self.purged.discard(run_id)

    @rule()
    def purge(self) -> None:
        self.store.purge_tombstones("0s", now=LATER)
        self.purged |= self.evicted

    @precondition(lambda self: self.acked is None)
    @rule()
    def register(self) -> None:
        self.acked = self.store.register_consumer("watcher").position

    @precondition(lambda self: self.acked is not None)
    @rule(data=st.data())
    def acknowledge(self, data: st.DataObject) -> None:
        feed = self.store.completions("watcher", limit=5)
        if feed:
            position = data.draw(st.sampled_from([c.position for c in feed]), label="ack")
            self.acked = self.store.acknowledge("watcher", position).position

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def evicted_runs_refuse(self) -> None:
        for run_id in self.evicted:
            expected = fe.RunNotFound if run_id in self.purged else fe.RunNotRetained
            try:
                self.store.get_run_record(run_id)
            except fe.RecordError as e:
                assert type(e) is expected, (run_id, e)
            else:
                raise AssertionError(f"{run_id} is still readable")
        listed = {r["id"] for r in self.store.list_runs()}
        assert listed == set(self._retained())

    @invariant()
    def positions_are_never_reused(self) -> None:
        """A position names one row for good: a row seen before keeps its position, and a new
        row lies above every position seen so far (evicted, purged or not)."""
        top = self.top
        for position, run_id, seq in self.store.backend.cursor().execute(
            "SELECT position, run_id, seq FROM log"
        ):
            seen = self.positions.get(position)
            if seen is None:
                assert position > top, (position, top)
                self.positions[position] = (run_id, seq)
            else:
                assert seen == (run_id, seq), (position, seen, (run_id, seq))
        self.top = max(self.positions, default=0)

    @invariant()
    def documents_match_the_log(self) -> None:
        reference = reference_documents(self.store.backend.cursor())
        assert set(reference) == set(self._retained())
        for run_id, doc in reference.items():
            assert self.store.get_run_record(run_id) == doc

    def teardown(self) -> None:
        try:
            assert self.store.check_projections() == []  # rebuild on a copy equals the incremental state
        finally:
            super().teardown()


def test_retention_keeps_every_mandatory_fact_and_moves_nothing_else(fresh_stores: FreshStores) -> None:
    """Twice the profile's examples on SQLite: 200 in CI, 4,000 under --slow; a tenth of
    them on PostgreSQL, where each costs a schema."""
    run_state_machine_as_test(
        on_backend(RetentionMachine, fresh_stores),
        settings=settings(
            max_examples=fresh_stores.examples(2 * settings().max_examples), stateful_step_count=40
        ),
    )

"""Retention at its edges: "more than" an age, the slowest consumer, classes, dry runs.

Each case is one a mutation pass found unguarded (the suite passed with the rule broken).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.retention.apply import EVICT_CHUNK
from forkline_es.values._time import parse_instant


def concluded_with_payloads(store: fe.Store) -> fe.Run:
    run = store.start_run("wf", inputs={"x": 1})
    run.begin_step("s", arguments={"a": 1})
    run.end_step("s", "succeeded", result={"r": 1})
    run.conclude("succeeded")
    return run


def later() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=1)


def test_a_run_exactly_as_old_as_the_limit_is_not_older_than_it(mem_store: fe.Store) -> None:
    concluded_with_payloads(mem_store)
    now = parse_instant(mem_store.completions()[-1].ended_at) + timedelta(days=1)
    evict = mem_store.apply_retention(fe.RetentionPolicy(max_age="1d"), now=now, dry_run=True)
    reduce = mem_store.apply_retention(fe.RetentionPolicy(drop_payloads_after="1d"), now=now, dry_run=True)
    assert (evict.evicted, reduce.reduced) == ([], [])
    just_after = now + timedelta(microseconds=1)
    evict = mem_store.apply_retention(fe.RetentionPolicy(max_age="1d"), now=just_after, dry_run=True)
    assert len(evict.evicted) == 1


def test_a_tombstone_exactly_as_old_as_the_limit_stays(mem_store: fe.Store) -> None:
    run = mem_store.start_run("wf")
    run.conclude("succeeded")
    mem_store.evict_run(run.id, reason="test")
    at = parse_instant(mem_store.evictions()[0]["at"])
    assert mem_store.purge_tombstones("1d", now=at + timedelta(days=1)) == 0
    with pytest.raises(fe.RunNotRetained):
        mem_store.get_run_record(run.id)
    assert mem_store.purge_tombstones("1d", now=at + timedelta(days=1, microseconds=1)) == 1


def test_the_slowest_consumer_protects_a_run(mem_store: fe.Store) -> None:
    mem_store.register_consumer("fast")
    mem_store.register_consumer("slow")
    for _ in range(2):
        mem_store.start_run("wf").conclude("succeeded")
    mem_store.acknowledge("fast", mem_store.completions()[-1].position)  # "slow" acknowledged nothing
    for dry_run in (True, False):
        report = mem_store.apply_retention(fe.RetentionPolicy(keep_last=1), now=later(), dry_run=dry_run)
        assert report.evicted == []
        assert [k.why for k in report.kept] == [
            "its completion is not yet acknowledged by every registered consumer"
        ]


def test_a_forkline_payload_goes_only_when_every_class_is_selected(db_path: Path) -> None:
    with fe.RunRecorder(db_path) as recorder:
        run_id = recorder.start_run("job.py")
        recorder.log_event(run_id, "progress", {"pct": 50})
        recorder.end_run(run_id, "success")
    with fe.Store.open(db_path) as store:
        events_only = fe.RetentionPolicy(drop_payloads_after="0s", payload_classes=["events"])
        assert store.apply_retention(events_only, now=later()).reduced == []
        every = fe.RetentionPolicy(drop_payloads_after="0s")
        (reduced,) = store.apply_retention(every, now=later()).reduced
        assert (2, "payload") in reduced.removed


def test_a_dry_run_lists_only_runs_that_would_lose_values(mem_store: fe.Store) -> None:
    run = mem_store.start_run("wf")
    run.begin_step("s")
    run.end_step("s", "succeeded")  # no results recorded
    run.conclude("succeeded")
    policy = fe.RetentionPolicy(drop_payloads_after="0s", payload_classes=["results"])
    assert mem_store.apply_retention(policy, now=later(), dry_run=True).reduced == []
    assert mem_store.apply_retention(policy, now=later()).reduced == []


def test_a_run_longer_than_an_eviction_chunk_goes_whole_and_others_stay(mem_store: fe.Store) -> None:
    """An eviction deletes a chunk of rows a statement (``EVICT_CHUNK``, so that SQLite's
    statement journal holds a chunk's pages, not the run's): every table of a run several
    chunks long is emptied of it, the counts are exact, and a run beside it keeps every row."""
    steps = EVICT_CHUNK // 2 + 7  # each step: 4 log rows, 2 payload values, 2 entries
    runs = []
    for name in ("evicted", "kept"):
        run = mem_store.start_run(name, inputs={"n": steps})
        for i in range(steps):
            with run.batch():
                run.begin_step(f"s/{i}", arguments={"i": i})
                run.invoke(f"s/{i}", 1, "op", "sha256:" + "ab" * 32, "not-dispatched")
                run.result(f"s/{i}", 1, "succeeded", result={"i": i})
                run.end_step(f"s/{i}", "succeeded")
        run.conclude("succeeded")
        runs.append(run.id)
    evicted, kept = runs
    cur = mem_store.backend.cursor()

    def rows(table: str, run_id: str) -> int:
        return int(cur.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", (run_id,)).fetchall()[0][0])

    def values(run_id: str) -> int:
        join = "SELECT count(*) FROM payload AS p JOIN log AS l ON l.position = p.position WHERE l.run_id = ?"
        return int(cur.execute(join, (run_id,)).fetchall()[0][0])

    tables = ("log", "entry", "step_view", "run_summary")
    before = {t: rows(t, kept) for t in tables}, values(kept)
    events, payloads = rows("log", evicted), values(evicted)
    assert events > 2 * EVICT_CHUNK and payloads > EVICT_CHUNK and rows("entry", evicted) > EVICT_CHUNK
    report = mem_store.evict_run(evicted, reason="test")
    assert (report.events, report.payloads) == (events, payloads)
    assert {t: rows(t, evicted) for t in tables} == dict.fromkeys(tables, 0) and values(evicted) == 0
    assert ({t: rows(t, kept) for t in tables}, values(kept)) == before
    with pytest.raises(fe.RunNotRetained):
        mem_store.get_run_record(evicted)
    assert mem_store.get_run_record(kept)["run"]["status"] == "succeeded"

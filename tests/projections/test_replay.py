"""The heart of issue 4: generated executor histories, checked after every step.

After each call of a generated history (several runs, retries, crashes with recovery,
children, holds, dry runs, unavailable payloads) the incremental projections must equal
a full rebuild on a copy of the database, and both must equal the plain reference fold
of the raw log (``forkline_es.testing.histories``), and each run's rows alone must refold
into its rows of the projections (what ``verify`` compares); every document must validate
against the shipped schema and keep 002's invariants.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import apsw
import jsonschema
from hypothesis import settings
from hypothesis.stateful import invariant, run_state_machine_as_test

import forkline_es as fe
from forkline_es.log.backend import Backend
from forkline_es.log.sqlite import SqliteBackend
from forkline_es.projections.check import compare_tables, run_differences
from forkline_es.schema import definition, run_record_schema
from forkline_es.store import extra_projectors
from forkline_es.testing.backends import FreshStores, on_backend
from forkline_es.testing.histories import HistoryMachine, reference_documents, reference_summaries

DOCUMENT = jsonschema.Draft202012Validator(run_record_schema())
SUMMARY = jsonschema.Draft202012Validator(definition("summary"))
TERMINAL = {"succeeded", "failed", "cancelled", "stopped"}
WORK = {"step", "invoke", "result", "child"}


def dumps(value: Any) -> str:
    """JSON text that tells 1 from 1.0 (Python's == does not)."""
    return json.dumps(value, sort_keys=True)


def check_document(doc: dict[str, Any]) -> None:
    """002's invariants that a schema cannot state."""
    entries = doc["entries"]
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert entries[0]["kind"] == "start" and entries[0]["generation"] == 0
    kinds = [e["kind"] for e in entries]
    assert kinds.count("start") == 1
    if doc["run"]["status"] in TERMINAL:
        assert kinds[-1] == "conclude" and kinds.count("conclude") == 1
    else:
        assert "conclude" not in kinds
    generation = 0
    for i, e in enumerate(entries):
        if e["kind"] == "recovery":
            assert e["generation"] == generation + 1
            assert all(1 <= n < e["seq"] and entries[n - 1]["kind"] in WORK for n in e["supersedes"])
        else:
            assert e["generation"] == (generation if i else 0)
        generation = e["generation"]
    assert doc["run"]["generation"] == generation
    for path, step in doc["steps"].items():
        assert step["path"] == path
        assert step["generation"] <= generation
    for e in entries:
        if e["kind"] == "step":
            assert ("outcome" in e["step"]) == (e["step"]["status"] == "ended")


class ReplayMachine(HistoryMachine):
    """On a file (SQLite) or a schema (PostgreSQL), with a second store on it: a crashed
    run may go on in the other store."""

    def open_store(self) -> fe.Store:
        assert self.fresh is not None  # run through on_backend
        self.location = self.fresh.location()
        return self.fresh.open(self.location)

    def open_others(self, store: fe.Store) -> list[fe.Store]:
        assert self.fresh is not None
        return [self.fresh.open(self.location)]

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, list[str]] = {}
        self.validated: dict[str, str] = {}
        self.validated_summaries: set[str] = set()

    @contextlib.contextmanager
    def copy(self) -> Iterator[Backend]:
        """The live database copied: into memory on SQLite (no file per step), else the
        backend's own scratch copy (a schema of its own on PostgreSQL)."""
        live = self.store.backend
        if not isinstance(live, SqliteBackend):
            with live.scratch_copy() as copy:
                yield copy
            return
        memory = apsw.Connection(":memory:")
        with memory.backup("main", live.connection(), "main") as backup:
            backup.step(-1)
        yield SqliteBackend(memory)

    @invariant()
    def projections_equal_rebuild_and_reference(self) -> None:
        with self.copy() as copy:
            self.compare(copy)

    def compare(self, copy: Backend) -> None:
        live = self.store.backend.cursor()
        rebuilt = fe.Store(copy, "copy")
        try:
            rebuilt.rebuild_projections()
            tables = (*self.store.projections.tables, "projector")
            assert compare_tables(self.store.backend, copy, tables) == []
            expected = reference_documents(live)
            for run_id, want in expected.items():
                doc = self.store.get_run_record(run_id)
                text = dumps(doc)
                assert text == dumps(want)
                assert dumps(rebuilt.get_run_record(run_id)) == text
                # A later generation never rewrites earlier facts: entries only grow.
                entries = [dumps(e) for e in doc["entries"]]
                before = self.seen.get(run_id, [])
                assert entries[: len(before)] == before
                self.seen[run_id] = entries
                if self.validated.get(run_id) != text:
                    # Entries already validated are unchanged (above): validate the rest only.
                    DOCUMENT.validate({**doc, "entries": doc["entries"][len(before) :]})
                    check_document(doc)
                    # verify's premise: a run's own rows fold into its projections.
                    with self.store.log.snapshot() as cur:
                        assert run_differences(self.store.log, cur, run_id, extra_projectors) == []
                    self.validated[run_id] = text
                for path, step in doc["steps"].items():
                    assert dumps(self.store.get_step_record(run_id, path)) == dumps(step)
            self.check_listings(expected)
        finally:
            if isinstance(copy, SqliteBackend):
                rebuilt.close()  # the scratch copy closes its own

    def check_listings(self, documents: dict[str, dict[str, Any]]) -> None:
        listed = self.store.list_runs()
        ids = [s["id"] for s in listed]
        assert len(ids) == len(set(ids)) and set(ids) == set(documents)
        reference = reference_summaries(self.store.backend.cursor())
        assert dumps(sorted(listed, key=lambda s: s["id"])) == dumps(reference)
        for summary in listed:
            text = dumps(summary)
            if text not in self.validated_summaries:
                SUMMARY.validate(summary)
                self.validated_summaries.add(text)
            assert "payloads" not in summary and "generation" not in summary
        for workflow in {d["run"]["workflow"] for d in documents.values()} | {"no-such-workflow"}:
            got = sorted(s["id"] for s in self.store.list_runs(workflow))
            assert got == sorted(r for r, d in documents.items() if d["run"]["workflow"] == workflow)
        for doc in documents.values():  # children are listed under their own workflow
            for e in doc["entries"]:
                if e["kind"] == "child":
                    own = documents[e["child"]]["run"]
                    assert own["parent"] == doc["run"]["id"]
                    assert e["child"] in {s["id"] for s in self.store.list_runs(own["workflow"])}


def test_incremental_projections_equal_a_rebuild_and_the_reference_fold(fresh_stores: FreshStores) -> None:
    """300 histories of up to 30 calls on SQLite under the CI profile (about a minute),
    6,000 under --slow. One in 100 on PostgreSQL (3 in CI, 60 under --slow): each step's
    check copies the store into a schema and refolds it there (about 18 s a history)."""
    run_state_machine_as_test(
        on_backend(ReplayMachine, fresh_stores),
        settings=settings(
            settings(),
            stateful_step_count=30,
            max_examples=fresh_stores.examples(settings().max_examples * 3, share=100),
        ),
    )

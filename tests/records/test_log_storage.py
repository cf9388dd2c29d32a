"""The log stores bodies and payload values as TEXT, which resume and the triggers rely on."""

from __future__ import annotations

import pytest

import forkline_es as fe


@pytest.mark.sqlite_only("SQLite's typeof() of its BLOB/TEXT affinity; PostgreSQL's columns are typed text")
def test_bodies_and_values_are_text_and_a_run_resumes(sqlite_mem_store: fe.Store) -> None:
    run = sqlite_mem_store.start_run("wf", inputs={"a": 1})
    run.begin_step("s")
    types = sqlite_mem_store.conn.execute("SELECT DISTINCT typeof(body) FROM log").fetchall()
    values = sqlite_mem_store.conn.execute("SELECT DISTINCT typeof(value) FROM payload").fetchall()
    assert types == [("text",)] and values == [("text",)]
    again = sqlite_mem_store.resume_run(run.id)
    again.end_step("s", "succeeded")
    assert sqlite_mem_store.get_step_record(run.id, "s")["outcome"] == "succeeded"

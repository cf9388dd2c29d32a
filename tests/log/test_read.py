"""Reads: one run in seq order; the whole log from a position, in bounded batches."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main
from forkline_es.log.connection import open_connection
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import StepBegun
from forkline_es.log.sqlite import SqliteBackend

from .rows import chain, new_row


@pytest.fixture
def log(db_path: Path) -> Iterator[EventLog]:
    conn = open_connection(db_path)
    yield EventLog(SqliteBackend(conn))
    conn.close()


def test_read_run_yields_seq_order_not_position_order(log: EventLog) -> None:
    # positions ascend 3, 1, 2 in seq order: only ORDER BY seq gives 1, 2, 3. The log takes
    # a run's rows in seq order since schema version 8; a file written before it, or by hand
    # around that trigger, may hold them otherwise
    log.backend.connection().execute("DROP TRIGGER log_rows_follow_their_run")
    log.append([new_row("r", 2), new_row("other", 1), new_row("r", 3), new_row("r", 1)])
    rows = list(log.read_run("r"))
    assert [r.seq for r in rows] == [1, 2, 3]
    assert {r.run_id for r in rows} == {"r"}
    assert [r.event() for r in rows] == [StepBegun(path=f"s{n}") for n in (1, 2, 3)]
    assert list(log.read_run("missing")) == []


def test_read_run_from_starts_at_a_seq_and_stops_at_the_limit(log: EventLog) -> None:
    log.append(chain("r", 5))
    assert [r.seq for r in log.read_run_from("r", 3)] == [3, 4, 5]
    assert [r.seq for r in log.read_run_from("r", 2, limit=2)] == [2, 3]


def test_read_from_resumes_after_a_position_across_batches(log: EventLog) -> None:
    for run in ("a", "b", "c"):
        log.append(chain(run, 10))
    everything = list(log.read_from(0, batch=7))
    assert [r.position for r in everything] == list(range(1, 31))
    after = everything[11].position
    assert list(log.read_from(after, batch=4)) == everything[12:]
    assert list(log.read_from(30)) == []


def test_read_from_fetches_in_bounded_batches(log: EventLog) -> None:
    log.append(chain("r", 2_000))
    fetched: list[int] = []

    def count(cursor: Any, row: Any) -> Any:
        fetched.append(1)
        return row

    log.backend.connection().row_trace = count
    try:
        stream = log.read_from(0, batch=50)
        first = list(itertools.islice(stream, 120))
        assert [r.seq for r in first] == list(range(1, 121))
        assert 120 <= len(fetched) <= 150  # three batches of 50, not 2,000 rows
        rest = list(stream)
    finally:
        log.backend.connection().row_trace = None
    assert len(first) + len(rest) == 2_000
    assert [r.seq for r in rest] == list(range(121, 2_001))


def test_read_from_sees_rows_appended_while_it_streams(log: EventLog) -> None:
    log.append(chain("r", 10))
    stream = log.read_from(0, batch=4)
    seen = [next(stream).seq for _ in range(5)]
    log.append([new_row("r", 11)])
    seen += [r.seq for r in stream]
    assert seen == list(range(1, 12))


def test_a_damaged_page_is_a_store_error_never_a_raw_driver_error(damaged_db: Path) -> None:
    """Reads meet a damaged page as fe.StoreError (the CLI: exit 2 and what to do)."""
    db = damaged_db
    damaged: list[str] = []
    with fe.Store.open(db) as store:
        for i in range(20):
            try:
                store.get_run_record(f"r{i}")
            except fe.StoreError as e:
                assert "damaged" in str(e)
                damaged.append(f"r{i}")
    assert damaged
    out = CliRunner().invoke(main, ["show", damaged[0], "--db", str(db)])
    assert out.exit_code == 2 and "damaged" in out.output

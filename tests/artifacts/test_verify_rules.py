"""verify's rules at their edges: one problem per damage, the right refusal, the kinds listed.

Each case is one a mutation pass found unguarded (the suite passed with the rule broken).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.artifacts import PROBLEM_KINDS

from .helpers import kinds_at, relink, row, untrigger

#: The module tampers with the store through SQLite's own connection (drops triggers,
#: rewrites rows and files) to show what verify finds; on PostgreSQL the triggers refuse
#: that client, and tests/postgres/test_triggers.py covers them.
pytestmark = pytest.mark.sqlite_only("tampers with a SQLite file through apsw to show what verify finds")


@pytest.fixture
def store(sqlite_store: fe.Store) -> fe.Store:
    return sqlite_store


@pytest.fixture
def mem_store(sqlite_mem_store: fe.Store) -> fe.Store:
    return sqlite_mem_store


ROOT = Path(__file__).resolve().parents[2]


def three_steps(store: fe.Store, run_id: str) -> None:
    run = store.start_run("wf", run_id=run_id)
    for path in ("a", "b", "c"):
        run.begin_step(path)
        run.end_step(path, "succeeded")
    run.conclude("succeeded")


def test_a_deleted_row_is_one_gap_not_a_gap_at_every_later_row(mem_store: fe.Store) -> None:
    three_steps(mem_store, "r")
    untrigger(mem_store)
    mem_store.conn.execute("DELETE FROM log WHERE run_id = 'r' AND seq = 2")
    assert kinds_at(mem_store.verify_run("r", projections=False)) == [("seq-gap", 2), ("chain-link", 3)]


def test_an_edited_body_is_a_digest_problem_only(mem_store: fe.Store) -> None:
    """body-undecodable is for a row whose digest matches (docs/verify.md)."""
    three_steps(mem_store, "r")
    untrigger(mem_store)
    mem_store.conn.execute("UPDATE log SET body = '{not json' WHERE run_id = 'r' AND seq = 3")
    assert kinds_at(mem_store.verify_run("r", projections=False)) == [("row-digest", 3)]


def test_verifying_an_evicted_run_is_run_not_retained(mem_store: fe.Store) -> None:
    three_steps(mem_store, "gone")
    mem_store.evict_run("gone", reason="test")
    with pytest.raises(fe.RunNotRetained):
        mem_store.verify_run("gone")


@pytest.mark.parametrize("forged", ["../outside.bin", "absolute"])
def test_an_artifact_path_leaving_the_folder_is_reported_even_with_the_right_bytes(
    store: fe.Store, forged: str
) -> None:
    run = store.start_run("wf", run_id="r1")
    run.add_artifact(b"hello", "trace", name="t.txt")
    run.conclude("succeeded")
    untrigger(store)
    position, _, body = row(store, "r1", "artifact-added")
    event = json.loads(body)
    root = Path(store.artifact_files.root)
    shutil.copy(root / event["path"], root.parent / "outside.bin")
    outside = str(root.parent / "outside.bin") if forged == "absolute" else forged
    event["path"] = outside  # a forged row, the chain recomputed after it
    store.conn.execute(
        "UPDATE log SET body = ? WHERE position = ?", (fe.canonical_json(event).decode(), position)
    )
    relink(store, "r1")
    assert kinds_at(store.verify_run("r1", projections=False)) == [("artifact-path", 2)]


def test_gc_keeps_an_unreferenced_artifact_within_its_grace_period(store: fe.Store) -> None:
    run = store.start_run("wf")
    run.add_artifact(b"fresh bytes", "trace", name="t.txt")
    run.conclude("succeeded")
    store.evict_run(run.id, reason="test")  # the file is unreferenced, but seconds old
    assert store.gc().artifact_files_removed == 0


def test_every_kind_verify_reports_is_listed_and_documented() -> None:
    source = (ROOT / "forkline_es" / "artifacts" / "verify.py").read_text()
    reported = set(re.findall(r'Problem\(\s*"([a-z-]+)"', source))
    documented = set()
    for line in (ROOT / "docs" / "verify.md").read_text().splitlines():
        if line.startswith("| `") and "|" in line[3:]:
            documented.update(re.findall(r"`([a-z]+(?:-[a-z]+)+)`", line.split("|")[1]))
    assert len(reported) >= 10 and reported <= set(PROBLEM_KINDS)
    assert set(PROBLEM_KINDS) <= documented

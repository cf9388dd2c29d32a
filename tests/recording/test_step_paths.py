"""Step paths at the edges of decisions.md's rule: what is just allowed and what is not.

test_refusals.py holds the plainly malformed paths; these are the boundary cases a
looser or stricter rule would get wrong, checked for recording and for lookups alike.
"""

from __future__ import annotations

import pytest

import forkline_es as fe

WELL_FORMED = [
    "x" * 1024,  # at most 1024 characters: exactly 1024 is allowed
    "/".join(["a"] * 64),  # at most 64 segments: exactly 64 is allowed
    "$retry",  # a reserved name for an auxiliary action
    "fetch/$compensate/0",
    "fetch-data/_tmp2/10",  # names take '-' and '_' and digits after the first character
]

MALFORMED = [
    "a\n",  # a trailing newline is not part of any segment
    "a/0\n",
    "$",
    "$0",  # a reserved name is '$' followed by a name
    "-a",
    "0a",
]


@pytest.mark.parametrize("path", WELL_FORMED)
def test_paths_at_the_limits_are_recorded_and_found(store: fe.Store, path: str) -> None:
    run = store.start_run("wf")
    run.begin_step(path)
    run.end_step(path, "succeeded")
    assert store.get_step_record(run.id, path)["path"] == path


@pytest.mark.parametrize("path", MALFORMED)
def test_near_misses_are_refused_and_write_nothing(store: fe.Store, path: str) -> None:
    run = store.start_run("wf")
    before = store.conn.execute("SELECT count(*) FROM log").fetchall()
    with pytest.raises(fe.InvalidRequest):
        run.begin_step(path)
    assert store.conn.execute("SELECT count(*) FROM log").fetchall() == before
    with pytest.raises(fe.InvalidRequest):
        store.get_step_record(run.id, path)

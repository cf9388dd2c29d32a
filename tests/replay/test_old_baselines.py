"""Golden baselines exported before issue 25 (tests/replay/fixtures, by the diff of commit
ac479b2) still match their runs: the classification changed what is reported, not what
a faithful run is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.demo import demo_ids, record_demo
from forkline_es.replay import load_baseline

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fe.Store]:
    with fe.Store.open(tmp_path_factory.mktemp("demo") / "runs.db") as store:
        ids, _ = demo_ids(store)
        record_demo(store, ids)
        yield store


def _diff(store: fe.Store, golden: str, run_id: str, **options: bool) -> fe.RunDiff:
    baseline = load_baseline(FIXTURES / golden)
    return fe.diff_documents(baseline, store.get_run_record(run_id), resolve=store.get_run_record, **options)


def test_an_old_baseline_matches_its_run_exactly(demo: fe.Store) -> None:
    assert _diff(demo, "demo-first.golden.json", "demo-first").divergences == ()
    assert _diff(demo, "demo-first.golden.json", "demo-first", strict=True).is_match
    fe.testing.assert_matches_baseline(demo, "demo-first", FIXTURES / "demo-first.golden.json")


def test_an_old_baseline_of_the_replay_differs_only_in_attempt_numbers(demo: fe.Store) -> None:
    """The replay used to copy the original's attempt numbers; it numbers afresh now."""
    diff = _diff(demo, "demo-replay.golden.json", "demo-replay")
    assert diff.is_match
    assert [(d.kind, d.path, d.changes) for d in diff.divergences] == [
        ("attempt", "summarize", [("/attempt", 2, 1)])
    ]
    assert not _diff(demo, "demo-replay.golden.json", "demo-replay", strict=True).is_match


def test_an_old_baseline_still_catches_the_replay_at_summarize(demo: fe.Store) -> None:
    diff = _diff(demo, "demo-first.golden.json", "demo-replay")
    assert not diff.is_match and diff.first is not None
    assert (diff.first.kind, diff.first.path, diff.first.category) == ("result", "summarize", "behaviour")

"""Properties of the diff and the guard over generated executor histories."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe

from .histories import (
    MUTATIONS,
    Step,
    assert_guard_agrees,
    guarded,
    histories,
    mutate,
    record,
    variant_of,
)


@given(histories())
def test_a_run_matches_itself_and_a_faithful_rerecording(h) -> None:
    with fe.Store.open(":memory:") as store:
        a, _ = record(store, h)
        b, _ = record(store, h)
        assert fe.diff_runs(store, a, a).is_match
        assert fe.diff_runs(store, a, b).is_match
        assert fe.diff_runs(store, b, a).is_match


@given(histories(), st.data())
def test_one_mutation_is_reported_where_it_first_shows_with_its_kind(h, data) -> None:
    k = data.draw(st.integers(0, len(h.steps) - 1))
    what = data.draw(st.sampled_from(sorted(MUTATIONS)))
    with fe.Store.open(":memory:") as store:
        a, at = record(store, h)
        b, _ = record(store, mutate(h, k, what))
        first = fe.diff_runs(store, a, b).first
    where, kind = MUTATIONS[what]
    assert first is not None
    assert (first.kind, first.path, first.seq_a, first.seq_b) == (
        kind,
        h.steps[k].path,
        at[k, where],
        at[k, where],
    )


@given(histories(min_steps=0), st.data())
def test_one_inserted_step_is_one_extra_step_and_its_removal_one_missing_step(h, data) -> None:
    k = data.draw(st.integers(0, len(h.steps)))
    new = data.draw(st.builds(Step, path=st.just("inserted"), retried=st.booleans()))
    longer = replace(h, steps=(*h.steps[:k], new, *h.steps[k:]))
    with fe.Store.open(":memory:") as store:
        a, _ = record(store, h)
        b, at = record(store, longer)
        added = fe.diff_runs(store, a, b).divergences
        removed = fe.diff_runs(store, b, a).divergences
    assert [(d.kind, d.path, d.seq_b) for d in added] == [("extra-step", "inserted", at[k, "begin"])]
    assert [(d.kind, d.path, d.seq_a) for d in removed] == [("missing-step", "inserted", at[k, "begin"])]
    assert len(added[0].changes) == at[k, "end"] - at[k, "begin"] + 1  # every entry of the step


@settings(max_examples=60)
@given(histories(), st.data())
def test_the_guard_and_the_diff_agree(h, data) -> None:
    variant = variant_of(h, data)
    with fe.Store.open(":memory:") as store:
        original, _ = record(store, h)
        rp = fe.Replayer(store, original, record=True)
        violation = guarded(rp, variant)
        assert rp.run is not None
        successor = store.get_run_record(rp.run.id)
        diff = fe.diff_runs(store, original, rp.run.id)
    assert successor["run"]["predecessor"] == original
    assert_guard_agrees(violation, diff)
    # results are served from the record, so a changed result alone is no violation
    assert (violation is None) == (_calls(variant) == _calls(h))


def _calls(h):
    return [replace(s, result=None) for s in h.steps], h.status, h.outputs

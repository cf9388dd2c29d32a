"""The collector stays out of bulk construction, and a kept document skips the young walks."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

import forkline_es as fe
from forkline_es._gc import gc_paused
from forkline_es.records.documents import PROMOTE_AT


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation))


def test_a_kept_build_lands_in_the_oldest_generation(collector_enabled: None) -> None:
    with gc_paused(keep=True):
        assert not gc.isenabled()
        built = [{"n": [i]} for i in range(1_000)]
    assert gc.isenabled()
    assert _in_generation(built, 2)
    assert not _in_generation(built, 0)
    assert gc.get_count()[0] < 100  # no young collection is owed for what was built


def test_a_plain_pause_leaves_the_build_young(collector_enabled: None) -> None:
    with gc_paused():
        built = [{"n": [i]} for i in range(10)]
    assert _in_generation(built, 0)


def test_objects_the_program_froze_stay_frozen(collector_enabled: None) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused(keep=True):
            built = [[i] for i in range(10)]
        assert gc.get_freeze_count() == frozen
        assert _in_generation(built, 0)
    finally:
        gc.unfreeze()


def test_a_disabled_collector_stays_disabled() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with gc_paused(keep=True):
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_a_document_read_owes_no_young_collection(store: fe.Store, collector_enabled: None) -> None:
    run = store.start_run("wf")
    for i in range(300):
        run.begin_step(f"s/{i}", arguments={"i": i})
        run.end_step(f"s/{i}", "succeeded", result={"i": [i]})
    run.conclude("succeeded")
    gc.collect()
    doc = store.get_run_record(run.id)
    assert len(doc["steps"]) == 300
    assert _in_generation(doc, 2)
    assert _in_generation(doc["steps"], 2)
    step = store.get_step_record(run.id, "s/7")  # small: left to the collector, as any allocation
    assert _in_generation(step, 0)


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_kept_build_does_not_promote_the_program_s_garbage(collector_enabled: None) -> None:
    """The program's young cycles are collected on the way in, not moved to the oldest
    generation with the build, where only a full collection would find them."""
    collected: list[int] = []
    gc.collect()
    weakref.finalize(_Cycle(), collected.append, 1)
    with gc_paused(keep=True):
        built = [{"n": [i]} for i in range(1_000)]
    assert collected == [1]
    assert _in_generation(built, 2)


def test_reading_documents_often_does_not_starve_the_collector(
    store: fe.Store, collector_enabled: None
) -> None:
    """An application reading records in a loop still gets its garbage cycles collected
    without calling ``gc.collect()`` itself. (Each read used to promote every young object
    and zero the count that schedules young collections: none ever ran again.)"""
    small, big = store.start_run("wf"), store.start_run("wf")
    small.begin_step("s")
    for i in range(300):
        big.begin_step(f"s/{i}", arguments={"i": i})
    assert len(store.export_run_record(big.id)) >= PROMOTE_AT
    collected: list[int] = []
    gc.collect()
    for i in range(3_000):
        weakref.finalize(_Cycle(), collected.append, i)
        store.get_run_record(small.id)
        if i % 100 == 0:
            store.get_run_record(big.id)
    assert len(collected) >= 2_500

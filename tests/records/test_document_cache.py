"""The concluded runs' document cache (``records.cache``): a hit equals a fresh build, and
any event of the run (from this store or another connection) makes the next read rebuild."""

from __future__ import annotations

from pathlib import Path

import forkline_es as fe
from forkline_es.records.cache import DocumentCache


def _concluded(store: fe.Store, steps: int = 5) -> str:
    run = store.start_run(workflow="cache", inputs={"n": steps})
    for i in range(steps):
        run.begin_step(f"s/{i}", arguments={"i": i})
        run.end_step(f"s/{i}", "succeeded", result={"i": i * i})
    run.conclude("succeeded")
    return run.id


def test_a_repeat_read_is_served_from_the_cache_and_equals_a_fresh_build(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "c.db") as store:
        run_id = _concluded(store)
        first = store.get_run_record(run_id)
        assert (store.documents.hits, store.documents.misses) == (0, 1)
        again = store.get_run_record(run_id)
        assert store.documents.hits == 1
        assert again == first and again is not first  # the caller's own copy
        again["entries"].clear()  # changing it changes nothing cached
        assert store.get_run_record(run_id) == first
        assert store.export_run_record(run_id) == fe.canonical_json(first)
    with fe.Store.open(tmp_path / "c.db") as fresh:  # built from the projections alone
        assert fresh.get_run_record(run_id) == first


def test_an_event_of_the_run_invalidates_its_text(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "c.db") as store, fe.Store.open(tmp_path / "c.db") as other:
        run_id = _concluded(store)
        before = store.get_run_record(run_id)
        assert before["payloads"] or before["entries"]
        other.remove_payloads(run_id, ["results"], reason="test")  # another connection appends
        after = store.get_run_record(run_id)
        assert store.documents.misses == 2
        assert after == other.get_run_record(run_id) != before


def test_an_active_run_is_never_cached(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "c.db") as store:
        run = store.start_run(workflow="cache")
        store.get_run_record(run.id)
        run.begin_step("a")
        assert "a" in store.get_run_record(run.id)["steps"]
        assert (store.documents.hits, store.documents.misses) == (0, 0)


def test_the_cache_keeps_at_most_its_limit() -> None:
    cache = DocumentCache(limit=10)
    cache.put("a", 1, b"x" * 6)
    cache.put("b", 1, b"y" * 6)  # over the limit: the least recently read goes
    assert cache.get("a", 1) is None and cache.get("b", 1) == b"y" * 6
    cache.put("c", 1, b"z" * 11)  # larger than the whole cache: not kept
    assert cache.get("c", 1) is None and cache.get("b", 1) == b"y" * 6
    assert cache.get("b", 2) is None  # another position: a miss

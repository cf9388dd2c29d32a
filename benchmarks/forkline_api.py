"""Forkline 0.5.0's step store and replay engine beside ``forkline_es.forkline``'s, in one run.

    python -m benchmarks.forkline_api [--quick]

Two workloads, the same calls on both packages (Forkline is the ``bench`` or ``dev`` extra):

- recording: ``SQLiteStore`` in a fresh file, one run of S steps, each ``start_step``, E
  ``append_event`` calls (payload ``{"i": n, "text": ...}``, about 100 bytes) and
  ``end_step``; the figure is the time per call (every call commits).
- compare: two recorded runs of S steps x E events that differ in the last event, then
  ``ReplayEngine(store).compare_runs(a, b)`` (both runs loaded from the file and compared);
  the figure is the time per call.

Durability: each package at its default. Forkline opens a ``sqlite3`` connection per call,
rollback journal with ``synchronous=FULL`` (power-loss durable); ours keeps one connection,
WAL with ``synchronous=NORMAL`` (crash-durable), and a third row runs ours with
``durability="full"`` (WAL, ``synchronous=FULL``) for the equal-durability ratio.
Repetitions rotate which side runs first; ratios are taken pair by pair (Forkline's time
over ours in the same repetition) and their median is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import forkline_es.forkline as ours

Side = tuple[str, Callable[[str], Any]]


def _forkline() -> Any:
    import forkline  # type: ignore[import-untyped]

    return forkline


def _sides() -> list[Side]:
    theirs = _forkline()
    return [
        ("forkline 0.5.0", lambda path: theirs.SQLiteStore(path)),
        ("forkline_es (normal)", lambda path: ours.SQLiteStore(path)),
        ("forkline_es (full)", lambda path: ours.SQLiteStore(path, durability="full")),
    ]


def _record(store: Any, run_id: str, steps: int, events: int, last: str = "same") -> int:
    store.start_run(run_id)
    calls = 1
    for i in range(steps):
        store.start_step(run_id, i, f"step-{i % 5}")
        for n in range(events):
            text = last if (i, n) == (steps - 1, events - 1) else "lorem ipsum dolor sit amet " * 3
            store.append_event(run_id, i, "output" if n % 2 else "input", {"i": n, "text": text})
        store.end_step(run_id, i)
        calls += events + 2
    return calls


def _close(store: Any) -> None:
    if hasattr(store, "close"):
        store.close()


def recording(make: Callable[[str], Any], folder: str, steps: int, events: int) -> float:
    """Seconds per recording call."""
    store = make(os.path.join(folder, f"rec-{time.perf_counter_ns()}.db"))
    start = time.perf_counter()
    calls = _record(store, "r", steps, events)
    took = time.perf_counter() - start
    _close(store)
    return took / calls


def compare(make: Callable[[str], Any], folder: str, steps: int, events: int, rounds: int) -> float:
    """Seconds per ``compare_runs`` call."""
    store = make(os.path.join(folder, f"cmp-{time.perf_counter_ns()}.db"))
    _record(store, "a", steps, events)
    _record(store, "b", steps, events, last="changed")
    engine = (ours if isinstance(store, ours.SQLiteStore) else _forkline()).ReplayEngine(store)
    assert engine.compare_runs("a", "b").status.value == "diverged"
    start = time.perf_counter()
    for _ in range(rounds):
        engine.compare_runs("a", "b")
    took = time.perf_counter() - start
    _close(store)
    return took / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    quick = parser.parse_args().quick
    steps, events, reps, rounds = (5, 4, 2, 3) if quick else (40, 5, 5, 20)
    sides = _sides()
    times: dict[str, dict[str, list[float]]] = {w: {name: [] for name, _ in sides} for w in ("rec", "cmp")}
    with tempfile.TemporaryDirectory(dir=".") as folder:
        for rep in range(reps):
            for name, make in sides[rep % len(sides) :] + sides[: rep % len(sides)]:
                times["rec"][name].append(recording(make, folder, steps, events))
                times["cmp"][name].append(compare(make, folder, steps, events, rounds))
    base = sides[0][0]
    titles = {
        "rec": f"SQLiteStore recording ({steps} steps x {events} events), per call",
        "cmp": f"ReplayEngine.compare_runs ({steps} steps x {events} events each), per call",
    }
    for workload, title in titles.items():
        print(f"\n{title}, median of {reps} repetitions")
        print(f"{'side':<22} {'time':>12} {'Forkline / side':>16}")
        for name, _ in sides:
            mine = times[workload][name]
            ratio = statistics.median(f / o for f, o in zip(times[workload][base], mine, strict=True))
            print(f"{name:<22} {statistics.median(mine) * 1e6:>9.1f} us {ratio:>15.2f}x")


if __name__ == "__main__":
    main()

"""``forkline-es serve``: how long a page takes on a big store (issue 24's targets: the runs
listing under 200 ms, the page of a 2,000-step run under 1 s).

The store holds 100,000 runs over 30 days (a tenth held) and one run of 2,000 steps, each
step an invoke and a result with small payloads (8,000 entries). Each page is fetched
through the ASGI application in process (Starlette's TestClient: routing, the store's
reads, the template, the response; no network). The floor beside each page is the Python
API call the page is built on, alone: the ratio is how much of the page is that read.

    python -m benchmarks.ui [--quick]
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, paired
from forkline_es.values import canonical_timestamp

__all__ = ["main", "run"]

_START: Final = datetime(2026, 1, 1, tzinfo=UTC)
_ARTIFACT: Final = "sha256:" + hashlib.sha256(b"bench connector").hexdigest()
BIG: Final = "big-run"


def _fill(store: fe.Store, runs: int) -> None:
    step = timedelta(days=30) / runs
    for i in range(runs):
        with store._recorded_at(canonical_timestamp(_START + i * step)):
            run = store.start_run(
                workflow=f"bench/ui/{i % 10}",
                run_id=f"run-{i:07d}",
                labels={"customer": f"c-{i % 500}"},
            )
            if i % 10 == 3:
                run.hold(code="approval", reason="waiting for a human")
            elif i % 10 != 7:
                run.conclude("failed" if i % 10 == 5 else "succeeded")


def _big(store: fe.Store, steps: int) -> None:
    run = store.start_run("bench/ui/big", inputs={"steps": steps}, run_id=BIG)
    for i in range(steps):
        path = f"step-{i}"
        with run.batch():
            run.begin_step(path, arguments={"i": i})
            run.invoke(path, 1, "bench.op", _ARTIFACT, "not-dispatched", arguments={"i": i})
            run.result(path, 1, "succeeded", result={"i": i, "text": f"answer {i}"})
            run.end_step(path, "succeeded")
    run.conclude("succeeded")


def _timed(fn: Callable[[], Any]) -> Trial:
    with Timer() as t:
        fn()
    return Trial(1, t.seconds)


def _get(client: Any, url: str) -> Callable[[], Trial]:
    def fetch() -> None:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)

    return lambda: _timed(fetch)


def run(quick: bool, workdir: Path) -> list[Row]:
    from starlette.testclient import TestClient

    from forkline_es.web import create_app

    runs = 5_000 if quick else 100_000
    steps = 200 if quick else 2_000
    repeats = 5 if quick else 15
    path = workdir / "ui.db"
    with fe.Store.open(path) as store:
        _fill(store, runs)
        _big(store, steps)
    with fe.Store.open(path, read_only=True) as store, TestClient(create_app(store)) as client:
        workloads: list[tuple[str, str, Callable[[], Any], float]] = [
            (
                f"runs page (50 of {runs:,} runs)",
                "/runs",
                lambda: store.list_runs(limit=51),
                0.2,
            ),
            (
                f"runs page, held runs of one customer ({runs:,} runs)",
                "/runs?status=held&label=customer%3Dc-43",
                lambda: store.list_runs(status=["held"], labels={"customer": "c-43"}, limit=51),
                0.2,
            ),
            (
                f"run page, {steps:,} steps (timeline, steps, entries)",
                f"/runs/{BIG}",
                lambda: store.get_run_record(BIG),
                1.0,
            ),
            (
                f"step page of that run ({steps:,} steps)",
                f"/runs/{BIG}/steps/step-7",
                lambda: store.get_step_record(BIG, "step-7"),
                1.0,
            ),
            (
                f"/api/runs/{BIG} ({steps:,} steps)",
                f"/api/runs/{BIG}",
                lambda: store.get_run_record(BIG),
                1.0,
            ),
        ]
        rows: list[Row] = []
        for name, url, floor, target in workloads:
            row = paired(
                name,
                _get(client, url),
                lambda f=floor: _timed(f),  # type: ignore[misc]
                "the Python API read alone",
                repeats,
                unit="pages/s",
            )
            ms = 1000 / row.ours
            verdict = "ok" if ms < target * 1000 else "MISSED"
            rows.append(replace(row, note=f"median {ms:.1f} ms; target < {target * 1000:.0f} ms: {verdict}"))
    return rows


def main() -> None:
    from benchmarks.run import standalone

    standalone("ui")


if __name__ == "__main__":
    main()

"""Finding runs: a filtered page of 20 out of 100,000 runs (``list_runs``), the issue's
target being under 10 ms a page.

Runs start over 30 days across 10 workflows and 500 customers (a label; 50 with ``--quick``); a tenth are
held, most of the rest concluded. Each workload reads one page of 20 newest first; the
floor is plain apsw running the one indexed SELECT that page needs, rows left undecoded.

    python -m benchmarks.listing [--quick]
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import apsw

import forkline_es as fe
from benchmarks._harness import Row, Timer, Trial, paired
from forkline_es.values import canonical_timestamp

__all__ = ["main", "run"]

PAGE: Final = 20
_START: Final = datetime(2026, 1, 1, tzinfo=UTC)
_KEYSET: Final = "ORDER BY started_key DESC, run_id DESC LIMIT 20"


def _fill(store: fe.Store, runs: int, customers: int) -> str:
    """Record ``runs`` runs; returns the id of the 21st newest (where page 2 continues)."""
    step = timedelta(days=30) / runs
    for i in range(runs):
        with store._recorded_at(canonical_timestamp(_START + i * step)):
            run = store.start_run(
                workflow=f"bench/list/{i % 10}",
                run_id=f"run-{i:07d}",
                labels={"customer": f"c-{i % customers}", "region": "eu" if i % 3 else "us"},
            )
            if i % 10 == 3:
                run.hold(code="approval", reason="waiting for a human")
            elif i % 10 != 7:  # a tenth stays active
                run.conclude("failed" if i % 10 == 5 else "succeeded")
    return f"run-{runs - 1 - PAGE:07d}"


def _page(store: fe.Store, query: dict[str, Any]) -> Trial:
    with Timer() as t:
        page = store.list_runs(**query, limit=PAGE)
    assert len(page) == PAGE, (query, len(page))
    return Trial(1, t.seconds)


def _raw(conn: apsw.Connection, sql: str, params: tuple[object, ...]) -> Trial:
    with Timer() as t:
        rows = conn.execute(sql, params).fetchall()
    assert len(rows) == PAGE, sql
    return Trial(1, t.seconds)


def run(quick: bool, workdir: Path) -> list[Row]:
    runs = 5_000 if quick else 100_000
    repeats = 5 if quick else 21
    path = workdir / "listing.db"
    with fe.Store.open(path) as store:
        after = _fill(store, runs, 50 if quick else 500)
        recent = (_START + timedelta(days=27)).strftime("%Y-%m-%dT%H:%M:%S")
        conn = apsw.Connection(str(path))
        workloads: list[tuple[str, dict[str, Any], str, tuple[object, ...]]] = [
            ("the newest page", {}, f"SELECT state FROM run_summary {_KEYSET}", ()),
            (
                "held runs",
                {"status": "held"},
                f"SELECT state FROM run_summary WHERE status = ? {_KEYSET}",
                ("held",),
            ),
            (
                "one customer's runs (a label)",
                {"labels": {"customer": "c-42"}},
                "SELECT s.state FROM run_label AS k JOIN run_summary AS s ON s.run_id = k.run_id "
                "WHERE k.name = ? AND k.value = ? ORDER BY k.started_key DESC, k.run_id DESC LIMIT 20",
                ("customer", "c-42"),
            ),
            (
                "failed runs of one workflow in the last 3 days",
                {"workflow": "bench/list/5", "status": ["failed"], "since": recent + "Z"},
                "SELECT state FROM run_summary WHERE workflow = ? AND status = ? AND started_key >= ? "
                + _KEYSET,
                ("bench/list/5", "failed", recent),
            ),
            (
                "two labels and a status, page 2",
                {"labels": {"region": "us", "customer": "c-42"}, "status": "succeeded", "before": after},
                "SELECT s.state FROM run_label AS k JOIN run_summary AS s ON s.run_id = k.run_id "
                "WHERE k.name = ? AND k.value = ? AND s.status = ? "
                "AND EXISTS (SELECT 1 FROM run_label AS o WHERE o.name = ? AND o.value = ? "
                "AND o.run_id = k.run_id) ORDER BY k.started_key DESC, k.run_id DESC LIMIT 20",
                ("customer", "c-42", "succeeded", "region", "us"),
            ),
        ]
        rows: list[Row] = []
        for name, query, sql, params in workloads:
            ours: Callable[[], Trial] = lambda q=query: _page(store, q)  # noqa: E731
            rows.append(
                paired(
                    f"a page of {PAGE} of {runs:,} runs: {name}",
                    ours,
                    lambda s=sql, p=params: _raw(conn, s, p),
                    "raw apsw: the same indexed SELECT, rows not decoded",
                    repeats,
                    unit="pages/s",
                    note="target: 100 pages/s (10 ms a page) or more",
                )
            )
        conn.close()
    return rows


def main() -> None:
    from benchmarks.run import standalone

    standalone("listing")


if __name__ == "__main__":
    main()

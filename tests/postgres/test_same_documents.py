"""The same calls give byte-identical run record documents on SQLite and PostgreSQL.

Payloads are canonical JSON text on both; observation values are a projection column
without a declared type on SQLite (3.0 stays REAL, 3 INTEGER) and ``numeric`` on
PostgreSQL, where a float once came back an int (3.0 -> 3), rounded to 15 digits
(0.30000000000000004 -> 0.3) or as a 301-digit int (1e300).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.testing.backends import FreshStores

AT = "2026-01-02T03:04:05.000006Z"
#: Whole floats, floats at the ends of the range, and sums that 15 digits would round.
FLOATS = [3.0, 0.1 + 0.2, 1e300, -2.5e-300, 5e-324, 1e16, 2.0**53 + 2, 1.7976931348623157e308, -7.25]
INTS = [3, 0, -1, 2**62, -(2**63)]


def record(store: fe.Store, values: list[float | int]) -> bytes:
    with store._recorded_at(AT):
        run = store.start_run("wf", run_id="r", inputs={"values": values})
        run.begin_step("s", arguments={"x": 1.5})
        for i, v in enumerate(values):
            run.observe(f"m{i}", v, step="s" if i % 2 else None)
        run.end_step("s", "succeeded", result={"floats": values})
        run.conclude("succeeded", outputs={"n": len(values)})
    return store.export_run_record("r")


def metrics(store: fe.Store, count: int) -> list[object]:
    return [store.metrics("wf", f"m{i}") for i in range(count)]


def test_observed_numbers_come_back_as_they_went_in_on_both_backends(pg_dsn: str, tmp_path: Path) -> None:
    values: list[float | int] = [*FLOATS, *INTS]
    with fe.Store.open(tmp_path / "runs.db") as lite, fe.Store.open(pg_dsn, artifacts=tmp_path / "a") as pg:
        document = record(lite, values)
        assert record(pg, values) == document
        observed = [o["value"] for o in pg.get_run_record("r")["x-observations"]]
        assert [(type(v), v) for v in observed] == [(type(v), v) for v in values]
        assert metrics(pg, len(values)) == metrics(lite, len(values))


@settings(max_examples=25)
@given(
    values=st.lists(
        # -0.0 is left out: numeric has no negative zero, so PostgreSQL gives back 0.0
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or str(f) == "0.0")
        | st.integers(-(2**63), 2**63 - 1),
        min_size=1,
        max_size=6,
    )
)
def test_any_observed_numbers_give_the_same_document_on_both_backends(
    pg_stores_dsn: str, tmp_path_factory: pytest.TempPathFactory, values: list[float | int]
) -> None:
    folder = tmp_path_factory.mktemp("same")  # a folder per example: tmp_path is the test's
    lite, pg = FreshStores("sqlite", folder), FreshStores("postgresql", folder, pg_stores_dsn)
    try:
        with lite.open() as a, pg.open() as b:
            assert record(b, values) == record(a, values)
            assert metrics(b, len(values)) == metrics(a, len(values))
    finally:
        pg.close()

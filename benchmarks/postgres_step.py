"""Where one batched executor step's time goes on PostgreSQL, against 5 times DBOS's step.

``benchmarks/postgres.py`` compares whole steps; this splits ours, in one run on one
throwaway server, into what the server does with our statement and what the client does
before it, beside DBOS's step measured in the same run, for ``synchronous_commit`` on and
off. The workload is ``benchmarks.postgres``'s batched step: ``begin_step``, ``invoke``,
``result`` and ``end_step`` in one ``run.batch()``, one commit.

Rows, in µs a step (medians over the rounds; the rounds alternate their order):

- ``DBOS step``: DBOS Transact, ``@DBOS.step`` in a ``@DBOS.workflow``, as in
  ``benchmarks.postgres``; and ``5x DBOS``, a fifth of it: the whole budget of a step that
  meets the target.
- ``fe PostgreSQL step``: ours, wall time.
- ``our statement``: the statements ``fe PostgreSQL`` sent for the same steps (traced on
  the append's cursor, then sent again on a plain autocommit connection, prepared, after
  the traced run's first row: ``benchmarks.postgres.traced_steps``): the server's work,
  the round trip and psycopg's, with none of the recording's Python.
- ``our statement, rules off``: the same with the log's and the payload's insert triggers
  disabled (positions from a column default): what the plpgsql rules cost, which no
  cheaper form measured so far avoids (docs/benchmarks.md).
- ``recording's Python``: client CPU of the four calls and the batch's commit with the
  append's cursor answering at once (no server): decode, checks, canonical JSON, digests,
  the fold prepared, the statement built.
- ``psycopg, client CPU``: client CPU while ``our statement`` ran: sending the statement
  and reading its positions.
- ``budget left for the client``: ``5x DBOS`` minus ``our statement`` (rules on, then off):
  what a recorder writing our rows may spend in Python to meet the target.

Not part of ``python -m benchmarks`` (it starts a server):

    python -m benchmarks.postgres_step [--steps N] [--rounds R] [--markdown]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks._harness import environment
from benchmarks.postgres import DBOS, FE_PG, Server, StartRow, _step, _trial, put_start_row, traced_steps

__all__ = ["main"]

Replay = list[tuple[bytes, list[Any]]]

_RULES_OFF: Final = (
    "ALTER TABLE log ALTER COLUMN position SET DEFAULT nextval('log_position')",
    "ALTER TABLE log DISABLE TRIGGER log_insert_rules",
    "ALTER TABLE payload DISABLE TRIGGER payload_belongs_to_a_log_row",
)


def _traced(pg: Server, steps: int) -> tuple[Replay, StartRow]:
    """The statements ``fe PostgreSQL`` sends for ``steps`` batched steps on run "timed",
    and that run's first row, which each replay's database starts with."""
    with pg.database(durable=True) as dsn:
        return traced_steps(dsn, "timed", steps, batched=True)


def _replay(pg: Server, durable: bool, traced: tuple[Replay, StartRow], rules: bool) -> tuple[float, float]:
    """(wall, client CPU) in µs a step of sending the traced statements again on a fresh
    database whose run "timed" starts with the traced run's first row."""
    import psycopg

    import forkline_es as fe

    replay, start = traced
    with pg.database(durable) as dsn:
        fe.Store.open(dsn).close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            put_start_row(conn, start)
            if not rules:
                for statement in _RULES_OFF:
                    conn.execute(statement)
            cur = psycopg.RawCursor(conn)
            wall, cpu = time.perf_counter(), time.process_time()
            for query, params in replay:
                cur.execute(query, params, prepare=True)
                cur.fetchall()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            row = conn.execute("SELECT count(*) FROM log WHERE run_id = 'timed'").fetchone()
        if row is None or row[0] != 1 + 4 * len(replay):
            raise AssertionError(f"the replay left {row} rows of the timed run")
    return 1e6 * wall / len(replay), 1e6 * cpu / len(replay)


class _Answered:
    """The append's cursor answering at once, with rising positions: no server."""

    def __init__(self) -> None:
        self._positions = itertools.count(1_000_000)
        self._rows = 0

    def execute(self, query: bytes, params: Any = None, **kwargs: Any) -> _Answered:
        log_rows = query.split(b" RETURNING ", 1)[0]  # "... INSERT INTO log (...) VALUES (...), (...)"
        self._rows = log_rows.count(b"), (") + 1
        return self

    def fetchall(self) -> list[tuple[int]]:
        return [(next(self._positions),) for _ in range(self._rows)]


def _python(pg: Server, steps: int) -> float:
    """Client CPU in µs a step of the recording with the append answered at once."""
    import forkline_es as fe

    with pg.database(durable=True) as dsn, fe.Store.open(dsn) as store:
        run = store.start_run(workflow="bench/steps", run_id="python")
        backend: Any = store.backend
        backend._insert = _Answered()
        for i in range(50):  # warm: the shapes' texts cached, as in a running executor
            with run.batch():
                _step(run, i)
        cpu = time.process_time()
        for i in range(50, 50 + steps):
            with run.batch():
                _step(run, i)
        return 1e6 * (time.process_time() - cpu) / steps


def _per_step(side: str, pg: Server, durable: bool, steps: int, folder: Path) -> float:
    """µs a step of ``side`` (``benchmarks.postgres``'s one-writer batched trial)."""
    return 1e6 / _trial(side, "batch", 1, steps, durable, pg, folder)


def _measure(pg: Server, durable: bool, steps: int, rounds: int, folder: Path) -> dict[str, float]:
    traced = _traced(pg, steps)
    trials: dict[str, Callable[[], dict[str, float]]] = {
        "dbos": lambda: {"dbos": _per_step(DBOS, pg, durable, steps, folder)},
        "fe": lambda: {"fe": _per_step(FE_PG, pg, durable, steps, folder)},
        "statement": lambda: dict(
            zip(("statement", "psycopg"), _replay(pg, durable, traced, True), strict=True)
        ),
        "rules off": lambda: {"rules off": _replay(pg, durable, traced, False)[0]},
        "python": lambda: {"python": _python(pg, steps)},
    }
    got: dict[str, list[float]] = {}
    order = list(trials)
    for r in range(rounds):
        for name in order[r % len(order) :] + order[: r % len(order)]:
            for key, value in trials[name]().items():
                got.setdefault(key, []).append(value)
    return {key: statistics.median(values) for key, values in got.items()}


def _table(figures: dict[bool, dict[str, float]], markdown: bool) -> str:
    def us(label: str, pick: Callable[[dict[str, float]], float]) -> list[str]:
        return [label, *(f"{pick(figures[d]):,.0f}" for d in (True, False))]

    def times(label: str, pick: Callable[[dict[str, float]], float]) -> list[str]:
        return [label, *(f"{pick(figures[d]):.2f}x" for d in (True, False))]

    rows = [
        us("DBOS step", lambda f: f["dbos"]),
        us("5x DBOS: the whole step's budget", lambda f: f["dbos"] / 5),
        us("fe PostgreSQL step", lambda f: f["fe"]),
        us("our statement (server, round trip, psycopg)", lambda f: f["statement"]),
        us("our statement, rules off", lambda f: f["rules off"]),
        us("recording's Python (client CPU, no server)", lambda f: f["python"]),
        us("psycopg, client CPU", lambda f: f["psycopg"]),
        us("budget left for the client, rules on", lambda f: f["dbos"] / 5 - f["statement"]),
        us("budget left for the client, rules off", lambda f: f["dbos"] / 5 - f["rules off"]),
        times("fe PostgreSQL against DBOS", lambda f: f["dbos"] / f["fe"]),
        times("our statement alone against DBOS", lambda f: f["dbos"] / f["statement"]),
        times("our statement, rules off, against DBOS", lambda f: f["dbos"] / f["rules off"]),
    ]
    header = ["µs a batched step", "synchronous_commit on", "off"]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    width = max(len(r[0]) for r in [header, *rows])
    return "\n".join(f"{r[0]:<{width}}  {r[1]:>22}  {r[2]:>8}" for r in [header, *rows])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.postgres_step", description=__doc__)
    parser.add_argument("--steps", type=int, default=600, help="batched steps a trial (default 600)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every row (default 3)")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args(argv)

    from forkline_es.testing.postgres import PostgresServer

    with tempfile.TemporaryDirectory(prefix="fe-pgstep-") as tmp, PostgresServer() as server:
        pg = Server(server)
        figures = {d: _measure(pg, d, args.steps, args.rounds, Path(tmp)) for d in (True, False)}
        env = environment(Path(tmp))
        facts = (env["date"], env["machine"], f"Python {env['python']}", f"PostgreSQL {pg.version()}")
    print("; ".join(facts) + f"; {args.steps} steps a trial, {args.rounds} rounds\n")
    print(_table(figures, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())

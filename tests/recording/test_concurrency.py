"""Several processes appending at once: nothing lost, nothing duplicated, no uncaught lock error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import forkline_es as fe
from forkline_es.log.events import decode_body

from .helpers import check_integrity
from .worker_paths import WORKER

WRITERS = 4
STEPS = 40


def test_four_writers_on_their_own_runs_and_one_shared_run(db_path: Path) -> None:
    fe.Store.open(db_path).close()  # create the schema once, before the race
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "writer", str(db_path), str(n), str(STEPS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(WRITERS)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert b"BusyError" not in err and b"database is locked" not in err, err.decode()
        assert p.returncode == 0, err.decode()
        assert err.decode().startswith("conflicts "), err.decode()  # nothing else went wrong
    runs = check_integrity(str(db_path))
    assert sorted(runs) == sorted([f"own-{n}" for n in range(WRITERS)] + ["shared"])

    def begun_paths(run_id: str) -> list[str]:
        return [decode_body(r[8]).path for r in runs[run_id] if r[5] == "step-begun"]  # type: ignore[union-attr]

    def ended_paths(run_id: str) -> list[str]:
        return [decode_body(r[8]).path for r in runs[run_id] if r[5] == "step-ended"]  # type: ignore[union-attr]

    for n, (out, _) in enumerate(outputs):
        acked = [line.split() for line in out.decode().splitlines()]
        expected = [f"w{n}/{i}" for i in range(STEPS)]
        assert [p for kind, p in acked if kind == "own"] == expected
        assert [p for kind, p in acked if kind == "shared"] == expected
        assert begun_paths(f"own-{n}") == expected == ended_paths(f"own-{n}")
    everyone = sorted(f"w{n}/{i}" for n in range(WRITERS) for i in range(STEPS))
    assert sorted(begun_paths("shared")) == everyone  # each exactly once: no loss, no duplicate
    assert sorted(ended_paths("shared")) == everyone
    assert [r[5] for r in runs["shared"]].count("run-started") == 1

"""Processes the projection-check tests run beside a check, or kill (run by path, not imported).

``python _worker.py writer DB``: append steps to its own runs without pause, starting a new
run every 50 steps; print ``writing`` once the first step committed.

``python _worker.py killed-check DB``: start ``store.check_projections()``; print ``checking``
once the scratch copy is made, mid-way, and wait to be killed.
"""

from __future__ import annotations

import os
import sys
import time

import forkline_es as fe
from forkline_es.projections import runner


def writer(db: str) -> None:
    with fe.Store.open(db) as store:
        n = 0
        while True:
            run = store.start_run("busy", inputs={"pid": os.getpid(), "n": n})
            for i in range(50):
                run.begin_step(f"s{i}", arguments={"i": i, "text": "x" * 200})
                run.end_step(f"s{i}", "succeeded", result=i)
                if n == 0 and i == 0:
                    print("writing", flush=True)
            run.conclude("succeeded")
            n += 1


def killed_check(db: str) -> None:
    def stop(projections: object, progress: object = None) -> int:
        print("checking", flush=True)
        time.sleep(600)
        return 0

    runner.Projections.rebuild = stop  # type: ignore[assignment,method-assign]
    with fe.Store.open(db) as store:
        store.check_projections()
    sys.exit("not killed")


if __name__ == "__main__":
    command, db = sys.argv[1:3]
    if command == "writer":
        writer(db)
    else:
        killed_check(db)

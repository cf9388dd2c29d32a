"""Recording executors run as separate processes by the crash and concurrency tests.

``python _worker.py crash DB RUN [DURABILITY]``: resume (or start) RUN, recover by superseding the
entries of every unfinished step, then record steps forever, printing ``kind entry``
for each acknowledged call (flushed) so the parent knows what returned before a kill.

``python _worker.py recover DB RUN [START_AT]``: resume RUN, wait until the epoch time
START_AT, recover with nothing superseded; print the generation resumed and the new one.

``python _worker.py writer DB N STEPS``: record STEPS steps in its own run ``own-N``
and STEPS steps in the shared run ``shared``, retrying a conflict with a fresh handle;
print ``own|shared path`` per ended step.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from helpers import ARTIFACT, unfinished_entries  # this script's folder is on sys.path

import forkline_es as fe
from forkline_es.recording import checkpoint


def ack(*parts: object) -> None:
    print(*parts, flush=True)


def crash(db: str, run_id: str, durability: str = "normal") -> None:
    checkpoint.EVERY = 16  # run checkpoints often, so that kills land while one is written
    store = fe.Store.open(db, durability=durability)  # type: ignore[arg-type]
    try:
        run = store.resume_run(run_id)
        gen = run.recover(unfinished_entries(store, run_id))
        ack("recover", gen)
    except fe.RunNotFound:
        run = store.start_run(workflow="crash", inputs={"n": 1}, run_id=run_id)
        ack("start", 1)
    i = 0
    while True:
        path = f"g{run.generation}/{i}"
        ack("begin", run.begin_step(path, arguments={"i": i, "text": "x" * (i % 50)}))
        ack("invoke", run.invoke(path, 1, "op", ARTIFACT, "not-dispatched", arguments=[i, i + 0.5]))
        ack("result", run.result(path, 1, "succeeded", result={"ok": True, "i": i}))
        ack("end", run.end_step(path, "succeeded", binding={"i": i}))
        i += 1


def recover(db: str, run_id: str, start_at: float) -> None:
    with fe.Store.open(db) as store:
        run = store.resume_run(run_id)
        ack("resumed", run.generation)
        time.sleep(max(0.0, start_at - time.time()))  # every process resumed before any recovers
        ack("recovered", run.recover([]))


CONFLICTS = [0]


def _with_retry(store: fe.Store, run_id: str, handle: list[fe.Run], call: Any) -> int:
    """Call on the handle; on conflict take a fresh handle and call again (idempotent)."""
    while True:
        try:
            return int(call(handle[0]))
        except fe.Conflict:
            CONFLICTS[0] += 1
            handle[0] = store.resume_run(run_id)


def writer(db: str, n: int, steps: int) -> None:
    with fe.Store.open(db) as store:
        own = store.start_run(workflow="own", run_id=f"own-{n}")
        try:
            shared = [store.start_run(workflow="shared", run_id="shared")]
        except fe.Conflict:  # another writer's start won; ours is the same call, so a repeat
            shared = [store.resume_run("shared")]
        for i in range(steps):
            path = f"w{n}/{i}"
            own.begin_step(path, arguments=i)
            own.end_step(path, "succeeded")
            ack("own", path)
            _with_retry(store, "shared", shared, lambda r, p=path, i=i: r.begin_step(p, arguments=i))
            _with_retry(store, "shared", shared, lambda r, p=path: r.end_step(p, "succeeded"))
            ack("shared", path)
    print("conflicts", CONFLICTS[0], file=sys.stderr)


if __name__ == "__main__":
    command, db, arg = sys.argv[1:4]
    if command == "crash":
        crash(db, arg, sys.argv[4] if len(sys.argv) > 4 else "normal")
    elif command == "recover":
        recover(db, arg, float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    else:
        writer(db, int(arg), int(sys.argv[4]))

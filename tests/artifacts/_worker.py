"""Processes the artifact tests race and kill (run by path, not imported by the tests).

``python _worker.py manifest DB RUN N START_AT``: resume RUN, wait until the epoch time
START_AT (every racer holds its handle by then), record a manifest with ``seed=N``; print
``recorded SEQ`` or ``conflict``.

``python _worker.py artifact DB RUN N START_AT``: the same with ``add_artifact`` of the bytes
``content N`` under the one name ``shared``.

``python _worker.py killed-placing DB RUN artifact|manifest``: record one artifact (or the
manifest) and SIGKILL this process between the event's commit and the file's placement.

``python _worker.py killed-staging DB RUN``: start an ``add_artifact`` whose source is read
in chunks; print ``staging`` after the first chunk reached ``tmp/`` and wait to be killed.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator

import forkline_es as fe
from forkline_es.artifacts import store as artifact_store

COMMIT = "0" * 40


def race(db: str, run_id: str, n: int, start_at: float, what: str) -> None:
    with fe.Store.open(db) as store:
        run = store.resume_run(run_id)
        time.sleep(max(0.0, start_at - time.time()))
        try:
            if what == "manifest":
                seq = run.record_manifest(git_commit=COMMIT, seed=n).seq
            else:
                seq = run.add_artifact(f"content {n}".encode(), "trace", name="shared")
        except fe.Conflict:
            print("conflict", flush=True)
            return
        print("recorded", seq, flush=True)


def killed_placing(db: str, run_id: str, what: str) -> None:
    def die(self: object, staged: object) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    artifact_store.ArtifactFiles.place = die  # type: ignore[method-assign]
    with fe.Store.open(db) as store:
        run = store.resume_run(run_id)
        if what == "manifest":
            run.record_manifest(git_commit=COMMIT, seed=1)
        else:
            run.add_artifact(b"placed after the commit", "trace", name="a")
    sys.exit("not killed")


def killed_staging(db: str, run_id: str) -> None:
    real = artifact_store._chunks

    def slow(source: object) -> Iterator[bytes]:
        for i, chunk in enumerate(real(source)):  # type: ignore[arg-type]
            yield chunk
            if i == 0:
                yield b""  # the first chunk is written before we say so
                print("staging", flush=True)
                time.sleep(600)

    artifact_store._chunks = slow  # type: ignore[assignment]
    with fe.Store.open(db) as store:
        store.resume_run(run_id).add_artifact(b"x" * (3 << 20), "trace", name="big")
    sys.exit("not killed")


if __name__ == "__main__":
    command, db, run = sys.argv[1:4]
    if command in ("manifest", "artifact"):
        race(db, run, int(sys.argv[4]), float(sys.argv[5]), command)
    elif command == "killed-placing":
        killed_placing(db, run, sys.argv[4])
    else:
        killed_staging(db, run)

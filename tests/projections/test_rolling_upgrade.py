"""A rolling upgrade never folds with two projector versions at once, across real processes.

Each process bumps the core projector version by its ``bump`` before it opens the store
(a newer forkline_es). On SQLite the newer one refolds at once and an older one still open
is refused at its next fold, with nothing written; on PostgreSQL the newer one is refused
while an older one holds the store, and refolds once it has gone. An older process that
opens after the upgrade is refused on both.
"""

from __future__ import annotations

import subprocess
import sys
from types import TracebackType
from typing import Final

import pytest

from forkline_es.testing.backends import FreshStores

_PROCESS: Final = """
import sys
import forkline_es as fe
from forkline_es.projections import runner
runner.CORE_VERSION += int(sys.argv[2])
try:
    store = fe.Store.open(sys.argv[1])
except fe.StoreError as e:
    print("refused", " ".join(str(e).split()), flush=True)
    sys.exit(0)
print("open", flush=True)
runs = {}
for line in sys.stdin:
    cmd, *args = line.split()
    try:
        if cmd == "start":
            runs[args[0]] = store.start_run(workflow="upgrade", run_id=args[0])
            print("ok", flush=True)
        elif cmd == "step":
            if args[0] not in runs:
                runs[args[0]] = store.resume_run(args[0])
            runs[args[0]].begin_step(args[1], arguments={"x": 1})
            print("ok", flush=True)
        elif cmd == "events":
            print(len(list(store.log.read_run(args[0]))), flush=True)
        elif cmd == "status":
            print(store.list_runs()[0]["status"] if store.list_runs() else "none", flush=True)
    except fe.StoreError as e:
        print("refused", " ".join(str(e).split()), flush=True)
store.close()
"""


class Version:
    """``with Version(location, bump) as p:`` a process of projector version CORE + ``bump``
    with the store open (``p.opened``), or refused at open (``p.first`` says why)."""

    def __init__(self, location: str, bump: int) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _PROCESS, location, str(bump)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        self.first = self._proc.stdout.readline().strip()
        self.opened = self.first == "open"

    def ask(self, line: str) -> str:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None and self.opened
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        return proc.stdout.readline().strip()

    def __enter__(self) -> Version:
        return self

    def quit(self) -> None:
        try:
            self._proc.communicate("", timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        assert self._proc.returncode == 0

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc.poll() is None:
            self.quit()


@pytest.fixture
def location(fresh_stores: FreshStores) -> str:
    return fresh_stores.location(memory=False)


def test_an_older_process_never_folds_beside_a_newer_one(fresh_stores: FreshStores, location: str) -> None:
    shared_host = fresh_stores.kind == "sqlite"
    old = Version(location, 0)
    assert old.opened, old.first
    assert old.ask("start r1") == "ok"
    new = Version(location, 1)
    if shared_host:
        assert new.opened, new.first  # refolded at once
        answer = old.ask("step r1 s1")  # the old code's next fold
        assert answer.startswith("refused") and "restart it on the same version" in answer
        assert new.ask("events r1") == "1"  # nothing of the refused step was written
    else:
        assert not new.opened and "stop the processes of the old version" in new.first
        assert old.ask("step r1 s1") == "ok"  # nobody refolded under it
    old.quit()
    with Version(location, 1) if not shared_host else new as newer:
        assert newer.opened, newer.first
        assert newer.ask("events r1") == ("1" if shared_host else "2")
        assert newer.ask("status") == "active"  # the refold folded the old version's events
        assert newer.ask("step r1 s2") == "ok"
        with Version(location, 0) as late:  # an old process opening after the upgrade
            assert not late.opened and "newer forkline_es" in late.first
        assert newer.ask("step r1 s3") == "ok"


def test_processes_of_one_version_share_a_store_as_before(location: str) -> None:
    with Version(location, 1) as a, Version(location, 1) as b, Version(location, 0) as older:
        assert a.opened and b.opened, (a.first, b.first)
        assert not older.opened and "newer forkline_es" in older.first
        assert a.ask("start a") == "ok" and b.ask("start b") == "ok"
        for i in range(5):
            assert a.ask(f"step a s{i}") == "ok" and b.ask(f"step b s{i}") == "ok"
        assert a.ask("events b") == b.ask("events a") == "6"

"""`retention apply`, `evict`: what the text says, --force, the tombstone and --json members.

Each case is one a mutation pass over forkline_es/cli/retention.py found unguarded.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

import forkline_es as fe
from forkline_es.cli import main

from .test_cli import seeded


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_dry_run_text_says_would_and_lists_the_runs_kept(db_path: Path) -> None:
    """A dry run must not read as done; the runs a consumer protects are listed with why."""
    ids = seeded(db_path)
    with fe.Store.open(db_path) as store:
        store.register_consumer("audit")
        store.acknowledge("audit", store.completions("audit")[0].position)  # only ids[0] seen
    args = ["retention", "apply", "--db", str(db_path), "--keep-last", "1", "--drop-payloads-after", "0s"]
    result = invoke(*args, "--dry-run")
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert rows[0] == ["run", "workflow", "action", "why"]
    actions = {(run, action) for run, _, action, _ in rows[1:]}
    assert (ids[0], "would evict") in actions and (ids[2], "would reduce") in actions
    assert (ids[1], "kept") in actions  # not yet acknowledged
    assert not {a for _, a in actions} & {"evicted", "reduced"}
    assert result.stderr == "would evict 1 runs, would reduce 2, kept 1 selected runs\n"
    done = invoke(*args)
    assert done.exit_code == 0 and done.stderr.startswith("evicted 1 runs, reduced ")
    assert (ids[0], "evicted") in {(r.split("\t")[0], r.split("\t")[2]) for r in done.stdout.splitlines()}


def test_evict_refuses_an_unacknowledged_run_unless_forced(db_path: Path) -> None:
    ids = seeded(db_path)
    with fe.Store.open(db_path) as store:
        store.register_consumer("audit")
    refused = invoke("evict", "--db", str(db_path), ids[0], "--reason", "by hand")
    assert refused.exit_code == 2 and "conflict" in refused.stderr and "--force" in refused.stderr
    with fe.Store.open(db_path) as store:
        assert store.evictions() == []
    forced = invoke("evict", "--db", str(db_path), ids[0], "--reason", "by hand", "--force")
    assert forced.exit_code == 0, forced.output
    assert forced.stdout.startswith(f"evicted {ids[0]} (") and forced.stdout.endswith("): by hand\n")


def test_evict_records_a_manual_tombstone_and_reports_it_as_json(db_path: Path) -> None:
    ids = seeded(db_path)
    with fe.Store.open(db_path) as store:
        events = len(store.conn.execute("SELECT 1 FROM log WHERE run_id = ?", (ids[0],)).fetchall())
    result = invoke("evict", "--db", str(db_path), ids[0], "--reason", "by hand", "--json")
    assert result.exit_code == 0, result.output
    reported = json.loads(result.stdout)
    assert set(reported) == {"run_id", "workflow", "reason", "events", "payloads"}
    assert (reported["run_id"], reported["workflow"], reported["reason"]) == (ids[0], "wf", "by hand")
    assert reported["events"] == events == 4 and reported["payloads"] == 3  # inputs, arguments, result
    with fe.Store.open(db_path) as store:
        (tombstone,) = store.evictions()
    assert (tombstone["run_id"], tombstone["reason"], tombstone["policy"]) == (ids[0], "by hand", "manual")

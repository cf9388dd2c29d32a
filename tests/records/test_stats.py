"""``store.stats()`` and ``forkline-es stats`` on every backend: the figures agree with
what was recorded, and what retention would free is what it then frees."""

from __future__ import annotations

import json

from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main
from forkline_es.values import canonical_json, encode_value


def _record(store: fe.Store) -> dict[str, int]:
    """Three finished runs of one workflow, one held of another; the payload bytes by class."""
    expected: dict[str, int] = {}

    def count(cls: str, value: object) -> None:
        expected[cls] = expected.get(cls, 0) + len(canonical_json(encode_value(value)))

    for i in range(3):
        inputs = {"n": i, "text": "é" * (10 * i)}  # multi-byte text: bytes, not characters
        run = store.start_run("wf/a", inputs=inputs)
        count("inputs", inputs)
        run.begin_step("s", arguments={"i": i})
        count("arguments", {"i": i})
        run.end_step("s", "succeeded", result=["r"] * (i + 1))
        count("results", ["r"] * (i + 1))
        run.conclude("succeeded")
    store.start_run("wf/b").hold(reason="approval-required")
    count("inputs", {})  # a run started without inputs records an empty map
    return expected


def test_stats_counts_runs_events_and_payload_bytes(store: fe.Store) -> None:
    expected = _record(store)
    figures = store.stats()
    assert figures["runs"]["by_status"] == {"succeeded": 3, "held": 1}
    assert [(w["workflow"], w["runs"]) for w in figures["runs"]["by_workflow"]] == [("wf/a", 3), ("wf/b", 1)]
    assert figures["events"]["by_kind"]["run-started"] == 4 and figures["events"]["by_kind"]["run-held"] == 1
    assert figures["events"]["total"] == sum(figures["events"]["by_kind"].values()) == 4 * 3 + 2
    assert {c: p["bytes"] for c, p in figures["payloads"].items()} == expected
    assert figures["payloads"]["inputs"]["values"] == 4
    tables = {t["table"]: t["bytes"] for t in figures["tables"]}
    assert {"log", "payload", "run_summary", "entry"} <= tables.keys() and tables["log"] > 0
    assert figures["database_bytes"] >= sum(tables.values()) - tables.get("sqlite_schema", 0) > 0


def test_what_retention_would_free_is_what_it_frees(store: fe.Store) -> None:
    _record(store)
    policy = fe.RetentionPolicy(keep_last=1)
    before = store.stats(policy)
    freed = before["retention"]
    assert (freed["runs_evicted"], freed["events"]) == (2, 8)
    assert freed["payload_values"] == 6
    store.apply_retention(policy)
    after = store.stats()
    assert after["events"]["total"] == before["events"]["total"] - freed["events"]
    bytes_before = sum(p["bytes"] for p in before["payloads"].values())
    bytes_after = sum(p["bytes"] for p in after["payloads"].values())
    assert bytes_before - bytes_after == freed["payload_bytes"] > 0
    assert after["runs"]["evicted"] == 2


def test_the_command_prints_sections_and_json(store: fe.Store) -> None:
    _record(store)
    db = store.path
    runner = CliRunner()
    done = runner.invoke(main, ["stats", "--db", db, "--json", "--keep-last", "1"])
    assert done.exit_code == 0, done.output
    figures = json.loads(done.output)
    assert figures["runs"]["total"] == 4 and figures["retention"]["runs_evicted"] == 2
    text = runner.invoke(main, ["stats", "--db", db, "--max-age", "0s"]).output
    titles = [line for line in text.splitlines() if line.startswith("# ")]
    assert titles == [
        "# size",
        "# tables",
        "# runs by status",
        "# runs by workflow",
        "# events",
        "# payload values by class",
        "# retention max-age=0s would free",
    ]
    assert "wf/a\t3\tsucceeded 3" in text
    bad = runner.invoke(main, ["stats", "--db", db, "--max-age", "soon"])
    assert bad.exit_code == 2 and "invalid-request" in bad.output

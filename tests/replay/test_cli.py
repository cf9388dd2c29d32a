"""`forkline-es diff` and `export`: exit codes, --json shape, --all, --baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main

from .histories import ART


def _run(store: fe.Store, op: str = "op", status: str = "succeeded") -> str:
    run = store.start_run("wf")
    run.begin_step("a")
    run.invoke("a", 1, op, ART, "ambiguous")
    run.end_step("a", "succeeded")
    run.conclude(status)
    return run.id


def _runs(db: Path) -> tuple[str, str, str]:
    with fe.Store.open(db) as store:
        return _run(store), _run(store), _run(store, op="other", status="failed")


def test_diff_exit_codes_and_text(db_path: Path) -> None:
    a, b, c = _runs(db_path)
    runner = CliRunner()
    same = runner.invoke(main, ["diff", "--db", str(db_path), a, b])
    assert same.exit_code == 0 and "match" in same.output
    differ = runner.invoke(main, ["diff", "--db", str(db_path), a, c])
    assert differ.exit_code == 1
    first_line = differ.output.splitlines()[0]
    assert first_line.startswith("first divergence: behaviour: step 'a' called a different operation")
    assert '"op" -> "other"' in first_line and "--all" in differ.output
    refused = runner.invoke(main, ["diff", "--db", str(db_path), a, "nope"])
    assert refused.exit_code == 2 and "run-not-found" in refused.output
    usage = runner.invoke(main, ["diff", "--db", str(db_path), a])
    assert usage.exit_code == 2


def test_diff_json_shape_and_all(db_path: Path) -> None:
    a, _, c = _runs(db_path)
    runner = CliRunner()
    first = json.loads(runner.invoke(main, ["diff", "--db", str(db_path), "--json", a, c]).output)
    assert set(first) == {"match", "strict", "count", "counts", "first", "divergences"}
    assert first["counts"] == {"behaviour": 2, "metadata": 0, "infrastructure": 0}
    assert first["match"] is False and first["count"] == 2 and len(first["divergences"]) == 1
    assert first["first"] == {
        "kind": "operation",
        "class": "behaviour",
        "path": "a",
        "seq_a": 3,
        "seq_b": 3,
        "summary": 'behaviour: step \'a\' called a different operation: operation "op" -> "other" (entry 3)',
        "changes": [{"pointer": "/operation", "at": "/steps/a/operation", "old": "op", "new": "other"}],
        "places": [],
    }
    every = json.loads(runner.invoke(main, ["diff", "--db", str(db_path), "--json", "--all", a, c]).output)
    assert [d["kind"] for d in every["divergences"]] == ["operation", "conclusion"]


def test_export_and_diff_against_a_baseline(db_path: Path, tmp_path: Path) -> None:
    a, b, c = _runs(db_path)
    runner = CliRunner()
    full = runner.invoke(main, ["export", "--db", str(db_path), a])
    with fe.Store.open(db_path) as store:
        assert full.stdout_bytes == store.export_run_record(a)  # piped: the bytes exactly
    golden = tmp_path / "run.golden.json"
    exported = runner.invoke(main, ["export", "--db", str(db_path), "--baseline", a])
    assert exported.exit_code == 0 and a not in exported.output
    golden.write_text(exported.output)
    ok = runner.invoke(main, ["diff", "--db", str(db_path), "--baseline", str(golden), b])
    assert ok.exit_code == 0
    bad = runner.invoke(main, ["diff", "--db", str(db_path), "--baseline", str(golden), c])
    assert bad.exit_code == 1
    missing = runner.invoke(main, ["diff", "--db", str(db_path), "--baseline", str(tmp_path / "no.json"), b])
    assert missing.exit_code == 2 and "invalid-request" in missing.output


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_a_baseline_nested_too_deeply_is_a_refusal_not_a_crash(
    db_path: Path, tmp_path: Path, text: str
) -> None:
    a, _, _ = _runs(db_path)
    deep = tmp_path / "deep.json"
    deep.write_text(text)
    result = CliRunner().invoke(main, ["diff", "--db", str(db_path), "--baseline", str(deep), a])
    assert result.exit_code == 2, result.output  # was a RecursionError traceback
    assert "invalid-request" in result.output and "nested too deeply" in result.output


def test_diff_lines_name_the_data_not_its_encoding(tmp_path) -> None:
    """A changed model answer is at /steps/summarize/result/model, not inside the typed form."""
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        ids = []
        for model in ("m-1", "m-2"):
            run = store.start_run("wf", inputs={"topic": model})
            run.begin_step("summarize", arguments={"n": 1})
            run.end_step("summarize", "succeeded", result={"model": model, "text": "t"})
            run.conclude("succeeded")
            ids.append(run.id)
    done = CliRunner().invoke(main, ["diff", *ids, "--all", "--db", str(db)])
    assert done.exit_code == 1
    lines = done.output.splitlines()
    assert '  /steps/summarize/result/model: "m-1" -> "m-2"' in lines
    assert '  /run/inputs/topic: "m-1" -> "m-2"' in lines
    assert "/value/" not in done.output
    report = json.loads(CliRunner().invoke(main, ["diff", *ids, "--json", "--all", "--db", str(db)]).output)
    assert [c["at"] for d in report["divergences"] for c in d["changes"]] == [
        "/run/inputs/topic",
        "/steps/summarize/result/model",
    ]
    # --ignore takes the same data paths (`*` one segment), as well as the pointers
    for ignored in (
        ["/steps/*/result/model", "/run/inputs"],
        ["/payloads/*/value/value/model", "/run/inputs/topic"],
    ):
        quiet = CliRunner().invoke(main, ["diff", *ids, *[f"--ignore={i}" for i in ignored], "--db", str(db)])
        assert quiet.exit_code == 0 and quiet.output.startswith("match"), (ignored, quiet.output)
    partial = CliRunner().invoke(main, ["diff", *ids, "--ignore=/steps/other/result/model", "--db", str(db)])
    assert partial.exit_code == 1


def test_a_conclusion_is_named_as_the_run_s(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        ids = []
        for code in ("boom", "bang"):
            run = store.start_run("wf")
            run.begin_step("s")
            run.end_step("s", "failed", code=code)
            run.conclude("failed", path="s", code=code)
            ids.append(run.id)
    report = json.loads(CliRunner().invoke(main, ["diff", *ids, "--json", "--all", "--db", str(db)]).output)
    ats = {c["at"] for d in report["divergences"] for c in d["changes"]}
    assert ats == {"/steps/s/code", "/run/code"}, ats
    quiet = CliRunner().invoke(
        main, ["diff", *ids, "--ignore=/run/code", "--ignore=/steps/s/code", "--db", str(db)]
    )
    assert quiet.exit_code == 0, quiet.output

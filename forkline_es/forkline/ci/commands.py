"""Forkline's CI commands as functions that return its exit codes (``forkline-es forkline ci``).

Results go to stdout, diagnostics to stderr, in Forkline's words. A recording runs the
entrypoint in a child Python with ``FORKLINE_RUN_ID`` and ``FORKLINE_DB`` set, so the
script can log to the run being recorded; the artifact is that run, read back from the log.
Offline recording blocks the network in the child itself (Forkline blocked it only in the
recording process, where no script code runs): a script that reaches for the network ends
with ``EXIT_OFFLINE_VIOLATION``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Final

from forkline_es.forkline.artifact.schema import RunArtifact, SchemaVersionError
from forkline_es.forkline.ci.exitcodes import (
    EXIT_ARTIFACT_ERROR,
    EXIT_DIFF_DETECTED,
    EXIT_INTERNAL_ERROR,
    EXIT_OFFLINE_VIOLATION,
    EXIT_REPLAY_FAILED,
    EXIT_SUCCESS,
    EXIT_USAGE_ERROR,
)
from forkline_es.forkline.ci.normalize import normalize_artifact
from forkline_es.forkline.core.json_diff import json_diff
from forkline_es.forkline.storage.recorder import RunRecorder

__all__ = ["ci_check", "ci_diff", "ci_normalize", "ci_record", "ci_replay", "diff_event_lists"]

_SUGGESTION: Final = "Re-record baseline: forkline ci record --entrypoint <script> --out <path>"
#: The child's exit status when the script touched the network in offline mode.
_OFFLINE_EXIT: Final = 86
#: Runs the script as __main__ with the network blocked first.
_OFFLINE_BOOT: Final = f"""
import runpy, sys
from forkline_es.forkline.ci.offline import ForklineOfflineError, enable_offline_mode
enable_offline_mode()
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except ForklineOfflineError as error:
    print(f"Offline violation: {{error}}", file=sys.stderr)
    sys.exit({_OFFLINE_EXIT})
"""


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _dump(value: Any, path: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True, default=str)
        f.write("\n")


def run_script(
    recorder: RunRecorder,
    db_path: str,
    script: str,
    script_args: list[str],
    *,
    offline: bool,
    extra_env: dict[str, str],
) -> tuple[str, int]:
    """Start a run for ``script``, run it in a child Python that can log to it, end the run
    (``success``, or ``failure`` when the script failed); the run id and the exit status."""
    run_id = recorder.start_run(entrypoint=script)
    env = {
        **os.environ,
        "FORKLINE_TRACING": "1",
        "FORKLINE_RUN_ID": run_id,
        "FORKLINE_DB": db_path,
        **extra_env,
    }
    command = [sys.executable, script, *script_args]
    if offline:
        env["FORKLINE_OFFLINE"] = "1"
        command = [sys.executable, "-c", _OFFLINE_BOOT, script, *script_args]
    try:
        code = subprocess.run(command, env=env, check=False).returncode
    except OSError as error:
        _err(f"Error: failed to execute {script}: {error}")
        recorder.end_run(run_id, status="error")
        return run_id, -1
    recorder.end_run(run_id, status="success" if code == 0 else "failure")
    return run_id, code


def ci_record(
    entrypoint: str, out_path: str, *, offline: bool = False, script_args: list[str] | None = None
) -> int:
    """Run ``entrypoint`` and write its run as a normalized artifact JSON to ``out_path``."""
    if not os.path.isfile(entrypoint):
        _err(f"Error: entrypoint not found: {entrypoint}")
        return EXIT_USAGE_ERROR
    with tempfile.TemporaryDirectory() as folder:
        db_path = os.path.join(folder, "ci_record.db")
        with RunRecorder(db_path=db_path) as recorder:
            run_id, code = run_script(
                recorder, db_path, entrypoint, script_args or [], offline=offline, extra_env={}
            )
            if code == -1:
                return EXIT_REPLAY_FAILED
            if code == _OFFLINE_EXIT and offline:
                return EXIT_OFFLINE_VIOLATION
            if code != 0:
                _err(f"Error: script exited with code {code}")
                return EXIT_REPLAY_FAILED
            artifact = recorder.load_artifact(run_id)
        if artifact is None:
            _err("Error: failed to load recorded artifact")
            return EXIT_INTERNAL_ERROR
        _dump(normalize_artifact(artifact.to_dict()), out_path)
    _err(f"Recorded artifact: {out_path}")
    return EXIT_SUCCESS


def _load(path: str, label: str) -> tuple[Any, int]:
    if not os.path.isfile(path):
        _err(f"Error: {label} not found: {path}")
        return None, EXIT_USAGE_ERROR
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), EXIT_SUCCESS
    except (json.JSONDecodeError, OSError, UnicodeDecodeError) as error:
        _err(f"Error: cannot parse artifact: {error}")
        return None, EXIT_ARTIFACT_ERROR


def ci_replay(artifact_path: str, *, strict: bool = False) -> int:
    """Check an artifact file offline (schema, structure; with ``strict``, no empty
    ``tool_call``/``output`` payload) and print its summary as JSON."""
    data, code = _load(artifact_path, "artifact")
    if code != EXIT_SUCCESS:
        return code
    try:
        artifact = RunArtifact.from_dict(data)
    except SchemaVersionError as error:
        _err(f"Error: schema version error: {error}")
        return EXIT_ARTIFACT_ERROR
    except Exception as error:  # any malformed structure is an artifact error, as in Forkline
        _err(f"Error: invalid artifact structure: {error}")
        return EXIT_ARTIFACT_ERROR
    problems = artifact.validate()
    for problem in problems:
        _err(f"Validation error: {problem}")
    if problems:
        return EXIT_ARTIFACT_ERROR
    if strict:
        for i, event in enumerate(artifact.events):
            if not event.payload and event.type in ("tool_call", "output"):
                _err(f"Strict validation: event[{i}] ({event.type}) has empty payload")
                return EXIT_ARTIFACT_ERROR
    types: dict[str, int] = {}
    for event in artifact.events:
        types[event.type] = types.get(event.type, 0) + 1
    summary = {
        "status": "ok",
        "run_id": artifact.run_id,
        "entrypoint": artifact.entrypoint,
        "schema_version": artifact.schema_version,
        "event_count": len(artifact.events),
        "event_types": types,
    }
    print(json.dumps(summary, indent=2, sort_keys=True))
    return EXIT_SUCCESS


def diff_event_lists(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> dict[str, Any]:
    """The first event whose type or payload differs (with the payload's JSON diff), else a
    count mismatch, else identical: Forkline's CI diff document."""
    for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
        old = {"type": e.get("type"), "payload": e.get("payload", {})}
        new = {"type": a.get("type"), "payload": a.get("payload", {})}
        if old != new:
            return {
                "identical": False,
                "first_divergent_index": i,
                "event_type": e.get("type", "unknown"),
                "expected": old,
                "actual": new,
                "payload_diff": json_diff(old["payload"], new["payload"]),
                "total_expected": len(expected),
                "total_actual": len(actual),
                "suggestion": _SUGGESTION,
            }
    if len(expected) != len(actual):
        return {
            "identical": False,
            "first_divergent_index": min(len(expected), len(actual)),
            "reason": "event_count_mismatch",
            "total_expected": len(expected),
            "total_actual": len(actual),
            "suggestion": _SUGGESTION,
        }
    return {"identical": True, "total_expected": len(expected), "total_actual": len(actual)}


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def render_diff_text(diff: dict[str, Any]) -> str:
    """The CI diff document as Forkline's text report."""
    idx = diff.get("first_divergent_index", 0)
    if diff.get("reason") == "event_count_mismatch":
        lines = [
            f"DIFF: Event count mismatch at index {idx}",
            f"  expected: {diff['total_expected']} events",
            f"  actual:   {diff['total_actual']} events",
        ]
    else:
        lines = [f"DIFF: First divergence at event[{idx}] (type: {diff.get('event_type', 'unknown')})"]
        ops = diff.get("payload_diff", [])
        for op in ops[:5]:
            kind, path = op.get("op", "?"), op.get("path", "?")
            if kind == "replace":
                lines.append(f"  {path}: {_short(op.get('old'))} -> {_short(op.get('new'))}")
            elif kind == "add":
                lines.append(f"  {path}: <missing> -> {_short(op.get('value'))}")
            elif kind == "remove":
                lines.append(f"  {path}: {_short(op.get('old'))} -> <removed>")
        if len(ops) > 5:
            lines.append(f"  ... and {len(ops) - 5} more changes")
    if diff.get("suggestion"):
        lines.append(f"\nSuggested fix: {diff['suggestion']}")
    return "\n".join(lines)


def ci_diff(
    expected_path: str, actual_path: str, *, output_format: str = "text", fail_on: str = "any"
) -> int:
    """Diff two artifact files' normalized events: ``EXIT_DIFF_DETECTED`` on any difference.
    ``fail_on`` is accepted and, as in Forkline 0.5.0, every policy fails on any difference."""
    expected_raw, code = _load(expected_path, "expected artifact")
    if code != EXIT_SUCCESS:
        return code
    actual_raw, code = _load(actual_path, "actual artifact")
    if code != EXIT_SUCCESS:
        return code
    expected = normalize_artifact(expected_raw).get("events", [])
    actual = normalize_artifact(actual_raw).get("events", [])
    diff = diff_event_lists(expected, actual)
    if diff["identical"]:
        if output_format == "json":
            same = {"identical": True, "expected_events": len(expected), "actual_events": len(actual)}
            print(json.dumps(same, indent=2, sort_keys=True))
        else:
            print("No differences detected.")
        return EXIT_SUCCESS
    if output_format == "json":
        print(json.dumps(diff, indent=2, sort_keys=True, default=str))
    else:
        print(render_diff_text(diff))
    return EXIT_DIFF_DETECTED


def ci_check(
    entrypoint: str,
    expected_path: str,
    *,
    offline: bool = True,
    output_format: str = "text",
    fail_on: str = "any",
    script_args: list[str] | None = None,
) -> int:
    """Record ``entrypoint`` now and diff it against the baseline ``expected_path``."""
    if not os.path.isfile(entrypoint):
        _err(f"Error: entrypoint not found: {entrypoint}")
        return EXIT_USAGE_ERROR
    if not os.path.isfile(expected_path):
        _err(f"Error: expected artifact not found: {expected_path}")
        return EXIT_USAGE_ERROR
    with tempfile.TemporaryDirectory() as folder:
        actual_path = os.path.join(folder, "actual.run.json")
        code = ci_record(entrypoint, actual_path, offline=offline, script_args=script_args)
        if code != EXIT_SUCCESS:
            return code
        return ci_diff(expected_path, actual_path, output_format=output_format, fail_on=fail_on)


def ci_normalize(artifact_path: str, out_path: str | None = None) -> int:
    """Normalize an artifact file in place, or into ``out_path``."""
    data, code = _load(artifact_path, "artifact")
    if code != EXIT_SUCCESS:
        return code
    target = out_path or artifact_path
    _dump(normalize_artifact(data), target)
    _err(f"Normalized: {target}")
    return EXIT_SUCCESS

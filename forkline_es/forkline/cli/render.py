"""Forkline's command-line output, text and JSON, for ``forkline-es forkline``: the same
lines and keys as Forkline 0.5.0, so scripts that parse them keep working."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

__all__ = [
    "render_diff_json",
    "render_diff_pretty",
    "render_list_json",
    "render_list_table",
    "render_replay_json",
    "render_replay_summary",
    "render_run_result",
]


def _day_time(stamp: str | None) -> str:
    if not stamp:
        return ""
    try:
        return datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError):
        return str(stamp)


def _short(value: Any, width: int = 80) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def render_run_result(run_id: str) -> str:
    return f"run_id: {run_id}"


def render_list_table(runs: list[dict[str, Any]]) -> str:
    if not runs:
        return "No runs found."
    header = f"{'ID':<36}  {'Created':<20}  {'Script':<30}  {'Status':<10}"
    lines = [header, "-" * len(header)]
    for r in runs:
        run_id, started = r.get("run_id", "")[:36], _day_time(r.get("started_at"))
        script, status = (r.get("entrypoint") or "")[:30], (r.get("status") or "")[:10]
        lines.append(f"{run_id:<36}  {started:<20}  {script:<30}  {status:<10}")
    return "\n".join(lines)


def render_list_json(runs: list[dict[str, Any]]) -> str:
    return _dumps(
        [
            {
                "schema_version": r.get("schema_version", "1.0"),
                "run_id": r.get("run_id"),
                "created_at": r.get("started_at"),
                "entrypoint": r.get("entrypoint"),
                "status": r.get("status"),
                "ended_at": r.get("ended_at"),
            }
            for r in runs
        ]
    )


def render_replay_summary(run: dict[str, Any], events: list[dict[str, Any]]) -> str:
    lines = [
        f"Run: {run['run_id']}",
        f"Script: {run.get('entrypoint', 'unknown')}",
        f"Status: {run.get('status', 'unknown')}",
    ]
    started, ended = run.get("started_at"), run.get("ended_at")
    if started and ended:
        try:
            took = datetime.fromisoformat(ended) - datetime.fromisoformat(started)
            lines.append(f"Duration: {took.total_seconds():.2f}s")
        except (TypeError, ValueError):
            pass
    lines.append(f"Total events: {len(events)}")
    counts: dict[str, int] = {}
    for event in events:
        kind = event.get("type", "unknown")
        counts[kind] = counts.get(kind, 0) + 1
    if counts:
        lines.append("Events by type:")
        lines.extend(f"  {kind}: {counts[kind]}" for kind in sorted(counts))
    return "\n".join(lines)


def render_replay_json(run: dict[str, Any], events: list[dict[str, Any]]) -> str:
    return _dumps(
        {
            "schema_version": run.get("schema_version", "1.0"),
            "run_id": run["run_id"],
            "entrypoint": run.get("entrypoint"),
            "status": run.get("status"),
            "started_at": run.get("started_at"),
            "ended_at": run.get("ended_at"),
            "forkline_version": run.get("forkline_version"),
            "total_events": len(events),
            "events": events,
        }
    )


def render_diff_pretty(diff_result: dict[str, Any], run_a: str, run_b: str) -> str:
    """``diff_result`` is ``forkline-es forkline diff``'s: identical, or the first event that
    differs (``old``/``new``), or a different event count (``reason``)."""
    if diff_result["identical"]:
        return "No differences"
    idx = diff_result.get("divergence_index", 0)
    if diff_result.get("reason") == "different_event_count":
        return (
            f"Event count differs: {diff_result['total_events_a']} ({run_a}) vs "
            f"{diff_result['total_events_b']} ({run_b})\nFirst divergence at event index {idx}"
        )
    lines = [f"Step {idx} diverged:"]
    for side in ("old", "new"):
        event = diff_result.get(side) or {}
        if event:
            lines.append(f"  {side}.type: {event.get('type', '')}")
            lines.append(f"  {side}.payload: {_short(event.get('payload', {}))}")
    return "\n".join(lines)


def render_diff_json(diff_result: dict[str, Any], run_a: str, run_b: str) -> str:
    out: dict[str, Any] = {"run_a": run_a, "run_b": run_b, "identical": diff_result["identical"]}
    if not diff_result["identical"]:
        out["divergence_index"] = diff_result.get("divergence_index")
        for key in ("old", "new"):
            if diff_result.get(key) is not None:
                out[key] = diff_result[key]
        if diff_result.get("reason"):
            out["reason"] = diff_result["reason"]
        out["total_events_a"] = diff_result.get("total_events_a")
        out["total_events_b"] = diff_result.get("total_events_b")
    return _dumps(out)

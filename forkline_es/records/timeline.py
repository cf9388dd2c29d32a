"""A timeline of one run record: steps, attempts and generations, one line per entry.

Lines are indented by step depth, a recovery draws a rule where the generation changes,
and superseded entries say which recovery set them aside, so a crash and its recovery
can be seen at a glance. Pure: a run record document in, lines out.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from forkline_es.records import when

__all__ = ["TimelineLine", "timeline"]


class TimelineLine(NamedTuple):
    text: str
    superseded: bool = False
    rule: bool = False


def _depth(path: str | None) -> int:
    return path.count("/") if path else 0


def _label(entry: dict[str, Any]) -> tuple[str | None, str]:
    kind = entry["kind"]
    if kind == "start":
        return None, "● start"
    if kind == "step":
        step = entry["step"]
        if step["status"] == "ended":
            code = f" [{step['code']}]" if "code" in step else ""
            return step["path"], f"■ {step['path']} {step['outcome']}{code}"
        return step["path"], f"▶ {step['path']} began"
    if kind == "invoke":
        return entry["path"], f"  → #{entry['attempt']} {entry['operation']} ({entry['dispatch']})"
    if kind == "result":
        code = f" [{entry['code']}]" if "code" in entry else ""
        return entry["path"], f"  ← #{entry['attempt']} {entry['dispatch']}{code}"
    if kind == "child":
        return entry["path"], f"  ⑂ child run {entry['child']}"
    if kind == "conclude":
        reason = f": {entry['reason']}" if "reason" in entry else ""
        return None, f"◆ {entry['status']}{reason}"
    return None, kind


def _when(run: dict[str, Any], now: datetime | None) -> str:
    """How long the run took (or, with ``now``, has been running), and with ``now`` when it
    started and was last active."""
    started, ended = run.get("started_at"), run.get("x-ended-at")
    parts = [f"took {when.between(started, ended)}"] if ended else []
    if now is not None:
        parts.insert(0, f"started {when.ago(started, now)}")
        parts.append(f"last activity {when.ago(run.get('x-updated-at'), now)}")
        if not ended:
            parts.append(f"running for {when.elapsed(started, now)}")
    return ", ".join(parts)


def timeline(doc: dict[str, Any], now: datetime | None = None) -> list[TimelineLine]:
    """The lines of the timeline of ``doc`` (a run record document).

    Each entry's line begins with when it was recorded, relative to the run's start
    (``+1.2s``); ``now`` (the reader's clock, on a terminal) adds how long ago the run
    started and was last active.
    """
    entries = doc.get("entries", [])
    superseded_by = {n: e["seq"] for e in entries if e["kind"] == "recovery" for n in e["supersedes"]}
    run = doc["run"]
    origin = run.get("started_at")
    lines = [
        TimelineLine(
            f"run {run['id']} · {run['workflow']} · {run['status']} · generation {run['generation']}"
        ),
    ]
    if span := _when(run, now):
        lines.append(TimelineLine(span))
    lines.append(TimelineLine(f"{'at':>8} gen  seq"))
    for e in entries:
        if e["kind"] == "recovery":
            gone = ", ".join(str(n) for n in e["supersedes"]) or "nothing"
            rule = f"─── recovery (seq {e['seq']}): generation {e['generation']}, supersedes {gone} ───"
            at = when.offset(e.get("x-at"), origin)
            lines.append(TimelineLine(f"{at:>8} {e['generation']:>3} {e['seq']:>4}  {rule}", rule=True))
            continue
        path, label = _label(e)
        indent = "  " * _depth(path)
        at = when.offset(e.get("x-at"), origin)
        text = f"{at:>8} {e['generation']:>3} {e['seq']:>4}  {indent}{label}"
        by = superseded_by.get(e["seq"])
        if by is not None:
            text += f"   ✗ superseded by {by}"
        lines.append(TimelineLine(text, superseded=by is not None))
    return lines

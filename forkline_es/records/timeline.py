"""A timeline of one run record: steps, attempts and generations, one line per entry.

Lines are indented by step depth, a recovery draws a rule where the generation changes,
and superseded entries say which recovery set them aside, so a crash and its recovery
can be seen at a glance. Pure: a run record document in, lines out.
"""

from __future__ import annotations

from typing import Any, NamedTuple

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


def timeline(doc: dict[str, Any]) -> list[TimelineLine]:
    """The lines of the timeline of ``doc`` (a run record document)."""
    entries = doc.get("entries", [])
    superseded_by = {n: e["seq"] for e in entries if e["kind"] == "recovery" for n in e["supersedes"]}
    run = doc["run"]
    lines = [
        TimelineLine(
            f"run {run['id']} · {run['workflow']} · {run['status']} · generation {run['generation']}"
        ),
        TimelineLine("gen  seq"),
    ]
    for e in entries:
        if e["kind"] == "recovery":
            gone = ", ".join(str(n) for n in e["supersedes"]) or "nothing"
            rule = f"─── recovery (seq {e['seq']}): generation {e['generation']}, supersedes {gone} ───"
            lines.append(TimelineLine(f"{e['generation']:>3} {e['seq']:>4}  {rule}", rule=True))
            continue
        path, label = _label(e)
        indent = "  " * _depth(path)
        text = f"{e['generation']:>3} {e['seq']:>4}  {indent}{label}"
        by = superseded_by.get(e["seq"])
        if by is not None:
            text += f"   ✗ superseded by {by}"
        lines.append(TimelineLine(text, superseded=by is not None))
    return lines

"""What the pages show, computed from the documents: pure functions, no HTML and no store.

The templates only place what these functions return; every recorded string stays a string
here and is escaped by the templates' autoescaping, never marked safe. The timeline is
geometry (numbers and the recorded text of its labels), drawn as SVG by ``run.html``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final
from urllib.parse import quote, urlencode

import msgspec

from forkline_es.records.attempts import step_attempts, superseded_by
from forkline_es.records.plain import plain_value

__all__ = [
    "Attempt",
    "Bar",
    "Timeline",
    "attempts_of",
    "badge",
    "change_text",
    "diff_rows",
    "diff_url",
    "entry_rows",
    "payload_text",
    "run_url",
    "slot_view",
    "step_rows",
    "superseded_by",
    "timeline_of",
]

_pretty: Final = msgspec.json.Encoder(order="sorted")

#: The CSS class of each status, outcome and dispatch badge (anything else is neutral).
_BADGE: Final = {
    "succeeded": "ok",
    "failed": "bad",
    "cancelled": "off",
    "stopped": "off",
    "held": "warn",
    "suspended": "warn",
    "ambiguous": "warn",
    "active": "live",
    "pending": "live",
    "ended": "off",
    "not-dispatched": "off",
    "skipped": "off",
}


def badge(word: object) -> str:
    """The badge class for a status word (``ok``, ``bad``, ``warn``, ``live``, ``off``, ``plain``)."""
    return _BADGE.get(word, "plain") if isinstance(word, str) else "plain"


def _path_safe(run_id: str) -> bool:
    """A run id that can be one URL path segment: no ``/`` (servers decode ``%2F`` before
    routing) and not ``.`` or ``..`` (browsers resolve those away)."""
    return "/" not in run_id and run_id not in (".", "..")


def run_url(run_id: str, path: str | None = None, *, api: bool = False, verify: bool = False) -> str:
    """The page (or ``api`` document, or ``verify`` report) of a run, or of its step at ``path``.

    ``/runs/RUN[/steps/PATH]``; a run id that cannot be a path segment goes in the query
    string instead (``/run?id=RUN[&path=PATH]``), so that every run stays reachable.
    """
    base = "/api" if api else ""
    if _path_safe(run_id):
        url = f"{base}/runs/{quote(run_id, safe='')}"
        if path is not None:
            url += f"/steps/{quote(path, safe='/')}"
        return url + ("/verify" if verify else "")
    query = {"id": run_id} if path is None else {"id": run_id, "path": path}
    return f"{base}/run{'/steps' if path is not None else ''}{'/verify' if verify else ''}?{urlencode(query)}"


def diff_url(a: str, b: str, *, api: bool = False) -> str:
    """``/diff/A/B`` (``/diff?a=A&b=B`` when an id cannot be a path segment)."""
    base = "/api" if api else ""
    if _path_safe(a) and _path_safe(b):
        return f"{base}/diff/{quote(a, safe='')}/{quote(b, safe='')}"
    return f"{base}/diff?{urlencode({'a': a, 'b': b})}"


def payload_text(typed: Any) -> str:
    """A typed value as indented plain JSON (``fe.plain``'s data), for a ``<pre>``."""
    return msgspec.json.format(_pretty.encode(plain_value(typed)), indent=2).decode()


def slot_view(slot: dict[str, Any]) -> dict[str, Any]:
    """A payload slot for a template: its class, state and, when present, the JSON text."""
    view = {"class": slot.get("class"), "state": slot.get("state")}
    if slot.get("state") == "present" and "value" in slot:
        view["json"] = payload_text(slot["value"])
    if slot.get("suppressed"):
        view["suppressed"] = list(slot["suppressed"])
    return view


@dataclass
class Attempt:
    """One invoke of a step, with its result when it has one (the step page's rows)."""

    attempt: int
    generation: int
    operation: str
    dispatch: str
    code: str | None
    arguments: dict[str, Any] | None
    result: dict[str, Any] | None
    invoked_at: str | None
    answered_at: str | None
    superseded_by: int | None
    seq: int


def attempts_of(entries: list[dict[str, Any]], path: str) -> list[Attempt]:
    """Every attempt at ``path`` in seq order; a result pairs with its invoke by (attempt,
    generation), as the log records them."""
    rows = []
    for e, r, gone in step_attempts(entries, path):
        arguments = (e.get("payloads") or {}).get("arguments")
        result = (r.get("payloads") or {}).get("result")
        rows.append(
            Attempt(
                attempt=e["attempt"],
                generation=e["generation"],
                operation=e["operation"],
                dispatch=r.get("dispatch", e["dispatch"]),
                code=r.get("code"),
                arguments=None if arguments is None else slot_view(arguments),
                result=None if result is None else slot_view(result),
                invoked_at=e.get("x-at"),
                answered_at=r.get("x-at"),
                superseded_by=gone,
                seq=e["seq"],
            )
        )
    return rows


def _badges(*words: object) -> list[tuple[str, str]]:
    return [(w, badge(w)) for w in words if isinstance(w, str)]


def entry_rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each entry as the run page's row: its words (``text``, then ``badges``, then ``tail``),
    the child run it names, the recovery that superseded it. Computed here, once, so that the
    template of an 8,000-entry run only places strings."""
    gone = superseded_by(entries)
    rows = []
    for e in entries:
        kind = e["kind"]
        text, tail, badges, child = "", "", [], None
        code = f" [{e['code']}]" if e.get("code") else ""
        if kind == "step":
            step = e["step"]
            text, badges = step["path"], _badges(step["status"], step.get("outcome"))
            tail = f" [{step['code']}]" if step.get("code") else ""
        elif kind == "invoke":
            text, badges = f"{e['path']} #{e['attempt']} {e['operation']}", _badges(e["dispatch"])
        elif kind == "result":
            text, badges, tail = f"{e['path']} #{e['attempt']}", _badges(e["dispatch"]), code
        elif kind == "child":
            text, child = f"{e['path']} child", e["child"]
        elif kind == "recovery":
            gone_seqs = ", ".join(map(str, e["supersedes"])) or "nothing"
            text = f"generation {e['generation']}, supersedes {gone_seqs}"
        elif kind == "conclude":
            badges = _badges(e["status"])
            tail = code + (f" {e['reason']}" if e.get("reason") else "")
        else:
            text = " ".join(f"{k}={e[k]}" for k in ("code", "step", "reason") if e.get(k))
        by = gone.get(e["seq"])
        rows.append(
            {
                "seq": e["seq"],
                "generation": e["generation"],
                "kind": kind,
                "css": f"kind-{kind} superseded" if by else f"kind-{kind}",
                "text": text,
                "badges": badges,
                "tail": tail,
                "child": child,
                "by": by,
                "at": e.get("x-at", ""),
            }
        )
    return rows


def step_rows(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each step of the current view as the run page's row, its payloads as ``slot_view``s."""
    return [
        {
            "path": s["path"],
            "badges": _badges(s["status"], s.get("outcome")),
            "code": s.get("code") or "",
            "generation": s["generation"],
            "attempts": s.get("x-attempts", ""),
            "started": s.get("x-started-at", ""),
            "ended": s.get("x-ended-at", ""),
            "payloads": [(name, slot_view(slot)) for name, slot in s["payloads"].items()],
        }
        for s in steps
    ]


# -- the timeline -----------------------------------------------------------------------------

#: Geometry of the SVG, in its own units (the picture scales to the page's width).
WIDTH: Final = 1000
LABEL: Final = 180
ROW: Final = 18
TOP: Final = 24


@dataclass
class Mark:
    """An attempt inside a bar: where it starts and ends, and how it went."""

    x: float
    w: float
    attempt: int
    dispatch: str
    code: str | None
    superseded: bool


@dataclass
class Bar:
    """One step of one generation on its row: from its begin entry to its end (or the recovery
    that set it aside, or the run's last entry)."""

    path: str
    row: int
    x: float
    w: float
    generation: int
    outcome: str | None
    superseded: bool
    open: bool
    marks: list[Mark] = field(default_factory=list)
    begin_seq: int = 0


@dataclass
class Rule:
    """A recovery: a vertical rule at its time."""

    x: float
    seq: int
    generation: int
    supersedes: list[int]


@dataclass
class ChildMark:
    """A child run started by the step on ``row``: a link at its time."""

    x: float
    row: int
    child: str
    path: str


@dataclass
class Timeline:
    width: int
    height: int
    label: int
    row: int
    top: int
    paths: list[str]
    bars: list[Bar]
    rules: list[Rule]
    children: list[ChildMark]
    ticks: list[tuple[float, str]]
    span_ms: float
    lead_ms: float


def _micros(at: str | None) -> int | None:
    if at is None:
        return None
    stamp = datetime.fromisoformat(at)
    return int(stamp.timestamp()) * 1_000_000 + stamp.microsecond


def _ticks(span: int, scale: float) -> list[tuple[float, str]]:
    """About six round ticks over ``span`` microseconds, labelled in ms or s."""
    if span <= 0:
        return [(LABEL, "0")]
    raw = span / 6
    magnitude = 1
    while magnitude * 10 <= raw:
        magnitude *= 10
    step = next((m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw), 10 * magnitude)
    ticks = []
    t = 0
    while t <= span:
        text = f"{t / 1000:g} ms" if span < 2_000_000 else f"{t / 1_000_000:g} s"
        ticks.append((LABEL + t * scale, text))
        t += step
    return ticks


def timeline_of(doc: dict[str, Any]) -> Timeline:
    """The SVG geometry of a run record: a row per step path (in the order steps began), a
    bar per begin-to-end of each generation, attempts as marks inside, recoveries as rules."""
    entries = doc.get("entries") or []
    gone = superseded_by(entries)
    # The axis begins at the first entry after the start entry: time spent before the first
    # step (a queue, a manifest) would squeeze every bar to the right. ``lead_ms`` says it.
    times = [t for e in entries if e["kind"] != "start" and (t := _micros(e.get("x-at"))) is not None]
    started = _micros(doc["run"].get("started_at"))
    start = min(times) if times else (started or 0)
    end = max([start, *times])
    span = end - start
    scale = (WIDTH - LABEL - 10) / span if span > 0 else 0.0

    def x(at: str | None) -> float:
        t = _micros(at)
        return LABEL + ((t if t is not None else end) - start) * scale

    rows: dict[str, int] = {}
    bars: list[Bar] = []
    open_bars: dict[str, Bar] = {}
    invokes: dict[tuple[str, int, int], Mark] = {}
    rules: list[Rule] = []
    children: list[ChildMark] = []
    for e in entries:
        kind = e["kind"]
        if kind == "recovery":
            rules.append(Rule(x(e.get("x-at")), e["seq"], e["generation"], list(e["supersedes"])))
            for path, bar in list(open_bars.items()):
                if bar.superseded:  # set aside: it ends where the recovery begins
                    bar.w = max(x(e.get("x-at")) - bar.x, 1.0)
                    bar.open = False
                    del open_bars[path]
            continue
        if kind == "step":
            step = e["step"]
            path = step["path"]
            row = rows.setdefault(path, len(rows))
            if step["status"] == "ended" and path in open_bars:
                bar = open_bars.pop(path)
                bar.w = max(x(e.get("x-at")) - bar.x, 1.0)
                bar.outcome = step.get("outcome")
                bar.open = False
            elif step["status"] != "ended":
                bar = Bar(
                    path,
                    row,
                    x(e.get("x-at")),
                    1.0,
                    e["generation"],
                    None,
                    e["seq"] in gone,
                    True,
                    begin_seq=e["seq"],
                )
                bars.append(bar)
                open_bars[path] = bar
            else:  # ended without a begin entry of its own (a step recorded at its end)
                bars.append(
                    Bar(
                        path,
                        row,
                        x(e.get("x-at")),
                        1.0,
                        e["generation"],
                        step.get("outcome"),
                        e["seq"] in gone,
                        False,
                        begin_seq=e["seq"],
                    )
                )
            continue
        path = e.get("path")
        if path is None:
            continue
        row = rows.setdefault(path, len(rows))
        if kind == "invoke":
            mark = Mark(x(e.get("x-at")), 2.0, e["attempt"], e["dispatch"], None, e["seq"] in gone)
            invokes[(path, e["attempt"], e["generation"])] = mark
            if path in open_bars:
                open_bars[path].marks.append(mark)
            else:  # an invoke outside a begun step: a bar of its own
                bars.append(
                    Bar(
                        path,
                        row,
                        mark.x,
                        2.0,
                        e["generation"],
                        None,
                        mark.superseded,
                        False,
                        [mark],
                        e["seq"],
                    )
                )
        elif kind == "result":
            found = invokes.get((path, e["attempt"], e["generation"]))
            if found is not None:
                found.w = max(x(e.get("x-at")) - found.x, 2.0)
                found.dispatch = e["dispatch"]
                found.code = e.get("code")
        elif kind == "child":
            children.append(ChildMark(x(e.get("x-at")), row, e["child"], path))
    for bar in open_bars.values():  # still running (or held): up to the last entry
        bar.w = max(LABEL + span * scale - bar.x, 1.0)
    return Timeline(
        width=WIDTH,
        height=TOP + ROW * max(len(rows), 1) + 8,
        label=LABEL,
        row=ROW,
        top=TOP,
        paths=list(rows),
        bars=bars,
        rules=rules,
        children=children,
        ticks=_ticks(span, scale),
        span_ms=span / 1000,
        lead_ms=(start - started) / 1000 if started is not None else 0.0,
    )


# -- the diff ---------------------------------------------------------------------------------


def _short(value: Any) -> str:
    return _pretty.encode(value).decode() if value is not None else "—"


def diff_rows(
    doc_a: dict[str, Any], doc_b: dict[str, Any], first: dict[str, Any] | None, around: int = 4
) -> list[dict[str, Any]]:
    """The aligned entries around the first divergence, side by side: A's and B's entries from
    ``around`` before to ``around`` after the divergent ones (by seq on each side), the divergent
    pair marked. Without a divergence, the first entries of both."""
    ea, eb = doc_a.get("entries") or [], doc_b.get("entries") or []
    pos_a = {e["seq"]: i for i, e in enumerate(ea)}
    pos_b = {e["seq"]: i for i, e in enumerate(eb)}
    hit_a = pos_a.get(first.get("seq_a")) if first else None
    hit_b = pos_b.get(first.get("seq_b")) if first else None
    marked_a = {p["seq_a"] for p in (first or {}).get("places", []) if p.get("seq_a") is not None}
    marked_b = {p["seq_b"] for p in (first or {}).get("places", []) if p.get("seq_b") is not None}
    if first is not None:
        marked_a |= {first["seq_a"]} - {None}
        marked_b |= {first["seq_b"]} - {None}
    centre_a = hit_a if hit_a is not None else hit_b if hit_b is not None else 0
    centre_b = hit_b if hit_b is not None else centre_a
    rows = []
    for offset in range(-around, around + 1):
        ia, ib = centre_a + offset, centre_b + offset
        a = ea[ia] if 0 <= ia < len(ea) else None
        b = eb[ib] if 0 <= ib < len(eb) else None
        if a is None and b is None:
            continue
        rows.append(
            {
                "a": None if a is None else _entry_line(a),
                "b": None if b is None else _entry_line(b),
                "divergent": (a is not None and a["seq"] in marked_a)
                or (b is not None and b["seq"] in marked_b),
            }
        )
    return rows


def _entry_line(e: dict[str, Any]) -> dict[str, Any]:
    """An entry as one line of words: its seq, kind, path and the members that tell it apart."""
    kind = e["kind"]
    if kind == "step":
        step = e["step"]
        words = f"{step['path']} {step['status']} {step.get('outcome', '')}".strip()
    elif kind in ("invoke", "result"):
        code = f" [{e['code']}]" if "code" in e else ""
        words = f"{e['path']} #{e['attempt']} {e.get('operation', '')} {e['dispatch']}{code}".replace(
            "  ", " "
        )
    elif kind == "child":
        words = f"{e['path']} child {e['child']}"
    elif kind == "recovery":
        words = f"supersedes {', '.join(map(str, e['supersedes'])) or 'nothing'}"
    elif kind == "conclude":
        words = e["status"] + (f": {e['reason']}" if "reason" in e else "")
    else:
        words = ""
    return {"seq": e["seq"], "kind": kind, "generation": e["generation"], "words": words}


def change_text(value: Any) -> str:
    """A changed value of the diff, as compact JSON (``—`` when a side has none)."""
    return _short(value)

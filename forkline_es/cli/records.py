"""`forkline-es runs | show | step | log | rebuild`: read the run records, refold the projections.

Each command opens the store, calls one library operation and renders it: rich tables on a
terminal, tab-separated text when piped, ``--json`` for machines. Exit status as docs/cli.md says.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import click
import msgspec

from forkline_es.cli._common import (
    EXIT_DIFFERENCE,
    Lines,
    db_option,
    echo_json,
    json_option,
    json_text,
    one_line,
    open_for_read,
    open_read_only,
    paged,
    print_table,
    refusals,
    say,
    visible,
)
from forkline_es.compat.views import run_events
from forkline_es.records import when
from forkline_es.records.attempts import step_attempts
from forkline_es.records.operations import log_events
from forkline_es.records.plain import plain_value
from forkline_es.records.timeline import timeline
from forkline_es.store import Store

__all__ = ["COMMANDS"]

Progress = Callable[[int, int], None]

_line = msgspec.json.Encoder(order="sorted")

_ENTRY_DETAIL = (
    "path",
    "attempt",
    "operation",
    "dispatch",
    "code",
    "child",
    "supersedes",
    "status",
    "reason",
)


def _slots(payloads: dict[str, Any], short: bool = False) -> str:
    """A step's payload inventory: ``arguments=present, ...``; ``short`` (a terminal) names
    a present slot alone and another by its state (``arguments:withheld``)."""
    if short:
        return ", ".join(n if v["state"] == "present" else f"{n}:{v['state']}" for n, v in payloads.items())
    return ", ".join(f"{name}={slot['state']}" for name, slot in payloads.items())


def _detail(entry: dict[str, Any]) -> str:
    if entry["kind"] == "step":
        step = entry["step"]
        return f"{step['path']} {step['status']} {step.get('outcome', '')}".rstrip()
    return " ".join(f"{k}={entry[k]}" for k in _ENTRY_DETAIL if k in entry)


@contextmanager
def _progress_bar() -> Iterator[Progress | None]:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    columns = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress("folding", *columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("events", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


#: Runs a table shows on a terminal when --limit is not given.
DEFAULT_TERMINAL_LIMIT = 50
#: The characters of a run id a terminal table shows.
SHORT_ID = 12
#: Runs ``--ndjson`` reads per snapshot while it streams.
_NDJSON_PAGE = 500


def _label(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise click.BadParameter(f"{text!r} is not NAME=VALUE (e.g. --label customer=c-42)")
    return name, value


def _labels_text(labels: dict[str, str] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in (labels or {}).items())


@click.command()
@click.option("--workflow", default=None, help="Only runs of this workflow identity (children included).")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS",
    help="Only runs in this status (repeatable: any of them), e.g. held, failed, active.",
)
@click.option("--since", default=None, help="Only runs started at or after this time or age (2h, 30m, 7d).")
@click.option("--until", default=None, help="Only runs started before this time or age.")
@click.option("--parent", default=None, metavar="RUN", help="Only the child runs of RUN.")
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="NAME=VALUE",
    help="Only runs with this label (repeatable: all).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=2**63 - 1),
    default=None,
    help=f"Show at most this many runs (on a terminal {DEFAULT_TERMINAL_LIMIT} unless given).",
)
@click.option("--before", default=None, metavar="RUN", help="Continue after RUN (the next page).")
@click.option(
    "--ndjson", is_flag=True, help="Print one JSON object a line, streamed, every run unless --limit."
)
@db_option
@json_option
@paged
def runs(
    workflow: str | None,
    statuses: tuple[str, ...],
    since: str | None,
    until: str | None,
    parent: str | None,
    labels: tuple[str, ...],
    limit: int | None,
    before: str | None,
    ndjson: bool,
    db: str,
    as_json: bool,
) -> None:
    """List retained runs, newest first, with filters; pages continue with --before.

    On a terminal at most 50 runs are shown unless --limit says otherwise, and the command
    prints the one to run for the next page; piped output lists every run.
    """
    wanted = dict(_label(t) for t in labels)
    terminal = sys.stdout.isatty()
    if limit is None and terminal and not ndjson:
        limit = DEFAULT_TERMINAL_LIMIT
    with open_read_only(db) as store, refusals():
        filters: dict[str, Any] = {
            "status": statuses or None,
            "since": since,
            "until": until,
            "parent": None if parent is None else store.resolve_run_id(parent),
            "labels": wanted,
        }
        after = None if before is None else store.resolve_run_id(before)
        if ndjson:
            return _stream(store, workflow, filters, limit, after)
        listed = store.list_runs(
            workflow, **filters, limit=None if limit is None else min(limit + 1, 2**63 - 1), before=after
        )
    more = limit is not None and len(listed) > limit
    listed = listed[:limit]
    if as_json:
        echo_json(listed)
    elif terminal:
        _print_runs_for_a_person(listed)
    else:
        columns = (
            "id",
            "workflow",
            "status",
            "started_at",
            "updated_at",
            "ended_at",
            "parent",
            "labels",
            "name",
        )
        print_table("runs", columns, [_row(s) for s in listed])
    if more:
        say(f"more runs: add --before {listed[-1]['id']} for the next page", err=True)


def _row(summary: dict[str, Any]) -> list[Any]:
    """A run's row of the piped table: full timestamps and ids."""
    return [
        summary["id"],
        summary["workflow"],
        summary["status"],
        summary["started_at"],
        summary.get("x-updated-at"),
        summary.get("x-ended-at"),
        summary["parent"],
        _labels_text(summary.get("x-labels")),
        summary.get("name"),
    ]


def _print_runs_for_a_person(listed: list[dict[str, Any]]) -> None:
    """The terminal table, fitted to 80 columns: ids cut to ``SHORT_ID`` characters or as
    many more as tell the listed runs apart (every command still takes them: a unique
    prefix names its run), when it started relative to
    now, how long it took (or, still going, how long ago it was last active), and a child
    run's parent beside its name (``↳ parent``); labels only when some run has them."""
    now = datetime.now(UTC)
    short = _short_ids([s["id"] for s in listed] + [s["parent"] for s in listed if s["parent"]])
    labelled = any(s.get("x-labels") for s in listed)
    columns = ["id", "workflow", "status", "started", "activity", *(["labels"] if labelled else []), "name"]
    rows = []
    for s in listed:
        ended = s.get("x-ended-at")
        if ended:
            activity = f"took {when.between(s['started_at'], ended)}"
        else:
            activity = f"last {when.ago(s.get('x-updated-at'), now)}"
        name = s.get("name") or ""
        if s["parent"]:
            name = f"{name} ↳ {short[s['parent']]}".strip()
        row = [short[s["id"]], s["workflow"], s["status"], when.ago(s["started_at"], now), activity]
        rows.append([*row, *([_labels_text(s.get("x-labels"))] if labelled else []), name])
    whole = ["id", "status", "started", "activity"]
    if max((len(s["workflow"]) for s in listed), default=0) <= _SHORT_WORKFLOW:
        whole.append("workflow")  # short names whole; long ones wrap rather than push past 80
    print_table("runs", columns, rows, whole=whole)


def _short_ids(ids: list[str]) -> dict[str, str]:
    """Each id cut to ``SHORT_ID`` characters, or to one more than it shares with any other
    of ``ids``: two listed runs never show the same prefix (which would name neither)."""
    ordered = sorted(set(ids))
    shared = dict.fromkeys(ordered, 0)
    for a, b in itertools.pairwise(ordered):  # the longest common prefix is with a neighbour
        n = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        shared[a], shared[b] = max(shared[a], n), max(shared[b], n)
    return {i: i[: max(SHORT_ID, shared[i] + 1)] for i in ordered}


#: The longest workflow identity a terminal listing keeps on one line.
_SHORT_WORKFLOW = 16


def _stream(
    store: Store, workflow: str | None, filters: dict[str, Any], limit: int | None, after: str | None
) -> None:
    """--ndjson: a line per run as each page of the listing is read (each page one snapshot)."""
    left = limit
    while left is None or left > 0:
        size = _NDJSON_PAGE if left is None else min(left, _NDJSON_PAGE)
        page = store.list_runs(workflow, **filters, limit=size, before=after)
        for summary in page:
            click.echo(json_text(_line.encode(summary)).decode())
        if len(page) < size:
            return
        after = page[-1]["id"]
        left = None if left is None else left - len(page)


@click.command()
@click.argument("run_id", metavar="RUN")
@click.option("--timeline", "as_timeline", is_flag=True, help="Draw entries by step, attempt and generation.")
@click.option(
    "--typed", is_flag=True, help="Show payload values in their typed wire form, not as plain JSON."
)
@db_option
@json_option
@paged
def show(run_id: str, as_timeline: bool, typed: bool, db: str, as_json: bool) -> None:
    """Show RUN's run record document, and as text its RunRecorder events.

    Text: summary, the run's payload values (plain JSON; --typed: the wire form), steps and
    entries, then the events a RunRecorder logged (they are not entries of the document).
    --json prints the document alone; `step RUN PATH` shows a step's values.
    """
    with open_read_only(db) as store, refusals(), store.log.snapshot():
        run_id = store.resolve_run_id(run_id)
        doc = store.get_run_record(run_id)
        # Forkline's inspect script shows a run "with events"; they are not entries of the
        # document, so the tables add them (from the same snapshot) and --json leaves them out.
        events = [] if as_json or as_timeline else run_events(store, run_id)
    if as_json:
        return echo_json(doc)
    if as_timeline:
        return _print_timeline(doc)
    terminal = sys.stdout.isatty()
    run = doc["run"]
    origin = run["started_at"]
    facts = _run_facts(run) if terminal else [(k, _member_text(k, v)) for k, v in sorted(run.items())]
    print_table(f"run {run_id}", ("member", "value"), facts, section=True)
    print_table(
        "run payloads",
        ("slot", "class", "state", "value"),
        [(k, v["class"], v["state"], _value_text(v, typed)) for k, v in doc["payloads"].items()],
        section=True,
    )
    began = _began(doc)
    ordered = sorted(doc["steps"].items(), key=lambda item: began.get(item[0], 0))
    if terminal:
        step_columns: tuple[str, ...] = (
            "path",
            "gen",
            "status",
            "outcome",
            "code",
            "began",
            "took",
            "payloads",
        )
        steps = [
            (
                p,
                s["generation"],
                s["status"],
                s.get("outcome"),
                s.get("code"),
                when.offset(s.get("x-started-at"), origin),
                when.between(s.get("x-started-at"), s.get("x-ended-at")),
                _slots(s["payloads"], short=True),
            )
            for p, s in ordered
        ]
    else:
        step_columns = (
            "path",
            "generation",
            "status",
            "outcome",
            "code",
            "started_at",
            "ended_at",
            "payloads",
        )
        steps = [
            (
                p,
                s["generation"],
                s["status"],
                s.get("outcome"),
                s.get("code"),
                s.get("x-started-at"),
                s.get("x-ended-at"),
                _slots(s["payloads"]),
            )
            for p, s in ordered
        ]
    whole = ("gen", "status", "outcome", "began", "took") if terminal else ()
    print_table("steps", step_columns, steps, section=True, whole=whole)
    at = (lambda e: when.offset(e.get("x-at"), origin)) if terminal else (lambda e: e.get("x-at"))
    entries = [(e["seq"], e["generation"], at(e), e["kind"], _detail(e)) for e in doc.get("entries", [])]
    print_table(
        "entries", ("seq", "gen" if terminal else "generation", "at", "kind", "detail"), entries, section=True
    )
    if events:  # payload: canonical JSON as stored, empty once retention removed it
        logged = [(event_id, ts, kind, payload) for event_id, _, ts, kind, payload in events]
        print_table("events", ("event_id", "ts", "type", "payload"), logged, section=True)
    if "x-artifacts" in doc:  # artifacts, manifest and metrics (docs/verify.md)
        columns = ("name", "kind", "size_bytes", "sha256", "content_type", "step", "path")
        rows = [[a.get(c) for c in columns] for a in doc["x-artifacts"]]
        print_table("artifacts", columns, rows, section=True)
    if "x-manifest" in doc:
        manifest = doc["x-manifest"]
        facts = [("digest", manifest["digest"]), ("complete", manifest["complete"])]
        facts.append(("unknown_fields", ", ".join(manifest["unknown_fields"]) or "-"))
        print_table("manifest", ("member", "value"), facts, section=True)
    if "x-observations" in doc:
        metrics = ("name", "value", "unit", "step")
        rows = [[o.get(c) for c in metrics] for o in doc["x-observations"]]
        print_table("observations", metrics, rows, section=True)


def _member_text(name: str, value: Any) -> Any:
    """A run member for a table: labels as ``name=value,...`` rather than a Python dict."""
    return _labels_text(value) if name == "x-labels" else value


#: The run summary's time members, which a terminal shows relative to now.
_RUN_TIMES = ("started_at", "x-updated-at", "x-ended-at")


def _run_facts(run: dict[str, Any]) -> list[tuple[str, Any]]:
    """The run summary for a person: when it started, was last active and ended, relative
    to now, and how long it took (or has been running)."""
    now = datetime.now(UTC)
    facts: list[tuple[str, Any]] = [
        (k.removeprefix("x-"), _labels_text(v) if k == "x-labels" else v)
        for k, v in sorted(run.items())
        if k not in _RUN_TIMES
    ]
    started, ended = run["started_at"], run.get("x-ended-at")
    facts.append(("started", f"{when.ago(started, now)} ({started})"))
    facts.append(("last activity", when.ago(run.get("x-updated-at"), now)))
    if ended:
        facts.append(("ended", when.ago(ended, now)))
        facts.append(("took", when.between(started, ended)))
    else:
        facts.append(("running for", when.elapsed(started, now)))
    return facts


def _began(doc: dict[str, Any]) -> dict[str, int]:
    """Each step path's first entry seq: ``show`` lists steps in the order they began."""
    first: dict[str, int] = {}
    for e in doc.get("entries", []):
        path = e.get("path") or (e.get("step") or {}).get("path")
        if path is not None and e["kind"] != "conclude":
            first.setdefault(path, e["seq"])
    return first


def _print_timeline(doc: dict[str, Any]) -> None:
    """Superseded entries dimmed and recoveries bold on a terminal; plain text when piped."""
    terminal = sys.stdout.isatty()
    lines = timeline(doc, datetime.now(UTC) if terminal else None)
    if not terminal:
        for line in lines:
            click.echo(one_line(line.text))  # a reason with a newline stays one line
        return
    from rich.console import Console
    from rich.text import Text

    console = Console()
    for line in lines:
        style = "bold yellow" if line.rule else "dim" if line.superseded else ""
        console.print(Text(visible(line.text), style=style))


@click.command()
@click.argument("run_id", metavar="RUN")
@click.argument("path", metavar="PATH")
@click.option(
    "--typed", is_flag=True, help="Show payload values in their typed wire form, not as plain JSON."
)
@db_option
@json_option
@paged
def step(run_id: str, path: str, typed: bool, db: str, as_json: bool) -> None:
    """Show the step record at PATH in RUN, its payloads and every attempt of the step in order.

    Superseded attempts (set aside by a recovery) are marked. --json prints the step record.
    """
    with open_read_only(db) as store, refusals(), store.log.snapshot():
        rid = store.resolve_run_id(run_id)
        record = store.get_step_record(rid, path)
        entries = [] if as_json else store.get_run_record(rid)["entries"]
    if as_json:
        return echo_json(record)
    terminal = sys.stdout.isatty()
    members = ("path", "generation", "status", "outcome", "code", "branch")
    facts = [(k, record[k]) for k in members if k in record]
    started, ended = record.get("x-started-at"), record.get("x-ended-at")
    if terminal:
        now = datetime.now(UTC)
        facts += [("started", f"{when.ago(started, now)} ({started})")] if started else []
        facts += [("ended", when.ago(ended, now)), ("took", when.between(started, ended))] if ended else []
    else:
        facts += [
            (k, record[x])
            for k, x in (("started_at", "x-started-at"), ("ended_at", "x-ended-at"))
            if x in record
        ]
    facts += [("attempts", record["x-attempts"])] if "x-attempts" in record else []
    print_table(f"step {path}", ("member", "value"), facts, section=True)
    slots = [(k, v["class"], v["state"], _value_text(v, typed)) for k, v in record["payloads"].items()]
    print_table("payloads", ("slot", "class", "state", "value"), slots, section=True)
    rows = _attempts(entries, path, typed, started if terminal else None)
    if not terminal:
        piped = ("attempt", "gen", "dispatch", "code", "arguments", "result", "invoked_at", "answered_at")
        print_table("attempts", (*piped, "superseded"), rows, section=True)
        return
    # a terminal: the attempts' facts in one table, their values (wide) in the next
    brief = [[*r[:4], *r[6:]] for r in rows]
    columns = ("attempt", "gen", "dispatch", "code", "invoked", "took", "superseded")
    print_table("attempts", columns, brief, whole=("attempt", "gen", "dispatch", "invoked", "took"))
    values = [(r[0], r[1], slot, v) for r in rows for slot, v in (("arguments", r[4]), ("result", r[5])) if v]
    print_table("attempt values", ("attempt", "gen", "slot", "value"), values)


def _value_text(slot: dict[str, Any], typed: bool) -> str:
    """A slot's value as JSON (indented on a terminal, one line when piped): plain data, or
    (``typed``) the typed wire form."""
    if "value" not in slot:
        return ""
    data = _line.encode(slot["value"] if typed else plain_value(slot["value"]))
    if sys.stdout.isatty():
        return Lines(msgspec.json.format(data, indent=2).decode())
    return data.decode()


def _attempts(entries: list[dict[str, Any]], path: str, typed: bool, origin: str | None) -> list[list[Any]]:
    """One row per invoke at ``path`` in seq order, with its result when there is one.

    With ``origin`` (the step's start, on a terminal) the times are when the attempt was
    invoked relative to it and how long it took to answer; else both full timestamps.
    """
    rows = []
    for e, r, gone in step_attempts(entries, path):
        invoked, answered = e.get("x-at"), r.get("x-at")
        if origin is not None:
            invoked, answered = when.offset(invoked, origin), when.between(invoked, answered)
        rows.append(
            [
                e["attempt"],
                e["generation"],
                r.get("dispatch", e["dispatch"]),
                r.get("code"),
                _value_text((e.get("payloads") or {}).get("arguments", {}), typed),
                _value_text((r.get("payloads") or {}).get("result", {}), typed),
                invoked,
                answered,
                "" if gone is None else f"by entry {gone}",
            ]
        )
    return rows


@click.command(name="log")
@click.argument("run_id", metavar="RUN")
@db_option
@json_option
@paged
def log_(run_id: str, db: str, as_json: bool) -> None:
    """Print RUN's raw log events in order (payload values stay in the payload table)."""
    with open_read_only(db) as store, refusals():
        run_id = store.resolve_run_id(run_id)
        events = log_events(store, run_id)
    if as_json:
        return echo_json(events)
    columns = ("seq", "entry", "generation", "kind", "at", "key")
    print_table(f"log of {run_id}", columns, [[e[c] for c in columns] for e in events])


@click.command()
@click.option("--check", is_flag=True, help="Rebuild into a scratch copy and report each difference.")
@db_option
@json_option
def rebuild(check: bool, db: str, as_json: bool) -> None:
    """Drop and refold every projection from the log (--check: compare only, exit 1 on a difference)."""
    # the summary is printed once the progress bar is gone, on a line of its own
    # --check only reads the database (its scratch copy is a file of its own): read-only
    opened = open_read_only(db) if check else open_for_read(db)
    with opened as store, refusals(), _progress_bar() as progress:
        if not check:
            folded = store.rebuild_projections(progress)
        else:
            differences = store.check_projections(progress)
    if not check:
        if as_json:
            return echo_json({"rebuilt": True, "events": folded})
        return click.echo(f"rebuilt every projection from {folded} events")
    if as_json:
        echo_json({"equal": not differences, "differences": differences})
    else:
        for line in differences:
            say(line)
        if not differences:
            click.echo("the projections equal a rebuild from the log")
    if differences:
        sys.exit(EXIT_DIFFERENCE)


COMMANDS: list[click.Command] = [runs, show, step, log_, rebuild]

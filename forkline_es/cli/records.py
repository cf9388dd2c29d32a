"""`forkline-es runs | show | step | log | rebuild`: read the run records, refold the projections.

Each command opens the store, calls one library operation and renders it: rich tables on a
terminal, tab-separated text when piped, ``--json`` for machines. Exit status per api.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
import msgspec

from forkline_es.cli._common import (
    EXIT_DIFFERENCE,
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


def _slots(payloads: dict[str, Any]) -> str:
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
    type=click.IntRange(min=1),
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
            workflow, **filters, limit=None if limit is None else limit + 1, before=after
        )
    more = limit is not None and len(listed) > limit
    listed = listed[:limit]
    if as_json:
        echo_json(listed)
    else:
        columns = ("id", "workflow", "status", "started_at", "parent", "labels", "name")
        print_table("runs", columns, [_row(s, terminal) for s in listed])
    if more:
        say(f"more runs: add --before {listed[-1]['id']} for the next page", err=True)


def _row(summary: dict[str, Any], terminal: bool) -> list[Any]:
    """A run's table row; on a terminal ids are cut to ``SHORT_ID`` characters, which every
    command still takes (a unique prefix names its run)."""
    rid, parent = summary["id"], summary["parent"]
    if terminal:
        rid, parent = rid[:SHORT_ID], parent and parent[:SHORT_ID]
    labels = _labels_text(summary.get("x-labels"))
    return [
        rid,
        summary["workflow"],
        summary["status"],
        summary["started_at"],
        parent,
        labels,
        summary.get("name"),
    ]


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
@db_option
@json_option
@paged
def show(run_id: str, as_timeline: bool, db: str, as_json: bool) -> None:
    """Show RUN's run record document, and as text its RunRecorder events.

    Text: summary, steps, payloads and entries, then the events a RunRecorder logged (they are
    not entries of the document). --json prints the document alone.
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
    print_table(f"run {run_id}", ("member", "value"), sorted(doc["run"].items()))
    print_table(
        "run payloads",
        ("slot", "class", "state"),
        [(k, v["class"], v["state"]) for k, v in doc["payloads"].items()],
    )
    began = _began(doc)
    steps = [
        (p, s["generation"], s["status"], s.get("outcome"), s.get("code"), _slots(s["payloads"]))
        for p, s in sorted(doc["steps"].items(), key=lambda item: began.get(item[0], 0))
    ]
    print_table("steps", ("path", "generation", "status", "outcome", "code", "payloads"), steps)
    entries = [(e["seq"], e["generation"], e["kind"], _detail(e)) for e in doc.get("entries", [])]
    print_table("entries", ("seq", "generation", "kind", "detail"), entries)
    if events:  # payload: canonical JSON as stored, empty once retention removed it
        logged = [(event_id, ts, kind, payload) for event_id, _, ts, kind, payload in events]
        print_table("events", ("event_id", "ts", "type", "payload"), logged)
    if "x-artifacts" in doc:  # artifacts, manifest and metrics (docs/verify.md)
        columns = ("name", "kind", "size_bytes", "sha256", "content_type", "step", "path")
        print_table("artifacts", columns, [[a.get(c) for c in columns] for a in doc["x-artifacts"]])
    if "x-manifest" in doc:
        manifest = doc["x-manifest"]
        facts = [("digest", manifest["digest"]), ("complete", manifest["complete"])]
        facts.append(("unknown_fields", ", ".join(manifest["unknown_fields"]) or "-"))
        print_table("manifest", ("member", "value"), facts)
    if "x-observations" in doc:
        metrics = ("name", "value", "unit", "step")
        print_table("observations", metrics, [[o.get(c) for c in metrics] for o in doc["x-observations"]])


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
    lines = timeline(doc)
    if not sys.stdout.isatty():
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
    members = ("path", "generation", "status", "outcome", "code", "branch", "x-started-at", "x-ended-at")
    facts = [(k.removeprefix("x-"), record[k]) for k in (*members, "x-attempts") if k in record]
    print_table(f"step {path}", ("member", "value"), facts)
    slots = [(k, v["class"], v["state"], _value_text(v, typed)) for k, v in record["payloads"].items()]
    print_table("payloads", ("slot", "class", "state", "value"), slots)
    columns = (
        "attempt",
        "gen",
        "dispatch",
        "code",
        "arguments",
        "result",
        "invoked",
        "answered",
        "superseded",
    )
    print_table("attempts", columns, _attempts(entries, path, typed))


def _value_text(slot: dict[str, Any], typed: bool) -> str:
    """A slot's value as JSON (indented on a terminal, one line when piped): plain data, or
    (``typed``) the typed wire form."""
    if "value" not in slot:
        return ""
    data = _line.encode(slot["value"] if typed else plain_value(slot["value"]))
    return (msgspec.json.format(data, indent=2) if sys.stdout.isatty() else data).decode()


def _attempts(entries: list[dict[str, Any]], path: str, typed: bool) -> list[list[Any]]:
    """One row per invoke at ``path`` in seq order, with its result when there is one."""
    superseded = {n: e["seq"] for e in entries if e["kind"] == "recovery" for n in e["supersedes"]}
    results = {
        (e["attempt"], e["generation"]): e for e in entries if e["kind"] == "result" and e["path"] == path
    }
    rows = []
    for e in entries:
        if e["kind"] != "invoke" or e["path"] != path:
            continue
        r = results.get((e["attempt"], e["generation"]), {})
        gone = superseded.get(e["seq"])
        rows.append(
            [
                e["attempt"],
                e["generation"],
                r.get("dispatch", e["dispatch"]),
                r.get("code"),
                _value_text((e.get("payloads") or {}).get("arguments", {}), typed),
                _value_text((r.get("payloads") or {}).get("result", {}), typed),
                e.get("x-at"),
                r.get("x-at"),
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
    with open_for_read(db) as store, refusals(), _progress_bar() as progress:
        if not check:
            folded = store.rebuild_projections(progress)
            if as_json:
                return echo_json({"rebuilt": True, "events": folded})
            return click.echo(f"rebuilt every projection from {folded} events")
        differences = store.check_projections(progress)
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

"""The sample workflow and the story ``forkline-es demo`` records with it.

``report`` fetches a few pages, summarizes them, has a child run translate the summary,
publishes a report and notifies a channel. The actions are simulated in-process (no
network): one page fails once, the publish times out once, and the first summarize call
"crashes the process". ``record_demo`` runs the workflow through every situation a run
record has to tell about, under readable ids (``demo-first``, ``demo-replay``, ...).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import forkline_es as fe
from forkline_es.demo.executor import Action, ActionFailed, Ambiguous, Executor, Held
from forkline_es.values import canonical_json, sha256_digest

__all__ = [
    "LABELS",
    "WORKFLOW",
    "Crash",
    "children",
    "demo_ids",
    "record_demo",
    "report",
    "sample_actions",
    "translate",
]

WORKFLOW = "demo/report"
CHILD_WORKFLOW = "demo/translate"
STEPS = ["fetch", "fetch/*", "summarize", "translate", "approve", "publish", "notify"]
INPUTS: dict[str, Any] = {
    "topic": "Recording durable runs",
    "sources": ["https://example.org/event-logs", "https://example.org/flaky-page"],
}

CONFIG: dict[str, Any] = {"model": "demo-model-1", "temperature": 0.0}
#: What the run pins as its definition: a digest of the workflow's shape and version.
DEFINITION = sha256_digest(canonical_json({"workflow": WORKFLOW, "version": 1, "steps": STEPS}))


class Crash(Exception):
    """Stands in for the process dying in the middle of a step."""


def report(ex: Executor, inputs: Any) -> Any:
    """The sample workflow: nested steps, an iteration, a child run, an approval gate."""
    with ex.step("fetch"):
        pages = [ex.call(f"fetch/{i}", "http.get", {"url": url}) for i, url in enumerate(inputs["sources"])]
    texts = [page.get("text", "") for page in pages]
    summary = ex.call("summarize", "llm.summarize", {"topic": inputs["topic"], "pages": texts})
    french = ex.child("translate", CHILD_WORKFLOW, translate, {"text": summary.get("text", ""), "lang": "fr"})
    if inputs.get("approval") == "required":
        with ex.step("approve"):
            raise Held("approval-required", "a person must approve the report before it is published")
    post = ex.call("publish", "blog.post", {"title": inputs["topic"], "languages": ["en", "fr"]})
    if not ex.dry_run:  # the report itself, kept content-addressed beside the database
        text = f"# {inputs['topic']}\n\n{summary.get('text', '')}\n"
        ex.run.add_artifact(text.encode(), "report", "text/markdown", step="publish", name="report.md")
    ex.call("notify", "chat.send", fe.Sensitive({"channel": "#reports", "token": "xoxb-not-a-real-token"}))
    return {"post": post.get("id"), "summary": summary.get("text"), "french": french.get("text")}


def translate(ex: Executor, inputs: Any) -> Any:
    """The child workflow: one action."""
    return ex.call("translate", "llm.translate", inputs)


def sample_actions(model: str = "demo-model-1", crash: bool = False) -> dict[str, Action]:
    """Simulated actions keyed by operation; each misbehaves once, as real ones do."""
    calls: Counter[str] = Counter()

    def http_get(args: Any) -> Any:
        calls[args["url"]] += 1
        if "flaky" in args["url"] and calls[args["url"]] == 1:
            raise ActionFailed("http-503")
        return {"url": args["url"], "text": f"the page at {args['url']}"}

    def summarize(args: Any) -> Any:
        calls["summarize"] += 1
        if crash and calls["summarize"] == 1:
            raise Crash("the process died while the model was answering")
        return {"text": f"{args['topic']}: {len(args['pages'])} pages read", "model": model}

    def post(args: Any) -> Any:
        calls["post"] += 1
        if calls["post"] == 1:
            raise Ambiguous()
        return {"id": "post-" + hashlib.sha256(args["title"].encode()).hexdigest()[:12]}

    return {
        "http.get": http_get,
        "llm.summarize": summarize,
        "llm.translate": lambda args: {"text": f"[{args['lang']}] {args['text']}"},
        "blog.post": post,
        "chat.send": lambda args: {"delivered": True, "channel": args["channel"]},
    }


LABELS = ("first", "dry-run", "held", "replay")


def demo_ids(store: fe.Store) -> tuple[dict[str, str], bool]:
    """Readable ids for the demo's runs, and whether the store already holds them all.

    ``demo-first``, ``demo-replay``, ... the first time; when some of those ids are taken
    (an interrupted demo, or evicted runs, whose ids are never reused) ``demo-first-2``, ...
    """
    n = 1
    while True:
        ids = {label: f"demo-{label}" + (f"-{n}" if n > 1 else "") for label in LABELS}
        known = [_known(store, run_id) for run_id in ids.values()]
        if all(k == "retained" for k in known) or not any(known):
            return ids, all(known)
        n += 1


def record_demo(store: fe.Store, ids: dict[str, str]) -> dict[str, str]:
    """Record the demo's runs under ``ids``; returns label -> run id, children included."""
    runs = dict(ids)

    # 1. The first run crashes in the middle of `summarize`; a new process resumes it.
    actions = sample_actions(crash=True)
    pins = {"definition": DEFINITION}
    ex = Executor.start(store, WORKFLOW, actions, INPUTS, name="Daily report", pins=pins, run_id=ids["first"])
    ex.run.record_manifest(packages=["forkline-es"], config=CONFIG, model=CONFIG["model"])
    try:
        ex.execute(report, INPUTS)
    except Crash:
        del ex  # the handle dies with the process; only the log remains
    Executor.resume(store, ids["first"], actions).execute(report, INPUTS)

    # 2. A dry run: nothing is dispatched, results are partial.
    dry = Executor.start(store, WORKFLOW, sample_actions(), INPUTS, dry_run=True, run_id=ids["dry-run"])
    dry.execute(report, INPUTS)

    # 3. A run that waits for a person's approval: it stays held.
    held_inputs = {**INPUTS, "approval": "required"}
    held = Executor.start(store, WORKFLOW, sample_actions(), held_inputs, run_id=ids["held"])
    held.execute(report, held_inputs)

    # 4. A replay of the first run with a newer model: it diverges at `summarize`.
    actions = sample_actions(model="demo-model-2")
    replay, inputs = Executor.replay(store, ids["first"], actions, run_id=ids["replay"])
    replay.execute(report, inputs)
    return runs


def children(store: fe.Store, run_id: str) -> list[str]:
    """The ids of the child runs the run started, in order."""
    record = store.get_run_record(run_id)
    return [str(e["child"]) for e in record["entries"] if e["kind"] == "child"]


def _known(store: fe.Store, run_id: str) -> str | None:
    """Whether the id is taken: by a run in the store (``retained``), or by one that was
    evicted (``evicted``: the demo cannot show it, and its id is never reused)."""
    try:
        store.get_run_record(run_id)
    except fe.RunNotRetained:
        return "evicted"
    except fe.RunNotFound:
        return None
    return "retained"

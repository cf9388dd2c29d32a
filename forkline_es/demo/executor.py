"""A small durable executor: how an executor drives forkline_es, in a page.

Every step is recorded when it begins and when it ends; every action attempt is recorded
before it is dispatched and its result after. That is all durability needs: after a
crash, ``Executor.resume`` reads the run record, supersedes what never finished, and runs
the workflow function again; steps that already ended answer from the record instead of
running twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import forkline_es as fe
from forkline_es.values import canonical_json, sha256_digest

__all__ = ["Action", "ActionFailed", "Ambiguous", "Executor", "Held", "Workflow"]

#: An action takes its arguments and returns its result, or raises ActionFailed / Ambiguous.
Action = Callable[[Any], Any]
#: A workflow is a plain function of the executor and the run's inputs; it returns the outputs.
Workflow = Callable[["Executor", Any], Any]


class ActionFailed(Exception):
    """The action answered with a failure; the executor tries it again."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class Ambiguous(Exception):
    """The action was sent but no answer came back (a timeout): it may or may not have run."""


class Held(Exception):
    """The workflow waits for a person: the run is held at the current step."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


class Executor:
    """Runs one workflow function as one recorded run."""

    def __init__(self, store: fe.Store, run: fe.Run, actions: dict[str, Action], dry_run: bool = False):
        self.store, self.run, self.actions, self.dry_run = store, run, actions, dry_run
        self.done: dict[str, Any] = {}  # path -> recorded result of a step that already ended
        self.attempts: dict[str, int] = {}  # path -> the last attempt number used
        self.at: str | None = None  # the step running now

    @classmethod
    def start(
        cls, store: fe.Store, workflow: str, actions: dict[str, Action], inputs: Any, **start: Any
    ) -> Executor:
        """Record the run's start; ``start`` goes to ``store.start_run`` (dry_run, parent, ...)."""
        run = store.start_run(workflow, inputs=inputs, **start)
        return cls(store, run, actions, dry_run=start.get("dry_run", False))

    @classmethod
    def resume(cls, store: fe.Store, run_id: str, actions: dict[str, Action]) -> Executor:
        """After a crash: a new generation that supersedes every entry of an unfinished step."""
        ex = cls(store, store.resume_run(run_id), actions)
        ex.run.recover(supersedes=[e.seq for e in ex.run.in_flight()])
        for path, step in fe.plain(store.get_run_record(run_id))["steps"].items():
            if step["status"] == "ended":
                ex.done[path] = step["payloads"].get("result", {}).get("value")
        return ex

    @classmethod
    def replay(
        cls, store: fe.Store, original: str, actions: dict[str, Action], **start: Any
    ) -> tuple[Executor, Any]:
        """Run a recorded run again as its successor. Attempts are numbered afresh: the
        diff pairs attempts by their order, so the original's renumbering after its crash
        is an infrastructure difference, not a divergence."""
        record = store.get_run_record(original)
        inputs = fe.decode_value(record["payloads"]["inputs"]["value"])
        run = record["run"]
        start.setdefault("name", run.get("name"))
        start.setdefault("pins", record.get("pins"))
        ex = cls.start(store, run["workflow"], actions, inputs, predecessor=original, **start)
        return ex, inputs

    def execute(self, workflow: Workflow, inputs: Any) -> Any:
        """Run the workflow to its end (or to a hold) and record how the run concluded."""
        try:
            outputs = workflow(self, inputs)
        except Held as h:
            self.run.hold(code=h.code, step=self.at, reason=h.reason)
            return None
        except ActionFailed as e:
            self.run.conclude("failed", path=self.at, code=e.code)
            return None
        self.run.conclude("succeeded", outputs=fe.Partial(outputs, [["result"]]) if self.dry_run else outputs)
        return outputs

    @contextmanager
    def step(self, path: str) -> Iterator[None]:
        """A step made of other steps (``fetch`` holding ``fetch/0``, ``fetch/1``, ...)."""
        if path in self.done:
            yield
            return
        self.at = path
        self.run.begin_step(path)
        yield  # an exception leaves the step unfinished: a recovery supersedes it
        self.run.end_step(path, "succeeded")

    def call(self, path: str, operation: str, arguments: Any, max_attempts: int = 3) -> Any:
        """A step that calls one action, tried again until it succeeds or attempts run out."""
        if path in self.done:
            return self.done[path]
        self.at = path
        self.run.begin_step(path, arguments=arguments)
        if self.dry_run:  # nothing is dispatched: record what is known, and what is left out
            self.run.end_step(path, "succeeded", result=fe.Partial({"operation": operation}, [["result"]]))
            return {}
        plain = arguments.value if isinstance(arguments, fe.Sensitive) else arguments
        connector = sha256_digest(canonical_json({"operation": operation, "version": 1}))
        for _ in range(max_attempts):
            attempt = self.attempts[path] = max(self.attempts.get(path, 0) + 1, self.run.next_attempt(path))
            self.run.invoke(path, attempt, operation, connector, "not-dispatched", arguments=arguments)
            try:
                value = self.actions[operation](plain)
            except ActionFailed as e:
                self.run.result(path, attempt, "failed", code=e.code)
                continue
            except Ambiguous:
                self.run.result(path, attempt, "ambiguous", code="timeout")
                continue
            self.run.result(path, attempt, "succeeded", result=value)
            self.run.end_step(path, "succeeded")
            return value
        self.run.end_step(path, "failed", code="attempts-exhausted")
        raise ActionFailed("attempts-exhausted")

    def child(self, path: str, workflow: str, function: Workflow, inputs: Any) -> Any:
        """A step that runs another workflow as a child run and waits for its outputs."""
        if path in self.done:
            return self.done[path]
        self.at = path
        self.run.begin_step(path, arguments=inputs)
        kid = Executor.start(
            self.store, workflow, self.actions, inputs, parent=self.run.id, dry_run=self.dry_run
        )
        self.run.child(path, kid.run.id)
        outputs = kid.execute(function, inputs)
        self.run.end_step(path, "succeeded", result=outputs)
        return outputs


def active_entries(record: dict[str, Any]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(seq, step path, entry) of each entry about a step that no recovery superseded."""
    gone = {n for e in record["entries"] if e["kind"] == "recovery" for n in e["supersedes"]}
    for entry in record["entries"]:
        path = entry.get("path") or entry.get("step", {}).get("path")
        if path is not None and entry["kind"] != "conclude" and entry["seq"] not in gone:
            yield entry["seq"], path, entry

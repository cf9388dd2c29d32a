"""The Run handle: the executor's write path. Each call checks, then appends one event.

Follow ``run.invoke(...)``: the arguments are checked against the cached ``RunState``
(``recording.state``), the payload is encoded (``recording.payloads``), the event body
(``log.events``) becomes a chained ``NewRow`` here, and ``Store._commit`` appends it to
``log`` and folds it into the projections in the same transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from forkline_es._logging import get_logger
from forkline_es.errors import Conflict, InvalidRequest, InvalidValue, RecordError, RunNotRetained
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import (
    ENTRY_KINDS,
    ActionInvoked,
    ActionResult,
    ChildStarted,
    EventBody,
    Recovered,
    RunConcluded,
    RunHeld,
    RunResumed,
    RunSuspended,
    StepBegun,
    StepEnded,
    encode_body,
    kind_of,
)
from forkline_es.log.rows import LogRow, NewRow, row_digest
from forkline_es.recording import checkpoint
from forkline_es.recording.checkpoint import Saving
from forkline_es.recording.markers import MISSING
from forkline_es.recording.payloads import BODY_ALLOWANCE, encode_slots, too_large
from forkline_es.recording.state import (
    InFlight,
    RunState,
    call_digest,
    check_attempt,
    check_branch,
    check_path,
    check_recover_shape,
    check_text,
    check_word,
    comparable,
)
from forkline_es.values import is_digest
from forkline_es.vocabulary import INVOKE_DISPATCH, RESULT_DISPATCH, STEP_OUTCOMES, TERMINAL_OUTCOMES

if TYPE_CHECKING:  # artifacts load when a run first adds one (import cost, issue 22)
    from forkline_es.artifacts import recording as _artifacts
    from forkline_es.artifacts.manifest import Manifest
    from forkline_es.artifacts.store import ArtifactFiles

__all__ = ["Host", "Run", "logged_refusals"]

_log = get_logger("forkline_es.recording")

P = ParamSpec("P")
R = TypeVar("R")


class Placement(Protocol):
    """A staged file an event points at: placed once the event is in the log, else discarded."""

    def place(self) -> None: ...

    def discard(self) -> None: ...


class Host(Protocol):
    """What a Run asks of the store that made it (``store.Store``, above this package)."""

    @property
    def log(self) -> EventLog: ...

    @property
    def is_sensitive(self) -> Callable[[Any], bool] | None: ...

    @property
    def max_payload_bytes(self) -> int: ...

    @property
    def artifact_files(self) -> ArtifactFiles: ...

    def _now(self) -> str: ...

    def _commit(self, row: NewRow, event: EventBody, save: Saving | None = None) -> int: ...

    def _commit_many(
        self, pending: list[tuple[NewRow, EventBody]], save: Saving | None = None
    ) -> list[int]: ...

    def _log_row(self, run_id: str, seq: int) -> LogRow | None: ...

    def resume_run(self, run_id: str) -> Run: ...


def _unencodable(event: EventBody) -> InvalidValue:
    """The refusal of an event body msgspec cannot write (``encode_body`` raised ValueError).

    A body holds the call's own fields (a manifest's facts among them), whose integers
    msgspec writes only up to Python's 4,300-digit limit; payloads carry integers of any size.
    """
    return InvalidValue(
        f"the {kind_of(event)} event's own fields (a manifest fact, say) hold what they cannot "
        "carry, such as an integer of more than 4,300 digits; record such a number in a payload"
    )


def logged_refusals(method: Callable[P, R]) -> Callable[P, R]:
    """Log every refusal as one structured event, then let it propagate unchanged."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except RecordError as e:
            run = args[0]
            _log.info(
                "refused",
                call=method.__name__,
                run_id=getattr(run, "id", None) or kwargs.get("run_id"),
                code=e.code,
                message=e.message,
            )
            raise

    return wrapper


class Run:
    """A handle on one run, holding the folded state of everything it has appended.

    A handle whose state turns out stale (another process recovered or extended the
    run) is fenced: every later call is refused with ``conflict``; take a fresh one
    with ``store.resume_run(run_id)``.
    """

    def __init__(self, store: Host, state: RunState) -> None:
        self._store = store
        self._state = state
        self._fenced: str | None = None
        #: a row whose commit raised something other than a clash: it may have committed
        self._unacked: NewRow | None = None
        #: global log position of the event this handle appended last (None after a repeat)
        self.last_position: int | None = None
        #: rows checked and folded but not yet committed, inside ``with run.batch():``
        self._batch: list[tuple[NewRow, EventBody]] | None = None
        #: files the batch's events point at, placed once the batch commits
        self._batch_files: list[Placement] = []
        #: the run checkpoint the batch is due to carry (``recording.checkpoint``)
        self._batch_save: Saving | None = None

    @property
    def id(self) -> str:
        return self._state.run_id

    @property
    def generation(self) -> int:
        return self._state.generation

    @property
    def status(self) -> str:
        return self._state.status

    def __repr__(self) -> str:
        return f"<Run {self.id} generation={self.generation} status={self.status}>"

    def in_flight(self) -> list[InFlight]:
        """The unfinished work of the run (``.seq``, ``.kind``, ``.path``, ``.attempt``): every
        entry, not superseded, of a step that has not ended. After a crash the whole recovery
        is ``run.recover(supersedes=[e.seq for e in run.in_flight()])``."""
        return self._state.in_flight()

    def next_attempt(self, path: str) -> int:
        """The attempt number the next ``invoke`` at ``path`` uses (never one used before)."""
        check_path(path)
        return self._state.next_attempt(path)

    # -- the executor API --------------------------------------------------------------

    @logged_refusals
    def begin_step(self, path: str, arguments: Any = MISSING, *, key: str | None = None) -> int:
        """Record that the step at ``path`` began; returns its entry seq."""
        check_path(path)
        slots, rows = self._slots(arguments=arguments)
        event = StepBegun(path=path, slots=slots)
        return self._record(
            event,
            (f"begin:{self.generation}:{path}" if key is None else key),
            rows,
            lambda: self._state.check_begin(path),
        )

    @logged_refusals
    def invoke(
        self,
        path: str,
        attempt: int,
        operation: str,
        artifact: str,
        dispatch: str,
        arguments: Any = MISSING,
        *,
        key: str | None = None,
    ) -> int:
        """Record one attempt of an action, before dispatch or with an ambiguous dispatch."""
        check_path(path)
        check_text(operation, "operation")
        check_text(artifact, "artifact")
        if not is_digest(artifact):
            raise InvalidRequest(
                f"artifact is the connector manifest digest ('sha256:' + 64 lower-case hex), not {artifact!r}"
            )
        check_attempt(attempt)
        check_word(dispatch, INVOKE_DISPATCH, "invoke dispatch")
        slots, rows = self._slots(arguments=arguments)
        event = ActionInvoked(
            path=path,
            attempt=attempt,
            operation=operation,
            artifact=artifact,
            dispatch=dispatch,
            slots=slots,
        )
        return self._record(
            event,
            (f"invoke:{self.generation}:{path}:{attempt}" if key is None else key),
            rows,
            lambda: self._state.check_invoke(path, attempt, dispatch),
        )

    @logged_refusals
    def result(
        self,
        path: str,
        attempt: int,
        dispatch: str,
        code: str | None = None,
        result: Any = MISSING,
        details: Any = MISSING,
        *,
        key: str | None = None,
    ) -> int:
        """Record the accepted result of an attempt invoked in the active generation."""
        check_path(path)
        check_attempt(attempt)
        check_word(dispatch, RESULT_DISPATCH, "result dispatch")
        check_text(code, "code", optional=True)
        slots, rows = self._slots(result=result, details=details)
        event = ActionResult(path=path, attempt=attempt, dispatch=dispatch, code=code, slots=slots)
        return self._record(
            event,
            (f"result:{self.generation}:{path}:{attempt}" if key is None else key),
            rows,
            lambda: self._state.check_result(path, attempt, dispatch),
        )

    @logged_refusals
    def end_step(
        self,
        path: str,
        outcome: str,
        code: str | None = None,
        branch: Any = None,
        result: Any = MISSING,
        details: Any = MISSING,
        binding: Any = MISSING,
        event: Any = MISSING,
        *,
        key: str | None = None,
    ) -> int:
        """Record the step's outcome (and branch decision); its occurrence is then ended."""
        check_path(path)
        check_word(outcome, STEP_OUTCOMES, "step outcome")
        check_text(code, "code", optional=True)
        decided = check_branch(branch)
        slots, rows = self._slots(result=result, details=details, binding=binding, event=event)
        body = StepEnded(path=path, outcome=outcome, code=code, branch=decided, slots=slots)
        return self._record(
            body,
            (f"end:{self.generation}:{path}" if key is None else key),
            rows,
            lambda: self._state.check_end(path, outcome),
        )

    @logged_refusals
    def child(self, path: str, child_run_id: str, *, key: str | None = None) -> int:
        """Record that the step at ``path`` started the child run ``child_run_id``."""
        check_path(path)
        check_text(child_run_id, "child run id")
        event = ChildStarted(path=path, child=child_run_id)
        return self._record(
            event,
            (f"child:{self.generation}:{path}:{child_run_id}" if key is None else key),
            (),
            lambda: self._state.check_child(path, child_run_id),
        )

    @logged_refusals
    def suspend(self, reason: str | None = None, *, key: str | None = None) -> None:
        """The run waits (status ``suspended``) until ``resume``."""
        check_text(reason, "reason", optional=True)
        self._record(
            RunSuspended(reason=reason),
            (f"suspend:{self.generation}:{self._state.seq + 1}" if key is None else key),
            (),
            lambda: self._state.check_status_change("suspended"),
        )

    @logged_refusals
    def hold(
        self,
        code: str | None = None,
        step: str | None = None,
        reason: str | None = None,
        *,
        key: str | None = None,
    ) -> None:
        """The run is held (status ``held``); ``code``/``step``/``reason`` appear in its summary."""
        check_text(code, "code", optional=True)
        check_text(reason, "reason", optional=True)
        if step is not None:
            check_path(step)
        self._record(
            RunHeld(code=code, step=step, reason=reason),
            (f"hold:{self.generation}:{self._state.seq + 1}" if key is None else key),
            (),
            lambda: self._state.check_status_change("held"),
        )

    @logged_refusals
    def resume(self, *, key: str | None = None) -> None:
        """A suspended or held run is active again."""
        self._record(
            RunResumed(),
            (f"resume:{self.generation}:{self._state.seq + 1}" if key is None else key),
            (),
            lambda: self._state.check_status_change("active"),
        )

    @logged_refusals
    def recover(self, supersedes: Sequence[int] = (), *, key: str | None = None) -> int:
        """Enter the next generation, taking ``supersedes`` entries out of consideration.

        Returns the new generation number. An empty ``supersedes`` is still recorded.
        """
        wanted = check_recover_shape(supersedes)
        event = Recovered(supersedes=sorted(wanted))
        generation = self.generation + 1
        seq = self._state.seq
        entry = self._record(
            event,
            (f"recover:{generation}" if key is None else key),
            (),
            lambda: self._state.check_recover(wanted),
            generation=generation,
        )
        if self._state.seq != seq:  # not an idempotent repeat
            _log.info("recovered", run_id=self.id, generation=self.generation, supersedes=event.supersedes)
        return self._state.facts[entry - 1].generation  # a repeat answers the original's generation

    @logged_refusals
    def conclude(
        self,
        status: str,
        path: str | None = None,
        code: str | None = None,
        reason: str | None = None,
        outputs: Any = MISSING,
        *,
        key: str | None = None,
    ) -> int:
        """Record the terminal outcome; the last entry of the run."""
        check_word(status, TERMINAL_OUTCOMES, "conclude status")
        if outputs is not MISSING and status != "succeeded":
            raise InvalidRequest("outputs are applicable only to a succeeded run")
        if path is not None:
            check_path(path)
        check_text(code, "code", optional=True)
        check_text(reason, "reason", optional=True)
        slots, rows = self._slots(outputs=outputs)
        event = RunConcluded(status=status, path=path, code=code, reason=reason, slots=slots)
        seq = self._state.seq
        entry = self._record(
            event,
            ("conclude" if key is None else key),
            rows,
            lambda: self._state.check_conclude(status, outputs is not MISSING),
        )
        if self._state.seq != seq:  # not an idempotent repeat
            _log.info("concluded", run_id=self.id, status=status, generation=self.generation)
        return entry

    # -- artifacts, manifest, observations (forkline_es.artifacts.recording) ---------------

    @logged_refusals
    def add_artifact(
        self,
        source: _artifacts.Source,
        kind: str,
        content_type: str | None = None,
        step: str | None = None,
        name: str | None = None,
        *,
        key: str | None = None,
    ) -> int:
        """Store a file or bytes content-addressed beside the database; returns the event's seq.

        ``name`` defaults to the file's basename (the digest for bytes); the same content
        under the same name again returns the original seq, other content is a conflict.
        """
        from forkline_es.artifacts import recording as _artifacts

        return _artifacts.add_artifact(self, source, kind, content_type, step, name, key)

    @logged_refusals
    def record_manifest(
        self,
        packages: Iterable[str] = (),
        config: Any = None,
        *,
        key: str | None = None,
        **facts: Any,
    ) -> Manifest:
        """Record the reproducibility manifest: captured facts plus ``facts``; see docs/verify.md."""
        from forkline_es.artifacts import recording as _artifacts

        return _artifacts.record_manifest(self, packages, config, key, **facts)

    @logged_refusals
    def observe(
        self,
        name: str,
        value: int | float,
        unit: str | None = None,
        step: str | None = None,
        *,
        key: str | None = None,
    ) -> int:
        """Record a finite metric value, one per (name, step); returns the event's seq."""
        from forkline_es.artifacts import recording as _artifacts

        return _artifacts.observe(self, name, value, unit, step, key)

    @contextmanager
    def batch(self) -> Iterator[Run]:
        """Record several calls in one transaction: all of them or none, one commit.

        Each call inside is checked and returns its seq at once, as usual; the events
        reach the log together when the block ends (one fsync at ``durability="full"``
        instead of one per call). If the block raises, or the commit is refused, nothing
        of it is written and the handle is back at what the log says. An executor uses
        it for the events of one step, e.g. ``begin_step`` and ``invoke`` before dispatch.
        """
        if self._batch is not None:
            raise InvalidRequest("batches do not nest: end the open run.batch() first")
        if self._fenced is not None:
            raise Conflict(self._fenced)
        self._batch, self._batch_files, self._batch_save = [], [], None
        try:
            yield self
        except BaseException:
            self._batch = None
            self._discard_batch_files()
            self._reload()
            raise
        pending, self._batch = self._batch, None
        save, self._batch_save = self._batch_save, None
        if not pending:
            self._place_batch_files()  # repeats of calls already recorded: repair their files
            return
        try:
            positions = self._store._commit_many(pending, save)
            if save is not None:
                save.done(self._state)
        except BaseException as e:
            self._discard_batch_files()
            self._reload()
            if isinstance(e, Conflict) and self._store._log_row(self.id, pending[0][0].seq) is not None:
                self._fenced = (
                    f"run {self.id} was extended by another writer; this handle is stale "
                    "(store.resume_run(run_id) gives a handle at the current generation)"
                )
            raise
        self.last_position = positions[-1]
        self._place_batch_files()

    def _discard_batch_files(self) -> None:
        files, self._batch_files = self._batch_files, []
        for placement in files:
            placement.discard()

    def _place_batch_files(self) -> None:
        files, self._batch_files = self._batch_files, []
        try:
            for placement in files:
                placement.place()
        finally:
            for placement in files:
                placement.discard()

    def _placed(self, placement: Placement | None) -> None:
        """The event ``placement``'s file belongs to is in the log: put the file in place
        (inside a batch, once the batch commits)."""
        if placement is None:
            return
        if self._batch is not None:
            self._batch_files.append(placement)
            return
        try:
            placement.place()
        finally:
            placement.discard()

    def _reload(self) -> None:
        """Back to what the log says (after a batch that was not written)."""
        self._state = self._store.resume_run(self.id)._state

    def _caught_up(self) -> Run | None:
        """A new handle at the end of the log: this one's state plus the rows appended
        since, read incrementally (a long run is not read again); None when nothing was
        appended, so the refusal this handle met was not a race. This handle is spent."""
        state = self._state
        rows = list(self._store.log.read_run_from(self.id, state.seq + 1))
        for row in rows:
            state.apply_row(row)
        return Run(self._store, state) if rows else None

    # -- the one append path ------------------------------------------------------------

    def _slots(self, **args: Any) -> tuple[dict[str, Any], tuple[tuple[str, bytes], ...]]:
        return encode_slots(
            args, self._store.is_sensitive, dry_run=self._state.dry_run, limit=self._store.max_payload_bytes
        )

    def _record(
        self,
        event: EventBody,
        key: str,
        payloads: Sequence[tuple[str, bytes]],
        check: Callable[[], Any],
        *,
        generation: int | None = None,
        placement: Placement | None = None,
    ) -> int:
        """Return the original seq for a repeated call, else check and append one event.

        ``placement``: the file the event points at, placed only once the event is in the
        log (this call's commit, or the original call's when this one repeats it).
        """
        if self._fenced is not None:
            raise Conflict(self._fenced)
        check_text(key, "an idempotency key")
        try:
            body = encode_body(event)
        except ValueError:
            raise _unencodable(event) from None
        state = self._state
        self.last_position = None
        seen = state.seen(key)
        if seen is not None:
            self._still_in_the_log()  # answered from the handle's state: only while that holds
            if seen[2] != call_digest(event, body):
                raise Conflict(f"a different call was already recorded under idempotency key {key!r}")
            self._placed(placement)
            return seen[1] if seen[1] is not None else seen[0]
        limit = self._store.max_payload_bytes
        for slot, data in payloads:  # every path that stores a payload passes here
            if len(data) > limit:
                raise too_large(slot, data, limit)
        if len(body) > limit + BODY_ALLOWANCE:
            raise InvalidValue(
                f"the {kind_of(event)} event's own fields are {len(body):,} bytes of JSON, over "
                f"this store's limit of {limit:,} bytes (Store.open(max_payload_bytes=...)) plus "
                f"{BODY_ALLOWANCE:,} for what the engine adds; shorten its text (a reason, a "
                "manifest fact) or record the bulk as a payload or an artifact",
            )
        try:
            check()
        except Conflict:
            self._still_in_the_log()
            raise
        kind = kind_of(event)
        seq = state.seq + 1
        entry = state.entries + 1 if kind in ENTRY_KINDS else None
        gen = state.generation if generation is None else generation
        at = self._store._now()
        digest = row_digest(state.run_id, seq, entry, gen, kind, at, key, state.last_digest, body)
        row = NewRow(
            state.run_id,
            seq,
            entry,
            gen,
            kind,
            at,
            key,
            body,
            digest,
            state.last_digest,
            tuple(payloads),
        )
        if self._batch is not None:
            self._batch.append((row, event))
            self._batch_save = checkpoint.due(state, seq, self._batch_save)
            state.apply(seq, entry, gen, key, digest, body, event)
            if placement is not None:
                self._placed(placement)
            return entry if entry is not None else seq
        try:
            position = self._commit(row, event)
        except Conflict:
            if self._adopt_own_commit(row, event, body):
                self._placed(placement)
                return entry if entry is not None else seq
            if self._adopt_unacked(row.seq):
                return self._record(event, key, payloads, check, generation=generation, placement=placement)
            if self._store._log_row(row.run_id, row.seq) is None:
                raise  # the write lock was not obtained: nothing changed, the handle is current
            self._fenced = (
                f"run {self.id} was extended by another writer; this handle is stale "
                "(store.resume_run(run_id) gives a handle at the current generation)"
            )
            raise
        except RunNotRetained:
            raise  # refused inside the transaction (log_refuses_evicted_runs): nothing committed
        except BaseException:
            self._unacked = row  # e.g. the acknowledgement was lost after COMMIT
            raise
        self._unacked = None
        self.last_position = position
        state.apply(seq, entry, gen, key, digest, body, event)
        if placement is not None:  # a file the event points at: only now, once it is in the log
            self._placed(placement)
        return entry if entry is not None else seq

    def _still_in_the_log(self) -> None:
        """Before a call is answered from the handle's state alone (a repeat, or a refusal of
        what the state forbids): the run must still be the one the handle followed. Evicted
        (its eviction recorded) is ``run-not-retained``, as an append would be; its last row
        gone or another one in its place (the tombstone purged, the id started again) is
        ``conflict``. Two reads, on these paths only; never inside a batch, whose calls are
        checked by the batch's own append."""
        if self._batch is not None:
            return
        state = self._state
        evicted = self._store.log.eviction(self.id)
        if evicted is not None:
            raise RunNotRetained(
                f"run {self.id} was evicted at {evicted[0]} ({evicted[1]}); it takes no more "
                "events and answers nothing of its history (record into a new run instead)"
            )
        row = self._store._log_row(self.id, state.seq)
        if row is None or row.digest != state.last_digest:
            raise Conflict(
                f"run {self.id} no longer holds the rows this handle follows (it was evicted and "
                "its tombstone purged, or its id started again as another run); "
                "store.resume_run(run_id) gives a handle at what the log holds"
            )

    def _commit(self, row: NewRow, event: EventBody) -> int:
        """``Store._commit``, with the run checkpoint due at this row (``recording.checkpoint``)."""
        save = checkpoint.due(self._state, row.seq)
        if save is None:
            return self._store._commit(row, event)
        try:
            position = self._store._commit(row, event, save)
        except BaseException:
            save.undo(self._state)
            raise
        save.done(self._state)
        return position

    def _adopt_unacked(self, seq: int) -> bool:
        """Is the row at ``seq`` exactly the one whose commit raised earlier? Then fold it in.

        The digest covers the header (with its timestamp) and the body, so a match means
        the earlier call did commit; the current call is then checked again after it.
        """
        row, self._unacked = self._unacked, None
        if row is None or row.seq != seq:
            return False
        stored = self._store._log_row(row.run_id, seq)
        if stored is None or stored.digest != row.digest:
            return False
        self._state.apply_row(stored)
        return True

    def _adopt_own_commit(self, row: NewRow, event: EventBody, body: bytes) -> bool:
        """After a seq clash: is the row there this very call (same key, same body)?

        Then the history holds what we meant and nothing forks: fold it in. A recovery is
        the exception: it is the fencing token, so another handle's recovery (even an
        identical one) fences us; our own lost one is found by ``_adopt_unacked``.
        """
        if isinstance(event, Recovered):
            return False
        stored = self._store._log_row(row.run_id, row.seq)
        if stored is None or stored.key != row.key:
            return False
        if comparable(stored.event(), stored.body.encode()) != comparable(event, body):
            return False
        if self._store._log_row(row.run_id, row.seq + 1) is not None:
            return False  # others appended after it: our cached state cannot be trusted
        self._state.apply_row(stored)
        return True

    # -- internal hooks used by other capabilities -----------------------------------------

    def _append_event(
        self,
        event: EventBody,
        key: str,
        payloads: Sequence[tuple[str, bytes]] = (),
        check: Callable[[], Any] | None = None,
        placement: Placement | None = None,
    ) -> int:
        """Append a non-entry event (artifacts, manifests, observations, Forkline events).

        A refused call discards ``placement``'s staged file: nothing of it is placed.
        """
        try:
            return self._record(event, key, payloads, check or self._state.check_open, placement=placement)
        except BaseException:
            if placement is not None:
                placement.discard()
            raise

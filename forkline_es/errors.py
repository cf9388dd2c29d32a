"""The one exception hierarchy of forkline_es.

Every refusal carries a stable ``code`` (decisions.md, Refusals) and a message that
says what to do next. A refused call has written nothing. Driver errors (apsw) are
translated into these classes in ``forkline_es.log`` and nowhere else.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Conflict",
    "DeterminismViolation",
    "ForklineError",
    "InvalidRequest",
    "InvalidValue",
    "RecordError",
    "RunNotFound",
    "RunNotRetained",
    "StepNotFound",
    "StoreDamaged",
    "StoreError",
    "shown",
]


class ForklineError(Exception):
    """Root of every error forkline_es raises on purpose."""


class StoreError(ForklineError):
    """The store cannot be used or written: a file that is not SQLite, not ours or of a newer
    schema, a damaged file, or a disk or folder that refuses the write (its artifact files too).

    Nothing of the call is recorded: a file is refused before anything is written, and a
    failed write rolls back.
    """


class StoreDamaged(StoreError):
    """The store is damaged: SQLite found a malformed page or a header it cannot use, or a
    stored row no longer decodes (``undecodable``).

    ``verify`` reports it as a problem found (exit 1), not a refusal. A copy of the file
    from before the damage is what to restore; ``sqlite3 FILE 'PRAGMA integrity_check'``
    says where the damage is.
    """

    @classmethod
    def undecodable(cls, what: str, error: Exception) -> StoreDamaged:
        """A stored row or document whose text is not UTF-8, or not the JSON it was written
        as: changed after it was written, in a way SQLite does not see."""
        return cls(
            f"{what}: a stored row does not decode ({error}): the store is damaged; "
            "`forkline-es verify --all` says which run and seq, and a copy from before the "
            "damage is what to restore"
        )


class RecordError(ForklineError):
    """A refused call. ``code`` is the stable refusal code; nothing was written."""

    code: str = "refused"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class RunNotFound(RecordError, LookupError):
    """No evidence that the run ever existed in this store."""

    code = "run-not-found"


class RunNotRetained(RecordError, LookupError):
    """The run existed and was evicted; its eviction record is still kept."""

    code = "run-not-retained"


class StepNotFound(RecordError, LookupError):
    """A well-formed step path with no occurrence in an available run."""

    code = "step-not-found"


class InvalidRequest(RecordError, ValueError):
    """A malformed argument: a step path, status, outcome, dispatch or attempt."""

    code = "invalid-request"


class InvalidValue(RecordError, ValueError):
    """A value outside the typed domain; ``path`` names the offending element."""

    code = "invalid-value"

    def __init__(self, message: str, path: str = "$") -> None:
        self.reason = message
        self.path = path
        super().__init__(f"{message} at `{path}`")


class Conflict(RecordError):
    """An append that contradicts the log (stale generation, concluded run, ...)."""

    code = "conflict"


class DeterminismViolation(ForklineError):
    """A replaying executor made a call whose behaviour differs from the record it replays
    (any difference, with ``Replayer(..., strict=True)``).

    Not a refusal: nothing was asked of the log. ``kind`` is a divergence kind of
    ``forkline_es.replay.KINDS``; ``expected`` is the recorded entry (None past the end of
    the record), ``actual`` the entry the call would record (None when the replay ended
    early), ``changes`` a list of (JSON Pointer, expected, actual). Fix the executor so
    the call is deterministic, or record a new run instead of replaying this one.
    """

    def __init__(
        self,
        kind: str,
        path: str | None,
        seq: int | None,
        expected: Any,
        actual: Any,
        changes: list[tuple[str, Any, Any]],
        message: str,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.path = path
        self.seq = seq
        self.expected = expected
        self.actual = actual
        self.changes = changes


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for a refusal message: shortened, and never failing itself.

    A caller's bad argument may be an int too large for ``repr`` (Python's digit limit),
    a 20 MB string, or an object whose ``__repr__`` raises; the message must still be built.
    """
    if type(value) is int and value.bit_length() > 256:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except Exception:  # any failure of a foreign __repr__
        return f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."

"""Forkline's tool-call instrumentation: one ``tool_call`` event per invocation.

``ToolCallRecorder`` (a context manager) and ``record_tool_call`` (a decorator) time the
call and log request, response or error through any recorder with ``log_event``, so the
recorder's redaction applies. Outside ``allow_in_replay=True`` they refuse to run in replay
mode (``guard_live_call``).
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TypeVar, cast

from forkline_es.forkline.core._guards import guard_live_call

__all__ = ["ToolCallPayload", "ToolCallRecorder", "ToolCallTiming", "record_tool_call"]

F = TypeVar("F", bound=Callable[..., Any])


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class ToolCallTiming:
    started_at: str = ""
    ended_at: str = ""
    duration_ms: float = 0.0


@dataclass
class ToolCallPayload:
    """The ``tool_call`` payload: ``response``, ``error``, ``metadata`` only when set."""

    tool_name: str
    invocation_id: str
    request: dict[str, Any] = field(default_factory=dict)
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    timing: ToolCallTiming = field(default_factory=ToolCallTiming)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool_name": self.tool_name,
            "invocation_id": self.invocation_id,
            "request": self.request,
            "timing": {
                "started_at": self.timing.started_at,
                "ended_at": self.timing.ended_at,
                "duration_ms": self.timing.duration_ms,
            },
        }
        if self.response is not None:
            out["response"] = self.response
        if self.error is not None:
            out["error"] = self.error
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallPayload:
        timing = data.get("timing", {})
        return cls(
            tool_name=data.get("tool_name", ""),
            invocation_id=data.get("invocation_id", ""),
            request=data.get("request", {}),
            response=data.get("response"),
            error=data.get("error"),
            timing=ToolCallTiming(
                started_at=timing.get("started_at", ""),
                ended_at=timing.get("ended_at", ""),
                duration_ms=timing.get("duration_ms", 0.0),
            ),
            metadata=data.get("metadata", {}),
        )


class ToolCallRecorder:
    """``with ToolCallRecorder(recorder, run_id, "http.get") as tc: tc.set_request(...)``.

    The event is logged on exit, exception or not (the exception is recorded as ``error``
    when none was set, and is not suppressed).
    """

    def __init__(self, recorder: Any, run_id: str, tool_name: str, *, allow_in_replay: bool = False) -> None:
        self._recorder = recorder
        self._run_id = run_id
        self._tool_name = tool_name
        self._allow_in_replay = allow_in_replay
        self._invocation_id = uuid.uuid4().hex
        self._request: dict[str, Any] = {}
        self._response: dict[str, Any] | None = None
        self._error: dict[str, Any] | None = None
        self._metadata: dict[str, Any] = {}
        self._start = 0.0
        self._started_at = ""

    def set_request(self, request: dict[str, Any]) -> None:
        self._request = request

    def set_response(self, response: dict[str, Any]) -> None:
        self._response = response

    def set_error(self, error: dict[str, Any]) -> None:
        self._error = error

    def set_metadata(self, metadata: dict[str, Any]) -> None:
        self._metadata.update(metadata)

    def __enter__(self) -> ToolCallRecorder:
        if not self._allow_in_replay:
            guard_live_call(f"tool call: {self._tool_name}")
        self._started_at = _now()
        self._start = time.monotonic()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        duration_ms = round((time.monotonic() - self._start) * 1000, 3)
        if e is not None and self._error is None:
            self._error = {"type": type(e).__name__, "message": str(e)}
        payload = ToolCallPayload(
            tool_name=self._tool_name,
            invocation_id=self._invocation_id,
            request=self._request,
            response=self._response,
            error=self._error,
            timing=ToolCallTiming(started_at=self._started_at, ended_at=_now(), duration_ms=duration_ms),
            metadata=self._metadata,
        )
        self._recorder.log_event(self._run_id, "tool_call", payload.to_dict())


def record_tool_call(
    recorder: Any, run_id: str, tool_name: str, *, allow_in_replay: bool = False
) -> Callable[[F], F]:
    """Decorate a function so each call is one ``tool_call`` event.

    The request is the keyword arguments (``{"args": [...], "kwargs": {...}}`` when there are
    positional ones); the response the returned dict, or ``{"result": value}``.
    """

    def decorator(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with ToolCallRecorder(recorder, run_id, tool_name, allow_in_replay=allow_in_replay) as tc:
                tc.set_request({"args": list(args), "kwargs": kwargs} if args else kwargs)
                result = fn(*args, **kwargs)
                tc.set_response(result if isinstance(result, dict) else {"result": result})
                return result

        return cast(F, wrapper)

    return decorator

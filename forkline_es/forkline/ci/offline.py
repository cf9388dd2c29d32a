"""Offline mode: every network connection attempt raises ``ForklineOfflineError`` at once.

It patches ``socket`` (connect, create_connection, getaddrinfo) process-wide, which also
stops urllib, requests and httpx, since they go through it. Failing closed and at once gives
the same error on every machine, where a blocked network would hang or time out.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

__all__ = [
    "ForklineOfflineError",
    "disable_offline_mode",
    "enable_offline_mode",
    "is_offline_mode",
    "offline_context",
]


class ForklineOfflineError(Exception):
    """Network access was attempted in offline mode."""

    def __init__(self, operation: str = "network access") -> None:
        super().__init__(
            f"Network access blocked: {operation}. Forkline is running in offline mode "
            "(FORKLINE_OFFLINE=1). All network calls are forbidden to ensure deterministic replay."
        )
        self.operation = operation


_ORIGINAL: Final = (socket.socket.connect, socket.create_connection, socket.getaddrinfo)
_active = False


def _blocked(name: str, first: int) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        target = args[first] if len(args) > first else "unknown"
        raise ForklineOfflineError(f"{name}({target})")

    return refuse


def enable_offline_mode() -> None:
    global _active
    if not _active:
        socket.socket.connect = _blocked("socket.connect", 1)  # type: ignore[method-assign]
        socket.create_connection = _blocked("socket.create_connection", 0)
        socket.getaddrinfo = _blocked("socket.getaddrinfo", 0)
        _active = True


def disable_offline_mode() -> None:
    global _active
    if _active:
        socket.socket.connect, socket.create_connection, socket.getaddrinfo = _ORIGINAL  # type: ignore[method-assign]
        _active = False


def is_offline_mode() -> bool:
    return _active


@contextmanager
def offline_context() -> Iterator[None]:
    """Offline for the block; the network comes back after it."""
    enable_offline_mode()
    try:
        yield
    finally:
        disable_offline_mode()

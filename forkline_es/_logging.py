"""structlog on top of the stdlib ``forkline_es`` logger: structured, quiet by default.

Nothing is printed until the application enables the ``forkline_es`` logger (for example
``logging.basicConfig(level=logging.INFO)``); events are rendered as JSON key/values.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_logger"]


class _Lazy:
    """A logger that imports structlog (about 40 ms with rich) on its first call, not at import.

    Modules create their loggers at import time; most processes never log anything, so
    ``import forkline_es`` must not pay for structlog or the stdlib's logging (issue 22).
    """

    __slots__ = ("_name", "_real")

    def __init__(self, name: str) -> None:
        self._name = name
        self._real: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._real is None:
            self._real = _wrap(self._name)
        return getattr(self._real, method)


def _wrap(name: str) -> Any:
    import logging  # with traceback and linecache, about 5 ms: loaded by the first log call

    import structlog

    root = logging.getLogger("forkline_es")
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())  # quiet unless the application enables it

    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_logger_name,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(sort_keys=True),
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def get_logger(name: str) -> Any:
    """A structlog logger bound to the stdlib logger ``name`` (under ``forkline_es``), built lazily."""
    return _Lazy(name)

"""structlog on top of the stdlib ``forkline_es`` logger: structured, quiet by default.

Nothing is printed until the application enables the ``forkline_es`` logger (for example
``logging.basicConfig(level=logging.INFO)``); events are rendered as JSON key/values.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

__all__ = ["get_logger"]

logging.getLogger("forkline_es").addHandler(logging.NullHandler())

_PROCESSORS: list[Any] = [
    structlog.stdlib.filter_by_level,
    structlog.stdlib.add_logger_name,
    structlog.stdlib.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.JSONRenderer(sort_keys=True),
]


def get_logger(name: str) -> Any:
    """A structlog logger bound to the stdlib logger ``name`` (under ``forkline_es``)."""
    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=_PROCESSORS,
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )

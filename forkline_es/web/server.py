"""Running the application: open the store read-only, warn when exposed, hand it to uvicorn."""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Final

from forkline_es._logging import get_logger
from forkline_es.store import Store
from forkline_es.web.app import create_app

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "LOOPBACK_NAMES", "check_listenable", "exposure_warning", "serve"]

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765

#: The Host names a server bound to a loopback address answers.
LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "::1", "[::1]")

_log = get_logger("forkline_es.web")


def exposure_warning(host: str) -> str | None:
    """What to say when ``host`` is reachable from other machines (None for loopback): the
    pages show every recorded payload, and there is no login."""
    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass  # a host name: assume it may be reachable from elsewhere
    return (
        f"serving on {host}, not the loopback address: anyone who can reach it reads every run "
        "and payload in the store (there is no login); bind 127.0.0.1 unless that is intended"
    )


def check_listenable(host: str, port: int) -> None:
    """Raise OSError when ``host:port`` cannot be listened on (in use, not an address of this
    machine): uvicorn would log it and exit on its own, with no way for the caller to say so."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))


def serve(store: Store, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Serve ``store`` (opened read-only by the caller) until interrupted; OSError when the
    address cannot be listened on."""
    import uvicorn

    check_listenable(host, port)
    warning = exposure_warning(host)
    if warning is not None:
        _log.warning("serve.exposed", host=host, port=port)
        print(f"warning: {warning}", file=sys.stderr)
    # On loopback only the loopback names are answered (no DNS rebinding); elsewhere the
    # names the server is reached by are not known here.
    hosts = None if warning is not None else [*LOOPBACK_NAMES, host]
    _log.info("serve.start", host=host, port=port, db=store.path)
    app = create_app(store, allowed_hosts=hosts)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)

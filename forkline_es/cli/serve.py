"""`forkline-es serve`: the read-only web view of a store (forkline_es.web, the ``ui`` extra)."""

from __future__ import annotations

import click

from forkline_es.cli._common import db_option, fail, open_read_only

__all__ = ["COMMANDS", "url_of"]


@click.command()
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (warns when not loopback)."
)
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to bind.")
@db_option
def serve(host: str, port: int, db: str) -> None:
    """Serve a read-only web view of the store: runs, timelines, steps, diffs and a JSON API.

    Opens the database read-only and never writes. Binds 127.0.0.1 unless --host says
    otherwise (there is no login: anyone who reaches the port reads every payload). Needs
    the ui extra: pip install 'forkline-es[ui]'. See docs/ui.md.
    """
    try:
        from forkline_es.web import server
    except ImportError as e:
        fail(f"serve needs the ui extra ({e.name} is missing): pip install 'forkline-es[ui]'")
    with open_read_only(db) as store:
        try:
            server.check_listenable(host, port)
        except OSError as e:
            fail(f"cannot listen on {host}:{port}: {e.strerror or e}; choose another --port or --host")
        click.echo(f"serving {db} read-only at {url_of(host, port)} (Ctrl-C stops)", err=True)
        server.serve(store, host, port)


def url_of(host: str, port: int) -> str:
    """The address a browser opens: an IPv6 address is bracketed in a URL."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


COMMANDS: list[click.Command] = [serve]

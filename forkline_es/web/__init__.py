"""``forkline-es serve``: a read-only web view of a store (pages and a JSON API).

Needs the ``ui`` extra: ``pip install 'forkline-es[ui]'``. ``create_app(store)`` builds the
ASGI application; ``serve(db, host, port)`` opens the store read-only and runs it.
"""

from forkline_es.web.app import create_app
from forkline_es.web.server import serve

__all__ = ["create_app", "serve"]

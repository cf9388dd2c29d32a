"""The web view on each backend: the demo recorded into SQLite and into PostgreSQL serves
the same pages, and the API gives back each backend's own documents."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

import forkline_es as fe
from forkline_es.demo import demo_ids, record_demo
from forkline_es.web import create_app


def test_pages_and_api_on_every_backend(backend_store: fe.Store) -> None:
    ids, _ = demo_ids(backend_store)
    record_demo(backend_store, ids)
    with TestClient(create_app(backend_store)) as client:
        listing = client.get("/runs?status=held")
        assert listing.status_code == 200
        assert re.findall(r'<tr data-run="([^"]*)"', listing.text) == ["demo-held"]
        run = client.get("/runs/demo-first").text
        assert 'data-recovery="16"' in run and 'data-state="withheld"' in run
        assert client.get("/runs/demo-first/steps/fetch/1").status_code == 200
        assert client.get("/api/runs/demo-first").json() == backend_store.get_run_record("demo-first")
        diff = client.get("/api/diff/demo-first/demo-replay").json()
        assert diff["first"]["path"] == "summarize"
        assert client.get("/api/runs/nope").json()["error"]["code"] == "run-not-found"

"""Any valid history renders: the pages of every run a ``HistoryMachine`` records answer 200,
draw every step inside the picture, list every entry once and in order, and the API gives
back the document. Hypothesis explores crashes, recoveries, retries, children and holds."""

from __future__ import annotations

import re

from hypothesis import settings
from hypothesis.stateful import invariant
from starlette.testclient import TestClient

from forkline_es.testing.histories import HistoryMachine
from forkline_es.web import create_app
from forkline_es.web.views import LABEL, WIDTH, timeline_of


class PagesMachine(HistoryMachine):
    @invariant()
    def every_run_renders(self) -> None:
        client = TestClient(create_app(self.store))
        for run_id in self.handles:
            doc = self.store.get_run_record(run_id)
            page = client.get(f"/runs/{run_id}")
            assert page.status_code == 200
            seqs = [int(s) for s in re.findall(r'data-seq="(\d+)"', page.text)]
            assert seqs == [e["seq"] for e in doc["entries"]]
            picture = timeline_of(doc)
            assert set(picture.paths) == set(doc["steps"]) | {
                e["path"] for e in doc["entries"] if "path" in e
            } | {e["step"]["path"] for e in doc["entries"] if e["kind"] == "step"}
            for bar in picture.bars:
                assert LABEL <= bar.x <= WIDTH and bar.w > 0 and bar.x + bar.w <= WIDTH + 1e-6
                for mark in bar.marks:
                    assert LABEL <= mark.x <= WIDTH and mark.w > 0
            for path in doc["steps"]:
                assert client.get(f"/runs/{run_id}/steps/{path}").status_code == 200
            assert client.get(f"/api/runs/{run_id}").json() == doc


TestPages = PagesMachine.TestCase
TestPages.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)

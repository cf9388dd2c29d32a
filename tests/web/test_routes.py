"""Every route of ``forkline-es serve`` through Starlette's TestClient: statuses, refusal codes,
the JSON API against the Python API it mirrors, headers, and that nothing is written."""

from __future__ import annotations

import hashlib
import html
import re
import socket
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import forkline_es as fe
from forkline_es.cli.main import main
from forkline_es.web import create_app, views
from forkline_es.web.app import CSP
from forkline_es.web.server import exposure_warning
from tests.web.conftest import HOSTILE, HOSTILE_RUN

PAGES = [
    "/runs",
    "/runs?status=held",
    "/runs/demo-first",
    "/runs/demo-first/steps/fetch/1",
    "/diff/demo-first/demo-replay",
    "/api/runs",
    "/api/runs/demo-first",
    "/api/runs/demo-first/steps/summarize",
    "/api/runs/demo-first/verify",
    "/api/diff/demo-first/demo-replay",
    "/static/app.css",
    "/static/app.js",
]


def _ids(page: str) -> list[str]:
    """Run ids of the listing's rows, in order."""
    return [html.unescape(i) for i in re.findall(r'<tr data-run="([^"]*)"', page)]


@pytest.mark.parametrize("url", PAGES)
def test_every_route_answers_with_the_security_headers(demo_client: TestClient, url: str) -> None:
    response = demo_client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-security-policy"] == CSP
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
    assert response.headers["x-content-type-options"] == "nosniff"


def test_the_root_redirects_to_the_listing(demo_client: TestClient) -> None:
    response = demo_client.get("/", follow_redirects=False)
    assert response.status_code == 307 and response.headers["location"] == "/runs"


def test_listing_is_newest_first_with_status_badges(demo_client: TestClient, demo_db: Path) -> None:
    page = demo_client.get("/runs").text
    with fe.Store.open(demo_db, read_only=True) as store:
        expected = [s["id"] for s in store.list_runs(limit=50)]
    assert _ids(page) == expected
    assert '<span class="badge warn">held</span>' in page
    assert '<span class="badge ok">succeeded</span>' in page
    # a child run links to its parent
    assert re.search(r'<a class="run-id" href="/runs/demo-first">demo-first</a>', page)


def test_listing_filters_by_status_workflow_and_parent(demo_client: TestClient, demo_db: Path) -> None:
    assert _ids(demo_client.get("/runs?status=held").text) == ["demo-held"]
    with fe.Store.open(demo_db, read_only=True) as store:
        children = [s["id"] for s in store.list_runs(parent="demo-first")]
        translate = [s["id"] for s in store.list_runs("demo/translate")]
    assert children and _ids(demo_client.get("/runs?parent=demo-first").text) == children
    assert _ids(demo_client.get("/runs?workflow=demo/translate").text) == translate
    assert _ids(demo_client.get("/runs?since=1d&status=succeeded&status=held").text)
    assert _ids(demo_client.get("/runs?label=nobody%3Dhere").text) == []


def test_listing_pages_continue_with_before(demo_client: TestClient, demo_db: Path) -> None:
    with fe.Store.open(demo_db, read_only=True) as store:
        everything = [s["id"] for s in store.list_runs()]
    seen: list[str] = []
    url: str | None = "/runs?limit=3"
    while url is not None:
        page = demo_client.get(url).text
        seen += _ids(page)
        found = re.search(r'<a class="next" href="([^"]*)"', page)
        url = html.unescape(found.group(1)) if found else None
    assert seen == everything and len(everything) > 3


@pytest.mark.parametrize(
    "query",
    [
        "status=bogus",
        "since=yesterday",
        "label=nolabel",
        "limit=0",
        "limit=x",
        "limit=%C2%B2",  # "²": a digit to str.isdigit, not to int()
        "limit=%EF%BC%91",  # a full-width "1"
        "workflow=%00",
        "&".join(f"label=k{i}=v" for i in range(1_000)),  # past the listing's label filters
        "before=no-such-run",
    ],
    ids=lambda q: q[:30],
)
def test_bad_filters_are_refused_with_their_code(demo_client: TestClient, query: str) -> None:
    page = demo_client.get(f"/runs?{query}")
    api = demo_client.get(f"/api/runs?{query}")
    code = "run-not-found" if query.startswith("before") else "invalid-request"
    assert page.status_code == api.status_code == (404 if code == "run-not-found" else 400)
    assert api.json()["error"]["code"] == code and page.headers["x-forkline-code"] == code
    assert code in page.text


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("/runs/no-such-run", "run-not-found"),
        ("/runs/no-such-run/steps/fetch", "run-not-found"),
        ("/runs/demo-first/steps/no-such-step", "step-not-found"),
        ("/runs/demo-first/steps/a//b", "invalid-request"),
        ("/diff/demo-first/no-such-run", "run-not-found"),
        ("/api/runs/no-such-run", "run-not-found"),
        ("/api/runs/demo-first/steps/no-such-step", "step-not-found"),
        ("/api/runs/no-such-run/verify", "run-not-found"),
        ("/api/diff/no-such-run/demo-first", "run-not-found"),
    ],
)
def test_unknown_runs_and_steps_are_404_with_the_refusal_code(
    demo_client: TestClient, url: str, code: str
) -> None:
    response = demo_client.get(url)
    assert response.status_code == (400 if code == "invalid-request" else 404)
    assert response.headers["x-forkline-code"] == code
    if url.startswith("/api/"):
        assert response.json()["error"]["code"] == code
        assert response.json()["error"]["message"]
    else:
        assert f"data-code>{code}</span>" in response.text


def test_unknown_pages_and_writes_are_refused(demo_client: TestClient) -> None:
    for url in ("/nothing", "/api/nothing"):
        response = demo_client.get(url)
        assert response.status_code == 404 and response.headers["x-forkline-code"] == "not-found"
    assert demo_client.get("/api/nothing").json()["error"]["code"] == "not-found"
    for url in ("/runs", "/api/runs"):
        for method in ("post", "put", "delete"):
            response = getattr(demo_client, method)(url)
            assert response.status_code == 405 and response.headers["x-forkline-code"] == "read-only"
            assert response.headers["allow"] == "GET, HEAD"


def test_a_fault_of_ours_is_500_with_the_security_headers(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Starlette answers an unhandled exception outside every middleware: the handler adds
    the headers itself."""
    with fe.Store.open(demo_db, read_only=True) as store:
        monkeypatch.setattr(store, "list_runs", lambda *a, **k: 1 / 0)
        client = TestClient(create_app(store), raise_server_exceptions=False)
        response = client.get("/api/runs")
    assert response.status_code == 500 and response.headers["x-forkline-code"] == "internal-error"
    assert response.headers["content-security-policy"] == CSP
    assert "ZeroDivisionError" not in response.text


def test_run_page_draws_the_timeline_recovery_and_children(demo_client: TestClient, demo_db: Path) -> None:
    page = demo_client.get("/runs/demo-first").text
    with fe.Store.open(demo_db, read_only=True) as store:
        doc = store.get_run_record("demo-first")
    (recovery,) = [e for e in doc["entries"] if e["kind"] == "recovery"]
    assert f'data-recovery="{recovery["seq"]}"' in page
    # the superseded begin of summarize is a grey bar; its retry a bar of generation 1
    assert re.search(r'class="bar gen0 superseded"\s+data-path="summarize" data-superseded="true"', page)
    assert re.search(r'class="bar gen1 outcome-succeeded"\s+data-path="summarize"', page)
    assert 'data-dispatch="failed"' in page and 'data-dispatch="ambiguous"' in page
    child = next(e["child"] for e in doc["entries"] if e["kind"] == "child")
    assert f'<a href="/runs/{child}" class="child-link">' in page
    assert 'id="verify" data-verify="/api/runs/demo-first/verify"' in page  # app.js fills the badge
    # entries in order, superseded ones marked
    seqs = [int(s) for s in re.findall(r'data-seq="(\d+)"', page)]
    assert seqs == [e["seq"] for e in doc["entries"]]
    for seq in recovery["supersedes"]:
        assert re.search(rf'class="kind-\w+ superseded" data-seq="{seq}"', page)


def test_run_page_shows_payload_states(demo_client: TestClient) -> None:
    page = demo_client.get("/runs/demo-first").text
    assert 'data-state="withheld"' in page  # notify's token never reached the disk
    assert '"topic": "Recording durable runs"' in html.unescape(page)
    assert "xoxb-not-a-real-token" not in page


def test_step_page_lists_every_attempt(demo_client: TestClient) -> None:
    page = demo_client.get("/runs/demo-first/steps/fetch/1").text
    attempts = re.findall(r'data-attempt="(\d+)" data-generation="(\d+)"', page)
    assert attempts == [("1", "0"), ("2", "0")]
    assert '<span class="code">http-503</span>' in page
    assert "the page at https://example.org/flaky-page" in page
    summarize = demo_client.get("/runs/demo-first/steps/summarize").text
    assert "superseded by entry" in summarize


def test_diff_page_shows_the_first_divergence(demo_client: TestClient) -> None:
    page = demo_client.get("/diff/demo-first/demo-replay").text
    assert 'id="verdict">diverged' in page
    assert re.search(r'class="divergent-step" href="/runs/demo-replay/steps/summarize">summarize<', page)
    assert "demo-model-1" in page and "demo-model-2" in page
    assert '<tr class="divergent">' in page
    same = demo_client.get("/diff/demo-first/demo-first").text
    assert 'id="verdict">match' in same


def test_api_mirrors_the_python_api(demo_client: TestClient, demo_db: Path) -> None:
    with fe.Store.open(demo_db, read_only=True) as store:
        listed = store.list_runs(status="succeeded", limit=2)
        after = store.list_runs(status="succeeded", limit=2, before=listed[-1]["id"])
        doc = store.get_run_record("demo-first")
        step = store.get_step_record("demo-first", "summarize")
        diff = fe.diff_runs(store, "demo-first", "demo-replay").to_json(all=True)
        strict = fe.diff_runs(store, "demo-first", "demo-replay", strict=True).to_json(all=True)
        verify = store.verify_run("demo-first").to_dict()
    page = demo_client.get("/api/runs?status=succeeded&limit=2").json()
    assert page == {"runs": listed, "next_before": listed[-1]["id"]}
    following = f"/api/runs?status=succeeded&limit=2&before={listed[-1]['id']}"
    assert demo_client.get(following).json()["runs"] == after
    assert demo_client.get("/api/runs/demo-first").json() == doc
    assert demo_client.get("/api/runs/demo-f").json() == doc  # a unique prefix names its run
    assert demo_client.get("/api/runs/demo-first?plain=1").json() == fe.plain(doc)
    assert demo_client.get("/api/runs/demo-first/steps/summarize").json() == step
    assert demo_client.get("/api/runs/demo-first/steps/summarize?plain=1").json() == fe.plain(step)
    assert demo_client.get("/api/diff/demo-first/demo-replay").json() == diff
    assert demo_client.get("/api/diff/demo-first/demo-replay?strict=1").json() == strict
    assert demo_client.get("/api/runs/demo-first/verify").json() == verify
    last = demo_client.get("/api/runs?status=held").json()
    assert last["next_before"] is None and [r["id"] for r in last["runs"]] == ["demo-held"]


def _digest(db: Path) -> dict[str, str]:
    """Every file beside and under the database (WAL, artifacts), by content and mtime."""
    return {
        str(p): f"{hashlib.sha256(p.read_bytes()).hexdigest()} {p.stat().st_mtime_ns}"
        for p in sorted(db.parent.rglob("*"))
        if p.is_file()
    }


def test_serving_writes_nothing(demo_client: TestClient, demo_db: Path) -> None:
    before = _digest(demo_db)
    for url in PAGES:
        demo_client.get(url)
    assert _digest(demo_db) == before


def test_hostile_text_is_escaped_on_every_page(hostile_client: TestClient) -> None:
    urls = [
        "/runs",
        f"/runs/{HOSTILE_RUN}",
        f"/runs/{HOSTILE_RUN}/steps/answer",
        f"/diff/{HOSTILE_RUN}/{HOSTILE_RUN}",
        views.run_url(HOSTILE),
        views.diff_url(HOSTILE_RUN, HOSTILE),
    ]
    for url in urls:
        page = hostile_client.get(url).text
        assert HOSTILE not in page and "<img src=x" not in page, url
        assert "&lt;script&gt;alert" in page and HOSTILE in html.unescape(page), url
        # the only scripts are the server's own file
        assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/app.js" defer>']


def test_exposure_warning_only_off_loopback() -> None:
    assert exposure_warning("127.0.0.1") is None
    assert exposure_warning("::1") is None
    assert exposure_warning("localhost") is None
    for host in ("0.0.0.0", "192.168.1.20", "example.org"):
        warning = exposure_warning(host)
        assert warning is not None and host in warning and "no login" in warning


def test_an_evicted_run_is_410_run_not_retained(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        store.start_run("w", run_id="gone").conclude("succeeded")
        store.evict_run("gone", "retention test")
    with fe.Store.open(db, read_only=True) as store, TestClient(create_app(store)) as client:
        for url in ("/runs/gone", "/api/runs/gone", "/runs/gone/steps/a"):
            response = client.get(url)
            assert response.status_code == 410, url
            assert response.headers["x-forkline-code"] == "run-not-retained"


def test_an_ambiguous_prefix_is_invalid_request(demo_client: TestClient) -> None:
    response = demo_client.get("/api/runs/demo-")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid-request"
    assert "ambiguous" in response.json()["error"]["message"]


def test_serve_refuses_a_missing_database_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    result = CliRunner().invoke(main, ["serve", "--db", str(missing)])
    assert result.exit_code == 2 and "forkline-es demo" in result.output
    assert not missing.exists()


def test_payload_states_are_shown_as_such(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        run = store.start_run("w", run_id="states", inputs={"a": 1})
        run.begin_step("a", arguments=fe.NOT_RECORDED)
        run.end_step("a", "succeeded", result={"kept": "until retention"})
        run.begin_step("b", arguments=fe.Sensitive({"token": "secret-value"}))
        run.end_step("b", "succeeded")
        run.conclude("succeeded")
        store.apply_retention(
            fe.RetentionPolicy(drop_payloads_after=timedelta(0), payload_classes=["results"])
        )
    with fe.Store.open(db, read_only=True) as store, TestClient(create_app(store)) as client:
        page = client.get("/runs/states").text
        step = client.get("/runs/states/steps/a").text
    for state in ("not-recorded", "removed", "withheld"):
        assert f'data-state="{state}"' in page, state
    assert 'data-state="not-recorded"' in step and 'data-state="removed"' in step
    assert "until retention" not in page and "secret-value" not in page
    assert '"a": 1' in html.unescape(page)  # inputs were not in the removed class


def test_serve_refuses_a_port_in_use(demo_db: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", "--db", str(demo_db), "--port", str(port)])
    assert result.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.output


@pytest.mark.parametrize("run_id", ["tenant/42", "..", "a b?c#d&e"])
def test_every_run_id_is_reachable_by_its_links(tmp_path: Path, run_id: str) -> None:
    """Ids with ``/`` (or ``..``) cannot be a path segment: their links use the query form."""
    db = tmp_path / "runs.db"
    child = f"{run_id}/child"
    with fe.Store.open(db) as store:
        run = store.start_run("w", run_id=run_id)
        run.begin_step("s/0", arguments={"x": 1})
        run.child("s/0", child)
        store.start_run("w/child", run_id=child, parent=run_id).conclude("succeeded")
        run.end_step("s/0", "succeeded")
        run.conclude("succeeded")
    with fe.Store.open(db, read_only=True) as store, TestClient(create_app(store)) as client:
        listing = client.get("/runs").text
        links = {html.unescape(h) for h in re.findall(r'<a class="run-id" href="([^"]*)"', listing)}
        assert len(links) == 2
        for link in links:
            page = client.get(link)
            assert page.status_code == 200, link
        run_page = client.get(views.run_url(run_id)).text
        assert f'<h1>Run <span class="run-id">{html.escape(run_id, quote=False)}</span>' in run_page
        step_links = {html.unescape(h) for h in re.findall(r'href="([^"]*steps[^"]*)"', run_page)}
        assert step_links == {views.run_url(run_id, "s/0")}
        assert client.get(views.run_url(run_id, "s/0")).status_code == 200
        assert client.get(views.run_url(child)).status_code == 200
        assert client.get(views.run_url(run_id, api=True)).json()["run"]["id"] == run_id
        assert client.get(views.run_url(run_id, "s/0", api=True)).json()["path"] == "s/0"
        assert client.get(views.run_url(run_id, api=True, verify=True)).json()["ok"] is True
        assert client.get(views.diff_url(run_id, run_id)).status_code == 200
        assert client.get(views.diff_url(run_id, run_id, api=True)).json()["match"] is True


def test_query_form_without_an_id_is_invalid_request(demo_client: TestClient) -> None:
    response = demo_client.get("/api/run")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid-request"
    assert demo_client.get("/api/run?id=demo-first").json()["run"]["id"] == "demo-first"


def test_the_filter_form_keeps_every_label_filter_and_offers_one_more(demo_client: TestClient) -> None:
    page = demo_client.get("/runs?label=team%3Da&label=tier%3Db&label=").text
    inputs = re.findall(r'<input name="label" value="([^"]*)"', page)
    assert inputs == ["team=a", "tier=b", ""]


def test_the_address_serve_prints_opens_in_a_browser() -> None:
    from forkline_es.cli.serve import url_of

    assert url_of("127.0.0.1", 8765) == "http://127.0.0.1:8765/"
    assert url_of("::1", 8765) == "http://[::1]:8765/"
    assert url_of("localhost", 80) == "http://localhost:80/"

"""The pages in a real browser: Playwright drives Debian's Chromium at /usr/bin/chromium against
``forkline-es serve`` running in its own process. A missing browser fails these tests.

Screenshots go to each test's tmp dir; with ``FORKLINE_ES_SCREENSHOTS=docs/ui`` they are also
copied there (how docs/ui/*.png were made).
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, expect, sync_playwright

from tests.web.conftest import HOSTILE, HOSTILE_RUN
from tests.web.serving import CHROMIUM, served

#: The machine running the tests may be busy: wait longer than Playwright's 5 s default.
expect.set_options(timeout=20_000)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"no browser at {CHROMIUM}: apt-get install -y chromium (see .ci/run)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def demo_url(demo_db: Path) -> Iterator[str]:
    with served(demo_db) as url:
        yield url


class Watched:
    """A page whose dialogs, console errors and uncaught exceptions are collected."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    yield Watched(context.new_page())
    context.close()


def _shot(page: Page, tmp_path: Path, name: str, **options: object) -> Path:
    """A screenshot as a test artifact, and into $FORKLINE_ES_SCREENSHOTS when set."""
    target = tmp_path / f"{name}.png"
    page.screenshot(path=str(target), **options)  # type: ignore[arg-type]
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    docs = os.environ.get("FORKLINE_ES_SCREENSHOTS")
    if docs:
        Path(docs).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, Path(docs) / target.name)
    return target


def test_an_operator_walks_the_demo(watched: Watched, demo_url: str, tmp_path: Path) -> None:
    page = watched.page
    # the runs, newest first; a status chosen applies at once (app.js submits the form)
    page.goto(f"{demo_url}/runs")
    expect(page.locator("tr[data-run='demo-first']")).to_be_visible()
    _shot(page, tmp_path, "runs")
    page.select_option("select[name=status]", "held")
    page.wait_for_url("**/runs?status=held*")
    expect(page.locator("tbody tr[data-run]")).to_have_count(1)
    expect(page.locator("tr[data-run='demo-held'] .badge")).to_have_text("held")

    # a run: the recovery is a rule on the timeline, the superseded step greyed
    page.goto(f"{demo_url}/runs")
    page.click("a.run-id >> text=demo-first")
    page.wait_for_url("**/runs/demo-first")
    recovery = page.locator("svg#timeline line.recovery")
    expect(recovery).to_have_count(1)
    expect(recovery.locator("title")).to_contain_text("supersedes 14, 15")
    expect(page.locator("svg#timeline rect.bar.superseded[data-path='summarize']")).to_have_count(1)
    expect(page.locator("svg#timeline rect.attempt[data-dispatch='failed']")).to_have_count(1)
    expect(page.locator("#verify")).to_have_text("verify: ok")
    _shot(page, tmp_path, "run")
    page.locator("figure.timeline").screenshot(path=str(tmp_path / "timeline.png"))

    # a step: every attempt, with its result
    page.click("table.steps a >> text=fetch/1")
    page.wait_for_url("**/runs/demo-first/steps/fetch/1")
    cards = page.locator("section.attempt-card")
    expect(cards).to_have_count(2)
    expect(cards.nth(0).locator(".code")).to_have_text("http-503")
    expect(cards.nth(1).locator(".result pre.json")).to_contain_text(
        "the page at https://example.org/flaky-page"
    )
    _shot(page, tmp_path, "step")

    # the replay: its diff with the first run shows where it diverged
    page.goto(f"{demo_url}/runs/demo-replay")
    page.click("text=diff with it")
    page.wait_for_url("**/diff/demo-first/demo-replay")
    expect(page.locator("#verdict")).to_have_text("diverged")
    expect(page.locator("a.divergent-step")).to_have_text("summarize")
    divergent = page.locator("table.aligned tr.divergent")
    expect(divergent.first).to_contain_text("summarize")
    expect(divergent.first.locator("td").first).to_have_css("background-color", "rgb(254, 226, 226)")
    expect(page.locator("table.changes td.new")).to_contain_text("demo-model-2")
    _shot(page, tmp_path, "diff", full_page=True)

    # nothing the pages do is blocked by their own Content-Security-Policy
    assert watched.errors == [] and watched.dialogs == []


def test_hostile_text_renders_as_text_and_runs_nothing(
    watched: Watched, hostile_db: Path, tmp_path: Path
) -> None:
    page = watched.page
    with served(hostile_db) as url:
        for path in ("/runs", f"/runs/{HOSTILE_RUN}", f"/runs/{HOSTILE_RUN}/steps/answer"):
            page.goto(url + path)
            page.wait_for_load_state("load")
            expect(page.locator("main")).to_contain_text(HOSTILE)  # shown, as text
            assert page.locator("main script, main img").count() == 0
            assert page.evaluate("typeof window.alert") == "function"
        page.goto(f"{url}/runs/{HOSTILE_RUN}")
        page.click("a.child-link")  # the child run's id is markup: its page opens as text
        expect(page.locator("h1 .run-id")).to_have_text(HOSTILE)
        assert page.locator("main script, main img").count() == 0
        page.goto(f"{url}/runs")
        expect(page.locator(f"tr[data-run='{HOSTILE_RUN}'] td").nth(1)).to_have_text(HOSTILE)
        _shot(page, tmp_path, "hostile")
    assert watched.dialogs == [], watched.dialogs
    assert watched.errors == [], watched.errors


def test_a_right_to_left_override_in_recorded_text_reorders_only_that_text(
    watched: Watched, tmp_path: Path
) -> None:
    """U+202E in a run id would turn the rest of its line around, badges and all, unless the
    id's element isolates it: the status badge stays after the id, on the same line."""
    import forkline_es as fe

    db = tmp_path / "rtl.db"
    run_id = "h-rtl\u202edcba"
    with fe.Store.open(db) as store:
        store.start_run("wf\u202eflow", run_id=run_id).conclude("failed", code="e\u202ex")
    page = watched.page
    with served(db) as url:
        page.goto(f"{url}/runs/{run_id}")
        page.wait_for_load_state("load")
        heading, badge = page.locator("h1 .run-id"), page.locator("h1 .badge").first
        expect(heading).to_have_text(run_id)
        box, after = heading.bounding_box(), badge.bounding_box()
        assert box is not None and after is not None
        assert after["x"] >= box["x"] + box["width"] - 1, (box, after)  # the badge follows the id
        _shot(page, tmp_path, "rtl")
    assert watched.errors == [], watched.errors


def test_serve_on_loopback_answers_only_loopback_names(demo_db: Path) -> None:
    """A page elsewhere cannot read the store through DNS rebinding: its Host is refused."""
    with served(demo_db) as url:
        ok = urllib.request.Request(f"{url}/api/runs", headers={"Host": "localhost"})
        with urllib.request.urlopen(ok, timeout=5) as response:
            assert response.status == 200
        evil = urllib.request.Request(f"{url}/api/runs", headers={"Host": "attacker.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(evil, timeout=5)
        assert refused.value.code == 400
        assert refused.value.headers["Content-Security-Policy"]


def test_serve_warns_when_bound_beyond_loopback(demo_db: Path) -> None:
    lines: list[str] = []
    with served(demo_db, host="0.0.0.0", stderr=lines):
        pass
    assert any(line.startswith("warning: serving on 0.0.0.0") for line in lines), lines
    quiet: list[str] = []
    with served(demo_db, stderr=quiet):
        pass
    assert not any("warning" in line for line in quiet), quiet

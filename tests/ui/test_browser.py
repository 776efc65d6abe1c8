"""The inspector in a real headless browser: Playwright driving the operating system's Chromium
against the real server (uvicorn on a free port). In CI the browser must be there: the test fails
rather than skips without it, like the Redis tests. Leaves a screenshot in ``docs/ui.png``."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import NS, Recorded

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "ui.png"


def _require(what: str, ok: bool) -> None:
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required in CI (.ci/run installs Chromium from the OS packages)")
    pytest.skip(f"{what} is not available")


@pytest.fixture(scope="module")
def chromium() -> str:
    path = os.environ.get("HINDSIGHT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    _require(f"Chromium ({path})", Path(path).exists())
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _require("playwright (the dev extra)", False)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(recorded: Recorded) -> Iterator[str]:
    """The real inspector, served by uvicorn in a thread, as ``hindsight ui`` serves it."""
    import uvicorn

    from hindsight_core.ui import create_app

    port = _free_port()
    config = uvicorn.Config(create_app(recorded.engine), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the inspector did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


def test_inspector_in_a_real_browser(chromium: str, server: str, recorded: Recorded) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            # the namespaces page lists the recorded namespace
            page.goto(server + "/")
            page.click(f"#namespaces a:text-is('{NS}')")
            # a search finds a recorded memory
            page.fill("#search input[name=q]", "peanuts")
            page.click("#search button")
            rows = page.locator("#memories tr")
            assert "allergic to peanuts" in rows.nth(1).inner_text()
            assert "Hangzhou" not in page.inner_text("#memories")
            # a superseded fact shows its successor, linked
            page.fill("#search input[name=q]", "Hangzhou")
            page.select_option("#search select[name=status]", "superseded")
            page.click("#search button")
            page.click(f"#memories a[href='/memory/{recorded.old_city.id}']")
            assert page.inner_text("#status") == "superseded"
            successor = page.locator("#successor a")
            assert "Shanghai" in successor.inner_text()
            successor.click()
            assert "Shanghai" in page.inner_text("#content")
            assert "Hangzhou" in page.inner_text("#chain")
            # the recall playground shows the injected text and each stage
            page.goto(server + "/recall?ns=" + NS)
            page.fill("#playground input[name=q]", "Do I have any food allergies?")
            page.click("#playground button")
            prompt = page.inner_text("#prompt")
            assert prompt.startswith("Relevant memories") and "peanuts" in prompt
            assert page.locator("#channels .card").count() == 6
            assert page.locator("#floor .kept").count() >= 1
            # a memory's page draws its activation curve, with the recalls that reinforced it
            page.goto(server + f"/memory/{recorded.allergy.id}")
            assert page.locator("#activation svg .cold-threshold").count() == 1
            assert page.locator("#activation svg circle.recall").count() >= 1
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
        finally:
            browser.close()

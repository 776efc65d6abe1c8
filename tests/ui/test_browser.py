"""The inspector in a real headless browser: Playwright driving the operating system's Chromium
against the real server (uvicorn on a free port). In CI the browser must be there: the test fails
rather than skips without it, like the Redis tests. ``HINDSIGHT_UPDATE_SCREENSHOT=1`` refreshes ``docs/ui.png``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from hindsight_core import Hindsight

from .conftest import NS, Clock, Recorded, record_namespace

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("serve_child.py")
#: The tracked screenshot is refreshed only on request (HINDSIGHT_UPDATE_SCREENSHOT=1): a test run must not
#: rewrite a tracked file.
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
def recorded_dir(tmp_path: Path, embedder: object) -> Recorded:
    """A recorded directory, closed again so that the server process can own it."""
    clock = Clock()
    hs = Hindsight(tmp_path / "data", clock=clock, embedder=embedder)  # type: ignore[arg-type]
    try:
        recorded = record_namespace(hs, clock)
    finally:
        hs.close()
    return replace(recorded, now=clock(), path=tmp_path / "data")


@pytest.fixture
def server(recorded_dir: Recorded) -> Iterator[str]:
    """``hindsight_core.ui.serve`` in its own OS process, as ``hindsight ui`` runs it."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(recorded_dir.path), str(port), str(recorded_dir.now.isoformat())],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    try:
        assert child.stdout is not None
        output: list[str] = []
        for line in child.stdout:  # the banner comes once the engine is open, just before uvicorn binds
            output.append(line)
            if line.startswith("Hindsight inspector on"):
                break
        banner = output[-1] if output else ""
        assert f"http://127.0.0.1:{port}/" in banner and "read-only" in banner, "".join(output)
        threading.Thread(target=child.stdout.read, daemon=True).start()  # keep the pipe drained
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert child.poll() is None and time.monotonic() < deadline, "the inspector did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def test_inspector_in_a_real_browser(chromium: str, server: str, recorded_dir: Recorded) -> None:
    recorded = recorded_dir
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
            # recall injected the distilled fact that stands for the allergy episode (one hit per fact)
            assert recorded.allergy_fact is not None
            page.goto(server + f"/memory/{recorded.allergy_fact.id}")
            assert page.locator("#activation svg .cold-threshold").count() == 1
            assert page.locator("#activation svg circle.recall").count() >= 1
            shot = page.screenshot(full_page=True)
            assert shot.startswith(b"\x89PNG")
            if os.environ.get("HINDSIGHT_UPDATE_SCREENSHOT") == "1":
                SCREENSHOT.write_bytes(shot)
        finally:
            browser.close()

"""Browser tests of the memory inspector: Playwright (PyPI) driving Debian's Chromium
(/usr/bin/chromium), never a downloaded browser. ``make test`` installs Chromium in the
background while the unit tests run (``make browser-install``) and runs these afterwards;
here they wait for that install to finish. Screenshots go to test-artifacts/browser/."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("AGENT_MEMORY_CHROMIUM", "/usr/bin/chromium")
INSTALL_RC = REPO / ".browser" / "install.rc"  # written by `make browser-install` when it ends
ARTIFACTS = REPO / "test-artifacts" / "browser"
# As root Chromium needs --no-sandbox; nothing may reach the network or update itself.
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


def _wait_for_chromium(timeout_s: float = 900.0) -> str | None:
    """The Chromium binary, waiting for a background install that is still running; ``None``
    (with the reason) when there is none."""
    started = INSTALL_RC.parent.joinpath("install.started").exists() and not INSTALL_RC.exists()
    deadline = time.monotonic() + timeout_s
    while started and not INSTALL_RC.exists() and time.monotonic() < deadline:
        time.sleep(1.0)
    if Path(CHROMIUM).exists() or shutil.which(CHROMIUM):
        return None
    log = INSTALL_RC.parent / "install.log"
    return f"{CHROMIUM} is missing" + (f" (install log: {log})" if log.exists() else "; run `make browser-install`")


@pytest.fixture(params=["sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """The page is the same whatever the store; one store keeps these tests fast."""
    return request.param


# Module scope, not session: Playwright's sync API keeps its event loop set as the running
# loop while it is open, so held to the session's end it made every later asyncio.run() in the
# same process fail ("cannot be called from a running event loop").
@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    missing = _wait_for_chromium()
    if missing:
        if os.environ.get("AGENT_MEMORY_BROWSER_REQUIRED"):
            pytest.fail(missing)
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 860}, accept_downloads=False)
        context.set_default_timeout(15_000)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser_context, request: pytest.FixtureRequest):
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-end.png"), full_page=True)
    page.close()
    assert not errors, f"the page raised: {errors}"

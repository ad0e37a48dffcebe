"""Playwright + Debian's Chromium for the browser tests; skipped cleanly when either is missing.

Screenshots go to ``tests/artifacts/`` (git-ignored, created here).
"""
from __future__ import annotations

import pathlib
import shutil

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = pathlib.Path(__file__).parents[1] / "artifacts"



def pytest_collection_modifyitems(items):
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not pathlib.Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def artifacts() -> pathlib.Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def offline_page(browser):
    """A page that may load only file:// URLs; every other request is aborted and recorded."""
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    page = context.new_page()
    page.blocked = []
    page.errors = []

    def route(request_route):
        url = request_route.request.url
        if url.startswith("file:"):
            request_route.continue_()
        else:
            page.blocked.append(url)
            request_route.abort()

    context.route("**/*", route)
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    yield page
    context.close()

"""Fixtures for the browser checks: Debian chromium driven by Playwright (no browser download)."""
from __future__ import annotations

import os

import pytest

from .pages import CHROMIUM, CHROMIUM_ARGS


# package scope: the browser (and Playwright's event loop) is closed when the tests of this
# folder are done, so other tests in the same run may start their own Playwright
@pytest.fixture(scope="package")
def browser():
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class PageLog:
    """What a page did: console errors, uncaught exceptions, requests that left file://."""

    def __init__(self):
        self.errors: list[str] = []
        self.outside: list[str] = []

    def attach(self, page):
        def on_console(msg):
            if msg.type == "error":
                loc = (msg.location or {}).get("url", "")
                self.errors.append((msg.text, loc))

        page.on("console", on_console)
        page.on("pageerror", lambda exc: self.errors.append((str(exc), "")))

        def route(r):
            if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
                r.continue_()
            else:
                self.outside.append(r.request.url)
                r.abort()

        page.route("**/*", route)


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = context.new_page()
    pg.log = PageLog()
    pg.log.attach(pg)
    yield pg
    context.close()

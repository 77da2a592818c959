"""A real `lablease-server serve` and Debian's chromium driven by Playwright (one of each per module).

Playwright never downloads a browser here: it launches /usr/bin/chromium (`make chromium` installs it).
Without it the tests are skipped, except in CI (CI=true), where a missing browser is a failure.
Every page a test visits can be checked with axe-core (no serious or critical violation) and is saved as a
screenshot under tests/output/web/.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.live import LiveServer, Stdin

CHROMIUM = next((p for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium") if os.path.exists(p)), None)
# Only loopback can be reached: a page that asks for anything else fails to resolve it (and the test sees it).
ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost", "--no-sandbox",
        "--disable-dev-shm-usage"]
OUTPUT = Path(__file__).resolve().parents[2] / "output" / "web"
PASSWORD = "a long enough password"


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or CHROMIUM is None:
        missing = "the playwright package" if sync_playwright is None else "chromium (make chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"browser tests need {missing}")
        pytest.skip(f"browser tests need {missing}")
    return sync_playwright


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _playwright()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """One server for the module, with users alice (her password set with `lablease-server user passwd`) and bob."""
    server = LiveServer(tmp_path_factory.mktemp("web"), run_worker=False, workers=1,
                        settings={"web_trust_remote_user": "true"}).start()  # headers must still name nobody
    server.add_users("alice", "bob", then=(("user", "passwd", "alice", Stdin(PASSWORD + "\n")),))
    try:
        yield server
    finally:
        server.stop()


class Visit:
    """One person's browser context: sign in, look at pages, check them, keep a screenshot of each."""

    def __init__(self, site: LiveServer, context):
        self.site, self.context = site, context
        self.page = context.new_page()
        self.requested: list[str] = []
        self.page.on("request", lambda request: self.requested.append(request.url))

    def go(self, path: str):
        self.page.goto(self.site.url + path)
        return self.page

    def sign_in(self, name: str, password: str = PASSWORD):
        self.go("/login")
        self.page.get_by_label("User name").fill(name)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Sign in").click()
        return self.page

    def check(self, name: str) -> None:
        """axe-core finds no serious or critical violation; the page is saved as tests/output/web/NAME.png."""
        from axe_playwright_python.sync_playwright import Axe

        OUTPUT.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(OUTPUT / f"{name}.png"), full_page=True)
        violations = Axe().run(self.page).response["violations"]
        grave = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in violations
                 if v["impact"] in ("serious", "critical")]
        assert grave == [], grave

    def only_loopback(self) -> None:
        hosts = {urlsplit(url).hostname for url in self.requested if not url.startswith(("data:", "about:"))}
        assert hosts <= {"127.0.0.1"}, hosts


@pytest.fixture
def visit(browser, site):
    """visit() is a new browser context (its own cookies); visit(javascript=False) one with JavaScript off."""
    contexts = []

    def make(javascript: bool = True) -> Visit:
        context = browser.new_context(java_script_enabled=javascript, viewport={"width": 1280, "height": 900})
        contexts.append(context)
        return Visit(site, context)

    yield make
    for context in contexts:
        context.close()



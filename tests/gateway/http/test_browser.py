"""What a person sees, rendered by a real headless browser (Debian's chromium; `.ci/run`
installs it): the gateway's status page, its sign-in with a token, and the HTML bench report.
Each test takes a screenshot and checks its pixels: the page is not blank, and the colours that
only the rendered content has (the state colours, the plots' bars) are on it.

The sign-in is driven like a person would: :class:`Chromium` speaks the DevTools protocol over
``--remote-debugging-pipe`` (no port, no extra package), types the token into the form and
clicks the button; the browser itself sends the ``Origin``, keeps the cookie and enforces its
attributes.

The screenshots are kept under the pytest tmp dir (``browser-*.png``) for a person to look at.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import HashingEmbedder
from tests.helpers.status import Served, serving_gateway
from toolroute import cli

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("chromium") is None,
        reason="chromium not installed (bash .ci/run installs Debian's chromium)",
    ),
]


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]


def _pixels(png: Path) -> np.ndarray:
    import matplotlib.image

    pixels = np.asarray(matplotlib.image.imread(png))[..., :3]
    return (pixels * 255).round().astype(np.int16)


def screenshot(url: str, png: Path, size: str = "1280,1000") -> np.ndarray:
    """Render ``url`` in headless chromium, write ``png``, return its RGB pixels."""
    profile = png.parent / f"{png.stem}-profile"
    subprocess.run(
        [
            "chromium",
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={size}",
            f"--screenshot={png}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return _pixels(png)


class Chromium:
    """One headless chromium driven over the DevTools protocol on a pipe (the browser reads
    commands on fd 3 and writes replies and events on fd 4, each message ending in NUL). Every
    wait is bounded by ``timeout_s``."""

    def __init__(self, profile: Path, timeout_s: float = 60) -> None:
        self.timeout_s = timeout_s
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (cmd_r, out_w)]
        for fd in (cmd_r, out_w):
            os.close(fd)
        # bash puts the pipe ends where chromium looks for them (dash takes no fd above 9)
        wire = f'exec "$0" "$@" 3<&{high[0]} 4>&{high[1]} {high[0]}<&- {high[1]}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", wire, "chromium", *CHROMIUM_FLAGS, "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "about:blank"],
            pass_fds=high,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for fd in high:
            os.close(fd)
        self._next = 0
        self._buffer = b""
        self.events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        self.session = attached["sessionId"]
        self.page("Page.enable")
        self.page(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._out_r], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """One command; its result (events that arrive meanwhile are kept)."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result
            if "method" in reply:
                self.events.append(reply)

    def page(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.send(method, params, self.session)

    def wait_for(self, event: str) -> dict[str, Any]:
        """The first ``event`` of the page since the last call (kept ones first)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            for i, e in enumerate(self.events):
                if e["method"] == event and e.get("sessionId") == self.session:
                    del self.events[: i + 1]
                    return e
            self.events.append(self._read(deadline))

    def js(self, expression: str) -> Any:
        result = self.page("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def load(self, act: str) -> None:
        """Run ``act`` (JavaScript that navigates: a click) and wait until the next page loaded."""
        self.events.clear()
        self.js(act)
        self.wait_for("Page.loadEventFired")

    def goto(self, url: str) -> None:
        self.events.clear()
        self.page("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def type_into(self, selector: str, text: str) -> None:
        """Focus the field, then type as a keyboard would (Input.insertText)."""
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        self.page("Input.insertText", {"text": text})

    def screenshot(self, png: Path) -> np.ndarray:
        data = self.page("Page.captureScreenshot", {"format": "png"})["data"]
        png.write_bytes(base64.b64decode(data))
        return _pixels(png)

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.send("Browser.close")  # it may be gone already; it is reaped below either way
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        os.close(self._cmd_w)
        os.close(self._out_r)


def _has_colour(pixels: np.ndarray, rgb: tuple[int, int, int], tol: int = 12) -> int:
    return int((np.abs(pixels - np.array(rgb)).max(axis=-1) <= tol).sum())


def test_status_page_renders_in_a_browser(tmp_path: Path, status_gateway: Served) -> None:
    pixels = screenshot(f"{status_gateway.base}/status", tmp_path / "browser-status.png")
    assert pixels.std() > 10  # not a blank page
    assert _has_colour(pixels, (0x12, 0x6B, 0x12)) > 20  # the "up" state, in green
    assert _has_colour(pixels, (0xB0, 0x00, 0x20)) > 20  # the "down" state, in red


def test_a_browser_signs_in_with_a_token_and_sees_only_its_clients_servers(
    tmp_path: Path,
) -> None:
    with serving_gateway(tmp_path, {"alice": ["time"], "bob": ["broken"]}) as served:
        browser = Chromium(tmp_path / "profile")
        try:
            _sign_in(browser, served, tmp_path)
        finally:
            browser.close()


def _sign_in(browser: Chromium, served: Served, tmp_path: Path) -> None:
    browser.goto(f"{served.base}/status")
    form = browser.screenshot(tmp_path / "browser-login.png")
    text = browser.js("document.body.innerText")
    assert "Bearer token" in text and "get_current_time" not in text
    assert form.std() > 5  # not blank
    assert _has_colour(form, (0x12, 0x6B, 0x12)) == 0  # no server state: no data
    assert _has_colour(form, (0xB0, 0x00, 0x20)) == 0

    browser.type_into("#token", served.tokens["alice"][:-1])  # one character short
    browser.load("document.querySelector('button[type=submit]').click()")
    assert "not a token of this gateway" in browser.js("document.body.innerText")
    refused = browser.screenshot(tmp_path / "browser-login-refused.png")
    assert _has_colour(refused, (0xB0, 0x00, 0x20)) > 20  # the message, in red
    assert browser.page("Network.getCookies", {"urls": [f"{served.base}/status"]})["cookies"] == []

    browser.type_into("#token", served.tokens["alice"])
    browser.load("document.querySelector('button[type=submit]').click()")
    assert browser.js("location.pathname") == "/status"
    text = browser.js("document.body.innerText")
    assert "Signed in as client alice" in text and "get_current_time" in text
    assert "broken" not in text  # bob's server
    page = browser.screenshot(tmp_path / "browser-status-alice.png")
    assert _has_colour(page, (0x12, 0x6B, 0x12)) > 20  # time is up, in green
    assert _has_colour(page, (0xB0, 0x00, 0x20)) == 0  # bob's broken server is not shown
    assert _has_colour(page, (0xEE, 0xF3, 0xFB), tol=3) > 500  # the signed-in banner
    assert browser.js("document.cookie") == ""  # HttpOnly: no script reads it
    (cookie,) = browser.page("Network.getCookies", {"urls": [f"{served.base}/status"]})["cookies"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/status"
    assert cookie["value"] not in served.tokens.values()
    headers = browser.js("[...document.querySelectorAll('th')].map(th => [th.innerText, th.title])")
    assert headers and all(len(tip) > 20 for _, tip in headers), headers
    names = {name for name, _ in headers}
    assert {"failure rate", "success rate", "avg latency (s)"} <= names

    browser.load("document.querySelector('a[href=\"/status/json\"]').click()")  # "as JSON"
    data = json.loads(browser.js("document.body.innerText"))
    assert [x["name"] for x in data["servers"]] == ["time"]
    browser.goto(f"{served.base}/status")

    browser.load("document.querySelector('form[action=\"/status/logout\"] button').click()")
    assert "Bearer token" in browser.js("document.body.innerText")
    assert browser.page("Network.getCookies", {"urls": [f"{served.base}/status"]})["cookies"] == []

    # the operator: a one-time link from `toolroute status --open`, then one click
    res = CliRunner().invoke(cli.main, ["status", "--open", "--config", str(served.config)])
    assert res.exit_code == 0, res.output
    browser.goto(res.output.split()[-1])
    assert "Open the status page" in browser.js("document.body.innerText")
    browser.screenshot(tmp_path / "browser-once.png")
    browser.load("document.querySelector('button[type=submit]').click()")
    text = browser.js("document.body.innerText")
    assert "Signed in as the operator" in text and "broken" in text
    assert "tokens shown (summaries + schemas)" in text  # the routing decisions, to the operator
    page = browser.screenshot(tmp_path / "browser-status-operator.png")
    assert _has_colour(page, (0x12, 0x6B, 0x12)) > 20 and _has_colour(page, (0xB0, 0x00, 0x20)) > 20


def test_bench_html_report_renders_tables_and_plots(
    tmp_path: Path, catalog_file: Path, queries_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolroute.router

    monkeypatch.setattr(toolroute.router, "OnnxEmbedder", lambda: HashingEmbedder())
    out = tmp_path / "out"
    args = ["bench", "--catalog", str(catalog_file), "--queries", str(queries_file)]
    args += ["--store", str(tmp_path / "store"), "-s", "bm25", "-s", "dense", "--out", str(out)]
    res = CliRunner().invoke(cli.main, args)
    assert res.exit_code == 0, res.output
    page = out / "bench.html"
    assert "<table>" in page.read_text() and "data:image/png;base64," in page.read_text()
    pixels = screenshot(page.as_uri(), tmp_path / "browser-bench.png", size="1800,1000")
    assert pixels.std() > 10
    assert _has_colour(pixels, (0x1F, 0x77, 0xB4), tol=20) > 200  # matplotlib's blue bars
    assert _has_colour(pixels, (0xFF, 0x7F, 0x0E), tol=20) > 200  # and its orange ones
    assert _has_colour(pixels, (0xE8, 0xF4, 0xE8), tol=4) > 100  # best cells, highlighted

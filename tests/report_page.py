"""A report's HTML read as text (its figures and references), and opened in headless Chromium
through chromedriver (Debian's `chromium` and `chromium-driver`, installed by
scripts/test-all.sh) to record what a reader would see: the DOM, the console, every request the
page made (the DevTools Network events of its performance log) and a screenshot of each
figure."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import shutil
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest


class Refs(HTMLParser):
    """Collects every src and href, and the figures' ids."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.figures: list[str] = []
        self.images = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.refs += [v for k, v in attrs if k in ("src", "href") and v is not None]
        if tag == "figure" and a.get("id"):
            self.figures.append(str(a["id"]))
        if tag == "img" and str(a.get("src", "")).startswith("data:image/png;base64,"):
            self.images += 1


def parse_html(text: str) -> Refs:
    p = Refs()
    p.feed(text)
    return p


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
HAS_SELENIUM = importlib.util.find_spec("selenium") is not None

# Every test that opens a page: skipped, saying why, where the browser cannot run.
needs_browser = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None or not HAS_SELENIUM,
    reason="chromium, chromium-driver or selenium is missing (scripts/test-all.sh installs "
    "them): the report is not opened in a browser",
)


@dataclass
class Page:
    dom: str
    #: The console's messages, every level.
    console: list[dict[str, Any]]
    #: The URL of every request the page sent (Network.requestWillBeSent), in order.
    requests: list[str]
    #: Each figure's image as the browser drew it, RGB, by figure id.
    figures: dict[str, np.ndarray]
    #: Each figure's image's natural height and width, pixels, by figure id.
    sizes: dict[str, tuple[int, int]]
    #: The page's text as the browser lays it out (``innerText``: what a reader sees).
    text: str
    #: The value of each script ``open_page`` was given, by its name.
    measured: dict[str, Any]


def open_page(path: Path, scripts: dict[str, str] | None = None) -> Page:
    """Opens ``path`` at a laptop's 1200 x 900 viewport; ``scripts`` are JavaScript bodies
    (``return ...``) run on the loaded page, their values kept in ``Page.measured``."""
    from PIL import Image
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    assert CHROMIUM is not None and CHROMEDRIVER is not None
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        # Anything that would leave the machine fails at once instead of waiting on a network
        # this machine may not have; the request is still logged, which is what is checked.
        "--proxy-server=http://127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        driver.set_window_size(1200, 900)
        driver.get(path.as_uri())
        figures, sizes = {}, {}
        for element in driver.find_elements(By.CSS_SELECTOR, "figure img"):
            figure_id = element.find_element(By.XPATH, "..").get_attribute("id")
            # The image's box on the page, captured whole even where it runs past the screen.
            r = element.rect
            clip = {"x": r["x"], "y": r["y"], "width": r["width"], "height": r["height"]}
            shot_b64 = driver.execute_cdp_cmd(
                "Page.captureScreenshot",
                {"format": "png", "clip": {**clip, "scale": 1}, "captureBeyondViewport": True},
            )["data"]
            shot = Image.open(io.BytesIO(base64.b64decode(shot_b64))).convert("RGB")
            figures[str(figure_id)] = np.asarray(shot, dtype=float)
            # The size the image decoded to (0 x 0 for an image the browser could not draw).
            natural = driver.execute_script(
                "return [arguments[0].naturalHeight, arguments[0].naturalWidth]", element
            )
            sizes[str(figure_id)] = (int(natural[0]), int(natural[1]))
        events = [json.loads(e["message"])["message"] for e in driver.get_log("performance")]
        requests = [
            str(e["params"]["request"]["url"])
            for e in events
            if e["method"] == "Network.requestWillBeSent"
        ]
        text = str(driver.execute_script("return document.body.innerText"))
        measured = {k: driver.execute_script(js) for k, js in (scripts or {}).items()}
        return Page(
            driver.page_source,
            driver.get_log("browser"),
            requests,
            figures,
            sizes,
            text,
            measured,
        )
    finally:
        driver.quit()


def assert_offline_and_drawn(page: Page, path: Path, expected: list[str]) -> None:
    """The page loaded its own file and nothing else (figures are inline ``data:`` images), logged
    nothing to the console, and holds each expected figure, drawn (not a blank box)."""
    assert page.requests[0] == path.as_uri()
    outside = [u for u in page.requests[1:] if not u.startswith("data:")]
    assert outside == [], f"the page requested {outside}"
    assert page.console == [], page.console
    assert list(page.figures) == expected
    for name, pixels in page.figures.items():
        # Decoded, and shown whole at its own size (the page is wider than the figures).
        assert page.sizes[name][1] >= 600, name
        assert pixels.shape[:2] == page.sizes[name], name
        assert pixels.std() > 20.0, f"{name} is blank"
        # Coloured pixels (bars, lines; not the black, grey and white of axes and text). One
        # curve alone (the idle CDF of a machine with one link class) colours 0.5 % of them;
        # axes without data none.
        coloured = (pixels.max(axis=2) - pixels.min(axis=2)) > 60.0
        assert coloured.mean() > 0.002, f"{name} draws nothing in colour"

"""Load a page in headless Chromium and return the DOM it built: pictures are checked as drawn, and
the layout is measured (element boxes, the page's height) where a person would see it."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
INSTALL = "sudo apt-get install -y chromium (`make browser` does it as root; `make test` runs it first)"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise AssertionError(f"headless Chromium is needed for the page tests: {INSTALL}")
    return found


def rendered_dom(page: Path, tmp: Path, *options: str) -> str:
    """The DOM after Chromium loaded `page` from disk (offline: no network is reachable or needed)."""
    completed = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={tmp / 'chromium-profile'}",
            *options,
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


# One laptop screen: what a reader sees at once, and the unit a page's length is measured in.
SCREEN = (1280, 800)

# Runs in the page once it is laid out: the page's height and the box of every element each selector
# finds (in page coordinates), written into the DOM as JSON for --dump-dom to carry out.
MEASURE = """
(() => {
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return {id: e.id || "", text: e.textContent.trim().replace(/\\s+/g, " ").slice(0, 300), x: r.left + scrollX,
            y: r.top + scrollY, width: r.width, height: r.height, open: e.tagName === "DETAILS" ? e.open : null,
            data: Object.assign({}, e.dataset), group: (e.closest("g[id]") || {}).id || ""};
  };
  const found = {};
  for (const selector of SELECTORS) found[selector] = Array.from(document.querySelectorAll(selector), box);
  const out = {height: document.documentElement.scrollHeight, width: document.documentElement.scrollWidth,
               viewport: [innerWidth, innerHeight], found: found};
  const pre = document.createElement("pre");
  pre.id = "measured";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


@dataclass(frozen=True)
class Layout:
    """What Chromium measured: the page's height and width (CSS pixels), each selector's boxes (with
    the id of the SVG group each sits in), and the DOM it built."""

    height: float
    width: float
    found: dict[str, list[dict[str, Any]]]
    dom: str

    @property
    def screens(self) -> float:
        """The page's length in screen heights of `SCREEN`."""
        return self.height / SCREEN[1]


def measured(page: Path, tmp: Path, selectors: Sequence[str], screenshot: Path | None = None) -> Layout:
    """Load a copy of `page` with a measuring script in a `SCREEN`-sized window (the page itself has
    no script); optionally save the screenshot of its first screen."""
    copy = tmp / f"measured-{page.name}"
    script = MEASURE.replace("SELECTORS", json.dumps(list(selectors)))
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", f"<script>{script}</script></body>"))
    options = [f"--window-size={SCREEN[0]},{SCREEN[1]}"]
    if screenshot is not None:
        options.append(f"--screenshot={screenshot}")
    dom = rendered_dom(copy, tmp, *options)
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script did not run"
    data = json.loads(html.unescape(found.group(1)))
    return Layout(data["height"], data["width"], data["found"], dom)


class Elements(HTMLParser):
    """Every element as (tag, attributes), in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def elements(dom: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(dom)
    return parser.found


def drawn_in(dom: str, group_id_prefix: str) -> int:
    """How many marks (path/use/rect/circle) are drawn inside SVG groups whose id starts with the prefix."""
    count, depth, inside = 0, 0, 0
    parser_items = _events(dom)
    for kind, tag, attrs in parser_items:
        if kind == "start":
            depth += 1
            if tag == "g" and (attrs.get("id") or "").startswith(group_id_prefix) and not inside:
                inside = depth
            elif inside and tag in ("path", "use", "rect", "circle", "polyline"):
                count += 1
        else:
            if inside and depth == inside:
                inside = 0
            depth -= 1
    return count


def _events(dom: str) -> list[tuple[str, str, dict[str, str | None]]]:
    events: list[tuple[str, str, dict[str, str | None]]] = []

    class Walker(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            events.append(("start", tag, dict(attrs)))
            if tag in VOID:
                events.append(("end", tag, {}))

        def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            events.append(("start", tag, dict(attrs)))
            events.append(("end", tag, {}))

        def handle_endtag(self, tag: str) -> None:
            if tag not in VOID:
                events.append(("end", tag, {}))

    Walker().feed(dom)
    return events


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG file, from its IHDR chunk: what a screenshot shows."""
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")

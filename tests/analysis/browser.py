"""Load a page in headless Chromium and return the DOM it built: pictures are checked as drawn."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
INSTALL = "sudo apt-get install -y chromium (`make browser` does it as root; `make test` runs it first)"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise AssertionError(f"headless Chromium is needed for the page tests: {INSTALL}")
    return found


def rendered_dom(page: Path, tmp: Path) -> str:
    """The DOM after Chromium loaded `page` from disk (offline: no network is reachable or needed)."""
    completed = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp / 'chromium-profile'}",
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

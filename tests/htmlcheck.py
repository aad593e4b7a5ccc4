"""Looking at our HTML reports as a person would: headless Chromium (Debian's package, which ./dev installs) draws
the page offline, and these helpers read what it drew. Shared by the fleet report's and the rehearsal's tests."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, cast

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def chromium(tmp: Path, html: Path, *action: str, timeout: float = 90) -> str:
    """Run Chromium on ``html`` with ``action`` (``--dump-dom`` or ``--screenshot=PNG``); its stdout."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run ./dev (it installs Debian's chromium) to look at the report headless")
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--window-size=1400,2400",
            "--virtual-time-budget=10000",
            f"--user-data-dir={tmp / 'profile'}",
            *action,
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def drawn(dom: str) -> dict[str, int]:
    """Per figure div: how many plotly SVG roots it holds (plotly.js puts two ``main-svg`` in every plot)."""
    parts = re.split(r'<div id="(fig-[^"]+)" class="[^"]*plotly-graph-div', dom)
    return {parts[i]: parts[i + 1].count('class="main-svg"') for i in range(1, len(parts), 2)}


def colours(im: Any) -> list[tuple[int, tuple[int, int, int]]]:
    """(pixel count, RGB) for every colour of an RGB image."""
    return cast(list[tuple[int, tuple[int, int, int]]], im.getcolors(maxcolors=1 << 22) or [])


class Refs(HTMLParser):
    """Every URL-bearing attribute, script tag and style text of a document (not the strings inside scripts)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "srcset", "action", "data", "poster")]
        if a.get("style"):
            self.styles.append(a["style"] or "")
        if tag == "script":
            self.scripts.append(a)
        if tag == "link":
            self.urls.append(f"<link {a}>")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)

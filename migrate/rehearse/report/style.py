"""How the report looks, shared by the page (:mod:`.view`) and the plots (:mod:`.figures`): the colours, the plots'
margins and scales, and how times, durations and counts are written."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from migrate.rehearse.model import OPS

PHASE_COLOURS = {
    "pre-flight": "#8a8a8a",
    "roll-1": "#4e79a7",
    "roll-2": "#8a5fb3",
    "lockdown": "#9c755f",
    "post-flight": "#8a8a8a",
}
DRILL = "#f28e2b"
FAILED = "#d62728"
FAILED_DARK = "#a11d1d"
SKIPPED = "#bdbdbd"
OK = "#2e8b3e"
CONTROLLER = "#1f3f77"
#: Op kinds on the latency plot: Tableau colours without red (failures) or orange (drills); metadata, the one
#: read, grey.
OP_COLOURS = dict(
    zip(
        OPS,
        ("#4e79a7", "#499894", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#2f4b7c", "#a0a0a0"),
        strict=True,
    )
)
#: Every time plot has these margins, so their x axes line up on the page (the timeline's step names fit in l).
MARGIN = {"l": 190, "r": 80, "t": 40, "b": 50}
#: Above this many acknowledged operations the latency plot draws a thinned sample (SVG stays responsive).
MAX_POINTS = 12_000
LATENCY_TICKS = {1e-4: "0.1 ms", 1e-3: "1 ms", 1e-2: "10 ms", 0.1: "100 ms", 1.0: "1 s", 10.0: "10 s", 100.0: "100 s"}
BUCKETS = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)


def iso(t: float) -> str:
    """A Unix time as plotly reads a date (UTC, milliseconds): strings keep the figure JSON deterministic."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def clock(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%H:%M:%S")


def duration(seconds: float) -> str:
    """``4 min 12 s`` rather than ``252.3 s``: the header is read by people."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    s = round(seconds)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m} min" if h else f"{m} min {s} s"


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def nice_bucket(span: float, per: int = 60) -> int:
    """About ``span / per`` seconds, rounded up to a whole, readable width (at least 1 s)."""
    want = max(span / per, 1.0)
    return next((b for b in BUCKETS if b >= want), BUCKETS[-1])


def seconds(v: float) -> str:
    if math.isnan(v):
        return "none"
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"

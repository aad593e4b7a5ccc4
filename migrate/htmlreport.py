"""What every bridgekeeper HTML report shares: plotly.js inlined once, the Content-Security-Policy head, the
plotly layout template and fonts, the jinja2 environment, and how a foreign string reaches a figure.

Reports are read where the clusters are (a bastion, a change ticket, a file share), often with no internet, so
a page loads nothing: plotly.js is embedded from the installed package and a CSP forbids every fetch, so that a
mistake (ours or plotly's) shows as a blank plot in review rather than as a silent call home. Keeping this in
one place keeps the fleet report (``migrate.pipeline.report``) and the rehearsal report
(``migrate.rehearse.report``) under the same policy; it imports neither, nor anything that needs Spark or a
cluster.
"""

from __future__ import annotations

import functools
import html

import jinja2
import plotly.graph_objects as go
import plotly.offline
from markupsafe import Markup

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
#: Tableau 10: distinct in print and for the common colour-vision deficiencies.
TABLEAU10 = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#b07aa1",
    "#76b7b2",
    "#edc948",
    "#9c755f",
    "#ff9da7",
    "#e15759",
    "#bab0ac",
)
#: ``default-src 'none'``: nothing may be fetched. plotly.js needs inline scripts and ``eval`` (its
#: ``Function``-built number formatters), its own inline styles, and data:/blob: images for its icons.
CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)
#: The head every report page starts with (a template places it as ``{{ head }}``).
HEAD = Markup(
    '<meta charset="utf-8">\n'
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
)  # our constant, not input

#: A template of our own: plotly's default one would be embedded (~10 kB) in every figure of the page.
TEMPLATE = go.layout.Template(
    layout={
        "font": {"family": FONT, "size": 12, "color": "#222"},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "colorway": list(TABLEAU10),
        "margin": {"l": 64, "r": 24, "t": 56, "b": 56},
        "hoverlabel": {"font": {"family": FONT}},
        "xaxis": {"showgrid": False, "linecolor": "#888", "ticks": "outside", "tickcolor": "#888", "automargin": True},
        "yaxis": {"gridcolor": "#e6e6e6", "zerolinecolor": "#888", "automargin": True, "rangemode": "tozero"},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.06, "xanchor": "left", "x": 0},
    }
)
CONFIG = {"displaylogo": False, "responsive": True}


@functools.cache
def plotly_js() -> Markup:
    """plotly.js from the installed package (read once per process: it is ~5 MB). Inlined in a ``<script>``, so
    it must not contain the end tag: none does today, and a release that did would cut the page short with no
    error, so it is refused here instead."""
    js = plotly.offline.get_plotlyjs()
    if "</script" in js.lower():
        raise RuntimeError("plotly.js contains '</script': it cannot be inlined")
    return Markup(js)  # plotly's own bundle, not input


def plotly_version() -> str:
    version: str = plotly.offline.get_plotlyjs_version()
    return version


def label(text: str) -> str:
    """A foreign string as plotly must receive it to draw it literally: plotly reads ``<b>``, ``<br>`` and
    ``<a href>`` inside any label or hover text, and turns the entities back into the literal text."""
    return html.escape(text, quote=False)


def to_div(fig: go.Figure, div_id: str) -> Markup:
    """The figure as a ``<div>`` + ``<script>`` for the page. plotly.js is embedded once by the page, and the id
    is ours so the same input always renders the same document. Safe to place unescaped: plotly's figure JSON
    escapes ``<``, ``>`` and ``/``."""
    out: str = fig.to_html(full_html=False, include_plotlyjs=False, config=CONFIG, div_id=div_id)
    return Markup(out)


def environment(package: str) -> jinja2.Environment:
    """A report's templates: autoescaped (every name may come from a foreign cluster), strict about undefined
    names (a typo must fail the tests, not render blank), with the shared ``head`` as a global."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["head"] = HEAD
    return env

"""The page and the JSON, written together and atomically."""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2
import orjson

from migrate import htmlreport
from migrate.atomic import write_atomic
from migrate.rehearse.model import Rehearsal
from migrate.rehearse.report.style import duration
from migrate.rehearse.report.view import build_view


# -- rendering -----------------------------------------------------------------------------------------------------
@functools.cache
def _environment() -> jinja2.Environment:
    env = htmlreport.environment("migrate.rehearse")
    env.filters["num"] = lambda n: f"{n:,}"
    env.filters["dur"] = duration
    return env


def render_html(doc: Rehearsal) -> str:
    """The whole report page for ``doc``: deterministic (the same record renders the same bytes)."""
    view = build_view(doc)
    return _environment().get_template("report.html.j2").render(v=view, plotly_js=htmlreport.plotly_js())


def rehearsal_json(doc: Rehearsal) -> bytes:
    """``rehearsal.json``: indented, for people reading it and for diffs between rehearsals."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def write_report(doc: Rehearsal, out_dir: Path) -> tuple[Path, Path]:
    """Write ``report.html`` and ``rehearsal.json`` into ``out_dir``; returns their paths (HTML first). Both are
    rendered before either is written and each is renamed into place, so an interrupted run leaves whole files:
    the JSON is the record a re-render or an operator's script trusts."""
    out = Path(out_dir)
    page = render_html(doc)
    data = rehearsal_json(doc)
    html_path, json_path = out / "report.html", out / "rehearsal.json"
    write_atomic(json_path, data, parents=True)
    write_atomic(html_path, page)
    return html_path, json_path

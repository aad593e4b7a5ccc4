"""The rehearsal's report: ``rehearsal.json`` (the record as it is) and ``report.html`` (the record drawn for the
operator who decides whether to run the upgrade for real).

The page answers, in order: did it pass, and if not which promise broke after which step (the header, linking to
the evidence); where in time the faults, restarts and controller moves were (the step timeline); what the
clients felt meanwhile (latency, error rate); whether the bridge's promise holds once every node is past the
forwarding gate (forwarding share); and what to keep for a rollback (the artefacts). Every time plot shares one
wall-clock axis with the same range and margins, and shades every step as a band, so a spike of latency reads
against the restart or drill that caused it as the page scrolls.

Everything in the record is untrusted: topic names, error strings and evidence lines come from the cluster and
its clients. jinja2 autoescapes the page, strings reaching a figure go through :func:`migrate.htmlreport.label`
(plotly reads markup in labels), and artefact links are kept relative. The page loads nothing (see
:mod:`migrate.htmlreport`). Only jinja2, plotly and orjson are needed: no Spark, no cluster, so the report can be
rendered again from ``rehearsal.json`` anywhere.
"""

from __future__ import annotations

from migrate.rehearse.report.figures import figures
from migrate.rehearse.report.render import rehearsal_json, render_html, write_report
from migrate.rehearse.report.step_views import short_name
from migrate.rehearse.report.style import MARGIN, MAX_POINTS, nice_bucket
from migrate.rehearse.report.view import build_view, safe_href

__all__ = [
    "MARGIN",
    "MAX_POINTS",
    "build_view",
    "figures",
    "nice_bucket",
    "rehearsal_json",
    "render_html",
    "safe_href",
    "short_name",
    "write_report",
]

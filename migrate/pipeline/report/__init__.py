"""The fleet readiness report: one self-contained HTML page (tables, findings, plotly figures) and its JSON.

``render_html(summary)`` returns the page; ``write_report(summary, html_path, json_path)`` writes both
atomically. The input is the :class:`~migrate.pipeline.summary.Summary` the pipeline's stages produce, so the
report can be rendered (and tested) without Spark.
"""

from __future__ import annotations

from migrate.pipeline.report.render import render_html, write_report

__all__ = ["render_html", "write_report"]

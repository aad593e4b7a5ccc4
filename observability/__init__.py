"""Dashboards, alert rules and recording rules, as code: the one source of truth for ``dashboards/*.json``
(Grafana), ``dashboards/alerts.yaml`` and ``dashboards/recording_rules.yaml`` (Prometheus, with their promtool
unit tests). ``python -m observability write`` regenerates them; ``check`` (run by the tests) fails when the
committed files differ from what this package generates.

It is built from metric names alone and imports nothing else of ours, so it can be read (and changed) without
knowing the node; ``tests/unit/test_dashboards.py`` checks every metric it names is one a node exports.
"""

"""Dashboards and alert rules, as code: the one source of truth for ``dashboards/*.json`` (Grafana) and
``dashboards/alerts.yaml`` (Prometheus). ``python -m observability write`` regenerates them; ``check`` (run by
the tests) fails when the committed files differ from what this package generates.

It is built from metric names alone and imports nothing else of ours, so it can be read (and changed) without
knowing the node; ``tests/unit/test_dashboards.py`` checks every metric it names is one a node exports.
"""

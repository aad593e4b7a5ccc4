"""PromQL building blocks shared by the dashboards and the alert rules, so both say the same thing the same way.

Grafana variables: ``$broker`` (a regex over the nodes' ``broker_id`` label, ``.*`` for all) and
``$__rate_interval`` (Grafana's safe rate window). The Prometheus tests substitute both before they query.
"""

from __future__ import annotations

BROKER = 'broker_id=~"$broker"'
RATE = "$__rate_interval"
JOB = 'job="bridgekeeper"'


def sel(metric: str, *matchers: str, broker: bool = True) -> str:
    """``metric{broker_id=~"$broker", …}``."""
    labels = ([BROKER] if broker else []) + list(matchers)
    return f"{metric}{{{', '.join(labels)}}}" if labels else metric


def rate(metric: str, *matchers: str, by: str = "", window: str = RATE, broker: bool = True) -> str:
    """``sum by (…) (rate(metric{…}[window]))``: a per-second rate, summed over the nodes unless ``by``."""
    grouping = f" by ({by})" if by else ""
    return f"sum{grouping} (rate({sel(metric, *matchers, broker=broker)}[{window}]))"


def quantile(q: float, histogram: str, *matchers: str, by: str = "", window: str = RATE, broker: bool = True) -> str:
    """The ``q`` quantile of a Prometheus histogram (``histogram`` without ``_bucket``), over ``window``."""
    keep = ", ".join(x for x in ("le", by) if x)
    inner = f"sum by ({keep}) (rate({sel(histogram + '_bucket', *matchers, broker=broker)}[{window}]))"
    return f"histogram_quantile({q}, {inner})"

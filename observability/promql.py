"""PromQL building blocks shared by the dashboards and the alert rules, so both say the same thing the same way.

Grafana variables: ``$cluster`` (the ``cluster`` label the scrape configuration puts on every target, one
cluster at a time), ``$broker`` (a regex over the nodes' ``broker_id`` label, ``.*`` for all) and
``$__rate_interval`` (Grafana's safe rate window). The Prometheus tests substitute all three before they query.
"""

from __future__ import annotations

#: The label that tells clusters apart. It is a target label (deploy/prometheus/prometheus.yml): Prometheus
#: puts it on every series it scrapes from a node and on the node's ``up``, which no exporter can label.
CLUSTER_LABEL = "cluster"
CLUSTER = f'{CLUSTER_LABEL}=~"$cluster"'
BROKER = 'broker_id=~"$broker"'
RATE = "$__rate_interval"
JOB = 'job="bridgekeeper"'


def sel(metric: str, *matchers: str, broker: bool = True) -> str:
    """``metric{cluster=~"$cluster", broker_id=~"$broker", …}``: every dashboard selector names the cluster."""
    labels = [CLUSTER] + ([BROKER] if broker else []) + list(matchers)
    return f"{metric}{{{', '.join(labels)}}}"


def whole(metric: str, *matchers: str) -> str:
    """``metric{cluster=~"$cluster", …}``: the cluster's series whatever the broker selection (cluster-wide
    figures such as the controller count, which a broker filter would make wrong)."""
    return sel(metric, *matchers, broker=False)


def rate(metric: str, *matchers: str, by: str = "", window: str = RATE, broker: bool = True) -> str:
    """``sum by (…) (rate(metric{…}[window]))``: a per-second rate, summed over the nodes unless ``by``."""
    grouping = f" by ({by})" if by else ""
    return f"sum{grouping} (rate({sel(metric, *matchers, broker=broker)}[{window}]))"


def quantile(q: float, histogram: str, *matchers: str, by: str = "", window: str = RATE, broker: bool = True) -> str:
    """The ``q`` quantile of a Prometheus histogram (``histogram`` without ``_bucket``), over ``window``."""
    keep = ", ".join(x for x in ("le", by) if x)
    inner = f"sum by ({keep}) (rate({sel(histogram + '_bucket', *matchers, broker=broker)}[{window}]))"
    return f"histogram_quantile({q}, {inner})"

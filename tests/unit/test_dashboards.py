"""The dashboards, alert rules and recording rules: committed files equal what observability/ generates, every
metric they name is one a node exports, every panel says what it shows in which unit and selects one cluster,
every alert is grouped by cluster and links a runbook that exists, and promtool accepts the rules and passes their
unit tests. (tests/e2e/test_prometheus.py runs every expression against a real Prometheus.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from controller.metrics import NodeMetrics
from controller.wire.apikeys import supported_apis
from observability import alerts, dashboards, recording
from observability.__main__ import main
from observability.generate import OUT, generated, stale, write
from observability.promql import CLUSTER
from tests import promharness

PROMTOOL = shutil.which("promtool") or "promtool (Debian's prometheus package; ./dev installs it)"
METRIC = re.compile(r"\b(bridgekeeper_[a-z_]+|up)\b(?!\s*\()")
#: A metric name and its selector, if any (``{…}`` right after the name).
SELECTOR = re.compile(r"\b(bridgekeeper_[a-z_]+|up)\b(?!\s*\()(\{[^}]*\})?")
#: An aggregation and its grouping, if any: ``sum by (cluster) (``, ``max(``.
AGGREGATION = re.compile(r"\b(sum|max|min|avg|count|stddev|topk|bottomk|quantile)\s*(?:by\s*\(([^)]*)\))?\s*\(")
RUNBOOKS = OUT.parent / "docs" / "runbooks.md"


def exported() -> set[str]:
    """Every sample name a node can export (families whose labels appear only with traffic included)."""
    m = NodeMetrics(1, supported_apis(forwarding=True))
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
    names = {f.name + s for f in m.registry.collect() for s in suffixes[f.type]}
    return names | {"up"}


def test_committed_files_are_what_the_source_generates() -> None:
    assert stale() == [], "run: python -m observability write"
    assert sorted(generated()) == sorted(p.name for p in OUT.iterdir() if p.suffix in (".json", ".yaml"))


def test_a_hand_edit_is_caught(tmp_path: Path) -> None:
    write(tmp_path)
    assert stale(tmp_path) == []
    edited = tmp_path / "cluster.json"
    edited.write_text(edited.read_text().replace("Active controllers", "Active controller"))
    assert stale(tmp_path) == ["cluster.json"]


def test_every_metric_named_is_exported_by_a_node() -> None:
    names = exported()
    used = {m for _uid, _title, expr in dashboards.expressions() for m in METRIC.findall(expr)}
    used |= {m for a in alerts.ALERTS for m in METRIC.findall(a.expr) + METRIC.findall(a.signal)}
    used |= {m for r in recording.RECORDINGS for m in METRIC.findall(r.expr)}
    assert "bridgekeeper_controller_active" in used and len(used) > 25
    assert sorted(used - names) == []


def test_the_metric_check_can_fail() -> None:
    assert "bridgekeeper_controller_activ" not in exported()
    assert METRIC.findall('sum(rate(bridgekeeper_x_total{a="b"}[5m])) / up') == ["bridgekeeper_x_total", "up"]


@pytest.mark.parametrize("name", sorted(dashboards.files()))
def test_every_panel_has_a_unit_a_description_and_the_datasource_variable(name: str) -> None:
    board = json.loads((OUT / name).read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert list(variables) == ["datasource", "cluster", "broker"]  # the broker list depends on the cluster
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["cluster"]["query"] == 'label_values(up{job="bridgekeeper"}, cluster)'
    assert not variables["cluster"]["multi"] and not variables["cluster"]["includeAll"]  # one cluster's sums
    assert variables["broker"]["query"] == f"label_values(bridgekeeper_controller_active{{{CLUSTER}}}, broker_id)"
    assert variables["broker"]["includeAll"] and variables["broker"]["allValue"] == ".*"
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert len(panels) >= 6
    ids = [p["id"] for p in board["panels"]]
    assert len(set(ids)) == len(ids) and 0 not in ids
    for panel in panels:
        where = f"{name}: {panel['title']}"
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, where
        assert panel["fieldConfig"]["defaults"].get("unit"), where
        assert len(panel.get("description", "")) > 40, where
        assert panel["targets"] and all(t["expr"] and t["refId"] for t in panel["targets"]), where
        for target in panel["targets"]:
            selectors = SELECTOR.findall(target["expr"])
            assert selectors and all(CLUSTER in labels for _metric, labels in selectors), (where, target["expr"])
        assert panel["gridPos"]["w"] > 0 and panel["gridPos"]["h"] > 0, where


def test_the_four_dashboards_cover_what_an_upgrade_watches() -> None:
    titles = {b.uid: {p.title for p in b.panels()} for b in dashboards.BOARDS}
    assert {"Active controllers", "Controller epoch changes", "Failover duration", "Brokers up"} <= titles[
        "bridgekeeper-cluster"
    ]
    assert {"Bridge progress", "Clients waiting on the controller", "Forwarding authorization failures"} <= titles[
        "bridgekeeper-forwarding"
    ]
    assert {"Throttled replicas", "Completion rate", "Replicas being added"} <= titles["bridgekeeper-reassignments"]
    assert {"Fenced writes (stale controller epoch)", "Sessions not connected"} <= titles["bridgekeeper-zookeeper"]


def test_the_cluster_check_can_fail() -> None:
    """A selector without the cluster matcher, or a metric with no selector at all, is caught."""
    for expr in ('sum(bridgekeeper_x{broker_id=~"$broker"})', "max(bridgekeeper_x)"):
        assert not all(CLUSTER in labels for _metric, labels in SELECTOR.findall(expr))


def test_every_alert_is_grouped_by_cluster() -> None:
    """Every aggregation keeps ``cluster`` (two clusters' figures never add up into one alert); the one rule that
    does not aggregate (node down) keeps every label of ``up``, the cluster target label included."""
    for a in alerts.ALERTS:
        groupings = AGGREGATION.findall(a.expr)
        if not groupings:
            assert a.expr.startswith("up{"), a.name
        for op, by in groupings:
            assert "cluster" in [x.strip() for x in by.split(",")], (a.name, op, a.expr)
    assert AGGREGATION.findall("sum(x) > 1") == [("sum", "")]  # what a missing grouping looks like to the check


def github_anchors(markdown: str) -> list[str]:
    """The anchors GitHub gives a document's headings: lower case, spaces to dashes, punctuation dropped."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", markdown, re.MULTILINE)
    return [re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings]


def test_every_alert_has_annotations_and_a_runbook() -> None:
    rules = alerts.rules()["groups"][0]["rules"]  # type: ignore[index]
    assert len(rules) == len(alerts.ALERTS) >= 10
    anchors = github_anchors(RUNBOOKS.read_text())
    for rule in rules:
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}, rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert "{{ $labels.cluster }}" in rule["annotations"]["summary"], rule["alert"]
        path, _, anchor = rule["annotations"]["runbook_url"].partition("#")
        assert path == "docs/runbooks.md" and (OUT.parent / path).is_file()
        assert anchor in anchors, f"{rule['alert']}: no section #{anchor} in {RUNBOOKS}"
    # One section per alert and no stale ones: a renamed alert must take its runbook along.
    assert sorted(a for a in anchors if a.startswith("bridgekeeper")) == sorted(a.anchor for a in alerts.ALERTS)


def test_runbook_links_can_be_made_absolute(capsys: pytest.CaptureFixture[str]) -> None:
    """A deployment that reads alerts away from a checkout prints the rules with its own base URL."""
    assert main(["alerts", "--runbook-base", "https://git.example.com/ops/bridgekeeper/blob/v1/"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    urls = [r["annotations"]["runbook_url"] for r in printed["groups"][0]["rules"]]
    assert urls[0] == "https://git.example.com/ops/bridgekeeper/blob/v1/docs/runbooks.md#bridgekeepernoactivecontroller"
    assert len(urls) == len(alerts.ALERTS) and all(u.startswith("https://git.example.com/") for u in urls)
    assert main(["alerts", "--runbook-base"]) == 2
    assert main(["alerts"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_promtool_checks_the_rules_and_passes_their_unit_tests() -> None:
    for rules, count, unit_tests in (
        ("alerts.yaml", len(alerts.ALERTS), "alerts_test.yaml"),
        ("recording_rules.yaml", len(recording.RECORDINGS), "recording_rules_test.yaml"),
    ):
        check = subprocess.run([PROMTOOL, "check", "rules", rules], cwd=OUT, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        assert f"SUCCESS: {count} rules found" in check.stdout
        test = subprocess.run([PROMTOOL, "test", "rules", unit_tests], cwd=OUT, capture_output=True, text=True)
        assert test.returncode == 0, test.stdout + test.stderr


def test_promtool_unit_tests_fail_when_a_recorded_series_is_wrong(tmp_path: Path) -> None:
    """The recording rules' unit tests compare label sets and values: a Strimzi label the rule does not give, or
    two clusters merged, fails them."""
    shutil.copy(OUT / "recording_rules.yaml", tmp_path / "recording_rules.yaml")
    text = (OUT / "recording_rules_test.yaml").read_text()
    assert text.count('strimzi_io_cluster="b"') > 1
    (tmp_path / "recording_rules_test.yaml").write_text(
        text.replace('strimzi_io_cluster="b"', 'strimzi_io_cluster="a"')
    )
    test = subprocess.run(
        [PROMTOOL, "test", "rules", "recording_rules_test.yaml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert test.returncode != 0
    assert "kafka_controller_kafkacontroller_activecontrollercount" in test.stdout + test.stderr


def test_promtool_unit_tests_fail_when_an_alert_does_not_fire(tmp_path: Path) -> None:
    shutil.copy(OUT / "alerts.yaml", tmp_path / "alerts.yaml")
    text = (OUT / "alerts_test.yaml").read_text()
    (tmp_path / "alerts_test.yaml").write_text(text.replace("0x4 3x8 0x4", "0x16"))  # offline partitions never rise
    test = subprocess.run([PROMTOOL, "test", "rules", "alerts_test.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert test.returncode != 0
    assert "BridgekeeperOfflinePartitions" in test.stdout + test.stderr


def test_promtool_checks_the_shipped_prometheus_config(tmp_path: Path) -> None:
    """deploy/prometheus/prometheus.yml as compose mounts it, with the rule files at their paths in this checkout:
    its targets carry a cluster label, and it loads the alert and the recording rules."""
    shipped = yaml.safe_load(promharness.SHIPPED_CONFIG.read_text())
    job = next(j for j in shipped["scrape_configs"] if j["job_name"] == "bridgekeeper")
    assert job["static_configs"] == [
        {"targets": ["bk1:9404", "bk2:9404", "bk3:9404"], "labels": {"cluster": "bridgekeeper"}}
    ]
    assert shipped["rule_files"] == ["/etc/prometheus/alerts.yaml", "/etc/prometheus/recording_rules.yaml"]
    config = promharness.config_for({"a": ["bk1:9404"], "b": ["bk1.b:9404"]}, interval="10s")
    entries = config["scrape_configs"][0]["static_configs"]
    assert [e["labels"]["cluster"] for e in entries] == ["a", "b"]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    promharness.check_config(path)
    broken = {**config, "rule_files": [str(tmp_path / "missing.yaml")]}
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(AssertionError):
        promharness.check_config(path)

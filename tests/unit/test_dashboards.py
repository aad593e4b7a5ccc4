"""The dashboards and alert rules: committed files equal what observability/ generates, every metric they name
is one a node exports, every panel says what it shows in which unit, and promtool accepts the rules and passes
their unit tests. (tests/e2e/test_prometheus.py runs every expression against a real Prometheus.)"""

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
from observability import alerts, dashboards
from observability.generate import OUT, generated, stale, write
from tests import promharness

PROMTOOL = shutil.which("promtool") or "promtool (Debian's prometheus package; ./dev installs it)"
METRIC = re.compile(r"\b(bridgekeeper_[a-z_]+|up)\b(?!\s*\()")


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
    assert "bridgekeeper_controller_active" in used and len(used) > 25
    assert sorted(used - names) == []


def test_the_metric_check_can_fail() -> None:
    assert "bridgekeeper_controller_activ" not in exported()
    assert METRIC.findall('sum(rate(bridgekeeper_x_total{a="b"}[5m])) / up') == ["bridgekeeper_x_total", "up"]


@pytest.mark.parametrize("name", sorted(dashboards.files()))
def test_every_panel_has_a_unit_a_description_and_the_datasource_variable(name: str) -> None:
    board = json.loads((OUT / name).read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
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


def test_every_alert_has_annotations_and_a_runbook() -> None:
    rules = alerts.rules()["groups"][0]["rules"]  # type: ignore[index]
    assert len(rules) == len(alerts.ALERTS) >= 10
    for rule in rules:
        assert set(rule["annotations"]) == {"summary", "description", "runbook"}, rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical")


def test_promtool_checks_the_rules_and_passes_their_unit_tests() -> None:
    check = subprocess.run([PROMTOOL, "check", "rules", "alerts.yaml"], cwd=OUT, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {len(alerts.ALERTS)} rules found" in check.stdout
    test = subprocess.run([PROMTOOL, "test", "rules", "alerts_test.yaml"], cwd=OUT, capture_output=True, text=True)
    assert test.returncode == 0, test.stdout + test.stderr


def test_promtool_unit_tests_fail_when_an_alert_does_not_fire(tmp_path: Path) -> None:
    shutil.copy(OUT / "alerts.yaml", tmp_path / "alerts.yaml")
    text = (OUT / "alerts_test.yaml").read_text()
    (tmp_path / "alerts_test.yaml").write_text(text.replace("0x4 3x8 0x4", "0x16"))  # offline partitions never rise
    test = subprocess.run([PROMTOOL, "test", "rules", "alerts_test.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert test.returncode != 0
    assert "BridgekeeperOfflinePartitions" in test.stdout + test.stderr


def test_promtool_checks_the_shipped_prometheus_config(tmp_path: Path) -> None:
    """deploy/prometheus/prometheus.yml as compose mounts it, with the rule file at its path in this checkout."""
    shipped = yaml.safe_load(promharness.SHIPPED_CONFIG.read_text())
    targets = shipped["scrape_configs"][0]["static_configs"][0]["targets"]
    assert targets == ["bk1:9404", "bk2:9404", "bk3:9404"]
    assert shipped["rule_files"] == ["/etc/prometheus/alerts.yaml"]
    config = promharness.config_for(targets, interval=shipped["global"]["scrape_interval"])
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    promharness.check_config(path)
    broken = {**config, "rule_files": [str(tmp_path / "missing.yaml")]}
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(AssertionError):
        promharness.check_config(path)

"""The metrics the dashboards read that are not request counters: ZooKeeper session state and transitions, the
bridge-progress routes, forwarding retries, fenced writes, replication throttles. Each series exists (at 0) from
the start, so a panel or alert over it has data before the first event, and moves when its event happens."""

from __future__ import annotations

from controller.broker.replicas import CatchUpStatus
from controller.metrics import FORWARDING_RETRY_REASONS, NodeMetrics
from controller.wire.apikeys import api_name

CREATE_TOPICS, METADATA = 19, 3


def value(m: NodeMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, {"broker_id": "4", **labels})


def test_session_state_is_one_hot_and_transitions_are_counted() -> None:
    m = NodeMetrics(4)
    on_state = m.session_listener("broker")
    states = {
        s: value(m, "bridgekeeper_zookeeper_session_state", session="broker", state=s)
        for s in ("CONNECTED", "SUSPENDED", "LOST")
    }
    assert states == {"CONNECTED": 0, "SUSPENDED": 0, "LOST": 1}  # not connected yet
    for state in ("CONNECTED", "SUSPENDED", "CONNECTED", "SUSPENDED", "LOST", "CONNECTED"):
        on_state(state)
    assert value(m, "bridgekeeper_zookeeper_session_state", session="broker", state="CONNECTED") == 1
    assert value(m, "bridgekeeper_zookeeper_session_state", session="broker", state="LOST") == 0
    events = {
        e: value(m, "bridgekeeper_zookeeper_session_events_total", session="broker", event=e)
        for e in ("connect", "disconnect", "expire")
    }
    assert events == {"connect": 3, "disconnect": 2, "expire": 1}
    # A controller identity's session is a series of its own.
    m.session_listener("controller")
    assert value(m, "bridgekeeper_zookeeper_session_state", session="controller", state="LOST") == 1
    assert value(m, "bridgekeeper_zookeeper_session_state", session="broker", state="CONNECTED") == 1


def test_admin_routes_exist_for_every_forwardable_api_served_and_count() -> None:
    m = NodeMetrics(4, api_keys=[CREATE_TOPICS, METADATA])
    name = api_name(CREATE_TOPICS)
    for route in ("forwarded", "controller", "direct"):
        assert value(m, "bridgekeeper_admin_requests_total", api=name, route=route) == 0
    assert value(m, "bridgekeeper_admin_requests_total", api=api_name(METADATA), route="direct") is None  # a read
    m.admin_request(CREATE_TOPICS, "forwarded")
    m.admin_request(CREATE_TOPICS, "forwarded")
    m.admin_request(CREATE_TOPICS, "direct")
    assert value(m, "bridgekeeper_admin_requests_total", api=name, route="forwarded") == 2
    assert value(m, "bridgekeeper_admin_requests_total", api=name, route="direct") == 1


def test_retries_fenced_writes_and_completions_count_from_zero() -> None:
    m = NodeMetrics(4)
    for reason in FORWARDING_RETRY_REASONS:
        assert value(m, "bridgekeeper_forwarding_retries_total", reason=reason) == 0
    m.retry("not_controller")
    assert value(m, "bridgekeeper_forwarding_retries_total", reason="not_controller") == 1
    assert value(m, "bridgekeeper_zookeeper_fenced_writes_total") == 0
    m.fenced_write()
    assert value(m, "bridgekeeper_zookeeper_fenced_writes_total") == 1
    assert value(m, "bridgekeeper_reassignments_completed_total") == 0
    m.reassignments_done(3)
    assert value(m, "bridgekeeper_reassignments_completed_total") == 3


def test_catch_up_status_sets_the_throttle_gauges() -> None:
    m = NodeMetrics(4)
    assert value(m, "bridgekeeper_replication_throttle_rate_bytes", direction="leader") == 0
    m.catch_up(CatchUpStatus(catching_up=5, leader_throttled=3, follower_throttled=1, leader_rate=1e6, follower_rate=0))
    assert value(m, "bridgekeeper_replicas_catching_up") == 5
    assert value(m, "bridgekeeper_replication_throttled_replicas", direction="leader") == 3
    assert value(m, "bridgekeeper_replication_throttled_replicas", direction="follower") == 1
    assert value(m, "bridgekeeper_replication_throttle_rate_bytes", direction="leader") == 1e6
    m.catch_up(CatchUpStatus())  # caught up: nothing in force
    assert value(m, "bridgekeeper_replication_throttled_replicas", direction="leader") == 0
    assert value(m, "bridgekeeper_replication_throttle_rate_bytes", direction="leader") == 0


def test_partition_counts_exist_only_once_a_replica_manager_reports_them() -> None:
    """Strimzi's "Brokers Online" counts the LeaderCount series: a node without a broker role must have none."""
    m = NodeMetrics(4)
    assert value(m, "bridgekeeper_leader_partitions") is None
    assert value(m, "bridgekeeper_replica_partitions") is None
    m.partition_counts(2, 5)
    assert (value(m, "bridgekeeper_leader_partitions"), value(m, "bridgekeeper_replica_partitions")) == (2, 5)
    m.partition_counts(0, 1)
    assert (value(m, "bridgekeeper_leader_partitions"), value(m, "bridgekeeper_replica_partitions")) == (0, 1)

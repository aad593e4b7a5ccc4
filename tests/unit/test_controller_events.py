"""Each controller event maps to the Kafka ControllerState whose ControllerStats timer it feeds."""

from __future__ import annotations

from controller.active import events as ev
from controller.metrics import NodeMetrics


def test_events_map_to_kafka_controller_states() -> None:
    assert ev.controller_state(ev.BrokerChange()) == "BrokerChange"
    assert ev.controller_state(ev.ZkReassignment(created=True)) == "AlterPartitionReassignment"
    assert ev.controller_state(ev.ApiCall("AlterPartition", lambda: None)) == "IsrChange"
    assert ev.controller_state(ev.ApiCall("ListPartitionReassignments", lambda: None)) == "ListPartitionReassignment"
    assert ev.controller_state(ev.ApiCall("Snapshot", lambda: None)) is None  # an internal read, not a state
    assert ev.controller_state(ev.Tick()) is None  # idle


def test_every_state_has_a_series_before_its_first_event() -> None:
    metrics = NodeMetrics(3)
    for state in ev.CONTROLLER_STATES:
        count = metrics.registry.get_sample_value(
            "bridgekeeper_controller_event_duration_seconds_count", {"broker_id": "3", "state": state}
        )
        assert count == 0, state
    metrics.controller_event("TopicChange", 0.002)
    labels = {"broker_id": "3", "state": "TopicChange"}
    assert metrics.registry.get_sample_value("bridgekeeper_controller_event_duration_seconds_count", labels) == 1


def test_queue_time_is_recorded_beside_processing_time() -> None:
    metrics = NodeMetrics(3)
    metrics.controller_event("BrokerChange", 0.001, 0.25)
    labels = {"broker_id": "3", "state": "BrokerChange"}
    assert metrics.registry.get_sample_value("bridgekeeper_controller_event_queue_time_seconds_sum", labels) == 0.25
    assert metrics.registry.get_sample_value("bridgekeeper_controller_event_duration_seconds_sum", labels) == 0.001

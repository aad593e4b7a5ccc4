"""The few admin calls the rehearsal makes itself (its own topics, the reassignment drill's throttles and
moves), through the reassign tool's kafka-python admin so errors arrive as one :class:`AdminError` line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import tenacity

from migrate.reassign.admin import AdminError, ReassignAdmin
from migrate.rehearse.cluster import ClusterError


class KafkaUnreachable(ClusterError):
    """No broker of the bootstrap list answered: before the rolls that is exit 3; during them, a failed step."""


def _admin(bootstrap: Sequence[str]) -> ReassignAdmin:
    try:
        return ReassignAdmin(
            {"bootstrap_servers": list(bootstrap), "request_timeout_ms": 30000, "client_id": "bridgekeeper-rehearse"}
        )
    except AdminError as exc:
        raise KafkaUnreachable(f"cannot reach the cluster at {','.join(bootstrap)}: {exc}") from None


def create_topics(bootstrap: Sequence[str], topics: Mapping[str, tuple[int, int, Mapping[str, str]]]) -> None:
    """Create each topic (partitions, replication factor, configs); one that exists already is kept."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    with _admin(bootstrap) as admin:
        client = admin._client  # the tool's wrapper has no create_topics; the client underneath does
        for name, (partitions, rf, configs) in topics.items():
            try:
                client.create_topics([NewTopic(name, partitions, rf, topic_configs=dict(configs))], timeout_ms=30000)
            except TopicAlreadyExistsError:
                pass
            except Exception as exc:
                raise ClusterError(f"cannot create topic {name}: {type(exc).__name__}: {exc}") from None


@tenacity.retry(
    retry=tenacity.retry_if_exception_type(ClusterError),
    stop=tenacity.stop_after_delay(20),
    wait=tenacity.wait_fixed(1),
    reraise=True,
)
def set_configs(
    bootstrap: Sequence[str],
    topics: Mapping[str, Mapping[str, str | None]],
    brokers: Mapping[int, Mapping[str, str | None]],
) -> None:
    """Tried again for a while: a client's metadata can lag a broker that just registered again (a broker
    config goes to that broker, and the client answers UnknownBrokerIdError until it has seen it)."""
    with _admin(bootstrap) as admin:
        try:
            admin.alter_configs(topics, brokers)
        except AdminError as exc:
            raise ClusterError(f"cannot set throttles: {exc}") from None


def reassign(bootstrap: Sequence[str], targets: Mapping[tuple[str, int], Sequence[int]]) -> None:
    with _admin(bootstrap) as admin:
        try:
            results = admin.alter_reassignments(targets)
        except AdminError as exc:
            raise ClusterError(f"cannot start the reassignment: {exc}") from None
    errors = {tp: msg for tp, (code, msg) in results.items() if code != 0}
    if errors:
        raise ClusterError(f"reassignment refused: {errors}")

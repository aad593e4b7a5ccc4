"""Replica catch-up on brokers: the leader side of ISR expansion, without storing any message data.

Every broker leads some partitions. A live follower that is not in the ISR "catches up" in
``bytes_per_partition / rate`` seconds (our stand-in for fetching the log), after which the leader asks
the controller to add it with AlterPartition, exactly as a Kafka leader does at IBP >= 2.7-IV2. This is
what lets reassignments complete and returning brokers rejoin the ISR.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.logtags import UNEXPECTED
from controller.security.settings import SaslCredentials
from controller.wire.client import ClientError, KafkaClient
from controller.wire.codec import build
from zkmodel.uuid import is_valid_uuid

log = logging.getLogger(__name__)
ALTER_PARTITION = 56
ALTER_PARTITION_VERSION = 2
#: Throttles are read again once this many times their last read's cost has passed (and at once for a topic
#: not read yet): every tick in a small cluster (~1 ms a read), at most ~5% of the thread with 10,000 topics
#: catching up, where one read is a 10,000-znode multiRead (~0.2 s) that every 0.1 s tick had repeated. The
#: steps themselves are spaced the same way (:meth:`ReplicaManager._run`).
THROTTLE_COST_FACTOR = 20.0


@dataclass(frozen=True)
class Throttles:
    """Replication throttles as Kafka configures them: per-broker rates (bytes/s) and, per topic, which
    ``partition:broker`` replicas they apply to ("*" = all)."""

    leader_rate: dict[int, float]
    follower_rate: dict[int, float]
    leader_replicas: dict[str, str]
    follower_replicas: dict[str, str]

    @classmethod
    def from_configs(
        cls,
        default: Mapping[str, str],
        brokers: Mapping[int, Mapping[str, str]],
        topics: Mapping[str, Mapping[str, str]],
    ) -> Throttles:
        """From the dynamic configs: broker rates (per broker, else the cluster default ``default``) and the
        topics' throttled-replica lists; values that do not parse are ignored, as Kafka ignores them."""
        leader_rate: dict[int, float] = {}
        follower_rate: dict[int, float] = {}
        for broker, config in brokers.items():
            merged = {**default, **config}
            for key, target in (
                ("leader.replication.throttled.rate", leader_rate),
                ("follower.replication.throttled.rate", follower_rate),
            ):
                with contextlib.suppress(KeyError, ValueError):
                    target[broker] = float(merged[key])
        leader_replicas: dict[str, str] = {}
        follower_replicas: dict[str, str] = {}
        for topic, cfg in topics.items():
            if "leader.replication.throttled.replicas" in cfg:
                leader_replicas[topic] = cfg["leader.replication.throttled.replicas"]
            if "follower.replication.throttled.replicas" in cfg:
                follower_replicas[topic] = cfg["follower.replication.throttled.replicas"]
        return cls(leader_rate, follower_rate, leader_replicas, follower_replicas)

    @staticmethod
    def applies(spec: str | None, partition: int, broker: int) -> bool:
        if not spec:
            return False
        if spec.strip() == "*":
            return True
        wanted = f"{partition}:{broker}"
        return any(item.strip() == wanted for item in spec.split(","))


NO_THROTTLES = Throttles({}, {}, {}, {})


@dataclass(frozen=True)
class CatchUp:
    bytes_per_partition: int
    rate_bytes_per_sec: int

    @property
    def seconds(self) -> float:
        return 0.0 if self.rate_bytes_per_sec <= 0 else self.bytes_per_partition / self.rate_bytes_per_sec


@dataclass(frozen=True)
class CatchUpStatus:
    """What this broker's replication looks like now, for the reassignment dashboard: followers of
    partitions it leads that are still catching up, how many of them a leader or follower replication
    throttle slows, and this broker's configured throttle rates (bytes/s, 0 = none read or none set: the
    rates are read only while something catches up)."""

    catching_up: int = 0
    leader_throttled: int = 0
    follower_throttled: int = 0
    leader_rate: float = 0.0
    follower_rate: float = 0.0


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        cache: Any,
        broker_epoch: Callable[[], int],
        listener: str,
        catch_up: CatchUp,
        *,
        tick_seconds: float = 0.1,
        throttles: Callable[[set[str]], Throttles] = lambda _topics: NO_THROTTLES,
        sasl: SaslCredentials | None = None,
        tls: ssl.SSLContext | None = None,
        legacy_isr: Callable[[dict[tuple[str, int], tuple[int, tuple[int, ...], int]]], int] | None = None,
        on_status: Callable[[CatchUpStatus], None] | None = None,
        on_counts: Callable[[int, int], None] | None = None,
    ) -> None:
        self.on_status = on_status
        #: Called with (leaders, replicas) each time a new snapshot is scanned: Kafka's ReplicaManager
        #: LeaderCount and PartitionCount for this broker.
        self.on_counts = on_counts
        #: Partitions this broker leads / holds a replica of in the last snapshot scanned. Kafka counts the
        #: partitions its LeaderAndIsr requests made it host (every replica in the assignment, adding ones
        #: included) and those it leads; here the assignment in ZooKeeper stands for those requests.
        self.leader_count = 0
        self.partition_count = 0
        #: Below IBP 2.8-IV0 (no topic ids, so no AlterPartition): write the ISR to ZooKeeper as Kafka's
        #: pre-2.7-IV2 leaders did (controller.store.legacy_isr).
        self.legacy_isr = legacy_isr
        self.sasl = sasl
        self.tls = tls
        self.throttles = throttles
        self.broker_id = broker_id
        self.cache = cache
        self.broker_epoch = broker_epoch
        self.listener = listener
        self.catch_up = catch_up
        self.tick_seconds = tick_seconds
        #: (topic, partition, follower, leader_epoch) -> bytes the follower has copied so far
        self._copied: dict[tuple[str, int, int, int], float] = {}
        self._last_step: float | None = None
        self._scanned: Any = None  # the snapshot _lagging last scanned, and what it found
        self._scanned_lagging: list[tuple[Any, Any, int]] = []
        #: the last throttles read, for which topics, when, and what the read cost (seconds)
        self._throttled: tuple[Throttles, frozenset[str], float, float] | None = None
        self._scan_cost = 0.0  # seconds the last step spent finding what caught up (see _run)
        self._client: KafkaClient | None = None
        self._client_for: int | None = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"replicas-{broker_id}", daemon=True)
        self.requests_sent = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        if self._client is not None:
            self._client.close()

    def _run(self) -> None:
        """A step per tick, or per THROTTLE_COST_FACTOR times the last step's cost when that is longer: with
        tens of thousands of replicas catching up a step costs ~50 ms, and every 0.1 s it took half of the
        node's interpreter from the controller and the metadata cache. Progress is computed from elapsed
        time, so a longer interval only delays when a caught-up replica is reported, by at most that. Only the
        scan counts as cost: an AlterPartition's round trip to the controller is waiting, not work."""
        wait = self.tick_seconds
        while not self._stopped.wait(wait):
            self._scan_cost = 0.0
            try:
                self.step()
            except ClientError as exc:
                log.info("broker %d: AlterPartition not delivered (%s); will retry", self.broker_id, exc)
            except Exception:
                log.exception("%s replica manager of broker %d failed", UNEXPECTED, self.broker_id)
            wait = max(self.tick_seconds, THROTTLE_COST_FACTOR * self._scan_cost)

    def ready(
        self, snapshot: Any, now: float, throttles: Throttles = NO_THROTTLES
    ) -> dict[tuple[str, str, int], tuple[int, tuple[int, ...], int]]:
        """Partitions this broker leads whose lagging live followers have caught up: the new ISR for each.

        Keyed by (topic, topic id, partition); the value is (leader epoch, new ISR, partition epoch).
        Followers copy ``bytes_per_partition`` at the catch-up rate, or slower where a leader or follower
        replication throttle applies; a throttle's bandwidth is shared by the replicas it throttles.
        """
        elapsed = 0.0 if self._last_step is None else max(0.0, now - self._last_step)
        self._last_step = now
        lagging = self._lagging(snapshot)
        leader_throttled = {
            (t.name, p.partition, f)
            for t, p, f in lagging
            if throttles.applies(throttles.leader_replicas.get(t.name), p.partition, self.broker_id)
        }
        follower_throttled = {
            (t.name, p.partition, f)
            for t, p, f in lagging
            if throttles.applies(throttles.follower_replicas.get(t.name), p.partition, f)
        }
        per_follower: dict[int, int] = {}
        for _t, _p, f in follower_throttled:
            per_follower[f] = per_follower.get(f, 0) + 1
        out: dict[tuple[str, str, int], tuple[int, tuple[int, ...], int]] = {}
        seen: set[tuple[str, int, int, int]] = set()
        for topic, p, follower in lagging:
            rate = float(self.catch_up.rate_bytes_per_sec)
            replica = (topic.name, p.partition, follower)
            if replica in leader_throttled and self.broker_id in throttles.leader_rate:
                rate = min(rate, throttles.leader_rate[self.broker_id] / len(leader_throttled))
            if replica in follower_throttled and follower in throttles.follower_rate:
                rate = min(rate, throttles.follower_rate[follower] / per_follower[follower])
            key = (topic.name, p.partition, follower, p.leader_epoch)
            seen.add(key)
            copied = self._copied[key] = self._copied.get(key, 0.0) + rate * elapsed
            if copied >= self.catch_up.bytes_per_partition or self.catch_up.rate_bytes_per_sec <= 0:
                entry = out.setdefault(
                    (topic.name, topic.topic_id, p.partition), (p.leader_epoch, p.isr, p.partition_epoch)
                )
                out[(topic.name, topic.topic_id, p.partition)] = (entry[0], (*entry[1], follower), entry[2])
        for key in set(self._copied) - seen:
            del self._copied[key]  # joined the ISR, went away, or a new leader epoch restarted the copy
        if self.on_status is not None:
            self.on_status(
                CatchUpStatus(
                    catching_up=len(lagging),
                    leader_throttled=len(leader_throttled),
                    follower_throttled=len(follower_throttled),
                    leader_rate=throttles.leader_rate.get(self.broker_id, 0.0),
                    follower_rate=throttles.follower_rate.get(self.broker_id, 0.0),
                )
            )
        return out

    def _lagging(self, snapshot: Any) -> list[tuple[Any, Any, int]]:
        """(topic, partition, follower) for each live follower missing from the ISR of a partition this
        broker leads. A scan of every partition, so it is done once per snapshot, not once per tick: at a
        million partitions a scan takes about a second, and the snapshot changes only when ZooKeeper does.
        The same pass counts the partitions this broker leads and hosts (:attr:`leader_count`,
        :attr:`partition_count`, reported to ``on_counts``), so those cost no second scan."""
        if snapshot is self._scanned:
            return self._scanned_lagging
        lagging: list[tuple[Any, Any, int]] = []
        leaders = hosted = 0
        me = self.broker_id
        for topic in snapshot.topics.values():
            # AlterPartition v2+ names topics by id (IBP >= 2.8-IV0): a topic without one cannot have its ISR
            # grown, but its partitions still count as led and hosted.
            alterable = self.legacy_isr is not None or bool(topic.topic_id and is_valid_uuid(topic.topic_id))
            for p in topic.partitions.values():
                if me in p.replicas:
                    hosted += 1
                if p.leader != me:
                    continue
                leaders += 1
                if not alterable:
                    continue
                for follower in p.replicas:
                    # A replica a reassignment is removing gets StopReplica in Kafka once it leaves the ISR:
                    # it never fetches again, so it must not be added back while the move finishes.
                    if follower not in p.isr and follower in snapshot.brokers and follower not in p.removing:
                        lagging.append((topic, p, follower))
        self._scanned, self._scanned_lagging = snapshot, lagging
        self.leader_count, self.partition_count = leaders, hosted
        if self.on_counts is not None:
            self.on_counts(leaders, hosted)
        return lagging

    def _throttles_for(self, topics: set[str]) -> Throttles:
        """The throttles for ``topics``: the last read's if it covered them and is recent for its cost (see
        THROTTLE_COST_FACTOR), else read now."""
        now = time.monotonic()
        if self._throttled is not None:
            throttles, covered, read_at, cost = self._throttled
            if topics <= covered and now - read_at < THROTTLE_COST_FACTOR * cost:
                return throttles
        throttles = self.throttles(topics)
        done = time.monotonic()
        self._throttled = (throttles, frozenset(topics), done, done - now)
        return throttles

    def step(self) -> int:
        started = time.monotonic()
        snapshot = self.cache.snapshot()
        lagging_topics = {topic.name for topic, _p, _f in self._lagging(snapshot)}
        throttles = self._throttles_for(lagging_topics) if lagging_topics else NO_THROTTLES
        ready = self.ready(snapshot, time.monotonic(), throttles)
        self._scan_cost = time.monotonic() - started
        if not ready:
            return 0
        if self.legacy_isr is not None:
            return self.legacy_isr({(name, partition): value for (name, _tid, partition), value in ready.items()})
        client = self._controller_client(snapshot)
        if client is None:
            return 0
        from kio.index import load_request_schema

        request_cls = load_request_schema(ALTER_PARTITION, ALTER_PARTITION_VERSION)
        module = __import__(request_cls.__module__, fromlist=["TopicData", "PartitionData"])
        by_topic: dict[str, list[Any]] = {}
        for (_name, topic_id, partition), (leader_epoch, isr, partition_epoch) in ready.items():
            by_topic.setdefault(topic_id, []).append(
                build(
                    module.PartitionData,
                    partition_index=partition,
                    leader_epoch=leader_epoch,
                    new_isr=isr,
                    leader_recovery_state=0,
                    partition_epoch=partition_epoch,
                )
            )
        body = build(
            request_cls,
            broker_id=self.broker_id,
            broker_epoch=self.broker_epoch(),
            topics=tuple(
                build(module.TopicData, topic_id=uuid.UUID(bytes=_b64(tid)), partitions=tuple(parts))
                for tid, parts in by_topic.items()
            ),
        )
        response = client.request(ALTER_PARTITION, ALTER_PARTITION_VERSION, body)
        self.requests_sent += 1
        if int(response.error_code) != 0:
            log.info("broker %d: AlterPartition refused with error %d", self.broker_id, int(response.error_code))
            if int(response.error_code) == 41:  # NOT_CONTROLLER: find the controller again next time
                self._drop_client()
            return 0
        accepted = sum(1 for t in response.topics for p in t.partitions if int(p.error_code) == 0)
        return accepted

    def _controller_client(self, snapshot: Any) -> KafkaClient | None:
        controller = snapshot.controller_id
        broker = snapshot.brokers.get(controller)
        if broker is None:
            return None
        if self._client is not None and self._client_for == controller:
            return self._client
        self._drop_client()
        endpoint = broker.registration.endpoint(self.listener)
        if endpoint is None:
            return None
        self._client = KafkaClient(
            endpoint.host,
            endpoint.port,
            client_id=f"broker-{self.broker_id}-alter-partition",
            sasl=self.sasl,
            tls=self.tls,
        )
        self._client_for = controller
        return self._client

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client, self._client_for = None, None


def _b64(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "==")

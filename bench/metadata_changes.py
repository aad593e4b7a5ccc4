"""The ZooKeeper side of :mod:`bench.metadata_scale` and its change-to-serve figures: brokers 1-6 registered (the
tree's replicas live there), a partition's leader moved and topics created as a controller would write them, and
the time from each write's completion to the first Metadata answer showing it, by topic and by all-topics
polls."""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient

from bench import nodescale
from bench.failover_load import Progress
from bench.metadata_wire import ANSWER_TIMEOUT_S, connect, decode_metadata, metadata_frame, recv_answer
from bench.zkpopulate import Node as Znode
from bench.zkpopulate import populate, topic_names
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import random_uuid

#: The brokers the tree's replicas live on (bench.zkpopulate places them on 1-6), registered by this process.
FAKE_BROKERS = range(1, 7)
#: Longest the change-to-serve loop waits for a change to show.
SHOW_TIMEOUT_S = 60.0


def register_brokers(client: KazooClient) -> None:
    """Brokers 1-6, as :func:`bench.nodescale.register_fake_brokers` registers 2-6 (ephemeral, this session)."""
    nodescale.register_fake_brokers(client)
    for broker_id in set(FAKE_BROKERS) - set(nodescale.FAKE_BROKERS):
        endpoint = EndPoint("PLAINTEXT", "127.0.0.1", 19_000 + broker_id, "PLAINTEXT")
        registration = BrokerRegistration((endpoint,), int(time.time() * 1000))
        client.create(f"/brokers/ids/{broker_id}", registration.encode(), ephemeral=True, makepath=True)


def move_leader(client: KazooClient, topic: str, partition: int) -> tuple[int, int]:
    """Rewrite one partition's state: leader to the next ISR member, leader epoch + 1 (conditional on the
    version read). Returns the new (leader, leader epoch) once ZooKeeper has acknowledged the write."""
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    data, stat = client.get(path)
    state = PartitionState.decode(path, data)
    leader = state.isr[(state.isr.index(state.leader) + 1) % len(state.isr)]
    client.set(path, state._replace(leader=leader, leader_epoch=state.leader_epoch + 1).encode(), version=stat.version)
    return leader, state.leader_epoch + 1


def new_topic(name: str, partitions: int, seed: int) -> tuple[list[Znode], dict[int, int]]:
    """A topic as the tree's are (v3 assignment with an id, null ``partitions`` and partition znodes,
    states); returns its znodes and each partition's leader."""
    assignment = {p: tuple((seed + p + r) % len(FAKE_BROKERS) + 1 for r in range(3)) for p in range(partitions)}
    base = f"/brokers/topics/{name}"
    nodes: list[Znode] = [
        (base, TopicAssignment(assignment, topic_id=random_uuid()).encode()),
        (f"{base}/partitions", None),
    ]
    for p, replicas in assignment.items():
        nodes.append((f"{base}/partitions/{p}", None))
        state = PartitionState(leader=replicas[0], leader_epoch=0, controller_epoch=7, isr=replicas)
        nodes.append((f"{base}/partitions/{p}/state", state.encode()))
    return nodes, {p: r[0] for p, r in assignment.items()}


@dataclass
class Shown:
    topic_s: float
    all_s: float | None


class Poller:
    """Two connections to the node: one polling a topic's Metadata, one all-topics Metadata."""

    def __init__(self, port: int) -> None:
        self.topic_sock = connect(port, SHOW_TIMEOUT_S)
        self.all_sock = connect(port, ANSWER_TIMEOUT_S)
        self.all_frame = metadata_frame(None)
        self.buf = bytearray()
        #: Round trip of every topic poll: the resolution of the figures (a poll also holds the node's GIL).
        self.topic_rtts: list[float] = []
        #: Round trip of each all-topics answer that showed a change: the node rebuilding its cached body.
        self.rebuild_rtts: list[float] = []

    def close(self) -> None:
        self.topic_sock.close()
        self.all_sock.close()

    def all_topics(self) -> bytes:
        self.all_sock.sendall(self.all_frame)
        self.buf, size = recv_answer(self.all_sock, self.buf)
        return bytes(self.buf[:size])

    def until_topic(self, topic: str, shows: Callable[[Any], bool], since: float) -> float:
        """Poll ``topic``'s Metadata until an answer ``shows`` the change; seconds from ``since`` to its arrival."""
        frame = metadata_frame([topic])
        deadline = since + SHOW_TIMEOUT_S
        while True:
            sent = time.monotonic()
            self.topic_sock.sendall(frame)
            self.buf, size = recv_answer(self.topic_sock, self.buf)
            arrived = time.monotonic()
            self.topic_rtts.append(arrived - sent)
            if shows(decode_metadata(bytes(self.buf[:size])).topics[0]):
                return arrived - since
            if arrived > deadline:
                raise TimeoutError(f"{topic}: the change did not show in Metadata within {SHOW_TIMEOUT_S:.0f}s")

    def until_all_differs(self, before: bytes, since: float) -> tuple[float, bytes]:
        deadline = since + SHOW_TIMEOUT_S
        while True:
            sent = time.monotonic()
            body = self.all_topics()
            arrived = time.monotonic()
            if body != before:
                self.rebuild_rtts.append(arrived - sent)
                return arrived - since, body
            if arrived > deadline:
                raise TimeoutError(f"all-topics Metadata did not change within {SHOW_TIMEOUT_S:.0f}s")


@dataclass
class Changes:
    shown: dict[str, list[Shown]]
    topic_rtts: list[float]  # every topic poll's round trip
    rebuild_rtts: list[float]  # the all-topics answers that showed a change (a rebuilt body)


def change_to_serve(client: KazooClient, port: int, args: argparse.Namespace, progress: Progress) -> Changes:
    rng = random.Random(15)
    names = topic_names(args.topics)
    out: dict[str, list[Shown]] = {"leader moved": [], "topic created": []}
    poller = Poller(port)

    def observe(
        kind: str, i: int, of: int, topic: str, shows: Callable[[Any], bool], before: bytes | None, since: float
    ) -> None:
        """Time until ``topic``'s Metadata shows the change (and, with ``before``, until the all-topics answer
        differs from it), record it under ``kind`` and say so."""
        shown = Shown(poller.until_topic(topic, shows, since), None)
        if before is not None:
            shown.all_s = poller.until_all_differs(before, since)[0]
        out[kind].append(shown)
        progress.show(f"{kind} {i + 1}/{of}: {describe(shown)}", force=True)
        time.sleep(0.02)

    try:
        for i in range(args.changes):
            topic, partition = rng.choice(names), rng.randrange(args.partitions)
            before = poller.all_topics() if i < args.all_topics_changes else None
            leader, epoch = move_leader(client, topic, partition)
            since = time.monotonic()

            def moved(t: Any, p: int = partition, leader: int = leader, epoch: int = epoch) -> bool:
                return any(
                    x.partition_index == p and x.leader_id == leader and x.leader_epoch == epoch for x in t.partitions
                )

            observe("leader moved", i, args.changes, topic, moved, before, since)
        for i in range(args.new_topics):
            name = f"bench-new-{i:04d}"
            nodes, leaders = new_topic(name, args.partitions, i)
            before = poller.all_topics() if i < args.all_topics_changes else None
            populate(client, nodes)
            since = time.monotonic()

            def created(t: Any, leaders: dict[int, int] = leaders) -> bool:
                return int(t.error_code) == 0 and {x.partition_index: x.leader_id for x in t.partitions} == leaders

            observe("topic created", i, args.new_topics, name, created, before, since)
    finally:
        poller.close()
    return Changes(out, poller.topic_rtts, poller.rebuild_rtts)


def describe(shown: Shown) -> str:
    text = f"topic Metadata after {shown.topic_s * 1000:.1f} ms"
    if shown.all_s is not None:
        text += f", all-topics after {shown.all_s * 1000:.1f} ms"
    return text

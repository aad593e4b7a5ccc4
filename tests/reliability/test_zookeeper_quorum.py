"""ZooKeeper ensemble faults under client load.

A 3-server ensemble, 3 node processes at IBP 3.9 (brokers forward admin writes to the controller, KIP-590),
the rehearsal's confluent-kafka and kafka-python load running throughout, and admin requests of our own sent
over raw sockets (kio-encoded) both straight to the active controller and through a forwarding broker:
CreateTopics, IncrementalAlterConfigs, CreateAcls, DeleteTopics, AlterPartitionReassignments.

1. One member down (a follower, then the leader): our requests succeed; while the ensemble re-elects a leader
   only retriable errors, and every one of ours succeeds within a few seconds of retrying.
2. Two members down (quorum lost), two waves (right away, and once the controller must presume its session
   lost): every request is answered, within its request timeout, on a connection that stays open, with
   REQUEST_TIMED_OUT or NOT_CONTROLLER on every entity: never UNKNOWN_SERVER_ERROR, never silence.
3. The two members back: the cluster recovers by itself (one controller, every node registered) and new
   requests succeed within a bounded time.

Then, with the load paused: every acknowledged write (the load's and ours, journaled alike) is in ZooKeeper,
every request answered with a definite error (NOT_CONTROLLER) left no trace, a timed-out one is absent or
complete (KIP-4), nothing is duplicated, every write to a controller-owned znode since the load started was
made by the session holding ``/controller`` (ZooKeeper's transaction log), every reassignment finished.
"""

from __future__ import annotations

import io
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import tenacity
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from migrate.rehearse.ledger import ECHOES
from migrate.rehearse.model import OpRecord
from testing.failover_soak import Failover, FailoverSoak, SoakOptions
from tests.integration.cluster import wait_for
from zkmodel.errorcodes import by_code

pytestmark = pytest.mark.reliability

SESSION_MS = 4000
NODE_REQUEST_TIMEOUT_MS = 8000
#: Our clients' request timeout: above the nodes' own, so an answer is the node's, not our timer firing.
CLIENT_TIMEOUT_S = 15.0
BODY_TIMEOUT = timedelta(milliseconds=5000)  # CreateTopics, DeleteTopics, AlterPartitionReassignments
RETRIABLE_WHILE_DOWN = {"REQUEST_TIMED_OUT", "NOT_CONTROLLER"}
CREATE, DELETE, CONFIG, ACL, MOVE = "create_topic", "delete_topic", "alter_config", "create_acl", "reassign"
KINDS = (CREATE, CONFIG, ACL, DELETE, MOVE)
TOPIC_RESOURCE, LITERAL, READ, ALLOW, SET = 2, 3, 3, 3, 0
PRINCIPAL = "User:raw"


class Dropped(Exception):
    """The server closed the connection without answering."""


class Silent(Exception):
    """No answer within the client's request timeout."""


def _schema(key: int, version: int) -> Any:
    return sys.modules[load_request_schema(key, version).__module__]


class Connection:
    """One client connection sending kio-encoded requests, each with the client's request timeout."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT_S)
        self.correlation = 0

    def request(self, key: int, version: int, body: Any) -> Any:
        self.correlation += 1
        req_cls = load_request_schema(key, version)
        header_cls = req_cls.__header_schema__
        buf = io.BytesIO()
        header: dict[str, Any] = {
            "request_api_key": key,
            "request_api_version": version,
            "correlation_id": self.correlation,
            "client_id": "quorum-test",
        }
        entity_writer(header_cls)(buf, header_cls(**header))
        entity_writer(req_cls)(buf, body)
        payload = buf.getvalue()
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._read(4))[0]
        data = self._read(size)
        resp_cls = load_response_schema(key, version)
        answered, offset = entity_reader(resp_cls.__header_schema__)(data, 0)
        assert answered.correlation_id == self.correlation
        return entity_reader(resp_cls)(data, offset)[0]

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except TimeoutError:
                raise Silent(f"no answer within {CLIENT_TIMEOUT_S:.0f} s") from None
            if not chunk:
                raise Dropped("the server closed the connection")
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


@dataclass
class Sent:
    kind: str
    route: str  # "controller" or "forwarded"
    port: int
    codes: list[int]
    elapsed: float
    kept_open: bool  # the same connection answered an ApiVersions afterwards
    record: OpRecord

    @property
    def names(self) -> list[str]:
        return [by_code(c).name for c in self.codes]


class RawAdmin:
    """Admin requests of our own, journaled as one more load worker ("raw") so that the ledger judges them with
    the load's: fresh entities only, one request per entity at a time, no entity touched after a failure."""

    def __init__(self, replicas_of: Callable[[], dict[str, list[int]]]) -> None:
        self.records: list[OpRecord] = []
        self.seq = 0
        self._lock = threading.Lock()
        self._replicas_of = replicas_of
        self.replicas: dict[str, list[int]] = {}

    def prefetch(self) -> None:
        self.replicas.update(self._replicas_of())

    def _origin(self, name: str) -> list[int]:
        if name not in self.replicas:
            wait_for(
                lambda: name in (found := self._replicas_of()) and bool(self.replicas.update(found)) is False,
                30,
                f"the replicas of {name}",
            )
        return self.replicas[name]

    def _request(self, kind: str, name: str, brokers: list[int]) -> tuple[int, int, Any, str, dict[str, Any]]:
        if kind == CREATE:
            m = _schema(19, 5)
            topic = m.CreatableTopic(name=name, num_partitions=1, replication_factor=2, assignments=(), configs=())
            return (
                19,
                5,
                m.CreateTopicsRequest(topics=(topic,), timeout=BODY_TIMEOUT, validate_only=False),
                f"topic:{name}",
                {"partitions": 1, "replication_factor": 2},
            )
        if kind == DELETE:
            body = _schema(20, 4).DeleteTopicsRequest(topic_names=(name,), timeout=BODY_TIMEOUT)
            return 20, 4, body, f"topic:{name}", {}
        if kind == CONFIG:
            m = _schema(44, 1)
            value = str(3_600_000 + len(self.records))
            config = m.AlterableConfig(name="retention.ms", config_operation=SET, value=value)
            resource = m.AlterConfigsResource(resource_type=TOPIC_RESOURCE, resource_name=name, configs=(config,))
            return (
                44,
                1,
                m.IncrementalAlterConfigsRequest(resources=(resource,), validate_only=False),
                f"topic:{name}",
                {"key": "retention.ms", "value": value, "incremental": True},
            )
        if kind == ACL:
            m = _schema(30, 2)
            creation = m.AclCreation(
                resource_type=TOPIC_RESOURCE,
                resource_name=name,
                resource_pattern_type=LITERAL,
                principal=PRINCIPAL,
                host="*",
                operation=READ,
                permission_type=ALLOW,
            )
            args = {
                "resource_type": "TOPIC",
                "resource": name,
                "pattern": "LITERAL",
                "principal": PRINCIPAL,
                "host": "*",
                "operation": "READ",
                "permission": "ALLOW",
            }
            return 30, 2, m.CreateAclsRequest(creations=(creation,)), f"acl:topic:{name}", args
        m = _schema(45, 0)
        origin = self._origin(name)
        target = [next(b for b in brokers if b not in origin), origin[0]]
        part = m.ReassignablePartition(partition_index=0, replicas=tuple(target))
        body = m.AlterPartitionReassignmentsRequest(
            timeout=BODY_TIMEOUT, topics=(m.ReassignableTopic(name=name, partitions=(part,)),)
        )
        return 45, 0, body, f"topic:{name}", {"partition": 0, "replicas": target, "from": origin}

    @staticmethod
    def _codes(key: int, response: Any) -> list[int]:
        if key == 19:
            return [int(t.error_code) for t in response.topics]
        if key == 20:
            return [int(r.error_code) for r in response.responses]
        if key == 44:
            return [int(r.error_code) for r in response.responses]
        if key == 30:
            return [int(r.error_code) for r in response.results]
        if int(response.error_code) != 0:
            return [int(response.error_code)]
        return [int(p.error_code) for t in response.responses for p in t.partitions]

    def send(self, kind: str, name: str, port: int, route: str, brokers: list[int]) -> Sent:
        with self._lock:
            key, version, body, entity, args = self._request(kind, name, brokers)
            self.seq += 1
            rec: OpRecord = {
                "worker": "raw",
                "client": "kio",
                "seq": self.seq,
                "op": kind,
                "entity": entity,
                "args": args,
                "started": time.time(),
                "ended": 0.0,
                "ok": False,
                "error": "UNKNOWN",
                "retriable": False,
                "forwardable": True,
            }
            self.records.append(rec)
        conn = Connection(port)
        started = time.monotonic()
        try:
            try:
                codes = self._codes(key, conn.request(key, version, body))
            except (Dropped, Silent) as exc:
                rec["error"], rec["ended"] = type(exc).__name__, time.time()
                return Sent(kind, route, port, [], time.monotonic() - started, False, rec)
            elapsed = time.monotonic() - started
            try:
                kept = (
                    int(
                        conn.request(
                            18,
                            3,
                            _schema(18, 3).ApiVersionsRequest(
                                client_software_name="quorum-test", client_software_version="1"
                            ),
                        ).error_code
                    )
                    == 0
                )
            except (Dropped, Silent, OSError):
                kept = False
        finally:
            conn.close()
        failed = [by_code(c) for c in codes if c != 0]
        rec["ended"] = time.time()
        rec["ok"] = not failed and bool(codes)
        rec["error"] = failed[0].name if failed else (None if codes else "NO_ENTITY")
        rec["retriable"] = all(e.retriable for e in failed) if failed else None
        return Sent(kind, route, port, codes, elapsed, kept, rec)


@pytest.fixture
def soak(tmp_path: Path) -> Iterator[FailoverSoak]:
    s = FailoverSoak(
        SoakOptions(
            data_dir=tmp_path / "quorum",
            rate=3.0,
            seed=2,
            session_timeout_ms=SESSION_MS,
            node_request_timeout_ms=NODE_REQUEST_TIMEOUT_MS,
        )
    )
    try:
        s.start()
        yield s
    finally:
        s.close()


def routes(soak: FailoverSoak) -> dict[str, int]:
    """The active controller's client port, and another node's (which forwards to it)."""
    assert soak.cluster is not None
    controller = soak.snapshot().controller
    assert controller is not None
    ports = {int(n.bootstrap.rsplit(":", 1)[1]): n.broker_id for n in soak.cluster.nodes()}
    direct = next(p for p, b in ports.items() if b == controller)
    forwarded = next(p for p, b in ports.items() if b != controller)
    return {"controller": direct, "forwarded": forwarded}


def round_of(raw: RawAdmin, tag: str, brokers: list[int], ports: dict[str, int], *, parallel: bool) -> list[Sent]:
    """Every kind through both routes: fresh topics and ACL resources for creates, the round's targets for the
    rest."""
    jobs: list[Callable[[], Sent]] = []
    for route, port in ports.items():
        for kind in KINDS:
            name = f"q-{tag}-{route[0]}-{'new' if kind == CREATE else 'acl' if kind == ACL else kind[:3]}"
            jobs.append(lambda k=kind, n=name, r=route, p=port: raw.send(k, n, p, r, brokers))  # type: ignore[misc]
    if not parallel:
        return [job() for job in jobs]
    with ThreadPoolExecutor(len(jobs)) as pool:
        return list(pool.map(lambda job: job(), jobs))


def retried_until_done(
    raw: RawAdmin, tag: str, brokers: list[int], ports: dict[str, int], deadline_s: float
) -> tuple[list[Sent], list[Sent]]:
    """Each request of a round sent until it succeeds (a failed one is retried on a fresh entity, per the ledger's
    ownership rule); returns (the successes, the failures met on the way)."""
    done: list[Sent] = []
    failures: list[Sent] = []

    def attempts(kind: str, route: str, port: int) -> Callable[[], Sent]:
        count = 0

        def once() -> Sent:
            nonlocal count
            count += 1
            suffix = f"{tag}{count}"
            if kind in (CONFIG, DELETE, MOVE):  # a target of its own for every attempt
                name = f"q-{suffix}-{route[0]}-{kind[:3]}"
                made = raw.send(CREATE, name, port, route, brokers)
                if made.names != ["NONE"]:
                    failures.append(made)
                    return made
            else:
                name = f"q-{suffix}-{route[0]}-{'new' if kind == CREATE else 'acl'}"
            sent = raw.send(kind, name, port, route, brokers)
            if sent.names != ["NONE"]:
                failures.append(sent)
            return sent

        return once

    for route, port in ports.items():
        for kind in KINDS:
            sent = tenacity.Retrying(
                stop=tenacity.stop_after_delay(deadline_s),
                wait=tenacity.wait_fixed(0.5),
                retry=tenacity.retry_if_result(lambda s: s.names != ["NONE"]),
                retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
            )(attempts(kind, route, port))
            assert sent is not None and sent.names == ["NONE"], (kind, route, [f.names for f in failures])
            done.append(sent)
    return done, failures


def load_errors(soak: FailoverSoak, since: float) -> list[str]:
    """The load's failed operations since ``since`` that a client may not retry. An echo is not one: a request
    repeated by a client or a forwarding broker (KIP-590 resends after a lost connection) after its first copy
    took effect hears TOPIC_ALREADY_EXISTS and the like, which for a name no one else uses says "done" (the
    ledger then holds the entity to the acknowledged outcome or its predecessor)."""
    return [
        f"{r['worker']}#{r['seq']} {r['op']} {r['entity']}: {r['error']}"
        for r in soak.records()
        if r["started"] >= since and not r["ok"] and not r["retriable"] and r["error"] not in ECHOES.get(r["op"], ())
    ]


def test_one_member_down_then_quorum_lost_then_back(soak: FailoverSoak) -> None:
    assert soak.cluster is not None and soak.load is not None
    zk = soak.cluster.stack.zk
    raw = RawAdmin(
        lambda: {
            t: list(a.partitions[0])
            for t, a in soak.snapshot().topics.items()
            if t.startswith("q-") and 0 in a.partitions
        }
    )
    brokers = sorted(soak.snapshot().brokers)
    ports = routes(soak)
    before = soak.snapshot()
    soak.load.resume()

    # -- targets for every round, while the ensemble is whole -----------------------------------------------
    for tag in ("f", "w1", "w2"):
        for route, port in ports.items():
            for kind in (CONFIG, DELETE, MOVE):
                name = f"q-{tag}-{route[0]}-{kind[:3]}"
                sent = raw.send(CREATE, name, port, route, brokers)
                assert sent.names == ["NONE"], (name, sent.names)
    raw.prefetch()  # the reassignments' origins, read while ZooKeeper can still be read

    # -- 1a. a follower down: nothing but successes ------------------------------------------------------------
    follower = next(m for m in zk.members if zk.mode(m.myid) == "follower")
    phase = time.time()
    zk.kill(follower.myid, signal.SIGTERM)
    time.sleep(2.0)  # the nodes connected to it reconnect to the others (kazoo: within half a second)
    first = round_of(raw, "f", brokers, ports, parallel=False)
    assert all(s.names == ["NONE"] and s.kept_open for s in first), [(s.kind, s.route, s.names) for s in first]
    zk.restart(follower.myid, timeout=60)
    assert not load_errors(soak, phase)

    # -- 1b. the leader down: retriable errors while the ensemble re-elects, then successes --------------------
    leader = zk.leader()
    assert leader is not None
    phase = time.time()
    zk.kill(leader.myid, signal.SIGTERM)
    _done, failures = retried_until_done(raw, "l", brokers, ports, deadline_s=30.0)
    assert {n for f in failures for n in f.names} <= RETRIABLE_WHILE_DOWN | {"NONE"}, [f.names for f in failures]
    assert all(f.kept_open or not f.codes for f in failures)
    zk.restart(leader.myid, timeout=60)
    assert not load_errors(soak, phase)
    wait_for(lambda: soak.healthy()[0], 60, "the cluster healthy after the leader's return")

    # -- 2. quorum lost: every request answered in time, retriably, on an open connection ----------------------
    down = [m for m in zk.members][:2]
    for m in down:
        zk.kill(m.myid, signal.SIGTERM)
    alone = next(m for m in zk.members if m not in down)
    wait_for(lambda: zk.mode(alone.myid) is None, 30, "the last member to stop serving (no quorum)")
    lost_at = time.monotonic()
    waves = [round_of(raw, "w1", brokers, ports, parallel=True)]
    # Past the session timeout the controller presumes its session lost and steps down: the second wave
    # meets a cluster without an active controller.
    time.sleep(max(0.0, SESSION_MS / 1000 + 1.5 - (time.monotonic() - lost_at)))
    waves.append(round_of(raw, "w2", brokers, ports, parallel=True))
    for wave in waves:
        for s in wave:
            what = f"{s.kind} via {s.route} ({s.port}): {s.names} after {s.elapsed:.1f} s; {s.record['error']}"
            assert s.codes, f"no answer: {what}"
            assert s.kept_open, f"connection not kept: {what}"
            assert s.elapsed < CLIENT_TIMEOUT_S, what
            assert set(s.names) <= RETRIABLE_WHILE_DOWN, what
            assert "UNKNOWN_SERVER_ERROR" not in s.names, what
    seen = {n for wave in waves for s in wave for n in s.names}
    assert "REQUEST_TIMED_OUT" in seen, seen
    for i, wave in enumerate(waves, 1):
        print(f"quorum lost, wave {i}: " + ", ".join(f"{s.kind}/{s.route} {s.names[0]} {s.elapsed:.1f}s" for s in wave))

    # -- 3. the two members back: service resumes by itself ---------------------------------------------------
    for m in down:
        zk.restart(m.myid, timeout=60)
    back_at = time.monotonic()
    wait_for(lambda: soak.healthy()[0], 90, "the cluster healthy again, with no operator action")
    ports = routes(soak)
    _done, failures = retried_until_done(raw, "r", brokers, ports, deadline_s=60.0)
    resumed_s = time.monotonic() - back_at
    assert resumed_s < 120, resumed_s
    assert {n for f in failures for n in f.names} <= RETRIABLE_WHILE_DOWN | {"NONE"}, [f.names for f in failures]

    # -- every acknowledged write present, every definite failure without trace, no foreign writer --------------
    soak.load.resume()
    time.sleep(2.0)
    soak.load.pause()
    rec = Failover(0, "quorum-loss")
    soak.check(rec, before, raw.records)
    assert rec.ok, rec.violations
    ops = soak.records()
    assert any(r["ok"] for r in ops if r["started"] > phase), "the load did not get through after recovery"
    print(f"quorum back: service resumed in {resumed_s:.1f} s; " + "; ".join(rec.evidence))

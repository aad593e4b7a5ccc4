"""Contention without errors or lost updates: fifty real clients write the SAME
entity at once, straight to the active controller and through a forwarding broker, and every request is
answered as Kafka would answer it alone (0, or the one Kafka-correct error of a create race) and nothing
acknowledged is missing from ZooKeeper afterwards.

The cluster is the one the issue's probe used: three node processes at IBP 3.4-IV0 (forwarding on) on a
3-server ZooKeeper ensemble, with a controller ZooKeeper identity of its own (as ``rehearse`` and lockdown run
it), so the node's session and the controller identity's may be connected to different ensemble members. The
probe (50 clients x 20 IncrementalAlterConfigs on one topic) found 48 of 50 clients answered
STALE_CONTROLLER_EPOCH "concurrent updates"; with in-process ordering a few writes still lost the version race
to their own predecessor (a read through the node's session trailing the controller session's last write on
another server): 3 of 1000 answers failed, and 6 of 500 writes met the version check while retries hid it.
Besides the answers, each test therefore checks on the controller's metrics that ZooKeeper's version check
never fired: with no writer in another process, a single writer that orders its own writes never meets it.
(Whether the two sessions land on different servers is up to kazoo's random host order: against the code
before the fix, this file failed in two runs of five.)

Each client is a kafka-python KafkaAdminClient of its own (its own connections and IO thread), sending the raw
protocol request to the node chosen, as the KafkaAdminClient sends BROKER-resource changes
(``_manager.send(request, node_id)``). What "the same entity" is, per API:

* topic configs: one topic; each client APPENDs its own ``<partition>:<broker>`` entry to one LIST config (a
  topic has only 36 keys; an APPEND is a read-modify-write of the znode like a SET of a new key);
* client quotas: one user; the four user quota keys cycle, each value distinct, so the znode must show exactly
  one data version per acknowledged write and every key a value one of its writers sent;
* SCRAM: one user's ``/config/users/<user>`` holds its credentials *and* its quotas; half the clients upsert a
  credential (two mechanisms, distinct iteration counts), half set a quota on that user: a write computed from
  a stale read would drop the other API's keys;
* ACLs: one topic resource, each client a distinct principal: all fifty must be in the resource's ACL node;
* topic changes: fifty CreateTopics of one name (exactly one 0, the rest TOPIC_ALREADY_EXISTS, Kafka's answer),
  and fifty CreatePartitions of one topic asking 2..51 partitions (0 or INVALID_PARTITIONS, the largest always
  0, the topic ends with 51 partitions, each with its state znode).

One request per client by default (25-35 s on a 2-core machine, the stack's start included); the issue's probe
shape, twenty per client, is the longer run (about 2.5 min):
``BK_CONTENTION_ROUNDS=20 .venv/bin/pytest tests/reliability/test_contention.py``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    IncrementalAlterConfigsRequest,
)
from kazoo.client import KazooClient

from controller.devstack.stack import Stack
from controller.zk.bulk_read import read_data
from testing.stack import controller_id, metric_sum, metrics_url
from tests.e2e.test_forwarding import Admin
from tests.integration.cluster import wait_for
from tests.stackutil import assert_no_unexpected, error_codes, every_node_sees_every_broker, stop_stack
from zkmodel import paths
from zkmodel.configs import ConfigChangeNotification
from zkmodel.kafka_acls import PatternType, ResourcePattern, ResourceType, encode_literal_acl_change

pytestmark = pytest.mark.reliability

CLIENTS = 50
ROUNDS = int(os.environ.get("BK_CONTENTION_ROUNDS", "1"))
SETTINGS = {
    # Two ZooKeeper identities: the node's session and the controller's are separate sessions.
    "bridgekeeper.zookeeper.digest": "broker:broker-secret",
    "bridgekeeper.zookeeper.controller.digest": "controller:controller-secret",
    # ACL APIs answer SECURITY_DISABLED without an authorizer; the PLAINTEXT clients (and the brokers'
    # forwarding, which needs CLUSTER_ACTION) are User:ANONYMOUS.
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}
THROTTLED = "follower.replication.throttled.replicas"
USER_QUOTAS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
SCRAM = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TOPIC, LITERAL, READ, ALLOW = 2, 3, 3, 3
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS = 36, 37
PATHS = ("direct", "forwarded")


@dataclass
class Cluster:
    stack: Stack
    zk: KazooClient
    admins: list[Admin]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data_dir = Path(tmp_path_factory.mktemp("contention"))
    stack = Stack(nodes=3, data_dir=data_dir, ibp="3.4-IV0", overrides=SETTINGS, zk_servers=3)
    zk: KazooClient | None = None
    admins: list[Admin] = []
    try:
        stack.start(timeout=90)
        zk = KazooClient(hosts=stack.zookeeper)
        zk.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        every_node_sees_every_broker(stack)
        admins.extend(Admin(stack.nodes) for _ in range(CLIENTS))
        yield Cluster(stack, zk, admins)
    finally:
        for admin in admins:
            with contextlib.suppress(Exception):
                admin.close()
        stop_stack(stack, zk)
    assert_no_unexpected(stack, data_dir)


# -- running the clients -----------------------------------------------------------------------------------------------
def target(c: Cluster, path: str) -> int:
    """The node the clients send to: the active controller, or a broker that forwards to it."""
    controller = controller_id(c.zk)
    assert controller is not None
    if path == "direct":
        return controller
    return min(n.broker_id for n in c.stack.nodes if n.broker_id != controller)


def storm(c: Cluster, node_id: int, request: Callable[[int, int], Any]) -> dict[tuple[int, int], list[int]]:
    """Every client sends ``request(client, round)`` to ``node_id`` for each round, one after another, all clients
    at once (released together); returns the error codes of each answer, by (client, round)."""
    barrier = threading.Barrier(CLIENTS)
    answers: dict[tuple[int, int], list[int]] = {}
    failures: list[BaseException] = []

    def client(i: int) -> None:
        try:
            barrier.wait(30)
            for r in range(ROUNDS):
                answers[(i, r)] = error_codes(c.admins[i].send(node_id, request(i, r)))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=client, args=(i,), name=f"client-{i}") for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not failures, failures[:3]
    assert len(answers) == CLIENTS * ROUNDS
    return answers


def all_ok(answers: dict[tuple[int, int], list[int]]) -> None:
    bad = {k: v for k, v in answers.items() if set(v) != {0}}
    assert not bad, f"{len(bad)} of {len(answers)} answers were errors: {Counter(str(v) for v in bad.values())}"


# -- what the nodes say they did -------------------------------------------------------------------------------------
WATCHED = ("config", "quota", "acl")


@dataclass
class Counts:
    """The ZooKeeper writes each node made (by kind and outcome) and what each broker forwarded."""

    values: dict[tuple[int, str], float]

    @staticmethod
    def read(c: Cluster) -> Counts:
        values: dict[tuple[int, str], float] = {}
        for n in c.stack.nodes:
            url = metrics_url(n.ready)
            for kind in WATCHED:
                for outcome in ("ok", "failed"):
                    values[(n.broker_id, f"{kind}.{outcome}")] = metric_sum(
                        url, "bridgekeeper_zookeeper_writes_total", kind=kind, outcome=outcome
                    )
            values[(n.broker_id, "forwarded")] = metric_sum(url, "bridgekeeper_forwarding_client_requests_total")
        return Counts(values)

    def minus(self, before: Counts) -> Counts:
        return Counts({k: v - before.values.get(k, 0.0) for k, v in self.values.items()})

    def on(self, broker_id: int, what: str) -> float:
        return self.values[(broker_id, what)]


@contextlib.contextmanager
def single_writer(c: Cluster, path: str) -> Iterator[int]:
    """Yields the node to send to; afterwards checks who wrote: the controller made every write and never met
    ZooKeeper's version check (nobody else writes, and the single writer orders its own writes), and a forwarding
    broker forwarded every request and wrote nothing itself."""
    controller = controller_id(c.zk)
    assert controller is not None
    node_id = target(c, path)
    before = Counts.read(c)
    yield node_id
    moved = Counts.read(c).minus(before)
    assert controller_id(c.zk) == controller, "the controller moved during the test"
    assert {kind: moved.on(controller, f"{kind}.failed") for kind in WATCHED} == dict.fromkeys(WATCHED, 0.0)
    if path == "forwarded":
        assert moved.on(node_id, "forwarded") == CLIENTS * ROUNDS
        assert {kind: moved.on(node_id, f"{kind}.ok") for kind in WATCHED} == dict.fromkeys(WATCHED, 0.0)
    else:
        assert sum(moved.on(n.broker_id, "forwarded") for n in c.stack.nodes) == 0


# -- ZooKeeper ---------------------------------------------------------------------------------------------------------
def children_data(zk: KazooClient, parent: str) -> list[bytes]:
    names = zk.get_children(parent) if zk.exists(parent) else []
    found = read_data(zk, [f"{parent}/{n}" for n in names], timeout=60)
    return [r[0] for r in found.values() if r is not None and r[0] is not None]


def config_notifications(zk: KazooClient, entity: str) -> int:
    """How many ``/config/changes`` notifications name ``entity`` (``<type>/<name>``)."""
    wanted = ConfigChangeNotification(entity).encode()
    return sum(1 for data in children_data(zk, paths.CONFIG_CHANGES) if data == wanted)


def entity(zk: KazooClient, path: str) -> tuple[dict[str, str], int]:
    data, stat = zk.get(path)
    config: dict[str, str] = orjson.loads(data)["config"]
    return config, stat.version


# -- requests ----------------------------------------------------------------------------------------------------------
def n_of(i: int, r: int) -> int:
    """A number distinct per (client, round)."""
    return r * CLIENTS + i


def append_throttled(topic: str) -> Callable[[int, int], Any]:
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource

    def request(i: int, r: int) -> Any:
        config = resource.AlterableConfig(name=THROTTLED, config_operation=2, value=f"{n_of(i, r)}:1")  # APPEND
        return IncrementalAlterConfigsRequest(
            resources=[resource(resource_type=TOPIC, resource_name=topic, configs=[config])], validate_only=False
        )

    return request


def set_quota(user: str, key: str, value: float) -> Any:
    e = AlterClientQuotasRequest.EntryData
    entry = e(
        entity=[e.EntityData(entity_type="user", entity_name=user)], ops=[e.OpData(key=key, value=value, remove=False)]
    )
    return AlterClientQuotasRequest(entries=[entry], validate_only=False)


def upsert_scram(user: str, mechanism: int, iterations: int) -> Any:
    upsertion = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name=user, mechanism=mechanism, iterations=iterations, salt=os.urandom(16), salted_password=os.urandom(32)
    )
    return AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsertion])


def create_topic(name: str, partitions: int = 1) -> Any:
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
    )
    return CreateTopicsRequest(topics=[topic], timeout_ms=30000, validate_only=False)


def quota_key(n: int) -> str:
    return USER_QUOTAS[n % len(USER_QUOTAS)]


def quota_value(n: int) -> float:
    return 1000.0 + n


# -- the scenarios -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", PATHS)
def test_appends_to_one_topic_config_are_all_kept(cluster: Cluster, path: str) -> None:
    topic = f"appended-{path}"
    all_ok({(0, 0): error_codes(cluster.admins[0].send(target(cluster, "direct"), create_topic(topic)))})
    with single_writer(cluster, path) as node_id:
        all_ok(storm(cluster, node_id, append_throttled(topic)))
    config, _version = entity(cluster.zk, f"/config/topics/{topic}")
    entries = config[THROTTLED].split(",")
    assert sorted(entries) == sorted(f"{n}:1" for n in range(CLIENTS * ROUNDS))
    assert config_notifications(cluster.zk, f"topics/{topic}") == CLIENTS * ROUNDS


@pytest.mark.parametrize("path", PATHS)
def test_quota_changes_of_one_user_are_each_one_version(cluster: Cluster, path: str) -> None:
    user = f"quota-user-{path}"
    with single_writer(cluster, path) as node_id:
        answers = storm(cluster, node_id, lambda i, r: set_quota(user, quota_key(n_of(i, r)), quota_value(n_of(i, r))))
    all_ok(answers)
    config, version = entity(cluster.zk, f"/config/users/{user}")
    writes = CLIENTS * ROUNDS
    assert version == writes - 1  # created by the first write, then one setData per acknowledged write
    assert sorted(config) == sorted(USER_QUOTAS)
    for key, value in config.items():
        assert float(value) in {quota_value(n) for n in range(writes) if quota_key(n) == key}, (key, value)
    assert config_notifications(cluster.zk, f"users/{user}") == writes


@pytest.mark.parametrize("path", PATHS)
def test_scram_credentials_and_quotas_of_one_user_do_not_drop_each_other(cluster: Cluster, path: str) -> None:
    user = f"scram-user-{path}"

    def request(i: int, r: int) -> Any:
        n = n_of(i, r)
        if n % 2 == 0:
            return upsert_scram(user, 1 + (n // 2) % 2, 4096 + n)
        return set_quota(user, quota_key(n // 2), quota_value(n))

    with single_writer(cluster, path) as node_id:
        all_ok(storm(cluster, node_id, request))
    config, version = entity(cluster.zk, f"/config/users/{user}")
    writes = CLIENTS * ROUNDS
    assert version == writes - 1
    assert sorted(config) == sorted([*SCRAM.values(), *USER_QUOTAS])
    for mechanism_id, mechanism in SCRAM.items():
        fields = dict(part.split("=", 1) for part in config[mechanism].split(","))
        sent = {4096 + n for n in range(0, writes, 2) if 1 + (n // 2) % 2 == mechanism_id}
        assert int(fields["iterations"]) in sent, (mechanism, fields["iterations"])
    for key in USER_QUOTAS:
        assert float(config[key]) in {quota_value(n) for n in range(1, writes, 2) if quota_key(n // 2) == key}
    assert config_notifications(cluster.zk, f"users/{user}") == writes


@pytest.mark.parametrize("path", PATHS)
def test_acls_of_one_resource_from_fifty_principals_are_all_kept(cluster: Cluster, path: str) -> None:
    topic = f"guarded-{path}"

    def request(i: int, r: int, topic: str = topic) -> Any:
        creation = CreateAclsRequest.AclCreation(
            resource_type=TOPIC,
            resource_name=topic,
            resource_pattern_type=LITERAL,
            principal=f"User:p-{n_of(i, r)}",
            host="*",
            operation=READ,
            permission_type=ALLOW,
        )
        return CreateAclsRequest(creations=[creation])

    # The cluster's first topic ACL creates the stores' parents (/kafka-acl/Topic, /kafka-acl-changes) after a
    # NoNode attempt each, which the write metrics count as failed: one on another topic goes first.
    all_ok({(0, 0): error_codes(cluster.admins[0].send(target(cluster, "direct"), request(0, 0, "warm-up")))})
    with single_writer(cluster, path) as node_id:
        all_ok(storm(cluster, node_id, request))
    acls = orjson.loads(cluster.zk.get(f"/kafka-acl/Topic/{topic}")[0])["acls"]
    assert sorted(a["principal"] for a in acls) == sorted(f"User:p-{n}" for n in range(CLIENTS * ROUNDS))
    assert {(a["host"], a["operation"], a["permissionType"]) for a in acls} == {("*", "Read", "Allow")}
    change = encode_literal_acl_change(ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL))
    assert children_data(cluster.zk, "/kafka-acl-changes").count(change) == CLIENTS * ROUNDS


@pytest.mark.parametrize("path", PATHS)
def test_one_of_fifty_creations_of_one_topic_wins(cluster: Cluster, path: str) -> None:
    names = [f"born-{path}-{r}" for r in range(ROUNDS)]
    with single_writer(cluster, path) as node_id:
        answers = storm(cluster, node_id, lambda _i, r: create_topic(names[r], partitions=2))
    for r, name in enumerate(names):
        codes = Counter(code for (_i, rr), found in answers.items() if rr == r for code in found)
        assert codes == {0: 1, TOPIC_ALREADY_EXISTS: CLIENTS - 1}, (name, codes)
        assignment = orjson.loads(cluster.zk.get(paths.topic(name))[0])["partitions"]
        assert sorted(assignment) == ["0", "1"]
        assert sorted(cluster.zk.get_children(f"{paths.topic(name)}/partitions")) == ["0", "1"]


@pytest.mark.parametrize("path", PATHS)
def test_fifty_partition_increases_of_one_topic_end_at_the_largest(cluster: Cluster, path: str) -> None:
    topic = f"grown-{path}"
    all_ok({(0, 0): error_codes(cluster.admins[0].send(target(cluster, "direct"), create_topic(topic)))})

    def request(i: int, r: int) -> Any:
        grow = CreatePartitionsRequest.CreatePartitionsTopic(name=topic, count=2 + n_of(i, r), assignments=None)
        return CreatePartitionsRequest(topics=[grow], timeout_ms=30000, validate_only=False)

    with single_writer(cluster, path) as node_id:
        answers = storm(cluster, node_id, request)
    final = 1 + CLIENTS * ROUNDS
    # A request for no more partitions than the topic has by its turn is refused (Kafka's INVALID_PARTITIONS);
    # the largest count can never be overtaken, so its request succeeds and the topic ends there.
    assert {code for found in answers.values() for code in found} <= {0, INVALID_PARTITIONS}
    assert answers[(CLIENTS - 1, ROUNDS - 1)] == [0]
    assignment = orjson.loads(cluster.zk.get(paths.topic(topic))[0])["partitions"]
    assert sorted(map(int, assignment)) == list(range(final))
    states = cluster.zk.get_children(f"{paths.topic(topic)}/partitions")
    assert sorted(map(int, states)) == list(range(final))

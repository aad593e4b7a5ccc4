"""``bridgekeeper reassign`` against a live local stack (the same code as ``bridgekeeper up``): the tool runs
as a separate process, talks to the nodes over the admin API with kafka-python (or to ZooKeeper with
--zookeeper) and its console text, JSON and exit codes are checked as an operator's script would."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka import TopicPartition as KTP
from kafka.admin import KafkaAdminClient, NewTopic

from controller.devstack.stack import Stack
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from zkmodel import paths
from zkmodel.topics import TopicAssignment

pytestmark = pytest.mark.e2e

# 4 MiB per partition: a move takes ~0.04 s unthrottled, seconds under the throttles the tests set.
STACK_NODES = 4
STACK_OVERRIDES = {"bridgekeeper.replica.catchup.bytes.per.partition": str(4 * 1024 * 1024)}
VERIFY_WARNING = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed."
)
CANNOT_EXECUTE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this and "
    "create a new partition assignment in addition to the existing one. The --additional flag can also be used "
    "to change the throttle by resubmitting the current reassignment."
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """Four nodes (the shared e2e fixture runs three)."""
    from kazoo.client import KazooClient

    from testing.stack import controller_id

    s = Stack(nodes=STACK_NODES, data_dir=Path(tmp_path_factory.mktemp("stack")), overrides=STACK_OVERRIDES)
    s.start()
    zk = KazooClient(hosts=s.zookeeper)
    try:
        zk.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        running = RunningStack(s, ",".join(f"127.0.0.1:{n.port}" for n in s.nodes), zk)
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap, request_timeout_ms=60000)
        try:
            # Registrations reach each node's cache a watch after it is ready: wait for all four everywhere.
            for node in s.nodes:
                single = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{node.port}", request_timeout_ms=30000)
                try:
                    wait_for(lambda: len(single.describe_cluster()["brokers"]) == STACK_NODES, 30, "all brokers")  # noqa: B023
                finally:
                    single.close()
        finally:
            admin.close()
        yield running
    finally:
        zk.stop()
        zk.close()
        s.stop()


@pytest.fixture
def admin(stack: RunningStack) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=60000)
    try:
        yield client
    finally:
        client.close()


def tool(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "reassign", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).resolve().parents[2],
    )


def create(admin: KafkaAdminClient, name: str, assignment: dict[int, list[int]]) -> None:
    admin.create_topics([NewTopic(name, replica_assignments=assignment)], timeout_ms=30000)


def replicas(stack: RunningStack, topic: str) -> dict[int, list[int]]:
    assignment = TopicAssignment.decode("t", stack.zk.get(paths.topic(topic))[0])
    return {p: list(r) for p, r in assignment.partitions.items()}


def config(stack: RunningStack, kind: str, name: str) -> dict[str, str]:
    found = stack.zk.exists(f"/config/{kind}/{name}")
    if found is None:
        return {}
    return dict(orjson.loads(stack.zk.get(f"/config/{kind}/{name}")[0])["config"])


def plan(tmp: Path, name: str, moves: dict[tuple[str, int], list[int]]) -> Path:
    path = tmp / name
    path.write_text(
        orjson.dumps(
            {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]}
        ).decode()
    )
    return path


def no_moves(admin: KafkaAdminClient) -> bool:
    return not admin.list_partition_reassignments()


def compact(assignment: dict[tuple[str, int], list[int]]) -> str:
    """Kafka's reassignment JSON for ``assignment`` (what the tool prints)."""
    parts = [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
        for (t, p), r in sorted(assignment.items())
    ]
    return orjson.dumps({"version": 1, "partitions": parts}).decode()


def test_generate_execute_with_a_throttle_then_verify_until_complete(
    stack: RunningStack, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    layout = {p: [p % 4 + 1, (p + 1) % 4 + 1] for p in range(6)}
    create(admin, "gen", layout)
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"gen"}],"version":1}')

    # Decommission broker 4: only what must leave it (and what balance needs) moves.
    text = tool(
        "--bootstrap-server",
        stack.bootstrap,
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "1,2,3",
    )
    assert text.returncode == 0, text.stderr
    current = {("gen", p): r for p, r in layout.items()}
    head = (
        f"Current partition replica assignment\n{compact(current)}\n\nProposed partition reassignment configuration\n"
    )
    assert text.stdout.startswith(head)
    generated = tool(
        "--bootstrap-server",
        stack.bootstrap,
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "1,2,3",
        "--output",
        "json",
    )
    doc = orjson.loads(generated.stdout)
    assert "error" not in doc and "exit_code" not in doc  # a run that succeeds prints its document alone
    proposed = {(e["topic"], e["partition"]): e["replicas"] for e in doc["proposed"]["partitions"]}
    assert text.stdout == head + compact(proposed) + "\n"
    assert all(4 not in r and len(r) == 2 for r in proposed.values())
    moves = doc["replica_moves"]
    assert moves["proposed"] == moves["lower_bound"] == sum(len(set(proposed[k]) - set(current[k])) for k in current)
    assert moves["proposed"] <= moves["kafka_generate"]

    plan_file = tmp_path / "plan.json"
    plan_file.write_text(orjson.dumps(doc["proposed"]).decode())
    executed = tool(
        "--bootstrap-server",
        stack.bootstrap,
        "--execute",
        "--reassignment-json-file",
        str(plan_file),
        "--throttle",
        "1048576",
    )
    assert executed.returncode == 0, executed.stdout + executed.stderr
    names = ",".join(f"gen-{p}" for p in range(6))
    assert executed.stdout == (
        f"Current partition replica assignment\n\n{compact(current)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback\n"
        f"{VERIFY_WARNING}\nThe inter-broker throttle limit was set to 1048576 B/s\n"
        f"Successfully started partition reassignments for {names}\n"
    )
    rollbacks = list(tmp_path.glob("plan.json.rollback-*.json"))
    assert len(rollbacks) == 1 and rollbacks[0].read_text() == compact(current) + "\n"

    # Throttles during the move, as Kafka sets them: every planned partition's current replicas are throttled
    # leaders (moving or not), the brokers it gains are throttled followers, all of them get the rate.
    topic_config = config(stack, "topics", "gen")
    assert topic_config["leader.replication.throttled.replicas"] == ",".join(
        sorted({f"{p}:{b}" for (_t, p), r in current.items() for b in r})
    )
    assert topic_config["follower.replication.throttled.replicas"] == ",".join(
        sorted({f"{p}:{b}" for (_t, p), r in proposed.items() for b in set(r) - set(current[("gen", p)])})
    )
    involved = {b for k in current for b in set(current[k]) | set(proposed[k])}
    for b in involved:
        assert config(stack, "brokers", str(b))["follower.replication.throttled.rate"] == "1048576"

    outputs = []

    def verified() -> bool:
        result = tool("--bootstrap-server", stack.bootstrap, "--verify", "--reassignment-json-file", str(plan_file))
        assert result.returncode == 0, result.stdout  # Kafka exits 0 whether or not the moves are done
        outputs.append(result.stdout)
        # "There is no active reassignment of partition gen-2, but replica set is 3,1,4 rather than 3,1." is
        # Kafka's answer when the move has finished but the broker answering Metadata has not seen the new
        # replica set yet (a loaded machine shows it): wait for that to settle too.
        return "still in progress" not in result.stdout and "rather than" not in result.stdout

    wait_for(verified, 120, "verify to report every move completed")
    assert any("is still in progress." in o for o in outputs[:-1]), "the throttle held the moves for a while"
    completed = "".join(f"Reassignment of partition gen-{p} is completed.\n" for p in range(6))
    assert outputs[-1] == (
        f"Status of partition reassignment:\n{completed}\n"
        "Clearing broker-level throttles on brokers 1,2,3,4\nClearing topic-level throttles on topic gen\n"
    )
    assert replicas(stack, "gen") == {p: proposed[("gen", p)] for p in range(6)}
    assert not any(k.endswith("throttled.replicas") for k in config(stack, "topics", "gen"))
    for b in range(1, 5):
        assert not any("throttled.rate" in k for k in config(stack, "brokers", str(b)))


def test_additional_list_and_cancel_mid_move(stack: RunningStack, admin: KafkaAdminClient, tmp_path: Path) -> None:
    """Reference scenario 23: [1,2,3] -> [1,2,4] shows replicas 1,2,4,3 while it runs; a cancel puts the
    partition back and a second cancel finds nothing to do."""
    create(admin, "held", {0: [1, 2, 3], 1: [1, 2, 3]})
    first = plan(tmp_path, "first.json", {("held", 0): [1, 2, 4]})
    second = plan(tmp_path, "second.json", {("held", 1): [2, 3, 4]})
    both = plan(tmp_path, "both.json", {("held", 0): [1, 2, 4], ("held", 1): [2, 3, 4]})
    # 1 B/s: the moves cannot finish while the tests look at them.
    started = tool(
        "--bootstrap-server", stack.bootstrap, "--execute", "--reassignment-json-file", str(first), "--throttle", "1"
    )
    assert started.returncode == 0, started.stdout
    listed = tool("--bootstrap-server", stack.bootstrap, "--list")
    assert (listed.returncode, listed.stdout) == (
        0,
        "Current partition reassignments:\nheld-0: replicas: 1,2,4,3. adding: 4. removing: 3.\n",
    )

    refused = tool("--bootstrap-server", stack.bootstrap, "--execute", "--reassignment-json-file", str(second))
    assert (refused.returncode, refused.stdout) == (1, CANNOT_EXECUTE + "\n")
    assert KTP("held", 1) not in admin.list_partition_reassignments()

    added = tool(
        "--bootstrap-server",
        stack.bootstrap,
        "--execute",
        "--reassignment-json-file",
        str(second),
        "--additional",
        "--throttle",
        "1",
    )
    assert added.returncode == 0, added.stdout
    assert added.stdout.endswith("Successfully started partition reassignment for held-1\n")
    as_json = orjson.loads(tool("--bootstrap-server", stack.bootstrap, "--list", "--output", "json").stdout)
    assert [(e["topic"], e["partition"], e["adding"], e["removing"]) for e in as_json["reassignments"]] == [
        ("held", 0, [4], [3]),
        ("held", 1, [4], [1]),
    ]

    cancelled = tool("--bootstrap-server", stack.bootstrap, "--cancel", "--reassignment-json-file", str(both))
    assert (cancelled.returncode, cancelled.stdout) == (
        0,
        "Successfully cancelled partition reassignments for: held-0,held-1\n"
        "None of the specified partition moves are active."  # Kafka prints this one without a line break
        "Clearing broker-level throttles on brokers 1,2,3,4\nClearing topic-level throttles on topic held\n",
    )
    wait_for(lambda: no_moves(admin), 30, "the cancelled moves to end")
    assert {p: sorted(r) for p, r in replicas(stack, "held").items()} == {0: [1, 2, 3], 1: [1, 2, 3]}
    again = tool("--bootstrap-server", stack.bootstrap, "--cancel", "--reassignment-json-file", str(both))
    assert again.stdout.startswith("None of the specified partition reassignments are active.\n")
    assert not any(k.endswith("throttled.replicas") for k in config(stack, "topics", "held"))


def test_legacy_zookeeper_path_moves_partitions(stack: RunningStack, admin: KafkaAdminClient, tmp_path: Path) -> None:
    create(admin, "legacy", {0: [1], 1: [2]})
    moves = plan(tmp_path, "legacy.json", {("legacy", 0): [3], ("legacy", 1): [4]})
    zk_connect = stack.stack.zookeeper
    executed = tool("--zookeeper", zk_connect, "--execute", "--reassignment-json-file", str(moves))
    assert executed.returncode == 0, executed.stdout + executed.stderr
    lines = executed.stdout.splitlines()
    assert lines[0] == "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka."
    assert lines[-1] == "Successfully started partition reassignments for legacy-0,legacy-1"
    wait_for(lambda: replicas(stack, "legacy") == {0: [3], 1: [4]}, 60, "the znode-triggered moves")
    wait_for(lambda: stack.zk.exists(paths.REASSIGN_PARTITIONS) is None, 30, "the controller to delete the znode")
    verified = tool("--zookeeper", zk_connect, "--verify", "--reassignment-json-file", str(moves))
    assert verified.returncode == 0
    assert verified.stdout.splitlines()[:5] == [
        "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.",
        "Warning: because you are using the deprecated --zookeeper option, the results may be incomplete.  Use "
        "--bootstrap-server instead for more accurate results.",
        "Status of partition reassignment:",
        "Reassignment of partition legacy-0 is complete.",
        "Reassignment of partition legacy-1 is complete.",
    ]
    as_json = tool("--zookeeper", zk_connect, "--verify", "--reassignment-json-file", str(moves), "--output", "json")
    assert as_json.stderr.startswith("Warning: --zookeeper is deprecated")  # stdout stays one JSON document
    assert orjson.loads(as_json.stdout)["done"] is True


def test_legacy_path_refuses_while_the_request_znode_exists(
    stack: RunningStack, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    create(admin, "busy", {0: [1], 1: [2]})
    zk_connect = stack.stack.zookeeper
    first = plan(tmp_path, "first.json", {("busy", 0): [3]})
    second = plan(tmp_path, "second.json", {("busy", 1): [4]})
    started = tool("--zookeeper", zk_connect, "--execute", "--reassignment-json-file", str(first), "--throttle", "1")
    assert started.returncode == 0, started.stdout
    request = stack.zk.get(paths.REASSIGN_PARTITIONS)
    refused = tool("--zookeeper", zk_connect, "--execute", "--reassignment-json-file", str(second))
    assert refused.returncode == 1
    assert refused.stdout.splitlines()[-1] == CANNOT_EXECUTE
    assert stack.zk.get(paths.REASSIGN_PARTITIONS)[0] == request[0]  # not overwritten
    # An API cancel of the znode-triggered move ends it (and the controller then deletes the znode).
    cancelled = tool("--bootstrap-server", stack.bootstrap, "--cancel", "--reassignment-json-file", str(first))
    assert cancelled.returncode == 0, cancelled.stdout
    wait_for(lambda: no_moves(admin) and stack.zk.exists(paths.REASSIGN_PARTITIONS) is None, 30, "no moves")
    assert replicas(stack, "busy") == {0: [1], 1: [2]}


def test_both_connection_flags_are_refused_and_nothing_is_written(
    stack: RunningStack, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    create(admin, "both", {0: [1]})
    moves = plan(tmp_path, "both.json", {("both", 0): [2]})
    result = tool(
        "--bootstrap-server",
        stack.bootstrap,
        "--zookeeper",
        stack.stack.zookeeper,
        "--execute",
        "--reassignment-json-file",
        str(moves),
    )
    assert result.returncode == 1
    assert "--bootstrap-server" in result.stderr and "--zookeeper" in result.stderr
    assert result.stdout == ""
    time.sleep(1)  # anything submitted would show by now (a move here takes ~0.04 s to start and finish)
    assert replicas(stack, "both") == {0: [1]}
    assert stack.zk.exists(paths.REASSIGN_PARTITIONS) is None
    assert list(tmp_path.glob("both.json.rollback-*")) == []


def _participation(listed: dict[Any, dict[str, list[int]]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for entry in listed.values():
        for b in {*entry["adding_replicas"], *entry["removing_replicas"]}:
            counts[b] = counts.get(b, 0) + 1
    return counts


def test_waves_respect_the_per_broker_cap_and_an_interrupted_run_resumes(
    stack: RunningStack, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    # Six partitions leave broker 1: broker 1 takes part in every move, so a cap of 2 means three waves.
    create(admin, "waves", {p: [1] for p in range(6)})
    targets = {("waves", p): [p % 3 + 2] for p in range(6)}
    moves = plan(tmp_path, "waves.json", targets)
    seen: list[dict[int, int]] = []
    stop = threading.Event()

    def watch() -> None:
        client = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
        try:
            while not stop.is_set():
                seen.append(_participation(client.list_partition_reassignments()))
                time.sleep(0.05)
        finally:
            client.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    args = [
        "--bootstrap-server",
        stack.bootstrap,
        "--execute",
        "--reassignment-json-file",
        str(moves),
        "--max-moves-per-broker",
        "2",
        "--throttle",
        "2097152",
    ]
    try:
        first = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "reassign", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # even when started with it ignored
        )
        wait_for(lambda: any(seen), 60, "the first wave to start")
        first.send_signal(signal.SIGINT)
        out, err = first.communicate(timeout=60)
        assert first.returncode == 130, out + err
        assert "rerun the same command to continue" in err
        assert replicas(stack, "waves") != {p: r for (_t, p), r in targets.items()}, "interrupted before the end"

        resumed = tool(*args, timeout=180)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert replicas(stack, "waves") == {p: r for (_t, p), r in targets.items()}
        assert no_moves(admin)
    finally:
        stop.set()
        watcher.join(10)
    assert max(max(c.values(), default=0) for c in seen) == 2  # the cap was used and never exceeded
    # The resumed run cleared the throttles once everything was done.
    assert not any(k.endswith("throttled.replicas") for k in config(stack, "topics", "waves"))


BAD_PLANS = [
    ("{not json", "Error: The reassignment JSON is not valid JSON: "),
    ('{"version":2,"partitions":[]}', "Error: Not supported version field value 2\n"),
    ('{"version":1,"partitions":[]}', "Error: Partition reassignment list cannot be empty\n"),
    ('{"partitions":[{"topic":"bad","partition":0,"replicas":[]}]}', "Error: Partition replica list cannot be empty\n"),
    (
        '{"partitions":[{"topic":"bad","partition":0,"replicas":[1]},{"topic":"bad","partition":0,"replicas":[2]}]}',
        "Error: Partition reassignment contains duplicate topic partitions: bad-0\n",
    ),
    (
        '{"partitions":[{"topic":"bad","partition":0,"replicas":[1,1]}]}',
        "Error: Partition replica lists may not contain duplicate entries: bad-0 contains multiple entries for 1\n",
    ),
    (
        '{"partitions":[{"topic":"bad","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
        "Error: Size of replicas list [1, 2] is different from size of log dirs list [any] for partition bad-0\n",
    ),
    (
        '{"partitions":[{"topic":"bad","partition":0,"replicas":[1,"x"]}]}',
        'Error: Expected `Integer` value, received "x" at partitions[0].replicas[1]\n',
    ),
    ('{"partitions":[{"topic":"bad","partition":0,"replicas":[1,9]}]}', "Error: Unknown broker id 9\n"),
    (
        '{"partitions":[{"topic":"nosuch","partition":0,"replicas":[1]}]}',
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic nosuch not found.\n",
    ),
    (
        '{"partitions":[{"topic":"bad","partition":7,"replicas":[1]}]}',
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Unable to find partition: bad-7\n",
    ),
]


@pytest.mark.parametrize(("text", "expected"), BAD_PLANS)
def test_bad_plans_are_refused_naming_what_is_wrong_and_nothing_moves(
    stack: RunningStack, admin: KafkaAdminClient, tmp_path: Path, text: str, expected: str
) -> None:
    if "bad" not in admin.list_topics():
        create(admin, "bad", {0: [1, 2], 1: [2, 3]})
    path = tmp_path / "bad.json"
    path.write_text(text)
    result = tool("--bootstrap-server", stack.bootstrap, "--execute", "--reassignment-json-file", str(path))
    assert result.returncode == 1
    assert result.stdout.startswith(expected) if expected.endswith(": ") else result.stdout == expected
    assert "Traceback" not in result.stdout + result.stderr
    as_json = tool(
        "--bootstrap-server", stack.bootstrap, "--execute", "--reassignment-json-file", str(path), "--output", "json"
    )
    assert as_json.returncode == 1
    doc = orjson.loads(as_json.stdout)
    assert "Error: " + doc["error"] + "\n" == result.stdout and doc["exit_code"] == 1
    assert as_json.stderr == result.stdout  # Kafka's line, for the terminal
    assert replicas(stack, "bad") == {0: [1, 2], 1: [2, 3]} and no_moves(admin)


def test_generate_refusals(stack: RunningStack, admin: KafkaAdminClient, tmp_path: Path) -> None:
    create(admin, "wide", {0: [1, 2, 3]})
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"wide"}],"version":1}')

    def generate(brokers: str, file: Path = topics) -> subprocess.CompletedProcess[str]:
        return tool(
            "--bootstrap-server",
            stack.bootstrap,
            "--generate",
            "--topics-to-move-json-file",
            str(file),
            "--broker-list",
            brokers,
        )

    assert generate("1,2").stdout == "Error: Replication factor: 3 larger than available brokers: 2.\n"
    assert generate("1,2,2").stdout == "Error: Broker list contains duplicate entries: [2]\n"
    assert generate("1,2,77,78").stdout == "Error: Replication factor: 3 larger than available brokers: 2.\n"
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"topics":[{"topic":"wide"},{"topic":"gone"}],"version":1}')
    assert generate("1,2,3", unknown).stdout == (
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic gone not found.\n"
    )
    twice = tmp_path / "twice.json"
    twice.write_text('{"topics":[{"topic":"wide"},{"topic":"wide"}],"version":1}')
    assert generate("1,2,3", twice).stdout == "Error: List of topics to reassign contains duplicate entries: [wide]\n"

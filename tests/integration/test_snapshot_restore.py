"""``bridgekeeper snapshot restore`` as an operator runs it (a subprocess) against a real ZooKeeper: a synthetic
tree restored byte for byte, a chroot holding Kafka metadata refused and left untouched, the flag and input
errors decided before connecting, a restore killed or interrupted halfway (whole topics only, the marker left,
no node starts on it), recorded ACLs kept or opened, and credentials redacted unless kept."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.security import make_acl, make_digest_acl

from controller.devstack.localzk import LocalZooKeeper
from migrate.snapshot.files import Node
from migrate.snapshot.rows import RowWriter, read_rows
from tests.netutil import closed_port
from tests.zkharness import ZkServer, new_client
from zkmodel import paths
from zkmodel.topics import PartitionState, TopicAssignment

pytestmark = pytest.mark.integration
BIN = [sys.executable, "-m", "controller.cli"]
MARKER = paths.RESTORE_IN_PROGRESS
OPEN = [(31, "world", "anyone")]
Tree = dict[str, tuple[bytes | None, Any]]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BIN, *args], capture_output=True, text=True, timeout=timeout)


def restore(rows: Path, target: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return cli("snapshot", "restore", str(rows), "--zookeeper", target, *flags)


def synth(out: Path, *args: str) -> Path:
    done = cli("pipeline", "synth", "-o", str(out), *args)
    assert done.returncode == 0, done.stderr
    return out


def one_line(stderr: str) -> str:
    """The command's one error line: exactly one line on stderr, and nothing else."""
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got {lines}"
    assert lines[0].startswith("error: "), lines
    return lines[0]


def read_tree(client: KazooClient, top: str = "/") -> Tree:
    """Every znode under ``top`` (itself included): data and Stat, read level by level with pipelined requests."""
    out: Tree = {}
    level = [top]
    while level:
        pending = [(p, client.get_async(p), client.get_children_async(p)) for p in level]
        level = []
        for path, data, children in pending:
            try:
                value, stat = data.get(timeout=60)
                kids = children.get(timeout=60)
            except NoNodeError:
                continue
            out[path] = (value, stat)
            level += [f"{path.rstrip('/')}/{k}" for k in kids]
    return out


def wipe(client: KazooClient, top: str = "/") -> None:
    """Delete everything below ``top`` deepest first, pipelined (kazoo's recursive delete is one round trip a znode)."""
    levels: list[list[str]] = []
    level = [top]
    while level:
        pending = [(p, client.get_children_async(p)) for p in level]
        level = []
        for path, children in pending:
            with contextlib.suppress(NoNodeError):
                level += [f"{path.rstrip('/')}/{k}" for k in children.get(timeout=60)]
        levels.append(level)
    for doomed in reversed(levels):
        for result in [client.delete_async(p) for p in doomed]:
            with contextlib.suppress(NoNodeError):
                result.get(timeout=60)


@contextlib.contextmanager
def client_at(hosts: str, **kwargs: Any) -> Iterator[KazooClient]:
    client = new_client(hosts, **kwargs)
    client.start(timeout=20)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def interruptible() -> None:
    """In the child: SIGINT back to its default, so Python turns it into KeyboardInterrupt even when the suite
    runs in the background of a non-interactive shell, which starts every child with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def small_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few hundred topics with every seeded defect (a malformed topic znode, an unregistered replica, ...)."""
    out = tmp_path_factory.mktemp("small") / "cluster.parquet"
    return synth(out, "--brokers", "6", "--racks", "3", "--topics", "300", "--partitions", "1-6", "--defect", "all")


@pytest.fixture(scope="module")
def big_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~250,000 znodes: restoring them takes 5-12 s here (20,000-47,000 znodes/s), long enough to stop halfway."""
    out = tmp_path_factory.mktemp("big") / "cluster.parquet"
    return synth(out, "--topics", "3000", "--partitions", "20-60")


@pytest.fixture
def chroot_zk(zk: KazooClient) -> Iterator[KazooClient]:
    """The test's chroot client, emptied quickly afterwards (partial trees run to tens of thousands of znodes)."""
    yield zk
    wipe(zk)


# -- a whole restore -----------------------------------------------------------------------------------------


def test_a_synthetic_tree_is_restored_byte_for_byte_into_a_fresh_chroot(
    small_rows: Path, zk_hosts: str, chroot_zk: KazooClient
) -> None:
    target = zk_hosts + "/fresh"  # does not exist yet: the restore creates it
    done = restore(small_rows, target)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""

    rows = read_rows(small_rows)
    persistent = {r["path"]: r["data"] for r in rows if r["ephemeral_owner"] == 0}
    assert len(persistent) < len(rows)  # the rows hold ephemerals: six brokers and the controller
    tree = read_tree(chroot_zk, "/fresh")
    got = {path[len("/fresh") :]: data for path, (data, _stat) in tree.items() if path != "/fresh"}
    assert sorted(got) == sorted(persistent)  # no ephemeral, no marker, nothing else
    mismatched = [p for p in persistent if got[p] != persistent[p]]
    assert mismatched == []  # byte for byte, null data kept null
    assert all(stat.ephemeralOwner == 0 for _data, stat in tree.values())
    assert MARKER[1:] not in chroot_zk.get_children("/fresh")

    topics = {p: d for p, d in persistent.items() if p.count("/") == 3 and p.startswith("/brokers/topics/")}
    malformed = set()
    for path, data in topics.items():
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            malformed.add(path)
    assert len(malformed) == 1  # the malformed_znode defect: restored as it is, its partitions not counted
    partitions = sum(
        1
        for p in persistent
        if re.fullmatch(r"/brokers/topics/[^/]+/partitions/\d+", p) and p.rsplit("/", 2)[0] not in malformed
    )
    lines = done.stdout.splitlines()
    assert re.fullmatch(
        rf"restored {len(persistent):,} znodes into {re.escape(target)} in [\d.]+ s \([\d,]+ znodes/s\): "
        rf"300 topics, {partitions:,} partitions",
        lines[0],
    ), lines[0]
    assert lines[1:] == [
        "  skipped 7: ephemeral (its session is gone)",
        "  credentials redacted: 0 SCRAM credential(s), 0 delegation token(s), 0 broker password config(s) "
        "(--keep-credentials keeps them)",
        "  ACLs: open (world:anyone ALL, a sandbox; --acls keep sets the recorded ones)",
        "  brokers registered in the rows (not written, their sessions are gone): 1 (rack-0), 2 (rack-1), "
        "3 (rack-2), 4 (rack-0), 5 (rack-1), 6 (rack-2)",
        "  brokers named by assignments but not registered (offline): 106",
    ]


# -- refusal -----------------------------------------------------------------------------------------------


def snapshot_of(client: KazooClient) -> dict[str, tuple[bytes | None, int, int, int, int, int]]:
    """Data and the Stat fields any write would move, the chroot's own znode included."""
    return {
        path: (data, stat.mzxid, stat.cversion, stat.pzxid, stat.aversion, stat.numChildren)
        for path, (data, stat) in read_tree(client).items()
    }


@pytest.mark.parametrize("holds", ["/brokers", "/config", "/admin", "/controller", MARKER])
def test_a_chroot_holding_kafka_metadata_is_refused_and_left_unchanged(
    small_rows: Path, zk_hosts: str, chroot_zk: KazooClient, holds: str
) -> None:
    zk = chroot_zk
    zk.create("/unrelated/child", b"x", makepath=True)
    if holds == "/controller":
        zk.create(holds, b'{"version":1,"brokerid":1,"timestamp":"1"}', ephemeral=True)
    elif holds == MARKER:
        zk.create(holds, b'{"version":1,"started":1,"znodes":10,"rows":["r.parquet"]}')
    else:
        zk.create(f"{holds}/topics/t", b'{"version":1,"config":{}}', makepath=True)
    before = snapshot_of(zk)
    children = sorted(zk.get_children("/"))

    done = restore(small_rows, zk_hosts)
    assert done.returncode == 1, done.stderr
    assert one_line(done.stderr) == (
        f"error: {zk_hosts} already holds Kafka metadata ({holds}): restore only into an empty chroot; "
        "nothing was written"
    )
    assert done.stdout == ""
    assert snapshot_of(zk) == before
    assert sorted(zk.get_children("/")) == children


# -- errors decided before connecting, and an unreachable ZooKeeper -----------------------------------------


@pytest.mark.parametrize("tail", ["", "/", "//"])
def test_a_zookeeper_without_a_chroot_is_refused_before_connecting(small_rows: Path, tail: str) -> None:
    target = f"127.0.0.1:{closed_port()}{tail}"  # a connection attempt would end in exit 3
    done = restore(small_rows, target, "--timeout", "2")
    assert done.returncode == 2, done.stderr
    assert one_line(done.stderr).startswith(f"error: --zookeeper {target} names no chroot: ")


def test_unusable_rows_are_refused_before_connecting(small_rows: Path, tmp_path: Path) -> None:
    target = f"127.0.0.1:{closed_port()}/sandbox"
    missing = restore(tmp_path / "missing.parquet", target, "--timeout", "2")
    assert missing.returncode == 2, missing.stderr
    assert one_line(missing.stderr) == f"error: {tmp_path / 'missing.parquet'}: no such file or directory"

    csv = tmp_path / "rows.csv"
    csv.write_text("path,data\n/brokers,\n")
    wrong = restore(csv, target, "--timeout", "2")
    assert wrong.returncode == 2, wrong.stderr
    assert one_line(wrong.stderr) == f"error: {csv}: not a snapshot-rows file (expected .parquet or .jsonl)"

    garbled = tmp_path / "rows.jsonl"
    garbled.write_bytes(b'{"path": "/brokers", "data": null}\n{"path": 1\n')
    bad = restore(garbled, target, "--timeout", "2")
    assert bad.returncode == 2, bad.stderr
    assert one_line(bad.stderr).startswith(f"error: {garbled}: line 2 is not a snapshot row")


def test_an_unreachable_zookeeper_is_exit_3_with_one_line(small_rows: Path) -> None:
    hosts = f"127.0.0.1:{closed_port()}"
    started = time.monotonic()
    done = restore(small_rows, hosts + "/sandbox", "--timeout", "2")
    assert done.returncode == 3, done.stderr
    assert one_line(done.stderr).startswith(f"error: cannot connect to ZooKeeper at {hosts}")
    assert done.stdout == ""
    assert time.monotonic() - started < 60


# -- stopped halfway ----------------------------------------------------------------------------------------


def _whole_topics(zk: KazooClient, rows: dict[str, bytes | None]) -> int:
    """Check every topic present has its whole subtree (each partition of its assignment and its state, the
    rows' bytes); returns how many there are."""
    topics = zk.get_children(paths.BROKER_TOPICS)
    data = {t: zk.get_async(paths.topic(t)) for t in topics}
    kids = {t: zk.get_children_async(f"{paths.topic(t)}/partitions") for t in topics}
    states: dict[str, Any] = {}
    for t in topics:
        value, _ = data[t].get(timeout=60)
        assert value == rows[paths.topic(t)]
        assignment = TopicAssignment.decode(paths.topic(t), value)
        assert sorted(kids[t].get(timeout=60), key=int) == [str(p) for p in sorted(assignment.partitions)], t
        for p in assignment.partitions:
            states[paths.partition_state(t, p)] = zk.get_async(paths.partition_state(t, p))
    for path, pending in states.items():
        assert pending.get(timeout=60)[0] == rows[path], path
    return len(topics)


@pytest.fixture(scope="module")
def big_server() -> Iterator[ZkServer]:
    """A ZooKeeper of its own for the ~250,000-znode restores: the session's shared server (256 MB heap) holding
    them beside every other test's data ran out of heap and stopped answering."""
    local = LocalZooKeeper(1, heap_mb=1536).start()
    try:
        yield ZkServer(local.connect_string, "local", local.log_tail, local.stop)
    finally:
        local.stop()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_restore_stopped_halfway_leaves_whole_topics_and_the_marker(
    big_rows: Path,
    small_rows: Path,
    big_server: ZkServer,
    tmp_path: Path,
    sig: signal.Signals,
) -> None:
    zk_server, zk_hosts = big_server, f"{big_server.hosts}/stopped-{sig.name.lower()}"
    with client_at(zk_server.hosts) as root:
        root.ensure_path("/" + zk_hosts.split("/", 1)[1])
    with client_at(zk_hosts) as zk:
        _stopped_halfway(big_rows, small_rows, zk_server, zk_hosts, zk, tmp_path, sig)


def _stopped_halfway(
    big_rows: Path,
    small_rows: Path,
    zk_server: ZkServer,
    zk_hosts: str,
    zk: KazooClient,
    tmp_path: Path,
    sig: signal.Signals,
) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(str(big_rows), columns=["path", "data", "ephemeral_owner"])
    rows = {
        p: d
        for p, d, o in zip(*(table.column(c).to_pylist() for c in ("path", "data", "ephemeral_owner")), strict=True)
        if o == 0
    }
    total_topics = sum(1 for p in rows if p.count("/") == 3 and p.startswith("/brokers/topics/"))

    proc = subprocess.Popen(
        [*BIN, "snapshot", "restore", str(big_rows), "--zookeeper", zk_hosts],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, f"the restore ended before it could be stopped: {proc.communicate()}"
            assert time.monotonic() < deadline, "no topic appeared"
            with contextlib.suppress(NoNodeError):
                if zk.get_children(paths.BROKER_TOPICS):
                    break
            time.sleep(0.005)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert zk.exists(MARKER) is not None
    whole = _whole_topics(zk, rows)
    assert 0 < whole < total_topics  # stopped halfway, and every topic there is whole

    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 130, err
        line = one_line(err)
        hosts = zk_server.hosts
        match = re.fullmatch(
            rf"error: interrupted after ([\d,]+) of {len(rows):,} znodes; the chroot is marked by {MARKER}: "
            rf"restore again into a fresh chroot \(--zookeeper {re.escape(hosts)}/<new chroot>\)",
            line,
        )
        assert match, line
        written = int(match.group(1).replace(",", ""))
        present = len(read_tree(zk)) - 2  # not the chroot's own znode nor the marker
        assert 0 < written <= present
        assert out == ""

    again = restore(small_rows, zk_hosts)
    assert again.returncode == 1, again.stderr
    assert MARKER in one_line(again.stderr) and "nothing was written" in again.stderr

    config = tmp_path / "server.properties"
    config.write_text(
        f"broker.id=1\nzookeeper.connect={zk_hosts}\nlisteners=PLAINTEXT://127.0.0.1:0\nbridgekeeper.metrics.port=-1\n"
    )
    node = subprocess.Popen(
        [*BIN, "node", "--config", str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        node_out, node_err = node.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        node.kill()
        node_out, node_err = node.communicate()
        pytest.fail(f"the node started on an unfinished copy: {node_out}")
    assert node.returncode == 1, node_err
    errors = [line for line in node_err.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: this chroot holds a snapshot restore that did not finish ({MARKER} is present): "
        "restore again into a fresh chroot"
    ], node_err
    assert "NODE-READY" not in node_out
    assert zk.exists(paths.broker(1)) is None and zk.exists(paths.CONTROLLER) is None


# -- ACLs -----------------------------------------------------------------------------------------------------


def acl_of(client: KazooClient, path: str) -> list[tuple[int, str, str]]:
    return [(a.perms, a.id.scheme, a.id.id) for a in client.get_acls(path)[0]]


def test_acls_keep_sets_the_recorded_acls_and_open_opens_every_znode(
    zk_server: ZkServer, zk_chroot: str, zk_hosts: str, tmp_path: Path
) -> None:
    owner = make_digest_acl("u", "pw", all=True)
    locked = [owner, make_acl("world", "anyone", read=True)]
    with client_at(zk_server.hosts + zk_chroot, auth_data=[("digest", "u:pw")]) as admin:
        try:
            admin.create("/source/brokers/ids", makepath=True)
            admin.create("/source/brokers/topics")
            admin.create("/source/brokers/topics/open", TopicAssignment({0: (1,)}, version=3).encode())
            admin.create("/source/brokers/topics/locked", TopicAssignment({0: (1,)}, version=3).encode(), acl=locked)
            admin.create("/source/brokers/topics/locked/partitions", acl=locked)
            admin.create("/source/brokers/topics/locked/partitions/0")  # open, below a closed parent
            admin.create("/source/brokers/topics/locked/partitions/0/state", PartitionState(1, 0, 1, (1,)).encode())
            admin.create("/source/config/users", makepath=True)
            admin.set_acls("/source/config", locked)
            admin.create(
                "/source/config/users/alice", b'{"version":1,"config":{"producer_byte_rate":"1"}}', acl=[owner]
            )
            source_paths = [p for p in read_tree(admin, "/source") if p != "/source"]
            recorded = {p[len("/source") :]: acl_of(admin, p) for p in source_paths}
            closed = {p for p, acl in recorded.items() if acl != OPEN}
            assert closed == {
                "/brokers/topics/locked",
                "/brokers/topics/locked/partitions",
                "/config",
                "/config/users/alice",
            }

            rows = tmp_path / "acl.parquet"
            export = cli(
                "snapshot",
                "export",
                "--zookeeper",
                zk_hosts + "/source",
                "--zk-identity",
                "digest:u:pw",
                "-o",
                str(rows),
            )
            assert export.returncode == 0, export.stderr
            exported = {r["path"]: [(a["perms"], a["scheme"], a["id"]) for a in r["acl"]] for r in read_rows(rows)}
            assert exported == recorded  # the hashes, not masked

            kept = restore(rows, zk_hosts + "/keep", "--acls", "keep")
            assert kept.returncode == 0, kept.stderr
            assert (
                f"  ACLs: the recorded ones, set on {len(closed)} znode(s); writing may need the identities they "
                "name" in kept.stdout.splitlines()
            )
            target = read_tree(admin, "/keep")
            assert sorted(p[len("/keep") :] for p in target if p != "/keep") == sorted(recorded)
            for path, acl in recorded.items():
                assert acl_of(admin, "/keep" + path) == acl, path
                assert target["/keep" + path][0] == admin.get("/source" + path)[0], path
            assert acl_of(admin, "/keep") == OPEN  # the target chroot itself is not the rows'

            opened = restore(rows, zk_hosts + "/open")
            assert opened.returncode == 0, opened.stderr
            with client_at(zk_hosts + "/open") as anyone:
                restored = [p for p in read_tree(anyone) if p != "/"]
                assert sorted(restored) == sorted(recorded)
                assert {p: acl_of(anyone, p) for p in restored} == dict.fromkeys(restored, OPEN)
        finally:
            wipe(admin)


# -- credentials ----------------------------------------------------------------------------------------------


def _node(path: str, data: bytes | None = None) -> Node:
    return Node(
        path=path,
        data=data,
        acl=OPEN,
        czxid=1,
        mzxid=1,
        ctime=0,
        mtime=0,
        version=0,
        cversion=0,
        aversion=0,
        ephemeral_owner=0,
        pzxid=1,
    )


def test_credentials_are_redacted_unless_kept(zk_hosts: str, chroot_zk: KazooClient, tmp_path: Path) -> None:
    zk = chroot_zk
    scram = "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
    user = orjson.dumps({"version": 1, "config": {"SCRAM-SHA-256": scram, "producer_byte_rate": "1048576"}})
    client_quota = b'{"version":1,"config":{"consumer_byte_rate":"2048"}}'
    broker = orjson.dumps(
        {
            "version": 1,
            "config": {
                "ssl.keystore.password": "[encrypted]",
                "listener.name.x.scram-sha-256.sasl.jaas.config": "[encrypted]",
                "log.retention.ms": "86400000",
                "ssl.client.auth": "required",
            },
        }
    )
    token = b'{"owner":"User:alice","renewers":[],"issueTimestamp":1,"maxTimestamp":2,"expiryTimestamp":2}'
    nodes = [
        _node("/brokers"),
        _node("/brokers/ids"),
        _node("/brokers/topics"),
        _node("/brokers/topics/t", TopicAssignment({0: (1,)}, version=3).encode()),
        _node("/config"),
        _node("/config/users"),
        _node("/config/users/alice", user),
        _node("/config/users/alice/clients"),
        _node("/config/users/alice/clients/app", client_quota),
        _node("/config/brokers"),
        _node("/config/brokers/<default>", broker),
        _node("/delegation_token"),
        _node("/delegation_token/tokens"),
        _node("/delegation_token/tokens/x", token),
    ]
    rows = tmp_path / "creds.jsonl"
    with RowWriter(rows) as out:
        out.write_all(nodes)
    recorded = {n.path: n.data for n in nodes}

    redacted = restore(rows, zk_hosts + "/redacted")
    assert redacted.returncode == 0, redacted.stderr
    lines = redacted.stdout.splitlines()
    assert "  skipped 1: credential (redacted)" in lines
    assert (
        "  credentials redacted: 1 SCRAM credential(s), 1 delegation token(s), 2 broker password config(s) "
        "(--keep-credentials keeps them)" in lines
    )
    got = {p[len("/redacted") :]: d for p, (d, _s) in read_tree(zk, "/redacted").items() if p != "/redacted"}
    assert sorted(got) == sorted(set(recorded) - {"/delegation_token/tokens/x"})
    assert orjson.loads(got["/config/users/alice"] or b"") == {
        "version": 1,
        "config": {"producer_byte_rate": "1048576"},
    }
    assert orjson.loads(got["/config/brokers/<default>"] or b"")["config"] == {
        "log.retention.ms": "86400000",
        "ssl.client.auth": "required",
    }
    untouched = set(got) - {"/config/users/alice", "/config/brokers/<default>"}
    assert {p: got[p] for p in untouched} == {p: recorded[p] for p in untouched}  # the client quota too
    assert scram.encode() not in b"".join(d or b"" for d in got.values())

    kept = restore(rows, zk_hosts + "/kept", "--keep-credentials")
    assert kept.returncode == 0, kept.stderr
    assert "  credentials kept as recorded (--keep-credentials)" in kept.stdout.splitlines()
    assert "credential (redacted)" not in kept.stdout
    got = {p[len("/kept") :]: d for p, (d, _s) in read_tree(zk, "/kept").items() if p != "/kept"}
    assert got == recorded  # byte for byte

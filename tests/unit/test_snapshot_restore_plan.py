"""``snapshot restore`` decided from the rows alone (:func:`migrate.snapshot.restore.plan`): the order and
grouping of the writes, what is skipped and why, what the twin reads from the ephemerals, the input errors, and
the credential redaction (:mod:`migrate.snapshot.credentials`) the plan applies. Rows are real files (RowWriter's
Parquet and JSON lines, or hand-written JSON lines); nothing connects to ZooKeeper."""

from __future__ import annotations

import base64
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.snapshot.credentials import Redaction, is_password_config, redact
from migrate.snapshot.files import Node
from migrate.snapshot.restore import Plan, RestoreInputError, plan, row_files
from migrate.snapshot.restore_write import Outcome, summary
from migrate.snapshot.rows import RowWriter
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.topics import PartitionState, TopicAssignment

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
OPEN = [(31, "world", "anyone")]
LOCKED = [(31, "digest", "u:hash="), (1, "world", "anyone")]
SESSION = 0x1000_0000_0000_0001
REASONS = {
    "outside": "outside the source chroot {}",
    "root": "the chroot's root (exists already)",
    "zookeeper": "ZooKeeper's own /zookeeper",
    "ephemeral": "ephemeral (its session is gone)",
    "credential": "credential (redacted)",
}


def node(path: str, data: bytes | None = None, *, owner: int = 0, acl: list[tuple[int, str, str]] = OPEN) -> Node:
    return Node(
        path=path,
        data=data,
        acl=acl,
        czxid=1,
        mzxid=1,
        ctime=0,
        mtime=0,
        version=0,
        cversion=0,
        aversion=0,
        ephemeral_owner=owner,
        pzxid=1,
    )


def write_rows(path: Path, nodes: list[Node]) -> Path:
    with RowWriter(path) as out:
        out.write_all(nodes)
    return path


def topic(name: str, replicas: dict[int, tuple[int, ...]]) -> list[Node]:
    base = f"/brokers/topics/{name}"
    out = [node(base, TopicAssignment(replicas, topic_id=TOPIC_ID, version=3).encode()), node(f"{base}/partitions")]
    for p, r in replicas.items():
        out += [
            node(f"{base}/partitions/{p}"),
            node(f"{base}/partitions/{p}/state", PartitionState(r[0], 1, 1, r).encode()),
        ]
    return out


def registration(rack: str | None) -> bytes:
    return BrokerRegistration((EndPoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),), 1, version=5, rack=rack).encode()


def written(p: Plan) -> list[tuple[str, bytes | None]]:
    return [z for group in p.groups for z in group]


# -- order and grouping --------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_pre_order_keeps_each_topic_subtree_contiguous_and_in_one_group(tmp_path: Path, suffix: str) -> None:
    # '-', '.' and '_'... sort around '/': a plain string sort puts /brokers/topics/t-x between /brokers/topics/t
    # and /brokers/topics/t/partitions; the rows come in a scrambled order on purpose
    nodes = [
        node("/brokers"),
        node("/brokers/topics"),
        node("/brokers/ids"),
        *topic("t-x", {0: (1,)}),
        *topic("t", {0: (1, 2), 1: (2, 1), 10: (1,)}),
        *topic("t.y", {0: (2,)}),
        *topic("t0", {0: (1,)}),
        *topic("s", {0: (1,)}),
        node("/config"),
        node("/config/topics"),
        node("/config/topics/t", b'{"version":1,"config":{}}'),
        node("/config/topics/t-x", b'{"version":1,"config":{}}'),
    ]
    nodes.reverse()
    p = plan([write_rows(tmp_path / f"rows{suffix}", nodes)])
    order = [path for path, _ in written(p)]

    assert sorted(order) == sorted(n.path for n in nodes) and len(order) == len(set(order)) == p.znodes
    position = {path: i for i, path in enumerate(order)}
    for path in order:  # parents first
        parent = path.rsplit("/", 1)[0]
        if parent:
            assert position[parent] < position[path], path
    topics = ["s", "t", "t-x", "t.y", "t0"]
    for name in topics:  # one group per topic: the topic znode first, then exactly its subtree
        base = f"/brokers/topics/{name}"
        groups = [g for g in p.groups if any(path == base or path.startswith(base + "/") for path, _ in g)]
        assert len(groups) == 1, name
        members = [path for path, _ in groups[0]]
        assert members[0] == base
        assert sorted(members) == sorted(n.path for n in nodes if n.path == base or n.path.startswith(base + "/"))
        first = position[base]  # contiguous in the write order too
        assert order[first : first + len(members)] == members
    for group in p.groups:  # everything else is a group of its own
        if not group[0][0].startswith("/brokers/topics/"):
            assert len(group) == 1
    data = {n.path: n.data for n in nodes}
    assert all(d == data[path] for path, d in written(p))  # byte for byte
    assert (p.topics, p.partitions, p.added_parents) == (5, 7, 0)
    assert p.assigned == frozenset({1, 2})


def test_ancestors_missing_from_the_rows_are_added_with_null_data(tmp_path: Path) -> None:
    state = PartitionState(1, 1, 1, (1,)).encode()
    rows = write_rows(
        tmp_path / "some.jsonl",
        [
            node("/brokers/topics/a", TopicAssignment({0: (1,)}, topic_id=TOPIC_ID, version=3).encode()),
            node("/brokers/topics/a/partitions/0/state", state),
            node("/config/topics/a", b'{"version":1,"config":{}}'),
        ],
    )
    p = plan([rows])
    got = dict(written(p))
    added = {
        "/brokers",
        "/brokers/topics",
        "/brokers/topics/a/partitions",
        "/brokers/topics/a/partitions/0",
        "/config",
        "/config/topics",
    }
    assert set(got) == added | {"/brokers/topics/a", "/brokers/topics/a/partitions/0/state", "/config/topics/a"}
    assert all(got[path] is None for path in added)
    assert got["/brokers/topics/a/partitions/0/state"] == state
    assert p.added_parents == len(added) and p.znodes == len(got)
    order = [path for path, _ in written(p)]
    assert (
        order.index("/brokers/topics") < order.index("/brokers/topics/a") < order.index("/brokers/topics/a/partitions")
    )
    assert any(
        line.startswith(f"  {len(added)} parent znode(s) the rows lack")
        for line in summary(p, Outcome(0, p.znodes, 0, 1.0), acls="open", keep_credentials=False, target="h:1/x")
    )


# -- what is skipped, and what the ephemerals tell ----------------------------------------------------------


def test_rows_of_a_whole_zookeeper_skip_the_outside_the_root_and_the_ephemerals(tmp_path: Path) -> None:
    controller = b'{"version":1,"brokerid":2,"timestamp":"1"}'
    nodes = [
        node("/"),
        node("/zookeeper"),
        node("/zookeeper/quota"),
        node("/other"),
        node("/other/brokers"),
        node("/kafka"),
        node("/kafka/brokers"),
        node("/kafka/brokers/ids"),
        node("/kafka/brokers/ids/1", registration("r1"), owner=SESSION),
        node("/kafka/brokers/ids/2", registration(None), owner=SESSION),
        node("/kafka/brokers/ids/3", b"{not json", owner=SESSION),
        node("/kafka/controller", controller, owner=SESSION),
        node("/kafka/brokers/topics"),
        *[node("/kafka" + n.path, n.data) for n in topic("t", {0: (1, 2), 1: (7, 1)})],
        node("/kafka/zookeeper"),  # Kafka's tree never has one; a /zookeeper under the source chroot is not copied
    ]
    p = plan([write_rows(tmp_path / "root.parquet", nodes)])

    assert p.source_chroot == "/kafka"  # found from /kafka/brokers/ids and /kafka/brokers/topics
    assert dict(p.skipped) == {
        REASONS["outside"].format("/kafka"): 5,
        REASONS["root"]: 1,
        REASONS["ephemeral"]: 4,
        REASONS["zookeeper"]: 1,
    }
    paths = [path for path, _ in written(p)]
    assert paths == [
        "/brokers",
        "/brokers/ids",
        "/brokers/topics",
        "/brokers/topics/t",
        "/brokers/topics/t/partitions",
        "/brokers/topics/t/partitions/0",
        "/brokers/topics/t/partitions/0/state",
        "/brokers/topics/t/partitions/1",
        "/brokers/topics/t/partitions/1/state",
    ]
    assert [(r.broker_id, r.rack, r.endpoints) for r in p.registrations] == [
        (1, "r1", ("PLAINTEXT://h:9092",)),
        (2, None, ("PLAINTEXT://h:9092",)),
        (3, None, ()),
    ]
    assert len(p.unreadable_registrations) == 1 and p.unreadable_registrations[0].startswith("/brokers/ids/3: ")
    assert p.controller == 2
    assert p.assigned == frozenset({1, 2, 7})
    lines = summary(p, Outcome(0, p.znodes, 0, 1.0), acls="open", keep_credentials=False, target="h:1/x")
    assert (
        lines[0].startswith(f"restored {p.znodes:,} znodes into h:1/x in 1.0 s")
        and "1 topics, 2 partitions" in lines[0]
    )
    assert (
        "  skipped 5: outside the source chroot /kafka" in lines
        and "  skipped 4: ephemeral (its session is gone)" in lines
    )
    assert "  brokers named by assignments but not registered (offline): 7" in lines

    # the same rows told their chroot: /other's tree instead, everything else outside it
    other = plan([tmp_path / "root.parquet"], source_chroot="/other/")
    assert other.source_chroot == "/other" and [path for path, _ in written(other)] == ["/brokers"]
    assert other.skipped[REASONS["outside"].format("/other")] == len(nodes) - 2


def test_rows_from_a_root_holding_kafka_skip_zookeeper_and_the_root(tmp_path: Path) -> None:
    rows = write_rows(
        tmp_path / "plain.jsonl",
        [
            node("/"),
            node("/zookeeper"),
            node("/zookeeper/config", b"server.1=x"),
            node("/zookeeper/quota"),
            node("/brokers"),
            node("/brokers/ids"),
            node("/brokers/topics"),
            node("/cluster"),
            node("/cluster/id", b'{"version":"1","id":"x"}'),
        ],
    )
    p = plan([rows])
    assert p.source_chroot == ""
    assert dict(p.skipped) == {REASONS["root"]: 1, REASONS["zookeeper"]: 3}
    assert [path for path, _ in written(p)] == [
        "/brokers",
        "/brokers/ids",
        "/brokers/topics",
        "/cluster",
        "/cluster/id",
    ]


def test_a_relative_source_chroot_is_refused(tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "r.jsonl", [node("/brokers")])
    with pytest.raises(RestoreInputError, match="--source-chroot 'kafka' is not an absolute znode path"):
        plan([rows], source_chroot="kafka")


# -- input errors ---------------------------------------------------------------------------------------------


def test_a_path_in_two_files_is_refused_naming_it(tmp_path: Path) -> None:
    first = write_rows(tmp_path / "a.parquet", [node("/brokers"), node("/brokers/topics/x", b"1")])
    second = write_rows(tmp_path / "b.jsonl", [node("/config"), node("/brokers/topics/x", b"2")])
    with pytest.raises(RestoreInputError) as caught:
        plan([first, second])
    assert str(caught.value) == f"{second}: /brokers/topics/x appears twice in the rows"


@pytest.mark.parametrize(
    "bad",
    [
        b"not json at all",
        b'{"data": null}',  # no path
        b'{"path": "/brokers/x"}',  # no data
        b'{"path": "/brokers/x", "data": "***not base64***"}',
        b'["/brokers/x", null]',
    ],
)
def test_a_jsonl_line_that_is_not_a_row_is_refused_naming_file_and_line(tmp_path: Path, bad: bytes) -> None:
    good = orjson.dumps({"path": "/brokers", "data": None, "ephemeral_owner": 0})
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(good + b"\n\n" + bad + b"\n" + good.replace(b"/brokers", b"/config") + b"\n")
    with pytest.raises(RestoreInputError) as caught:
        plan([rows])
    assert str(caught.value).startswith(f"{rows}: line 3 is not a snapshot row (")


def test_a_row_path_that_is_not_absolute_is_refused(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(orjson.dumps({"path": "brokers", "data": base64.b64encode(b"x").decode()}) + b"\n")
    with pytest.raises(RestoreInputError, match="a row's path 'brokers' is not an absolute znode path"):
        plan([rows])


def test_row_files_take_rows_files_and_directories_only(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("path,data\n")
    with pytest.raises(RestoreInputError, match=r"rows\.csv: not a snapshot-rows file"):
        row_files([str(tmp_path / "rows.csv")])
    with pytest.raises(RestoreInputError, match=r"missing\.parquet: no such file or directory"):
        row_files([str(tmp_path / "missing.parquet")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RestoreInputError, match=r"no \.parquet or \.jsonl files in this directory"):
        row_files([str(empty)])
    (empty / "notes.csv").write_text("x\n")
    second, first = write_rows(empty / "b.jsonl", [node("/b")]), write_rows(empty / "a.parquet", [node("/a")])
    assert row_files([str(empty)]) == [first, second]  # sorted; the .csv beside them is not a rows file
    with pytest.raises(RestoreInputError, match="no rows"):
        plan([write_rows(tmp_path / "none.parquet", [])])


# -- ACLs -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_acls_keep_collects_only_the_znodes_whose_acl_is_not_open(tmp_path: Path, suffix: str) -> None:
    read_only = [(1, "world", "anyone")]
    rows = write_rows(
        tmp_path / f"acl{suffix}",
        [
            node("/brokers"),
            node("/brokers/topics"),
            node("/brokers/topics/t", b"{}", acl=LOCKED),
            node("/brokers/topics/t/partitions"),
            node("/config", acl=read_only),
            node("/config/users"),
            node("/brokers/ids/1", b"{}", owner=SESSION, acl=LOCKED),  # not written: its ACL is not either
        ],
    )
    kept = plan([rows], acls="keep")
    assert kept.acls == [("/brokers/topics/t", tuple(LOCKED)), ("/config", tuple(read_only))]
    assert plan([rows], acls="open").acls == []  # the default writes none


# -- credentials --------------------------------------------------------------------------------------------------

SCRAM = "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
PASSWORD_CONFIGS = [  # Kafka 3.9's PASSWORD-typed broker configs (KafkaConfig, DynamicBrokerConfig)
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
    "password.encoder.secret",
    "password.encoder.old.secret",
    "delegation.token.master.key",
    "delegation.token.secret.key",
    "listener.name.external.ssl.keystore.password",
    "listener.name.x.scram-sha-256.sasl.jaas.config",
    "listener.name.internal.plain.sasl.jaas.config",
]
NORMAL_CONFIGS = [
    "log.retention.ms",
    "ssl.client.auth",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.truststore.location",
    "ssl.keymanager.algorithm",
    "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation",
    "ssl.principal.mapping.rules",
    "sasl.enabled.mechanisms",
    "listener.name.x.sasl.enabled.mechanisms",
    "password.encoder.key.length",
    "password.encoder.keyfactory.algorithm",
    "password.encoder.cipher.algorithm",
    "password.encoder.iterations",
    "delegation.token.expiry.time.ms",
    "sasl.kerberos.service.name",
    "max.connections",
    "leader.replication.throttled.rate",
    "listener.name.x.ssl.client.auth",
]


@pytest.mark.parametrize("key", PASSWORD_CONFIGS)
def test_password_typed_broker_configs_are_recognised(key: str) -> None:
    assert is_password_config(key)


@pytest.mark.parametrize("key", NORMAL_CONFIGS)
def test_other_broker_configs_are_not_taken_for_passwords(key: str) -> None:
    assert not is_password_config(key)


def entity(config: dict[str, str]) -> bytes:
    return orjson.dumps({"version": 1, "config": config})


def test_redact_takes_scram_keys_out_of_a_user_and_keeps_its_quotas() -> None:
    tally = Redaction()
    data = entity({"SCRAM-SHA-256": SCRAM, "SCRAM-SHA-512": SCRAM, "producer_byte_rate": "1024"})
    keep, out = redact("/config/users/alice", data, tally)
    assert keep and out is not None
    assert orjson.loads(out) == {"version": 1, "config": {"producer_byte_rate": "1024"}}
    assert (tally.scram, tally.tokens, tally.passwords, tally.unreadable) == (2, 0, 0, 0)

    quota = entity({"consumer_byte_rate": "2048", "SCRAM-SHA-256": SCRAM})  # never a credential below a user
    for path in ("/config/users/alice/clients/app", "/config/users/<default>/clients/<default>", "/config/clients/c"):
        assert redact(path, quota, tally) == (True, quota)
    plain = entity({"producer_byte_rate": "1"})
    assert redact("/config/users/bob", plain, tally)[1] is plain  # nothing to take out: the same bytes
    assert redact("/config/users/nodata", None, tally) == (True, None)
    assert tally.total == 2


def test_redact_drops_tokens_and_password_configs_but_not_the_others() -> None:
    tally = Redaction()
    assert redact("/delegation_token/tokens/tok-1", b'{"owner":"User:x","hmac":"secret"}', tally) == (False, None)
    assert redact("/delegation_token/tokens", None, tally) == (True, None)  # the parent stays
    data = entity(
        {
            "ssl.keystore.password": "enc",
            "listener.name.x.scram-sha-256.sasl.jaas.config": "enc",
            "password.encoder.secret": "s",
            "log.retention.ms": "1000",
            "ssl.client.auth": "required",
        }
    )
    keep, out = redact("/config/brokers/<default>", data, tally)
    assert keep and out is not None
    assert orjson.loads(out)["config"] == {"log.retention.ms": "1000", "ssl.client.auth": "required"}
    topic_config = entity({"ssl.keystore.password": "not a broker config, not touched"})
    assert redact("/config/topics/t", topic_config, tally) == (True, topic_config)
    assert (tally.scram, tally.tokens, tally.passwords, tally.unreadable) == (0, 1, 3, 0)
    assert tally.describe() == "0 SCRAM credential(s), 1 delegation token(s), 3 broker password config(s)"


@pytest.mark.parametrize("data", [b"{not json", b'{"version":1}', b'{"version":1,"config":"x"}', b"[1,2]"])
def test_an_unreadable_credential_znode_is_dropped_whole(data: bytes) -> None:
    tally = Redaction()
    assert redact("/config/users/alice", data, tally) == (False, None)
    assert redact("/config/brokers/1", data, tally) == (False, None)
    assert tally.unreadable == 2 and tally.total == 2
    assert "2 unreadable credential znode(s) dropped whole" in tally.describe()


def test_the_plan_redacts_unless_told_to_keep_credentials(tmp_path: Path) -> None:
    user = entity({"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "1024"})
    broker = entity({"ssl.keystore.password": "enc", "log.retention.ms": "1"})
    nodes = [
        node("/kafka"),
        node("/kafka/brokers"),
        node("/kafka/brokers/topics"),
        node("/kafka/config"),
        node("/kafka/config/users"),
        node("/kafka/config/users/alice", user),
        node("/kafka/config/users/mallory", b"{garbled"),
        node("/kafka/config/brokers"),
        node("/kafka/config/brokers/<default>", broker),
        node("/kafka/delegation_token"),
        node("/kafka/delegation_token/tokens"),
        node("/kafka/delegation_token/tokens/t1", b"{}"),
    ]
    rows = write_rows(tmp_path / "creds.parquet", nodes)
    p = plan([rows])
    got = dict(written(p))
    assert "/delegation_token/tokens/t1" not in got and "/config/users/mallory" not in got
    assert orjson.loads(got["/config/users/alice"] or b"")["config"] == {"producer_byte_rate": "1024"}
    assert orjson.loads(got["/config/brokers/<default>"] or b"")["config"] == {"log.retention.ms": "1"}
    assert p.skipped[REASONS["credential"]] == 2
    assert (p.redaction.scram, p.redaction.tokens, p.redaction.passwords, p.redaction.unreadable) == (1, 1, 1, 1)
    lines = summary(p, Outcome(0, p.znodes, 0, 1.0), acls="open", keep_credentials=False, target="h:1/x")
    assert (f"  credentials redacted: {p.redaction.describe()} (--keep-credentials keeps them)") in lines

    kept = plan([rows], keep_credentials=True)
    assert dict(written(kept)) == {n.path[len("/kafka") :]: n.data for n in nodes[1:]}
    assert kept.redaction.total == 0 and REASONS["credential"] not in kept.skipped


KNOWN_KEYS = st.sampled_from([*PASSWORD_CONFIGS, *NORMAL_CONFIGS, "SCRAM-SHA-256", "SCRAM-SHA-512", "scram-sha-256"])
CONFIG_KEYS = st.one_of(
    KNOWN_KEYS,
    st.text(max_size=30),
    st.builds(
        lambda listener, key: f"listener.name.{listener}.{key}",
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
        KNOWN_KEYS,
    ),
)
CONFIGS = st.dictionaries(CONFIG_KEYS, st.one_of(st.text(max_size=20), st.integers(-(2**63), 2**63 - 1)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    config=CONFIGS, kind=st.sampled_from(["/config/users/u", "/kafka/config/brokers/<default>", "/config/brokers/3"])
)
def test_redaction_removes_exactly_the_secret_keys_and_keeps_every_other_value(
    config: dict[str, str | int], kind: str
) -> None:
    secret = (lambda key: key in ("SCRAM-SHA-256", "SCRAM-SHA-512")) if "/users/" in kind else is_password_config
    data = orjson.dumps({"version": 1, "config": config, "other": [1, "x"]})
    tally = Redaction()
    keep, out = redact(kind, data, tally)
    assert keep and out is not None
    doc = orjson.loads(out)
    assert not any(secret(key) for key in doc["config"])  # no secret survives
    assert doc["config"] == {k: v for k, v in config.items() if not secret(k)}  # everything else, value and all
    assert doc["version"] == 1 and doc["other"] == [1, "x"]
    removed = sum(1 for k in config if secret(k))
    assert getattr(tally, "scram" if "/users/" in kind else "passwords") == removed and tally.total == removed
    if not removed:
        assert out is data  # nothing secret: the recorded bytes, not a re-encoding

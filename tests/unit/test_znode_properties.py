"""Property tests for the znode codecs: round trips, key-order independence and robustness on foreign data.

Every decoder promises to return a value or raise ``ZnodeFormatError`` naming the path (see zkmodel.errors);
these tests hold each codec, and ``zkmodel.registry.decode_znode``, to that promise with generated values,
shuffled JSON, garbage bytes, arbitrary JSON and mutated encodings.  The last section pins the zkmodel bugs
they found.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, PreferredReplicaElectionZnode, TopicPartition
from zkmodel.brokers import SECURITY_PROTOCOLS, BrokerRegistration, EndPoint
from zkmodel.cluster import ClusterIdZnode, FeatureZnode, MigrationZnode, ProducerIdBlock
from zkmodel.configs import ENTITY_TYPES, ConfigChangeNotification, EntityConfig, user_client_entity_path
from zkmodel.election import ControllerZnode, decode_controller_epoch, encode_controller_epoch
from zkmodel.errors import ZnodeFormatError
from zkmodel.kafka_acls import (
    AclEntry,
    AclNode,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    decode_extended_acl_change,
    decode_literal_acl_change,
    encode_extended_acl_change,
    encode_literal_acl_change,
)
from zkmodel.notifications import IsrChangeNotification, LogDirEventNotification
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.registry import _RULES, decode_znode, decoder_for
from zkmodel.topics import LEADER_DURING_DELETE, NO_LEADER, RECOVERED, RECOVERING, PartitionState, TopicAssignment

# Sized so the whole file runs in about 20 s on two cores; raise locally when hunting bugs.
ROUND_TRIP = settings(max_examples=50, deadline=None)
KEY_ORDER = settings(max_examples=20, deadline=None)
FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BYTE_FUZZ = settings(max_examples=20, deadline=None)

# --- Shared strategies -------------------------------------------------------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
NON_NEGATIVE_INT32 = st.integers(0, 2**31 - 1)
# Small ids collide often (origin/target overlap, repeats); large ones probe the 32-bit edge.
BROKER_IDS = st.one_of(st.integers(0, 9), NON_NEGATIVE_INT32)
PARTITION_IDS = st.one_of(st.integers(0, 40), NON_NEGATIVE_INT32)
REPLICAS = st.lists(BROKER_IDS, unique=True, max_size=6).map(tuple)
TOPIC_NAMES = st.from_regex(r"[A-Za-z0-9._-]{1,40}", fullmatch=True)
# ZooKeeper sequence numbers are a signed 32-bit counter, printed as ten digits.
SEQUENCES = NON_NEGATIVE_INT32
KAFKA_UUIDS = st.binary(min_size=16, max_size=16).map(lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode())
# codec="utf-8": with exclude_characters alone, hypothesis also draws lone surrogates, which no znode can hold.
NAMES_WITHOUT_SLASH = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="/"), min_size=1, max_size=30)


def _encode(value: Any) -> bytes:
    return value.encode()  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Codec:
    """One znode kind: where it lives, which values it can hold, and its encoder/decoder pair."""

    name: str
    paths: st.SearchStrategy[str]
    values: st.SearchStrategy[Any]
    decode: Callable[[str, bytes | None], Any]
    encode: Callable[[Any], bytes] = _encode
    is_json: bool = True


# --- /brokers/topics/<t>: TopicAssignment -------------------------------------------------------------------


@st.composite
def topic_assignments(draw: st.DrawFn, version: int) -> TopicAssignment:
    partitions: dict[int, tuple[int, ...]] = {}
    adding: dict[int, tuple[int, ...]] = {}
    removing: dict[int, tuple[int, ...]] = {}
    for p in draw(st.lists(PARTITION_IDS, unique=True, max_size=8)):
        assignment = ReplicaAssignment(draw(REPLICAS))
        # v1 (Kafka <= 2.3) has no adding/removing maps and the encoder drops them, so only settled
        # partitions survive a v1 round trip.  From v2 start, re-target or cancel moves in flight; going
        # through ReplicaAssignment keeps RS/AR/RR consistent the way Kafka's controller keeps them.
        if version >= 2:
            for target in draw(st.lists(st.none() | REPLICAS, max_size=3)):
                assignment = assignment.cancel() if target is None else assignment.reassign_to(target)
        partitions[p] = assignment.replicas
        # Kafka writes a partition into adding/removing only when its list is non-empty (so does the
        # encoder), hence an empty entry would not come back.
        if assignment.adding:
            adding[p] = assignment.adding
        if assignment.removing:
            removing[p] = assignment.removing
    # topic_id exists from v3 only; the v1/v2 encoders do not write it.
    topic_id = draw(st.none() | KAFKA_UUIDS) if version == 3 else None
    return TopicAssignment(partitions, adding, removing, topic_id, version)


TOPIC_PATHS = TOPIC_NAMES.map(paths.topic)


@ROUND_TRIP
@given(st.data())
def test_in_flight_reassignment_keeps_origin_and_target(data: st.DataObject) -> None:
    origin = data.draw(REPLICAS, label="origin")
    target = data.draw(REPLICAS, label="target")
    moving = ReplicaAssignment(origin).reassign_to(target)
    value = TopicAssignment({0: moving.replicas}, {0: moving.adding}, {0: moving.removing}, None, 3)
    decoded = TopicAssignment.decode("/brokers/topics/t", value.encode())
    assert decoded.origin(0) == moving.origin
    assert decoded.target(0) == moving.target
    assert decoded.is_reassigning(0) == moving.is_being_reassigned


# --- /brokers/topics/<t>/partitions/<p>/state: PartitionState ------------------------------------------------

PARTITION_STATES = st.builds(
    PartitionState,
    leader=st.one_of(st.sampled_from([NO_LEADER, LEADER_DURING_DELETE]), BROKER_IDS),
    leader_epoch=NON_NEGATIVE_INT32,
    controller_epoch=NON_NEGATIVE_INT32,
    isr=REPLICAS,
    leader_recovery_state=st.sampled_from([RECOVERED, RECOVERING]),
)
STATE_PATHS = st.builds(paths.partition_state, TOPIC_NAMES, PARTITION_IDS)


# --- /brokers/ids/<id>: BrokerRegistration ------------------------------------------------------------------

LISTENER_NAMES = st.from_regex(r"[A-Za-z0-9_.-]{1,16}", fullmatch=True)
PORTS = st.integers(0, 65535)
IPV6_HOSTS = st.one_of(
    st.ip_addresses(v=6).map(str),
    st.from_regex(r"fe80::[0-9a-f]{1,4}%[a-z0-9]{1,8}", fullmatch=True),  # scoped (zone id) address
)
# Unbracketed, the endpoint grammar takes any host free of ':', '[' and ']'.
PLAIN_HOSTS = st.one_of(
    st.from_regex(r"[a-z0-9-]{1,20}(\.[a-z0-9-]{1,20}){0,3}", fullmatch=True),
    st.ip_addresses(v=4).map(str),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters=":[]"), max_size=20),
)
HOSTS = st.one_of(PLAIN_HOSTS, IPV6_HOSTS)
FEATURE_RANGES = st.tuples(NON_NEGATIVE_INT32, NON_NEGATIVE_INT32).map(lambda r: (min(r), max(r)))


@st.composite
def broker_registrations(draw: st.DrawFn, version: int) -> BrokerRegistration:
    endpoints: tuple[EndPoint, ...]
    if version == 1:
        # v1 predates endpoints: one host/port pair, read back as a single PLAINTEXT endpoint.  The host is
        # not parsed from a connection string, so any text survives.
        endpoints = (EndPoint("PLAINTEXT", draw(st.text(max_size=20)), draw(PORTS), "PLAINTEXT"),)
    elif version <= 3:
        # No listener_security_protocol_map before v4: the reader maps every protocol name to itself, so
        # only listeners named after their own security protocol survive.
        names = draw(st.lists(st.sampled_from(SECURITY_PROTOCOLS), unique=True, max_size=4))
        endpoints = tuple(EndPoint(n, draw(HOSTS), draw(PORTS), n) for n in names)
    else:
        names = draw(st.lists(LISTENER_NAMES, unique=True, max_size=5))
        endpoints = tuple(
            EndPoint(n, draw(HOSTS), draw(PORTS), draw(st.sampled_from(SECURITY_PROTOCOLS))) for n in names
        )
    return BrokerRegistration(
        endpoints=endpoints,
        timestamp=draw(INT64),
        version=version,
        rack=draw(st.none() | st.text(max_size=20)) if version >= 3 else None,  # rack is written from v3
        jmx_port=draw(st.integers(-1, 2**31 - 1)),
        features=draw(st.dictionaries(st.text(max_size=20), FEATURE_RANGES, max_size=5)) if version >= 5 else {},
    )


BROKER_PATHS = BROKER_IDS.map(paths.broker)


# --- /controller and /controller_epoch ----------------------------------------------------------------------

CONTROLLERS_V1 = st.builds(ControllerZnode, broker_id=BROKER_IDS, timestamp=INT64, version=st.just(1))
CONTROLLERS_V2 = st.builds(
    ControllerZnode, broker_id=BROKER_IDS, timestamp=INT64, version=st.just(2), kraft_controller_epoch=INT32
)


# --- /admin: reassign_partitions and preferred_replica_election ---------------------------------------------

TOPIC_PARTITIONS = st.builds(TopicPartition, st.text(min_size=1, max_size=30), PARTITION_IDS)
REASSIGNMENTS = st.lists(st.tuples(TOPIC_PARTITIONS, REPLICAS), unique_by=lambda e: e[0], max_size=8).map(
    lambda entries: PartitionReassignmentZnode(tuple(entries))
)
# The reader drops repeated partitions (and the reassignment reader rejects them), so generate each once.
PREFERRED_ELECTIONS = st.lists(TOPIC_PARTITIONS, unique=True, max_size=8).map(
    lambda tps: PreferredReplicaElectionZnode(tuple(tps))
)


# --- /config: EntityConfig and ConfigChangeNotification -----------------------------------------------------

ENTITY_CONFIGS = st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=30).map(EntityConfig)
ENTITY_CONFIG_PATHS = st.one_of(
    st.builds(paths.entity_config, st.just("topics"), TOPIC_NAMES),
    st.builds(paths.entity_config, st.just("brokers"), st.one_of(BROKER_IDS.map(str), st.just("<default>"))),
    st.builds(paths.entity_config, st.sampled_from(["clients", "users", "ips"]), st.text(min_size=1, max_size=20)),
    st.builds(
        lambda user, client: f"/config/{user_client_entity_path(user, client)}",
        st.text(min_size=1, max_size=20),
        st.text(min_size=1, max_size=20),
    ),
)
# The encoder always writes version 2 (``<type>/<name>``); a version 1 node is read into the same shape.
CONFIG_CHANGES = st.builds(
    lambda entity_type, rest: ConfigChangeNotification(f"{entity_type}/{rest}"),
    st.sampled_from(ENTITY_TYPES),
    st.text(max_size=30),
)
CONFIG_CHANGE_PATHS = SEQUENCES.map(paths.config_change)


# --- ACLs: /kafka-acl*, and the literal and extended change notifications -----------------------------------

ACL_ENTRIES = st.builds(
    AclEntry,
    principal=st.builds(lambda kind, name: f"{kind}:{name}", st.text(max_size=10), st.text(max_size=20)),
    permission_type=st.sampled_from(PermissionType),
    host=st.text(max_size=20),
    operation=st.sampled_from(AclOperation),
)
ACL_NODES = st.lists(ACL_ENTRIES, max_size=6).map(lambda acls: AclNode(tuple(acls)))
ACL_PATHS = st.builds(paths.acl, st.sampled_from(ResourceType), NAMES_WITHOUT_SLASH, st.sampled_from(PatternType))
LITERAL_ACL_CHANGES = st.builds(
    ResourcePattern, st.sampled_from(ResourceType), st.text(max_size=30), st.just(PatternType.LITERAL)
)
# Extended change events exist for non-literal patterns only; the reader rejects LITERAL there.
EXTENDED_ACL_CHANGES = st.builds(
    ResourcePattern, st.sampled_from(ResourceType), st.text(max_size=30), st.just(PatternType.PREFIXED)
)


# --- Notifications ------------------------------------------------------------------------------------------

ISR_CHANGES = st.lists(st.builds(TopicPartition, st.text(max_size=30), PARTITION_IDS), max_size=8).map(
    lambda tps: IsrChangeNotification(tuple(tps))
)
LOG_DIR_EVENTS = st.builds(LogDirEventNotification, BROKER_IDS)


# --- Cluster singletons: /feature, /cluster/id, /latest_producer_id_block, /migration -----------------------

# V1 stores min and max level, but the model keeps one level per feature and writes it as both, so any
# value survives; V2 stores only the max.
FEATURES = st.builds(
    FeatureZnode,
    version=st.sampled_from([1, 2]),
    status=st.sampled_from([0, 1]),
    features=st.dictionaries(st.text(max_size=20), INT32, max_size=8),
)
CLUSTER_IDS = st.builds(ClusterIdZnode, st.one_of(KAFKA_UUIDS, st.text(min_size=1, max_size=30)))


@st.composite
def producer_id_blocks(draw: st.DrawFn) -> ProducerIdBlock:
    start = draw(st.integers(0, 2**63 - 1))
    return ProducerIdBlock(draw(BROKER_IDS), start, draw(st.integers(start, 2**63 - 1)))


MIGRATIONS = st.builds(MigrationZnode, INT32, INT32, INT64, INT32)


# --- The codec table ----------------------------------------------------------------------------------------

CODECS = [
    *(Codec(f"TopicAssignment v{v}", TOPIC_PATHS, topic_assignments(v), TopicAssignment.decode) for v in (1, 2, 3)),
    Codec("PartitionState", STATE_PATHS, PARTITION_STATES, PartitionState.decode),
    *(
        Codec(f"BrokerRegistration v{v}", BROKER_PATHS, broker_registrations(v), BrokerRegistration.decode)
        for v in (1, 2, 3, 4, 5)
    ),
    Codec("ControllerZnode v1", st.just(paths.CONTROLLER), CONTROLLERS_V1, ControllerZnode.decode),
    Codec("ControllerZnode v2", st.just(paths.CONTROLLER), CONTROLLERS_V2, ControllerZnode.decode),
    Codec(
        "controller epoch",
        st.just(paths.CONTROLLER_EPOCH),
        NON_NEGATIVE_INT32,
        decode_controller_epoch,
        encode_controller_epoch,
        is_json=False,
    ),
    Codec(
        "PartitionReassignmentZnode",
        st.just(paths.REASSIGN_PARTITIONS),
        REASSIGNMENTS,
        PartitionReassignmentZnode.decode,
    ),
    Codec(
        "PreferredReplicaElectionZnode",
        st.just(paths.PREFERRED_REPLICA_ELECTION),
        PREFERRED_ELECTIONS,
        PreferredReplicaElectionZnode.decode,
    ),
    Codec("EntityConfig", ENTITY_CONFIG_PATHS, ENTITY_CONFIGS, EntityConfig.decode),
    Codec("ConfigChangeNotification", CONFIG_CHANGE_PATHS, CONFIG_CHANGES, ConfigChangeNotification.decode),
    Codec("AclNode", ACL_PATHS, ACL_NODES, AclNode.decode),
    Codec(
        "literal ACL change",
        SEQUENCES.map(lambda n: paths.acl_change(PatternType.LITERAL, n)),
        LITERAL_ACL_CHANGES,
        decode_literal_acl_change,
        encode_literal_acl_change,
        is_json=False,
    ),
    Codec(
        "extended ACL change",
        SEQUENCES.map(lambda n: paths.acl_change(PatternType.PREFIXED, n)),
        EXTENDED_ACL_CHANGES,
        decode_extended_acl_change,
        encode_extended_acl_change,
    ),
    Codec("IsrChangeNotification", SEQUENCES.map(paths.isr_change), ISR_CHANGES, IsrChangeNotification.decode),
    Codec(
        "LogDirEventNotification",
        SEQUENCES.map(paths.log_dir_event),
        LOG_DIR_EVENTS,
        LogDirEventNotification.decode,
    ),
    Codec("FeatureZnode", st.just(paths.FEATURE), FEATURES, FeatureZnode.decode),
    Codec("ClusterIdZnode", st.just(paths.CLUSTER_ID), CLUSTER_IDS, ClusterIdZnode.decode),
    Codec("ProducerIdBlock", st.just(paths.LATEST_PRODUCER_ID_BLOCK), producer_id_blocks(), ProducerIdBlock.decode),
    Codec("MigrationZnode", st.just(paths.MIGRATION), MIGRATIONS, MigrationZnode.decode),
]
JSON_CODECS = [c for c in CODECS if c.is_json]


def _by_name(codecs: list[Codec]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("codec", codecs, ids=[c.name for c in codecs])


# --- 1. Round trips -----------------------------------------------------------------------------------------


@_by_name(CODECS)
@ROUND_TRIP
@given(data=st.data())
def test_round_trip(codec: Codec, data: st.DataObject) -> None:
    value = data.draw(codec.values, label="value")
    path = data.draw(codec.paths, label="path")
    encoded = codec.encode(value)
    assert codec.decode(path, encoded) == value
    assert decoder_for(path) == codec.decode
    assert decode_znode(path, encoded) == value


# --- 2. Key order independence ------------------------------------------------------------------------------


def _shuffled(doc: Any, data: st.DataObject) -> Any:
    """``doc`` with every object's keys in a drawn order, at every level."""
    if isinstance(doc, dict):
        return {k: _shuffled(doc[k], data) for k in data.draw(st.permutations(list(doc)))}
    if isinstance(doc, list):
        return [_shuffled(v, data) for v in doc]
    return doc


@_by_name(JSON_CODECS)
@KEY_ORDER
@given(data=st.data())
def test_key_order_does_not_matter(codec: Codec, data: st.DataObject) -> None:
    value = data.draw(codec.values, label="value")
    path = data.draw(codec.paths, label="path")
    shuffled = orjson.dumps(_shuffled(orjson.loads(codec.encode(value)), data))
    assert codec.decode(path, shuffled) == value
    assert decode_znode(path, shuffled) == value


# --- 3. Robustness: a value or ZnodeFormatError(path), nothing else -----------------------------------------

# One realistic path per registry rule (checked below), plus the parents and markers that decode to None.
REALISTIC_PATHS = [
    "/controller",
    "/controller_epoch",
    "/cluster/id",
    "/feature",
    "/migration",
    "/latest_producer_id_block",
    "/brokers/ids/1",
    "/brokers/topics/t",
    "/brokers/topics/t/partitions/0/state",
    "/admin/reassign_partitions",
    "/admin/preferred_replica_election",
    "/config/changes/config_change_0000000001",
    "/config/topics/t",
    "/config/users/alice/clients/app",
    "/isr_change_notification/isr_change_0000000001",
    "/log_dir_event_notification/log_dir_event_0000000001",
    "/kafka-acl/Topic/t",
    "/kafka-acl-extended/prefixed/Topic/t",
    "/kafka-acl-changes/acl_changes_0000000001",
    "/kafka-acl-extended-changes/acl_changes_0000000001",
]
STRUCTURAL_PATHS = ["/brokers/topics/t/partitions", "/brokers/topics/t/partitions/0", "/brokers/seqid", "/admin"]


def test_realistic_paths_cover_every_registry_rule() -> None:
    for pattern, _decoder in _RULES:
        assert any(pattern.match(p) for p in REALISTIC_PATHS), f"no realistic path for {pattern.pattern}"
    for path in REALISTIC_PATHS:
        assert decoder_for(path) is not None, path


@pytest.mark.parametrize("path", STRUCTURAL_PATHS)
def test_structural_nodes_decode_to_none(path: str) -> None:
    assert decode_znode(path, None) is None
    assert decode_znode(path, b"\xff not json") is None


def _decode_or_reject(path: str, data: bytes | None) -> None:
    """Decoding either succeeds or raises ZnodeFormatError for this path; any other exception fails."""
    try:
        decode_znode(path, data)
    except ZnodeFormatError as exc:
        assert exc.path == path
        assert exc.reason
        assert str(exc) == f"{path}: {exc.reason}"


@pytest.mark.parametrize("path", REALISTIC_PATHS)
@FUZZ
@given(data=st.none() | st.binary(max_size=200))
def test_arbitrary_bytes(path: str, data: bytes | None) -> None:
    _decode_or_reject(path, data)


# Keys every decoder reads, so generated objects sometimes look like the real thing.
ZNODE_KEYS = sorted(
    {
        *("version", "partitions", "adding_replicas", "removing_replicas", "topic_id"),
        *("leader", "leader_epoch", "controller_epoch", "isr", "leader_recovery_state"),
        *("host", "port", "endpoints", "jmx_port", "timestamp", "rack"),
        *("listener_security_protocol_map", "features", "min_version", "max_version"),
        *("brokerid", "kraftControllerEpoch", "topic", "partition", "replicas", "log_dirs"),
        *("config", "entity_path", "entity_type", "entity_name"),
        *("acls", "principal", "permissionType", "operation", "resourceType", "name", "patternType"),
        *("broker", "event", "status", "max_version_level", "min_version_level", "id"),
        *("block_start", "block_end", "kraft_controller_id", "kraft_controller_epoch"),
        *("kraft_metadata_offset", "kraft_metadata_epoch"),
    }
)
# Strings that once escaped a decoder (see the regressions at the end) or sit on a parser's edge.
TRICKY_STRINGS = [
    "1" * 4301,
    "-" + "1" * 4301,
    "PLAINTEXT://h:" + "1" * 4301,
    "\u0661",
    "PLAINTEXT://h:\u0669\u0660",
    "PLAINTEXT://h:9092\n",
    "PLAINTEXT://[::1]:9092",
    str(2**63),
    str(-(2**63) - 1),
    "99999999999",
]
EDGE_INTS = [0, 1, -1, -2, -3, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63), 2**64 - 1]
JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),  # what orjson can write
    st.sampled_from(EDGE_INTS),
    # Beyond 64 bits orjson reads a float (or rejects an infinity), so these still exercise the reader.
    st.integers(-(10**400), 10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from([*ZNODE_KEYS, "1", "-1", "01", "PLAINTEXT", "PLAINTEXT://h:9092", "Topic", "TOPIC:t"]),
    st.integers(-(2**70), 2**70).map(str),  # numbers written as JSON strings (timestamps, block bounds)
    st.sampled_from(TRICKY_STRINGS),
)
JSON_KEYS = st.one_of(
    st.sampled_from(ZNODE_KEYS), st.text(max_size=10), PARTITION_IDS.map(str), st.sampled_from(TRICKY_STRINGS)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(JSON_KEYS, children, max_size=5),
    ),
    max_leaves=15,
)


def _dump(doc: Any) -> bytes:
    """orjson bytes, falling back to the stdlib for integers wider than 64 bits (which orjson cannot write)."""
    try:
        return orjson.dumps(doc)
    except TypeError:
        return json.dumps(doc, ensure_ascii=False).encode()


@pytest.mark.parametrize("path", REALISTIC_PATHS)
@FUZZ
@given(doc=JSON_VALUES | st.dictionaries(JSON_KEYS, JSON_VALUES, max_size=8))
def test_arbitrary_json(path: str, doc: Any) -> None:
    _decode_or_reject(path, _dump(doc))


_REMOVE = object()


def _locations(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every object member and array element in ``doc``, as key/index paths from the root."""
    items: Any = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, child in items:
        yield (*prefix, key)
        yield from _locations(child, (*prefix, key))


def _replaced(doc: Any, location: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``doc`` with the member at ``location`` set to ``new``, or removed if ``new`` is _REMOVE."""
    head, *rest = location
    copy: Any = dict(doc) if isinstance(doc, dict) else list(doc)
    if rest:
        copy[head] = _replaced(doc[head], tuple(rest), new)
    elif new is _REMOVE:
        del copy[head]
    else:
        copy[head] = new
    return copy


@_by_name(JSON_CODECS)
@FUZZ
@given(data=st.data())
def test_mutated_json(codec: Codec, data: st.DataObject) -> None:
    value = data.draw(codec.values, label="value")
    path = data.draw(codec.paths, label="path")
    doc = orjson.loads(codec.encode(value))
    location = data.draw(st.sampled_from(list(_locations(doc))), label="location")
    new = data.draw(st.just(_REMOVE) | JSON_VALUES, label="new")
    _decode_or_reject(path, _dump(_replaced(doc, location, new)))


@_by_name(CODECS)
@BYTE_FUZZ
@given(data=st.data())
def test_mutated_bytes(codec: Codec, data: st.DataObject) -> None:
    value = data.draw(codec.values, label="value")
    path = data.draw(codec.paths, label="path")
    encoded = codec.encode(value)
    start = data.draw(st.integers(0, len(encoded)), label="start")
    end = data.draw(st.integers(start, min(len(encoded), start + 4)), label="end")
    _decode_or_reject(path, encoded[:start] + data.draw(st.binary(max_size=4), label="insert") + encoded[end:])


# --- 4. Specific bad data -----------------------------------------------------------------------------------

_ASSIGNMENT = {"version": 3, "partitions": {"0": [1, 2, 3]}, "adding_replicas": {}, "removing_replicas": {}}
_STATE = {"version": 1, "leader": 1, "leader_epoch": 0, "controller_epoch": 1, "isr": [1, 2]}
_BROKER = {
    "version": 5,
    "host": "h",
    "port": 9092,
    "endpoints": ["PLAINTEXT://h:9092"],
    "jmx_port": -1,
    "timestamp": "1",
    "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
    "features": {},
}
_CONTROLLER = {"version": 2, "brokerid": 0, "timestamp": "1", "kraftControllerEpoch": -1}


def _with(base: dict[str, Any], **changes: Any) -> bytes:
    return orjson.dumps({**base, **changes})


T = "/brokers/topics/t"
S = "/brokers/topics/t/partitions/0/state"
B = "/brokers/ids/1"

BAD_DATA = [
    # bad JSON
    pytest.param(T, b'{"version":3,"partitions":{', ["invalid JSON"], id="truncated-json"),
    pytest.param(S, b'{"version":1,}', ["invalid JSON"], id="trailing-comma"),
    pytest.param("/controller", b"\xff\xfe{}", ["invalid JSON"], id="not-utf8"),
    pytest.param("/feature", b"", ["no data"], id="empty"),
    pytest.param("/cluster/id", None, ["no data"], id="null-data"),
    pytest.param(B, b"[1,2]", ["expected a JSON object", "array"], id="array-not-object"),
    pytest.param("/controller_epoch", b"\xff", ["not UTF-8"], id="epoch-not-utf8"),
    pytest.param("/controller_epoch", b"one", ["non-negative decimal integer"], id="epoch-not-a-number"),
    # wrong types: a string or a boolean where an integer is expected, and the reverse
    pytest.param(S, _with(_STATE, leader="1"), ["'leader'", "must be an integer", "string"], id="leader-string"),
    pytest.param(S, _with(_STATE, leader=True), ["'leader'", "must be an integer", "boolean"], id="leader-bool"),
    pytest.param(S, _with(_STATE, leader=1.0), ["'leader'", "must be an integer", "number"], id="leader-float"),
    pytest.param(S, _with(_STATE, isr=["1"]), ["'isr' entry", "must be an integer", "string"], id="isr-string"),
    pytest.param(S, _with(_STATE, isr=[True]), ["'isr' entry", "must be an integer", "boolean"], id="isr-bool"),
    pytest.param(S, _with(_STATE, isr={"0": 1}), ["'isr'", "JSON array", "object"], id="isr-object"),
    pytest.param(T, _with(_ASSIGNMENT, version="3"), ["'version'", "integer", "string"], id="version-string"),
    pytest.param(T, _with(_ASSIGNMENT, version=True), ["'version'", "integer", "boolean"], id="version-bool"),
    pytest.param(
        T, _with(_ASSIGNMENT, partitions={"0": "1,2"}), ["partitions[0]", "JSON array", "string"], id="replicas-str"
    ),
    pytest.param(B, _with(_BROKER, jmx_port=True), ["'jmx_port'", "integer", "boolean"], id="jmx-port-bool"),
    pytest.param(B, _with(_BROKER, timestamp=1), ["'timestamp'", "string", "number"], id="timestamp-number"),
    pytest.param(B, _with(_BROKER, timestamp="1e3"), ["'timestamp'", "decimal integer string"], id="timestamp-1e3"),
    pytest.param("/controller", _with(_CONTROLLER, brokerid="0"), ["'brokerid'", "string"], id="brokerid-string"),
    pytest.param(
        "/log_dir_event_notification/log_dir_event_0000000001",
        b'{"version":1,"broker":false,"event":1}',
        ["'broker'", "integer", "boolean"],
        id="log-dir-broker-bool",
    ),
    pytest.param(
        "/config/topics/t", b'{"version":1,"config":{"retention.ms":86400000}}', ["'retention.ms'"], id="config-int"
    ),
    # unknown versions
    pytest.param(T, _with(_ASSIGNMENT, version=4), ["unsupported version 4"], id="assignment-v4"),
    pytest.param(S, _with(_STATE, version=2), ["unsupported version 2"], id="state-v2"),
    pytest.param("/controller", _with(_CONTROLLER, version=3), ["unsupported version 3"], id="controller-v3"),
    pytest.param(B, _with(_BROKER, version=0), ["unsupported version", "0"], id="broker-v0"),
    pytest.param("/cluster/id", b'{"version":1,"id":"x"}', ["unsupported version 1"], id="cluster-id-numeric-v"),
    pytest.param("/feature", b'{"version":3,"status":1,"features":{}}', ["unsupported version 3"], id="feature-v3"),
    pytest.param("/kafka-acl/Topic/t", b'{"version":2,"acls":[]}', ["unsupported version 2"], id="acl-v2"),
    pytest.param("/migration", b'{"version":1}', ["unsupported version 1"], id="migration-v1"),
    # negative broker ids in replicas / ISR
    pytest.param(T, _with(_ASSIGNMENT, partitions={"0": [1, -1]}), [">= 0", "-1"], id="negative-replica"),
    pytest.param(S, _with(_STATE, isr=[1, -1]), ["'isr' entry", ">= 0", "-1"], id="negative-isr"),
    pytest.param(S, _with(_STATE, leader=-3), ["'leader'", ">= -2", "-3"], id="leader-below-delete"),
    pytest.param(
        "/admin/reassign_partitions",
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[-2]}]}',
        ["replicas of t-0", ">= 0", "-2"],
        id="negative-reassign-replica",
    ),
    pytest.param(T, _with(_ASSIGNMENT, partitions={"0": [2**31]}), ["32-bit"], id="replica-over-int32"),
    # duplicate replicas
    pytest.param(T, _with(_ASSIGNMENT, partitions={"0": [1, 2, 1]}), ["duplicate broker ids"], id="dup-replicas"),
    pytest.param(S, _with(_STATE, isr=[2, 2]), ["'isr'", "duplicate broker ids"], id="dup-isr"),
    pytest.param(
        "/admin/reassign_partitions",
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}',
        ["duplicate broker ids"],
        id="dup-reassign-replicas",
    ),
    # adding/removing replicas inconsistent with the partitions
    pytest.param(
        T,
        _with(_ASSIGNMENT, adding_replicas={"1": [2]}),
        ["adding_replicas", "partition 1", "not in 'partitions'"],
        id="adding-unknown-partition",
    ),
    pytest.param(
        T,
        _with(_ASSIGNMENT, removing_replicas={"7": [1]}),
        ["removing_replicas", "partition 7", "not in 'partitions'"],
        id="removing-unknown-partition",
    ),
    pytest.param(
        T, _with(_ASSIGNMENT, adding_replicas={"0": [9]}), ["not part of its replicas"], id="adding-not-in-replicas"
    ),
    pytest.param(
        T,
        _with(_ASSIGNMENT, adding_replicas={"0": [1]}, removing_replicas={"0": [1]}),
        ["both adding and removing"],
        id="adding-and-removing",
    ),
    # non-numeric partition keys
    *(
        pytest.param(T, _with(_ASSIGNMENT, partitions={key: [1]}), ["not a partition number"], id=f"key-{key!r}")
        for key in ["a", "", "-1", "01", " 1", "1.0", "+1", "\u0661"]  # \u0661 is ARABIC-INDIC DIGIT ONE
    ),
    pytest.param(
        T, _with(_ASSIGNMENT, adding_replicas={"x": [1]}), ["adding_replicas", "not a partition number"], id="key-x"
    ),
    pytest.param(T, _with(_ASSIGNMENT, partitions={str(2**31): [1]}), ["out of range"], id="key-over-int32"),
    # other field-level problems
    pytest.param(T, _with(_ASSIGNMENT, topic_id="not-a-uuid"), ["'topic_id'", "Uuid"], id="bad-topic-id"),
    pytest.param(S, _with(_STATE, leader_recovery_state=2), ["leader_recovery_state"], id="recovery-state-2"),
    pytest.param(
        B, _with(_BROKER, endpoints=["PLAINTEXT://h:70000"]), ["invalid port"], id="endpoint-port-out-of-range"
    ),
    pytest.param(B, _with(_BROKER, endpoints=["h:9092"]), ["LISTENER://host:port"], id="endpoint-no-listener"),
    pytest.param(
        B, _with(_BROKER, endpoints=["SSL://h:9093"]), ["no security protocol", "'SSL'"], id="endpoint-unmapped"
    ),
    pytest.param(
        B,
        _with(_BROKER, endpoints=["PLAINTEXT://a:1", "PLAINTEXT://b:2"]),
        ["repeats a listener"],
        id="endpoint-repeated-listener",
    ),
    pytest.param(
        B,
        _with(_BROKER, features={"f": {"min_version": 3, "max_version": 2}}),
        ["max_version", ">= 3"],
        id="feature-range-inverted",
    ),
    pytest.param(
        "/latest_producer_id_block",
        b'{"version":1,"broker":0,"block_start":"1000","block_end":"999"}',
        ["'block_end'", ">= 1000"],
        id="producer-block-inverted",
    ),
    pytest.param(
        "/kafka-acl/Topic/t",
        b'{"version":1,"acls":[{"principal":"alice","permissionType":"Allow","operation":"Read","host":"*"}]}',
        ["principal", "Type:name"],
        id="acl-principal-no-type",
    ),
    pytest.param(
        "/kafka-acl/Topic/t",
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe","operation":"Read","host":"*"}]}',
        ["PermissionType", "'Maybe'"],
        id="acl-unknown-permission",
    ),
    pytest.param("/kafka-acl-changes/acl_changes_0000000001", b"TOPIC", ["TYPE:name"], id="acl-change-no-colon"),
    pytest.param(
        "/kafka-acl-extended-changes/acl_changes_0000000001",
        b'{"version":1,"resourceType":"TOPIC","name":"t","patternType":"LITERAL"}',
        ["non-literal"],
        id="extended-acl-change-literal",
    ),
    pytest.param(
        "/config/changes/config_change_0000000001",
        b'{"version":2,"entity_path":"/config/topics/t"}',
        ["'entity_path'"],
        id="config-change-full-path",
    ),
    pytest.param("/controller_epoch", b"2147483648", ["32-bit"], id="epoch-over-int32"),
]


@pytest.mark.parametrize(("path", "data", "needles"), BAD_DATA)
def test_bad_data_is_rejected_with_a_reason(path: str, data: bytes | None, needles: list[str]) -> None:
    with pytest.raises(ZnodeFormatError) as info:
        decode_znode(path, data)
    assert info.value.path == path
    for needle in needles:
        assert needle in info.value.reason, f"{needle!r} not in {info.value.reason!r}"


# --- Regressions: zkmodel bugs these properties found ---------------------------------------------------------

# Python refuses int() on strings of more than 4300 digits (sys.get_int_max_str_digits()); the decoders
# bound the length before int(), so that ValueError never escapes them.
_LONG_DIGITS = "1" * 4301


@pytest.mark.parametrize(
    ("path", "data"),
    [
        pytest.param("/controller", _with(_CONTROLLER, timestamp=_LONG_DIGITS), id="controller-timestamp"),
        pytest.param(B, _with(_BROKER, timestamp=_LONG_DIGITS), id="broker-timestamp"),
        pytest.param(B, _with(_BROKER, endpoints=[f"PLAINTEXT://h:{_LONG_DIGITS}"]), id="broker-endpoint-port"),
        pytest.param(T, _with(_ASSIGNMENT, partitions={_LONG_DIGITS: [1]}), id="assignment-partition-key"),
        pytest.param(T, _with(_ASSIGNMENT, adding_replicas={_LONG_DIGITS: [1]}), id="assignment-adding-key"),
        pytest.param(
            "/latest_producer_id_block",
            orjson.dumps({"version": 1, "broker": 0, "block_start": _LONG_DIGITS, "block_end": "1"}),
            id="producer-block-start",
        ),
        pytest.param(
            "/latest_producer_id_block",
            orjson.dumps({"version": 1, "broker": 0, "block_start": "0", "block_end": _LONG_DIGITS}),
            id="producer-block-end",
        ),
    ],
)
def test_overlong_digit_strings_are_format_errors(path: str, data: bytes) -> None:
    with pytest.raises(ZnodeFormatError) as info:
        decode_znode(path, data)
    assert info.value.path == path


@pytest.mark.parametrize(
    "endpoint",
    [
        pytest.param("PLAINTEXT://h:\u0669\u0660", id="arabic-indic-digits"),  # was read as port 90
        pytest.param("PLAINTEXT://h:9092\n", id="trailing-newline"),  # was read as port 9092
    ],
)
def test_endpoint_port_is_ascii_digits_to_the_end(endpoint: str) -> None:
    # Kafka's EndPoint regex ends in ``:(-?[0-9]+)`` and Scala's extractor matches the whole string.
    with pytest.raises(ZnodeFormatError) as info:
        decode_znode(B, _with(_BROKER, endpoints=[endpoint]))
    assert "LISTENER://host:port" in info.value.reason


@pytest.mark.parametrize("offset", [2**63, 2**64 - 1, -(2**63) - 1])
def test_migration_offset_beyond_int64_is_rejected(offset: int) -> None:
    # Kafka reads it with DecodeJson[Long]; orjson reads up to 2**64 - 1 as an int (below -2**63, a float).
    doc = {
        "version": 0,
        "kraft_controller_id": 3000,
        "kraft_controller_epoch": 1,
        "kraft_metadata_offset": offset,
        "kraft_metadata_epoch": 1,
    }
    with pytest.raises(ZnodeFormatError) as info:
        decode_znode("/migration", _dump(doc))
    assert "'kraft_metadata_offset'" in info.value.reason

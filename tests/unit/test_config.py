"""Node configuration: java.util.Properties parsing, Kafka's config rules, our own keys and invariants.

Expected values for the Properties cases were checked against JDK 17's ``Properties.load``; the Kafka rules
follow KafkaConfig / SocketServerConfigs / ConfigDef at 3.9.0-rc3.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.config import ConfigError, NodeConfig, config_from_properties, load_config
from controller.config.keys import DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP, KNOWN_KEYS
from controller.config.listeners import parse_listener_list, parse_security_protocol_map
from controller.config.properties import dump_properties, parse_properties
from controller.config.zookeeper import parse_zookeeper_connect
from zkmodel.brokers import EndPoint
from zkmodel.ibp import IBP_2_4_IV1, IBP_3_4_IV0, IBP_3_9_IV0

BASE = {"broker.id": "1", "zookeeper.connect": "zk1:2181"}


def cfg(**extra: str) -> NodeConfig:
    """A config from BASE plus keys given with '_' for '.' (``zookeeper_session_timeout_ms=...``)."""
    return config_from_properties({**BASE, **{k.replace("_", "."): v for k, v in extra.items()}})


def build(overrides: dict[str, str], drop: tuple[str, ...] = ()) -> NodeConfig:
    raw = {**BASE, **overrides}
    for key in drop:
        raw.pop(key, None)
    return config_from_properties(raw)


# --- java.util.Properties.load ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("a=b", {"a": "b"}),
        ("a:b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("a\tb", {"a": "b"}),
        ("a\fb", {"a": "b"}),
        ("a \t = \t b", {"a": "b"}),
        ("a = : b", {"a": ": b"}),  # only one separator char is swallowed
        ("a==b", {"a": "=b"}),
        ("a : = b", {"a": "= b"}),
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("=b", {"": "b"}),
        ("   a=b", {"a": "b"}),  # leading whitespace stripped
        ("a=b  \t", {"a": "b  \t"}),  # trailing whitespace kept
        ("a=b#c", {"a": "b#c"}),  # '#' only starts a comment at the start of a line
        ("a=b!c", {"a": "b!c"}),
        ("# comment\na=b", {"a": "b"}),
        ("! comment\na=b", {"a": "b"}),
        ("   # indented comment\na=b", {"a": "b"}),
        ("# comment ending in backslash \\\na=b", {"a": "b"}),  # comments never continue
        ("\n\n  \t\n\f\na=b\n\n", {"a": "b"}),
        ("a=1\na=2", {"a": "2"}),  # later keys override earlier ones
        ("a=b\r\nc=d\re=f\n", {"a": "b", "c": "d", "e": "f"}),
        ("\x0ba=b", {"\x0ba": "b"}),  # vertical tab is not Properties whitespace
        ("a=b\u2028c", {"a": "b\u2028c"}),  # only \r and \n end lines
    ],
)
def test_properties_basics(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b\\\n   c", {"a": "bc"}),  # continuation drops the next line's leading whitespace
        ("a=b\\\r\n  c\\\r  d", {"a": "bcd"}),
        ("a=b\\\\\nc=d", {"a": "b\\", "c": "d"}),  # an even number of backslashes does not continue
        ("a=b\\\\\\\nc", {"a": "b\\c"}),
        ("a=b\\\n#c", {"a": "b#c"}),  # a continued line never starts a comment
        ("a=b\\\n\nc=d", {"a": "b", "c": "d"}),  # an empty continued line ends the logical line
        ("a=b\\", {"a": "b"}),  # dangling backslash at end of input is dropped
        ("key\\\n  part=value", {"keypart": "value"}),
        ("\\\n#c=d\n", {}),  # JDK 9+: an empty continuation lets the next line be a comment
        ("\\\n", {"": ""}),  # JDK quirk: a file ending in backslash-newline yields an empty key
        ("\\\r\n", {}),
    ],
)
def test_properties_continuations(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=\\t\\n\\r\\f", {"a": "\t\n\r\f"}),
        ("a=\\u00e9\\u00C9", {"a": "éÉ"}),
        ("\\u0041=\\u0042", {"A": "B"}),
        ("a=\\uD83D\\uDE00", {"a": "\U0001f600"}),  # UTF-16 surrogate pair becomes one character
        ("a=\\uD83D", {"a": "\ud83d"}),  # a lone surrogate stays as it is, like in Java
        ("a\\=b=c", {"a=b": "c"}),
        ("a\\:b:c", {"a:b": "c"}),
        ("a\\ b c", {"a b": "c"}),
        ("\\#a=b", {"#a": "b"}),
        ("\\!a=b", {"!a": "b"}),
        ("a=\\q\\z", {"a": "qz"}),  # any other escaped character is itself
        ("a=\\\\", {"a": "\\"}),
        ("a=\\ \\ b", {"a": "  b"}),
        ("é=ü😀", {"é": "ü😀"}),  # already-decoded text passes through
    ],
)
def test_properties_escapes(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a=\\u12", 1),
        ("a=\\uZZZZ", 1),
        ("x=1\n\n# c\nk\\u00g0=v", 4),
        ("x=1\r\na=b\\\n  c\\\r  \\u12x", 4),  # the line of the escape, not of the logical line's start
    ],
)
def test_properties_bad_unicode_escape_names_source_and_line(text: str, line: int) -> None:
    with pytest.raises(ConfigError, match=r"Malformed \\uxxxx encoding") as err:
        parse_properties(text, source="node.properties")
    assert str(err.value).startswith(f"node.properties:{line}: ")
    assert err.value.key is None


# --- dump_properties ----------------------------------------------------------------------------------------


def test_dump_escapes_like_java_store() -> None:
    text = dump_properties({" k=:#!": " v=:#!\t\n", "é": "😀", "a": "b c "})
    assert text.isascii()
    assert text == ("\\ k\\=\\:\\#\\!=\\ v\\=\\:\\#\\!\\t\\n\n\\u00E9=\\uD83D\\uDE00\na=b c \n")


def test_dump_comment() -> None:
    text = dump_properties({"a": "b"}, comment="node 1\nsee é")
    assert text == "# node 1\n# see \\u00E9\na=b\n"
    assert parse_properties(text) == {"a": "b"}


@given(st.dictionaries(st.text(), st.text(), max_size=8), st.none() | st.text())
def test_dump_parse_round_trip(raw: dict[str, str], comment: str | None) -> None:
    text = dump_properties(raw, comment=comment)
    assert text.isascii()
    assert parse_properties(text) == raw


def test_dump_round_trips_lone_surrogates() -> None:
    raw = {"\udc00k": "v\ud800"}
    assert parse_properties(dump_properties(raw)) == raw


# --- defaults -----------------------------------------------------------------------------------------------


def test_defaults() -> None:
    c = config_from_properties(BASE)
    plaintext = EndPoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")
    assert c.broker_id == 1
    assert c.zookeeper_connect == "zk1:2181"
    assert c.zookeeper_servers == (("zk1", 2181),)
    assert c.zookeeper_hosts == "zk1:2181"
    assert c.zookeeper_chroot is None
    assert c.process_roles == frozenset({"broker", "controller"})
    assert c.is_broker and c.is_controller
    assert c.listeners == (plaintext,)
    assert c.advertised_listeners == (plaintext,)
    assert c.advertised_endpoints == (plaintext,)
    assert dict(c.listener_security_protocol_map) == {
        "PLAINTEXT": "PLAINTEXT",
        "SSL": "SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT",
        "SASL_SSL": "SASL_SSL",
    }
    assert c.inter_broker_listener_name == "PLAINTEXT"
    assert c.inter_broker_endpoint == plaintext
    assert c.inter_broker_security_protocol == "PLAINTEXT"
    assert c.inter_broker_protocol_version is IBP_3_9_IV0
    assert c.zookeeper_session_timeout_ms == 18000
    assert c.zookeeper_connection_timeout_ms == 18000
    assert c.zookeeper_max_in_flight_requests == 10
    assert c.broker_rack is None
    assert c.delete_topic_enable is True
    assert c.auto_create_topics_enable is False  # ours; Kafka's default is true
    assert c.num_partitions == 1
    assert c.default_replication_factor == 1
    assert c.controlled_shutdown_enable is True
    assert c.controlled_shutdown_max_retries == 3
    assert c.controlled_shutdown_retry_backoff_ms == 5000
    assert c.request_timeout_ms == 30000
    assert c.super_users == ()
    assert c.zookeeper_metadata_migration_enable is False
    assert c.metrics_port == 0
    assert c.metrics_enabled
    assert c.metrics_host == "127.0.0.1"
    assert c.forwarding_min_ibp is IBP_3_4_IV0
    assert c.forwarding_max_in_flight == 16
    assert c.zk_retry_deadline_ms == 6000
    assert c.replica_catchup_bytes_per_partition == 10485760
    assert c.replica_catchup_rate_bytes_per_sec == 104857600
    assert dict(c.raw) == BASE
    assert c.warnings == ()


def test_default_protocol_map_constant_parses_to_identity() -> None:
    mapping = parse_security_protocol_map(DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP)
    assert all(k == v for k, v in mapping.items()) and len(mapping) == 4


def test_connection_timeout_and_retry_deadline_follow_session_timeout() -> None:
    c = cfg(zookeeper_session_timeout_ms="9000")
    assert c.zookeeper_connection_timeout_ms == 9000
    assert c.zk_retry_deadline_ms == 3000


def test_config_is_hashable_and_comparable() -> None:
    assert cfg() == cfg()
    assert hash(cfg()) == hash(cfg())
    assert cfg() != cfg(broker_rack="r1")


# --- loading files and overrides ----------------------------------------------------------------------------


def test_overrides_beat_file(tmp_path: Path) -> None:
    path = tmp_path / "node.properties"
    path.write_text("broker.id=1\nzookeeper.connect=zk1:2181\nbroker.rack=file\nnum.partitions=3\n")
    c = load_config(str(path), {"broker.rack": "override", "broker.id": "7"})
    assert c.broker_rack == "override"
    assert c.broker_id == 7
    assert c.num_partitions == 3
    assert c.raw["broker.rack"] == "override"


def test_overrides_only() -> None:
    c = load_config(None, BASE)
    assert c.broker_id == 1
    with pytest.raises(ConfigError) as err:
        load_config(None)
    assert err.value.key == "broker.id"


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read config file"):
        load_config(str(tmp_path / "nope.properties"))


def test_bad_escape_in_file_names_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "node.properties"
    path.write_text("broker.id=1\nbroker.rack=\\u12\n")
    with pytest.raises(ConfigError, match=rf"^{path}:2: Malformed"):
        load_config(str(path))


def test_file_is_read_as_iso_8859_1_like_kafka(tmp_path: Path) -> None:
    path = tmp_path / "node.properties"
    path.write_bytes(b"broker.id=1\nzookeeper.connect=zk1\nbroker.rack=z\xc3\xbcrich\nsuper.users=User:\\u00e9\n")
    c = load_config(str(path))
    assert c.broker_rack == "z\u00c3\u00bcrich"  # what Kafka's Utils.loadProps reads too
    assert c.super_users == ("User:é",)
    assert any("non-ASCII" in w for w in c.warnings)


def test_dumped_raw_loads_to_the_same_config(tmp_path: Path) -> None:
    c = cfg(broker_rack="räck #1", listeners="PLAINTEXT://[::1]:9092", super_users="User:a b;User:c=d")
    path = tmp_path / "node.properties"
    path.write_text(dump_properties(c.raw, comment="generated"), encoding="ascii")
    assert load_config(str(path)) == c


# --- value parsing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["true", "TRUE", " True ", "tRuE\t"])
def test_booleans_true(text: str) -> None:
    assert cfg(delete_topic_enable=text).delete_topic_enable is True


@pytest.mark.parametrize("text", ["false", "FALSE", " False "])
def test_booleans_false(text: str) -> None:
    assert cfg(delete_topic_enable=text).delete_topic_enable is False


@pytest.mark.parametrize("text", [" 5 ", "+5", "05", "\t5\n"])
def test_ints_are_trimmed_like_configdef(text: str) -> None:
    assert cfg(num_partitions=text).num_partitions == 5


def test_long_keys_accept_values_beyond_int() -> None:
    c = cfg(bridgekeeper_replica_catchup_rate_bytes_per_sec=str(2**40))
    assert c.replica_catchup_rate_bytes_per_sec == 2**40


def test_broker_rack_and_metrics_host_are_trimmed() -> None:
    c = cfg(broker_rack="  r1 ", bridgekeeper_metrics_host=" 0.0.0.0 ")
    assert c.broker_rack == "r1"
    assert c.metrics_host == "0.0.0.0"
    assert cfg(broker_rack="  ").broker_rack is None


def test_node_id_is_a_synonym_of_broker_id() -> None:
    assert build({"node.id": "4"}, drop=("broker.id",)).broker_id == 4
    assert build({"node.id": "1"}).broker_id == 1


@pytest.mark.parametrize(
    ("text", "roles"),
    [
        ("broker", {"broker"}),
        ("controller", {"controller"}),
        (" controller , broker ", {"broker", "controller"}),
    ],
)
def test_process_roles(text: str, roles: set[str]) -> None:
    c = cfg(process_roles=text)
    assert c.process_roles == roles
    assert c.is_broker == ("broker" in roles)
    assert c.is_controller == ("controller" in roles)


def test_super_users() -> None:
    c = cfg(super_users=" User:alice ; ;User:bob;User:alice;Group:ops;User:")
    assert c.super_users == ("User:alice", "User:bob", "Group:ops", "User:")


def test_metrics_port_range() -> None:
    assert cfg(bridgekeeper_metrics_port="-1").metrics_enabled is False
    assert cfg(bridgekeeper_metrics_port="65535").metrics_port == 65535


@pytest.mark.parametrize(("text", "version"), [("2.4", IBP_2_4_IV1), (" 3.4-IV0 ", IBP_3_4_IV0), ("3.9", IBP_3_9_IV0)])
def test_inter_broker_protocol_version(text: str, version: object) -> None:
    assert cfg(inter_broker_protocol_version=text).inter_broker_protocol_version is version


def test_migration_needs_ibp_3_4() -> None:
    c = cfg(zookeeper_metadata_migration_enable="true", inter_broker_protocol_version="3.4")
    assert c.zookeeper_metadata_migration_enable
    with pytest.raises(ConfigError) as err:
        cfg(zookeeper_metadata_migration_enable="true", inter_broker_protocol_version="3.3")
    assert err.value.key == "zookeeper.metadata.migration.enable"
    assert "inter.broker.protocol.version" in str(err.value) and "3.3" in str(err.value)


# --- zookeeper.connect --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "servers", "chroot"),
    [
        ("zk1:2181", (("zk1", 2181),), None),
        ("zk1:2181,zk2:2182,zk3:2183/kafka", (("zk1", 2181), ("zk2", 2182), ("zk3", 2183)), "/kafka"),
        (" zk1:1 , zk2:2/a/b ", (("zk1", 1), ("zk2", 2)), "/a/b"),
        ("zk1,zk2:2182", (("zk1", 2181), ("zk2", 2182)), None),  # ZooKeeper's default port
        ("zk1:2181/", (("zk1", 2181),), None),  # "/" means no chroot
        ("[::1]:2181,127.0.0.1:2182/x", (("::1", 2181), ("127.0.0.1", 2182)), "/x"),
        ("zk1:2181,,zk2:2181", (("zk1", 2181), ("zk2", 2181)), None),
        ("zk1:2181/a.b/..c/...", (("zk1", 2181),), "/a.b/..c/..."),
    ],
)
def test_zookeeper_connect(text: str, servers: tuple[tuple[str, int], ...], chroot: str | None) -> None:
    assert parse_zookeeper_connect(text) == (servers, chroot)


def test_zookeeper_hosts_and_chroot_exposed_separately() -> None:
    c = cfg(zookeeper_connect="[::1]:2181,zk2/kafka/c1")
    assert c.zookeeper_hosts == "[::1]:2181,zk2:2181"
    assert c.zookeeper_chroot == "/kafka/c1"


# --- listeners ----------------------------------------------------------------------------------------------

PROTOCOLS = {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "INTERNAL": "SASL_PLAINTEXT", "EXTERNAL": "PLAINTEXT"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PLAINTEXT://:9092", [("PLAINTEXT", "", 9092)]),
        ("PLAINTEXT://[::1]:9092", [("PLAINTEXT", "::1", 9092)]),
        ("PLAINTEXT://[fe80::1%eth0]:9092", [("PLAINTEXT", "fe80::1%eth0", 9092)]),
        ("plaintext://localhost:9092", [("PLAINTEXT", "localhost", 9092)]),  # names are normalised
        ("PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092", [("PLAINTEXT", "127.0.0.1", 9092), ("SSL", "::1", 9092)]),
        (" INTERNAL://a:1 , EXTERNAL://b:2, ", [("INTERNAL", "a", 1), ("EXTERNAL", "b", 2)]),
        ("PLAINTEXT://:0,SSL://:0", [("PLAINTEXT", "", 0), ("SSL", "", 0)]),  # port 0 may repeat
        ("PLAINTEXT://::1:9092", [("PLAINTEXT", "::1", 9092)]),  # Kafka's regex takes the last colon
    ],
)
def test_listener_parsing(text: str, expected: list[tuple[str, str, int]]) -> None:
    endpoints = parse_listener_list(text, PROTOCOLS)
    assert [(e.listener, e.host, e.port) for e in endpoints] == expected
    assert [e.security_protocol for e in endpoints] == [PROTOCOLS[e.listener] for e in endpoints]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("PLAINTEXT://:9092,plaintext://:9093", "different name"),
        ("PLAINTEXT://a:9092,SSL://b:9092", "different port"),
        ("PLAINTEXT://:9092,SSL://:9092", "different port"),
        ("PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.2:9092", "one needs to be IPv4 and the other IPv6"),
        ("PLAINTEXT://[::1]:9092,SSL://[::2]:9092", "one needs to be IPv4 and the other IPv6"),
        ("PLAINTEXT://127.0.0.1:9092,SSL://host:9092", "unless exactly one"),
        ("PLAINTEXT://127.0.0.1:1,SSL://[::1]:1,INTERNAL://[::2]:1", "unless exactly one"),
        ("PLAINTEXT://127.0.0.1:1,SSL://[::1]:1,INTERNAL://h:1", "one needs to be IPv4"),
        ("PLAINTEXT://host", "Unable to parse"),
        ("PLAINTEXT:/host:1", "Unable to parse"),
        ("PLAINTEXT://ho st:1", "Unable to parse"),
        ("://host:1", "null or empty"),
        ("MY LISTENER://host:1", "may only contain"),
        ("UNKNOWN://host:1", "No security protocol defined for listener UNKNOWN"),
        ("PLAINTEXT://host:65536", "not in 0-65535"),
        ("PLAINTEXT://host:-1", "not in 0-65535"),
        ("PLAINTEXT://[::1:9092", "Unbalanced brackets"),
        ("PLAINTEXT://::1]:9092", "Unbalanced brackets"),
    ],
)
def test_bad_listeners(text: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason) as err:
        parse_listener_list(text, PROTOCOLS)
    assert err.value.key == "listeners"
    assert str(err.value).startswith(f"Invalid value {text.strip()} for configuration listeners: ")


def test_advertised_listeners_may_repeat_ports() -> None:
    c = cfg(
        listeners="INTERNAL://:9092,EXTERNAL://:9093",
        advertised_listeners="INTERNAL://lb:9000,EXTERNAL://lb:9000",
        listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
        inter_broker_listener_name="internal",
        sasl_enabled_mechanisms="SCRAM-SHA-512",
    )
    assert [(e.listener, e.host, e.port, e.security_protocol) for e in c.advertised_endpoints] == [
        ("INTERNAL", "lb", 9000, "PLAINTEXT"),
        ("EXTERNAL", "lb", 9000, "SASL_PLAINTEXT"),
    ]
    assert c.inter_broker_endpoint == EndPoint("INTERNAL", "lb", 9000, "PLAINTEXT")
    assert c.listener("internal") == EndPoint("INTERNAL", "", 9092, "PLAINTEXT")
    assert c.listener("nope") is None
    assert c.advertised_listener("External") == EndPoint("EXTERNAL", "lb", 9000, "SASL_PLAINTEXT")


def test_bind_to_wildcard_when_advertising_a_routable_host() -> None:
    c = cfg(listeners="PLAINTEXT://0.0.0.0:9092", advertised_listeners="PLAINTEXT://node1:9092")
    assert c.listener("PLAINTEXT") == EndPoint("PLAINTEXT", "0.0.0.0", 9092, "PLAINTEXT")
    assert c.inter_broker_endpoint.host == "node1"


def test_inter_broker_listener_from_security_protocol() -> None:
    c = build(
        {
            "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": (
                'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="pw";'
            ),
        }
    )
    assert c.inter_broker_listener_name == "SASL_PLAINTEXT"
    assert c.inter_broker_security_protocol == "SASL_PLAINTEXT"
    assert c.inter_broker_sasl is not None
    assert (c.inter_broker_sasl.mechanism, c.inter_broker_sasl.username) == ("SCRAM-SHA-256", "broker")
    assert c.sasl_listeners["SASL_PLAINTEXT"].mechanisms == ("SCRAM-SHA-256",)


def test_a_tls_listener_without_a_keystore_is_refused_naming_the_key() -> None:
    """SSL listeners are served; one without its certificate fails at load (tests/unit/test_config_tls.py
    has the rest)."""
    with pytest.raises(ConfigError, match=r"ssl.keystore.location: an SSL listener needs a keystore"):
        cfg(listeners="PLAINTEXT://:9092,SSL://:9093")


def test_sasl_settings_are_validated_with_the_key_named() -> None:
    sasl = {"listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093"}
    with pytest.raises(ConfigError, match=r"sasl.enabled.mechanisms.*GSSAPI is not supported"):
        build(sasl)
    with pytest.raises(ConfigError, match=r"listener.name.sasl_plaintext.plain.sasl.jaas.config"):
        build({**sasl, "sasl.enabled.mechanisms": "PLAIN"})
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a-pw" user_bob="b-pw";'
    c = build(
        {
            **sasl,
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        }
    )
    assert dict(c.sasl_listeners["SASL_PLAINTEXT"].plain_users) == {"alice": "a-pw", "bob": "b-pw"}
    assert c.inter_broker_sasl is None  # inter-broker traffic stays on PLAINTEXT
    with pytest.raises(ConfigError, match=r"sasl.mechanism.inter.broker.protocol must be included"):
        build({**sasl, "security.inter.broker.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "SCRAM-SHA-256"})
    with pytest.raises(ConfigError, match=r"must give this node's username and password"):
        build(
            {
                **sasl,
                "security.inter.broker.protocol": "SASL_PLAINTEXT",
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            }
        )
    with pytest.raises(ConfigError, match=r"jaas.config: JAAS config entry not terminated by semi-colon"):
        build(
            {
                **sasl,
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": "no.Such required",
            }
        )


def test_authorizer_and_zookeeper_identities() -> None:
    c = cfg(authorizer_class_name="kafka.security.authorizer.AclAuthorizer")
    assert c.acl_authorizer and not c.allow_everyone_if_no_acl_found
    with pytest.raises(ConfigError, match=r"authorizer.class.name.*ACL authorizer only"):
        cfg(authorizer_class_name="org.example.Custom")
    c = build({"bridgekeeper.zookeeper.digest": "broker:b-pw"})
    assert c.zookeeper_digest is not None and c.zookeeper_digest.auth == ("digest", "broker:b-pw")
    assert c.zookeeper_controller_digest == c.zookeeper_digest
    c = build({"bridgekeeper.zookeeper.digest": "broker:b-pw", "bridgekeeper.zookeeper.controller.digest": "ctl:c"})
    assert c.zookeeper_controller_digest is not None and c.zookeeper_controller_digest.user == "ctl"
    with pytest.raises(ConfigError, match=r"bridgekeeper.zookeeper.digest.*digest:USER:PASSWORD or USER:PASSWORD"):
        build({"bridgekeeper.zookeeper.digest": "no-colon"})
    # the tools' identity form is the same identity
    c = build({"bridgekeeper.zookeeper.digest": "digest:broker:b-pw"})
    assert c.zookeeper_digest is not None and c.zookeeper_digest.auth == ("digest", "broker:b-pw")


def test_security_protocol_map_parsing() -> None:
    assert parse_security_protocol_map(" internal : sasl_plaintext , EXTERNAL:plaintext ") == {
        "INTERNAL": "SASL_PLAINTEXT",
        "EXTERNAL": "PLAINTEXT",
    }
    assert parse_security_protocol_map("") == {}
    assert parse_security_protocol_map("A:SSL,") == {"A": "SSL"}


# --- timing invariants --------------------------------------------------------------------------------------


def test_retry_deadline_must_be_below_session_timeout() -> None:
    assert cfg(bridgekeeper_zk_retry_deadline_ms="17999").zk_retry_deadline_ms == 17999
    with pytest.raises(ConfigError) as err:
        cfg(bridgekeeper_zk_retry_deadline_ms="18000")
    message = str(err.value)
    assert err.value.key == "bridgekeeper.zk.retry.deadline.ms"
    assert "bridgekeeper.zk.retry.deadline.ms (18000)" in message
    assert "zookeeper.session.timeout.ms (18000)" in message


def test_lowering_session_timeout_below_an_explicit_deadline_fails() -> None:
    with pytest.raises(ConfigError) as err:
        cfg(zookeeper_session_timeout_ms="4000", bridgekeeper_zk_retry_deadline_ms="5000")
    assert "zookeeper.session.timeout.ms (4000)" in str(err.value)
    assert "bridgekeeper.zk.retry.deadline.ms (5000)" in str(err.value)


def test_smallest_session_timeout() -> None:
    c = cfg(zookeeper_session_timeout_ms="1000")
    assert (c.zookeeper_session_timeout_ms, c.zookeeper_connection_timeout_ms, c.zk_retry_deadline_ms) == (
        1000,
        1000,
        333,
    )


def test_forwarding_window_is_read_within_its_bounds() -> None:
    """1 (Kafka's one request in flight) to 64; Java's integer parsing, surrounding blanks trimmed."""
    assert build({"bridgekeeper.forwarding.max.in.flight": "1"}).forwarding_max_in_flight == 1
    assert build({"bridgekeeper.forwarding.max.in.flight": " 64 "}).forwarding_max_in_flight == 64
    assert build({"bridgekeeper.forwarding.max.in.flight": "4"}).warnings == ()


# --- unknown keys -------------------------------------------------------------------------------------------


def test_unknown_keys_only_warn() -> None:
    c = build({"log.dirs": "/tmp/x", "num.network.threads": "3"})
    assert c.warnings == (
        "The configuration 'log.dirs' was supplied but isn't a known config.",
        "The configuration 'num.network.threads' was supplied but isn't a known config.",
    )
    assert c.raw["log.dirs"] == "/tmp/x"


def test_every_key_we_read_is_known() -> None:
    everything = {
        **BASE,
        "process.roles": "broker",
        "listeners": "PLAINTEXT://:9092",
        "broker.rack": "r",
        "super.users": "User:a",
    }
    assert set(everything) <= KNOWN_KEYS
    assert build(everything).warnings == ()


# --- every validation error names its key -------------------------------------------------------------------


BAD_INPUTS: list[tuple[dict[str, str], tuple[str, ...], str, str]] = [
    # (overrides, keys dropped from BASE, expected key, expected message fragment)
    ({}, ("broker.id",), "broker.id", 'Missing required configuration "broker.id" which has no default value.'),
    ({"broker.id": "-1"}, (), "broker.id", "Value must be at least 0"),
    ({"broker.id": "one"}, (), "broker.id", "Invalid value one for configuration broker.id: Not a number of type INT"),
    ({"broker.id": "2147483648"}, (), "broker.id", "Not a number of type INT"),
    ({"broker.id": "1_000"}, (), "broker.id", "Not a number of type INT"),
    ({"broker.id": "1.0"}, (), "broker.id", "Not a number of type INT"),
    ({"node.id": "2"}, (), "node.id", "You must set `node.id` to the same value as `broker.id`"),
    ({}, ("zookeeper.connect",), "zookeeper.connect", 'Missing required configuration "zookeeper.connect"'),
    ({"zookeeper.connect": ""}, (), "zookeeper.connect", "no ZooKeeper server given"),
    ({"zookeeper.connect": "/chroot"}, (), "zookeeper.connect", "no ZooKeeper server given"),
    ({"zookeeper.connect": "zk1:0"}, (), "zookeeper.connect", "port must be a number in 1-65535"),
    ({"zookeeper.connect": "zk1:65536"}, (), "zookeeper.connect", "port must be a number in 1-65535"),
    ({"zookeeper.connect": "zk1:http"}, (), "zookeeper.connect", "port must be a number in 1-65535"),
    ({"zookeeper.connect": "zk1:"}, (), "zookeeper.connect", "port must be a number in 1-65535"),
    ({"zookeeper.connect": ":2181"}, (), "zookeeper.connect", "is not a valid host name"),
    ({"zookeeper.connect": "zk 1:2181"}, (), "zookeeper.connect", "is not a valid host name"),
    ({"zookeeper.connect": "::1:2181"}, (), "zookeeper.connect", "must be written in brackets"),
    ({"zookeeper.connect": "[::1:2181"}, (), "zookeeper.connect", "has no matching ']'"),
    ({"zookeeper.connect": "[zk1]:2181"}, (), "zookeeper.connect", "is not an IPv6 address"),
    ({"zookeeper.connect": "[::1]2181"}, (), "zookeeper.connect", "expected ':port' after ']'"),
    ({"zookeeper.connect": "zk1:2181/kafka/"}, (), "zookeeper.connect", "Path must not end with / character"),
    ({"zookeeper.connect": "zk1:2181/a//b"}, (), "zookeeper.connect", "empty node name specified"),
    ({"zookeeper.connect": "zk1:2181/a/./b"}, (), "zookeeper.connect", "relative paths not allowed"),
    ({"zookeeper.connect": "zk1:2181/a/.."}, (), "zookeeper.connect", "relative paths not allowed"),
    ({"zookeeper.connect": "zk1:2181/a\x01b"}, (), "zookeeper.connect", "invalid character"),
    ({"process.roles": ""}, (), "process.roles", "at least one role is required"),
    ({"process.roles": "Broker"}, (), "process.roles", "String must be one of: broker, controller"),
    ({"process.roles": "broker,"}, (), "process.roles", "String must be one of: broker, controller"),
    ({"process.roles": "broker,broker"}, (), "process.roles", "Duplicate role names"),
    ({"listeners": ""}, (), "listeners", "at least one listener is required"),
    ({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"}, (), "listeners", "Each listener must have a different name"),
    ({"listeners": "PLAINTEXT://:1,SSL://:1"}, (), "listeners", "Each listener must have a different port"),
    ({"listeners": "FOO://:1"}, (), "listeners", "No security protocol defined for listener FOO"),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, (), "advertised.listeners", "0.0.0.0"),
    ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, (), "advertised.listeners", "nonroutable meta-address 0.0.0.0"),
    ({"advertised.listeners": "SSL://h:1"}, (), "advertised.listeners", "subset of the ones defined in listeners"),
    ({"advertised.listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"}, (), "advertised.listeners", "different name"),
    ({"advertised.listeners": " , "}, (), "advertised.listeners", "at least one listener is required"),
    ({"listener.security.protocol.map": "PLAINTEXT"}, (), "listener.security.protocol.map", "is not of the form"),
    ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, (), "listener.security.protocol.map", "`TLS`"),
    ({"listener.security.protocol.map": "A:SSL,a:SSL"}, (), "listener.security.protocol.map", "more than once"),
    ({"listener.security.protocol.map": ":SSL"}, (), "listener.security.protocol.map", "null or empty"),
    ({"listener.security.protocol.map": "SSL:SSL"}, (), "listeners", "No security protocol defined for listener"),
    ({"inter.broker.listener.name": "SSL"}, (), "inter.broker.listener.name", "must be a listener name defined in"),
    ({"inter.broker.listener.name": "NOPE"}, (), "inter.broker.listener.name", "not found in listener.security"),
    (
        {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
        (),
        "inter.broker.listener.name",
        "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
    ),
    ({"security.inter.broker.protocol": "SSL"}, (), "security.inter.broker.protocol", "must be a listener name"),
    ({"security.inter.broker.protocol": "ssl"}, (), "security.inter.broker.protocol", "String must be one of"),
    (
        {"listeners": "EXTERNAL://:9092", "listener.security.protocol.map": "EXTERNAL:PLAINTEXT"},
        (),
        "inter.broker.listener.name",  # the default inter-broker listener (PLAINTEXT) does not exist
        "must be a listener name defined in advertised.listeners",
    ),
    ({"inter.broker.protocol.version": "9.9"}, (), "inter.broker.protocol.version", "Version 9.9 is not a valid"),
    ({"inter.broker.protocol.version": ""}, (), "inter.broker.protocol.version", "is not a valid version"),
    ({"inter.broker.protocol.version": "4.0-IV0"}, (), "inter.broker.protocol.version", "not a production-ready"),
    ({"zookeeper.session.timeout.ms": "999"}, (), "zookeeper.session.timeout.ms", "Value must be at least 1000"),
    ({"zookeeper.session.timeout.ms": "x"}, (), "zookeeper.session.timeout.ms", "Not a number of type INT"),
    ({"zookeeper.connection.timeout.ms": "0"}, (), "zookeeper.connection.timeout.ms", "Value must be at least 1"),
    ({"zookeeper.max.in.flight.requests": "0"}, (), "zookeeper.max.in.flight.requests", "Value must be at least 1"),
    ({"request.timeout.ms": "0"}, (), "request.timeout.ms", "Value must be at least 1"),
    ({"request.timeout.ms": "-5"}, (), "request.timeout.ms", "Value must be at least 1"),
    ({"bridgekeeper.zk.retry.deadline.ms": "0"}, (), "bridgekeeper.zk.retry.deadline.ms", "at least 1"),
    ({"bridgekeeper.zk.retry.deadline.ms": "18000"}, (), "bridgekeeper.zk.retry.deadline.ms", "must be less than"),
    ({"delete.topic.enable": "yes"}, (), "delete.topic.enable", "Expected value to be either true or false"),
    ({"auto.create.topics.enable": "1"}, (), "auto.create.topics.enable", "either true or false"),
    ({"controlled.shutdown.enable": ""}, (), "controlled.shutdown.enable", "either true or false"),
    ({"zookeeper.metadata.migration.enable": "on"}, (), "zookeeper.metadata.migration.enable", "true or false"),
    ({"num.partitions": "0"}, (), "num.partitions", "Invalid value 0 for configuration num.partitions: Value must"),
    ({"default.replication.factor": "0"}, (), "default.replication.factor", "Value must be at least 1"),
    ({"controlled.shutdown.max.retries": "-1"}, (), "controlled.shutdown.max.retries", "at least 0"),
    ({"controlled.shutdown.retry.backoff.ms": "-1"}, (), "controlled.shutdown.retry.backoff.ms", "at least 0"),
    (
        {"controlled.shutdown.retry.backoff.ms": "9223372036854775808"},
        (),
        "controlled.shutdown.retry.backoff.ms",
        "LONG",
    ),
    ({"super.users": "alice"}, (), "super.users", "principalType:principalName but got alice"),
    ({"super.users": "User:a;:b"}, (), "super.users", "principalType:principalName but got :b"),
    ({"bridgekeeper.metrics.port": "-2"}, (), "bridgekeeper.metrics.port", "Value must be at least -1"),
    ({"bridgekeeper.metrics.port": "65536"}, (), "bridgekeeper.metrics.port", "Value must be no more than 65535"),
    ({"bridgekeeper.metrics.host": " "}, (), "bridgekeeper.metrics.host", "must name an address"),
    ({"bridgekeeper.forwarding.min.ibp": "x"}, (), "bridgekeeper.forwarding.min.ibp", "Version x is not a valid"),
    ({"bridgekeeper.forwarding.max.in.flight": "0"}, (), "bridgekeeper.forwarding.max.in.flight", "at least 1"),
    ({"bridgekeeper.forwarding.max.in.flight": "65"}, (), "bridgekeeper.forwarding.max.in.flight", "no more than 64"),
    ({"bridgekeeper.forwarding.max.in.flight": "many"}, (), "bridgekeeper.forwarding.max.in.flight", "type INT"),
    ({"bridgekeeper.replica.catchup.bytes.per.partition": "-1"}, (), "bridgekeeper.replica.catchup", "at least 0"),
    ({"bridgekeeper.replica.catchup.rate.bytes.per.sec": "0"}, (), "bridgekeeper.replica.catchup", "at least 1"),
]


@pytest.mark.parametrize(("overrides", "drop", "key", "fragment"), BAD_INPUTS)
def test_validation_errors_name_their_key(
    overrides: dict[str, str], drop: tuple[str, ...], key: str, fragment: str
) -> None:
    with pytest.raises(ConfigError) as err:
        build(overrides, drop)
    assert err.value.key is not None and err.value.key.startswith(key)
    assert err.value.key in str(err.value)
    assert fragment in str(err.value)
    assert isinstance(err.value, ValueError)


def test_invalid_value_wording_matches_kafka() -> None:
    err = ConfigError.invalid("num.partitions", "x", "Not a number of type INT")
    assert str(err) == "Invalid value x for configuration num.partitions: Not a number of type INT"
    assert err.key == "num.partitions"
    assert str(ConfigError.invalid("k", "v")) == "Invalid value v for configuration k"
    assert str(ConfigError.missing("k")) == 'Missing required configuration "k" which has no default value.'


def test_listener_prefixed_sasl_keys_are_known() -> None:
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a-pw";'
    c = build(
        {
            "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
            "listener.name.sasl_plaintext.gssapi.sasl.kerberos.service.name": "kafka",
        }
    )
    assert c.warnings == (
        "The configuration 'listener.name.sasl_plaintext.gssapi.sasl.kerberos.service.name' was supplied but "
        "isn't a known config.",
    )


def test_failed_authentication_delay() -> None:
    assert cfg().failed_authentication_delay_ms == 100  # Kafka's default
    assert build({"connection.failed.authentication.delay.ms": "0"}).failed_authentication_delay_ms == 0
    with pytest.raises(ConfigError, match=r"connection\.failed\.authentication\.delay\.ms"):
        build({"connection.failed.authentication.delay.ms": "-5"})

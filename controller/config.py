"""Node configuration: a Kafka broker style properties file plus command-line overrides.

A node reads the same file format and, where a key exists in Kafka, the same key with the same default and
the same parsing as a Kafka 3.9 broker in ZooKeeper mode (``KafkaConfig``, ``ConfigDef``,
``SocketServerConfigs``). Keys of our own start with ``bridgekeeper.``.

Parsing follows Kafka's sources at 3.9.0-rc3:

* the file: ``java.util.Properties.load`` (JDK 11+ ``LineReader``/``loadConvert``), read as ISO-8859-1 bytes
  exactly like Kafka's ``Utils.loadProps`` (an ``InputStream``, so non-ASCII needs ``\\uXXXX`` escapes);
* values: ``ConfigDef.parseType`` - Java ``String.trim()`` first, booleans are ``true``/``false`` in any case,
  INT/LONG are Java ``parseInt``/``parseLong`` (range-checked, no underscores), LIST splits on
  ``\\s*,\\s*``; errors read ``Invalid value <v> for configuration <key>: <reason>`` (``ConfigException``);
* listeners: ``SocketServerConfigs.listenerListToEndPoints`` and ``CoreUtils.listenerListToEndPoints``
  (the URI regex, empty host = wildcard, upper-cased listener names, distinct names, distinct ports unless one
  IPv4 and one IPv6 address share a port, port 0 exempt; ``advertised.listeners`` may repeat ports);
* ``listener.security.protocol.map``: ``Csv.parseCsvMap`` (split at the *last* colon), names normalised
  upper-case, protocols case-insensitive;
* inter-broker listener: ``KafkaConfig.getInterBrokerListenerNameAndSecurityProtocol`` (``inter.broker.
  listener.name`` or the listener named after ``security.inter.broker.protocol``; setting both is an error;
  it must be an advertised listener) and the ``0.0.0.0`` advertised-host ban from ``validateValues``;
* ``zookeeper.connect``: ZooKeeper's ``ConnectStringParser`` (chroot from the first ``/``, a bare ``/`` means
  none, ``PathUtils.validatePath`` rules, port 2181 when omitted);
* ``super.users``: ``StandardAuthorizer.getConfiguredSuperUsers`` (``;``-separated, trimmed, empty pieces
  skipped, each ``type:name``).

Deliberate differences from Kafka, because a bridgekeeper node is not a data broker:

* ``broker.id`` is required and must be >= 0 (no ``broker.id.generation.enable``); ``node.id`` is accepted
  as its synonym as in ``KafkaConfig.populateSynonyms`` and must agree with it when both are set.
* ``process.roles`` names *our* roles (which parts of the node run) and defaults to ``broker,controller``;
  it does not switch on KRaft.
* ``auto.create.topics.enable`` defaults to ``false``: a Metadata request must never become a metadata write
  behind the controller's back, and there is no data to produce anyway. Setting it to ``true`` is allowed.
* ``inter.broker.protocol.version`` rejects versions Kafka 3.9 marks non-production (``4.0-IV0``...); a ZK
  broker would accept them, but nothing here implements them.
* Stricter than Kafka where Kafka would fail later or silently: listener names are limited to
  ``[A-Za-z0-9_.-]`` (what a broker registration decoder accepts), unbalanced ``[``/``]`` and ports outside
  0-65535 are rejected at load, a listener name may appear only once in the protocol map,
  ``default.replication.factor`` >= 1, ``controlled.shutdown.*`` >= 0, ``broker.rack=`` (empty) means no
  rack, and ``zookeeper.connect`` hosts must be hostnames / IPv4 / bracketed IPv6.
* Timing invariants (``zookeeper.session.timeout.ms`` >= 1000, retry deadline < session timeout, positive
  connection and request timeouts) are checked at load, Patroni style, instead of misbehaving at runtime.
* Unknown keys never fail; each one yields Kafka's pre-3.6 warning text in :attr:`NodeConfig.warnings`
  (3.6+ logs one aggregated INFO line, "These configurations '[...]' were supplied but are not used yet.").
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from controller.config_tls import TlsConfigError, tls_settings, zookeeper_tls_settings
from controller.security.plain import JaasConfig, parse_jaas_config
from controller.security.settings import SUPPORTED_SASL_MECHANISMS, ListenerSasl, SaslCredentials, ZkDigest
from controller.security.tls import TlsSettings
from zkmodel.brokers import SECURITY_PROTOCOLS, EndPoint
from zkmodel.ibp import LATEST_PRODUCTION, MetadataVersion, parse_ibp_config, zk_migration_supported
from zkmodel.java import java_trim

__all__ = [
    "DEFAULT_LISTENERS",
    "DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP",
    "KNOWN_KEYS",
    "ConfigError",
    "NodeConfig",
    "config_from_properties",
    "dump_properties",
    "load_config",
    "parse_listener_list",
    "parse_properties",
    "parse_security_protocol_map",
    "parse_zookeeper_connect",
]

# --- errors -------------------------------------------------------------------------------------------------


class ConfigError(ValueError):
    """A bad configuration, worded like Kafka's ``ConfigException``; ``key`` names the offending key if any."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key

    @classmethod
    def invalid(cls, key: str, value: object, reason: str | None = None) -> ConfigError:
        """``Invalid value <v> for configuration <key>: <reason>`` (Kafka's three-argument form)."""
        suffix = f": {reason}" if reason else ""
        return cls(f"Invalid value {value} for configuration {key}{suffix}", key)

    @classmethod
    def missing(cls, key: str) -> ConfigError:
        return cls(f'Missing required configuration "{key}" which has no default value.', key)


# --- java.util.Properties -----------------------------------------------------------------------------------

_PROPS_WHITESPACE = " \t\f"
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_UNESCAPE = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}


def _line_breaks(text: str) -> list[int]:
    """Offsets of every natural line break: ``\\n``, and ``\\r`` not followed by ``\\n``."""
    return [i for i, c in enumerate(text) if c == "\n" or (c == "\r" and text[i + 1 : i + 2] != "\n")]


def _logical_lines(text: str) -> Iterator[tuple[str, list[int]]]:
    """JDK 11+ ``Properties.LineReader``: yields each logical line and the text offset of each of its chars.

    Leading ``' '``, ``\\t``, ``\\f`` of every natural line are dropped, blank lines skipped, a line whose first
    char is ``#`` or ``!`` is a comment (even one ending in a backslash), and an odd number of trailing
    backslashes joins the next natural line. As in the JDK, a continuation that leaves the line empty so far
    lets the next line be a comment, and a dangling backslash at end of input is dropped.
    """
    n = len(text)
    off = 0
    buf: list[str] = []
    offsets: list[int] = []
    skip_ws = True
    appended = False
    backslash = False
    while True:
        if off >= n:
            if buf:
                if backslash:
                    buf.pop()
                    offsets.pop()
                yield "".join(buf), offsets
            return
        c = text[off]
        off += 1
        if skip_ws:
            if c in _PROPS_WHITESPACE:
                continue
            if not appended and c in "\r\n":
                continue
            skip_ws = False
            appended = False
        if not buf and c in "#!":
            while off < n and text[off] not in "\r\n":
                off += 1
            skip_ws = True
            continue
        if c not in "\r\n":
            buf.append(c)
            offsets.append(off - 1)
            backslash = not backslash if c == "\\" else False
            continue
        if not buf:
            skip_ws = True
            continue
        if off >= n:
            # JDK quirk: a terminator that is the input's last char ends the line even when dropping the
            # continuation backslash leaves it empty, so a file ending in "\\\n" (not "\\\r\n") has a "" key.
            if backslash:
                buf.pop()
                offsets.pop()
            yield "".join(buf), offsets
            return
        if backslash:
            buf.pop()
            offsets.pop()
            skip_ws = True
            appended = True
            backslash = False
            if c == "\r" and off < n and text[off] == "\n":
                off += 1
            continue
        yield "".join(buf), offsets
        buf = []
        offsets = []
        skip_ws = True


def _combine_surrogates(s: str) -> str:
    """Java strings are UTF-16: ``\\uD83D\\uDE00`` is one character. Lone surrogates are kept as they are."""
    if not any("\ud800" <= c <= "\udfff" for c in s):
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _load_convert(segment: str, offsets: list[int], where: _Where) -> str:
    out: list[str] = []
    i = 0
    end = len(segment)
    while i < end:
        c = segment[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        c = segment[i]  # never past the end: a segment cannot end in an unpaired backslash
        i += 1
        if c != "u":
            out.append(_UNESCAPE.get(c, c))
            continue
        digits = segment[i : i + 4]
        if len(digits) < 4 or any(d not in _HEX_DIGITS for d in digits):
            raise ConfigError(f"{where.source}:{where.line(offsets[i - 2])}: Malformed \\uxxxx encoding.")
        out.append(chr(int(digits, 16)))
        i += 4
    return _combine_surrogates("".join(out))


class _Where:
    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self._breaks = _line_breaks(text)

    def line(self, offset: int) -> int:
        return bisect.bisect_left(self._breaks, offset) + 1


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """``java.util.Properties.load`` over already-decoded text; later keys override earlier ones.

    A key ends at the first unescaped ``=``, ``:`` or whitespace; whitespace around the separator and at
    most one ``=``/``:`` after whitespace are skipped; the value runs to the end of the logical line (trailing
    whitespace kept). Escapes: ``\\t \\n \\r \\f \\uXXXX``, any other escaped char is itself. A malformed
    ``\\u`` escape raises :class:`ConfigError` naming ``source`` and the line.
    """
    where = _Where(source, text)
    result: dict[str, str] = {}
    for line, offsets in _logical_lines(text):
        limit = len(line)
        key_len = 0
        value_start = limit
        has_sep = False
        preceding_backslash = False
        while key_len < limit:
            c = line[key_len]
            if c in "=:" and not preceding_backslash:
                value_start = key_len + 1
                has_sep = True
                break
            if c in _PROPS_WHITESPACE and not preceding_backslash:
                value_start = key_len + 1
                break
            preceding_backslash = not preceding_backslash if c == "\\" else False
            key_len += 1
        while value_start < limit:
            c = line[value_start]
            if c not in _PROPS_WHITESPACE:
                if not has_sep and c in "=:":
                    has_sep = True
                else:
                    break
            value_start += 1
        key = _load_convert(line[:key_len], offsets[:key_len], where)
        value = _load_convert(line[value_start:], offsets[value_start:], where)
        result[key] = value
    return result


def _save_convert(text: str, *, is_key: bool) -> str:
    """``Properties.saveConvert`` with ``escapeUnicode``: the output is pure ASCII, so Kafka reads it too."""
    out: list[str] = []
    for index, c in enumerate(text):
        code = ord(c)
        if c == "\\":
            out.append("\\\\")
        elif c == " ":
            out.append("\\ " if index == 0 or is_key else " ")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif c in "=:#!":
            out.append("\\" + c)
        elif code < 0x20 or code > 0x7E:
            units = c.encode("utf-16-be", "surrogatepass")
            for k in range(0, len(units), 2):
                out.append(f"\\u{units[k]:02X}{units[k + 1]:02X}")
        else:
            out.append(c)
    return "".join(out)


def dump_properties(raw: Mapping[str, str], *, comment: str | None = None) -> str:
    """Render ``raw`` as a properties file that :func:`parse_properties` (and Java) read back identically.

    One ``key=value`` line per entry in mapping order, every special or non-ASCII character escaped; an
    optional ``comment`` becomes leading ``#`` lines.
    """
    lines: list[str] = []
    if comment is not None:
        for part in re.split(r"\r\n|\r|\n", comment):
            escaped = "".join(c if 0x20 <= ord(c) <= 0x7E else _save_convert(c, is_key=False) for c in part)
            lines.append(f"# {escaped}".rstrip())
    for key, value in raw.items():
        lines.append(f"{_save_convert(key, is_key=True)}={_save_convert(value, is_key=False)}")
    return "".join(line + "\n" for line in lines)


# --- value parsing (ConfigDef) ------------------------------------------------------------------------------

# Java's \s is ASCII-only: [ \t\n\x0B\f\r].
_CSV_SPLIT = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_JAVA_INTEGER = re.compile(r"[+-]?\d+")  # Character.digit accepts any Unicode decimal digit, as \d does
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


def _java_split_csv(value: str) -> list[str]:
    """``String.split("\\\\s*,\\\\s*")``: trailing empty pieces dropped, leading ones kept."""
    pieces = _CSV_SPLIT.split(value)
    while len(pieces) > 1 and not pieces[-1]:
        pieces.pop()
    return pieces


class _Values:
    """Typed access to the merged raw map, recording which keys were read."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.raw = raw

    def given(self, key: str) -> bool:
        return key in self.raw

    def string(self, key: str, default: str | None) -> str | None:
        value = self.raw.get(key)
        return default if value is None else java_trim(value)

    def required_string(self, key: str) -> str:
        value = self.string(key, None)
        if value is None:
            raise ConfigError.missing(key)
        return value

    def integer(
        self,
        key: str,
        default: int | None,
        *,
        long: bool = False,
        at_least: int | None = None,
        at_most: int | None = None,
    ) -> int:
        text = self.raw.get(key)
        if text is None:
            if default is None:
                raise ConfigError.missing(key)
            value = default
        else:
            trimmed = java_trim(text)
            lo, hi = _LONG_RANGE if long else _INT_RANGE
            if _JAVA_INTEGER.fullmatch(trimmed) is None or not lo <= (value := int(trimmed)) <= hi:
                raise ConfigError.invalid(key, text, f"Not a number of type {'LONG' if long else 'INT'}")
        if at_least is not None and value < at_least:
            raise ConfigError.invalid(key, value, f"Value must be at least {at_least}")
        if at_most is not None and value > at_most:
            raise ConfigError.invalid(key, value, f"Value must be no more than {at_most}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        text = self.raw.get(key)
        if text is None:
            return default
        trimmed = java_trim(text).lower()
        if trimmed == "true":
            return True
        if trimmed == "false":
            return False
        raise ConfigError.invalid(key, text, "Expected value to be either true or false")

    def ibp(self, key: str, default: str) -> MetadataVersion:
        text = self.raw.get(key, default)
        try:
            return parse_ibp_config(text)
        except ValueError as exc:
            raise ConfigError.invalid(key, java_trim(text), str(exc)) from None


# --- keys and defaults --------------------------------------------------------------------------------------

BROKER_ID = "broker.id"
NODE_ID = "node.id"
ZK_CONNECT = "zookeeper.connect"
PROCESS_ROLES = "process.roles"
LISTENERS = "listeners"
ADVERTISED_LISTENERS = "advertised.listeners"
LISTENER_SECURITY_PROTOCOL_MAP = "listener.security.protocol.map"
INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
INTER_BROKER_SECURITY_PROTOCOL = "security.inter.broker.protocol"
INTER_BROKER_PROTOCOL_VERSION = "inter.broker.protocol.version"
ZK_SESSION_TIMEOUT_MS = "zookeeper.session.timeout.ms"
ZK_CONNECTION_TIMEOUT_MS = "zookeeper.connection.timeout.ms"
ZK_MAX_IN_FLIGHT_REQUESTS = "zookeeper.max.in.flight.requests"
BROKER_RACK = "broker.rack"
DELETE_TOPIC_ENABLE = "delete.topic.enable"
AUTO_CREATE_TOPICS_ENABLE = "auto.create.topics.enable"
NUM_PARTITIONS = "num.partitions"
DEFAULT_REPLICATION_FACTOR = "default.replication.factor"
CONTROLLED_SHUTDOWN_ENABLE = "controlled.shutdown.enable"
CONTROLLED_SHUTDOWN_MAX_RETRIES = "controlled.shutdown.max.retries"
CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS = "controlled.shutdown.retry.backoff.ms"
REQUEST_TIMEOUT_MS = "request.timeout.ms"
SUPER_USERS = "super.users"
MIGRATION_ENABLE = "zookeeper.metadata.migration.enable"
METRICS_PORT = "bridgekeeper.metrics.port"
METRICS_HOST = "bridgekeeper.metrics.host"
#: Where the node writes server.log, controller.log and state-change.log (Kafka's kafka.logs.dir); none: stderr.
LOG_DIR = "bridgekeeper.log.dir"
LOG_MAX_BYTES = "bridgekeeper.log.max.bytes"
LOG_BACKUP_COUNT = "bridgekeeper.log.backup.count"
#: Size-based rotation, where Kafka's log4j.properties rolls hourly and never deletes: at most
#: (1 + backups) x 100 MiB per file, so a busy controller cannot fill the disk.
DEFAULT_LOG_MAX_BYTES = 100 * 1024 * 1024
DEFAULT_LOG_BACKUP_COUNT = 10
FORWARDING_MIN_IBP = "bridgekeeper.forwarding.min.ibp"
FORWARDING_MAX_IN_FLIGHT = "bridgekeeper.forwarding.max.in.flight"
ZK_RETRY_DEADLINE_MS = "bridgekeeper.zk.retry.deadline.ms"
REPLICA_CATCHUP_BYTES_PER_PARTITION = "bridgekeeper.replica.catchup.bytes.per.partition"
REPLICA_CATCHUP_RATE_BYTES_PER_SEC = "bridgekeeper.replica.catchup.rate.bytes.per.sec"
SASL_ENABLED_MECHANISMS = "sasl.enabled.mechanisms"
FAILED_AUTHENTICATION_DELAY_MS = "connection.failed.authentication.delay.ms"
SASL_MECHANISM_INTER_BROKER = "sasl.mechanism.inter.broker.protocol"
AUTHORIZER_CLASS_NAME = "authorizer.class.name"
ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found"
ZK_DIGEST = "bridgekeeper.zookeeper.digest"
ZK_CONTROLLER_DIGEST = "bridgekeeper.zookeeper.controller.digest"
ZK_SET_ACL = "zookeeper.set.acl"
#: Lets a node start in a chroot where brokers that are not bridgekeeper nodes (Apache Kafka brokers) are
#: registered; default false, and named so that nobody sets it by accident (controller.store.chroot_guard).
UNSAFE_JOIN_KAFKA_CHROOT = "bridgekeeper.unsafe.join.chroot.with.kafka.brokers"
#: Forwarded requests in flight per broker by default, and the most one may configure (each is a connection to
#: the controller, and a request the controller serves at once). Kafka keeps one; with 50 concurrent clients
#: that gave 0.55-0.75x the direct path's throughput, 16 gave 0.88-1.00x (bench/README.md, forwarding_concurrency).
DEFAULT_FORWARDING_MAX_IN_FLIGHT = 16
MAX_FORWARDING_IN_FLIGHT = 64
#: The authorizer class names Kafka's ZooKeeper mode used; both mean our ACL authorizer.
ACL_AUTHORIZERS = ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")

KNOWN_KEYS: frozenset[str] = frozenset(
    {
        BROKER_ID,
        NODE_ID,
        ZK_CONNECT,
        PROCESS_ROLES,
        LISTENERS,
        ADVERTISED_LISTENERS,
        LISTENER_SECURITY_PROTOCOL_MAP,
        INTER_BROKER_LISTENER_NAME,
        INTER_BROKER_SECURITY_PROTOCOL,
        INTER_BROKER_PROTOCOL_VERSION,
        ZK_SESSION_TIMEOUT_MS,
        ZK_CONNECTION_TIMEOUT_MS,
        ZK_MAX_IN_FLIGHT_REQUESTS,
        BROKER_RACK,
        DELETE_TOPIC_ENABLE,
        AUTO_CREATE_TOPICS_ENABLE,
        NUM_PARTITIONS,
        DEFAULT_REPLICATION_FACTOR,
        CONTROLLED_SHUTDOWN_ENABLE,
        CONTROLLED_SHUTDOWN_MAX_RETRIES,
        CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS,
        REQUEST_TIMEOUT_MS,
        SUPER_USERS,
        MIGRATION_ENABLE,
        METRICS_PORT,
        METRICS_HOST,
        LOG_DIR,
        LOG_MAX_BYTES,
        LOG_BACKUP_COUNT,
        FORWARDING_MIN_IBP,
        FORWARDING_MAX_IN_FLIGHT,
        ZK_RETRY_DEADLINE_MS,
        REPLICA_CATCHUP_BYTES_PER_PARTITION,
        REPLICA_CATCHUP_RATE_BYTES_PER_SEC,
        SASL_ENABLED_MECHANISMS,
        FAILED_AUTHENTICATION_DELAY_MS,
        SASL_MECHANISM_INTER_BROKER,
        AUTHORIZER_CLASS_NAME,
        ALLOW_EVERYONE_IF_NO_ACL_FOUND,
        ZK_DIGEST,
        ZK_CONTROLLER_DIGEST,
        ZK_SET_ACL,
        UNSAFE_JOIN_KAFKA_CHROOT,
    }
)
"""Every key :func:`load_config` reads; anything else only produces a warning."""

DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"
# SocketServerConfigs.LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT lists a HashMap; the order carries no meaning.
DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
DEFAULT_PROCESS_ROLES = "broker,controller"
DEFAULT_ZK_PORT = 2181
_ROLES = ("broker", "controller")
_LISTENER_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# SocketServerConfigs.URI_PARSE_REGEXP, applied with Matcher.matches() (whole string).
_LISTENER_URI = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_ZK_HOSTNAME = re.compile(r"[A-Za-z0-9_.-]+")
#: The listener-prefixed keys we read: a listener's SASL mechanisms and its per-mechanism JAAS entries.
_LISTENER_PREFIXED_KEY = re.compile(
    r"listener\.name\.[a-z0-9_.-]+\.(sasl\.enabled\.mechanisms|(plain|scram-sha-256|scram-sha-512)\.sasl\.jaas\.config)"
)


# --- listeners ----------------------------------------------------------------------------------------------


def _normalise_listener_name(key: str, value: str, name: str) -> str:
    """``ListenerName.normalised``: blank is an error, else upper-cased (plus our charset check)."""
    if not java_trim(name):
        raise ConfigError.invalid(key, value, "The provided listener name is null or empty string")
    if _LISTENER_NAME.fullmatch(name) is None:
        raise ConfigError.invalid(key, value, f"listener name {name!r} may only contain letters, digits, '_', '.', '-'")
    return name.upper()


def parse_security_protocol_map(value: str, key: str = LISTENER_SECURITY_PROTOCOL_MAP) -> dict[str, str]:
    """``Csv.parseCsvMap`` + ``effectiveListenerSecurityProtocolMap``: ``NAME:PROTOCOL`` pairs."""
    value = java_trim(value)
    result: dict[str, str] = {}
    if not value:
        return result
    for entry in _java_split_csv(value):
        colon = entry.rfind(":")
        if colon < 0:
            raise ConfigError.invalid(key, value, f"entry {entry!r} is not of the form LISTENER_NAME:SECURITY_PROTOCOL")
        name = _normalise_listener_name(key, value, java_trim(entry[:colon]))
        protocol = java_trim(entry[colon + 1 :]).upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError.invalid(
                key,
                value,
                f"Invalid security protocol `{java_trim(entry[colon + 1 :])}` defined in {key} "
                f"(valid: {', '.join(SECURITY_PROTOCOLS)})",
            )
        if name in result:
            raise ConfigError.invalid(key, value, f"listener name {name} appears more than once")
        result[name] = protocol
    return result


def _ip_version(host: str) -> int | None:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _check_duplicate_ports(key: str, value: str, endpoints: list[EndPoint]) -> None:
    """``CoreUtils.listenerListToEndPoints`` with ``requireDistinctPorts = true``."""
    by_port: dict[int, list[EndPoint]] = {}
    for ep in endpoints:
        if ep.port != 0:  # port 0 (ephemeral) is exempt, as in Kafka
            by_port.setdefault(ep.port, []).append(ep)
    for port, eps in by_port.items():
        if len(eps) < 2:
            continue
        with_ip: list[EndPoint] = []
        without_ip: list[EndPoint] = []
        for ep in eps:
            (with_ip if ep.host and _ip_version(ep.host) is not None else without_ip).append(ep)
        if len(without_ip) > 1:
            raise ConfigError.invalid(key, value, f"Each listener must have a different port (port {port})")
        if not with_ip:
            continue
        if len(with_ip) == 2:
            versions = {_ip_version(ep.host) for ep in with_ip}
            if versions != {4, 6} or without_ip:
                raise ConfigError.invalid(
                    key,
                    value,
                    "If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, "
                    f"port: {port}",
                )
        else:
            raise ConfigError.invalid(
                key,
                value,
                "Each listener must have a different port unless exactly one listener has an IPv4 address and "
                f"the other IPv6 address, port: {port}",
            )


def parse_listener_list(
    value: str,
    protocol_map: Mapping[str, str],
    *,
    key: str = LISTENERS,
    require_distinct_ports: bool = True,
) -> tuple[EndPoint, ...]:
    """``listenerListToEndPoints``: ``NAME://host:port`` entries, comma-separated.

    Empty host means the wildcard address (kept as ``""``); IPv6 goes in brackets. Listener names must be
    distinct and mapped in ``protocol_map``; with ``require_distinct_ports`` two listeners may share a port
    only if one binds an IPv4 and the other an IPv6 address.
    """
    value = java_trim(value)
    entries = [e for e in _java_split_csv(value) if e] if value else []
    endpoints: list[EndPoint] = []
    for entry in entries:
        m = _LISTENER_URI.fullmatch(entry)
        if m is None:
            raise ConfigError.invalid(key, value, f"Unable to parse {entry} to a broker endpoint")
        name = _normalise_listener_name(key, value, m[1])
        rest = entry[len(m[1]) + 3 :]
        if rest.startswith("[") != (rest.find("]") >= 0) or rest.count("[") > 1 or rest.count("]") > 1:
            raise ConfigError.invalid(key, value, f"Unbalanced brackets in {entry}")
        port = int(m[3])
        if not 0 <= port <= 65535:
            raise ConfigError.invalid(key, value, f"port {port} of {entry} is not in 0-65535")
        protocol = protocol_map.get(name)
        if protocol is None:
            raise ConfigError.invalid(
                key,
                value,
                f"No security protocol defined for listener {name} (add it to {LISTENER_SECURITY_PROTOCOL_MAP})",
            )
        endpoints.append(EndPoint(name, m[2], port, protocol))
    names = [ep.listener for ep in endpoints]
    if len(set(names)) != len(names):
        raise ConfigError.invalid(key, value, "Each listener must have a different name")
    if require_distinct_ports:
        _check_duplicate_ports(key, value, endpoints)
    return tuple(endpoints)


# --- zookeeper.connect --------------------------------------------------------------------------------------


def _zk_path_problem(path: str) -> str | None:
    """ZooKeeper's ``PathUtils.validatePath``; returns the reason it fails, or None."""
    if not path.startswith("/"):
        return "Path must start with / character"
    if len(path) == 1:
        return None
    if path.endswith("/"):
        return "Path must not end with / character"
    for i in range(1, len(path)):
        c = path[i]
        last = path[i - 1]
        code = ord(c)
        following_ends = i + 1 == len(path) or path[i + 1] == "/"
        if c == "\0":
            return f"null character not allowed @{i}"
        if c == "/" and last == "/":
            return f"empty node name specified @{i}"
        if c == "." and last == "." and path[i - 2] == "/" and following_ends:
            return f"relative paths not allowed @{i}"
        if c == "." and last == "/" and following_ends:
            return f"relative paths not allowed @{i}"
        if 0 < code <= 0x1F or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xF8FF or code >= 0xFFF0:
            return f"invalid character @{i}"
    return None


def _parse_zk_host(key: str, value: str, item: str) -> tuple[str, int]:
    port_text: str | None
    if item.startswith("["):
        close = item.find("]")
        if close < 0:
            raise ConfigError.invalid(key, value, f"{item} starts with '[' but has no matching ']'")
        host = item[1:close]
        rest = item[close + 1 :]
        if rest and not rest.startswith(":"):
            raise ConfigError.invalid(key, value, f"{item}: expected ':port' after ']'")
        port_text = rest[1:] if rest else None
        if _ip_version(host) != 6:
            raise ConfigError.invalid(key, value, f"{item}: {host!r} is not an IPv6 address")
    else:
        host, colon, after = item.partition(":")
        port_text = after if colon else None
        if ":" in after:
            raise ConfigError.invalid(key, value, f"{item}: an IPv6 address must be written in brackets, [addr]:port")
        if not host or _ZK_HOSTNAME.fullmatch(host) is None:
            raise ConfigError.invalid(key, value, f"{item}: {host!r} is not a valid host name")
    if port_text is None:
        return host, DEFAULT_ZK_PORT
    if re.fullmatch(r"[0-9]+", port_text) is None or not 1 <= int(port_text) <= 65535:
        raise ConfigError.invalid(key, value, f"{item}: port must be a number in 1-65535")
    return host, int(port_text)


def parse_zookeeper_connect(value: str, key: str = ZK_CONNECT) -> tuple[tuple[tuple[str, int], ...], str | None]:
    """ZooKeeper's ``ConnectStringParser``: ``host[:port][,host[:port]...][/chroot]``.

    Returns the ``(host, port)`` pairs (port 2181 when omitted) and the chroot (None for none or ``/``).
    """
    text = java_trim(value)
    chroot: str | None = None
    slash = text.find("/")
    if slash >= 0:
        path = text[slash:]
        text = text[:slash]
        problem = _zk_path_problem(path)
        if problem is not None:
            raise ConfigError.invalid(key, value, f'Invalid path string "{path}" caused by {problem}')
        chroot = None if path == "/" else path
    items = [java_trim(item) for item in text.split(",")]
    items = [item for item in items if item]
    if not items:
        raise ConfigError.invalid(key, value, "no ZooKeeper server given (expected host:port[,host:port...][/chroot])")
    return tuple(_parse_zk_host(key, value, item) for item in items), chroot


def _format_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# --- the config ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeConfig:
    """One node's validated configuration. Build it with :func:`load_config` or :func:`config_from_properties`.

    Listener endpoints are as configured: an empty host (wildcard) or port 0 (ephemeral) is resolved by the
    node when it binds and registers, as Kafka does.
    """

    broker_id: int
    zookeeper_connect: str
    zookeeper_servers: tuple[tuple[str, int], ...]
    zookeeper_chroot: str | None
    process_roles: frozenset[str]
    listeners: tuple[EndPoint, ...]
    advertised_listeners: tuple[EndPoint, ...]
    listener_security_protocol_map: Mapping[str, str] = field(hash=False)
    inter_broker_listener_name: str
    inter_broker_protocol_version: MetadataVersion
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int
    zookeeper_max_in_flight_requests: int
    broker_rack: str | None
    delete_topic_enable: bool
    auto_create_topics_enable: bool
    num_partitions: int
    default_replication_factor: int
    controlled_shutdown_enable: bool
    controlled_shutdown_max_retries: int
    controlled_shutdown_retry_backoff_ms: int
    request_timeout_ms: int
    super_users: tuple[str, ...]
    zookeeper_metadata_migration_enable: bool
    metrics_port: int
    metrics_host: str
    forwarding_min_ibp: MetadataVersion
    #: How many forwarded requests a broker keeps in flight to the controller at once, each on a connection of
    #: its own (Kafka's ForwardingManager: 1). Order per client connection holds at any value.
    forwarding_max_in_flight: int
    zk_retry_deadline_ms: int
    replica_catchup_bytes_per_partition: int
    replica_catchup_rate_bytes_per_sec: int
    raw: Mapping[str, str] = field(hash=False, repr=False)
    warnings: tuple[str, ...] = field(repr=False)
    #: SASL server settings of each SASL_PLAINTEXT listener, by listener name.
    sasl_listeners: Mapping[str, ListenerSasl] = field(hash=False, default_factory=dict)
    #: Credentials for the inter-broker listener when it is a SASL listener.
    inter_broker_sasl: SaslCredentials | None = None
    #: TLS settings of each SSL and SASL_SSL listener, by listener name.
    tls_listeners: Mapping[str, TlsSettings] = field(hash=False, default_factory=dict)
    #: What this node connects to other nodes with when the inter-broker listener is SSL or SASL_SSL.
    inter_broker_tls: TlsSettings | None = None
    #: TLS to ZooKeeper (``zookeeper.ssl.client.enable``), None for plaintext.
    zookeeper_tls: TlsSettings | None = None
    acl_authorizer: bool = False
    allow_everyone_if_no_acl_found: bool = False
    zookeeper_digest: ZkDigest | None = None
    zookeeper_controller_digest: ZkDigest | None = None
    #: Kafka's ``zookeeper.set.acl``: znodes this node creates get CREATOR_ALL (+ world READ) ACLs.
    zookeeper_set_acl: bool = False
    #: Kafka delays closing a connection whose authentication failed, to slow down password guessing.
    failed_authentication_delay_ms: int = 100
    #: ``bridgekeeper.unsafe.join.chroot.with.kafka.brokers``: start even where foreign brokers are registered.
    unsafe_join_kafka_chroot: bool = False
    #: ``bridgekeeper.log.dir``: the directory of the node's log files, None for stderr only.
    log_dir: str | None = None
    #: A log file rolls over when it would grow past this many bytes (0: never).
    log_max_bytes: int = DEFAULT_LOG_MAX_BYTES
    #: How many rolled-over files of each log are kept (``server.log.1`` ...); 0 truncates instead.
    log_backup_count: int = DEFAULT_LOG_BACKUP_COUNT

    @property
    def zookeeper_hosts(self) -> str:
        """The server list without chroot, ``host:port,...`` (IPv6 bracketed): what kazoo's ``hosts`` takes."""
        return ",".join(_format_host_port(h, p) for h, p in self.zookeeper_servers)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.process_roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def metrics_enabled(self) -> bool:
        return self.metrics_port != -1

    @property
    def advertised_endpoints(self) -> tuple[EndPoint, ...]:
        """What this node registers in ``/brokers/ids/<id>``."""
        return self.advertised_listeners

    @property
    def inter_broker_endpoint(self) -> EndPoint:
        """The advertised endpoint other nodes use to reach this one."""
        for ep in self.advertised_listeners:
            if ep.listener == self.inter_broker_listener_name:
                return ep
        raise AssertionError("validated at load: the inter-broker listener is advertised")

    @property
    def inter_broker_security_protocol(self) -> str:
        return self.listener_security_protocol_map[self.inter_broker_listener_name]

    def listener(self, name: str) -> EndPoint | None:
        """The bind endpoint of listener ``name`` (case-insensitive, like Kafka's normalised names)."""
        wanted = name.upper()
        return next((ep for ep in self.listeners if ep.listener == wanted), None)

    def advertised_listener(self, name: str) -> EndPoint | None:
        wanted = name.upper()
        return next((ep for ep in self.advertised_listeners if ep.listener == wanted), None)


def _broker_id(values: _Values) -> int:
    broker_id = values.integer(BROKER_ID, -1) if values.given(BROKER_ID) else None
    node_id = values.integer(NODE_ID, -1) if values.given(NODE_ID) else None
    if broker_id is not None and node_id is not None and broker_id != node_id:
        raise ConfigError.invalid(
            NODE_ID, node_id, f"You must set `{NODE_ID}` to the same value as `{BROKER_ID}` ({broker_id})"
        )
    chosen = broker_id if broker_id is not None else node_id
    if chosen is None:
        raise ConfigError.missing(BROKER_ID)
    key = BROKER_ID if broker_id is not None else NODE_ID
    if chosen < 0:
        raise ConfigError.invalid(key, chosen, "Value must be at least 0 (bridgekeeper does not generate broker ids)")
    return chosen


def _process_roles(values: _Values) -> frozenset[str]:
    text = values.string(PROCESS_ROLES, DEFAULT_PROCESS_ROLES) or ""
    roles = _CSV_SPLIT.split(text) if text else []
    for role in roles:
        if role not in _ROLES:
            raise ConfigError.invalid(PROCESS_ROLES, role, f"String must be one of: {', '.join(_ROLES)}")
    if not roles:
        raise ConfigError.invalid(PROCESS_ROLES, text, f"at least one role is required ({', '.join(_ROLES)})")
    if len(set(roles)) != len(roles):
        raise ConfigError.invalid(PROCESS_ROLES, text, f"Duplicate role names found: {roles}")
    return frozenset(roles)


def _inter_broker_listener(values: _Values, protocol_map: Mapping[str, str]) -> str:
    name = values.string(INTER_BROKER_LISTENER_NAME, None)
    if name is not None:
        if values.given(INTER_BROKER_SECURITY_PROTOCOL):
            raise ConfigError(
                f"Only one of {INTER_BROKER_LISTENER_NAME} and {INTER_BROKER_SECURITY_PROTOCOL} should be set.",
                INTER_BROKER_LISTENER_NAME,
            )
        listener = _normalise_listener_name(INTER_BROKER_LISTENER_NAME, name, name)
        if listener not in protocol_map:
            raise ConfigError.invalid(
                INTER_BROKER_LISTENER_NAME,
                name,
                f"Listener with name {listener} not found in {LISTENER_SECURITY_PROTOCOL_MAP}",
            )
        return listener
    protocol = values.string(INTER_BROKER_SECURITY_PROTOCOL, "PLAINTEXT") or ""
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigError.invalid(
            INTER_BROKER_SECURITY_PROTOCOL, protocol, f"String must be one of: {', '.join(SECURITY_PROTOCOLS)}"
        )
    return protocol  # ListenerName.forSecurityProtocol


def _listeners(
    values: _Values,
) -> tuple[dict[str, str], tuple[EndPoint, ...], tuple[EndPoint, ...], str]:
    protocol_map = parse_security_protocol_map(
        values.string(LISTENER_SECURITY_PROTOCOL_MAP, DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP) or ""
    )
    listeners_text = values.string(LISTENERS, DEFAULT_LISTENERS) or ""
    listeners = parse_listener_list(listeners_text, protocol_map, key=LISTENERS)
    if not listeners:
        raise ConfigError.invalid(LISTENERS, listeners_text, "at least one listener is required")
    advertised_text = values.string(ADVERTISED_LISTENERS, None)
    if advertised_text is None:
        advertised = listeners
    else:
        advertised = parse_listener_list(
            advertised_text, protocol_map, key=ADVERTISED_LISTENERS, require_distinct_ports=False
        )
        if not advertised:
            raise ConfigError.invalid(ADVERTISED_LISTENERS, advertised_text, "at least one listener is required")
        bound = {ep.listener for ep in listeners}
        extra = [ep.listener for ep in advertised if ep.listener not in bound]
        if extra:
            raise ConfigError.invalid(
                ADVERTISED_LISTENERS,
                advertised_text,
                f"{ADVERTISED_LISTENERS} listener names must be equal to or a subset of the ones defined in "
                f"{LISTENERS}. Found {','.join(extra)}. The valid options based on the current configuration are "
                f"{','.join(ep.listener for ep in listeners)}",
            )
    for ep in advertised:
        if ep.host == "0.0.0.0":
            raise ConfigError.invalid(
                ADVERTISED_LISTENERS,
                advertised_text if advertised_text is not None else listeners_text,
                f"{ADVERTISED_LISTENERS} cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."
                + ("" if advertised_text is not None else f" ({ADVERTISED_LISTENERS} defaults to {LISTENERS})"),
            )
    inter = _inter_broker_listener(values, protocol_map)
    if inter not in {ep.listener for ep in advertised}:
        given_protocol = values.given(INTER_BROKER_SECURITY_PROTOCOL)
        key = INTER_BROKER_SECURITY_PROTOCOL if given_protocol else INTER_BROKER_LISTENER_NAME
        raise ConfigError.invalid(
            key,
            inter,
            f"{INTER_BROKER_LISTENER_NAME} must be a listener name defined in {ADVERTISED_LISTENERS}. "
            f"The valid options based on currently configured listeners are "
            f"{','.join(ep.listener for ep in advertised)}",
        )
    return protocol_map, listeners, advertised, inter


def _super_users(values: _Values) -> tuple[str, ...]:
    text = values.raw.get(SUPER_USERS)
    if text is None:
        return ()
    users: list[str] = []
    for piece in text.split(";"):
        principal = java_trim(piece)
        if not principal:
            continue
        kind, colon, _name = principal.partition(":")
        if not colon or not kind:
            raise ConfigError.invalid(
                SUPER_USERS, text, f"expected a string in format principalType:principalName but got {principal}"
            )
        if principal not in users:
            users.append(principal)
    return tuple(users)


def _mechanisms(values: _Values, listener: str) -> tuple[str, tuple[str, ...]]:
    """The listener's ``sasl.enabled.mechanisms`` (listener-prefixed first, as Kafka looks it up)."""
    prefixed = f"listener.name.{listener.lower()}.{SASL_ENABLED_MECHANISMS}"
    key = prefixed if prefixed in values.raw else SASL_ENABLED_MECHANISMS
    text = values.string(key, "GSSAPI") or ""
    mechanisms = tuple(dict.fromkeys(m for m in (java_trim(x) for x in _java_split_csv(text)) if m))
    if not mechanisms:
        raise ConfigError.invalid(key, text, f"listener {listener} is a SASL listener but enables no SASL mechanism")
    for m in mechanisms:
        if m not in SUPPORTED_SASL_MECHANISMS:
            raise ConfigError.invalid(
                key, text, f"SASL mechanism {m} is not supported by bridgekeeper "
                f"(supported: {', '.join(SUPPORTED_SASL_MECHANISMS)})",
            )  # fmt: skip
    return key, mechanisms


def _jaas(values: _Values, listener: str, mechanism: str) -> tuple[str, JaasConfig | None]:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = values.raw.get(key)
    if text is None:
        return key, None
    try:
        return key, parse_jaas_config(text)
    except ValueError as exc:
        raise ConfigError.invalid(key, "[hidden]", str(exc)) from None


def _sasl(
    values: _Values, listeners: Sequence[EndPoint], protocol_map: Mapping[str, str], inter: str
) -> tuple[dict[str, ListenerSasl], SaslCredentials | None]:
    """Kafka's SASL server settings per SASL listener, and the inter-broker client's credentials."""
    result: dict[str, ListenerSasl] = {}
    for ep in listeners:
        protocol = protocol_map.get(ep.listener, ep.listener)
        if not protocol.startswith("SASL_"):
            continue
        _key, mechanisms = _mechanisms(values, ep.listener)
        users: dict[str, str] = {}
        if "PLAIN" in mechanisms:
            key, jaas = _jaas(values, ep.listener, "PLAIN")
            if jaas is None:
                raise ConfigError.invalid(
                    key, "", f"Could not find a JAAS configuration for SASL/PLAIN on listener {ep.listener}; set "
                    f"{key} to a PlainLoginModule entry with user_<name>=\"<password>\" options",
                )  # fmt: skip
            users = jaas.plain_users()
        result[ep.listener] = ListenerSasl(mechanisms, MappingProxyType(users))
    inter_sasl: SaslCredentials | None = None
    if inter in result:
        text = values.string(SASL_MECHANISM_INTER_BROKER, "GSSAPI") or ""
        mechanism = java_trim(text)
        if mechanism not in result[inter].mechanisms:
            raise ConfigError.invalid(
                SASL_MECHANISM_INTER_BROKER, text,
                f"{SASL_MECHANISM_INTER_BROKER} must be included in {SASL_ENABLED_MECHANISMS} when SASL is used "
                f"for inter-broker communication (listener {inter} enables {', '.join(result[inter].mechanisms)})",
            )  # fmt: skip
        key, jaas = _jaas(values, inter, mechanism)
        if jaas is None or not jaas.username or jaas.password is None:
            raise ConfigError.invalid(
                key, "", f"the inter-broker listener {inter} uses SASL/{mechanism}: {key} must give this node's "
                "username and password",
            )  # fmt: skip
        inter_sasl = SaslCredentials(mechanism, jaas.username, jaas.password)
    return result, inter_sasl


#: The security protocols whose listeners speak TLS.
TLS_PROTOCOLS = ("SSL", "SASL_SSL")


def _tls(
    values: _Values, listeners: Sequence[EndPoint], protocol_map: Mapping[str, str], inter: str
) -> tuple[dict[str, TlsSettings], TlsSettings | None, TlsSettings | None]:
    """Each SSL / SASL_SSL listener's TLS settings (its keystore required), this node's as a TLS client of the
    inter-broker listener (Kafka builds that client from the same listener's keys), and its TLS to ZooKeeper
    (None unless ``zookeeper.ssl.client.enable``), all checked now."""
    result: dict[str, TlsSettings] = {}
    try:
        for ep in listeners:
            protocol = protocol_map.get(ep.listener, ep.listener)
            if protocol in TLS_PROTOCOLS:
                result[ep.listener] = tls_settings(
                    values.raw, ep.listener, need_keystore=True, sasl=protocol == "SASL_SSL"
                )
        inter_tls = None
        if protocol_map.get(inter, inter) in TLS_PROTOCOLS:
            inter_tls = tls_settings(values.raw, inter, need_keystore=False)
        zk_tls = zookeeper_tls_settings(values.raw)
    except TlsConfigError as exc:
        raise ConfigError(str(exc), exc.key) from None
    return result, inter_tls, zk_tls


def _digest(values: _Values, key: str) -> ZkDigest | None:
    text = values.raw.get(key)
    if text is None or not java_trim(text):
        return None
    text = java_trim(text)
    # The tools' form, digest:USER:PASSWORD, is taken too, so one identity string serves the file and the flags.
    if text.startswith("digest:") and text.count(":") >= 2:
        text = text.removeprefix("digest:")
    user, colon, password = text.partition(":")
    if not colon or not user:
        raise ConfigError.invalid(key, "[hidden]", "expected digest:USER:PASSWORD or USER:PASSWORD")
    return ZkDigest(user, password)


def config_from_properties(raw: Mapping[str, str], *, warnings: tuple[str, ...] = ()) -> NodeConfig:
    """Validate a merged key/value map into a :class:`NodeConfig` (``warnings`` are carried in front)."""
    values = _Values(raw)
    broker_id = _broker_id(values)
    zk_connect = values.required_string(ZK_CONNECT)
    zk_servers, zk_chroot = parse_zookeeper_connect(zk_connect)
    roles = _process_roles(values)
    protocol_map, listeners, advertised, inter = _listeners(values)

    ibp = values.ibp(INTER_BROKER_PROTOCOL_VERSION, LATEST_PRODUCTION.version)
    if not ibp.is_production:
        raise ConfigError.invalid(
            INTER_BROKER_PROTOCOL_VERSION,
            ibp.version,
            f"{ibp.version} is not a production-ready version in Kafka 3.9 (unstable); "
            f"the newest production version is {LATEST_PRODUCTION.version}",
        )

    session_ms = values.integer(ZK_SESSION_TIMEOUT_MS, 18000)
    if session_ms < 1000:
        raise ConfigError.invalid(
            ZK_SESSION_TIMEOUT_MS, session_ms, "Value must be at least 1000 (a ZooKeeper session needs time to live)"
        )
    connection_ms = values.integer(ZK_CONNECTION_TIMEOUT_MS, session_ms)
    if connection_ms <= 0:
        raise ConfigError.invalid(ZK_CONNECTION_TIMEOUT_MS, connection_ms, "Value must be at least 1")
    request_timeout_ms = values.integer(REQUEST_TIMEOUT_MS, 30000)
    if request_timeout_ms <= 0:
        raise ConfigError.invalid(REQUEST_TIMEOUT_MS, request_timeout_ms, "Value must be at least 1")
    deadline_ms = values.integer(ZK_RETRY_DEADLINE_MS, session_ms // 3, long=True, at_least=1)
    if deadline_ms >= session_ms:
        raise ConfigError.invalid(
            ZK_RETRY_DEADLINE_MS,
            deadline_ms,
            f"{ZK_RETRY_DEADLINE_MS} ({deadline_ms}) must be less than {ZK_SESSION_TIMEOUT_MS} ({session_ms}), "
            "or a writer could keep retrying after its own ZooKeeper session has expired",
        )

    migration = values.boolean(MIGRATION_ENABLE, False)
    if migration and not zk_migration_supported(ibp):
        raise ConfigError.invalid(
            MIGRATION_ENABLE,
            "true",
            f"Cannot enable ZooKeeper migration without setting '{INTER_BROKER_PROTOCOL_VERSION}' to 3.4 or higher "
            f"({INTER_BROKER_PROTOCOL_VERSION}={ibp.version})",
        )

    forwarding_min_ibp = values.ibp(FORWARDING_MIN_IBP, "3.4-IV0")
    sasl_listeners, inter_sasl = _sasl(values, listeners, protocol_map, inter)
    tls_listeners, inter_tls, zk_tls = _tls(values, listeners, protocol_map, inter)
    authorizer = values.string(AUTHORIZER_CLASS_NAME, "") or ""
    if authorizer and authorizer not in ACL_AUTHORIZERS:
        raise ConfigError.invalid(
            AUTHORIZER_CLASS_NAME, authorizer,
            f"bridgekeeper implements the ZooKeeper ACL authorizer only ({' or '.join(ACL_AUTHORIZERS)})",
        )  # fmt: skip
    zk_digest = _digest(values, ZK_DIGEST)
    zk_controller_digest = _digest(values, ZK_CONTROLLER_DIGEST) or zk_digest
    zk_set_acl = values.boolean(ZK_SET_ACL, False)
    if zk_set_acl and zk_digest is None:
        # KafkaZkClient.createZkClient refuses secure ACLs without an identity to own them (SASL or mTLS there).
        raise ConfigError(
            f"{ZK_SET_ACL} is true, but no ZooKeeper identity is configured: set {ZK_DIGEST} (user:password), "
            f"or the znodes created would be owned by nobody",
            ZK_SET_ACL,
        )
    metrics_host = values.string(METRICS_HOST, "127.0.0.1") or ""
    if not metrics_host:
        raise ConfigError.invalid(METRICS_HOST, "", "must name an address to bind (0.0.0.0 for all interfaces)")

    warning_list = list(warnings)
    warning_list.extend(
        f"The configuration '{key}' was supplied but isn't a known config."
        for key in raw
        if key not in KNOWN_KEYS and not _LISTENER_PREFIXED_KEY.fullmatch(key)
    )
    return NodeConfig(
        broker_id=broker_id,
        zookeeper_connect=zk_connect,
        zookeeper_servers=zk_servers,
        zookeeper_chroot=zk_chroot,
        process_roles=roles,
        listeners=listeners,
        advertised_listeners=advertised,
        listener_security_protocol_map=MappingProxyType(protocol_map),
        inter_broker_listener_name=inter,
        inter_broker_protocol_version=ibp,
        zookeeper_session_timeout_ms=session_ms,
        zookeeper_connection_timeout_ms=connection_ms,
        zookeeper_max_in_flight_requests=values.integer(ZK_MAX_IN_FLIGHT_REQUESTS, 10, at_least=1),
        broker_rack=values.string(BROKER_RACK, None) or None,
        delete_topic_enable=values.boolean(DELETE_TOPIC_ENABLE, True),
        auto_create_topics_enable=values.boolean(AUTO_CREATE_TOPICS_ENABLE, False),
        num_partitions=values.integer(NUM_PARTITIONS, 1, at_least=1),
        default_replication_factor=values.integer(DEFAULT_REPLICATION_FACTOR, 1, at_least=1),
        controlled_shutdown_enable=values.boolean(CONTROLLED_SHUTDOWN_ENABLE, True),
        controlled_shutdown_max_retries=values.integer(CONTROLLED_SHUTDOWN_MAX_RETRIES, 3, at_least=0),
        controlled_shutdown_retry_backoff_ms=values.integer(
            CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS, 5000, long=True, at_least=0
        ),
        request_timeout_ms=request_timeout_ms,
        super_users=_super_users(values),
        zookeeper_metadata_migration_enable=migration,
        metrics_port=values.integer(METRICS_PORT, 0, at_least=-1, at_most=65535),
        metrics_host=metrics_host,
        forwarding_min_ibp=forwarding_min_ibp,
        forwarding_max_in_flight=values.integer(
            FORWARDING_MAX_IN_FLIGHT, DEFAULT_FORWARDING_MAX_IN_FLIGHT, at_least=1, at_most=MAX_FORWARDING_IN_FLIGHT
        ),
        zk_retry_deadline_ms=deadline_ms,
        replica_catchup_bytes_per_partition=values.integer(
            REPLICA_CATCHUP_BYTES_PER_PARTITION, 10 * 1024 * 1024, long=True, at_least=0
        ),
        replica_catchup_rate_bytes_per_sec=values.integer(
            REPLICA_CATCHUP_RATE_BYTES_PER_SEC, 100 * 1024 * 1024, long=True, at_least=1
        ),
        raw=MappingProxyType(dict(raw)),
        warnings=tuple(warning_list),
        sasl_listeners=MappingProxyType(sasl_listeners),
        inter_broker_sasl=inter_sasl,
        tls_listeners=MappingProxyType(tls_listeners),
        inter_broker_tls=inter_tls,
        zookeeper_tls=zk_tls,
        acl_authorizer=bool(authorizer),
        allow_everyone_if_no_acl_found=values.boolean(ALLOW_EVERYONE_IF_NO_ACL_FOUND, False),
        zookeeper_digest=zk_digest,
        zookeeper_controller_digest=zk_controller_digest,
        zookeeper_set_acl=zk_set_acl,
        failed_authentication_delay_ms=values.integer(FAILED_AUTHENTICATION_DELAY_MS, 100, at_least=0),
        unsafe_join_kafka_chroot=values.boolean(UNSAFE_JOIN_KAFKA_CHROOT, False),
        log_dir=values.string(LOG_DIR, None) or None,
        log_max_bytes=values.integer(LOG_MAX_BYTES, DEFAULT_LOG_MAX_BYTES, long=True, at_least=0),
        log_backup_count=values.integer(LOG_BACKUP_COUNT, DEFAULT_LOG_BACKUP_COUNT, at_least=0),
    )


_NO_OVERRIDES: Mapping[str, str] = MappingProxyType({})


def read_properties(path: str) -> dict[str, str]:
    """A tool's properties file (``--command-config``, ``--zk-tls-config-file``) as Kafka's ``Utils.loadProps``
    reads it: ISO 8859-1, ``java.util.Properties`` syntax. Raises ValueError naming the file, in Java's words
    for a missing one."""
    try:
        with open(path, encoding="latin-1") as f:
            text = f.read()
    except FileNotFoundError:
        raise ValueError(f"{path} (No such file or directory)") from None
    except OSError as exc:
        raise ValueError(f"{path} ({exc.strerror or exc})") from None
    try:
        return parse_properties(text, source=path)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def load_config(path: str | None, overrides: Mapping[str, str] = _NO_OVERRIDES) -> NodeConfig:
    """Read ``path`` (a Kafka-style properties file; None = none) and apply ``overrides`` on top.

    The file is decoded as ISO-8859-1, exactly as Kafka's ``Utils.loadProps`` reads it; a non-ASCII byte
    earns a warning because Kafka would read a UTF-8 file the same (mangled) way.
    """
    merged: dict[str, str] = {}
    warnings: list[str] = []
    if path is not None:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(f"Cannot read config file {path}: {exc.strerror or exc}") from exc
        if any(b > 0x7F for b in data):
            warnings.append(
                f"{path} contains non-ASCII bytes; like Kafka, they are read as ISO-8859-1 "
                "(write other characters as \\uXXXX escapes)"
            )
        merged.update(parse_properties(data.decode("iso-8859-1"), source=path))
    merged.update(overrides)
    return config_from_properties(merged, warnings=tuple(warnings))


def parse_overrides(values: Sequence[str]) -> dict[str, str]:
    """``key=value`` overrides from the command line (``node --override``, ``up --set``), later ones winning."""
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value
    return out

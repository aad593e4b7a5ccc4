"""Dynamic config overrides (``/config/<type>/<name>``) and their ``/config/changes`` notifications.

Entity names are sanitized the way Kafka's ``Sanitizer`` does it, so client ids and user principals with
any character map to a single znode name that Kafka brokers would find too.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_to_bytes

from zkmodel.errors import ZnodeFormatError
from zkmodel.fields import check_version, dumps, get_object, get_str, parse_object
from zkmodel.jvmorder import java_properties_order

TOPICS, CLIENTS, USERS, BROKERS, IPS = "topics", "clients", "users", "brokers", "ips"
ENTITY_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, IPS)
#: ZooKeeperInternals.DEFAULT_STRING: the default entity, stored unsanitized.
DEFAULT_ENTITY = "<default>"

_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding with ``*`` as ``%2A`` and space as ``%20``."""
    out = []
    for byte in name.encode("utf-8", "surrogatepass"):
        out.append(chr(byte) if byte in _UNRESERVED else f"%{byte:02X}")
    return "".join(out)


def desanitize(name: str) -> str:
    """Kafka's ``Sanitizer.desanitize`` (``URLDecoder``): ``+`` is a space; a bad escape is an error."""
    i = 0
    while (i := name.find("%", i)) != -1:
        hexpart = name[i + 1 : i + 3]
        if len(hexpart) != 2 or any(c not in "0123456789abcdefABCDEF" for c in hexpart):
            raise ValueError(f"illegal escape at position {i} in sanitized name {name!r}")
        i += 3
    try:
        return unquote_to_bytes(name.replace("+", " ")).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"sanitized name {name!r} is not UTF-8 once decoded") from exc


def entity_path(entity_type: str, name: str) -> str:
    """``<type>/<name>`` for a single-level entity.

    Users, client ids and IPs are sanitized (ZkAdminManager does so for quota entities); topic names and
    broker ids need no escaping, and the default entity stays ``<default>``.
    """
    if entity_type not in ENTITY_TYPES:
        raise ValueError(f"unknown config entity type {entity_type!r}; expected one of {', '.join(ENTITY_TYPES)}")
    if entity_type in (TOPICS, BROKERS) or name == DEFAULT_ENTITY:
        return f"{entity_type}/{name}"
    return f"{entity_type}/{sanitize(name)}"


def user_client_entity_path(user: str, client_id: str) -> str:
    """The nested quota entity ``users/<u>/clients/<c>``."""
    return f"{entity_path(USERS, user)}/{entity_path(CLIENTS, client_id)}"


@dataclass(frozen=True)
class EntityConfig:
    """Config overrides of one entity; every value is a string, as in Kafka's ``Properties``."""

    config: Mapping[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        # Scala Map2 (insertion order) around a java.util.Properties (ConcurrentHashMap order).
        ordered = {k: self.config[k] for k in java_properties_order(list(self.config))}
        return dumps({"version": 1, "config": ordered})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "EntityConfig":
        obj = parse_object(path, data)
        check_version(path, obj, (1,))
        raw = get_object(path, obj, "config", required=False)
        for key, value in raw.items():
            if not isinstance(value, str):
                raise ZnodeFormatError(path, f"config {key!r} must have a string value, got {value!r}")
        return cls(dict(raw))


@dataclass(frozen=True)
class ConfigChangeNotification:
    """A ``config_change_N`` node. Version 2 names ``<type>/<sanitized name>``; version 1 (topics and
    clients only) named type and entity separately, and is still accepted when read."""

    entity_path: str

    def encode(self) -> bytes:
        return dumps({"version": 2, "entity_path": self.entity_path})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "ConfigChangeNotification":
        obj = parse_object(path, data)
        version = check_version(path, obj, (1, 2))
        if version == 1:
            entity_type = get_str(path, obj, "entity_type")
            if entity_type not in (TOPICS, CLIENTS):
                raise ZnodeFormatError(
                    path, f"version 1 'entity_type' must be 'clients' or 'topics', got {entity_type!r}"
                )
            return cls(f"{entity_type}/{get_str(path, obj, 'entity_name')}")
        text = get_str(path, obj, "entity_path")
        root = text.split("/", 1)[0]
        if "/" not in text or root not in ENTITY_TYPES:
            raise ZnodeFormatError(path, f"'entity_path' {text!r} must start with one of {', '.join(ENTITY_TYPES)}/")
        return cls(text)

    @property
    def entity_type(self) -> str:
        return self.entity_path.split("/", 1)[0]

    def as_dict(self) -> dict[str, Any]:
        return {"version": 2, "entity_path": self.entity_path}

"""Credentials in a Kafka tree, and how they are taken out before the tree leaves its cluster.

Three kinds of znode carry secrets (Kafka 3.9, ``ZkData``):

- ``/config/users/<user>``: SCRAM credentials (``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` keys of the entity config:
  salt, stored key, server key). The user's quotas in the same znode are not secret and stay.
- ``/delegation_token/tokens/<id>``: a delegation token's information; the whole znode goes.
- ``/config/brokers/<id>`` and ``/config/brokers/<default>``: dynamic broker configs whose ``ConfigDef`` type is
  PASSWORD (stored encrypted with ``password.encoder.secret``, which is still key material): every ``*.password``,
  ``sasl.jaas.config``, ``ssl.keystore.key``, ``ssl.keystore.certificate.chain``, ``ssl.truststore.certificates``,
  the encoder and delegation-token secrets, with or without a ``listener.name.<l>.`` prefix.

An entity config that is not readable JSON cannot be redacted key by key, so its znode is dropped whole: a
redaction that cannot prove it removed the secret removes everything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import orjson

SCRAM_KEYS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})
USERS = "/config/users/"
BROKER_CONFIGS = "/config/brokers/"
TOKENS = "/delegation_token/tokens/"
_SECRET_TAILS = ("password", "secret", "key")
_SECRET_SUFFIXES = ("sasl.jaas.config", "ssl.keystore.certificate.chain", "ssl.truststore.certificates")


def is_password_config(key: str) -> bool:
    """A dynamic broker config Kafka types as PASSWORD (see the module's list)."""
    return key.rsplit(".", 1)[-1] in _SECRET_TAILS or key.endswith(_SECRET_SUFFIXES)


@dataclass
class Redaction:
    """What was taken out, by kind, for the command's summary line."""

    scram: int = 0  # SCRAM credentials (one per user and mechanism)
    tokens: int = 0  # delegation-token znodes
    passwords: int = 0  # password-typed broker configs
    unreadable: int = 0  # credential znodes dropped whole because they could not be read

    @property
    def total(self) -> int:
        return self.scram + self.tokens + self.passwords + self.unreadable

    def describe(self) -> str:
        parts = [
            f"{self.scram:,} SCRAM credential(s)",
            f"{self.tokens:,} delegation token(s)",
            f"{self.passwords:,} broker password config(s)",
        ]
        if self.unreadable:
            parts.append(f"{self.unreadable:,} unreadable credential znode(s) dropped whole")
        return ", ".join(parts)


def redact(path: str, data: bytes | None, tally: Redaction) -> tuple[bool, bytes | None]:
    """``(keep, data)`` for one znode: the data with its secrets taken out and re-encoded, the same bytes when it
    holds none, or ``keep=False`` for a znode that is a secret. The path may carry a chroot (an export of
    ``/kafka`` from ZooKeeper's root): the kinds are told by their last components."""
    if _is_entry(path, TOKENS):
        tally.tokens += 1
        return False, None
    if _is_entry(path, USERS):
        return _strip(data, lambda key: key in SCRAM_KEYS, tally, "scram")
    if _is_entry(path, BROKER_CONFIGS):
        return _strip(data, is_password_config, tally, "passwords")
    return True, data


def _is_entry(path: str, parent: str) -> bool:
    """``path`` is a direct child of ``parent`` (a ``/x/y/`` path) under any chroot."""
    at = path.rfind(parent)
    return at >= 0 and "/" not in path[at + len(parent) :]


def _strip(data: bytes | None, secret: Callable[[str], bool], tally: Redaction, kind: str) -> tuple[bool, bytes | None]:
    if not data:
        return True, data
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    config = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        tally.unreadable += 1
        return False, None
    removed = [key for key in config if secret(key)]
    if not removed:
        return True, data
    setattr(tally, kind, getattr(tally, kind) + len(removed))
    doc["config"] = {k: v for k, v in config.items() if k not in removed}
    return True, orjson.dumps(doc)

"""Validated security settings a node runs with: SASL per listener, inter-broker credentials, ZooKeeper
identities. Parsed from the Kafka-style properties in :mod:`controller.config`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: What our SASL server implements (Kafka's GSSAPI and OAUTHBEARER are not offered).
SUPPORTED_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class ListenerSasl:
    """One SASL listener's server side: its enabled mechanisms and, for PLAIN, its JAAS users."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(hash=False, default_factory=dict)


@dataclass(frozen=True)
class SaslCredentials:
    """What this node presents when it connects to another node's SASL listener."""

    mechanism: str
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class ZkDigest:
    """A ZooKeeper digest identity, ``user:password``."""

    user: str
    password: str = field(repr=False)

    @property
    def auth(self) -> tuple[str, str]:
        """kazoo's ``auth_data`` entry."""
        return ("digest", f"{self.user}:{self.password}")

"""ZooKeeper ACLs of Kafka's znodes (paths relative to the chroot): Kafka's own ``zookeeper.set.acl`` default
(:func:`kafka_default_acl`) and lockdown's (:func:`desired_acl`). ACLs are (perms, scheme, id) tuples.

Which ACL each Kafka znode gets under lockdown:

Who writes what once the cluster runs the bridge release above the forwarding gate (tooling-facts §3,
kafka-zk-facts §1, and our nodes' two ZooKeeper identities):

* the **controller identity** writes every metadata znode: topics and partition states, ``/admin/*``,
  ``/config/*`` with its change notifications (admin writes are forwarded to the controller), ``/kafka-acl*``,
  ``/controller_epoch``, ``/feature``, ``/cluster/id``, ``/latest_producer_id_block``, and creates the ephemeral
  ``/controller`` in the chroot root when elected. It gets ALL everywhere the tool touches, which also lets it
  read the exact ACLs back (ZooKeeper hides a digest's hash from readers without ADMIN);
* **brokers** still write their own registration (an ephemeral child of ``/brokers/ids``, and
  ``/brokers/seqid`` when ids are generated) and the notification sequences of pre-2.7-IV2 ISR changes and of
  log-dir failures (``/isr_change_notification``, ``/log_dir_event_notification``): CREATE and DELETE on those
  parents, ALL on their own children. With no ``--broker-identity`` those grants go to ``world:anyone``
  (anyone could then register a broker id), which the plan says;
* **everyone** keeps READ, except under Kafka's sensitive roots (``/config/users``, ``/config/brokers``,
  ``/delegation_token/tokens``: credentials), as Kafka's own ``zookeeper.set.acl`` does; there the broker
  identity (when given) gets READ, since brokers read their dynamic configs and SCRAM credentials;
* ``/zookeeper``, ``/consumers`` and anything that is not Kafka's are left alone, as ZkSecurityMigrator does.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from zkmodel.paths import SECURE_ROOTS, SENSITIVE_ROOTS

Acl = tuple[int, str, str]
READ, WRITE, CREATE, DELETE, ADMIN, ALL = 1, 2, 4, 8, 16, 31
WORLD = ("world", "anyone")
BROKER_PARENTS = ("/brokers/ids", "/isr_change_notification", "/log_dir_event_notification")


class IdentityError(ValueError):
    """An identity argument that is not ``digest:user:password``."""


def digest_identity(text: str, option: str) -> tuple[str, str]:
    """``digest:user:password`` -> (scheme, id) as ZooKeeper stores it: ``user:base64(sha1(user:password))``."""
    scheme, _, rest = text.partition(":")
    user, _, password = rest.partition(":")
    if scheme != "digest" or not user or not password:
        raise IdentityError(f"{option} must be digest:user:password, got {text.split(':', 1)[0]}:...")
    hashed = base64.b64encode(hashlib.sha1(f"{user}:{password}".encode()).digest()).decode()
    return "digest", f"{user}:{hashed}"


@dataclass(frozen=True)
class Identities:
    controller: tuple[str, str]
    broker: tuple[str, str] | None = None

    @property
    def brokers(self) -> tuple[str, str]:
        return self.broker or WORLD


def kafka_default_acl(path: str, secure: bool) -> list[Acl]:
    """ZkData.defaultAcls(path): with ``zookeeper.set.acl``, CREATOR_ALL (scheme ``auth``, which the server
    expands to the creating session's ids) plus world READ except under the sensitive roots; ``/consumers``
    and every path of an insecure cluster: OPEN_ACL_UNSAFE."""
    if not secure or path == "/consumers":
        return [(ALL, *WORLD)]
    if path.startswith(SENSITIVE_ROOTS):
        return [(ALL, "auth", "")]
    return [(ALL, "auth", ""), (READ, *WORLD)]


def in_scope(path: str) -> bool:
    """Whether lockdown manages ``path`` (the chroot root and Kafka's secure roots with their subtrees)."""
    return path == "/" or any(path == r or path.startswith(r + "/") for r in SECURE_ROOTS)


def desired_acl(path: str, who: Identities) -> list[Acl]:
    """The ACL ``path`` should carry (in a canonical order: controller, brokers, world)."""
    controller = (ALL, *who.controller)
    acl: list[Acl] = [controller]
    parent = path.rsplit("/", 1)[0] or "/"
    if path in BROKER_PARENTS:
        acl.append((CREATE | DELETE | READ, *who.brokers))
    elif parent in BROKER_PARENTS or path == "/brokers/seqid":
        acl.append((ALL, *who.brokers))  # a broker's own registration or notification
    if not path.startswith(SENSITIVE_ROOTS):
        acl.append((READ, *WORLD))
    elif who.broker is not None:
        # Brokers read their dynamic configs (replication throttles) and SCRAM credentials here; Kafka's brokers
        # share the creating identity, ours have their own (without this READ a broker's replica catch-up stops
        # at NoAuth on /config/brokers, which `rehearse --lockdown` would show).
        acl.append((READ, *who.broker))
    return _canonical(acl)


def _canonical(acl: list[Acl]) -> list[Acl]:
    """One entry per identity (permissions OR-ed), in first-seen order."""
    merged: dict[tuple[str, str], int] = {}
    for perms, scheme, ident in acl:
        merged[(scheme, ident)] = merged.get((scheme, ident), 0) | perms
    return [(perms, scheme, ident) for (scheme, ident), perms in merged.items()]


def same_acl(found: list[Acl], wanted: list[Acl]) -> bool:
    """Equal as sets of (identity, permissions) (ZooKeeper keeps the order it was given). A digest id read back
    as ``user:x`` matches any hash of that user: ZooKeeper redacts the hash for readers without ADMIN."""

    def key(acl: list[Acl], redact: bool) -> list[tuple[int, str, str]]:
        out = []
        for perms, scheme, ident in _canonical(acl):
            if redact and scheme == "digest":
                ident = ident.split(":", 1)[0] + ":x"
            out.append((perms, scheme, ident))
        return sorted(out)

    if sorted(_canonical(found)) == sorted(_canonical(wanted)):
        return True
    redacted = any(s == "digest" and i.endswith(":x") for _p, s, i in found)
    return redacted and key(found, False) == key(wanted, True)

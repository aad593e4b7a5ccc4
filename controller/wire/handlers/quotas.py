"""DescribeClientQuotas (48) and AlterClientQuotas (49) on ZooKeeper-stored quota configs.

Modelled on Kafka 3.9's ZooKeeper-mode broker: ZkAdminManager.describeClientQuotas / alterClientQuotas and
AdminZkClient.changeConfigs (validation, ``tryCleanQuotaNodes``). Quotas live in ``/config/users/<u>``,
``/config/users/<u>/clients/<c>``, ``/config/clients/<c>`` and ``/config/ips/<ip>`` (names sanitized, the
default entity is ``<default>``); values are strings as Kafka writes them (``Double.toString`` for doubles,
the integral text for LONG/INT keys). A write is one multi ``[check(/controller), setData|create,
create config_change_ (seq)]``; an alteration that leaves an entity without configs and children deletes
its znode (and emptied parents), as Kafka 3.9 does, and still announces the change.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import math
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from controller.store import quotas as quota_store
from controller.store.errors import STORE_ERRORS, ApiFailure, store_failure
from controller.store.quotas import CLIENT_KEYS, IP_KEYS, USER_KEYS, alter_quota_entity, read_children, read_entities
from controller.wire.codec import Request, build, entity
from controller.wire.handlers.base import StoreApis, code
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.configs import CLIENTS, DEFAULT_ENTITY, IPS, USERS, desanitize
from zkmodel.configs import sanitize as _sanitize
from zkmodel.errors import ZnodeFormatError

ZERO = datetime.timedelta(0)
USER, CLIENT_ID, IP = "user", "client-id", "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
EPSILON = 1e-6


def _server_error() -> ApiFailure:
    """A Java exception that ApiError.fromThrowable maps to UNKNOWN_SERVER_ERROR (message withheld)."""
    return ApiFailure(E.UNKNOWN_SERVER_ERROR, None)


def _java_cast(value: float, lo: int, hi: int) -> int:
    """Java's ``(long)`` / ``(int)`` narrowing of a double: NaN is 0, out of range saturates, else truncates."""
    if math.isnan(value):
        return 0
    if value >= hi:
        return hi
    if value <= lo:
        return lo
    return int(value)


def _sanitize_name(name: str | None) -> str:
    return DEFAULT_ENTITY if name is None else _sanitize(name)


def _desanitize_name(name: str) -> str | None:
    return None if name == DEFAULT_ENTITY else desanitize(name)


def _valid_ip_entity(ip: str) -> bool:
    """DynamicConfig.Ip.isValidIpEntity: ``<default>``, an address, or a resolvable host name."""
    if ip == DEFAULT_ENTITY:
        return True
    try:
        ipaddress.ip_address(ip)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(ip, None)
    except (OSError, UnicodeError):
        return False
    return True


class QuotaApis(StoreApis):
    # -- DescribeClientQuotas ---------------------------------------------------------------------------------
    async def describe_client_quotas(self, req: Request, _conn: Connection) -> Any:
        body = req.body
        components = [(c.entity_type, int(c.match_type), c.match) for c in body.components]
        try:
            found = await asyncio.to_thread(self._describe, components, bool(body.strict))
        except ApiFailure as exc:
            return build(
                req.schema.DescribeClientQuotasResponse,
                throttle_time=ZERO,
                error_code=code(exc.error),
                error_message=exc.message,
                entries=None,
            )
        entity_cls, value_cls, entry_cls = (entity(req, n) for n in ("EntityData", "ValueData", "EntryData"))
        entries = tuple(
            build(
                entry_cls,
                entity=tuple(build(entity_cls, entity_type=t, entity_name=n) for t, n in ent),
                values=tuple(build(value_cls, key=k, value=v) for k, v in values),
            )
            for ent, values in found
        )
        return build(
            req.schema.DescribeClientQuotasResponse,
            throttle_time=ZERO,
            error_code=code(E.NONE),
            error_message=None,
            entries=entries,
        )

    def _describe(
        self, components: Sequence[tuple[str, int, str | None]], strict: bool
    ) -> list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]]:
        # DescribeClientQuotasRequest.filter(): every component is converted before any is checked.
        # A component is (match kind, name): EXACT -> ("exact", name), DEFAULT -> ("exact", None),
        # SPECIFIED -> ("specified", None), i.e. Java's Optional.of(name) / Optional.empty() / null.
        converted: list[tuple[str, tuple[str, str | None]]] = []
        for entity_type, match_type, match in components:
            if match_type == MATCH_EXACT:
                if match is None:
                    raise _server_error()  # Objects.requireNonNull in ClientQuotaFilterComponent.ofEntity
                converted.append((entity_type, ("exact", match)))
            elif match_type == MATCH_DEFAULT:
                converted.append((entity_type, ("exact", None)))
            elif match_type == MATCH_SPECIFIED:
                converted.append((entity_type, ("specified", None)))
            else:
                raise _server_error()  # IllegalArgumentException("Unexpected match type: ...")
        chosen: dict[str, tuple[str, str | None]] = {}
        labels = {USER: "user", CLIENT_ID: "client", IP: "ip"}
        for entity_type, component in converted:
            if entity_type in labels:
                if entity_type in chosen:
                    raise ApiFailure(E.INVALID_REQUEST, f"Duplicate {labels[entity_type]} filter component entity type")
                chosen[entity_type] = component
            elif entity_type == "":
                raise ApiFailure(E.INVALID_REQUEST, "Unexpected empty filter component entity type")
            else:
                raise ApiFailure(E.UNSUPPORTED_VERSION, f"Custom entity type '{entity_type}' not supported")
        user_c, client_c, ip_c = chosen.get(USER), chosen.get(CLIENT_ID), chosen.get(IP)
        if (user_c is not None or client_c is not None) and ip_c is not None:
            raise ApiFailure(
                E.INVALID_REQUEST,
                "Invalid entity filter component combination, IP filter component should not be used with "
                "user or clientId filter component.",
            )
        out: list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]] = []
        try:
            if ip_c is None:
                out += self._describe_user_client(user_c, client_c, strict)
            if user_c is None and client_c is None:
                out += self._describe_ips(ip_c, strict)
        except (ZnodeFormatError, ValueError):
            raise _server_error() from None  # corrupt znode / IllegalStateException for a non-double value
        return out

    def _read_configs(self, znode_paths: Sequence[str]) -> dict[str, dict[str, str]]:
        """Configs of each path ({} for a missing node), read in pipelined batches."""
        return read_entities(self.session, znode_paths)

    def _children(self, parents: Sequence[str]) -> dict[str, list[str]]:
        return read_children(self.session, parents)

    def _describe_user_client(
        self, user_c: tuple[str, str | None] | None, client_c: tuple[str, str | None] | None, strict: bool
    ) -> list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]]:
        """ZkAdminManager.handleDescribeClientQuotas."""
        exact_user = user_c is not None and user_c[0] == "exact"
        exact_client = client_c is not None and client_c[0] == "exact"
        exclude_user = strict and user_c is None
        exclude_client = strict and client_c is None
        user = user_c[1] if exact_user and user_c is not None else None
        client = client_c[1] if exact_client and client_c is not None else None
        users_root, clients_root = f"{paths.CONFIG}/{USERS}", f"{paths.CONFIG}/{CLIENTS}"
        # (user present?, user name or None for default), same for the client id, then the znode path.
        Key = tuple[tuple[bool, str | None], tuple[bool, str | None]]
        wanted: list[tuple[Key, str]] = []
        listing = self._children(
            [users_root] if not exclude_user and (not exact_client or not exclude_client) else []
        ).get(users_root, [])
        listing = listing if not (exact_user and exact_client) else []
        if exact_user and exclude_client:
            wanted.append((((True, user), (False, None)), f"{users_root}/{_sanitize_name(user)}"))
        elif not exclude_user and not exact_client:
            wanted += [(((True, _desanitize_name(u)), (False, None)), f"{users_root}/{u}") for u in listing]
        if exclude_user and exact_client:
            wanted.append((((False, None), (True, client)), f"{clients_root}/{_sanitize_name(client)}"))
        elif not exact_user and not exclude_client:
            names = self._children([clients_root]).get(clients_root, [])
            wanted += [(((False, None), (True, _desanitize_name(c))), f"{clients_root}/{c}") for c in names]
        if exact_user and exact_client:
            path = f"{users_root}/{_sanitize_name(user)}/clients/{_sanitize_name(client)}"
            wanted.append((((True, user), (True, client)), path))
        elif not exclude_user and not exclude_client:
            parents = {f"{users_root}/{u}/clients": u for u in listing}
            for parent, children in self._children(list(parents)).items():
                u = parents[parent]
                wanted += [
                    (((True, _desanitize_name(u)), (True, _desanitize_name(c))), f"{parent}/{c}") for c in children
                ]
        configs = self._read_configs([p for _k, p in wanted])

        def matches(component: tuple[str, str | None] | None, name: tuple[bool, str | None]) -> bool:
            if component is None:
                return not name[0] or not strict
            if component[0] == "exact":
                return name[0] and name[1] == component[1]
            return name[0]  # SPECIFIED: any name, the default entity included (Some(null) is defined)

        out: list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]] = []
        seen: set[Key] = set()
        for key, path in wanted:
            quota = [(k, v) for k, v in configs[path].items() if k in CLIENT_KEYS]
            if key in seen or not quota or not (matches(user_c, key[0]) and matches(client_c, key[1])):
                continue
            seen.add(key)
            ent = [(USER, key[0][1])] if key[0][0] else []
            ent += [(CLIENT_ID, key[1][1])] if key[1][0] else []
            out.append((ent, [(k, quota_store.java_parse_double(v)) for k, v in quota]))
        return out

    def _describe_ips(
        self, ip_c: tuple[str, str | None] | None, strict: bool
    ) -> list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]]:
        """ZkAdminManager.handleDescribeIpQuotas (no further matching: EXACT/DEFAULT read one node)."""
        root = f"{paths.CONFIG}/{IPS}"
        wanted: list[tuple[str | None, str]] = []
        if ip_c is not None and ip_c[0] == "exact":
            wanted.append((ip_c[1], f"{root}/{_sanitize_name(ip_c[1])}"))
        elif ip_c is not None or not strict:
            wanted += [(_desanitize_name(n), f"{root}/{n}") for n in self._children([root]).get(root, [])]
        configs = self._read_configs([p for _n, p in wanted])
        out: list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]] = []
        for name, path in wanted:
            quota = [(k, quota_store.java_parse_double(v)) for k, v in configs[path].items() if k in IP_KEYS]
            if quota:
                out.append(([(IP, name)], quota))
        return out

    # -- AlterClientQuotas ------------------------------------------------------------------------------------
    async def alter_client_quotas(self, req: Request, _conn: Connection) -> Any:
        body = req.body
        validate_only = bool(body.validate_only)
        entity_cls, entry_cls = entity(req, "EntityData"), entity(req, "EntryData")
        out = []
        for entry in body.entries:
            components = [(e.entity_type, e.entity_name) for e in entry.entity]
            ops = [(o.key, None if o.remove else float(o.value)) for o in entry.ops]
            try:
                await asyncio.to_thread(self._alter_entity, components, ops, validate_only)
                error, message = E.NONE, None
            except ApiFailure as exc:
                error, message = exc.error, exc.message
            except STORE_ERRORS as exc:
                failure = store_failure(exc, f"the quotas of {components}")
                error, message = failure.error, failure.message
            out.append(
                build(
                    entry_cls,
                    error_code=code(error),
                    error_message=message,
                    entity=tuple(build(entity_cls, entity_type=t, entity_name=n) for t, n in components),
                )
            )
        return build(req.schema.AlterClientQuotasResponse, throttle_time=ZERO, entries=tuple(out))

    @staticmethod
    def _target(components: Sequence[tuple[str, str | None]]) -> tuple[str, str, dict[str, str], bool]:
        """parseAndSanitizeQuotaEntity and the entity combinations: (root type, sanitized name, keys, user+client)."""
        chosen = dict(components)  # a Java HashMap: the last component of a type wins
        if not chosen:
            raise ApiFailure(E.INVALID_REQUEST, "Invalid empty client quota entity")
        for entity_type, name in chosen.items():
            if entity_type not in (USER, CLIENT_ID, IP):
                raise ApiFailure(E.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}")
            if name == "":
                raise ApiFailure(E.INVALID_REQUEST, f"Empty {entity_type} not supported")
        user = _sanitize_name(chosen[USER]) if USER in chosen else None
        client = _sanitize_name(chosen[CLIENT_ID]) if CLIENT_ID in chosen else None
        ip = _sanitize_name(chosen[IP]) if IP in chosen else None
        if ip is not None:
            if user is not None or client is not None:
                raise ApiFailure(
                    E.INVALID_REQUEST,
                    "Invalid quota entity combination, IP entity should not be used with user/client ID entity.",
                )
            if not _valid_ip_entity(ip):
                raise ApiFailure(E.INVALID_REQUEST, f"{ip} is not a valid IP or resolvable host.")
            return IPS, ip, IP_KEYS, False
        if user is not None and client is not None:
            return USERS, f"{user}/clients/{client}", USER_KEYS, True
        if user is not None:
            return USERS, user, USER_KEYS, False
        assert client is not None
        return CLIENTS, client, CLIENT_KEYS, False

    @staticmethod
    def _apply(props: dict[str, str], ops: Sequence[tuple[str, float | None]], keys: Mapping[str, str]) -> None:
        for key, value in ops:
            if value is None:
                props.pop(key, None)
                continue
            kind = keys.get(key)
            if kind is None:
                raise ApiFailure(E.INVALID_REQUEST, f"Invalid configuration key {key}")
            if kind == quota_store.DOUBLE:
                props[key] = quota_store.java_double_to_string(value)
            elif kind in quota_store.INTEGRAL_RANGES:
                lo, hi = quota_store.INTEGRAL_RANGES[kind]
                integral = _java_cast(value + EPSILON, lo, hi)
                if abs(float(integral) - value) > EPSILON:
                    raise ApiFailure(E.INVALID_REQUEST, f"Configuration {key} must be a {kind} value")
                props[key] = str(integral)
            else:
                raise _server_error()  # IllegalStateException("Unexpected config type STRING")

    def _alter_entity(
        self, components: Sequence[tuple[str, str | None]], ops: Sequence[tuple[str, float | None]], validate_only: bool
    ) -> None:
        root, name, keys, user_client = self._target(components)

        def compute(props: dict[str, str]) -> dict[str, str]:
            self._apply(props, ops, keys)
            return props

        alter_quota_entity(
            self.node.writes(self.session),
            root,
            name,
            compute,
            user_client=user_client,
            validate_only=validate_only,
            controller_wait_s=self.node.controller_wait_s,
        )

"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51) on ZooKeeper-stored credentials.

Modelled on Kafka 3.9's ZooKeeper-mode broker: KafkaApis' handlers (DESCRIBE / ALTER on the CLUSTER) and
ZkAdminManager.describeUserScramCredentials / alterUserScramCredentials, with their checks, codes and texts.
Credentials are the ``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` keys of ``/config/users/<sanitized user>`` in
ScramCredentialUtils' string form; that znode also holds the user's client quotas, which every write keeps.
A user's write is AdminZkClient.changeUserOrUserClientIdConfig: DynamicConfig.User validation, then one
multi ``[check(/controller), setData|create, create config_change_ (seq)]`` at the version read (re-read and
retried on a lost race), or, when no config is left and the node has no children, the node's deletion
(tryCleanQuotaNodes, no controller check) plus the notification.

Result order follows Kafka's insertion order where Kafka's collections keep one (Scala's small maps and
sets do); for larger requests Kafka's order is a hash order, which clients do not depend on.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from controller.security.scram import (
    MECHANISM_TYPES,
    credential_from_string,
    credential_to_string,
    iterations_error,
    make_credential_from_salted_password,
)
from controller.store.errors import STORE_ERRORS, ApiFailure, zk_error
from controller.store.scram import alter_user, read_all_users, read_user
from controller.wire.codec import Request, build, entity
from controller.wire.handlers.base import StoreApis, code, repeated
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel.configs import desanitize
from zkmodel.errorcodes import KafkaError
from zkmodel.java import java_string_key
from zkmodel.kafka_acls import AclOperation

log = logging.getLogger(__name__)


ZERO = datetime.timedelta(0)
#: Type byte -> mechanism name, in ScramMechanism.values() order (UNKNOWN = 0 and any other byte are unknown).
MECHANISM_NAMES: dict[int, str] = {t: n for n, t in sorted(MECHANISM_TYPES.items(), key=lambda item: item[1])}

# ZkAdminManager's texts.
EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
DESCRIBED_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request"

#: What a ZooKeeper read or write, or a stored value, can fail with (Kafka catches these as ``Exception``).
FAILURES: tuple[type[BaseException], ...] = (*STORE_ERRORS, TimeoutError, ValueError)

#: (user, error, message, [(mechanism type, iterations)])
Described = tuple[str, KafkaError, str | None, list[tuple[int, int]]]
#: (user, error, message)
Altered = tuple[str, KafkaError, str | None]
#: (name, mechanism type, iterations, salt, salted password)
Upsertion = tuple[str, int, int, bytes, bytes]
#: (name, mechanism type)
Deletion = tuple[str, int]


class RequestFailure(Exception):
    """A failure Kafka lets escape the handler: the answer is the request's getErrorResponse."""


class ScramApis(StoreApis):
    # -- DescribeUserScramCredentials ---------------------------------------------------------------------
    async def describe_user_scram_credentials(self, req: Request, conn: Connection) -> Any:
        users = None if req.body.users is None else [u.name for u in req.body.users]
        result_cls, info_cls = entity(req, "DescribeUserScramCredentialsResult"), entity(req, "CredentialInfo")
        response_cls = req.schema.DescribeUserScramCredentialsResponse
        if not self.node.authz.cluster(conn, AclOperation.DESCRIBE):
            # DescribeUserScramCredentialsRequest.getErrorResponse: one result per requested name, user unset,
            # and no message (ApiError.fromThrowable drops a default one). Kafka fails with an NPE for a null
            # list here; we answer without results.
            denied = code(E.CLUSTER_AUTHORIZATION_FAILED)
            results = tuple(
                build(result_cls, user="", error_code=denied, error_message=None, credential_infos=())
                for _ in users or ()
            )
            return build(response_cls, throttle_time=ZERO, error_code=denied, error_message=None, results=results)
        error, message, found = await asyncio.to_thread(self._describe, users)
        results = tuple(
            build(
                result_cls,
                user=user,
                error_code=code(err),
                error_message=msg,
                credential_infos=tuple(build(info_cls, mechanism=m, iterations=i) for m, i in infos),
            )
            for user, err, msg, infos in found
        )
        return build(response_cls, throttle_time=ZERO, error_code=code(error), error_message=message, results=results)

    def _read_user(self, user: str) -> tuple[dict[str, str], int | None]:
        return read_user(self.session, user)

    def _all_users(self) -> list[tuple[str, dict[str, str]]]:
        return read_all_users(self.session)

    @staticmethod
    def _credential_infos(user: str, props: Mapping[str, str], explicit: bool) -> Described | None:
        """ZkAdminManager's addToResultsIfHasScramCredential."""
        present = [(t, n) for t, n in MECHANISM_NAMES.items() if n in props]
        if present:
            try:
                infos = [(t, credential_from_string(props[n]).iterations) for t, n in present]
            except ValueError:  # "should generally never happen, but just in case bad data gets in"
                log.warning("cannot parse a SCRAM credential of user %r", user, exc_info=True)
                return (user, E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR.message, [])
            return (user, E.NONE, None, infos)
        if explicit:
            return (user, E.RESOURCE_NOT_FOUND, f"{DESCRIBE_MISSING}: {user}", [])
        return None

    def _describe(self, users: list[str] | None) -> tuple[KafkaError, str | None, list[Described]]:
        """ZkAdminManager.describeUserScramCredentials: null or empty ``users`` lists every user with credentials."""
        results: dict[str, Described] = {}
        if not users:
            try:
                for sanitized, props in self._all_users():
                    described = self._credential_infos(desanitize(sanitized), props, explicit=False)
                    if described is not None:
                        results[described[0]] = described
            except FAILURES:
                log.warning("Error processing describe user SCRAM credential configs request", exc_info=True)
                return E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR.message, []
            return E.NONE, None, [results[u] for u in sorted(results, key=java_string_key)]
        illegal: set[str] = {u for u in users if not u}
        for user in illegal:
            results[user] = (user, E.RESOURCE_NOT_FOUND, EMPTY_USER, [])
        duplicated = repeated(users) - illegal
        for user in duplicated:
            results[user] = (user, E.DUPLICATE_RESOURCE, f"{DESCRIBED_TWICE}: {user}", [])
        for user in users:
            if user in illegal or user in duplicated:
                continue
            try:
                props, _version = self._read_user(user)
            except FAILURES:
                log.warning("Error processing describe user SCRAM credential configs request", exc_info=True)
                results[user] = (user, E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR.message, [])
                continue
            described = self._credential_infos(user, props, explicit=True)
            assert described is not None  # explicit users always get a result
            results[user] = described
        return E.NONE, None, [results[u] for u in dict.fromkeys(users)]

    # -- AlterUserScramCredentials ------------------------------------------------------------------------
    async def alter_user_scram_credentials(self, req: Request, conn: Connection) -> Any:
        body = req.body
        upsertions: list[Upsertion] = [
            (u.name, int(u.mechanism), int(u.iterations), bytes(u.salt), bytes(u.salted_password))
            for u in body.upsertions
        ]
        deletions: list[Deletion] = [(d.name, int(d.mechanism)) for d in body.deletions]
        result_cls = entity(req, "AlterUserScramCredentialsResult")
        response_cls = req.schema.AlterUserScramCredentialsResponse
        error: KafkaError | None = None
        if not self.node.authz.cluster(conn, AclOperation.ALTER):
            error = E.CLUSTER_AUTHORIZATION_FAILED
        else:
            try:
                outcome = await asyncio.to_thread(self._alter, upsertions, deletions)
            except RequestFailure:
                log.warning("Error altering user SCRAM credentials", exc_info=True)
                error = E.UNKNOWN_SERVER_ERROR
        if error is not None:
            # AlterUserScramCredentialsRequest.getErrorResponse: every user once, sorted, no message.
            names = sorted({n for n, _m in deletions} | {u[0] for u in upsertions}, key=java_string_key)
            outcome = [(n, error, None) for n in names]
        results = tuple(build(result_cls, user=u, error_code=code(e), error_message=m) for u, e, m in outcome)
        return build(response_cls, throttle_time=ZERO, results=results)

    def _alter(self, upsertions: Sequence[Upsertion], deletions: Sequence[Deletion]) -> list[Altered]:
        """ZkAdminManager.alterUserScramCredentials, step by step."""
        # Requests that are illegal on their own: empty name, unknown mechanism, iterations out of bounds.
        # Deletions first, then upsertions (Scala's ``toMap ++ toMap``: an upsertion's verdict wins).
        illegal: dict[str, str] = {}
        for name, mechanism in deletions:
            if not name:
                illegal[name] = EMPTY_USER
            elif mechanism not in MECHANISM_NAMES:
                illegal[name] = UNKNOWN_MECHANISM
        for name, mechanism, iterations, _salt, _salted in upsertions:
            if not name:
                illegal[name] = EMPTY_USER
            elif mechanism not in MECHANISM_NAMES:
                illegal[name] = UNKNOWN_MECHANISM
            else:
                verdict = iterations_error(MECHANISM_NAMES[mechanism], iterations)
                if verdict is not None:
                    illegal[name] = verdict
        results: list[Altered] = [
            (user, E.UNSUPPORTED_SASL_MECHANISM if msg == UNKNOWN_MECHANISM else E.UNACCEPTABLE_CREDENTIAL, msg)
            for user, msg in illegal.items()
        ]
        # The same (user, mechanism) twice, across upsertions and deletions, fails the user.
        pairs = [(u[0], u[1]) for u in upsertions if u[0] not in illegal]
        pairs += [d for d in deletions if d[0] not in illegal]
        counts = Counter(pairs)
        duplicated = list(dict.fromkeys(n for n, m in pairs if counts[(n, m)] > 1))
        results += [(user, E.DUPLICATE_RESOURCE, ALTERED_TWICE) for user in duplicated]
        candidates = list(dict.fromkeys(n for n, _m in pairs if n not in duplicated))
        try:  # outside any try in Kafka: a failure here fails the whole request
            configs = {user: self._read_user(user) for user in candidates}
        except FAILURES as exc:
            raise RequestFailure(f"cannot read the configs of {len(candidates)} users") from exc
        # Deleting a credential the user does not have.
        missing = list(
            dict.fromkeys(n for n, m in deletions if n in configs and MECHANISM_NAMES[m] not in configs[n][0])
        )
        results += [(user, E.RESOURCE_NOT_FOUND, DELETE_MISSING) for user in missing]
        to_alter = [user for user in candidates if user not in missing]
        # Kafka prepares every user's properties inside each user's try block, so one credential that cannot
        # be derived (an empty salted password: "Empty key") fails every user being altered.
        credentials: dict[tuple[str, int], str] = {}
        try:
            for name, mechanism, iterations, salt, salted in upsertions:
                if name in to_alter:
                    credential = make_credential_from_salted_password(
                        MECHANISM_NAMES[mechanism], salted, salt, iterations
                    )
                    credentials[(name, mechanism)] = credential_to_string(credential)
        except ValueError:
            log.info("Error encountered while altering user SCRAM credentials", exc_info=True)
            return results + [(user, E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR.message) for user in to_alter]
        failed: list[Altered] = []
        done: list[Altered] = []
        for user in to_alter:
            removed = [MECHANISM_NAMES[m] for n, m in deletions if n == user]
            added = {MECHANISM_NAMES[m]: text for (n, m), text in credentials.items() if n == user}
            try:
                self._persist(user, removed, added)
                done.append((user, E.NONE, None))
            except ApiFailure as exc:  # Errors.forException(e): the error's own message, not the exception's
                log.info("Error encountered while altering user SCRAM credentials: %s", exc.message)
                failed.append((user, exc.error, exc.error.message))
            except FAILURES as exc:
                log.warning("Error encountered while altering user SCRAM credentials", exc_info=True)
                # ZooKeeper away or the session lost: the retriable, in-doubt REQUEST_TIMED_OUT (store.errors).
                error = zk_error(exc) if isinstance(exc, STORE_ERRORS) else E.UNKNOWN_SERVER_ERROR
                failed.append((user, error, error.message))
        return results + failed + done

    def _persist(self, user: str, removed: Sequence[str], added: Mapping[str, str]) -> None:
        """AdminZkClient.changeConfigs(USER, ...) as a compare-and-set on the version read, retried on a race
        (the request's first read decided what to do; the write reads again in this user's turn)."""

        def compute(props: dict[str, str]) -> dict[str, str]:
            new = {k: v for k, v in props.items() if k not in removed}
            new.update(added)
            return new

        alter_user(self.node.writes(self.session), user, compute, controller_wait_s=self.node.controller_wait_s)

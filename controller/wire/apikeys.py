"""Every Kafka API this node serves, one row each: the single place an API's identity and treatment live.

A row says what ApiVersions advertises (the version range kio and our handlers both support), what the
metrics call it (Kafka's name), whether the request is refused as a whole without an operation on the
CLUSTER resource (KafkaApis' ``authorizeClusterOperation``), whether a broker forwards it to the controller
(KIP-590: Kafka 3.9's ``ApiKeys.forwardable``), whether a SASL connection may use it before it has
authenticated, how to build the whole-request error response (``AbstractRequest.getErrorResponse``) and
which handler method serves it. Routing reads ``forwardable``; the error builder is only how a failure is
answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from controller.wire import error_responses as errors
from controller.wire.codec import Request
from controller.wire.error_responses import ErrorBuilder
from zkmodel.errorcodes import KafkaError
from zkmodel.kafka_acls import AclOperation


class ApiKey(IntEnum):
    METADATA = 3
    CONTROLLED_SHUTDOWN = 7
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    ALTER_PARTITION = 56
    ENVELOPE = 58
    DESCRIBE_CLUSTER = 60


@dataclass(frozen=True)
class ApiSpec:
    key: ApiKey
    #: Kafka's name for the API (ApiKeys.name), the ``api`` label of the request metrics.
    name: str
    #: (lowest, highest) version served.
    versions: tuple[int, int]
    #: The method of a handler family (``controller.wire.handlers``) that serves it; None when the
    #: dispatcher itself does (Envelope).
    handler: str | None
    cluster_check: AclOperation | None = None
    pre_auth: bool = False
    error_response: ErrorBuilder | None = None
    #: Served from the raw frame (kio has no schema for it): ControlledShutdown.
    raw: bool = False
    #: Advertised only by a node that takes envelopes (at or above the forwarding gate).
    forwarding_only: bool = False

    @property
    def forwardable(self) -> bool:
        """Whether a broker forwards it to the active controller in an Envelope (KIP-590)."""
        return self.key in KAFKA_FORWARDABLE


#: Kafka 3.9's ``ApiKeys.forwardable`` (reference/kafka-zk-facts.md §4), APIs this node does not serve
#: included: an Envelope's inner request is checked against Kafka's list, as Kafka's controller checks it.
KAFKA_FORWARDABLE: frozenset[int] = frozenset(
    {19, 20, 30, 31, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 51, 55, 57, 64, 67, 80, 81}
)

K = ApiKey
A = AclOperation
SPECS: tuple[ApiSpec, ...] = (
    ApiSpec(K.API_VERSIONS, "ApiVersions", (0, 4), "api_versions", pre_auth=True),
    ApiSpec(K.METADATA, "Metadata", (0, 12), "metadata"),
    ApiSpec(K.CREATE_TOPICS, "CreateTopics", (2, 7), "create_topics", error_response=errors.create_topics),
    ApiSpec(K.DELETE_TOPICS, "DeleteTopics", (1, 6), "delete_topics", error_response=errors.delete_topics),
    ApiSpec(
        K.CREATE_PARTITIONS, "CreatePartitions", (0, 3), "create_partitions", error_response=errors.create_partitions
    ),
    ApiSpec(K.DESCRIBE_CLUSTER, "DescribeCluster", (0, 1), "describe_cluster"),
    ApiSpec(
        K.ELECT_LEADERS,
        "ElectLeaders",
        (0, 2),
        "elect_leaders",
        cluster_check=A.ALTER,
        error_response=errors.elect_leaders,
    ),
    # v1: KIP-860 allowReplicationFactorChange
    ApiSpec(
        K.ALTER_PARTITION_REASSIGNMENTS,
        "AlterPartitionReassignments",
        (0, 1),
        "alter_partition_reassignments",
        cluster_check=A.ALTER,
        error_response=errors.alter_reassignments,
    ),
    ApiSpec(
        K.LIST_PARTITION_REASSIGNMENTS,
        "ListPartitionReassignments",
        (0, 0),
        "list_partition_reassignments",
        cluster_check=A.DESCRIBE,
        error_response=errors.list_reassignments,
    ),
    # broker -> controller; topic ids, so IBP >= 2.8-IV0
    ApiSpec(
        K.ALTER_PARTITION,
        "AlterPartition",
        (2, 3),
        "alter_partition",
        cluster_check=A.CLUSTER_ACTION,
        error_response=errors.alter_partition,
    ),
    # broker -> controller, hand-coded (kio is generated from Kafka 4's schemas, which dropped it)
    ApiSpec(K.CONTROLLED_SHUTDOWN, "ControlledShutdown", (3, 3), "controlled_shutdown", raw=True),
    ApiSpec(K.DESCRIBE_CONFIGS, "DescribeConfigs", (1, 4), "describe_configs"),
    ApiSpec(
        K.ALTER_CONFIGS,
        "AlterConfigs",
        (0, 2),
        "alter_configs",
        error_response=errors.alter_configs("AlterConfigsResponse"),
    ),
    ApiSpec(
        K.INCREMENTAL_ALTER_CONFIGS,
        "IncrementalAlterConfigs",
        (0, 1),
        "incremental_alter_configs",
        error_response=errors.alter_configs("IncrementalAlterConfigsResponse"),
    ),
    ApiSpec(
        K.DESCRIBE_ACLS,
        "DescribeAcls",
        (1, 3),
        "describe_acls",
        cluster_check=A.DESCRIBE,
        error_response=errors.describe_acls,
    ),
    ApiSpec(
        K.CREATE_ACLS, "CreateAcls", (1, 3), "create_acls", cluster_check=A.ALTER, error_response=errors.create_acls
    ),
    ApiSpec(
        K.DELETE_ACLS, "DeleteAcls", (1, 3), "delete_acls", cluster_check=A.ALTER, error_response=errors.delete_acls
    ),
    ApiSpec(
        K.DESCRIBE_CLIENT_QUOTAS,
        "DescribeClientQuotas",
        (0, 1),
        "describe_client_quotas",
        cluster_check=A.DESCRIBE_CONFIGS,
        error_response=errors.describe_quotas,
    ),
    ApiSpec(
        K.ALTER_CLIENT_QUOTAS,
        "AlterClientQuotas",
        (0, 1),
        "alter_client_quotas",
        cluster_check=A.ALTER_CONFIGS,
        error_response=errors.alter_quotas,
    ),
    # v0 (then raw SASL tokens, no Kafka framing) as Kafka serves it: librdkafka before 2.1 (Debian's kcat) will
    # not authenticate with a broker that does not advertise it, even though it then uses v1.
    ApiSpec(K.SASL_HANDSHAKE, "SaslHandshake", (0, 1), "handshake", pre_auth=True),
    ApiSpec(K.SASL_AUTHENTICATE, "SaslAuthenticate", (0, 2), "authenticate", pre_auth=True),
    ApiSpec(
        K.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", (0, 0), "describe_user_scram_credentials"
    ),
    ApiSpec(
        K.ALTER_USER_SCRAM_CREDENTIALS,
        "AlterUserScramCredentials",
        (0, 0),
        "alter_user_scram_credentials",
        error_response=errors.alter_scram,
    ),
    ApiSpec(K.ENVELOPE, "Envelope", (0, 0), None, forwarding_only=True),
)
BY_KEY: Mapping[int, ApiSpec] = {s.key: s for s in SPECS}

#: APIs a SASL connection may use before it has authenticated.
PRE_AUTH: frozenset[int] = frozenset(s.key for s in SPECS if s.pre_auth)
#: What a node without envelopes advertises in ApiVersions.
SUPPORTED: dict[int, tuple[int, int]] = {s.key: s.versions for s in SPECS if not s.forwarding_only}


def supported_apis(*, forwarding: bool) -> dict[int, tuple[int, int]]:
    """A node's ApiVersions: the Envelope is advertised only where envelopes are taken, i.e. at or above the
    forwarding gate, so a forwarding broker knows whether the controller it found can take one."""
    return {s.key: s.versions for s in SPECS if forwarding or not s.forwarding_only}


def api_name(api_key: int) -> str:
    spec = BY_KEY.get(api_key)
    return spec.name if spec is not None else f"Api{api_key}"


def cluster_check(api_key: int) -> AclOperation | None:
    spec = BY_KEY.get(api_key)
    return spec.cluster_check if spec is not None else None


def forwardable(api_key: int) -> bool:
    """Kafka forwards it (served here or not)."""
    return api_key in KAFKA_FORWARDABLE


def has_error_response(api_key: int) -> bool:
    spec = BY_KEY.get(api_key)
    return spec is not None and spec.error_response is not None


def error_response(req: Request, error: KafkaError, message: str | None = None) -> Any:
    """The kio response to ``req`` with ``error`` everywhere; KeyError for an API without a builder."""
    spec = BY_KEY.get(req.api_key)
    if spec is None or spec.error_response is None:
        raise KeyError(req.api_key)
    return spec.error_response(req, error, message)


def bind(*families: object, raw: bool = False) -> dict[int, Any]:
    """The handlers that ``families`` (objects of ``controller.wire.handlers``) serve, by API key: each spec's
    ``handler`` method, from the family that has it (``raw``: the raw-frame ones)."""
    out: dict[int, Any] = {}
    for spec in SPECS:
        if spec.handler is None or spec.raw != raw:
            continue
        for family in families:
            method = getattr(family, spec.handler, None)
            if method is not None:
                out[spec.key] = method
                break
    return out

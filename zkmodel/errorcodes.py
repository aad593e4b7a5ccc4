"""Apache Kafka's protocol error codes as data, transcribed from ``Errors.java`` at Kafka tag 3.9.0-rc3.

Each error is a frozen :class:`KafkaError` value rather than an exception class, so the retry policy is
written once against ``error.retriable`` and the wire layer reads ``error.code``, instead of every call
site keeping its own list of exception types. Domain code raises :class:`KafkaApiError` wrapping one of
these values.

``retriable`` is true exactly when Kafka's exception class for the error extends ``RetriableException``
(directly or through e.g. ``InvalidMetadataException``). ``NONE`` has no exception, so its ``message``
and ``exception`` are empty strings.

The module is long because it is a data table: one entry for each of Kafka's error codes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KafkaError:
    """One Kafka protocol error: its wire code, enum name, retriability, default message and Java class."""

    code: int
    name: str
    retriable: bool
    message: str
    exception: str


# The table below is literal data, in code order, one constant per entry of Kafka's ``Errors`` enum.

UNKNOWN_SERVER_ERROR = KafkaError(
    code=-1,
    name="UNKNOWN_SERVER_ERROR",
    retriable=False,
    message="The server experienced an unexpected error when processing the request.",
    exception="UnknownServerException",
)

NONE = KafkaError(
    code=0,
    name="NONE",
    retriable=False,
    message="",
    exception="",
)

OFFSET_OUT_OF_RANGE = KafkaError(
    code=1,
    name="OFFSET_OUT_OF_RANGE",
    retriable=False,
    message="The requested offset is not within the range of offsets maintained by the server.",
    exception="OffsetOutOfRangeException",
)

CORRUPT_MESSAGE = KafkaError(
    code=2,
    name="CORRUPT_MESSAGE",
    retriable=True,
    message=(
        "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted "
        "topic, or is otherwise corrupt."
    ),
    exception="CorruptRecordException",
)

UNKNOWN_TOPIC_OR_PARTITION = KafkaError(
    code=3,
    name="UNKNOWN_TOPIC_OR_PARTITION",
    retriable=True,
    message="This server does not host this topic-partition.",
    exception="UnknownTopicOrPartitionException",
)

INVALID_FETCH_SIZE = KafkaError(
    code=4,
    name="INVALID_FETCH_SIZE",
    retriable=False,
    message="The requested fetch size is invalid.",
    exception="InvalidFetchSizeException",
)

LEADER_NOT_AVAILABLE = KafkaError(
    code=5,
    name="LEADER_NOT_AVAILABLE",
    retriable=True,
    message="There is no leader for this topic-partition as we are in the middle of a leadership election.",
    exception="LeaderNotAvailableException",
)

NOT_LEADER_OR_FOLLOWER = KafkaError(
    code=6,
    name="NOT_LEADER_OR_FOLLOWER",
    retriable=True,
    message=(
        "For requests intended only for the leader, this error indicates that the broker is not the current "
        "leader. For requests intended for any replica, this error indicates that the broker is not a "
        "replica of the topic partition."
    ),
    exception="NotLeaderOrFollowerException",
)

REQUEST_TIMED_OUT = KafkaError(
    code=7,
    name="REQUEST_TIMED_OUT",
    retriable=True,
    message="The request timed out.",
    exception="TimeoutException",
)

BROKER_NOT_AVAILABLE = KafkaError(
    code=8,
    name="BROKER_NOT_AVAILABLE",
    retriable=False,
    message="The broker is not available.",
    exception="BrokerNotAvailableException",
)

REPLICA_NOT_AVAILABLE = KafkaError(
    code=9,
    name="REPLICA_NOT_AVAILABLE",
    retriable=True,
    message=(
        "The replica is not available for the requested topic-partition. Produce/Fetch requests and other "
        "requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is "
        "not a replica of the topic-partition."
    ),
    exception="ReplicaNotAvailableException",
)

MESSAGE_TOO_LARGE = KafkaError(
    code=10,
    name="MESSAGE_TOO_LARGE",
    retriable=False,
    message="The request included a message larger than the max message size the server will accept.",
    exception="RecordTooLargeException",
)

STALE_CONTROLLER_EPOCH = KafkaError(
    code=11,
    name="STALE_CONTROLLER_EPOCH",
    retriable=False,
    message="The controller moved to another broker.",
    exception="ControllerMovedException",
)

OFFSET_METADATA_TOO_LARGE = KafkaError(
    code=12,
    name="OFFSET_METADATA_TOO_LARGE",
    retriable=False,
    message="The metadata field of the offset request was too large.",
    exception="OffsetMetadataTooLarge",
)

NETWORK_EXCEPTION = KafkaError(
    code=13,
    name="NETWORK_EXCEPTION",
    retriable=True,
    message="The server disconnected before a response was received.",
    exception="NetworkException",
)

COORDINATOR_LOAD_IN_PROGRESS = KafkaError(
    code=14,
    name="COORDINATOR_LOAD_IN_PROGRESS",
    retriable=True,
    message="The coordinator is loading and hence can't process requests.",
    exception="CoordinatorLoadInProgressException",
)

COORDINATOR_NOT_AVAILABLE = KafkaError(
    code=15,
    name="COORDINATOR_NOT_AVAILABLE",
    retriable=True,
    message="The coordinator is not available.",
    exception="CoordinatorNotAvailableException",
)

NOT_COORDINATOR = KafkaError(
    code=16,
    name="NOT_COORDINATOR",
    retriable=True,
    message="This is not the correct coordinator.",
    exception="NotCoordinatorException",
)

INVALID_TOPIC_EXCEPTION = KafkaError(
    code=17,
    name="INVALID_TOPIC_EXCEPTION",
    retriable=False,
    message="The request attempted to perform an operation on an invalid topic.",
    exception="InvalidTopicException",
)

RECORD_LIST_TOO_LARGE = KafkaError(
    code=18,
    name="RECORD_LIST_TOO_LARGE",
    retriable=False,
    message="The request included message batch larger than the configured segment size on the server.",
    exception="RecordBatchTooLargeException",
)

NOT_ENOUGH_REPLICAS = KafkaError(
    code=19,
    name="NOT_ENOUGH_REPLICAS",
    retriable=True,
    message="Messages are rejected since there are fewer in-sync replicas than required.",
    exception="NotEnoughReplicasException",
)

NOT_ENOUGH_REPLICAS_AFTER_APPEND = KafkaError(
    code=20,
    name="NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    retriable=True,
    message="Messages are written to the log, but to fewer in-sync replicas than required.",
    exception="NotEnoughReplicasAfterAppendException",
)

INVALID_REQUIRED_ACKS = KafkaError(
    code=21,
    name="INVALID_REQUIRED_ACKS",
    retriable=False,
    message="Produce request specified an invalid value for required acks.",
    exception="InvalidRequiredAcksException",
)

ILLEGAL_GENERATION = KafkaError(
    code=22,
    name="ILLEGAL_GENERATION",
    retriable=False,
    message="Specified group generation id is not valid.",
    exception="IllegalGenerationException",
)

INCONSISTENT_GROUP_PROTOCOL = KafkaError(
    code=23,
    name="INCONSISTENT_GROUP_PROTOCOL",
    retriable=False,
    message=(
        "The group member's supported protocols are incompatible with those of existing members or first "
        "group member tried to join with empty protocol type or empty protocol list."
    ),
    exception="InconsistentGroupProtocolException",
)

INVALID_GROUP_ID = KafkaError(
    code=24,
    name="INVALID_GROUP_ID",
    retriable=False,
    message="The configured groupId is invalid.",
    exception="InvalidGroupIdException",
)

UNKNOWN_MEMBER_ID = KafkaError(
    code=25,
    name="UNKNOWN_MEMBER_ID",
    retriable=False,
    message="The coordinator is not aware of this member.",
    exception="UnknownMemberIdException",
)

INVALID_SESSION_TIMEOUT = KafkaError(
    code=26,
    name="INVALID_SESSION_TIMEOUT",
    retriable=False,
    message=(
        "The session timeout is not within the range allowed by the broker (as configured by "
        "group.min.session.timeout.ms and group.max.session.timeout.ms)."
    ),
    exception="InvalidSessionTimeoutException",
)

REBALANCE_IN_PROGRESS = KafkaError(
    code=27,
    name="REBALANCE_IN_PROGRESS",
    retriable=False,
    message="The group is rebalancing, so a rejoin is needed.",
    exception="RebalanceInProgressException",
)

INVALID_COMMIT_OFFSET_SIZE = KafkaError(
    code=28,
    name="INVALID_COMMIT_OFFSET_SIZE",
    retriable=False,
    message="The committing offset data size is not valid.",
    exception="InvalidCommitOffsetSizeException",
)

TOPIC_AUTHORIZATION_FAILED = KafkaError(
    code=29,
    name="TOPIC_AUTHORIZATION_FAILED",
    retriable=False,
    message="Topic authorization failed.",
    exception="TopicAuthorizationException",
)

GROUP_AUTHORIZATION_FAILED = KafkaError(
    code=30,
    name="GROUP_AUTHORIZATION_FAILED",
    retriable=False,
    message="Group authorization failed.",
    exception="GroupAuthorizationException",
)

CLUSTER_AUTHORIZATION_FAILED = KafkaError(
    code=31,
    name="CLUSTER_AUTHORIZATION_FAILED",
    retriable=False,
    message="Cluster authorization failed.",
    exception="ClusterAuthorizationException",
)

INVALID_TIMESTAMP = KafkaError(
    code=32,
    name="INVALID_TIMESTAMP",
    retriable=False,
    message="The timestamp of the message is out of acceptable range.",
    exception="InvalidTimestampException",
)

UNSUPPORTED_SASL_MECHANISM = KafkaError(
    code=33,
    name="UNSUPPORTED_SASL_MECHANISM",
    retriable=False,
    message="The broker does not support the requested SASL mechanism.",
    exception="UnsupportedSaslMechanismException",
)

ILLEGAL_SASL_STATE = KafkaError(
    code=34,
    name="ILLEGAL_SASL_STATE",
    retriable=False,
    message="Request is not valid given the current SASL state.",
    exception="IllegalSaslStateException",
)

UNSUPPORTED_VERSION = KafkaError(
    code=35,
    name="UNSUPPORTED_VERSION",
    retriable=False,
    message="The version of API is not supported.",
    exception="UnsupportedVersionException",
)

TOPIC_ALREADY_EXISTS = KafkaError(
    code=36,
    name="TOPIC_ALREADY_EXISTS",
    retriable=False,
    message="Topic with this name already exists.",
    exception="TopicExistsException",
)

INVALID_PARTITIONS = KafkaError(
    code=37,
    name="INVALID_PARTITIONS",
    retriable=False,
    message="Number of partitions is below 1.",
    exception="InvalidPartitionsException",
)

INVALID_REPLICATION_FACTOR = KafkaError(
    code=38,
    name="INVALID_REPLICATION_FACTOR",
    retriable=False,
    message="Replication factor is below 1 or larger than the number of available brokers.",
    exception="InvalidReplicationFactorException",
)

INVALID_REPLICA_ASSIGNMENT = KafkaError(
    code=39,
    name="INVALID_REPLICA_ASSIGNMENT",
    retriable=False,
    message="Replica assignment is invalid.",
    exception="InvalidReplicaAssignmentException",
)

INVALID_CONFIG = KafkaError(
    code=40,
    name="INVALID_CONFIG",
    retriable=False,
    message="Configuration is invalid.",
    exception="InvalidConfigurationException",
)

NOT_CONTROLLER = KafkaError(
    code=41,
    name="NOT_CONTROLLER",
    retriable=True,
    message="This is not the correct controller for this cluster.",
    exception="NotControllerException",
)

INVALID_REQUEST = KafkaError(
    code=42,
    name="INVALID_REQUEST",
    retriable=False,
    message=(
        "This most likely occurs because of a request being malformed by the client library or the message "
        "was sent to an incompatible broker. See the broker logs for more details."
    ),
    exception="InvalidRequestException",
)

UNSUPPORTED_FOR_MESSAGE_FORMAT = KafkaError(
    code=43,
    name="UNSUPPORTED_FOR_MESSAGE_FORMAT",
    retriable=False,
    message="The message format version on the broker does not support the request.",
    exception="UnsupportedForMessageFormatException",
)

POLICY_VIOLATION = KafkaError(
    code=44,
    name="POLICY_VIOLATION",
    retriable=False,
    message="Request parameters do not satisfy the configured policy.",
    exception="PolicyViolationException",
)

OUT_OF_ORDER_SEQUENCE_NUMBER = KafkaError(
    code=45,
    name="OUT_OF_ORDER_SEQUENCE_NUMBER",
    retriable=False,
    message="The broker received an out of order sequence number.",
    exception="OutOfOrderSequenceException",
)

DUPLICATE_SEQUENCE_NUMBER = KafkaError(
    code=46,
    name="DUPLICATE_SEQUENCE_NUMBER",
    retriable=False,
    message="The broker received a duplicate sequence number.",
    exception="DuplicateSequenceException",
)

INVALID_PRODUCER_EPOCH = KafkaError(
    code=47,
    name="INVALID_PRODUCER_EPOCH",
    retriable=False,
    message="Producer attempted to produce with an old epoch.",
    exception="InvalidProducerEpochException",
)

INVALID_TXN_STATE = KafkaError(
    code=48,
    name="INVALID_TXN_STATE",
    retriable=False,
    message="The producer attempted a transactional operation in an invalid state.",
    exception="InvalidTxnStateException",
)

INVALID_PRODUCER_ID_MAPPING = KafkaError(
    code=49,
    name="INVALID_PRODUCER_ID_MAPPING",
    retriable=False,
    message=("The producer attempted to use a producer id which is not currently assigned to its transactional id."),
    exception="InvalidPidMappingException",
)

INVALID_TRANSACTION_TIMEOUT = KafkaError(
    code=50,
    name="INVALID_TRANSACTION_TIMEOUT",
    retriable=False,
    message=(
        "The transaction timeout is larger than the maximum value allowed by the broker (as configured by "
        "transaction.max.timeout.ms)."
    ),
    exception="InvalidTxnTimeoutException",
)

CONCURRENT_TRANSACTIONS = KafkaError(
    code=51,
    name="CONCURRENT_TRANSACTIONS",
    retriable=True,
    message=(
        "The producer attempted to update a transaction while another concurrent operation on the same "
        "transaction was ongoing."
    ),
    exception="ConcurrentTransactionsException",
)

TRANSACTION_COORDINATOR_FENCED = KafkaError(
    code=52,
    name="TRANSACTION_COORDINATOR_FENCED",
    retriable=False,
    message=(
        "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current "
        "coordinator for a given producer."
    ),
    exception="TransactionCoordinatorFencedException",
)

TRANSACTIONAL_ID_AUTHORIZATION_FAILED = KafkaError(
    code=53,
    name="TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    retriable=False,
    message="Transactional Id authorization failed.",
    exception="TransactionalIdAuthorizationException",
)

SECURITY_DISABLED = KafkaError(
    code=54,
    name="SECURITY_DISABLED",
    retriable=False,
    message="Security features are disabled.",
    exception="SecurityDisabledException",
)

OPERATION_NOT_ATTEMPTED = KafkaError(
    code=55,
    name="OPERATION_NOT_ATTEMPTED",
    retriable=False,
    message=(
        "The broker did not attempt to execute this operation. This may happen for batched RPCs where some "
        "operations in the batch failed, causing the broker to respond without trying the rest."
    ),
    exception="OperationNotAttemptedException",
)

KAFKA_STORAGE_ERROR = KafkaError(
    code=56,
    name="KAFKA_STORAGE_ERROR",
    retriable=True,
    message="Disk error when trying to access log file on the disk.",
    exception="KafkaStorageException",
)

LOG_DIR_NOT_FOUND = KafkaError(
    code=57,
    name="LOG_DIR_NOT_FOUND",
    retriable=False,
    message="The user-specified log directory is not found in the broker config.",
    exception="LogDirNotFoundException",
)

SASL_AUTHENTICATION_FAILED = KafkaError(
    code=58,
    name="SASL_AUTHENTICATION_FAILED",
    retriable=False,
    message="SASL Authentication failed.",
    exception="SaslAuthenticationException",
)

UNKNOWN_PRODUCER_ID = KafkaError(
    code=59,
    name="UNKNOWN_PRODUCER_ID",
    retriable=False,
    message=(
        "This exception is raised by the broker if it could not locate the producer metadata associated with "
        "the producerId in question. This could happen if, for instance, the producer's records were deleted "
        "because their retention time had elapsed. Once the last records of the producerId are removed, the "
        "producer's metadata is removed from the broker, and future appends by the producer will return this "
        "exception."
    ),
    exception="UnknownProducerIdException",
)

REASSIGNMENT_IN_PROGRESS = KafkaError(
    code=60,
    name="REASSIGNMENT_IN_PROGRESS",
    retriable=False,
    message="A partition reassignment is in progress.",
    exception="ReassignmentInProgressException",
)

DELEGATION_TOKEN_AUTH_DISABLED = KafkaError(
    code=61,
    name="DELEGATION_TOKEN_AUTH_DISABLED",
    retriable=False,
    message="Delegation Token feature is not enabled.",
    exception="DelegationTokenDisabledException",
)

DELEGATION_TOKEN_NOT_FOUND = KafkaError(
    code=62,
    name="DELEGATION_TOKEN_NOT_FOUND",
    retriable=False,
    message="Delegation Token is not found on server.",
    exception="DelegationTokenNotFoundException",
)

DELEGATION_TOKEN_OWNER_MISMATCH = KafkaError(
    code=63,
    name="DELEGATION_TOKEN_OWNER_MISMATCH",
    retriable=False,
    message="Specified Principal is not valid Owner/Renewer.",
    exception="DelegationTokenOwnerMismatchException",
)

DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = KafkaError(
    code=64,
    name="DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    retriable=False,
    message=(
        "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token "
        "authenticated channels."
    ),
    exception="UnsupportedByAuthenticationException",
)

DELEGATION_TOKEN_AUTHORIZATION_FAILED = KafkaError(
    code=65,
    name="DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    retriable=False,
    message="Delegation Token authorization failed.",
    exception="DelegationTokenAuthorizationException",
)

DELEGATION_TOKEN_EXPIRED = KafkaError(
    code=66,
    name="DELEGATION_TOKEN_EXPIRED",
    retriable=False,
    message="Delegation Token is expired.",
    exception="DelegationTokenExpiredException",
)

INVALID_PRINCIPAL_TYPE = KafkaError(
    code=67,
    name="INVALID_PRINCIPAL_TYPE",
    retriable=False,
    message="Supplied principalType is not supported.",
    exception="InvalidPrincipalTypeException",
)

NON_EMPTY_GROUP = KafkaError(
    code=68,
    name="NON_EMPTY_GROUP",
    retriable=False,
    message="The group is not empty.",
    exception="GroupNotEmptyException",
)

GROUP_ID_NOT_FOUND = KafkaError(
    code=69,
    name="GROUP_ID_NOT_FOUND",
    retriable=False,
    message="The group id does not exist.",
    exception="GroupIdNotFoundException",
)

FETCH_SESSION_ID_NOT_FOUND = KafkaError(
    code=70,
    name="FETCH_SESSION_ID_NOT_FOUND",
    retriable=True,
    message="The fetch session ID was not found.",
    exception="FetchSessionIdNotFoundException",
)

INVALID_FETCH_SESSION_EPOCH = KafkaError(
    code=71,
    name="INVALID_FETCH_SESSION_EPOCH",
    retriable=True,
    message="The fetch session epoch is invalid.",
    exception="InvalidFetchSessionEpochException",
)

LISTENER_NOT_FOUND = KafkaError(
    code=72,
    name="LISTENER_NOT_FOUND",
    retriable=True,
    message=(
        "There is no listener on the leader broker that matches the listener on which metadata request was processed."
    ),
    exception="ListenerNotFoundException",
)

TOPIC_DELETION_DISABLED = KafkaError(
    code=73,
    name="TOPIC_DELETION_DISABLED",
    retriable=False,
    message="Topic deletion is disabled.",
    exception="TopicDeletionDisabledException",
)

FENCED_LEADER_EPOCH = KafkaError(
    code=74,
    name="FENCED_LEADER_EPOCH",
    retriable=True,
    message="The leader epoch in the request is older than the epoch on the broker.",
    exception="FencedLeaderEpochException",
)

UNKNOWN_LEADER_EPOCH = KafkaError(
    code=75,
    name="UNKNOWN_LEADER_EPOCH",
    retriable=True,
    message="The leader epoch in the request is newer than the epoch on the broker.",
    exception="UnknownLeaderEpochException",
)

UNSUPPORTED_COMPRESSION_TYPE = KafkaError(
    code=76,
    name="UNSUPPORTED_COMPRESSION_TYPE",
    retriable=False,
    message="The requesting client does not support the compression type of given partition.",
    exception="UnsupportedCompressionTypeException",
)

STALE_BROKER_EPOCH = KafkaError(
    code=77,
    name="STALE_BROKER_EPOCH",
    retriable=False,
    message="Broker epoch has changed.",
    exception="StaleBrokerEpochException",
)

OFFSET_NOT_AVAILABLE = KafkaError(
    code=78,
    name="OFFSET_NOT_AVAILABLE",
    retriable=True,
    message=(
        "The leader high watermark has not caught up from a recent leader election so the offsets cannot be "
        "guaranteed to be monotonically increasing."
    ),
    exception="OffsetNotAvailableException",
)

MEMBER_ID_REQUIRED = KafkaError(
    code=79,
    name="MEMBER_ID_REQUIRED",
    retriable=False,
    message="The group member needs to have a valid member id before actually entering a consumer group.",
    exception="MemberIdRequiredException",
)

PREFERRED_LEADER_NOT_AVAILABLE = KafkaError(
    code=80,
    name="PREFERRED_LEADER_NOT_AVAILABLE",
    retriable=True,
    message="The preferred leader was not available.",
    exception="PreferredLeaderNotAvailableException",
)

GROUP_MAX_SIZE_REACHED = KafkaError(
    code=81,
    name="GROUP_MAX_SIZE_REACHED",
    retriable=False,
    message="The consumer group has reached its max size.",
    exception="GroupMaxSizeReachedException",
)

FENCED_INSTANCE_ID = KafkaError(
    code=82,
    name="FENCED_INSTANCE_ID",
    retriable=False,
    message=(
        "The broker rejected this static consumer since another consumer with the same group.instance.id has "
        "registered with a different member.id."
    ),
    exception="FencedInstanceIdException",
)

ELIGIBLE_LEADERS_NOT_AVAILABLE = KafkaError(
    code=83,
    name="ELIGIBLE_LEADERS_NOT_AVAILABLE",
    retriable=True,
    message="Eligible topic partition leaders are not available.",
    exception="EligibleLeadersNotAvailableException",
)

ELECTION_NOT_NEEDED = KafkaError(
    code=84,
    name="ELECTION_NOT_NEEDED",
    retriable=True,
    message="Leader election not needed for topic partition.",
    exception="ElectionNotNeededException",
)

NO_REASSIGNMENT_IN_PROGRESS = KafkaError(
    code=85,
    name="NO_REASSIGNMENT_IN_PROGRESS",
    retriable=False,
    message="No partition reassignment is in progress.",
    exception="NoReassignmentInProgressException",
)

GROUP_SUBSCRIBED_TO_TOPIC = KafkaError(
    code=86,
    name="GROUP_SUBSCRIBED_TO_TOPIC",
    retriable=False,
    message="Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.",
    exception="GroupSubscribedToTopicException",
)

INVALID_RECORD = KafkaError(
    code=87,
    name="INVALID_RECORD",
    retriable=False,
    message="This record has failed the validation on broker and hence will be rejected.",
    exception="InvalidRecordException",
)

UNSTABLE_OFFSET_COMMIT = KafkaError(
    code=88,
    name="UNSTABLE_OFFSET_COMMIT",
    retriable=True,
    message="There are unstable offsets that need to be cleared.",
    exception="UnstableOffsetCommitException",
)

THROTTLING_QUOTA_EXCEEDED = KafkaError(
    code=89,
    name="THROTTLING_QUOTA_EXCEEDED",
    retriable=True,
    message="The throttling quota has been exceeded.",
    exception="ThrottlingQuotaExceededException",
)

PRODUCER_FENCED = KafkaError(
    code=90,
    name="PRODUCER_FENCED",
    retriable=False,
    message="There is a newer producer with the same transactionalId which fences the current one.",
    exception="ProducerFencedException",
)

RESOURCE_NOT_FOUND = KafkaError(
    code=91,
    name="RESOURCE_NOT_FOUND",
    retriable=False,
    message="A request illegally referred to a resource that does not exist.",
    exception="ResourceNotFoundException",
)

DUPLICATE_RESOURCE = KafkaError(
    code=92,
    name="DUPLICATE_RESOURCE",
    retriable=False,
    message="A request illegally referred to the same resource twice.",
    exception="DuplicateResourceException",
)

UNACCEPTABLE_CREDENTIAL = KafkaError(
    code=93,
    name="UNACCEPTABLE_CREDENTIAL",
    retriable=False,
    message="Requested credential would not meet criteria for acceptability.",
    exception="UnacceptableCredentialException",
)

INCONSISTENT_VOTER_SET = KafkaError(
    code=94,
    name="INCONSISTENT_VOTER_SET",
    retriable=False,
    message=(
        "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters."
    ),
    exception="InconsistentVoterSetException",
)

INVALID_UPDATE_VERSION = KafkaError(
    code=95,
    name="INVALID_UPDATE_VERSION",
    retriable=False,
    message="The given update version was invalid.",
    exception="InvalidUpdateVersionException",
)

FEATURE_UPDATE_FAILED = KafkaError(
    code=96,
    name="FEATURE_UPDATE_FAILED",
    retriable=False,
    message="Unable to update finalized features due to an unexpected server error.",
    exception="FeatureUpdateFailedException",
)

PRINCIPAL_DESERIALIZATION_FAILURE = KafkaError(
    code=97,
    name="PRINCIPAL_DESERIALIZATION_FAILURE",
    retriable=False,
    message=(
        "Request principal deserialization failed during forwarding. This indicates an internal error on the "
        "broker cluster security setup."
    ),
    exception="PrincipalDeserializationException",
)

SNAPSHOT_NOT_FOUND = KafkaError(
    code=98,
    name="SNAPSHOT_NOT_FOUND",
    retriable=False,
    message="Requested snapshot was not found.",
    exception="SnapshotNotFoundException",
)

POSITION_OUT_OF_RANGE = KafkaError(
    code=99,
    name="POSITION_OUT_OF_RANGE",
    retriable=False,
    message=("Requested position is not greater than or equal to zero, and less than the size of the snapshot."),
    exception="PositionOutOfRangeException",
)

UNKNOWN_TOPIC_ID = KafkaError(
    code=100,
    name="UNKNOWN_TOPIC_ID",
    retriable=True,
    message="This server does not host this topic ID.",
    exception="UnknownTopicIdException",
)

DUPLICATE_BROKER_REGISTRATION = KafkaError(
    code=101,
    name="DUPLICATE_BROKER_REGISTRATION",
    retriable=False,
    message="This broker ID is already in use.",
    exception="DuplicateBrokerRegistrationException",
)

BROKER_ID_NOT_REGISTERED = KafkaError(
    code=102,
    name="BROKER_ID_NOT_REGISTERED",
    retriable=False,
    message="The given broker ID was not registered.",
    exception="BrokerIdNotRegisteredException",
)

INCONSISTENT_TOPIC_ID = KafkaError(
    code=103,
    name="INCONSISTENT_TOPIC_ID",
    retriable=True,
    message="The log's topic ID did not match the topic ID in the request.",
    exception="InconsistentTopicIdException",
)

INCONSISTENT_CLUSTER_ID = KafkaError(
    code=104,
    name="INCONSISTENT_CLUSTER_ID",
    retriable=False,
    message="The clusterId in the request does not match that found on the server.",
    exception="InconsistentClusterIdException",
)

TRANSACTIONAL_ID_NOT_FOUND = KafkaError(
    code=105,
    name="TRANSACTIONAL_ID_NOT_FOUND",
    retriable=False,
    message="The transactionalId could not be found.",
    exception="TransactionalIdNotFoundException",
)

FETCH_SESSION_TOPIC_ID_ERROR = KafkaError(
    code=106,
    name="FETCH_SESSION_TOPIC_ID_ERROR",
    retriable=True,
    message="The fetch session encountered inconsistent topic ID usage.",
    exception="FetchSessionTopicIdException",
)

INELIGIBLE_REPLICA = KafkaError(
    code=107,
    name="INELIGIBLE_REPLICA",
    retriable=False,
    message="The new ISR contains at least one ineligible replica.",
    exception="IneligibleReplicaException",
)

NEW_LEADER_ELECTED = KafkaError(
    code=108,
    name="NEW_LEADER_ELECTED",
    retriable=False,
    message="The AlterPartition request successfully updated the partition state but the leader has changed.",
    exception="NewLeaderElectedException",
)

OFFSET_MOVED_TO_TIERED_STORAGE = KafkaError(
    code=109,
    name="OFFSET_MOVED_TO_TIERED_STORAGE",
    retriable=False,
    message="The requested offset is moved to tiered storage.",
    exception="OffsetMovedToTieredStorageException",
)

FENCED_MEMBER_EPOCH = KafkaError(
    code=110,
    name="FENCED_MEMBER_EPOCH",
    retriable=False,
    message=(
        "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin."
    ),
    exception="FencedMemberEpochException",
)

UNRELEASED_INSTANCE_ID = KafkaError(
    code=111,
    name="UNRELEASED_INSTANCE_ID",
    retriable=False,
    message=("The instance ID is still used by another member in the consumer group. That member must leave first."),
    exception="UnreleasedInstanceIdException",
)

UNSUPPORTED_ASSIGNOR = KafkaError(
    code=112,
    name="UNSUPPORTED_ASSIGNOR",
    retriable=False,
    message="The assignor or its version range is not supported by the consumer group.",
    exception="UnsupportedAssignorException",
)

STALE_MEMBER_EPOCH = KafkaError(
    code=113,
    name="STALE_MEMBER_EPOCH",
    retriable=False,
    message=(
        "The member epoch is stale. The member must retry after receiving its updated member epoch via the "
        "ConsumerGroupHeartbeat API."
    ),
    exception="StaleMemberEpochException",
)

MISMATCHED_ENDPOINT_TYPE = KafkaError(
    code=114,
    name="MISMATCHED_ENDPOINT_TYPE",
    retriable=False,
    message="The request was sent to an endpoint of the wrong type.",
    exception="MismatchedEndpointTypeException",
)

UNSUPPORTED_ENDPOINT_TYPE = KafkaError(
    code=115,
    name="UNSUPPORTED_ENDPOINT_TYPE",
    retriable=False,
    message="This endpoint type is not supported yet.",
    exception="UnsupportedEndpointTypeException",
)

UNKNOWN_CONTROLLER_ID = KafkaError(
    code=116,
    name="UNKNOWN_CONTROLLER_ID",
    retriable=False,
    message="This controller ID is not known.",
    exception="UnknownControllerIdException",
)

UNKNOWN_SUBSCRIPTION_ID = KafkaError(
    code=117,
    name="UNKNOWN_SUBSCRIPTION_ID",
    retriable=False,
    message="Client sent a push telemetry request with an invalid or outdated subscription ID.",
    exception="UnknownSubscriptionIdException",
)

TELEMETRY_TOO_LARGE = KafkaError(
    code=118,
    name="TELEMETRY_TOO_LARGE",
    retriable=False,
    message="Client sent a push telemetry request larger than the maximum size the broker will accept.",
    exception="TelemetryTooLargeException",
)

INVALID_REGISTRATION = KafkaError(
    code=119,
    name="INVALID_REGISTRATION",
    retriable=False,
    message="The controller has considered the broker registration to be invalid.",
    exception="InvalidRegistrationException",
)

TRANSACTION_ABORTABLE = KafkaError(
    code=120,
    name="TRANSACTION_ABORTABLE",
    retriable=False,
    message=(
        "The server encountered an error with the transaction. The client can abort the transaction to "
        "continue using this transactional ID."
    ),
    exception="TransactionAbortableException",
)

INVALID_RECORD_STATE = KafkaError(
    code=121,
    name="INVALID_RECORD_STATE",
    retriable=False,
    message="The record state is invalid. The acknowledgement of delivery could not be completed.",
    exception="InvalidRecordStateException",
)

SHARE_SESSION_NOT_FOUND = KafkaError(
    code=122,
    name="SHARE_SESSION_NOT_FOUND",
    retriable=True,
    message="The share session was not found.",
    exception="ShareSessionNotFoundException",
)

INVALID_SHARE_SESSION_EPOCH = KafkaError(
    code=123,
    name="INVALID_SHARE_SESSION_EPOCH",
    retriable=True,
    message="The share session epoch is invalid.",
    exception="InvalidShareSessionEpochException",
)

FENCED_STATE_EPOCH = KafkaError(
    code=124,
    name="FENCED_STATE_EPOCH",
    retriable=False,
    message="The share coordinator rejected the request because the share-group state epoch did not match.",
    exception="FencedStateEpochException",
)

INVALID_VOTER_KEY = KafkaError(
    code=125,
    name="INVALID_VOTER_KEY",
    retriable=False,
    message="The voter key doesn't match the receiving replica's key.",
    exception="InvalidVoterKeyException",
)

DUPLICATE_VOTER = KafkaError(
    code=126,
    name="DUPLICATE_VOTER",
    retriable=False,
    message="The voter is already part of the set of voters.",
    exception="DuplicateVoterException",
)

VOTER_NOT_FOUND = KafkaError(
    code=127,
    name="VOTER_NOT_FOUND",
    retriable=False,
    message="The voter is not part of the set of voters.",
    exception="VoterNotFoundException",
)


ALL: tuple[KafkaError, ...] = (
    UNKNOWN_SERVER_ERROR,
    NONE,
    OFFSET_OUT_OF_RANGE,
    CORRUPT_MESSAGE,
    UNKNOWN_TOPIC_OR_PARTITION,
    INVALID_FETCH_SIZE,
    LEADER_NOT_AVAILABLE,
    NOT_LEADER_OR_FOLLOWER,
    REQUEST_TIMED_OUT,
    BROKER_NOT_AVAILABLE,
    REPLICA_NOT_AVAILABLE,
    MESSAGE_TOO_LARGE,
    STALE_CONTROLLER_EPOCH,
    OFFSET_METADATA_TOO_LARGE,
    NETWORK_EXCEPTION,
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR,
    INVALID_TOPIC_EXCEPTION,
    RECORD_LIST_TOO_LARGE,
    NOT_ENOUGH_REPLICAS,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    INVALID_REQUIRED_ACKS,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_GROUP_ID,
    UNKNOWN_MEMBER_ID,
    INVALID_SESSION_TIMEOUT,
    REBALANCE_IN_PROGRESS,
    INVALID_COMMIT_OFFSET_SIZE,
    TOPIC_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED,
    CLUSTER_AUTHORIZATION_FAILED,
    INVALID_TIMESTAMP,
    UNSUPPORTED_SASL_MECHANISM,
    ILLEGAL_SASL_STATE,
    UNSUPPORTED_VERSION,
    TOPIC_ALREADY_EXISTS,
    INVALID_PARTITIONS,
    INVALID_REPLICATION_FACTOR,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_CONFIG,
    NOT_CONTROLLER,
    INVALID_REQUEST,
    UNSUPPORTED_FOR_MESSAGE_FORMAT,
    POLICY_VIOLATION,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    DUPLICATE_SEQUENCE_NUMBER,
    INVALID_PRODUCER_EPOCH,
    INVALID_TXN_STATE,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TRANSACTION_TIMEOUT,
    CONCURRENT_TRANSACTIONS,
    TRANSACTION_COORDINATOR_FENCED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    SECURITY_DISABLED,
    OPERATION_NOT_ATTEMPTED,
    KAFKA_STORAGE_ERROR,
    LOG_DIR_NOT_FOUND,
    SASL_AUTHENTICATION_FAILED,
    UNKNOWN_PRODUCER_ID,
    REASSIGNMENT_IN_PROGRESS,
    DELEGATION_TOKEN_AUTH_DISABLED,
    DELEGATION_TOKEN_NOT_FOUND,
    DELEGATION_TOKEN_OWNER_MISMATCH,
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
    DELEGATION_TOKEN_AUTHORIZATION_FAILED,
    DELEGATION_TOKEN_EXPIRED,
    INVALID_PRINCIPAL_TYPE,
    NON_EMPTY_GROUP,
    GROUP_ID_NOT_FOUND,
    FETCH_SESSION_ID_NOT_FOUND,
    INVALID_FETCH_SESSION_EPOCH,
    LISTENER_NOT_FOUND,
    TOPIC_DELETION_DISABLED,
    FENCED_LEADER_EPOCH,
    UNKNOWN_LEADER_EPOCH,
    UNSUPPORTED_COMPRESSION_TYPE,
    STALE_BROKER_EPOCH,
    OFFSET_NOT_AVAILABLE,
    MEMBER_ID_REQUIRED,
    PREFERRED_LEADER_NOT_AVAILABLE,
    GROUP_MAX_SIZE_REACHED,
    FENCED_INSTANCE_ID,
    ELIGIBLE_LEADERS_NOT_AVAILABLE,
    ELECTION_NOT_NEEDED,
    NO_REASSIGNMENT_IN_PROGRESS,
    GROUP_SUBSCRIBED_TO_TOPIC,
    INVALID_RECORD,
    UNSTABLE_OFFSET_COMMIT,
    THROTTLING_QUOTA_EXCEEDED,
    PRODUCER_FENCED,
    RESOURCE_NOT_FOUND,
    DUPLICATE_RESOURCE,
    UNACCEPTABLE_CREDENTIAL,
    INCONSISTENT_VOTER_SET,
    INVALID_UPDATE_VERSION,
    FEATURE_UPDATE_FAILED,
    PRINCIPAL_DESERIALIZATION_FAILURE,
    SNAPSHOT_NOT_FOUND,
    POSITION_OUT_OF_RANGE,
    UNKNOWN_TOPIC_ID,
    DUPLICATE_BROKER_REGISTRATION,
    BROKER_ID_NOT_REGISTERED,
    INCONSISTENT_TOPIC_ID,
    INCONSISTENT_CLUSTER_ID,
    TRANSACTIONAL_ID_NOT_FOUND,
    FETCH_SESSION_TOPIC_ID_ERROR,
    INELIGIBLE_REPLICA,
    NEW_LEADER_ELECTED,
    OFFSET_MOVED_TO_TIERED_STORAGE,
    FENCED_MEMBER_EPOCH,
    UNRELEASED_INSTANCE_ID,
    UNSUPPORTED_ASSIGNOR,
    STALE_MEMBER_EPOCH,
    MISMATCHED_ENDPOINT_TYPE,
    UNSUPPORTED_ENDPOINT_TYPE,
    UNKNOWN_CONTROLLER_ID,
    UNKNOWN_SUBSCRIPTION_ID,
    TELEMETRY_TOO_LARGE,
    INVALID_REGISTRATION,
    TRANSACTION_ABORTABLE,
    INVALID_RECORD_STATE,
    SHARE_SESSION_NOT_FOUND,
    INVALID_SHARE_SESSION_EPOCH,
    FENCED_STATE_EPOCH,
    INVALID_VOTER_KEY,
    DUPLICATE_VOTER,
    VOTER_NOT_FOUND,
)
"""Every Kafka error, in code order (``UNKNOWN_SERVER_ERROR`` = -1 first)."""

_BY_CODE: dict[int, KafkaError] = {error.code: error for error in ALL}
_BY_NAME: dict[str, KafkaError] = {error.name: error for error in ALL}


def by_code(code: int) -> KafkaError:
    """Return the error with wire code ``code``; raise ``KeyError`` if Kafka defines no such code."""
    try:
        return _BY_CODE[code]
    except KeyError:
        raise KeyError(f"unknown Kafka error code: {code}") from None


def by_name(name: str) -> KafkaError:
    """Return the error whose Kafka enum name is ``name`` (case-insensitive); raise ``KeyError`` if none."""
    try:
        return _BY_NAME[name.upper()]
    except KeyError:
        raise KeyError(f"unknown Kafka error name: {name!r}") from None


class KafkaApiError(Exception):
    """An exception carrying a :class:`KafkaError`, optionally with a message overriding Kafka's default.

    Retry policy reads ``.retriable`` and the wire layer reads ``.code``; ``str()`` gives
    ``"NAME (code): message"``.
    """

    error: KafkaError
    message: str

    def __init__(self, error: KafkaError, message: str | None = None) -> None:
        if error.code == NONE.code:
            raise ValueError("NONE (0) means success and cannot be raised as an error")
        super().__init__(error, message)
        self.error = error
        self.message = error.message if message is None else message

    @property
    def code(self) -> int:
        """The Kafka wire error code."""
        return self.error.code

    @property
    def retriable(self) -> bool:
        """Whether Kafka classifies the error as retriable."""
        return self.error.retriable

    def __str__(self) -> str:
        return f"{self.error.name} ({self.error.code}): {self.message}"

"""Sequential notification znodes that pre-AlterPartition brokers write for the controller to consume."""

from collections.abc import Sequence
from dataclasses import dataclass

from zkmodel.admin import TopicPartition, encode_partition_list
from zkmodel.errors import ZnodeFormatError
from zkmodel.fields import check_version, dumps, get_int, get_list, get_str, parse_object

#: LogDirUtils.LogDirFailureEvent, the only event Kafka defines.
LOG_DIR_FAILURE_EVENT = 1


@dataclass(frozen=True)
class IsrChangeNotification:
    partitions: Sequence[TopicPartition]

    def encode(self) -> bytes:
        return encode_partition_list(self.partitions)

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "IsrChangeNotification":
        obj = parse_object(path, data)
        check_version(path, obj, (1,))
        out = []
        for entry in get_list(path, obj, "partitions"):
            if not isinstance(entry, dict):
                raise ZnodeFormatError(path, "'partitions' entries must be objects")
            out.append(TopicPartition(get_str(path, entry, "topic"), get_int(path, entry, "partition", minimum=0)))
        return cls(tuple(out))


@dataclass(frozen=True)
class LogDirEventNotification:
    broker: int
    event: int = LOG_DIR_FAILURE_EVENT

    def encode(self) -> bytes:
        return dumps({"version": 1, "broker": self.broker, "event": self.event})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "LogDirEventNotification":
        obj = parse_object(path, data)
        check_version(path, obj, (1,))
        event = get_int(path, obj, "event")
        if event != LOG_DIR_FAILURE_EVENT:
            raise ZnodeFormatError(path, f"unknown log dir event {event}")
        return cls(get_int(path, obj, "broker", minimum=0), event)

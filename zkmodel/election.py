"""``/controller`` and ``/controller_epoch``: who the controller is, and the epoch that fences it."""

from dataclasses import dataclass

from zkmodel.errors import ZnodeFormatError
from zkmodel.fields import check_version, dumps, get_int, get_long_str, parse_object, utf8

#: KafkaController.InitialControllerEpoch: ``/controller_epoch`` is created as "0" when absent.
INITIAL_CONTROLLER_EPOCH = 0


@dataclass(frozen=True)
class ControllerZnode:
    """The ephemeral ``/controller`` payload; v1 up to Kafka 3.3, v2 (with ``kraftControllerEpoch``) from 3.4."""

    broker_id: int
    timestamp: int
    version: int = 2
    kraft_controller_epoch: int = -1

    def encode(self) -> bytes:
        # Map3 / Map4 keep insertion order.
        if self.version == 1:
            return dumps({"version": 1, "brokerid": self.broker_id, "timestamp": str(self.timestamp)})
        return dumps(
            {
                "version": 2,
                "brokerid": self.broker_id,
                "timestamp": str(self.timestamp),
                "kraftControllerEpoch": self.kraft_controller_epoch,
            }
        )

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "ControllerZnode":
        obj = parse_object(path, data)
        version = check_version(path, obj, (1, 2))
        return cls(
            broker_id=get_int(path, obj, "brokerid", minimum=0),
            timestamp=get_long_str(path, obj, "timestamp") if "timestamp" in obj else -1,
            version=version,
            kraft_controller_epoch=get_int(path, obj, "kraftControllerEpoch", default=-1) if version >= 2 else -1,
        )


def encode_controller_epoch(epoch: int) -> bytes:
    """Plain decimal text, not JSON."""
    return str(epoch).encode()


def decode_controller_epoch(path: str, data: bytes | None) -> int:
    text = utf8(path, data)
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        raise ZnodeFormatError(path, f"controller epoch must be a non-negative decimal integer, got {text!r}")
    value = int(text)
    if value >= 2**31:
        raise ZnodeFormatError(path, f"controller epoch {value} is out of the 32-bit range")
    return value

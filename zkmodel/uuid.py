"""Kafka's ``Uuid``: 16 bytes shown as 22 characters of unpadded base64url (topic ids, cluster ids)."""

import base64
import uuid as _uuid

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
_RESERVED = frozenset({ZERO_UUID, METADATA_TOPIC_ID})


def is_valid_uuid(text: str) -> bool:
    """True for a string Kafka's ``Uuid.fromString`` accepts (exactly 16 bytes once decoded)."""
    if len(text) != 22 or not text.isascii():
        return False
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        return False
    return len(raw) == 16 and base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == text


def random_uuid() -> str:
    """A new id as ``Uuid.randomUuid`` makes it: never reserved and never starting with '-'.

    The dash rule exists because ids are passed on command lines, where a leading '-' reads as a flag.
    """
    while True:
        text = base64.urlsafe_b64encode(_uuid.uuid4().bytes).rstrip(b"=").decode()
        if text not in _RESERVED and not text.startswith("-"):
            return text

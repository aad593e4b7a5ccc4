"""The one exception a decoder may raise for foreign or corrupt data."""

#: The longest reason kept whole. A reason quotes the offending value, and a foreign znode can be a megabyte
#: of it (a replica list of 200,000 ids); its log line must stay one an operator can read.
MAX_REASON = 600
_HEAD, _TAIL = 400, 150
#: Line breaks and other control characters a quoted value (a topic name in a reassignment request) may
#: carry, written as escapes: a reason is one log line, and data must not be able to start another.
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, 0x85)} | {0x2028: "\\u2028", 0x2029: "\\u2029"}


class ZnodeFormatError(ValueError):
    """A znode's bytes are not valid for its path.

    Carries the path and a human reason so an operator can find the bad node; decoders never let any
    other exception escape on bad input, so callers need exactly one ``except``. The reason is one line
    (control characters escaped); one longer than :data:`MAX_REASON` keeps its beginning and its end (what
    was wrong, and usually why) around a note of how much was left out.
    """

    def __init__(self, path: str, reason: str) -> None:
        reason = reason.translate(_ESCAPES)
        if len(reason) > MAX_REASON:
            elided = len(reason) - _HEAD - _TAIL
            reason = f"{reason[:_HEAD]} ... [{elided:,} characters elided] ... {reason[-_TAIL:]}"
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

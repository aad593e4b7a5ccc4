"""The one exception a decoder may raise for foreign or corrupt data."""


class ZnodeFormatError(ValueError):
    """A znode's bytes are not valid for its path.

    Carries the path and a human reason so an operator can find the bad node; decoders never let any
    other exception escape on bad input, so callers need exactly one ``except``.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

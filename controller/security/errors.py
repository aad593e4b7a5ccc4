"""The one error type SASL servers raise, shared by the PLAIN and SCRAM mechanisms."""

from __future__ import annotations


class SaslAuthenticationError(Exception):
    """Authentication failed; ``message`` is Kafka's exception message for the same failure.

    Kafka distinguishes ``SaslAuthenticationException`` (its message goes to the client verbatim) from a
    plain ``SaslException`` (logged only; the client gets a generic text so it cannot, say, probe which users
    exist). ``hidden`` marks the second kind and :meth:`client_message` yields what Kafka would send.
    """

    def __init__(self, message: str, *, hidden: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.hidden = hidden

    def client_message(self, mechanism: str, *, reauthentication: bool = False) -> str:
        """The SaslAuthenticate error message Kafka's SaslServerAuthenticator sends for this failure."""
        if not self.hidden:
            return self.message
        phase = "re-authentication" if reauthentication else "authentication"
        return f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}"

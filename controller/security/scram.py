"""SASL/SCRAM-SHA-256 and -512 (RFC 5802/7677) as Kafka implements them, server and client side.

Kafka's deviations from a textbook SCRAM are kept on purpose, since brokers and clients on the other end are
Kafka's: the password is plain UTF-8 (``ScramFormatter.normalize`` does no SASLprep), salts and nonces are
the UTF-8 of a random 130-bit number in base 36, messages are matched against ``ScramMessages``' regular
expressions, the server rebuilds the auth message from the parsed fields, the client nonce check is
``endsWith``, and failures carry Kafka's messages. Credentials use ``ScramCredentialUtils``' string format,
which is what ZooKeeper-mode brokers store under ``/config/users/<user>``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from controller.security.errors import SaslAuthenticationError
from zkmodel.java import java_parse_integer

#: mechanism name -> (hashlib name, minimum iterations), from Kafka's ScramMechanism enum.
MECHANISMS: Mapping[str, tuple[str, int]] = MappingProxyType(
    {"SCRAM-SHA-256": ("sha256", 4096), "SCRAM-SHA-512": ("sha512", 4096)}
)
#: The most iterations AlterUserScramCredentials accepts (ScramMechanism.maxIterations, ZkAdminManager).
MAX_ITERATIONS = 16384
#: The mechanism's type byte in AlterUserScramCredentials / DescribeUserScramCredentials.
MECHANISM_TYPES: Mapping[str, int] = MappingProxyType({"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2})

_GS2_HEADER = "n,,"  # no channel binding, no authzid: what every Kafka client sends


def _hash_and_min(mechanism: str) -> tuple[str, int]:
    try:
        return MECHANISMS[mechanism]
    except KeyError:
        supported = ", ".join(MECHANISMS)
        raise ValueError(
            f"Requested mechanism '{mechanism}' is not supported. Supported mechanisms are '[{supported}]'."
        ) from None


def _enum_name(mechanism: str) -> str:
    """How Kafka prints a ScramMechanism in messages (the Java enum constant, e.g. SCRAM_SHA_256)."""
    return mechanism.replace("-", "_")


def iterations_error(mechanism: str, iterations: int) -> str | None:
    """Kafka's AlterUserScramCredentials verdict on an iteration count: None, or the error message."""
    _, minimum = _hash_and_min(mechanism)
    if iterations < minimum:
        return "Too few iterations"
    if iterations > MAX_ITERATIONS:
        return "Too many iterations"
    return None


@dataclass(frozen=True)
class ScramCredential:
    """What the server stores per user and mechanism; keys stay out of ``repr`` so logs never carry them."""

    salt: bytes
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


def secure_random_string() -> str:
    """``ScramFormatter.secureRandomString``: a random 130-bit number in lower-case base 36."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, digit = divmod(value, 36)
        out = digits[digit] + out
        if not value:
            return out


def _hmac(mechanism: str, key: bytes, message: bytes) -> bytes:
    if not key:
        raise ValueError("Empty key")  # javax.crypto.spec.SecretKeySpec refuses empty keys
    return hmac.digest(key, message, _hash_and_min(mechanism)[0])


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword = Hi(UTF-8(password), salt, i), which is PBKDF2-HMAC with one hash-sized block."""
    hash_name, _ = _hash_and_min(mechanism)
    raw = password.encode("utf-8")
    if not raw:
        raise ValueError("Empty key")  # Kafka's Hi() fails the same way for an empty password
    if iterations < 1:
        raise ValueError(f"Invalid iterations {iterations}: Hi() needs at least 1")
    return hashlib.pbkdf2_hmac(hash_name, raw, salt, iterations)


def make_credential_from_salted_password(
    mechanism: str, salted_password: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """``ScramFormatter.generateCredential(salt, saltedPassword, i)``, as AlterUserScramCredentials needs."""
    hash_name, _ = _hash_and_min(mechanism)
    client_key = _hmac(mechanism, salted_password, b"Client Key")
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = _hmac(mechanism, salted_password, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def make_credential(mechanism: str, password: str, iterations: int, salt: bytes | None = None) -> ScramCredential:
    """``ScramFormatter.generateCredential(password, iterations)``; the salt defaults to Kafka's random salt.

    Iteration bounds are not enforced here (Kafka does that where requests arrive; see :func:`iterations_error`).
    """
    if salt is None:
        salt = secure_random_string().encode("ascii")
    return make_credential_from_salted_password(
        mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
    )


# --- ScramCredentialUtils string format -------------------------------------------------------------------

_CREDENTIAL_KEYS = ("salt", "stored_key", "server_key", "iterations")
_B64_ALPHABET = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


def _b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _java_b64decode(text: str) -> bytes:
    """``java.util.Base64.getDecoder().decode(String)``: padding optional, nothing after it, Java's messages."""
    out = bytearray()
    bits, shift, pos = 0, 18, 0
    while pos < len(text):
        ch = text[pos]
        pos += 1
        value = _B64_ALPHABET.get(ch)
        if value is None:
            if ch == "=":
                if (shift == 6 and (pos == len(text) or text[pos] != "=")) or shift == 18:
                    raise ValueError("Input byte array has wrong 4-byte ending unit")
                pos += 1 if shift == 6 else 0
                break
            # Java maps the String to ISO-8859-1 bytes ('?' if unmappable) and prints the signed byte in hex.
            code = ord(ch) if ord(ch) < 256 else ord("?")
            signed = code - 256 if code >= 128 else code
            raise ValueError(f"Illegal base64 character {'-' if signed < 0 else ''}{abs(signed):x}")
        bits |= value << shift
        shift -= 6
        if shift < 0:
            out += bits.to_bytes(3, "big")
            bits, shift = 0, 18
    if shift == 6:
        out.append(bits >> 16)
    elif shift == 0:
        out += (bits >> 8).to_bytes(2, "big")
    elif shift == 12:
        raise ValueError("Last unit does not have enough valid bits")
    if pos < len(text):
        raise ValueError(f"Input byte array has incorrect ending byte at {pos}")
    return bytes(out)


def _java_parse_int(text: str) -> int:
    """``Integer.parseInt``: optional sign, decimal digits, 32-bit range; no spaces or underscores."""
    value = java_parse_integer(text, 32)
    if value is not None:
        return value
    raise ValueError(f'For input string: "{text}"')


def credential_to_string(credential: ScramCredential) -> str:
    """``ScramCredentialUtils.credentialToString``: ``salt=..,stored_key=..,server_key=..,iterations=..``."""
    return (
        f"salt={_b64encode(credential.salt)},stored_key={_b64encode(credential.stored_key)},"
        f"server_key={_b64encode(credential.server_key)},iterations={credential.iterations}"
    )


def credential_from_string(text: str) -> ScramCredential:
    """``ScramCredentialUtils.credentialFromString``: exactly the four keys, any order, Java's parsing rules."""
    tokens = text.split(",")
    while len(tokens) > 1 and tokens[-1] == "":  # Java's String.split drops trailing empty strings
        tokens.pop()
    if tokens == [""] and text:
        tokens = []
    props: dict[str, str] = {}
    for token in tokens:
        index = token.find("=")
        if index <= 0:
            raise ValueError(f"Credentials not valid: {text}")
        props[token[:index]] = token[index + 1 :]
    if set(props) != set(_CREDENTIAL_KEYS):
        raise ValueError(f"Credentials not valid: {text}")
    decoded: dict[str, bytes] = {}
    for key in ("salt", "stored_key", "server_key"):
        try:
            decoded[key] = _java_b64decode(props[key])
        except ValueError as exc:
            raise ValueError(f"Credentials not valid: {key}: {exc}") from None
    try:
        iterations = _java_parse_int(props["iterations"])
    except ValueError as exc:
        raise ValueError(f"Credentials not valid: iterations: {exc}") from None
    return ScramCredential(decoded["salt"], decoded["stored_key"], decoded["server_key"], iterations)


# --- usernames ----------------------------------------------------------------------------------------------


def sasl_name(username: str) -> str:
    """``ScramFormatter.saslName``: escape ``=`` then ``,`` for the ``n=`` attribute."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_from_sasl_name(name: str) -> str:
    """``ScramFormatter.username``: undo :func:`sasl_name`; any other ``=`` is an error."""
    username = name.replace("=2C", ",")
    if "=" in username.replace("=3D", ""):
        raise ValueError(f"Invalid username: {name}")
    return username.replace("=3D", "=")


# --- ScramMessages' patterns (Java's [a&&[^b]] classes spelled out) ---------------------------------------

_ALPHA = r"[A-Za-z]+"
_VALUE_SAFE = r"[\x01-\x2B\x2D-\x3C\x3E-\x7F]+"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_B64C = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64C}{{4}})*(?:{_B64C}{{3}}=|{_B64C}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,{_ALPHA}={_VALUE})*"

_CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,){_RESERVED}"
    rf"n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})"
)
_SERVER_FIRST = re.compile(
    rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+){_EXTENSIONS}"
)
_CLIENT_FINAL = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})")
_SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_VALUE_SAFE}))|(?:v=(?P<signature>{_BASE64})){_EXTENSIONS}")

_TOKEN_AUTH = "tokenauth"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")  # as Java's new String(bytes, UTF_8)


def _parse_extensions(text: str) -> dict[str, str]:
    """``Utils.parseMap(ext, "=", ",")`` over the already-validated ``,k=v`` list; a repeated key keeps the last."""
    pairs = (item.split("=", 1) for item in text[1:].split(",")) if text else ()
    return {k: v for k, v in pairs}


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


class ScramServer:
    """One broker-side SCRAM exchange: :meth:`evaluate` the client-first, then the client-final message.

    ``hidden`` on the raised SaslAuthenticationError follows Kafka (only the authzid mismatch is shown to
    the client verbatim). After success ``complete`` is True and ``username`` is the authenticated user.
    """

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], ScramCredential | None],
        *,
        nonce: str | None = None,
    ) -> None:
        """``lookup`` maps a username to its credential for this mechanism; ``nonce`` fixes the server nonce."""
        _, self._min_iterations = _hash_and_min(mechanism)
        self.mechanism = mechanism
        self._lookup = lookup
        self._server_nonce = nonce
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self.username: str | None = None
        self._pending_username = ""
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    def evaluate(self, data: bytes) -> bytes:
        """Answer one client message; any failure raises SaslAuthenticationError and ends the exchange."""
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                return self._client_first(data)
            if self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                return self._client_final(data)
            raise SaslAuthenticationError(f"Unexpected challenge in Sasl server state {self._state}")
        except SaslAuthenticationError:
            self._credential = None
            self._state = "FAILED"
            raise

    def _client_first(self, data: bytes) -> bytes:
        text = _decode(data)
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslAuthenticationError(f"Invalid SCRAM client first message format: {text}", hidden=True)
        extensions = match["extensions"]
        server_nonce = self._server_nonce if self._server_nonce is not None else secure_random_string()
        try:
            username = username_from_sasl_name(match["saslname"])
            if _parse_extensions(extensions).get(_TOKEN_AUTH, "").lower() == "true":
                # Kafka looks the name up as a delegation token id; this control plane issues no tokens, which
                # is Kafka's answer when the token is unknown.
                raise SaslAuthenticationError(f"Token Authentication failed: Invalid tokenId : {username}", hidden=True)
            credential = self._lookup(username)
        except SaslAuthenticationError:
            raise
        except Exception as exc:  # Kafka wraps any lookup failure the same way
            raise SaslAuthenticationError(
                "Authentication failed: Credentials could not be obtained", hidden=True
            ) from exc
        if credential is None:
            raise SaslAuthenticationError("Authentication failed: Invalid user credentials", hidden=True)
        authzid = match["authzid"] or ""
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if credential.iterations < self._min_iterations:
            raise SaslAuthenticationError(
                f"Iterations {credential.iterations} is less than the minimum {self._min_iterations} "
                f"for {_enum_name(self.mechanism)}",
                hidden=True,
            )
        self._credential = credential
        self._pending_username = username
        self._gs2_header = match["gs2"]
        # Kafka rebuilds the bare message from its fields, dropping a reserved "m=" attribute.
        self._client_first_bare = f"n={match['saslname']},r={match['nonce']}{extensions}"
        self._nonce = match["nonce"] + server_nonce
        self._server_first = f"r={self._nonce},s={_b64encode(credential.salt)},i={credential.iterations}"
        self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
        return self._server_first.encode("utf-8")

    def _client_final(self, data: bytes) -> bytes:
        credential = self._credential
        assert credential is not None  # set together with the state
        text = _decode(data)
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise SaslAuthenticationError(f"Invalid SCRAM client final message format: {text}", hidden=True)
        channel = _java_b64decode(match["channel"])
        proof = _java_b64decode(match["proof"])
        nonce = match["nonce"]
        if not nonce.endswith(self._nonce):
            raise SaslAuthenticationError("Invalid client nonce in the final client message.", hidden=True)
        if channel != self._gs2_header.encode("utf-8"):
            # Kafka does not look at the channel binding (it only feeds the proof); RFC 5802 requires it to
            # echo the GS2 header, so "biws" for every client that sends "n,,".
            raise SaslAuthenticationError("Invalid channel binding in the final client message.", hidden=True)
        auth_message = f"{self._client_first_bare},{self._server_first},c={_b64encode(channel)},r={nonce}"
        auth_bytes = auth_message.encode("utf-8")
        try:
            client_signature = _hmac(self.mechanism, credential.stored_key, auth_bytes)
            server_signature = _hmac(self.mechanism, credential.server_key, auth_bytes)
        except ValueError as exc:  # an empty stored key: Kafka's Mac.init fails the same way
            raise SaslAuthenticationError(f"Sasl client verification failed: {exc}", hidden=True) from None
        if len(proof) != len(client_signature):  # Kafka's xor() throws here; the outcome is a failed login
            raise SaslAuthenticationError("Invalid client credentials", hidden=True)
        hash_name, _ = _hash_and_min(self.mechanism)
        computed_stored_key = hashlib.new(hash_name, _xor(client_signature, proof)).digest()
        if not hmac.compare_digest(computed_stored_key, credential.stored_key):
            raise SaslAuthenticationError("Invalid client credentials", hidden=True)
        self._credential = None
        self.username = self._pending_username
        self._state = "COMPLETE"
        return b"v=" + _b64encode(server_signature).encode("ascii")


class ScramClient:
    """The client side, as Kafka's ScramSaslClient: for inter-broker SASL/SCRAM connections (and tests)."""

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: str | None = None) -> None:
        """``nonce`` fixes the client nonce (tests); by default it is random, like Kafka's."""
        _, self._min_iterations = _hash_and_min(mechanism)
        if not password:
            raise ValueError("Empty key: SCRAM needs a non-empty password")  # Kafka's Hi() fails on it later
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._nonce = nonce if nonce is not None else secure_random_string()
        self._client_first_bare = f"n={sasl_name(username)},r={self._nonce}"
        self._auth_message = b""
        self._salted_password = b""

    def first(self) -> bytes:
        """The client-first message (``n,,n=<user>,r=<nonce>``)."""
        return (_GS2_HEADER + self._client_first_bare).encode("utf-8")

    def final(self, server_first: bytes) -> bytes:
        """Check the server-first message and answer with the client-final message carrying the proof."""
        text = _decode(server_first)
        match = _SERVER_FIRST.fullmatch(text)
        if match is None:
            raise SaslAuthenticationError(f"Invalid SCRAM server first message format: {text}")
        try:
            iterations = _java_parse_int(match["iterations"])
        except ValueError:
            raise SaslAuthenticationError("Invalid SCRAM server first message format: invalid iterations") from None
        if iterations <= 0:
            raise SaslAuthenticationError(f"Invalid SCRAM server first message format: invalid iterations {iterations}")
        nonce = match["nonce"]
        salt = _java_b64decode(match["salt"])
        if not nonce.startswith(self._nonce):
            raise SaslAuthenticationError("Invalid server nonce: does not start with client nonce")
        if iterations < self._min_iterations:
            raise SaslAuthenticationError(
                f"Requested iterations {iterations} is less than the minimum {self._min_iterations} "
                f"for {_enum_name(self.mechanism)}"
            )
        hash_name, _ = _hash_and_min(self.mechanism)
        self._salted_password = salted_password(self.mechanism, self._password, salt, iterations)
        without_proof = f"c={_b64encode(_GS2_HEADER.encode('ascii'))},r={nonce}"
        # Like Kafka, the auth message uses the server-first message rebuilt from its parsed fields.
        server_first_rebuilt = f"r={nonce},s={_b64encode(salt)},i={iterations}"
        self._auth_message = f"{self._client_first_bare},{server_first_rebuilt},{without_proof}".encode()
        client_key = _hmac(self.mechanism, self._salted_password, b"Client Key")
        stored_key = hashlib.new(hash_name, client_key).digest()
        proof = _xor(client_key, _hmac(self.mechanism, stored_key, self._auth_message))
        return f"{without_proof},p={_b64encode(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        """Check the server's signature; raise SaslAuthenticationError if the server does not know the password."""
        text = _decode(server_final)
        match = _SERVER_FINAL.fullmatch(text)
        if match is None:
            raise SaslAuthenticationError(f"Invalid SCRAM server final message format: {text}")
        if match["error"] is not None:
            raise SaslAuthenticationError(
                f"Sasl authentication using {_enum_name(self.mechanism)} failed with error: {match['error']}"
            )
        if not self._auth_message:
            raise SaslAuthenticationError("Unexpected challenge in Sasl client state RECEIVE_SERVER_FIRST_MESSAGE")
        server_key = _hmac(self.mechanism, self._salted_password, b"Server Key")
        expected = _hmac(self.mechanism, server_key, self._auth_message)
        if not hmac.compare_digest(_java_b64decode(match["signature"]), expected):
            raise SaslAuthenticationError("Invalid server signature in server final message")

"""SASL/SCRAM as Kafka implements it: RFC 7677 vector, exchanges, Kafka's messages, credential strings."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from contextlib import AbstractContextManager, suppress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.security.errors import SaslAuthenticationError
from controller.security.scram import (
    MAX_ITERATIONS,
    MECHANISMS,
    ScramClient,
    ScramCredential,
    ScramServer,
    credential_from_string,
    credential_to_string,
    iterations_error,
    make_credential,
    make_credential_from_salted_password,
    salted_password,
    sasl_name,
    secure_random_string,
    username_from_sasl_name,
)

SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"

# RFC 7677 section 3
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"

_CREDENTIALS: dict[tuple[str, str, str], ScramCredential] = {}


def credential(mechanism: str, password: str, salt: str = "fixed-salt") -> ScramCredential:
    """PBKDF2 is slow on purpose; tests reuse credentials."""
    key = (mechanism, password, salt)
    if key not in _CREDENTIALS:
        _CREDENTIALS[key] = make_credential(mechanism, password, 4096, salt.encode())
    return _CREDENTIALS[key]


def store(mechanism: str, **users: str) -> dict[str, ScramCredential]:
    return {name: credential(mechanism, pw) for name, pw in users.items()}


def server_for(mechanism: str, users: dict[str, ScramCredential], nonce: str | None = None) -> ScramServer:
    return ScramServer(mechanism, users.get, nonce=nonce)


def sasl_error(message: str) -> AbstractContextManager[pytest.ExceptionInfo[SaslAuthenticationError]]:
    return pytest.raises(SaslAuthenticationError, match=f"^{re.escape(message)}$")


def independent_proof(mechanism: str, password: str, salt: bytes, auth_message: str) -> tuple[str, str]:
    """ClientProof and ServerSignature computed straight from RFC 5802, not through the module under test."""
    h = MECHANISMS[mechanism][0]
    salted = hashlib.pbkdf2_hmac(h, password.encode(), salt, 4096)
    client_key = hmac.new(salted, b"Client Key", h).digest()
    signature = hmac.new(hashlib.new(h, client_key).digest(), auth_message.encode(), h).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.new(salted, b"Server Key", h).digest()
    server_signature = hmac.new(server_key, auth_message.encode(), h).digest()
    return base64.b64encode(proof).decode(), base64.b64encode(server_signature).decode()


def exchange(server: ScramServer, client: ScramClient) -> None:
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))


# --- RFC 7677 -------------------------------------------------------------------------------------------------


def test_rfc7677_vector_client_and_server() -> None:
    cred = make_credential(SHA256, "pencil", 4096, RFC_SALT)
    server = ScramServer(SHA256, {"user": cred}.get, nonce=RFC_SERVER_NONCE)
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first() == RFC_CLIENT_FIRST
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not server.complete and server.username is None
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    client.verify(RFC_SERVER_FINAL)
    assert server.complete and server.username == "user"


def test_rfc7677_credential() -> None:
    cred = make_credential(SHA256, "pencil", 4096, RFC_SALT)
    assert credential_to_string(cred) == (
        "salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=,"
        "server_key=wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=,iterations=4096"
    )
    salted = salted_password(SHA256, "pencil", RFC_SALT, 4096)
    assert salted == hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    assert make_credential_from_salted_password(SHA256, salted, RFC_SALT, 4096) == cred


# --- exchanges ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
@pytest.mark.parametrize("username", ["alice", "a,b=c", "=2C"])
def test_full_exchange(mechanism: str, username: str) -> None:
    server = server_for(mechanism, {username: credential(mechanism, "s3cret \u00fc")})
    client = ScramClient(mechanism, username, "s3cret \u00fc")
    exchange(server, client)
    assert server.complete and server.username == username
    with sasl_error("Unexpected challenge in Sasl server state COMPLETE"):
        server.evaluate(b"n,,n=alice,r=abc")


def test_non_ascii_usernames_are_refused_like_kafka() -> None:
    """ScramMessages' saslname pattern only admits \\x01-\\x7F, so Kafka cannot authenticate such users over SCRAM."""
    server = server_for(SHA256, {"jos\u00e9": credential(SHA256, "pw")})
    first = ScramClient(SHA256, "jos\u00e9", "pw", nonce="C").first()
    with sasl_error("Invalid SCRAM client first message format: n,,n=jos\u00e9,r=C"):
        server.evaluate(first)


def test_escaped_username_on_the_wire() -> None:
    client = ScramClient(SHA256, "a,b=c", "pw", nonce="xyz")
    assert client.first() == b"n,,n=a=2Cb=3Dc,r=xyz"


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_wrong_password(mechanism: str) -> None:
    server = server_for(mechanism, store(mechanism, alice="right"))
    client = ScramClient(mechanism, "alice", "wrong")
    server_first = server.evaluate(client.first())
    with sasl_error("Invalid client credentials") as info:
        server.evaluate(client.final(server_first))
    assert info.value.hidden
    assert info.value.client_message(mechanism) == GENERIC.format(mechanism)
    assert not server.complete and server.username is None
    with sasl_error("Unexpected challenge in Sasl server state FAILED"):
        server.evaluate(b"anything")


def test_credential_of_the_other_mechanism_fails() -> None:
    server = server_for(SHA512, {"alice": credential(SHA256, "pw")})
    client = ScramClient(SHA512, "alice", "pw")
    server_first = server.evaluate(client.first())
    with sasl_error("Invalid client credentials"):  # a SHA-256 proof has the wrong length for SHA-512
        server.evaluate(client.final(server_first))


def test_unknown_user() -> None:
    server = server_for(SHA256, store(SHA256, alice="pw"))
    with sasl_error("Authentication failed: Invalid user credentials") as info:
        server.evaluate(ScramClient(SHA256, "bob", "pw").first())
    assert info.value.hidden and info.value.client_message(SHA256, reauthentication=True) == (
        "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
    )


def test_lookup_failure_is_wrapped_like_kafka() -> None:
    def broken(_: str) -> ScramCredential | None:
        raise RuntimeError("zk down")

    with sasl_error("Authentication failed: Credentials could not be obtained") as info:
        ScramServer(SHA256, broken).evaluate(b"n,,n=alice,r=abc")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_lookup_sees_unescaped_name() -> None:
    seen: list[str] = []

    def lookup(name: str) -> ScramCredential | None:
        seen.append(name)
        return None

    with pytest.raises(SaslAuthenticationError):
        ScramServer(SHA256, lookup).evaluate(b"n,,n=a=2Cb=3Dc,r=abc")
    assert seen == ["a,b=c"]


def test_tampered_nonce() -> None:
    server = server_for(SHA256, store(SHA256, alice="pw"), nonce="SERVER")
    client = ScramClient(SHA256, "alice", "pw", nonce="CLIENT")
    assert server.evaluate(client.first()) == (b"r=CLIENTSERVER,s=" + base64.b64encode(b"fixed-salt") + b",i=4096")
    final = client.final(b"r=CLIENTSERVER,s=" + base64.b64encode(b"fixed-salt") + b",i=4096")
    with sasl_error("Invalid client nonce in the final client message."):
        server.evaluate(final.replace(b"CLIENTSERVER", b"CLIENTSERVEX"))


def test_client_nonce_check_is_ends_with_like_kafka() -> None:
    """Kafka only checks that the final nonce ends with the combined nonce; the proof covers the rest."""
    salt = b"fixed-salt"
    server = server_for(SHA256, store(SHA256, alice="pw"), nonce="S")
    server.evaluate(b"n,,n=alice,r=C")
    nonce = "extraCS"
    auth = f"n=alice,r=C,r=CS,s={base64.b64encode(salt).decode()},i=4096,c=biws,r={nonce}"
    proof, signature = independent_proof(SHA256, "pw", salt, auth)
    assert server.evaluate(f"c=biws,r={nonce},p={proof}".encode()) == f"v={signature}".encode()


def test_channel_binding_must_echo_the_gs2_header() -> None:
    server = server_for(SHA256, store(SHA256, alice="pw"), nonce="S")
    client = ScramClient(SHA256, "alice", "pw", nonce="C")
    final = client.final(server.evaluate(client.first()))
    assert final.startswith(b"c=biws,")
    with sasl_error("Invalid channel binding in the final client message."):
        server.evaluate(final.replace(b"c=biws", b"c=eSws"))  # "y,,": claims the server lacks channel binding


def test_authzid() -> None:
    users = store(SHA256, alice="pw")
    assert server_for(SHA256, users).evaluate(b"n,a=alice,n=alice,r=abc").startswith(b"r=abc")
    with sasl_error(
        "Authentication failed: Client requested an authorization id that is different from username"
    ) as info:
        server_for(SHA256, users).evaluate(b"n,a=admin,n=alice,r=abc")
    assert not info.value.hidden  # Kafka sends this one to the client verbatim


def test_authzid_exchange_uses_matching_channel_binding() -> None:
    salt = b"fixed-salt"
    server = server_for(SHA256, store(SHA256, alice="pw"), nonce="S")
    server.evaluate(b"n,a=alice,n=alice,r=C")
    cbind = base64.b64encode(b"n,a=alice,").decode()
    auth = f"n=alice,r=C,r=CS,s={base64.b64encode(salt).decode()},i=4096,c={cbind},r=CS"
    proof, signature = independent_proof(SHA256, "pw", salt, auth)
    assert server.evaluate(f"c={cbind},r=CS,p={proof}".encode()) == f"v={signature}".encode()
    assert server.username == "alice"


def test_reserved_attribute_is_dropped_and_extensions_kept_in_auth_message() -> None:
    """Kafka rebuilds client-first-bare as n=..,r=..[,extensions], without the reserved m= attribute."""
    salt = b"fixed-salt"
    server = server_for(SHA256, store(SHA256, alice="pw"), nonce="S")
    server.evaluate(b"n,,m=future,n=alice,r=C,tokenauth=false")
    auth = f"n=alice,r=C,tokenauth=false,r=CS,s={base64.b64encode(salt).decode()},i=4096,c=biws,r=CS"
    proof, signature = independent_proof(SHA256, "pw", salt, auth)
    assert server.evaluate(f"c=biws,r=CS,p={proof}".encode()) == f"v={signature}".encode()


@pytest.mark.parametrize("value", ["true", "TRUE", "True"])
def test_delegation_token_auth_is_refused_like_an_unknown_token(value: str) -> None:
    server = server_for(SHA256, store(SHA256, alice="pw"))
    with sasl_error("Token Authentication failed: Invalid tokenId : alice") as info:
        server.evaluate(f"n,,n=alice,r=abc,tokenauth={value}".encode())
    assert info.value.hidden


def test_stored_iterations_below_minimum() -> None:
    weak = make_credential(SHA256, "pw", 1024, b"salt")
    with sasl_error("Iterations 1024 is less than the minimum 4096 for SCRAM_SHA_256"):
        server_for(SHA256, {"alice": weak}).evaluate(b"n,,n=alice,r=abc")


def test_empty_stored_key_fails_cleanly() -> None:
    broken = ScramCredential(b"salt", b"", b"", 4096)
    server = server_for(SHA256, {"alice": broken}, nonce="S")
    server.evaluate(b"n,,n=alice,r=C")
    with pytest.raises(SaslAuthenticationError, match="Sasl client verification failed"):
        server.evaluate(b"c=biws,r=CS,p=AAAA")


NONCE = "v99nj12m7wi6ebc50e49756me"


@pytest.mark.parametrize(
    "message",
    [
        f"n,,n=testuser,r={NONCE}",
        f"n,,n=test=2Cuser,r={NONCE}",
        f"n,a=testuser,n=testuser,r={NONCE}",
        f"n,,m=reserved-value,n=testuser,r={NONCE}",
        f"n,,m=name1=value1 name2=another test value \"'!$[](),n=testuser,r={NONCE}",
        f"n,,n=testuser,r={NONCE},ext=val1",
        f"n,,n=testuser,r={NONCE},anotherext=name1=value1 name2=another test value \"'!$[]()",
        f"n,,n=testuser,r={NONCE},first=val1,second=name1 = value ,third=123",
    ],
)
def test_valid_client_first_messages_from_kafka_tests(message: str) -> None:
    users = {"testuser": credential(SHA256, "pw"), "test,user": credential(SHA256, "pw")}
    reply = server_for(SHA256, users, nonce="S").evaluate(message.encode())
    assert reply.startswith(f"r={NONCE}S,s=".encode())


@pytest.mark.parametrize(
    "message",
    [
        f"n,x=something,n=testuser,r={NONCE}",
        f"n,,m,n=testuser,r={NONCE}",
        f"n,,m=name,value,n=testuser,r={NONCE}",
        f"n,,m=,,n=testuser,r={NONCE}",
        f"n,,n=testuser,r={NONCE},ext1=value",
        f"n,,n=testuser,r={NONCE},ext",
        f"n,,n=testuser,r={NONCE},ext=value1,value2",
        f"n,,n=testuser,r={NONCE},ext=,",
        f"n,,n=testuser,r={NONCE},ext =value",
        f"y,,n=testuser,r={NONCE}",
        f"p=tls-unique,,n=testuser,r={NONCE}",
        f"n,,n=test=2user,r={NONCE}",
        "n,,n=testuser,r=",
        "n,,n=testuser,r=a,b",
        "n,,n=t\u00e9st,r=abc",
    ],
)
def test_invalid_client_first_messages(message: str) -> None:
    with sasl_error(f"Invalid SCRAM client first message format: {message}") as info:
        server_for(SHA256, store(SHA256, testuser="pw")).evaluate(message.encode())
    assert info.value.hidden


@pytest.mark.parametrize(
    "message",
    ["c=ab,r=CS,p=AAAA", "c=biws,r=CS,p=123", "c=biws,r=CS,ext1=value,p=AAAA", "c=biws,r=CS", "c=biws,p=AAAA"],
)
def test_invalid_client_final_messages(message: str) -> None:
    server = server_for(SHA256, store(SHA256, alice="pw"), nonce="S")
    server.evaluate(b"n,,n=alice,r=C")
    with sasl_error(f"Invalid SCRAM client final message format: {message}"):
        server.evaluate(message.encode())


# --- client side ----------------------------------------------------------------------------------------------


def test_client_rejects_bad_server_signature() -> None:
    server = server_for(SHA256, store(SHA256, alice="pw"))
    client = ScramClient(SHA256, "alice", "pw")
    server_final = server.evaluate(client.final(server.evaluate(client.first())))
    forged = b"v=" + base64.b64encode(bytes(32))
    assert forged != server_final
    with sasl_error("Invalid server signature in server final message"):
        client.verify(forged)
    client.verify(server_final)


def test_client_rejects_signature_made_with_another_password() -> None:
    salt = base64.b64encode(b"fixed-salt").decode()
    client = ScramClient(SHA256, "alice", "pw", nonce="C")
    client.final(f"r=CS,s={salt},i=4096".encode())
    auth = f"n=alice,r=C,r=CS,s={salt},i=4096,c=biws,r=CS"
    _, impostor = independent_proof(SHA256, "guess", b"fixed-salt", auth)
    _, genuine = independent_proof(SHA256, "pw", b"fixed-salt", auth)
    with sasl_error("Invalid server signature in server final message"):
        client.verify(f"v={impostor}".encode())
    client.verify(f"v={genuine}".encode())


def test_client_verify_before_final() -> None:
    with sasl_error("Unexpected challenge in Sasl client state RECEIVE_SERVER_FIRST_MESSAGE"):
        ScramClient(SHA256, "alice", "pw").verify(b"v=AAAA")


def test_client_reports_server_error() -> None:
    client = ScramClient(SHA512, "alice", "pw", nonce="C")
    client.final(b"r=CS,s=c2FsdA==,i=4096")
    with sasl_error("Sasl authentication using SCRAM_SHA_512 failed with error: other-error"):
        client.verify(b"e=other-error")


@pytest.mark.parametrize(
    ("server_first", "message"),
    [
        (b"r=CS,s=c2FsdA==,i=0", "Invalid SCRAM server first message format: invalid iterations 0"),
        (b"r=CS,s=c2FsdA==,i=99999999999", "Invalid SCRAM server first message format: invalid iterations"),
        (b"r=CS,s==123,i=4096", "Invalid SCRAM server first message format: r=CS,s==123,i=4096"),
        (
            b"r=CS,invalid,s=c2FsdA==,i=4096",
            "Invalid SCRAM server first message format: r=CS,invalid,s=c2FsdA==,i=4096",
        ),
        (b"r=XS,s=c2FsdA==,i=4096", "Invalid server nonce: does not start with client nonce"),
        (b"r=CS,s=c2FsdA==,i=4095", "Requested iterations 4095 is less than the minimum 4096 for SCRAM_SHA_256"),
    ],
)
def test_client_rejects_server_first(server_first: bytes, message: str) -> None:
    with sasl_error(message):
        ScramClient(SHA256, "alice", "pw", nonce="C").final(server_first)


def test_client_accepts_kafka_server_first_variants() -> None:
    salt = base64.b64encode(b"fixed-salt").decode()
    for variant in (f"m=reserved-value,r=CS,s={salt},i=4096", f"r=CS,s={salt},i=4096,ext=val1"):
        client = ScramClient(SHA256, "alice", "pw", nonce="C")
        final = client.final(variant.encode())
        # Kafka's client signs the rebuilt "r=..,s=..,i=.." form, which is what a Kafka server verifies.
        auth = f"n=alice,r=C,r=CS,s={salt},i=4096,c=biws,r=CS"
        assert final == f"c=biws,r=CS,p={independent_proof(SHA256, 'pw', b'fixed-salt', auth)[0]}".encode()


def test_client_needs_a_password() -> None:
    with pytest.raises(ValueError, match="Empty key"):
        ScramClient(SHA256, "alice", "")


def test_unknown_mechanism() -> None:
    with pytest.raises(ValueError, match="Requested mechanism 'SCRAM-SHA-1' is not supported"):
        ScramServer("SCRAM-SHA-1", lambda _: None)
    with pytest.raises(ValueError, match="not supported"):
        make_credential("PLAIN", "pw", 4096)


# --- credentials and limits -------------------------------------------------------------------------------------


def test_mechanism_table() -> None:
    assert MECHANISMS == {SHA256: ("sha256", 4096), SHA512: ("sha512", 4096)}
    assert MAX_ITERATIONS == 16384


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_iteration_bounds(mechanism: str) -> None:
    assert iterations_error(mechanism, 4095) == "Too few iterations"
    assert iterations_error(mechanism, -1) == "Too few iterations"
    assert iterations_error(mechanism, 4096) is None
    assert iterations_error(mechanism, 16384) is None
    assert iterations_error(mechanism, 16385) == "Too many iterations"


def test_default_salt_is_kafka_style() -> None:
    first, second = make_credential(SHA512, "pw", 4096), make_credential(SHA512, "pw", 4096)
    assert first.salt != second.salt and first.stored_key != second.stored_key
    assert re.fullmatch(rb"[0-9a-z]{1,26}", first.salt)
    assert len(first.stored_key) == len(first.server_key) == 64
    assert len(credential(SHA256, "pw").stored_key) == 32


def test_secure_random_string_is_base36_of_130_bits() -> None:
    values = {secure_random_string() for _ in range(50)}
    assert len(values) == 50
    assert all(re.fullmatch(r"[0-9a-z]{1,26}", v) and int(v, 36) < 2**130 for v in values)


def test_salted_password_rejects_empty_password_like_kafka() -> None:
    with pytest.raises(ValueError, match="Empty key"):
        make_credential(SHA256, "", 4096, b"salt")
    with pytest.raises(ValueError, match="Empty key"):
        make_credential_from_salted_password(SHA256, b"", b"salt", 4096)


def test_credential_repr_hides_keys() -> None:
    cred = credential(SHA256, "pw")
    text = repr(cred)
    assert "salt=b'fixed-salt'" in text and "iterations=4096" in text
    assert repr(cred.stored_key) not in text and "server_key" not in text


def test_credential_string_round_trip_and_key_order() -> None:
    cred = ScramCredential(b"\x00\x01salt", b"stored-key-bytes", b"server-key-bytes", 8192)
    text = credential_to_string(cred)
    assert (
        text == "salt=AAFzYWx0,stored_key=c3RvcmVkLWtleS1ieXRlcw==,server_key=c2VydmVyLWtleS1ieXRlcw==,iterations=8192"
    )
    assert credential_from_string(text) == cred
    reordered = "iterations=8192,server_key=c2VydmVyLWtleS1ieXRlcw==,salt=AAFzYWx0,stored_key=c3RvcmVkLWtleS1ieXRlcw=="
    assert credential_from_string(reordered) == cred


def test_credential_string_java_leniencies() -> None:
    base = "salt=YQ,stored_key=YWI,server_key=,iterations=+4096"  # padding optional, '+' sign, empty value
    assert credential_from_string(base) == ScramCredential(b"a", b"ab", b"", 4096)
    assert credential_from_string(base + ",,")  # String.split drops trailing empty strings
    assert credential_from_string("salt=YQ,stored_key=YQ,server_key=YQ,iterations=-5").iterations == -5
    # java.util.Properties keeps the last of a repeated key, and only the four distinct keys are counted
    assert credential_from_string("salt=YQ,salt=Yg,stored_key=YQ,server_key=YQ,iterations=1").salt == b"b"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", "Credentials not valid: abc"),
        ("", "Credentials not valid: "),
        ("salt=YQ==,stored_key=YQ==,server_key=YQ==", "Credentials not valid:"),  # missing field
        ("salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=1,a=test", "Credentials not valid:"),  # extra field
        (",salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=1", "Credentials not valid:"),
        ("=x,salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=1", "Credentials not valid:"),
        ("SALT=YQ==,stored_key=YQ==,server_key=YQ==,iterations=1", "Credentials not valid:"),
        (
            "salt=YQ=,stored_key=YQ==,server_key=YQ==,iterations=1",
            "salt: Input byte array has wrong 4-byte ending unit",
        ),
        (
            "salt=YQ==,stored_key=Y,server_key=YQ==,iterations=1",
            "stored_key: Last unit does not have enough valid bits",
        ),
        ("salt=YQ==,stored_key=YQ==,server_key=a.b=,iterations=1", "server_key: Illegal base64 character 2e"),
        ("salt=YQ==x,stored_key=YQ==,server_key=YQ==,iterations=1", "Input byte array has incorrect ending byte at"),
        ("salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=4k", 'iterations: For input string: "4k"'),
        ("salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations= 1", 'iterations: For input string: " 1"'),
        ("salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=1_000", "iterations: For input string"),
        ("salt=YQ==,stored_key=YQ==,server_key=YQ==,iterations=2147483648", "iterations: For input string"),
    ],
)
def test_credential_string_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        credential_from_string(text)


def test_sasl_names() -> None:
    assert sasl_name("a=b,c") == "a=3Db=2Cc"
    assert username_from_sasl_name("a=3Db=2Cc") == "a=b,c"
    assert username_from_sasl_name("=3D2C") == "=2C"  # ',' is restored first, so no double unescaping
    with pytest.raises(ValueError, match="Invalid username: a=b"):
        username_from_sasl_name("a=b")


# --- properties -------------------------------------------------------------------------------------------------


@given(st.binary(max_size=40), st.binary(max_size=64), st.binary(max_size=64), st.integers(-(2**31), 2**31 - 1))
def test_credential_string_round_trip_property(salt: bytes, stored: bytes, server: bytes, iterations: int) -> None:
    cred = ScramCredential(salt, stored, server, iterations)
    assert credential_from_string(credential_to_string(cred)) == cred


@given(st.text(max_size=80))
def test_credential_from_arbitrary_text_only_raises_value_error(text: str) -> None:
    try:
        cred = credential_from_string(text)
    except ValueError:
        return
    assert credential_from_string(credential_to_string(cred)) == cred


@given(st.text(max_size=30).map(lambda s: s.replace("\x00", "")))
def test_sasl_name_round_trip(name: str) -> None:
    assert username_from_sasl_name(sasl_name(name)) == name


@given(st.binary(max_size=80))
def test_server_first_step_arbitrary_bytes(data: bytes) -> None:
    server = server_for(SHA256, store(SHA256, alice="pw"))
    try:
        reply = server.evaluate(data)
    except SaslAuthenticationError:
        assert not server.complete
        return
    assert reply.startswith(b"r=")


@given(st.binary(max_size=120) | st.text(max_size=120).map(lambda s: f"c=biws,r=CS,{s}".encode()))
@settings(max_examples=200)
def test_server_final_step_arbitrary_bytes(data: bytes) -> None:
    server = server_for(SHA256, store(SHA256, alice="pw"), nonce="S")
    server.evaluate(b"n,,n=alice,r=C")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(data)
    assert not server.complete and server.username is None


@given(st.binary(max_size=80))
def test_client_arbitrary_server_messages(data: bytes) -> None:
    client = ScramClient(SHA256, "alice", "pw", nonce="C")
    with suppress(SaslAuthenticationError):
        client.final(data)
    with pytest.raises(SaslAuthenticationError):
        client.verify(data)

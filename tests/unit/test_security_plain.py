"""SASL/PLAIN (Kafka's PlainSaslServer rules and messages) and sasl.jaas.config parsing (Kafka's JaasConfig)."""

from __future__ import annotations

import re
from contextlib import AbstractContextManager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.security.errors import SaslAuthenticationError
from controller.security.plain import (
    PLAIN_LOGIN_MODULE,
    JaasConfig,
    PlainServer,
    parse_jaas_config,
    parse_plain_response,
)

INVALID = "Authentication failed: Invalid username or password"
AUTHZID = "Authentication failed: Client requested an authorization id that is different from username"


def sasl_error(message: str) -> AbstractContextManager[pytest.ExceptionInfo[SaslAuthenticationError]]:
    return pytest.raises(SaslAuthenticationError, match=f"^{re.escape(message)}$")


# --- parse_plain_response ---------------------------------------------------------------------------------


def test_parse_plain_response() -> None:
    assert parse_plain_response(b"\x00alice\x00secret") == ("", "alice", "secret")
    assert parse_plain_response(b"alice\x00alice\x00secret") == ("alice", "alice", "secret")
    assert parse_plain_response("\x00jos\u00e9\x00p\u00e4ss".encode()) == ("", "jos\u00e9", "p\u00e4ss")


@pytest.mark.parametrize(
    ("data", "count"),
    [
        (b"", 1),
        (b"alice", 1),
        (b"\x00alice", 2),
        (b"a\x00b\x00c\x00", 4),  # a trailing NUL makes an empty fourth token
        (b"a\x00b\x00c\x00d", 4),
        (b"a\x00b\x00c\x00d\x00e\x00f", 4),  # Kafka stops counting at four
    ],
)
def test_token_count(data: bytes, count: int) -> None:
    with sasl_error(f"Invalid SASL/PLAIN response: expected 3 tokens, got {count}"):
        parse_plain_response(data)


def test_empty_fields_in_kafka_order() -> None:
    with sasl_error("Authentication failed: username not specified"):
        parse_plain_response(b"\x00\x00")  # both empty: the username is reported first
    with sasl_error("Authentication failed: password not specified"):
        parse_plain_response(b"\x00alice\x00")


def test_authzid_must_match_username() -> None:
    with sasl_error(AUTHZID):
        parse_plain_response(b"admin\x00alice\x00secret")


@pytest.mark.parametrize("data", [b"\x00al\xffice\x00secret", b"\x00alice\x00se\xc3", b"\xfe\x00alice\x00secret"])
def test_invalid_utf8_is_an_authentication_error(data: bytes) -> None:
    with sasl_error(INVALID):
        parse_plain_response(data)


def test_plain_errors_are_shown_to_clients() -> None:
    with pytest.raises(SaslAuthenticationError) as info:
        parse_plain_response(b"x")
    assert not info.value.hidden
    assert info.value.client_message("PLAIN") == info.value.message == str(info.value)


@given(st.binary(max_size=40))
def test_arbitrary_bytes_only_raise_sasl_errors(data: bytes) -> None:
    try:
        authzid, username, password = parse_plain_response(data)
    except SaslAuthenticationError:
        return
    assert username and password and authzid in ("", username)
    assert "\x00".join((authzid, username, password)).encode() == data


# --- PlainServer --------------------------------------------------------------------------------------------


SERVER = PlainServer({"alice": "alice-secret", "admin": "admin-secret", "jos\u00e9": "p\u00e4ss"})


def test_authenticate() -> None:
    assert SERVER.authenticate(b"\x00alice\x00alice-secret") == "alice"
    assert SERVER.authenticate(b"admin\x00admin\x00admin-secret") == "admin"
    assert SERVER.authenticate("\x00jos\u00e9\x00p\u00e4ss".encode()) == "jos\u00e9"


@pytest.mark.parametrize(
    "data",
    [
        b"\x00alice\x00admin-secret",  # someone else's password
        b"\x00alice\x00alice-secre",
        b"\x00mallory\x00alice-secret",  # unknown user
        b"\x00Alice\x00alice-secret",  # names are case-sensitive
        b"bob\x00alice\x00wrong",  # bad credentials are reported before the authzid
    ],
)
def test_authenticate_rejects(data: bytes) -> None:
    with sasl_error(INVALID):
        SERVER.authenticate(data)


def test_authenticate_checks_authzid_after_credentials() -> None:
    with sasl_error(AUTHZID):
        SERVER.authenticate(b"admin\x00alice\x00alice-secret")


@given(st.binary(max_size=40))
def test_authenticate_arbitrary_bytes(data: bytes) -> None:
    try:
        user = SERVER.authenticate(data)
    except SaslAuthenticationError:
        return
    assert user in ("alice", "admin", "jos\u00e9")


# --- sasl.jaas.config -------------------------------------------------------------------------------------


def test_plain_login_module_config() -> None:
    cfg = parse_jaas_config(
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
    )
    assert cfg.login_module == PLAIN_LOGIN_MODULE
    assert cfg.control_flag == "REQUIRED"
    assert (cfg.username, cfg.password) == ("admin", "admin-secret")
    assert cfg.plain_users() == {"admin": "admin-secret", "alice": "alice-secret"}
    assert dict(cfg.options) == {
        "username": "admin",
        "password": "admin-secret",
        "user_admin": "admin-secret",
        "user_alice": "alice-secret",
    }
    assert PlainServer.from_jaas(cfg).authenticate(b"\x00alice\x00alice-secret") == "alice"


def test_scram_login_module_config() -> None:
    cfg = parse_jaas_config(
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="pw";'
    )
    assert cfg.login_module == "org.apache.kafka.common.security.scram.ScramLoginModule"
    assert (cfg.username, cfg.password) == ("broker", "pw")
    assert cfg.plain_users() == {}  # Kafka reads user_* only from PlainLoginModule entries


def test_user_options_outside_plain_module_are_ignored() -> None:
    cfg = parse_jaas_config('com.example.Login optional user_bob="x";')
    assert cfg.plain_users() == {} and cfg.username is None and cfg.password is None


@pytest.mark.parametrize(
    ("flag", "expected"),
    [("required", "REQUIRED"), ("Requisite", "REQUISITE"), ("SUFFICIENT", "SUFFICIENT"), ("optional", "OPTIONAL")],
)
def test_control_flags_are_case_insensitive(flag: str, expected: str) -> None:
    assert parse_jaas_config(f"test.Module {flag} propName=propValue;").control_flag == expected


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("test.M required;", {}),
        ('test.M required propName="prop value";', {"propName": "prop value"}),
        ('test.M required propName2="value1 = 1, value2 = 2";', {"propName2": "value1 = 1, value2 = 2"}),
        ('test.M required "prop name"=propValue;', {"prop name": "propValue"}),
        ("test.M required a='single quoted';", {"a": "single quoted"}),
        ('test.M required a="say \\"hi\\"";', {"a": 'say "hi"'}),
        ('test.M required a="back\\\\slash";', {"a": "back\\slash"}),
        ('test.M required a="tab\\there\\n";', {"a": "tab\there\n"}),
        ('test.M required a="\\101\\0618";', {"a": "A18"}),  # octal escapes, at most \377
        ('test.M required a="\\q";', {"a": "q"}),  # unknown escapes keep the character
        ('test.M required a="it\'s";', {"a": "it's"}),
        ('test.M required a="";', {"a": ""}),
        (
            "test.M required a=admin-user b=x_y c=$ENV d=org.example.Value;",
            {
                "a": "admin-user",
                "b": "x_y",
                "c": "$ENV",
                "d": "org.example.Value",
            },
        ),
        ("test.M required a=first a=second;", {"a": "second"}),
        ("test.M required\n  a=b\n  c=d\n;", {"a": "b", "c": "d"}),
        ("test.M required /* a=b */ c=d; // trailing comment", {"c": "d"}),
        ("test.M required a=b / c=d\n;", {"a": "b"}),  # a lone '/' comments out the rest of the line
        ('test.M required a="unterminated\n;', {"a": "unterminated"}),  # quotes end at a line break
    ],
)
def test_options(text: str, options: dict[str, str]) -> None:
    cfg = parse_jaas_config(text)
    assert cfg.login_module == "test.M"
    assert dict(cfg.options) == options


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified in JAAS config"),
        ("   // only a comment", "Login module not specified in JAAS config"),
        ("test.testMissingSemicolon required option1=value1", "JAAS config entry not terminated by semi-colon"),
        ("test.loginModule option1=value1;", "Invalid login module control flag 'option1' in JAAS config"),
        ("  required option1=value1;", "Invalid login module control flag 'option1' in JAAS config"),
        ("test.M mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
        ("test.loginModule", "Login module control flag not specified in JAAS config"),
        ("test.loginModule ;", "Login module control flag is not available in the JAAS config"),
        ("test.testInvalidControlFlag { option1=3;", "Login module control flag is not available in the JAAS config"),
        ("loginModule required option1;", "Value not specified for key 'option1' in JAAS config"),
        ("loginModule required option1=;", "Value not specified for key 'option1' in JAAS config"),
        ("loginModule required option1", "Value not specified for key 'option1' in JAAS config"),
        ("test.M required option1=3;", "Value not specified for key 'option1' in JAAS config"),  # numbers aren't values
        ("test.M required option1=-x;", "Value not specified for key 'option1' in JAAS config"),
        ("test.M required =x;", "Value not specified for key 'null' in JAAS config"),  # Java prints the null key
        ("test.M required 3=x;", "Option name not specified in JAAS config"),  # Java would store a null key
        ("test.M required ==x;", "Option name not specified in JAAS config"),
        ('"" required;', "Login module not specified in JAAS config"),
        ("a.B required; c.D optional;", "JAAS config property contains 2 login modules, should be 1 module"),
        (
            "com.sun.security.auth.module.JndiLoginModule required;",
            "com.sun.security.auth.module.JndiLoginModule is not allowed. Update System property "
            "'org.apache.kafka.disallowed.login.modules' to allow com.sun.security.auth.module.JndiLoginModule",
        ),
    ],
)
def test_invalid_configs(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        parse_jaas_config(text)


def test_config_is_immutable() -> None:
    source = {"a": "b"}
    cfg = JaasConfig("test.M", "REQUIRED", source)
    source["a"] = "changed"
    assert cfg.options["a"] == "b"
    with pytest.raises(TypeError):
        cfg.options["a"] = "c"  # type: ignore[index]
    assert hash(cfg) == hash(JaasConfig("test.M", "REQUIRED", {"x": "y"}))
    assert cfg == JaasConfig("test.M", "REQUIRED", {"a": "b"}) != JaasConfig("test.M", "REQUIRED", {})

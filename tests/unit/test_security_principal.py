"""KafkaPrincipal and DefaultKafkaPrincipalBuilder's (de)serialization, byte for byte."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.security.principal import (
    ANONYMOUS,
    KafkaPrincipal,
    PrincipalSerdeError,
    deserialize,
    serialize,
)

# int16 version 0000 | compact "User" 05 55736572 | compact "alice" 06 616c696365 | bool 00 | no tagged fields 00
ALICE_HEX = "0000055573657206616c6963650000"
ALICE_TOKEN_HEX = "0000055573657206616c6963650100"
ANONYMOUS_HEX = "000005557365720a414e4f4e594d4f55530000"


def test_golden_bytes() -> None:
    assert serialize(KafkaPrincipal("User", "alice")).hex() == ALICE_HEX
    assert serialize(KafkaPrincipal("User", "alice", token_authenticated=True)).hex() == ALICE_TOKEN_HEX
    assert serialize(ANONYMOUS).hex() == ANONYMOUS_HEX


def test_golden_bytes_decode() -> None:
    alice = deserialize(bytes.fromhex(ALICE_HEX))
    assert (alice.principal_type, alice.name, alice.token_authenticated) == ("User", "alice", False)
    assert deserialize(bytes.fromhex(ALICE_TOKEN_HEX)).token_authenticated is True
    assert deserialize(bytes.fromhex(ANONYMOUS_HEX)) == KafkaPrincipal("User", "ANONYMOUS")


def test_multibyte_lengths_use_unsigned_varints() -> None:
    name = "é" * 100  # 200 UTF-8 bytes: compact length 201 = varint c9 01
    data = serialize(KafkaPrincipal("User", name))
    assert data[:7].hex() == "00000555736572"
    assert data[7:9].hex() == "c901"
    assert len(data) == 9 + 200 + 2
    assert deserialize(data).name == name


def test_str_and_parse() -> None:
    assert str(KafkaPrincipal("User", "alice")) == "User:alice"
    assert KafkaPrincipal.parse("User:alice") == KafkaPrincipal("User", "alice")
    assert KafkaPrincipal.parse("Group:a:b").name == "a:b"  # split at the first ':' only
    assert KafkaPrincipal.parse("User:") == KafkaPrincipal("User", "")
    assert KafkaPrincipal.ANONYMOUS is ANONYMOUS and str(ANONYMOUS) == "User:ANONYMOUS"


@pytest.mark.parametrize("text", ["alice", "", ":bob"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="expected a string in format principalType:principalName but got"):
        KafkaPrincipal.parse(text)


def test_equality_ignores_token_flag_like_kafka() -> None:
    plain, token = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "alice", True)
    assert plain == token and hash(plain) == hash(token)
    assert plain != KafkaPrincipal("Group", "alice")


def test_unknown_tagged_fields_are_skipped() -> None:
    body = bytes.fromhex(ALICE_HEX)[:-1]  # without the empty tagged-field count
    tagged = bytes([2]) + bytes([0, 3]) + b"abc" + bytes([0x85, 0x01, 0x81, 0x01]) + b"x" * 129
    got = deserialize(body + tagged)
    assert got == KafkaPrincipal("User", "alice") and got.token_authenticated is False


def test_any_non_zero_bool_byte_is_true() -> None:
    data = bytearray.fromhex(ALICE_HEX)
    data[-2] = 0x7F
    assert deserialize(bytes(data)).token_authenticated is True


@pytest.mark.parametrize(
    ("hexdata", "message"),
    [
        ("0001055573657206616c6963650000", "Invalid principal data version 1"),
        ("ffff055573657206616c6963650000", "Invalid principal data version -1"),
        ("", "Truncated"),
        ("00", "Truncated"),
        ("0000005573657206616c6963650000", "non-nullable field type was serialized as null"),
        ("000005557365720000", "non-nullable field name was serialized as null"),
        ("0000055573657206616cff63650000", "string field name is not valid UTF-8"),
        ("0000055573657206616c696365000000", "trailing byte"),
        ("0000ffffffffff", "Varint is too long"),
        ("000081800255", "string field type had invalid length 32768"),
        ("0000055573657206616c69636500010005616263", "Error reading byte array of 5 byte(s): only 3 byte(s) available"),
        ("00000a5573", "Error reading byte array of 9 byte(s): only 2 byte(s) available"),
    ],
)
def test_malformed_input(hexdata: str, message: str) -> None:
    with pytest.raises(PrincipalSerdeError, match=re.escape(message)):
        deserialize(bytes.fromhex(hexdata))


def test_every_truncation_fails() -> None:
    data = bytes.fromhex(ALICE_TOKEN_HEX)
    for cut in range(len(data)):
        with pytest.raises(PrincipalSerdeError):
            deserialize(data[:cut])


def test_serde_error_is_a_value_error() -> None:
    assert issubclass(PrincipalSerdeError, ValueError)


def test_serialize_refuses_oversized_strings_like_kafka() -> None:
    assert deserialize(serialize(KafkaPrincipal("User", "n" * 0x7FFF))).name == "n" * 0x7FFF
    with pytest.raises(PrincipalSerdeError, match="'name' field is too long to be serialized"):
        serialize(KafkaPrincipal("User", "n" * 0x8000))


@given(st.text(max_size=60), st.text(max_size=60), st.booleans())
def test_round_trip(principal_type: str, name: str, token: bool) -> None:
    principal = KafkaPrincipal(principal_type, name, token)
    data = serialize(principal)
    back = deserialize(data)
    assert (back.principal_type, back.name, back.token_authenticated) == (principal_type, name, token)
    assert data[-1] == 0 and data[:2] == b"\x00\x00"


@given(st.binary(max_size=64))
def test_arbitrary_bytes_only_raise_serde_errors(data: bytes) -> None:
    try:
        principal = deserialize(data)
    except PrincipalSerdeError:
        return
    assert deserialize(serialize(principal)) == principal


@given(st.text(max_size=20), st.text(max_size=20), st.binary(min_size=1, max_size=8))
def test_trailing_garbage_is_rejected(principal_type: str, name: str, junk: bytes) -> None:
    with pytest.raises(PrincipalSerdeError):
        deserialize(serialize(KafkaPrincipal(principal_type, name)) + junk)

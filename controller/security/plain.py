"""SASL/PLAIN as Kafka's broker implements it, and the ``sasl.jaas.config`` values that configure it.

The token rules, the order of the checks and the messages are those of Kafka's ``PlainSaslServer`` and
``PlainServerCallbackHandler``, because those messages reach clients verbatim (they are
``SaslAuthenticationException``s). The JAAS parser reproduces ``org.apache.kafka.common.security.JaasConfig``,
which sits on ``java.io.StreamTokenizer``; the tokenizer's quirks (numbers are not values, ``/`` starts a
comment, escapes inside quotes) decide which configs Kafka accepts, so they are reproduced too.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from controller.security.errors import SaslAuthenticationError

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_USER_PREFIX = "user_"
_INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"
_DISALLOWED_LOGIN_MODULES = frozenset({"com.sun.security.auth.module.JndiLoginModule"})


def _split_tokens(data: bytes) -> list[bytes]:
    """``PlainSaslServer.extractTokens``: at most four NUL-separated tokens, so extra NULs give a count of 4.

    Splitting bytes equals Kafka's splitting of the decoded string: a NUL byte is never part of a UTF-8
    sequence, and Java's decoder never folds a NUL into the U+FFFD it substitutes for bad input.
    """
    tokens: list[bytes] = []
    start = 0
    for _ in range(4):
        end = data.find(b"\x00", start)
        if end == -1:
            tokens.append(data[start:])
            break
        tokens.append(data[start:end])
        start = end + 1
    if len(tokens) != 3:
        raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    return tokens


def _decode_response(data: bytes) -> tuple[str, str, str]:
    """Tokens and emptiness checks in Kafka's order, before credentials are looked at."""
    authzid, username, password = _split_tokens(data)
    if not username:
        raise SaslAuthenticationError("Authentication failed: username not specified")
    if not password:
        raise SaslAuthenticationError("Authentication failed: password not specified")
    try:
        return authzid.decode("utf-8"), username.decode("utf-8"), password.decode("utf-8")
    except UnicodeDecodeError:
        # Kafka decodes bad bytes to U+FFFD, which then matches no configured user or password, so the
        # answer a Kafka broker gives is the invalid-credentials one.
        raise SaslAuthenticationError(_INVALID_CREDENTIALS) from None


def _check_authzid(authzid: str, username: str) -> None:
    if authzid and authzid != username:
        raise SaslAuthenticationError(
            "Authentication failed: Client requested an authorization id that is different from username"
        )


def parse_plain_response(data: bytes) -> tuple[str, str, str]:
    """Split a SASL/PLAIN message (``authzid NUL authcid NUL passwd``) into (authzid, username, password).

    Raises SaslAuthenticationError with Kafka's message for every malformed message, including an authzid
    that names someone other than the user.
    """
    authzid, username, password = _decode_response(data)
    _check_authzid(authzid, username)
    return authzid, username, password


class PlainServer:
    """The broker side of SASL/PLAIN against a static user table (Kafka's ``user_<name>`` JAAS options)."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = dict(users)

    @classmethod
    def from_jaas(cls, config: JaasConfig) -> PlainServer:
        """A server using the ``user_*`` options of a PlainLoginModule JAAS entry, as Kafka's default handler does."""
        return cls(config.plain_users())

    def authenticate(self, data: bytes) -> str:
        """Verify one SASL/PLAIN message and return the authenticated username.

        Credentials are checked before the authzid, as in Kafka, so a wrong password never reveals whether
        the authzid would have been accepted.
        """
        authzid, username, password = _decode_response(data)
        expected = self._users.get(username)
        # compare_digest runs on bytes so non-ASCII passwords are compared in constant time too.
        if expected is None or not hmac.compare_digest(expected.encode("utf-8"), password.encode("utf-8")):
            raise SaslAuthenticationError(_INVALID_CREDENTIALS)
        _check_authzid(authzid, username)
        return username


@dataclass(frozen=True)
class JaasConfig:
    """One login module entry of a ``sasl.jaas.config`` value."""

    login_module: str
    control_flag: str  # REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL
    options: Mapping[str, str] = field(hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def plain_users(self) -> dict[str, str]:
        """The ``user_<name>="<password>"`` table; empty unless this is a PlainLoginModule entry.

        Kafka's PlainServerCallbackHandler reads these options only from PlainLoginModule entries.
        """
        if self.login_module != PLAIN_LOGIN_MODULE:
            return {}
        return {k[len(_USER_PREFIX) :]: v for k, v in self.options.items() if k.startswith(_USER_PREFIX)}

    @property
    def username(self) -> str | None:
        return self.options.get("username")

    @property
    def password(self) -> str | None:
        return self.options.get("password")


# --- java.io.StreamTokenizer, configured as JaasConfig configures it --------------------------------------

_CT_WHITESPACE, _CT_DIGIT, _CT_ALPHA, _CT_QUOTE, _CT_COMMENT = 1, 2, 4, 8, 16
_TT_EOF, _TT_NUMBER, _TT_WORD = -1, -2, -3
_NEED_CHAR = 1 << 31


def _build_ctype() -> list[int]:
    ct = [0] * 256
    for lo, hi in (("a", "z"), ("A", "Z"), ("\xa0", "\xff")):
        for c in range(ord(lo), ord(hi) + 1):
            ct[c] |= _CT_ALPHA
    for c in range(ord(" ") + 1):
        ct[c] = _CT_WHITESPACE
    ct[ord("/")] = _CT_COMMENT
    ct[ord('"')] = _CT_QUOTE
    ct[ord("'")] = _CT_QUOTE
    for ch in "0123456789.-":  # parseNumbers()
        ct[ord(ch)] |= _CT_DIGIT
    for ch in "-_$":  # JaasConfig's extra wordChars
        ct[ord(ch)] |= _CT_ALPHA
    return ct


_CTYPE = _build_ctype()
_ESCAPES = {"a": 0x7, "b": 0x8, "f": 0xC, "n": 0xA, "r": 0xD, "t": 0x9, "v": 0xB}


def _ctype(c: int) -> int:
    return _CTYPE[c] if c < 256 else _CT_ALPHA


class _StreamTokenizer:
    """``java.io.StreamTokenizer.nextToken`` with slash comments on and end-of-line not significant."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0
        self._peekc = _NEED_CHAR
        self.ttype = -4
        self.sval: str | None = None

    def _read(self) -> int:
        if self._pos >= len(self._text):
            return -1
        self._pos += 1
        return ord(self._text[self._pos - 1])

    def _skip_line(self) -> None:
        c = self._read()
        while c not in (0xA, 0xD) and c >= 0:
            c = self._read()
        self._peekc = c

    def next_token(self) -> int:
        while True:  # Java recurses after a comment; this loops instead
            token = self._next_token_once()
            if token is not None:
                self.ttype = token
                return token

    def _next_token_once(self) -> int | None:
        self.sval = None
        c = self._peekc
        if c < 0:
            c = _NEED_CHAR
        if c == _NEED_CHAR:
            c = self._read()
            if c < 0:
                return _TT_EOF
        self._peekc = _NEED_CHAR
        ct = _ctype(c)
        while ct & _CT_WHITESPACE:
            was_cr = c == 0xD
            c = self._read()
            if was_cr and c == 0xA:
                c = self._read()
            if c < 0:
                return _TT_EOF
            ct = _ctype(c)

        if ct & _CT_DIGIT:  # a number, which JaasConfig cannot use as a value (sval stays None)
            if c == ord("-"):
                c = self._read()
                if c != ord(".") and not ord("0") <= c <= ord("9"):
                    self._peekc = c
                    return ord("-")
            seen_dot = False
            while (c == ord(".") and not seen_dot) or ord("0") <= c <= ord("9"):
                seen_dot = seen_dot or c == ord(".")
                c = self._read()
            self._peekc = c
            return _TT_NUMBER

        if ct & _CT_ALPHA:
            chars: list[str] = []
            while True:
                chars.append(chr(c))
                c = self._read()
                if c < 0 or not _ctype(c) & (_CT_ALPHA | _CT_DIGIT):
                    break
            self._peekc = c
            self.sval = "".join(chars)
            return _TT_WORD

        if ct & _CT_QUOTE:
            return self._quoted(c)

        if c == ord("/"):
            c = self._read()
            if c == ord("*"):
                prevc = 0
                while True:
                    c = self._read()
                    if c == ord("/") and prevc == ord("*"):
                        return None
                    if c == 0xD:
                        c = self._read()
                        if c == 0xA:
                            c = self._read()
                    elif c == 0xA:
                        c = self._read()
                    if c < 0:
                        return _TT_EOF
                    prevc = c
            if c == ord("/"):
                self._skip_line()
                return None
            # A lone '/' is still a comment character, so the rest of the line is skipped; Java has already
            # consumed the character after the '/', even when that was the line break.
            self._skip_line()
            return None

        if ct & _CT_COMMENT:
            self._skip_line()
            return None
        return c

    def _quoted(self, quote: int) -> int:
        chars: list[str] = []
        d = self._read()
        while d >= 0 and d != quote and d not in (0xA, 0xD):
            if d == ord("\\"):
                c = self._read()
                first = c
                if ord("0") <= c <= ord("7"):
                    c -= ord("0")
                    c2 = self._read()
                    if ord("0") <= c2 <= ord("7"):
                        c = (c << 3) + (c2 - ord("0"))
                        c2 = self._read()
                        if ord("0") <= c2 <= ord("7") and first <= ord("3"):
                            c = (c << 3) + (c2 - ord("0"))
                            d = self._read()
                        else:
                            d = c2
                    else:
                        d = c2
                else:
                    c = _ESCAPES.get(chr(c), c) if c >= 0 else 0xFFFF  # Java stores (char) -1
                    d = self._read()
            else:
                c = d
                d = self._read()
            chars.append(chr(c))
        self._peekc = _NEED_CHAR if d == quote else d
        self.sval = "".join(chars)
        return quote


_CONTROL_FLAGS = frozenset({"REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL"})


def _control_flag(flag: str | None) -> str:
    if flag is None:
        raise ValueError("Login module control flag is not available in the JAAS config")
    upper = flag.upper()
    if upper not in _CONTROL_FLAGS:
        raise ValueError(f"Invalid login module control flag '{flag}' in JAAS config")
    return upper


def _parse_entry(tok: _StreamTokenizer) -> JaasConfig:
    login_module = tok.sval
    if tok.next_token() == _TT_EOF:
        raise ValueError("Login module control flag not specified in JAAS config")
    control_flag = _control_flag(tok.sval)
    options: dict[str, str] = {}
    while tok.next_token() != _TT_EOF and tok.ttype != ord(";"):
        key = tok.sval
        if tok.next_token() != ord("=") or tok.next_token() == _TT_EOF or tok.sval is None:
            raise ValueError(f"Value not specified for key '{'null' if key is None else key}' in JAAS config")
        if key is None:  # Java would store a null key; no login module could read it
            raise ValueError("Option name not specified in JAAS config")
        options[key] = tok.sval  # a repeated key keeps the last value, as HashMap.put does
    if tok.ttype != ord(";"):
        raise ValueError("JAAS config entry not terminated by semi-colon")
    if not login_module:  # Java's AppConfigurationEntry rejects this (with no message)
        raise ValueError("Login module not specified in JAAS config")
    return JaasConfig(login_module, control_flag, options)


def parse_jaas_config(text: str) -> JaasConfig:
    """Parse a ``sasl.jaas.config`` value: ``<LoginModuleClass> <flag> (<name>=<value>)*;``.

    Kafka accepts exactly one login module in this property (JaasContext.load); messages are Kafka's.
    """
    tok = _StreamTokenizer(text)
    entries: list[JaasConfig] = []
    while tok.next_token() != _TT_EOF:
        entries.append(_parse_entry(tok))
    if not entries:
        raise ValueError("Login module not specified in JAAS config")
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    entry = entries[0]
    name = entry.login_module.strip()
    if name in _DISALLOWED_LOGIN_MODULES:
        raise ValueError(
            f"{name} is not allowed. Update System property 'org.apache.kafka.disallowed.login.modules' to allow {name}"
        )
    return entry

"""Who an SSL client is: its certificate's subject DN as Kafka writes it, through ``ssl.principal.mapping.rules``.

Kafka's DefaultKafkaPrincipalBuilder takes the peer certificate's ``X500Principal.getName()`` — the RFC 2253
form: the DN's RDNs last to first, ``,``-separated, the RFC 2253 keywords (CN, C, L, ST, O, OU, STREET, DC,
UID) by name and any other attribute as its OID with the value's DER encoding in hex (``#...``) — and hands it
to SslPrincipalMapper (KIP-371). ACLs and ``super.users`` name principals in exactly that text, so both are
reproduced here to the character: an ACL written for a Kafka broker must match here too.

The mapper's rules are Kafka's: ``DEFAULT`` (the DN unchanged) or ``RULE:<regex>/<replacement>/[L|U]``, tried
in order, the first whose regex matches the whole DN wins; none matching refuses the client. Java's regex and
replacement syntax are taken as Python's ``re`` understands them (the rules operators write — groups, classes,
anchors, lazy quantifiers — mean the same in both); a rule ``re`` cannot compile is refused at load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography import x509
from cryptography.x509.oid import NameOID

#: Kafka's default ``ssl.principal.mapping.rules``.
DEFAULT_RULES = "DEFAULT"

_RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE_PATTERN)
_BACK_REFERENCE = re.compile(r"\$(\d+)")

#: The attribute keywords Java's X500Principal.getName() (RFC 2253) writes by name; others are written as OIDs.
_RFC2253_KEYWORDS = {
    NameOID.COMMON_NAME: "CN",
    NameOID.COUNTRY_NAME: "C",
    NameOID.LOCALITY_NAME: "L",
    NameOID.STATE_OR_PROVINCE_NAME: "ST",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.STREET_ADDRESS: "STREET",
    NameOID.DOMAIN_COMPONENT: "DC",
    NameOID.USER_ID: "UID",
}
#: Characters Java's AVA.toRFC2253String escapes with a backslash wherever they occur.
_ESCAPED = frozenset(',=+<>#;"\\')


class InvalidRule(ValueError):
    """``ssl.principal.mapping.rules`` holds a rule Kafka would refuse (or one ``re`` cannot compile)."""


class NoMatchingRule(ValueError):
    """No rule applies to a client's DN: Kafka fails that client's authentication."""


def _escape_value(text: str) -> str:
    out = "".join("\\" + c if c in _ESCAPED else c for c in text)
    if out.startswith(" "):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _der_hex(attribute: x509.NameAttribute[str | bytes]) -> str:
    """``#`` and the attribute value's DER encoding, as Java writes an attribute it has no RFC 2253 keyword for."""
    value = attribute.value if isinstance(attribute.value, bytes) else attribute.value.encode()
    tag = attribute._type.value  # the ASN.1 string type's universal tag (UTF8String 12, IA5String 22, ...)
    n = len(value)
    if n < 0x80:
        length = bytes([n])  # DER's short form
    else:
        digits = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(digits)]) + digits  # long form: the count of length bytes, then the length
    return "#" + (bytes([tag]) + length + value).hex()


def rfc2253(name: x509.Name) -> str:
    """``X500Principal.getName()`` of a certificate's subject: RDNs last to first, Java's keywords and escapes."""
    rdns = []
    for rdn in reversed(list(name.rdns)):
        avas = []
        for attribute in rdn:
            keyword = _RFC2253_KEYWORDS.get(attribute.oid)
            if keyword is None:
                avas.append(f"{attribute.oid.dotted_string}={_der_hex(attribute)}")
            else:
                value = attribute.value if isinstance(attribute.value, str) else attribute.value.decode()
                avas.append(f"{keyword}={_escape_value(value)}")
        rdns.append("+".join(avas))
    return ",".join(rdns)


def certificate_dn(der: bytes) -> str:
    """The subject DN of a DER certificate (``SSLObject.getpeercert(binary_form=True)``) in Kafka's form."""
    return rfc2253(x509.load_der_x509_certificate(der).subject)


def _java_replacement(template: str, match: re.Match[str]) -> str:
    """Java's Matcher.appendReplacement: ``\\x`` is a literal x, ``$n`` a group (digits taken while the group
    number stays within the pattern's groups), ``${name}`` a named group; anything else is literal."""
    groups = match.re.groups
    out: list[str] = []
    i = 0
    while i < len(template):
        c = template[i]
        if c == "\\" and i + 1 < len(template):
            out.append(template[i + 1])
            i += 2
        elif c == "$" and i + 1 < len(template) and template[i + 1] == "{":
            end = template.index("}", i)
            out.append(match.group(template[i + 2 : end]) or "")
            i = end + 1
        elif c == "$" and i + 1 < len(template) and template[i + 1].isdigit():
            number = int(template[i + 1])
            i += 2
            while i < len(template) and template[i].isdigit() and number * 10 + int(template[i]) <= groups:
                number = number * 10 + int(template[i])
                i += 1
            if number > groups:
                raise NoMatchingRule(f"No group {number} in {match.re.pattern}")
            out.append(match.group(number) or "")
        elif c == "$":
            raise NoMatchingRule(f"Illegal group reference in replacement {template}")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _escape_missing_groups(replacement: str, groups: int) -> str:
    """Kafka's Rule.escapeLiteralBackReferences (from NiFi): a ``$n`` naming a group the pattern lacks becomes a
    literal, after truncating its digits as Java reads them. Like Kafka, the matches are those of the original
    text and each backslash goes in at the original offset."""
    if groups == 0:
        return replacement
    value = replacement
    for found in _BACK_REFERENCE.finditer(replacement):
        digits = found.group(1)
        if digits.startswith("0"):
            continue
        number = int(digits)
        while number > groups and number >= 10:
            number //= 10
        if number > groups:
            at = found.start(1) - 1
            value = value[:at] + "\\" + value[at:]
    return value


@dataclass(frozen=True)
class Rule:
    """One mapping rule: DEFAULT (``pattern`` None) or a regex, its Java replacement and a case change."""

    pattern: re.Pattern[str] | None
    replacement: str = ""
    lower: bool = False
    upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        template = _escape_missing_groups(self.replacement, self.pattern.groups)
        result = self.pattern.sub(lambda m: _java_replacement(template, m), dn)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        text = f"RULE:{self.pattern.pattern}/{self.replacement}"
        return text + ("/L" if self.lower else "/U" if self.upper else "")


@dataclass(frozen=True)
class SslPrincipalMapper:
    """Kafka's SslPrincipalMapper over parsed ``ssl.principal.mapping.rules``."""

    rules: tuple[Rule, ...]

    @classmethod
    def from_rules(cls, text: str | None) -> SslPrincipalMapper:
        """Parse the rules as Kafka does: split on commas outside rules, every piece a whole rule or empty."""
        pieces = [m.group(1) for m in _RULE_SPLITTER.finditer((DEFAULT_RULES if text is None else text).strip())]
        rules: list[Rule] = []
        for piece in pieces:
            match = _RULE_PARSER.match(piece)
            if match is None:
                raise InvalidRule(f"Invalid rule: {piece}")
            if match.end() != len(piece):
                raise InvalidRule(f"Invalid rule: `{piece}`, unmatched substring: `{piece[match.end() :]}`")
            if match.group(1) is not None:
                rules.append(Rule(None))
            elif match.group(2) is not None:
                try:
                    pattern = re.compile(match.group(2))
                except re.error as exc:
                    raise InvalidRule(f"Invalid rule: `{piece}`: {exc}") from None
                flag = match.group(6)
                rules.append(Rule(pattern, match.group(4), flag == "L", flag == "U"))
        return cls(tuple(rules))

    def name(self, dn: str) -> str:
        """The principal name for ``dn``; raises :class:`NoMatchingRule` when no rule applies."""
        for rule in self.rules:
            found = rule.apply(dn)
            if found is not None:
                return found
        raise NoMatchingRule(f"No rules apply to {dn}, rules [{', '.join(map(str, self.rules))}]")

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(map(str, self.rules))}])"

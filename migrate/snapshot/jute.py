"""ZooKeeper's Jute binary encoding, read from a stream (big-endian; ``ustring`` and ``buffer`` are an int
length then bytes, -1 for null; ``vector`` an int count then elements).

Every read knows the file and the offset it started at, so a truncated or corrupted file is reported as
"snapshot.1a: offset 1234: ..." rather than as a Python struct error. Lengths above ZooKeeper's own limit
(``jute.maxbuffer`` 0xfffff plus its extra size, 1 MiB each by default) are refused as ZooKeeper refuses them
("Unreasonable length"), which also keeps memory bounded by the largest znode.
"""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO

#: jute.maxbuffer (0xfffff) + zookeeper.jute.maxbuffer.extrasize (defaults to maxbuffer).
MAX_LENGTH = 0xFFFFF * 2
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


class FormatError(ValueError):
    """A file that is not what it should be: ``str()`` names the file and the offset."""

    def __init__(self, name: str, offset: int, reason: str) -> None:
        super().__init__(f"{name}: offset {offset}: {reason}")
        self.name = name
        self.offset = offset
        self.reason = reason


class Reader:
    """Reads Jute values from ``stream`` (decompressed), keeping the offset and, when asked, a running
    Adler-32 of everything read (ZooKeeper's snapshot seal covers every byte before it)."""

    def __init__(self, stream: BinaryIO, name: str, *, checksum: bool = False) -> None:
        self.stream = stream
        self.name = name
        self.offset = 0
        self.adler = 1 if checksum else None

    def fail(self, reason: str, at: int | None = None) -> FormatError:
        return FormatError(self.name, self.offset if at is None else at, reason)

    def read(self, n: int, what: str) -> bytes:
        start = self.offset
        data = self.stream.read(n) if n else b""
        if len(data) != n:
            raise self.fail(f"file ends inside {what} (needed {n} bytes, found {len(data)})", start)
        self.offset += n
        if self.adler is not None:
            self.adler = zlib.adler32(data, self.adler)
        return data

    def at_end(self) -> bool:
        """True when nothing is left (without consuming anything that is)."""
        peek = getattr(self.stream, "peek", None)
        if peek is not None:
            return not peek(1)
        pos = self.stream.tell()
        more = self.stream.read(1)
        self.stream.seek(pos)
        return not more

    def i32(self, what: str) -> int:
        value: int = _INT.unpack(self.read(4, what))[0]
        return value

    def i64(self, what: str) -> int:
        value: int = _LONG.unpack(self.read(8, what))[0]
        return value

    def boolean(self, what: str) -> bool:
        return self.read(1, what) != b"\x00"

    def buffer(self, what: str) -> bytes | None:
        start = self.offset
        n = self.i32(f"the length of {what}")
        if n == -1:
            return None
        if n < -1 or n > MAX_LENGTH:
            raise self.fail(f"Unreasonable length = {n} for {what}", start)
        return self.read(n, what)

    def ustring(self, what: str) -> str | None:
        start = self.offset
        data = self.buffer(what)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8", start) from None

    def count(self, what: str) -> int:
        """A vector's element count (-1, a null vector, reads as 0)."""
        start = self.offset
        n = self.i32(f"the count of {what}")
        if n < -1 or n > MAX_LENGTH:
            raise self.fail(f"Unreasonable length = {n} for {what}", start)
        return max(n, 0)


Acl = tuple[int, str, str]  # (perms, scheme, id)


def read_acls(r: Reader, what: str) -> list[Acl]:
    out: list[Acl] = []
    for _ in range(r.count(what)):
        perms = r.i32("an ACL's perms")
        scheme = r.ustring("an ACL's scheme") or ""
        ident = r.ustring("an ACL's id") or ""
        out.append((perms, scheme, ident))
    return out

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
from typing import Any, BinaryIO

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
    Adler-32 of everything read (ZooKeeper's snapshot seal covers every byte before it).

    Reads come from an internal buffer refilled 256 KiB at a time, and the checksum is brought up to date
    over whole consumed stretches of it (not per field): per-field ``read`` and ``adler32`` calls cost a
    snapshot parse most of its time."""

    CHUNK = 1 << 18

    def __init__(self, stream: BinaryIO, name: str, *, checksum: bool = False) -> None:
        self.stream = stream
        self.name = name
        self._buf = b""
        self._pos = 0
        self._base = 0  # file offset of _buf[0]
        self._summed = 0  # _buf[:_summed] is in the checksum
        self._adler = 1 if checksum else None

    @property
    def offset(self) -> int:
        return self._base + self._pos

    @offset.setter
    def offset(self, value: int) -> None:
        """Re-base offsets (a record decoded out of a larger file), only before anything is read."""
        self._base = value - self._pos

    @property
    def adler(self) -> int | None:
        if self._adler is not None and self._summed < self._pos:
            self._adler = zlib.adler32(self._buf[self._summed : self._pos], self._adler)
            self._summed = self._pos
        return self._adler

    def fail(self, reason: str, at: int | None = None) -> FormatError:
        return FormatError(self.name, self.offset if at is None else at, reason)

    def _need(self, n: int) -> bool:
        if len(self._buf) - self._pos >= n:
            return True
        self.adler  # noqa: B018 - bring the checksum up to date before dropping consumed bytes
        rest = self._buf[self._pos :]
        self._base += self._pos
        more = self.stream.read(max(n - len(rest), self.CHUNK))
        self._buf, self._pos, self._summed = rest + more, 0, 0
        return len(self._buf) >= n

    def read(self, n: int, what: str) -> bytes:
        start = self.offset
        if not self._need(n):
            found = len(self._buf) - self._pos
            raise self.fail(f"file ends inside {what} (needed {n} bytes, found {found})", start)
        data = self._buf[self._pos : self._pos + n]
        self._pos += n
        return data

    def at_end(self) -> bool:
        """True when nothing is left (without consuming anything that is)."""
        return not self._need(1)

    def i32(self, what: str) -> int:
        if not self._need(4):
            self.read(4, what)
        value: int = _INT.unpack_from(self._buf, self._pos)[0]
        self._pos += 4
        return value

    def i64(self, what: str) -> int:
        if not self._need(8):
            self.read(8, what)
        value: int = _LONG.unpack_from(self._buf, self._pos)[0]
        self._pos += 8
        return value

    def unpack(self, layout: struct.Struct, what: str) -> tuple[Any, ...]:
        """Several fixed-size fields at once (a node's 60-byte stat is one call, not nine)."""
        if not self._need(layout.size):
            self.read(layout.size, what)
        values = layout.unpack_from(self._buf, self._pos)
        self._pos += layout.size
        return values

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

"""kazoo's connection, reading what the server sent in large chunks instead of two exact reads a packet.

Why: kazoo's ``ConnectionHandler._read`` asks ``poll(2)`` and then ``recv(2)`` for exactly the bytes it needs,
twice a packet (the length, then the packet). A node's connection receives a packet for every watch event, and
its own controller's writes fire one on every partition state they change: a cold failover at a million
partitions reads well over half a million of them, each costing the connection thread two system call pairs
under the GIL it shares with the controller. :class:`BufferedConnectionHandler` receives up to
:data:`RECV_BYTES` at a time into a buffer and hands packets out of it.

The invariant that keeps this safe: **whenever the connection thread goes back to waiting on the socket, the
buffer holds no complete packet** (kazoo's loop waits in ``poll`` on the socket, which knows nothing of our
buffer, so a packet left there would wait for the next byte the server sends). Hence:

- only :meth:`_read_socket` (the loop's "something to read") reads ahead, and before returning it handles every
  complete packet the buffer holds, as kazoo would have one loop turn after another;
- the connection handshake and SASL (kazoo's ``_connect``, which waits on its own answers) read exactly, as
  kazoo does, and a new connection starts with an empty buffer.
"""

from __future__ import annotations

import ssl
from typing import Any, Final

from kazoo.exceptions import ConnectionDropped
from kazoo.protocol.connection import CLOSE_RESPONSE, ConnectionHandler

__all__ = ["RECV_BYTES", "BufferedConnectionHandler"]

#: The most one ``recv`` takes: a few hundred watch events.
RECV_BYTES: Final = 65536


class BufferedConnectionHandler(ConnectionHandler):  # type: ignore[misc]  # kazoo is untyped
    """:class:`kazoo.protocol.connection.ConnectionHandler` that reads ahead while handling packets."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._inbox = bytearray()  # deleting from its front is amortised O(1) in CPython
        self._reading_ahead = False

    def _connect(self, host: str, hostip: str, port: int) -> Any:
        self._inbox.clear()  # whatever was left belonged to the connection that is gone
        return super()._connect(host, hostip, port)

    def _read_socket(self, read_timeout: float) -> Any:
        """kazoo's packet handling, for the packet the socket signalled and every other complete one that
        arrived with it (see the module's invariant)."""
        self._reading_ahead = True
        try:
            while True:
                response = super()._read_socket(read_timeout)
                if response == CLOSE_RESPONSE or not self._packet_buffered():
                    return response
        finally:
            self._reading_ahead = False

    def _packet_buffered(self) -> bool:
        """A complete packet is in the buffer, or bytes an SSL socket decrypted that ``poll`` cannot see."""
        inbox = self._inbox
        if len(inbox) >= 4 and len(inbox) >= 4 + int.from_bytes(inbox[:4], "big", signed=True):
            return True
        sock = self._socket
        return hasattr(sock, "pending") and sock.pending() > 0

    def _read(self, length: int, timeout: float) -> bytes:
        if not self._reading_ahead and not self._inbox:
            return bytes(super()._read(length, timeout))  # the handshake: exact reads, as kazoo
        inbox = self._inbox
        while len(inbox) < length:
            self._receive(length - len(inbox) if not self._reading_ahead else RECV_BYTES, timeout)
        out = bytes(inbox[:length])
        del inbox[:length]
        return out

    def _receive(self, size: int, timeout: float) -> None:
        """One ``recv`` of at most ``size`` bytes into the buffer, waiting up to ``timeout`` for them, with
        kazoo's handling of its errors (``_read``)."""
        sock = self._socket
        with self._socket_error_handling():
            # An SSL socket may hold decrypted bytes while the socket below it has nothing to poll for.
            decrypted = hasattr(sock, "pending") and sock.pending() > 0
            if not decrypted and not self.handler.select([sock], [], [], timeout)[0]:
                raise self.handler.timeout_exception("socket time-out during read")
            try:
                chunk = sock.recv(size)
            except ssl.SSLError as exc:
                if exc.errno in (ssl.SSL_ERROR_WANT_READ, ssl.SSL_ERROR_WANT_WRITE):
                    return
                raise
        if chunk == b"":
            raise ConnectionDropped("socket connection broken")
        self._inbox += chunk

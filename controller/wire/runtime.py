"""Runs a node's Kafka listeners on one asyncio loop in a background thread.

The node's ZooKeeper work is thread-based (kazoo); the protocol is asyncio. One loop thread keeps them
apart: handlers hop to worker threads for blocking controller calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future

from controller.security.tls import TlsSettings
from controller.wire.server import Connection, Dispatch, Handler, KafkaServer, RawHandler, TlsFailure
from zkmodel.brokers import EndPoint


class WireRuntime:
    def __init__(
        self,
        handlers: dict[int, Handler],
        supported: dict[int, tuple[int, int]],
        *,
        max_frame: int,
        raw_handlers: dict[int, RawHandler] | None = None,
        dispatch: Dispatch | None = None,
        on_open: Callable[[Connection], None] | None = None,
        on_close: Callable[[Connection], None] | None = None,
        on_auth_failure: Callable[[Connection], None] | None = None,
        tls: Mapping[str, TlsSettings] | None = None,
        on_tls_failure: TlsFailure | None = None,
    ) -> None:
        self.tls = dict(tls or {})
        self.on_tls_failure = on_tls_failure
        self.on_auth_failure = on_auth_failure
        self.dispatch = dispatch
        self.on_open = on_open
        self.on_close = on_close
        self.raw_handlers = raw_handlers or {}
        self.handlers = handlers
        self.supported = supported
        self.max_frame = max_frame
        self.loop = asyncio.new_event_loop()
        self.servers: list[KafkaServer] = []
        self._thread = threading.Thread(target=self.loop.run_forever, name="kafka-wire", daemon=True)

    def start(self, endpoints: Sequence[EndPoint]) -> list[EndPoint]:
        """Bind every listener; returns the endpoints with the ports actually bound (port 0 = any free)."""
        self._thread.start()
        bound = []
        for endpoint in endpoints:
            server = KafkaServer(
                endpoint.listener,
                endpoint.host or "0.0.0.0",
                endpoint.port,
                self.handlers,
                self.supported,
                max_frame=self.max_frame,
                raw_handlers=self.raw_handlers,
                security_protocol=endpoint.security_protocol,
                dispatch=self.dispatch,
                on_open=self.on_open,
                on_close=self.on_close,
                on_auth_failure=self.on_auth_failure,
                tls=self.tls.get(endpoint.listener),
                on_tls_failure=self.on_tls_failure,
            )
            port = self._run(server.start())
            self.servers.append(server)
            bound.append(EndPoint(endpoint.listener, endpoint.host, port, endpoint.security_protocol))
        return bound

    def _run(self, coro: object) -> int:
        future: Future[int] = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        return future.result(timeout=30)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        for server in self.servers:
            asyncio.run_coroutine_threadsafe(server.stop(), self.loop).result(timeout=30)
        # A connection still waiting on its handler (a ZooKeeper write in a thread) is cancelled and unwound here:
        # a task left pending on a stopped loop is destroyed at exit with asyncio's "Task was destroyed but it
        # is pending!" error in the node log, and its finally blocks (connection counts, on_close) never run.
        with contextlib.suppress(TimeoutError, concurrent.futures.TimeoutError):
            asyncio.run_coroutine_threadsafe(_cancel_pending(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


async def _cancel_pending() -> None:
    me = asyncio.current_task()
    rest = [t for t in asyncio.all_tasks() if t is not me]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)

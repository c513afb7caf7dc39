"""A fake provider server over real TCP on 127.0.0.1 (an ephemeral port), for fault injection.

One asyncio server, run in a thread of its own, answers every provider under its own path
prefix (``http://127.0.0.1:<port>/<provider>/...``, the ``<provider>_base_url`` setting).
A provider answers with its recorded fixture (:mod:`tests.faults.providers`) unless a fault
is set for it:

* ``429``: ``429 Too Many Requests`` with ``Retry-After: 0``; ``5xx``: ``503``;
* ``hang``: the request is read and never answered;
* ``drip``: the healthy answer, one byte every ``drip_every_s`` (each read is quick: only a
  bound on the whole request or fetch stops it);
* ``truncated``: a ``Content-Length`` of the whole body, half of it sent, then the
  connection closed;
* the body faults (``drift``, ``rejected``, ``zero``, ``huge``) rewrite the healthy body with
  the provider's own :class:`~tests.faults.providers.FakeProvider` rules.

HTTP/1.1 is spoken minimally: one request per connection (``Connection: close``), a body
read by its ``Content-Length``, which is what httpx sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .providers import FakeProvider

__all__ = ["FakeServer", "Fault", "Request", "running_server"]


class Fault(enum.StrEnum):
    TOO_MANY = "429"
    UNAVAILABLE = "5xx"
    HANG = "hang"
    DRIP = "drip"
    TRUNCATED = "truncated"
    DRIFT = "drift"
    REJECTED = "rejected"
    ZERO = "zero"
    HUGE = "huge"


class Request:
    """What the server read of one request, the provider prefix taken off the path."""

    def __init__(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes,
    ) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body


_REASONS = {200: "OK", 404: "Not Found", 429: "Too Many Requests", 503: "Service Unavailable"}


class FakeServer:
    """The server; ``providers`` by name, ``faults`` set per provider name while it runs."""

    def __init__(self, providers: Mapping[str, FakeProvider], *, drip_every_s: float = 0.1) -> None:
        self.providers = dict(providers)
        self.faults: dict[str, Fault] = {}
        self.drip_every_s = drip_every_s
        self.requests: list[tuple[str, str, str]] = []  # (provider, method, path)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-providers", daemon=True)
        self._server: asyncio.Server | None = None
        self._stop: asyncio.Event | None = None

    def base_url(self, provider: str) -> str:
        return f"http://127.0.0.1:{self.port}/{provider}"

    # lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake provider server did not start")

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        async with self._server:
            await self._stop.wait()
            self._server.close()
            # hanging and dripping handlers end with the server
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # one connection ----------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader)
            if request is None:
                return
            await self._answer(request, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(
        self, raw: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        name, _, rest = raw.path.lstrip("/").partition("/")
        provider = self.providers.get(name)
        self.requests.append((name, raw.method, "/" + rest))
        if provider is None:
            await _send(writer, 404, "application/json", b'{"error": "no such provider"}')
            return
        request = Request(raw.method, "/" + rest, raw.query, raw.headers, raw.body)
        fault = self.faults.get(name)
        if fault is Fault.TOO_MANY:
            await _send(
                writer, 429, "application/json", b'{"error": "rate limited"}', {"Retry-After": "0"}
            )
            return
        if fault is Fault.UNAVAILABLE:
            await _send(writer, 503, "text/plain", b"upstream unavailable")
            return
        if fault is Fault.HANG:
            await reader.read()  # never answered: wait until the client gives up
            return
        answer = provider.answer(request)
        if answer is None:
            await _send(writer, 404, "application/json", b'{"error": "no such route"}')
            return
        content_type, body = answer
        if fault in (Fault.DRIFT, Fault.REJECTED, Fault.ZERO, Fault.HUGE):
            body = provider.rewrite(fault, content_type, body)
        if fault is Fault.DRIP:
            writer.write(_head(200, content_type, len(body)))
            for i in range(len(body)):
                writer.write(body[i : i + 1])
                await writer.drain()
                await asyncio.sleep(self.drip_every_s)
            return
        if fault is Fault.TRUNCATED:
            writer.write(_head(200, content_type, len(body)) + body[: len(body) // 2])
            await writer.drain()
            return  # the connection closes short of Content-Length
        await _send(writer, 200, content_type, body)


def _head(
    status: int, content_type: str, length: int, extra: Mapping[str, str] | None = None
) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        f"Content-Type: {content_type}",
        f"Content-Length: {length}",
        "Connection: close",
        *(f"{k}: {v}" for k, v in (extra or {}).items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send(
    writer: asyncio.StreamWriter,
    status: int,
    content_type: str,
    body: bytes,
    extra: Mapping[str, str] | None = None,
) -> None:
    writer.write(_head(status, content_type, len(body), extra) + body)
    await writer.drain()


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines or not lines[0]:
        return None
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            key, value = line.split(":", 1)
            headers[key.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    body = await reader.readexactly(length) if length else b""
    url = urllib.parse.urlsplit(target)
    query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
    return Request(method, url.path, query, headers, body)


@contextlib.contextmanager
def running_server(providers: Mapping[str, FakeProvider], **kwargs: float) -> Iterator[FakeServer]:
    server = FakeServer(providers, **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()

"""Serve a VirtualWeb on 127.0.0.1 as an HTTP/1.1 forward proxy, one asyncio event loop.

A crawler reaches it through Scrapy's standard HttpProxyMiddleware
(``http_proxy=http://127.0.0.1:PORT``) and asks for absolute URIs such as
``GET http://h0042.web.test/ HTTP/1.1``; the host is taken from the URI, or from
the Host header for origin-form requests (curl, tests). Nothing is resolved or
forwarded: every host lives in the generated web.

HTTP parsing is hand-written on asyncio.Protocol with keep-alive and
pipelining, because a general framework spends more time per request than
generating the page does. The special host ``control.test`` answers
``/log`` (the request log as JSON lines, ``?since=SEQ`` for the newer ones),
``/stats`` and ``/reset``; it is not logged.

With ``latency`` > 0 each answer is held that long before it is written, as
a remote server's network and think time, so the log can show how many
requests to one host a crawler had in flight at once: an instant server
answers each request before it reads the next and never sees two.
"""

from __future__ import annotations

import asyncio
import collections
import json
import signal
import threading
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import parse_qs

from bench.virtualweb.web import Response, VirtualWeb

CONTROL_HOST = "control.test"
MAX_HEAD = 64 * 1024
REASONS = {
    200: b"OK", 301: b"Moved Permanently", 302: b"Found", 304: b"Not Modified", 400: b"Bad Request",
    404: b"Not Found", 405: b"Method Not Allowed", 431: b"Request Header Fields Too Large",
    500: b"Internal Server Error", 502: b"Bad Gateway",
}


#: A logged request: seq, arrival (monotonic), host, target, status, answer written (monotonic), and how many
#: requests to its host were in flight when it arrived, itself included.
LogEntry = tuple[int, float, str, str, int, float, int]


class RequestLog:
    """Each answered request as a :data:`LogEntry`: the newest in a ring, all in a file if asked."""

    def __init__(self, size: int, path: Path | None = None):
        self.ring: collections.deque[LogEntry] = collections.deque(maxlen=size)
        self.count = 0
        self._file = open(path, "w", encoding="utf-8", buffering=1 << 20) if path else None

    def add(self, host: str, target: str, status: int, arrived: float | None = None, in_flight: int = 1) -> None:
        """Log a request when its answer is written; ``arrived`` defaults to now (an instant answer)."""
        done = time.monotonic()
        entry = (self.count, done if arrived is None else arrived, host, target, status, done, in_flight)
        self.count += 1
        self.ring.append(entry)
        if self._file:
            self._file.write(_log_line(entry))

    def lines(self, since: int = 0) -> str:
        return "".join(_log_line(entry) for entry in self.ring if entry[0] >= since)

    def clear(self) -> None:
        self.ring.clear()

    def close(self) -> None:
        if self._file:
            self._file.close()
            self._file = None


def _log_line(entry: LogEntry) -> str:
    seq, moment, host, target, status, done, in_flight = entry
    return json.dumps({"seq": seq, "t": round(moment, 6), "host": host, "path": target, "status": status,
                       "done": round(done, 6), "in_flight": in_flight}) + "\n"


@dataclass
class Request:
    method: bytes
    host: str | None  # lower case, without port
    target: str  # origin form: path and query
    keep_alive: bool
    if_modified_since: str | None
    body_length: int

    @classmethod
    def parse(cls, head: bytes) -> Request | None:
        """Read a request head (without its blank line); None when it is not HTTP."""
        lines = head.split(b"\r\n")
        request_line = lines[0].split(b" ")
        if len(request_line) != 3:
            return None
        method, raw_target, version = request_line
        request = cls(method, None, raw_target.decode("latin-1"), version == b"HTTP/1.1", None, 0)
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip()
            if name == b"host":
                request.host = value.decode("latin-1")
            elif name in (b"connection", b"proxy-connection") and value.lower() in (b"close", b"keep-alive"):
                request.keep_alive = value.lower() == b"keep-alive"
            elif name == b"if-modified-since":
                request.if_modified_since = value.decode("latin-1")
            elif name == b"content-length" and value.isdigit():
                request.body_length = int(value)
        if request.target[:7].lower() == "http://":  # absolute form, as sent to a proxy
            authority, slash, path = request.target[7:].partition("/")
            request.host, request.target = authority, slash + path
            if not request.target:
                request.target = "/"
        if request.host is not None:
            request.host = request.host.lower().rpartition(":")[0] if ":" in request.host else request.host.lower()
        if method != b"CONNECT" and not request.target.startswith("/"):
            request.host = None  # https://, '*' or garbage: nothing this proxy serves
        return request


class VirtualWebServer:
    """The proxy's state: the web, the request log, requests in flight per host and the listening socket."""

    def __init__(self, web: VirtualWeb, port: int = 0, log_size: int = 500_000, log_file: Path | None = None,
                 latency: float = 0.0):
        self.web = web
        self.port = port
        self.latency = latency
        self.log = RequestLog(log_size, log_file)
        self.in_flight: collections.Counter[str] = collections.Counter()
        self.most_in_flight = 0  # the most requests to one host in flight at once since the start or /reset
        self.started = time.monotonic()
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> VirtualWebServer:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), "127.0.0.1", self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server:
            self._server.close()
            await self._server.wait_closed()
        self.log.close()

    def arrive(self, host: str) -> int:
        """Count a request to ``host`` in flight until :meth:`answered`; how many are now in flight there."""
        self.in_flight[host] += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight[host])
        return self.in_flight[host]

    def answered(self, request: Request, response: Response, arrived: float, in_flight: int) -> None:
        """Log a request whose answer has just been written, and take it out of its host's count."""
        self.log.add(request.host, request.target, response.status, arrived, in_flight)
        self.in_flight[request.host] -= 1
        if not self.in_flight[request.host]:
            del self.in_flight[request.host]

    def handle(self, request: Request) -> Response:
        """The answer to a request (generated at once; :class:`_Connection` writes and logs it)."""
        if request.host == CONTROL_HOST:
            return self._control(request.target)
        if request.method not in (b"GET", b"HEAD"):
            response = Response(405, b"only GET and HEAD\n", content_type="text/plain")
        else:
            response = self.web.respond(request.host, request.target)
            since = request.if_modified_since
            if since and response.status == 200 and _not_modified(response, since):
                response = Response(304, last_modified=response.last_modified, page=response.page)
        return response

    def stats(self) -> dict[str, object]:
        return {
            "requests": self.log.count,
            "cpu_seconds": time.process_time(),
            "uptime": time.monotonic() - self.started,
            "monotonic": time.monotonic(),
            "latency": self.latency,
            "most_in_flight_per_host": self.most_in_flight,
            "seed": self.web.seed,
            "hosts": self.web.hosts,
            "pages": self.web.pages,
        }

    def _control(self, target: str) -> Response:
        path, _, query = target.partition("?")
        if path == "/log":
            since = int(parse_qs(query).get("since", ["0"])[0])
            return Response(200, self.log.lines(since).encode(), content_type="application/x-ndjson")
        if path == "/stats":
            return Response(200, json.dumps(self.stats()).encode(), content_type="application/json")
        if path == "/reset":
            self.log.clear()
            self.most_in_flight = max(self.in_flight.values(), default=0)
            return Response(200, b"log cleared\n", content_type="text/plain")
        return Response(404, b"control: /log, /stats, /reset\n", content_type="text/plain")


def _not_modified(response: Response, if_modified_since: str) -> bool:
    if if_modified_since == response.last_modified:
        return True
    try:
        return parsedate_to_datetime(if_modified_since) >= parsedate_to_datetime(response.last_modified)
    except (TypeError, ValueError):
        return False


def _head(response: Response, body_length: int, close: bool) -> bytes:
    lines = [
        b"HTTP/1.1 %d %s\r\nServer: virtualweb\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
        % (response.status, REASONS.get(response.status, b"Unknown"), response.content_type.encode(), body_length)
    ]
    if response.last_modified:
        lines.append(b"Last-Modified: %s\r\n" % response.last_modified.encode())
    if response.location:
        lines.append(b"Location: %s\r\n" % response.location.encode())
    if close:
        lines.append(b"Connection: close\r\n")
    lines.append(b"\r\n")
    return b"".join(lines)


class _Connection(asyncio.Protocol):
    """One client connection: parse requests from the byte stream, answer them in order.

    With the server's latency the next request is read only once the answer before it is written.
    """

    def __init__(self, server: VirtualWebServer):
        self.server = server
        self.buffer = b""
        self.paused = False
        self.waiting: asyncio.TimerHandle | None = None  # an answer held for the latency
        self._held: tuple[Request, Response, float, int] | None = None  # that answer: request, response, arrival, count
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        if self.waiting is not None:  # the client left before its answer: the request is no longer in flight
            self.waiting.cancel()
            self.waiting = None
            self._write_held()

    def data_received(self, data: bytes) -> None:
        self.buffer = self.buffer + data if self.buffer else data
        self._process()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._process()

    def _process(self) -> None:
        """Answer every complete request in the buffer unless the client stopped reading."""
        while not self.paused and self.waiting is None and self.transport and not self.transport.is_closing():
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    self._fail(431)
                return
            request = Request.parse(self.buffer[:end])
            if request is None:
                self._fail(400)
                return
            rest = self.buffer[end + 4 :]
            if len(rest) < request.body_length:
                return
            self.buffer = rest[request.body_length :]
            if request.method == b"CONNECT" or request.host is None:
                self._fail(405 if request.method == b"CONNECT" else 400)
                return
            if request.host == CONTROL_HOST:
                self._write(request, self.server.handle(request))
                continue
            arrived = time.monotonic()
            in_flight = self.server.arrive(request.host)
            response = self.server.handle(request)
            if self.server.latency > 0:
                self._held = (request, response, arrived, in_flight)
                self.waiting = asyncio.get_running_loop().call_later(self.server.latency, self._answer_held)
                return
            self._write(request, response)
            self.server.answered(request, response, arrived, in_flight)

    def _answer_held(self) -> None:
        self.waiting = None
        self._write_held()
        self._process()

    def _write_held(self) -> None:
        request, response, arrived, in_flight = self._held
        self._held = None
        if self.transport and not self.transport.is_closing():
            self._write(request, response)
        self.server.answered(request, response, arrived, in_flight)

    def _write(self, request: Request, response: Response) -> None:
        header = _head(response, len(response.body), not request.keep_alive)
        self.transport.write(header if request.method == b"HEAD" else header + response.body)
        if not request.keep_alive:
            self.transport.close()

    def _fail(self, status: int) -> None:
        body = b"%d %s\n" % (status, REASONS[status])
        self.transport.write(_head(Response(status, body, content_type="text/plain"), len(body), True) + body)
        self.transport.close()


class ServerThread:
    """Run a server on its own event loop in a daemon thread: for tests and the in-process benchmark."""

    def __init__(self, web: VirtualWeb, port: int = 0, **options):
        self.server = VirtualWebServer(web, port, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


def serve_until_signalled(server: VirtualWebServer, ready: str = "") -> None:
    """Serve until Ctrl-C or SIGTERM, then close the server and flush its log."""

    async def main() -> None:
        task = asyncio.current_task()
        for signum in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(signum, task.cancel)
        await server.start()
        if ready:
            print(ready.format(port=server.port), flush=True)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            pass
        finally:
            await server.close()

    asyncio.run(main())

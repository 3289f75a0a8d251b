"""The virtual web's own speed: drive a served web with a bounded loopback load and count.

The server runs in its own process (as in a benchmark), the client is a small
asyncio program with N keep-alive connections, one request in flight on each,
asking for what a crawler asks: pages all over the web, robots.txt files and
links as pages write them (session ids, aliases, redirects, dead links). Two
figures: requests per second achieved, and requests per CPU-second of the
server, its capacity when the client is not sharing the machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import random
import time
from pathlib import Path
from urllib.parse import urljoin

from bench.virtualweb.harness import ServedWeb
from bench.virtualweb.web import VirtualWeb

MAX_SECONDS = 300
MAX_CONNECTIONS = 512
REQUEST_MIX = 50_000  # distinct requests prepared before the clock starts


def request_mix(web: VirtualWeb, count: int, seed: int = 7) -> list[bytes]:
    """Proxy requests like a crawler's: 85% page URLs, 5% robots.txt, 10% links as written in pages."""
    rng = random.Random(seed)
    requests = []
    for _ in range(count):
        page = rng.randrange(web.pages)
        draw = rng.random()
        if draw < 0.85:
            url = web.url(page)
        elif draw < 0.90:
            url = urljoin(web.url(page), "/robots.txt")
        else:
            url = urljoin(web.url(page), rng.choice(web.links(page))[0])
        requests.append(f"GET {url} HTTP/1.1\r\nHost: {url.split('/')[2]}\r\nUser-Agent: selfbench\r\n\r\n".encode())
    return requests


class _Client(asyncio.Protocol):
    """One keep-alive connection sending the next request as soon as the last response is complete."""

    def __init__(self, requests: list[bytes], start: int, deadline: float, tally: dict, done: asyncio.Future):
        self.requests, self.next, self.deadline, self.tally, self.done = requests, start, deadline, tally, done
        self.buffer = b""
        self.response_end: int | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self._send()

    def _send(self) -> None:
        self.transport.write(self.requests[self.next % len(self.requests)])
        self.next += 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            if self.response_end is None:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = self.buffer[: end + 2].lower()
                start = head.index(b"content-length:") + 15
                length = int(head[start : head.index(b"\r\n", start)])
                self.response_end = end + 4 + length
                self.status = int(head[9:12])
            if len(self.buffer) < self.response_end:
                return
            self.tally["requests"] += 1
            self.tally["bytes"] += self.response_end
            self.tally["status"][self.status] = self.tally["status"].get(self.status, 0) + 1
            self.buffer = self.buffer[self.response_end :]
            self.response_end = None
            if time.monotonic() >= self.deadline:
                self.transport.close()
                return
            self._send()

    def connection_lost(self, exc) -> None:
        if not self.done.done():
            self.done.set_result(exc)


async def drive(port: int, requests: list[bytes], seconds: float, connections: int) -> dict:
    """Keep ``connections`` connections busy for ``seconds``; returns counts and the time taken."""
    loop = asyncio.get_running_loop()
    tally = {"requests": 0, "bytes": 0, "status": {}}
    started = time.monotonic()
    deadline = started + seconds
    waits = []
    for number in range(connections):
        done = loop.create_future()
        start = number * len(requests) // connections
        await loop.create_connection(lambda: _Client(requests, start, deadline, tally, done), "127.0.0.1", port)
        waits.append(done)
    errors = [e for e in await asyncio.wait_for(asyncio.gather(*waits), timeout=seconds + 30) if e]
    if errors:
        raise RuntimeError(f"{len(errors)} connections failed, first: {errors[0]!r}")
    tally["seconds"] = time.monotonic() - started
    return tally


def selfbench(seconds: float, connections: int, seed: int, hosts: int, pages: int) -> dict:
    seconds = min(max(seconds, 1.0), MAX_SECONDS)
    connections = min(max(connections, 1), MAX_CONNECTIONS)
    web = VirtualWeb(seed, hosts, pages)
    requests = request_mix(web, REQUEST_MIX)
    with ServedWeb(web, log_size=1000) as served:
        before = served.stats()
        tally = asyncio.run(drive(served.port, requests, seconds, connections))
        after = served.stats()
    server_cpu = after["cpu_seconds"] - before["cpu_seconds"]
    return {
        "what": "virtual web server, loopback, one server process, one asyncio client process",
        "web": {"seed": seed, "hosts": hosts, "pages": pages},
        "connections": connections,
        "seconds": round(tally["seconds"], 3),
        "requests": tally["requests"],
        "requests_per_second": round(tally["requests"] / tally["seconds"]),
        "megabytes_per_second": round(tally["bytes"] / tally["seconds"] / 1e6, 1),
        "mean_response_bytes": round(tally["bytes"] / max(1, tally["requests"])),
        "status": {str(k): v for k, v in sorted(tally["status"].items())},
        "server_cpu_seconds": round(server_cpu, 3),
        "server_cpu_share": round(server_cpu / tally["seconds"], 2),
        "requests_per_server_cpu_second": round(tally["requests"] / server_cpu) if server_cpu > 0 else None,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "date": time.strftime("%Y-%m-%d"),
    }


def write_results(result: dict, directory: Path) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    json_path, md_path = directory / "virtualweb.json", directory / "virtualweb.md"
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    md_path.write_text(
        "# Virtual web: its own speed\n\n"
        f"`python -m bench.virtualweb selfbench --seconds {result['seconds']:.0f} "
        f"--connections {result['connections']}`, "
        f"{result['date']}, {result['machine']['cpus']} CPUs, Python {result['machine']['python']}.\n\n"
        f"Web: seed {result['web']['seed']}, {result['web']['hosts']:,} hosts, {result['web']['pages']:,} pages.\n\n"
        "| figure | value |\n| --- | --- |\n"
        f"| requests per second (server and client on one machine) | {result['requests_per_second']:,} |\n"
        f"| requests per server CPU-second (capacity) | {result['requests_per_server_cpu_second']:,} |\n"
        f"| server CPU share | {result['server_cpu_share']} |\n"
        f"| throughput | {result['megabytes_per_second']} MB/s |\n"
        f"| mean response | {result['mean_response_bytes']:,} bytes |\n"
        f"| requests | {result['requests']:,} in {result['seconds']} s |\n"
        f"| status counts | {', '.join(f'{k}: {v:,}' for k, v in result['status'].items())} |\n"
    )
    return json_path, md_path

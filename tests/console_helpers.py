"""`scrapy serve` and a loopback web for the console and OAI-PMH tests."""

from __future__ import annotations

import os
import select
import subprocess
import time
from dataclasses import dataclass

from conftest import PROJECT, SCRAPY, JobDir, free_port

from combine_scrapy.operations.sampleweb import Page

TOPIC = "100: carnivorous plants?=CP\n80: sundews?=CP.Drosera\n80: pitcher plants?=CP.Nepenthes\n"
WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "glade", "heath", "inlet", "jetty", "knoll", "larch")


def page_text(host: str, number: int) -> str:
    """A topical page that differs from every other in words, not only a number (so none is a near-duplicate)."""
    kind = "sundews" if number % 2 else "pitcher plants"
    words = " ".join(f"{WORDS[(number * 7 + i) % len(WORDS)]}{(number * 13 + i) % 97}" for i in range(40))
    return (f"Carnivorous plants: {kind} seen near marker{host.replace('.', '')}x{number}. {words}. "
            f"More {kind}, and {kind} again: a page about {kind}.")


def chain_web(hosts: list[str], port: int, pages: int, delay: float = 0.0) -> dict[str, dict[str, Page]]:
    """Every host: a home page and ``pages`` pages, each linking the next, so a host is crawled one page at a time;
    every third page also links an off-topic page (``/off<n>.html``), which the topic filter turns down."""
    sites = {}
    for host in hosts:
        site = {"/": Page(f'<html><head><title>Carnivorous plants at {host}</title></head>'
                          f'<body>Carnivorous plants. <a href="/p0.html">first</a></body></html>', delay=delay)}
        for number in range(pages):
            following = f'<a href="/p{number + 1}.html">next</a>' if number + 1 < pages else ""
            if number % 3 == 0:
                following += f' <a href="/off{number}.html">scores</a>'
                site[f"/off{number}.html"] = Page(
                    f"<html><head><title>Baseball scores {number}</title></head>"
                    f"<body>The pitchers threw {number} strikes; the batting order changed.</body></html>",
                    delay=delay,
                )
            site[f"/p{number}.html"] = Page(
                f"<html><head><title>Carnivorous plants {host} page {number}</title></head>"
                f"<body><h1>{'Sundews' if number % 2 else 'Pitcher plants'}</h1><p>{page_text(host, number)}</p>"
                f"{following}</body></html>",
                delay=delay,
            )
        sites[host] = site
    return sites


def write_job(job_dir: JobDir, seeds: list[str], wait: float = 0.2, extra: str = "") -> JobDir:
    config = f"WaitIntervalHost = {wait}\nAllowPrivateAddresses = 1\nnearDuplicates = 0\nOperatorEmail = ops@example.org\n{extra}"
    return job_dir.write(config, TOPIC, seeds)


@dataclass
class Served:
    """A running `scrapy serve`: its process, base URL and token."""

    process: subprocess.Popen
    url: str
    token: str

    def stop(self) -> str:
        self.process.terminate()
        try:
            output, _ = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            output, _ = self.process.communicate()
        return output


def serve(job_dir: JobDir, *settings: str, timeout: float = 60) -> Served:
    """Start `scrapy serve` on a free loopback port and wait until it listens."""
    port = free_port("127.0.0.1")
    command = [
        *SCRAPY, "serve", job_dir.name, "--port", str(port), "--token", "test-token-0123",
        "-s", f"COMBINE_TOPICS_DIR={job_dir.topics}", "-s", f"COMBINE_DATA_DIR={job_dir.data}", *settings,
    ]
    process = subprocess.Popen(
        command, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("console of job"):
                return Served(process, f"http://127.0.0.1:{port}", "test-token-0123")
        elif process.poll() is not None:
            break
    process.kill()
    raise AssertionError("scrapy serve did not start:\n" + "".join(lines) + (process.stdout.read() or ""))


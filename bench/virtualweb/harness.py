"""Crawls against a served virtual web, and what the server saw of them: shared by the crawl benchmarks.

A benchmark starts the server in its own process (:class:`ServedWeb`), runs a
crawler as a child process (:func:`run_crawl`: wall time, CPU time and peak
RSS from the kernel's accounting of that one child), and judges the crawl by
the server's request log, never by what the crawler says about itself.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.children import ends_with_bench
from bench.report import RESULTS
from bench.virtualweb.job import write_job
from bench.virtualweb.web import COPY, VirtualWeb

PROJECT = Path(__file__).resolve().parents[2]
#: Requests of a host's robots.txt (and its redirect target), not pages.
ROBOTS_PATHS = ("/robots.txt", "/static/robots.txt")


class ServedWeb:
    """``python -m bench.virtualweb serve`` in a child process, with its request log and stats over HTTP."""

    def __init__(self, web: VirtualWeb, log_size: int = 500_000, latency: float = 0.0):
        self.web = web
        self.log_size = log_size
        self.latency = latency
        self.port = 0
        self._process: subprocess.Popen | None = None

    def serve_command(self) -> list[str]:
        """The server process: it prints ``127.0.0.1:PORT`` on its first line when it listens."""
        web = self.web
        return [sys.executable, "-m", "bench.virtualweb", "serve", "--port", "0", "--seed", str(web.seed),
                "--hosts", str(web.hosts), "--pages", str(web.pages), "--log-size", str(self.log_size),
                "--latency", f"{self.latency:g}"]

    def __enter__(self) -> ServedWeb:
        self._process = subprocess.Popen(self.serve_command(), stdout=subprocess.PIPE, text=True, cwd=PROJECT,
                                         preexec_fn=ends_with_bench())
        line = self._process.stdout.readline()
        if "127.0.0.1:" not in line:
            self._process.kill()
            raise RuntimeError(f"virtual web server did not start: {line!r}")
        self.port = int(line.split("127.0.0.1:")[1].split()[0])
        return self

    def __exit__(self, *exc) -> None:
        self._process.send_signal(signal.SIGTERM)
        self._process.wait(timeout=30)
        self._process.stdout.close()

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _control(self, path: str) -> bytes:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request("GET", f"http://control.test{path}")
            return connection.getresponse().read()
        finally:
            connection.close()

    def stats(self) -> dict:
        """Requests served so far, server CPU seconds, uptime."""
        return json.loads(self._control("/stats"))

    def log(self, since: int = 0) -> list[dict]:
        """Logged requests with ``seq >= since``, in the order they were answered.

        Each is ``{"seq", "t", "host", "path", "status", "done", "in_flight"}``: ``t`` when it arrived, ``done``
        when its answer was written, ``in_flight`` how many requests to its host were then in flight, itself
        included (times are the machine's monotonic clock, as ``time.monotonic()`` here).
        """
        entries = [json.loads(line) for line in self._control(f"/log?since={since}").splitlines()]
        if entries and entries[0]["seq"] > since:
            raise RuntimeError(f"request log overflowed (kept {self.log_size}); serve with a larger --log-size")
        return entries


def page_fetches(entries: list[dict]) -> list[dict]:
    """The requests for pages: everything but robots.txt."""
    return [entry for entry in entries if entry["path"] not in ROBOTS_PATHS]


def steady_rate(entries: list[dict], warmup: float) -> tuple[float, int, float]:
    """Requests per minute after the first ``warmup`` share of the log's span: (rate, requests, seconds)."""
    if len(entries) < 2:
        return 0.0, len(entries), 0.0
    first, last = entries[0]["t"], entries[-1]["t"]
    start = first + (last - first) * warmup
    counted = [entry for entry in entries if entry["t"] >= start]
    seconds = last - start
    return (len(counted) * 60 / seconds if seconds > 0 else 0.0), len(counted), seconds


@dataclass
class CrawlRun:
    """How one crawler process went, from the kernel's accounting of it."""

    returncode: int
    wall_seconds: float
    cpu_seconds: float
    max_rss_bytes: int
    stdout: str
    stderr: str

    def check(self) -> CrawlRun:
        if self.returncode != 0 or "Traceback" in self.stderr:
            raise RuntimeError(f"crawl failed (exit {self.returncode}):\n{self.stderr[-4000:]}")
        return self


def run_crawl(
    command: list[str], proxy: str, timeout: float, stop: Callable[[], bool] | None = None
) -> CrawlRun:
    """Run a crawler process through the proxy; measure its wall time, CPU time and peak RSS (``wait4``).

    ``stop`` is asked once a second; when it says True the crawler gets SIGINT, Scrapy's graceful shutdown.
    """
    env = {**os.environ, "http_proxy": proxy, "no_proxy": "", "PYTHONPATH": str(PROJECT)}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=PROJECT, env=env, stdout=out, stderr=err, preexec_fn=ends_with_bench())
        asked = started
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if stop is not None and time.monotonic() - asked >= 1:
                asked = time.monotonic()
                if stop():
                    process.send_signal(signal.SIGINT)
                    stop = None
            if time.monotonic() - started > timeout:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        wall = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        return CrawlRun(
            returncode=process.returncode,
            wall_seconds=wall,
            cpu_seconds=usage.ru_utime + usage.ru_stime,
            max_rss_bytes=usage.ru_maxrss * 1024,  # Linux reports kilobytes
            stdout=out.read(),
            stderr=err.read(),
        )


@dataclass
class FocusedJob:
    """A job for the virtual web in its own topics and data directories."""

    topics: Path
    data: Path
    name: str = "vweb"

    @classmethod
    def write(
        cls, web: VirtualWeb, directory: Path, port: int, wait: float, serveralias: bool = False, **variables: str
    ) -> FocusedJob:
        """Write ``directory/topics/<name>`` with the virtual web's job, ``variables`` added to combine.cfg."""
        job = cls(topics=directory / "topics", data=directory / "data")
        write_job(web, job.topics / job.name, port, wait, variables=variables, serveralias=serveralias)
        return job

    def command(self, settings: dict[str, object] | None = None, profile: Path | None = None) -> list[str]:
        """``scrapy crawl focused`` for this job, profiled (bench/profiled.py) when ``profile`` names an output file."""
        python = [sys.executable, "-m"] + (["bench.profiled", str(profile)] if profile else [])
        command = [*python, "scrapy", "crawl", "focused", "-a", f"job={self.name}",
                   "-s", f"COMBINE_TOPICS_DIR={self.topics}", "-s", f"COMBINE_DATA_DIR={self.data}"]
        for name, value in (settings or {}).items():
            command += ["-s", f"{name}={value}"]
        return command

    def stored_records(self) -> int:
        with sqlite3.connect(self.data / self.name / "records.sqlite") as db:
            return db.execute("SELECT count(*) FROM records").fetchone()[0]

    def queued_urls(self) -> int:
        with sqlite3.connect(self.data / self.name / "frontier.sqlite") as db:
            return db.execute("SELECT count(*) FROM urls").fetchone()[0]


def plain_command(seeds: list[str], seconds: float, concurrency: int, max_pages: int = 0) -> list[str]:
    """Plain Scrapy (bench/plainspider.py) from ``seeds`` for ``seconds`` or ``max_pages`` responses."""
    return [sys.executable, "-m", "bench.plainspider", "--seconds", f"{seconds:g}", "--concurrency", str(concurrency),
            "--max-pages", str(max_pages), *seeds]


def load_average() -> list[float]:
    """The machine's 1, 5 and 15-minute load averages, for the record of how busy it was."""
    return [round(value, 2) for value in os.getloadavg()]


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """The web (``--seed --hosts --pages``) and where results go (``--results``)."""
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory for <name>.json and .md")


def add_setting_option(parser: argparse.ArgumentParser) -> None:
    """``-s NAME=VALUE``: a Scrapy setting for the focused harvester only (to measure a change before making it)."""
    parser.add_argument("-s", "--setting", action="append", default=[], type=name_value, metavar="NAME=VALUE",
                        help="a Scrapy setting for the focused harvester (repeatable)")


def name_value(text: str) -> tuple[str, str]:
    """An argparse type for ``NAME=VALUE`` options (settings, combine.cfg variables)."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def web_from(args: argparse.Namespace) -> VirtualWeb:
    return VirtualWeb(args.seed, args.hosts, args.pages)


def command_line(module: str, argv: list[str] | None) -> str:
    """How the benchmark was run, for its report."""
    return " ".join(["python -m", module, *(sys.argv[1:] if argv is None else argv)])


def relevant_content(web: VirtualWeb, entry: dict) -> int | None:
    """The on-topic content a logged request got (copies count as their original), or None."""
    if entry["status"] != 200:
        return None
    page = web.page_of(f"http://{entry['host']}{entry['path']}")
    if page is None or not web.is_on_topic_page(page):
        return None
    return web.source.get(page, page) if web.page_flags[page] & COPY else page

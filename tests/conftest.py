"""Shared fixtures: loopback webs and crawls run as a user runs them, in a subprocess."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import MySQLdb.connections
import pytest
import redis.connection
from crawling import PROJECT, SCRAPY, CrawlResult, run_crawl


def free_port(host: str = "127.0.0.2") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class JobDir:
    """A job written into a temporary topics directory, crawled with its own data directory."""

    topics: Path
    data: Path
    name: str = "t"

    def write(self, config: str, topic: str, seeds: list[str], **extra_files: str) -> JobDir:
        directory = self.topics / self.name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "combine.cfg").write_text(config)
        (directory / "topicdefinition.txt").write_text(topic)
        (directory / "seeds.txt").write_text("\n".join(seeds) + "\n")
        for file_name, text in extra_files.items():
            (directory / file_name).write_text(text)
        return self

    def scrapy(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        command = [
            *SCRAPY, *args,
            "-s", f"COMBINE_TOPICS_DIR={self.topics}",
            "-s", f"COMBINE_DATA_DIR={self.data}",
        ]
        return subprocess.run(
            command, cwd=PROJECT, capture_output=True, text=True, timeout=timeout,
            env={**os.environ, "PYTHONPATH": str(PROJECT)},
        )

    def run_crawl(self, *args: str, timeout: float = 120) -> CrawlResult:
        """The job's crawl (tests/crawling.py), whatever its outcome: status, output and the crawler's stats."""
        return run_crawl(self, *args, timeout=timeout)

    def crawl(self, *args: str, timeout: float = 120) -> CrawlResult:
        """The job's crawl, which must finish cleanly."""
        result = self.run_crawl(*args, timeout=timeout)
        assert result.returncode == 0, result.stderr[-4000:]
        assert "Traceback" not in result.stderr, result.stderr[-4000:]
        return result

    def records(self) -> sqlite3.Connection:
        return sqlite3.connect(self.data / self.name / "records.sqlite")

    def frontier(self) -> sqlite3.Connection:
        return sqlite3.connect(self.data / self.name / "frontier.sqlite")


def starts_python(args) -> bool:
    """Whether a process command runs Python: this interpreter, another, or a script installed beside it."""
    program = Path(args.split()[0] if isinstance(args, str) else args if isinstance(args, os.PathLike) else args[0])
    return program.parent == Path(sys.executable).parent or program.name.startswith("python")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Keep the fast lane (-m "not crawl and not services") honest: a test without the crawl marker that starts a
    Python process (a crawl, a scrapy command, scrapyd, a server), or one without the services marker that
    connects to Redis or MariaDB, fails at once saying which marker it needs (in its fixtures too)."""
    with pytest.MonkeyPatch.context() as patch:
        if item.get_closest_marker("crawl") is None:
            popen_init = subprocess.Popen.__init__

            def guarded_popen(process, args, *more, **options):
                if starts_python(args):
                    pytest.fail(f"this test starts a Python process ({args!r}): mark it crawl")
                popen_init(process, args, *more, **options)

            patch.setattr(subprocess.Popen, "__init__", guarded_popen)
        if item.get_closest_marker("services") is None:
            def refuse(*args, **kwargs):
                pytest.fail("this test connects to Redis or MariaDB: mark it services")

            patch.setattr(redis.connection.AbstractConnection, "connect_check_health", refuse)
            patch.setattr(MySQLdb.connections.Connection, "__init__", refuse)
        return (yield)


@pytest.fixture
def job_dir(tmp_path) -> JobDir:
    return JobDir(topics=tmp_path / "topics", data=tmp_path / "data")

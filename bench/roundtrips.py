"""A Scrapy extension for bench.scaling: counts a harvester's round trips to Redis, as the harvester sees them.

Redis's own counters (``INFO stats`` total_commands_processed, ``INFO
commandstats``) also count the commands a Lua script runs inside Redis, so
they cannot tell how often a harvester waited on the network. This counts
every request the process writes to a Redis connection: one command, or one
pipeline (its commands go in one write). ``bench.scaling`` loads it in the
harvesters it starts (``EXTENSIONS`` and ``SCALING_ROUND_TRIPS_DIR``); from
the spider's opening, every ``INTERVAL`` seconds, it appends
``<monotonic time> <round trips so far>`` to ``<dir>/<pid>.txt``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from redis.connection import AbstractConnection
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

INTERVAL = 0.5


class RedisRoundTrips:
    """Counts writes to Redis connections in this process and samples the count to a file."""

    sent = 0  # round trips of every connection of this process
    _unpatched = None

    def __init__(self, path: Path):
        self.path = path
        self._file = None
        self._task = None

    @classmethod
    def from_crawler(cls, crawler):
        directory = crawler.settings.get("SCALING_ROUND_TRIPS_DIR")
        if not directory:
            raise NotConfigured("SCALING_ROUND_TRIPS_DIR is not set")
        cls.count_sends()
        extension = cls(Path(directory) / f"{os.getpid()}.txt")
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    @classmethod
    def count_sends(cls) -> None:
        """Count each ``send_packed_command`` (every command and pipeline goes through it once)."""
        if cls._unpatched is not None:
            return
        cls._unpatched = send = AbstractConnection.send_packed_command

        def counted(connection, command, check_health=True):
            cls.sent += 1
            return send(connection, command, check_health)

        AbstractConnection.send_packed_command = counted

    def sample(self) -> None:
        self._file.write(f"{time.monotonic():.6f} {type(self).sent}\n")
        self._file.flush()

    def spider_opened(self, spider) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="ascii")
        self.sample()
        self._task = create_looping_call(self.sample)
        self._task.start(INTERVAL, now=False)

    def spider_closed(self, spider, reason) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        if self._file is not None:
            self.sample()
            self._file.close()
            self._file = None


def read_samples(path: Path) -> list[tuple[float, int]]:
    """The ``(time, round trips)`` samples a harvester wrote, in order."""
    samples = []
    for line in path.read_text(encoding="ascii").splitlines():
        moment, _, count = line.partition(" ")
        samples.append((float(moment), int(count)))
    return samples


def count_at(samples: list[tuple[float, int]], moment: float) -> float:
    """The round trips made by ``moment``, interpolated between the samples around it."""
    if not samples:
        raise ValueError("no round-trip samples")
    if moment <= samples[0][0]:
        return float(samples[0][1])
    for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
        if moment <= t1:
            return c0 + (c1 - c0) * (moment - t0) / (t1 - t0) if t1 > t0 else float(c1)
    return float(samples[-1][1])

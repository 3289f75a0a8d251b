"""A Scrapy extension for bench.scaling: counts a harvester's round trips to Redis, as the harvester sees them.

Redis's own counters (``INFO stats`` total_commands_processed, ``INFO
commandstats``) also count the commands a Lua script runs inside Redis, so
they cannot tell how often a harvester waited on the network. This counts
every request the process writes to a Redis connection: one command, or one
pipeline (its commands go in one write). ``bench.scaling`` loads it in the
harvesters it starts (``EXTENSIONS`` and ``SCALING_ROUND_TRIPS_DIR``); from
the spider's opening, every ``INTERVAL`` seconds, it appends
``<monotonic time> <round trips so far>`` to ``<dir>/<pid>.txt``, and the
round trips so far by caller (``caller_of``) as one JSON line to
``<dir>/<pid>.callers.jsonl``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from redis.connection import AbstractConnection
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

INTERVAL = 0.5

#: The project's source, whose frames name a round trip's caller.
PACKAGE = str(Path(__file__).resolve().parent.parent / "combine_scrapy") + os.sep
#: The frontier's Redis parts: the outermost of their frames is the frontier method that made the round trip.
FRONTIER_PARTS = PACKAGE + os.path.join("frontier", "redis") + os.sep
#: Functions of connection.py that only pass a call on (run a script, a pipeline of scripts): named by their caller.
PASSING_ON = {"run", "run_buckets", "_answered", "call_with_retry", "<lambda>"}


def caller_of(frame) -> str:
    """Who made a round trip: the frontier method it serves (the outermost frame in frontier/redis/), then the
    function that sent it (the innermost frame of the project that does more than pass a call on), as
    ``method > function``; a round trip from outside the frontier (the beacon, the link model) by its function.
    """
    inner = outer = None
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith(PACKAGE):
            name = f"{Path(code.co_filename).stem}.{code.co_name}"
            if inner is None and code.co_name not in PASSING_ON:
                inner = name
            if code.co_filename.startswith(FRONTIER_PARTS):
                outer = name
        frame = frame.f_back
    if inner is None:
        return "other"
    return inner if outer is None or outer == inner else f"{outer} > {inner}"


class RedisRoundTrips:
    """Counts writes to Redis connections in this process and samples the count to a file."""

    sent = 0  # round trips of every connection of this process
    by_caller: Counter[str] = Counter()  # the same by caller_of
    _unpatched = None

    def __init__(self, path: Path):
        self.path = path
        self._file = None
        self._callers = None
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
            cls.by_caller[caller_of(sys._getframe(1))] += 1
            return send(connection, command, check_health)

        AbstractConnection.send_packed_command = counted

    def sample(self) -> None:
        moment = time.monotonic()
        self._file.write(f"{moment:.6f} {type(self).sent}\n")
        self._file.flush()
        self._callers.write(json.dumps({"t": moment, "callers": type(self).by_caller}) + "\n")
        self._callers.flush()

    def spider_opened(self, spider) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="ascii")
        self._callers = self.path.with_suffix(".callers.jsonl").open("a", encoding="ascii")
        self.sample()
        self._task = create_looping_call(self.sample)
        self._task.start(INTERVAL, now=False)

    def spider_closed(self, spider, reason) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        if self._file is not None:
            self.sample()
            self._file.close()
            self._callers.close()
            self._file = self._callers = None


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


def read_callers(path: Path) -> list[tuple[float, dict[str, int]]]:
    """The ``(time, round trips by caller)`` samples a harvester wrote next to ``path`` (its ``<pid>.txt``)."""
    callers = path.with_suffix(".callers.jsonl")
    if not callers.exists():
        return []
    return [(entry["t"], entry["callers"]) for entry in map(json.loads, callers.read_text(encoding="ascii").splitlines())]


def callers_between(samples: list[tuple[float, dict[str, int]]], start: float, end: float) -> Counter[str]:
    """Round trips by caller between the last samples at or before ``start`` and ``end``."""
    def at(moment: float) -> dict[str, int]:
        found: dict[str, int] = {}
        for sampled, callers in samples:
            if sampled > moment:
                break
            found = callers
        return found

    first, last = at(start), at(end)
    return Counter({caller: count - first.get(caller, 0) for caller, count in last.items()
                    if count - first.get(caller, 0) > 0})

"""Each harvester says what it is doing, for the console: alive, paused, and the URLs it is fetching.

A harvester writes ``data/<job>/harvesters/<pid>.json`` beside its pid file
every COMBINE_BEACON_INTERVAL seconds; on a shared (Redis) frontier it also
sets ``combine:{job}:harvester:<machine>:<pid>``, which expires three
intervals after the last write, so a console on any machine sees every
harvester and forgets a dead one by itself.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from combine_scrapy.context import CrawlComponent
from combine_scrapy.operations.control import harvesters_dir
from combine_scrapy.stores import data_directory

logger = logging.getLogger(__name__)

#: Intervals a Redis beacon outlives its last write.
REDIS_LIFETIMES = 3
#: URLs in flight reported at most.
FETCHING_SHOWN = 50


def beacon_key(prefix: str, machine: str, pid: int) -> str:
    return f"{prefix}harvester:{machine}:{pid}"


class HarvesterBeacon(CrawlComponent):
    def __init__(self, crawler, data_dir: str, interval: float):
        super().__init__(crawler)
        self.data_dir = data_dir
        self.interval = interval
        self.machine = socket.gethostname()
        self.pid = os.getpid()
        self.started = time.time()
        self.fetching: dict[str, float] = {}  # URL -> when it reached the downloader
        self.path: Path | None = None
        self._task = None

    @classmethod
    def from_crawler(cls, crawler):
        interval = crawler.settings.getfloat("COMBINE_BEACON_INTERVAL")
        if not interval:
            raise NotConfigured
        beacon = cls(crawler, data_directory(crawler.settings), interval)
        crawler.signals.connect(beacon.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(beacon.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(beacon.request_reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(beacon.request_left, signal=signals.request_left_downloader)
        return beacon

    def spider_opened(self, spider):
        super().spider_opened(spider)
        self.path = harvesters_dir(self.data_dir, spider.job_name) / f"{self.pid}.json"
        self._task = create_looping_call(self.write)
        self._task.start(self.interval, now=True)

    def request_reached(self, request, spider):
        self.fetching[request.url] = time.time()

    def request_left(self, request, spider):
        self.fetching.pop(request.url, None)

    def state(self) -> dict:
        paused = self.context.frontier.paused()
        stats = self.stats
        return {
            "pid": self.pid,
            "machine": self.machine,
            "started": self.started,
            "updated": time.time(),
            "paused": bool(paused),
            "pages": stats.get_value("fetch/outcome/success", 0),
            "relevant": stats.get_value("topic/relevant", 0),
            "fetching": [
                {"url": url, "since": since}
                for url, since in sorted(self.fetching.items(), key=lambda pair: pair[1])[:FETCHING_SHOWN]
            ],
        }

    def write(self) -> None:
        """Publish the state; a failure is logged and counted, never fatal (the crawl goes on)."""
        try:
            state = json.dumps(self.state())
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".json.part")
            partial.write_text(state)
            partial.replace(self.path)
            if self.context.shared:
                frontier = self.context.frontier
                frontier.server.set(
                    beacon_key(frontier.prefix, self.machine, self.pid), state,
                    ex=max(1, round(self.interval * REDIS_LIFETIMES)),
                )
        except Exception as e:  # noqa: BLE001 - a beacon must not stop a crawl
            self.crawler.stats.inc_value("console/beacon_failed")
            logger.warning("cannot publish the harvester's state for the console: %s", e)

    def spider_closed(self, spider, reason):
        if self._task is not None and self._task.running:
            self._task.stop()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            context = self.context
            if context.shared:
                try:
                    context.frontier.server.delete(beacon_key(context.frontier.prefix, self.machine, self.pid))
                except Exception as e:  # noqa: BLE001 - it expires by itself
                    logger.debug("beacon not removed from Redis: %s", e)

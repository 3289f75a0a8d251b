"""Each harvester says what it is doing, for the console (:mod:`combine_scrapy.operations.console.beacon`)."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any, Self

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall

from combine_scrapy.context import CrawlComponent
from combine_scrapy.frontier import FrontierOperations
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.operations.console.beacon import FETCHING_SHOWN, REDIS_LIFETIMES, beacon_key
from combine_scrapy.operations.control import harvesters_dir
from combine_scrapy.stores import data_directory

logger = logging.getLogger(__name__)


class HarvesterBeacon(CrawlComponent):
    """Write the harvester's state every COMBINE_BEACON_INTERVAL seconds, and on a Redis frontier set its key too."""

    def __init__(self, crawler: Crawler, data_dir: Path, interval: float) -> None:
        super().__init__(crawler)
        self.data_dir = data_dir
        self.interval = interval
        self.machine = socket.gethostname()
        self.pid = os.getpid()
        self.started = time.time()
        self.fetching: dict[str, float] = {}  # URL -> when it reached the downloader
        self.path: Path | None = None
        self._task: AsyncioLoopingCall | LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        interval = crawler.settings.getfloat("COMBINE_BEACON_INTERVAL")
        if not interval:
            raise NotConfigured
        beacon = cls(crawler, data_directory(crawler.settings), interval)
        crawler.signals.connect(beacon.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(beacon.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(beacon.request_reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(beacon.request_left, signal=signals.request_left_downloader)
        return beacon

    def spider_opened(self, spider: Spider) -> None:
        super().spider_opened(spider)
        self.path = harvesters_dir(self.data_dir, self.context.job.name) / f"{self.pid}.json"
        self._task = create_looping_call(self.write)
        self._task.start(self.interval, now=True)

    def request_reached(self, request: Request, spider: Spider) -> None:
        self.fetching[request.url] = time.time()

    def request_left(self, request: Request, spider: Spider) -> None:
        self.fetching.pop(request.url, None)

    def state(self) -> dict[str, Any]:
        frontier: FrontierOperations = self.context.frontier
        paused = frontier.paused()
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
        if self.path is None:  # the spider has not opened
            return
        try:
            state = json.dumps(self.state())
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".json.part")
            partial.write_text(state)
            partial.replace(self.path)
            frontier = self.context.frontier
            if isinstance(frontier, RedisFrontier):  # a shared frontier: consoles on other machines read Redis
                frontier.server.set(
                    beacon_key(frontier.prefix, self.machine, self.pid), state,
                    ex=max(1, round(self.interval * REDIS_LIFETIMES)),
                )
        except Exception as e:  # noqa: BLE001 - a beacon must not stop a crawl
            self.crawler.stats.inc_value("console/beacon_failed")
            logger.warning("cannot publish the harvester's state for the console: %s", e)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            frontier = self.context.frontier
            if isinstance(frontier, RedisFrontier):
                try:
                    frontier.server.delete(beacon_key(frontier.prefix, self.machine, self.pid))
                except Exception as e:  # noqa: BLE001 - it expires by itself
                    logger.debug("beacon not removed from Redis: %s", e)

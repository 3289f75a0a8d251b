"""The harvester's pid file, which the job commands (stop, pause, status) find."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Self

from scrapy import signals
from scrapy.crawler import Crawler

from combine_scrapy.operations.control import harvesters_dir, write_pid_file
from combine_scrapy.signals import JobSpider
from combine_scrapy.stores import data_directory


class HarvesterPidFile:
    """Write ``data/<job>/harvesters/<pid>.pid`` while the spider runs, so ``scrapy stop JOB`` finds it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path: Path | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = cls(data_directory(crawler.settings))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: JobSpider) -> None:
        self.path = write_pid_file(harvesters_dir(self.data_dir, spider.job_name), os.getpid())

    def spider_closed(self, spider: JobSpider, reason: str) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)

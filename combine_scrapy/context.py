"""What one crawl of a job shares among its Scrapy components: the job, the frontier, the records, the crawl policy."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.settings import BaseSettings

from combine_scrapy.access.addresses import AddressPolicy
from combine_scrapy.access.politeness import HostPace
from combine_scrapy.access.urls import UrlChecker
from combine_scrapy.faults import OUTAGE_PATIENCE
from combine_scrapy.frontier import LEASE_SECONDS, Frontier
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.sqlite import SqliteFrontier
from combine_scrapy.job import Job
from combine_scrapy.links.online import MODEL_FILE, MODEL_KEY, FileModelStore, ModelStore, RedisModelStore
from combine_scrapy.policy import CrawlPolicy, link_scorer_for
from combine_scrapy.records.store import RecordStore, open_store
from combine_scrapy.stores import data_directory

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def link_model_store(frontier: Frontier, data_dir: str | Path, job: str) -> ModelStore:
    """Where the job's online link model is kept: beside its frontier, a Redis key with the Redis frontier (every
    harvester of the job shares it), else a file in ``data_dir/job/``."""
    if isinstance(frontier, RedisFrontier):
        return RedisModelStore(frontier.server, frontier.prefix + MODEL_KEY)
    return FileModelStore(Path(data_dir) / job / MODEL_FILE)


#: The name COMBINE_OUTAGE_PATIENCE had when it covered Redis alone; still read, with a warning.
FORMER_OUTAGE_PATIENCE = "COMBINE_REDIS_OUTAGE_PATIENCE"


def outage_patience_setting(settings: BaseSettings) -> float:
    """COMBINE_OUTAGE_PATIENCE, or the former COMBINE_REDIS_OUTAGE_PATIENCE when that one is set and the new one
    is left at its default."""
    former = settings.get(FORMER_OUTAGE_PATIENCE)
    if former is not None and settings.getfloat("COMBINE_OUTAGE_PATIENCE") == OUTAGE_PATIENCE:
        logger.warning("%s is now called COMBINE_OUTAGE_PATIENCE (it covers Redis and MySQL): rename it in your "
                       "settings", FORMER_OUTAGE_PATIENCE)
        return settings.getfloat(FORMER_OUTAGE_PATIENCE)
    return settings.getfloat("COMBINE_OUTAGE_PATIENCE")


@dataclass
class CrawlContext:
    """The parts of one crawl of a job: the job, its frontier and record store, and the policy that decides what
    the crawl's events mean for them."""

    job: Job
    frontier: Frontier
    store: RecordStore
    policy: CrawlPolicy

    @classmethod
    def open(
        cls,
        job: Job,
        data_dir: str | Path,
        max_urls_per_host: int | None = None,
        redis_url: str | None = None,
        lease_seconds: float = LEASE_SECONDS,
        outage_patience: float = OUTAGE_PATIENCE,
        mysql_url: str | None = None,
        settings: BaseSettings | None = None,
    ) -> CrawlContext:
        """Open the job's backends: the frontier in Redis when ``redis_url`` is given (shared by
        every harvester), the records in MySQL when ``mysql_url`` is, else both in ``data_dir/<job>/``;
        the online link model beside the frontier (:func:`link_model_store`); the job's maxUrlsPerHost
        wins over the setting. The Redis client is made from the Scrapy
        ``settings`` as scrapy-redis makes it (REDIS_URL, REDIS_PARAMS). Either server, when it cannot be
        reached, is waited for ``outage_patience`` seconds."""
        directory = Path(data_dir) / job.name
        frontier: Frontier
        if redis_url:
            frontier = RedisFrontier.from_settings(
                settings if settings is not None else {"REDIS_URL": redis_url}, job.name,
                max_attempts=job.fetching.harvest_retries, outage_patience=outage_patience,
                lease_seconds=lease_seconds, lease_ahead=True,
            )
        else:
            frontier = SqliteFrontier(directory / "frontier.sqlite", max_attempts=job.fetching.harvest_retries)
        url_checker = UrlChecker(job.url_rules)
        link_scorer = link_scorer_for(job, url_checker)
        if link_scorer.learner is not None:
            link_scorer.learner.store = link_model_store(frontier, data_dir, job.name)
        policy = CrawlPolicy(
            job,
            frontier,
            link_scorer=link_scorer,
            url_checker=url_checker,
            max_urls_per_host=job.crawling.max_urls_per_host or max_urls_per_host,
            lease_seconds=lease_seconds,
        )
        store = open_store(job.name, data_dir, mysql_url, outage_patience=outage_patience)
        return cls(job=job, frontier=frontier, store=store, policy=policy)

    @classmethod
    def from_settings(cls, settings: BaseSettings, job: Job, *, outage_patience: float | None = None) -> CrawlContext:
        """Open the job's backends where the Scrapy settings put them, as every harvester and command of the job does:
        COMBINE_DATA_DIR, REDIS_URL (with REDIS_PARAMS), MYSQL_URL, COMBINE_LEASE_SECONDS,
        COMBINE_MAX_URLS_PER_HOST, and COMBINE_OUTAGE_PATIENCE unless ``outage_patience`` is given
        (a command gives up on Redis and MySQL sooner than a harvester)."""
        if outage_patience is None:
            outage_patience = outage_patience_setting(settings)
        return cls.open(
            job,
            data_directory(settings),
            max_urls_per_host=settings.getint("COMBINE_MAX_URLS_PER_HOST") or None,
            redis_url=settings.get("REDIS_URL"),
            lease_seconds=settings.getfloat("COMBINE_LEASE_SECONDS"),
            outage_patience=outage_patience,
            mysql_url=settings.get("MYSQL_URL"),
            settings=settings,
        )

    @property
    def shared(self) -> bool:
        """Whether other harvesters may use the same frontier at the same time."""
        return isinstance(self.frontier, RedisFrontier)

    @property
    def addresses(self) -> AddressPolicy:
        """Which hosts may be on loopback or private addresses (the policy's, which refuses the others' URLs)."""
        return self.policy.addresses

    @property
    def pace(self) -> HostPace:
        """This harvester's memory of each host's next turn (the policy's, which gives a postponed URL back for it)."""
        return self.policy.pace

    def close(self) -> None:
        """Give back what this harvester still holds (the policy's leases), close the frontier and the records."""
        self.policy.release_leases(time.time())
        self.frontier.close()
        self.store.close()


class CrawlComponent:
    """Base of the focused crawl's Scrapy components (downloader middlewares, item pipelines, extensions).

    The crawl's shared state is its :class:`CrawlContext`, which the spider opens in ``from_crawler``
    (:meth:`CrawlContext.from_settings`). A component takes it from the spider when the spider opens (the
    ``spider_opened`` signal, sent before any request or item), as Scrapy's own middlewares take a
    spider's attributes; a subclass that handles ``spider_opened`` too extends :meth:`spider_opened`.
    The scheduler takes it in ``open(spider)``.
    """

    context: CrawlContext

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        component = cls(crawler)
        crawler.signals.connect(component.spider_opened, signal=signals.spider_opened)
        return component

    def spider_opened(self, spider: Spider) -> None:
        self.context = spider.context  # type: ignore[attr-defined]  # FocusedSpider.from_crawler sets it

"""The focused spider: thin glue between Scrapy and the job's frontier and pipelines.

``scrapy crawl focused -a job=glass`` loads ``topics/glass/``, marks its
seeds, and lets the frontier's scheduler hand out URLs; every response
(or failure) becomes one :class:`~combine_scrapy.items.Fetch` item, and the
pipelines do the rest.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Self

import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DontCloseSpider, UsageError
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.asyncio import sleep
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from combine_scrapy import render
from combine_scrapy.context import CrawlContext
from combine_scrapy.exceptions import RobotsDisallowed, RobotsPending, UrlRejected
from combine_scrapy.faults import CrawlFault, stop_crawl
from combine_scrapy.frontier import FrontierEntry, Outcome
from combine_scrapy.items import Fetch
from combine_scrapy.job import Job, JobConfigError, load_job
from combine_scrapy.stats import PAGES_STAT
from combine_scrapy.stores import record_stores

#: The close reason of a crawl with nothing to start from (``scrapy crawl`` then exits with status 2).
NO_USABLE_SEED = "no_usable_seed"
#: Seeds marked in one frontier transaction; the reactor runs (signals, the log) between two.
SEED_BATCH = 10_000
#: What `scrapy crawl focused` without ``-a job=`` says.
NAME_THE_JOB = "name the job to crawl: scrapy crawl focused -a job=NAME"


class FocusedSpider(scrapy.Spider):
    name = "focused"
    #: Why the crawl had no usable seed, for the summary; None while it has one.
    seed_problem: str | None = None
    #: The seeds' marking, running in the background of the crawl (None before it starts).
    seed_marking: Deferred[None] | None = None
    #: What the crawl shares among its components (from_crawler opens it).
    context: CrawlContext
    #: The job's seeds, and those robots.txt refused (from_crawler sets them).
    seed_set: frozenset[str]
    seeds_refused_by_robots: set[str]

    #: How a focused crawl fetches: Scrapy settings of this spider alone (see :meth:`update_settings`).
    crawl_settings: dict[str, Any] = {
        # The frontier hands out every URL and decides when a host may be fetched; Scrapy's own throttles,
        # retries and redirects would fetch behind its back (FetchLimitsMiddleware follows redirects).
        "SCHEDULER": "combine_scrapy.scheduler.FrontierScheduler",
        "ROBOTSTXT_OBEY": False,
        "RETRY_ENABLED": False,
        "REDIRECT_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        # The spider yields one item a response; Scrapy's default of 100 starts ~150 asyncio tasks a page for
        # nothing (bench/results/profile.md: 17% less CPU a page with 1).
        "CONCURRENT_ITEMS": 1,
        "COOKIES_ENABLED": False,
        # Scrapy's check that a generator callback returns no value re-reads and re-parses the callback's source
        # for every response (its cache holds the bound method weakly, and each request's dies with the request):
        # about a millisecond a page under the profiler. The spider's two callbacks return nothing (a test checks).
        "WARN_ON_GENERATOR_RETURN_VALUE": False,
        "DOWNLOAD_MAXSIZE": 16 * 1024 * 1024,
        # AddressGuardMiddleware refuses every scheme but http(s) and a job's ftp URLs; without these handlers a
        # request that got past it still could not read a local file or an S3 bucket.
        "DOWNLOAD_HANDLERS": {"file": None, "data": None, "s3": None},
        "DOWNLOAD_WARNSIZE": 4 * 1024 * 1024,
    }
    #: The crawl's components, by component priority dictionary setting (see :meth:`update_settings`).
    components: dict[str, dict[str, int | None]] = {
        "DOWNLOADER_MIDDLEWARES": {
            "combine_scrapy.downloadermiddlewares.urlrules.UrlRulesMiddleware": 50,
            "combine_scrapy.downloadermiddlewares.addressguard.AddressGuardMiddleware": 60,
            "combine_scrapy.downloadermiddlewares.robots.RobotsMiddleware": 100,
            "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware": None,
            "combine_scrapy.downloadermiddlewares.jobheaders.JobHeadersMiddleware": 400,
            "combine_scrapy.downloadermiddlewares.fetchlimits.FetchLimitsMiddleware": 450,
            # Render = auto / always: a fetched page rendered in Chromium (scrapy-playwright) when it needs it.
            "combine_scrapy.downloadermiddlewares.render.RenderMiddleware": 460,
            "combine_scrapy.downloadermiddlewares.hostpacing.HostPacingMiddleware": 500,
            "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
            "combine_scrapy.downloadermiddlewares.httpcompression.BoundedHttpCompressionMiddleware": 590,
            # saveWARC: archives each response as it came, before BoundedHttpCompressionMiddleware decodes it.
            "combine_scrapy.downloadermiddlewares.warc.WarcMiddleware": 595,
        },
        "ITEM_PIPELINES": {
            "combine_scrapy.itempipelines.outcome.OutcomePipeline": 50,
            "combine_scrapy.itempipelines.parse.ParsePipeline": 100,
            "combine_scrapy.itempipelines.topic.TopicPipeline": 200,
            "combine_scrapy.itempipelines.analyse.AnalysePipeline": 250,
            "combine_scrapy.itempipelines.record.RecordPipeline": 300,
            # saveIrrelevant = 1: pages the topic filter turned down, kept apart as negative examples.
            "combine_scrapy.itempipelines.irrelevant.IrrelevantPagesPipeline": 310,
            "combine_scrapy.itempipelines.harvestlog.HarvestLogWriter": 850,
            "combine_scrapy.itempipelines.frontier.FrontierPipeline": 900,
        },
        "EXTENSIONS": {
            "combine_scrapy.extensions.progress.HarvestProgress": 500,
            "combine_scrapy.extensions.summary.HarvestSummary": 510,
            "combine_scrapy.extensions.pidfile.HarvesterPidFile": 520,
            "combine_scrapy.extensions.crawlfaults.CrawlFaults": 540,
            # Sitemaps = 1 / SitemapGuess = 1: the sitemaps of each host whose robots.txt is read, as a link source.
            "combine_scrapy.extensions.sitemaps.SitemapReader": 545,
            "combine_scrapy.extensions.beacon.HarvesterBeacon": 550,
            "scrapy.extensions.logstats.LogStats": None,  # HarvestProgress says more
            # Feeds (-O, FEEDS) of the records stored, counted as records: Scrapy's FeedExporter, fed records.
            "scrapy.extensions.feedexport.FeedExporter": None,
            "combine_scrapy.extensions.feeds.RecordFeeds": 0,
        },
    }

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """The focused crawl's settings, for this spider alone: other spiders and ``scrapy shell`` get Scrapy's own.

        A value that settings.py or ``-s`` sets wins over :attr:`crawl_settings`. The :attr:`components` join
        those settings.py names, where a component keeps the value given there (``None`` switches it off);
        a component dictionary given with ``-s`` replaces the crawl's, as ``-s`` replaces any setting.
        """
        super().update_settings(settings)
        for name, value in cls.crawl_settings.items():
            if (settings.getpriority(name) or 0) < SETTINGS_PRIORITIES["project"]:
                settings.set(name, value, priority="spider")
        for name, components in cls.components.items():
            if (settings.getpriority(name) or 0) < SETTINGS_PRIORITIES["cmdline"]:
                settings.set(name, {**components, **settings.getdict(name)}, priority="spider")

    def __init__(
        self, job: str | Job | None = None, max_pages: str | None = None, continuous: str = "0", **kwargs: Any
    ) -> None:
        """``job``: its name, or the job itself when ``scrapy crawl`` has loaded it already."""
        super().__init__(**kwargs)
        if not job:
            raise UsageError(NAME_THE_JOB)
        self.loaded_job = job if isinstance(job, Job) else None
        self.job_name = job.name if isinstance(job, Job) else job
        self.max_pages = int(max_pages) if max_pages else None
        self.continuous = continuous.lower() in ("1", "yes", "true")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        try:
            job = spider.loaded_job or load_job(spider.job_name, settings.get("COMBINE_TOPICS_DIR"))
        except JobConfigError as e:
            raise UsageError(f"bad job: {e}") from e
        for name, value in render.crawl_settings(job, settings).items():
            settings.set(name, value, priority="spider")
        if spider.continuous:  # run forever: wait for whatever comes due, however far away
            settings.set("COMBINE_IDLE_HORIZON", float("inf"), priority="spider")
        spider.context = CrawlContext.from_settings(settings, job)
        try:
            record_stores(settings, job.name)  # the job's commands read the stores this crawl uses
        except OSError as e:
            spider.logger.warning("cannot record the job's stores in %s: %s; its commands need the same -s", e.filename, e.strerror)
            # The crawl's stats exist from its start on: counted then.
            crawler.signals.connect(spider.count_unrecorded_stores, scrapy.signals.spider_opened)
        crawler.signals.connect(spider.context.close, scrapy.signals.engine_stopped)
        crawler.signals.connect(spider.seeds_all_refused, scrapy.signals.spider_idle)
        crawler.signals.connect(spider.seeds_still_being_marked, scrapy.signals.spider_idle)
        spider.seed_set = frozenset(job.seeds)
        spider.seeds_refused_by_robots = set()
        return spider

    @property
    def job(self) -> Job:
        return self.context.job

    async def start(self) -> AsyncIterator[Any]:
        """Start marking the seeds in the frontier, which the scheduler then hands out; yields no request itself.

        Each seed the URL rules refuse is named in a warning. Without a usable
        seed and with an empty frontier there is nothing to crawl: a
        configuration error, the crawl stops at once (reason no_usable_seed).
        """
        job = self.job
        for refused in job.refused_seeds:
            self.logger.warning("%s", refused)
        self.crawler.stats.set_value("seeds/usable", len(job.seeds))
        self.crawler.stats.set_value("seeds/refused", len(job.refused_seeds))
        if not job.seeds and not self.context.frontier.counts(time.time()).urls:
            if job.refused_seeds:
                self.seed_problem = f"every seed of seeds.txt was refused ({len(job.refused_seeds)}, see the warnings above)"
            else:
                self.seed_problem = "seeds.txt lists no URL"
            self.seed_problem += " and the frontier is empty: nothing to crawl"
            self.logger.error("job %s: %s", job.name, self.seed_problem)
            raise CloseSpider(NO_USABLE_SEED)
        self.seed_marking = deferred_from_coro(self._mark_seeds())
        return
        yield  # Spider.start is an async generator; the frontier hands out every URL

    async def _mark_seeds(self) -> None:
        """Mark the seeds SEED_BATCH at a time, the reactor free between batches, in the background of the crawl.

        Pages are fetched meanwhile; a signal (or max_pages) stops the marking
        between two batches. An unchanged seed list is marked once: the
        frontier keeps the fingerprint of the list it marked in full.
        """
        job, frontier, stats = self.job, self.context.frontier, self.crawler.stats
        started = time.monotonic()
        try:
            fingerprint = hashlib.sha256("\n".join(job.seeds).encode()).hexdigest()
            if frontier.seeds_marked() == fingerprint:
                self.logger.info("the %d seeds of seeds.txt were marked by an earlier run: not marked again", len(job.seeds))
                return
            for start in range(0, len(job.seeds), SEED_BATCH):
                if not self.crawler.crawling:  # stopped while the seeds were marked: the next run marks them all
                    self.logger.info("seeds marked: %d of %d when the crawl stopped", start, len(job.seeds))
                    return
                marked, refused = self.context.policy.mark_seeds(list(job.seeds[start:start + SEED_BATCH]))
                stats.inc_value("frontier/marked", marked)
                stats.inc_value("seeds/marked", marked)
                if refused:
                    stats.inc_value("urls/rejected/host_full", refused)
                await sleep(0)
            frontier.set_seeds_marked(fingerprint)
            self.logger.info("the %d seeds of seeds.txt marked in %.1f s (%d new)", len(job.seeds),
                             time.monotonic() - started, stats.get_value("seeds/marked", 0))
        except CrawlFault as fault:
            stop_crawl(self.crawler, fault)
        except Exception:  # a bug must not pass unseen in a background task: logged with its traceback, counted
            stats.inc_value("seeds/mark_failed")
            self.logger.exception("marking the seeds of job %s failed", job.name)

    def seeds_still_being_marked(self, spider: scrapy.Spider) -> None:
        """On idle: the crawl waits while seeds are still being marked."""
        if spider is self and self.seed_marking is not None and not self.seed_marking.called:
            raise DontCloseSpider

    def count_unrecorded_stores(self, spider: scrapy.Spider) -> None:
        """The job's stores could not be recorded when the crawl was made (logged then): counted once it starts."""
        self.crawler.stats.inc_value("stores/unrecorded")

    def seeds_all_refused(self, spider: scrapy.Spider) -> None:
        """On idle: when robots.txt refused every seed and nothing was fetched, end with no_usable_seed."""
        if spider is not self or not self.job.seeds or self.crawler.stats.get_value("fetch/outcome/success"):
            return
        if self.seeds_refused_by_robots >= self.seed_set:
            self.seed_problem = f"robots.txt refused every seed ({len(self.job.seeds)}, see the warnings above): nothing was fetched"
            raise CloseSpider(NO_USABLE_SEED)

    def request_for(self, entry: FrontierEntry) -> scrapy.Request:
        """The request that fetches one frontier URL, conditional when the job asks for it.

        The entry rides in the meta, so the Fetch gets its host and distance.
        """
        headers: dict[str, str] = {}
        if self.job.fetching.get_if_modified_since:
            if entry.last_modified:
                headers["If-Modified-Since"] = entry.last_modified
            if entry.etag:
                headers["If-None-Match"] = entry.etag
        return scrapy.Request(
            entry.url,
            callback=self.parse,
            errback=self.fetch_failed,
            headers=headers,
            dont_filter=True,
            meta={
                "frontier_entry": entry,
                "handle_httpstatus_all": True,
                "dont_redirect": True,
                "download_timeout": self.job.fetching.timeout,
            },
        )

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Fetch]:
        """One page fetched (any status): a Fetch item; with max_pages, the crawl ends at that many pages.

        Pages are counted as the summary counts them (PAGES_STAT), so robots.txt requests do not count.
        """
        entry: FrontierEntry = response.meta["frontier_entry"]
        stats = self.crawler.stats
        stats.inc_value(PAGES_STAT)
        yield Fetch(
            url=entry.url,
            host=entry.host,
            fetched_at=time.time(),
            status=response.status,
            headers={
                key.decode("latin-1").lower(): b", ".join(values).decode("latin-1")
                for key, values in response.headers.items()
            },
            body=response.body,
            response_url=response.url if response.url != entry.url else None,
            distance=entry.distance,
            rendered=render.RENDERED in response.flags,
        )
        if self.max_pages and stats.get_value(PAGES_STAT) == self.max_pages:
            raise CloseSpider("closespider_pagecount")

    def fetch_failed(self, failure: Failure) -> Iterator[Fetch]:
        request: scrapy.Request = failure.request  # type: ignore[attr-defined]  # Scrapy sets it on an errback's failure
        entry: FrontierEntry = request.meta["frontier_entry"]
        fetch = Fetch(
            url=entry.url, host=entry.host, fetched_at=time.time(), error=str(failure.value), distance=entry.distance
        )
        if isinstance(failure.value, RobotsPending):
            fetch.postponed = True
        elif isinstance(failure.value, RobotsDisallowed):
            fetch.outcome = Outcome.ROBOTS
            if entry.url in self.seed_set:
                self.seeds_refused_by_robots.add(entry.url)
                self.logger.warning("seed %s refused: forbidden by the robots.txt of %s", entry.url, entry.host)
        elif isinstance(failure.value, UrlRejected):
            fetch.outcome = Outcome.NOT_FOUND
        else:
            fetch.outcome = Outcome.UNAVAILABLE
            self.logger.info("fetch failed: %s: %s", entry.url, failure.getErrorMessage())
        yield fetch

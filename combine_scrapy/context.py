"""What one crawl of a job shares among its Scrapy components: the job, the frontier, the records."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.settings import BaseSettings

from combine_scrapy.access.addresses import PRIVATE_ADDRESS, AddressPolicy, written_non_public
from combine_scrapy.access.politeness import HostPace
from combine_scrapy.access.urls import UrlChecker, host_of
from combine_scrapy.faults import OUTAGE_PATIENCE, CrawlFault
from combine_scrapy.frontier import LEASE_SECONDS, Frontier, FrontierEntry
from combine_scrapy.frontier.pagerank import pagerank
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.sqlite import SqliteFrontier
from combine_scrapy.frontier.strategy import strategy_named
from combine_scrapy.job import ONE_WORD_HOST, Job, one_word_host
from combine_scrapy.links.learned import LearnedLinkScorer
from combine_scrapy.links.online import OnlineLinkLearner
from combine_scrapy.links.scoring import LinkScorer
from combine_scrapy.records.store import RecordStore, open_store
from combine_scrapy.stores import data_directory

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def link_scorer_for(job: Job, url_checker: UrlChecker | None = None) -> LinkScorer | LearnedLinkScorer:
    """The job's link-relevance method; page scores are scaled by the topic filter's total cutoff.

    Its random choices (RWB's boosts) follow the job's RandomSeed. With learned URL rules, the rules
    choose the links on the sites they were learned for. The online model starts empty: a crawl gives it
    its stored model (``online.store_for``). ``url_checker`` (the job's rules) canonicalizes its links.
    """
    cutoffs = getattr(job.topic_filter.classifier, "cutoffs", None)
    scorer = LinkScorer(
        job.definition,
        job.links.method,
        threshold=job.links.threshold,
        page_weight=job.links.page_weight,
        boost_chance=job.links.boost_chance,
        dynamic=job.links.dynamic_threshold,
        page_scale=cutoffs.total if cutoffs and cutoffs.total > 0 else 1.0,
        rng=random.Random(job.links.random_seed),
        max_tunnel_distance=job.links.max_tunnel_distance,
        learner=(
            OnlineLinkLearner(job.url_rules, credit_hops=job.links.max_tunnel_distance, url_checker=url_checker)
            if job.links.method == "online" else None
        ),
    )
    if job.learned_url_rules is None:
        return scorer
    return LearnedLinkScorer(
        job.learned_url_rules,
        scorer,
        job.url_rules,
        threshold=job.learning.url_rule_threshold,
        drop_rejected=job.learning.url_rule_drop,
    )


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
    job: Job
    frontier: Frontier
    store: RecordStore
    max_urls_per_host: int | None = None
    leased: dict[str, FrontierEntry] = field(default_factory=dict)
    link_scorer: LinkScorer | LearnedLinkScorer | None = None
    lease_seconds: float = LEASE_SECONDS
    stats: Any = None          # a Scrapy StatsCollector (inc_value), when crawling
    url_checker: UrlChecker | None = None  # check_url with the job's rules, remembered; made on first use

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
        settings=None,
    ) -> CrawlContext:
        """Open the job's backends: the frontier in Redis when ``redis_url`` is given (shared by
        every harvester), the records in MySQL when ``mysql_url`` is, else both in ``data_dir/<job>/``;
        the job's maxUrlsPerHost wins over the setting. The Redis client is made from the Scrapy
        ``settings`` as scrapy-redis makes it (REDIS_URL, REDIS_PARAMS). Either server, when it cannot be
        reached, is waited for ``outage_patience`` seconds."""
        directory = Path(data_dir) / job.name
        if redis_url:
            frontier = RedisFrontier.from_settings(
                settings if settings is not None else {"REDIS_URL": redis_url}, job.name,
                max_attempts=job.fetching.harvest_retries, outage_patience=outage_patience,
                lease_seconds=lease_seconds, lease_ahead=True,
            )
        else:
            frontier = SqliteFrontier(directory / "frontier.sqlite", max_attempts=job.fetching.harvest_retries)
        url_checker = UrlChecker(job.url_rules)
        return cls(
            job=job,
            frontier=frontier,
            store=open_store(job.name, data_dir, mysql_url, outage_patience=outage_patience),
            max_urls_per_host=job.crawling.max_urls_per_host or max_urls_per_host,
            link_scorer=link_scorer_for(job, url_checker),
            lease_seconds=lease_seconds,
            url_checker=url_checker,
        )

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

    @cached_property
    def addresses(self) -> AddressPolicy:
        """Which hosts may be on loopback or private addresses: those the job names."""
        return AddressPolicy.for_job(self.job)

    @cached_property
    def pace(self) -> HostPace:
        """This harvester's memory of when each host may be asked again (redirect hops, robots.txt, back-off)."""
        return HostPace(self.job.locks.host)

    @property
    def ranks_links(self) -> bool:
        """Whether the strategy orders by PageRank, and so needs the link graph."""
        return strategy_named(self.job.crawling.strategy).ranked

    def mark_seeds(self, seeds: list[str]) -> tuple[int, int]:
        """Mark seeds of the job as they are (job loading canonicalized them and checked them against the URL
        rules, and the job names their hosts): how many were new, and how many the per-host bound refused."""
        marked, refused, _ = self.frontier.mark(
            [(url, host_of(url), 0.0) for url in seeds], max_urls_per_host=self.max_urls_per_host
        )
        return marked, refused

    def mark(
        self, candidates: Iterable[tuple[str, float]], source: str | None = None, *, distance: int = 0, seeds: bool = False
    ) -> tuple[int, Counter[str]]:
        """Canonicalize, validate and mark ``(url, priority)`` pairs for crawling, ``distance`` link hops
        from the last relevant page.

        Every URL is canonicalized here, once, before the frontier sees it.
        ``source`` is the page the links were found on, for the link graph.
        ``seeds``: they were given by a person (scrapy seed, the console), who
        means a full host name: a one-word host (``http://x/``) is refused.
        A URL already marked and not yet fetched keeps the better priority and
        distance of the two (counted as ``frontier/raised``). Returns how many
        were new, and the rejected ones counted by reason.
        """
        rejected: Counter[str] = Counter()
        accepted: dict[str, float] = {}
        if self.url_checker is None:
            self.url_checker = UrlChecker(self.job.url_rules)
        check = self.url_checker
        for url, priority in candidates:
            verdict = check(url)
            refusal = self.addresses.refusal(verdict.url) if verdict.ok and written_non_public(verdict.url) else None
            if refusal:
                logger.debug("refused %s: %s, and the job does not name the host", verdict.url, refusal)
                rejected[PRIVATE_ADDRESS] += 1
            elif verdict.ok and seeds and one_word_host(verdict.url):
                rejected[ONE_WORD_HOST] += 1
            elif verdict.ok:
                accepted[verdict.url] = max(priority, accepted.get(verdict.url, priority))
            else:
                rejected[verdict.reason] += 1
        if source is not None and self.ranks_links:
            self.frontier.add_links((source, target) for target in accepted)
        if not accepted:
            return 0, rejected
        marked, refused, raised = self.frontier.mark(
            [(url, host_of(url), priority) for url, priority in accepted.items()],
            max_urls_per_host=self.max_urls_per_host,
            distance=distance,
        )
        if raised and self.stats is not None:
            self.stats.inc_value("frontier/raised", raised)
        if refused:
            rejected["host_full"] += refused
        return marked, rejected

    def claim(self, entry: FrontierEntry, now: float) -> bool:
        """Lease a ready URL to this harvester (and lock its host)."""
        if not self.frontier.claim(entry, now, self.lease_seconds):
            return False
        self.leased[entry.url] = entry
        return True

    def complete(self, url: str, host: str, **outcome) -> None:
        self.frontier.complete(url, host, **outcome)
        self.leased.pop(url, None)

    def rerank(self) -> int:
        """Recompute the priorities of marked URLs as their PageRank in the crawled graph.

        iPageRank weighs each page by its topic score (negative scores count as 0).
        Returns the number of ranked nodes.
        """
        edges, scores = self.frontier.link_graph()
        relevance = {url: max(score, 0.0) for url, score in scores.items()} if self.job.crawling.strategy == "iPageRank" else None
        ranks = pagerank(edges, relevance)
        self.frontier.set_priorities(ranks)
        return len(ranks)

    def release(self, url: str, host: str, host_lock_until: float, now: float | None = None) -> None:
        self.frontier.release(url, host, host_lock_until, now)
        self.leased.pop(url, None)

    def close(self) -> None:
        """Give back what this harvester still holds, so the next run need not wait for leases to end."""
        now = time.time()
        try:
            for entry in list(self.leased.values()):
                self.release(entry.url, entry.host, now + self.job.locks.host)
        except CrawlFault as fault:  # a full disk, a vanished frontier: the leases end by themselves
            logger.warning("%d leased URLs not given back (%s); they come back when their lease ends", len(self.leased), fault)
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

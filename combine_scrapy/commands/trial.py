"""``scrapy trial JOB [--pages N]``: the trial phase of the learned URL rules.

Crawls every seed site breadth-first, following every link that stays on the
seed sites, up to N pages a site (TrialPages in combine.cfg), with the job's
topic filter; sorts the pages into relevant content pages, relevant
directory pages and irrelevant ones; learns URL rules for each and writes
them to ``topics/JOB/learned_urls.txt``, where ``LearnedUrlRules = 1`` puts
them to use. The trial crawls with a frontier of its own, thrown away
afterwards: the job's crawl state is not touched.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from collections.abc import Iterable
from typing import Any, Self

import scrapy
from scrapy.commands import ScrapyCommand
from scrapy.crawler import Crawler
from scrapy.exceptions import UsageError

from combine_scrapy.access.urls import UrlRules, check_url, host_of
from combine_scrapy.context import CrawlContext
from combine_scrapy.items import Fetch
from combine_scrapy.job import Job, JobConfig
from combine_scrapy.links.learned import LEARNED_RULES_FILE, MIN_SUPPORT, TrialPage, format_rules, learn_site_rules
from combine_scrapy.links.scoring import LinkCandidate
from combine_scrapy.operations.control import (
    CommandError,
    build_checked_job,
    load_checked_config,
    print_error,
    project_help,
    settings_of,
)
from combine_scrapy.spiders.focused import FocusedSpider


def _canonical_links(urls: Iterable[str], rules: UrlRules) -> tuple[str, ...]:
    verdicts = (check_url(url, rules) for url in urls)
    return tuple(dict.fromkeys(verdict.url for verdict in verdicts if verdict.ok))


class SiteLinks:
    """The trial's link selection: every link that stays on the seed sites, in the order found; it has no model
    to learn, re-score or sync (the rules are learned from all the trial's pages at the end)."""

    learner = None
    rescore_due = False

    def __init__(self, sites: Iterable[str], url_rules: UrlRules):
        self.sites = frozenset(sites)
        self.url_rules = url_rules

    def select(self, links: Iterable[LinkCandidate], page_score: float,
               page_relevant: bool, **context: object) -> list[tuple[str, float]]:
        urls = _canonical_links((link.url for link in links), self.url_rules)
        return [(url, 0.0) for url in urls if host_of(url) in self.sites]

    def observe(self, url: str, relevant: bool, score: float = 0.0) -> int:
        """The trial learns nothing while it crawls: the rules are learned from all its pages at the end."""
        return 0

    def rescore(self) -> dict[str, float]:
        return {}


def trial_config(config: JobConfig, pages: int) -> JobConfig:
    """The job as the trial crawls it: breadth-first, every link marked, ``pages`` URLs a host, no revisits,
    and without the learned URL rules the trial is about to write."""
    crawling = dataclasses.replace(
        config.crawling, strategy="BreadthFirst", max_urls_per_host=pages, auto_recycle_links=True, revisit=False
    )
    learning = dataclasses.replace(config.learning, use_learned_url_rules=False)
    return dataclasses.replace(config, crawling=crawling, learning=learning)


_JOB_STATE_COMPONENTS = frozenset({
    "combine_scrapy.downloadermiddlewares.warc.WarcMiddleware",
    "combine_scrapy.itempipelines.record.RecordPipeline",
    "combine_scrapy.itempipelines.irrelevant.IrrelevantPagesPipeline",
    "combine_scrapy.itempipelines.harvestlog.HarvestLogWriter",
    "combine_scrapy.extensions.summary.HarvestSummary",
    "combine_scrapy.extensions.pidfile.HarvesterPidFile",
    "combine_scrapy.extensions.sitemaps.SitemapReader",
    "combine_scrapy.extensions.beacon.HarvesterBeacon",
    "combine_scrapy.extensions.feeds.RecordFeeds",  # the trial stores no record, so it has none to feed
})


class TrialSpider(FocusedSpider):
    """The focused spider over the seed sites only, crawling a job made by trial_config: breadth-first,
    every on-site link, ``pages`` URLs a site.

    It keeps what the rule learner needs of every page it fetches: the URL, the
    topic filter's verdict and the out-links.
    """

    name = "trial"

    #: The focused crawl's components less those that keep, read or report the job's own state (records, irrelevant
    #: pages, WARC files, harvest log, pid file, console beacon, summary) or add links beyond the sites' own (sitemaps).
    components = {
        name: {path: order for path, order in components.items() if path not in _JOB_STATE_COMPONENTS}
        for name, components in FocusedSpider.components.items()
    }

    def __init__(self, trial_job: Job, data_dir: str, **kwargs: Any) -> None:
        super().__init__(job=trial_job.name, **kwargs)
        self.trial_job = trial_job
        self.data_dir = data_dir
        self.trial_pages: list[TrialPage] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        # Skip FocusedSpider.from_crawler: it loads the job and opens its crawl state, and the trial brings its own.
        spider = super(FocusedSpider, cls).from_crawler(crawler, *args, **kwargs)
        job = spider.trial_job
        spider.context = CrawlContext.open(job, spider.data_dir)
        spider.context.policy.link_scorer = SiteLinks((host_of(seed) for seed in job.seeds), job.url_rules)
        spider.seed_set = frozenset(job.seeds)  # fetch_failed notes the seeds robots.txt refuses
        spider.seeds_refused_by_robots = set()
        crawler.signals.connect(spider.context.close, scrapy.signals.engine_stopped)
        crawler.signals.connect(spider.observe, scrapy.signals.item_scraped)
        return spider

    def observe(self, item: Fetch) -> None:
        if item.page is None or item.classification is None:
            return
        links = _canonical_links((link.url for link in item.page.links), self.job.url_rules)
        self.trial_pages.append(TrialPage(item.url, item.classification.relevant, links))


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[options] <job>"

    def short_desc(self) -> str:
        return "Learn a job's URL rules from a breadth-first trial crawl of its seed sites"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        project_help(parser)
        parser.add_argument("--pages", type=int, metavar="N",
                            help="pages to fetch from each seed site (default: TrialPages of the job, 200)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("name one job: scrapy trial JOB [--pages N]")
        if opts.pages is not None and opts.pages <= 0:
            raise UsageError("--pages takes a whole number > 0")
        try:
            config = load_checked_config(args[0], settings_of(self))
            pages = opts.pages or config.learning.trial_pages
            job = build_checked_job(trial_config(config, pages))
        except CommandError as e:
            print_error(self, e)
            return
        process = self.crawler_process
        if process is None:
            raise RuntimeError("scrapy trial run without Scrapy's crawler process")
        with tempfile.TemporaryDirectory(prefix=f"trial-{job.name}-") as data_dir:
            crawler = process.create_crawler(TrialSpider)
            process.crawl(crawler, trial_job=job, data_dir=data_dir)
            process.start()
        if process.bootstrap_failed:
            self.exitcode = 1
            return
        fetched = crawler.spider.trial_pages if isinstance(crawler.spider, TrialSpider) else []
        if not fetched:
            print_error(self, CommandError(f"the trial fetched no page from {', '.join(job.seeds)}; no rules written"))
            return
        h1, h2 = job.learning.hub_content_links, job.learning.hub_directory_links
        trials = learn_site_rules(fetched, h1=h1, h2=h2)
        header = (
            f"Learned URL rules of job {job.name}, written by 'scrapy trial {job.name} --pages {pages}'"
            f" on {time.strftime('%Y-%m-%d %H:%M:%S')}.\n"
            f"Directory pages link to more than {h1} relevant pages (HubContentLinks)"
            f" or more than {h2} directory pages (HubDirectoryLinks).\n"
        )
        path = job.directory / LEARNED_RULES_FILE
        if path.exists():
            previous = path.replace(path.with_name(LEARNED_RULES_FILE + ".old"))
            print(f"the previous rules are now in {previous}")
        path.write_text(format_rules(trials, header), encoding="utf-8")
        for trial in trials:
            print(f"\n{trial.site}: {trial.pages} pages, {len(trial.content)} relevant, {len(trial.directories)} directory")
            if not trial.relevant:
                print("  no relevant page: not a topic-relevant site, no rules")
            for pattern in trial.patterns:
                print(f"  {pattern.kind:<10} {pattern.regex}  (support {pattern.support}, precision {pattern.precision:.0%})")
        if not any(trial.patterns for trial in trials):
            print(f"\nlearned no rule from {len(fetched)} pages: no URL pattern is shared by {MIN_SUPPORT} or more pages "
                  f"of one kind on a site (fetch more with --pages); {path} lists none")
            return
        print(f"\nwrote {path}; review it, and use it with LearnedUrlRules = 1 in {job.directory / 'combine.cfg'}")

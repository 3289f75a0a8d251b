"""``scrapy crawl``, with a focused job checked before Scrapy starts.

A broken job then gives one line naming the file, the line and what is
wrong, and exit status 2, instead of a traceback from inside the engine. A
crawl that ends for want of a usable seed exits with status 2 as well. A
crawl stopped by a fault (a full disk, a vanished frontier: see
combine_scrapy.faults) exits with status 1, so scripts and ``scrapy harvest``
see that it did not finish. SIGINT or SIGTERM while the job loads (a big
seeds.txt takes a while to check) or its stores open ends the command at
once with the summary; the job is loaded once, here, and handed to the spider.
"""

from __future__ import annotations

import argparse

import redis
from scrapy import Spider
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.crawler import Crawler

from combine_scrapy.context import CrawlContext
from combine_scrapy.extensions.summary import fault_summary
from combine_scrapy.faults import FAULT_EXIT_STATUS, FAULT_REASONS, CrawlFault, Interrupted, interrupting_signals
from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, load_checked_job, print_error, settings_of
from combine_scrapy.spiders.focused import NAME_THE_JOB, NO_USABLE_SEED, FocusedSpider


class Command(ScrapyCrawlCommand):
    crawler: Crawler | None = None

    def _create_crawler(self, spidercls: str | type[Spider]) -> Crawler:
        self.crawler = super()._create_crawler(spidercls)
        return self.crawler

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args and args[0] == FocusedSpider.name:
            try:
                if not opts.spargs.get("job"):
                    raise CommandError(NAME_THE_JOB, exitcode=2)
                with interrupting_signals():
                    job = load_checked_job(opts.spargs["job"], settings_of(self))
                    self._check_backends(job)
            except CommandError as e:
                print_error(self, e)
                return
            except Interrupted as stop:
                print(fault_summary(opts.spargs["job"], {}, "shutdown",
                                    f"{stop.signal.name} came while the job was loading, before the crawl started: "
                                    "nothing was fetched"), flush=True)
                return
            opts.spargs["job"] = job  # not loaded again by the spider
        super().run(args, opts)
        reason = self.crawler.stats.get_value("finish_reason") if self.crawler is not None else None
        if reason == NO_USABLE_SEED:
            self.exitcode = 2
        elif not self.exitcode and reason in FAULT_REASONS:
            self.exitcode = FAULT_EXIT_STATUS

    def _check_backends(self, job: Job) -> None:
        """Open the job's frontier and records once before Scrapy starts: a damaged or unwritable file, an
        unreachable MySQL or a malformed URL is a CommandError (one line and an exit status), not a traceback
        from the engine. (Redis is not contacted here: a harvester waits out a Redis that is still starting.)"""
        settings = settings_of(self)
        redis_url = settings.get("REDIS_URL")
        try:
            if redis_url:
                redis.connection.parse_url(redis_url)  # type: ignore[no-untyped-call]  # redis-py types not parse_url
        except ValueError as e:
            raise CommandError(f"bad REDIS_URL {redis_url!r}: {e}", exitcode=2) from e
        try:
            CrawlContext.from_settings(settings, job).close()
        except CrawlFault as e:
            if isinstance(e, ConnectionError):  # MySQL unreachable for the outage patience, or a signal came meanwhile
                print(fault_summary(job.name, {}, e.reason, str(e)), flush=True)
                raise CommandError(f"cannot reach MySQL: {e}", exitcode=FAULT_EXIT_STATUS) from e
            raise CommandError(str(e), exitcode=FAULT_EXIT_STATUS) from e
        except ValueError as e:  # a malformed MYSQL_URL; the message names it
            raise CommandError(str(e), exitcode=2) from e
        except ConnectionError as e:  # MySQL connects when opened
            raise CommandError(f"cannot reach MySQL: {e}", exitcode=1) from e

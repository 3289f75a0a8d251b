"""``scrapy sanity JOB [--restore]``: check (and restore) consistency between a job's records and frontier
(combineUtil sanity / restoreSanity).

Found and, with --restore, mended:
  record URLs the frontier does not know       marked for crawling, so the crawler checks them
  record URLs the frontier found gone (4xx)    removed (the record goes with its last URL)
  record URLs the job's rules now refuse       removed
  record URLs not canonical under today's rules (a new serveralias, say)   renamed
  records without any URL                      deleted
A frontier that was lost (a Redis restarted without persistence, a deleted
frontier.sqlite) shows as record URLs the frontier does not know; the check
then says how to rebuild it: --restore, then ``scrapy recycle JOB``.
Exit status 1 when something was found and not restored.
"""

from __future__ import annotations

import argparse

from combine_scrapy.context import CrawlContext
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.job import Job
from combine_scrapy.operations.control import JobCommand
from combine_scrapy.records.store.maintenance import SanityReport, check_sanity

SHOWN = 5  # example URLs printed per problem


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Check (--restore: mend) consistency between a job's records and its frontier"

    def long_desc(self) -> str:
        return __doc__.split("\n\n", 1)[1]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--restore", action="store_true", help="mend what the check finds")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        with self.context(job) as context:
            store = context.store
            report = check_sanity(store.url_keys(), context.frontier.statuses, job.url_rules, store.orphans())
            _print(report)
            if report.unknown:
                _print_lost_frontier(job.name, context)
            if not report.problems:
                print(f"job {job.name}: records and frontier agree ({store.count()} records)")
            elif opts.restore:
                _restore(report, context)
                print(f"job {job.name}: restored; {store.count()} records")
            else:
                print(f"job {job.name}: {report.problems} problems; run with --restore to mend them")
                self.exitcode = 1


def _print(report: SanityReport) -> None:
    for label, items in (
        ("record URLs the frontier does not know", report.unknown),
        ("record URLs the frontier found gone", report.gone),
        ("record URLs the job's rules refuse", [f"{url} ({reason})" for url, reason in report.rejected]),
        ("record URLs not canonical", [f"{url} -> {new}" for url, new in report.renamed]),
        ("records without a URL", report.orphans),
    ):
        if items:
            print(f"{len(items)} {label}:")
            for item in items[:SHOWN]:
                print(f"    {item}")
            if len(items) > SHOWN:
                print(f"    ... and {len(items) - SHOWN} more")


def _print_lost_frontier(job: str, context: CrawlContext) -> None:
    """Record URLs the frontier lacks: how to get the frontier back from the records."""
    if isinstance(context.frontier, RedisFrontier) and context.frontier.marker() is None:
        print("the Redis frontier has no job marker: it was lost or emptied since a harvester last worked on it "
              "(Redis restarted without persistence?)")
    print(f"to rebuild the frontier from the records: scrapy sanity {job} --restore (marks those URLs again), "
          f"then scrapy recycle {job} (marks the links of every record), then start the harvesters")


def _restore(report: SanityReport, context: CrawlContext) -> None:
    store = context.store
    for url, new in report.renamed:
        store.rename_url(url, new)
    for url in [*report.gone, *(url for url, _ in report.rejected)]:
        store.forget_url(url)
    for key in report.orphans:
        store.delete(key)
    context.policy.mark([(url, 0.0) for url in [*report.unknown, *(new for _, new in report.renamed)]])

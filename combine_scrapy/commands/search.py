"""``scrapy search JOB "query"``: search a job's records, best first, with snippets.

Records are indexed as they are stored (SQLite FTS5, MySQL FULLTEXT), so a
crawl is searchable while it runs: Combine's SearchEngine-in-a-Box.
"""

from __future__ import annotations

import argparse

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand
from combine_scrapy.records.store.search import share_of_best


class Command(JobCommand):
    extra_args = (1, 1)

    def syntax(self) -> str:
        return '[options] <job> "<query>"'

    def short_desc(self) -> str:
        return "Search a job's records (ranked, with snippets)"

    def long_desc(self) -> str:
        return (
            "Search a job's records for any of the query's words; records with more of them, and with them "
            "in the title, rank first. Each hit's relevance is shown as a share of the best hit's score (the "
            "stores' scores are tiny on a small job, where every word is common). Query words appear "
            "[bracketed] in the snippets."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-n", "--limit", type=int, default=10, metavar="N", help="show the N best records (default 10)")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if opts.limit < 1:
            raise CommandError("--limit must be at least 1", exitcode=2)
        query = args[0]
        with self.records(job) as store:
            try:
                hits = store.search(query, limit=opts.limit)
            except ValueError as e:
                raise CommandError(str(e), exitcode=2) from e
        if not hits:
            print(f"no record of job {job.name} matches {query!r}")
            return
        for rank, (hit, relevance) in enumerate(zip(hits, relative_scores([hit.score for hit in hits])), start=1):
            print(f"{rank:3}. {hit.title or '(no title)'}  [relevance {relevance}, record {hit.record_id}]")
            print(f"     {hit.url}")
            print(f"     {hit.snippet}")


def relative_scores(scores: list[float]) -> list[str]:
    """Each score as a share of the best (``100%`` first); ``-`` for all when the store scored none above zero."""
    best = max(scores, default=0.0)
    return [share_of_best(score, best) for score in scores]

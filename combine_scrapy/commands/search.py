"""``scrapy search JOB "query"``: search a job's records, best first, with snippets.

Records are indexed as they are stored (SQLite FTS5, MySQL FULLTEXT), so a
crawl is searchable while it runs: Combine's SearchEngine-in-a-Box.
"""

from __future__ import annotations

import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from combine_scrapy.job import JobConfigError, find_job_dir
from combine_scrapy.store import open_store


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self):
        return '[options] <job> "<query>"'

    def short_desc(self):
        return "Search a job's records (ranked, with snippets)"

    def long_desc(self):
        return (
            "Search a job's records for any of the query's words; records with more of them, and with them "
            "in the title, rank first. Query words appear [bracketed] in the snippets."
        )

    def add_options(self, parser):
        super().add_options(parser)
        parser.add_argument("-n", "--limit", type=int, default=10, metavar="N", help="show the N best records (default 10)")

    def run(self, args, opts):
        if len(args) != 2:
            raise UsageError('name one job and one query: scrapy search JOB "query"')
        if opts.limit < 1:
            raise UsageError("--limit must be at least 1")
        try:
            job_dir = find_job_dir(args[0], self.settings.get("COMBINE_TOPICS_DIR"))
            store = open_store(job_dir.name, self.settings.get("COMBINE_DATA_DIR"), self.settings.get("MYSQL_URL"), create=False)
        except (JobConfigError, OSError, ValueError, RuntimeError) as e:
            print(f"error: {e}", file=sys.stderr)
            self.exitcode = 2
            return
        try:
            hits = store.search(args[1], limit=opts.limit)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            self.exitcode = 2
            return
        finally:
            store.close()
        if not hits:
            print(f"no record of job {job_dir.name} matches {args[1]!r}")
            return
        for rank, hit in enumerate(hits, start=1):
            print(f"{rank:3}. {hit.title or '(no title)'}  [score {hit.score:.2f}, record {hit.record_id}]")
            print(f"     {hit.url}")
            print(f"     {hit.snippet}")

"""``scrapy status JOB``: what the frontier and the record store hold (combineCtrl stat/howmany/hosts)."""

from __future__ import annotations

import sys
import time

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from combine_scrapy.harvest import Harvest
from combine_scrapy.job import JobConfigError, load_job


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self):
        return "[options] <job>"

    def short_desc(self):
        return "Show a job's frontier (URLs marked, waiting, done, by host) and records"

    def add_options(self, parser):
        super().add_options(parser)
        parser.add_argument("--hosts", type=int, default=10, metavar="N", help="list the N hosts with most marked URLs")

    def run(self, args, opts):
        if len(args) != 1:
            raise UsageError("name one job: scrapy status JOB")
        try:
            job = load_job(args[0], self.settings.get("COMBINE_TOPICS_DIR"))
        except JobConfigError as e:
            print(f"error: bad job: {e}", file=sys.stderr)
            self.exitcode = 2
            return
        harvest = Harvest.open(job, self.settings.get("COMBINE_DATA_DIR"))
        try:
            now = time.time()
            counts = harvest.frontier.counts(now)
            print(f"job {job.name}")
            print(f"  URLs known:      {counts['urls']} on {counts['hosts']} hosts")
            print(f"  marked, due:     {counts['marked_ready']}")
            print(f"  marked, locked:  {counts['marked_locked']}")
            print(f"  done:            {counts['done']}")
            print(f"  records:         {harvest.store.count()} ({harvest.store.location})")
            hosts = harvest.frontier.hosts(now, limit=opts.hosts)
            if hosts:
                print("  hosts with marked URLs:")
                for host, marked, wait in hosts:
                    state = "READY" if wait <= 0 else f"WAITING {wait:.0f} s"
                    print(f"    {host:40} {marked:6}  {state}")
        finally:
            harvest.close()

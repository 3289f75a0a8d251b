"""``scrapy status JOB``: what the frontier, the records and the harvest log say of a job
(combineCtrl stat, howmany, hosts).
"""

from __future__ import annotations

import argparse
import time

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand, harvesters_dir, running_harvesters
from combine_scrapy.operations.harvestlog import HarvestLog, format_rate, log_path


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Show a job's frontier (URLs marked, locked, done, by host), records, harvest rate and speed"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--hosts", type=int, default=10, metavar="N", help="list the N hosts with most marked URLs")
        parser.add_argument(
            "--minutes", type=float, default=5, metavar="M", help="measure the fetch rate over the last M minutes (default 5)"
        )

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if opts.hosts < 0 or opts.minutes <= 0:
            raise CommandError("--hosts must be 0 or more and --minutes more than 0", exitcode=2)
        now = time.time()
        with self.context(job) as context:
            counts = context.frontier.counts(now)
            hosts = context.frontier.hosts(now, limit=opts.hosts) if opts.hosts else []
            records, location = context.store.count(), context.store.location
            paused = context.frontier.paused()
        print(f"job {job.name}" + (" (paused: scrapy resume to go on)" if paused else ""))
        print(f"  URLs known:      {counts.urls} on {counts.hosts} hosts")
        print(f"  marked, due:     {counts.marked_ready}")
        print(f"  marked, locked:  {counts.marked_locked}")
        print(f"  done:            {counts.done}")
        print(f"  records:         {records} ({location})")
        relevant = self._print_log(job.name, now, opts.minutes)
        if relevant and not records:
            print(f"  note: the harvest log counts {relevant} relevant pages but {location} holds no record: "
                  "a crawl with other stores (-s MYSQL_URL=...) keeps them there")
        pids = running_harvesters(harvesters_dir(self.data_dir, job.name))
        print(f"  harvesters:      {len(pids)} running here" + (f" (pids {', '.join(map(str, pids))})" if pids else ""))
        if hosts:
            print("  hosts with marked URLs:")
            for host, marked, wait in hosts:
                state = "READY" if wait <= 0 else f"WAITING {wait:.0f} s"
                print(f"    {host:40} {marked:6}  {state}")

    def _print_log(self, job: str, now: float, minutes: float) -> int:
        """Print the harvest log's totals; return the relevant pages it counts."""
        path = log_path(self.data_dir, job)
        if not path.exists():
            print("  pages fetched:   none logged yet")
            return 0
        log = HarvestLog(path)
        try:
            totals = log.totals(now, minutes * 60)
        finally:
            log.close()
        rate = format_rate(totals.harvest_rate)
        print(f"  pages fetched:   {totals.fetched}, {totals.relevant} relevant of {totals.judged} judged (harvest rate {rate})")
        print(f"  rate:            {totals.recent_per_minute:.1f} pages/min over the last {minutes:g} minutes")
        return totals.relevant

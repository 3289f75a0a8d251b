"""``scrapy stop JOB``: stop the job's running harvesters cleanly (combineCtrl kill).

Each harvester leaves a pid file in ``data/<job>/harvesters/`` while it runs
(the HarvesterPidFile extension). ``stop`` sends each one SIGTERM, Scrapy's
graceful shutdown: requests in flight finish, leased URLs go back to the
frontier, the summary is printed. It waits for them to exit.
"""

from __future__ import annotations

import argparse

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand, harvesters_dir, running_harvesters, stop_processes


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Stop a job's running harvesters on this machine (graceful shutdown)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--timeout", type=float, default=60.0, metavar="SECONDS",
            help="how long to wait for the harvesters to finish (default 60)",
        )

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if opts.timeout < 0:
            raise CommandError(f"--timeout must not be negative, got {opts.timeout:g}", exitcode=2)
        pids = running_harvesters(harvesters_dir(self.data_dir, job.name))
        if not pids:
            print(f"job {job.name}: no harvester is running")
            return
        print(f"job {job.name}: stopping {len(pids)} harvester{'s' * (len(pids) != 1)} ({', '.join(map(str, pids))})")
        left = stop_processes(pids, opts.timeout)
        if left:
            raise CommandError(
                f"{len(left)} harvester(s) still running after {opts.timeout:g} s: {', '.join(map(str, left))} "
                "(run stop again to force an unclean shutdown)"
            )
        print(f"job {job.name}: all harvesters stopped")

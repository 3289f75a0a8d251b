"""``scrapy pause JOB``: every harvester of the job stops taking new URLs, on every machine.

The flag is kept in the job's frontier (SQLite file or Redis), which every
harvester reads at least once a second: requests in flight finish, nothing new
is fetched, and a paused harvester waits (it does not end) until ``scrapy
resume JOB``. A harvester started while the job is paused waits too.
"""

from __future__ import annotations

import argparse

from combine_scrapy.job import Job
from combine_scrapy.operations.control import JobCommand, harvesters_dir, running_harvesters


class Command(JobCommand):
    #: What the command sets the flag to.
    pause = True

    def short_desc(self) -> str:
        return "Pause a job: its harvesters, here and on other machines, take no new URL until resumed"

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        with self.context(job) as context:
            was_paused = context.frontier.paused()
            context.frontier.set_paused(self.pause)
        running = len(running_harvesters(harvesters_dir(self.data_dir, job.name)))
        state = "paused" if self.pause else "resumed"
        already = " (it already was)" if was_paused == self.pause else ""
        print(f"job {job.name}: {state}{already}; {running} harvester{'s' * (running != 1)} running here")

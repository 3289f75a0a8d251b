"""``scrapy reharvest JOB``: mark every stored page for harvesting again (combineCtrl reharvest).

Every URL of every record is marked and unlocked, so the next crawl fetches
it again (a conditional GET when the job uses them) and updates or deletes
the record.
"""

from __future__ import annotations

import argparse

from combine_scrapy.job import Job
from combine_scrapy.operations.control import JobCommand


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Mark every stored page of a job for harvesting again"

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        records = marked = missing = 0
        with self.context(job) as context:
            for record in context.store:
                records += 1
                marked_now, missing_now = context.policy.mark_again(context.store.urls(record.key))
                marked += marked_now
                missing += missing_now
        print(f"job {job.name}: {marked} URLs of {records} records marked for harvesting again")
        if missing:
            print(f"  {missing} URLs of records are not in this frontier (a frontier reset or another backend?)")

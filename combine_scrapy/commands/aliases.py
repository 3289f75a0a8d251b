"""``scrapy aliases JOB [--write]``: find hosts that serve identical content (combineUtil serverAlias).

Two hosts are aliases when several paths give the same record on both and no
path gives different ones. With --write each group becomes a serveralias
line in the job's combine.cfg (the host with most records first: the others'
URLs are rewritten to it from then on), and the records' URLs on the other
hosts are renamed to it, so no record is lost.
"""

from __future__ import annotations

import argparse

from combine_scrapy.access.urls import check_url
from combine_scrapy.job import CONFIG_FILE, Job
from combine_scrapy.operations.control import CommandError, JobCommand
from combine_scrapy.records.store.maintenance import MIN_SHARED_PATHS, add_serveralias, find_aliases


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Find server aliases in a job's records (--write: add them to its combine.cfg)"

    def long_desc(self) -> str:
        return __doc__.split("\n\n", 1)[1]

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--write", action="store_true", help="add the groups to combine.cfg and rename the URLs")
        parser.add_argument(
            "--min-shared", type=int, default=MIN_SHARED_PATHS, metavar="N",
            help=f"paths two hosts must share with identical content (default {MIN_SHARED_PATHS})",
        )

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if opts.min_shared < 1:
            raise CommandError("--min-shared must be at least 1", exitcode=2)
        with self.records(job) as store:
            groups = [
                group for group in find_aliases(store.url_keys(), opts.min_shared)
                if any(host not in job.url_rules.serveralias for host in group[1:])
            ]
            if not groups:
                print(f"job {job.name}: no server aliases found")
                return
            for group in groups:
                print(" ".join(group))
            config = job.directory / CONFIG_FILE
            if not opts.write:
                print(f"{len(groups)} alias groups; run with --write to add them to {config}")
                return
            original = config.read_text(encoding="utf-8")
            add_serveralias(config, groups)
            try:
                job = self.load_job(job.name)
            except CommandError as e:
                config.write_text(original, encoding="utf-8")
                raise CommandError(f"{config} left as it was: the aliases did not load: {e.__cause__}") from e
            renamed = 0
            for group in groups:
                for alias in group[1:]:
                    for url in store.urls_on_host(alias):
                        verdict = check_url(url, job.url_rules)
                        if verdict.ok and verdict.url != url:
                            renamed += store.rename_url(url, verdict.url)
            print(f"added {len(groups)} serveralias lines to {config}; renamed {renamed} record URLs")

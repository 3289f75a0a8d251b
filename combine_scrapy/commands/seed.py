"""``scrapy seed JOB [FILE|-]``: mark seed URLs in a job's frontier (combineCtrl load).

URLs come one a line from FILE, or from standard input when FILE is ``-`` or
left out; blank lines and ``#`` comments are skipped. Every URL goes through the
job's URL rules (canonicalization, scheme, length, allow, exclude) as a link
found in a crawl would.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from combine_scrapy.frontier import seed_priority
from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand


def priority_option(text: str) -> float:
    try:
        return seed_priority(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def read_urls(lines: Iterable[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


class Command(JobCommand):
    extra_args = (0, 1)

    def syntax(self) -> str:
        return "[options] <job> [FILE|-]"

    def short_desc(self) -> str:
        return "Load seed URLs into a job's frontier, from a file or standard input"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--priority", type=priority_option, default=0.0, help="priority of the new URLs (default 0)")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        source = args[0] if args else "-"
        if source == "-":
            urls = read_urls(sys.stdin)
        else:
            try:
                with open(source, encoding="utf-8") as lines:
                    urls = read_urls(lines)
            except (OSError, UnicodeDecodeError) as e:
                raise CommandError(f"cannot read seed file {source}: {getattr(e, 'strerror', None) or e}", exitcode=2) from e
        with self.context(job) as context:
            marked, rejected = context.policy.mark(((url, opts.priority) for url in urls), seeds=True)
        over_bound = rejected.pop("host_full", 0)
        refused = sum(rejected.values())
        accepted = len(urls) - refused
        known = accepted - marked - over_bound
        bound = f", {over_bound} over the per-host bound" if over_bound else ""
        print(f"job {job.name}: {accepted} URLs accepted ({marked} new, {known} already known{bound}), {refused} refused")
        for reason, count in sorted(rejected.items(), key=lambda pair: (-pair[1], pair[0])):
            print(f"  refused, {reason}: {count}")

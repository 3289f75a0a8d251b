"""``scrapy shell``, with the project's settings, outside any crawl.

The crawl's scheduler, middlewares, pipelines and extensions are the focused
spider's settings, so the shell fetches single pages with Scrapy's own.
``--job JOB`` sends the job's User-Agent and From headers and puts the job in
the shell as ``job``; ``score(response)`` (or ``score(response, "glass")``)
shows what the job's topic filter makes of the page
(``combine_scrapy.operations.debug``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from scrapy.commands.shell import Command as ScrapyShellCommand
from scrapy.http import Response

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, load_checked_job, print_error, project_help, settings_of
from combine_scrapy.operations.debug import PageScore, score


class Command(ScrapyShellCommand):
    job = None

    def syntax(self) -> str:
        return "[options] [url|file]"

    def long_desc(self) -> str:
        return (
            "Interactive console for scraping the given url or file, with the project's settings. "
            "With --job JOB, score(response) shows what the job's topic filter makes of the page."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        project_help(parser)
        parser.add_argument("--job", metavar="JOB", help="send the job's headers; score(response) uses its topic filter")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        settings = settings_of(self)
        if opts.job:
            try:
                self.job = load_checked_job(opts.job, settings)
            except CommandError as e:  # before the shell starts: exit now
                print_error(self, e)
                raise SystemExit(self.exitcode) from e
            settings.set("USER_AGENT", self.job.fetching.user_agent, priority="cmdline")
            if self.job.fetching.operator_email:
                headers = {**settings.getdict("DEFAULT_REQUEST_HEADERS"), "From": self.job.fetching.operator_email}
                settings.set("DEFAULT_REQUEST_HEADERS", headers, priority="cmdline")

    def update_vars(self, vars: dict[str, Any]) -> None:
        if self.job is not None:
            vars["job"] = self.job
        vars["score"] = ShellScore(self.job)


@dataclass(frozen=True, repr=False)
class ShellScore:
    """``score(response[, job])`` in the shell: what a job's topic filter makes of the page.

    A dataclass instance, so that the shell's banner lists it: Scrapy's shell
    lists the objects it knows and items, and a dataclass instance is an item.
    """

    job: Job | None = None

    def __call__(self, response: Response, job: Job | str | None = None) -> PageScore:
        job = job or self.job
        if job is None:
            raise TypeError("name the job: score(response, 'JOB'), or start the shell with --job JOB")
        return score(response, job)

    def __repr__(self) -> str:
        if self.job is None:
            return "score(response, 'JOB'): what a job's topic filter makes of the page"
        return f"score(response): what the topic filter of job {self.job.name} makes of the page"

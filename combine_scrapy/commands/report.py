"""``scrapy report JOB``: an HTML harvest report with plots, for a finished or running job."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from combine_scrapy.context import link_model_store
from combine_scrapy.frontier import Frontier
from combine_scrapy.job import Job
from combine_scrapy.links.online import LinkModel, describe_feature
from combine_scrapy.operations.control import CommandError, JobCommand
from combine_scrapy.operations.harvestlog import HarvestLog, HostRow, log_path
from combine_scrapy.operations.report import ReportData, render

logger = logging.getLogger(__name__)


class Command(JobCommand):
    def short_desc(self) -> str:
        return "Write an HTML harvest report (relevant pages against pages fetched, top hosts and classes)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="DIR", help="write the report here (default: data/<job>/report)")
        parser.add_argument("--top", type=int, default=20, metavar="N", help="rows in the hosts and classes tables (default 20)")
        parser.add_argument(
            "--compare", action="append", default=[], metavar="JOB",
            help="draw this job's curve in the main plot too (another strategy on the same topic); repeatable",
        )

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if opts.top < 1:
            raise CommandError(f"--top must be at least 1, got {opts.top}", exitcode=2)
        compared = {}
        for name in opts.compare:
            other = self.load_job(name)
            compared[other.name] = self._read_log(other.name, opts.top)[0]
        curve, hosts, classes = self._read_log(job.name, opts.top)
        fetched = self._fetched(job.name)
        with self.context(job) as context:
            frontier, records = context.frontier.counts(time.time()), context.store.count()
            features = self._link_model_features(context.frontier, job.name, opts.top)
        output = Path(opts.output) if opts.output else self.data_dir / job.name / "report"
        data = ReportData(job.name, curve, hosts, classes, records, frontier, fetched, compared, generated=time.time(),
                          features=features)
        try:
            index = render(data, output)
        except OSError as e:
            raise CommandError(f"cannot write the report to {output}: {e.strerror or e}") from e
        print(f"job {job.name}: {fetched} pages fetched; report written to {index}")

    def _link_model_features(self, frontier: Frontier, job: str, top: int) -> list[tuple[str, float]]:
        """The stored link model's strongest named features (none without a model or names)."""
        store = link_model_store(frontier, self.data_dir, job)
        stored = store.read()
        if not stored:
            return []
        try:
            model = LinkModel.from_bytes(stored)
        except ValueError as e:
            logger.warning("link model in %s not read: %s", store.location, e)
            return []
        return [(describe_feature(name), weight) for name, weight in model.top_features(2 * top)]

    def _fetched(self, job: str) -> int:
        path = log_path(self.data_dir, job)
        if not path.exists():
            return 0
        log = HarvestLog(path)
        try:
            return log.totals(time.time(), 60).fetched
        finally:
            log.close()

    def _read_log(self, job: str, top: int) -> tuple[list[tuple[float, int, int]], list[HostRow], list[tuple[str, int]]]:
        path = log_path(self.data_dir, job)
        if not path.exists():
            return [], [], []
        log = HarvestLog(path)
        try:
            return log.curve(), log.top_hosts(top), log.top_classes(top)
        finally:
            log.close()

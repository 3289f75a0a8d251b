"""The `scrapy crawl focused` command line of the tests, and crawls whose stats come back as the crawler counted them.

A crawl runs in a process of its own (Twisted's reactor starts once a process, and a test about a crawl
is a test about the command a user runs). Its stats come from ``crawler.stats`` itself:
StatsFileCollector, Scrapy's stats collector, also writes them as JSON when the spider closes (where
Scrapy logs "Dumping Scrapy stats"), so no test reads them back out of the log text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from scrapy.statscollectors import MemoryStatsCollector

PROJECT = Path(__file__).resolve().parent.parent
SCRAPY = [sys.executable, "-m", "scrapy"]


def crawl_environment() -> dict[str, str]:
    """The environment of a crawl's process, read when it starts (a test may have set http_proxy): the project
    and this module (StatsFileCollector) on its path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT), str(PROJECT / "tests")])}


def crawl_command(job_dir, *args: str) -> list[str]:
    """``scrapy crawl focused -a job=NAME`` with the job's topics and data directories (``job_dir``: a JobDir),
    then ``args`` (spider arguments, ``-s`` settings, which win over the directories, ``-O``)."""
    return [
        *SCRAPY, "crawl", "focused", "-a", f"job={job_dir.name}",
        "-s", f"COMBINE_TOPICS_DIR={job_dir.topics}", "-s", f"COMBINE_DATA_DIR={job_dir.data}", *args,
    ]


class StatsFileCollector(MemoryStatsCollector):
    """Scrapy's stats collector, writing the crawl's stats to the JSON file TEST_STATS_FILE as well."""

    def _persist_stats(self, stats: dict[str, Any]) -> None:
        super()._persist_stats(stats)
        Path(self._crawler.settings["TEST_STATS_FILE"]).write_text(json.dumps(stats, default=str))


class CrawlResult(subprocess.CompletedProcess):
    """A finished `scrapy crawl`: its status and output, and ``stats``, the crawler's stats ({} when it never closed)."""

    stats: dict[str, Any]


def run_crawl(job_dir, *args: str, timeout: float = 120) -> CrawlResult:
    """Run the job's crawl with ``args`` (spider arguments, ``-s`` settings, ``-O``) and collect its stats."""
    with tempfile.TemporaryDirectory(prefix="crawl-stats-") as directory:
        stats_file = Path(directory) / "stats.json"
        command = crawl_command(
            job_dir, *args, "-s", f"STATS_CLASS={StatsFileCollector.__module__}.{StatsFileCollector.__name__}",
            "-s", f"TEST_STATS_FILE={stats_file}",
        )
        process = subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, timeout=timeout, env=crawl_environment())
        result = CrawlResult(process.args, process.returncode, process.stdout, process.stderr)
        result.stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    return result

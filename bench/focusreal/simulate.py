"""Offline crawls of the doc web by the crawler's own policy: bench.focusreal's cells in seconds, not minutes.

    .venv/bin/python -m bench.focusreal.simulate [--topics tls,regex] [--seed-sets home,offtopic]
                                                 [--cap 1000] [--set combine_scrapy.links.online.CREDIT_DECAY=0.5]
                                                 [--compare bench/results/focus25-records/run*/focusreal.json]
                                                 [--results DIR]

A real crawl of a cell takes a minute or two and its order depends on when
pages arrive. This one replays what the crawl decides, with the crawler's own pieces and
no server, no Scrapy: the job bench.focusreal writes for the topic (no
configuration variables: the defaults), a SQLite frontier (its strategy's
rounds, the host yield), and the :class:`~combine_scrapy.policy.CrawlPolicy`
that marks each page's links (the link method and the online model, its
lessons and re-scorings) and completes each fetch. Each fetch is read as the
pipelines read it: parsed as ParsePipeline parses it, classified by the
job's topic filter as TopicPipeline classifies it, and new or not by the
record store's rule (the content key, then the near-duplicate distance);
a redirect is a fetch whose target the policy marks, or, with
UserAgentFollowRedirects, is followed within its fetch as FetchLimitsMiddleware
follows it (each answer counted as a fetch, as the server's log counts it). The fetches are
judged as bench.focusreal judges a crawl's (bench/focusreal/records.py):
new relevant records per 500 fetches, fetches to 50/80/100% of the
targets. What it leaves out: robots.txt (missing on the doc web), the
timing of a crawl with pages in flight, an image's alt texts.

``--set MODULE.NAME=VALUE`` sets a module's constant for the run (a number), for
trying a change without editing the code; ``--compare`` puts real crawls'
figures of the ``default`` configuration beside the simulated ones.
Writes simulate.json and simulate.md in the results directory.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import tempfile
from collections import Counter, deque
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.focusreal.benchmark import WINDOW, add_cell_arguments, install_packages, seeds, topic_jobs, windows
from bench.focusreal.docweb import DocWeb, request_of
from bench.focusreal.records import NewRecords, PageJudge, new_records, read_page
from bench.focusreal.topics import Topic, topic_named
from bench.focusweb.web import pages_for_recall
from bench.report import RESULTS, environment, write_report
from bench.virtualweb.harness import command_line
from combine_scrapy.access.urls import UrlChecker
from combine_scrapy.document import neardup
from combine_scrapy.document.parse import ParsedPage
from combine_scrapy.frontier import FrontierEntry
from combine_scrapy.frontier.sqlite import SqliteFrontier
from combine_scrapy.frontier.strategy import strategy_named
from combine_scrapy.items import Fetch
from combine_scrapy.job import Job
from combine_scrapy.links.online import MODEL_FILE, FileModelStore
from combine_scrapy.policy import CrawlPolicy, link_scorer_for
from combine_scrapy.records.record import content_key
from combine_scrapy.topic import Classification

CAP = 1000
#: The crawl's CONCURRENT_REQUESTS (the focused spider's).
CONCURRENCY = 32
#: Seconds between two simulated fetches (WaitIntervalHost is 0 on the bench: only the order matters).
STEP = 0.01
START = 1_800_000_000.0  # the simulated clock's start (any fixed time)
RECALL_SHARES = (0.5, 0.8, 1.0)


@dataclass(frozen=True)
class ReadPage:
    """A served page as the crawl's pipelines read it: the parsed page without its text (what the crawl policy
    reads of it), its record's content key and fingerprint, and each topic's verdict."""

    page: ParsedPage
    key: str
    fingerprint: int | None
    verdicts: dict[str, Classification]


class Pages:
    """Reads each served page once, for every topic: pages repeat from crawl to crawl."""

    def __init__(self, web: DocWeb, jobs: dict[str, Job]):
        self.web = web
        self.jobs = jobs
        self.cache: dict[str, ReadPage] = {}

    def read(self, url: str, body: bytes, content_type: str) -> ReadPage:
        if url not in self.cache:
            page, verdicts = read_page(url, body, content_type, self.jobs)
            self.cache[url] = ReadPage(replace(page, text="", html=None, main_text=None),
                                       content_key(page.title, page.text, url, page.mime_type),
                                       neardup.page_fingerprint(page.text, page.main_text), verdicts)
        return self.cache[url]


@dataclass
class SimulatedCrawl:
    """One simulated crawl, judged: its fetches in order ``(host, request target, status)``."""

    topic: str
    seed_set: str
    targets: int
    fetches: list[tuple[str, str, int]] = field(default_factory=list)
    records: list[int] = field(default_factory=list)  # fetch numbers of the new relevant records
    hits: list[int] = field(default_factory=list)  # fetch numbers of the targets found

    def fetches_to(self, share: float) -> int | None:
        needed = pages_for_recall(self.targets, share)
        return self.hits[needed - 1] if len(self.hits) >= needed else None

    def records_per_window(self, cap: int) -> list[int]:
        return windows(self.records, cap)

    def per_host(self, last: int) -> Counter[str]:
        return Counter(host.removesuffix(".docs.test") for host, _, _ in self.fetches[:last])


def next_request(frontier: SqliteFrontier, policy: CrawlPolicy, waiting: deque[FrontierEntry], now: float,
                 strategy: str, limit: int | None, hold: float) -> FrontierEntry | None:
    """The scheduler's next_request: the next URL of its ready queue it can claim, from a new round when the queue
    is empty; None when there is none now."""
    if not waiting:
        waiting.extend(frontier.ready(now, strategy, limit, hold=hold))
    while waiting:
        entry = waiting.popleft()
        if policy.claim(entry, now):
            return entry
    return None


class Simulation:
    """Crawls the doc web as the crawler would, one topic's job at a time (its defaults), judged.

    The scheduler hands out URLs while fewer than ``concurrency`` are in flight (CONCURRENT_REQUESTS), and the
    pages in flight come back one at a time, in the order they were handed out: a host waits for the pages
    handed out before its own, as in a crawl whose pipelines, not the loopback server, take the time.
    """

    def __init__(self, web: DocWeb, jobs: dict[str, Job], pages: Pages, judge: PageJudge,
                 concurrency: int = CONCURRENCY):
        self.web, self.jobs, self.pages, self.judge = web, jobs, pages, judge
        self.concurrency = concurrency

    def crawl(self, topic: Topic, seed_set: str, cap: int, directory: Path) -> SimulatedCrawl:
        job = self.jobs[topic.key]
        frontier = SqliteFrontier(directory / "frontier.sqlite", max_attempts=job.fetching.harvest_retries)
        checker = UrlChecker(job.url_rules)
        scorer = link_scorer_for(job, checker)
        if scorer.learner is not None:
            scorer.learner.store = FileModelStore(directory / MODEL_FILE)
        policy = CrawlPolicy(job, frontier, link_scorer=scorer, url_checker=checker,
                             max_urls_per_host=job.crawling.max_urls_per_host)
        strategy = strategy_named(job.crawling.strategy)
        if strategy.ranked:
            raise ValueError(f"{strategy.name} re-ranks by PageRank as the scheduler does: not simulated")
        policy.mark_seeds([checker(url).url for url in seeds(self.web, seed_set, topic)])
        policy.sync_link_model()
        records = NewRecords(self.judge.near_duplicate_distance)
        crawl = SimulatedCrawl(topic.key, seed_set, len(topic.targets))
        limit = None if strategy.full_round else self.concurrency
        hold = policy.lease_seconds if strategy.holds_places else 0.0
        waiting: deque[FrontierEntry] = deque()  # the scheduler's ready queue
        in_flight: deque[FrontierEntry] = deque()
        now = START
        try:
            while len(crawl.fetches) < cap:
                while len(in_flight) < self.concurrency:  # the engine asks while it has free slots
                    entry = next_request(frontier, policy, waiting, now, strategy.name, limit, hold)
                    if entry is None:
                        break
                    in_flight.append(entry)
                if not in_flight:
                    due = frontier.next_due(now)
                    if due is None:
                        break
                    now = max(due, now + STEP)
                    continue
                entry = in_flight.popleft()
                fetch = self._fetch(entry.url, entry.host, entry.distance, now, crawl, records, topic.key)
                policy.settle_outcome(fetch)
                policy.fetch_done(fetch)
                now += STEP
        finally:
            frontier.close()
        return self._judged(crawl, topic, cap)

    def _fetch(self, url: str, host: str, distance: int, now: float, crawl: SimulatedCrawl, records: NewRecords,
               topic: str) -> Fetch:
        """Fetch ``url`` from the doc web as the downloader and the pipelines would: the Fetch the policy gets."""
        response, answered, hops = self.web.respond(*request_of(url)), url, 0
        crawl.fetches.append((*request_of(url), response.status))
        job = self.jobs[topic]
        while (response.status in (301, 302, 303, 307, 308) and response.location and job.fetching.follow_redirects
               and hops < job.fetching.max_redirects):
            answered, hops = response.location, hops + 1
            response = self.web.respond(*request_of(answered))
            crawl.fetches.append((*request_of(answered), response.status))
        headers = {"content-type": response.content_type}
        if response.location:
            headers["location"] = response.location
        fetch = Fetch(url=url, host=host, fetched_at=now, status=response.status, headers=headers,
                      response_url=answered if answered != url else None, distance=distance)
        if response.status == 200:
            read = self.pages.read(answered, response.body, response.content_type)
            fetch.page, fetch.record_key = read.page, read.key
            fetch.classification = read.verdicts[topic]
            if fetch.classification.relevant and not read.page.robots_noindex:
                fetch.novel = records.add(read.key, read.fingerprint)
        return fetch

    def _judged(self, crawl: SimulatedCrawl, topic: Topic, cap: int) -> SimulatedCrawl:
        del crawl.fetches[cap:]
        judged = ((n, self.judge.judge(host, target) if status == 200 else None)
                  for n, (host, target, status) in enumerate(crawl.fetches, start=1))
        crawl.records = new_records(judged, topic.key, self.judge.near_duplicate_distance)
        targets, found = {target.key for target in topic.targets}, set()
        for n, (host, target, status) in enumerate(crawl.fetches, start=1):
            key = self.web.key(host, target) if status == 200 else None
            if key in targets and key not in found:
                found.add(key)
                crawl.hits.append(n)
        return crawl


def settings_changed(assignments: list[str]) -> dict[str, float]:
    """Apply ``MODULE.NAME=VALUE`` assignments to the modules' constants; returns them as set."""
    changed = {}
    for assignment in assignments:
        name, _, value = assignment.partition("=")
        module_name, _, constant = name.rpartition(".")
        module = importlib.import_module(module_name)
        if not hasattr(module, constant):
            raise SystemExit(f"--set: {module_name} has no {constant}")
        number = int(value) if value.lstrip("-").isdigit() else float(value)  # a count stays an int (a slice's)
        setattr(module, constant, changed.setdefault(name, number))
    return changed


def real_figures(paths: list[Path]) -> dict[tuple[str, str], list[tuple[int, int | None]]]:
    """The real crawls of ``default`` in bench.focusreal results: per cell, (new relevant records in the first
    WINDOW fetches, fetches to 80% of the targets) of each run."""
    figures: dict[tuple[str, str], list[tuple[int, int | None]]] = {}
    for path in paths:
        for run in json.loads(path.read_text())["crawls"]:
            if run["config"] != "default" or run.get("records") is None:
                continue
            needed = pages_for_recall(run["relevant_pages"], 0.8)
            to_80 = run["hits"][needed - 1] if len(run["hits"]) >= needed else None
            figures.setdefault((run["topic"], run["seed_set"]), []).append(
                (sum(1 for fetch in run["records"] if fetch <= WINDOW), to_80))
    return figures


def summary(crawl: SimulatedCrawl, cap: int) -> dict:
    return {"topic": crawl.topic, "seed_set": crawl.seed_set, "fetched": len(crawl.fetches),
            "records_per_500": crawl.records_per_window(cap),
            **{f"fetches_to_{share:.0%}": crawl.fetches_to(share) for share in RECALL_SHARES},
            "per_host_500": dict(crawl.per_host(WINDOW).most_common())}


def report(result: dict) -> list[str]:
    changed = ", ".join(f"{name} = {value:g}" for name, value in result["set"].items()) or "none (main's code)"
    lines = ["", f"Constants set: {changed}. Cap {result['cap']:,} fetches, at most {result['concurrency']} in flight.", "",
             "| topic | seed set | new relevant records, fetches 1-500 | real (default) | fetches to 50 / 80 / 100% | "
             "real 80% | records per 500 | fetches 1-500 per host |",
             "| --- | --- | ---: | --- | --- | --- | --- | --- |"]
    for cell in result["cells"]:
        real = result["real"].get(f"{cell['topic']} {cell['seed_set']}", [])
        shares = " / ".join(str(cell[f"fetches_to_{share:.0%}"] or "never") for share in RECALL_SHARES)
        hosts = ", ".join(f"{host} {count}" for host, count in cell["per_host_500"].items())
        lines.append(f"| {cell['topic']} | {cell['seed_set']} | {cell['records_per_500'][0]} | "
                     f"{', '.join(str(records) for records, _ in real)} | {shares} | "
                     f"{', '.join(str(to_80 or 'never') for _, to_80 in real)} | "
                     f"{', '.join(map(str, cell['records_per_500']))} | {hosts} |")
    first = [cell["records_per_500"][0] for cell in result["cells"]]
    lines += ["", f"Records 1-500: total {sum(first)}, median {statistics.median(first):g}."]
    return lines


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.focusreal.simulate", description=__doc__.splitlines()[0])
    add_cell_arguments(parser)
    parser.add_argument("--cap", type=int, default=CAP, help="fetches a crawl makes")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="URLs in flight at most")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="a module's constant for this run (repeatable)")
    parser.add_argument("--compare", type=Path, nargs="*", default=[], help="bench.focusreal results (JSON)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory for simulate.{json,md}")
    args = parser.parse_args(argv)
    changed = settings_changed(args.set)
    install_packages()
    web, topics = DocWeb(), [topic_named(key) for key in args.topics]
    cells = []
    with tempfile.TemporaryDirectory() as directory:
        jobs = topic_jobs(topics, Path(directory) / "jobs")
        simulation = Simulation(web, jobs, Pages(web, jobs), PageJudge(web, jobs), args.concurrency)
        for topic in topics:
            for seed_set in args.seed_sets:
                data = Path(directory) / f"data-{topic.key}-{seed_set}"
                crawl = simulation.crawl(topic, seed_set, args.cap, data)
                cells.append(summary(crawl, args.cap))
                print(f"{topic.key} {seed_set}: records 1-500 {cells[-1]['records_per_500'][0]}, 80% at "
                      f"{cells[-1]['fetches_to_80%']}", flush=True)
    real = {f"{topic} {seed_set}": runs for (topic, seed_set), runs in real_figures(args.compare).items()}
    result = {**environment(command_line("bench.focusreal.simulate", argv)), "cap": args.cap,
              "concurrency": args.concurrency, "set": changed,
              "compared_with": [str(path) for path in args.compare], "real": real, "cells": cells}
    write_report("simulate", result, "Simulated crawls of the doc web (the crawler's policy, offline)", report(result),
                 args.results)
    return result


if __name__ == "__main__":
    main()

"""Benchmark: the focus engine on real documentation sites, against plain Scrapy.

    .venv/bin/python -m bench.focusreal [--topics tls,backup] [--seed-sets home,portal,offtopic]
                                        [--configs default,scrapy-bfs] [--cap 3000] [--peer-cap 10000]
                                        [--runs 1] [--results DIR]

The doc web (bench/focusreal/docweb.py) serves the HTML trees of eleven
Debian documentation packages as named hosts, three of them in several
languages under ``/<lang>/`` paths. Each topic (bench/focusreal/topics.py)
has a topic definition written as a user would and target pages chosen by
reading the pages, on two hosts or more. Three seed sets: ``home`` (every
host's home page), ``portal`` (one page linking to every home page),
``offtopic`` (one page of one host, about something else; per topic).

For every seed set, topic and run, each focused configuration
(``CONFIGURATIONS``: combine.cfg lines; ``default`` adds none) crawls once
with ``RandomSeed`` = the run. The peers are plain Scrapy (bench/plainspider.py,
kept on the doc web's domain by ``allowed_domains``): ``scrapy-bfs`` in
breadth-first order, ``scrapy-default`` in Scrapy's default order; they know
no topic, so one crawl of a seed set is judged for every topic (the offtopic
seed set has a crawl per topic).

A crawl is judged by the server's request log: a fetch is any request to a
doc web host but robots.txt; the first ``--cap`` count; a fetch of any
language of a target page finds that target, once; a crawl stops early
(SIGINT) once it has every target and its first 500 fetches. After each
crawl its pages are judged for *new relevant records*
(bench/focusreal/records.py): relevant to the topic by the topic filter of
the job written for it, and neither an exact copy nor a near-duplicate of an
earlier new record of the crawl, as the record store decides; the same for
every configuration, each page judged once. Reported per seed set, topic and
configuration: fetches to 50/80/100% of the targets, targets found and new
relevant records per 500 fetches, the ratio to breadth-first and pass/fail
against the issue's targets, and fetches per host. Writes bench/results/focusreal.json, .md and
.png (targets found against fetches, one panel per seed set and topic).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.focushard import (
    BREADTH_FIRST,
    EARLY_FETCHES,
    HARVEST_GAIN,
    PLAIN_CONCURRENCY,
    RECALL_SHARES,
    SPEED_UP,
    Run,
    _ratio,
    _verdict,
    cell,
    random_seed_known,
    spread,
    summarize,
)
from bench.focusreal.docweb import DOMAIN, PORTAL, DocWeb, packages
from bench.focusreal.records import PageJudge, new_records
from bench.focusreal.topics import TOPICS, Topic, topic_named
from bench.focusweb.web import pages_for_recall
from bench.report import RESULTS, environment, write_report
from bench.virtualweb.harness import (
    PROJECT,
    FocusedJob,
    ServedWeb,
    command_line,
    load_average,
    page_fetches,
    plain_command,
    run_crawl,
)
from combine_scrapy.job import Job, load_job

#: How each focused configuration crawls: combine.cfg lines added to the job. ``default`` adds none.
CONFIGURATIONS: dict[str, dict[str, str]] = {
    "default": {},
    "combine": {"CrawlStrategy": "BreadthFirstTime", "LinkStrategy": "propagate"},
    "ipagerank-rwb": {"CrawlStrategy": "iPageRank", "LinkStrategy": "RWB"},
    "bft-online": {"CrawlStrategy": "BreadthFirstTime", "LinkStrategy": "online"},
}
#: Plain Scrapy, knowing no topic: the peers. ``scrapy-bfs`` (breadth-first) is the one the targets compare with.
DEFAULT_ORDER = "scrapy-default"
PEERS: dict[str, list[str]] = {BREADTH_FIRST: ["--breadth-first"], DEFAULT_ORDER: []}
SEED_SETS = ("home", "portal", "offtopic")
WINDOW = 500  # targets found per this many fetches
TRACED = 1000  # fetches whose page, verdict and priority a run keeps (RealRun.trace)

CONFIG = """\
# A job for the doc web (topic: {topic}), written by bench.focusreal.
# Its hosts exist only behind the doc web's proxy; crawl it with
#   http_proxy=http://127.0.0.1:{port} scrapy crawl focused -a job={name} -s COMBINE_TOPICS_DIR={topics}
# Nothing here chooses how the crawl is focused: the lines after the block do, or the crawler's defaults.

WaitIntervalHost = {wait}
saveHTML = 0
UserAgent = combine-scrapy/0.1 (focus benchmark)
OperatorEmail = operator@example.org

<allow>
HOST: {domain}$
</allow>
"""


@dataclass
class RealRun(Run):
    """A crawl judged for one topic from one seed set; ``hits`` are fetch numbers of new targets."""

    seed_set: str = "home"
    per_host: dict[str, int] = field(default_factory=dict)  # fetches judged, by host
    found: list[str] = field(default_factory=list)  # the targets found, in order (host + path)
    #: Fetch numbers of the pages that added a new relevant record (bench/focusreal/records.py); None: not judged.
    records: list[int] | None = None
    record_pages: list[str] = field(default_factory=list)  # the pages of those records, in order (host + target)
    #: The first TRACED fetches, each ``[host + target, verdict, priority]``: verdict ``new`` (a new relevant record),
    #: ``duplicate`` (relevant, an exact or near copy of an earlier record), ``irrelevant``, or ``status <code>``;
    #: priority the URL's in the crawler's frontier when the crawl ended, the one it was fetched with (None for plain Scrapy).
    trace: list[list] = field(default_factory=list)

    def per_window(self, cap: int, window: int = WINDOW) -> list[int]:
        """Targets found in fetches 1-500, 501-1000, ... up to the cap."""
        return windows(self.hits, cap, window)

    def records_per_window(self, cap: int, window: int = WINDOW) -> list[int] | None:
        """New relevant records in fetches 1-500, 501-1000, ... up to the cap (None: not judged)."""
        return None if self.records is None else windows(self.records, cap, window)


def windows(fetches: list[int], cap: int, window: int = WINDOW) -> list[int]:
    """How many of ``fetches`` (fetch numbers) fall in fetches 1-500, 501-1000, ... up to the cap."""
    return [sum(1 for fetch in fetches if start < fetch <= start + window) for start in range(0, cap, window)]


class Judge:
    """Reads a crawl's requests from the server log as they come; counts each topic's targets once a page.

    It keeps the pages fetched (fetch number, host, request target) for judging the new relevant records after
    the crawl (:meth:`records`).
    """

    def __init__(self, web: DocWeb, served: ServedWeb, topics: list[Topic], cap: int):
        self.web = web
        self.served = served
        self.cap = cap
        self.since = served.stats()["requests"]
        self.fetched = 0
        self.outside = 0  # requests to hosts the web does not have (answered 502), not counted as fetches
        self.per_host: Counter[str] = Counter()
        self.targets = {topic.key: {target.key for target in topic.targets} for topic in topics}
        self.hits: dict[str, list[int]] = {topic.key: [] for topic in topics}
        self.found: dict[str, list[tuple[str, str]]] = {topic.key: [] for topic in topics}
        self.pages: list[tuple[int, str, str]] = []  # (fetch number, host, request target) of every 200 answer
        self.statuses: list[tuple[str, str, int]] = []  # (host, request target, status) of the first TRACED fetches

    def read(self) -> None:
        entries = self.served.log(self.since)
        if entries:
            self.since = entries[-1]["seq"] + 1
        self.judge(page_fetches(entries))

    def judge(self, entries: list[dict]) -> None:
        """Count logged page requests (robots.txt left out) up to the cap."""
        for entry in entries:
            host = entry["host"]
            if host != PORTAL and host not in self.web.trees:
                self.outside += 1
                continue
            if self.fetched >= self.cap:
                return
            self.fetched += 1
            self.per_host[host] += 1
            if self.fetched <= TRACED:
                self.statuses.append((host, entry["path"], entry["status"]))
            if entry["status"] == 200:
                self.pages.append((self.fetched, host, entry["path"]))
            key = self.web.key(host, entry["path"]) if entry["status"] == 200 else None
            if key is None:
                continue
            for topic, targets in self.targets.items():
                if key in targets and key not in self.found[topic]:
                    self.found[topic].append(key)
                    self.hits[topic].append(self.fetched)

    def done(self) -> bool:
        """Stop the crawl: the cap is reached, or every target of every judged topic was fetched and the first
        ``WINDOW`` fetches are complete (the new relevant records are counted over them)."""
        self.read()
        return self.fetched >= self.cap or (
            self.fetched >= WINDOW and all(len(self.hits[t]) == len(self.targets[t]) for t in self.hits))

    def records(self, judge: PageJudge, topic: str) -> list[tuple[int, str]]:
        """The pages that added a new relevant record for ``topic``, the store's rule replayed: (fetch number,
        host + request target)."""
        fetches = ((fetch, judge.judge(host, target)) for fetch, host, target in self.pages)
        added = set(new_records(fetches, topic, judge.near_duplicate_distance))
        return [(fetch, host + target) for fetch, host, target in self.pages if fetch in added]

    def trace(self, judge: PageJudge, topic: str, new: list[int], priorities: dict[str, float]) -> list[list]:
        """``RealRun.trace`` of the first TRACED fetches; ``new``: the fetch numbers of the new relevant records."""
        added, trace = set(new), []
        for fetch, (host, target, status) in enumerate(self.statuses, start=1):
            judgement = judge.judge(host, target) if status == 200 else None
            verdict = (f"status {status}" if status != 200 else "new" if fetch in added
                       else "duplicate" if judgement is not None and topic in judgement.relevant else "irrelevant")
            trace.append([host + target, verdict, priorities.get(f"http://{host}{target}")])
        return trace


def frontier_priorities(data: Path) -> dict[str, float]:
    """Every URL's priority in the SQLite frontier files under ``data`` (a focused crawl's job data)."""
    priorities: dict[str, float] = {}
    for path in data.glob("*/frontier.sqlite"):
        with sqlite3.connect(path) as connection:
            priorities.update(connection.execute("SELECT url, priority FROM url_states").fetchall())
    return priorities


class ServedDocWeb(ServedWeb):
    """The doc web's server (bench/virtualweb's proxy) in its own process."""

    def serve_command(self) -> list[str]:
        return [sys.executable, "-m", "bench.focusreal.serve", "--port", "0", "--log-size", str(self.log_size)]


def seeds(web: DocWeb, seed_set: str, topic: Topic | None) -> list[str]:
    """The start URLs of a seed set (``offtopic`` is per topic)."""
    if seed_set == "home":
        return web.homes()
    if seed_set == "portal":
        return [f"http://{PORTAL}/"]
    return [topic.offtopic]


def write_job(topic: Topic, out: Path, start: list[str], port: int, wait: float, variables: dict[str, str]) -> Path:
    """The job directory ``out`` for ``topic``: combine.cfg (``variables`` added), its definition, the seeds."""
    out.mkdir(parents=True, exist_ok=True)
    config = CONFIG.format(topic=topic.name, port=port, name=out.name, topics=out.resolve().parent,
                           wait=f"{wait:g}", domain=DOMAIN.replace(".", "\\."))
    config += "".join(f"{name} = {value}\n" for name, value in variables.items())
    (out / "combine.cfg").write_text(config)
    (out / "topicdefinition.txt").write_text(topic.definition)
    (out / "seeds.txt").write_text("".join(f"{url}\n" for url in start))
    return out


def topic_jobs(topics: list[Topic], directory: Path) -> dict[str, Job]:
    """Each topic's job as the bench writes it with no configuration variables: its topic filter and record
    settings judge the new relevant records of every configuration's crawl."""
    jobs = {}
    for topic in topics:
        name = f"judge-{topic.key}"
        write_job(topic, directory / name, [topic.offtopic], 0, 0.0, {})
        jobs[topic.key] = load_job(name, directory)
    return jobs


def crawl(web: DocWeb, served: ServedWeb, topics: list[Topic], seed_set: str, config: str, seed: int,
          directory: Path, args: argparse.Namespace, pages: PageJudge) -> list[RealRun]:
    """One crawl, judged for ``topics`` (one topic for the focused crawler, several for plain Scrapy)."""
    cap = args.peer_cap if config in PEERS else args.cap
    judge = Judge(web, served, topics, cap)
    start = seeds(web, seed_set, topics[0])
    allowance = 2 * cap + 2 * web.hosts  # responses, robots.txt included: the judge stops it first
    if config in PEERS:
        command = plain_command(start, args.timeout, PLAIN_CONCURRENCY, allowance)
        command += ["--allowed-domain", DOMAIN.lstrip("."), *PEERS[config]]
    else:
        variables = dict(CONFIGURATIONS[config])
        if random_seed_known():
            variables["RandomSeed"] = str(seed)
        name = f"real-{topics[0].key}"
        job = FocusedJob(topics=directory / "topics", data=directory / "data", name=name)
        write_job(topics[0], job.topics / name, start, served.port, args.wait, variables)
        command = job.command({"CLOSESPIDER_PAGECOUNT": allowance, "CLOSESPIDER_TIMEOUT": args.timeout,
                               "COMBINE_PROGRESS_INTERVAL": 0})
    started = time.monotonic()
    run_crawl(command, served.proxy, timeout=args.timeout + 60, stop=judge.done).check()
    wall = time.monotonic() - started
    judge.read()
    records = {topic.key: judge.records(pages, topic.key) for topic in topics}
    priorities = frontier_priorities(directory / "data") if config not in PEERS else {}
    runs = []
    for topic in topics:
        hits, total = judge.hits[topic.key], len(topic.targets)
        ended = "cap" if judge.fetched >= cap else "recall" if len(hits) == total else "crawler"
        runs.append(RealRun(topic.key, seed, 0, config, total, judge.fetched, list(hits), round(wall, 1), ended,
                            seed_set=seed_set, per_host=dict(judge.per_host),
                            found=[host + path for host, path in judge.found[topic.key]],
                            records=[fetch for fetch, _ in records[topic.key]],
                            record_pages=[page for _, page in records[topic.key]],
                            trace=judge.trace(pages, topic.key, [fetch for fetch, _ in records[topic.key]],
                                              priorities)))
    return runs


def offline_breadth_first(web: DocWeb, topic: Topic, seed_set: str, cap: int) -> dict[str, int | None]:
    """Fetches to 50/80/100% of the targets of a strict breadth-first order over the web (no crawler), and how
    many targets it finds within the cap (``found``)."""
    targets = {target.key for target in topic.targets}
    hits: list[int] = []
    found: set[tuple[str, str]] = set()
    for fetch, (host, path) in enumerate(web.breadth_first(seeds(web, seed_set, topic), cap), start=1):
        key = web.key(host, path)
        if key in targets and key not in found:
            found.add(key)
            hits.append(fetch)
    needed = {f"{share:.0%}": pages_for_recall(len(targets), share) for share in RECALL_SHARES}
    return {**{name: hits[count - 1] if len(hits) >= count else None for name, count in needed.items()},
            "found": len(hits)}


def measure(args: argparse.Namespace, web: DocWeb, save: Callable[[list[RealRun]], None]) -> list[RealRun]:
    """Every configuration on every topic and seed set for runs 1..N; progress to stderr.

    ``save`` gets the crawls so far after each one, so a benchmark stopped midway keeps them.
    """
    runs: list[RealRun] = []
    topics = [topic_named(key) for key in args.topics]
    focused = [config for config in args.configs if config not in PEERS]
    peers = [config for config in args.configs if config in PEERS]
    with tempfile.TemporaryDirectory() as directory, ServedDocWeb(web) as served:
        os.environ["https_proxy"] = served.proxy  # an https link tried by mistake gets 405 here, never leaves
        pages = PageJudge(web, topic_jobs(topics, Path(directory) / "judge"))
        number = 0
        for seed in range(1, args.runs + 1):
            for seed_set in args.seed_sets:
                judged = [[topic] for topic in topics] if seed_set == "offtopic" else [topics]
                jobs = [(config, group) for config in peers for group in judged]
                jobs += [(config, [topic]) for topic in topics for config in focused]
                for config, group in jobs:
                    number += 1
                    crawled = crawl(web, served, group, seed_set, config, seed, Path(directory) / str(number), args,
                                    pages)
                    runs += crawled
                    for run in crawled:
                        early = (run.records_per_window(args.cap) or [0])[0]
                        print(f"run {seed} {seed_set} {run.topic} {config}: {len(run.hits)}/{run.relevant_pages} "
                              f"targets in {run.fetched} fetches ({run.ended}), 80% at {run.fetches_to(0.8)}, "
                              f"{early} new relevant records in the first {WINDOW}, {run.wall_seconds:.0f} s",
                              file=sys.stderr, flush=True)
                    save(runs)
    return runs


def summary(runs: list[RealRun], cap: int) -> dict[str, dict[str, dict]]:
    """Per seed set, topic and configuration: bench.focushard's figures (over runs), targets and new relevant
    records per 500 fetches, and the records goal against breadth-first (:func:`records_target`)."""
    result: dict[str, dict[str, dict]] = {}
    for seed_set in dict.fromkeys(run.seed_set for run in runs):
        chosen = [run for run in runs if run.seed_set == seed_set]
        result[seed_set] = summarize(chosen, cap)  # type: ignore[arg-type]
        for topic, configs in result[seed_set].items():
            for config, figures in configs.items():
                mine = [run for run in chosen if run.topic == topic and run.config == config]
                windows = [run.per_window(cap) for run in mine]
                figures["found_per_500"] = [round(statistics.fmean(column), 1) for column in zip(*windows)]
                figures.update(records_target(mine, [run for run in chosen if run.topic == topic], cap))
                figures["fetches_per_host"] = {
                    host: round(statistics.fmean(run.per_host.get(host, 0) for run in mine), 1)
                    for host in sorted({host for run in mine for host in run.per_host})
                }
    return result


def records_target(mine: list[RealRun], cell_runs: list[RealRun], cap: int) -> dict:
    """New relevant records per 500 fetches (mean over runs), those of the first 500, and for a configuration
    other than breadth-first the issue's goal: at least ``HARVEST_GAIN``x breadth-first's new relevant records in
    the first ``WINDOW`` fetches (and above none) on every run, paired by run (against the mean of breadth-first's
    crawls of that run: files merged by ``--report-only`` can hold several); the ratio is of the means.

    Nothing when a run's records were not judged (crawls stored before they were).
    """
    counted = [run.records_per_window(cap) for run in mine]
    if not counted or any(windows is None for windows in counted):
        return {}
    per_window = [windows for windows in counted if windows is not None]
    figures: dict = {
        "records_per_500": [round(statistics.fmean(column), 1) for column in zip(*per_window)],
        "records_first_500": spread([windows[0] for windows in per_window]),
    }
    if not mine or mine[0].config == BREADTH_FIRST:
        return figures
    peers: dict[int, list[int]] = {}
    for peer_run in cell_runs:
        if peer_run.config == BREADTH_FIRST and (peer_windows := peer_run.records_per_window(cap)) is not None:
            peers.setdefault(peer_run.seed, []).append(peer_windows[0])
    paired = [(windows[0], statistics.fmean(peers[run.seed])) for run, windows in zip(mine, per_window)
              if run.seed in peers]
    if not paired:
        return figures
    theirs = statistics.fmean(peer for _, peer in paired)
    figures["records_ratio_first_500"] = round(statistics.fmean(own for own, _ in paired) / theirs, 2) if theirs else None
    figures["target_records_3x"] = all(own > 0 and own >= HARVEST_GAIN * peer for own, peer in paired)
    return figures


def report(result: dict) -> list[str]:
    sizes = ", ".join(f"{host} {figures['pages']:,}" for host, figures in result["web"]["hosts"].items())
    lines = [
        "",
        f"Doc web: {len(result['web']['hosts'])} hosts ({sizes}"
        f" HTML pages; {result['web']['pages']:,} in all) and the portal {PORTAL}. "
        f"Topics {', '.join(result['topics'])}; seed sets {', '.join(result['seed_sets'])}; runs 1-{result['runs']} "
        f"(RandomSeed {'= the run' if result['random_seed_passed'] else 'not known to this crawler, not passed'}). "
        f"Cap {result['cap']:,} fetches (requests to the web's hosts other than robots.txt, from the server's log); "
        f"plain Scrapy's crawls run on to {result.get('peer_cap', result['cap']):,} fetches, so breadth-first's "
        f"figures past the cap are its own (one not reached counts as the fetches it made); "
        f"WaitIntervalHost {result['wait']:g} s; a crawl stops early once it has every target of its topic "
        f"and {WINDOW} fetches; a "
        f"fetch of any language of a target page finds it. Figures are mean (min–max) over runs; \"not reached\" "
        f"within the cap. Targets (the issue's, for `default`): 80% of the targets in at most breadth-first's "
        f"fetches on every run (the floor, column \"≤ BFS\") and in at most 1/{SPEED_UP} of them (the goal), all "
        f"targets within the cap, targets found over the first {EARLY_FETCHES} fetches at least {HARVEST_GAIN}x "
        f"breadth-first's (in brackets: the ratio of the means), and the issue's own measure: new relevant records "
        f"over the first {WINDOW} fetches at least {HARVEST_GAIN}x breadth-first's (\"records 3x\"). A new relevant "
        f"record is a fetched page the topic's filter keeps (parsed, classified and keyed as the crawler does, with the "
        f"filter of the job the bench writes for the topic) whose content is neither an exact copy (MD5 content key) "
        f"nor a near-duplicate (simhash within the default distance) of an earlier new record of the crawl, judged "
        f"offline the same way for every configuration. Load average before: "
        f"{' '.join(map(str, result['load_average_before']))}; {result['wall_minutes']:.1f} minutes in all.",
        "",
        "![targets found against fetches](focusreal.png)",
        "",
        "Configurations: " + "; ".join(
            f"`{name}`: {', '.join(f'{k} = {v}' for k, v in variables.items()) or 'no strategy variables'}"
            for name, variables in result["configurations"].items()
        ) + f"; `{BREADTH_FIRST}`: plain Scrapy, breadth-first order (bench/plainspider.py --breadth-first); "
            f"`{DEFAULT_ORDER}`: plain Scrapy, its default order.",
    ]
    for topic in result["topics"]:
        described = result["topic_targets"][topic]
        lines += ["", f"## {topic}: {described['name']} ({described['targets']} targets on "
                      f"{', '.join(described['hosts'])})"]
        for seed_set, topics in result["summary"].items():
            if topic not in topics:
                continue
            lines += [
                "",
                f"### {topic}, seed set {seed_set}",
                "",
                offline_line(result.get("offline_breadth_first", {}).get(seed_set, {}).get(topic),
                             result.get("peer_cap", result["cap"])),
                "",
                f"| configuration | fetches to 50% | to 80% | to 100% | found per {WINDOW} fetches | "
                f"80% vs breadth-first | ≤ BFS | 80% in 1/5 | 100% in cap | found 3x | new records, fetches 1-{WINDOW} "
                f"| new records per {WINDOW} fetches | records 3x |",
                "| --- |" + " --- |" * 12,
            ]
            for config, figures in topics[topic].items():
                verdicts = ["", "", "", "", ""]
                if "target_80%_in_a_fifth" in figures:
                    gain = figures["harvest_gain_first_500"]
                    verdicts = [
                        _ratio(figures["ratio_to_breadth_first_80%"]),
                        _verdict(figures["floor_80%_within_breadth_first"]),
                        _verdict(figures["target_80%_in_a_fifth"]),
                        _verdict(figures["target_100%_within_cap"]),
                        _verdict(figures["target_harvest_3x"]) + (f" ({gain}x)" if gain is not None else ""),
                    ]
                lines.append(
                    f"| {config} | " + " | ".join([
                        cell(figures["fetches_to_50%"]), cell(figures["fetches_to_80%"]),
                        cell(figures["fetches_to_100%"]), ", ".join(f"{n:g}" for n in figures["found_per_500"]),
                        *verdicts, *records_cells(figures),
                    ]) + " |"
                )
        lines += host_table(result, topic)
    return lines


def records_cells(figures: dict) -> list[str]:
    """The new relevant records columns: fetches 1-500, per 500 fetches, the goal against breadth-first."""
    if "records_per_500" not in figures:
        return ["not judged", "not judged", ""]
    ratio = figures.get("records_ratio_first_500")
    verdict = (_verdict(figures["target_records_3x"]) + (f" ({ratio}x)" if ratio is not None else "")
               if "target_records_3x" in figures else "")
    return [cell(figures["records_first_500"]), ", ".join(f"{n:g}" for n in figures["records_per_500"]), verdict]


def offline_line(reference: dict[str, int | None] | None, cap: int) -> str:
    """The same web and seeds in a strict breadth-first order, computed from the web (how far the targets are)."""
    if reference is None:
        return "Offline strict breadth-first: not computed for this seed set."
    shares = {share: at for share, at in reference.items() if share != "found"}
    shown = ", ".join(f"{share} at {'not reached' if at is None else f'{at:,}'}" for share, at in shares.items())
    found = f"finds {reference['found']} targets in {cap:,} fetches; " if "found" in reference else ""
    return f"Offline, the same seeds in strict breadth-first order over the web (no crawler): {found}{shown}."


def host_table(result: dict, topic: str) -> list[str]:
    """Fetches per host (mean over runs) for each seed set and configuration of a topic."""
    rows = [(seed_set, config, figures["fetches_per_host"])
            for seed_set, topics in result["summary"].items() if topic in topics
            for config, figures in topics[topic].items()]
    hosts = sorted({host for _, _, per_host in rows for host in per_host}, key=lambda host: (host == PORTAL, host))
    short = [host.removesuffix(DOMAIN) for host in hosts]
    lines = ["", f"Fetches per host, {topic} (mean over runs; targets per host in the header):", "",
             "| seed set | configuration | " + " | ".join(
                 f"{name} ({result['topic_targets'][topic]['per_host'].get(name, 0)})" for name in short) + " |",
             "| --- | --- |" + " ---: |" * len(hosts)]
    for seed_set, config, per_host in rows:
        lines.append(f"| {seed_set} | {config} | " + " | ".join(f"{per_host.get(host, 0):,.0f}" for host in hosts) + " |")
    return lines


def plot(runs: list[RealRun], cap: int, path: Path) -> None:
    """Targets found (as a share) against fetches: one panel per seed set and topic, a mean curve per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    topics = list(dict.fromkeys(run.topic for run in runs))
    seed_sets = list(dict.fromkeys(run.seed_set for run in runs))
    size = (max(6.0, 4.5 * len(topics)), 3.8 * len(seed_sets))
    figure, axes = plt.subplots(len(seed_sets), len(topics), figsize=size, dpi=90, squeeze=False)
    for row, seed_set in enumerate(seed_sets):
        for axis, topic in zip(axes[row], topics):
            for config in dict.fromkeys(run.config for run in runs):
                chosen = [run for run in runs if (run.topic, run.seed_set, run.config) == (topic, seed_set, config)]
                if not chosen:
                    continue
                curves = [[100 * found / run.relevant_pages for found in run.curve(cap)] for run in chosen]
                mean = [statistics.fmean(values) for values in zip(*curves)]
                axis.plot(range(1, cap + 1), mean, label=f"{config} ({len(chosen)} runs)",
                          linestyle="--" if config in PEERS else "-")
            axis.axhline(80, color="grey", linestyle=":", linewidth=1)
            axis.set_title(f"{topic}, from {seed_set}")
            axis.set_xlabel("pages fetched")
            axis.set_xlim(0, cap)
            axis.set_ylim(0, 102)
            axis.grid(True, alpha=0.3)
        axes[row][0].set_ylabel("targets found, % (mean over runs)")
    axes[0][0].legend(loc="upper left", fontsize="small")
    figure.suptitle("Doc web (real pages): targets found against pages fetched")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def with_floor(summarized: dict, runs: list[RealRun], cap: int) -> dict:
    """Add the issue's hard floor to each focused configuration: 80% in at most breadth-first's fetches, every run."""
    for seed_set, topics in summarized.items():
        for topic, configs in topics.items():
            peers = {run.seed: run for run in runs
                     if (run.seed_set, run.topic, run.config) == (seed_set, topic, BREADTH_FIRST)}
            for config, figures in configs.items():
                if "target_80%_in_a_fifth" not in figures:
                    continue
                mine = [run for run in runs if (run.seed_set, run.topic, run.config) == (seed_set, topic, config)
                        and run.seed in peers]
                within = [run.fetches_to(0.8) is not None
                          and run.fetches_to(0.8) <= peers[run.seed].fetches_to_or_past(0.8, cap) for run in mine]
                figures["floor_80%_within_breadth_first"] = bool(within) and all(within)
    return summarized


def describe_topics() -> dict[str, dict]:
    """Each topic's name, target count, hosts and targets per host."""
    return {topic.key: {"name": topic.name, "targets": len(topic.targets), "hosts": topic.hosts,
                        "per_host": dict(Counter(target.host for target in topic.targets))} for topic in TOPICS}


def install_packages() -> None:
    """Install the documentation packages the doc web serves, if missing."""
    subprocess.run(["bash", "scripts/install-missing.sh", "focusreal", *packages()], check=True, cwd=PROJECT)


def topic_keys(text: str) -> list[str]:
    """``--topics``: a number N (the first N topics) or topic names separated by commas."""
    keys = [topic.key for topic in TOPICS]
    if text.isdigit():
        if not 1 <= int(text) <= len(keys):
            raise argparse.ArgumentTypeError(f"between 1 and {len(keys)} topics")
        return keys[: int(text)]
    return names(text, keys, "topics")


def names(text: str, known: list[str], what: str) -> list[str]:
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in known]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


def config_names(text: str) -> list[str]:
    return names(text, [*CONFIGURATIONS, *PEERS], "configurations")


def seed_set_names(text: str) -> list[str]:
    return names(text, list(SEED_SETS), "seed sets")


def add_cell_arguments(parser: argparse.ArgumentParser) -> None:
    """``--topics`` and ``--seed-sets``: the cells a command measures."""
    parser.add_argument("--topics", type=topic_keys, default=topic_keys(str(len(TOPICS))),
                        help="how many topics (a number) or which: " + ", ".join(topic.key for topic in TOPICS))
    parser.add_argument("--seed-sets", type=seed_set_names, default=list(SEED_SETS),
                        help="comma-separated: " + ", ".join(SEED_SETS))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.focusreal", description=__doc__.splitlines()[0])
    add_cell_arguments(parser)
    parser.add_argument("--configs", type=config_names, default=[*CONFIGURATIONS, *PEERS],
                        help="comma-separated: " + ", ".join([*CONFIGURATIONS, *PEERS]))
    parser.add_argument("--cap", type=int, default=3000, help="fetches per crawl")
    parser.add_argument("--peer-cap", type=int, default=10_000,
                        help="fetches per plain Scrapy crawl (the peers run on past the cap to their own 80%% and 100%%, "
                             "so the ratio to breadth-first is to its true figure; at least --cap)")
    parser.add_argument("--runs", "--seeds", type=int, default=1, help="runs 1..N (RandomSeed = the run)")
    parser.add_argument("--wait", type=float, default=0.0, help="WaitIntervalHost, seconds")
    parser.add_argument("--timeout", type=float, default=900, help="longest crawl, seconds")
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory for focusreal.{json,md,png}")
    parser.add_argument("--report-only", type=Path, nargs="+", metavar="JSON",
                        help="crawl nothing: judge the crawls stored in focusreal.json files again (several are "
                             "merged: parts run apart) and rewrite the report")
    parser.add_argument("--describe", action="store_true", help="print the web's hosts and pages and the topics")
    args = parser.parse_args(argv)
    if args.peer_cap < args.cap:
        parser.error(f"--peer-cap {args.peer_cap} is below --cap {args.cap}")
    if args.report_only:
        result = merged([json.loads(path.read_text()) for path in args.report_only])
        runs = [RealRun(**run) for run in result["crawls"]]
        result["summary"] = with_floor(summary(runs, result["cap"]), runs, result["cap"])
        return write_results(result, runs, args.results)
    install_packages()
    web = DocWeb()
    if args.describe:
        described = {"hosts": web.counts(), "pages": web.pages, "topics": describe_topics()}
        print(json.dumps(described, indent=1))
        return described
    load = load_average()
    started = time.monotonic()
    offline = {seed_set: {key: offline_breadth_first(web, topic_named(key), seed_set, args.peer_cap)
                          for key in args.topics} for seed_set in args.seed_sets}

    def result_of(runs: list[RealRun]) -> dict:
        return {
            **environment(command_line("bench.focusreal", argv)),
            "web": {"hosts": web.counts(), "pages": web.pages},
            "topics": args.topics,
            "topic_targets": {key: value for key, value in describe_topics().items() if key in args.topics},
            "seed_sets": args.seed_sets,
            "runs": args.runs,
            "random_seed_passed": random_seed_known(),
            "cap": args.cap,
            "peer_cap": args.peer_cap,
            "wait": args.wait,
            "configurations": {name: CONFIGURATIONS[name] for name in args.configs if name in CONFIGURATIONS},
            "load_average_before": load,
            "wall_minutes": round((time.monotonic() - started) / 60, 1),
            "summary": with_floor(summary(runs, args.cap), runs, args.cap),
            "offline_breadth_first": offline,
            "crawls": [asdict(run) for run in runs],
        }

    def save(runs: list[RealRun]) -> None:
        """The crawls so far in focusreal.json (the report is written at the end; --report-only reads this)."""
        args.results.mkdir(parents=True, exist_ok=True)
        (args.results / "focusreal.json").write_text(json.dumps(result_of(runs), indent=2) + "\n")

    runs = measure(args, web, save)
    return write_results(result_of(runs), runs, args.results)


def merged(results: list[dict]) -> dict:
    """One result of several (parts of the matrix run apart): their crawls together, their settings joined."""
    result = dict(results[0])
    for other in results[1:]:
        if other["cap"] != result["cap"]:
            raise ValueError(f"cannot merge crawls capped at {result['cap']} and {other['cap']} fetches")
        result["crawls"] = result["crawls"] + other["crawls"]
        for key in ("topics", "seed_sets"):
            result[key] = list(dict.fromkeys(result[key] + other[key]))
        for key in ("topic_targets", "configurations"):
            result[key] = {**result[key], **other[key]}
        offline = {seed_set: dict(topics) for seed_set, topics in result.get("offline_breadth_first", {}).items()}
        for seed_set, topics in other.get("offline_breadth_first", {}).items():
            offline.setdefault(seed_set, {}).update(topics)
        result["offline_breadth_first"] = offline
        result["runs"] = max(result["runs"], other["runs"])
        result["peer_cap"] = max(result.get("peer_cap", result["cap"]), other.get("peer_cap", other["cap"]))
        result["wall_minutes"] = round(result["wall_minutes"] + other["wall_minutes"], 1)
    result["command"] = "; ".join(dict.fromkeys(part["command"] for part in results))
    return result


def write_results(result: dict, runs: list[RealRun], directory: Path) -> dict:
    directory.mkdir(parents=True, exist_ok=True)
    plot(runs, result["cap"], directory / "focusreal.png")
    write_report("focusreal", result, "Focus on real documentation sites: fetches to the targets against plain "
                 "Scrapy", report(result), directory)
    return result

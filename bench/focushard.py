"""Benchmark: the focus engine on a hard generated web, against plain Scrapy breadth-first.

    .venv/bin/python -m bench.focushard [--topics glaciers,bees] [--seeds 5] [--configs default,scrapy-bfs]
                                        [--cap 3000] [--web-seed W] [--results DIR]

The focus web (bench/focusweb/) hides each of its three topics 3-6 links
behind off-topic directory pages of mostly off-topic sites; the seeds are
three off-topic portals. For every topic and crawl seed, each configuration
crawls it once: a configuration is the combine.cfg lines of
``CONFIGURATIONS`` (``default`` adds none, so it measures whatever the
crawler does by default), or plain Scrapy in breadth-first order
(``scrapy-bfs``, bench/plainspider.py; it knows no topic, so one crawl of a
web is judged for every topic). The crawl seed is the job's ``RandomSeed``
(when the crawler knows that variable) and, unless ``--web-seed`` fixes the
web, the web's seed too: five seeds are five webs.

A crawl is judged by the server's request log, never by what the crawler
says: a fetch is any request but robots.txt; the first ``--cap`` fetches
count, and a crawl stops early (SIGINT) once it has every page of its topic.
Reported per topic and configuration, as mean and range over the seeds:
fetches to 50/80/100% recall, harvest rate (relevant / fetched) over the
first 500 fetches and over the whole crawl, the ratio to breadth-first, and
pass/fail against the issue's targets. Writes bench/results/focushard.json,
.md and .png (relevant pages against fetched pages, one panel per topic).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.focusweb.job import write_job
from bench.focusweb.web import FocusWeb, pages_for_recall
from bench.report import RESULTS, environment, write_report
from bench.virtualweb.harness import (
    FocusedJob,
    ServedWeb,
    command_line,
    load_average,
    page_fetches,
    plain_command,
    run_crawl,
)

#: How each configuration crawls: combine.cfg lines added to the job. ``default`` adds none.
CONFIGURATIONS: dict[str, dict[str, str]] = {
    "default": {},
    "combine": {"CrawlStrategy": "BreadthFirstTime", "LinkStrategy": "propagate"},
    "bestfirst-rw": {"CrawlStrategy": "BestFirst", "LinkStrategy": "RW"},
    "ipagerank-rwb": {"CrawlStrategy": "iPageRank", "LinkStrategy": "RWB"},
    "learned-rules": {"LearnedUrlRules": "1"},
}
#: Configurations whose crawl follows ``scrapy trial JOB`` (the learned URL rules' trial, TrialPages a seed
#: site); the trial's fetches count as the crawl's first ones.
TRIAL_FIRST = {"learned-rules"}
#: Plain Scrapy in breadth-first order (bench/plainspider.py --breadth-first): the peer.
BREADTH_FIRST = "scrapy-bfs"
RECALL_SHARES = (0.5, 0.8, 1.0)
#: The issue's targets for the default configuration.
EARLY_FETCHES = 500
SPEED_UP = 5  # 80% recall in at most 1/5 of breadth-first's fetches
HARVEST_GAIN = 3  # harvest rate over the first 500 fetches at least 3x breadth-first's
PLAIN_CONCURRENCY = 32


@dataclass
class Run:
    """One crawl judged for one topic: when each of its relevant pages came, counted in fetches."""

    topic: str
    seed: int
    web_seed: int
    config: str
    relevant_pages: int  # the topic's pages in this web
    fetched: int  # fetches judged (at most the cap)
    hits: list[int] = field(default_factory=list)  # fetch number of each new relevant page
    wall_seconds: float = 0.0
    ended: str = ""  # cap, recall (every relevant page fetched), crawler (it stopped by itself)
    trial_fetches: int = 0  # of ``fetched``, those of a ``scrapy trial`` before the crawl

    def fetches_to(self, share: float) -> int | None:
        """Fetches to ``share`` recall, or None when the crawl did not get there."""
        needed = pages_for_recall(self.relevant_pages, share)
        return self.hits[needed - 1] if len(self.hits) >= needed else None

    def fetches_to_or_past(self, share: float, cap: int) -> int:
        """Fetches to ``share`` recall, or, when the crawl did not get there, the fetches it made and at least the
        cap: a lower bound of its figure, which judges a crawl against it no more leniently than it should."""
        return self.fetches_to(share) or max(cap, self.fetched)

    def harvest_rate(self, fetches: int | None = None) -> float:
        """Relevant pages per fetch over the first ``fetches`` (all fetched when None)."""
        window = self.fetched if fetches is None else min(fetches, self.fetched)
        return sum(1 for hit in self.hits if hit <= window) / window if window else 0.0

    def curve(self, cap: int) -> list[int]:
        """Relevant pages after each of ``cap`` fetches; flat after the crawl ended."""
        curve, found = [], 0
        hits = iter(self.hits)
        following = next(hits, None)
        for fetch in range(1, cap + 1):
            while following is not None and following <= fetch:
                found += 1
                following = next(hits, None)
            curve.append(found)
        return curve


class Judge:
    """Reads a crawl's requests from the server log as they come and counts each topic's relevant pages."""

    def __init__(self, web: FocusWeb, served: ServedWeb, topics: list[int], cap: int):
        self.web = web
        self.served = served
        self.cap = cap
        self.since = served.stats()["requests"]
        self.fetched = 0
        self.seen: set[int] = set()
        self.hits: dict[int, list[int]] = {topic: [] for topic in topics}
        self.totals = {topic: len(web.relevant_pages(topic)) for topic in topics}

    def read(self) -> None:
        entries = self.served.log(self.since)
        if entries:
            self.since = entries[-1]["seq"] + 1
        for entry in page_fetches(entries):
            if self.fetched >= self.cap:
                return
            self.fetched += 1
            page = self.web.page_at(entry["host"], entry["path"]) if entry["status"] == 200 else None
            if page is None or page in self.seen:
                continue
            self.seen.add(page)
            topic = self.web.pages[page].topic
            if topic in self.hits:
                self.hits[topic].append(self.fetched)

    def done(self) -> bool:
        """Stop the crawl: the cap is reached, or every relevant page of every judged topic was fetched."""
        self.read()
        return self.fetched >= self.cap or all(len(self.hits[t]) == self.totals[t] for t in self.hits)


class ServedFocusWeb(ServedWeb):
    """The focus web's server (bench/virtualweb's proxy) in its own process."""

    def serve_command(self) -> list[str]:
        return [sys.executable, "-m", "bench.focusweb", "serve", "--port", "0", "--seed", str(self.web.seed),
                "--log-size", str(self.log_size)]


def random_seed_known() -> bool:
    """Whether the crawler has the ``RandomSeed`` job variable (the focus engine's repeatability)."""
    from combine_scrapy.job import VARIABLES

    return "RandomSeed" in VARIABLES


def crawl(web: FocusWeb, served: ServedWeb, topics: list[int], config: str, seed: int, directory: Path,
          args: argparse.Namespace) -> list[Run]:
    """One crawl, judged for ``topics`` (one topic for the focused crawler, every topic for plain Scrapy)."""
    judge = Judge(web, served, topics, args.cap)
    allowance = 2 * args.cap + 2 * len(web.hosts)  # responses, robots.txt included: the judge stops it first
    if config == BREADTH_FIRST:
        command = plain_command(web.seeds(), args.timeout, PLAIN_CONCURRENCY, allowance) + ["--breadth-first"]
    else:
        variables = dict(CONFIGURATIONS[config])
        if random_seed_known():
            variables["RandomSeed"] = str(seed)
        name = f"focus-{web.topics[topics[0]].key}"
        job = FocusedJob(topics=directory / "topics", data=directory / "data", name=name)
        write_job(web, topics[0], job.topics / name, served.port, args.wait, variables)
        command = job.command({"CLOSESPIDER_PAGECOUNT": allowance, "CLOSESPIDER_TIMEOUT": args.timeout,
                               "COMBINE_PROGRESS_INTERVAL": 0})
    started = time.monotonic()
    trial_fetches = 0
    if config in TRIAL_FIRST:
        trial = [sys.executable, "-m", "scrapy", "trial", job.name, "-s", f"COMBINE_TOPICS_DIR={job.topics}",
                 "-s", f"COMBINE_DATA_DIR={job.data}"]
        run_crawl(trial, served.proxy, timeout=args.timeout).check()
        judge.read()
        trial_fetches = judge.fetched
    run_crawl(command, served.proxy, timeout=args.timeout + 60, stop=judge.done).check()
    wall = time.monotonic() - started
    judge.read()
    runs = []
    for topic in topics:
        hits = judge.hits[topic]
        total = judge.totals[topic]
        ended = "cap" if judge.fetched >= args.cap else "recall" if len(hits) == total else "crawler"
        runs.append(Run(web.topics[topic].key, seed, web.seed, config, total, judge.fetched, hits,
                        round(wall, 1), ended, trial_fetches))
    return runs


def measure(args: argparse.Namespace) -> tuple[list[Run], dict[int, dict], dict[str, dict[int, dict]]]:
    """Every configuration on every topic for seeds 1..N; each web's size and offline references.

    Progress goes to stderr.
    """
    runs: list[Run] = []
    webs: dict[int, dict] = {}
    references: dict[str, dict[int, dict]] = {key: {} for key in args.topics}
    focused = [config for config in args.configs if config != BREADTH_FIRST]
    for seed in range(1, args.seeds + 1):
        web = FocusWeb(args.web_seed or seed)
        topics = [web.topic_index(key) for key in args.topics]
        webs[seed] = {"web_seed": web.seed, "hosts": len(web.hosts), "pages": len(web.pages)}
        for topic in topics:
            references[web.topics[topic].key][seed] = web.offline_references(topic)
        with tempfile.TemporaryDirectory() as directory, ServedFocusWeb(web) as served:
            jobs = ([(BREADTH_FIRST, topics)] if BREADTH_FIRST in args.configs else [])
            jobs += [(config, [topic]) for topic in topics for config in focused]
            for number, (config, judged) in enumerate(jobs):
                crawled = crawl(web, served, judged, config, seed, Path(directory) / str(number), args)
                runs += crawled
                for run in crawled:
                    trial = f" ({run.trial_fetches} by the trial)" if config in TRIAL_FIRST else ""
                    print(f"seed {seed} {run.topic} {config}: {len(run.hits)}/{run.relevant_pages} relevant in "
                          f"{run.fetched} fetches{trial} ({run.ended}), 80% at {run.fetches_to(0.8)}, "
                          f"{run.wall_seconds:.0f} s", file=sys.stderr, flush=True)
    return runs, webs, references


def spread(values: list[float | None]) -> dict:
    """Mean, min and max of the values reached; how many were not."""
    reached = [value for value in values if value is not None]
    return {
        "mean": round(statistics.fmean(reached), 3) if reached else None,
        "min": min(reached) if reached else None,
        "max": max(reached) if reached else None,
        "not_reached": len(values) - len(reached),
    }


def summarize(runs: list[Run], cap: int) -> dict:
    """Per topic and configuration: the figures over seeds, the ratio to breadth-first, the targets."""
    summary: dict[str, dict] = {}
    for topic in dict.fromkeys(run.topic for run in runs):
        peers = {run.seed: run for run in runs if run.topic == topic and run.config == BREADTH_FIRST}
        summary[topic] = {}
        for config in dict.fromkeys(run.config for run in runs if run.topic == topic):
            chosen = sorted((run for run in runs if run.topic == topic and run.config == config),
                            key=lambda run: run.seed)
            figures = {
                f"fetches_to_{share:.0%}": spread([run.fetches_to(share) for run in chosen]) for share in RECALL_SHARES
            }
            figures["harvest_rate_first_500"] = spread([round(run.harvest_rate(EARLY_FETCHES), 4) for run in chosen])
            figures["harvest_rate_all"] = spread([round(run.harvest_rate(), 4) for run in chosen])
            figures["seeds"] = [run.seed for run in chosen]
            if peers and config != BREADTH_FIRST:
                figures.update(targets(chosen, peers, cap))
            summary[topic][config] = figures
    return summary


def targets(chosen: list[Run], peers: dict[int, Run], cap: int) -> dict:
    """The ratio of fetches to 80% recall to breadth-first's, and the three targets, each met on every seed.

    Breadth-first not reaching 80% counts as the fetches it made, at least the cap (its true figure is larger,
    so the target is judged no more leniently than it should be); the crawl not reaching it fails. The
    harvest rate over the first 500 fetches must be at least 3x breadth-first's on the same web, and
    above zero.
    """
    paired = [(run, peers[run.seed]) for run in chosen if run.seed in peers]
    ratios, fast, complete, harvest = [], [], [], []
    for run, peer in paired:
        mine, theirs = run.fetches_to(0.8), peer.fetches_to_or_past(0.8, cap)
        ratios.append(round(mine / theirs, 3) if mine is not None else None)
        fast.append(mine is not None and mine * SPEED_UP <= theirs)
        complete.append(run.fetches_to(1.0) is not None)
        early, early_peer = run.harvest_rate(EARLY_FETCHES), peer.harvest_rate(EARLY_FETCHES)
        harvest.append(early > 0 and early >= HARVEST_GAIN * early_peer)
    early = statistics.fmean(run.harvest_rate(EARLY_FETCHES) for run, _ in paired) if paired else 0.0
    early_peer = statistics.fmean(peer.harvest_rate(EARLY_FETCHES) for _, peer in paired) if paired else 0.0
    return {
        "ratio_to_breadth_first_80%": spread(ratios),
        "target_80%_in_a_fifth": bool(fast) and all(fast),
        "target_100%_within_cap": bool(complete) and all(complete),
        "target_harvest_3x": bool(harvest) and all(harvest),
        "harvest_gain_first_500": round(early / early_peer, 2) if early_peer else None,  # of the means
    }


def cell(figures: dict, digits: int = 0, percent: bool = False) -> str:
    if figures["mean"] is None:
        return "not reached"

    def show(value: float) -> str:
        return f"{value:.{max(0, digits - 2)}%}" if percent else f"{value:,.{digits}f}"

    text = f"{show(figures['mean'])} ({show(figures['min'])}–{show(figures['max'])})"
    return text + (f", {figures['not_reached']} not reached" if figures["not_reached"] else "")


def report(result: dict) -> list[str]:
    hosts = sorted({web["hosts"] for web in result["webs"].values()})
    webs = "one web for all seeds" if result["web_seed_fixed"] else "web seed = crawl seed: each seed is a new web"
    random_seed = "passed as the job variable" if result["random_seed_passed"] else "not known to this crawler, not passed"
    pages = sorted(web["pages"] for web in result["webs"].values())
    lines = [
        "",
        f"Focus web: {'-'.join(map(str, hosts[::len(hosts) - 1 or 1]))} hosts, "
        f"{'–'.join(f'{n:,}' for n in pages[::len(pages) - 1 or 1])} pages; topics "
        f"{', '.join(result['topics'])}; seeds 1-{result['seeds']} "
        f"({webs}); RandomSeed {random_seed}. "
        f"Cap {result['cap']:,} fetches (requests other than robots.txt, from the server's log); "
        f"WaitIntervalHost {result['wait']:g} s; a crawl stops early once it has every page of its topic. "
        f"Figures are mean (min–max) over seeds; \"not reached\" within the cap. "
        f"Targets (the issue's, for `default`): 80% recall in at most 1/{SPEED_UP} of breadth-first's fetches on "
        f"every seed (breadth-first not reaching 80% counts as the cap), 100% recall within the cap on every seed, "
        f"harvest rate over the first {EARLY_FETCHES} fetches at least {HARVEST_GAIN}x breadth-first's on every seed "
        f"(in brackets: the ratio of the means). "
        f"Load average before: {' '.join(map(str, result['load_average_before']))}; "
        f"{result['wall_minutes']:.1f} minutes in all.",
        "",
        "![relevant pages against fetched pages](focushard.png)",
        "",
        "Configurations: " + "; ".join(
            f"`{name}`: {', '.join(f'{k} = {v}' for k, v in variables.items()) or 'no strategy variables'}"
            + (" after `scrapy trial` (its fetches counted first)" if name in TRIAL_FIRST else "")
            for name, variables in result["configurations"].items()
        ) + f"; `{BREADTH_FIRST}`: plain Scrapy, breadth-first order (bench/plainspider.py --breadth-first).",
    ]
    for topic, configs in result["summary"].items():
        lines += [
            "",
            f"### {topic} ({', '.join(str(n) for n in result['relevant_pages'][topic])} relevant pages by seed)",
            "",
            offline_line(result["offline_references"][topic]),
            "",
            "| configuration | fetches to 50% | to 80% | to 100% | harvest, first 500 | harvest, all | "
            "80% vs breadth-first | 80% in 1/5 | 100% in cap | harvest 3x |",
            "| --- |" + " --- |" * 9,
        ]
        for config, figures in configs.items():
            verdicts = ["", "", "", ""]
            if "target_80%_in_a_fifth" in figures:
                gain = figures["harvest_gain_first_500"]
                verdicts = [
                    _ratio(figures["ratio_to_breadth_first_80%"]),
                    _verdict(figures["target_80%_in_a_fifth"]),
                    _verdict(figures["target_100%_within_cap"]),
                    _verdict(figures["target_harvest_3x"]) + (f" ({gain}x)" if gain is not None else ""),
                ]
            lines.append(
                f"| {config} | " + " | ".join([
                    cell(figures["fetches_to_50%"]), cell(figures["fetches_to_80%"]), cell(figures["fetches_to_100%"]),
                    cell(figures["harvest_rate_first_500"], 3, True), cell(figures["harvest_rate_all"], 3, True),
                    *verdicts,
                ]) + " |"
            )
    return lines


def offline_line(references: dict) -> str:
    """The same webs crawled offline in two idealised orders: how hard the web is, and that it can be done."""
    def figure(name: str) -> str:
        values = [seed[name]["80%"] for seed in references.values()]
        return f"{statistics.fmean(values):,.0f} ({min(values):,}–{max(values):,})"

    return (f"Offline, on the same webs (no crawler): strict breadth-first reaches 80% recall in "
            f"{figure('strict_breadth_first')} fetches; best-first by the score of the page a link is on "
            f"(relevant > a passing mention > none; no learning) in {figure('score_guided_best_first')}.")


def _ratio(figures: dict) -> str:
    if figures["mean"] is None:
        return "not reached"
    text = f"{figures['mean']:.2f}x ({figures['min']:.2f}–{figures['max']:.2f})"
    return text + (f", {figures['not_reached']} not reached" if figures["not_reached"] else "")


def _verdict(passed: bool) -> str:
    return "**pass**" if passed else "fail"


def plot(runs: list[Run], cap: int, path: Path) -> None:
    """Relevant pages (as recall) against fetched pages: one panel per topic, one mean curve per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    topics = list(dict.fromkeys(run.topic for run in runs))
    figure, axes = plt.subplots(1, len(topics), figsize=(5 * len(topics), 4.2), dpi=100, squeeze=False)
    for axis, topic in zip(axes[0], topics):
        for config in dict.fromkeys(run.config for run in runs):
            chosen = [run for run in runs if run.topic == topic and run.config == config]
            if not chosen:
                continue
            curves = [[100 * found / run.relevant_pages for found in run.curve(cap)] for run in chosen]
            mean = [statistics.fmean(values) for values in zip(*curves)]
            axis.plot(range(1, cap + 1), mean, label=f"{config} ({len(chosen)} seeds)",
                      linestyle="--" if config == BREADTH_FIRST else "-")
        axis.axhline(80, color="grey", linestyle=":", linewidth=1)
        axis.set_title(topic)
        axis.set_xlabel("pages fetched")
        axis.set_xlim(0, cap)
        axis.set_ylim(0, 102)
        axis.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("relevant pages fetched, % (mean over seeds)")
    axes[0][0].legend(loc="upper left", fontsize="small")
    figure.suptitle("Focus web: relevant pages against fetched pages")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def topic_keys(text: str) -> list[str]:
    """``--topics``: a number N (the first N topics) or topic names separated by commas."""
    from bench.focusweb.vocabulary import TOPICS

    keys = [topic.key for topic in TOPICS]
    if text.isdigit():
        if not 1 <= int(text) <= len(keys):
            raise argparse.ArgumentTypeError(f"between 1 and {len(keys)} topics")
        return keys[: int(text)]
    chosen = [key.strip() for key in text.split(",") if key.strip()]
    unknown = [key for key in chosen if key not in keys]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown topics {', '.join(unknown)}; known: {', '.join(keys)}")
    return chosen


def config_names(text: str) -> list[str]:
    known = [*CONFIGURATIONS, BREADTH_FIRST]
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in known]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown configurations {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=topic_keys, default=topic_keys("3"),
                        help="how many topics (a number) or which (glaciers,bees,fibre)")
    parser.add_argument("--seeds", type=int, default=5, help="crawl seeds 1..N")
    parser.add_argument("--configs", type=config_names, default=[*CONFIGURATIONS, BREADTH_FIRST],
                        help="comma-separated: " + ", ".join([*CONFIGURATIONS, BREADTH_FIRST]))
    parser.add_argument("--cap", type=int, default=3000, help="fetches per crawl")
    parser.add_argument("--web-seed", type=int, default=0,
                        help="one web for every crawl seed (default: web seed = crawl seed)")
    parser.add_argument("--wait", type=float, default=0.0, help="WaitIntervalHost, seconds")
    parser.add_argument("--timeout", type=float, default=600, help="longest crawl, seconds")
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory for focushard.{json,md,png}")
    parser.add_argument("--report-only", type=Path, metavar="JSON",
                        help="crawl nothing: judge the runs stored in a focushard.json again and rewrite the report")
    args = parser.parse_args(argv)
    if args.report_only:
        result = json.loads(args.report_only.read_text())
        runs = [Run(**run) for run in result["runs"]]
        result["summary"] = summarize(runs, result["cap"])
        return write_results(result, runs, args.results)
    load = load_average()
    started = time.monotonic()
    runs, webs, references = measure(args)
    result = {
        **environment(command_line("bench.focushard", argv)),
        "webs": webs,
        "topics": args.topics,
        "seeds": args.seeds,
        "web_seed_fixed": bool(args.web_seed),
        "random_seed_passed": random_seed_known(),
        "cap": args.cap,
        "wait": args.wait,
        "configurations": {name: CONFIGURATIONS[name] for name in args.configs if name in CONFIGURATIONS},
        "load_average_before": load,
        "wall_minutes": round((time.monotonic() - started) / 60, 1),
        "relevant_pages": {topic: [run.relevant_pages for run in runs if run.topic == topic and run.config == first]
                           for topic in args.topics for first in args.configs[:1]},
        "summary": summarize(runs, args.cap),
        "offline_references": references,
        "runs": [asdict(run) for run in runs],
    }
    return write_results(result, runs, args.results)


def write_results(result: dict, runs: list[Run], directory: Path) -> dict:
    directory.mkdir(parents=True, exist_ok=True)
    plot(runs, result["cap"], directory / "focushard.png")
    write_report("focushard", result, "Focus on a hard web: fetches to recall against plain Scrapy breadth-first",
                 report(result), directory)
    return result


if __name__ == "__main__":
    main()

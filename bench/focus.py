"""Benchmark: focus quality of the crawl strategies, relevant pages against fetched pages.

    .venv/bin/python -m bench.focus [--fetches 2000] [--wait 1] [--full]

Crawls the virtual web once per strategy (BreadthFirst, BestFirst with
LinkStrategy RW, PageRank, BreadthFirstTime) from the same seeds, and judges
every page request in the server's log by the web's ground truth: a fetch
is relevant when it got an on-topic page not fetched before (a copy, print
version, alias or session-id URL of a page already fetched adds nothing).
Harvest rate = relevant / fetched, recall = relevant / the on-topic pages a
robots.txt-obeying crawler may fetch. Writes bench/results/focus.{json,md}
and the plot focus.png (Figure 3.10 of the Combine study: relevant pages
against fetched pages).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.report import environment, write_report
from bench.virtualweb.harness import (
    FocusedJob,
    ServedWeb,
    add_common_options,
    command_line,
    load_average,
    page_fetches,
    relevant_content,
    run_crawl,
    web_from,
)
from bench.virtualweb.web import VirtualWeb

#: The strategies compared, each with the combine.cfg variables that select it.
STRATEGIES = {
    "BreadthFirst": {"CrawlStrategy": "BreadthFirst"},
    "BestFirst": {"CrawlStrategy": "BestFirst", "LinkStrategy": "RW"},
    "PageRank": {"CrawlStrategy": "PageRank"},
    "BreadthFirstTime": {"CrawlStrategy": "BreadthFirstTime"},
}
#: Responses allowed per page fetch asked for: robots.txt requests count as responses too.
RESPONSE_ALLOWANCE = 2.0
#: Points kept of each curve in the JSON (the plot uses all).
CURVE_POINTS = 200


def relevance_curve(web: VirtualWeb, entries: list[dict]) -> list[int]:
    """Relevant distinct pages after each page fetch, in the server's order."""
    seen: set[int] = set()
    curve = []
    for entry in entries:
        content = relevant_content(web, entry)
        if content is not None:
            seen.add(content)
        curve.append(len(seen))
    return curve


def crawl_strategy(web: VirtualWeb, served: ServedWeb, directory: Path, name: str, args) -> list[int]:
    job = FocusedJob.write(web, directory / name, served.port, args.wait, serveralias=True, **STRATEGIES[name])
    since = served.stats()["requests"]
    command = job.command({
        "CLOSESPIDER_PAGECOUNT": int(args.fetches * RESPONSE_ALLOWANCE),
        "CLOSESPIDER_TIMEOUT": args.timeout,
        "COMBINE_PROGRESS_INTERVAL": 0,
    })
    run_crawl(command, served.proxy, timeout=args.timeout + 120).check()
    return relevance_curve(web, page_fetches(served.log(since))[: args.fetches])


def checkpoints(fetches: int) -> list[int]:
    return sorted({max(1, fetches // 10), fetches // 4, fetches // 2, fetches})


def measure(args: argparse.Namespace) -> tuple[dict, dict[str, list[int]]]:
    web = web_from(args)
    reachable = len(web.relevant_urls(polite=True))
    curves: dict[str, list[int]] = {}
    load = load_average()
    with tempfile.TemporaryDirectory() as directory, ServedWeb(web) as served:
        for name in args.strategies:
            curves[name] = crawl_strategy(web, served, Path(directory), name, args)
    strategies = {}
    for name, curve in curves.items():
        points = [n for n in checkpoints(args.fetches) if n <= len(curve)]
        step = max(1, len(curve) // CURVE_POINTS)
        strategies[name] = {
            "variables": STRATEGIES[name],
            "fetched": len(curve),
            "relevant": curve[-1] if curve else 0,
            "after": {
                str(n): {
                    "relevant": curve[n - 1],
                    "harvest_rate": round(curve[n - 1] / n, 3),
                    "recall": round(curve[n - 1] / reachable, 4),
                }
                for n in points
            },
            "curve": [[n, curve[n - 1]] for n in range(step, len(curve) + 1, step)],
        }
    result = {
        "web": {"seed": web.seed, "hosts": web.hosts, "pages": web.pages},
        "fetches": args.fetches,
        "wait_interval_host": args.wait,
        "reachable_relevant_pages": reachable,
        "load_average_before": load,
        "strategies": strategies,
    }
    return result, curves


def plot(curves: dict[str, list[int]], result: dict, path: Path) -> None:
    """Relevant pages against fetched pages, one line per strategy (Figure 3.10 of the Combine study)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=100)
    for name, curve in curves.items():
        axes.plot(range(1, len(curve) + 1), curve, label=name)
    longest = max((len(c) for c in curves.values()), default=1)
    axes.plot([0, longest], [0, longest], color="grey", linestyle=":", linewidth=1, label="every fetch relevant")
    axes.set_xlabel("pages fetched")
    axes.set_ylabel("relevant pages (distinct, by ground truth)")
    axes.set_title(
        f"Focus: virtual web, {result['web']['hosts']:,} hosts, WaitIntervalHost {result['wait_interval_host']:g} s"
    )
    axes.set_xlim(0, longest)
    axes.set_ylim(0, longest)
    axes.legend(loc="upper left")
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def report(result: dict) -> list[str]:
    points = checkpoints(result["fetches"])
    lines = [
        "",
        f"Virtual web: seed {result['web']['seed']}, {result['web']['hosts']:,} hosts, {result['web']['pages']:,} pages; "
        f"the same three seeds; WaitIntervalHost {result['wait_interval_host']:g} s, server aliases declared. "
        f"Relevant = distinct on-topic pages fetched, judged by the web's ground truth; recall is over the "
        f"{result['reachable_relevant_pages']:,} on-topic pages robots.txt lets a crawler fetch. "
        f"Load average before: {' '.join(map(str, result['load_average_before']))}.",
        "",
        "![relevant pages against fetched pages](focus.png)",
        "",
        "| strategy | " + " | ".join(f"after {n:,}: relevant, harvest rate, recall" for n in points) + " |",
        "| --- |" + " --- |" * len(points),
    ]
    for name, figures in result["strategies"].items():
        cells = []
        for n in points:
            after = figures["after"].get(str(n))
            cells.append(
                f"{after['relevant']:,}, {after['harvest_rate']:.0%}, {after['recall']:.1%}" if after else "not reached"
            )
        label = name + (" (LinkStrategy RW)" if "LinkStrategy" in figures["variables"] else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(parser)
    parser.add_argument("--fetches", type=int, default=2000, help="page fetches per strategy (N)")
    parser.add_argument("--wait", type=float, default=1.0, help="WaitIntervalHost, seconds")
    parser.add_argument("--timeout", type=float, default=120, help="longest crawl per strategy, seconds")
    parser.add_argument("--strategies", type=lambda text: text.split(","), default=list(STRATEGIES),
                        help="comma-separated subset of " + ", ".join(STRATEGIES))
    parser.add_argument("--full", action="store_true", help="the full size: 20,000 fetches per strategy")
    args = parser.parse_args(argv)
    unknown = [name for name in args.strategies if name not in STRATEGIES]
    if unknown:
        parser.error(f"unknown strategies {', '.join(unknown)}; known: {', '.join(STRATEGIES)}")
    if args.full:
        args.fetches, args.timeout = 20_000, 1200
    result, curves = measure(args)
    result = {**environment(command_line("bench.focus", argv)), **result}
    args.results.mkdir(parents=True, exist_ok=True)
    plot(curves, result, args.results / "focus.png")
    write_report("focus", result, "Focus: relevant pages against fetched pages", report(result), args.results)


if __name__ == "__main__":
    main()

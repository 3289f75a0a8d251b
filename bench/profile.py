"""Benchmark: where one harvester's time goes, a cProfile of a crawl of the virtual web.

    .venv/bin/python -m bench.profile [--seconds 60] [--keep crawl.prof] [--full]

Runs ``scrapy crawl focused`` under cProfile in every thread (bench/profiled.py:
the harvester parses in worker threads, which ``python -m cProfile`` misses) as
bench/throughput.py runs it (WaitIntervalHost 0, 32 concurrent requests), then sums each
function's own time into groups: Twisted/Scrapy engine, parsing, topic
scoring, URL canonicalization, frontier (SQLite), record store (SQLite), the
pipeline's glue, and the rest. Time spent in C code (lxml, sqlite3, re) and
in the standard library goes to the group of whoever called it. Writes
bench/results/profile.{json,md}.
"""

from __future__ import annotations

import argparse
import pstats
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.profiled import is_idle
from bench.report import environment, write_report
from bench.virtualweb.harness import (
    FocusedJob,
    ServedWeb,
    add_common_options,
    add_setting_option,
    command_line,
    load_average,
    page_fetches,
    run_crawl,
    web_from,
)

#: Groups by where a function's code lives, first match wins; None means "its callers' group".
GROUPS = (
    ("/combine_scrapy/topic/", "topic scoring"),
    ("/combine_scrapy/document/parse.py", "parsing"),
    ("/combine_scrapy/convert", "parsing"),
    ("/combine_scrapy/access/urls.py", "URL canonicalization"),
    ("/combine_scrapy/frontier/", "frontier (SQLite)"),
    ("/combine_scrapy/records/store/", "record store (SQLite)"),
    ("/combine_scrapy/document/neardup.py", "dedup (MD5 content key, near-duplicate simhash)"),
    ("/combine_scrapy/records/record.py", "dedup (MD5 content key, near-duplicate simhash)"),
    ("/combine_scrapy/document/content.py", "parsing"),
    # The guarded database connection runs the frontier's and the store's SQL: its time is theirs.
    ("/combine_scrapy/faults.py", None),
    ("/combine_scrapy/", "pipeline glue (items, pipelines, middlewares, records)"),
    ("/lxml/", "parsing"),
    ("/charset_normalizer/", "parsing"),
    ("/w3lib/url", "URL canonicalization"),
    ("/w3lib/html", "parsing"),
    ("/scrapy/", "Twisted/Scrapy engine"),
    ("/twisted/", "Twisted/Scrapy engine"),
    ("/parsel/", "Twisted/Scrapy engine"),
)
OTHER = "other (start-up, imports, logging)"
TOP = 25
#: Sweeps over the call graph when charging ungrouped code to its callers.
SWEEPS = 20


def group_of_file(filename: str) -> str | None:
    for marker, group in GROUPS:
        if marker in filename:
            return group
    return None


def group_shares(stats: dict) -> dict[tuple, dict[str, float]]:
    """How each function's own time divides among groups (fractions summing to 1).

    A function in a group belongs to it; any other is charged to its callers
    in proportion to the time each call edge took, found by repeated sweeps
    (call graphs have cycles); with no callers it is OTHER.
    """
    shares: dict[tuple, dict[str, float]] = {}
    pending = []
    for function, (_, _, _, _, callers) in stats.items():
        group = group_of_file(function[0])
        shares[function] = {group or OTHER: 1.0}
        if group is None and callers:
            column = 2 if sum(edge[2] for edge in callers.values()) > 0 else 1
            total = sum(edge[column] for edge in callers.values())
            if total > 0:
                pending.append((function, [(caller, edge[column] / total) for caller, edge in callers.items()]))
    for _ in range(SWEEPS):
        for function, weights in pending:
            result: dict[str, float] = defaultdict(float)
            for caller, weight in weights:
                for name, share in shares.get(caller, {OTHER: 1.0}).items():
                    result[name] += share * weight
            shares[function] = result
    return shares


def group_seconds(stats: dict) -> dict[str, float]:
    """Own time summed per group, waiting for work (IDLE) left out."""
    shares = group_shares(stats)
    seconds: dict[str, float] = defaultdict(float)
    for function, (_, _, own, _, _) in stats.items():
        if is_idle(function):
            continue
        for name, share in shares[function].items():
            seconds[name] += own * share
    return dict(sorted(seconds.items(), key=lambda item: -item[1]))


def label(function: tuple) -> str:
    filename, line, name = function
    if filename == "~":
        return name
    parts = Path(filename).parts
    for anchor in ("combine_scrapy", "scrapy", "twisted", "lxml", "w3lib", "bench"):
        if anchor in parts:
            filename = "/".join(parts[parts.index(anchor):])
            break
    else:
        filename = "/".join(parts[-2:])
    return f"{filename}:{line}({name})"


def top_functions(stats: pstats.Stats, column: int, count: int) -> list[dict]:
    """The ``count`` functions with the most own (column 2) or cumulative (column 3) time."""
    working = (item for item in stats.stats.items() if not is_idle(item[0]))
    rows = sorted(working, key=lambda item: -item[1][column])[:count]
    return [
        {"function": label(function), "calls": calls, "own_seconds": round(own, 3), "cumulative_seconds": round(cum, 3)}
        for function, (_, calls, own, cum, _) in rows
    ]


def summarize(profile: Path, pages: int) -> dict:
    stats = pstats.Stats(str(profile))
    groups = group_seconds(stats.stats)
    total = sum(groups.values())
    return {
        "profiled_seconds": round(total, 2),
        "pages": pages,
        "groups": {
            name: {"seconds": round(seconds, 2), "share": round(seconds / total, 3),
                   "ms_per_page": round(seconds * 1000 / max(1, pages), 3)}
            for name, seconds in groups.items()
        },
        "top_own": top_functions(stats, 2, TOP),
        "top_cumulative": top_functions(stats, 3, TOP),
    }


def measure(args: argparse.Namespace) -> dict:
    web = web_from(args)
    load = load_average()
    with tempfile.TemporaryDirectory() as directory, ServedWeb(web) as served:
        job = FocusedJob.write(web, Path(directory), served.port, wait=0)
        profile = args.keep or Path(directory) / "crawl.prof"
        since = served.stats()["requests"]
        settings = {"CLOSESPIDER_TIMEOUT": args.seconds, "CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
                    **dict(args.setting)}
        run = run_crawl(job.command(settings, profile=profile), served.proxy, args.seconds + 180).check()
        pages = len(page_fetches(served.log(since)))
        summary = summarize(profile, pages)
    return {
        "web": {"seed": web.seed, "hosts": web.hosts, "pages": web.pages},
        "crawl_seconds": args.seconds,
        "wall_seconds": round(run.wall_seconds, 1),
        "load_average_before": load,
        "harvester_settings": dict(args.setting),
        **summary,
    }


def report(result: dict) -> list[str]:
    lines = [
        "",
        f"`python -m bench.profiled OUT scrapy crawl focused` (cProfile in every thread) of the virtual web "
        f"(seed {result['web']['seed']}, "
        f"{result['web']['hosts']:,} hosts) for {result['crawl_seconds']:g} s, WaitIntervalHost 0, 32 concurrent "
        f"requests: {result['pages']:,} pages, {result['profiled_seconds']} s of CPU in all threads, waiting "
        f"for work left out (each thread's profile scaled to the CPU time it used; cProfile slows Python code, "
        f"so shares matter, not seconds). Load average before: "
        f"{' '.join(map(str, result['load_average_before']))}."
        + "".join(f" Harvester setting {name} = {value}." for name, value in result["harvester_settings"].items()),
        "",
        "## Where the time goes (own time, C and library code charged to its caller's group)",
        "",
        "| group | seconds | share | ms per page |",
        "| --- | --- | --- | --- |",
        *(f"| {name} | {g['seconds']} | {g['share']:.1%} | {g['ms_per_page']} |" for name, g in result["groups"].items()),
        "",
        "## Top functions by own time",
        "",
        "| function | calls | own s | cumulative s |",
        "| --- | --- | --- | --- |",
        *(f"| `{f['function']}` | {f['calls']:,} | {f['own_seconds']} | {f['cumulative_seconds']} |"
          for f in result["top_own"]),
        "",
        "## Top functions by cumulative time",
        "",
        "| function | calls | own s | cumulative s |",
        "| --- | --- | --- | --- |",
        *(f"| `{f['function']}` | {f['calls']:,} | {f['own_seconds']} | {f['cumulative_seconds']} |"
          for f in result["top_cumulative"]),
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(parser)
    parser.add_argument("--seconds", type=float, default=60, help="length of the profiled crawl")
    parser.add_argument("--keep", type=Path, help="keep the cProfile output here (for snakeviz, pstats)")
    parser.add_argument("--full", action="store_true", help="the full size: a 300 s crawl")
    add_setting_option(parser)
    args = parser.parse_args(argv)
    if args.full:
        args.seconds = 300
    result = {**environment(command_line("bench.profile", argv)), **measure(args)}
    write_report("profile", result, "Profile of one harvester", report(result), args.results)


if __name__ == "__main__":
    main()

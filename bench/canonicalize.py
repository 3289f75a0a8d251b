"""Benchmark: canonicalize and validate URLs as written in the virtual web's pages.

    .venv/bin/python -m bench.canonicalize --urls 100000

Hrefs come from the generated web (relative, absolute, session ids,
fragments, ``www.`` aliases...), resolved against their page, so the mix is
what a crawl meets. Writes bench/results/canonicalize.{json,md}.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from bench.report import environment, write_report
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.urls import UrlRules, check_url

def sample_links(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` (href, page URL) pairs, page after page of the virtual web."""
    web = VirtualWeb(seed=seed)
    links: list[tuple[str, str]] = []
    page = 0
    while len(links) < count:
        base = web.url(page)
        links.extend((href, base) for href, _, _ in web.links(page))
        page += 1
    return links[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs; the best is reported")
    args = parser.parse_args()

    links = sample_links(args.urls, args.seed)
    rules = UrlRules()
    timings = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        verdicts = [check_url(href, rules, base=base) for href, base in links]
        timings.append(time.perf_counter() - started)
    best = min(timings)
    reasons = Counter(verdict.reason or "accepted" for verdict in verdicts)
    result = {
        **environment(f"python -m bench.canonicalize --urls {args.urls} --seed {args.seed} --repeat {args.repeat}"),
        "urls": len(links),
        "seconds": round(best, 3),
        "urls_per_second": round(len(links) / best),
        "microseconds_per_url": round(best / len(links) * 1e6, 1),
        "distinct_canonical_urls": len({v.url for v in verdicts if v.ok}),
        "verdicts": dict(reasons.most_common()),
    }
    write_report("canonicalize", result, "URL canonicalization and validation", [
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| URLs (hrefs of the virtual web, resolved against their page) | {result['urls']:,} |",
        f"| best of {args.repeat} runs | {result['seconds']} s |",
        f"| URLs per second | {result['urls_per_second']:,} |",
        f"| microseconds per URL | {result['microseconds_per_url']} |",
        f"| distinct canonical URLs accepted | {result['distinct_canonical_urls']:,} |",
        *(f"| verdict `{reason}` | {count:,} |" for reason, count in reasons.most_common()),
    ])


if __name__ == "__main__":
    main()

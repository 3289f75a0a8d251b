"""Benchmark: canonicalize and validate URLs as written in the virtual web's pages.

    .venv/bin/python -m bench.canonicalize --urls 100000

Hrefs come from the generated web (relative, absolute, session ids,
fragments, ``www.`` aliases...), resolved against their page, so the mix is
what a crawl meets. Also scores the canonicalization table
(tests/data/canonical_urls.tsv), and w3lib's ``canonicalize_url`` on it for
comparison. Writes bench/results/canonicalize.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import Counter
from pathlib import Path

from w3lib.url import canonicalize_url

from bench.report import environment, write_report
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.access.urls import UrlRules, check_url

TABLE = Path(__file__).parent.parent / "tests" / "data" / "canonical_urls.tsv"


def table_cases() -> list[tuple[str, str]]:
    """(URL, canonical form or '!reason') pairs of the canonicalization table."""
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")) for line in lines if line and not line.startswith("#")]


def table_score(cases: list[tuple[str, str]]) -> tuple[int, int]:
    """Cases Combine's canonicalization gets right, and cases w3lib's canonicalize_url gets right
    (of those with a canonical form: w3lib refuses nothing)."""
    rules = dataclasses.replace(UrlRules(), exclude=())
    ours = w3lib = 0
    for url, expected in cases:
        verdict = check_url(url, rules)
        ours += verdict.url == expected if not expected.startswith("!") else verdict.reason == expected[1:]
        if not expected.startswith("!"):
            try:
                w3lib += canonicalize_url(url.strip()) == expected
            except ValueError:
                pass
    return ours, w3lib

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
    timings, cpu_timings = [], []
    for _ in range(args.repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        verdicts = [check_url(href, rules, base=base) for href, base in links]
        timings.append(time.perf_counter() - started)
        cpu_timings.append(time.process_time() - cpu_started)
    best, best_cpu = min(timings), min(cpu_timings)
    reasons = Counter(verdict.reason or "accepted" for verdict in verdicts)
    cases = table_cases()
    ours, w3lib = table_score(cases)
    with_form = sum(1 for _, expected in cases if not expected.startswith("!"))
    result = {
        **environment(f"python -m bench.canonicalize --urls {args.urls} --seed {args.seed} --repeat {args.repeat}"),
        "urls": len(links),
        "seconds": round(best, 3),
        "urls_per_second": round(len(links) / best),
        # CPU time of this process: the figure to read when other work shares the machine.
        "urls_per_cpu_second": round(len(links) / best_cpu),
        "microseconds_per_url": round(best / len(links) * 1e6, 1),
        "distinct_canonical_urls": len({v.url for v in verdicts if v.ok}),
        "verdicts": dict(reasons.most_common()),
        "table_cases": len(cases),
        "table_passed": ours,
        "table_cases_with_a_canonical_form": with_form,
        "table_passed_by_w3lib_canonicalize_url": w3lib,
    }
    write_report("canonicalize", result, "URL canonicalization and validation", [
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| URLs (hrefs of the virtual web, resolved against their page) | {result['urls']:,} |",
        f"| best of {args.repeat} runs | {result['seconds']} s |",
        f"| URLs per second | {result['urls_per_second']:,} |",
        f"| URLs per CPU-second (this process alone; read it on a loaded machine) | {result['urls_per_cpu_second']:,} |",
        f"| microseconds per URL | {result['microseconds_per_url']} |",
        f"| distinct canonical URLs accepted | {result['distinct_canonical_urls']:,} |",
        *(f"| verdict `{reason}` | {count:,} |" for reason, count in reasons.most_common()),
        f"| canonicalization table (tests/data/canonical_urls.tsv) passed | {ours} of {len(cases)} |",
        f"| the same by w3lib's `canonicalize_url` alone | {w3lib} of {with_form} with a canonical form |",
    ])


if __name__ == "__main__":
    main()
